// Links: bounded queues between two pads, with backpressure and drop policies.
#include "pipeline/internal.h"
#include "reel/error.h"

reel_link *reel_link_new(reel_element *src, reel_element *dst, int capacity)
{
    reel_link *l = g_new0(reel_link, 1);
    l->src = src;
    l->dst = dst;
    l->capacity = capacity;
    l->ring_size = 8;
    l->ring = g_new0(reel_buffer *, l->ring_size);
    g_mutex_init(&l->lock);
    return l;
}

void reel_link_reset(reel_link *l)
{
    reel_buffer *b;
    while (reel_link_pop(l, &b) == 0)
        reel_buffer_unref(&b);
    atomic_store(&l->eos, false);
    l->eos_taken = false;
}

void reel_link_free(reel_link *l)
{
    reel_link_reset(l);
    g_free(l->ring);
    g_mutex_clear(&l->lock);
    g_free(l);
}

static void grow(reel_link *l)
{
    int n = atomic_load(&l->count);
    reel_buffer **ring = g_new0(reel_buffer *, l->ring_size * 2);
    for (int i = 0; i < n; i++)
        ring[i] = l->ring[(l->head + i) % l->ring_size];
    g_free(l->ring);
    l->ring = ring;
    l->ring_size *= 2;
    l->head = 0;
}

static reel_buffer *take_head(reel_link *l)
{
    reel_buffer *b = l->ring[l->head];
    l->ring[l->head] = NULL;
    l->head = (l->head + 1) % l->ring_size;
    atomic_fetch_sub(&l->count, 1);
    return b;
}

void reel_link_push(reel_link *l, reel_buffer *buf)
{
    reel_buffer *dropped = NULL;
    g_mutex_lock(&l->lock);
    int n = atomic_load(&l->count);
    if (l->leaky != REEL_LEAKY_NO && n >= l->capacity) {
        if (l->leaky == REEL_LEAKY_UPSTREAM) {
            dropped = buf;
            buf = NULL;
        } else {
            dropped = take_head(l);
            n--;
        }
        atomic_fetch_add(&l->dropped, 1);
    }
    if (buf) {
        if (n == l->ring_size)
            grow(l);
        l->ring[(l->head + n) % l->ring_size] = buf;
        atomic_fetch_add(&l->count, 1);
    }
    g_mutex_unlock(&l->lock);
    reel_buffer_unref(&dropped);
    if (buf)
        reel_sched_notify(l->dst);
}

void reel_link_push_eos(reel_link *l)
{
    atomic_store(&l->eos, true);
    reel_sched_notify(l->dst);
}

int reel_link_pop(reel_link *l, reel_buffer **buf)
{
    g_mutex_lock(&l->lock);
    int n = atomic_load(&l->count);
    if (n == 0) {
        bool eos = atomic_load(&l->eos) && !l->eos_taken;
        l->eos_taken |= eos;
        g_mutex_unlock(&l->lock);
        return eos ? REEL_EOS : REEL_AGAIN;
    }
    *buf = take_head(l);
    g_mutex_unlock(&l->lock);
    // Upstream stops when the link is full; this pop made room again.
    if (n == l->capacity && l->leaky == REEL_LEAKY_NO)
        reel_sched_notify(l->src);
    return 0;
}

bool reel_link_has_space(const reel_link *l)
{
    return l->leaky != REEL_LEAKY_NO || atomic_load(&((reel_link *)l)->count) < l->capacity;
}

bool reel_link_has_data(reel_link *l)
{
    return atomic_load(&l->count) > 0 || (atomic_load(&l->eos) && !l->eos_taken);
}

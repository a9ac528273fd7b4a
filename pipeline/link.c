// Links: bounded queues between two pads, with backpressure and drop policies.
#include "pipeline/internal.h"
#include "reel/error.h"

// The ring holds the common case; larger queues spill into the overflow.
#define RING_MIN 16
#define RING_MAX 4096

reel_link *reel_link_new(reel_element *src, reel_element *dst, int capacity)
{
    reel_link *l = g_new0(reel_link, 1);
    l->src = src;
    l->dst = dst;
    l->stream = -1;
    g_mutex_init(&l->lock);
    g_queue_init(&l->overflow);
    reel_link_set_capacity(l, capacity, REEL_LEAKY_NO);
    return l;
}

void reel_link_set_capacity(reel_link *l, int capacity, reel_leaky leaky)
{
    atomic_store(&l->capacity, capacity);
    atomic_store(&l->leaky, (int)leaky);
    unsigned size = RING_MIN;
    while (size < (unsigned)capacity && size < RING_MAX)
        size *= 2;
    if (size != l->ring_size) {
        reel_link_reset(l);
        g_free(l->ring);
        l->ring = g_new0(reel_buffer *, size);
        l->ring_size = size;
        atomic_store(&l->head, 0);
        atomic_store(&l->tail, 0);
    }
}

// While running the ring cannot be resized (the producer may be writing to
// it): a capacity beyond it fills the overflow, which keeps the order. A
// change of leaky mode with buffers in the ring is safe too: pushes go to
// the overflow (or back to the ring once it is empty) and the consumer takes
// the ring first; a leaky link drops only from the overflow, so until the
// ring has drained it holds those few beyond its capacity.
void reel_link_change_bounds(reel_link *l, int capacity, reel_leaky leaky)
{
    atomic_store(&l->capacity, capacity);
    atomic_store(&l->leaky, (int)leaky);
    int latency_ms = l->dst->pipeline->params.latency_ms;
    l->max_age_ns = leaky != REEL_LEAKY_NO ? (int64_t)latency_ms * 1000000 : 0;
    // An upstream waiting for room may have some now; if not, its next turn
    // finds the link full again and waits as before.
    if (atomic_exchange(&l->src_waiting, false))
        reel_sched_notify(l->src);
}

void reel_link_set_max_bytes(reel_link *l, int64_t max_bytes)
{
    l->max_bytes_request = max_bytes > 0 ? max_bytes : 0;
}

static int pop_one(reel_link *l, reel_buffer **buf);

void reel_link_reset(reel_link *l)
{
    reel_buffer *b;
    while (l->ring && pop_one(l, &b) == 0)
        reel_buffer_unref(&b);
    atomic_store(&l->eos, false);
    atomic_store(&l->src_waiting, false);
    l->eos_taken = false;
}

void reel_link_free(reel_link *l)
{
    reel_link_reset(l);
    g_free(l->ring);
    g_mutex_clear(&l->lock);
    g_free(l);
}

// Sequentially consistent loads: see reel_link_has_space().
static int queued(reel_link *l)
{
    unsigned t = atomic_load(&l->tail), h = atomic_load(&l->head);
    return (int)(t - h) + atomic_load(&l->n_overflow);
}

// Full by bytes: at the bound with something queued (one buffer larger than
// the bound still passes, alone, so it cannot stall the link).
static bool over_bytes(reel_link *l)
{
    return l->max_bytes > 0 && atomic_load(&l->bytes) >= l->max_bytes && queued(l) > 0;
}

static bool over_half_bytes(reel_link *l)
{
    return l->max_bytes > 0 && atomic_load(&l->bytes) > l->max_bytes / 2 && queued(l) > 0;
}

// Whether a leaky link must drop before taking `incoming` more bytes: it is
// at its capacity, or over its byte bound (an empty link always takes one).
static bool leaky_full(reel_link *l, size_t incoming)
{
    if ((int)l->overflow.length >= atomic_load_explicit(&l->capacity, memory_order_relaxed))
        return true;
    return l->overflow.length > 0 && l->max_bytes > 0
           && atomic_load(&l->bytes) + (int64_t)incoming > l->max_bytes;
}

// Leaky links and ring overflow: under the lock.
static void push_locked_path(reel_link *l, reel_buffer *buf, int leaky)
{
    GSList *dropped = NULL;
    g_mutex_lock(&l->lock);
    if (leaky == REEL_LEAKY_UPSTREAM && leaky_full(l, buf->size)) {
        dropped = g_slist_prepend(dropped, buf);
        buf = NULL;
        atomic_fetch_add(&l->dropped, 1);
    }
    // Downstream drops the oldest until the newcomer fits.
    while (buf && leaky == REEL_LEAKY_DOWNSTREAM && leaky_full(l, buf->size)) {
        reel_buffer *old = g_queue_pop_head(&l->overflow);
        atomic_fetch_sub(&l->bytes, (int64_t)old->size);
        dropped = g_slist_prepend(dropped, old);
        atomic_fetch_add(&l->dropped, 1);
    }
    if (buf) {
        atomic_fetch_add(&l->bytes, (int64_t)buf->size);
        g_queue_push_tail(&l->overflow, buf);
    }
    atomic_store(&l->n_overflow, (int)l->overflow.length);
    g_mutex_unlock(&l->lock);
    for (GSList *d = dropped; d; d = d->next) {
        reel_buffer *b = d->data;
        reel_buffer_unref(&b);
    }
    g_slist_free(dropped);
}

void reel_link_push(reel_link *l, reel_buffer *buf)
{
    // Once anything overflowed, later buffers follow it there, so the
    // consumer (ring first, then overflow) sees them in order.
    unsigned t = atomic_load_explicit(&l->tail, memory_order_relaxed);
    int leaky = atomic_load_explicit(&l->leaky, memory_order_relaxed);
    if (leaky == REEL_LEAKY_NO && atomic_load_explicit(&l->n_overflow, memory_order_acquire) == 0
        && t - atomic_load_explicit(&l->head, memory_order_acquire) < l->ring_size) {
        atomic_fetch_add(&l->bytes, (int64_t)buf->size);
        l->ring[t & (l->ring_size - 1)] = buf;
        atomic_store_explicit(&l->tail, t + 1, memory_order_release);
    } else {
        push_locked_path(l, buf, leaky);
    }
    reel_sched_notify(l->dst);
}

void reel_link_push_eos(reel_link *l)
{
    atomic_store_explicit(&l->eos, true, memory_order_release);
    reel_sched_notify(l->dst);
}

// One buffer, EOS, or nothing yet.
static int pop_one(reel_link *l, reel_buffer **buf)
{
    // EOS is read first: everything pushed before it is visible after.
    bool eos = atomic_load_explicit(&l->eos, memory_order_acquire);
    unsigned h = atomic_load_explicit(&l->head, memory_order_relaxed);
    if (h != atomic_load_explicit(&l->tail, memory_order_acquire)) {
        *buf = l->ring[h & (l->ring_size - 1)];
        atomic_store(&l->head, h + 1);
    } else if (atomic_load_explicit(&l->n_overflow, memory_order_acquire) > 0) {
        g_mutex_lock(&l->lock);
        *buf = g_queue_pop_head(&l->overflow);
        atomic_store(&l->n_overflow, (int)l->overflow.length);
        g_mutex_unlock(&l->lock);
    } else {
        eos = eos && !l->eos_taken;
        l->eos_taken |= eos;
        return eos ? REEL_EOS : REEL_AGAIN;
    }
    atomic_fetch_sub(&l->bytes, (int64_t)(*buf)->size);
    // Wake a waiting upstream once half the room is back, so that it
    // resumes with a batch to produce rather than a single slot.
    if (atomic_load(&l->src_waiting) && queued(l) <= atomic_load(&l->capacity) / 2 && !over_half_bytes(l)
        && atomic_exchange(&l->src_waiting, false))
        reel_sched_notify(l->src);
    return 0;
}

// A buffer past the link's latency bound (max_age_ns since capture).
static bool too_old(const reel_link *l, const reel_buffer *buf)
{
    return l->max_age_ns > 0 && buf->capture_ns > 0 && reel_now_ns() - buf->capture_ns > l->max_age_ns;
}

int reel_link_pop(reel_link *l, reel_buffer **buf)
{
    int rc;
    // A live pipeline's bound: stale buffers are dropped, the next one taken.
    while ((rc = pop_one(l, buf)) == 0 && too_old(l, *buf)) {
        atomic_fetch_add(&l->dropped, 1);
        reel_buffer_unref(buf);
    }
    return rc;
}

// The flag and the head are a Dekker pair: upstream stores the flag then
// reads the head, the consumer stores the head then reads the flag, all
// sequentially consistent, so one of them sees the other and no wakeup is
// lost.
bool reel_link_has_space(reel_link *l)
{
    if (atomic_load(&l->leaky) != REEL_LEAKY_NO || (queued(l) < atomic_load(&l->capacity) && !over_bytes(l)))
        return true;
    atomic_store(&l->src_waiting, true);
    // Read again after the flag: a consumer's change of bounds clears the
    // flag after storing them, so one of the two sees the other.
    return atomic_load(&l->leaky) != REEL_LEAKY_NO || (queued(l) < atomic_load(&l->capacity) && !over_bytes(l));
}

bool reel_link_has_data(reel_link *l)
{
    return queued(l) > 0 || (atomic_load(&l->eos) && !l->eos_taken);
}

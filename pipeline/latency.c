// Per-frame latency: buffers carry the time their source captured them;
// sinks record how long each took to arrive, in a fixed histogram.
#include "pipeline/internal.h"

#include <math.h>
#include <string.h>

// Microseconds below REEL_LATENCY_SUB are counted exactly; above, each
// power of two is split in REEL_LATENCY_SUB buckets (an HDR histogram).
static int bucket_of(int64_t us)
{
    if (us < REEL_LATENCY_SUB)
        return us < 0 ? 0 : (int)us;
    int top = 63 - __builtin_clzll((unsigned long long)us); // >= 5
    int shift = top - 5;
    int idx = (shift + 1) * REEL_LATENCY_SUB + (int)((us >> shift) - REEL_LATENCY_SUB);
    return MIN(idx, REEL_LATENCY_BUCKETS - 1);
}

// The middle of a bucket, in microseconds.
static int64_t bucket_middle_us(int idx)
{
    if (idx < REEL_LATENCY_SUB)
        return idx;
    int shift = idx / REEL_LATENCY_SUB - 1;
    int64_t low = (int64_t)(REEL_LATENCY_SUB + idx % REEL_LATENCY_SUB) << shift;
    return low + (((int64_t)1 << shift) >> 1);
}

void reel_latency_record(reel_latency *h, int64_t ns)
{
    atomic_fetch_add_explicit(&h->count[bucket_of(ns / 1000)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->frames, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
    // One writer: a load and a store are enough.
    if (ns > atomic_load_explicit(&h->max_ns, memory_order_relaxed))
        atomic_store_explicit(&h->max_ns, ns, memory_order_relaxed);
}

int64_t reel_latency_quantile(const reel_latency *h, double q)
{
    // Counted from the buckets themselves: a reader racing the writer sees
    // a consistent total.
    int64_t total = 0;
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++)
        total += atomic_load_explicit(&h->count[i], memory_order_relaxed);
    if (total == 0)
        return 0;
    int64_t rank = (int64_t)ceil(q * (double)total), seen = 0;
    rank = CLAMP(rank, 1, total);
    int64_t max_ns = atomic_load_explicit(&h->max_ns, memory_order_relaxed);
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) {
        seen += atomic_load_explicit(&h->count[i], memory_order_relaxed);
        if (seen >= rank)
            return MIN(bucket_middle_us(i) * 1000, max_ns);
    }
    return max_ns;
}

int64_t reel_element_latency_at_most(const reel_element *e, int64_t le_ns, int64_t *sum_ns)
{
    const reel_latency *h = e->latency;
    if (sum_ns)
        *sum_ns = h ? atomic_load_explicit(&h->sum_ns, memory_order_relaxed) : 0;
    if (!h)
        return 0;
    // Buckets wholly at or below the bound: a bucket's lowest value must not
    // pass it, so the count is exact to a bucket's width (3%).
    int64_t n = 0, le_us = le_ns / 1000;
    for (int i = 0; i < REEL_LATENCY_BUCKETS; i++) {
        int64_t low = i < REEL_LATENCY_SUB ? i
                                           : (int64_t)(REEL_LATENCY_SUB + i % REEL_LATENCY_SUB) << (i / REEL_LATENCY_SUB - 1);
        if (low > le_us)
            break;
        n += atomic_load_explicit(&h->count[i], memory_order_relaxed);
    }
    return n;
}

void reel_latency_stamp(reel_element *e, reel_buffer *buf)
{
    if (e->inputs->len == 0) {
        // A source that knows when it captured (a live one) has said so.
        if (buf->capture_ns == 0)
            buf->capture_ns = reel_now_ns();
        // The source's id, unless the buffer already names a stream.
        if (buf->stream_id == 0)
            buf->stream_id = e->stream_id;
    } else if (buf->capture_ns == 0) {
        // A new buffer made from the latest input (a decoded frame, a tensor).
        buf->capture_ns = e->last_capture_ns;
        buf->stream_id = e->last_stream_id;
    }
}

void reel_latency_arrive(reel_element *e, const reel_buffer *buf)
{
    e->last_capture_ns = buf->capture_ns;
    e->last_stream_id = buf->stream_id;
    if (e->latency && buf->capture_ns > 0)
        reel_latency_record(e->latency, reel_now_ns() - buf->capture_ns);
}

void reel_latency_reset(reel_pipeline *p)
{
    int sources = 0;
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        e->last_capture_ns = 0;
        e->last_stream_id = 0;
        e->stream_id = e->stream_id_request >= 0 ? e->stream_id_request : sources;
        sources += e->inputs->len == 0;
        if (e->outputs->len == 0) {
            if (!e->latency)
                e->latency = g_new0(reel_latency, 1);
            memset(e->latency, 0, sizeof *e->latency);
        }
    }
}

// Buffer pools: one fixed format, buffers recycled on their last unref.
//
// The producer acquires and the consumers, on other threads, return: a
// mutex here was the hottest lock in the scheduler. Returns push onto a
// lock-free stack; the acquiring thread takes the whole stack at once when
// its own list runs dry (taking everything, not popping one, avoids ABA).
//
// Each pool counts the buffers it allocated and those out of it now, and the
// process keeps the sums, so that a run can show that its pools stopped
// growing and that every buffer came back (reel_pool_get_totals()).
#include "pipeline/buffer_internal.h"

struct reel_pool {
    reel_caps format;
    reel_buffer *idle;             // the acquiring thread's own list
    _Atomic(reel_buffer *) returned; // pushed by any thread
    atomic_int refs;               // the owner plus every buffer out of the pool
    atomic_long allocated;         // buffers this pool created (not recycled)
    atomic_long outstanding;       // acquired and not yet returned
};

// Sums over every pool of the process (those already freed included).
static atomic_long total_pools_open, total_allocated, total_outstanding;

reel_pool *reel_pool_new(const reel_caps *format)
{
    if (!reel_caps_is_fixed(format))
        return NULL;
    reel_pool *pool = g_new0(reel_pool, 1);
    pool->format = *format;
    atomic_init(&pool->returned, NULL);
    atomic_init(&pool->refs, 1);
    atomic_init(&pool->allocated, 0);
    atomic_init(&pool->outstanding, 0);
    atomic_fetch_add(&total_pools_open, 1);
    return pool;
}

static void free_list(reel_buffer *b)
{
    while (b) {
        reel_buffer *next = b->next_free_;
        reel_buffer_count_(1); // idle buffers are not counted as live
        reel_buffer_free_(b);
        b = next;
    }
}

static void pool_unref(reel_pool *pool)
{
    if (atomic_fetch_sub_explicit(&pool->refs, 1, memory_order_acq_rel) != 1)
        return;
    free_list(pool->idle);
    free_list(atomic_exchange(&pool->returned, NULL));
    atomic_fetch_sub(&total_pools_open, 1);
    g_free(pool);
}

reel_buffer *reel_pool_acquire(reel_pool *pool)
{
    if (!pool->idle)
        pool->idle = atomic_exchange_explicit(&pool->returned, NULL, memory_order_acquire);
    reel_buffer *b = pool->idle;
    if (b) {
        pool->idle = b->next_free_;
        b->next_free_ = NULL;
        reel_buffer_count_(1);
        atomic_store_explicit(&b->refcount_, 1, memory_order_relaxed);
    } else if (!(b = reel_buffer_alloc_(&pool->format))) {
        return NULL;
    } else {
        atomic_fetch_add_explicit(&pool->allocated, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&total_allocated, 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&pool->outstanding, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&total_outstanding, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
    b->pool_ = pool;
    b->pts = b->dts = REEL_PTS_NONE;
    b->duration = 0;
    b->time_base = (reel_fraction){ 0, 1 };
    b->stream_id = 0;
    b->frame_number = 0;
    b->capture_ns = 0;
    b->flags = 0;
    return b;
}

bool reel_pool_return_(reel_pool *pool, reel_buffer *b)
{
    reel_buffer_clear_meta_(b);
    reel_buffer_count_(-1);
    atomic_fetch_sub_explicit(&pool->outstanding, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&total_outstanding, 1, memory_order_relaxed);
    reel_buffer *head = atomic_load_explicit(&pool->returned, memory_order_relaxed);
    do
        b->next_free_ = head;
    while (!atomic_compare_exchange_weak_explicit(&pool->returned, &head, b, memory_order_release,
                                                  memory_order_relaxed));
    pool_unref(pool);
    return true;
}

void reel_pool_release(reel_pool **pp)
{
    reel_pool *pool = *pp;
    *pp = NULL;
    if (pool)
        pool_unref(pool);
}

reel_pool_stats reel_pool_get_stats(const reel_pool *pool)
{
    reel_pool *p = (reel_pool *)pool; // atomic loads of a const object are not allowed in C11
    return (reel_pool_stats){
        .pools_open = 1,
        .allocated = atomic_load(&p->allocated),
        .outstanding = atomic_load(&p->outstanding),
    };
}

reel_pool_stats reel_pool_get_totals(void)
{
    return (reel_pool_stats){
        .pools_open = atomic_load(&total_pools_open),
        .allocated = atomic_load(&total_allocated),
        .outstanding = atomic_load(&total_outstanding),
    };
}

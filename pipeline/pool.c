// Buffer pools: one fixed format, buffers recycled on their last unref.
#include "pipeline/buffer_internal.h"

struct reel_pool {
    reel_caps format;
    GMutex lock;
    GPtrArray *free;   // idle buffers
    int refs;          // the owner plus every buffer out of the pool
    bool closed;       // the owner released it
};

reel_pool *reel_pool_new(const reel_caps *format)
{
    if (!reel_caps_is_fixed(format))
        return NULL;
    reel_pool *pool = g_new0(reel_pool, 1);
    pool->format = *format;
    g_mutex_init(&pool->lock);
    pool->free = g_ptr_array_new();
    pool->refs = 1;
    return pool;
}

static void pool_free(reel_pool *pool)
{
    for (guint i = 0; i < pool->free->len; i++) {
        reel_buffer *b = pool->free->pdata[i];
        reel_buffer_count_(1); // idle buffers were not counted as live
        reel_buffer_free_(b);
    }
    g_ptr_array_free(pool->free, TRUE);
    g_mutex_clear(&pool->lock);
    g_free(pool);
}

// Drops one reference; frees the pool on the last. Called with the lock held,
// returns with it released.
static void pool_unref_locked(reel_pool *pool)
{
    bool last = --pool->refs == 0;
    g_mutex_unlock(&pool->lock);
    if (last)
        pool_free(pool);
}

reel_buffer *reel_pool_acquire(reel_pool *pool)
{
    g_mutex_lock(&pool->lock);
    reel_buffer *b = pool->free->len ? g_ptr_array_steal_index_fast(pool->free, pool->free->len - 1) : NULL;
    pool->refs++;
    g_mutex_unlock(&pool->lock);

    if (b) {
        reel_buffer_count_(1);
        atomic_store(&b->refcount_, 1);
    } else if (!(b = reel_buffer_alloc_(&pool->format))) {
        g_mutex_lock(&pool->lock);
        pool_unref_locked(pool);
        return NULL;
    }
    b->pool_ = pool;
    b->pts = REEL_PTS_NONE;
    b->duration = 0;
    b->time_base = (reel_fraction){ 0, 1 };
    b->stream_id = 0;
    b->frame_number = 0;
    b->flags = 0;
    return b;
}

bool reel_pool_return_(reel_pool *pool, reel_buffer *b)
{
    reel_buffer_clear_meta_(b);
    g_mutex_lock(&pool->lock);
    bool kept = !pool->closed;
    if (kept) {
        g_ptr_array_add(pool->free, b);
        reel_buffer_count_(-1);
    } else {
        b->pool_ = NULL;
    }
    pool_unref_locked(pool);
    return kept;
}

void reel_pool_release(reel_pool **pp)
{
    reel_pool *pool = *pp;
    *pp = NULL;
    if (!pool)
        return;
    g_mutex_lock(&pool->lock);
    pool->closed = true;
    // Idle buffers go now; buffers still out come back to a closed pool and
    // are freed then.
    GPtrArray *idle = pool->free;
    pool->free = g_ptr_array_new();
    g_mutex_unlock(&pool->lock);
    for (guint i = 0; i < idle->len; i++) {
        reel_buffer_count_(1);
        reel_buffer_free_(idle->pdata[i]);
    }
    g_ptr_array_free(idle, TRUE);
    g_mutex_lock(&pool->lock);
    pool_unref_locked(pool);
}

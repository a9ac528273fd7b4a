// Buffer internals shared by buffer.c and pool.c.
#ifndef REEL_PIPELINE_BUFFER_INTERNAL_H
#define REEL_PIPELINE_BUFFER_INTERNAL_H

#include "reel/buffer.h"

struct reel_meta {
    const reel_meta_type *type;
    void *data;
    reel_meta *next;
};

// Allocates a buffer for fixed format f with its storage laid out (planes,
// strides, size); NULL when f is not fixed or too large.
reel_buffer *reel_buffer_alloc_(const reel_caps *f);
// Frees a buffer and its storage without looking at its pool.
void reel_buffer_free_(reel_buffer *b);
// Drops every meta.
void reel_buffer_clear_meta_(reel_buffer *b);
// Returns a buffer to its pool; false when the pool is closed (then the
// caller frees it).
bool reel_pool_return_(reel_pool *pool, reel_buffer *b);
// Bookkeeping for reel_buffer_get_stats().
void reel_buffer_count_(int delta);

#endif

// Buffers: allocation with plane layout, refcounting, metadata.
#include "pipeline/buffer_internal.h"
#include "reel/error.h"
#include "reel/limits.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64
// Beyond the frame and tensor limits (reel/limits.h) a format is an error,
// not an allocation attempt.
#define MAX_BYTES ((size_t)reel_limit_get(REEL_LIMIT_TENSOR_BYTES))
// SIMD readers (swscale, codecs) may read a little past the last row, as
// FFmpeg's own frames allow.
#define TAIL_PADDING 64

static atomic_long live_buffers, peak_buffers, allocated_buffers;

void reel_buffer_count_(int delta)
{
    long now = atomic_fetch_add(&live_buffers, delta) + delta;
    long peak = atomic_load(&peak_buffers);
    while (now > peak && !atomic_compare_exchange_weak(&peak_buffers, &peak, now))
        ;
}

reel_buffer_stats reel_buffer_get_stats(void)
{
    return (reel_buffer_stats){
        .live = atomic_load(&live_buffers),
        .peak_live = atomic_load(&peak_buffers),
        .allocated = atomic_load(&allocated_buffers),
    };
}

void reel_buffer_reset_peak(void)
{
    atomic_store(&peak_buffers, atomic_load(&live_buffers));
}

static size_t align_up(size_t n)
{
    return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

// Byte size of a fixed format, and for raw video its plane layout.
static bool layout(const reel_caps *f, size_t offsets[REEL_MAX_PLANES], int strides[REEL_MAX_PLANES],
                   size_t *size)
{
    if (f->media == REEL_MEDIA_VIDEO_RAW) {
        if (reel_limit_check_frame(f->width, f->height, NULL) != 0)
            return false;
        reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
        size_t total = 0;
        for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
            size_t stride = align_up(reel_pixfmt_row_bytes(pf, p, f->width));
            offsets[p] = total;
            strides[p] = (int)stride;
            total += align_up(stride * (size_t)reel_pixfmt_plane_height(pf, p, f->height));
        }
        *size = total + TAIL_PADDING;
        return true;
    }
    if (f->media == REEL_MEDIA_TENSOR) {
        size_t n = reel_dtype_size(f->dtype);
        for (int i = 0; i < f->rank; i++)
            if (f->shape[i] < 0 || __builtin_mul_overflow(n, (size_t)f->shape[i], &n) || n > MAX_BYTES)
                return false;
        *size = n;
        return true;
    }
    return false;
}

static reel_buffer *buffer_with_storage(size_t size)
{
    reel_buffer *b = g_new0(reel_buffer, 1);
    b->data = aligned_alloc(ALIGN, align_up(size ? size : 1));
    if (!b->data) {
        g_free(b);
        return NULL;
    }
    memset(b->data, 0, align_up(size ? size : 1));
    b->size = size;
    b->pts = b->dts = REEL_PTS_NONE;
    atomic_init(&b->refcount_, 1);
    atomic_fetch_add(&allocated_buffers, 1);
    reel_buffer_count_(1);
    return b;
}

reel_buffer *reel_buffer_new(size_t size)
{
    if (size > MAX_BYTES)
        return NULL;
    reel_buffer *b = buffer_with_storage(size);
    if (b)
        b->format = reel_caps_any();
    return b;
}

reel_buffer *reel_buffer_alloc_(const reel_caps *f)
{
    size_t offsets[REEL_MAX_PLANES] = { 0 }, size;
    int strides[REEL_MAX_PLANES] = { 0 };
    if (!reel_caps_is_fixed(f) || !layout(f, offsets, strides, &size))
        return NULL;
    reel_buffer *b = buffer_with_storage(size);
    if (!b)
        return NULL;
    b->format = *f;
    for (int p = 0; p < REEL_MAX_PLANES && strides[p]; p++) {
        b->planes[p] = b->data + offsets[p];
        b->strides[p] = strides[p];
    }
    return b;
}

reel_buffer *reel_buffer_new_format(const reel_caps *f)
{
    return reel_buffer_alloc_(f);
}

static void unref_mem(void *opaque)
{
    reel_mem *m = opaque;
    reel_mem_unref(&m);
}

reel_buffer *reel_buffer_new_device_planes(const reel_caps *f, reel_mem *mem, const size_t *offsets,
                                           const int *strides)
{
    reel_buffer *b = reel_buffer_new_wrapped(f, NULL, reel_mem_size(mem), unref_mem, mem);
    if (!b)
        return NULL;
    b->mem = mem;
    if (f->media == REEL_MEDIA_VIDEO_RAW) {
        reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
        for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
            b->offsets[p] = offsets[p];
            b->strides[p] = strides[p];
        }
    }
    return b;
}

reel_buffer *reel_buffer_new_device(const reel_caps *f, reel_mem *mem)
{
    size_t offsets[REEL_MAX_PLANES] = { 0 }, at = 0;
    int strides[REEL_MAX_PLANES] = { 0 };
    if (f->media == REEL_MEDIA_VIDEO_RAW && f->pixfmts) {
        reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
        for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
            offsets[p] = at;
            strides[p] = (int)reel_pixfmt_row_bytes(pf, p, f->width);
            at += (size_t)strides[p] * (size_t)reel_pixfmt_plane_height(pf, p, f->height);
        }
    }
    return reel_buffer_new_device_planes(f, mem, offsets, strides);
}

bool reel_buffer_is_packed(const reel_buffer *b)
{
    const reel_caps *f = &b->format;
    if (f->media != REEL_MEDIA_VIDEO_RAW)
        return true;
    reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
    size_t at = 0;
    for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
        size_t row = reel_pixfmt_row_bytes(pf, p, f->width);
        if (b->offsets[p] != at || (size_t)b->strides[p] != row)
            return false;
        at += row * (size_t)reel_pixfmt_plane_height(pf, p, f->height);
    }
    return true;
}

size_t reel_buffer_packed_size(const reel_caps *f)
{
    if (f->media == REEL_MEDIA_TENSOR) {
        size_t offsets[REEL_MAX_PLANES], size;
        int strides[REEL_MAX_PLANES];
        return layout(f, offsets, strides, &size) ? size : 0;
    }
    if (f->media != REEL_MEDIA_VIDEO_RAW || !f->pixfmts)
        return 0;
    reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
    size_t n = 0;
    for (int p = 0; p < reel_pixfmt_planes(pf); p++)
        n += reel_pixfmt_row_bytes(pf, p, f->width) * (size_t)reel_pixfmt_plane_height(pf, p, f->height);
    return n;
}

// Moves a host frame's visible rows to (pack) or from packed bytes.
static void copy_rows(reel_buffer *b, uint8_t *packed, bool pack)
{
    reel_pixfmt pf = __builtin_ctzll(b->format.pixfmts);
    for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
        size_t n = reel_pixfmt_row_bytes(pf, p, b->format.width);
        for (int y = 0; y < reel_pixfmt_plane_height(pf, p, b->format.height); y++, packed += n) {
            uint8_t *row = b->planes[p] + (size_t)y * b->strides[p];
            memcpy(pack ? packed : row, pack ? row : packed, n);
        }
    }
}

void reel_buffer_pack(const reel_buffer *b, uint8_t *dst)
{
    copy_rows((reel_buffer *)b, dst, true);
}

void reel_buffer_unpack(reel_buffer *b, const uint8_t *src)
{
    copy_rows(b, (uint8_t *)src, false);
}

void reel_buffer_unpack_layout(reel_buffer *b, const uint8_t *src, const reel_buffer *layout)
{
    reel_pixfmt pf = __builtin_ctzll(b->format.pixfmts);
    for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
        size_t n = reel_pixfmt_row_bytes(pf, p, b->format.width);
        for (int y = 0; y < reel_pixfmt_plane_height(pf, p, b->format.height); y++)
            memcpy(b->planes[p] + (size_t)y * b->strides[p],
                   src + layout->offsets[p] + (size_t)y * layout->strides[p], n);
    }
}

reel_buffer *reel_buffer_new_wrapped(const reel_caps *format, uint8_t *data, size_t size,
                                     void (*release)(void *opaque), void *opaque)
{
    if (!reel_caps_is_fixed(format) && !(format->media & REEL_MEDIA_VIDEO_ENCODED)) {
        release(opaque);
        return NULL;
    }
    reel_buffer *b = g_new0(reel_buffer, 1);
    b->format = *format;
    b->data = data;
    b->size = size;
    b->pts = b->dts = REEL_PTS_NONE;
    b->release_ = release;
    b->opaque_ = opaque;
    atomic_init(&b->refcount_, 1);
    atomic_fetch_add(&allocated_buffers, 1);
    reel_buffer_count_(1);
    return b;
}

void reel_buffer_clear_meta_(reel_buffer *b)
{
    reel_meta *m = b->meta_;
    while (m) {
        reel_meta *next = m->next;
        if (m->type->free)
            m->type->free(m->data);
        g_free(m);
        m = next;
    }
    b->meta_ = NULL;
}

void reel_buffer_free_(reel_buffer *b)
{
    reel_buffer_clear_meta_(b);
    if (b->release_)
        b->release_(b->opaque_);
    else
        free(b->data);
    g_free(b);
    reel_buffer_count_(-1);
}

reel_buffer *reel_buffer_ref(reel_buffer *b)
{
    atomic_fetch_add_explicit(&b->refcount_, 1, memory_order_relaxed);
    return b;
}

void reel_buffer_unref(reel_buffer **bp)
{
    reel_buffer *b = *bp;
    *bp = NULL;
    if (!b || atomic_fetch_sub_explicit(&b->refcount_, 1, memory_order_acq_rel) != 1)
        return;
    if (b->pool_ && reel_pool_return_(b->pool_, b))
        return;
    reel_buffer_free_(b);
}

bool reel_buffer_is_writable(const reel_buffer *b)
{
    return atomic_load(&((reel_buffer *)b)->refcount_) == 1;
}

reel_buffer *reel_buffer_copy(const reel_buffer *src)
{
    if (src->mem)
        return NULL; // device memory is copied by device work, not here
    bool frame = src->format.media == REEL_MEDIA_VIDEO_RAW;
    reel_buffer *b = frame ? reel_buffer_alloc_(&src->format) : reel_buffer_new(src->size);
    if (!b)
        return NULL;
    if (frame) {
        // Row by row: a wrapped frame's strides need not match ours.
        reel_pixfmt pf = __builtin_ctzll(src->format.pixfmts);
        for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
            size_t row = reel_pixfmt_row_bytes(pf, p, src->format.width);
            for (int y = 0; y < reel_pixfmt_plane_height(pf, p, src->format.height); y++)
                memcpy(b->planes[p] + (size_t)y * b->strides[p], src->planes[p] + (size_t)y * src->strides[p], row);
        }
    } else {
        memcpy(b->data, src->data, src->size);
    }
    b->format = src->format;
    reel_buffer_copy_props(b, src);
    return b;
}

void reel_buffer_copy_props(reel_buffer *dst, const reel_buffer *src)
{
    dst->pts = src->pts;
    dst->dts = src->dts;
    dst->duration = src->duration;
    dst->time_base = src->time_base;
    dst->stream_id = src->stream_id;
    dst->frame_number = src->frame_number;
    dst->capture_ns = src->capture_ns;
    dst->flags = src->flags;
    void *data;
    for (reel_meta *m = reel_buffer_next_meta(src, NULL, NULL, &data); m;
         m = reel_buffer_next_meta(src, m, NULL, &data))
        if (m->type->copy)
            reel_buffer_add_meta(dst, m->type, m->type->copy(data));
}

void reel_buffer_copy_metas(reel_buffer *dst, const reel_buffer *src, const reel_meta_type *type)
{
    void *data;
    if (!type->copy)
        return;
    for (reel_meta *m = reel_buffer_next_meta(src, NULL, type, &data); m; m = reel_buffer_next_meta(src, m, type, &data))
        reel_buffer_add_meta(dst, type, type->copy(data));
}

// A copy of a buffer in device memory, through the host's view of it
// (unified or mapped memory); NULL when the host cannot see it.
static reel_buffer *copy_device(const reel_buffer *b)
{
    size_t size = reel_mem_size(b->mem);
    reel_mem *copy = reel_mem_new(reel_mem_device(b->mem),
                                  reel_mem_params(.size = size, .domain = reel_mem_domain_of(b->mem)), NULL);
    void *src = NULL, *dst = NULL;
    if (!copy || reel_mem_map(b->mem, REEL_MAP_READ, &src) < 0 || reel_mem_map(copy, REEL_MAP_WRITE, &dst) < 0) {
        if (src)
            reel_mem_unmap(b->mem);
        reel_mem_unref(&copy);
        return NULL;
    }
    memcpy(dst, src, size);
    reel_mem_unmap(copy);
    reel_mem_unmap(b->mem);
    reel_buffer *out = reel_buffer_new_device_planes(&b->format, copy, b->offsets, b->strides);
    if (out)
        reel_buffer_copy_props(out, b);
    return out;
}

int reel_buffer_make_writable(reel_buffer **bp)
{
    if (reel_buffer_is_writable(*bp))
        return 0;
    reel_buffer *copy = (*bp)->mem ? copy_device(*bp) : reel_buffer_copy(*bp);
    if (!copy)
        return REEL_ENOMEM;
    reel_buffer_unref(bp);
    *bp = copy;
    return 0;
}

void reel_buffer_add_meta(reel_buffer *b, const reel_meta_type *type, void *data)
{
    reel_meta *m = g_new0(reel_meta, 1);
    m->type = type;
    m->data = data;
    reel_meta **tail = &b->meta_;
    while (*tail)
        tail = &(*tail)->next;
    *tail = m;
}

reel_meta *reel_buffer_next_meta(const reel_buffer *b, reel_meta *prev, const reel_meta_type *type,
                                 void **data)
{
    for (reel_meta *m = prev ? prev->next : b->meta_; m; m = m->next) {
        if (!type || m->type == type) {
            if (data)
                *data = m->data;
            return m;
        }
    }
    return NULL;
}

void *reel_buffer_get_meta(const reel_buffer *b, const reel_meta_type *type)
{
    void *data = NULL;
    return reel_buffer_next_meta(b, NULL, type, &data) ? data : NULL;
}

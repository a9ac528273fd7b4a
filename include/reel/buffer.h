// reel — buffers: refcounted video frames, encoded packets and tensors.
#ifndef REEL_BUFFER_H
#define REEL_BUFFER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "caps.h"
#include "device.h"
#include "export.h"

#define REEL_PTS_NONE INT64_MIN

typedef struct reel_pool reel_pool;
typedef struct reel_meta reel_meta;

// A type of metadata. Declare one `static const reel_meta_type` per kind; its
// address is the type's identity.
typedef struct reel_meta_type {
    const char *name;
    void (*free)(void *data);            // may be NULL
    void *(*copy)(const void *data);     // NULL: the meta is dropped by reel_buffer_copy()
} reel_meta_type;

// A buffer. Fields are written by the producer before it pushes the buffer
// and are read-only afterwards; a consumer that wants to change the contents
// calls reel_buffer_make_writable() first.
typedef struct reel_buffer {
    reel_caps format;          // fixed: what these bytes are
    uint8_t *data;             // start of the allocation
    size_t size;               // bytes used (packets) or allocated (frames, tensors)
    uint8_t *planes[REEL_MAX_PLANES]; // video in host memory: plane starts
    int strides[REEL_MAX_PLANES];     // video: bytes per row of each plane
    // Device memory holding the contents (format.memory is DEVICE), or NULL;
    // data and planes are NULL then. Frames there have their planes at
    // offsets[] with rows strides[] bytes apart: packed (plane after plane,
    // rows of exactly their visible bytes, reel_buffer_packed_size()) unless
    // the producer says otherwise (a decoder writing into device memory).
    reel_mem *mem;
    size_t offsets[REEL_MAX_PLANES];

    int64_t pts, duration;     // in time_base units; REEL_PTS_NONE when unknown
    int64_t dts;               // encoded packets: decode order time; REEL_PTS_NONE when unknown
    reel_fraction time_base;
    int stream_id;
    int64_t frame_number;
    unsigned flags;            // REEL_BUFFER_FLAG_*
    // Monotonic time (ns, CLOCK_MONOTONIC as g_get_monotonic_time()) its source captured or
    // made the frame it stems from; 0 unknown. A source may set it (a live
    // source: when the frame was captured); else pushing stamps it, and a
    // new buffer pushed without one takes its element's latest input's
    // capture time and stream id. Sinks measure latency from it.
    int64_t capture_ns;

    // private to reel
    atomic_int refcount_;
    reel_pool *pool_;
    reel_meta *meta_;
    struct reel_buffer *next_free_;
    void (*release_)(void *opaque);
    void *opaque_;
} reel_buffer;

enum {
    REEL_BUFFER_FLAG_KEYFRAME = 1 << 0,
    REEL_BUFFER_FLAG_CORRUPT = 1 << 1,
    REEL_BUFFER_FLAG_DISCONT = 1 << 2,
};

// A buffer of `size` bytes of host memory, zeroed, not from a pool; refcount 1.
REEL_API reel_buffer *reel_buffer_new(size_t size);

// A buffer holding one frame or tensor of fixed format `f`: planes and strides
// are set for raw video (rows aligned to 64 bytes), size from the shape for
// tensors. Returns NULL when f is not fixed or too large (REEL_ENOMEM).
REEL_API reel_buffer *reel_buffer_new_format(const reel_caps *f);

// A buffer over memory that someone else owns (a decoder's frame, a demuxer's
// packet), so that it travels without a copy. `release(opaque)` is called on
// the last unref. The caller fills planes and strides for video. Returns
// NULL (after calling release) when the format is neither fixed nor encoded.
REEL_API reel_buffer *reel_buffer_new_wrapped(const reel_caps *format, uint8_t *data, size_t size,
                                     void (*release)(void *opaque), void *opaque);

// A buffer over device memory holding one frame or tensor of fixed format f
// (its memory field DEVICE), packed. Takes over the caller's reference on mem.
REEL_API reel_buffer *reel_buffer_new_device(const reel_caps *f, reel_mem *mem);

// The same for a frame whose planes lie in mem at offsets[] with rows
// strides[] bytes apart, as a decoder laid them out.
REEL_API reel_buffer *reel_buffer_new_device_planes(const reel_caps *f, reel_mem *mem, const size_t *offsets,
                                           const int *strides);

// Whether a device frame's planes are packed (tensors always are).
REEL_API bool reel_buffer_is_packed(const reel_buffer *b);

// Bytes of a fixed raw-video or tensor format with no row padding: what a
// transfer to or from device memory moves. 0 for other formats.
REEL_API size_t reel_buffer_packed_size(const reel_caps *f);

// Copies a host frame's visible rows, plane after plane, into dst
// (reel_buffer_packed_size() bytes), or back from such packed bytes into a
// host frame's planes. Raw video only.
REEL_API void reel_buffer_pack(const reel_buffer *b, uint8_t *dst);
REEL_API void reel_buffer_unpack(reel_buffer *b, const uint8_t *src);
// Copies the visible rows of frame bytes laid out as `layout` says (its
// offsets and strides: a device frame's, read back whole) into host frame b.
REEL_API void reel_buffer_unpack_layout(reel_buffer *b, const uint8_t *src, const reel_buffer *layout);

// Copies of a frame or tensor in the other memory, with its fields and
// metadata: for elements that move data themselves (upload, download, an
// infer handing back frames it was given on the device). *scratch (of
// *scratch_size bytes; the caller g_free()s it) is a host buffer reused from
// call to call. Bytes moved are added to acc (may be NULL). NULL with *error
// set on failure.
REEL_API reel_buffer *reel_buffer_to_host(const reel_buffer *b, uint8_t **scratch, size_t *scratch_size, reel_xfer *acc,
                                 GError **error);
REEL_API reel_buffer *reel_buffer_to_device(const reel_buffer *b, reel_device *dev, uint8_t **scratch, size_t *scratch_size,
                                   reel_xfer *acc, GError **error);

// Thread-safety: ref and unref may be called from any thread.
REEL_API reel_buffer *reel_buffer_ref(reel_buffer *b);
// Drops one reference and sets *b to NULL; the last one returns the buffer to
// its pool or frees it. NULL-safe.
REEL_API void reel_buffer_unref(reel_buffer **b);

// Whether the caller holds the only reference.
REEL_API bool reel_buffer_is_writable(const reel_buffer *b);
// Replaces *b with a writable buffer of the same contents and metadata
// (a copy when *b is shared; in device memory, a copy on the same device
// made through the host's view of it). Returns 0 or REEL_ENOMEM (also for
// shared device memory the host cannot see).
REEL_API int reel_buffer_make_writable(reel_buffer **b);
// A deep copy with refcount 1 (contents, fields and copyable metadata), in
// host memory; NULL for a buffer in device memory.
REEL_API reel_buffer *reel_buffer_copy(const reel_buffer *b);

// Attaches metadata; the buffer takes ownership of data (freed with
// type->free). Several metas of one type may be attached.
REEL_API void reel_buffer_add_meta(reel_buffer *b, const reel_meta_type *type, void *data);
// Copies what src says about its contents to dst: timestamps, time base,
// stream id, frame number, flags, and every meta that can be copied. An
// element that makes a new buffer from an old one (a conversion) calls it.
REEL_API void reel_buffer_copy_props(reel_buffer *dst, const reel_buffer *src);
// Copies src's metas of `type` (that can be copied) to dst.
REEL_API void reel_buffer_copy_metas(reel_buffer *dst, const reel_buffer *src, const reel_meta_type *type);
// The first meta of `type`, or NULL.
REEL_API void *reel_buffer_get_meta(const reel_buffer *b, const reel_meta_type *type);
// Iterates metas of one type (type NULL: all): pass NULL for the first call.
REEL_API reel_meta *reel_buffer_next_meta(const reel_buffer *b, reel_meta *prev,
                                 const reel_meta_type *type, void **data);

// Pools recycle buffers of one fixed format: the last unref of a pooled
// buffer puts it back. A pool lives until it is released and its last
// buffer comes back.
// Thread-safety: one thread at a time acquires (the owning element); buffers
// may come back from any thread, without taking a lock.
REEL_API reel_pool *reel_pool_new(const reel_caps *format);
// Returns a recycled or new buffer (refcount 1, metadata cleared, fields reset),
// or NULL when the format cannot be allocated.
REEL_API reel_buffer *reel_pool_acquire(reel_pool *pool);
// The owner's release; NULL-safe, sets *pool to NULL.
REEL_API void reel_pool_release(reel_pool **pool);

// What pools allocated: for one pool, or summed over every pool the process
// made. After a run has stopped, outstanding (and pools_open) not being 0
// means some buffer was never given back: a leak.
typedef struct reel_pool_stats {
    long pools_open;   // pools not yet freed (1 for one pool)
    long allocated;    // buffers created, not counting recycled ones
    long outstanding;  // acquired and not yet returned
} reel_pool_stats;
REEL_API reel_pool_stats reel_pool_get_stats(const reel_pool *pool);
REEL_API reel_pool_stats reel_pool_get_totals(void);

// Process-wide counts, for tests and leak checks: buffers alive (allocated
// and not freed or returned to a pool) now and at most since the last reset.
typedef struct reel_buffer_stats {
    long live, peak_live;
    long allocated;  // buffers created (not recycled) so far
} reel_buffer_stats;
REEL_API reel_buffer_stats reel_buffer_get_stats(void);
REEL_API void reel_buffer_reset_peak(void);

#endif

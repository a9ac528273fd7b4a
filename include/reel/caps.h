// reel — formats ("caps"): what travels on a link, and negotiation of it.
//
// One struct serves both purposes GStreamer splits in two: a set of acceptable
// formats (fields left open mean "any") and, once every field is single-valued,
// one fixed format. Negotiation intersects sets until they are fixed.
#ifndef REEL_CAPS_H
#define REEL_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

typedef struct reel_fraction {
    int num, den;
} reel_fraction;

typedef struct reel_size {
    int width, height;
} reel_size;

// Media kinds, as bits so that a caps can accept several.
typedef enum reel_media {
    REEL_MEDIA_VIDEO_RAW = 1 << 0,     // decoded frames ("video/raw")
    REEL_MEDIA_VIDEO_ENCODED = 1 << 1, // compressed packets ("video/encoded")
    REEL_MEDIA_TENSOR = 1 << 2,        // n-dimensional arrays ("tensor")
    REEL_MEDIA_ANY = (1 << 3) - 1,
} reel_media;

typedef enum reel_pixfmt {
    REEL_PIXFMT_NONE = 0,
    REEL_PIXFMT_GRAY8,
    REEL_PIXFMT_RGB24,
    REEL_PIXFMT_BGR24,
    REEL_PIXFMT_RGBA,
    REEL_PIXFMT_BGRA,
    REEL_PIXFMT_YUV420P,
    REEL_PIXFMT_YUVJ420P, // full-range yuv420p, as JPEG decoders emit
    REEL_PIXFMT_NV12,
    REEL_PIXFMT_YUV422P,
    REEL_PIXFMT_YUV444P,
    REEL_PIXFMT_COUNT,
} reel_pixfmt;

#define REEL_PIXFMT_MASK_ALL (((uint64_t)1 << REEL_PIXFMT_COUNT) - 2)
#define REEL_PIXFMT_BIT(f) ((uint64_t)1 << (f))

typedef enum reel_dtype {
    REEL_DTYPE_NONE = 0,
    REEL_DTYPE_FLOAT32,
    REEL_DTYPE_FLOAT16,
    REEL_DTYPE_UINT8,
    REEL_DTYPE_INT8,
    REEL_DTYPE_INT16,
    REEL_DTYPE_UINT16,
    REEL_DTYPE_INT32,
    REEL_DTYPE_INT64,
    REEL_DTYPE_BOOL,
    REEL_DTYPE_FLOAT64,
    REEL_DTYPE_COUNT,
} reel_dtype;

// Where the bytes live.
typedef enum reel_memory {
    REEL_MEMORY_HOST = 1 << 0,
    REEL_MEMORY_DEVICE = 1 << 1,
    REEL_MEMORY_ANY = REEL_MEMORY_HOST | REEL_MEMORY_DEVICE,
} reel_memory;

#define REEL_TENSOR_MAX_RANK 8
#define REEL_CODEC_NAME_MAX 16

typedef struct reel_caps {
    unsigned media;          // reel_media bits
    uint64_t pixfmts;        // REEL_PIXFMT_BIT()s; raw video only
    int width, height;       // 0: any
    reel_fraction framerate; // {0, 0}: any; {0, 1}: variable
    char codec[REEL_CODEC_NAME_MAX]; // encoded video; "": any
    reel_dtype dtype;        // tensors; NONE: any
    int rank;                // 0: any
    int64_t shape[REEL_TENSOR_MAX_RANK]; // 0 within rank: any
    unsigned memory;         // reel_memory bits
} reel_caps;

// Accepts everything.
reel_caps reel_caps_any(void);

// Accepts nothing; reel_caps_is_empty() is true for it.
bool reel_caps_is_empty(const reel_caps *c);

// Every field single-valued: one concrete format.
bool reel_caps_is_fixed(const reel_caps *c);

// The formats both accept. Returns false (and leaves *out empty) when none.
bool reel_caps_intersect(const reel_caps *a, const reel_caps *b, reel_caps *out);

// Whether fixed format f is one of the formats c accepts.
bool reel_caps_accepts(const reel_caps *c, const reel_caps *f);

// Parses "video/raw,format=rgb24,width=224,height=224,framerate=30/1",
// "video/raw,format=rgb24|bgr24", "video/encoded,codec=h264",
// "tensor,dtype=float32,shape=1x3x224x224", "any", and memory=host|device.
// On failure returns false, sets *error (REEL_ERROR/REEL_EINVAL) and, when
// err_offset is not NULL, the byte offset of the offending field.
bool reel_caps_parse(const char *text, reel_caps *out, size_t *err_offset, GError **error);

// Canonical text form, parseable by reel_caps_parse(). Caller frees (g_free).
char *reel_caps_to_string(const reel_caps *c);

bool reel_caps_equal(const reel_caps *a, const reel_caps *b);

// Pixel formats.
const char *reel_pixfmt_name(reel_pixfmt f);          // "rgb24"; NULL if invalid
reel_pixfmt reel_pixfmt_from_name(const char *name);  // REEL_PIXFMT_NONE if unknown
int reel_pixfmt_planes(reel_pixfmt f);
// The format to use when several are allowed (a set of REEL_PIXFMT_BIT()s):
// the most widely useful first, yuv420p, nv12, rgb24, ... gray8 last.
// REEL_PIXFMT_NONE for an empty set.
reel_pixfmt reel_pixfmt_pick(uint64_t set);
// Bytes of one row of plane p at the given width, and the plane's height.
size_t reel_pixfmt_row_bytes(reel_pixfmt f, int plane, int width);
int reel_pixfmt_plane_height(reel_pixfmt f, int plane, int height);

// Tensor element types.
const char *reel_dtype_name(reel_dtype t);
reel_dtype reel_dtype_from_name(const char *name);
size_t reel_dtype_size(reel_dtype t);

#endif

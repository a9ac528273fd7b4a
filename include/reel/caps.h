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

#include "format.h"
#include "export.h"

// Media kinds, as bits so that a caps can accept several.
typedef enum reel_media {
    REEL_MEDIA_VIDEO_RAW = 1 << 0,     // decoded frames ("video/raw")
    REEL_MEDIA_VIDEO_ENCODED = 1 << 1, // compressed packets ("video/encoded")
    REEL_MEDIA_TENSOR = 1 << 2,        // n-dimensional arrays ("tensor")
    REEL_MEDIA_ANY = (1 << 3) - 1,
} reel_media;

// Where the bytes live.
typedef enum reel_memory {
    REEL_MEMORY_HOST = 1 << 0,
    REEL_MEMORY_DEVICE = 1 << 1,
    REEL_MEMORY_ANY = REEL_MEMORY_HOST | REEL_MEMORY_DEVICE,
} reel_memory;

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
REEL_API reel_caps reel_caps_any(void);

// Accepts nothing; reel_caps_is_empty() is true for it.
REEL_API bool reel_caps_is_empty(const reel_caps *c);

// Every field single-valued: one concrete format.
REEL_API bool reel_caps_is_fixed(const reel_caps *c);

// The formats both accept. Returns false (and leaves *out empty) when none.
REEL_API bool reel_caps_intersect(const reel_caps *a, const reel_caps *b, reel_caps *out);

// Whether fixed format f is one of the formats c accepts.
REEL_API bool reel_caps_accepts(const reel_caps *c, const reel_caps *f);

// Parses "video/raw,format=rgb24,width=224,height=224,framerate=30/1",
// "video/raw,format=rgb24|bgr24", "video/encoded,codec=h264",
// "tensor,dtype=float32,shape=1x3x224x224", "any", and memory=host|device.
// On failure returns false, sets *error (REEL_ERROR/REEL_EINVAL) and, when
// err_offset is not NULL, the byte offset of the offending field.
REEL_API bool reel_caps_parse(const char *text, reel_caps *out, size_t *err_offset, GError **error);

// Canonical text form, parseable by reel_caps_parse(). Caller frees (g_free).
REEL_API char *reel_caps_to_string(const reel_caps *c);

REEL_API bool reel_caps_equal(const reel_caps *a, const reel_caps *b);

// Checks the frame size of video caps and the shape of tensor caps against
// the limits (reel/limits.h; fields left open pass). Returns 0 or the code
// of the check that failed.
REEL_API int reel_caps_check_limits(const reel_caps *f, GError **error);

#endif

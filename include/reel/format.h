// reel — formats of pixels and tensor elements: names, sizes, plane
// geometry; fractions and sizes. Shared by every layer.
#ifndef REEL_FORMAT_H
#define REEL_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include "export.h"

typedef struct reel_fraction {
    int num, den;
} reel_fraction;

typedef struct reel_size {
    int width, height;
} reel_size;

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

// Planes of a frame at most, and dims of a tensor at most.
#define REEL_MAX_PLANES 4
#define REEL_TENSOR_MAX_RANK 8

// Pixel formats.
REEL_API const char *reel_pixfmt_name(reel_pixfmt f);          // "rgb24"; NULL if invalid
REEL_API reel_pixfmt reel_pixfmt_from_name(const char *name);  // REEL_PIXFMT_NONE if unknown
REEL_API int reel_pixfmt_planes(reel_pixfmt f);
// The format to use when several are allowed (a set of REEL_PIXFMT_BIT()s):
// the most widely useful first, yuv420p, nv12, rgb24, ... gray8 last.
// REEL_PIXFMT_NONE for an empty set.
REEL_API reel_pixfmt reel_pixfmt_pick(uint64_t set);
// Bytes of one row of plane p at the given width, and the plane's height.
REEL_API size_t reel_pixfmt_row_bytes(reel_pixfmt f, int plane, int width);
REEL_API int reel_pixfmt_plane_height(reel_pixfmt f, int plane, int height);

// Tensor element types.
REEL_API const char *reel_dtype_name(reel_dtype t);
REEL_API reel_dtype reel_dtype_from_name(const char *name);
REEL_API size_t reel_dtype_size(reel_dtype t);

#endif

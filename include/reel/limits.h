// reel — hard limits on what an input may ask for.
//
// Files, models and streams come from outside; a header that claims a
// 100000x100000 frame or a tensor of 2^62 elements is refused with a message
// naming the limit instead of ending in a failed allocation. Each limit has a
// default and an environment variable that overrides it (a positive integer).
#ifndef REEL_LIMITS_H
#define REEL_LIMITS_H

#include <stdint.h>
#include <glib.h>

#include "format.h"
#include "export.h"

typedef enum reel_limit {
    REEL_LIMIT_MODEL_BYTES,   // REEL_MAX_MODEL_BYTES: size of a model file; 2 GiB (protobuf's own bound)
    REEL_LIMIT_TENSOR_BYTES,  // REEL_MAX_TENSOR_BYTES: bytes of one tensor (weights, activations); 16 GiB
    REEL_LIMIT_FRAME_SIDE,    // REEL_MAX_FRAME_SIDE: width or height of a frame, pixels; 32768
    REEL_LIMIT_FRAME_PIXELS,  // REEL_MAX_FRAME_PIXELS: width * height of a frame; 2^28 (16384x16384)
    REEL_LIMIT_QUEUE_BYTES,   // REEL_MAX_QUEUE_BYTES: default byte bound of every link; 1 GiB
    REEL_LIMIT_TEXT_BYTES,    // REEL_MAX_TEXT_BYTES: a labels file, model manifest or job policy; 16 MiB
    REEL_LIMIT_COUNT,
} reel_limit;

// Tensors have at most this many dims (models and caps alike).
#define REEL_LIMIT_RANK REEL_TENSOR_MAX_RANK

// The limit in force: the environment variable when it holds a positive
// integer, else the default. Thread-safety: any thread (the environment is
// read once, on first use).
REEL_API int64_t reel_limit_get(reel_limit which);
// The environment variable that overrides it ("REEL_MAX_MODEL_BYTES").
REEL_API const char *reel_limit_env(reel_limit which);

// Checks a frame size against REEL_LIMIT_FRAME_SIDE and _PIXELS. Returns 0,
// or REEL_EUNSUPPORTED with *error saying which limit "WxH" exceeds (the
// caller prefixes who claimed it).
REEL_API int reel_limit_check_frame(int width, int height, GError **error);

// Checks a tensor shape: rank, non-negative dims, element count and bytes
// (elements * elem_size) against REEL_LIMIT_TENSOR_BYTES, all without
// overflow. Returns 0, or REEL_EUNSUPPORTED / REEL_EFORMAT with *error set.
// *nbytes (may be NULL) receives the size on success.
REEL_API int reel_limit_check_tensor(int rank, const int64_t *shape, size_t elem_size, int64_t *nbytes,
                            GError **error);

#endif

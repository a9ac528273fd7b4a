// Fused preprocess: one pass from a video frame to a model input tensor —
// region of interest, bilinear resize with a fit mode, YUV to RGB, channel
// order, normalization, layout, float32. Three implementations compute the
// same function: the "preprocess" kernel (gpu/shaders/preprocess.comp), the
// cpu backend's version of it, and reel_preprocess_rows() for host frames
// with any plane strides (the element's CPU path).
//
// Definition, per tensor pixel (x, y) inside the content box [x0, x1) x
// [y0, y1): the frame is sampled at
//     fx = (x + 0.5) * sx + ox - 0.5,   fy = (y + 0.5) * sy + oy - 0.5
// (pixel-centre coordinates), bilinearly from the four nearest pixels with
// coordinates clamped to the frame. Luma (or R, G, B) is sampled at (fx, fy);
// chroma of subsampled formats at the chroma plane's own centres:
// ((fx + 0.5) / 2 - 0.5, (fy + 0.5) / 2 - 0.5) for 4:2:0 (centre-sited).
// YUV becomes RGB with BT.601 (limited range; full range for yuvj420p),
// clamped to [0, 255]. Output channel c (0..2) takes R, G, B in that order,
// or B, G, R with REEL_PRE_BGR, and becomes value * mul[c] + add[c]. Pixels
// outside the content box take pad * mul[c] + add[c].
#ifndef REEL_GPU_PREPROCESS_H
#define REEL_GPU_PREPROCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "reel/format.h"

enum {
    REEL_PRE_NHWC = 1u << 0, // tensor [1, H, W, 3]; otherwise [1, 3, H, W]
    REEL_PRE_BGR = 1u << 1,  // channels B, G, R
};

// Push constants of the "preprocess" kernel (108 bytes). Buffers: {frame,
// tensor}: the frame's planes packed in one buffer at offset[] with row bytes
// stride[] (any multiple of 1), the tensor float32. One invocation per
// tensor pixel: groups = ceil(dst_w * dst_h / local_size).
typedef struct reel_preprocess_push {
    uint32_t src_w, src_h, src_fmt; // frame size; reel_pixfmt: yuv420p, yuvj420p, nv12, rgb24, bgr24, rgba
    uint32_t offset[3], stride[3];  // bytes
    uint32_t dst_w, dst_h, flags;   // REEL_PRE_*
    float sx, sy, ox, oy;           // tensor pixel -> frame point (see above)
    int32_t x0, y0, x1, y1;         // content box in tensor pixels
    float mul[3], add[3];           // per output channel, on values 0..255
    float pad;                      // 0..255, before normalization
} reel_preprocess_push;

typedef enum reel_fit {
    REEL_FIT_STRETCH,   // the region fills the tensor; aspect not kept
    REEL_FIT_LETTERBOX, // scaled to fit inside, centred, the rest padded
    REEL_FIT_CROP,      // scaled to cover, the centre kept
} reel_fit;

// The affine map from frame pixels to tensor pixels a preprocess applied:
// tensor_x = frame_x * ax + bx, tensor_y = frame_y * ay + by (continuous
// coordinates, pixel edges at integers).
typedef struct reel_affine {
    double ax, bx, ay, by;
} reel_affine;

// Fills p's sx, sy, ox, oy and content box, and *map, for the frame region
// roi = {x, y, w, h} (NULL or w, h <= 0: the whole frame) of a src_w x src_h
// frame resized to dst_w x dst_h with `fit`. Letterbox content is rounded
// to whole pixels and centred (extra pixel right and bottom).
void reel_preprocess_geometry(int src_w, int src_h, const int *roi, int dst_w, int dst_h, reel_fit fit,
                              reel_preprocess_push *p, reel_affine *map);

// The CPU implementation over host planes (strides in bytes may differ from
// p->stride; p->offset is ignored): tensor rows [row0, row1) of dst.
// Thread-safety: disjoint row ranges may run on different threads.
void reel_preprocess_rows(const reel_preprocess_push *p, const uint8_t *const planes[3], const int strides[3],
                          float *dst, int row0, int row1);

#endif

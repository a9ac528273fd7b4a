// Overlay drawing: instance masks blended translucently, then boxes, filled
// boxes and glyphs of a built-in 5x7 bitmap font painted over them, into a
// video frame in place, in order (a later mask blends over an earlier one, a
// later primitive covers an earlier one and every mask). Two implementations
// give identical bytes:
// the "overlay" kernel (gpu/shaders/overlay.comp, one invocation per 32-bit
// word of the frame, the last primitive covering each byte wins) and
// reel_overlay_paint() (primitive by primitive, for host frames and the cpu
// backend).
//
// Coverage of frame pixel (px, py), all integer:
//   FILL   x0 <= px < x1 and y0 <= py < y1
//   RECT   inside FILL's box and not inside the box inset by `thickness`
//   GLYPH  inside the box and font bit set at column (px - x0) * 5 / (x1 - x0),
//          row (py - y0) * 7 / (y1 - y0) of character `glyph`
//   LINE   the segment (x0, y0)-(x1, y1), `thickness` wide: with dx = x1 - x0,
//          dy = y1 - y0 and the endpoints ordered so that the major one is
//          >= 0, when |dx| >= |dy|: x0 <= px <= x1 and
//          2 |py dx - y0 dx - (px - x0) dy| <= thickness dx (else the same
//          with x and y swapped); a zero-length one covers (x0, y0) alone.
//          Nothing when thickness <= 0 or an endpoint is beyond +-8192
//          (which keeps the 32-bit arithmetic of both implementations exact).
// A sample of a subsampled chroma plane at (cx, cy) is covered when the luma
// pixel at its top-left, (cx * 2, cy * 2) for 4:2:0, is. Covered samples
// take the primitive's colour byte for their channel.
#ifndef REEL_GPU_OVERLAY_H
#define REEL_GPU_OVERLAY_H

#include <stdint.h>

#include "reel/format.h"

#define REEL_FONT_W 5
#define REEL_FONT_H 7
#define REEL_FONT_FIRST 32 // ' '
#define REEL_FONT_LAST 126 // '~'; other codes draw as '?'

// Row r of character ch: bit 4 is the leftmost column. One word per row, so
// the table uploads as the kernel's font buffer unchanged.
extern const uint32_t reel_font5x7[REEL_FONT_LAST - REEL_FONT_FIRST + 1][REEL_FONT_H];

enum { REEL_PRIM_FILL, REEL_PRIM_RECT, REEL_PRIM_GLYPH, REEL_PRIM_LINE };
#define REEL_LINE_MAX_COORD 8192

// One primitive (32 bytes, the kernel's std430 layout).
typedef struct reel_overlay_prim {
    int32_t kind;           // REEL_PRIM_*
    int32_t x0, y0, x1, y1; // box in frame pixels, [x0, x1) x [y0, y1), or LINE's endpoints; may reach outside
    int32_t thickness;      // RECT: outline width in pixels; LINE: its width
    uint32_t color;         // byte per channel in the frame's own terms: Y | U << 8 | V << 16 for YUV,
                            // R | G << 8 | B << 16 (| A << 24) for rgb24/bgr24/rgba by name, not position
    uint32_t glyph;         // GLYPH: character code
} reel_overlay_prim;

// One instance mask (32 bytes, 8 words of the kernel's masks buffer): the
// pixels of the rectangle [x, x + width) x [y, y + height) numbered row by
// row from 0 (i = row * width + column), and the running sums of its run
// lengths (off, on, off, ... as reel_masks has them, include/reel/vision.h),
// ends[first .. first + n_ends): pixel i is on when the count of those ends
// <= i is odd and below n_ends (past the last run: off). width * height
// must fit in 32 bits (elements/overlay.c keeps to the frame's rows).
typedef struct reel_overlay_mask {
    int32_t x, y, width, height;
    uint32_t color;            // as a primitive's
    uint32_t first, n_ends;    // its ends in the ends after the masks
    uint32_t reserved;
} reel_overlay_mask;

// Push constants of the "overlay" kernel (48 bytes). Buffers: {frame (read
// and written, planes packed at offset[] with row bytes stride[]), prims,
// font (reel_font5x7), masks (n_masks reel_overlay_mask, then the uint32
// ends they index; at least one word even when empty)}. One invocation per
// 32-bit word of the frame buffer: groups = ceil(words / local_size), words
// = ceil(frame bytes / 4).
typedef struct reel_overlay_push {
    uint32_t fmt, width, height, n_prims; // reel_pixfmt: yuv420p, yuvj420p, nv12, rgb24, bgr24, rgba
    uint32_t offset[3], stride[3];
    uint32_t n_masks, alpha;              // alpha: the masks' opacity, 0..256
} reel_overlay_push;

// Colour bytes for `fmt` from an RGB colour (BT.601, limited range for
// yuv420p/nv12, full for yuvj420p).
uint32_t reel_overlay_color(reel_pixfmt fmt, uint8_t r, uint8_t g, uint8_t b);

// Blends the p->n_masks masks of `masks` (the kernel's masks buffer; NULL
// when none), then paints prims, into host planes (strides in bytes;
// p->offset ignored).
void reel_overlay_paint(const reel_overlay_push *p, uint8_t *const planes[3], const int strides[3],
                        const reel_overlay_prim *prims, const uint32_t *masks);

#endif

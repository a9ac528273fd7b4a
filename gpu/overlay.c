// Overlay drawing on the host: colours, reel_overlay_paint() and the cpu
// backend's "overlay" kernel. gpu/shaders/overlay.comp computes the same
// bytes the other way round (per byte, the last covering primitive, else
// the masks covering it blended in turn).
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "gpu/overlay.h"

// The shader hard-codes these reel_pixfmt values.
_Static_assert(REEL_PIXFMT_RGB24 == 2 && REEL_PIXFMT_BGR24 == 3 && REEL_PIXFMT_RGBA == 4 &&
                   REEL_PIXFMT_YUV420P == 6 && REEL_PIXFMT_YUVJ420P == 7 && REEL_PIXFMT_NV12 == 8,
               "gpu/shaders/overlay.comp's format numbers");
_Static_assert(sizeof(reel_overlay_prim) == 32 && sizeof(reel_overlay_push) == 48 && sizeof(reel_overlay_mask) == 32,
               "kernel layouts");

// A format's planes: log2 subsampling, bytes per sample, and which colour
// byte each of a sample's bytes takes.
typedef struct layout {
    int n_planes;
    struct { int xs, ys, bpp; uint8_t chan[4]; } plane[3];
} layout;

static layout layout_of(reel_pixfmt fmt)
{
    switch (fmt) {
    case REEL_PIXFMT_YUV420P:
    case REEL_PIXFMT_YUVJ420P:
        return (layout){ 3, { { 0, 0, 1, { 0 } }, { 1, 1, 1, { 1 } }, { 1, 1, 1, { 2 } } } };
    case REEL_PIXFMT_NV12:
        return (layout){ 2, { { 0, 0, 1, { 0 } }, { 1, 1, 2, { 1, 2 } } } };
    case REEL_PIXFMT_RGB24:
        return (layout){ 1, { { 0, 0, 3, { 0, 1, 2 } } } };
    case REEL_PIXFMT_BGR24:
        return (layout){ 1, { { 0, 0, 3, { 2, 1, 0 } } } };
    case REEL_PIXFMT_RGBA:
        return (layout){ 1, { { 0, 0, 4, { 0, 1, 2, 3 } } } };
    default:
        return (layout){ 0 };
    }
}

static uint8_t clamp255(int v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

// The formulas with 128 << 8 folded in before the shift, so nothing negative
// is shifted: the same floor as an arithmetic shift, without relying on one.
uint32_t reel_overlay_color(reel_pixfmt fmt, uint8_t r, uint8_t g, uint8_t b)
{
    int y, u, v;
    switch (fmt) {
    case REEL_PIXFMT_YUV420P:
    case REEL_PIXFMT_NV12:
        y = ((66 * r + 129 * g + 25 * b + 128) >> 8) + 16;
        u = (-38 * r - 74 * g + 112 * b + 128 + (128 << 8)) >> 8;
        v = (112 * r - 94 * g - 18 * b + 128 + (128 << 8)) >> 8;
        break;
    case REEL_PIXFMT_YUVJ420P: // JPEG: 0.299/0.587/0.114, chroma scaled by 0.5 / (1 - k)
        y = (77 * r + 150 * g + 29 * b + 128) >> 8;
        u = (-43 * r - 85 * g + 128 * b + 128 + (128 << 8)) >> 8;
        v = (128 * r - 107 * g - 21 * b + 128 + (128 << 8)) >> 8;
        break;
    default:
        return r | (uint32_t)g << 8 | (uint32_t)b << 16 | 255u << 24;
    }
    // Full-range pure blue or red rounds to 256.
    return clamp255(y) | (uint32_t)clamp255(u) << 8 | (uint32_t)clamp255(v) << 16;
}

// Glyph coverage in 32-bit unsigned arithmetic, exactly as the shader
// computes it, so even boxes billions of pixels wide agree byte for byte.
static int glyph_bit(const reel_overlay_prim *q, int px, int py)
{
    uint32_t ch = q->glyph >= REEL_FONT_FIRST && q->glyph <= REEL_FONT_LAST ? q->glyph : '?';
    uint32_t col = ((uint32_t)px - (uint32_t)q->x0) * REEL_FONT_W / ((uint32_t)q->x1 - (uint32_t)q->x0);
    uint32_t row = ((uint32_t)py - (uint32_t)q->y0) * REEL_FONT_H / ((uint32_t)q->y1 - (uint32_t)q->y0);
    return reel_font5x7[ch - REEL_FONT_FIRST][row] >> (REEL_FONT_W - 1 - col) & 1;
}

// Paints the pixels of box [x0, x1) x [y0, y1) (a part of q's box) that q
// covers; only the samples inside the box and the frame are visited.
static void paint_box(const reel_overlay_push *p, const layout *l, uint8_t *const planes[3], const int strides[3],
                      const reel_overlay_prim *q, int64_t x0, int64_t y0, int64_t x1, int64_t y1)
{
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > p->width ? p->width : x1, y1 = y1 > p->height ? p->height : y1;
    if (x0 >= x1 || y0 >= y1)
        return;
    for (int i = 0; i < l->n_planes; i++) {
        int xs = l->plane[i].xs, ys = l->plane[i].ys, bpp = l->plane[i].bpp;
        uint8_t bytes[4];
        for (int k = 0; k < bpp; k++)
            bytes[k] = (uint8_t)(q->color >> (8 * l->plane[i].chan[k]));
        // A subsampled sample is covered when the pixel at its top-left is.
        int cx0 = (int)((x0 + (1 << xs) - 1) >> xs), cx1 = (int)((x1 - 1) >> xs) + 1;
        int cy0 = (int)((y0 + (1 << ys) - 1) >> ys), cy1 = (int)((y1 - 1) >> ys) + 1;
        for (int cy = cy0; cy < cy1; cy++) {
            uint8_t *row = planes[i] + (size_t)cy * strides[i];
            for (int cx = cx0; cx < cx1; cx++)
                if (q->kind != REEL_PRIM_GLYPH || glyph_bit(q, cx << xs, cy << ys))
                    for (int k = 0; k < bpp; k++)
                        row[cx * bpp + k] = bytes[k];
        }
    }
}

static bool line_in_range(const reel_overlay_prim *q)
{
    const int32_t v[4] = { q->x0, q->y0, q->x1, q->y1 };
    for (int i = 0; i < 4; i++)
        if (v[i] < -REEL_LINE_MAX_COORD || v[i] > REEL_LINE_MAX_COORD)
            return false;
    return q->thickness > 0;
}

// LINE coverage (gpu/overlay.h), in the shader's 32-bit arithmetic: with
// endpoints within +-8192 and pixels within a frame nothing overflows.
static bool line_covers(const reel_overlay_prim *q, int px, int py)
{
    int x0 = q->x0, y0 = q->y0, x1 = q->x1, y1 = q->y1, dx = x1 - x0, dy = y1 - y0;
    bool x_major = abs(dx) >= abs(dy);
    if ((x_major && dx < 0) || (!x_major && dy < 0)) {
        x0 = q->x1, y0 = q->y1, x1 = q->x0, y1 = q->y0, dx = -dx, dy = -dy;
    }
    if (dx == 0 && dy == 0)
        return px == x0 && py == y0;
    if (x_major)
        return px >= x0 && px <= x1 && 2 * abs(py * dx - y0 * dx - (px - x0) * dy) <= q->thickness * dx;
    return py >= y0 && py <= y1 && 2 * abs(px * dy - x0 * dy - (py - y0) * dx) <= q->thickness * dy;
}

// A line's samples: along its major axis, a window of the minor one around
// the segment (wide enough for every covered sample), each tested exactly.
static void paint_line(const reel_overlay_push *p, const layout *l, uint8_t *const planes[3], const int strides[3],
                       const reel_overlay_prim *q)
{
    if (!line_in_range(q))
        return;
    int dx = q->x1 - q->x0, dy = q->y1 - q->y0, t = q->thickness;
    bool x_major = abs(dx) >= abs(dy);
    int lo = x_major ? MIN(q->x0, q->x1) : MIN(q->y0, q->y1), hi = x_major ? MAX(q->x0, q->x1) : MAX(q->y0, q->y1);
    for (int i = 0; i < l->n_planes; i++) {
        int xs = l->plane[i].xs, ys = l->plane[i].ys, bpp = l->plane[i].bpp;
        int ms = x_major ? xs : ys, ns = x_major ? ys : xs; // major and minor subsampling
        int mmax = ((x_major ? (int)p->width : (int)p->height) - 1) >> ms;
        int nmax = ((x_major ? (int)p->height : (int)p->width) - 1) >> ns;
        uint8_t bytes[4];
        for (int k = 0; k < bpp; k++)
            bytes[k] = (uint8_t)(q->color >> (8 * l->plane[i].chan[k]));
        for (int m = MAX(0, (lo + (1 << ms) - 1) >> ms); m <= MIN(mmax, hi >> ms); m++) {
            int major = m << ms;
            double along = x_major ? (dx ? (double)(major - q->x0) / dx : 0) : (dy ? (double)(major - q->y0) / dy : 0);
            int centre = (int)(x_major ? q->y0 + along * dy : q->x0 + along * dx);
            for (int n = MAX(0, (centre - t - 2) >> ns); n <= MIN(nmax, (centre + t + 2) >> ns); n++) {
                int px = x_major ? major : n << ns, py = x_major ? n << ns : major;
                if (!line_covers(q, px, py))
                    continue;
                int cx = px >> xs, cy = py >> ys;
                uint8_t *at = planes[i] + (size_t)cy * strides[i] + (size_t)cx * bpp;
                for (int k = 0; k < bpp; k++)
                    at[k] = bytes[k];
            }
        }
    }
}

// Blends `color` into the pixels x0 <= px < x1 of row y, alpha/256 of it;
// a subsampled sample blends when the pixel at its top left is in the span.
static void blend_span(const reel_overlay_push *p, const layout *lp, uint8_t *const planes[3], const int strides[3],
                       int64_t y, int64_t x0, int64_t x1, uint32_t color, int alpha)
{
    const layout l = *lp;
    x0 = MAX(x0, 0), x1 = MIN(x1, (int64_t)p->width);
    if (y < 0 || y >= (int64_t)p->height || x0 >= x1)
        return;
    for (int i = 0; i < l.n_planes; i++) {
        int xs = l.plane[i].xs, ys = l.plane[i].ys, bpp = l.plane[i].bpp;
        if (y & ((1 << ys) - 1))
            continue; // a subsampled row follows the luma row at its top
        int c[4];
        for (int k = 0; k < bpp; k++)
            c[k] = (int)(color >> (8 * l.plane[i].chan[k]) & 255) * alpha;
        uint8_t *row = planes[i] + (size_t)(y >> ys) * strides[i];
        for (int cx = (int)((x0 + (1 << xs) - 1) >> xs); cx <= (int)((x1 - 1) >> xs); cx++)
            for (int k = 0; k < bpp; k++) {
                uint8_t *v = &row[cx * bpp + k];
                *v = (uint8_t)((*v * (256 - alpha) + c[k] + 128) >> 8);
            }
    }
}

// Each mask's on runs (ends[2k] to ends[2k + 1] in its own numbering), a
// row's part at a time.
static void blend_masks(const reel_overlay_push *p, const layout *l, uint8_t *const planes[3], const int strides[3],
                        const uint32_t *words)
{
    const uint32_t *ends = words + (size_t)p->n_masks * (sizeof(reel_overlay_mask) / 4);
    int alpha = (int)MIN(p->alpha, 256u);
    for (uint32_t i = 0; i < p->n_masks; i++) {
        reel_overlay_mask m;
        memcpy(&m, words + (size_t)i * (sizeof m / 4), sizeof m);
        if (m.width <= 0 || m.height <= 0)
            continue;
        // Only the rows inside the frame.
        int64_t lo = MAX(0, -(int64_t)m.y) * m.width, hi = MIN((int64_t)m.height, (int64_t)p->height - m.y) * m.width;
        for (uint32_t r = 1; r < m.n_ends; r += 2) {
            int64_t q = MAX((int64_t)ends[m.first + r - 1], lo), end = MIN((int64_t)ends[m.first + r], hi);
            while (q < end) {
                int64_t row = q / m.width, col = q % m.width, stop = MIN(end, (row + 1) * m.width);
                blend_span(p, l, planes, strides, m.y + row, m.x + col, m.x + col + (stop - q), m.color, alpha);
                q = stop;
            }
        }
    }
}

void reel_overlay_paint(const reel_overlay_push *p, uint8_t *const planes[3], const int strides[3],
                        const reel_overlay_prim *prims, const uint32_t *masks)
{
    layout l = layout_of((reel_pixfmt)p->fmt);
    if (masks && p->alpha)
        blend_masks(p, &l, planes, strides, masks);
    for (uint32_t n = 0; n < p->n_prims; n++) {
        const reel_overlay_prim *q = &prims[n];
        int64_t x0 = q->x0, y0 = q->y0, x1 = q->x1, y1 = q->y1, t = q->thickness;
        if (q->kind == REEL_PRIM_LINE) {
            paint_line(p, &l, planes, strides, q);
        } else if (q->kind != REEL_PRIM_RECT) {
            paint_box(p, &l, planes, strides, q, x0, y0, x1, y1);
        } else if (t > 0 && x0 < x1 && y0 < y1) {
            // The outline as four bands, so the inside is never visited;
            // corners painted twice get the same bytes.
            int64_t xi0 = x0 + t < x1 ? x0 + t : x1, xi1 = x1 - t > x0 ? x1 - t : x0;
            int64_t yi0 = y0 + t < y1 ? y0 + t : y1, yi1 = y1 - t > y0 ? y1 - t : y0;
            paint_box(p, &l, planes, strides, q, x0, y0, x1, yi0);
            paint_box(p, &l, planes, strides, q, x0, yi1, x1, y1);
            paint_box(p, &l, planes, strides, q, x0, y0, xi0, y1);
            paint_box(p, &l, planes, strides, q, xi1, y0, x1, y1);
        }
    }
}

// Buffers {frame, prims, font, masks}. The font buffer holds reel_font5x7,
// which paint reads directly. Paints the whole frame: callers dispatch one
// invocation per word of it, so groups add nothing.
void cpu_kernel_overlay(void *const *buffers, const void *push, const uint32_t groups[3], uint32_t local_size)
{
    (void)groups, (void)local_size;
    reel_overlay_push p;
    memcpy(&p, push, sizeof p);
    uint8_t *frame = buffers[0];
    uint8_t *planes[3];
    int strides[3];
    for (int i = 0; i < 3; i++)
        planes[i] = frame + p.offset[i], strides[i] = (int)p.stride[i];
    reel_overlay_paint(&p, planes, strides, buffers[1], buffers[3]);
}

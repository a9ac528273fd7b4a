// The "overlay" kernel: `test_overlay cpu` runs it on the cpu backend,
// `test_overlay vulkan` on vulkan:0 (exit 77 when there is no Vulkan
// device). Each backend's bytes must equal reel_overlay_paint()'s, a few
// hand-worked frames pin what paint itself draws (masks' blends included),
// and the overlay element's boxes, landmarks, label bars and masks are
// checked pixel by pixel against their geometry worked out here (glyphs
// written out by hand), not by a painter of reel's; its masks on the device
// equal its masks on the cpu byte for byte. With REEL_VULKAN_VALIDATION=1 any validation message fails the test.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/overlay.h"
#include "reel/device.h"
#include "reel/reel.h"
#include "tests/support/skip.h"

static const char *spec; // the device under test

typedef struct fixture {
    reel_device *dev;
    reel_kernel *k;
} fixture;

static int setup(void **state)
{
    GError *error = NULL;
    fixture *f = g_new0(fixture, 1);
    *state = f;
    f->dev = reel_device_open(spec, &error);
    if (f->dev)
        f->k = reel_kernel_create(f->dev, reel_kernel_params(.name = "overlay"), &error);
    if (!f->k) {
        fprintf(stderr, "%s: %s\n", spec, error->message);
        g_error_free(error);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    reel_kernel_destroy(&f->k);
    reel_device_unref(&f->dev);
    g_free(f);
    // Messages can come from any call, teardown included.
    return reel_device_validation_messages() == 0 ? 0 : -1;
}

// The planes of a format as the test sees them (written independently of
// gpu/overlay.c): count, log2 chroma subsampling, bytes per sample of each.
typedef struct planes_of {
    int n, sub[3], bpp[3];
} planes_of;

static planes_of planes_of_fmt(reel_pixfmt fmt)
{
    switch (fmt) {
    case REEL_PIXFMT_YUV420P:
    case REEL_PIXFMT_YUVJ420P: return (planes_of){ 3, { 0, 1, 1 }, { 1, 1, 1 } };
    case REEL_PIXFMT_NV12: return (planes_of){ 2, { 0, 1 }, { 1, 2 } };
    case REEL_PIXFMT_RGB24:
    case REEL_PIXFMT_BGR24: return (planes_of){ 1, { 0 }, { 3 } };
    case REEL_PIXFMT_RGBA: return (planes_of){ 1, { 0 }, { 4 } };
    default: fail_msg("format %d", fmt);
    }
    return (planes_of){ 0 };
}

static int plane_rows(const reel_overlay_push *p, const planes_of *l, int i)
{
    return ((int)p->height + (1 << l->sub[i]) - 1) >> l->sub[i];
}

static int plane_row_bytes(const reel_overlay_push *p, const planes_of *l, int i)
{
    return (((int)p->width + (1 << l->sub[i]) - 1) >> l->sub[i]) * l->bpp[i];
}

// Lays out a frame with `pad` bytes after every row, a misaligned first
// plane and gaps between planes, so padding is everywhere. Returns the
// buffer size, a whole number of words.
static size_t layout(reel_overlay_push *p, reel_pixfmt fmt, int w, int h, int pad)
{
    *p = (reel_overlay_push){ .fmt = fmt, .width = w, .height = h };
    planes_of l = planes_of_fmt(fmt);
    size_t at = 1;
    for (int i = 0; i < l.n; i++) {
        p->offset[i] = (uint32_t)at;
        p->stride[i] = (uint32_t)(plane_row_bytes(p, &l, i) + pad);
        at += (size_t)p->stride[i] * plane_rows(p, &l, i) + 2;
    }
    return (at + 3) / 4 * 4;
}

// Masks as the kernel takes them (gpu/overlay.h): n descriptors, then ends.
typedef struct masks_words {
    GArray *words;
    uint32_t n;
} masks_words;

static void host_paint(const reel_overlay_push *p, uint8_t *frame, const reel_overlay_prim *prims,
                       const masks_words *masks)
{
    uint8_t *planes[3];
    int strides[3];
    for (int i = 0; i < 3; i++)
        planes[i] = frame + p->offset[i], strides[i] = (int)p->stride[i];
    reel_overlay_paint(p, planes, strides, prims, masks ? (const uint32_t *)masks->words->data : NULL);
}

static reel_mem *upload_new(reel_device *dev, const void *data, size_t size)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = size, .domain = REEL_MEM_DEVICE), &error);
    if (!m)
        fail_msg("reel_mem_new: %s", error->message);
    assert_int_equal(reel_mem_upload(m, 0, data, size, NULL), 0);
    return m;
}

// Paints frame (size bytes, a whole number of words) in place with the kernel.
static void kernel_paint(fixture *f, const reel_overlay_push *p, uint8_t *frame, size_t size,
                         const reel_overlay_prim *prims, const masks_words *masks)
{
    static const uint32_t no_masks = 0;
    static const reel_overlay_prim no_prims = { 0 };
    reel_mem *mf = upload_new(f->dev, frame, size);
    reel_mem *mp = p->n_prims ? upload_new(f->dev, prims, p->n_prims * sizeof *prims)
                              : upload_new(f->dev, &no_prims, sizeof no_prims);
    reel_mem *mfont = upload_new(f->dev, reel_font5x7, sizeof reel_font5x7);
    reel_mem *mm = masks ? upload_new(f->dev, masks->words->data, masks->words->len * 4)
                         : upload_new(f->dev, &no_masks, sizeof no_masks);
    uint32_t ls = reel_kernel_local_size(f->k), words = (uint32_t)(size / 4);
    assert_int_equal(reel_kernel_dispatch(f->k, reel_dispatch_params(.buffers = { mf, mp, mfont, mm }, .push = p,
                                                                     .push_size = sizeof *p,
                                                                     .groups = { (words + ls - 1) / ls }),
                                          NULL),
                     0);
    assert_int_equal(reel_mem_download(mf, 0, frame, size, NULL), 0);
    reel_mem_unref(&mf);
    reel_mem_unref(&mp);
    reel_mem_unref(&mfont);
    reel_mem_unref(&mm);
}

// Both ways, with masks (NULL: none), and they must agree; the kernel's
// frame is left in *frame.
static void paint_both_masks(fixture *f, const reel_overlay_push *p, uint8_t *frame, size_t size,
                             const reel_overlay_prim *prims, const masks_words *masks)
{
    uint8_t *ref = g_memdup2(frame, size);
    host_paint(p, ref, prims, masks);
    kernel_paint(f, p, frame, size, prims, masks);
    for (size_t i = 0; i < size; i++)
        if (frame[i] != ref[i])
            fail_msg("%s, format %u, %ux%u: byte %zu is %u, reel_overlay_paint wrote %u", spec, p->fmt, p->width,
                     p->height, i, frame[i], ref[i]);
    g_free(ref);
}

static void paint_both(fixture *f, const reel_overlay_push *p, uint8_t *frame, size_t size,
                       const reel_overlay_prim *prims)
{
    paint_both_masks(f, p, frame, size, prims, NULL);
}

static void add_text(GArray *prims, int x, int y, int cw, int ch, const char *s, uint32_t color)
{
    for (int i = 0; s[i]; i++) {
        reel_overlay_prim q = { REEL_PRIM_GLYPH, x + i * (cw + cw / 5), y, 0, 0, 0, color, (uint8_t)s[i] };
        q.x1 = q.x0 + cw, q.y1 = y + ch;
        g_array_append_val(prims, q);
    }
}

static void add(GArray *prims, int kind, int x0, int y0, int x1, int y1, int thickness, uint32_t color)
{
    reel_overlay_prim q = { kind, x0, y0, x1, y1, thickness, color, 0 };
    g_array_append_val(prims, q);
}

// Primitives of every kind: in the frame, across its edges, overlapping.
static GArray *some_prims(GRand *r, reel_pixfmt fmt, int w, int h)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(reel_overlay_prim));
#define COLOR() reel_overlay_color(fmt, g_rand_int_range(r, 0, 256), g_rand_int_range(r, 0, 256), g_rand_int_range(r, 0, 256))
    add(a, REEL_PRIM_FILL, -10, -5, 31, 20, 0, COLOR());
    add(a, REEL_PRIM_FILL, 20, 9, 47, 40, 0, COLOR()); // over the first
    for (int t = 1; t <= 4; t++)
        add(a, REEL_PRIM_RECT, 5 * t + 1, 3 * t, w / 2 + t, h / 2 + 2 * t + 1, t, COLOR());
    add(a, REEL_PRIM_RECT, 40, 30, 53, 47, 7, COLOR());   // thicker than half: solid
    add(a, REEL_PRIM_RECT, 3, 3, 30, 30, 0, COLOR());     // no outline at all
    add(a, REEL_PRIM_RECT, 3, 3, 30, 30, -2, COLOR());
    add(a, REEL_PRIM_RECT, w - 20, h - 11, w + 15, h + 9, 3, COLOR()); // across the bottom right
    add(a, REEL_PRIM_RECT, -7, -7, w + 7, h + 7, 9, COLOR());          // frame border, mostly outside
    add(a, REEL_PRIM_FILL, 30, 30, 30, 60, 0, COLOR());                // empty
    add(a, REEL_PRIM_FILL, w - 3, h - 2, w + 100, h + 100, 0, COLOR());
    // Lines every way: steep, shallow, both directions, across the edges,
    // a point, out of range, no width.
    add(a, REEL_PRIM_LINE, 2, 3, w - 5, h / 2, 3, COLOR());
    add(a, REEL_PRIM_LINE, w / 3, h - 1, w / 3 + 7, 0, 2, COLOR());
    add(a, REEL_PRIM_LINE, w + 20, h / 4, -30, h / 3, 5, COLOR());
    add(a, REEL_PRIM_LINE, w / 2, -10, w / 2 - 9, h + 40, 1, COLOR());
    add(a, REEL_PRIM_LINE, 7, 7, 7, 7, 2, COLOR());
    add(a, REEL_PRIM_LINE, 0, 0, 9000, 40, 4, COLOR());
    add(a, REEL_PRIM_LINE, 0, h - 3, w, 3, 0, COLOR());
    add_text(a, 2, 2, 5, 7, "Hello, reel! 0123456789 ~{|}", COLOR());
    add_text(a, 3, 20, 10, 14, "AgQ@#", COLOR());
    add_text(a, w - 40, h - 20, 15, 21, "Wj%", COLOR());        // scale 3, off the right edge
    add_text(a, -9, 45, 7, 10, "scaled $&", COLOR());             // not a whole scale, off the left
    add_text(a, 10, -4, 5, 7, "\x01\x7f\xff", COLOR());          // codes with no glyph: '?'
    for (int i = 0; i < 40; i++) {
        int x0 = g_rand_int_range(r, -w / 4, w + w / 4), y0 = g_rand_int_range(r, -h / 4, h + h / 4);
        int x1 = x0 + g_rand_int_range(r, -3, w / 2), y1 = y0 + g_rand_int_range(r, -3, h / 2);
        reel_overlay_prim q = { g_rand_int_range(r, 0, 4), x0, y0, x1, y1, g_rand_int_range(r, -1, 6), COLOR(),
                                (uint32_t)g_rand_int_range(r, 0, 130) };
        g_array_append_val(a, q);
    }
#undef COLOR
    return a;
}

// Every format at odd sizes, on random frames: the kernel equals paint,
// and no byte outside the planes' pixels changes.
static void test_matches_paint(void **state)
{
    fixture *f = *state;
    const reel_pixfmt fmts[] = { REEL_PIXFMT_YUV420P, REEL_PIXFMT_YUVJ420P, REEL_PIXFMT_NV12,
                                 REEL_PIXFMT_RGB24,   REEL_PIXFMT_BGR24,    REEL_PIXFMT_RGBA };
    const int sizes[][2] = { { 101, 67 }, { 640, 360 } };
    GRand *r = g_rand_new_with_seed(2024);
    for (size_t fi = 0; fi < G_N_ELEMENTS(fmts); fi++)
        for (size_t si = 0; si < G_N_ELEMENTS(sizes); si++) {
            int w = sizes[si][0], h = sizes[si][1];
            reel_overlay_push p;
            size_t size = layout(&p, fmts[fi], w, h, (int)si * 2 + 3);
            uint8_t *frame = g_malloc(size), *orig;
            for (size_t i = 0; i < size; i++)
                frame[i] = (uint8_t)g_rand_int(r);
            orig = g_memdup2(frame, size);
            GArray *prims = some_prims(r, fmts[fi], w, h);
            p.n_prims = prims->len;
            paint_both(f, &p, frame, size, (reel_overlay_prim *)prims->data);

            // Mark the pixel bytes; everything else must be as it was.
            uint8_t *pixel = g_malloc0(size);
            planes_of l = planes_of_fmt(fmts[fi]);
            for (int i = 0; i < l.n; i++)
                for (int y = 0; y < plane_rows(&p, &l, i); y++)
                    memset(pixel + p.offset[i] + (size_t)y * p.stride[i], 1, plane_row_bytes(&p, &l, i));
            size_t changed = 0;
            for (size_t i = 0; i < size; i++) {
                if (!pixel[i] && frame[i] != orig[i])
                    fail_msg("format %d %dx%d: padding byte %zu changed", fmts[fi], w, h, i);
                changed += frame[i] != orig[i];
            }
            assert_true(changed > size / 10); // the primitives drew something
            g_free(pixel);
            g_array_free(prims, TRUE);
            g_free(orig);
            g_free(frame);
        }
    g_rand_free(r);
}

static void test_color(void **state)
{
    (void)state;
    // BT.601 limited range: the textbook values.
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_YUV420P, 0, 0, 0), 16 | 128 << 8 | 128 << 16);
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_NV12, 255, 255, 255), 235 | 128 << 8 | 128 << 16);
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_YUV420P, 255, 0, 0), 82 | 90 << 8 | 240 << 16);
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_YUV420P, 0, 0, 255), 41 | 240 << 8 | 110 << 16);
    // Full range: chroma of pure blue rounds to 256 and is clamped.
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_YUVJ420P, 255, 255, 255), 255 | 128 << 8 | 128 << 16);
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_YUVJ420P, 0, 0, 0), 0 | 128 << 8 | 128 << 16);
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_YUVJ420P, 0, 0, 255), 29 | 255u << 8 | 107 << 16);
    // Packed RGB by name: R first whatever the byte order in memory.
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_BGR24, 1, 2, 3), 1 | 2 << 8 | 3 << 16 | 255u << 24);
    assert_int_equal(reel_overlay_color(REEL_PIXFMT_RGBA, 1, 2, 3), 1 | 2 << 8 | 3 << 16 | 255u << 24);
}

// A 1-pixel outline of [2, 6) x [1, 5) on an 8x6 rgb24 frame ('#'), a
// fill clipped by the left and bottom edges ('f') and one painted over the
// outline ('o'), pixel by pixel; rows carry 5 padding bytes.
static void test_rect_pixels(void **state)
{
    fixture *f = *state;
    static const char *want[] = {
        "........",
        "..####..",
        "..#..#..",
        "..#..oo.",
        "f.####..",
        "f.......",
    };
    reel_overlay_push p;
    size_t size = layout(&p, REEL_PIXFMT_RGB24, 8, 6, 5);
    const reel_overlay_prim q[] = {
        { REEL_PRIM_RECT, 2, 1, 6, 5, 1, reel_overlay_color(REEL_PIXFMT_RGB24, 10, 20, 30), 0 },
        { REEL_PRIM_FILL, -3, 4, 1, 9, 0, reel_overlay_color(REEL_PIXFMT_RGB24, 40, 50, 60), 0 },
        { REEL_PRIM_FILL, 5, 3, 7, 4, 0, reel_overlay_color(REEL_PIXFMT_RGB24, 70, 80, 90), 0 },
    };
    p.n_prims = G_N_ELEMENTS(q);
    uint8_t *frame = g_malloc(size);
    memset(frame, 0xaa, size);
    paint_both(f, &p, frame, size, q);
    for (size_t i = p.offset[0]; i < size; i++) {
        size_t rel = i - p.offset[0];
        int y = (int)(rel / p.stride[0]), x = (int)(rel % p.stride[0]) / 3, c = (int)(rel % p.stride[0]) % 3;
        char what = y < 6 && x < 8 ? want[y][x] : '.';
        int base = what == '#' ? 10 : what == 'f' ? 40 : what == 'o' ? 70 : 0;
        assert_int_equal(frame[i], base ? base + 10 * c : 0xaa);
    }
    assert_int_equal(frame[0], 0xaa);
    g_free(frame);
}

// Lines, checked against their geometry: every pixel nearest the segment
// along its major axis is drawn, none farther than its width from it.
static void test_line_pixels(void **state)
{
    fixture *f = *state;
    const int lines[][5] = { { 2, 3, 37, 15, 1 }, { 30, 2, 24, 27, 3 }, { 38, 26, 1, 1, 2 }, { 5, 20, 35, 20, 4 } };
    for (size_t n = 0; n < G_N_ELEMENTS(lines); n++) {
        const int *L = lines[n];
        reel_overlay_push p;
        size_t size = layout(&p, REEL_PIXFMT_RGB24, 40, 30, 1);
        const reel_overlay_prim q = { REEL_PRIM_LINE, L[0], L[1], L[2], L[3], L[4],
                                      reel_overlay_color(REEL_PIXFMT_RGB24, 200, 100, 50), 0 };
        p.n_prims = 1;
        uint8_t *frame = g_malloc0(size);
        paint_both(f, &p, frame, size, &q);
        double dx = L[2] - L[0], dy = L[3] - L[1], len = sqrt(dx * dx + dy * dy);
        bool x_major = fabs(dx) >= fabs(dy);
        for (int y = 0; y < 30; y++)
            for (int x = 0; x < 40; x++) {
                bool drawn = frame[p.offset[0] + (size_t)y * p.stride[0] + (size_t)x * 3] == 200;
                double dist = fabs((x - L[0]) * dy - (y - L[1]) * dx) / len; // from the line through the segment
                double t = x_major ? (x - L[0]) / dx : (y - L[1]) / dy;      // where along it
                if (drawn && (dist > L[4] / 2.0 + 1 || t < -0.01 || t > 1.01))
                    fail_msg("line %zu: (%d, %d) drawn, %.2f from it at %.2f along", n, x, y, dist, t);
                double on = x_major ? L[1] + (x - L[0]) * dy / dx : L[0] + (y - L[1]) * dx / dy;
                if (t >= 0 && t <= 1 && fabs((x_major ? y : x) - on) < 0.5 && !drawn)
                    fail_msg("line %zu: (%d, %d), on the segment, not drawn", n, x, y);
            }
        g_free(frame);
    }
}

// A fill at odd coordinates on yuv420p: luma [3, 8) x [1, 6); a chroma
// sample follows the luma pixel at its top-left (2cx, 2cy), so chroma
// columns 2..3 and rows 1..2.
static void test_fill_chroma(void **state)
{
    fixture *f = *state;
    reel_overlay_push p;
    size_t size = layout(&p, REEL_PIXFMT_YUV420P, 9, 7, 0);
    uint32_t color = reel_overlay_color(REEL_PIXFMT_YUV420P, 255, 0, 0); // Y 82, U 90, V 240
    reel_overlay_prim q = { REEL_PRIM_FILL, 3, 1, 8, 6, 0, color, 0 };
    p.n_prims = 1;
    uint8_t *frame = g_malloc(size);
    memset(frame, 7, size);
    paint_both(f, &p, frame, size, &q);
    for (int y = 0; y < 7; y++)
        for (int x = 0; x < 9; x++)
            assert_int_equal(frame[p.offset[0] + y * p.stride[0] + x], x >= 3 && x < 8 && y >= 1 && y < 6 ? 82 : 7);
    for (int i = 1; i < 3; i++)
        for (int cy = 0; cy < 4; cy++)
            for (int cx = 0; cx < 5; cx++)
                assert_int_equal(frame[p.offset[i] + cy * p.stride[i] + cx],
                                 cx >= 2 && cx <= 3 && cy >= 1 && cy <= 2 ? (i == 1 ? 90 : 240) : 7);
    g_free(frame);
}

// 'A' at scale 2: each font dot is a 2x2 block; written out here, not
// taken from the font table.
static void test_glyph_scale2(void **state)
{
    fixture *f = *state;
    static const char *a[] = { ".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#" };
    reel_overlay_push p;
    size_t size = layout(&p, REEL_PIXFMT_RGBA, 13, 17, 1);
    reel_overlay_prim q = { REEL_PRIM_GLYPH, 1, 2, 11, 16, 0, reel_overlay_color(REEL_PIXFMT_RGBA, 200, 100, 50), 'A' };
    p.n_prims = 1;
    uint8_t *frame = g_malloc0(size);
    paint_both(f, &p, frame, size, &q);
    for (int y = 0; y < 17; y++)
        for (int x = 0; x < 13; x++) {
            const uint8_t *px = frame + p.offset[0] + y * p.stride[0] + x * 4;
            bool on = x >= 1 && x < 11 && y >= 2 && y < 16 && a[(y - 2) / 2][(x - 1) / 2] == '#';
            uint8_t want[4] = { 200, 100, 50, 255 };
            for (int c = 0; c < 4; c++)
                assert_int_equal(px[c], on ? want[c] : 0);
        }
    g_free(frame);
}

// ---- Masks (gpu/overlay.h): blended before the primitives

// Appends a mask with these run lengths (off first) as the kernel takes it:
// its descriptor to descs, the runs' running sums to ends.
static void mask_add(GArray *descs, GArray *ends, int x, int y, int w, int h, uint32_t color, const uint32_t *runs,
                     int n)
{
    reel_overlay_mask m = { x, y, w, h, color, ends->len, (uint32_t)n, 0 };
    g_array_append_val(descs, m);
    uint32_t at = 0;
    for (int i = 0; i < n; i++) {
        at += runs[i];
        g_array_append_val(ends, at);
    }
}

// The kernel's masks buffer: the descriptors, then the ends; frees both.
static masks_words masks_finish(GArray *descs, GArray *ends)
{
    masks_words m = { g_array_new(FALSE, FALSE, sizeof(uint32_t)), descs->len };
    g_array_append_vals(m.words, descs->data, descs->len * sizeof(reel_overlay_mask) / 4);
    g_array_append_vals(m.words, ends->data, ends->len);
    if (m.words->len == 0) {
        uint32_t zero = 0;
        g_array_append_val(m.words, zero);
    }
    g_array_free(descs, TRUE);
    g_array_free(ends, TRUE);
    return m;
}

static uint8_t blend(uint8_t v, uint8_t c, int alpha)
{
    return (uint8_t)((v * (256 - alpha) + c * alpha + 128) >> 8);
}

// On a 10x6 rgb24 frame: mask A at (2, 1), 5x3, runs 1 off, 3 on, 4 off, 2
// on: pixels 1..3 (row 0) and 8..9 (row 1, columns 3, 4), i.e. frame (3..5,
// 1), (5, 2), (6, 2); mask B at (5, 2), 2x2, runs 0 off, 1 on: (5, 2) again,
// blended a second time over A; a fill over (6, 2) replaces the blend.
static void test_mask_pixels(void **state)
{
    fixture *f = *state;
    reel_overlay_push p;
    size_t size = layout(&p, REEL_PIXFMT_RGB24, 10, 6, 3);
    const uint8_t a[3] = { 200, 10, 60 }, b[3] = { 0, 250, 100 }, fill[3] = { 1, 2, 3 };
    GArray *descs = g_array_new(FALSE, FALSE, sizeof(reel_overlay_mask)), *ends = g_array_new(FALSE, FALSE, 4);
    mask_add(descs, ends, 2, 1, 5, 3, reel_overlay_color(REEL_PIXFMT_RGB24, a[0], a[1], a[2]),
             (const uint32_t[]){ 1, 3, 4, 2 }, 4);
    mask_add(descs, ends, 5, 2, 2, 2, reel_overlay_color(REEL_PIXFMT_RGB24, b[0], b[1], b[2]),
             (const uint32_t[]){ 0, 1 }, 2);
    masks_words m = masks_finish(descs, ends);
    const reel_overlay_prim q = { REEL_PRIM_FILL, 6, 2, 7, 3, 0, reel_overlay_color(REEL_PIXFMT_RGB24, 1, 2, 3), 0 };
    p.n_prims = 1, p.n_masks = m.n, p.alpha = 102;
    uint8_t *frame = g_malloc(size);
    memset(frame, 0x50, size);
    paint_both_masks(f, &p, frame, size, &q, &m);
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 10; x++)
            for (int c = 0; c < 3; c++) {
                uint8_t want = 0x50;
                if (y == 1 && x >= 3 && x <= 5)
                    want = blend(0x50, a[c], 102);
                else if (y == 2 && x == 5)
                    want = blend(blend(0x50, a[c], 102), b[c], 102);
                else if (y == 2 && x == 6)
                    want = fill[c];
                uint8_t got = frame[p.offset[0] + (size_t)y * p.stride[0] + (size_t)x * 3 + c];
                if (got != want)
                    fail_msg("%s: (%d, %d) channel %d is %u, want %u", spec, x, y, c, got, want);
            }
    // Padding and the byte before the plane are untouched.
    assert_int_equal(frame[0], 0x50);
    g_array_free(m.words, TRUE);
    g_free(frame);
}

// A full mask over luma [3, 8) x [1, 6) on yuv420p blends chroma columns
// 2..3, rows 1..2, as a fill there covers them (the top-left rule).
static void test_mask_chroma(void **state)
{
    fixture *f = *state;
    reel_overlay_push p;
    size_t size = layout(&p, REEL_PIXFMT_YUV420P, 9, 7, 0);
    uint32_t color = reel_overlay_color(REEL_PIXFMT_YUV420P, 255, 0, 0); // Y 82, U 90, V 240
    GArray *descs = g_array_new(FALSE, FALSE, sizeof(reel_overlay_mask)), *ends = g_array_new(FALSE, FALSE, 4);
    mask_add(descs, ends, 3, 1, 5, 5, color, (const uint32_t[]){ 0, 25 }, 2);
    masks_words m = masks_finish(descs, ends);
    p.n_masks = m.n, p.alpha = 256; // opaque: the fill's bytes exactly
    uint8_t *frame = g_malloc(size);
    memset(frame, 7, size);
    paint_both_masks(f, &p, frame, size, NULL, &m);
    for (int y = 0; y < 7; y++)
        for (int x = 0; x < 9; x++)
            assert_int_equal(frame[p.offset[0] + y * p.stride[0] + x], x >= 3 && x < 8 && y >= 1 && y < 6 ? 82 : 7);
    for (int i = 1; i < 3; i++)
        for (int cy = 0; cy < 4; cy++)
            for (int cx = 0; cx < 5; cx++)
                assert_int_equal(frame[p.offset[i] + cy * p.stride[i] + cx],
                                 cx >= 2 && cx <= 3 && cy >= 1 && cy <= 2 ? (i == 1 ? 90 : 240) : 7);
    g_array_free(m.words, TRUE);
    g_free(frame);
}

// Random masks (overlapping, across every edge, zero-length runs, runs
// past the rectangle, cut short) under random primitives, every format, a
// few opacities: the kernel equals paint, and no padding byte changes.
static void test_masks_match_paint(void **state)
{
    fixture *f = *state;
    const reel_pixfmt fmts[] = { REEL_PIXFMT_YUV420P, REEL_PIXFMT_YUVJ420P, REEL_PIXFMT_NV12,
                                 REEL_PIXFMT_RGB24,   REEL_PIXFMT_BGR24,    REEL_PIXFMT_RGBA };
    const int sizes[][2] = { { 101, 67 }, { 320, 181 } };
    const uint32_t alphas[] = { 102, 1, 256, 200 };
    GRand *r = g_rand_new_with_seed(77);
    for (size_t fi = 0; fi < G_N_ELEMENTS(fmts); fi++)
        for (size_t si = 0; si < G_N_ELEMENTS(sizes); si++) {
            int w = sizes[si][0], h = sizes[si][1];
            reel_overlay_push p;
            size_t size = layout(&p, fmts[fi], w, h, (int)si + 1);
            uint8_t *frame = g_malloc(size), *orig;
            for (size_t i = 0; i < size; i++)
                frame[i] = (uint8_t)g_rand_int(r);
            orig = g_memdup2(frame, size);
            GArray *descs = g_array_new(FALSE, FALSE, sizeof(reel_overlay_mask)), *ends = g_array_new(FALSE, FALSE, 4);
            for (int k = 0; k < 12; k++) {
                int mw = g_rand_int_range(r, 1, w / 2), mh = g_rand_int_range(r, 1, h / 2);
                int x = g_rand_int_range(r, -w / 4, w), y = g_rand_int_range(r, -h / 4, h);
                int n = g_rand_int_range(r, 0, 3 * mh);
                uint32_t *runs = g_new(uint32_t, n + 1);
                for (int i = 0; i < n; i++)
                    runs[i] = g_rand_int_range(r, 0, 10) == 0 ? 0 : (uint32_t)g_rand_int_range(r, 1, mw + 4);
                if (k == 0)
                    runs[0] = 0, n = n ? n : 1; // on from the top left
                if (k == 1 && n)
                    runs[n - 1] = 1u << 30;     // far past the rectangle
                if (k == 2)
                    x = INT32_MIN + 5;          // nowhere near the frame
                mask_add(descs, ends, x, y, mw, mh,
                         reel_overlay_color(fmts[fi], g_rand_int_range(r, 0, 256), g_rand_int_range(r, 0, 256),
                                            g_rand_int_range(r, 0, 256)),
                         runs, n);
                g_free(runs);
            }
            masks_words m = masks_finish(descs, ends);
            GArray *prims = some_prims(r, fmts[fi], w, h);
            // Half the primitives: masks must show between them.
            p.n_prims = prims->len / 2;
            p.n_masks = m.n;
            p.alpha = alphas[(fi + si) % G_N_ELEMENTS(alphas)];
            paint_both_masks(f, &p, frame, size, (reel_overlay_prim *)prims->data, &m);

            uint8_t *pixel = g_malloc0(size);
            planes_of l = planes_of_fmt(fmts[fi]);
            for (int i = 0; i < l.n; i++)
                for (int y = 0; y < plane_rows(&p, &l, i); y++)
                    memset(pixel + p.offset[i] + (size_t)y * p.stride[i], 1, plane_row_bytes(&p, &l, i));
            for (size_t i = 0; i < size; i++)
                if (!pixel[i] && frame[i] != orig[i])
                    fail_msg("format %d %dx%d: padding byte %zu changed", fmts[fi], w, h, i);
            // Without the primitives the masks alone change pixels too.
            memcpy(frame, orig, size);
            p.n_prims = 0;
            paint_both_masks(f, &p, frame, size, (reel_overlay_prim *)prims->data, &m);
            size_t changed = 0;
            for (size_t i = 0; i < size; i++)
                changed += frame[i] != orig[i];
            if (p.alpha >= 100) // alpha 1 moves a byte only where colour and pixel are far apart
                assert_true(changed > size / 50);
            else
                assert_true(changed > 0);
            g_free(pixel);
            g_array_free(prims, TRUE);
            g_array_free(m.words, TRUE);
            g_free(orig);
            g_free(frame);
        }
    g_rand_free(r);
}

// ---- The overlay element, against its geometry
//
// For a detection [x0, x1) x [y0, y1) drawn with thickness t and font scale
// k, in this order (a later one covers an earlier one), all in the
// detection's colour unless said otherwise:
//   box        the outline: inside the box, outside it inset by t
//   landmark   a (2t+1)-pixel square centred on the point
//   label bar  text "LABEL SCORE #TRACK" (score with two decimals); glyph
//              cells 5k x 7k, one every 6k pixels, with k pixels of padding
//              all round: bar [x0, x0 + 6k*len + k) x [top, top + 9k), its
//              top 9k pixels above the box, or y0 when there is no room
//   glyphs     black (0, 0, 0) where the glyph's dot is set; each dot a
//              k x k block
// The colour is palette entry (track id, else class id) mod 12.

// The glyphs of the labels below, written out here (not taken from the font).
static const char *glyph_of(char c)
{
    switch (c) {
    case 'A': return ".###." "#...#" "#...#" "#####" "#...#" "#...#" "#...#";
    case '0': return ".###." "#...#" "#..##" "#.#.#" "##..#" "#...#" ".###.";
    case '5': return "#####" "#...." "####." "....#" "....#" "#...#" ".###.";
    case '7': return "#####" "....#" "...#." "..#.." ".#..." ".#..." ".#...";
    case '.': return "....." "....." "....." "....." "....." ".##.." ".##..";
    case '#': return ".#.#." ".#.#." "#####" ".#.#." "#####" ".#.#." ".#.#.";
    case ' ': return "....." "....." "....." "....." "....." "....." ".....";
    default: fail_msg("no glyph for '%c' in the test", c);
    }
    return NULL;
}

typedef struct shape {
    int x0, y0, x1, y1;
    int thickness;     // > 0: an outline this wide
    const char *glyph; // a glyph's dots, each k x k
    int k;
    uint8_t rgb[3];
} shape;

static bool shape_covers(const shape *s, int x, int y)
{
    if (x < s->x0 || x >= s->x1 || y < s->y0 || y >= s->y1)
        return false;
    int t = s->thickness;
    if (t > 0 && x >= s->x0 + t && x < s->x1 - t && y >= s->y0 + t && y < s->y1 - t)
        return false;
    return !s->glyph || s->glyph[(y - s->y0) / s->k * 5 + (x - s->x0) / s->k] == '#';
}

// Two detections: one tracked (#7) with a landmark and room for its label
// above, one of class 2 near the top, whose label goes inside it.
#define GEO_W 128
#define GEO_H 112
#define GEO_T 3 // thickness
#define GEO_K 2 // font scale
static const uint8_t track7_rgb[3] = { 150, 80, 255 }, class2_rgb[3] = { 56, 120, 255 }; // palette[7], [2]

static int geo_boxes_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    reel_detections *d = reel_detections_new(2);
    d->items[0] = (reel_detection){ .x0 = 6, .y0 = 50, .x1 = 100, .y1 = 100, .score = 0.5f, .class_id = 1,
                                    .label = "A", .track_id = 7, .n_landmarks = 1, .landmarks = { { 50, 75 } } };
    d->items[1] = (reel_detection){ .x0 = 20, .y0 = 5, .x1 = 60, .y1 = 25, .score = 0.5f, .class_id = 2,
                                    .label = "A", .track_id = -1 };
    reel_buffer_add_meta(buf, &reel_detections_meta, d);
    return reel_element_push(e, 0, buf);
}

static const reel_element_class geo_boxes_class = {
    .name = "geo_boxes", .description = "attaches the geometry test's detections", .flags = REEL_CLASS_PASSTHROUGH,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .process = geo_boxes_process,
};

static reel_buffer *grabbed[3]; // by grab name: "plain", "drawn", "cpu"

static int geo_grab_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    const char *name = reel_element_name(e);
    reel_buffer **slot = &grabbed[strcmp(name, "drawn") == 0 ? 1 : strcmp(name, "cpu") == 0 ? 2 : 0];
    reel_buffer_unref(slot);
    *slot = buf;
    return 0;
}

static const reel_element_class geo_grab_class = {
    .name = "geo_grab", .description = "keeps the last frame", .min_inputs = 1, .max_inputs = 1,
    .input_caps = "video/raw,memory=host", .process = geo_grab_process,
};

// The shapes the two detections make, in drawing order; returns how many.
static int geo_shapes(shape *out)
{
    int n = 0, k = GEO_K, t = GEO_T;
    const struct {
        int x0, y0, x1, y1;
        const char *text;
        const uint8_t *rgb;
        bool landmark;
    } dets[] = { { 6, 50, 100, 100, "A 0.50 #7", track7_rgb, true }, { 20, 5, 60, 25, "A 0.50", class2_rgb, false } };
    for (size_t i = 0; i < G_N_ELEMENTS(dets); i++) {
        const uint8_t *c = dets[i].rgb;
        out[n++] = (shape){ dets[i].x0, dets[i].y0, dets[i].x1, dets[i].y1, t, NULL, 1, { c[0], c[1], c[2] } };
        if (dets[i].landmark)
            out[n++] = (shape){ 50 - t, 75 - t, 50 + t + 1, 75 + t + 1, 0, NULL, 1, { c[0], c[1], c[2] } };
        int len = (int)strlen(dets[i].text), h = 9 * k;
        int top = dets[i].y0 - h >= 0 ? dets[i].y0 - h : dets[i].y0;
        out[n++] = (shape){ dets[i].x0, top, dets[i].x0 + 6 * k * len + k, top + h, 0, NULL, 1, { c[0], c[1], c[2] } };
        for (int g = 0; g < len; g++) {
            int gx = dets[i].x0 + k + 6 * k * g;
            out[n++] = (shape){ gx, top + k, gx + 5 * k, top + 8 * k, 0, glyph_of(dets[i].text[g]), k, { 0, 0, 0 } };
        }
    }
    return n;
}

// What (x, y) should hold: the colour of the last shape covering it
// (true), or the pixel as it was (false).
static bool geo_expect(const shape *shapes, int n, int x, int y, uint8_t rgb[3])
{
    for (int i = n - 1; i >= 0; i--)
        if (shape_covers(&shapes[i], x, y)) {
            memcpy(rgb, shapes[i].rgb, 3);
            return true;
        }
    return false;
}

// The sample of plane `plane` at (x, y) of a host frame.
static const uint8_t *sample(const reel_buffer *b, int plane, int x, int y, int bytes)
{
    return b->planes[plane] + (size_t)y * b->strides[plane] + (size_t)x * bytes;
}

// Checks one pixel of an rgb24 frame: 'b' the colour given, 'k' black ink,
// '.' as before overlay.
static void spot(const reel_buffer *plain, const reel_buffer *drawn, int x, int y, char what, const uint8_t *rgb,
                 const char *where)
{
    static const uint8_t ink[3] = { 0, 0, 0 };
    const uint8_t *want = what == 'b' ? rgb : what == 'k' ? ink : sample(plain, 0, x, y, 3);
    const uint8_t *got = sample(drawn, 0, x, y, 3);
    if (memcmp(got, want, 3) != 0)
        fail_msg("%s: (%d, %d) %s is %u,%u,%u, want %u,%u,%u", spec, x, y, where, got[0], got[1], got[2], want[0],
                 want[1], want[2]);
}

static void run_geometry(const char *format)
{
    for (int i = 0; i < 3; i++)
        reel_buffer_unref(&grabbed[i]);
    char *text = g_strdup_printf("testsrc num-buffers=1 pattern=noise ! video/raw,format=%s,width=%d,height=%d "
                                 "! geo_boxes ! tee name=t t. ! queue ! geo_grab name=plain "
                                 "t. ! queue ! overlay device=%s thickness=%d font-scale=%d ! geo_grab name=drawn",
                                 format, GEO_W, GEO_H, spec, GEO_T, GEO_K);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p || reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
    g_free(text);
    assert_non_null(grabbed[0]);
    assert_non_null(grabbed[1]);
}

// After zones: a zone's outline and a line, 1 pixel wide, on the device
// under test; every pixel is where the geometry worked out here says.
static void test_element_regions(void **state)
{
    (void)state;
    for (int i = 0; i < 3; i++)
        reel_buffer_unref(&grabbed[i]);
    char *text = g_strdup_printf("testsrc num-buffers=1 pattern=noise ! video/raw,format=rgb24,width=64,height=48 "
                                 "! zones coordinates=pixels zones=\"z: 5,5 30,5 30,30 5,30\" lines=\"l: 10,40 50,8\" "
                                 "! tee name=t t. ! queue ! geo_grab name=plain "
                                 "t. ! queue ! overlay device=%s thickness=1 labels=false ! geo_grab name=drawn", spec);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p || reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
    g_free(text);
    static const uint8_t zone_rgb[3] = { 255, 200, 0 }, line_rgb[3] = { 255, 56, 255 }; // palette[3], [4]
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++) {
            // The line from (10, 40) to (50, 8): within half a pixel of it, column by column.
            bool on_line = x >= 10 && x <= 50 && fabs(y - (40 - 0.8 * (x - 10))) <= 0.5;
            bool on_zone = ((y == 5 || y == 30) && x >= 5 && x <= 30) || ((x == 5 || x == 30) && y >= 5 && y <= 30);
            spot(grabbed[0], grabbed[1], x, y, on_line || on_zone ? 'b' : '.', on_line ? line_rgb : zone_rgb,
                 on_line ? "on the line" : on_zone ? "on the zone's edge" : "elsewhere");
        }
}

// rgb24: named pixels at the edges first, then every pixel of the frame.
static void test_element_geometry_rgb(void **state)
{
    (void)state;
    run_geometry("rgb24");
    const reel_buffer *plain = grabbed[0], *drawn = grabbed[1];
    const uint8_t *c7 = track7_rgb, *c2 = class2_rgb;
    // Box of track 7, [6, 100) x [50, 100), 3 wide, probed at row 80 and
    // column 30 (clear of the landmark and the label).
    spot(plain, drawn, 5, 80, '.', c7, "left of the box");
    spot(plain, drawn, 6, 80, 'b', c7, "left stroke, outer column");
    spot(plain, drawn, 8, 80, 'b', c7, "left stroke, inner column");
    spot(plain, drawn, 9, 80, '.', c7, "inside, past the left stroke");
    spot(plain, drawn, 100, 80, '.', c7, "right of the box");
    spot(plain, drawn, 99, 80, 'b', c7, "right stroke, outer column");
    spot(plain, drawn, 97, 80, 'b', c7, "right stroke, inner column");
    spot(plain, drawn, 96, 80, '.', c7, "inside, before the right stroke");
    spot(plain, drawn, 30, 50, 'b', c7, "top stroke, outer row");
    spot(plain, drawn, 30, 52, 'b', c7, "top stroke, inner row");
    spot(plain, drawn, 30, 53, '.', c7, "inside, below the top stroke");
    spot(plain, drawn, 30, 99, 'b', c7, "bottom stroke, outer row");
    spot(plain, drawn, 30, 97, 'b', c7, "bottom stroke, inner row");
    spot(plain, drawn, 30, 96, '.', c7, "inside, above the bottom stroke");
    spot(plain, drawn, 30, 100, '.', c7, "below the box");
    // Landmark (50, 75): [47, 54) x [72, 79).
    spot(plain, drawn, 47, 72, 'b', c7, "landmark, top left");
    spot(plain, drawn, 53, 78, 'b', c7, "landmark, bottom right");
    spot(plain, drawn, 46, 75, '.', c7, "left of the landmark");
    spot(plain, drawn, 54, 75, '.', c7, "right of the landmark");
    spot(plain, drawn, 50, 79, '.', c7, "below the landmark");
    // Its label "A 0.50 #7" (9 cells): bar [6, 116) x [32, 50), above the box.
    spot(plain, drawn, 6, 32, 'b', c7, "label bar, top left corner");
    spot(plain, drawn, 6, 31, '.', c7, "above the label bar");
    spot(plain, drawn, 5, 40, '.', c7, "left of the label bar");
    spot(plain, drawn, 115, 49, 'b', c7, "label bar, bottom right corner");
    spot(plain, drawn, 116, 40, '.', c7, "right of the label bar");
    spot(plain, drawn, 60, 33, 'b', c7, "label bar, top padding row");
    spot(plain, drawn, 60, 48, 'b', c7, "label bar, bottom padding row");
    spot(plain, drawn, 7, 40, 'b', c7, "label bar, left padding column");
    spot(plain, drawn, 18, 40, 'b', c7, "gap between cells 0 and 1");
    spot(plain, drawn, 19, 40, 'b', c7, "gap between cells 0 and 1, last column");
    spot(plain, drawn, 114, 40, 'b', c7, "label bar, right padding column");
    // 'A' in cell 0 at (8, 34): its top row ".###." at scale 2.
    spot(plain, drawn, 8, 34, 'b', c7, "'A' top row, dot 0 unset");
    spot(plain, drawn, 10, 34, 'k', c7, "'A' top row, dot 1");
    spot(plain, drawn, 15, 35, 'k', c7, "'A' top row, dot 3");
    spot(plain, drawn, 16, 34, 'b', c7, "'A' top row, dot 4 unset");
    // The space, cell 1 at x 20..29: bar colour throughout.
    spot(plain, drawn, 24, 40, 'b', c7, "the space's cell");
    // Class 2's box [20, 60) x [5, 25) has no room above: its bar starts at
    // y 5 inside the box, [20, 94) x [5, 23), over the top stroke.
    spot(plain, drawn, 20, 4, '.', c2, "above class 2's label bar");
    spot(plain, drawn, 20, 5, 'b', c2, "class 2's label bar, top left");
    spot(plain, drawn, 93, 22, 'b', c2, "class 2's label bar, bottom right");
    spot(plain, drawn, 94, 10, '.', c2, "right of class 2's label bar");
    // Below the bar only the bottom stroke is left (rows 22..24): the box
    // is 20 pixels tall.
    spot(plain, drawn, 40, 23, 'b', c2, "class 2's bottom stroke below the bar");
    spot(plain, drawn, 40, 25, '.', c2, "below class 2's box");
    spot(plain, drawn, 59, 10, 'b', c2, "class 2's right stroke, under the bar's colour");

    shape shapes[32];
    int n = geo_shapes(shapes);
    for (int y = 0; y < GEO_H; y++)
        for (int x = 0; x < GEO_W; x++) {
            uint8_t rgb[3];
            bool covered = geo_expect(shapes, n, x, y, rgb);
            const uint8_t *want = covered ? rgb : sample(plain, 0, x, y, 3), *got = sample(drawn, 0, x, y, 3);
            if (memcmp(got, want, 3) != 0)
                fail_msg("%s rgb24: (%d, %d) is %u,%u,%u, want %u,%u,%u (%s)", spec, x, y, got[0], got[1], got[2],
                         want[0], want[1], want[2], covered ? "drawn" : "untouched");
        }
    for (int i = 0; i < 3; i++)
        reel_buffer_unref(&grabbed[i]);
}

// yuv420p: luma per pixel, each chroma sample following the luma pixel at
// its top left; colours as reel_overlay_color gives them (test_color pins
// those to BT.601).
static void test_element_geometry_yuv(void **state)
{
    (void)state;
    run_geometry("yuv420p");
    const reel_buffer *plain = grabbed[0], *drawn = grabbed[1];
    shape shapes[32];
    int n = geo_shapes(shapes);
    for (int plane = 0; plane < 3; plane++) {
        int sub = plane ? 1 : 0;
        for (int y = 0; y < GEO_H >> sub; y++)
            for (int x = 0; x < GEO_W >> sub; x++) {
                uint8_t rgb[3];
                bool covered = geo_expect(shapes, n, x << sub, y << sub, rgb);
                uint32_t color = covered ? reel_overlay_color(REEL_PIXFMT_YUV420P, rgb[0], rgb[1], rgb[2]) : 0;
                uint8_t want = covered ? (uint8_t)(color >> (8 * plane)) : *sample(plain, plane, x, y, 1);
                uint8_t got = *sample(drawn, plane, x, y, 1);
                if (got != want)
                    fail_msg("%s yuv420p plane %d: (%d, %d) is %u, want %u (%s)", spec, plane, x, y, got, want,
                             covered ? "drawn" : "untouched");
            }
    }
    for (int i = 0; i < 3; i++)
        reel_buffer_unref(&grabbed[i]);
}

// ---- The overlay element's masks: the same bytes on the cpu and on the
// device under test, and the blend worked out here where nothing covers it.

// Two detections with masks: a disc in a box and a box's left half that
// runs past the frame's bottom; the disc's colour is palette[7] (track 7),
// the half box's palette[2] (class 2).
#define MASK_W 96
#define MASK_H 80
static bool in_disc(int x, int y)
{
    double dx = x + 0.5 - 40, dy = y + 0.5 - 36;
    return dx * dx + dy * dy < 20 * 20;
}

static bool in_half(int x, int y)
{
    return x >= 60 && x < 75 && y >= 50;
}

static int geo_masks_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    reel_detections *d = reel_detections_new(2);
    d->items[0] = (reel_detection){ .x0 = 18, .y0 = 14, .x1 = 62, .y1 = 58, .score = 0.5f, .class_id = 1,
                                    .track_id = 7 };
    d->items[1] = (reel_detection){ .x0 = 60, .y0 = 50, .x1 = 90, .y1 = 100, .score = 0.5f, .class_id = 2,
                                    .track_id = -1 };
    reel_buffer_add_meta(buf, &reel_detections_meta, d);
    // Runs over each box (x, y, w, h), row by row, off first.
    const int rects[2][4] = { { 18, 14, 44, 44 }, { 60, 50, 30, 50 } };
    GArray *runs = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    reel_masks *m = NULL;
    int first[2], count[2];
    for (int k = 0; k < 2; k++) {
        first[k] = (int)runs->len;
        bool on = false;
        uint32_t len = 0;
        for (int y = 0; y < rects[k][3]; y++)
            for (int x = 0; x < rects[k][2]; x++) {
                int fx = rects[k][0] + x, fy = rects[k][1] + y;
                if ((k ? in_half(fx, fy) : in_disc(fx, fy)) != on) {
                    g_array_append_val(runs, len);
                    on = !on, len = 0;
                }
                len++;
            }
        if (on)
            g_array_append_val(runs, len);
        count[k] = (int)runs->len - first[k];
    }
    m = reel_masks_new(3, (int)runs->len);
    memcpy(m->runs, runs->data, runs->len * sizeof(uint32_t));
    for (int k = 0; k < 2; k++)
        m->items[k] = (reel_mask){ k, rects[k][0], rects[k][1], rects[k][2], rects[k][3], first[k], count[k], false };
    // A third, for the disc again, 10^8 pixels wide: more than 2^32 pixels in
    // the frame's rows, left out with a warning.
    m->items[2] = (reel_mask){ 0, -50000000, 0, 100000000, MASK_H, first[0], 2, false };
    g_array_free(runs, TRUE);
    reel_buffer_add_meta(buf, &reel_masks_meta, m);
    return reel_element_push(e, 0, buf);
}

static const reel_element_class geo_masks_class = {
    .name = "geo_masks", .description = "attaches the mask test's detections and masks",
    .flags = REEL_CLASS_PASSTHROUGH, .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .process = geo_masks_process,
};

static GString *warnings;

static void keep_warning(const reel_message *msg, void *user)
{
    (void)user;
    if (msg->type == REEL_MESSAGE_WARNING && msg->text)
        g_string_append_printf(warnings, "%s\n", msg->text);
}

static void test_element_masks(void **state)
{
    (void)state;
    warnings = g_string_new(NULL);
    const char *formats[] = { "rgb24", "yuv420p", "nv12" };
    for (size_t fi = 0; fi < G_N_ELEMENTS(formats); fi++) {
        for (int i = 0; i < 3; i++)
            reel_buffer_unref(&grabbed[i]);
        char *text = g_strdup_printf("testsrc num-buffers=1 pattern=noise ! video/raw,format=%s,width=%d,height=%d "
                                     "! geo_masks ! tee name=t t. ! queue ! geo_grab name=plain "
                                     "t. ! queue ! overlay device=cpu thickness=1 labels=false alpha=0.4 ! geo_grab name=cpu "
                                     "t. ! queue ! overlay device=%s thickness=1 labels=false alpha=0.4 ! geo_grab name=drawn",
                                     formats[fi], MASK_W, MASK_H, spec);
        GError *err = NULL;
        g_string_truncate(warnings, 0);
        reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2,
                                                                              .bus_handler = keep_warning), &err);
        if (!p || reel_pipeline_run(p, &err) != 0)
            fail_msg("%s: %s", text, err->message);
        reel_pipeline_destroy(&p);
        g_free(text);
        // Both overlays say so once, naming the mask.
        const char *said = strstr(warnings->str, "mask of detection 0 is 100000000x80 pixels, too large to draw");
        assert_non_null(said);
        assert_non_null(strstr(said + 1, "mask of detection 0 is 100000000x80 pixels, too large to draw"));
        const reel_buffer *plain = grabbed[0], *drawn = grabbed[1], *cpu = grabbed[2];
        assert_non_null(plain), assert_non_null(drawn), assert_non_null(cpu);
        // Byte for byte the cpu's, every plane (bound: 0).
        planes_of l = planes_of_fmt(reel_pixfmt_from_name(formats[fi]));
        for (int i = 0; i < l.n; i++)
            for (int y = 0; y < MASK_H >> l.sub[i]; y++)
                if (memcmp(drawn->planes[i] + (size_t)y * drawn->strides[i], cpu->planes[i] + (size_t)y * cpu->strides[i],
                           (size_t)(MASK_W >> l.sub[i]) * l.bpp[i]) != 0)
                    fail_msg("%s %s: plane %d row %d differs from the cpu overlay's", spec, formats[fi], i, y);
        if (fi != 0)
            continue;
        // rgb24: off the outlines, a mask pixel is the frame's blended 102/256
        // with its detection's colour, and every other pixel is as it was.
        static const uint8_t disc_rgb[3] = { 150, 80, 255 }, half_rgb[3] = { 56, 120, 255 };
        int blended = 0;
        for (int y = 0; y < MASK_H; y++)
            for (int x = 0; x < MASK_W; x++) {
                bool outline = ((x == 18 || x == 61) && y >= 14 && y < 58) || ((y == 14 || y == 57) && x >= 18 && x < 62) ||
                               ((x == 60 || x == 89) && y >= 50) || (y == 50 && x >= 60 && x < 90);
                if (outline)
                    continue;
                const uint8_t *was = sample(plain, 0, x, y, 3), *got = sample(drawn, 0, x, y, 3);
                const uint8_t *c = in_disc(x, y) ? disc_rgb : in_half(x, y) ? half_rgb : NULL;
                for (int k = 0; k < 3; k++) {
                    uint8_t want = c ? blend(was[k], c[k], 102) : was[k];
                    if (got[k] != want)
                        fail_msg("%s: (%d, %d) channel %d is %u, want %u (%s)", spec, x, y, k, got[k], want,
                                 c ? "in a mask" : "untouched");
                }
                blended += c != NULL;
            }
        assert_true(blended > 3 * 20 * 20 + 14 * 29); // the disc and the half box, less the outlines
    }
    for (int i = 0; i < 3; i++)
        reel_buffer_unref(&grabbed[i]);
    g_string_free(warnings, TRUE);
}

int main(int argc, char **argv)
{
    reel_init();
    const char *backend = argc > 1 ? argv[1] : "cpu";
    bool vulkan = strcmp(backend, "vulkan") == 0;
    spec = "cpu";
    if (vulkan) {
        reel_device_info *infos;
        int n = reel_device_list(&infos);
        bool any = false;
        for (int i = 0; i < n; i++)
            any |= infos[i].backend == REEL_BACKEND_VULKAN;
        if (!any) {
            g_free(infos);
            return reel_skip_exit("no Vulkan device");
        }
        spec = "vulkan:0";
        for (int i = 0; i < n; i++)
            if (strcmp(infos[i].spec, spec) == 0)
                printf("device under test: %s (%s)\n", spec, infos[i].name);
        g_free(infos);
    }
    reel_element_class_register(&geo_boxes_class);
    reel_element_class_register(&geo_grab_class);
    reel_element_class_register(&geo_masks_class);
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_color),
        T(test_rect_pixels),
        T(test_line_pixels),
        T(test_fill_chroma),
        T(test_glyph_scale2),
        T(test_matches_paint),
        T(test_mask_pixels),
        T(test_mask_chroma),
        T(test_masks_match_paint),
        cmocka_unit_test(test_element_geometry_rgb),
        cmocka_unit_test(test_element_geometry_yuv),
        cmocka_unit_test(test_element_regions),
        cmocka_unit_test(test_element_masks),
    };
    int failed = cmocka_run_group_tests_name(backend, tests, NULL, NULL);
    if (reel_device_validation_messages()) {
        fprintf(stderr, "%" G_GINT64_FORMAT " Vulkan validation messages\n", reel_device_validation_messages());
        failed++;
    }
    return reel_test_verdict(failed);
}

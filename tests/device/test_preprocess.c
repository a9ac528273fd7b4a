// The fused preprocess (gpu/preprocess.h). `test_preprocess cpu` holds
// reel_preprocess_rows() to a float64 reference written here from the
// header's definition, checks the geometry by hand and by inverting a
// letterbox, and the cpu backend's kernel against reel_preprocess_rows()
// bit for bit. `test_preprocess vulkan` holds the Vulkan kernel on vulkan:0
// to reel_preprocess_rows() (exit 77 when there is no Vulkan device). With
// REEL_VULKAN_VALIDATION=1 any validation message fails the run.
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gpu/preprocess.h"
#include "reel/device.h"
#include "tests/support/skip.h"

static const char *spec; // the device under test
static bool vulkan;

static const reel_pixfmt formats[] = {
    REEL_PIXFMT_YUV420P, REEL_PIXFMT_YUVJ420P, REEL_PIXFMT_NV12,
    REEL_PIXFMT_RGB24,   REEL_PIXFMT_BGR24,    REEL_PIXFMT_RGBA,
};
static const char *const fit_names[] = { "stretch", "letterbox", "crop" };

// Frame and tensor sizes: odd sizes, down- and upscaling, a region of interest.
typedef struct sizes {
    int src_w, src_h, dst_w, dst_h;
    int roi[4];
} sizes;

static const sizes cases[] = {
    { 67, 45, 32, 24, { 0 } },
    { 640, 360, 128, 128, { 0 } },
    { 37, 23, 96, 80, { 0 } },
    { 640, 360, 64, 48, { 101, 47, 301, 173 } },
};

// Normalizations the models use: 0..1, ImageNet mean/std, -1..1.
static void normalization(int which, reel_preprocess_push *p)
{
    static const double mean[3] = { 0.485, 0.456, 0.406 }, std[3] = { 0.229, 0.224, 0.225 };
    for (int c = 0; c < 3; c++) {
        double mul[3] = { 1 / 255.0, 1 / (255 * std[c]), 1 / 127.5 }, add[3] = { 0, -mean[c] / std[c], -1 };
        p->mul[c] = (float)mul[which % 3];
        p->add[c] = (float)add[which % 3];
    }
    p->pad = 114;
}

// ---- frames ----------------------------------------------------------------

// A frame's planes packed in one buffer at odd offsets with odd strides, so
// the kernel's byte extraction meets every alignment.
typedef struct frame {
    reel_pixfmt fmt;
    int w, h;
    uint8_t *buf;
    size_t size; // a multiple of 4: the kernel reads whole words
    uint32_t offset[3], stride[3];
    const uint8_t *planes[3];
    int strides[3];
} frame;

// Row bytes and rows of plane k; 0 rows past the last plane.
static void plane_shape(reel_pixfmt fmt, int w, int h, int k, int *row_bytes, int *rows)
{
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    *row_bytes = *rows = 0;
    switch (fmt) {
    case REEL_PIXFMT_YUV420P:
    case REEL_PIXFMT_YUVJ420P:
        *row_bytes = k ? cw : w, *rows = k ? ch : h;
        break;
    case REEL_PIXFMT_NV12:
        if (k < 2)
            *row_bytes = k ? 2 * cw : w, *rows = k ? ch : h;
        break;
    default:
        if (k == 0)
            *row_bytes = w * (fmt == REEL_PIXFMT_RGBA ? 4 : 3), *rows = h;
        break;
    }
}

static frame frame_new(reel_pixfmt fmt, int w, int h, GRand *r)
{
    frame f = { .fmt = fmt, .w = w, .h = h };
    size_t at = 3;
    for (int k = 0; k < 3; k++) {
        int row_bytes, rows;
        plane_shape(fmt, w, h, k, &row_bytes, &rows);
        f.offset[k] = (uint32_t)at;
        f.stride[k] = (uint32_t)(row_bytes + 5);
        at += (size_t)f.stride[k] * rows + (rows ? 1 : 0);
    }
    f.size = (at + 3) & ~(size_t)3;
    f.buf = g_malloc0(f.size);
    for (size_t i = 0; r && i < f.size; i++)
        f.buf[i] = (uint8_t)g_rand_int_range(r, 0, 256);
    for (int k = 0; k < 3; k++)
        f.planes[k] = f.buf + f.offset[k], f.strides[k] = (int)f.stride[k];
    return f;
}

// Component k (Y, U, V or R, G, B): its plane, bytes per pixel, byte within
// the pixel, and whether the plane is halved both ways (4:2:0 chroma).
static void component(reel_pixfmt fmt, int k, int *plane, int *step, int *off, bool *half)
{
    bool yuv = fmt == REEL_PIXFMT_YUV420P || fmt == REEL_PIXFMT_YUVJ420P || fmt == REEL_PIXFMT_NV12;
    *half = yuv && k > 0;
    if (fmt == REEL_PIXFMT_NV12)
        *plane = k ? 1 : 0, *step = k ? 2 : 1, *off = k ? k - 1 : 0;
    else if (yuv)
        *plane = k, *step = 1, *off = 0;
    else
        *plane = 0, *step = fmt == REEL_PIXFMT_RGBA ? 4 : 3, *off = fmt == REEL_PIXFMT_BGR24 ? 2 - k : k;
}

static void set_pixel(frame *f, int x, int y, const uint8_t v[3])
{
    for (int k = 0; k < 3; k++) {
        int plane, step, off;
        bool half;
        component(f->fmt, k, &plane, &step, &off, &half);
        int px = half ? x / 2 : x, py = half ? y / 2 : y;
        f->buf[f->offset[plane] + (size_t)py * f->stride[plane] + (size_t)px * step + off] = v[k];
    }
}

// ---- the reference -----------------------------------------------------------

static double frame_byte(const frame *f, int plane, int step, int off, int x, int y)
{
    return f->buf[f->offset[plane] + (size_t)y * f->stride[plane] + (size_t)x * step + off];
}

// Bilinear at pixel-centre coordinates (fx, fy), coordinates clamped to the
// n_x x n_y plane.
static double bilinear(const frame *f, int plane, int step, int off, int n_x, int n_y, double fx, double fy)
{
    double ix = floor(fx), iy = floor(fy), wx = fx - ix, wy = fy - iy;
    int xa = CLAMP((int)ix, 0, n_x - 1), xb = CLAMP((int)ix + 1, 0, n_x - 1);
    int ya = CLAMP((int)iy, 0, n_y - 1), yb = CLAMP((int)iy + 1, 0, n_y - 1);
    double top = (1 - wx) * frame_byte(f, plane, step, off, xa, ya) + wx * frame_byte(f, plane, step, off, xb, ya);
    double bottom = (1 - wx) * frame_byte(f, plane, step, off, xa, yb) + wx * frame_byte(f, plane, step, off, xb, yb);
    return (1 - wy) * top + wy * bottom;
}

// The tensor, in p's layout, from the definition in gpu/preprocess.h.
static double *reference(const frame *f, const reel_preprocess_push *p)
{
    const int W = (int)p->dst_w, H = (int)p->dst_h;
    double *out = g_new(double, (size_t)W * H * 3);
    const bool yuv = f->fmt == REEL_PIXFMT_YUV420P || f->fmt == REEL_PIXFMT_YUVJ420P || f->fmt == REEL_PIXFMT_NV12;
    const bool full = f->fmt == REEL_PIXFMT_YUVJ420P;
    const double kr = 0.299, kb = 0.114, kg = 1 - kr - kb;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double rgb[3] = { p->pad, p->pad, p->pad };
            if (x >= p->x0 && x < p->x1 && y >= p->y0 && y < p->y1) {
                double fx = (x + 0.5) * p->sx + p->ox - 0.5, fy = (y + 0.5) * p->sy + p->oy - 0.5;
                double v[3];
                for (int k = 0; k < 3; k++) {
                    int plane, step, off;
                    bool half;
                    component(f->fmt, k, &plane, &step, &off, &half);
                    v[k] = half ? bilinear(f, plane, step, off, (f->w + 1) / 2, (f->h + 1) / 2, (fx + 0.5) / 2 - 0.5,
                                           (fy + 0.5) / 2 - 0.5)
                                : bilinear(f, plane, step, off, f->w, f->h, fx, fy);
                }
                if (yuv) {
                    double Y = full ? v[0] : (v[0] - 16) * 255 / 219;
                    double U = (v[1] - 128) * (full ? 1 : 255.0 / 224), V = (v[2] - 128) * (full ? 1 : 255.0 / 224);
                    v[0] = Y + 2 * (1 - kr) * V;
                    v[1] = Y - 2 * kb * (1 - kb) / kg * U - 2 * kr * (1 - kr) / kg * V;
                    v[2] = Y + 2 * (1 - kb) * U;
                    for (int k = 0; k < 3; k++)
                        v[k] = CLAMP(v[k], 0, 255);
                }
                memcpy(rgb, v, sizeof v);
            }
            for (int c = 0; c < 3; c++) {
                double value = rgb[p->flags & REEL_PRE_BGR ? 2 - c : c] * p->mul[c] + p->add[c];
                size_t at = p->flags & REEL_PRE_NHWC ? ((size_t)y * W + x) * 3 + c : ((size_t)c * H + y) * W + x;
                out[at] = value;
            }
        }
    return out;
}

// ---- helpers -----------------------------------------------------------------

static reel_preprocess_push push_for(const frame *f, const sizes *s, reel_fit fit, unsigned flags, int norm)
{
    reel_preprocess_push p = { .src_w = (uint32_t)f->w, .src_h = (uint32_t)f->h, .src_fmt = f->fmt,
                               .dst_w = (uint32_t)s->dst_w, .dst_h = (uint32_t)s->dst_h, .flags = flags };
    memcpy(p.offset, f->offset, sizeof p.offset);
    memcpy(p.stride, f->stride, sizeof p.stride);
    reel_affine map;
    reel_preprocess_geometry(f->w, f->h, s->roi[2] ? s->roi : NULL, s->dst_w, s->dst_h, fit, &p, &map);
    normalization(norm, &p);
    return p;
}

// The CPU path, in two calls over disjoint rows, with offsets and strides in
// the push that it must ignore.
static float *run_rows(const frame *f, const reel_preprocess_push *p)
{
    size_t n = (size_t)p->dst_w * p->dst_h * 3;
    float *out = g_new(float, n);
    for (size_t i = 0; i < n; i++)
        out[i] = NAN;
    reel_preprocess_push q = *p;
    memset(q.offset, 0xff, sizeof q.offset);
    memset(q.stride, 0, sizeof q.stride);
    int mid = (int)p->dst_h / 3;
    reel_preprocess_rows(&q, f->planes, f->strides, out, mid, (int)p->dst_h);
    reel_preprocess_rows(&q, f->planes, f->strides, out, 0, mid);
    return out;
}

static reel_mem *mem_new(reel_device *dev, size_t size)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = size, .domain = REEL_MEM_DEVICE), &error);
    if (!m)
        fail_msg("reel_mem_new: %s", error->message);
    return m;
}

// The kernel on dev over `invocations` invocations (0: all pixels), into a
// tensor that starts as `sentinel`.
static float *run_kernel(reel_device *dev, reel_kernel *k, reel_mem *fm, const reel_preprocess_push *p,
                         uint32_t invocations, float sentinel)
{
    size_t n = (size_t)p->dst_w * p->dst_h * 3;
    float *out = g_new(float, n);
    for (size_t i = 0; i < n; i++)
        out[i] = sentinel;
    reel_mem *tm = mem_new(dev, n * sizeof(float));
    assert_int_equal(reel_mem_upload(tm, 0, out, n * sizeof(float), NULL), 0);
    uint32_t ls = reel_kernel_local_size(k);
    if (!invocations)
        invocations = p->dst_w * p->dst_h;
    assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { fm, tm }, .push = p,
                                                                  .push_size = sizeof *p,
                                                                  .groups = { (invocations + ls - 1) / ls }),
                                          NULL),
                     0);
    assert_int_equal(reel_mem_download(tm, 0, out, n * sizeof(float), NULL), 0);
    reel_mem_unref(&tm);
    return out;
}

// |got - want| <= tol * (1 + |want|) everywhere, else a message naming the
// pixel. Returns the largest |got - want| / (1 + |want|).
static double compare(const float *got, const double *want_d, const float *want_f, const reel_preprocess_push *p,
                      double tol, const char *what)
{
    size_t n = (size_t)p->dst_w * p->dst_h * 3;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double want = want_d ? want_d[i] : want_f[i], diff = fabs(got[i] - want) / (1 + fabs(want));
        worst = MAX(worst, diff);
        if (!(diff <= tol)) {
            size_t px = p->flags & REEL_PRE_NHWC ? i / 3 : i % ((size_t)p->dst_w * p->dst_h);
            int c = (int)(p->flags & REEL_PRE_NHWC ? i % 3 : i / ((size_t)p->dst_w * p->dst_h));
            fail_msg("%s: channel %d at (%zu, %zu) = %.9g, expected %.9g", what, c, px % p->dst_w, px / p->dst_w,
                     got[i], want);
        }
    }
    return worst;
}

static void describe(char *out, size_t n, const frame *f, const sizes *s, int fit, unsigned flags)
{
    g_snprintf(out, n, "fmt %d %dx%d -> %dx%d roi %d,%d,%d,%d %s %s %s", f->fmt, s->src_w, s->src_h, s->dst_w,
               s->dst_h, s->roi[0], s->roi[1], s->roi[2], s->roi[3], fit_names[fit],
               flags & REEL_PRE_NHWC ? "nhwc" : "nchw", flags & REEL_PRE_BGR ? "bgr" : "rgb");
}

// ---- tests -------------------------------------------------------------------

static int setup(void **state)
{
    GError *error = NULL;
    reel_device *dev = reel_device_open(spec, &error);
    if (!dev) {
        fprintf(stderr, "open %s: %s\n", spec, error->message);
        g_error_free(error);
        return -1;
    }
    *state = dev;
    return 0;
}

static int teardown(void **state)
{
    reel_device *dev = *state;
    reel_device_unref(&dev);
    return reel_device_validation_messages() == 0 ? 0 : -1;
}

static void check_map(int src_w, int src_h, const int *roi, int dst_w, int dst_h, reel_fit fit, double ax, double bx,
                      double ay, double by, int x0, int y0, int x1, int y1)
{
    reel_preprocess_push p = { 0 };
    reel_affine m;
    reel_preprocess_geometry(src_w, src_h, roi, dst_w, dst_h, fit, &p, &m);
    const double eps = 1e-12;
    if (fabs(m.ax - ax) > eps || fabs(m.bx - bx) > eps || fabs(m.ay - ay) > eps || fabs(m.by - by) > eps)
        fail_msg("%dx%d -> %dx%d %s: map %.12g %.12g %.12g %.12g, expected %.12g %.12g %.12g %.12g", src_w, src_h,
                 dst_w, dst_h, fit_names[fit], m.ax, m.bx, m.ay, m.by, ax, bx, ay, by);
    assert_int_equal(p.x0, x0);
    assert_int_equal(p.y0, y0);
    assert_int_equal(p.x1, x1);
    assert_int_equal(p.y1, y1);
    // Sampling is the map's inverse: tensor edge t <- frame (t - b) / a.
    assert_float_equal(p.sx, 1 / ax, 1e-6 / ax);
    assert_float_equal(p.sy, 1 / ay, 1e-6 / ay);
    assert_float_equal(p.ox, -bx / ax, 1e-6 * (1 + fabs(bx / ax)));
    assert_float_equal(p.oy, -by / ay, 1e-6 * (1 + fabs(by / ay)));
}

static void test_geometry(void **state)
{
    (void)state;
    // 16:9 into a square: ax = 0.2, 72 rows of content centred in 128.
    check_map(640, 360, NULL, 128, 128, REEL_FIT_LETTERBOX, 0.2, 0, 0.2, 28, 0, 28, 128, 100);
    check_map(360, 640, NULL, 128, 128, REEL_FIT_LETTERBOX, 0.2, 28, 0.2, 0, 28, 0, 100, 128);
    // 45 * 32 / 67 = 21.49 rows: 21, the extra pad row at the bottom.
    check_map(67, 45, NULL, 32, 24, REEL_FIT_LETTERBOX, 32.0 / 67, 0, 21.0 / 45, 1, 0, 1, 32, 22);
    check_map(640, 360, NULL, 128, 128, REEL_FIT_STRETCH, 0.2, 0, 128.0 / 360, 0, 0, 0, 128, 128);
    // Crop: scaled to cover (128 / 360), the frame's centre on the tensor's.
    double s = 128.0 / 360;
    check_map(640, 360, NULL, 128, 128, REEL_FIT_CROP, s, 64 - 320 * s, s, 0, 0, 0, 128, 128);
    const int roi[4] = { 100, 50, 200, 100 };
    check_map(640, 360, roi, 64, 64, REEL_FIT_LETTERBOX, 0.32, -32, 0.32, 0, 0, 16, 64, 48);
    check_map(640, 360, roi, 64, 64, REEL_FIT_STRETCH, 0.32, -32, 0.64, -32, 0, 0, 64, 64);
    check_map(640, 360, roi, 64, 64, REEL_FIT_CROP, 0.64, -32 - 64, 0.64, -32, 0, 0, 64, 64);
    // An empty ROI is the whole frame.
    const int none[4] = { 5, 5, 0, 0 };
    check_map(640, 360, none, 128, 128, REEL_FIT_LETTERBOX, 0.2, 0, 0.2, 28, 0, 28, 128, 100);
}

// Every format x size x fit x layout x channel order: the CPU path against
// the float64 reference.
static void test_rows_reference(void **state)
{
    (void)state;
    GRand *r = g_rand_new_with_seed(2024);
    int norm = 0;
    double worst = 0;
    for (size_t fi = 0; fi < G_N_ELEMENTS(formats); fi++)
        for (size_t si = 0; si < G_N_ELEMENTS(cases); si++) {
            const sizes *s = &cases[si];
            frame f = frame_new(formats[fi], s->src_w, s->src_h, r);
            for (int fit = 0; fit < 3; fit++)
                for (unsigned flags = 0; flags < 4; flags++) {
                    reel_preprocess_push p = push_for(&f, s, (reel_fit)fit, flags, norm++);
                    double *want = reference(&f, &p);
                    float *got = run_rows(&f, &p);
                    char what[160];
                    describe(what, sizeof what, &f, s, fit, flags);
                    worst = MAX(worst, compare(got, want, NULL, &p, 1e-5, what));
                    g_free(want), g_free(got);
                }
            g_free(f.buf);
        }
    printf("reel_preprocess_rows: largest difference from the float64 reference %.3g\n", worst);
    g_rand_free(r);
}

// The device's kernel against the CPU path: bit for bit on the cpu backend,
// to float rounding on Vulkan.
static void test_kernel(void **state)
{
    reel_device *dev = *state;
    const double tol = vulkan ? 1e-4 : 0;
    GError *error = NULL;
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "preprocess"), &error);
    if (!k)
        fail_msg("preprocess kernel: %s", error->message);
    GRand *r = g_rand_new_with_seed(77);
    int norm = 0;
    double worst = 0;
    for (size_t fi = 0; fi < G_N_ELEMENTS(formats); fi++)
        for (size_t si = 0; si < G_N_ELEMENTS(cases); si++) {
            const sizes *s = &cases[si];
            frame f = frame_new(formats[fi], s->src_w, s->src_h, r);
            reel_mem *fm = mem_new(dev, f.size);
            assert_int_equal(reel_mem_upload(fm, 0, f.buf, f.size, NULL), 0);
            for (int fit = 0; fit < 3; fit++)
                for (unsigned flags = 0; flags < 4; flags++) {
                    reel_preprocess_push p = push_for(&f, s, (reel_fit)fit, flags, norm++);
                    float *want = run_rows(&f, &p);
                    float *got = run_kernel(dev, k, fm, &p, 0, NAN);
                    char what[160];
                    describe(what, sizeof what, &f, s, fit, flags);
                    worst = MAX(worst, compare(got, NULL, want, &p, tol, what));
                    g_free(want), g_free(got);
                }
            reel_mem_unref(&fm);
            g_free(f.buf);
        }
    printf("%s: largest difference from reel_preprocess_rows %.3g\n", spec, worst);
    g_rand_free(r);
    reel_kernel_destroy(&k);
}

// A dispatch that stops mid-row writes exactly the pixels it covers.
static void test_partial_dispatch(void **state)
{
    reel_device *dev = *state;
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "preprocess", .local_size = 50), NULL);
    assert_non_null(k);
    GRand *r = g_rand_new_with_seed(5);
    frame f = frame_new(REEL_PIXFMT_NV12, 67, 45, r);
    reel_mem *fm = mem_new(dev, f.size);
    assert_int_equal(reel_mem_upload(fm, 0, f.buf, f.size, NULL), 0);
    for (unsigned flags = 0; flags < 4; flags += REEL_PRE_NHWC) {
        reel_preprocess_push p = push_for(&f, &cases[0], REEL_FIT_LETTERBOX, flags, 1);
        const uint32_t covered = 250; // 5 groups of 50: 7 rows of 32 and 26 pixels
        float *want = run_rows(&f, &p);
        float *got = run_kernel(dev, k, fm, &p, covered, -1000);
        const uint32_t plane = p.dst_w * p.dst_h;
        for (uint32_t px = 0; px < plane; px++)
            for (int c = 0; c < 3; c++) {
                size_t at = flags & REEL_PRE_NHWC ? (size_t)px * 3 + c : (size_t)c * plane + px;
                double expect = px < covered ? want[at] : -1000;
                if (!(fabs(got[at] - expect) <= (vulkan ? 1e-4 : 0) * (1 + fabs(expect))))
                    fail_msg("pixel %u channel %d = %.9g, expected %.9g", px, c, got[at], expect);
            }
        g_free(want), g_free(got);
    }
    reel_mem_unref(&fm);
    g_free(f.buf);
    g_rand_free(r);
    reel_kernel_destroy(&k);
}

// The 0.5 crossings of channel 0 along one tensor line (a row when `vertical`
// is false, else a column), at sub-pixel positions in continuous tensor
// coordinates: rising in *up, falling in *down.
static void crossings(const float *t, int W, int H, int line, bool vertical, double *up, double *down)
{
    int n = vertical ? H : W;
    *up = *down = NAN;
    for (int i = 0; i + 1 < n; i++) {
        double a = vertical ? t[(size_t)i * W + line] : t[(size_t)line * W + i];
        double b = vertical ? t[(size_t)(i + 1) * W + line] : t[(size_t)line * W + i + 1];
        if (a < 0.5 && b >= 0.5 && isnan(*up))
            *up = i + 0.5 + (0.5 - a) / (b - a);
        if (a >= 0.5 && b < 0.5)
            *down = i + 0.5 + (a - 0.5) / (a - b);
    }
}

// A white rectangle on black, letterboxed: its edges found in the tensor and
// mapped back through the reel_affine land where they are in the frame.
static void test_letterbox_inverse(void **state)
{
    (void)state;
    static const struct {
        int src_w, src_h, dst_w, dst_h;
        int roi[4];
        int rect[4]; // x0, y0, x1, y1 in frame pixels
    } cases_[] = {
        { 640, 360, 128, 128, { 0 }, { 203, 97, 311, 254 } },
        { 160, 90, 320, 320, { 0 }, { 37, 23, 101, 61 } },   // upscaled: edges exact
        { 640, 360, 96, 96, { 150, 60, 300, 200 }, { 203, 97, 311, 254 } },
        { 301, 533, 224, 160, { 0 }, { 41, 180, 250, 397 } }, // portrait into landscape
    };
    const reel_pixfmt fmts[] = { REEL_PIXFMT_RGB24, REEL_PIXFMT_YUV420P };
    for (size_t ci = 0; ci < G_N_ELEMENTS(cases_); ci++)
        for (size_t fi = 0; fi < G_N_ELEMENTS(fmts); fi++) {
            const int *rc = cases_[ci].rect;
            bool yuv = fmts[fi] == REEL_PIXFMT_YUV420P;
            frame f = frame_new(fmts[fi], cases_[ci].src_w, cases_[ci].src_h, NULL);
            const uint8_t black[3] = { yuv ? 16 : 0, yuv ? 128 : 0, yuv ? 128 : 0 };
            const uint8_t white[3] = { yuv ? 235 : 255, yuv ? 128 : 255, yuv ? 128 : 255 };
            for (int y = 0; y < f.h; y++)
                for (int x = 0; x < f.w; x++)
                    set_pixel(&f, x, y, x >= rc[0] && x < rc[2] && y >= rc[1] && y < rc[3] ? white : black);
            const int W = cases_[ci].dst_w, H = cases_[ci].dst_h;
            reel_preprocess_push p = { .src_w = (uint32_t)f.w, .src_h = (uint32_t)f.h, .src_fmt = f.fmt,
                                       .dst_w = (uint32_t)W, .dst_h = (uint32_t)H, .pad = 114,
                                       .mul = { 1 / 255.0f, 1 / 255.0f, 1 / 255.0f } };
            reel_affine m;
            const int *roi = cases_[ci].roi[2] ? cases_[ci].roi : NULL;
            reel_preprocess_geometry(f.w, f.h, roi, W, H, REEL_FIT_LETTERBOX, &p, &m);
            float *t = run_rows(&f, &p);

            // Padding outside the content box, content inside it.
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    bool inside = x >= p.x0 && x < p.x1 && y >= p.y0 && y < p.y1;
                    if (!inside)
                        assert_float_equal(t[(size_t)y * W + x], 114 / 255.0f, 0);
                }
            assert_float_equal(t[(size_t)p.y0 * W + p.x0], 0, 1e-6);
            assert_float_equal(t[(size_t)(p.y1 - 1) * W + p.x1 - 1], 0, 1e-6);

            // Edges: along the row and the column through the rectangle's centre.
            double cx = (rc[0] + rc[2]) / 2.0 * m.ax + m.bx, cy = (rc[1] + rc[3]) / 2.0 * m.ay + m.by;
            double left, right, top, bottom;
            crossings(t, W, H, (int)cy, false, &left, &right);
            crossings(t, W, H, (int)cx, true, &top, &bottom);
            const double found[4] = { (left - m.bx) / m.ax, (top - m.by) / m.ay, (right - m.bx) / m.ax,
                                      (bottom - m.by) / m.ay };
            // Half a pixel of the coarser grid: the tensor's when downscaled.
            const double tol[4] = { 0.5 * MAX(1, 1 / m.ax), 0.5 * MAX(1, 1 / m.ay), 0.5 * MAX(1, 1 / m.ax),
                                    0.5 * MAX(1, 1 / m.ay) };
            for (int e = 0; e < 4; e++) {
                double want = rc[e], err = fabs(found[e] - want);
                // Upscaled, the bilinear ramp spans several samples: the crossing is exact.
                double limit = m.ax >= 1 && m.ay >= 1 ? 1e-3 : tol[e];
                if (!(err <= limit))
                    fail_msg("%dx%d -> %dx%d fmt %d: edge %d found at %.4f, is at %g (limit %.3g)", f.w, f.h, W, H,
                             f.fmt, e, found[e], want, limit);
            }
            g_free(t);
            g_free(f.buf);
        }
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu";
    vulkan = strcmp(backend, "vulkan") == 0;
    spec = vulkan ? "vulkan:0" : "cpu";
    if (vulkan) {
        reel_device_info *infos;
        int n = reel_device_list(&infos);
        if (n > 1)
            printf("device under test: %s (%s)\n", infos[1].spec, infos[1].name);
        g_free(infos);
        if (n < 2)
            return reel_skip_exit("no Vulkan device, so no Vulkan preprocess kernel to test");
    }
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest cpu_tests[] = {
        cmocka_unit_test(test_geometry),
        cmocka_unit_test(test_rows_reference),
        cmocka_unit_test(test_letterbox_inverse),
        T(test_kernel),
        T(test_partial_dispatch),
    };
    const struct CMUnitTest device_tests[] = {
        T(test_kernel),
        T(test_partial_dispatch),
    };
    int failed = vulkan ? cmocka_run_group_tests_name("vulkan", device_tests, NULL, NULL)
                        : cmocka_run_group_tests_name("cpu", cpu_tests, NULL, NULL);
    if (reel_device_validation_messages()) {
        fprintf(stderr, "%" G_GINT64_FORMAT " Vulkan validation messages\n", reel_device_validation_messages());
        failed++;
    }
    return reel_test_verdict(failed);
}

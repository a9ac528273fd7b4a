// The preprocess function of gpu/preprocess.h on the host: its geometry, the
// CPU path (reel_preprocess_rows) and the cpu backend's "preprocess" kernel.
//
// The CPU path works a tensor row at a time: blend the two source rows of
// each plane over the bytes the content box reads (vectorized), pick and
// blend the two columns per tensor pixel through per-call tables, convert
// YUV to RGB, normalize and store (vectorized). Coordinates are computed in
// double: in float, a frame position near 2000 is off by 1e-4 pixel, which a
// noisy frame turns into a visible error.
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "gpu/preprocess.h"

// preprocess.comp spells these as numbers.
_Static_assert(REEL_PIXFMT_RGB24 == 2 && REEL_PIXFMT_BGR24 == 3 && REEL_PIXFMT_RGBA == 4 &&
                   REEL_PIXFMT_YUV420P == 6 && REEL_PIXFMT_YUVJ420P == 7 && REEL_PIXFMT_NV12 == 8,
               "pixel format numbers in gpu/shaders/preprocess.comp");
_Static_assert(sizeof(reel_preprocess_push) == 108, "the kernel's push constant block");

void reel_preprocess_geometry(int src_w, int src_h, const int *roi, int dst_w, int dst_h, reel_fit fit,
                              reel_preprocess_push *p, reel_affine *map)
{
    double rx = 0, ry = 0, rw = src_w, rh = src_h;
    if (roi && roi[2] > 0 && roi[3] > 0)
        rx = roi[0], ry = roi[1], rw = roi[2], rh = roi[3];
    double ax = dst_w / rw, ay = dst_h / rh;
    int x0 = 0, y0 = 0, x1 = dst_w, y1 = dst_h;
    if (fit == REEL_FIT_LETTERBOX) {
        double s = MIN(ax, ay);
        int cw = CLAMP((int)lround(rw * s), 1, dst_w), ch = CLAMP((int)lround(rh * s), 1, dst_h);
        x0 = (dst_w - cw) / 2, y0 = (dst_h - ch) / 2;
        x1 = x0 + cw, y1 = y0 + ch;
        // The region fills the rounded box exactly, so samples and map agree
        // at its edges (the aspect ratio moves by under a pixel).
        ax = cw / rw, ay = ch / rh;
    } else if (fit == REEL_FIT_CROP) {
        ax = ay = MAX(ax, ay);
    }
    // The scaled region centred on the content box (exactly on it but for crop).
    double bx = x0 + ((x1 - x0) - rw * ax) / 2 - rx * ax;
    double by = y0 + ((y1 - y0) - rh * ay) / 2 - ry * ay;
    p->sx = (float)(1 / ax), p->ox = (float)(-bx / ax);
    p->sy = (float)(1 / ay), p->oy = (float)(-by / ay);
    p->x0 = x0, p->y0 = y0, p->x1 = x1, p->y1 = y1;
    *map = (reel_affine){ ax, bx, ay, by };
}

// Where one source component (Y, U, V or R, G, B) lives: plane, bytes per
// pixel, byte within the pixel, and log2 of its subsampling (0 or 1).
typedef struct comp {
    int plane, step, off, sub;
} comp;

static bool components(uint32_t fmt, comp c[3])
{
    switch (fmt) {
    case REEL_PIXFMT_YUV420P:
    case REEL_PIXFMT_YUVJ420P:
        c[0] = (comp){ 0, 1, 0, 0 }, c[1] = (comp){ 1, 1, 0, 1 }, c[2] = (comp){ 2, 1, 0, 1 };
        return true;
    case REEL_PIXFMT_NV12:
        c[0] = (comp){ 0, 1, 0, 0 }, c[1] = (comp){ 1, 2, 0, 1 }, c[2] = (comp){ 1, 2, 1, 1 };
        return true;
    case REEL_PIXFMT_RGB24:
    case REEL_PIXFMT_BGR24:
    case REEL_PIXFMT_RGBA: {
        int step = fmt == REEL_PIXFMT_RGBA ? 4 : 3, bgr = fmt == REEL_PIXFMT_BGR24;
        for (int i = 0; i < 3; i++)
            c[i] = (comp){ 0, step, bgr ? 2 - i : i, 0 };
        return true;
    }
    default:
        return false;
    }
}

// The two source pixels either side of tensor coordinate t on one axis,
// clamped to the plane's n pixels, and the weight of the second.
typedef struct tap {
    int a, b;
    float w;
} tap;

static tap tap_at(int t, float s, float o, int sub, int n)
{
    double f = (t + 0.5) * s + o - 0.5;
    if (sub) // 4:2:0 chroma is centre-sited: its own pixel centres
        f = (f + 0.5) * 0.5 - 0.5;
    double i = floor(f);
    return (tap){ CLAMP((int)i, 0, n - 1), CLAMP((int)i + 1, 0, n - 1), (float)(f - i) };
}

static void blend_rows(float *restrict out, const uint8_t *restrict a, const uint8_t *restrict b, float w, int n)
{
    for (int j = 0; j < n; j++)
        out[j] = a[j] + w * (b[j] - a[j]);
}

static void blend_columns(float *restrict out, const float *restrict row, const int *restrict ia,
                          const int *restrict ib, const float *restrict w, int n)
{
    for (int i = 0; i < n; i++) {
        float a = row[ia[i]], b = row[ib[i]];
        out[i] = a + w[i] * (b - a);
    }
}

static inline float clamp255(float v)
{
    v = v < 0.0f ? 0.0f : v;
    return v > 255.0f ? 255.0f : v;
}

// BT.601: luma offset and scale, then V->R, U->G, V->G, U->B.
static const float bt601[2][6] = {
    { 16.0f, 1.16438356f, 1.59602679f, 0.39176229f, 0.812967647f, 2.01723214f }, // limited range
    { 0.0f, 1.0f, 1.402f, 0.344136286f, 0.714136286f, 1.772f },                  // full range
};

// Y, U, V in place to R, G, B.
static void yuv_to_rgb(float *restrict y, float *restrict u, float *restrict v, int n, const float k[6])
{
    for (int i = 0; i < n; i++) {
        float Y = (y[i] - k[0]) * k[1], U = u[i] - 128.0f, V = v[i] - 128.0f;
        float r = Y + k[2] * V, g = Y - k[3] * U - k[4] * V, b = Y + k[5] * U;
        y[i] = clamp255(r), u[i] = clamp255(g), v[i] = clamp255(b);
    }
}

static void store(float *restrict out, int step, const float *restrict v, int n, float mul, float add)
{
    if (step == 1) // the NCHW case, kept apart so that it vectorizes
        for (int i = 0; i < n; i++)
            out[i] = v[i] * mul + add;
    else
        for (int i = 0; i < n; i++)
            out[i * step] = v[i] * mul + add;
}

static void fill(float *restrict out, int step, int n, float value)
{
    for (int i = 0; i < n; i++)
        out[i * step] = value;
}

// reel_preprocess_rows, writing only tensor pixels y * dst_w + x < npix:
// the cpu kernel's dispatch may cover part of a row.
static void preprocess_rows(const reel_preprocess_push *p, const uint8_t *const planes[3], const int strides[3],
                            float *dst, int row0, int row1, int64_t npix)
{
    comp c[3];
    if (!components(p->src_fmt, c))
        return; // unsupported formats write nothing, as in the shader
    const int W = (int)p->dst_w, H = (int)p->dst_h;
    const int bx0 = CLAMP(p->x0, 0, W), bx1 = CLAMP(p->x1, bx0, W), n = bx1 - bx0;
    const int pw[2] = { (int)p->src_w, ((int)p->src_w + 1) / 2 }, ph[2] = { (int)p->src_h, ((int)p->src_h + 1) / 2 };
    const bool yuv = c[1].sub, nhwc = p->flags & REEL_PRE_NHWC, bgr = p->flags & REEL_PRE_BGR;
    const int n_planes = c[2].plane + 1;

    // Per call: column taps per subsampling level, turned into indices into
    // each plane's blended row, which spans bytes [lo, hi) of a source row.
    tap *tx = g_new(tap, 2 * (size_t)n + 1);
    float *wx = g_new(float, 2 * (size_t)n + 1);
    int *idx = g_new(int, 6 * (size_t)n + 1);
    float *v = g_new(float, 3 * (size_t)n + 1);
    int lo[3] = { INT_MAX, INT_MAX, INT_MAX }, hi[3] = { 0, 0, 0 };
    for (int l = 0; l < 1 + yuv; l++)
        for (int i = 0; i < n; i++) {
            tx[l * n + i] = tap_at(bx0 + i, p->sx, p->ox, l, pw[l]);
            wx[l * n + i] = tx[l * n + i].w;
        }
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++) {
            tap t = tx[c[k].sub * n + i];
            int *lk = &lo[c[k].plane], *hk = &hi[c[k].plane];
            *lk = MIN(*lk, MIN(t.a, t.b) * c[k].step + c[k].off);
            *hk = MAX(*hk, MAX(t.a, t.b) * c[k].step + c[k].off + 1);
        }
    float *rows[3] = { NULL, NULL, NULL };
    int plane_sub[3] = { 0, 0, 0 };
    for (int k = 0; k < 3; k++)
        plane_sub[c[k].plane] = c[k].sub;
    for (int k = 0; k < n_planes; k++) {
        lo[k] = MIN(lo[k], hi[k]);
        rows[k] = g_new(float, (size_t)(hi[k] - lo[k]) + 1);
    }
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++) {
            tap t = tx[c[k].sub * n + i];
            idx[(2 * k) * n + i] = t.a * c[k].step + c[k].off - lo[c[k].plane];
            idx[(2 * k + 1) * n + i] = t.b * c[k].step + c[k].off - lo[c[k].plane];
        }

    float padv[3];
    for (int ch = 0; ch < 3; ch++)
        padv[ch] = p->pad * p->mul[ch] + p->add[ch];
    const int step = nhwc ? 3 : 1;
    for (int y = row0; y < row1; y++) {
        const int xe = (int)CLAMP(npix - (int64_t)y * W, 0, W);
        const bool content = n > 0 && y >= p->y0 && y < p->y1;
        if (content) {
            for (int k = 0; k < n_planes; k++) {
                int l = plane_sub[k];
                tap t = tap_at(y, p->sy, p->oy, l, ph[l]);
                const uint8_t *base = planes[k] + lo[k];
                blend_rows(rows[k], base + (ptrdiff_t)t.a * strides[k], base + (ptrdiff_t)t.b * strides[k], t.w,
                           hi[k] - lo[k]);
            }
            for (int k = 0; k < 3; k++)
                blend_columns(v + k * n, rows[c[k].plane], idx + 2 * k * n, idx + (2 * k + 1) * n,
                              wx + c[k].sub * n, n);
            if (yuv)
                yuv_to_rgb(v, v + n, v + 2 * n, n, bt601[p->src_fmt == REEL_PIXFMT_YUVJ420P]);
        }
        const int cx0 = content ? MIN(bx0, xe) : xe, cx1 = content ? MIN(bx1, xe) : xe;
        for (int ch = 0; ch < 3; ch++) {
            float *out = nhwc ? dst + (size_t)y * W * 3 + ch : dst + ((size_t)ch * H + y) * W;
            fill(out, step, cx0, padv[ch]);
            store(out + (size_t)cx0 * step, step, v + (bgr ? 2 - ch : ch) * n, cx1 - cx0, p->mul[ch], p->add[ch]);
            fill(out + (size_t)cx1 * step, step, xe - cx1, padv[ch]);
        }
    }
    for (int k = 0; k < n_planes; k++)
        g_free(rows[k]);
    g_free(tx), g_free(wx), g_free(idx), g_free(v);
}

void reel_preprocess_rows(const reel_preprocess_push *p, const uint8_t *const planes[3], const int strides[3],
                          float *dst, int row0, int row1)
{
    preprocess_rows(p, planes, strides, dst, row0, row1, INT64_MAX);
}

// The cpu backend's kernel: buffers {frame, tensor}, one invocation per
// tensor pixel as in preprocess.comp, so a short dispatch stops mid-row.
void cpu_kernel_preprocess(void *const *buffers, const void *push, const uint32_t groups[3], uint32_t local_size)
{
    reel_preprocess_push p;
    memcpy(&p, push, sizeof p);
    const uint8_t *planes[3];
    int strides[3];
    for (int k = 0; k < 3; k++)
        planes[k] = (const uint8_t *)buffers[0] + p.offset[k], strides[k] = (int)p.stride[k];
    int64_t npix = MIN((int64_t)groups[0] * local_size, (int64_t)p.dst_w * p.dst_h);
    if (npix > 0)
        preprocess_rows(&p, planes, strides, buffers[1], 0, (int)((npix + p.dst_w - 1) / p.dst_w), npix);
}

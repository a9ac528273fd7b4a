// RoiAlign, GridSample, MaxUnpool: over N, C, spatial... float32 tensors.
#include <limits.h>

#include "models/cpu/nn.h"

// ---- GridSample (1 to 3 spatial dims): every output pixel samples X at
// the normalized (x, y, z) in [-1, 1] that Grid holds for it. Follows ONNX's reference: the
// coordinate is padded (border: clamped, reflection: reflected) when it lies
// outside the image, then each tap of the interpolation is padded too.

typedef enum gs_mode { GS_NEAREST, GS_LINEAR, GS_CUBIC } gs_mode;
typedef enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION } gs_pad;

typedef struct gs_cfg {
    gs_mode mode;
    gs_pad pad;
    bool align_corners;
} gs_cfg;

static int gs_config(const reel_ir_node *n, int opset, gs_cfg *c, GError **error)
{
    // Opset 20 renamed bilinear and bicubic.
    const char *linear = opset >= 20 ? "linear" : "bilinear", *cubic = opset >= 20 ? "cubic" : "bicubic";
    const char *mode = reel_ir_attr_string(n, "mode", linear), *pad = reel_ir_attr_string(n, "padding_mode", "zeros");
    if (strcmp(mode, linear) == 0)
        c->mode = GS_LINEAR;
    else if (strcmp(mode, cubic) == 0)
        c->mode = GS_CUBIC;
    else if (strcmp(mode, "nearest") == 0)
        c->mode = GS_NEAREST;
    else
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'mode' = '%s' is not supported", mode);
    if (strcmp(pad, "zeros") == 0)
        c->pad = GS_ZEROS;
    else if (strcmp(pad, "border") == 0)
        c->pad = GS_BORDER;
    else if (strcmp(pad, "reflection") == 0)
        c->pad = GS_REFLECTION;
    else
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'padding_mode' = '%s' is not supported", pad);
    int64_t ac = reel_ir_attr_int(n, "align_corners", 0);
    if (ac != 0 && ac != 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'align_corners' = %" G_GINT64_FORMAT " is not supported", ac);
    c->align_corners = ac == 1;
    return 0;
}

enum { GS_MAX_SP = 3 }; // spatial dims: 2 before opset 20, 1 to 3 since

static int gs_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *grid = reel_op_input(g, n, 1);
    if (!x || !grid)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X and Grid");
    if (x->dtype != REEL_DTYPE_FLOAT32 || grid->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
    gs_cfg c;
    int err = gs_config(n, g->opset, &c, error);
    if (err)
        return err;
    int rank = x->rank >= 0 ? x->rank : grid->rank;
    if (rank < 0) {
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, -1, NULL);
        return 0;
    }
    int lo = g->opset >= 20 ? 3 : 4, hi = g->opset >= 20 ? GS_MAX_SP + 2 : 4;
    if (rank < lo || rank > hi || (x->rank >= 0 && grid->rank >= 0 && x->rank != grid->rank))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "X and Grid must have the same rank, %d to %d (not %d and %d)", lo, hi,
                x->rank, grid->rank);
    int sp = rank - 2;
    if (grid->rank >= 0 && grid->dims[sp + 1] >= 0 && grid->dims[sp + 1] != sp)
        NN_FAIL(error, REEL_EINVAL, n, "Grid's last dim must be %d, not %" G_GINT64_FORMAT, sp, grid->dims[sp + 1]);
    if (x->rank >= 0 && grid->rank >= 0 && x->dims[0] >= 0 && grid->dims[0] >= 0 && x->dims[0] != grid->dims[0])
        NN_FAIL(error, REEL_EINVAL, n, "X and Grid have different batch sizes");
    // [N, C, the grid's spatial dims]
    int64_t od[GS_MAX_SP + 2];
    od[0] = x->rank >= 0 ? x->dims[0] : REEL_DIM_UNKNOWN;
    od[1] = x->rank >= 0 ? x->dims[1] : REEL_DIM_UNKNOWN;
    for (int a = 0; a < sp; a++)
        od[2 + a] = grid->rank >= 0 ? grid->dims[1 + a] : REEL_DIM_UNKNOWN;
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, rank, od);
    return 0;
}

// x reflected into [lo, hi] (repeatedly, as a mirror image would be).
static double gs_reflect(double x, double lo, double hi)
{
    double range = hi - lo;
    if (range <= 0)
        return lo;
    if (x < lo) {
        double dx = lo - x, k = floor(dx / range), r = dx - k * range;
        return fmod(k, 2.0) == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi, k = floor(dx / range), r = dx - k * range;
        return fmod(k, 2.0) == 0 ? hi - r : lo + r;
    }
    return x;
}

// The image's spatial dims (outermost first: D, H, W) and how it pads.
typedef struct gs_plane {
    int sp;
    int64_t size[GS_MAX_SP], plane;
    const gs_cfg *c;
    double lo[GS_MAX_SP], hi[GS_MAX_SP]; // the reflection bounds per dim
} gs_plane;

// The offset of the pixel at[0..sp) after padding; -1 for a zero.
static int64_t gs_index(const gs_plane *s, const int64_t *at)
{
    int64_t off = 0;
    for (int a = 0; a < s->sp; a++) {
        int64_t v = at[a];
        if (s->c->pad == GS_ZEROS && (v < 0 || v >= s->size[a]))
            return -1;
        if (s->c->pad == GS_REFLECTION)
            v = (int64_t)gs_reflect((double)v, s->lo[a], s->hi[a]);
        off = off * s->size[a] + CLAMP(v, 0, s->size[a] - 1);
    }
    return off;
}

// Bicubic weights (A = -0.75) of the four taps around a point t past the
// second one.
static void gs_cubic_weights(double t, double w[4])
{
    const double A = -0.75;
    double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
    w[0] = ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A;
    w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    w[2] = ((A + 2) * t2 - (A + 3)) * t2 * t2 + 1;
    w[3] = ((A * t3 - 5 * A) * t3 + 8 * A) * t3 - 4 * A;
}

// Taps along each dim: 1, 2 or 4.
static int gs_taps_per_dim(const gs_cfg *c)
{
    return c->mode == GS_NEAREST ? 1 : c->mode == GS_LINEAR ? 2 : 4;
}

static int gs_taps_per_pixel(const gs_cfg *c, int sp)
{
    int t = 1;
    for (int a = 0; a < sp; a++)
        t *= gs_taps_per_dim(c);
    return t;
}

// The taps (offsets, -1 for zeros, and weights) of the sample at pixel
// coordinates x[0..sp): every combination of each dim's taps.
static void gs_taps(const gs_plane *s, const double *x, int64_t *off, float *w)
{
    int n = gs_taps_per_dim(s->c);
    int64_t first[GS_MAX_SP];
    double wt[GS_MAX_SP][4];
    for (int a = 0; a < s->sp; a++) {
        double x0 = floor(x[a]), t = x[a] - x0;
        if (n == 1)
            wt[a][0] = 1, x0 = x[a]; // already rounded
        else if (n == 2)
            wt[a][0] = 1 - t, wt[a][1] = t;
        else
            gs_cubic_weights(t, wt[a]);
        first[a] = (int64_t)x0 - (n == 4);
    }
    int taps = gs_taps_per_pixel(s->c, s->sp);
    for (int k = 0; k < taps; k++) {
        int64_t at[GS_MAX_SP];
        double wk = 1;
        for (int a = s->sp - 1, rem = k; a >= 0; a--, rem /= n) {
            at[a] = first[a] + rem % n;
            wk *= wt[a][rem % n];
        }
        off[k] = gs_index(s, at);
        w[k] = (float)wk;
    }
}

// A normalized coordinate along spatial dim a in pixels, padded when it
// falls outside.
static double gs_coord(const gs_plane *s, float v, int a)
{
    double size = (double)s->size[a];
    double x = s->c->align_corners ? (v + 1.0) / 2.0 * (size - 1) : ((v + 1.0) * size - 1.0) / 2.0;
    if (s->c->mode == GS_NEAREST)
        x = nearbyint(x); // halves to even, as numpy's rint
    if (x < s->lo[a] || x > s->hi[a]) {
        if (s->c->pad == GS_BORDER)
            x = CLAMP(x, 0.0, size - 1);
        else if (s->c->pad == GS_REFLECTION)
            x = gs_reflect(x, s->lo[a], s->hi[a]);
    }
    // Far outside (or NaN), every tap is padding: keep the casts to
    // integers defined.
    if (!(x >= -4.0))
        x = -4.0;
    if (x > size + 4.0)
        x = size + 4.0;
    return x;
}

// One image of the batch: the taps of every output pixel are found once
// (tasks over chunks of pixels), then applied to every channel (tasks over
// channel and chunk).
typedef struct gs_job {
    const gs_plane *s;
    const float *grid, *x;     // this image's
    float *y;
    int64_t *off;
    float *w;
    int64_t pixels, chunk, chunks, C;
    int per;
} gs_job;

enum { GS_CHUNK = 4096 };

static void gs_taps_task(void *arg, int task, int worker)
{
    (void)worker;
    const gs_job *j = arg;
    int sp = j->s->sp;
    int64_t k0 = task * j->chunk, k1 = MIN(j->pixels, k0 + j->chunk);
    for (int64_t k = k0; k < k1; k++) {
        // Grid holds (x, y, z): x indexes the innermost dim.
        double at[GS_MAX_SP];
        for (int a = 0; a < sp; a++)
            at[a] = gs_coord(j->s, j->grid[k * sp + (sp - 1 - a)], a);
        gs_taps(j->s, at, j->off + k * j->per, j->w + k * j->per);
    }
}

static void gs_apply_task(void *arg, int task, int worker)
{
    (void)worker;
    const gs_job *j = arg;
    int64_t ch = task / j->chunks, k0 = (task % j->chunks) * j->chunk, k1 = MIN(j->pixels, k0 + j->chunk);
    const float *p = j->x + ch * j->s->plane;
    float *y = j->y + ch * j->pixels;
    for (int64_t k = k0; k < k1; k++) {
        const int64_t *off = j->off + k * j->per;
        const float *w = j->w + k * j->per;
        float acc = 0;
        for (int t = 0; t < j->per; t++)
            acc += off[t] >= 0 ? w[t] * p[off[t]] : 0.0f;
        y[k] = acc;
    }
}

static int gs_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    gs_cfg c;
    if (gs_config(n, ctx->opset, &c, NULL))
        return REEL_EINVAL;
    const reel_tensor *x = in[0], *grid = in[1];
    int sp = x->rank - 2;
    if (sp < 1 || sp > GS_MAX_SP || grid->rank != x->rank)
        return REEL_EINVAL;
    int64_t N = x->shape[0], C = x->shape[1];
    gs_plane s = { .sp = sp, .plane = 1, .c = &c };
    double half = c.align_corners ? 0.0 : 0.5;
    for (int a = 0; a < sp; a++) {
        s.size[a] = x->shape[2 + a];
        s.plane *= s.size[a];
        s.lo[a] = -half;
        s.hi[a] = (double)(s.size[a] - 1) + half;
    }
    int64_t pixels = reel_tensor_count(sp, grid->shape + 1);
    float *y = out[0]->data;
    if (s.plane == 0) { // zeros pads every tap to 0; the others have no pixel to repeat
        if (c.pad != GS_ZEROS)
            return REEL_EINVAL;
        memset(y, 0, out[0]->nbytes);
        return 0;
    }
    if (pixels == 0 || C == 0)
        return 0;
    int per = gs_taps_per_pixel(&c, sp);
    gs_job j = { .s = &s, .pixels = pixels, .chunk = GS_CHUNK, .chunks = (pixels + GS_CHUNK - 1) / GS_CHUNK, .C = C,
                 .per = per };
    if (j.chunks * C > INT_MAX)
        return REEL_EINVAL;
    j.off = g_try_new(int64_t, (size_t)(pixels * per));
    j.w = g_try_new(float, (size_t)(pixels * per));
    if (!j.off || !j.w) {
        g_free(j.off), g_free(j.w);
        return REEL_ENOMEM;
    }
    for (int64_t b = 0; b < N; b++) {
        j.grid = (const float *)grid->data + b * pixels * sp;
        j.x = (const float *)x->data + b * C * s.plane;
        j.y = y + b * C * pixels;
        nn_parallel(ctx, (int)j.chunks, gs_taps_task, &j);
        nn_parallel(ctx, (int)(j.chunks * C), gs_apply_task, &j);
    }
    g_free(j.off), g_free(j.w);
    return 0;
}

static const reel_op op_gridsample = { "GridSample", gs_infer, NULL, gs_run };

// ---- RoiAlign: each region of interest (x1, y1, x2, y2, scaled by
// spatial_scale) cut into output_height x output_width bins, each the
// average (or max) of a grid of bilinear samples.

typedef struct roi_cfg {
    bool max;            // mode max (else avg)
    bool half_pixel;     // coordinates shifted by half a pixel
    int64_t oh, ow, ratio;
    float scale;
} roi_cfg;

static int roi_config(const reel_ir_node *n, int opset, roi_cfg *c, GError **error)
{
    const char *mode = reel_ir_attr_string(n, "mode", "avg");
    if (strcmp(mode, "avg") != 0 && strcmp(mode, "max") != 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'mode' = '%s' is not supported", mode);
    c->max = strcmp(mode, "max") == 0;
    // Before opset 16 the coordinates were those of output_half_pixel.
    const char *ctm = reel_ir_attr_string(n, "coordinate_transformation_mode",
                                          opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (strcmp(ctm, "half_pixel") != 0 && strcmp(ctm, "output_half_pixel") != 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'coordinate_transformation_mode' = '%s' is not supported", ctm);
    c->half_pixel = strcmp(ctm, "half_pixel") == 0;
    c->oh = reel_ir_attr_int(n, "output_height", 1);
    c->ow = reel_ir_attr_int(n, "output_width", 1);
    c->ratio = reel_ir_attr_int(n, "sampling_ratio", 0);
    c->scale = reel_ir_attr_float(n, "spatial_scale", 1.0f);
    if (c->oh < 1 || c->ow < 1)
        NN_FAIL(error, REEL_EINVAL, n, "output_height and output_width must be positive");
    if (c->ratio < 0)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'sampling_ratio' = %" G_GINT64_FORMAT " is negative", c->ratio);
    return 0;
}

static int roi_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *rois = reel_op_input(g, n, 1), *bi = reel_op_input(g, n, 2);
    if (!x || !rois || !bi)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X, rois and batch_indices");
    if (x->dtype != REEL_DTYPE_FLOAT32 || rois->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "X and rois: only float32 tensors are supported");
    if (bi->dtype != REEL_DTYPE_INT64)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "batch_indices must be int64, not %s", reel_dtype_name(bi->dtype));
    roi_cfg c;
    int err = roi_config(n, g->opset, &c, error);
    if (err)
        return err;
    if ((x->rank >= 0 && x->rank != 4) || (rois->rank >= 0 && rois->rank != 2) || (bi->rank >= 0 && bi->rank != 1))
        NN_FAIL(error, REEL_EINVAL, n, "X, rois and batch_indices must have ranks 4, 2 and 1");
    if (rois->rank == 2 && rois->dims[1] >= 0 && rois->dims[1] != 4)
        NN_FAIL(error, REEL_EINVAL, n, "rois must have 4 columns, not %" G_GINT64_FORMAT, rois->dims[1]);
    int64_t R = rois->rank == 2 ? rois->dims[0] : REEL_DIM_UNKNOWN;
    if (bi->rank == 1 && R >= 0 && bi->dims[0] >= 0 && bi->dims[0] != R)
        NN_FAIL(error, REEL_EINVAL, n, "rois has %" G_GINT64_FORMAT " rows but batch_indices %" G_GINT64_FORMAT, R,
                bi->dims[0]);
    int64_t od[4] = { R, x->rank == 4 ? x->dims[1] : REEL_DIM_UNKNOWN, c.oh, c.ow };
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, 4, od);
    return 0;
}

// One bilinear sample: the four pixels' offsets and weights (all 0 outside).
typedef struct roi_tap {
    int64_t o[4];
    float w[4];
} roi_tap;

static roi_tap roi_sample_at(double y, double x, int64_t H, int64_t W)
{
    roi_tap t = { { 0 }, { 0 } };
    if (y < -1.0 || y > (double)H || x < -1.0 || x > (double)W || H == 0 || W == 0)
        return t;
    y = MAX(y, 0.0);
    x = MAX(x, 0.0);
    int64_t y0 = (int64_t)y, x0 = (int64_t)x, y1 = y0 + 1, x1 = x0 + 1;
    if (y0 >= H - 1)
        y0 = y1 = H - 1, y = (double)y0;
    if (x0 >= W - 1)
        x0 = x1 = W - 1, x = (double)x0;
    double ly = y - (double)y0, lx = x - (double)x0, hy = 1 - ly, hx = 1 - lx;
    t.o[0] = y0 * W + x0, t.o[1] = y0 * W + x1, t.o[2] = y1 * W + x0, t.o[3] = y1 * W + x1;
    t.w[0] = (float)(hy * hx), t.w[1] = (float)(hy * lx), t.w[2] = (float)(ly * hx), t.w[3] = (float)(ly * lx);
    return t;
}

// Samples per bin along one axis: sampling_ratio, else about one per pixel
// (bounded, and 0 for an empty or NaN extent).
static int64_t roi_grid(const roi_cfg *c, double extent, int64_t bins)
{
    if (c->ratio > 0)
        return c->ratio;
    double k = ceil(extent / (double)bins);
    return k >= 1 ? (k < 1e6 ? (int64_t)k : 1000000) : 0;
}

// The bins of one region over every channel; acc holds C sums. Each sample's
// taps are found once and applied to every channel.
static void roi_region(const roi_cfg *c, const float *roi, const float *X, int64_t C, int64_t H, int64_t W, float *Y,
                       double *acc)
{
    double off = c->half_pixel ? 0.5 : 0.0;
    double x0 = roi[0] * c->scale - off, y0 = roi[1] * c->scale - off;
    double rw = roi[2] * c->scale - off - x0, rh = roi[3] * c->scale - off - y0;
    if (!c->half_pixel) { // the legacy mode keeps regions at least a pixel wide
        rw = MAX(rw, 1.0);
        rh = MAX(rh, 1.0);
    }
    double bh = rh / (double)c->oh, bw = rw / (double)c->ow;
    int64_t gh = roi_grid(c, rh, c->oh), gw = roi_grid(c, rw, c->ow), bins = c->oh * c->ow;
    double count = (double)MAX(gh * gw, 1);
    for (int64_t ph = 0; ph < c->oh; ph++)
        for (int64_t pw = 0; pw < c->ow; pw++) {
            for (int64_t ch = 0; ch < C; ch++)
                acc[ch] = 0;
            for (int64_t iy = 0; iy < gh; iy++)
                for (int64_t ix = 0; ix < gw; ix++) {
                    double y = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                    double x = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                    roi_tap t = roi_sample_at(y, x, H, W);
                    bool first = iy == 0 && ix == 0;
                    for (int64_t ch = 0; ch < C; ch++) {
                        const float *p = X + ch * H * W;
                        if (c->max) { // ONNX's max: of the weighted taps
                            double m = t.w[0] * p[t.o[0]];
                            for (int k = 1; k < 4; k++)
                                m = MAX(m, (double)(t.w[k] * p[t.o[k]]));
                            acc[ch] = first ? m : MAX(acc[ch], m);
                        } else
                            acc[ch] += t.w[0] * p[t.o[0]] + t.w[1] * p[t.o[1]] + t.w[2] * p[t.o[2]] +
                                       t.w[3] * p[t.o[3]];
                    }
                }
            for (int64_t ch = 0; ch < C; ch++)
                Y[ch * bins + ph * c->ow + pw] = (float)(c->max ? acc[ch] : acc[ch] / count);
        }
}

// Regions over the workers, each worker with its own sums.
typedef struct roi_job {
    const roi_cfg *c;
    const float *rois, *x;
    const int64_t *bi;
    float *y;
    double *acc;          // [threads][C]
    int64_t C, H, W;
} roi_job;

static void roi_task(void *arg, int task, int worker)
{
    const roi_job *j = arg;
    int64_t r = task, C = j->C, plane = j->H * j->W;
    roi_region(j->c, j->rois + 4 * r, j->x + j->bi[r] * C * plane, C, j->H, j->W,
               j->y + r * C * j->c->oh * j->c->ow, j->acc + (size_t)worker * (size_t)MAX(C, 1));
}

static int roi_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    roi_cfg c;
    if (roi_config(n, ctx->opset, &c, NULL))
        return REEL_EINVAL;
    const reel_tensor *x = in[0], *rois = in[1];
    const int64_t *bi = in[2]->data;
    int64_t N = x->shape[0], C = x->shape[1], R = rois->shape[0];
    if (in[2]->shape[0] != R || R > INT_MAX)
        return REEL_EINVAL;
    for (int64_t r = 0; r < R; r++)
        if (bi[r] < 0 || bi[r] >= N)
            return REEL_EINVAL;
    int threads = ctx->workers ? ctx->threads : 1;
    roi_job j = { .c = &c, .rois = rois->data, .x = x->data, .bi = bi, .y = out[0]->data, .C = C,
                  .H = x->shape[2], .W = x->shape[3] };
    j.acc = g_try_new(double, (size_t)threads * (size_t)MAX(C, 1));
    if (!j.acc)
        return REEL_ENOMEM;
    nn_parallel(ctx, (int)R, roi_task, &j);
    g_free(j.acc);
    return 0;
}

static const reel_op op_roialign = { "RoiAlign", roi_infer, NULL, roi_run };

// ---- MaxUnpool: X's values put back where MaxPool's Indices (flat offsets
// in the unpooled tensor) say, zeros elsewhere. The unpooled shape comes
// from kernel, strides and pads; a larger output_shape pads it at the end
// of each dim (as ONNX's reference does), offsets keeping their coordinates.

// The unpooled dims of X (rank dims, spatial ones from the attributes).
static int unpool_dims(const reel_ir_node *n, int rank, const int64_t *x, int64_t *dims, GError **error)
{
    int sp = rank - 2, nk, ns, np;
    const int64_t *k = reel_ir_attr_ints(n, "kernel_shape", &nk), *s = reel_ir_attr_ints(n, "strides", &ns);
    const int64_t *p = reel_ir_attr_ints(n, "pads", &np);
    if (nk != sp)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'kernel_shape' needs %d values, not %d", sp, nk);
    if ((s && ns != sp) || (p && np != 2 * sp))
        NN_FAIL(error, REEL_EINVAL, n, "attributes 'strides' and 'pads' need %d and %d values", sp, 2 * sp);
    dims[0] = x[0], dims[1] = x[1];
    for (int i = 0; i < sp; i++) {
        int64_t st = s ? s[i] : 1, pb = p ? p[i] : 0, pe = p ? p[sp + i] : 0;
        if (k[i] < 1 || st < 1 || pb < 0 || pe < 0)
            NN_FAIL(error, REEL_EINVAL, n, "kernel_shape, strides and pads must be positive");
        int64_t in = x[2 + i];
        dims[2 + i] = in < 0 ? REEL_DIM_UNKNOWN : (in - 1) * st + k[i] - pb - pe;
        if (in >= 0 && dims[2 + i] < 0)
            NN_FAIL(error, REEL_EINVAL, n, "pads leave spatial dim %d negative", i);
    }
    return 0;
}

static int unpool_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *idx = reel_op_input(g, n, 1), *os = reel_op_input(g, n, 2);
    if (!x || !idx)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X and I");
    if (x->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "X: only float32 tensors are supported");
    if (idx->dtype != REEL_DTYPE_INT64 || (os && os->dtype != REEL_DTYPE_INT64))
        NN_FAIL(error, REEL_EINVAL, n, "I and output_shape must be int64");
    if (x->rank < 0) {
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, -1, NULL);
        return 0;
    }
    if (x->rank < 3)
        NN_FAIL(error, REEL_EINVAL, n, "X must have rank 3 or more, not %d", x->rank);
    if (idx->rank >= 0 && idx->rank != x->rank)
        NN_FAIL(error, REEL_EINVAL, n, "I must have X's shape");
    int64_t dims[REEL_TENSOR_MAX_RANK];
    int err = unpool_dims(n, x->rank, x->dims, dims, error);
    if (err)
        return err;
    if (os) {
        int64_t want[REEL_TENSOR_MAX_RANK];
        int c = os->constant ? reel_tensor_ints(os->constant, want, REEL_TENSOR_MAX_RANK) : -1;
        if (os->constant && c != x->rank)
            NN_FAIL(error, REEL_EINVAL, n, "output_shape must have %d values", x->rank);
        for (int i = 0; i < x->rank; i++) {
            if (c < 0) {
                dims[i] = REEL_DIM_UNKNOWN;
                continue;
            }
            if (dims[i] >= 0 && (want[i] < dims[i] || (i < 2 && want[i] != dims[i])))
                NN_FAIL(error, REEL_EINVAL, n, "output_shape dim %d is %" G_GINT64_FORMAT ", below %" G_GINT64_FORMAT,
                        i, want[i], dims[i]);
            dims[i] = want[i];
        }
    }
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, dims);
    return 0;
}

static int unpool_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *ix = in[1];
    int rank = x->rank;
    int64_t dims[REEL_TENSOR_MAX_RANK];
    if (unpool_dims(n, rank, x->shape, dims, NULL) || ix->rank != rank ||
        reel_tensor_count(rank, ix->shape) != reel_tensor_count(rank, x->shape))
        return REEL_EINVAL;
    for (int i = 0; i < rank; i++)
        if (out[0]->shape[i] < dims[i])
            return REEL_EINVAL;
    int64_t total = reel_tensor_count(rank, dims), count = reel_tensor_count(rank, x->shape);
    const float *xs = x->data;
    const int64_t *is = ix->data;
    float *y = out[0]->data;
    memset(y, 0, out[0]->nbytes);
    for (int64_t e = 0; e < count; e++) {
        int64_t at = is[e], off = 0, scale = 1;
        if (at < 0 || at >= total)
            return REEL_EINVAL;
        // The offset's coordinates in the unpooled dims, placed in the output's.
        for (int d = rank - 1; d >= 0; d--) {
            off += (at % dims[d]) * scale;
            at /= dims[d];
            scale *= out[0]->shape[d];
        }
        y[off] = xs[e];
    }
    return 0;
}

static const reel_op op_maxunpool = { "MaxUnpool", unpool_infer, NULL, unpool_run };

const reel_op *const reel_ops_roi[] = {
    &op_maxunpool,
    &op_gridsample,
    &op_roialign,
    NULL,
};

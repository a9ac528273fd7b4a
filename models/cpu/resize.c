// Resize (opset 10: scales; 11+: roi, scales, sizes, axes, aspect-ratio
// policies) and Upsample (opset 7 attribute, opset 9 input). Nearest (four
// rounding modes), linear and cubic, applied one axis at a time: each is
// separable, so an N-D resize is N 1-D passes.
#include "models/cpu/nn.h"

typedef enum { M_NEAREST, M_LINEAR, M_CUBIC } rmode;

typedef struct rgeom {
    int rank;
    int64_t in[REEL_TENSOR_MAX_RANK], out[REEL_TENSOR_MAX_RANK];
    double scale[REEL_TENSOR_MAX_RANK], roi_start[REEL_TENSOR_MAX_RANK], roi_end[REEL_TENSOR_MAX_RANK];
    rmode mode;
    const char *ctm, *nearest;
    double cubic_a, extrapolation;
    bool exclude_outside;
} rgeom;

static bool is_upsample(const reel_ir_node *n)
{
    return strcmp(n->op, "Upsample") == 0;
}

// Input indices of roi, scales and sizes (-1: none) for this op and opset.
static void input_slots(const reel_ir_node *n, int opset, int *roi, int *scales, int *sizes)
{
    *roi = *scales = *sizes = -1;
    if (is_upsample(n)) {
        if (opset >= 9 || n->n_inputs > 1)
            *scales = 1;
    } else if (opset < 11) {
        *scales = 1;
    } else {
        *roi = 1, *scales = 2, *sizes = 3;
    }
}

static double as_double(const reel_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case REEL_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case REEL_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    default: return 0;
    }
}

// Output shape and per-axis parameters. t_roi/t_scales/t_sizes are the
// (constant or run-time) tensors, NULL when omitted or not known yet:
// then *known is false.
static int rgeom_init(const reel_ir_node *n, int opset, int rank, const int64_t *in, const reel_tensor *t_roi,
                      const reel_tensor *t_scales, const reel_tensor *t_sizes, rgeom *r, bool *known, GError **error)
{
    memset(r, 0, sizeof *r);
    r->rank = rank;
    bool v11 = !is_upsample(n) && opset >= 11;
    const char *mode = reel_ir_attr_string(n, "mode", "nearest");
    if (strcmp(mode, "nearest") == 0)
        r->mode = M_NEAREST;
    else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
        r->mode = M_LINEAR;
    else if (strcmp(mode, "cubic") == 0 && v11)
        r->mode = M_CUBIC;
    else
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "mode %s is not supported", mode);
    r->ctm = v11 ? reel_ir_attr_string(n, "coordinate_transformation_mode", "half_pixel") : "asymmetric";
    r->nearest = v11 ? reel_ir_attr_string(n, "nearest_mode", "round_prefer_floor") : "floor";
    r->cubic_a = reel_ir_attr_float(n, "cubic_coeff_a", -0.75f);
    r->exclude_outside = reel_ir_attr_int(n, "exclude_outside", 0) != 0;
    r->extrapolation = reel_ir_attr_float(n, "extrapolation_value", 0);
    static const char *const ctms[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                        "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize", NULL };
    static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL };
    bool ok = false;
    for (const char *const *c = ctms; *c; c++)
        ok |= strcmp(*c, r->ctm) == 0;
    if (!ok)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "coordinate_transformation_mode %s is not supported", r->ctm);
    ok = false;
    for (const char *const *c = nearests; *c; c++)
        ok |= strcmp(*c, r->nearest) == 0;
    if (!ok)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "nearest_mode %s is not supported", r->nearest);
    if (reel_ir_attr_int(n, "antialias", 0))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "antialias is not supported");
    int naxes = 0;
    const int64_t *axes_attr = reel_ir_attr_ints(n, "axes", &naxes);
    int axes[REEL_TENSOR_MAX_RANK];
    if (!axes_attr)
        naxes = rank;
    if (naxes > rank)
        NN_FAIL(error, REEL_EINVAL, n, "more axes than dims");
    for (int i = 0; i < naxes; i++) {
        int64_t a = axes_attr ? axes_attr[i] : i;
        if (a < 0)
            a += rank;
        if (a < 0 || a >= rank)
            NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " out of range", axes_attr[i]);
        axes[i] = (int)a;
    }
    for (int i = 0; i < rank; i++) {
        r->in[i] = r->out[i] = in[i];
        r->scale[i] = 1;
        r->roi_start[i] = 0;
        r->roi_end[i] = 1;
    }
    *known = false;
    if (t_roi && reel_tensor_count(t_roi->rank, t_roi->shape) == 2 * naxes)
        for (int i = 0; i < naxes; i++) {
            r->roi_start[axes[i]] = as_double(t_roi, i);
            r->roi_end[axes[i]] = as_double(t_roi, naxes + i);
        }
    bool crop = strcmp(r->ctm, "tf_crop_and_resize") == 0;
    int nattr = 0;
    const float *attr_scales = NULL;
    if (is_upsample(n) && opset < 9) {
        const reel_ir_attr *a = reel_ir_attr_find(n, "scales");
        if (!a || a->type != REEL_ATTR_FLOATS)
            NN_FAIL(error, REEL_EINVAL, n, "scales attribute is required");
        attr_scales = a->floats;
        nattr = a->n;
    }
    int64_t ns = attr_scales ? nattr : t_scales ? reel_tensor_count(t_scales->rank, t_scales->shape) : 0;
    int64_t nz = t_sizes ? reel_tensor_count(t_sizes->rank, t_sizes->shape) : 0;
    if (ns > 0) {
        if (ns != naxes)
            NN_FAIL(error, REEL_EINVAL, n, "%" G_GINT64_FORMAT " scales for %d axes", ns, naxes);
        for (int i = 0; i < naxes; i++) {
            int a = axes[i];
            double s = attr_scales ? attr_scales[i] : as_double(t_scales, i);
            if (!(s > 0))
                NN_FAIL(error, REEL_EINVAL, n, "scales must be positive");
            r->scale[a] = (float)s;
            if (in[a] >= 0) {
                double len = crop ? in[a] * (r->roi_end[a] - r->roi_start[a]) : (double)in[a];
                double out = floor(len * (double)(float)s);
                if (!(out >= 0 && out < 0x1p62)) // NaN too; the cast would be undefined
                    NN_FAIL(error, REEL_EINVAL, n, "scales give an output size out of range");
                r->out[a] = (int64_t)out;
            } else {
                r->out[a] = REEL_DIM_UNKNOWN;
            }
        }
        *known = true;
    } else if (nz > 0) {
        if (nz != naxes)
            NN_FAIL(error, REEL_EINVAL, n, "%" G_GINT64_FORMAT " sizes for %d axes", nz, naxes);
        if (t_sizes->dtype != REEL_DTYPE_INT64)
            NN_FAIL(error, REEL_EINVAL, n, "sizes must be int64");
        const int64_t *sz = t_sizes->data;
        const char *policy = reel_ir_attr_string(n, "keep_aspect_ratio_policy", "stretch");
        bool larger = strcmp(policy, "not_larger") == 0, smaller = strcmp(policy, "not_smaller") == 0;
        if (!larger && !smaller && strcmp(policy, "stretch") != 0)
            NN_FAIL(error, REEL_EINVAL, n, "keep_aspect_ratio_policy %s is not valid", policy);
        double common = larger ? INFINITY : 0;
        for (int i = 0; i < naxes; i++) {
            int a = axes[i];
            double s = in[a] > 0 ? (double)sz[i] / (double)in[a] : 1;
            common = larger ? fmin(common, s) : fmax(common, s);
        }
        for (int i = 0; i < naxes; i++) {
            int a = axes[i];
            if (sz[i] < 0)
                NN_FAIL(error, REEL_EINVAL, n, "sizes must not be negative");
            if (in[a] < 0) {
                r->out[a] = REEL_DIM_UNKNOWN;
            } else if (larger || smaller) {
                r->scale[a] = common;
                double out = floor(common * (double)in[a] + 0.5);
                if (!(out >= 0 && out < 0x1p62))
                    NN_FAIL(error, REEL_EINVAL, n, "sizes give an output size out of range");
                r->out[a] = (int64_t)out;
            } else {
                r->out[a] = sz[i];
                r->scale[a] = in[a] > 0 ? (double)sz[i] / (double)in[a] : 1;
            }
        }
        *known = true;
    }
    return 0;
}

static int resize_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input X");
    // Nearest also picks 8-bit values as they are (folded QDQ models).
    bool q8 = x->dtype == REEL_DTYPE_UINT8 || x->dtype == REEL_DTYPE_INT8;
    if (q8 && (strcmp(reel_ir_attr_string(n, "mode", "nearest"), "nearest") != 0
               || strcmp(reel_ir_attr_string(n, "coordinate_transformation_mode", ""), "tf_crop_and_resize") == 0))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%s input needs mode nearest (without tf_crop_and_resize)",
                x->dtype == REEL_DTYPE_UINT8 ? "a uint8" : "an int8");
    if (x->dtype != REEL_DTYPE_FLOAT32 && !q8)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported (and uint8, int8 with nearest)");
    int iroi, iscales, isizes;
    input_slots(n, g->opset, &iroi, &iscales, &isizes);
    reel_ir_value *y = reel_op_output(g, n, 0);
    if (x->rank < 0) {
        y->dtype = x->dtype;
        y->rank = -1;
        return 0;
    }
    const reel_tensor *roi = iroi >= 0 ? nn_const(g, n, iroi) : NULL;
    const reel_tensor *sc = iscales >= 0 ? nn_const(g, n, iscales) : NULL;
    const reel_tensor *sz = isizes >= 0 ? nn_const(g, n, isizes) : NULL;
    rgeom r;
    bool known;
    int rc = rgeom_init(n, g->opset, x->rank, x->dims, roi, sc, sz, &r, &known, error);
    if (rc)
        return rc;
    // Scales or sizes computed at run time: the executor infers again.
    if (!known && !(is_upsample(n) && g->opset < 9))
        for (int i = 0; i < r.rank; i++)
            r.out[i] = REEL_DIM_UNKNOWN;
    nn_set(y, x->dtype, x->rank, r.out);
    return 0;
}

// Source coordinate of output index o along one axis.
static double source_coord(const rgeom *r, int a, int64_t o)
{
    // length_resized is in * scale, not the rounded output size (they differ
    // when scales, not sizes, were given): what ONNX's reference does.
    double s = r->scale[a], in = (double)r->in[a], out = in * s;
    const char *c = r->ctm;
    if (strcmp(c, "half_pixel") == 0)
        return (o + 0.5) / s - 0.5;
    if (strcmp(c, "half_pixel_symmetric") == 0) {
        double adj = (double)r->out[a] / (s * in), center = in / 2;
        return center * (1 - adj) + (o + 0.5) / s - 0.5;
    }
    if (strcmp(c, "pytorch_half_pixel") == 0)
        return out > 1 ? (o + 0.5) / s - 0.5 : 0;
    if (strcmp(c, "align_corners") == 0)
        return out == 1 ? 0 : o * (in - 1) / (out - 1);
    if (strcmp(c, "tf_half_pixel_for_nn") == 0)
        return (o + 0.5) / s;
    if (strcmp(c, "tf_crop_and_resize") == 0) {
        double st = r->roi_start[a], en = r->roi_end[a];
        return out > 1 ? st * (in - 1) + o * (en - st) * (in - 1) / (out - 1) : 0.5 * (st + en) * (in - 1);
    }
    return o / s; // asymmetric
}

static int64_t clampi(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

// Taps (index, weight) of every output index along axis a; 4 per output.
// outside[o]: the coordinate lies outside the input (tf_crop_and_resize).
static void axis_taps(const rgeom *r, int a, int64_t *idx, float *wt, bool *outside)
{
    int64_t n = r->in[a];
    for (int64_t o = 0; o < r->out[a]; o++) {
        double x = source_coord(r, a, o);
        int64_t *ix = idx + 4 * o;
        float *w = wt + 4 * o;
        memset(w, 0, 4 * sizeof *w);
        for (int t = 0; t < 4; t++)
            ix[t] = 0;
        outside[o] = x < 0 || x > n - 1;
        if (r->mode == M_NEAREST) {
            double f = floor(x), frac = x - f;
            int64_t v;
            if (strcmp(r->nearest, "floor") == 0)
                v = (int64_t)f;
            else if (strcmp(r->nearest, "ceil") == 0)
                v = (int64_t)ceil(x);
            else if (frac == 0.5)
                v = (int64_t)f + (strcmp(r->nearest, "round_prefer_ceil") == 0);
            else
                v = (int64_t)floor(x + 0.5);
            ix[0] = clampi(v, n);
            w[0] = 1;
        } else if (r->mode == M_LINEAR) {
            double f = floor(x), t = x - f;
            ix[0] = clampi((int64_t)f, n);
            ix[1] = clampi((int64_t)f + 1, n);
            w[0] = (float)(1 - t);
            w[1] = (float)t;
        } else {
            double f = floor(x), t = x - f, A = r->cubic_a, c[4];
            c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
            c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
            c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
            c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
            double sum = 0;
            for (int k = 0; k < 4; k++) {
                int64_t j = (int64_t)f - 1 + k;
                if (r->exclude_outside && (j < 0 || j >= n))
                    c[k] = 0;
                sum += c[k];
                ix[k] = clampi(j, n);
            }
            for (int k = 0; k < 4; k++)
                w[k] = (float)(r->exclude_outside && sum != 0 ? c[k] / sum : c[k]);
        }
    }
}

static bool axis_identity(const rgeom *r, int a)
{
    if (r->in[a] != r->out[a])
        return false;
    if (strcmp(r->ctm, "tf_crop_and_resize") == 0)
        return false; // the roi may shift it, and extrapolation needs the taps
    return r->scale[a] == 1;
}

static int run_geom(const reel_ir_node *n, reel_tensor *const *in, rgeom *r)
{
    // Upsample and Resize carry the opset in which attributes changed only
    // through their input count; a 2-input Resize is opset 10.
    int opset = is_upsample(n) ? (n->n_inputs > 1 ? 9 : 7) : (n->n_inputs == 2 ? 10 : 11);
    int iroi, iscales, isizes;
    input_slots(n, opset, &iroi, &iscales, &isizes);
    const reel_tensor *roi = iroi >= 0 && iroi < n->n_inputs ? in[iroi] : NULL;
    const reel_tensor *sc = iscales >= 0 && iscales < n->n_inputs ? in[iscales] : NULL;
    const reel_tensor *sz = isizes >= 0 && isizes < n->n_inputs ? in[isizes] : NULL;
    bool known;
    if (rgeom_init(n, opset, in[0]->rank, in[0]->shape, roi, sc, sz, r, &known, NULL) || !known)
        return REEL_EINVAL;
    return 0;
}

static size_t resize_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    rgeom r;
    if (run_geom(n, in, &r))
        return 0;
    int64_t cur[REEL_TENSOR_MAX_RANK], peak = 0;
    memcpy(cur, r.in, sizeof cur);
    for (int a = 0; a < r.rank; a++) {
        cur[a] = r.out[a];
        int64_t c = reel_tensor_count(r.rank, cur);
        peak = c > peak ? c : peak;
    }
    return 2 * (size_t)peak * sizeof(float);
}

// Nearest on an 8-bit tensor: each output byte is the input byte its
// per-axis nearest indices pick.
static void resize_nearest_q8(const rgeom *r, const uint8_t *x, uint8_t *y)
{
    int rank = r->rank, last = rank - 1;
    int64_t *pick[REEL_TENSOR_MAX_RANK], st[REEL_TENSOR_MAX_RANK], c[REEL_TENSOR_MAX_RANK] = { 0 }, s = 1;
    for (int a = rank - 1; a >= 0; a--) {
        int64_t no = r->out[a] ? r->out[a] : 1;
        int64_t *idx = g_new(int64_t, 4 * no);
        float *wt = g_new(float, 4 * no);
        bool *outside = g_new(bool, no);
        axis_taps(r, a, idx, wt, outside);
        pick[a] = g_new(int64_t, no);
        for (int64_t o = 0; o < no; o++)
            pick[a][o] = idx[4 * o];
        g_free(idx);
        g_free(wt);
        g_free(outside);
        st[a] = s;
        s *= r->in[a];
    }
    for (;;) {
        int64_t off = 0;
        for (int a = 0; a < last; a++)
            off += pick[a][c[a]] * st[a];
        for (int64_t o = 0; o < r->out[last]; o++)
            *y++ = x[off + pick[last][o]];
        int a = last - 1;
        for (; a >= 0; a--) {
            if (++c[a] < r->out[a])
                break;
            c[a] = 0;
        }
        if (a < 0)
            break;
    }
    for (int a = 0; a < rank; a++)
        g_free(pick[a]);
}

// Nearest over the last two axes alone (an FPN's 2x upsample): each output
// row gathers its columns from one input row, the planes (the leading
// axes, unchanged) split over the workers.
typedef struct nearest2d {
    const float *x;
    float *y;
    int64_t planes, per_task, ih, iw, oh, ow;
    int64_t *rows, *cols; // taps of the two axes, as axis_taps gives them (4 per output)
} nearest2d;

static void nearest2d_task(void *arg, int task, int worker)
{
    (void)worker;
    const nearest2d *g = arg;
    int64_t p1 = MIN(g->planes, (task + 1) * g->per_task);
    for (int64_t p = task * g->per_task; p < p1; p++) {
        const float *x = g->x + p * g->ih * g->iw;
        float *y = g->y + p * g->oh * g->ow;
        for (int64_t j = 0; j < g->oh; j++) {
            const float *row = x + g->rows[4 * j] * g->iw;
            float *d = y + j * g->ow;
            for (int64_t k = 0; k < g->ow; k++)
                d[k] = row[g->cols[4 * k]];
        }
    }
}

static void resize_nearest2d(const rgeom *r, const float *x, float *y, const reel_exec_ctx *ctx)
{
    int h = r->rank - 2, w = r->rank - 1;
    nearest2d g = { x, y, reel_tensor_count(h, r->out), 0, r->in[h], r->in[w], r->out[h], r->out[w],
                    g_new(int64_t, 4 * r->out[h]), g_new(int64_t, 4 * r->out[w]) };
    float *wt = g_new(float, 4 * MAX(r->out[h], r->out[w]));
    bool *outside = g_new(bool, MAX(r->out[h], r->out[w]));
    // An axis the other passes leave as it is (axis_identity) maps to itself.
    for (int a = h; a <= w; a++) {
        int64_t *taps = a == h ? g.rows : g.cols;
        if (axis_identity(r, a))
            for (int64_t j = 0; j < r->out[a]; j++)
                taps[4 * j] = j;
        else
            axis_taps(r, a, taps, wt, outside);
    }
    int tasks = (int)MIN(g.planes, ctx->threads > 1 ? ctx->threads : 1);
    g.per_task = (g.planes + tasks - 1) / tasks;
    nn_parallel(ctx, tasks, nearest2d_task, &g);
    g_free(g.rows);
    g_free(g.cols);
    g_free(wt);
    g_free(outside);
}

static int resize_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    rgeom r;
    if (run_geom(n, in, &r))
        return REEL_EINVAL;
    if (in[0]->dtype == REEL_DTYPE_UINT8 || in[0]->dtype == REEL_DTYPE_INT8) {
        if (r.mode != M_NEAREST || r.rank < 1)
            return REEL_EINVAL;
        if (reel_tensor_count(r.rank, r.out) > 0)
            resize_nearest_q8(&r, in[0]->data, out[0]->data);
        return 0;
    }
    int64_t cur[REEL_TENSOR_MAX_RANK];
    memcpy(cur, r.in, sizeof cur);
    int64_t total_out = reel_tensor_count(r.rank, r.out);
    if (total_out == 0)
        return 0;
    int last = -1;
    for (int a = 0; a < r.rank; a++)
        if (!axis_identity(&r, a))
            last = a;
    if (last < 0) {
        memcpy(out[0]->data, in[0]->data, out[0]->nbytes);
        return 0;
    }
    bool crop = strcmp(r.ctm, "tf_crop_and_resize") == 0;
    bool leading_kept = r.rank >= 2;
    for (int a = 0; a < r.rank - 2 && leading_kept; a++)
        leading_kept = axis_identity(&r, a);
    if (r.mode == M_NEAREST && !crop && leading_kept) {
        resize_nearest2d(&r, in[0]->data, out[0]->data, ctx);
        return 0;
    }
    float *bufs[2] = { ctx->scratch, (float *)ctx->scratch + ctx->scratch_size / sizeof(float) / 2 };
    const float *src = in[0]->data;
    int which = 0;
    bool *outside_any[REEL_TENSOR_MAX_RANK] = { 0 };
    for (int a = 0; a <= last; a++) {
        if (axis_identity(&r, a))
            continue;
        int64_t no = r.out[a], ni = r.in[a];
        int64_t outer = reel_tensor_count(a, cur), inner = reel_tensor_count(r.rank - a - 1, cur + a + 1);
        int64_t *idx = g_new(int64_t, 4 * (no ? no : 1));
        float *wt = g_new(float, 4 * (no ? no : 1));
        bool *outside = g_new0(bool, no ? no : 1);
        axis_taps(&r, a, idx, wt, outside);
        float *dst = a == last ? (float *)out[0]->data : bufs[which];
        int ntap = r.mode == M_NEAREST ? 1 : r.mode == M_LINEAR ? 2 : 4;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < no; j++) {
                float *d = dst + (o * no + j) * inner;
                const float *s0 = src + (o * ni + idx[4 * j]) * inner;
                float w0 = wt[4 * j];
                for (int64_t k = 0; k < inner; k++)
                    d[k] = w0 * s0[k];
                for (int t = 1; t < ntap; t++) {
                    const float *st = src + (o * ni + idx[4 * j + t]) * inner;
                    float wv = wt[4 * j + t];
                    for (int64_t k = 0; k < inner; k++)
                        d[k] += wv * st[k];
                }
            }
        g_free(idx);
        g_free(wt);
        if (crop)
            outside_any[a] = outside;
        else
            g_free(outside);
        cur[a] = no;
        src = dst;
        which ^= 1;
    }
    if (crop) {
        // Outputs whose source lies outside the input on any axis.
        float *y = out[0]->data;
        float ev = (float)r.extrapolation;
        for (int64_t i = 0; i < total_out; i++) {
            int64_t rem = i;
            bool o = false;
            for (int a = r.rank - 1; a >= 0; a--) {
                int64_t c = rem % r.out[a];
                rem /= r.out[a];
                o |= outside_any[a] && outside_any[a][c];
            }
            if (o)
                y[i] = ev;
        }
        for (int a = 0; a < r.rank; a++)
            g_free(outside_any[a]);
    }
    return 0;
}

const reel_op nn_op_resize = { "Resize", resize_infer, resize_scratch, resize_run };
const reel_op nn_op_upsample = { "Upsample", resize_infer, resize_scratch, resize_run };

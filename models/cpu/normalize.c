// LayerNormalization, GroupNormalization, InstanceNormalization, MVN, LRN.
// float32; statistics accumulate in double, one pass per row.
#include "models/cpu/nn.h"

#define R REEL_TENSOR_MAX_RANK

static int need_f32_inputs(reel_ir_graph *g, reel_ir_node *n, int first, int count, GError **error)
{
    for (int i = first; i < first + count && i < n->n_inputs; i++) {
        reel_ir_value *v = reel_op_input(g, n, i);
        if (v && v->dtype != REEL_DTYPE_FLOAT32)
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %d: only float32 tensors are supported", i);
    }
    return 0;
}

#define TARGETS __attribute__((target_clones("avx512f", "avx2,fma", "default")))

// Mean and 1/sqrt(var + eps) of x[0..len) in one pass. The sums are in
// double, which keeps E[x^2] - E[x]^2 accurate for the row lengths models
// use, over independent lanes the vectorizer keeps in registers (a single
// sum would be one long chain of dependent adds).
TARGETS static void row_stats(const float *restrict x, int64_t len, float eps, float *mean, float *inv_std)
{
    enum { LANES = 16 };
    double s[LANES] = { 0 }, ss[LANES] = { 0 };
    int64_t i = 0;
    for (; i + LANES <= len; i += LANES)
        for (int k = 0; k < LANES; k++) {
            double v = x[i + k];
            s[k] += v;
            ss[k] += v * v;
        }
    for (int k = 0; i < len; i++, k++) {
        double v = x[i];
        s[k] += v;
        ss[k] += v * v;
    }
    double sum = 0.0, sumsq = 0.0;
    for (int k = 0; k < LANES; k++)
        sum += s[k], sumsq += ss[k];
    double m = len ? sum / (double)len : 0.0, var = len ? sumsq / (double)len - m * m : 0.0;
    *mean = (float)m;
    *inv_std = (float)(1.0 / sqrt((var > 0.0 ? var : 0.0) + (double)eps));
}

// Rows per task so that each task has a few tens of thousands of elements
// and every worker gets several tasks.
static int64_t rows_per_task(const reel_exec_ctx *ctx, int64_t rows, int64_t row_len)
{
    int threads = ctx->workers ? ctx->threads : 1;
    int64_t per = MAX(1, rows / (4 * (int64_t)threads)), least = MAX(1, 16384 / MAX(1, row_len));
    return MIN(rows, MAX(per, least));
}

// ---- LayerNormalization -----------------------------------------------------

// Whether a tensor of `rank` dims broadcasts to the normalized dims
// dims[0..nr) (aligned on the right, each dim 1 or equal).
static bool broadcasts_to(int rank, const int64_t *shape, int nr, const int64_t *dims)
{
    if (rank > nr)
        return false;
    for (int i = 0; i < rank; i++) {
        int64_t s = shape[rank - 1 - i], d = dims[nr - 1 - i];
        if (s != 1 && s >= 0 && d >= 0 && s != d)
            return false;
    }
    return true;
}

static int ln_axis(const reel_ir_node *n, int rank, int *axis)
{
    int64_t a = reel_ir_attr_int(n, "axis", -1);
    if (a < -rank || a >= rank)
        return -1;
    *axis = (int)(a < 0 ? a + rank : a);
    return 0;
}

static int ln_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *scale = reel_op_input(g, n, 1), *bias = reel_op_input(g, n, 2);
    if (!x || !scale)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X and Scale");
    int err = need_f32_inputs(g, n, 0, 3, error);
    if (err)
        return err;
    int64_t stash = reel_ir_attr_int(n, "stash_type", 1);
    if (stash != 1 && stash != 11) // float or double: both computed with double sums
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "stash_type %" G_GINT64_FORMAT " is not supported", stash);
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, x->dims);
    if (x->rank < 0) {
        nn_set(reel_op_output(g, n, 1), REEL_DTYPE_FLOAT32, -1, NULL);
        nn_set(reel_op_output(g, n, 2), REEL_DTYPE_FLOAT32, -1, NULL);
        return 0;
    }
    int axis;
    if (x->rank == 0 || ln_axis(n, x->rank, &axis))
        NN_FAIL(error, REEL_EINVAL, n, "axis is out of range for rank %d", x->rank);
    int nr = x->rank - axis;
    for (int i = 1; i < 3; i++) {
        reel_ir_value *v = i == 1 ? scale : bias;
        if (v && v->rank >= 0 && !broadcasts_to(v->rank, v->dims, nr, x->dims + axis))
            NN_FAIL(error, REEL_EINVAL, n, "%s does not broadcast to the normalized dims", i == 1 ? "Scale" : "B");
    }
    // Mean and InvStdDev: X's dims before axis, 1 from there on.
    int64_t sd[R];
    for (int d = 0; d < x->rank; d++)
        sd[d] = d < axis ? x->dims[d] : 1;
    nn_set(reel_op_output(g, n, 1), REEL_DTYPE_FLOAT32, x->rank, sd);
    nn_set(reel_op_output(g, n, 2), REEL_DTYPE_FLOAT32, x->rank, sd);
    return 0;
}

// Elements of a Scale or B that must be expanded to the whole normalized
// shape (one that does not already have its element count); 0 otherwise.
static int64_t ln_expanded_len(const reel_tensor *t, int64_t len)
{
    return t && reel_tensor_count(t->rank, t->shape) != len ? len : 0;
}

static size_t ln_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    int axis;
    if (ln_axis(n, in[0]->rank, &axis))
        return 0;
    int64_t len = reel_tensor_count(in[0]->rank - axis, in[0]->shape + axis);
    int64_t total = ln_expanded_len(in[1], len) + ln_expanded_len(n->n_inputs > 2 ? in[2] : NULL, len);
    return sizeof(float) * (size_t)total;
}

// t broadcast (numpy rules, aligned right) to dims[0..nr) into dst.
static void broadcast_into(const reel_tensor *t, int nr, const int64_t *dims, float *dst)
{
    int64_t st[R], s = 1, idx[R] = { 0 };
    for (int i = nr - 1; i >= 0; i--) {
        int k = i - (nr - t->rank);
        int64_t size = k >= 0 ? t->shape[k] : 1;
        st[i] = size == 1 ? 0 : s;
        s *= size;
    }
    int64_t total = reel_tensor_count(nr, dims), off = 0;
    const float *src = t->data;
    for (int64_t e = 0; e < total; e++) {
        dst[e] = src[off];
        for (int d = nr - 1; d >= 0; d--) {
            off += st[d];
            if (++idx[d] < dims[d])
                break;
            off -= st[d] * dims[d];
            idx[d] = 0;
        }
    }
}

typedef struct ln_job {
    const float *X, *scale, *bias; // bias may be NULL
    float *Y, *mean, *inv_std;     // mean, inv_std may be NULL
    int64_t rows, len, per_task;
    float eps;
} ln_job;

// y = (x - m) * inv * scale + bias (bias may be NULL).
TARGETS static void ln_apply(const float *restrict x, const float *restrict scale, const float *restrict bias,
                             float *restrict y, int64_t len, float m, float inv)
{
    if (bias)
        for (int64_t i = 0; i < len; i++)
            y[i] = (x[i] - m) * inv * scale[i] + bias[i];
    else
        for (int64_t i = 0; i < len; i++)
            y[i] = (x[i] - m) * inv * scale[i];
}

static void ln_task(void *arg, int task, int worker)
{
    (void)worker;
    const ln_job *j = arg;
    int64_t r0 = task * j->per_task, r1 = MIN(j->rows, r0 + j->per_task);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = j->X + r * j->len, *sc = j->scale, *b = j->bias;
        float *y = j->Y + r * j->len;
        float m, inv;
        row_stats(x, j->len, j->eps, &m, &inv);
        ln_apply(x, sc, b, y, j->len, m, inv);
        if (j->mean)
            j->mean[r] = m;
        if (j->inv_std)
            j->inv_std[r] = inv;
    }
}

static int ln_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0], *scale = in[1], *bias = n->n_inputs > 2 ? in[2] : NULL;
    int axis;
    if (ln_axis(n, x->rank, &axis))
        return REEL_EINVAL;
    int nr = x->rank - axis;
    if (!broadcasts_to(scale->rank, scale->shape, nr, x->shape + axis) ||
        (bias && !broadcasts_to(bias->rank, bias->shape, nr, x->shape + axis)))
        return REEL_EINVAL;
    ln_job j = {
        .X = x->data, .scale = scale->data, .bias = bias ? bias->data : NULL, .Y = out[0]->data,
        .mean = n->n_outputs > 1 && out[1] ? out[1]->data : NULL,
        .inv_std = n->n_outputs > 2 && out[2] ? out[2]->data : NULL,
        .rows = reel_tensor_count(axis, x->shape), .len = reel_tensor_count(nr, x->shape + axis),
        .eps = reel_ir_attr_float(n, "epsilon", 1e-5f),
    };
    float *expanded = ctx->scratch;
    if (ln_expanded_len(scale, j.len)) {
        broadcast_into(scale, nr, x->shape + axis, expanded);
        j.scale = expanded;
        expanded += j.len;
    }
    if (ln_expanded_len(bias, j.len)) {
        broadcast_into(bias, nr, x->shape + axis, expanded);
        j.bias = expanded;
    }
    if (j.rows == 0)
        return 0;
    j.per_task = rows_per_task(ctx, j.rows, j.len);
    nn_parallel(ctx, (int)((j.rows + j.per_task - 1) / j.per_task), ln_task, &j);
    return 0;
}

static const reel_op op_layer_norm = { "LayerNormalization", ln_infer, ln_scratch, ln_run };

// ---- GroupNormalization, InstanceNormalization --------------------------------

// Both normalize groups of whole channels of an (N, C, ...) input, each
// group contiguous, then apply a per-channel (or, GroupNormalization before
// opset 21, per-group) scale and bias.
typedef struct group_job {
    const float *X, *scale, *bias;
    float *Y;
    int64_t groups, channels_per_group, plane, per_task; // groups: N * G
    int64_t G;
    bool per_group_affine; // scale/bias indexed by group, not by channel
    float eps;
} group_job;

static void group_task(void *arg, int task, int worker)
{
    (void)worker;
    const group_job *j = arg;
    int64_t g0 = task * j->per_task, g1 = MIN(j->groups, g0 + j->per_task), len = j->channels_per_group * j->plane;
    for (int64_t gi = g0; gi < g1; gi++) {
        const float *x = j->X + gi * len;
        float *y = j->Y + gi * len;
        float m, inv;
        row_stats(x, len, j->eps, &m, &inv);
        int64_t g = gi % j->G;
        for (int64_t k = 0; k < j->channels_per_group; k++) {
            int64_t c = j->per_group_affine ? g : g * j->channels_per_group + k;
            float a = inv * j->scale[c], off = j->bias[c] - m * a;
            const float *restrict xp = x + k * j->plane;
            float *restrict yp = y + k * j->plane;
            for (int64_t i = 0; i < j->plane; i++)
                yp[i] = xp[i] * a + off;
        }
    }
}

static int group_run_common(const reel_tensor *x, const reel_tensor *scale, const reel_tensor *bias, float *Y,
                            int64_t G, float eps, const reel_exec_ctx *ctx)
{
    int64_t N = x->shape[0], C = x->shape[1], P = reel_tensor_count(x->rank - 2, x->shape + 2);
    int64_t ns = reel_tensor_count(scale->rank, scale->shape), nb = reel_tensor_count(bias->rank, bias->shape);
    if (G <= 0 || C % G || ns != nb || (ns != C && ns != G))
        return REEL_EINVAL;
    group_job j = {
        .X = x->data, .scale = scale->data, .bias = bias->data, .Y = Y, .groups = N * G,
        .channels_per_group = C / G, .plane = P, .G = G, .per_group_affine = ns != C, .eps = eps,
    };
    if (j.groups == 0)
        return 0;
    j.per_task = rows_per_task(ctx, j.groups, j.channels_per_group * P);
    nn_parallel(ctx, (int)((j.groups + j.per_task - 1) / j.per_task), group_task, &j);
    return 0;
}

// X (N, C, ...), scale and bias vectors of `want` elements (-1: unknown yet).
static int group_infer_common(reel_ir_graph *g, reel_ir_node *n, int64_t want, const char *what, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x || !reel_op_input(g, n, 1) || !reel_op_input(g, n, 2))
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X, scale and B");
    int err = need_f32_inputs(g, n, 0, 3, error);
    if (err)
        return err;
    if (x->rank >= 0 && x->rank < 2)
        NN_FAIL(error, REEL_EINVAL, n, "input rank must be at least 2");
    for (int i = 1; i < 3; i++) {
        reel_ir_value *v = reel_op_input(g, n, i);
        if (v->rank >= 0 && (v->rank != 1 || (want >= 0 && v->dims[0] >= 0 && v->dims[0] != want)))
            NN_FAIL(error, REEL_EINVAL, n, "scale and B must be vectors of %s", what);
    }
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, x->dims);
    return 0;
}

static int instance_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    return group_infer_common(g, n, x && x->rank >= 2 ? x->dims[1] : -1, "the channel count", error);
}

static int instance_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    return group_run_common(in[0], in[1], in[2], out[0]->data, in[0]->shape[1],
                            reel_ir_attr_float(n, "epsilon", 1e-5f), ctx);
}

static const reel_op op_instance_norm = { "InstanceNormalization", instance_infer, NULL, instance_run };

// Opset 18 scales and shifts per group, opset 21 per channel.
static int groupnorm_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    const reel_ir_attr *ng = reel_ir_attr_find(n, "num_groups");
    if (!ng || ng->type != REEL_ATTR_INT || ng->i <= 0)
        NN_FAIL(error, REEL_EINVAL, n, "needs a positive num_groups");
    int64_t stash = reel_ir_attr_int(n, "stash_type", 1);
    if (stash != 1 && stash != 11)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "stash_type %" G_GINT64_FORMAT " is not supported", stash);
    reel_ir_value *x = reel_op_input(g, n, 0);
    int64_t C = x && x->rank >= 2 ? x->dims[1] : -1;
    if (C >= 0 && C % ng->i)
        NN_FAIL(error, REEL_EINVAL, n, "num_groups %" G_GINT64_FORMAT " does not divide the %" G_GINT64_FORMAT
                " channels", ng->i, C);
    if (g->opset >= 21)
        return group_infer_common(g, n, C, "the channel count", error);
    return group_infer_common(g, n, ng->i, "num_groups elements", error);
}

static int groupnorm_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                         const reel_exec_ctx *ctx)
{
    int64_t G = reel_ir_attr_int(n, "num_groups", 0);
    int64_t ns = reel_tensor_count(in[1]->rank, in[1]->shape);
    if (ns != (ctx->opset >= 21 ? in[0]->shape[1] : G))
        return REEL_EINVAL;
    return group_run_common(in[0], in[1], in[2], out[0]->data, G, reel_ir_attr_float(n, "epsilon", 1e-5f), ctx);
}

static const reel_op op_group_norm = { "GroupNormalization", groupnorm_infer, NULL, groupnorm_run };

// ---- MeanVarianceNormalization ----------------------------------------------

// (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9) over `axes` (default 0, 2, 3),
// ONNX's function body.
static int mvn_axes(const reel_ir_node *n, int rank, bool *mask)
{
    static const int64_t def[] = { 0, 2, 3 };
    int na;
    const int64_t *axes = reel_ir_attr_ints(n, "axes", &na);
    if (!reel_ir_attr_find(n, "axes"))
        axes = def, na = 3;
    for (int d = 0; d < rank; d++)
        mask[d] = false;
    for (int i = 0; i < na; i++) {
        if (axes[i] < -rank || axes[i] >= rank)
            return -1;
        mask[axes[i] < 0 ? axes[i] + rank : axes[i]] = true;
    }
    return 0;
}

static int mvn_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input X");
    int err = need_f32_inputs(g, n, 0, 1, error);
    if (err)
        return err;
    bool mask[R];
    if (x->rank >= 0 && mvn_axes(n, x->rank, mask))
        NN_FAIL(error, REEL_EINVAL, n, "an axis is out of range for rank %d", x->rank);
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, x->dims);
    return 0;
}

// Strides into the kept (unreduced) elements per input dim, 0 where reduced;
// returns the kept count.
static int64_t kept_strides(int rank, const int64_t *shape, const bool *mask, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = mask[d] ? 0 : s;
        if (!mask[d])
            s *= shape[d];
    }
    return s;
}

// Calls the body with `off` the kept-element offset of every element e of
// the input, in order.
#define FOR_EACH_KEPT(rank, shape, st, total, e, off, body)           \
    do {                                                              \
        int64_t idx_[R] = { 0 }, off = 0;                             \
        for (int64_t e = 0; e < (total); e++) {                       \
            body;                                                     \
            for (int d_ = (rank) - 1; d_ >= 0; d_--) {                \
                off += (st)[d_];                                      \
                if (++idx_[d_] < (shape)[d_])                         \
                    break;                                            \
                off -= (st)[d_] * (shape)[d_];                        \
                idx_[d_] = 0;                                         \
            }                                                         \
        }                                                             \
    } while (0)

static size_t mvn_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    bool mask[R];
    int64_t st[R];
    if (mvn_axes(n, in[0]->rank, mask))
        return 0;
    return 2 * sizeof(double) * (size_t)kept_strides(in[0]->rank, in[0]->shape, mask, st);
}

static int mvn_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0];
    bool mask[R];
    int64_t st[R];
    if (mvn_axes(n, x->rank, mask))
        return REEL_EINVAL;
    int64_t kept = kept_strides(x->rank, x->shape, mask, st), total = reel_tensor_count(x->rank, x->shape);
    if (total == 0)
        return 0;
    double *sum = ctx->scratch, *sumsq = sum + kept, count = (double)(total / kept);
    memset(sum, 0, 2 * sizeof(double) * (size_t)kept);
    const float *X = x->data;
    float *Y = out[0]->data;
    FOR_EACH_KEPT(x->rank, x->shape, st, total, e, off, {
        sum[off] += X[e];
        sumsq[off] += (double)X[e] * X[e];
    });
    // sum becomes the mean, sumsq the divisor.
    for (int64_t k = 0; k < kept; k++) {
        double m = sum[k] / count, var = sumsq[k] / count - m * m;
        sum[k] = m;
        sumsq[k] = sqrt(var > 0.0 ? var : 0.0) + 1e-9;
    }
    FOR_EACH_KEPT(x->rank, x->shape, st, total, e, off, { Y[e] = (float)((X[e] - sum[off]) / sumsq[off]); });
    return 0;
}

static const reel_op op_mvn = { "MeanVarianceNormalization", mvn_infer, mvn_scratch, mvn_run };

// ---- LRN ----------------------------------------------------------------------

// y = x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)])^beta.
static int lrn_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input X");
    int err = need_f32_inputs(g, n, 0, 1, error);
    if (err)
        return err;
    const reel_ir_attr *size = reel_ir_attr_find(n, "size");
    if (!size || size->type != REEL_ATTR_INT || size->i <= 0)
        NN_FAIL(error, REEL_EINVAL, n, "needs a positive size");
    if (x->rank >= 0 && x->rank < 2)
        NN_FAIL(error, REEL_EINVAL, n, "input rank must be at least 2");
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, x->dims);
    return 0;
}

typedef struct lrn_job {
    const float *X;
    float *Y;
    int64_t C, P, lo, hi; // the window is [c - lo, c + hi]
    float alpha_over_size, beta, bias;
} lrn_job;

// One (n, c) plane per task: the squares summed plane by plane into y
// (contiguous), then y turned into the output.
static void lrn_task(void *arg, int task, int worker)
{
    (void)worker;
    const lrn_job *j = arg;
    int64_t c = task % j->C, base = task - c;
    int64_t c0 = MAX(0, c - j->lo), c1 = MIN(j->C - 1, c + j->hi);
    const float *restrict x = j->X + (int64_t)task * j->P;
    float *restrict y = j->Y + (int64_t)task * j->P;
    memset(y, 0, sizeof(float) * (size_t)j->P);
    for (int64_t k = c0; k <= c1; k++) {
        const float *restrict xk = j->X + (base + k) * j->P;
        for (int64_t i = 0; i < j->P; i++)
            y[i] += xk[i] * xk[i];
    }
    for (int64_t i = 0; i < j->P; i++)
        y[i] = x[i] / powf(j->bias + j->alpha_over_size * y[i], j->beta);
}

static int lrn_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0];
    int64_t size = reel_ir_attr_int(n, "size", 0);
    if (size <= 0)
        return REEL_EINVAL;
    lrn_job j = {
        .X = x->data, .Y = out[0]->data, .C = x->shape[1], .P = reel_tensor_count(x->rank - 2, x->shape + 2),
        .lo = (size - 1) / 2, .hi = size / 2, // floor and ceil of (size - 1) / 2
        .alpha_over_size = reel_ir_attr_float(n, "alpha", 1e-4f) / (float)size,
        .beta = reel_ir_attr_float(n, "beta", 0.75f), .bias = reel_ir_attr_float(n, "bias", 1.0f),
    };
    int64_t planes = x->shape[0] * j.C;
    if (planes == 0 || j.P == 0)
        return 0;
    nn_parallel(ctx, (int)planes, lrn_task, &j);
    return 0;
}

static const reel_op op_lrn = { "LRN", lrn_infer, NULL, lrn_run };

const reel_op *const reel_ops_normalize[] = {
    &op_layer_norm, &op_group_norm, &op_instance_norm, &op_mvn, &op_lrn, NULL,
};

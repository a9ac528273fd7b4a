// Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare:
// float32 and double, int32 and int64 where the result is an integer) and
// Softmax/LogSoftmax (float32).
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "models/cpu/collapse.h"
#include "models/cpu/f32_exp.h"
#include "models/op.h"

#define R REEL_TENSOR_MAX_RANK

static int need_f32(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x || !reel_op_output(g, n, 0))
        return reel_op_fail(error, n, REEL_EINVAL, "needs an input and an output");
    if (x->dtype != REEL_DTYPE_FLOAT32)
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported (float32 only)",
                    reel_dtype_name(x->dtype) ? reel_dtype_name(x->dtype) : "unknown");
    return 0;
}

// ---- reductions -------------------------------------------------------------

enum {
    RED_SUM,
    RED_MEAN,
    RED_MAX,
    RED_MIN,
    RED_PROD,
    RED_L1,
    RED_L2,
    RED_LOG_SUM,
    RED_LOG_SUM_EXP,
    RED_SUM_SQUARE,
};

// The axes as a mask over `rank` dims. Returns 0; 1 when they come from a
// non-constant input; -1 on a bad axis; -2 on a malformed axes input.
// *noop is set when the op is an identity (empty axes, noop_with_empty_axes).
static int axes_from(const reel_ir_node *n, const reel_tensor *t, const int64_t *attr, int na,
                     int rank, bool *mask, bool *noop)
{
    int64_t buf[R * 2];
    const int64_t *axes = attr;
    int c = na;
    if (t) {
        int64_t cnt = reel_tensor_count(t->rank, t->shape);
        if (t->dtype != REEL_DTYPE_INT64 || t->rank > 1 || cnt < 0 || cnt > R * 2)
            return -2;
        memcpy(buf, t->data, sizeof(int64_t) * cnt);
        axes = buf;
        c = (int)cnt;
    }
    *noop = false;
    if (c == 0) {
        if (reel_ir_attr_int(n, "noop_with_empty_axes", 0))
            *noop = true;
        for (int d = 0; d < rank; d++)
            mask[d] = !*noop;
        return 0;
    }
    for (int d = 0; d < rank; d++)
        mask[d] = false;
    for (int i = 0; i < c; i++) {
        int64_t a = axes[i];
        if (a < -rank || a >= rank)
            return -1;
        mask[a < 0 ? a + rank : a] = true;
    }
    return 0;
}

static bool is_int_type(reel_dtype t)
{
    return t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64;
}

// float32 and double for every kind; int32 and int64 for the kinds whose
// result stays an integer (the mean truncated, as ONNX's reference casts it).
static bool reduce_supports(int kind, reel_dtype t)
{
    if (t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64)
        return true;
    return is_int_type(t) && kind != RED_L2 && kind != RED_LOG_SUM && kind != RED_LOG_SUM_EXP;
}

static int infer_reduce(reel_ir_graph *g, reel_ir_node *n, GError **error, int kind)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!x || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs an input and an output");
    if (!reduce_supports(kind, x->dtype))
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported (float32, double%s)",
                            reel_dtype_name(x->dtype) ? reel_dtype_name(x->dtype) : "unknown",
                            reduce_supports(kind, REEL_DTYPE_INT32) ? ", int32, int64" : "");
    bool keep = reel_ir_attr_int(n, "keepdims", 1) != 0;
    reel_ir_value *av = reel_op_input(g, n, 1);
    int na = 0;
    const int64_t *attr = reel_ir_attr_ints(n, "axes", &na);
    if (av && attr)
        return reel_op_fail(error, n, REEL_EINVAL, "axes given both as attribute and input");
    o->dtype = x->dtype;
    if (x->rank < 0 || (av && !av->constant)) {
        o->rank = keep && x->rank >= 0 ? x->rank : -1;
        for (int d = 0; d < o->rank; d++)
            o->dims[d] = REEL_DIM_UNKNOWN;
        return 0;
    }
    bool mask[R], noop;
    int r = axes_from(n, av ? av->constant : NULL, attr, na, x->rank, mask, &noop);
    if (r == -1)
        return reel_op_fail(error, n, REEL_EINVAL, "an axis is out of range for rank %d", x->rank);
    if (r == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "axes must be a 1-D int64 tensor");
    int k = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!mask[d])
            o->dims[k++] = x->dims[d];
        else if (keep)
            o->dims[k++] = 1;
    }
    o->rank = k;
    return 0;
}

// One run of n input elements folded into the output: `along` when the run
// is reduced (into o[0]), else element i folds into o[i]. s: the shift
// LogSumExp subtracts before exp (per output element), NULL otherwise.
typedef void (*fold_fn)(const void *x, void *o, const void *s, int64_t n, bool along);

// Each kind is a map of the element and a combine; a macro stamps them out
// per element type so every loop stays a plain typed loop. Integer sums and
// products run on the unsigned type of the same size: they wrap (as numpy's
// do) rather than overflow; its top bit is the sign for UABS.
#define MAP_ID(v, sh) (v)
#define MAP_ABS(v, sh) ((v) < 0 ? -(v) : (v))
#define MAP_UABS(v, sh) ((v) >> (sizeof(v) * 8 - 1) ? 0 - (v) : (v))
#define MAP_SQ(v, sh) ((v) * (v))
#define MAP_EXP_F32(v, sh) expf((v) - (sh))
#define MAP_EXP_F64(v, sh) exp((v) - (sh))
#define COMB_ADD(a, v) ((a) + (v))
#define COMB_MUL(a, v) ((a) * (v))
// NaN wins, as in ONNX's reference; integers have none.
#define COMB_MAX(a, v) ((v) > (a) || (v) != (v) ? (v) : (a))
#define COMB_MIN(a, v) ((v) < (a) || (v) != (v) ? (v) : (a))
#define COMB_IMAX(a, v) ((v) > (a) ? (v) : (a))
#define COMB_IMIN(a, v) ((v) < (a) ? (v) : (a))

// Along a run the fold keeps LANES partial results, so the loop is not one
// chain of dependent adds and vectorizes; ID is the combine's identity.
#define LANES 8
#define FOLD_FN(name, T, MAP, COMB, ID)                                                \
    static void name(const void *xv, void *ov, const void *sv, int64_t n, bool along) \
    {                                                                                  \
        const T *restrict x = xv;                                                      \
        T *restrict o = ov;                                                            \
        const T *restrict s = sv;                                                      \
        (void)s;                                                                       \
        if (along) {                                                                   \
            T lane[LANES], acc = o[0];                                                 \
            for (int l = 0; l < LANES; l++)                                            \
                lane[l] = ID;                                                          \
            int64_t i = 0;                                                             \
            for (; i + LANES <= n; i += LANES)                                         \
                for (int l = 0; l < LANES; l++)                                        \
                    lane[l] = COMB(lane[l], MAP(x[i + l], s[0]));                      \
            for (; i < n; i++)                                                         \
                acc = COMB(acc, MAP(x[i], s[0]));                                      \
            for (int l = 0; l < LANES; l++)                                            \
                acc = COMB(acc, lane[l]);                                              \
            o[0] = acc;                                                                \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++)                                            \
                o[i] = COMB(o[i], MAP(x[i], s[i]));                                    \
        }                                                                              \
    }

FOLD_FN(sum_f32, float, MAP_ID, COMB_ADD, 0)
FOLD_FN(abs_sum_f32, float, MAP_ABS, COMB_ADD, 0)
FOLD_FN(sq_sum_f32, float, MAP_SQ, COMB_ADD, 0)
FOLD_FN(exp_sum_f32, float, MAP_EXP_F32, COMB_ADD, 0)
FOLD_FN(prod_f32, float, MAP_ID, COMB_MUL, 1)
FOLD_FN(max_f32, float, MAP_ID, COMB_MAX, -INFINITY)
FOLD_FN(min_f32, float, MAP_ID, COMB_MIN, INFINITY)
FOLD_FN(sum_f64, double, MAP_ID, COMB_ADD, 0)
FOLD_FN(abs_sum_f64, double, MAP_ABS, COMB_ADD, 0)
FOLD_FN(sq_sum_f64, double, MAP_SQ, COMB_ADD, 0)
FOLD_FN(exp_sum_f64, double, MAP_EXP_F64, COMB_ADD, 0)
FOLD_FN(prod_f64, double, MAP_ID, COMB_MUL, 1)
FOLD_FN(max_f64, double, MAP_ID, COMB_MAX, -INFINITY)
FOLD_FN(min_f64, double, MAP_ID, COMB_MIN, INFINITY)
FOLD_FN(sum_i32, uint32_t, MAP_ID, COMB_ADD, 0)
FOLD_FN(abs_sum_i32, uint32_t, MAP_UABS, COMB_ADD, 0)
FOLD_FN(sq_sum_i32, uint32_t, MAP_SQ, COMB_ADD, 0)
FOLD_FN(prod_i32, uint32_t, MAP_ID, COMB_MUL, 1)
FOLD_FN(max_i32, int32_t, MAP_ID, COMB_IMAX, INT32_MIN)
FOLD_FN(min_i32, int32_t, MAP_ID, COMB_IMIN, INT32_MAX)
FOLD_FN(sum_i64, uint64_t, MAP_ID, COMB_ADD, 0)
FOLD_FN(abs_sum_i64, uint64_t, MAP_UABS, COMB_ADD, 0)
FOLD_FN(sq_sum_i64, uint64_t, MAP_SQ, COMB_ADD, 0)
FOLD_FN(prod_i64, uint64_t, MAP_ID, COMB_MUL, 1)
FOLD_FN(max_i64, int64_t, MAP_ID, COMB_IMAX, INT64_MIN)
FOLD_FN(min_i64, int64_t, MAP_ID, COMB_IMIN, INT64_MAX)

// The folds of one element type, by what they compute.
typedef struct fold_set {
    fold_fn sum, abs_sum, sq_sum, exp_sum, prod, max, min;
} fold_set;

static const fold_set folds_f32 = { sum_f32, abs_sum_f32, sq_sum_f32, exp_sum_f32, prod_f32, max_f32, min_f32 };
static const fold_set folds_f64 = { sum_f64, abs_sum_f64, sq_sum_f64, exp_sum_f64, prod_f64, max_f64, min_f64 };
static const fold_set folds_i32 = { sum_i32, abs_sum_i32, sq_sum_i32, NULL, prod_i32, max_i32, min_i32 };
static const fold_set folds_i64 = { sum_i64, abs_sum_i64, sq_sum_i64, NULL, prod_i64, max_i64, min_i64 };

// The fold of each kind for type t (LogSumExp's second pass: exp_sum; its
// first is max).
static fold_fn fold_of(int kind, reel_dtype t)
{
    const fold_set *f = t == REEL_DTYPE_FLOAT64 ? &folds_f64
                        : t == REEL_DTYPE_INT32 ? &folds_i32
                        : t == REEL_DTYPE_INT64 ? &folds_i64
                                                : &folds_f32;
    switch (kind) {
    case RED_MAX:
        return f->max;
    case RED_MIN:
        return f->min;
    case RED_PROD:
        return f->prod;
    case RED_L1:
        return f->abs_sum;
    case RED_L2:
    case RED_SUM_SQUARE:
        return f->sq_sum;
    case RED_LOG_SUM_EXP:
        return f->exp_sum;
    default:
        return f->sum;
    }
}

// Fills o[0..no) with the fold's starting value of `kind` in type t: the
// identity of its combine (the type's extremes for max and min).
static void fill_init(void *o, int64_t no, int kind, reel_dtype t)
{
    double v = kind == RED_MAX ? -INFINITY : kind == RED_MIN ? INFINITY : kind == RED_PROD ? 1.0 : 0.0;
    for (int64_t i = 0; i < no; i++) {
        switch (t) {
        case REEL_DTYPE_FLOAT64:
            ((double *)o)[i] = v;
            break;
        case REEL_DTYPE_INT32:
            ((int32_t *)o)[i] = kind == RED_MAX ? INT32_MIN : kind == RED_MIN ? INT32_MAX : (int32_t)v;
            break;
        case REEL_DTYPE_INT64:
            ((int64_t *)o)[i] = kind == RED_MAX ? INT64_MIN : kind == RED_MIN ? INT64_MAX : (int64_t)v;
            break;
        default:
            ((float *)o)[i] = (float)v;
            break;
        }
    }
}

// Walks x (es-byte elements) once, folding each run into the output
// element(s) it reduces to; s (optional) is indexed like the output.
static void reduce_walk(const char *x, char *o, const char *s, int rank, const int64_t *shape, const bool *mask,
                        size_t es, fold_fn fold)
{
    // Output strides per input dim (0 where reduced), then dims collapsed.
    int64_t ost[R], st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        ost[d] = mask[d] ? 0 : st;
        if (!mask[d])
            st *= shape[d];
    }
    int64_t cd[R], cs[R];
    int r = reel_collapse_dims(rank, shape, ost, cd, cs, 0);
    int last = r - 1;
    int64_t inner = cd[last], idx[R] = { 0 }, off = 0;
    const char *p = x;
    for (;;) {
        fold(p, o + off * es, s ? s + off * es : NULL, inner, cs[last] == 0);
        p += inner * es;
        int d = last - 1;
        for (; d >= 0; d--) {
            off += cs[d];
            if (++idx[d] < cd[d])
                break;
            off -= cs[d] * cd[d];
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}

// The last step of each kind on the folded values: the mean's scale, the
// root, the logs. shift: LogSumExp's maxima. An empty reduction's mean
// stays 0 (scale 0), as the Vulkan kernel gives it.
#define FINISH_FN(name, T, SQRT, LOG)                                                          \
    static void name(T *o, const T *shift, int64_t no, int kind, double scale)                 \
    {                                                                                          \
        switch (kind) {                                                                        \
        case RED_MEAN:                                                                         \
            for (int64_t i = 0; i < no; i++)                                                   \
                o[i] = (T)(o[i] * scale);                                                      \
            break;                                                                             \
        case RED_L2:                                                                           \
            for (int64_t i = 0; i < no; i++)                                                   \
                o[i] = SQRT(o[i]);                                                             \
            break;                                                                             \
        case RED_LOG_SUM:                                                                      \
            for (int64_t i = 0; i < no; i++)                                                   \
                o[i] = LOG(o[i]);                                                              \
            break;                                                                             \
        case RED_LOG_SUM_EXP:                                                                  \
            for (int64_t i = 0; i < no; i++)                                                   \
                o[i] = shift[i] + LOG(o[i]);                                                   \
            break;                                                                             \
        default:                                                                               \
            break;                                                                             \
        }                                                                                      \
    }

FINISH_FN(finish_f32, float, sqrtf, logf)
FINISH_FN(finish_f64, double, sqrt, log)

// Integer means: the sum divided by the count, truncated.
#define INT_MEAN_FN(name, T)                                \
    static void name(T *o, int64_t no, int64_t cnt)         \
    {                                                       \
        for (int64_t i = 0; i < no; i++)                    \
            o[i] = (T)(o[i] / cnt);                         \
    }

INT_MEAN_FN(mean_i32, int32_t)
INT_MEAN_FN(mean_i64, int64_t)

// LogSumExp's shift: the maxima, each replaced by 0 where not finite.
static void *lse_shift(const reel_tensor *x, const bool *mask, int64_t no)
{
    size_t es = reel_dtype_size(x->dtype);
    bool f64 = x->dtype == REEL_DTYPE_FLOAT64;
    void *shift = g_malloc(es * (no > 0 ? no : 1));
    fill_init(shift, no, RED_MAX, x->dtype);
    if (reel_tensor_count(x->rank, x->shape) > 0)
        reduce_walk(x->data, shift, NULL, x->rank, x->shape, mask, es, fold_of(RED_MAX, x->dtype));
    for (int64_t i = 0; i < no; i++) {
        if (f64 && !isfinite(((double *)shift)[i]))
            ((double *)shift)[i] = 0.0;
        else if (!f64 && !isfinite(((float *)shift)[i]))
            ((float *)shift)[i] = 0.0f;
    }
    return shift;
}

static int run_reduce(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, int kind)
{
    const reel_tensor *x = in[0];
    int na = 0;
    const int64_t *attr = reel_ir_attr_ints(n, "axes", &na);
    bool mask[R], noop;
    if (!reduce_supports(kind, x->dtype))
        return REEL_EINVAL;
    if (axes_from(n, n->n_inputs > 1 ? in[1] : NULL, attr, na, x->rank, mask, &noop))
        return REEL_EINVAL;
    size_t es = reel_dtype_size(x->dtype);
    int64_t total = reel_tensor_count(x->rank, x->shape), no = reel_tensor_count(out[0]->rank, out[0]->shape);
    void *o = out[0]->data;
    if (noop) {
        memmove(o, x->data, es * total);
        return 0;
    }
    // LogSumExp: the maxima first, then the sum of exp(x - max), so large
    // inputs do not overflow.
    void *shift = kind == RED_LOG_SUM_EXP ? lse_shift(x, mask, no) : NULL;
    fill_init(o, no, kind, x->dtype);
    if (total > 0)
        reduce_walk(x->data, o, shift, x->rank, x->shape, mask, es, fold_of(kind, x->dtype));
    if (x->dtype == REEL_DTYPE_FLOAT64)
        finish_f64(o, shift, no, kind, total > 0 ? (double)no / (double)total : 0.0);
    else if (x->dtype == REEL_DTYPE_FLOAT32)
        finish_f32(o, shift, no, kind, total > 0 ? (double)no / (double)total : 0.0);
    else if (kind == RED_MEAN && total > 0 && x->dtype == REEL_DTYPE_INT32)
        mean_i32(o, no, total / no);
    else if (kind == RED_MEAN && total > 0)
        mean_i64(o, no, total / no);
    g_free(shift);
    return 0;
}

#define REDUCE_OP(Name, fn, kind)                                                                \
    static int infer_##fn(reel_ir_graph *g, reel_ir_node *n, GError **error)                    \
    {                                                                                           \
        return infer_reduce(g, n, error, kind);                                                 \
    }                                                                                           \
    static int run_##fn(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, \
                        const reel_exec_ctx *ctx)                                               \
    {                                                                                           \
        (void)ctx;                                                                              \
        return run_reduce(n, in, out, kind);                                                    \
    }                                                                                           \
    static const reel_op op_##fn = { .name = Name, .infer = infer_##fn, .run = run_##fn };

REDUCE_OP("ReduceSum", reduce_sum, RED_SUM)
REDUCE_OP("ReduceMean", reduce_mean, RED_MEAN)
REDUCE_OP("ReduceMax", reduce_max, RED_MAX)
REDUCE_OP("ReduceMin", reduce_min, RED_MIN)
REDUCE_OP("ReduceProd", reduce_prod, RED_PROD)
REDUCE_OP("ReduceL1", reduce_l1, RED_L1)
REDUCE_OP("ReduceL2", reduce_l2, RED_L2)
REDUCE_OP("ReduceLogSum", reduce_log_sum, RED_LOG_SUM)
REDUCE_OP("ReduceLogSumExp", reduce_log_sum_exp, RED_LOG_SUM_EXP)
REDUCE_OP("ReduceSumSquare", reduce_sum_square, RED_SUM_SQUARE)

// ---- Softmax / LogSoftmax ---------------------------------------------------

// Opset < 13 coerces the input to 2-D at `axis` (default 1) and normalises
// each row; 13+ normalises along `axis` alone (default -1).
static int infer_softmax(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_f32(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    o->dtype = x->dtype;
    o->rank = x->rank;
    memcpy(o->dims, x->dims, sizeof(int64_t) * (x->rank > 0 ? x->rank : 0));
    if (x->rank < 0)
        return 0;
    int rank = x->rank > 0 ? x->rank : 1;
    int64_t a = reel_ir_attr_int(n, "axis", g->opset >= 13 ? -1 : 1);
    if (a < -rank || a >= rank)
        return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for rank %d", a, x->rank);
    return 0;
}

// The sum of x[0], x[inner], ... x[(n - 1) inner] in eight running sums.
static float sum_strided(const float *x, int64_t n, int64_t inner)
{
    float lane[8] = { 0 }, sum = 0.0f;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            lane[l] += x[(i + l) * inner];
    for (; i < n; i++)
        sum += x[i * inner];
    for (int l = 0; l < 8; l++)
        sum += lane[l];
    return sum;
}

// Softmax of one contiguous row of n into q (which may be p), each loop
// one the vectorizer takes: the max in eight running lanes, the exps, their
// sum, the scaling. Built for AVX-512, AVX2 and the baseline, picked at load.
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) static void softmax_row(const float *p, float *q,
                                                                                       int64_t n)
{
    float lane[8], m = -INFINITY;
    int64_t i = 0;
    for (int l = 0; l < 8; l++)
        lane[l] = -INFINITY;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            lane[l] = p[i + l] > lane[l] ? p[i + l] : lane[l];
    for (; i < n; i++)
        m = p[i] > m ? p[i] : m;
    for (int l = 0; l < 8; l++)
        m = lane[l] > m ? lane[l] : m;
    for (i = 0; i < n; i++)
        q[i] = f32_exp(p[i] - m);
    float inv = 1.0f / sum_strided(q, n, 1);
    for (i = 0; i < n; i++)
        q[i] *= inv;
}

// rows of n elements, `inner` apart (inner = 1: contiguous).
static void softmax_rows(const float *x, float *o, int64_t outer, int64_t n, int64_t inner, bool log_)
{
    if (!log_ && inner == 1) {
        for (int64_t b = 0; b < outer; b++)
            softmax_row(x + b * n, o + b * n, n);
        return;
    }
    for (int64_t b = 0; b < outer; b++) {
        for (int64_t j = 0; j < inner; j++) {
            const float *p = x + b * n * inner + j;
            float *q = o + b * n * inner + j;
            float m = -INFINITY;
            for (int64_t i = 0; i < n; i++)
                m = p[i * inner] > m ? p[i * inner] : m;
            float sum = 0.0f;
            if (log_) {
                for (int64_t i = 0; i < n; i++)
                    sum += f32_exp(p[i * inner] - m);
                // (x - max) - log(sum), not x - (max + log(sum)): the latter
                // loses the small differences of large inputs.
                float l = logf(sum);
                for (int64_t i = 0; i < n; i++)
                    q[i * inner] = (p[i * inner] - m) - l;
            } else {
                // The exps first, then their sum in eight lanes: one loop
                // with the sum in it stays scalar (float adds keep their order).
                for (int64_t i = 0; i < n; i++)
                    q[i * inner] = f32_exp(p[i * inner] - m);
                sum = sum_strided(q, n, inner);
                float inv = 1.0f / sum;
                for (int64_t i = 0; i < n; i++)
                    q[i * inner] *= inv;
            }
        }
    }
}

static int run_softmax_form(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                            const reel_exec_ctx *ctx, bool log_)
{
    const reel_tensor *x = in[0];
    int rank = x->rank > 0 ? x->rank : 1;
    bool coerce_2d = ctx->opset < 13;
    int64_t a = reel_ir_attr_int(n, "axis", coerce_2d ? 1 : -1);
    if (a < -rank || a >= rank)
        return REEL_EINVAL;
    if (a < 0)
        a += rank;
    int64_t outer = 1, mid = 1, inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < a)
            outer *= x->shape[d];
        else if (d == a || coerce_2d)
            mid *= x->shape[d];
        else
            inner *= x->shape[d];
    }
    softmax_rows(x->data, out[0]->data, outer, mid, inner, log_);
    return 0;
}

static int run_softmax(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                       const reel_exec_ctx *ctx)
{
    return run_softmax_form(n, in, out, ctx, false);
}

static int run_log_softmax(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                           const reel_exec_ctx *ctx)
{
    return run_softmax_form(n, in, out, ctx, true);
}

static const reel_op op_softmax = { .name = "Softmax", .infer = infer_softmax, .run = run_softmax };
static const reel_op op_log_softmax = { .name = "LogSoftmax", .infer = infer_softmax, .run = run_log_softmax };

const reel_op *const reel_ops_reduce[] = {
    &op_reduce_mean, &op_reduce_max, &op_reduce_sum, &op_reduce_min, &op_reduce_prod, &op_reduce_l1,
    &op_reduce_l2, &op_reduce_log_sum, &op_reduce_log_sum_exp, &op_reduce_sum_square, &op_softmax,
    &op_log_softmax, NULL,
};

// ArgMax, ArgMin, Hardmax, TopK, NonMaxSuppression (CumSum is in layout.c).
// Each works along one axis of a row-major tensor seen as (outer, dim,
// inner): elements k of a slice are `inner` apart, and kernels that can walk
// whole rows of `inner` contiguous elements at a time do.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/cpu/nn.h"

#define R REEL_TENSOR_MAX_RANK
#define NO_NAN(v) false // the NaN test of integer kernels

static const char *dtype_name(reel_dtype t)
{
    const char *s = reel_dtype_name(t);
    return s ? s : "unknown";
}

static bool dtype_in(reel_dtype t, const reel_dtype *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == t)
            return true;
    return false;
}

// Fails unless input 0 has one of the dtypes in list[0..n).
static int need_dtype(reel_ir_graph *g, reel_ir_node *n, const reel_dtype *list, int count, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x || !reel_op_output(g, n, 0))
        NN_FAIL(error, REEL_EINVAL, n, "needs an input and an output");
    if (!dtype_in(x->dtype, list, count))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input type %s is not supported", dtype_name(x->dtype));
    return 0;
}

// axis in [-rank, rank) made non-negative; false when out of range.
static bool norm_axis(int64_t *axis, int rank)
{
    if (*axis < -rank || *axis >= rank)
        return false;
    if (*axis < 0)
        *axis += rank;
    return true;
}

// The (outer, dim, inner) view of shape around axis.
static void split_at(int rank, const int64_t *shape, int axis, int64_t *outer, int64_t *dim, int64_t *inner)
{
    *outer = reel_tensor_count(axis, shape);
    *dim = rank ? shape[axis] : 1;
    *inner = rank ? reel_tensor_count(rank - axis - 1, shape + axis + 1) : 1;
}

// ---- ArgMax, ArgMin -------------------------------------------------------------

static const reel_dtype arg_types[] = { REEL_DTYPE_FLOAT32, REEL_DTYPE_FLOAT64, REEL_DTYPE_INT32,
                                        REEL_DTYPE_INT64,   REEL_DTYPE_UINT8,   REEL_DTYPE_INT8 };

static int infer_arg(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_dtype(g, n, arg_types, G_N_ELEMENTS(arg_types), error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    bool keep = reel_ir_attr_int(n, "keepdims", 1) != 0;
    if (x->rank < 0) {
        nn_set(o, REEL_DTYPE_INT64, -1, NULL);
        return 0;
    }
    int64_t axis = reel_ir_attr_int(n, "axis", 0), a = axis;
    if (x->rank == 0 || !norm_axis(&a, x->rank))
        NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    if (x->dims[a] == 0)
        NN_FAIL(error, REEL_EINVAL, n, "the reduced axis is empty");
    int64_t dims[R];
    int k = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != a)
            dims[k++] = x->dims[d];
        else if (keep)
            dims[k++] = 1;
    nn_set(o, REEL_DTYPE_INT64, k, dims);
    return 0;
}

// The running best of each of the inner columns.
static size_t scratch_arg(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    int64_t axis = reel_ir_attr_int(n, "axis", 0), outer, dim, inner;
    if (!norm_axis(&axis, in[0]->rank))
        return 0;
    split_at(in[0]->rank, in[0]->shape, (int)axis, &outer, &dim, &inner);
    return (size_t)inner * sizeof(double);
}

// idx[o * inner + j]: the position along dim of the largest (max) or
// smallest element of column j of block o; ties go to the first, or with
// `last` the last. NaN wins, as in numpy. Rows are walked whole, and each
// of the four forms gets a loop of its own without branches (arg_step
// inlined with constant flags), so the loops vectorize (the int64 blends
// need AVX2: clones per instruction set).
#define TARGETS __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#define ARG_KERNEL(T, sfx, ISNAN)                                                                       \
    static inline __attribute__((always_inline)) void arg_step_##sfx(                                   \
        const T *restrict r, T *restrict best, int64_t *restrict q, int64_t inner, int64_t k, bool max,  \
        bool last)                                                                                      \
    {                                                                                                   \
        for (int64_t j = 0; j < inner; j++) {                                                           \
            T v = r[j], b = best[j];                                                                    \
            bool nan_v = ISNAN(v), nan_b = ISNAN(b);                                                    \
            bool better = max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);                      \
            bool take = (better & !nan_b) | (nan_v & (last | !nan_b));                                  \
            best[j] = take ? v : b;                                                                     \
            q[j] = take ? k : q[j];                                                                     \
        }                                                                                               \
    }                                                                                                   \
    TARGETS static void arg_##sfx(const T *restrict x, int64_t outer, int64_t dim, int64_t inner,        \
                                  bool max, bool last, T *restrict best, int64_t *restrict idx)         \
    {                                                                                                   \
        for (int64_t o = 0; o < outer; o++) {                                                           \
            const T *p = x + o * dim * inner;                                                           \
            int64_t *q = idx + o * inner;                                                               \
            for (int64_t j = 0; j < inner; j++) {                                                       \
                best[j] = p[j];                                                                         \
                q[j] = 0;                                                                               \
            }                                                                                           \
            for (int64_t k = 1; k < dim; k++) {                                                         \
                const T *r = p + k * inner;                                                             \
                if (max && !last)                                                                       \
                    arg_step_##sfx(r, best, q, inner, k, true, false);                                  \
                else if (max)                                                                           \
                    arg_step_##sfx(r, best, q, inner, k, true, true);                                   \
                else if (!last)                                                                         \
                    arg_step_##sfx(r, best, q, inner, k, false, false);                                 \
                else                                                                                    \
                    arg_step_##sfx(r, best, q, inner, k, false, true);                                  \
            }                                                                                           \
        }                                                                                               \
    }

ARG_KERNEL(float, f32, isnan)
ARG_KERNEL(double, f64, isnan)
ARG_KERNEL(int32_t, i32, NO_NAN)
ARG_KERNEL(int64_t, i64, NO_NAN)
ARG_KERNEL(uint8_t, u8, NO_NAN)
ARG_KERNEL(int8_t, i8, NO_NAN)

// The arg kernel of x's dtype over (outer, dim, inner) into idx; best is
// scratch for inner elements of up to 8 bytes.
static int arg_any(const reel_tensor *x, int64_t outer, int64_t dim, int64_t inner, bool max, bool last,
                   void *best, int64_t *idx)
{
    switch (x->dtype) {
    case REEL_DTYPE_FLOAT32: arg_f32(x->data, outer, dim, inner, max, last, best, idx); break;
    case REEL_DTYPE_FLOAT64: arg_f64(x->data, outer, dim, inner, max, last, best, idx); break;
    case REEL_DTYPE_INT32: arg_i32(x->data, outer, dim, inner, max, last, best, idx); break;
    case REEL_DTYPE_INT64: arg_i64(x->data, outer, dim, inner, max, last, best, idx); break;
    case REEL_DTYPE_UINT8: arg_u8(x->data, outer, dim, inner, max, last, best, idx); break;
    case REEL_DTYPE_INT8: arg_i8(x->data, outer, dim, inner, max, last, best, idx); break;
    default: return REEL_EUNSUPPORTED;
    }
    return 0;
}

static int run_arg(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx,
                   bool max)
{
    const reel_tensor *x = in[0];
    int64_t axis = reel_ir_attr_int(n, "axis", 0), outer, dim, inner;
    if (!norm_axis(&axis, x->rank))
        return REEL_EINVAL;
    split_at(x->rank, x->shape, (int)axis, &outer, &dim, &inner);
    if (dim == 0)
        return REEL_EINVAL;
    if (ctx->scratch_size < (size_t)inner * sizeof(double))
        return REEL_EINVAL;
    bool last = reel_ir_attr_int(n, "select_last_index", 0) != 0;
    return arg_any(x, outer, dim, inner, max, last, ctx->scratch, out[0]->data);
}

static int run_argmax(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    return run_arg(n, in, out, ctx, true);
}

static int run_argmin(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    return run_arg(n, in, out, ctx, false);
}

static const reel_op op_argmax = { "ArgMax", infer_arg, scratch_arg, run_argmax };
static const reel_op op_argmin = { "ArgMin", infer_arg, scratch_arg, run_argmin };

// ---- Hardmax ------------------------------------------------------------------

// Before opset 13 the input is coerced to 2-D at axis (default 1) and each
// row of the flattened trailing dims gets one 1; from 13 on, each slice
// along axis (default -1).
static bool hardmax_view(int opset, const reel_ir_node *n, int rank, const int64_t *shape, int64_t *outer,
                         int64_t *dim, int64_t *inner)
{
    bool coerce = opset < 13;
    int64_t axis = reel_ir_attr_int(n, "axis", coerce ? 1 : -1);
    // Rank 0 is treated as one element along a single axis.
    int r = rank > 0 ? rank : 1;
    if (axis < -r || axis >= r)
        return false;
    if (axis < 0)
        axis += r;
    if (rank == 0) {
        *outer = *dim = *inner = 1;
        return true;
    }
    split_at(rank, shape, (int)axis, outer, dim, inner);
    if (coerce) {
        *dim *= *inner;
        *inner = 1;
    }
    return true;
}

static const reel_dtype hardmax_types[] = { REEL_DTYPE_FLOAT32, REEL_DTYPE_FLOAT64 };

static int infer_hardmax(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_dtype(g, n, hardmax_types, G_N_ELEMENTS(hardmax_types), error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0);
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank, x->dims);
    int64_t o, d, i, axis = reel_ir_attr_int(n, "axis", g->opset < 13 ? 1 : -1);
    if (x->rank >= 0 && !hardmax_view(g->opset, n, x->rank, x->dims, &o, &d, &i))
        NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    return 0;
}

// The index of each slice's maximum, then the running best.
static size_t scratch_hardmax(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    int64_t outer, dim, inner;
    // The opset is not known here: size for the larger of the two views.
    int64_t need = 0;
    for (int opset = 12; opset <= 13; opset++)
        if (hardmax_view(opset, n, in[0]->rank, in[0]->shape, &outer, &dim, &inner))
            need = MAX(need, outer * inner + inner);
    return (size_t)need * sizeof(int64_t);
}

static int run_hardmax(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                       const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0];
    int64_t outer, dim, inner;
    if (!hardmax_view(ctx->opset, n, x->rank, x->shape, &outer, &dim, &inner))
        return REEL_EINVAL;
    int64_t total = reel_tensor_count(x->rank, x->shape);
    memset(out[0]->data, 0, out[0]->nbytes);
    if (total == 0)
        return 0;
    if (ctx->scratch_size < (size_t)(outer * inner + inner) * sizeof(int64_t))
        return REEL_EINVAL;
    int64_t *idx = ctx->scratch;
    // The first of the largest values (NaN counting as largest, as numpy's argmax).
    int rc = arg_any(x, outer, dim, inner, true, false, idx + outer * inner, idx);
    if (rc)
        return rc;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            int64_t e = (o * dim + idx[o * inner + j]) * inner + j;
            if (x->dtype == REEL_DTYPE_FLOAT32)
                ((float *)out[0]->data)[e] = 1.0f;
            else
                ((double *)out[0]->data)[e] = 1.0;
        }
    return 0;
}

static const reel_op op_hardmax = { "Hardmax", infer_hardmax, scratch_hardmax, run_hardmax };

// ---- TopK ---------------------------------------------------------------------

static const reel_dtype topk_types[] = { REEL_DTYPE_FLOAT32, REEL_DTYPE_FLOAT64, REEL_DTYPE_INT32,
                                         REEL_DTYPE_INT64 };

// k: the attribute before opset 10, then input 1 (one int64). -1 when not
// known (a computed input), -2 when malformed.
static int64_t topk_k(int opset, const reel_ir_node *n, const reel_tensor *kt)
{
    if (opset < 10)
        return reel_ir_attr_int(n, "k", -2);
    int64_t v[2];
    if (!kt)
        return -1;
    if (kt->dtype != REEL_DTYPE_INT64 || reel_tensor_ints(kt, v, 1) != 1)
        return -2;
    return v[0] < 0 ? -2 : v[0];
}

static int infer_topk(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_dtype(g, n, topk_types, G_N_ELEMENTS(topk_types), error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *kv = reel_op_input(g, n, 1);
    if (g->opset >= 10 && (!kv || kv->dtype != REEL_DTYPE_INT64))
        NN_FAIL(error, REEL_EINVAL, n, "K must be an int64 input");
    int64_t k = topk_k(g->opset, n, kv ? kv->constant : NULL);
    if (k == -2)
        NN_FAIL(error, REEL_EINVAL, n, "K must be one non-negative value");
    int64_t axis = reel_ir_attr_int(n, "axis", -1), a = axis;
    int64_t dims[R];
    if (x->rank >= 0) {
        if (x->rank == 0 || !norm_axis(&a, x->rank))
            NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
        if (k >= 0 && x->dims[a] >= 0 && k > x->dims[a])
            NN_FAIL(error, REEL_EINVAL, n, "K %" G_GINT64_FORMAT " is larger than the axis (%" G_GINT64_FORMAT ")", k,
                    x->dims[a]);
        memcpy(dims, x->dims, sizeof dims);
        dims[a] = k;
    }
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank, x->rank >= 0 ? dims : NULL);
    nn_set(reel_op_output(g, n, 1), REEL_DTYPE_INT64, x->rank, x->rank >= 0 ? dims : NULL);
    return 0;
}

// One slice's elements with their positions, sorted so the first k are the
// answer: by value (descending for largest), ties by the lower position.
// NaN sorts above every number, so the order is total.
#define TOPK_KERNEL(T, sfx, ISNAN)                                                                            \
    typedef struct { T v; int64_t i; } pair_##sfx;                                                       \
    static int cmp_asc_##sfx(const void *pa, const void *pb)                                             \
    {                                                                                                    \
        const pair_##sfx *a = pa, *b = pb;                                                               \
        bool na = ISNAN(a->v), nb = ISNAN(b->v);                                                         \
        if (na != nb)                                                                                    \
            return na ? 1 : -1;                                                                          \
        if (!na && a->v != b->v)                                                                         \
            return a->v < b->v ? -1 : 1;                                                                 \
        return a->i < b->i ? -1 : a->i > b->i;                                                           \
    }                                                                                                    \
    static int cmp_desc_##sfx(const void *pa, const void *pb)                                            \
    {                                                                                                    \
        const pair_##sfx *a = pa, *b = pb;                                                               \
        bool na = ISNAN(a->v), nb = ISNAN(b->v);                                                         \
        if (na != nb)                                                                                    \
            return na ? -1 : 1;                                                                          \
        if (!na && a->v != b->v)                                                                         \
            return a->v > b->v ? -1 : 1;                                                                 \
        return a->i < b->i ? -1 : a->i > b->i;                                                           \
    }                                                                                                    \
    /* Sifts h[i] down a heap of n whose root ranks last (cmp > 0: after). */                         \
    static void sift_##sfx(pair_##sfx *h, int64_t n, int64_t i, int (*cmp)(const void *, const void *))  \
    {                                                                                                    \
        for (;;) {                                                                                       \
            int64_t l = 2 * i + 1, r = l + 1, m = i;                                                     \
            if (l < n && cmp(&h[l], &h[m]) > 0)                                                          \
                m = l;                                                                                   \
            if (r < n && cmp(&h[r], &h[m]) > 0)                                                          \
                m = r;                                                                                   \
            if (m == i)                                                                                  \
                return;                                                                                  \
            pair_##sfx t = h[i];                                                                         \
            h[i] = h[m];                                                                                 \
            h[m] = t;                                                                                    \
            i = m;                                                                                       \
        }                                                                                                \
    }                                                                                                    \
    /* The k first of one slice into buf[0..k), in order: all sorted when k is  */                       \
    /* a good part of the slice, else a heap of the k best so far, each element */                       \
    /* one comparison with the worst of them.                                   */                       \
    static void topk_slice_##sfx(const T *p, int64_t dim, int64_t inner, int64_t k, bool largest,         \
                                 pair_##sfx *buf)                                                        \
    {                                                                                                    \
        int (*cmp)(const void *, const void *) = largest ? cmp_desc_##sfx : cmp_asc_##sfx;               \
        int64_t n = k * 8 < dim ? k : dim;                                                               \
        for (int64_t e = 0; e < n; e++)                                                                  \
            buf[e] = (pair_##sfx){ p[e * inner], e };                                                    \
        if (n < dim && k > 0) {                                                                          \
            for (int64_t i = k / 2 - 1; i >= 0; i--)                                                     \
                sift_##sfx(buf, k, i, cmp);                                                              \
            for (int64_t e = k; e < dim; e++) {                                                          \
                pair_##sfx c = { p[e * inner], e };                                                      \
                if (cmp(&c, &buf[0]) < 0) {                                                              \
                    buf[0] = c;                                                                          \
                    sift_##sfx(buf, k, 0, cmp);                                                          \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
        qsort(buf, (size_t)n, sizeof *buf, cmp);                                                         \
    }                                                                                                    \
    static void topk_##sfx(const T *x, T *vals, int64_t *idx, int64_t outer, int64_t dim, int64_t inner,  \
                           int64_t k, bool largest, pair_##sfx *buf)                                     \
    {                                                                                                    \
        for (int64_t o = 0; o < outer; o++)                                                              \
            for (int64_t j = 0; j < inner; j++) {                                                        \
                topk_slice_##sfx(x + o * dim * inner + j, dim, inner, k, largest, buf);                  \
                int64_t base = o * k * inner + j;                                                        \
                for (int64_t e = 0; e < k; e++) {                                                        \
                    vals[base + e * inner] = buf[e].v;                                                   \
                    idx[base + e * inner] = buf[e].i;                                                    \
                }                                                                                        \
            }                                                                                            \
    }

TOPK_KERNEL(float, f32, isnan)
TOPK_KERNEL(double, f64, isnan)
TOPK_KERNEL(int32_t, i32, NO_NAN)
TOPK_KERNEL(int64_t, i64, NO_NAN)

// One slice of (value, position) pairs, 16 bytes each at most.
static size_t scratch_topk(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    int64_t axis = reel_ir_attr_int(n, "axis", -1);
    if (!norm_axis(&axis, in[0]->rank))
        return 0;
    return (size_t)in[0]->shape[axis] * 16;
}

static int run_topk(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0];
    int64_t axis = reel_ir_attr_int(n, "axis", -1), outer, dim, inner;
    if (!norm_axis(&axis, x->rank))
        return REEL_EINVAL;
    split_at(x->rank, x->shape, (int)axis, &outer, &dim, &inner);
    int64_t k = topk_k(ctx->opset, n, n->n_inputs > 1 ? in[1] : NULL);
    if (k < 0 || k > dim || out[0]->shape[axis] != k || ctx->scratch_size < (size_t)dim * 16)
        return REEL_EINVAL;
    // sorted = 0 leaves the order open: sorted is one valid answer.
    bool largest = reel_ir_attr_int(n, "largest", 1) != 0;
    void *v = out[0]->data, *buf = ctx->scratch;
    int64_t *idx = n->n_outputs > 1 && out[1] ? out[1]->data : NULL;
    int64_t *tmp = NULL;
    if (!idx) // Indices not wanted: written to a temporary.
        idx = tmp = g_new(int64_t, MAX(1, outer * k * inner));
    switch (x->dtype) {
    case REEL_DTYPE_FLOAT32: topk_f32(x->data, v, idx, outer, dim, inner, k, largest, buf); break;
    case REEL_DTYPE_FLOAT64: topk_f64(x->data, v, idx, outer, dim, inner, k, largest, buf); break;
    case REEL_DTYPE_INT32: topk_i32(x->data, v, idx, outer, dim, inner, k, largest, buf); break;
    case REEL_DTYPE_INT64: topk_i64(x->data, v, idx, outer, dim, inner, k, largest, buf); break;
    default: g_free(tmp); return REEL_EUNSUPPORTED;
    }
    g_free(tmp);
    return 0;
}

static const reel_op op_topk = { "TopK", infer_topk, scratch_topk, run_topk };

// ---- NonMaxSuppression ----------------------------------------------------------

// Per batch and class, boxes by descending score (ties: the lower index
// first), each kept unless it overlaps a kept one by more than
// iou_threshold, until max_output_boxes_per_class are kept. The output's
// length depends on the data: exact in infer when every input is a
// constant, REEL_DIM_UNKNOWN otherwise (then the plan cannot be made).

typedef struct nms_args {
    const float *boxes, *scores;
    int64_t batches, classes, spatial, max_out;
    float iou, score_min;
    bool has_score_min, center;
} nms_args;

// Corners (y1, x1, y2, x2 with y1 <= y2, x1 <= x2) of box i of a batch.
static void nms_corners(const nms_args *a, const float *b, float c[4])
{
    if (a->center) { // x_center, y_center, width, height
        c[0] = b[1] - b[3] / 2, c[1] = b[0] - b[2] / 2;
        c[2] = b[1] + b[3] / 2, c[3] = b[0] + b[2] / 2;
        return;
    }
    c[0] = fminf(b[0], b[2]), c[1] = fminf(b[1], b[3]);
    c[2] = fmaxf(b[0], b[2]), c[3] = fmaxf(b[1], b[3]);
}

static bool nms_overlaps(const nms_args *a, const float *p, const float *q)
{
    float b1[4], b2[4];
    nms_corners(a, p, b1);
    nms_corners(a, q, b2);
    float area1 = (b1[2] - b1[0]) * (b1[3] - b1[1]), area2 = (b2[2] - b2[0]) * (b2[3] - b2[1]);
    if (area1 <= 0 || area2 <= 0)
        return false;
    float h = fminf(b1[2], b2[2]) - fmaxf(b1[0], b2[0]), w = fminf(b1[3], b2[3]) - fmaxf(b1[1], b2[1]);
    if (h <= 0 || w <= 0)
        return false;
    float inter = h * w, uni = area1 + area2 - inter;
    return uni > 0 && inter / uni > a->iou;
}

typedef struct nms_cand {
    float score;
    int64_t index;
} nms_cand;

static int nms_cand_cmp(const void *pa, const void *pb)
{
    const nms_cand *x = pa, *y = pb;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

// Runs the selection; writes (batch, class, box) triples to out (NULL: only
// counts) and returns how many, or -1 when out of memory.
static int64_t nms_select(const nms_args *a, int64_t *out)
{
    nms_cand *cand = g_try_new(nms_cand, MAX(1, a->spatial));
    int64_t *kept = g_try_new(int64_t, MAX(1, a->spatial));
    if (!cand || !kept) {
        g_free(cand);
        g_free(kept);
        return -1;
    }
    int64_t total = 0;
    for (int64_t b = 0; b < a->batches; b++)
        for (int64_t c = 0; c < a->classes; c++) {
            const float *sc = a->scores + (b * a->classes + c) * a->spatial;
            const float *bx = a->boxes + b * a->spatial * 4;
            int64_t nc = 0, nk = 0;
            for (int64_t i = 0; i < a->spatial; i++)
                if (!isnan(sc[i]) && (!a->has_score_min || sc[i] > a->score_min))
                    cand[nc++] = (nms_cand){ sc[i], i };
            qsort(cand, (size_t)nc, sizeof *cand, nms_cand_cmp);
            for (int64_t i = 0; i < nc && nk < a->max_out; i++) {
                bool keep = true;
                for (int64_t k = 0; k < nk && keep; k++)
                    keep = !nms_overlaps(a, bx + cand[i].index * 4, bx + kept[k] * 4);
                if (!keep)
                    continue;
                kept[nk++] = cand[i].index;
                if (out) {
                    out[total * 3] = b, out[total * 3 + 1] = c, out[total * 3 + 2] = cand[i].index;
                }
                total++;
            }
        }
    g_free(cand);
    g_free(kept);
    return total;
}

// A scalar (or one-element) input of dtype dt, or def when omitted.
static bool nms_scalar(const reel_tensor *t, reel_dtype dt, double def, double *v)
{
    *v = def;
    if (!t)
        return true;
    if (t->dtype != dt || reel_tensor_count(t->rank, t->shape) != 1 || t->rank > 1)
        return false;
    *v = dt == REEL_DTYPE_INT64 ? (double)*(const int64_t *)t->data : *(const float *)t->data;
    return true;
}

// The arguments from the tensors (in[3], in[4] may be NULL); false when
// their shapes or types are wrong.
static bool nms_args_of(const reel_ir_node *n, const reel_tensor *boxes, const reel_tensor *scores,
                        const reel_tensor *max_out, const reel_tensor *iou, const reel_tensor *score_min, nms_args *a)
{
    double mo, io, sm;
    if (boxes->dtype != REEL_DTYPE_FLOAT32 || scores->dtype != REEL_DTYPE_FLOAT32 || boxes->rank != 3 ||
        scores->rank != 3 || boxes->shape[2] != 4 || boxes->shape[0] != scores->shape[0] ||
        boxes->shape[1] != scores->shape[2])
        return false;
    if (!nms_scalar(max_out, REEL_DTYPE_INT64, 0, &mo) || !nms_scalar(iou, REEL_DTYPE_FLOAT32, 0, &io) ||
        !nms_scalar(score_min, REEL_DTYPE_FLOAT32, 0, &sm))
        return false;
    *a = (nms_args){
        .boxes = boxes->data, .scores = scores->data, .batches = boxes->shape[0], .classes = scores->shape[1],
        .spatial = boxes->shape[1], .iou = (float)io, .score_min = (float)sm, .has_score_min = score_min != NULL,
        .center = reel_ir_attr_int(n, "center_point_box", 0) != 0,
    };
    // Exact for the int64 values that matter (more than the boxes is all of them).
    a->max_out = mo <= 0 ? 0 : mo >= (double)a->spatial ? a->spatial : (int64_t)mo;
    return true;
}

static int infer_nms(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *v[5], *o = reel_op_output(g, n, 0);
    for (int i = 0; i < 5; i++)
        v[i] = reel_op_input(g, n, i);
    if (!v[0] || !v[1] || !o)
        NN_FAIL(error, REEL_EINVAL, n, "needs boxes, scores and an output");
    if (v[0]->dtype != REEL_DTYPE_FLOAT32 || v[1]->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "boxes and scores must be float32");
    if (v[2] && v[2]->dtype != REEL_DTYPE_INT64)
        NN_FAIL(error, REEL_EINVAL, n, "max_output_boxes_per_class must be int64");
    for (int i = 3; i < 5; i++)
        if (v[i] && v[i]->dtype != REEL_DTYPE_FLOAT32)
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %d must be float32", i);
    int64_t cpb = reel_ir_attr_int(n, "center_point_box", 0);
    if (cpb != 0 && cpb != 1)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'center_point_box' = %" G_GINT64_FORMAT " is not supported", cpb);
    reel_ir_value *bx = v[0], *sc = v[1];
    if ((bx->rank >= 0 && (bx->rank != 3 || (bx->dims[2] >= 0 && bx->dims[2] != 4))) ||
        (sc->rank >= 0 && sc->rank != 3))
        NN_FAIL(error, REEL_EINVAL, n, "boxes must be (batches, boxes, 4) and scores (batches, classes, boxes)");
    if (bx->rank == 3 && sc->rank == 3 &&
        ((bx->dims[0] >= 0 && sc->dims[0] >= 0 && bx->dims[0] != sc->dims[0]) ||
         (bx->dims[1] >= 0 && sc->dims[2] >= 0 && bx->dims[1] != sc->dims[2])))
        NN_FAIL(error, REEL_EINVAL, n, "boxes and scores disagree on batches or boxes");
    int64_t dims[2] = { REEL_DIM_UNKNOWN, 3 };
    bool all_const = true;
    for (int i = 0; i < 5; i++)
        all_const = all_const && (!v[i] || v[i]->constant);
    if (all_const) {
        nms_args a;
        if (!nms_args_of(n, bx->constant, sc->constant, v[2] ? v[2]->constant : NULL, v[3] ? v[3]->constant : NULL,
                         v[4] ? v[4]->constant : NULL, &a))
            NN_FAIL(error, REEL_EINVAL, n, "the inputs' shapes or types are wrong");
        if ((dims[0] = nms_select(&a, NULL)) < 0)
            NN_FAIL(error, REEL_ENOMEM, n, "out of memory");
    }
    nn_set(o, REEL_DTYPE_INT64, 2, dims);
    return 0;
}

static int run_nms(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    nms_args a;
    const reel_tensor *opt[3];
    for (int i = 0; i < 3; i++)
        opt[i] = n->n_inputs > 2 + i ? in[2 + i] : NULL;
    if (!nms_args_of(n, in[0], in[1], opt[0], opt[1], opt[2], &a))
        return REEL_EINVAL;
    // The output was sized by infer on the same values: check before writing.
    int64_t count = nms_select(&a, NULL);
    if (count < 0)
        return REEL_ENOMEM;
    if (out[0]->rank != 2 || out[0]->shape[0] != count)
        return REEL_EINVAL;
    return nms_select(&a, out[0]->data) < 0 ? REEL_ENOMEM : 0;
}

static const reel_op op_nms = { "NonMaxSuppression", infer_nms, NULL, run_nms };

const reel_op *const reel_ops_select[] = {
    &op_argmax, &op_argmin, &op_hardmax, &op_topk, &op_nms, NULL,
};

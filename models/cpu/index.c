// GatherElements, GatherND, Scatter*, Compress, NonZero, OneHot, Unique.
// Indices are int32 or int64; a negative one counts from the end of its dim
// and one outside [-dim, dim) fails the run with REEL_EINVAL (checked before
// any element moves). Elements are moved by size, so any dtype works where
// nothing is computed; the scatter reductions take float32, float64, int32
// and int64.
#include <math.h>
#include <string.h>

#include "models/cpu/nn.h"

#define R REEL_TENSOR_MAX_RANK
#define NO_NAN(v) false // the NaN test of integer kernels

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static const char *dtype_name(reel_dtype t)
{
    const char *s = reel_dtype_name(t);
    return s ? s : "unknown";
}

static bool is_index_type(reel_dtype t)
{
    return t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64;
}

// Element i of an int32 or int64 tensor.
static int64_t index_at(const reel_tensor *t, int64_t i)
{
    return t->dtype == REEL_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

// v in [-dim, dim) made non-negative; false when out of range.
static bool wrap_index(int64_t *v, int64_t dim)
{
    if (*v < -dim || *v >= dim)
        return false;
    if (*v < 0)
        *v += dim;
    return true;
}

// One element of es bytes: fixed-size moves for the common sizes.
static inline void copy_elem(char *dst, const char *src, size_t es)
{
    switch (es) {
    case 1: memcpy(dst, src, 1); break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, es);
    }
}

static bool norm_axis(int64_t *axis, int rank)
{
    return wrap_index(axis, rank);
}

// Row-major strides (in elements) of a shape.
static void strides_of(int rank, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

// A row-major walk over `shape` that keeps off = sum of idx[d] * st[d] for
// other strides st (those of a larger tensor the shape indexes into).
typedef struct walker {
    int rank;
    const int64_t *shape, *st;
    int64_t idx[R], off;
} walker;

static void walk_init(walker *w, int rank, const int64_t *shape, const int64_t *st)
{
    memset(w, 0, sizeof *w);
    w->rank = rank;
    w->shape = shape;
    w->st = st;
}

static void walk_next(walker *w)
{
    for (int d = w->rank - 1; d >= 0; d--) {
        w->off += w->st[d];
        if (++w->idx[d] < w->shape[d])
            return;
        w->off -= w->st[d] * w->shape[d];
        w->idx[d] = 0;
    }
}

// ---- reductions of the scatters ---------------------------------------------------

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

// The reduction attribute (opset 16: add, mul; 18: max, min); -1 when unknown.
static int reduction_of(const reel_ir_node *n)
{
    static const char *const names[] = { "none", "add", "mul", "max", "min" };
    const char *s = reel_ir_attr_string(n, "reduction", "none");
    for (int i = 0; i < (int)G_N_ELEMENTS(names); i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static bool reduces_type(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64 || t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64;
}

// d[0..n) combined with s[0..n); max and min let NaN through, as numpy's
// maximum and minimum do.
#define REDUCE_RUN(T, sfx, ISNAN)                                                           \
    static void reduce_##sfx(T *restrict d, const T *restrict s, int64_t n, int red)        \
    {                                                                                       \
        switch (red) {                                                                      \
        case RED_ADD:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                 \
                d[i] += s[i];                                                               \
            break;                                                                          \
        case RED_MUL:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                 \
                d[i] *= s[i];                                                               \
            break;                                                                          \
        case RED_MAX:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                 \
                d[i] = s[i] > d[i] || ISNAN(s[i]) ? s[i] : d[i];                            \
            break;                                                                          \
        case RED_MIN:                                                                       \
            for (int64_t i = 0; i < n; i++)                                                 \
                d[i] = s[i] < d[i] || ISNAN(s[i]) ? s[i] : d[i];                            \
            break;                                                                          \
        default:                                                                            \
            for (int64_t i = 0; i < n; i++)                                                 \
                d[i] = s[i];                                                                \
        }                                                                                   \
    }

REDUCE_RUN(float, f32, isnan)
REDUCE_RUN(double, f64, isnan)
REDUCE_RUN(int32_t, i32, NO_NAN)
REDUCE_RUN(int64_t, i64, NO_NAN)

// n elements of dtype dt from src into dst with reduction red (none: a copy
// of any dtype of esize bytes).
static void scatter_run(reel_dtype dt, size_t es, void *dst, const void *src, int64_t n, int red)
{
    if (red == RED_NONE) {
        memcpy(dst, src, (size_t)n * es);
        return;
    }
    switch (dt) {
    case REEL_DTYPE_FLOAT32: reduce_f32(dst, src, n, red); break;
    case REEL_DTYPE_FLOAT64: reduce_f64(dst, src, n, red); break;
    case REEL_DTYPE_INT32: reduce_i32(dst, src, n, red); break;
    case REEL_DTYPE_INT64: reduce_i64(dst, src, n, red); break;
    default: break; // infer admits no other
    }
}

// Checks the reduction attribute against the data's dtype.
static int check_reduction(const reel_ir_node *n, reel_dtype dt, GError **error)
{
    int red = reduction_of(n);
    if (red < 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'reduction' = '%s' is not supported",
                reel_ir_attr_string(n, "reduction", ""));
    if (red != RED_NONE && !reduces_type(dt))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "reduction '%s' on %s data is not supported",
                reel_ir_attr_string(n, "reduction", ""), dtype_name(dt));
    return 0;
}

// Fails unless data (input 0) has a dtype and input i is int32/int64 indices.
static int need_data_and_indices(reel_ir_graph *g, reel_ir_node *n, int i, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *idx = reel_op_input(g, n, i);
    if (!x || !idx || !reel_op_output(g, n, 0))
        NN_FAIL(error, REEL_EINVAL, n, "needs data, indices and an output");
    if (reel_dtype_size(x->dtype) == 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "data type %s is not supported", dtype_name(x->dtype));
    if (!is_index_type(idx->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "indices type %s is not supported (int32 or int64)",
                dtype_name(idx->dtype));
    return 0;
}

// ---- GatherElements, ScatterElements, Scatter ---------------------------------------

// Indices (and updates) have data's rank; along every axis but `axis` they
// may be shorter than data, never longer.
static int check_elements_shape(const reel_ir_node *n, const reel_ir_value *x, const reel_ir_value *idx, int64_t axis,
                                GError **error)
{
    if (idx->rank != x->rank)
        NN_FAIL(error, REEL_EINVAL, n, "indices rank %d differs from data rank %d", idx->rank, x->rank);
    for (int d = 0; d < x->rank; d++)
        if (d != axis && x->dims[d] >= 0 && idx->dims[d] > x->dims[d])
            NN_FAIL(error, REEL_EINVAL, n, "indices dim %d (%" G_GINT64_FORMAT ") exceeds data's (%" G_GINT64_FORMAT ")",
                    d, idx->dims[d], x->dims[d]);
    return 0;
}

static int elements_axis(const reel_ir_node *n, const reel_ir_value *x, int64_t *axis, GError **error)
{
    int64_t a = reel_ir_attr_int(n, "axis", 0);
    *axis = a;
    if (x->rank == 0 || !norm_axis(axis, x->rank))
        NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", a, x->rank);
    return 0;
}

static int infer_gather_elements(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_data_and_indices(g, n, 1, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *idx = reel_op_input(g, n, 1);
    nn_set(reel_op_output(g, n, 0), x->dtype, idx->rank, idx->dims);
    if (x->rank < 0 || idx->rank < 0)
        return 0;
    int64_t axis;
    if ((err = elements_axis(n, x, &axis, error)))
        return err;
    return check_elements_shape(n, x, idx, axis, error);
}

// Whether every index of idx is within [-dim, dim).
static bool indices_in_range(const reel_tensor *idx, int64_t dim)
{
    int64_t c = count_of(idx);
    for (int64_t i = 0; i < c; i++) {
        int64_t v = index_at(idx, i);
        if (!wrap_index(&v, dim))
            return false;
    }
    return true;
}

// Whether idx's shape fits data's as check_elements_shape requires.
static bool elements_shape_ok(const reel_tensor *x, const reel_tensor *idx, int64_t axis)
{
    if (idx->rank != x->rank)
        return false;
    for (int d = 0; d < x->rank; d++)
        if (d != axis && idx->shape[d] > x->shape[d])
            return false;
    return true;
}

static int run_gather_elements(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                               const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *idx = in[1];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (!norm_axis(&axis, x->rank) || !elements_shape_ok(x, idx, axis) || !indices_in_range(idx, x->shape[axis]))
        return REEL_EINVAL;
    size_t es = reel_dtype_size(x->dtype);
    int64_t st[R], c = count_of(idx);
    strides_of(x->rank, x->shape, st);
    const char *src = x->data;
    char *dst = out[0]->data;
    walker w;
    walk_init(&w, idx->rank, idx->shape, st);
    for (int64_t i = 0; i < c; i++, walk_next(&w)) {
        int64_t v = index_at(idx, i);
        wrap_index(&v, x->shape[axis]);
        // w.off counts the axis coordinate of the indices element: replace it.
        int64_t off = w.off + (v - w.idx[axis]) * st[axis];
        copy_elem(dst + (size_t)i * es, src + (size_t)off * es, es);
    }
    return 0;
}

static const reel_op op_gather_elements = { "GatherElements", infer_gather_elements, NULL, run_gather_elements };

static int infer_scatter_elements(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_data_and_indices(g, n, 1, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *idx = reel_op_input(g, n, 1), *upd = reel_op_input(g, n, 2);
    if (!upd)
        NN_FAIL(error, REEL_EINVAL, n, "needs updates");
    if (upd->dtype != x->dtype)
        NN_FAIL(error, REEL_EINVAL, n, "updates type %s differs from data's %s", dtype_name(upd->dtype),
                dtype_name(x->dtype));
    if ((err = check_reduction(n, x->dtype, error)))
        return err;
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank, x->dims);
    if (x->rank < 0 || idx->rank < 0 || upd->rank < 0)
        return 0;
    if (upd->rank != idx->rank)
        NN_FAIL(error, REEL_EINVAL, n, "updates and indices differ in shape");
    for (int d = 0; d < idx->rank; d++)
        if (upd->dims[d] >= 0 && idx->dims[d] >= 0 && upd->dims[d] != idx->dims[d])
            NN_FAIL(error, REEL_EINVAL, n, "updates and indices differ in shape");
    int64_t axis;
    if ((err = elements_axis(n, x, &axis, error)))
        return err;
    return check_elements_shape(n, x, idx, axis, error);
}

// Updates in their order, so with duplicate indices the last one wins (none)
// or all are combined.
static int run_scatter_elements(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                                const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *idx = in[1], *upd = in[2];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    int red = reduction_of(n);
    if (red < 0 || !norm_axis(&axis, x->rank) || !elements_shape_ok(x, idx, axis) || upd->rank != idx->rank ||
        count_of(upd) != count_of(idx) || !indices_in_range(idx, x->shape[axis]))
        return REEL_EINVAL;
    size_t es = reel_dtype_size(x->dtype);
    memmove(out[0]->data, x->data, x->nbytes);
    int64_t st[R], c = count_of(idx);
    strides_of(x->rank, x->shape, st);
    const char *src = upd->data;
    char *dst = out[0]->data;
    walker w;
    walk_init(&w, idx->rank, idx->shape, st);
    for (int64_t i = 0; i < c; i++, walk_next(&w)) {
        int64_t v = index_at(idx, i);
        wrap_index(&v, x->shape[axis]);
        int64_t off = w.off + (v - w.idx[axis]) * st[axis];
        scatter_run(x->dtype, es, dst + (size_t)off * es, src + (size_t)i * es, 1, red);
    }
    return 0;
}

static const reel_op op_scatter_elements = { "ScatterElements", infer_scatter_elements, NULL, run_scatter_elements };
// Scatter: opset 9's name for ScatterElements (no reduction attribute).
static const reel_op op_scatter = { "Scatter", infer_scatter_elements, NULL, run_scatter_elements };

// ---- GatherND, ScatterND ----------------------------------------------------------

// GatherND: indices (..., m) address slices of data's dims [b, b + m) within
// each of the first b (batch_dims) dims, which data and indices share.
static int infer_gather_nd(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_data_and_indices(g, n, 1, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *idx = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (x->rank < 0 || idx->rank < 0) {
        nn_set(o, x->dtype, -1, NULL);
        return 0;
    }
    int64_t b = reel_ir_attr_int(n, "batch_dims", 0);
    if (b < 0 || b >= x->rank || b >= idx->rank)
        NN_FAIL(error, REEL_EINVAL, n, "batch_dims %" G_GINT64_FORMAT " is out of range", b);
    int64_t m = idx->dims[idx->rank - 1];
    if (m < 0) {
        nn_set(o, x->dtype, -1, NULL);
        return 0;
    }
    if (m < 1 || m > x->rank - b)
        NN_FAIL(error, REEL_EINVAL, n, "indices' last dim %" G_GINT64_FORMAT " is out of range", m);
    for (int d = 0; d < b; d++)
        if (x->dims[d] >= 0 && idx->dims[d] >= 0 && x->dims[d] != idx->dims[d])
            NN_FAIL(error, REEL_EINVAL, n, "batch dim %d differs between data and indices", d);
    int rank = idx->rank - 1 + x->rank - (int)(b + m);
    if (rank > R)
        NN_FAIL(error, REEL_EINVAL, n, "output rank %d exceeds %d", rank, R);
    int64_t dims[R];
    int k = 0;
    for (int d = 0; d < idx->rank - 1; d++)
        dims[k++] = idx->dims[d];
    for (int d = (int)(b + m); d < x->rank; d++)
        dims[k++] = x->dims[d];
    nn_set(o, x->dtype, rank, dims);
    return 0;
}

// The element offset (within one batch of data, dims from b on) of index
// tuple t[0..m), or -1 when an index is out of range.
static int64_t tuple_offset(const reel_tensor *idx, int64_t t, int64_t m, const int64_t *dims, const int64_t *st)
{
    int64_t off = 0;
    for (int64_t k = 0; k < m; k++) {
        int64_t v = index_at(idx, t * m + k);
        if (!wrap_index(&v, dims[k]))
            return -1;
        off += v * st[k];
    }
    return off;
}

// The sizes GatherND and ScatterND walk: batches, tuples per batch, elements
// per addressed slice, elements per batch of data.
typedef struct nd_view {
    int64_t batches, tuples, slice, block, m, b;
    int64_t st[R];
} nd_view;

static bool nd_view_of(const reel_tensor *x, const reel_tensor *idx, int64_t b, nd_view *v)
{
    if (idx->rank < 1 || b < 0 || b >= x->rank || b >= idx->rank)
        return false;
    v->b = b;
    v->m = idx->shape[idx->rank - 1];
    if (v->m < 1 || v->m > x->rank - b)
        return false;
    for (int d = 0; d < b; d++)
        if (x->shape[d] != idx->shape[d])
            return false;
    v->batches = reel_tensor_count((int)b, x->shape);
    v->tuples = reel_tensor_count(idx->rank - 1 - (int)b, idx->shape + b);
    v->slice = reel_tensor_count(x->rank - (int)(b + v->m), x->shape + b + v->m);
    v->block = reel_tensor_count(x->rank - (int)b, x->shape + b);
    strides_of(x->rank - (int)b, x->shape + b, v->st);
    return true;
}

static int run_gather_nd(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                         const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *idx = in[1];
    nd_view v;
    if (!nd_view_of(x, idx, reel_ir_attr_int(n, "batch_dims", 0), &v))
        return REEL_EINVAL;
    size_t es = reel_dtype_size(x->dtype), run = (size_t)v.slice * es;
    const char *src = x->data;
    char *dst = out[0]->data;
    for (int64_t bi = 0; bi < v.batches; bi++)
        for (int64_t t = 0; t < v.tuples; t++) {
            int64_t off = tuple_offset(idx, bi * v.tuples + t, v.m, x->shape + v.b, v.st);
            if (off < 0)
                return REEL_EINVAL;
            memcpy(dst, src + (size_t)(bi * v.block + off) * es, run);
            dst += run;
        }
    return 0;
}

static const reel_op op_gather_nd = { "GatherND", infer_gather_nd, NULL, run_gather_nd };

// ScatterND: updates have the shape indices.shape[:-1] + data.shape[m:].
static int infer_scatter_nd(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_data_and_indices(g, n, 1, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *idx = reel_op_input(g, n, 1), *upd = reel_op_input(g, n, 2);
    if (!upd)
        NN_FAIL(error, REEL_EINVAL, n, "needs updates");
    if (upd->dtype != x->dtype)
        NN_FAIL(error, REEL_EINVAL, n, "updates type %s differs from data's %s", dtype_name(upd->dtype),
                dtype_name(x->dtype));
    if ((err = check_reduction(n, x->dtype, error)))
        return err;
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank, x->dims);
    if (x->rank < 0 || idx->rank < 0 || upd->rank < 0 || idx->rank == 0 || idx->dims[idx->rank - 1] < 0)
        return 0;
    int64_t m = idx->dims[idx->rank - 1];
    if (m < 1 || m > x->rank)
        NN_FAIL(error, REEL_EINVAL, n, "indices' last dim %" G_GINT64_FORMAT " is out of range", m);
    int want = idx->rank - 1 + x->rank - (int)m;
    bool ok = upd->rank == want;
    for (int d = 0; ok && d < want; d++) {
        int64_t e = d < idx->rank - 1 ? idx->dims[d] : x->dims[m + d - (idx->rank - 1)];
        ok = e < 0 || upd->dims[d] < 0 || e == upd->dims[d];
    }
    if (!ok)
        NN_FAIL(error, REEL_EINVAL, n, "updates' shape does not match indices and data");
    return 0;
}

// Updates in order: with duplicate indices the last one wins (none), or all
// are combined.
static int run_scatter_nd(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                          const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *idx = in[1], *upd = in[2];
    nd_view v;
    int red = reduction_of(n);
    if (red < 0 || !nd_view_of(x, idx, 0, &v) || count_of(upd) != v.tuples * v.slice)
        return REEL_EINVAL;
    // Every tuple checked before the first write.
    for (int64_t t = 0; t < v.tuples; t++)
        if (tuple_offset(idx, t, v.m, x->shape, v.st) < 0)
            return REEL_EINVAL;
    size_t es = reel_dtype_size(x->dtype);
    memmove(out[0]->data, x->data, x->nbytes);
    const char *src = upd->data;
    char *dst = out[0]->data;
    for (int64_t t = 0; t < v.tuples; t++) {
        int64_t off = tuple_offset(idx, t, v.m, x->shape, v.st);
        scatter_run(x->dtype, es, dst + (size_t)off * es, src + (size_t)(t * v.slice) * es, v.slice, red);
    }
    return 0;
}

static const reel_op op_scatter_nd = { "ScatterND", infer_scatter_nd, NULL, run_scatter_nd };

// ---- OneHot -----------------------------------------------------------------------

// Element i of a numeric tensor as a double (indices and depth of OneHot
// may be of any numeric type).
static bool number_at(const reel_tensor *t, int64_t i, double *v)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: *v = ((const float *)t->data)[i]; break;
    case REEL_DTYPE_FLOAT64: *v = ((const double *)t->data)[i]; break;
    case REEL_DTYPE_INT64: *v = (double)((const int64_t *)t->data)[i]; break;
    case REEL_DTYPE_INT32: *v = ((const int32_t *)t->data)[i]; break;
    case REEL_DTYPE_INT16: *v = ((const int16_t *)t->data)[i]; break;
    case REEL_DTYPE_UINT16: *v = ((const uint16_t *)t->data)[i]; break;
    case REEL_DTYPE_INT8: *v = ((const int8_t *)t->data)[i]; break;
    case REEL_DTYPE_UINT8: *v = ((const uint8_t *)t->data)[i]; break;
    default: return false;
    }
    return true;
}

static bool is_number_type(reel_dtype t)
{
    return t != REEL_DTYPE_NONE && t != REEL_DTYPE_BOOL && t != REEL_DTYPE_FLOAT16 && t < REEL_DTYPE_COUNT;
}

// depth: one positive number, truncated to an integer as ONNX casts it.
static int64_t onehot_depth(const reel_tensor *t)
{
    double v;
    if (!t || count_of(t) != 1 || t->rank > 1 || !number_at(t, 0, &v) || !(v >= 1.0) || v > 1e15)
        return -1;
    return (int64_t)v;
}

static int infer_onehot(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *idx = reel_op_input(g, n, 0), *dep = reel_op_input(g, n, 1), *val = reel_op_input(g, n, 2);
    reel_ir_value *o = reel_op_output(g, n, 0);
    if (!idx || !dep || !val || !o)
        NN_FAIL(error, REEL_EINVAL, n, "needs indices, depth, values and an output");
    if (!is_number_type(idx->dtype) || !is_number_type(dep->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "indices type %s or depth type %s is not supported",
                dtype_name(idx->dtype), dtype_name(dep->dtype));
    if (reel_dtype_size(val->dtype) == 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "values type %s is not supported", dtype_name(val->dtype));
    if (val->rank == 0 || val->rank > 1 || (val->rank == 1 && val->dims[0] >= 0 && val->dims[0] != 2))
        NN_FAIL(error, REEL_EINVAL, n, "values must be a 1-D tensor of two elements (off, on)");
    if (idx->rank < 0 || idx->rank + 1 > R) {
        nn_set(o, val->dtype, -1, NULL);
        return 0;
    }
    int r = idx->rank + 1;
    int64_t axis = reel_ir_attr_int(n, "axis", -1), a = axis;
    if (!norm_axis(&a, r))
        NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, r);
    int64_t depth = REEL_DIM_UNKNOWN;
    if (dep->constant && (depth = onehot_depth(dep->constant)) < 0)
        NN_FAIL(error, REEL_EINVAL, n, "depth must be one number of at least 1");
    int64_t dims[R];
    for (int d = 0, k = 0; d < r; d++)
        dims[d] = d == a ? depth : idx->dims[k++];
    nn_set(o, val->dtype, r, dims);
    return 0;
}

// Every output element is off but for one per index, on at its position
// along axis; an index outside [-depth, depth) (before opset 11, outside
// [0, depth)) leaves its row all off, as ONNX specifies.
static int run_onehot(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    const reel_tensor *idx = in[0], *val = in[2];
    int64_t depth = onehot_depth(in[1]), axis = reel_ir_attr_int(n, "axis", -1);
    int r = idx->rank + 1;
    if (depth < 0 || count_of(val) != 2 || !norm_axis(&axis, r) || out[0]->shape[axis] != depth)
        return REEL_EINVAL;
    size_t es = reel_dtype_size(val->dtype);
    const char *off_on = val->data;
    char *y = out[0]->data;
    int64_t total = count_of(out[0]);
    for (int64_t e = 0; e < total; e++)
        memcpy(y + (size_t)e * es, off_on, es);
    int64_t outer = reel_tensor_count((int)axis, idx->shape);
    int64_t inner = reel_tensor_count(idx->rank - (int)axis, idx->shape + axis);
    double lowest = ctx->opset >= 11 ? (double)-depth : 0.0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < inner; j++) {
            double v;
            if (!number_at(idx, o * inner + j, &v))
                return REEL_EINVAL;
            if (!(v >= lowest && v < (double)depth))
                continue;
            int64_t k = (int64_t)v; // truncated toward zero, as a cast to int64
            if (k < 0)
                k += depth;
            memcpy(y + (size_t)((o * depth + k) * inner + j) * es, off_on + es, es);
        }
    return 0;
}

static const reel_op op_onehot = { "OneHot", infer_onehot, NULL, run_onehot };

// ---- NonZero, Compress --------------------------------------------------------------

// Their output shapes depend on data: exact in infer when that input is a
// constant, REEL_DIM_UNKNOWN otherwise (then the plan cannot be made).

// Whether element i is not zero (-0.0 is zero; NaN is not).
static bool nonzero_at(const reel_tensor *t, size_t es, int64_t i)
{
    double v;
    if (t->dtype == REEL_DTYPE_FLOAT32 || t->dtype == REEL_DTYPE_FLOAT64) {
        number_at(t, i, &v);
        return v != 0.0;
    }
    // Integers and bool: any set byte.
    const uint8_t *p = (const uint8_t *)t->data + (size_t)i * es;
    for (size_t b = 0; b < es; b++)
        if (p[b])
            return true;
    return false;
}

static int64_t count_nonzero(const reel_tensor *t)
{
    size_t es = reel_dtype_size(t->dtype);
    int64_t c = count_of(t), nz = 0;
    for (int64_t i = 0; i < c; i++)
        nz += nonzero_at(t, es, i);
    return nz;
}

static int infer_nonzero(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!x || !o)
        NN_FAIL(error, REEL_EINVAL, n, "needs an input and an output");
    if (reel_dtype_size(x->dtype) == 0 || x->dtype == REEL_DTYPE_FLOAT16)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input type %s is not supported", dtype_name(x->dtype));
    if (x->rank == 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a scalar input is not supported");
    int64_t dims[2] = { x->rank, x->constant ? count_nonzero(x->constant) : REEL_DIM_UNKNOWN };
    if (x->rank < 0)
        dims[0] = REEL_DIM_UNKNOWN;
    nn_set(o, REEL_DTYPE_INT64, 2, dims);
    return 0;
}

// Row d of the (rank, count) output: coordinate d of each non-zero element,
// in row-major order.
static int run_nonzero(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                       const reel_exec_ctx *ctx)
{
    (void)n, (void)ctx;
    const reel_tensor *x = in[0];
    int64_t nz = out[0]->shape[1], c = count_of(x), k = 0, coord[R] = { 0 };
    size_t es = reel_dtype_size(x->dtype);
    if (out[0]->shape[0] != x->rank || count_nonzero(x) != nz)
        return REEL_EINVAL;
    int64_t *y = out[0]->data;
    for (int64_t i = 0; i < c; i++) {
        if (nonzero_at(x, es, i)) {
            for (int d = 0; d < x->rank; d++)
                y[d * nz + k] = coord[d];
            k++;
        }
        for (int d = x->rank - 1; d >= 0 && ++coord[d] == x->shape[d]; d--)
            coord[d] = 0;
    }
    return 0;
}

static const reel_op op_nonzero = { "NonZero", infer_nonzero, NULL, run_nonzero };

// Compress keeps the slices along axis (of the flattened input without one)
// whose condition is true; a condition shorter than the axis drops the rest.
static int64_t count_true(const reel_tensor *cond)
{
    const uint8_t *c = cond->data;
    int64_t len = count_of(cond), t = 0;
    for (int64_t i = 0; i < len; i++)
        t += c[i] != 0;
    return t;
}

static int infer_compress(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *cond = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (!x || !cond || !o)
        NN_FAIL(error, REEL_EINVAL, n, "needs an input, a condition and an output");
    if (reel_dtype_size(x->dtype) == 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input type %s is not supported", dtype_name(x->dtype));
    if (cond->dtype != REEL_DTYPE_BOOL || (cond->rank >= 0 && cond->rank != 1))
        NN_FAIL(error, REEL_EINVAL, n, "condition must be a 1-D bool tensor");
    if (x->rank < 0) {
        nn_set(o, x->dtype, -1, NULL);
        return 0;
    }
    bool has_axis = reel_ir_attr_find(n, "axis") != NULL;
    int64_t axis = reel_ir_attr_int(n, "axis", 0), a = axis;
    if (has_axis && (x->rank == 0 || !norm_axis(&a, x->rank)))
        NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    int64_t len = has_axis ? x->dims[a] : reel_tensor_count(x->rank, x->dims);
    if (len >= 0 && cond->dims[0] > len)
        NN_FAIL(error, REEL_EINVAL, n, "condition (%" G_GINT64_FORMAT ") is longer than the axis (%" G_GINT64_FORMAT ")",
                cond->dims[0], len);
    int64_t kept = cond->constant ? count_true(cond->constant) : REEL_DIM_UNKNOWN;
    if (!has_axis) {
        nn_set(o, x->dtype, 1, &kept);
        return 0;
    }
    int64_t dims[R];
    memcpy(dims, x->dims, sizeof dims);
    dims[a] = kept;
    nn_set(o, x->dtype, x->rank, dims);
    return 0;
}

static int run_compress(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *cond = in[1];
    int64_t outer = 1, dim = count_of(x), inner = 1;
    if (reel_ir_attr_find(n, "axis")) {
        int64_t axis = reel_ir_attr_int(n, "axis", 0);
        if (!norm_axis(&axis, x->rank))
            return REEL_EINVAL;
        outer = reel_tensor_count((int)axis, x->shape);
        dim = x->shape[axis];
        inner = reel_tensor_count(x->rank - (int)axis - 1, x->shape + axis + 1);
    }
    int64_t len = count_of(cond), kept = count_true(cond);
    if (len > dim || outer * kept * inner != count_of(out[0]))
        return REEL_EINVAL;
    size_t run = (size_t)inner * reel_dtype_size(x->dtype);
    const uint8_t *c = cond->data;
    const char *src = x->data;
    char *dst = out[0]->data;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < len; k++)
            if (c[k]) {
                memcpy(dst, src + (size_t)(o * dim + k) * run, run);
                dst += run;
            }
    return 0;
}

static const reel_op op_compress = { "Compress", infer_compress, NULL, run_compress };

// ---- Unique -------------------------------------------------------------------------

// The items Unique compares: without an axis every element of the
// flattened input; with one, the slices along it (item k: the elements
// x[o, k, j] for every o and j, compared in that order). Its output shapes
// depend on the data, as NonZero's.
typedef struct uq_view {
    const char *x;
    reel_dtype dt;
    size_t es;
    int64_t outer, dim, inner;
} uq_view;

static bool uq_type(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64 || t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64 ||
           t == REEL_DTYPE_INT8 || t == REEL_DTYPE_UINT8;
}

#define CMP3(a, b) ((a) < (b) ? -1 : (a) > (b))
// Floats: NaN after every number and equal to every NaN, so the order is total.
#define CMP_FLOAT(a, b) (isnan(a) || isnan(b) ? (int)isnan(a) - (int)isnan(b) : CMP3(a, b))

static int uq_elem_cmp(reel_dtype dt, const char *a, const char *b)
{
    switch (dt) {
    case REEL_DTYPE_FLOAT32: return CMP_FLOAT(*(const float *)a, *(const float *)b);
    case REEL_DTYPE_FLOAT64: return CMP_FLOAT(*(const double *)a, *(const double *)b);
    case REEL_DTYPE_INT32: return CMP3(*(const int32_t *)a, *(const int32_t *)b);
    case REEL_DTYPE_INT64: return CMP3(*(const int64_t *)a, *(const int64_t *)b);
    case REEL_DTYPE_INT8: return CMP3(*(const int8_t *)a, *(const int8_t *)b);
    default: return CMP3(*(const uint8_t *)a, *(const uint8_t *)b);
    }
}

static int uq_item_cmp(const uq_view *v, int64_t a, int64_t b)
{
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t j = 0; j < v->inner; j++) {
            size_t ea = (size_t)((o * v->dim + a) * v->inner + j), eb = (size_t)((o * v->dim + b) * v->inner + j);
            int c = uq_elem_cmp(v->dt, v->x + ea * v->es, v->x + eb * v->es);
            if (c)
                return c;
        }
    return 0;
}

// Stable merge sort of the items idx[0..n) (tmp: room for n).
static void uq_sort(const uq_view *v, int64_t *idx, int64_t *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t h = n / 2;
    uq_sort(v, idx, tmp, h);
    uq_sort(v, idx + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = uq_item_cmp(v, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
    while (i < h)
        tmp[k++] = idx[i++];
    while (j < n)
        tmp[k++] = idx[j++];
    memcpy(idx, tmp, sizeof *idx * (size_t)n);
}

// The unique items: u of them, each with its first position and count, and
// the group of every item (inverse), the groups in sorted order or in the
// order of their first occurrence.
typedef struct uq_result {
    int64_t u;
    int64_t *first, *count, *inverse; // dim entries each (u used in the first two)
} uq_result;

static void uq_result_free(uq_result *r)
{
    g_free(r->first);
    g_free(r->count);
    g_free(r->inverse);
}

static bool uq_view_of(const reel_ir_node *n, const reel_tensor *x, uq_view *v)
{
    *v = (uq_view){ .x = x->data, .dt = x->dtype, .es = reel_dtype_size(x->dtype), .outer = 1,
                    .dim = count_of(x), .inner = 1 };
    if (!reel_ir_attr_find(n, "axis"))
        return true;
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (!norm_axis(&axis, x->rank))
        return false;
    v->outer = reel_tensor_count((int)axis, x->shape);
    v->dim = x->shape[axis];
    v->inner = reel_tensor_count(x->rank - (int)axis - 1, x->shape + axis + 1);
    return true;
}

static int uq_compute(const uq_view *v, bool sorted, uq_result *r)
{
    int64_t d = v->dim, m = MAX(1, d);
    int64_t *order = g_try_new(int64_t, m), *tmp = g_try_new(int64_t, m), *remap = g_try_new(int64_t, m);
    *r = (uq_result){ 0, g_try_new(int64_t, m), g_try_new(int64_t, m), g_try_new(int64_t, m) };
    int rc = 0;
    if (!order || !tmp || !remap || !r->first || !r->count || !r->inverse) {
        rc = REEL_ENOMEM;
        goto out;
    }
    for (int64_t i = 0; i < d; i++)
        order[i] = i;
    uq_sort(v, order, tmp, d);
    // Runs of equal items in sorted order; stability puts each run's first
    // occurrence at its head.
    for (int64_t i = 0; i < d; i++) {
        if (i == 0 || uq_item_cmp(v, order[i - 1], order[i]) != 0) {
            r->first[r->u] = order[i];
            r->count[r->u++] = 0;
        }
        r->count[r->u - 1]++;
        r->inverse[order[i]] = r->u - 1;
    }
    if (!sorted) {
        // Renumber the groups by first occurrence: walk the items in order.
        int64_t next = 0;
        for (int64_t g = 0; g < r->u; g++)
            remap[g] = -1;
        for (int64_t i = 0; i < d; i++)
            if (remap[r->inverse[i]] < 0)
                remap[r->inverse[i]] = next++;
        for (int64_t g = 0; g < r->u; g++) {
            tmp[remap[g]] = r->first[g];
            order[remap[g]] = r->count[g];
        }
        memcpy(r->first, tmp, sizeof *tmp * (size_t)r->u);
        memcpy(r->count, order, sizeof *order * (size_t)r->u);
        for (int64_t i = 0; i < d; i++)
            r->inverse[i] = remap[r->inverse[i]];
    }
out:
    g_free(order);
    g_free(tmp);
    g_free(remap);
    if (rc)
        uq_result_free(r);
    return rc;
}

static int infer_unique(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *y = reel_op_output(g, n, 0);
    if (!x || !y)
        NN_FAIL(error, REEL_EINVAL, n, "needs an input and an output");
    if (!uq_type(x->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input type %s is not supported", dtype_name(x->dtype));
    int64_t s = reel_ir_attr_int(n, "sorted", 1);
    if (s != 0 && s != 1)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'sorted' = %" G_GINT64_FORMAT " is not supported", s);
    bool has_axis = reel_ir_attr_find(n, "axis") != NULL;
    int64_t axis = reel_ir_attr_int(n, "axis", 0), a = axis;
    if (x->rank < 0) {
        nn_set(y, x->dtype, has_axis ? -1 : 1, NULL);
        for (int i = 1; i < 4; i++)
            nn_set(reel_op_output(g, n, i), REEL_DTYPE_INT64, 1, NULL);
        return 0;
    }
    if (has_axis && (x->rank == 0 || !norm_axis(&a, x->rank)))
        NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    int64_t u = REEL_DIM_UNKNOWN, items = has_axis ? x->dims[a] : reel_tensor_count(x->rank, x->dims);
    if (x->constant) {
        uq_view v;
        uq_result r;
        if (!uq_view_of(n, x->constant, &v) || uq_compute(&v, s != 0, &r))
            NN_FAIL(error, REEL_ENOMEM, n, "out of memory");
        u = r.u;
        uq_result_free(&r);
    }
    int64_t dims[R];
    if (has_axis) {
        memcpy(dims, x->dims, sizeof dims);
        dims[a] = u;
        nn_set(y, x->dtype, x->rank, dims);
    } else {
        nn_set(y, x->dtype, 1, &u);
    }
    nn_set(reel_op_output(g, n, 1), REEL_DTYPE_INT64, 1, &u);
    nn_set(reel_op_output(g, n, 2), REEL_DTYPE_INT64, 1, &items);
    nn_set(reel_op_output(g, n, 3), REEL_DTYPE_INT64, 1, &u);
    return 0;
}

// The optional output i of n, or NULL.
static reel_tensor *opt_out(const reel_ir_node *n, reel_tensor *const *out, int i)
{
    return n->n_outputs > i ? out[i] : NULL;
}

static int run_unique(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    (void)ctx;
    uq_view v;
    uq_result r;
    if (!uq_view_of(n, in[0], &v))
        return REEL_EINVAL;
    int rc = uq_compute(&v, reel_ir_attr_int(n, "sorted", 1) != 0, &r);
    if (rc)
        return rc;
    reel_tensor *first = opt_out(n, out, 1), *inverse = opt_out(n, out, 2), *counts = opt_out(n, out, 3);
    // The outputs were sized by infer on the same values.
    if (count_of(out[0]) != v.outer * r.u * v.inner || (first && count_of(first) != r.u) ||
        (inverse && count_of(inverse) != v.dim) || (counts && count_of(counts) != r.u)) {
        uq_result_free(&r);
        return REEL_EINVAL;
    }
    size_t run = (size_t)v.inner * v.es;
    char *y = out[0]->data;
    for (int64_t o = 0; o < v.outer; o++)
        for (int64_t g = 0; g < r.u; g++)
            memcpy(y + (size_t)(o * r.u + g) * run, v.x + (size_t)(o * v.dim + r.first[g]) * run, run);
    if (first)
        memcpy(first->data, r.first, sizeof(int64_t) * (size_t)r.u);
    if (inverse)
        memcpy(inverse->data, r.inverse, sizeof(int64_t) * (size_t)v.dim);
    if (counts)
        memcpy(counts->data, r.count, sizeof(int64_t) * (size_t)r.u);
    uq_result_free(&r);
    return 0;
}

static const reel_op op_unique = { "Unique", infer_unique, NULL, run_unique };

const reel_op *const reel_ops_index[] = {
    &op_gather_elements, &op_scatter_elements, &op_scatter, &op_gather_nd, &op_scatter_nd,
    &op_onehot,          &op_nonzero,          &op_compress, &op_unique,   NULL,
};

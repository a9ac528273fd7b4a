// Layout ops: Size, Trilu, Range, CumSum, Tile, DepthToSpace, SpaceToDepth,
// EyeLike, ReverseSequence. Most only move elements, so their kernels work
// per element size; Range and CumSum compute, per type. Output shapes that
// depend on input data (Range, Tile's repeats) are exact in infer when
// those inputs are constants and REEL_DIM_UNKNOWN otherwise.
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "models/cpu/nn.h"
#include "models/op.h"

#define R REEL_TENSOR_MAX_RANK

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static const char *type_name(reel_dtype t)
{
    const char *s = reel_dtype_name(t);
    return s ? s : "unknown";
}

static int set_out(reel_ir_value *o, reel_dtype dtype, int rank, const int64_t *dims)
{
    o->dtype = dtype;
    o->rank = rank;
    for (int i = 0; i < rank; i++)
        o->dims[i] = dims ? dims[i] : REEL_DIM_UNKNOWN;
    return 0;
}

static int need_io(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x || !reel_op_output(g, n, 0))
        return reel_op_fail(error, n, REEL_EINVAL, "needs an input and an output");
    if (reel_dtype_size(x->dtype) == 0)
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported", type_name(x->dtype));
    return 0;
}

// A 0/1 attribute; -1 when it holds another value.
static int flag_attr(const reel_ir_node *n, const char *name, int def)
{
    int64_t v = reel_ir_attr_int(n, name, def);
    return v == 0 || v == 1 ? (int)v : -1;
}

// A dim times k (k >= 0), unknown staying unknown; INT64_MAX when it
// overflows, which the shape checks after infer refuse.
static int64_t dim_mul(int64_t d, int64_t k)
{
    int64_t r;
    if (d < 0)
        return REEL_DIM_UNKNOWN;
    return __builtin_mul_overflow(d, k, &r) ? INT64_MAX : r;
}

// n elements from src (element stride ss) to dst (stride ds), es bytes each.
static void copy_elems(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t es)
{
    switch (es) {
    case 4: {
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s = (const uint32_t *)src;
        for (int64_t i = 0; i < n; i++)
            d[i * ds] = s[i * ss];
        break;
    }
    case 8: {
        uint64_t *d = (uint64_t *)dst;
        const uint64_t *s = (const uint64_t *)src;
        for (int64_t i = 0; i < n; i++)
            d[i * ds] = s[i * ss];
        break;
    }
    case 2: {
        uint16_t *d = (uint16_t *)dst;
        const uint16_t *s = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++)
            d[i * ds] = s[i * ss];
        break;
    }
    case 1:
        for (int64_t i = 0; i < n; i++)
            dst[i * ds] = src[i * ss];
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + i * ds * (int64_t)es, src + i * ss * (int64_t)es, es);
        break;
    }
}

// ---- Size -------------------------------------------------------------------

static int infer_size(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    return set_out(reel_op_output(g, n, 0), REEL_DTYPE_INT64, 0, NULL);
}

static int run_size(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                    const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    *(int64_t *)out[0]->data = count_of(in[0]);
    return 0;
}
static const reel_op op_size = { .name = "Size", .infer = infer_size, .run = run_size };

// ---- Trilu ------------------------------------------------------------------

static int infer_trilu(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *k = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (flag_attr(n, "upper", 1) < 0)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'upper' = %" G_GINT64_FORMAT " is not supported",
                            reel_ir_attr_int(n, "upper", 1));
    if (k && (k->dtype != REEL_DTYPE_INT64 || k->rank > 1 || (k->rank == 1 && k->dims[0] >= 0 && k->dims[0] != 1)))
        return reel_op_fail(error, n, REEL_EINVAL, "k must be one int64");
    if (x->rank >= 0 && x->rank < 2)
        return reel_op_fail(error, n, REEL_EINVAL, "input rank %d is not supported (2 or more)", x->rank);
    return set_out(o, x->dtype, x->rank, x->rank > 0 ? x->dims : NULL);
}

// Each row keeps the columns [lo, hi) of its diagonal band and zeroes the rest.
static int run_trilu(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0];
    bool upper = reel_ir_attr_int(n, "upper", 1) != 0;
    int64_t k = 0;
    if (n->n_inputs > 1 && in[1]) {
        if (in[1]->dtype != REEL_DTYPE_INT64 || count_of(in[1]) != 1)
            return REEL_EINVAL;
        k = *(const int64_t *)in[1]->data;
    }
    int64_t rows = x->shape[x->rank - 2], cols = x->shape[x->rank - 1], total = count_of(x);
    if (total == 0)
        return 0;
    // Past these bounds every row is all kept or all zero: clamping keeps i + k in range.
    k = k < -rows - 1 ? -rows - 1 : k > cols + 1 ? cols + 1 : k;
    size_t es = reel_dtype_size(x->dtype);
    const char *src = x->data;
    char *dst = out[0]->data;
    for (int64_t r = 0; r < total / cols; r++) {
        int64_t i = r % rows, lo = 0, hi = cols;
        if (upper)
            lo = i + k < 0 ? 0 : i + k > cols ? cols : i + k;
        else
            hi = i + k + 1 < 0 ? 0 : i + k + 1 > cols ? cols : i + k + 1;
        const char *s = src + r * cols * (int64_t)es;
        char *d = dst + r * cols * (int64_t)es;
        memset(d, 0, (size_t)lo * es);
        memcpy(d + lo * (int64_t)es, s + lo * (int64_t)es, (size_t)(hi - lo) * es);
        memset(d + hi * (int64_t)es, 0, (size_t)(cols - hi) * es);
    }
    return 0;
}
static const reel_op op_trilu = { .name = "Trilu", .infer = infer_trilu, .run = run_trilu };

// ---- Range ------------------------------------------------------------------

static bool range_type(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64 || t == REEL_DTYPE_INT16 ||
           t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64;
}

static bool is_float(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64;
}

static double scalar_f(const reel_tensor *t)
{
    return t->dtype == REEL_DTYPE_FLOAT32 ? *(const float *)t->data : *(const double *)t->data;
}

static int64_t scalar_i(const reel_tensor *t)
{
    switch (t->dtype) {
    case REEL_DTYPE_INT16:
        return *(const int16_t *)t->data;
    case REEL_DTYPE_INT32:
        return *(const int32_t *)t->data;
    default:
        return *(const int64_t *)t->data;
    }
}

// Elements of Range(start, limit, delta): max(ceil((limit - start) / delta), 0).
// -1 when delta is 0, -2 when the count is not finite or too large.
static int64_t range_count(const reel_tensor *start, const reel_tensor *limit, const reel_tensor *delta)
{
    if (is_float(start->dtype)) {
        double s = scalar_f(start), l = scalar_f(limit), d = scalar_f(delta);
        if (d == 0)
            return -1;
        double c = ceil((l - s) / d);
        if (!(c < 9e15)) // also NaN
            return -2;
        return c > 0 ? (int64_t)c : 0;
    }
    int64_t s = scalar_i(start), l = scalar_i(limit), d = scalar_i(delta);
    if (d == 0)
        return -1;
    if ((s > 0 && l < INT64_MIN + s) || (s < 0 && l > INT64_MAX + s))
        return -2;
    int64_t diff = l - s;
    if ((diff > 0) != (d > 0) || diff == 0)
        return 0;
    return diff / d + (diff % d != 0);
}

static int infer_range(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *v[3], *o = reel_op_output(g, n, 0);
    for (int i = 0; i < 3; i++)
        v[i] = reel_op_input(g, n, i);
    if (!v[0] || !v[1] || !v[2] || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs start, limit, delta and an output");
    if (!range_type(v[0]->dtype))
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported", type_name(v[0]->dtype));
    bool known = true;
    for (int i = 0; i < 3; i++) {
        if (v[i]->dtype != v[0]->dtype)
            return reel_op_fail(error, n, REEL_EINVAL, "start, limit and delta must have one type");
        if (v[i]->rank > 1 || (v[i]->rank == 1 && v[i]->dims[0] > 1) ||
            (v[i]->constant && count_of(v[i]->constant) != 1))
            return reel_op_fail(error, n, REEL_EINVAL, "input %d must be a scalar", i);
        known = known && v[i]->constant;
    }
    if (!known)
        return set_out(o, v[0]->dtype, 1, NULL);
    int64_t c = range_count(v[0]->constant, v[1]->constant, v[2]->constant);
    if (c == -1)
        return reel_op_fail(error, n, REEL_EINVAL, "delta is 0");
    if (c < 0)
        return reel_op_fail(error, n, REEL_EINVAL, "the range's length is not finite or too large");
    return set_out(o, v[0]->dtype, 1, &c);
}

// Element i is start + i * delta, in the output's type, as ONNX defines it.
static int run_range(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    for (int i = 0; i < 3; i++)
        if (count_of(in[i]) != 1 || in[i]->dtype != out[0]->dtype)
            return REEL_EINVAL;
    int64_t c = count_of(out[0]);
    void *o = out[0]->data;
    switch (out[0]->dtype) {
    case REEL_DTYPE_FLOAT32: {
        float s = *(const float *)in[0]->data, d = *(const float *)in[2]->data;
        for (int64_t i = 0; i < c; i++)
            ((float *)o)[i] = s + (float)i * d;
        break;
    }
    case REEL_DTYPE_FLOAT64: {
        double s = *(const double *)in[0]->data, d = *(const double *)in[2]->data;
        for (int64_t i = 0; i < c; i++)
            ((double *)o)[i] = s + (double)i * d;
        break;
    }
    case REEL_DTYPE_INT16:
    case REEL_DTYPE_INT32:
    case REEL_DTYPE_INT64: {
        int64_t s = scalar_i(in[0]), d = scalar_i(in[2]);
        for (int64_t i = 0; i < c; i++) {
            int64_t v = s + i * d;
            if (out[0]->dtype == REEL_DTYPE_INT16)
                ((int16_t *)o)[i] = (int16_t)v;
            else if (out[0]->dtype == REEL_DTYPE_INT32)
                ((int32_t *)o)[i] = (int32_t)v;
            else
                ((int64_t *)o)[i] = v;
        }
        break;
    }
    default:
        return REEL_EINVAL;
    }
    return 0;
}
static const reel_op op_range = { .name = "Range", .infer = infer_range, .run = run_range };

// ---- CumSum -----------------------------------------------------------------

static bool cumsum_type(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64 || t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64;
}

// The axis input's value normalised to [0, rank); false when malformed or out of range.
static bool cumsum_axis(const reel_tensor *a, int rank, int64_t *axis)
{
    int64_t v[1];
    if (!a || reel_tensor_ints(a, v, 1) != 1)
        return false;
    int r = rank > 0 ? rank : 1;
    if (v[0] < -r || v[0] >= r)
        return false;
    *axis = v[0] < 0 ? v[0] + r : v[0];
    return true;
}

static int infer_cumsum(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *a = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (!cumsum_type(x->dtype))
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported", type_name(x->dtype));
    if (!a || (a->dtype != REEL_DTYPE_INT32 && a->dtype != REEL_DTYPE_INT64) || a->rank > 1)
        return reel_op_fail(error, n, REEL_EINVAL, "axis must be an int32 or int64 scalar");
    if (flag_attr(n, "exclusive", 0) < 0)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'exclusive' = %" G_GINT64_FORMAT " is not supported",
                            reel_ir_attr_int(n, "exclusive", 0));
    if (flag_attr(n, "reverse", 0) < 0)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'reverse' = %" G_GINT64_FORMAT " is not supported",
                            reel_ir_attr_int(n, "reverse", 0));
    int64_t axis;
    if (a->constant && x->rank >= 0 && !cumsum_axis(a->constant, x->rank, &axis))
        return reel_op_fail(error, n, REEL_EINVAL, "axis is not one value in range for rank %d", x->rank);
    return set_out(o, x->dtype, x->rank, x->rank > 0 ? x->dims : NULL);
}

// Sums along the axis a row of `inner` elements at a time, so the inner
// loops are contiguous; reverse walks the rows from the end.
#define CUMSUM_FN(name, T)                                                                                 \
    static void name(const void *xv, void *ov, int64_t outer, int64_t len, int64_t inner, bool excl,      \
                     bool rev)                                                                             \
    {                                                                                                      \
        for (int64_t b = 0; b < outer; b++) {                                                              \
            const T *x = (const T *)xv + b * len * inner;                                                  \
            T *o = (T *)ov + b * len * inner;                                                              \
            for (int64_t s = 0; s < len; s++) {                                                            \
                int64_t i = rev ? len - 1 - s : s, prev = rev ? i + 1 : i - 1;                             \
                T *restrict q = o + i * inner;                                                             \
                const T *restrict a = x + (excl ? prev : i) * inner;                                       \
                if (s == 0) {                                                                              \
                    for (int64_t j = 0; j < inner; j++)                                                    \
                        q[j] = excl ? 0 : x[i * inner + j];                                                \
                    continue;                                                                              \
                }                                                                                          \
                const T *restrict p = o + prev * inner;                                                    \
                for (int64_t j = 0; j < inner; j++)                                                        \
                    q[j] = p[j] + a[j];                                                                    \
            }                                                                                              \
        }                                                                                                  \
    }

CUMSUM_FN(cumsum_f32, float)
CUMSUM_FN(cumsum_f64, double)
CUMSUM_FN(cumsum_i32, int32_t)
CUMSUM_FN(cumsum_i64, int64_t)

static int run_cumsum(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0];
    int64_t axis;
    if (!cumsum_axis(in[1], x->rank, &axis))
        return REEL_EINVAL;
    int64_t outer = 1, len = x->rank > 0 ? x->shape[axis] : 1, inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < axis)
            outer *= x->shape[d];
        else if (d > axis)
            inner *= x->shape[d];
    }
    bool excl = reel_ir_attr_int(n, "exclusive", 0) != 0, rev = reel_ir_attr_int(n, "reverse", 0) != 0;
    if (count_of(x) == 0)
        return 0;
    switch (x->dtype) {
    case REEL_DTYPE_FLOAT32:
        cumsum_f32(x->data, out[0]->data, outer, len, inner, excl, rev);
        break;
    case REEL_DTYPE_FLOAT64:
        cumsum_f64(x->data, out[0]->data, outer, len, inner, excl, rev);
        break;
    case REEL_DTYPE_INT32:
        cumsum_i32(x->data, out[0]->data, outer, len, inner, excl, rev);
        break;
    case REEL_DTYPE_INT64:
        cumsum_i64(x->data, out[0]->data, outer, len, inner, excl, rev);
        break;
    default:
        return REEL_EINVAL;
    }
    return 0;
}
static const reel_op op_cumsum = { .name = "CumSum", .infer = infer_cumsum, .run = run_cumsum };

// ---- Tile -------------------------------------------------------------------

static int infer_tile(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    if (g->opset < 6)
        return reel_op_fail(error, n, REEL_EUNSUPPORTED,
                            "Tile before opset 6 (tiles and axis inputs) is not supported");
    reel_ir_value *x = reel_op_input(g, n, 0), *rv = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (!rv || rv->dtype != REEL_DTYPE_INT64 || rv->rank != 1)
        return reel_op_fail(error, n, REEL_EINVAL, "repeats must be a 1-D int64 tensor");
    if (x->rank < 0)
        return set_out(o, x->dtype, -1, NULL);
    if (rv->dims[0] >= 0 && rv->dims[0] != x->rank)
        return reel_op_fail(error, n, REEL_EINVAL, "repeats has %" G_GINT64_FORMAT " entries for rank %d",
                            rv->dims[0], x->rank);
    if (!rv->constant)
        return set_out(o, x->dtype, x->rank, NULL);
    int64_t rep[R], dims[R];
    if (reel_tensor_ints(rv->constant, rep, R) != x->rank)
        return reel_op_fail(error, n, REEL_EINVAL, "repeats must hold one entry per input dim");
    for (int d = 0; d < x->rank; d++) {
        if (rep[d] < 0)
            return reel_op_fail(error, n, REEL_EINVAL, "repeats entry %d is negative", d);
        dims[d] = dim_mul(x->dims[d], rep[d]);
    }
    if (reel_tensor_count(x->rank, dims) < 0 && reel_tensor_count(x->rank, x->dims) >= 0)
        return reel_op_fail(error, n, REEL_EINVAL, "the tiled shape overflows");
    return set_out(o, x->dtype, x->rank, dims);
}

// Each output row (along the last dim) is its input row repeated; the
// input row of an output row is its index modulo the input's dims.
static int run_tile(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                    const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    const reel_tensor *x = in[0];
    reel_tensor *o = out[0];
    size_t es = reel_dtype_size(x->dtype);
    int64_t total = count_of(o);
    if (total == 0)
        return 0;
    if (x->rank == 0) {
        memcpy(o->data, x->data, es);
        return 0;
    }
    int r = x->rank;
    int64_t xst[R], s = 1;
    for (int d = r - 1; d >= 0; d--) {
        xst[d] = s;
        s *= x->shape[d];
    }
    int64_t row = x->shape[r - 1], reps = o->shape[r - 1] / row, idx[R] = { 0 };
    size_t rbytes = (size_t)row * es;
    char *dst = o->data;
    for (int64_t k = 0; k < total / o->shape[r - 1]; k++) {
        int64_t off = 0;
        for (int d = 0; d < r - 1; d++)
            off += (idx[d] % x->shape[d]) * xst[d];
        const char *src = (const char *)x->data + off * (int64_t)es;
        for (int64_t t = 0; t < reps; t++, dst += rbytes)
            memcpy(dst, src, rbytes);
        for (int d = r - 2; d >= 0 && ++idx[d] == o->shape[d]; d--)
            idx[d] = 0;
    }
    return 0;
}
static const reel_op op_tile = { .name = "Tile", .infer = infer_tile, .run = run_tile };

// ---- DepthToSpace, SpaceToDepth ----------------------------------------------

// DepthToSpace's mode: 0 DCR (depth, column, row: the default), 1 CRD; -1 other.
static int d2s_mode(const reel_ir_node *n)
{
    const char *m = reel_ir_attr_string(n, "mode", "DCR");
    return strcmp(m, "DCR") == 0 ? 0 : strcmp(m, "CRD") == 0 ? 1 : -1;
}

static int infer_space_depth(reel_ir_graph *g, reel_ir_node *n, GError **error, bool to_space)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    int64_t b = reel_ir_attr_int(n, "blocksize", 0);
    if (b < 1 || b > 65536)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'blocksize' = %" G_GINT64_FORMAT " is not supported", b);
    if (to_space && d2s_mode(n) < 0)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'mode' = '%s' is not supported",
                            reel_ir_attr_string(n, "mode", ""));
    if (x->rank < 0)
        return set_out(o, x->dtype, 4, NULL);
    if (x->rank != 4)
        return reel_op_fail(error, n, REEL_EINVAL, "input rank %d is not supported (4: N, C, H, W)", x->rank);
    int64_t dims[4] = { x->dims[0], x->dims[1], x->dims[2], x->dims[3] };
    if (to_space) {
        if (dims[1] >= 0 && dims[1] % (b * b))
            return reel_op_fail(error, n, REEL_EINVAL,
                                "channels %" G_GINT64_FORMAT " are not a multiple of %" G_GINT64_FORMAT,
                                dims[1], b * b);
        dims[1] = dims[1] < 0 ? REEL_DIM_UNKNOWN : dims[1] / (b * b);
        dims[2] = dim_mul(dims[2], b);
        dims[3] = dim_mul(dims[3], b);
    } else {
        for (int d = 2; d < 4; d++) {
            if (dims[d] >= 0 && dims[d] % b)
                return reel_op_fail(error, n, REEL_EINVAL,
                                    "dim %d (%" G_GINT64_FORMAT ") is not a multiple of %" G_GINT64_FORMAT,
                                    d, dims[d], b);
            dims[d] = dims[d] < 0 ? REEL_DIM_UNKNOWN : dims[d] / b;
        }
        dims[1] = dim_mul(dims[1], b * b);
    }
    return set_out(o, x->dtype, 4, dims);
}

static int infer_depth_to_space(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    return infer_space_depth(g, n, error, true);
}

static int infer_space_to_depth(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    return infer_space_depth(g, n, error, false);
}

// The small (N, C, H, W) side is `deep` (C = oc * b * b), the large one
// `wide` (oc, H * b, W * b): element (c, h*b + i, w*b + j) of `wide` is
// channel (i*b + j)*oc + c (DCR) or c*b*b + i*b + j (CRD) at (h, w) of
// `deep`. DepthToSpace copies deep to wide, SpaceToDepth (DCR) back; one
// task per (n, c, h), the b output rows it fills.
typedef struct space_depth_job {
    char *deep, *wide;
    int64_t C, H, W, oc, b;
    size_t es;
    bool crd, to_space;
} space_depth_job;

static void space_depth_task(void *arg, int task, int worker)
{
    (void)worker;
    const space_depth_job *j = arg;
    int64_t b = j->b, h = task % j->H, c = task / j->H % j->oc, nn = task / j->H / j->oc;
    for (int64_t i = 0; i < b; i++)
        for (int64_t k = 0; k < b; k++) {
            int64_t ch = j->crd ? c * b * b + i * b + k : (i * b + k) * j->oc + c;
            int64_t dp = ((nn * j->C + ch) * j->H + h) * j->W;
            int64_t wp = ((nn * j->oc + c) * j->H * b + h * b + i) * j->W * b + k;
            char *d = j->deep + dp * (int64_t)j->es, *w = j->wide + wp * (int64_t)j->es;
            if (j->to_space)
                copy_elems(w, b, d, 1, j->W, j->es);
            else
                copy_elems(d, 1, w, b, j->W, j->es);
        }
}

static int space_depth(const reel_tensor *deep, const reel_tensor *wide, int64_t b, bool crd, bool to_space,
                       const reel_exec_ctx *ctx)
{
    space_depth_job j = { .deep = deep->data, .wide = wide->data, .C = deep->shape[1], .H = deep->shape[2],
                          .W = deep->shape[3], .oc = wide->shape[1], .b = b, .es = reel_dtype_size(deep->dtype),
                          .crd = crd, .to_space = to_space };
    int64_t tasks = deep->shape[0] * j.oc * j.H;
    if (tasks > INT32_MAX)
        return REEL_EINVAL;
    if (tasks > 0 && j.W > 0)
        nn_parallel(ctx, (int)tasks, space_depth_task, &j);
    return 0;
}

static int run_depth_to_space(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                              const reel_exec_ctx *ctx)
{
    int mode = d2s_mode(n);
    if (mode < 0)
        return REEL_EINVAL;
    return space_depth(in[0], out[0], reel_ir_attr_int(n, "blocksize", 1), mode == 1, true, ctx);
}

static int run_space_to_depth(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                              const reel_exec_ctx *ctx)
{
    return space_depth(out[0], in[0], reel_ir_attr_int(n, "blocksize", 1), false, false, ctx);
}
static const reel_op op_depth_to_space = {
    .name = "DepthToSpace", .infer = infer_depth_to_space, .run = run_depth_to_space
};
static const reel_op op_space_to_depth = {
    .name = "SpaceToDepth", .infer = infer_space_to_depth, .run = run_space_to_depth
};

// ---- EyeLike ----------------------------------------------------------------

// ONNX's TensorProto data types that EyeLike can write.
static reel_dtype onnx_type(int64_t t)
{
    switch (t) {
    case 1: return REEL_DTYPE_FLOAT32;
    case 2: return REEL_DTYPE_UINT8;
    case 3: return REEL_DTYPE_INT8;
    case 4: return REEL_DTYPE_UINT16;
    case 5: return REEL_DTYPE_INT16;
    case 6: return REEL_DTYPE_INT32;
    case 7: return REEL_DTYPE_INT64;
    case 9: return REEL_DTYPE_BOOL;
    case 10: return REEL_DTYPE_FLOAT16;
    case 11: return REEL_DTYPE_FLOAT64;
    default: return REEL_DTYPE_NONE;
    }
}

static int infer_eye_like(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    reel_dtype t = x->dtype;
    const reel_ir_attr *dt = reel_ir_attr_find(n, "dtype");
    if (dt) {
        t = dt->type == REEL_ATTR_INT ? onnx_type(dt->i) : REEL_DTYPE_NONE;
        if (t == REEL_DTYPE_NONE)
            return reel_op_fail(error, n, REEL_EINVAL, "attribute 'dtype' = %" G_GINT64_FORMAT " is not supported",
                                dt->i);
    }
    if (x->rank >= 0 && x->rank != 2)
        return reel_op_fail(error, n, REEL_EINVAL, "input rank %d is not supported (2 only)", x->rank);
    return set_out(o, t, 2, x->rank == 2 ? x->dims : NULL);
}

// Writes 1 in type t at p.
static void put_one(char *p, reel_dtype t)
{
    switch (t) {
    case REEL_DTYPE_FLOAT32: *(float *)p = 1.0f; break;
    case REEL_DTYPE_FLOAT64: *(double *)p = 1.0; break;
    case REEL_DTYPE_FLOAT16: *(uint16_t *)p = 0x3c00; break;
    case REEL_DTYPE_INT16: case REEL_DTYPE_UINT16: *(uint16_t *)p = 1; break;
    case REEL_DTYPE_INT32: *(int32_t *)p = 1; break;
    case REEL_DTYPE_INT64: *(int64_t *)p = 1; break;
    default: *(uint8_t *)p = 1; break;
    }
}

// Ones on the k-th diagonal (k > 0 above the main one), zeros elsewhere.
static int run_eye_like(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    (void)in;
    (void)ctx;
    reel_tensor *o = out[0];
    int64_t rows = o->shape[0], cols = o->shape[1], k = reel_ir_attr_int(n, "k", 0);
    size_t es = reel_dtype_size(o->dtype);
    memset(o->data, 0, o->nbytes);
    for (int64_t i = 0; i < rows; i++) {
        // j = i + k, tested without overflowing for a huge k.
        if ((k >= 0 && k < cols && i < cols - k) || (k < 0 && i >= -k && i + k < cols))
            put_one((char *)o->data + (i * cols + i + k) * (int64_t)es, o->dtype);
    }
    return 0;
}
static const reel_op op_eye_like = { .name = "EyeLike", .infer = infer_eye_like, .run = run_eye_like };

// ---- ReverseSequence ----------------------------------------------------------

static int infer_reverse_sequence(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *lens = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    int64_t ba = reel_ir_attr_int(n, "batch_axis", 1), ta = reel_ir_attr_int(n, "time_axis", 0);
    if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
        return reel_op_fail(error, n, REEL_EINVAL,
                            "attributes 'batch_axis' = %" G_GINT64_FORMAT " and 'time_axis' = %" G_GINT64_FORMAT
                            " are not supported (0 and 1, different)", ba, ta);
    if (!lens || lens->dtype != REEL_DTYPE_INT64 || lens->rank != 1)
        return reel_op_fail(error, n, REEL_EINVAL, "sequence_lens must be a 1-D int64 tensor");
    if (x->rank >= 0 && x->rank < 2)
        return reel_op_fail(error, n, REEL_EINVAL, "input rank %d is not supported (2 or more)", x->rank);
    if (x->rank >= 2 && x->dims[ba] >= 0 && lens->dims[0] >= 0 && lens->dims[0] != x->dims[ba])
        return reel_op_fail(error, n, REEL_EINVAL,
                            "sequence_lens has %" G_GINT64_FORMAT " entries for a batch of %" G_GINT64_FORMAT,
                            lens->dims[0], x->dims[ba]);
    return set_out(o, x->dtype, x->rank, x->rank > 0 ? x->dims : NULL);
}

// Per batch entry, its first len time steps reversed, the rest copied; a
// step is a run of the dims after the first two.
static int run_reverse_sequence(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                                const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *lens = in[1];
    int ba = reel_ir_attr_int(n, "batch_axis", 1) == 0 ? 0 : 1, ta = 1 - ba;
    int64_t batch = x->shape[ba], steps = x->shape[ta];
    if (lens->dtype != REEL_DTYPE_INT64 || count_of(lens) != batch)
        return REEL_EINVAL;
    const int64_t *len = lens->data;
    for (int64_t b = 0; b < batch; b++)
        if (len[b] < 0 || len[b] > steps)
            return REEL_EINVAL;
    size_t es = reel_dtype_size(x->dtype);
    int64_t inner = 1;
    for (int d = 2; d < x->rank; d++)
        inner *= x->shape[d];
    if (count_of(x) == 0)
        return 0;
    int64_t st[2] = { x->shape[1] * inner, inner }; // element strides of dims 0 and 1
    size_t bytes = (size_t)inner * es;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t t = 0; t < steps; t++) {
            int64_t from = t < len[b] ? len[b] - 1 - t : t;
            memcpy((char *)out[0]->data + (b * st[ba] + t * st[ta]) * (int64_t)es,
                   (const char *)x->data + (b * st[ba] + from * st[ta]) * (int64_t)es, bytes);
        }
    return 0;
}
static const reel_op op_reverse_sequence = {
    .name = "ReverseSequence", .infer = infer_reverse_sequence, .run = run_reverse_sequence
};

const reel_op *const reel_ops_layout[] = {
    &op_size, &op_trilu, &op_range, &op_cumsum, &op_tile, &op_depth_to_space, &op_space_to_depth,
    &op_eye_like, &op_reverse_sequence, NULL,
};

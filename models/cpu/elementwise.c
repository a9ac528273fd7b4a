// Elementwise ops: arithmetic with numpy broadcasting (broadcast.c), activations,
// comparisons, Where, Cast, Identity and Dropout (inference).
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "models/cpu/broadcast.h"

static bool is_float(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64 || t == REEL_DTYPE_FLOAT16;
}

#define ARITH(op, sym)                                                              \
    BIN_ROW(op##_f32, float, float, float, x sym y)                                 \
    BIN_ROW(op##_f64, double, double, double, x sym y)                              \
    BIN_ROW(op##_i32, int32_t, int32_t, int32_t, (uint32_t)x sym (uint32_t)y)       \
    BIN_ROW(op##_i64, int64_t, int64_t, int64_t, (uint64_t)x sym (uint64_t)y)       \
    BIN_ROW(op##_u8, uint8_t, uint8_t, uint8_t, x sym y)                            \
    BIN_ROW(op##_i8, int8_t, int8_t, int8_t, (uint8_t)x sym (uint8_t)y)             \
    static const bin_rows op##_rows = { { [REEL_DTYPE_FLOAT32] = op##_f32,          \
                                          [REEL_DTYPE_FLOAT64] = op##_f64,          \
                                          [REEL_DTYPE_INT32] = op##_i32,            \
                                          [REEL_DTYPE_INT64] = op##_i64,            \
                                          [REEL_DTYPE_UINT8] = op##_u8,             \
                                          [REEL_DTYPE_INT8] = op##_i8 } };

// Integer arithmetic wraps (as numpy does) instead of overflowing signed types.
ARITH(add, +)
ARITH(sub, -)
ARITH(mul, *)

// Integer division truncates; division by zero yields 0 instead of a trap.
BIN_ROW(div_f32, float, float, float, x / y)
BIN_ROW(div_f64, double, double, double, x / y)
BIN_ROW(div_i32, int32_t, int32_t, int32_t, y == 0 ? 0 : (y == -1 ? (int32_t)-(uint32_t)x : x / y))
BIN_ROW(div_i64, int64_t, int64_t, int64_t, y == 0 ? 0 : (y == -1 ? (int64_t)-(uint64_t)x : x / y))
BIN_ROW(div_u8, uint8_t, uint8_t, uint8_t, y == 0 ? 0 : x / y)
BIN_ROW(div_i8, int8_t, int8_t, int8_t, y == 0 ? 0 : (y == -1 ? (int8_t)-(uint8_t)x : x / y))
static const bin_rows div_rows = { { [REEL_DTYPE_FLOAT32] = div_f32, [REEL_DTYPE_FLOAT64] = div_f64,
                                     [REEL_DTYPE_INT32] = div_i32, [REEL_DTYPE_INT64] = div_i64,
                                     [REEL_DTYPE_UINT8] = div_u8, [REEL_DTYPE_INT8] = div_i8 } };

BIN_ROW(prelu_f32, float, float, float, x < 0 ? x * y : x)
static const bin_rows prelu_rows = { { [REEL_DTYPE_FLOAT32] = prelu_f32 } };

#define CMP(op, sym)                                                    \
    BIN_ROW(op##_f32, float, float, uint8_t, x sym y)                   \
    BIN_ROW(op##_f64, double, double, uint8_t, x sym y)                 \
    BIN_ROW(op##_i32, int32_t, int32_t, uint8_t, x sym y)               \
    BIN_ROW(op##_i64, int64_t, int64_t, uint8_t, x sym y)               \
    BIN_ROW(op##_u8, uint8_t, uint8_t, uint8_t, x sym y)                \
    BIN_ROW(op##_i8, int8_t, int8_t, uint8_t, x sym y)                  \
    static const bin_rows op##_rows = { { [REEL_DTYPE_FLOAT32] = op##_f32, \
                                          [REEL_DTYPE_FLOAT64] = op##_f64, \
                                          [REEL_DTYPE_INT32] = op##_i32,   \
                                          [REEL_DTYPE_INT64] = op##_i64,   \
                                          [REEL_DTYPE_UINT8] = op##_u8,    \
                                          [REEL_DTYPE_BOOL] = op##_u8,     \
                                          [REEL_DTYPE_INT8] = op##_i8 } };
CMP(equal, ==)
CMP(greater, >)

// Pow: the output has the base's type; mixed types go through double.
static double pow_int(double x, double y)
{
    double r = pow(x, y);
    if (isnan(r))
        return 0;
    return r;
}
static int64_t sat_i64(double r)
{
    if (!(r == r))
        return 0;
    if (r >= 9.2233720368547758e18)
        return INT64_MAX;
    if (r <= -9.2233720368547758e18)
        return INT64_MIN;
    return (int64_t)r;
}
BIN_ROW(pow_f32, float, float, float, powf(x, y))
BIN_ROW(pow_f64, double, double, double, pow(x, y))
BIN_ROW(pow_f32_i32, float, int32_t, float, powf(x, (float)y))
BIN_ROW(pow_f32_i64, float, int64_t, float, powf(x, (float)y))
BIN_ROW(pow_i32_f32, int32_t, float, int32_t, (int32_t)sat_i64(pow_int(x, y)))
BIN_ROW(pow_i32_i32, int32_t, int32_t, int32_t, (int32_t)sat_i64(pow_int(x, y)))
BIN_ROW(pow_i32_i64, int32_t, int64_t, int32_t, (int32_t)sat_i64(pow_int(x, (double)y)))
BIN_ROW(pow_i64_f32, int64_t, float, int64_t, sat_i64(pow_int((double)x, y)))
BIN_ROW(pow_i64_i32, int64_t, int32_t, int64_t, sat_i64(pow_int((double)x, y)))
BIN_ROW(pow_i64_i64, int64_t, int64_t, int64_t, sat_i64(pow_int((double)x, (double)y)))

static row_fn pow_row(reel_dtype a, reel_dtype b)
{
    switch (a) {
    case REEL_DTYPE_FLOAT32:
        return b == REEL_DTYPE_FLOAT32 ? pow_f32 : b == REEL_DTYPE_INT32 ? pow_f32_i32
             : b == REEL_DTYPE_INT64 ? pow_f32_i64 : NULL;
    case REEL_DTYPE_FLOAT64:
        return b == REEL_DTYPE_FLOAT64 ? pow_f64 : NULL;
    case REEL_DTYPE_INT32:
        return b == REEL_DTYPE_FLOAT32 ? pow_i32_f32 : b == REEL_DTYPE_INT32 ? pow_i32_i32
             : b == REEL_DTYPE_INT64 ? pow_i32_i64 : NULL;
    case REEL_DTYPE_INT64:
        return b == REEL_DTYPE_FLOAT32 ? pow_i64_f32 : b == REEL_DTYPE_INT32 ? pow_i64_i32
             : b == REEL_DTYPE_INT64 ? pow_i64_i64 : NULL;
    default:
        return NULL;
    }
}

static int check_binary(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    if (n->n_inputs != 2 || !reel_op_input(g, n, 0) || !reel_op_input(g, n, 1))
        return reel_op_fail(error, n, REEL_EINVAL, "needs 2 inputs, has %d", n->n_inputs);
    if (n->n_outputs < 1 || !reel_op_output(g, n, 0))
        return reel_op_fail(error, n, REEL_EINVAL, "has no output");
    return 0;
}

static int infer_arith(reel_ir_graph *g, reel_ir_node *n, const bin_rows *rows, bool bool_out, GError **error)
{
    int err = check_binary(g, n, error);
    if (err)
        return err;
    reel_dtype a = reel_op_input(g, n, 0)->dtype, b = reel_op_input(g, n, 1)->dtype;
    if (a != b)
        return reel_op_fail(error, n, REEL_EINVAL, "input types differ (%s, %s)", reel_dtype_name(a), reel_dtype_name(b));
    if (a <= REEL_DTYPE_NONE || a >= REEL_DTYPE_COUNT || !rows->f[a])
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported", reel_dtype_name(a) ? reel_dtype_name(a) : "unknown");
    return bcast_infer(g, n, 2, bool_out ? REEL_DTYPE_BOOL : a, error);
}

#define ARITH_OP(Name, rows, bool_out)                                                      \
    static int infer_##rows(reel_ir_graph *g, reel_ir_node *n, GError **error)             \
    {                                                                                       \
        return infer_arith(g, n, &rows##_rows, bool_out, error);                            \
    }                                                                                       \
    static int run_##rows(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, \
                          const reel_exec_ctx *ctx)                                         \
    {                                                                                       \
        (void)n;                                                                            \
        return bcast_binary(ctx, in, out, rows##_rows.f[in[0]->dtype]);                         \
    }                                                                                       \
    static const reel_op op_##rows = { .name = Name, .infer = infer_##rows, .run = run_##rows };

ARITH_OP("Add", add, false)
ARITH_OP("Sub", sub, false)
ARITH_OP("Mul", mul, false)
ARITH_OP("Div", div, false)
ARITH_OP("PRelu", prelu, false)
ARITH_OP("Equal", equal, true)
ARITH_OP("Greater", greater, true)

static int infer_pow(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = check_binary(g, n, error);
    if (err)
        return err;
    reel_dtype a = reel_op_input(g, n, 0)->dtype, b = reel_op_input(g, n, 1)->dtype;
    if (!pow_row(a, b))
        return reel_op_fail(error, n, REEL_EINVAL, "unsupported types %s ^ %s", reel_dtype_name(a) ? reel_dtype_name(a) : "?",
                    reel_dtype_name(b) ? reel_dtype_name(b) : "?");
    return bcast_infer(g, n, 2, a, error);
}

static int run_pow(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)n;
    return bcast_binary(ctx, in, out, pow_row(in[0]->dtype, in[1]->dtype));
}
static const reel_op op_pow = { .name = "Pow", .infer = infer_pow, .run = run_pow };

// ---- Where ----------------------------------------------------------------

#define WHERE_ROW(name, T)                                                           \
    static void name(void *o_, const void *const *in, const int64_t *st, int64_t n) \
    {                                                                                \
        T *restrict o = o_;                                                          \
        const uint8_t *restrict c = in[0];                                           \
        const T *restrict x = in[1];                                                 \
        const T *restrict y = in[2];                                                 \
        for (int64_t i = 0; i < n; i++)                                              \
            o[i] = c[i * st[0]] ? x[i * st[1]] : y[i * st[2]];                       \
    }
// Where only moves elements, so it works per element size.
WHERE_ROW(where_1, uint8_t)
WHERE_ROW(where_2, uint16_t)
WHERE_ROW(where_4, uint32_t)
WHERE_ROW(where_8, uint64_t)

static int infer_where(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    if (n->n_inputs != 3 || !reel_op_input(g, n, 0) || !reel_op_input(g, n, 1) || !reel_op_input(g, n, 2))
        return reel_op_fail(error, n, REEL_EINVAL, "needs 3 inputs (condition, X, Y)");
    if (n->n_outputs < 1 || !reel_op_output(g, n, 0))
        return reel_op_fail(error, n, REEL_EINVAL, "has no output");
    if (reel_op_input(g, n, 0)->dtype != REEL_DTYPE_BOOL)
        return reel_op_fail(error, n, REEL_EINVAL, "condition must be bool");
    reel_dtype x = reel_op_input(g, n, 1)->dtype, y = reel_op_input(g, n, 2)->dtype;
    if (x != y || reel_dtype_size(x) == 0)
        return reel_op_fail(error, n, REEL_EINVAL, "X and Y must have one type");
    return bcast_infer(g, n, 3, x, error);
}

static int run_where(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    size_t sz = reel_dtype_size(out[0]->dtype);
    row_fn f = sz == 1 ? where_1 : sz == 2 ? where_2 : sz == 4 ? where_4 : sz == 8 ? where_8 : NULL;
    if (!f)
        return REEL_EUNSUPPORTED;
    bcast b;
    bcast_init(&b, out[0], in, 3);
    bcast_run(&b, out[0]->data, sz, in, f);
    return 0;
}
static const reel_op op_where = { .name = "Where", .infer = infer_where, .run = run_where };

// ---- unary float activations ----------------------------------------------

static int infer_unary_f32(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!x || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs one input and one output");
    if (x->dtype != REEL_DTYPE_FLOAT32)
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported (float32 only)",
                    reel_dtype_name(x->dtype) ? reel_dtype_name(x->dtype) : "unknown");
    bcast_set_like(o, x->dtype, x);
    return 0;
}

// A unary op's pass: its input, output and the two float attributes.
typedef struct unary_pass {
    const float *a;
    float *o;
    float alpha, beta;
} unary_pass;

// No restrict on a and o: the executor may run an op in place.
#define UNARY(Name, fn, expr)                                                                  \
    static void fn##_range(void *arg, int64_t start, int64_t end)                              \
    {                                                                                          \
        const unary_pass *u = arg;                                                             \
        const float alpha = u->alpha, beta = u->beta;                                          \
        (void)alpha;                                                                           \
        (void)beta;                                                                            \
        const float *a = u->a;                                                                 \
        float *o = u->o;                                                                       \
        for (int64_t i = start; i < end; i++) {                                                \
            float x = a[i];                                                                    \
            o[i] = (expr);                                                                     \
        }                                                                                      \
    }                                                                                          \
    static int run_##fn(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, \
                        const reel_exec_ctx *ctx)                                              \
    {                                                                                          \
        unary_pass u = { in[0]->data, out[0]->data, reel_ir_attr_float(n, "alpha", fn##_alpha), \
                         reel_ir_attr_float(n, "beta", fn##_beta) };                           \
        elem_parallel(ctx, bcast_count(out[0]), fn##_range, &u);                               \
        return 0;                                                                              \
    }                                                                                          \
    static const reel_op op_##fn = { .name = Name, .infer = infer_unary_f32, .run = run_##fn };

enum { relu_alpha = 0, relu_beta = 0, sqrt_alpha = 0, sqrt_beta = 0, exp_alpha = 0, exp_beta = 0,
       sigmoid_alpha = 0, sigmoid_beta = 0, tanh_alpha = 0, tanh_beta = 0,
       hardswish_alpha = 0, hardswish_beta = 0 };
#define leakyrelu_alpha 0.01f
#define leakyrelu_beta 0.0f
#define hardsigmoid_alpha 0.2f
#define hardsigmoid_beta 0.5f

// v within [lo, hi] in compares the vectorizer turns into max/min: fminf and
// fmaxf are calls into libm per element where -ffast-math is off. A NaN stays NaN.
static inline float clampf(float v, float lo, float hi)
{
    v = v < lo ? lo : v;
    return v > hi ? hi : v;
}

UNARY("Relu", relu, x > 0.0f ? x : 0.0f)
UNARY("LeakyRelu", leakyrelu, x < 0.0f ? x * alpha : x)
UNARY("Sqrt", sqrt, sqrtf(x))
UNARY("Exp", exp, expf(x))
UNARY("Sigmoid", sigmoid, 1.0f / (1.0f + expf(-x)))
UNARY("Tanh", tanh, tanhf(x))
UNARY("HardSigmoid", hardsigmoid, clampf(alpha * x + beta, 0.0f, 1.0f))
UNARY("HardSwish", hardswish, x * clampf(x * (1.0f / 6.0f) + 0.5f, 0.0f, 1.0f))

// ---- Clip -----------------------------------------------------------------

static int infer_clip(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!x || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs one input and one output");
    switch (x->dtype) {
    case REEL_DTYPE_FLOAT32: case REEL_DTYPE_FLOAT64: case REEL_DTYPE_INT8: case REEL_DTYPE_UINT8:
    case REEL_DTYPE_INT32: case REEL_DTYPE_INT64:
        break;
    default:
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported",
                    reel_dtype_name(x->dtype) ? reel_dtype_name(x->dtype) : "unknown");
    }
    if (g->opset >= 11) {
        if (reel_ir_attr_find(n, "min") || reel_ir_attr_find(n, "max"))
            return reel_op_fail(error, n, REEL_EINVAL, "min/max are inputs from opset 11, not attributes");
        for (int i = 1; i < 3; i++) {
            reel_ir_value *b = reel_op_input(g, n, i);
            if (!b)
                continue;
            if (b->dtype != x->dtype)
                return reel_op_fail(error, n, REEL_EINVAL, "%s has type %s, input has %s", i == 1 ? "min" : "max",
                            reel_dtype_name(b->dtype) ? reel_dtype_name(b->dtype) : "unknown",
                            reel_dtype_name(x->dtype));
            if (b->rank > 0 && reel_tensor_count(b->rank, b->dims) != 1)
                return reel_op_fail(error, n, REEL_EINVAL, "%s must be a scalar", i == 1 ? "min" : "max");
        }
    } else {
        if (n->n_inputs > 1 && (reel_op_input(g, n, 1) || reel_op_input(g, n, 2)))
            return reel_op_fail(error, n, REEL_EINVAL, "min/max inputs need opset 11 (graph has %d)", g->opset);
        if (x->dtype != REEL_DTYPE_FLOAT32)
            return reel_op_fail(error, n, REEL_EINVAL, "opset %d Clip takes float32 only", g->opset);
    }
    bcast_set_like(o, x->dtype, x);
    return 0;
}

#define CLIP_T(name, T, lo_def, hi_def)                                                 \
    static void name(const reel_tensor *x, const reel_tensor *mn, const reel_tensor *mx, \
                     reel_tensor *out)                                                  \
    {                                                                                   \
        const T lo = mn ? *(const T *)mn->data : (lo_def);                              \
        const T hi = mx ? *(const T *)mx->data : (hi_def);                              \
        const T *restrict a = x->data;                                                  \
        T *restrict o = out->data;                                                      \
        int64_t cnt = bcast_count(out);                                                    \
        for (int64_t i = 0; i < cnt; i++) {                                             \
            T v = a[i] < lo ? lo : a[i];                                                \
            o[i] = v > hi ? hi : v;                                                     \
        }                                                                               \
    }
CLIP_T(clip_f64, double, -INFINITY, INFINITY)
CLIP_T(clip_i8, int8_t, INT8_MIN, INT8_MAX)
CLIP_T(clip_u8, uint8_t, 0, UINT8_MAX)
CLIP_T(clip_i32, int32_t, INT32_MIN, INT32_MAX)
CLIP_T(clip_i64, int64_t, INT64_MIN, INT64_MAX)

// Clip's float32 pass: alpha and beta are its bounds.
static void clip_f32_range(void *arg, int64_t start, int64_t end)
{
    const unary_pass *u = arg;
    const float lo = u->alpha, hi = u->beta, *a = u->a;
    float *o = u->o;
    for (int64_t i = start; i < end; i++)
        o[i] = clampf(a[i], lo, hi);
}

static int run_clip(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *mn = n->n_inputs > 1 ? in[1] : NULL;
    const reel_tensor *mx = n->n_inputs > 2 ? in[2] : NULL;
    switch (in[0]->dtype) {
    case REEL_DTYPE_FLOAT32: {
        float lo, hi;
        if (mn || mx || n->n_inputs > 1) {
            lo = mn ? *(const float *)mn->data : -INFINITY;
            hi = mx ? *(const float *)mx->data : INFINITY;
        } else {
            lo = reel_ir_attr_float(n, "min", -INFINITY);
            hi = reel_ir_attr_float(n, "max", INFINITY);
        }
        unary_pass u = { in[0]->data, out[0]->data, lo, hi };
        elem_parallel(ctx, bcast_count(out[0]), clip_f32_range, &u);
        return 0;
    }
    case REEL_DTYPE_FLOAT64: clip_f64(in[0], mn, mx, out[0]); return 0;
    case REEL_DTYPE_INT8: clip_i8(in[0], mn, mx, out[0]); return 0;
    case REEL_DTYPE_UINT8: clip_u8(in[0], mn, mx, out[0]); return 0;
    case REEL_DTYPE_INT32: clip_i32(in[0], mn, mx, out[0]); return 0;
    case REEL_DTYPE_INT64: clip_i64(in[0], mn, mx, out[0]); return 0;
    default: return REEL_EUNSUPPORTED;
    }
}
static const reel_op op_clip = { .name = "Clip", .infer = infer_clip, .run = run_clip };

// ---- Cast -----------------------------------------------------------------

float elem_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, f;
    if (exp == 0x1f)
        f = sign | 0x7f800000 | (man << 13);
    else if (exp)
        f = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man)
        f = sign;
    else {
        // Subnormal half: normalise.
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        f = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float r;
    memcpy(&r, &f, 4);
    return r;
}

uint16_t elem_double_to_half(double d)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0;
    double a = fabs(d);
    if (isnan(d))
        return sign | 0x7e00;
    if (a >= 65520.0)
        return sign | 0x7c00;
    if (a < 0x1p-25)
        return sign;
    int e;
    frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
    int hexp = e - 1 + 15;
    double q; // quantum of the result
    if (hexp <= 0)
        q = 0x1p-24;
    else
        q = ldexp(1.0, e - 1 - 10);
    double m = nearbyint(a / q); // default rounding mode: to nearest even
    uint32_t bits;
    if (hexp <= 0)
        bits = (uint32_t)m; // subnormal (m may reach 1024 = smallest normal)
    else {
        if (m >= 2048) {
            m /= 2;
            hexp++;
        }
        if (hexp >= 31)
            return sign | 0x7c00;
        bits = ((uint32_t)hexp << 10) | ((uint32_t)m & 0x3ff);
    }
    return sign | (uint16_t)bits;
}

bool elem_cast_supported(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64 || t == REEL_DTYPE_FLOAT16 ||
           t == REEL_DTYPE_INT8 || t == REEL_DTYPE_UINT8 || t == REEL_DTYPE_INT16 ||
           t == REEL_DTYPE_UINT16 || t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64 ||
           t == REEL_DTYPE_BOOL;
}

// ONNX TensorProto.DataType -> reel dtype.
static reel_dtype onnx_dtype(int64_t t)
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

static int infer_cast(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!x || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs one input and one output");
    const reel_ir_attr *to = reel_ir_attr_find(n, "to");
    if (!to)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'to' is missing");
    reel_dtype t = onnx_dtype(to->type == REEL_ATTR_INT ? to->i : -1);
    if (!elem_cast_supported(t))
        return reel_op_fail(error, n, REEL_EINVAL, "cast to ONNX type %" G_GINT64_FORMAT " is not supported", to->i);
    if (!elem_cast_supported(x->dtype))
        return reel_op_fail(error, n, REEL_EINVAL, "cast from %s is not supported",
                    reel_dtype_name(x->dtype) ? reel_dtype_name(x->dtype) : "unknown");
    bcast_set_like(o, t, x);
    return 0;
}

static bool is_int(reel_dtype t)
{
    return !is_float(t);
}

static int64_t load_i(const void *p, reel_dtype t, int64_t i)
{
    switch (t) {
    case REEL_DTYPE_UINT8: case REEL_DTYPE_BOOL: return ((const uint8_t *)p)[i];
    case REEL_DTYPE_INT8: return ((const int8_t *)p)[i];
    case REEL_DTYPE_INT16: return ((const int16_t *)p)[i];
    case REEL_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)p)[i];
    default: return ((const int64_t *)p)[i];
    }
}

static double load_f(const void *p, reel_dtype t, int64_t i)
{
    switch (t) {
    case REEL_DTYPE_FLOAT32: return ((const float *)p)[i];
    case REEL_DTYPE_FLOAT64: return ((const double *)p)[i];
    case REEL_DTYPE_FLOAT16: return elem_half_to_float(((const uint16_t *)p)[i]);
    default: return (double)load_i(p, t, i);
    }
}

static void store_i(void *p, reel_dtype t, int64_t i, int64_t v)
{
    switch (t) {
    case REEL_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case REEL_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case REEL_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
    case REEL_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
    case REEL_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case REEL_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
    case REEL_DTYPE_INT64: ((int64_t *)p)[i] = v; break;
    case REEL_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case REEL_DTYPE_FLOAT64: ((double *)p)[i] = (double)v; break;
    case REEL_DTYPE_FLOAT16: ((uint16_t *)p)[i] = elem_double_to_half((double)v); break;
    default: break;
    }
}

static void store_f(void *p, reel_dtype t, int64_t i, double v)
{
    switch (t) {
    case REEL_DTYPE_FLOAT32: ((float *)p)[i] = (float)v; break;
    case REEL_DTYPE_FLOAT64: ((double *)p)[i] = v; break;
    case REEL_DTYPE_FLOAT16: ((uint16_t *)p)[i] = elem_double_to_half(v); break;
    case REEL_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    // Float to integer truncates toward zero; out of range saturates
    // (undefined in ONNX, but never undefined behaviour here).
    default: store_i(p, t, i, sat_i64(v)); break;
    }
}

void elem_cast(const reel_tensor *in, reel_tensor *out)
{
    reel_dtype from = in->dtype, to = out->dtype;
    int64_t cnt = bcast_count(out);
    if (from == to) {
        memmove(out->data, in->data, cnt * reel_dtype_size(to));
        return;
    }
    if (from == REEL_DTYPE_FLOAT32 && to == REEL_DTYPE_FLOAT16) {
        // Through double: every float is exact there, so rounding happens once.
        const float *a = in->data;
        uint16_t *o = out->data;
        for (int64_t i = 0; i < cnt; i++)
            o[i] = elem_double_to_half(a[i]);
        return;
    }
    if (from == REEL_DTYPE_FLOAT16 && to == REEL_DTYPE_FLOAT32) {
        const uint16_t *a = in->data;
        float *o = out->data;
        for (int64_t i = 0; i < cnt; i++)
            o[i] = elem_half_to_float(a[i]);
        return;
    }
    if (is_int(from))
        for (int64_t i = 0; i < cnt; i++)
            store_i(out->data, to, i, load_i(in->data, from, i));
    else
        for (int64_t i = 0; i < cnt; i++)
            store_f(out->data, to, i, load_f(in->data, from, i));
}

static int run_cast(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    elem_cast(in[0], out[0]);
    return 0;
}
static const reel_op op_cast = { .name = "Cast", .infer = infer_cast, .run = run_cast };

// ---- Identity, Dropout ------------------------------------------------------

static int infer_identity(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!x || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs one input and one output");
    if (reel_dtype_size(x->dtype) == 0)
        return reel_op_fail(error, n, REEL_EINVAL, "input type is not a supported tensor type");
    bcast_set_like(o, x->dtype, x);
    return 0;
}

static int run_identity(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    if (out[0]->data != in[0]->data)
        memmove(out[0]->data, in[0]->data, bcast_count(out[0]) * reel_dtype_size(out[0]->dtype));
    return 0;
}
static const reel_op op_identity = { .name = "Identity", .infer = infer_identity, .run = run_identity };

static int infer_dropout(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = infer_identity(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!is_float(x->dtype))
        return reel_op_fail(error, n, REEL_EINVAL, "input must be a float type");
    // training_mode (opset 12+) as a constant true would need randomness.
    reel_ir_value *train = reel_op_input(g, n, 2);
    if (train && (!train->constant || *(const uint8_t *)train->constant->data))
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "training_mode must be a constant false at inference");
    reel_ir_value *mask = reel_op_output(g, n, 1);
    if (mask)
        bcast_set_like(mask, g->opset >= 10 ? REEL_DTYPE_BOOL : x->dtype, x);
    return 0;
}

static int run_dropout(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    run_identity(n, in, out, ctx);
    if (n->n_outputs > 1 && out[1]) {
        int64_t cnt = bcast_count(out[1]);
        if (out[1]->dtype == REEL_DTYPE_BOOL)
            memset(out[1]->data, 1, cnt);
        else // opset < 10: the mask has the input's type
            for (int64_t i = 0; i < cnt; i++)
                store_f(out[1]->data, out[1]->dtype, i, 1.0);
    }
    return 0;
}
static const reel_op op_dropout = { .name = "Dropout", .infer = infer_dropout, .run = run_dropout };

const reel_op *const reel_ops_elementwise[] = {
    &op_add, &op_sub, &op_mul, &op_div, &op_pow, &op_sqrt, &op_exp,
    &op_relu, &op_leakyrelu, &op_prelu, &op_clip, &op_sigmoid, &op_hardsigmoid,
    &op_hardswish, &op_tanh, &op_equal, &op_greater, &op_where, &op_cast,
    &op_identity, &op_dropout, NULL,
};

// Logic, comparisons, bitwise and variadic math: Not, And, Or, Xor, Less,
// LessOrEqual, GreaterOrEqual, BitShift, Mod, Max, Min, Sum, Mean (1..N
// inputs) and CastLike; numpy broadcasting from broadcast.c.
#include <math.h>
#include <string.h>

#include "models/cpu/broadcast.h"

static const char *type_name(reel_dtype t)
{
    const char *s = reel_dtype_name(t);
    return s ? s : "unknown";
}

static bool valid_dtype(reel_dtype t)
{
    return t > REEL_DTYPE_NONE && t < REEL_DTYPE_COUNT;
}

// Before opset 7 these ops broadcast only B onto A, from `axis`: a
// different rule from numpy's, so those forms are refused.
static int check_legacy(const reel_ir_node *n, GError **error)
{
    if (reel_ir_attr_int(n, "broadcast", 0))
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "attribute 'broadcast' (opset < 7) is not supported");
    if (reel_ir_attr_find(n, "axis"))
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "attribute 'axis' (opset < 7) is not supported");
    return 0;
}

// ---- binary ops with broadcasting -----------------------------------------

// Two inputs of one type that rows handles; the output broadcasts them and
// is bool (comparisons, logic) or of the inputs' type.
static int infer_binary(reel_ir_graph *g, reel_ir_node *n, const bin_rows *rows, bool bool_out, GError **error)
{
    reel_ir_value *a = reel_op_input(g, n, 0), *b = reel_op_input(g, n, 1);
    if (n->n_inputs != 2 || !a || !b)
        return reel_op_fail(error, n, REEL_EINVAL, "needs 2 inputs, has %d", n->n_inputs);
    int err = check_legacy(n, error);
    if (err)
        return err;
    if (a->dtype != b->dtype)
        return reel_op_fail(error, n, REEL_EINVAL, "input types differ (%s, %s)", type_name(a->dtype),
                            type_name(b->dtype));
    if (!valid_dtype(a->dtype) || !rows->f[a->dtype])
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "input type %s is not supported", type_name(a->dtype));
    return bcast_infer(g, n, 2, bool_out ? REEL_DTYPE_BOOL : a->dtype, error);
}

static int run_binary(reel_tensor *const *in, reel_tensor *const *out, const bin_rows *rows)
{
    reel_dtype t = in[0]->dtype;
    return bcast_binary(NULL, in, out, valid_dtype(t) ? rows->f[t] : NULL); // one thread: rare ops
}

// An op whose rows do not depend on attributes.
#define BINARY_OP(Name, rows, bool_out)                                                       \
    static int infer_##rows(reel_ir_graph *g, reel_ir_node *n, GError **error)               \
    {                                                                                         \
        return infer_binary(g, n, &rows##_rows, bool_out, error);                             \
    }                                                                                         \
    static int run_##rows(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, \
                          const reel_exec_ctx *ctx)                                           \
    {                                                                                         \
        (void)n;                                                                              \
        (void)ctx;                                                                            \
        return run_binary(in, out, &rows##_rows);                                             \
    }                                                                                         \
    static const reel_op op_##rows = { .name = Name, .infer = infer_##rows, .run = run_##rows };

// Bool inputs are 0 or 1, but any nonzero byte counts as true.
BIN_ROW(and_b, uint8_t, uint8_t, uint8_t, (x != 0) & (y != 0))
BIN_ROW(or_b, uint8_t, uint8_t, uint8_t, (x != 0) | (y != 0))
BIN_ROW(xor_b, uint8_t, uint8_t, uint8_t, (x != 0) ^ (y != 0))
static const bin_rows and_rows = { { [REEL_DTYPE_BOOL] = and_b } };
static const bin_rows or_rows = { { [REEL_DTYPE_BOOL] = or_b } };
static const bin_rows xor_rows = { { [REEL_DTYPE_BOOL] = xor_b } };
BINARY_OP("And", and, true)
BINARY_OP("Or", or, true)
BINARY_OP("Xor", xor, true)

static inline float h2f(uint16_t h)
{
    return elem_half_to_float(h);
}

// Comparisons: every numeric type; float16 compares as float.
#define CMP(op, sym)                                                                   \
    BIN_ROW(op##_f16, uint16_t, uint16_t, uint8_t, h2f(x) sym h2f(y))                  \
    BIN_ROW(op##_f32, float, float, uint8_t, x sym y)                                  \
    BIN_ROW(op##_f64, double, double, uint8_t, x sym y)                                \
    BIN_ROW(op##_i8, int8_t, int8_t, uint8_t, x sym y)                                 \
    BIN_ROW(op##_i16, int16_t, int16_t, uint8_t, x sym y)                              \
    BIN_ROW(op##_i32, int32_t, int32_t, uint8_t, x sym y)                              \
    BIN_ROW(op##_i64, int64_t, int64_t, uint8_t, x sym y)                              \
    BIN_ROW(op##_u8, uint8_t, uint8_t, uint8_t, x sym y)                               \
    BIN_ROW(op##_u16, uint16_t, uint16_t, uint8_t, x sym y)                            \
    static const bin_rows op##_rows = { { [REEL_DTYPE_FLOAT16] = op##_f16,             \
                                          [REEL_DTYPE_FLOAT32] = op##_f32,             \
                                          [REEL_DTYPE_FLOAT64] = op##_f64,             \
                                          [REEL_DTYPE_INT8] = op##_i8,                 \
                                          [REEL_DTYPE_INT16] = op##_i16,               \
                                          [REEL_DTYPE_INT32] = op##_i32,               \
                                          [REEL_DTYPE_INT64] = op##_i64,               \
                                          [REEL_DTYPE_UINT8] = op##_u8,                \
                                          [REEL_DTYPE_UINT16] = op##_u16 } };
CMP(less, <)
CMP(less_equal, <=)
CMP(greater_equal, >=)
BINARY_OP("Less", less, true)
BINARY_OP("LessOrEqual", less_equal, true)
BINARY_OP("GreaterOrEqual", greater_equal, true)

// ---- BitShift ---------------------------------------------------------------

// Shifting by the type's width or more gives 0 (in C it would be undefined).
#define SHIFTS(T, bits)                                                                              \
    BIN_ROW(shl_##T, T##_t, T##_t, T##_t, y >= (bits) ? 0 : (T##_t)((uint32_t)x << y))              \
    BIN_ROW(shr_##T, T##_t, T##_t, T##_t, y >= (bits) ? 0 : (T##_t)((uint32_t)x >> y))
SHIFTS(uint8, 8)
SHIFTS(uint16, 16)
static const bin_rows shl_rows = { { [REEL_DTYPE_UINT8] = shl_uint8, [REEL_DTYPE_UINT16] = shl_uint16 } };
static const bin_rows shr_rows = { { [REEL_DTYPE_UINT8] = shr_uint8, [REEL_DTYPE_UINT16] = shr_uint16 } };

// The rows for the node's direction, or NULL when it is not LEFT or RIGHT.
static const bin_rows *shift_rows(const reel_ir_node *n)
{
    const char *dir = reel_ir_attr_string(n, "direction", "");
    if (strcmp(dir, "LEFT") == 0)
        return &shl_rows;
    if (strcmp(dir, "RIGHT") == 0)
        return &shr_rows;
    return NULL;
}

static int infer_bitshift(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    const bin_rows *rows = shift_rows(n);
    if (!rows) {
        if (!reel_ir_attr_find(n, "direction"))
            return reel_op_fail(error, n, REEL_EINVAL, "attribute 'direction' is missing");
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "attribute 'direction' = '%s' is not supported",
                            reel_ir_attr_string(n, "direction", ""));
    }
    return infer_binary(g, n, rows, false, error);
}

static int run_bitshift(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    (void)ctx;
    const bin_rows *rows = shift_rows(n);
    return rows ? run_binary(in, out, rows) : REEL_EUNSUPPORTED;
}
static const reel_op op_bitshift = { .name = "BitShift", .infer = infer_bitshift, .run = run_bitshift };

// ---- Mod --------------------------------------------------------------------

// fmod=0: the remainder takes the divisor's sign (Python's %). fmod=1: the
// dividend's (C's % and fmod). An integer divisor of 0 gives 0, as numpy
// does, and -1 gives 0 without the INT_MIN / -1 trap.
static inline int64_t trunc_mod(int64_t x, int64_t y)
{
    return y == 0 || y == -1 ? 0 : x % y;
}

static inline int64_t floor_mod(int64_t x, int64_t y)
{
    int64_t r = trunc_mod(x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}

#define MODS(T, name)                                                         \
    BIN_ROW(floor_mod_##name, T, T, T, (T)floor_mod(x, y))                    \
    BIN_ROW(trunc_mod_##name, T, T, T, (T)trunc_mod(x, y))
MODS(int8_t, i8)
MODS(int16_t, i16)
MODS(int32_t, i32)
MODS(int64_t, i64)
MODS(uint8_t, u8)
MODS(uint16_t, u16)
BIN_ROW(fmod_f16, uint16_t, uint16_t, uint16_t, elem_double_to_half(fmod(h2f(x), h2f(y))))
BIN_ROW(fmod_f32, float, float, float, fmodf(x, y))
BIN_ROW(fmod_f64, double, double, double, fmod(x, y))

static const bin_rows floor_mod_rows = { {
    [REEL_DTYPE_INT8] = floor_mod_i8, [REEL_DTYPE_INT16] = floor_mod_i16, [REEL_DTYPE_INT32] = floor_mod_i32,
    [REEL_DTYPE_INT64] = floor_mod_i64, [REEL_DTYPE_UINT8] = floor_mod_u8, [REEL_DTYPE_UINT16] = floor_mod_u16,
} };
static const bin_rows trunc_mod_rows = { {
    [REEL_DTYPE_INT8] = trunc_mod_i8, [REEL_DTYPE_INT16] = trunc_mod_i16, [REEL_DTYPE_INT32] = trunc_mod_i32,
    [REEL_DTYPE_INT64] = trunc_mod_i64, [REEL_DTYPE_UINT8] = trunc_mod_u8, [REEL_DTYPE_UINT16] = trunc_mod_u16,
    [REEL_DTYPE_FLOAT16] = fmod_f16, [REEL_DTYPE_FLOAT32] = fmod_f32, [REEL_DTYPE_FLOAT64] = fmod_f64,
} };

static int infer_mod(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int64_t fm = reel_ir_attr_int(n, "fmod", 0);
    if (fm != 0 && fm != 1)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'fmod' = %" G_GINT64_FORMAT " is not 0 or 1", fm);
    reel_ir_value *a = reel_op_input(g, n, 0);
    reel_dtype t = a ? a->dtype : REEL_DTYPE_NONE;
    // ONNX defines no floor remainder for floats.
    if (fm == 0 && (t == REEL_DTYPE_FLOAT16 || t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64))
        return reel_op_fail(error, n, REEL_EINVAL, "float input %s needs attribute 'fmod' = 1", type_name(t));
    return infer_binary(g, n, fm ? &trunc_mod_rows : &floor_mod_rows, false, error);
}

static int run_mod(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    return run_binary(in, out, reel_ir_attr_int(n, "fmod", 0) ? &trunc_mod_rows : &floor_mod_rows);
}
static const reel_op op_mod = { .name = "Mod", .infer = infer_mod, .run = run_mod };

// ---- Not --------------------------------------------------------------------

static int infer_not(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!x || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs one input and one output");
    if (x->dtype != REEL_DTYPE_BOOL)
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "input type %s is not supported (bool only)",
                            type_name(x->dtype));
    bcast_set_like(o, REEL_DTYPE_BOOL, x);
    return 0;
}

static int run_not(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    const uint8_t *restrict a = in[0]->data;
    uint8_t *restrict o = out[0]->data;
    int64_t cnt = bcast_count(out[0]);
    for (int64_t i = 0; i < cnt; i++)
        o[i] = a[i] == 0;
    return 0;
}
static const reel_op op_not = { .name = "Not", .infer = infer_not, .run = run_not };

// ---- variadic Max, Min, Sum, Mean -------------------------------------------

// The output starts as input 0 broadcast, then each further input is folded
// in place: o[i] = expr(x = o[i], y = that input's element). A row's input
// advances by st[0] (0 or 1) per element.
#define ACC_ROW(name, T, expr)                                                       \
    static void name(void *o_, const void *const *in, const int64_t *st, int64_t n) \
    {                                                                                \
        T *restrict o = o_;                                                          \
        const T *restrict b = in[0];                                                 \
        if (st[0]) {                                                                 \
            for (int64_t i = 0; i < n; i++) {                                        \
                T x = o[i], y = b[i];                                                \
                o[i] = (expr);                                                       \
            }                                                                        \
        } else {                                                                     \
            T y = b[0];                                                              \
            for (int64_t i = 0; i < n; i++) {                                        \
                T x = o[i];                                                          \
                o[i] = (expr);                                                       \
            }                                                                        \
        }                                                                            \
    }

// Copies of input 0, per element size.
#define COPY_ROW(name, T)                                                            \
    static void name(void *o_, const void *const *in, const int64_t *st, int64_t n) \
    {                                                                                \
        T *restrict o = o_;                                                          \
        const T *restrict b = in[0];                                                 \
        for (int64_t i = 0; i < n; i++)                                              \
            o[i] = b[i * st[0]];                                                     \
    }
COPY_ROW(copy_1, uint8_t)
COPY_ROW(copy_2, uint16_t)
COPY_ROW(copy_4, uint32_t)
COPY_ROW(copy_8, uint64_t)

// A NaN wins in float Max and Min, as numpy's maximum and minimum have it.
#define MAXMIN(name, T)                                          \
    ACC_ROW(max_##name, T, (y > x || y != y) ? y : x)            \
    ACC_ROW(min_##name, T, (y < x || y != y) ? y : x)
MAXMIN(f32, float)
MAXMIN(f64, double)
MAXMIN(i8, int8_t)
MAXMIN(i16, int16_t)
MAXMIN(i32, int32_t)
MAXMIN(i64, int64_t)
MAXMIN(u8, uint8_t)
MAXMIN(u16, uint16_t)
ACC_ROW(max_f16, uint16_t, (h2f(y) > h2f(x) || h2f(y) != h2f(y)) ? y : x)
ACC_ROW(min_f16, uint16_t, (h2f(y) < h2f(x) || h2f(y) != h2f(y)) ? y : x)

// Sums of two halves are exact in double, so each step rounds once.
ACC_ROW(sum_f16, uint16_t, elem_double_to_half((double)h2f(x) + h2f(y)))
ACC_ROW(sum_f32, float, x + y)
ACC_ROW(sum_f64, double, x + y)

#define NUMERIC_ROWS(op)                                                                     \
    static const bin_rows op##_rows = { {                                                    \
        [REEL_DTYPE_FLOAT16] = op##_f16, [REEL_DTYPE_FLOAT32] = op##_f32,                   \
        [REEL_DTYPE_FLOAT64] = op##_f64, [REEL_DTYPE_INT8] = op##_i8,                       \
        [REEL_DTYPE_INT16] = op##_i16, [REEL_DTYPE_INT32] = op##_i32,                       \
        [REEL_DTYPE_INT64] = op##_i64, [REEL_DTYPE_UINT8] = op##_u8,                        \
        [REEL_DTYPE_UINT16] = op##_u16 } };
NUMERIC_ROWS(max)
NUMERIC_ROWS(min)
// ONNX's Sum and Mean take float types only.
static const bin_rows sum_rows = { { [REEL_DTYPE_FLOAT16] = sum_f16, [REEL_DTYPE_FLOAT32] = sum_f32,
                                     [REEL_DTYPE_FLOAT64] = sum_f64 } };

// 1..N inputs of one type that rows handles, broadcast together.
static int infer_variadic(reel_ir_graph *g, reel_ir_node *n, const bin_rows *rows, GError **error)
{
    if (n->n_inputs < 1)
        return reel_op_fail(error, n, REEL_EINVAL, "needs at least one input");
    reel_ir_value *a = reel_op_input(g, n, 0);
    if (!a)
        return reel_op_fail(error, n, REEL_EINVAL, "input 0 is missing");
    for (int k = 1; k < n->n_inputs; k++) {
        reel_ir_value *v = reel_op_input(g, n, k);
        if (!v)
            return reel_op_fail(error, n, REEL_EINVAL, "input %d is missing", k);
        if (v->dtype != a->dtype)
            return reel_op_fail(error, n, REEL_EINVAL, "input %d has type %s, input 0 has %s", k,
                                type_name(v->dtype), type_name(a->dtype));
    }
    if (!valid_dtype(a->dtype) || !rows->f[a->dtype])
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "input type %s is not supported", type_name(a->dtype));
    return bcast_infer(g, n, n->n_inputs, a->dtype, error);
}

// out = f(out, x) with x broadcast to out's shape.
static void fold(reel_tensor *out, reel_tensor *x, row_fn f)
{
    int64_t cnt = bcast_count(out);
    // A broadcastable input with as many elements has out's layout.
    if (bcast_count(x) == cnt) {
        f(out->data, (const void *[]){ x->data }, (const int64_t[]){ 1 }, cnt);
        return;
    }
    bcast b;
    bcast_init(&b, out, &x, 1);
    bcast_run(&b, out->data, reel_dtype_size(out->dtype), &x, f);
}

static int run_variadic(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *out, const bin_rows *rows)
{
    reel_dtype t = out->dtype;
    size_t sz = reel_dtype_size(t);
    row_fn copy = sz == 1 ? copy_1 : sz == 2 ? copy_2 : sz == 4 ? copy_4 : sz == 8 ? copy_8 : NULL;
    row_fn f = valid_dtype(t) ? rows->f[t] : NULL;
    if (!copy || !f)
        return REEL_EUNSUPPORTED;
    fold(out, in[0], copy);
    for (int k = 1; k < n->n_inputs; k++)
        fold(out, in[k], f);
    return 0;
}

#define VARIADIC_OP(Name, op)                                                                  \
    static int infer_##op(reel_ir_graph *g, reel_ir_node *n, GError **error)                  \
    {                                                                                          \
        return infer_variadic(g, n, &op##_rows, error);                                        \
    }                                                                                          \
    static int run_##op(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, \
                        const reel_exec_ctx *ctx)                                              \
    {                                                                                          \
        (void)ctx;                                                                             \
        return run_variadic(n, in, out[0], &op##_rows);                                        \
    }                                                                                          \
    static const reel_op op_##op = { .name = Name, .infer = infer_##op, .run = run_##op };
VARIADIC_OP("Max", max)
VARIADIC_OP("Min", min)
VARIADIC_OP("Sum", sum)

// Mean: the sum divided by the input count, as ONNX's reference does it
// (a division, not a product with the reciprocal).
static int infer_mean(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    return infer_variadic(g, n, &sum_rows, error);
}

static int run_mean(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    int err = run_variadic(n, in, out[0], &sum_rows);
    if (err)
        return err;
    int64_t cnt = bcast_count(out[0]);
    switch (out[0]->dtype) {
    case REEL_DTYPE_FLOAT32: {
        float *o = out[0]->data, d = (float)n->n_inputs;
        for (int64_t i = 0; i < cnt; i++)
            o[i] /= d;
        return 0;
    }
    case REEL_DTYPE_FLOAT64: {
        double *o = out[0]->data, d = n->n_inputs;
        for (int64_t i = 0; i < cnt; i++)
            o[i] /= d;
        return 0;
    }
    case REEL_DTYPE_FLOAT16: {
        uint16_t *o = out[0]->data;
        for (int64_t i = 0; i < cnt; i++)
            o[i] = elem_double_to_half(h2f(o[i]) / n->n_inputs);
        return 0;
    }
    default:
        return REEL_EUNSUPPORTED;
    }
}
static const reel_op op_mean = { .name = "Mean", .infer = infer_mean, .run = run_mean };

// ---- CastLike ---------------------------------------------------------------

// Cast to the type of input 1 (whose values are not read).
static int infer_castlike(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *like = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (!x || !like || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs inputs input and target_type and one output");
    if (!elem_cast_supported(x->dtype))
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "cast from %s is not supported", type_name(x->dtype));
    if (!elem_cast_supported(like->dtype))
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "cast to %s is not supported", type_name(like->dtype));
    bcast_set_like(o, like->dtype, x);
    return 0;
}

static int run_castlike(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    elem_cast(in[0], out[0]);
    return 0;
}
static const reel_op op_castlike = { .name = "CastLike", .infer = infer_castlike, .run = run_castlike };

const reel_op *const reel_ops_logic[] = {
    &op_not, &op_and, &op_or, &op_xor, &op_less, &op_less_equal, &op_greater_equal, &op_bitshift, &op_mod,
    &op_max, &op_min, &op_sum, &op_mean, &op_castlike, NULL,
};

// Unary math and activations: Neg, Abs, Sign, Reciprocal, rounding, Log,
// trig and hyperbolic functions, Erf, Elu and its relatives, Softplus,
// Softsign, Shrink, Mish, Gelu, IsInf, IsNaN.
//
// One table entry per op: the dtypes it takes (a row function for each),
// its float attributes with their defaults, and whether it outputs bool.
// The row functions come from one expression per op; <tgmath.h> makes that
// expression call the float functions (sinf, expf, ...) for float32 and the
// double ones for float64. The float32 activations built on exp (Elu, Selu,
// Celu, Softplus, Mish, Gelu, Erf) use exp, expm1, log1p and erf (f32_*) written
// here instead, in a form the vectorizer takes (libm's calls keep those
// loops scalar, several times slower per frame).
#include <string.h>
#include <tgmath.h>

#include "models/cpu/f32_exp.h"
#include "models/cpu/nn.h"

// An op's attributes as read for one run: up to two floats (a, b) and a
// flag (Gelu's approximate = "tanh", IsInf's detect_positive).
typedef struct uparams {
    float a, b;
    int flag;
} uparams;

// y[0..n) = f(x[0..n)). No restrict: the executor may run an op in place.
typedef void (*urow)(const void *x, void *y, int64_t n, const uparams *p);

// Each row compiled for AVX-512, AVX2 and the baseline, chosen at load.
#define TARGETS __attribute__((target_clones("avx512f", "avx2,fma", "default")))

#define ROW(fn, T, TO, expr)                                          \
    TARGETS static void fn(const void *x_, void *y_, int64_t n, const uparams *p) \
    {                                                                 \
        typedef T elem; /* for constants in expr */                   \
        const elem *x = x_;                                           \
        TO *y = y_;                                                   \
        const float a = p->a, b = p->b;                               \
        const int flag = p->flag;                                     \
        (void)a;                                                      \
        (void)b;                                                      \
        (void)flag;                                                   \
        for (int64_t i = 0; i < n; i++) {                             \
            elem v = x[i];                                            \
            y[i] = (TO)(expr);                                        \
        }                                                             \
    }

// Rows of one op per dtype family; `elem` names the element type in expr.
#define FLOAT_ROWS(op, expr)               \
    ROW(op##_f32, float, float, expr)      \
    ROW(op##_f64, double, double, expr)
// float32 from its own expression, float64 from libm's.
#define SPLIT_ROWS(op, expr32, expr64)     \
    ROW(op##_f32, float, float, expr32)    \
    ROW(op##_f64, double, double, expr64)
#define SIGNED_ROWS(op, expr)              \
    ROW(op##_i8, int8_t, int8_t, expr)     \
    ROW(op##_i16, int16_t, int16_t, expr)  \
    ROW(op##_i32, int32_t, int32_t, expr)  \
    ROW(op##_i64, int64_t, int64_t, expr)
#define UNSIGNED_ROWS(op, expr)            \
    ROW(op##_u8, uint8_t, uint8_t, expr)   \
    ROW(op##_u16, uint16_t, uint16_t, expr)

#define FLOAT_TYPES(op) [REEL_DTYPE_FLOAT32] = op##_f32, [REEL_DTYPE_FLOAT64] = op##_f64
#define SIGNED_TYPES(op) \
    [REEL_DTYPE_INT8] = op##_i8, [REEL_DTYPE_INT16] = op##_i16, [REEL_DTYPE_INT32] = op##_i32, [REEL_DTYPE_INT64] = op##_i64
#define UNSIGNED_TYPES(op) [REEL_DTYPE_UINT8] = op##_u8, [REEL_DTYPE_UINT16] = op##_u16

// Negation of a signed integer through its unsigned type, so the most
// negative value wraps (as numpy does) instead of overflowing.
#define WRAP_NEG(v) (-(uint64_t)(v))

// ---- float32 exp, expm1, log1p, erf for the vectorizer ---------------------------

// e^x - 1, by its Taylor series to x^8 near 0 where e^x - 1 would cancel.
static inline float f32_expm1(float x)
{
    float near0 = x * (1.0f + x * (1.0f / 2 + x * (1.0f / 6 + x * (1.0f / 24 + x * (1.0f / 120 + x * (1.0f / 720 +
                  x * (1.0f / 5040 + x * (1.0f / 40320))))))));
    return fabsf(x) < 0.5f ? near0 : f32_exp(x) - 1.0f;
}

// log(1 + t) for t in [0, 1]: 1 + t = 2^e m with m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh(s), s = (m - 1) / (m + 1) formed from t without rounding
// 1 + t, |s| <= 0.172, the series to s^11.
static inline float f32_log1p_unit(float t)
{
    bool e = t > 0.41421356f;
    float s = e ? (t - 1.0f) / (t + 3.0f) : t / (t + 2.0f), s2 = s * s;
    float l = 2.0f * s * (1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 * (1.0f / 9 + s2 * (1.0f / 11))))));
    return e ? l + 0.693147180559945309f : l;
}

// log(1 + e^x) = max(x, 0) + log(1 + e^-|x|).
static inline float f32_softplus(float x)
{
    return (x > 0.0f ? x : 0.0f) + f32_log1p_unit(f32_exp(-fabsf(x)));
}

// x tanh(softplus(x)) = x n / (n + 2) with n = e^x (e^x + 2); x itself
// where that is 1 in float (and n would overflow).
static inline float f32_mish(float x)
{
    float e = f32_exp(x), n = e * (e + 2.0f);
    return x > 20.0f ? x : x * (n / (n + 2.0f));
}

// 1 - erf(x) for x >= 1: Abramowitz and Stegun 7.1.26, whose erf is
// within 1.5e-7.
static inline float f32_erfc_tail(float x)
{
    float t = 1.0f / (1.0f + 0.3275911f * x);
    float p = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    return p * f32_exp(-x * x);
}

// erf(x) for |x| < 1: its Taylor series to x^21 (the coefficients are
// 1 / (n! (2n + 1))), the rest under 2e-9.
static inline float f32_erf_near0(float x)
{
    float x2 = x * x;
    float s = 1.0f - x2 * (1.0f / 3 - x2 * (1.0f / 10 - x2 * (1.0f / 42 - x2 * (1.0f / 216 - x2 * (1.0f / 1320 -
              x2 * (1.0f / 9360 - x2 * (1.0f / 75600 - x2 * (1.0f / 685440 - x2 * (1.0f / 6894720 -
              x2 * (1.0f / 76204800))))))))));
    return 1.12837916709551257f * x * s;
}

// erf: the series below 1, 1 - f32_erfc_tail above. Both are computed
// and one chosen, so that the loop has no branches.
static inline float f32_erf(float x)
{
    float ax = fabsf(x), near0 = f32_erf_near0(x), far = 1.0f - f32_erfc_tail(ax);
    return ax < 1.0f ? near0 : (x < 0.0f ? -far : far);
}

// x (1 + erf(x / sqrt 2)) / 2; below -sqrt 2, 1 + erf is erfc_tail itself
// (no cancellation).
static inline float f32_gelu(float x)
{
    float y = x * 0.707106781186547524f, ay = fabsf(y);
    float near0 = f32_erf_near0(ay), tail = f32_erfc_tail(ay);
    float one_plus = y >= 0.0f ? 1.0f + (ay < 1.0f ? near0 : 1.0f - tail) : (ay < 1.0f ? 1.0f - near0 : tail);
    return x * 0.5f * one_plus;
}

// x (1 + tanh(u)) / 2 = x sigmoid(w), w = 2u, u = sqrt(2 / pi) (x + 0.044715 x^3);
// sigmoid from e^-|w|, which neither overflows nor cancels.
static inline float f32_gelu_tanh(float x)
{
    float w = 2.0f * 0.797884560802865355f * (x + 0.044715f * x * x * x);
    float e = f32_exp(-fabsf(w));
    return x * ((w > 0.0f ? 1.0f : e) / (1.0f + e));
}

// ---- the element functions ---------------------------------------------------

FLOAT_ROWS(neg, -v)
SIGNED_ROWS(neg, WRAP_NEG(v))

FLOAT_ROWS(abs, fabs(v))
SIGNED_ROWS(abs, v < 0 ? WRAP_NEG(v) : (uint64_t)v)
UNSIGNED_ROWS(abs, v)

// Sign keeps a float zero's or NaN's value (np.sign(nan) is nan).
FLOAT_ROWS(sign, v > 0 ? 1 : v < 0 ? -1 : v)
SIGNED_ROWS(sign, v > 0 ? 1 : v < 0 ? -1 : 0)
UNSIGNED_ROWS(sign, v > 0)

FLOAT_ROWS(reciprocal, 1 / v)
// rint rounds halves to even in the default rounding mode, as ONNX asks.
// Floor and Ceil go through it too: the vectorizer takes rint (libm's floor
// keeps the loop scalar). Ceil is -floor(-x), which keeps the sign of a
// zero result (ceil(-0.7) is -0); NaN and large values come through.
FLOAT_ROWS(round, rint(v))
FLOAT_ROWS(floor, rint(v) > v ? rint(v) - 1 : rint(v))
FLOAT_ROWS(ceil, -(rint(-v) > -v ? rint(-v) - 1 : rint(-v)))
FLOAT_ROWS(log, log(v))
FLOAT_ROWS(sin, sin(v))
FLOAT_ROWS(cos, cos(v))
FLOAT_ROWS(tan, tan(v))
FLOAT_ROWS(asin, asin(v))
FLOAT_ROWS(acos, acos(v))
FLOAT_ROWS(atan, atan(v))
FLOAT_ROWS(sinh, sinh(v))
FLOAT_ROWS(cosh, cosh(v))
FLOAT_ROWS(asinh, asinh(v))
FLOAT_ROWS(acosh, acosh(v))
FLOAT_ROWS(atanh, atanh(v))
SPLIT_ROWS(erf, f32_erf(v), erf(v))

// expm1 keeps exp(x) - 1 accurate near zero.
SPLIT_ROWS(elu, v < 0 ? a * f32_expm1(v) : v, v < 0 ? a * expm1(v) : v)
// Selu: a is alpha, b is gamma.
SPLIT_ROWS(selu, v > 0 ? b * v : b * a * f32_expm1(v), v > 0 ? b * v : b * a * expm1(v))
SPLIT_ROWS(celu, v > 0 ? v : a * f32_expm1(v / a), v > 0 ? v : a * expm1(v / a))
FLOAT_ROWS(thresholdedrelu, v > a ? v : 0)
// log(1 + e^x) without overflow for large x.
SPLIT_ROWS(softplus, f32_softplus(v), v > 0 ? v + log1p(exp(-v)) : log1p(exp(v)))
FLOAT_ROWS(softsign, v / (1 + fabs(v)))
SPLIT_ROWS(mish, f32_mish(v), v * tanh(v > 0 ? v + log1p(exp(-v)) : log1p(exp(v))))

// A double as an integer: truncated, saturated to int64's range, NaN 0 (a
// float-to-integer conversion out of range would be undefined); the
// narrower integer types wrap from there, as numpy's astype does.
static inline int64_t int_of(double r)
{
    if (!(r == r))
        return 0;
    return r >= 0x1p63 ? INT64_MAX : (r <= -0x1p63 ? INT64_MIN : (int64_t)r);
}

// Shrink: a is lambd, b is bias; integer types compute in double.
FLOAT_ROWS(shrink, v < -a ? v + b : v > a ? v - b : 0)
#define SHRINK_INT int_of((double)v < -a ? (double)v + b : (double)v > a ? (double)v - b : 0)
SIGNED_ROWS(shrink, SHRINK_INT)
UNSIGNED_ROWS(shrink, SHRINK_INT)

// Gelu: approximate = "none", and (gelu_tanh) "tanh", chosen in unary_run;
// 0.7978845608... = sqrt(2 / pi).
SPLIT_ROWS(gelu, f32_gelu(v), (v / 2) * (1 + erf(v * (elem)0.7071067811865476)))
SPLIT_ROWS(gelu_tanh, f32_gelu_tanh(v),
           (v / 2) * (1 + tanh((v + (v * v * v) * (elem)0.044715) * (elem)0.7978845608028654)))

// IsInf: a is detect_negative, flag is detect_positive.
ROW(isinf_f32, float, uint8_t, isinf(v) && (v > 0 ? flag != 0 : a != 0))
ROW(isinf_f64, double, uint8_t, isinf(v) && (v > 0 ? flag != 0 : a != 0))
ROW(isnan_f32, float, uint8_t, isnan(v))
ROW(isnan_f64, double, uint8_t, isnan(v))

// ---- the table -----------------------------------------------------------------

typedef struct uattr {
    const char *name; // NULL: unused
    float def;
} uattr;

typedef struct unary_def {
    urow row[REEL_DTYPE_COUNT]; // NULL: dtype not supported
    uattr a, b;                 // float attributes read into uparams a, b
    bool bool_out;              // IsInf, IsNaN
    int min_opset;              // 0: any
} unary_def;

#define FLOAT_OP(op, ...) { .row = { FLOAT_TYPES(op) }, __VA_ARGS__ }

// In the order of reel_ops_unary below.
enum {
    U_NEG, U_ABS, U_SIGN, U_RECIPROCAL, U_FLOOR, U_CEIL, U_ROUND, U_LOG,
    U_SIN, U_COS, U_TAN, U_ASIN, U_ACOS, U_ATAN, U_SINH, U_COSH, U_ASINH, U_ACOSH, U_ATANH, U_ERF,
    U_ELU, U_SELU, U_CELU, U_THRESHOLDEDRELU, U_SOFTPLUS, U_SOFTSIGN, U_SHRINK, U_MISH, U_GELU,
    U_ISINF, U_ISNAN, U_COUNT
};

static const unary_def defs[U_COUNT] = {
    [U_NEG] = { .row = { FLOAT_TYPES(neg), SIGNED_TYPES(neg) } },
    [U_ABS] = { .row = { FLOAT_TYPES(abs), SIGNED_TYPES(abs), UNSIGNED_TYPES(abs) } },
    [U_SIGN] = { .row = { FLOAT_TYPES(sign), SIGNED_TYPES(sign), UNSIGNED_TYPES(sign) } },
    [U_RECIPROCAL] = FLOAT_OP(reciprocal),
    [U_FLOOR] = FLOAT_OP(floor),
    [U_CEIL] = FLOAT_OP(ceil),
    [U_ROUND] = FLOAT_OP(round),
    [U_LOG] = FLOAT_OP(log),
    [U_SIN] = FLOAT_OP(sin),
    [U_COS] = FLOAT_OP(cos),
    [U_TAN] = FLOAT_OP(tan),
    [U_ASIN] = FLOAT_OP(asin),
    [U_ACOS] = FLOAT_OP(acos),
    [U_ATAN] = FLOAT_OP(atan),
    [U_SINH] = FLOAT_OP(sinh),
    [U_COSH] = FLOAT_OP(cosh),
    [U_ASINH] = FLOAT_OP(asinh),
    [U_ACOSH] = FLOAT_OP(acosh),
    [U_ATANH] = FLOAT_OP(atanh),
    [U_ERF] = FLOAT_OP(erf),
    [U_ELU] = FLOAT_OP(elu, .a = { "alpha", 1.0f }),
    [U_SELU] = FLOAT_OP(selu, .a = { "alpha", 1.67326319217681884765625f },
                        .b = { "gamma", 1.05070102214813232421875f }),
    [U_CELU] = FLOAT_OP(celu, .a = { "alpha", 1.0f }),
    [U_THRESHOLDEDRELU] = FLOAT_OP(thresholdedrelu, .a = { "alpha", 1.0f }),
    [U_SOFTPLUS] = FLOAT_OP(softplus),
    [U_SOFTSIGN] = FLOAT_OP(softsign),
    [U_SHRINK] = { .row = { FLOAT_TYPES(shrink), SIGNED_TYPES(shrink), UNSIGNED_TYPES(shrink) },
                   .a = { "lambd", 0.5f }, .b = { "bias", 0.0f } },
    [U_MISH] = FLOAT_OP(mish),
    [U_GELU] = FLOAT_OP(gelu, .min_opset = 20),
    [U_ISINF] = { .row = { FLOAT_TYPES(isinf) }, .bool_out = true },
    [U_ISNAN] = { .row = { FLOAT_TYPES(isnan) }, .bool_out = true },
};

// ---- infer and run ---------------------------------------------------------------

static const char *dtype_name(reel_dtype t)
{
    const char *s = reel_dtype_name(t);
    return s ? s : "unknown";
}

// A float attribute, if present, must be a float (or an int).
static int check_float_attr(const reel_ir_node *n, const uattr *u, GError **error)
{
    const reel_ir_attr *at = u->name ? reel_ir_attr_find(n, u->name) : NULL;
    if (at && at->type != REEL_ATTR_FLOAT && at->type != REEL_ATTR_INT)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute '%s' must be a float", u->name);
    return 0;
}

// The attributes only some ops have: Gelu's approximate, IsInf's flags,
// Celu's alpha (a divisor).
static int check_special_attrs(const unary_def *d, const reel_ir_node *n, GError **error)
{
    if (d == &defs[U_GELU]) {
        const char *s = reel_ir_attr_string(n, "approximate", "none");
        if (strcmp(s, "none") != 0 && strcmp(s, "tanh") != 0)
            return reel_op_fail(error, n, REEL_EUNSUPPORTED, "attribute 'approximate' = '%s' is not supported", s);
    } else if (d == &defs[U_CELU]) {
        if (reel_ir_attr_float(n, "alpha", 1.0f) == 0.0f)
            return reel_op_fail(error, n, REEL_EINVAL, "attribute 'alpha' = 0 is not supported (it divides)");
    } else if (d == &defs[U_ISINF]) {
        static const char *const flags[] = { "detect_negative", "detect_positive" };
        for (int i = 0; i < 2; i++) {
            const reel_ir_attr *at = reel_ir_attr_find(n, flags[i]);
            if (at && (at->type != REEL_ATTR_INT || (at->i != 0 && at->i != 1)))
                return reel_op_fail(error, n, REEL_EINVAL, "attribute '%s' must be 0 or 1", flags[i]);
        }
    }
    return 0;
}

// "float32, float64, int8, ..." : the dtypes d takes, for messages.
static void dtype_list(const unary_def *d, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int t = 0; t < REEL_DTYPE_COUNT; t++)
        if (d->row[t]) {
            if (buf[0])
                g_strlcat(buf, ", ", size);
            g_strlcat(buf, dtype_name(t), size);
        }
}

static int unary_infer(const unary_def *d, reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (n->n_inputs != 1 || !x || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs one input and one output");
    if (d->min_opset && g->opset < d->min_opset)
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "%s needs opset %d (the graph has %d)", n->op,
                            d->min_opset, g->opset);
    if (x->dtype <= REEL_DTYPE_NONE || x->dtype >= REEL_DTYPE_COUNT || !d->row[x->dtype]) {
        char types[128];
        dtype_list(d, types, sizeof types);
        return reel_op_fail(error, n, REEL_EUNSUPPORTED, "input type %s is not supported (%s)", dtype_name(x->dtype),
                            types);
    }
    int err = check_float_attr(n, &d->a, error);
    if (!err)
        err = check_float_attr(n, &d->b, error);
    if (!err)
        err = check_special_attrs(d, n, error);
    if (err)
        return err;
    nn_set(o, d->bool_out ? REEL_DTYPE_BOOL : x->dtype, x->rank, x->dims);
    return 0;
}

static void read_params(const unary_def *d, const reel_ir_node *n, uparams *p)
{
    p->a = d->a.name ? reel_ir_attr_float(n, d->a.name, d->a.def) : 0.0f;
    p->b = d->b.name ? reel_ir_attr_float(n, d->b.name, d->b.def) : 0.0f;
    p->flag = 0;
    if (d == &defs[U_GELU])
        p->flag = strcmp(reel_ir_attr_string(n, "approximate", "none"), "tanh") == 0;
    else if (d == &defs[U_ISINF]) {
        p->a = (float)reel_ir_attr_int(n, "detect_negative", 1);
        p->flag = (int)reel_ir_attr_int(n, "detect_positive", 1);
    }
}

// Large tensors are split into contiguous chunks over the workers.
enum { CHUNK = 1 << 15 };

typedef struct ujob {
    urow f;
    const char *x;
    char *y;
    size_t xsz, ysz;
    int64_t count, per_task;
    uparams p;
} ujob;

static void unary_task(void *arg, int task, int worker)
{
    (void)worker;
    const ujob *j = arg;
    int64_t i0 = task * j->per_task, len = MIN(j->per_task, j->count - i0);
    j->f(j->x + i0 * j->xsz, j->y + i0 * j->ysz, len, &j->p);
}

static int unary_run(const unary_def *d, const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    reel_dtype t = in[0]->dtype;
    if (t <= REEL_DTYPE_NONE || t >= REEL_DTYPE_COUNT || !d->row[t])
        return REEL_EUNSUPPORTED;
    ujob j = { .f = d->row[t], .x = in[0]->data, .y = out[0]->data, .xsz = reel_dtype_size(t),
               .ysz = reel_dtype_size(out[0]->dtype), .count = reel_tensor_count(out[0]->rank, out[0]->shape) };
    read_params(d, n, &j.p);
    if (d == &defs[U_GELU] && j.p.flag)
        j.f = t == REEL_DTYPE_FLOAT32 ? gelu_tanh_f32 : gelu_tanh_f64;
    int threads = ctx->workers ? ctx->threads : 1;
    int64_t tasks = threads > 1 ? MIN(4 * (int64_t)threads, j.count / CHUNK) : 1;
    if (tasks <= 1) {
        j.f(j.x, j.y, j.count, &j.p);
        return 0;
    }
    j.per_task = (j.count + tasks - 1) / tasks;
    nn_parallel(ctx, (int)((j.count + j.per_task - 1) / j.per_task), unary_task, &j);
    return 0;
}

#define UNARY_OP(id, fn, Name)                                                                                \
    static int infer_##fn(reel_ir_graph *g, reel_ir_node *n, GError **error)                           \
    {                                                                                                   \
        return unary_infer(&defs[id], g, n, error);                                                     \
    }                                                                                                   \
    static int run_##fn(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,         \
                        const reel_exec_ctx *ctx)                                                       \
    {                                                                                                   \
        return unary_run(&defs[id], n, in, out, ctx);                                                   \
    }                                                                                                   \
    static const reel_op op_##fn = { .name = Name, .infer = infer_##fn, .run = run_##fn };

UNARY_OP(U_NEG, neg, "Neg")
UNARY_OP(U_ABS, abs, "Abs")
UNARY_OP(U_SIGN, sign, "Sign")
UNARY_OP(U_RECIPROCAL, reciprocal, "Reciprocal")
UNARY_OP(U_FLOOR, floor, "Floor")
UNARY_OP(U_CEIL, ceil, "Ceil")
UNARY_OP(U_ROUND, round, "Round")
UNARY_OP(U_LOG, log, "Log")
UNARY_OP(U_SIN, sin, "Sin")
UNARY_OP(U_COS, cos, "Cos")
UNARY_OP(U_TAN, tan, "Tan")
UNARY_OP(U_ASIN, asin, "Asin")
UNARY_OP(U_ACOS, acos, "Acos")
UNARY_OP(U_ATAN, atan, "Atan")
UNARY_OP(U_SINH, sinh, "Sinh")
UNARY_OP(U_COSH, cosh, "Cosh")
UNARY_OP(U_ASINH, asinh, "Asinh")
UNARY_OP(U_ACOSH, acosh, "Acosh")
UNARY_OP(U_ATANH, atanh, "Atanh")
UNARY_OP(U_ERF, erf, "Erf")
UNARY_OP(U_ELU, elu, "Elu")
UNARY_OP(U_SELU, selu, "Selu")
UNARY_OP(U_CELU, celu, "Celu")
UNARY_OP(U_THRESHOLDEDRELU, thresholdedrelu, "ThresholdedRelu")
UNARY_OP(U_SOFTPLUS, softplus, "Softplus")
UNARY_OP(U_SOFTSIGN, softsign, "Softsign")
UNARY_OP(U_SHRINK, shrink, "Shrink")
UNARY_OP(U_MISH, mish, "Mish")
UNARY_OP(U_GELU, gelu, "Gelu")
UNARY_OP(U_ISINF, isinf, "IsInf")
UNARY_OP(U_ISNAN, isnan, "IsNaN")

const reel_op *const reel_ops_unary[] = {
    &op_neg, &op_abs, &op_sign, &op_reciprocal, &op_floor, &op_ceil, &op_round, &op_log,
    &op_sin, &op_cos, &op_tan, &op_asin, &op_acos, &op_atan, &op_sinh, &op_cosh, &op_asinh, &op_acosh, &op_atanh,
    &op_erf, &op_elu, &op_selu, &op_celu, &op_thresholdedrelu, &op_softplus, &op_softsign, &op_shrink, &op_mish,
    &op_gelu, &op_isinf, &op_isnan, NULL,
};

// The unary kernels (models/cpu/unary.c) where ONNX's cases do not reach:
// integer and float64 forms, Round's halves, Gelu (no case in the data),
// IsInf's flags, empty and large tensors, and the failures, whose messages
// name the node; and large elementwise passes split over the workers.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ops/op_harness.h"

static reel_tensor *tensor_of(reel_dtype dt, int64_t count, const double *v)
{
    reel_tensor *t = reel_tensor_new(dt, 1, &count);
    for (int64_t i = 0; i < count; i++)
        switch (dt) {
        case REEL_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v[i]; break;
        case REEL_DTYPE_FLOAT64: ((double *)t->data)[i] = v[i]; break;
        case REEL_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v[i]; break;
        case REEL_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v[i]; break;
        case REEL_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v[i]; break;
        case REEL_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)v[i]; break;
        default: fail_msg("tensor_of: dtype %d", dt);
        }
    return t;
}

static double element(const reel_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case REEL_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case REEL_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case REEL_DTYPE_UINT8: case REEL_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case REEL_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    default: fail_msg("element: dtype %d", t->dtype); return 0;
    }
}

// Runs c on values of dtype dt and checks the output (of type out_dt)
// against want within tol (relative, plus tol absolute); NaN matches NaN.
static void expect_op(const op_call *c, reel_dtype dt, int64_t count, const double *x, reel_dtype out_dt,
                      const double *want, double tol)
{
    reel_tensor *out;
    int rc = op_run(c, 1, (reel_tensor *[]){ tensor_of(dt, count, x) }, &out);
    if (rc)
        fail_msg("%s: %s", c->op, op_message());
    assert_int_equal(out->dtype, out_dt);
    assert_int_equal(out->rank, 1);
    assert_int_equal(out->shape[0], count);
    for (int64_t i = 0; i < count; i++) {
        double got = element(out, i);
        if (isnan(want[i]) ? !isnan(got) : fabs(got - want[i]) > tol * (1.0 + fabs(want[i])))
            fail_msg("%s %s element %" G_GINT64_FORMAT " (x = %g): %.9g, expected %.9g", c->op,
                     reel_dtype_name(dt), i, x[i], got, want[i]);
    }
    reel_tensor_free(&out);
}

// Expects infer to fail with code and a message naming the node and `what`.
static void expect_fail(const op_call *c, reel_tensor *x, int code, const char *what)
{
    reel_tensor *out;
    assert_int_equal(op_run(c, 1, &x, &out), code);
    assert_null(out);
    const char *msg = op_message();
    if (!strstr(msg, "node 'n'") || !strstr(msg, what))
        fail_msg("%s: message \"%s\" does not name the node and '%s'", c->op, msg, what);
}

// Integers: Neg and Abs wrap at the most negative value, Sign of unsigned,
// Shrink of int32 through double.
static void integer_forms(void **state)
{
    (void)state;
    const double xi[] = { -128, -5, 0, 7, 127 };
    expect_op(&(op_call){ .op = "Neg" }, REEL_DTYPE_INT8, 5, xi, REEL_DTYPE_INT8,
              (const double[]){ -128, 5, 0, -7, -127 }, 0);
    expect_op(&(op_call){ .op = "Abs" }, REEL_DTYPE_INT8, 5, xi, REEL_DTYPE_INT8,
              (const double[]){ -128, 5, 0, 7, 127 }, 0);
    expect_op(&(op_call){ .op = "Sign" }, REEL_DTYPE_INT64, 5, xi, REEL_DTYPE_INT64,
              (const double[]){ -1, -1, 0, 1, 1 }, 0);
    const double xu[] = { 0, 1, 200 };
    expect_op(&(op_call){ .op = "Sign" }, REEL_DTYPE_UINT8, 3, xu, REEL_DTYPE_UINT8, (const double[]){ 0, 1, 1 }, 0);
    expect_op(&(op_call){ .op = "Abs" }, REEL_DTYPE_UINT8, 3, xu, REEL_DTYPE_UINT8, (const double[]){ 0, 1, 200 }, 0);
    op_call shrink = { .op = "Shrink" };
    op_attr_float(&shrink, "lambd", 1.5f);
    op_attr_float(&shrink, "bias", 1.0f);
    const double xs[] = { -3, -1, 0, 1, 2, 5 };
    expect_op(&shrink, REEL_DTYPE_INT32, 6, xs, REEL_DTYPE_INT32, (const double[]){ -2, 0, 0, 0, 1, 4 }, 0);
    // A negative lambd: x < -lambd is tested first, as ONNX's reference does,
    // for unsigned types too; a result past int8's range wraps.
    op_call neg_lambd = { .op = "Shrink" };
    op_attr_float(&neg_lambd, "lambd", -1.0f);
    op_attr_float(&neg_lambd, "bias", 1.0f);
    const double xn[] = { 0, 1, 5 };
    expect_op(&neg_lambd, REEL_DTYPE_UINT8, 3, xn, REEL_DTYPE_UINT8, (const double[]){ 1, 0, 4 }, 0);
    expect_op(&neg_lambd, REEL_DTYPE_FLOAT32, 3, xn, REEL_DTYPE_FLOAT32, (const double[]){ 1, 0, 4 }, 0);
    op_call big_bias = { .op = "Shrink" };
    op_attr_float(&big_bias, "bias", -100.0f);
    expect_op(&big_bias, REEL_DTYPE_INT8, 1, (const double[]){ 100 }, REEL_DTYPE_INT8, (const double[]){ -56 }, 0);
}

// Round halves to even; Sign keeps NaN and zero; float64 Softplus and Mish
// of large values do not overflow.
static void float_edges(void **state)
{
    (void)state;
    const double xr[] = { 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6 };
    const double want_r[] = { 0, 2, 2, -0.0, -2, -2, 2, -3 };
    expect_op(&(op_call){ .op = "Round" }, REEL_DTYPE_FLOAT32, 8, xr, REEL_DTYPE_FLOAT32, want_r, 0);
    expect_op(&(op_call){ .op = "Round" }, REEL_DTYPE_FLOAT64, 8, xr, REEL_DTYPE_FLOAT64, want_r, 0);
    const double xs[] = { NAN, 0, -3, 4 };
    expect_op(&(op_call){ .op = "Sign" }, REEL_DTYPE_FLOAT32, 4, xs, REEL_DTYPE_FLOAT32,
              (const double[]){ NAN, 0, -1, 1 }, 0);
    const double xb[] = { -1000, -2, 0, 3, 1000 };
    double sp[5], mish[5];
    for (int i = 0; i < 5; i++) {
        sp[i] = xb[i] > 0 ? xb[i] + log1p(exp(-xb[i])) : log1p(exp(xb[i]));
        mish[i] = xb[i] * tanh(sp[i]);
    }
    expect_op(&(op_call){ .op = "Softplus" }, REEL_DTYPE_FLOAT64, 5, xb, REEL_DTYPE_FLOAT64, sp, 1e-14);
    expect_op(&(op_call){ .op = "Softplus" }, REEL_DTYPE_FLOAT32, 5, xb, REEL_DTYPE_FLOAT32, sp, 1e-6);
    expect_op(&(op_call){ .op = "Mish" }, REEL_DTYPE_FLOAT32, 5, xb, REEL_DTYPE_FLOAT32, mish, 1e-6);
    op_call celu = { .op = "Celu" };
    op_attr_float(&celu, "alpha", 2.0f);
    const double xc[] = { -4, -1, 0, 3 };
    double want_c[4];
    for (int i = 0; i < 4; i++)
        want_c[i] = xc[i] > 0 ? xc[i] : 2.0 * expm1(xc[i] / 2.0);
    expect_op(&celu, REEL_DTYPE_FLOAT64, 4, xc, REEL_DTYPE_FLOAT64, want_c, 1e-12);
}

// Gelu in both forms, float32 and float64, against the formulas in double.
static void gelu_forms(void **state)
{
    (void)state;
    const double x[] = { -6, -3, -1, -0.5, 0, 0.25, 1, 2, 5 };
    double exact[9], approx[9];
    for (int i = 0; i < 9; i++) {
        exact[i] = 0.5 * x[i] * (1 + erf(x[i] / sqrt(2.0)));
        approx[i] = 0.5 * x[i] * (1 + tanh(sqrt(2.0 / M_PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i])));
    }
    op_call none = { .op = "Gelu" };
    expect_op(&none, REEL_DTYPE_FLOAT32, 9, x, REEL_DTYPE_FLOAT32, exact, 1e-6);
    expect_op(&none, REEL_DTYPE_FLOAT64, 9, x, REEL_DTYPE_FLOAT64, exact, 1e-12);
    op_call none2 = { .op = "Gelu" };
    op_attr_str(&none2, "approximate", "none");
    expect_op(&none2, REEL_DTYPE_FLOAT32, 9, x, REEL_DTYPE_FLOAT32, exact, 1e-6);
    op_call tanh_form = { .op = "Gelu" };
    op_attr_str(&tanh_form, "approximate", "tanh");
    expect_op(&tanh_form, REEL_DTYPE_FLOAT32, 9, x, REEL_DTYPE_FLOAT32, approx, 1e-6);
    expect_op(&tanh_form, REEL_DTYPE_FLOAT64, 9, x, REEL_DTYPE_FLOAT64, approx, 1e-12);
    // The two forms differ measurably at x = -3 (about 5e-4 apart).
    assert_true(fabs(exact[1] - approx[1]) > 1e-4);
}

// IsInf with one side turned off; IsNaN of float64.
static void isinf_isnan(void **state)
{
    (void)state;
    const double x[] = { -INFINITY, -1, 0, INFINITY, NAN };
    op_call pos = { .op = "IsInf" };
    op_attr_int(&pos, "detect_negative", 0);
    expect_op(&pos, REEL_DTYPE_FLOAT32, 5, x, REEL_DTYPE_BOOL, (const double[]){ 0, 0, 0, 1, 0 }, 0);
    op_call neg = { .op = "IsInf" };
    op_attr_int(&neg, "detect_positive", 0);
    expect_op(&neg, REEL_DTYPE_FLOAT64, 5, x, REEL_DTYPE_BOOL, (const double[]){ 1, 0, 0, 0, 0 }, 0);
    op_call none = { .op = "IsInf" };
    op_attr_int(&none, "detect_positive", 0);
    op_attr_int(&none, "detect_negative", 0);
    expect_op(&none, REEL_DTYPE_FLOAT32, 5, x, REEL_DTYPE_BOOL, (const double[]){ 0, 0, 0, 0, 0 }, 0);
    expect_op(&(op_call){ .op = "IsNaN" }, REEL_DTYPE_FLOAT64, 5, x, REEL_DTYPE_BOOL,
              (const double[]){ 0, 0, 0, 0, 1 }, 0);
}

// An empty tensor keeps its shape; a large one split over the workers
// matches the formula everywhere (and the one-thread run, in call).
static void empty_and_large(void **state)
{
    (void)state;
    const int64_t empty[] = { 0, 3 };
    reel_tensor *out;
    reel_tensor *none = reel_tensor_new(REEL_DTYPE_FLOAT32, 2, empty);
    assert_int_equal(op_run(&(op_call){ .op = "Erf" }, 1, &none, &out), 0);
    assert_int_equal(out->rank, 2);
    assert_int_equal(out->shape[0], 0);
    assert_int_equal(out->shape[1], 3);
    reel_tensor_free(&out);

    const int64_t shape[] = { 3, 480, 641 }; // not a multiple of the chunk
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 3, shape);
    float *xd = x->data;
    int64_t count = reel_tensor_count(3, shape);
    for (int64_t i = 0; i < count; i++)
        xd[i] = (float)((i % 2001) - 1000) / 100.0f;
    op_call elu = { .op = "Elu" };
    op_attr_float(&elu, "alpha", 0.5f);
    assert_int_equal(op_run(&elu, 1, &x, &out), 0);
    const float *y = out->data;
    for (int64_t i = 0; i < count; i++) {
        double v = (float)((i % 2001) - 1000) / 100.0f, want = v < 0 ? 0.5 * expm1(v) : v;
        if (fabs(y[i] - want) > 1e-6 * (1 + fabs(want)))
            fail_msg("Elu element %" G_GINT64_FORMAT ": %g, expected %g", i, y[i], want);
    }
    reel_tensor_free(&out);
}

// The float32 forms of the exp-based activations (the kernel's own
// vectorizable exp, expm1, log1p and erf) against double libm over the
// whole range where their results are not 0, 1 or x: relative error
// within `rel` or absolute error within `abs`.
static double ref_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
// x (1 + tanh(u)) / 2 as x / (1 + e^-2u): 1 + tanh(u) cancels to 0 in
// double already where the float result is not 0.
static double ref_gelu_tanh(double x)
{
    return x / (1 + exp(-2 * sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double ref_softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }
static double ref_mish(double x) { return x * tanh(ref_softplus(x)); }
static double ref_elu(double x) { return x < 0 ? expm1(x) : x; }

static void fast_math_accuracy(void **state)
{
    (void)state;
    static const struct {
        const char *op, *approx;
        double (*ref)(double);
        double lo, hi, rel, abs;
    } cases[] = {
        { "Erf", NULL, erf, -10, 10, 4e-7, 2e-7 },
        { "Elu", NULL, ref_elu, -110, 10, 4e-7, 0 },
        { "Softplus", NULL, ref_softplus, -110, 100, 4e-7, 0 },
        { "Mish", NULL, ref_mish, -110, 30, 4e-7, 0 },
        { "Gelu", NULL, ref_gelu, -20, 20, 4e-7, 5e-7 }, // absolute: erfc_tail in the negative tail
        // Far out the result is e^w with w rounded in float: relative error |w| ulp.
        { "Gelu", "tanh", ref_gelu_tanh, -20, 20, 3e-5, 0 },
        { "Floor", NULL, floor, -1e8, 1e8, 0, 0 },
        { "Ceil", NULL, ceil, -1e8, 1e8, 0, 0 },
        { "Floor", NULL, floor, -3, 3, 0, 0 }, // zeros' signs
        { "Ceil", NULL, ceil, -3, 3, 0, 0 },
    };
    enum { N = 200001 };
    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
        int64_t len = N;
        reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, &len);
        float *xd = x->data;
        double lo = cases[c].lo, hi = cases[c].hi;
        for (int i = 0; i < N; i++)
            xd[i] = (float)(lo + (hi - lo) * i / (N - 1));
        xd[0] = 0.5f, xd[1] = -0.5f, xd[2] = 1e-20f, xd[3] = -1e-20f, xd[4] = 0.0f; // series edges, tiny
        float *xs = g_memdup2(xd, sizeof(float) * N);
        op_call call_ = { .op = cases[c].op };
        if (cases[c].approx)
            op_attr_str(&call_, "approximate", cases[c].approx);
        reel_tensor *out;
        assert_int_equal(op_run(&call_, 1, &x, &out), 0);
        const float *y = out->data;
        double worst = 0;
        int64_t at = 0;
        for (int i = 0; i < N; i++) {
            if (!signbit(y[i]) != !signbit(cases[c].ref(xs[i])) && !isnan(y[i]))
                fail_msg("%s: the sign of %g at x = %.9g", cases[c].op, y[i], xs[i]);
            // Results below float's normal range are compared in absolute terms.
            double want = cases[c].ref(xs[i]), err = fabs(y[i] - want);
            if (err > cases[c].abs && err > 1.2e-38 && err > cases[c].rel * fabs(want) && err / fabs(want) > worst)
                worst = err / fabs(want), at = i;
        }
        if (worst > 0)
            fail_msg("%s%s%s: relative error %.3g at x = %.9g (%.9g, expected %.9g)", cases[c].op,
                     cases[c].approx ? " " : "", cases[c].approx ? cases[c].approx : "", worst, xs[at], y[at],
                     cases[c].ref(xs[at]));
        reel_tensor_free(&out);
        g_free(xs);
    }
}

// What the kernels do not take fails in infer, naming the node.
static void failures(void **state)
{
    (void)state;
    const double v[] = { 1, 2 };
    expect_fail(&(op_call){ .op = "Reciprocal" }, tensor_of(REEL_DTYPE_INT32, 2, v), REEL_EUNSUPPORTED,
                "input type int32 is not supported");
    expect_fail(&(op_call){ .op = "Neg" }, tensor_of(REEL_DTYPE_UINT8, 2, v), REEL_EUNSUPPORTED,
                "input type uint8 is not supported");
    expect_fail(&(op_call){ .op = "Sin" }, reel_tensor_new(REEL_DTYPE_FLOAT16, 1, (const int64_t[]){ 2 }),
                REEL_EUNSUPPORTED, "input type float16 is not supported");
    expect_fail(&(op_call){ .op = "IsNaN" }, tensor_of(REEL_DTYPE_INT64, 2, v), REEL_EUNSUPPORTED,
                "input type int64 is not supported");

    op_call gelu = { .op = "Gelu" };
    op_attr_str(&gelu, "approximate", "sigmoid");
    expect_fail(&gelu, tensor_of(REEL_DTYPE_FLOAT32, 2, v), REEL_EUNSUPPORTED,
                "attribute 'approximate' = 'sigmoid' is not supported");
    expect_fail(&(op_call){ .op = "Gelu", .opset = 19 }, tensor_of(REEL_DTYPE_FLOAT32, 2, v), REEL_EUNSUPPORTED,
                "needs opset 20");

    op_call celu = { .op = "Celu" };
    op_attr_float(&celu, "alpha", 0.0f);
    expect_fail(&celu, tensor_of(REEL_DTYPE_FLOAT32, 2, v), REEL_EINVAL, "attribute 'alpha' = 0");

    op_call elu = { .op = "Elu" };
    op_attr_str(&elu, "alpha", "big");
    expect_fail(&elu, tensor_of(REEL_DTYPE_FLOAT32, 2, v), REEL_EINVAL, "attribute 'alpha' must be a float");

    op_call isinf = { .op = "IsInf" };
    op_attr_int(&isinf, "detect_positive", 2);
    expect_fail(&isinf, tensor_of(REEL_DTYPE_FLOAT32, 2, v), REEL_EINVAL,
                "attribute 'detect_positive' must be 0 or 1");
}

// Elementwise passes over tensors large enough to be split over the
// workers (models/cpu/broadcast.c: elem_parallel), an odd length so the
// pieces differ: Add of equal shapes, Add and Mul with a scalar on either
// side, and elementwise.c's HardSwish, Clip and Sigmoid, each against its
// formula (the harness also compares one thread with two workers, byte for
// byte).
static void large_passes_split(void **state)
{
    (void)state;
    int64_t n = 100003, one = 1;
    reel_tensor *x = op_random(1, &n, 7, -5, 5), *y = op_random(1, &n, 8, -5, 5);
    const float *xv = x->data, *yv = y->data;
    float k = 0.75f, lo = -1.5f, hi = 2.0f;
    struct {
        const char *op;
        int n_in;
        int scalar; // input index that is the scalar k; -1: none
    } cases[] = { { "Add", 2, -1 }, { "Add", 2, 1 }, { "Mul", 2, 0 }, { "HardSwish", 1, -1 },
                  { "Clip", 3, -1 },  { "Sigmoid", 1, -1 } };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        reel_tensor *in[3] = { op_tensor(REEL_DTYPE_FLOAT32, 1, &n, xv), NULL, NULL }, *out = NULL;
        if (cases[c].op[0] == 'C') {
            in[1] = op_tensor(REEL_DTYPE_FLOAT32, 0, &one, &lo);
            in[2] = op_tensor(REEL_DTYPE_FLOAT32, 0, &one, &hi);
        } else if (cases[c].n_in == 2) {
            in[1] = cases[c].scalar < 0 ? op_tensor(REEL_DTYPE_FLOAT32, 1, &n, yv)
                                         : op_tensor(REEL_DTYPE_FLOAT32, 0, &one, &k);
            if (cases[c].scalar == 0) {
                reel_tensor *t = in[0];
                in[0] = in[1], in[1] = t;
            }
        }
        if (op_run(&(op_call){ .op = cases[c].op, .opset = 14 }, cases[c].n_in, in, &out))
            fail_msg("%s: %s", cases[c].op, op_message());
        const float *o = out->data;
        for (int64_t i = 0; i < n; i++) {
            double v = xv[i], want;
            switch (c) {
            case 0: want = v + yv[i]; break;
            case 1: want = v + k; break;
            case 2: want = k * v; break;
            case 3: want = v * fmin(fmax(v + 3, 0), 6) / 6; break;
            case 4: want = fmin(fmax(v, lo), hi); break;
            default: want = 1 / (1 + exp(-v)); break;
            }
            if (fabs(o[i] - want) > 1e-6 * (1 + fabs(want)))
                fail_msg("%s case %zu element %" G_GINT64_FORMAT ": %.9g, expected %.9g", cases[c].op, c, i, o[i],
                         want);
        }
        reel_tensor_free(&out);
    }
    reel_tensor_free(&x);
    reel_tensor_free(&y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(integer_forms),
        cmocka_unit_test(float_edges),
        cmocka_unit_test(gelu_forms),
        cmocka_unit_test(isinf_isnan),
        cmocka_unit_test(empty_and_large),
        cmocka_unit_test(fast_math_accuracy),
        cmocka_unit_test(failures),
        cmocka_unit_test(large_passes_split),
    };
    return op_run_tests(tests, .opset = 20, .two_workers = true);
}

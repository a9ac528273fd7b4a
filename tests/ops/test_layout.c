// The reduction and layout kernels (models/cpu/reduce.c, layout.c) where
// ONNX's cases do not reach: integer reductions, empty and no-op ones, a
// LogSumExp that would overflow, Trilu's extreme k, empty ranges, CumSum
// and Tile on other types, DepthToSpace round trips, EyeLike's types, and
// the attribute values, types and shapes each op refuses (the message
// names the node). Every run also runs over two workers, to the same bytes.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ops/op_harness.h"

static void put(reel_tensor *t, int64_t i, double v)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v; break;
    case REEL_DTYPE_FLOAT64: ((double *)t->data)[i] = v; break;
    case REEL_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case REEL_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)v; break;
    case REEL_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    default: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    }
}

static double at(const reel_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case REEL_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case REEL_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    case REEL_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    default: return ((const uint8_t *)t->data)[i];
    }
}

// A tensor of type dt holding v (NULL: 0, 1, 2, ...).
static reel_tensor *tensor(reel_dtype dt, int rank, const int64_t *shape, const double *v)
{
    reel_tensor *t = reel_tensor_new(dt, rank, shape);
    assert_non_null(t);
    int64_t n = reel_tensor_count(rank, shape);
    for (int64_t i = 0; i < n; i++)
        put(t, i, v ? v[i] : (double)i);
    return t;
}

static reel_tensor *scalar_i64(int64_t v)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_INT64, 0, NULL);
    *(int64_t *)t->data = v;
    return t;
}

static reel_tensor *ints_i64(int n, const int64_t *v)
{
    int64_t s = n;
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_INT64, 1, &s);
    if (n)
        memcpy(t->data, v, sizeof(int64_t) * n);
    return t;
}

// The node is refused in infer with a message naming it and saying `what`.
static void expect_refused(const op_call *c, int n_in, reel_tensor **in, const char *what)
{
    reel_tensor *out;
    int rc = op_run(c, n_in, in, &out);
    if (rc == 0)
        fail_msg("%s: accepted, expected a refusal saying '%s'", c->op, what);
    const char *msg = op_message();
    char *node = g_strdup_printf("node 'n' (%s)", c->op);
    if (!strstr(msg, node) || !strstr(msg, what))
        fail_msg("%s: message '%s' does not name the node or say '%s'", c->op, msg, what);
    g_free(node);
}

// t has type dt, the shape and the values (NaN matching NaN).
static void expect_tensor(const reel_tensor *t, reel_dtype dt, int rank, const int64_t *shape, const double *want,
                          double tol)
{
    assert_non_null(t);
    assert_int_equal(t->dtype, dt);
    assert_int_equal(t->rank, rank);
    for (int d = 0; d < rank; d++)
        assert_int_equal(t->shape[d], shape[d]);
    int64_t n = reel_tensor_count(rank, shape);
    for (int64_t i = 0; i < n; i++) {
        double got = at(t, i);
        bool same = isnan(want[i]) ? isnan(got) : isinf(want[i]) ? got == want[i]
                                                                   : fabs(got - want[i]) <= tol * (1 + fabs(want[i]));
        if (!same)
            fail_msg("element %" G_GINT64_FORMAT ": %.9g, expected %.9g", i, got, want[i]);
    }
}

// Runs c on in (n_in inputs) and checks the one output against want.
static void expect_run(const op_call *c, int n_in, reel_tensor **in, reel_dtype dt, int rank,
                       const int64_t *shape, const double *want, double tol)
{
    reel_tensor *out;
    int rc = op_run(c, n_in, in, &out);
    if (rc)
        fail_msg("%s: code %d (%s)", c->op, rc, *op_message() ? op_message() : "run failed");
    expect_tensor(out, dt, rank, shape, want, tol);
    reel_tensor_free(&out);
}

// ---- reductions -------------------------------------------------------------

static void reduce_integer_forms(void **state)
{
    (void)state;
    const int64_t s23[] = { 2, 3 }, two[] = { 2 }, row[] = { 1, 3 };
    const double x[] = { 1, 2, 4, -4, -5, 0 };

    // Axes as an input (opset 18) with a negative axis, keepdims off.
    op_call sum = { .op = "ReduceSum" };
    op_attr_int(&sum, "keepdims", 0);
    const int64_t last[] = { -1 };
    reel_tensor *in[2] = { tensor(REEL_DTYPE_INT64, 2, s23, x), ints_i64(1, last) };
    expect_run(&sum, 2, in, REEL_DTYPE_INT64, 1, two, (double[]){ 7, -9 }, 0);

    // Axes as an attribute (opset 13), kept.
    op_call min = { .op = "ReduceMin", .opset = 13 };
    const int64_t first[] = { 0 };
    op_attr_ints(&min, "axes", first, 1);
    in[0] = tensor(REEL_DTYPE_INT32, 2, s23, x);
    expect_run(&min, 1, in, REEL_DTYPE_INT32, 2, row, (double[]){ -4, -5, 0 }, 0);

    // The integer mean truncates towards 0 as ONNX's reference casts it.
    op_call mean = { .op = "ReduceMean", .opset = 13 };
    const int64_t second[] = { 1 };
    op_attr_ints(&mean, "axes", second, 1);
    op_attr_int(&mean, "keepdims", 0);
    in[0] = tensor(REEL_DTYPE_INT32, 2, s23, x);
    expect_run(&mean, 1, in, REEL_DTYPE_INT32, 1, two, (double[]){ 2, -3 }, 0);

    // Over everything, into a scalar.
    op_call prod = { .op = "ReduceProd", .opset = 13 };
    op_attr_int(&prod, "keepdims", 0);
    const double px[] = { 1, 2, 3, -4, 5, 6 };
    in[0] = tensor(REEL_DTYPE_INT64, 2, s23, px);
    expect_run(&prod, 1, in, REEL_DTYPE_INT64, 0, NULL, (double[]){ -720 }, 0);

    op_call l1 = { .op = "ReduceL1", .opset = 13 }, sq = { .op = "ReduceSumSquare", .opset = 13 };
    op_attr_int(&l1, "keepdims", 0);
    op_attr_int(&sq, "keepdims", 0);
    in[0] = tensor(REEL_DTYPE_INT32, 2, s23, x);
    expect_run(&l1, 1, in, REEL_DTYPE_INT32, 0, NULL, (double[]){ 16 }, 0);
    in[0] = tensor(REEL_DTYPE_INT64, 2, s23, x);
    expect_run(&sq, 1, in, REEL_DTYPE_INT64, 0, NULL, (double[]){ 62 }, 0);

    op_call max = { .op = "ReduceMax", .opset = 13 };
    op_attr_ints(&max, "axes", second, 1);
    in[0] = tensor(REEL_DTYPE_INT64, 2, s23, x);
    expect_run(&max, 1, in, REEL_DTYPE_INT64, 2, (int64_t[]){ 2, 1 }, (double[]){ 4, 0 }, 0);
}

static void reduce_float_edges(void **state)
{
    (void)state;
    const int64_t s22[] = { 2, 2 }, two[] = { 2 };
    // exp(1000) overflows float and double: the max is subtracted first.
    op_call lse = { .op = "ReduceLogSumExp", .opset = 13 };
    const int64_t second[] = { 1 };
    op_attr_ints(&lse, "axes", second, 1);
    op_attr_int(&lse, "keepdims", 0);
    reel_tensor *in[2] = { tensor(REEL_DTYPE_FLOAT32, 2, s22, (double[]){ 1000, 1000, -INFINITY, -INFINITY }) };
    expect_run(&lse, 1, in, REEL_DTYPE_FLOAT32, 1, two, (double[]){ 1000 + log(2.0), -INFINITY }, 1e-6);
    in[0] = tensor(REEL_DTYPE_FLOAT64, 2, s22, (double[]){ 800, 799, -3, 2 });
    expect_run(&lse, 1, in, REEL_DTYPE_FLOAT64, 1, two, (double[]){ 800 + log1p(exp(-1.0)), 2 + log1p(exp(-5.0)) },
               1e-12);

    op_call l2 = { .op = "ReduceL2", .opset = 13 }, ls = { .op = "ReduceLogSum", .opset = 13 };
    op_attr_int(&l2, "keepdims", 0);
    op_attr_ints(&ls, "axes", second, 1);
    in[0] = tensor(REEL_DTYPE_FLOAT64, 2, s22, (double[]){ 3, 4, 0, 0 });
    expect_run(&l2, 1, in, REEL_DTYPE_FLOAT64, 0, NULL, (double[]){ 5 }, 1e-12);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s22, (double[]){ 1, 2, 0, 0 });
    expect_run(&ls, 1, in, REEL_DTYPE_FLOAT32, 2, (int64_t[]){ 2, 1 }, (double[]){ log(3.0), -INFINITY }, 1e-6);

    // A NaN wins max and min.
    op_call max = { .op = "ReduceMax", .opset = 13 }, min = { .op = "ReduceMin", .opset = 13 };
    op_attr_ints(&max, "axes", second, 1);
    op_attr_ints(&min, "axes", second, 1);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s22, (double[]){ NAN, 1, 2, 3 });
    expect_run(&max, 1, in, REEL_DTYPE_FLOAT32, 2, (int64_t[]){ 2, 1 }, (double[]){ NAN, 3 }, 0);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s22, (double[]){ 1, NAN, 2, 3 });
    expect_run(&min, 1, in, REEL_DTYPE_FLOAT32, 2, (int64_t[]){ 2, 1 }, (double[]){ NAN, 2 }, 0);
}

static void reduce_empty_and_noop(void **state)
{
    (void)state;
    const int64_t s20[] = { 2, 0 }, two[] = { 2 }, second[] = { 1 };
    // Folding no elements leaves each kind's identity; the mean 0 (as on Vulkan).
    const char *ops[] = { "ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceSumSquare" };
    const double want[][2] = { { 0, 0 }, { 1, 1 }, { -INFINITY, -INFINITY }, { INFINITY, INFINITY },
                               { 0, 0 }, { 0, 0 } };
    for (int k = 0; k < 6; k++) {
        op_call c = { .op = ops[k] };
        op_attr_int(&c, "keepdims", 0);
        reel_tensor *in[2] = { tensor(REEL_DTYPE_FLOAT32, 2, s20, NULL), ints_i64(1, second) };
        expect_run(&c, 2, in, REEL_DTYPE_FLOAT32, 1, two, want[k], 0);
    }

    // Empty axes: the identity with noop_with_empty_axes, else everything.
    const int64_t s23[] = { 2, 3 }, one1[] = { 1, 1 };
    const double x[] = { 1, 2, 3, 4, 5, 6 };
    op_call noop = { .op = "ReduceProd" };
    op_attr_int(&noop, "noop_with_empty_axes", 1);
    reel_tensor *in[2] = { tensor(REEL_DTYPE_FLOAT32, 2, s23, x), ints_i64(0, NULL) };
    expect_run(&noop, 2, in, REEL_DTYPE_FLOAT32, 2, s23, x, 0);
    op_call all = { .op = "ReduceProd" };
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s23, x);
    in[1] = ints_i64(0, NULL);
    expect_run(&all, 2, in, REEL_DTYPE_FLOAT32, 2, one1, (double[]){ 720 }, 0);
}

static void reduce_refusals(void **state)
{
    (void)state;
    const int64_t s23[] = { 2, 3 }, far[] = { 2 }, second[] = { 1 };
    op_call l2 = { .op = "ReduceL2" };
    reel_tensor *in[2] = { tensor(REEL_DTYPE_INT32, 2, s23, NULL) };
    expect_refused(&l2, 1, in, "input type int32 is not supported");
    op_call sum = { .op = "ReduceSum" };
    in[0] = tensor(REEL_DTYPE_UINT8, 2, s23, NULL);
    expect_refused(&sum, 1, in, "input type uint8 is not supported");
    op_call min = { .op = "ReduceMin", .opset = 13 };
    op_attr_ints(&min, "axes", far, 1);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s23, NULL);
    expect_refused(&min, 1, in, "out of range for rank 2");
    op_call both = { .op = "ReduceMax" };
    op_attr_ints(&both, "axes", second, 1);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s23, NULL);
    in[1] = ints_i64(1, second);
    expect_refused(&both, 2, in, "both as attribute and input");
}

// ---- Trilu, Range, CumSum, Tile ---------------------------------------------

static void trilu_bands(void **state)
{
    (void)state;
    const int64_t s[] = { 2, 3, 4 };
    double want[24];
    for (int64_t i = 0; i < 24; i++) {
        int64_t r = (i / 4) % 3, c = i % 4;
        want[i] = c <= r - 1 ? (double)i : 0; // lower, k = -1
    }
    op_call lower = { .op = "Trilu" };
    op_attr_int(&lower, "upper", 0);
    reel_tensor *in[2] = { tensor(REEL_DTYPE_INT64, 3, s, NULL), scalar_i64(-1) };
    expect_run(&lower, 2, in, REEL_DTYPE_INT64, 3, s, want, 0);

    // k past either end: everything zeroed, or everything kept.
    op_call upper = { .op = "Trilu" };
    double zeros[24] = { 0 }, all[24];
    for (int i = 0; i < 24; i++)
        all[i] = i;
    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s, NULL);
    in[1] = scalar_i64(INT64_MAX);
    expect_run(&upper, 2, in, REEL_DTYPE_FLOAT32, 3, s, zeros, 0);
    in[0] = tensor(REEL_DTYPE_UINT8, 3, s, NULL);
    in[1] = scalar_i64(INT64_MIN);
    expect_run(&upper, 2, in, REEL_DTYPE_UINT8, 3, s, all, 0);

    op_call odd = { .op = "Trilu" };
    op_attr_int(&odd, "upper", 2);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s, NULL);
    expect_refused(&odd, 1, in, "attribute 'upper' = 2 is not supported");
    const int64_t s1[] = { 4 };
    in[0] = tensor(REEL_DTYPE_FLOAT32, 1, s1, NULL);
    expect_refused(&upper, 1, in, "input rank 1 is not supported");
}

static void range_lengths(void **state)
{
    (void)state;
    op_call c = { .op = "Range", .opset = 11 };
    const int64_t four[] = { 4 }, two[] = { 2 }, none[] = { 0 };
    reel_tensor *in[3] = { tensor(REEL_DTYPE_FLOAT32, 0, NULL, (double[]){ 1 }),
                           tensor(REEL_DTYPE_FLOAT32, 0, NULL, (double[]){ 2 }),
                           tensor(REEL_DTYPE_FLOAT32, 0, NULL, (double[]){ 0.3 }) };
    expect_run(&c, 3, in, REEL_DTYPE_FLOAT32, 1, four, (double[]){ 1, 1.3, 1.6, 1.9 }, 1e-6);
    in[0] = scalar_i64(10);
    in[1] = scalar_i64(4);
    in[2] = scalar_i64(-3);
    expect_run(&c, 3, in, REEL_DTYPE_INT64, 1, two, (double[]){ 10, 7 }, 0);
    // Moving away from the limit: empty.
    for (int i = 0; i < 3; i++)
        in[i] = tensor(REEL_DTYPE_INT16, 0, NULL, (double[]){ i == 2 ? 1 : 5 - i });
    expect_run(&c, 3, in, REEL_DTYPE_INT16, 1, none, NULL, 0);

    for (int i = 0; i < 3; i++)
        in[i] = tensor(REEL_DTYPE_INT32, 0, NULL, (double[]){ i == 2 ? 0 : i });
    expect_refused(&c, 3, in, "delta is 0");
    in[0] = tensor(REEL_DTYPE_INT32, 0, NULL, NULL);
    in[1] = scalar_i64(3);
    in[2] = scalar_i64(1);
    expect_refused(&c, 3, in, "one type");
    for (int i = 0; i < 3; i++)
        in[i] = tensor(REEL_DTYPE_UINT8, 0, NULL, (double[]){ 1 });
    expect_refused(&c, 3, in, "input type uint8 is not supported");
    for (int i = 0; i < 3; i++)
        in[i] = tensor(REEL_DTYPE_FLOAT64, 0, NULL, (double[]){ i == 1 ? INFINITY : 1 });
    expect_refused(&c, 3, in, "not finite");
}

static void cumsum_forms(void **state)
{
    (void)state;
    const int64_t s[] = { 2, 3, 2 };
    // Along the middle axis (-2), exclusive and reversed: element (b, i, j)
    // sums (b, i+1.., j).
    double want[12];
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) {
                double acc = 0;
                for (int t = i + 1; t < 3; t++)
                    acc += (b * 3 + t) * 2 + j;
                want[(b * 3 + i) * 2 + j] = acc;
            }
    op_call c = { .op = "CumSum", .opset = 14 };
    op_attr_int(&c, "exclusive", 1);
    op_attr_int(&c, "reverse", 1);
    reel_tensor *in[2] = { tensor(REEL_DTYPE_INT64, 3, s, NULL), tensor(REEL_DTYPE_INT32, 0, NULL, (double[]){ -2 }) };
    expect_run(&c, 2, in, REEL_DTYPE_INT64, 3, s, want, 0);

    op_call plain = { .op = "CumSum", .opset = 14 };
    const int64_t s3[] = { 3 };
    in[0] = tensor(REEL_DTYPE_INT32, 1, s3, (double[]){ 5, -2, 7 });
    in[1] = scalar_i64(0);
    expect_run(&plain, 2, in, REEL_DTYPE_INT32, 1, s3, (double[]){ 5, 3, 10 }, 0);

    op_call odd = { .op = "CumSum" };
    op_attr_int(&odd, "exclusive", 2);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s, NULL);
    in[1] = scalar_i64(0);
    expect_refused(&odd, 2, in, "attribute 'exclusive' = 2 is not supported");
    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s, NULL);
    in[1] = scalar_i64(3);
    expect_refused(&plain, 2, in, "axis");
    in[0] = tensor(REEL_DTYPE_UINT8, 3, s, NULL);
    in[1] = scalar_i64(0);
    expect_refused(&plain, 2, in, "input type uint8 is not supported");
}

static void tile_repeats(void **state)
{
    (void)state;
    const int64_t s[] = { 2, 1, 3 }, rep[] = { 2, 3, 1 }, os[] = { 4, 3, 3 };
    double want[36];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                want[(i * 3 + j) * 3 + k] = (i % 2) * 3 + k;
    op_call c = { .op = "Tile", .opset = 13 };
    reel_tensor *in[2] = { tensor(REEL_DTYPE_INT32, 3, s, NULL), ints_i64(3, rep) };
    expect_run(&c, 2, in, REEL_DTYPE_INT32, 3, os, want, 0);

    const int64_t zero[] = { 1, 0, 2 }, zs[] = { 2, 0, 6 };
    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s, NULL);
    in[1] = ints_i64(3, zero);
    expect_run(&c, 2, in, REEL_DTYPE_FLOAT32, 3, zs, NULL, 0);

    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s, NULL);
    in[1] = ints_i64(2, rep);
    expect_refused(&c, 2, in, "repeats has 2 entries for rank 3");
    const int64_t neg[] = { 1, -1, 1 };
    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s, NULL);
    in[1] = ints_i64(3, neg);
    expect_refused(&c, 2, in, "repeats entry 1 is negative");
}

// ---- DepthToSpace, SpaceToDepth, EyeLike, ReverseSequence, Size -------------

static void depth_space_modes(void **state)
{
    (void)state;
    const int64_t s[] = { 2, 8, 2, 3 }, ws[] = { 2, 2, 4, 6 };
    const int64_t b = 2, C = 8, H = 2, W = 3, oc = 2;
    for (int crd = 0; crd <= 1; crd++) {
        double want[96];
        for (int64_t n = 0; n < 2; n++)
            for (int64_t c = 0; c < oc; c++)
                for (int64_t y = 0; y < H * b; y++)
                    for (int64_t x = 0; x < W * b; x++) {
                        int64_t i = y % b, j = x % b;
                        int64_t ch = crd ? c * b * b + i * b + j : (i * b + j) * oc + c;
                        want[((n * oc + c) * H * b + y) * W * b + x] = (double)(((n * C + ch) * H + y / b) * W + x / b);
                    }
        op_call d2s = { .op = "DepthToSpace", .opset = 13 };
        op_attr_int(&d2s, "blocksize", b);
        op_attr_str(&d2s, "mode", crd ? "CRD" : "DCR");
        reel_tensor *in[1] = { tensor(REEL_DTYPE_FLOAT32, 4, s, NULL) };
        expect_run(&d2s, 1, in, REEL_DTYPE_FLOAT32, 4, ws, want, 0);
    }
    // SpaceToDepth undoes DepthToSpace's default (DCR) order, in int64.
    op_call d2s = { .op = "DepthToSpace", .opset = 13 }, s2d = { .op = "SpaceToDepth", .opset = 13 };
    op_attr_int(&d2s, "blocksize", b);
    op_attr_int(&s2d, "blocksize", b);
    reel_tensor *in[1] = { tensor(REEL_DTYPE_INT64, 4, s, NULL) }, *wide;
    assert_int_equal(op_run(&d2s, 1, in, &wide), 0);
    double ident[96];
    for (int i = 0; i < 96; i++)
        ident[i] = i;
    in[0] = wide;
    expect_run(&s2d, 1, in, REEL_DTYPE_INT64, 4, s, ident, 0);

    op_call foo = { .op = "DepthToSpace" };
    op_attr_int(&foo, "blocksize", 2);
    op_attr_str(&foo, "mode", "foo");
    in[0] = tensor(REEL_DTYPE_FLOAT32, 4, s, NULL);
    expect_refused(&foo, 1, in, "attribute 'mode' = 'foo' is not supported");
    op_call three = { .op = "DepthToSpace" };
    op_attr_int(&three, "blocksize", 3);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 4, s, NULL);
    expect_refused(&three, 1, in, "channels 8 are not a multiple of 9");
    op_call zero = { .op = "SpaceToDepth" };
    op_attr_int(&zero, "blocksize", 0);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 4, s, NULL);
    expect_refused(&zero, 1, in, "attribute 'blocksize' = 0 is not supported");
    in[0] = tensor(REEL_DTYPE_FLOAT32, 4, s, NULL);
    expect_refused(&s2d, 1, in, "dim 3 (3) is not a multiple of 2");
}

static void eye_like_types(void **state)
{
    (void)state;
    const int64_t s35[] = { 3, 5 }, s34[] = { 3, 4 };
    double want[15] = { 0 };
    want[1 * 5 + 0] = want[2 * 5 + 1] = 1;
    op_call below = { .op = "EyeLike", .opset = 9 };
    op_attr_int(&below, "dtype", 7);
    op_attr_int(&below, "k", -1);
    reel_tensor *in[1] = { tensor(REEL_DTYPE_INT32, 2, s35, NULL) };
    expect_run(&below, 1, in, REEL_DTYPE_INT64, 2, s35, want, 0);

    double bools[12] = { 0 };
    bools[0 * 4 + 2] = bools[1 * 4 + 3] = 1;
    op_call above = { .op = "EyeLike", .opset = 9 };
    op_attr_int(&above, "dtype", 9);
    op_attr_int(&above, "k", 2);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s34, NULL);
    expect_run(&above, 1, in, REEL_DTYPE_BOOL, 2, s34, bools, 0);

    // Past the last column: no ones at all; the input's type by default.
    double zeros[12] = { 0 };
    op_call far = { .op = "EyeLike", .opset = 9 };
    op_attr_int(&far, "k", INT64_MAX);
    in[0] = tensor(REEL_DTYPE_FLOAT64, 2, s34, NULL);
    expect_run(&far, 1, in, REEL_DTYPE_FLOAT64, 2, s34, zeros, 0);

    op_call str = { .op = "EyeLike", .opset = 9 };
    op_attr_int(&str, "dtype", 8);
    in[0] = tensor(REEL_DTYPE_FLOAT32, 2, s34, NULL);
    expect_refused(&str, 1, in, "attribute 'dtype' = 8 is not supported");
    const int64_t s3[] = { 2, 2, 2 };
    in[0] = tensor(REEL_DTYPE_FLOAT32, 3, s3, NULL);
    expect_refused(&far, 1, in, "input rank 3 is not supported");
}

static void reverse_sequence_steps(void **state)
{
    (void)state;
    // Time on axis 0, batch on axis 1, steps of two elements.
    const int64_t s[] = { 3, 2, 2 }, lens[] = { 3, 0 };
    double want[12];
    for (int t = 0; t < 3; t++)
        for (int b = 0; b < 2; b++)
            for (int e = 0; e < 2; e++) {
                int from = t < lens[b] ? (int)lens[b] - 1 - t : t;
                want[(t * 2 + b) * 2 + e] = (from * 2 + b) * 2 + e;
            }
    op_call c = { .op = "ReverseSequence", .opset = 10 };
    op_attr_int(&c, "time_axis", 0);
    op_attr_int(&c, "batch_axis", 1);
    reel_tensor *in[2] = { tensor(REEL_DTYPE_INT32, 3, s, NULL), ints_i64(2, lens) };
    expect_run(&c, 2, in, REEL_DTYPE_INT32, 3, s, want, 0);

    op_call same = { .op = "ReverseSequence", .opset = 10 };
    op_attr_int(&same, "time_axis", 1);
    op_attr_int(&same, "batch_axis", 1);
    in[0] = tensor(REEL_DTYPE_INT32, 3, s, NULL);
    in[1] = ints_i64(2, lens);
    expect_refused(&same, 2, in, "are not supported");
    in[0] = tensor(REEL_DTYPE_INT32, 3, s, NULL);
    in[1] = ints_i64(1, lens);
    expect_refused(&c, 2, in, "sequence_lens has 1 entries for a batch of 2");
    // A length past the steps fails in run.
    const int64_t long_lens[] = { 4, 1 };
    reel_tensor *out;
    in[0] = tensor(REEL_DTYPE_INT32, 3, s, NULL);
    in[1] = ints_i64(2, long_lens);
    assert_int_equal(op_run(&c, 2, in, &out), REEL_EINVAL);
}

static void size_counts(void **state)
{
    (void)state;
    op_call c = { .op = "Size", .opset = 13 };
    reel_tensor *in[1] = { tensor(REEL_DTYPE_FLOAT32, 0, NULL, (double[]){ 3 }) };
    expect_run(&c, 1, in, REEL_DTYPE_INT64, 0, NULL, (double[]){ 1 }, 0);
    const int64_t s[] = { 2, 0, 3 };
    in[0] = tensor(REEL_DTYPE_UINT8, 3, s, NULL);
    expect_run(&c, 1, in, REEL_DTYPE_INT64, 0, NULL, (double[]){ 0 }, 0);
}

// ---- timing -------------------------------------------------------------------

// The per-frame shapes these ops see in vision models: a squeeze-excite
// mean over H and W, a pixel shuffle to 1080p; checked against a double
// reference and timed (best of 5, one thread; then checked on two).
static void vision_timing(void **state)
{
    (void)state;
    const int64_t xs[] = { 1, 256, 56, 56 }, hw[] = { 2, 3 }, os[] = { 1, 256, 1, 1 };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, xs);
    float *xd = x->data;
    srand(11);
    for (int64_t i = 0; i < 256 * 56 * 56; i++)
        xd[i] = (float)rand() / RAND_MAX * 4 - 1;
    double want[256], best = INFINITY;
    for (int c = 0; c < 256; c++) {
        double acc = 0;
        for (int i = 0; i < 56 * 56; i++)
            acc += xd[c * 56 * 56 + i];
        want[c] = acc / (56 * 56);
    }
    op_call mean = { .op = "ReduceMean", .opset = 13 };
    op_attr_ints(&mean, "axes", hw, 2);
    for (int rep = 0; rep < 5; rep++) {
        reel_tensor *in[1] = { reel_tensor_dup(x) }, *out;
        assert_int_equal(op_run(&mean, 1, in, &out), 0);
        best = MIN(best, op_run_ms(1));
        expect_tensor(out, REEL_DTYPE_FLOAT32, 4, os, want, 1e-5);
        reel_tensor_free(&out);
    }
    printf("ReduceMean 1x256x56x56 over H, W: %.3f ms (best of 5)\n", best);
    reel_tensor_free(&x);

    const int64_t ds[] = { 1, 48, 270, 480 };
    op_call d2s = { .op = "DepthToSpace", .opset = 13 };
    op_attr_int(&d2s, "blocksize", 4);
    best = INFINITY;
    for (int rep = 0; rep < 5; rep++) {
        reel_tensor *in[1] = { tensor(REEL_DTYPE_FLOAT32, 4, ds, NULL) }, *out;
        assert_int_equal(op_run(&d2s, 1, in, &out), 0);
        best = MIN(best, op_run_ms(1));
        // Element (c, y, x) comes from channel ((y % 4) * 4 + x % 4) * 3 + c at (y / 4, x / 4).
        const float *o = out->data;
        for (int64_t k = 0; k < 3 * 1080 * 1920; k += 9973) {
            int64_t c = k / (1080 * 1920), y = k / 1920 % 1080, xx = k % 1920;
            int64_t ch = ((y % 4) * 4 + xx % 4) * 3 + c;
            assert_true(o[k] == (float)((ch * 270 + y / 4) * 480 + xx / 4));
        }
        reel_tensor_free(&out);
    }
    printf("DepthToSpace 1x48x270x480 to 1x3x1080x1920: %.3f ms (best of 5)\n", best);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reduce_integer_forms), cmocka_unit_test(reduce_float_edges),
        cmocka_unit_test(reduce_empty_and_noop), cmocka_unit_test(reduce_refusals),
        cmocka_unit_test(trilu_bands),         cmocka_unit_test(range_lengths),
        cmocka_unit_test(cumsum_forms),        cmocka_unit_test(tile_repeats),
        cmocka_unit_test(depth_space_modes),   cmocka_unit_test(eye_like_types),
        cmocka_unit_test(reverse_sequence_steps), cmocka_unit_test(size_counts),
        cmocka_unit_test(vision_timing),
    };
    return op_run_tests(tests, .opset = 18, .two_workers = true);
}

// The logic family (models/cpu/logic.c) where ONNX's cases do not reach:
// the refused attributes and types (the message names the node), variadic
// broadcasting over three ranks, empty tensors, Mod's sign rules at the
// integer edges, shifts past the width, NaN in Max and Min; each op's infer
// and run called directly.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ops/op_harness.h"

// Expects the call to fail with code and a message naming the node and
// holding `what`.
static void expect_fail(const op_call *c, int n_in, reel_tensor **in, int code, const char *what)
{
    reel_tensor *out;
    assert_int_equal(op_run(c, n_in, in, &out), code);
    assert_null(out);
    const char *msg = op_message();
    if (!strstr(msg, "node 'n'") || !strstr(msg, what))
        fail_msg("message \"%s\" should name node 'n' and say \"%s\"", msg, what);
}

// Runs the call, which must succeed with the given dtype and shape.
static reel_tensor *expect_run(const op_call *c, int n_in, reel_tensor **in, reel_dtype dtype, int rank,
                               const int64_t *shape)
{
    reel_tensor *out;
    int rc = op_run(c, n_in, in, &out);
    if (rc)
        fail_msg("%s failed (%d): %s", c->op, rc, op_message());
    assert_int_equal(out->dtype, dtype);
    assert_int_equal(out->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(out->shape[i], shape[i]);
    return out;
}

static void refused(void **state)
{
    (void)state;
    const int64_t s2 = 2, s3 = 3;
    const uint8_t u8[3] = { 1, 2, 3 };
    const float f[3] = { 1, 2, 3 };
    const int32_t i32[3] = { 1, 2, 3 };

    op_call shift = { .op = "BitShift" };
    op_attr_str(&shift, "direction", "UP");
    expect_fail(&shift, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_UINT8, 1, &s3, u8), op_tensor(REEL_DTYPE_UINT8, 1, &s3, u8) },
                REEL_EUNSUPPORTED, "attribute 'direction' = 'UP' is not supported");
    op_call noshift = { .op = "BitShift" };
    expect_fail(&noshift, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_UINT8, 1, &s3, u8), op_tensor(REEL_DTYPE_UINT8, 1, &s3, u8) },
                REEL_EINVAL, "attribute 'direction' is missing");
    op_call left = { .op = "BitShift" };
    op_attr_str(&left, "direction", "LEFT");
    expect_fail(&left, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_INT32, 1, &s3, i32), op_tensor(REEL_DTYPE_INT32, 1, &s3, i32) },
                REEL_EUNSUPPORTED, "input type int32 is not supported");

    op_call mod2 = { .op = "Mod" };
    op_attr_int(&mod2, "fmod", 2);
    expect_fail(&mod2, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_INT32, 1, &s3, i32), op_tensor(REEL_DTYPE_INT32, 1, &s3, i32) },
                REEL_EINVAL, "attribute 'fmod' = 2");
    op_call modf = { .op = "Mod" };
    expect_fail(&modf, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f), op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f) },
                REEL_EINVAL, "needs attribute 'fmod' = 1");

    op_call and = { .op = "And" };
    expect_fail(&and, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f), op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f) },
                REEL_EUNSUPPORTED, "input type float32 is not supported");
    // Opset 6's one-way broadcast from an axis.
    op_call legacy = { .op = "Or" };
    op_attr_int(&legacy, "broadcast", 1);
    expect_fail(&legacy, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_BOOL, 1, &s3, u8), op_tensor(REEL_DTYPE_BOOL, 1, &s3, u8) },
                REEL_EUNSUPPORTED, "attribute 'broadcast'");
    op_call less = { .op = "Less" };
    expect_fail(&less, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f), op_tensor(REEL_DTYPE_INT32, 1, &s3, i32) },
                REEL_EINVAL, "input types differ (float32, int32)");
    expect_fail(&less, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f), op_tensor(REEL_DTYPE_FLOAT32, 1, &s2, f) },
                REEL_EINVAL, "cannot broadcast");
    op_call not = { .op = "Not" };
    expect_fail(&not, 1, (reel_tensor *[]){ op_tensor(REEL_DTYPE_UINT8, 1, &s3, u8) }, REEL_EUNSUPPORTED,
                "input type uint8 is not supported");

    op_call max = { .op = "Max" };
    expect_fail(&max, 3, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f), op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, f),
                                            op_tensor(REEL_DTYPE_INT32, 1, &s3, i32) },
                REEL_EINVAL, "input 2 has type int32, input 0 has float32");
    expect_fail(&max, 0, NULL, REEL_EINVAL, "needs at least one input");
    op_call sum = { .op = "Sum" };
    expect_fail(&sum, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_INT32, 1, &s3, i32), op_tensor(REEL_DTYPE_INT32, 1, &s3, i32) },
                REEL_EUNSUPPORTED, "input type int32 is not supported");
}

// Max, Min and Mean over (2,1,3), (4,1) and a scalar: the output is (2,4,3).
static void variadic_broadcast(void **state)
{
    (void)state;
    const int64_t sa[] = { 2, 1, 3 }, sb[] = { 4, 1 }, so[] = { 2, 4, 3 };
    const float a[6] = { -1, 5, 2, 7, 0, -3 }, b[4] = { 1, -2, 6, 3 }, c = 2.5f;
    const char *ops[] = { "Max", "Min", "Mean" };
    for (int k = 0; k < 3; k++) {
        op_call call_ = { .op = ops[k] };
        reel_tensor *in[3] = { op_tensor(REEL_DTYPE_FLOAT32, 3, sa, a), op_tensor(REEL_DTYPE_FLOAT32, 2, sb, b),
                               op_tensor(REEL_DTYPE_FLOAT32, 0, NULL, &c) };
        reel_tensor *out = expect_run(&call_, 3, in, REEL_DTYPE_FLOAT32, 3, so);
        const float *o = out->data;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 3; l++) {
                    float x = a[i * 3 + l], y = b[j];
                    float want = k == 0 ? fmaxf(fmaxf(x, y), c) : k == 1 ? fminf(fminf(x, y), c) : (x + y + c) / 3;
                    float got = o[(i * 4 + j) * 3 + l];
                    if (got != want)
                        fail_msg("%s at (%d,%d,%d): %g, expected %g", ops[k], i, j, l, got, want);
                }
        reel_tensor_free(&out);
    }
}

// One input is a copy; NaN wins in Max and Min as in numpy; int64 extremes.
static void variadic_edges(void **state)
{
    (void)state;
    const int64_t s3 = 3;
    const float a[3] = { 1, NAN, 3 }, b[3] = { NAN, 2, -1 };
    op_call max = { .op = "Max" }, min = { .op = "Min" };
    reel_tensor *out = expect_run(&max, 1, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, a) },
                                  REEL_DTYPE_FLOAT32, 1, &s3);
    const float *o = out->data;
    assert_true(o[0] == 1 && isnan(o[1]) && o[2] == 3);
    reel_tensor_free(&out);
    out = expect_run(&min, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, a), op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, b) },
                     REEL_DTYPE_FLOAT32, 1, &s3);
    o = out->data;
    assert_true(isnan(o[0]) && isnan(o[1]) && o[2] == -1);
    reel_tensor_free(&out);
    const int64_t x[3] = { INT64_MIN, 5, INT64_MAX }, y[3] = { 0, -7, INT64_MIN };
    out = expect_run(&max, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_INT64, 1, &s3, x), op_tensor(REEL_DTYPE_INT64, 1, &s3, y) },
                     REEL_DTYPE_INT64, 1, &s3);
    const int64_t *oi = out->data;
    assert_true(oi[0] == 0 && oi[1] == 5 && oi[2] == INT64_MAX);
    reel_tensor_free(&out);
}

// Empty tensors broadcast to an empty output, and Sum writes nothing.
static void empty(void **state)
{
    (void)state;
    const int64_t se[] = { 0, 3 }, s3 = 3;
    const float b[3] = { 1, 2, 3 };
    op_call sum = { .op = "Sum" };
    reel_tensor *out = expect_run(&sum, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 2, se, NULL),
                                                               op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, b) },
                                  REEL_DTYPE_FLOAT32, 2, se);
    reel_tensor_free(&out);
    op_call less = { .op = "Less" };
    out = expect_run(&less, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, b), op_tensor(REEL_DTYPE_FLOAT32, 2, se, NULL) },
                     REEL_DTYPE_BOOL, 2, se);
    reel_tensor_free(&out);
    op_call not = { .op = "Not" };
    out = expect_run(&not, 1, (reel_tensor *[]){ op_tensor(REEL_DTYPE_BOOL, 2, se, NULL) }, REEL_DTYPE_BOOL, 2, se);
    reel_tensor_free(&out);
}

// Mod: fmod=0 takes the divisor's sign, fmod=1 the dividend's; a zero
// divisor gives 0 and INT32_MIN % -1 does not trap; the divisor broadcasts.
static void mod_signs(void **state)
{
    (void)state;
    const int64_t sx[] = { 2, 3 }, sy[] = { 1, 3 };
    const int32_t x[6] = { 7, -7, 7, INT32_MIN, 5, -5 }, y[3] = { -3, 3, 0 };
    // x[3..5] pair with y: INT32_MIN % -3, 5 % 3, -5 % 0.
    const int32_t floor_want[6] = { -2, 2, 0, -2, 2, 0 }, trunc_want[6] = { 1, -1, 0, -2, 2, 0 };
    for (int fm = 0; fm <= 1; fm++) {
        op_call mod = { .op = "Mod" };
        op_attr_int(&mod, "fmod", fm);
        reel_tensor *out = expect_run(&mod, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_INT32, 2, sx, x),
                                                                   op_tensor(REEL_DTYPE_INT32, 2, sy, y) },
                                      REEL_DTYPE_INT32, 2, sx);
        const int32_t *o = out->data, *want = fm ? trunc_want : floor_want;
        for (int i = 0; i < 6; i++)
            if (o[i] != want[i])
                fail_msg("fmod=%d element %d: %d, expected %d", fm, i, o[i], want[i]);
        reel_tensor_free(&out);
    }
    const int64_t s2 = 2;
    const int64_t mx[2] = { INT64_MIN, -9 }, my[2] = { -1, 4 };
    op_call mod = { .op = "Mod" };
    reel_tensor *out = expect_run(&mod, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_INT64, 1, &s2, mx),
                                                               op_tensor(REEL_DTYPE_INT64, 1, &s2, my) },
                                  REEL_DTYPE_INT64, 1, &s2);
    const int64_t *o = out->data;
    assert_true(o[0] == 0 && o[1] == 3);
    reel_tensor_free(&out);
    // Floats: C's fmod, a zero divisor gives NaN.
    const float fx[2] = { -5.5f, 5.5f }, fy[2] = { 2, 0 };
    op_call fmodc = { .op = "Mod" };
    op_attr_int(&fmodc, "fmod", 1);
    out = expect_run(&fmodc, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s2, fx), op_tensor(REEL_DTYPE_FLOAT32, 1, &s2, fy) },
                     REEL_DTYPE_FLOAT32, 1, &s2);
    const float *of = out->data;
    assert_true(of[0] == -1.5f && isnan(of[1]));
    reel_tensor_free(&out);
}

// Shifts by the width or more give 0; the amount broadcasts from a scalar.
static void shifts(void **state)
{
    (void)state;
    const int64_t s4 = 4;
    const uint8_t x[4] = { 0x81, 1, 0xff, 16 }, amount = 3;
    const uint16_t wx[4] = { 0xffff, 1, 0x8000, 3 }, wy[4] = { 16, 15, 15, 40 };
    op_call left = { .op = "BitShift" }, right = { .op = "BitShift" };
    op_attr_str(&left, "direction", "LEFT");
    op_attr_str(&right, "direction", "RIGHT");
    reel_tensor *out = expect_run(&left, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_UINT8, 1, &s4, x),
                                                                op_tensor(REEL_DTYPE_UINT8, 0, NULL, &amount) },
                                  REEL_DTYPE_UINT8, 1, &s4);
    const uint8_t *o = out->data;
    assert_true(o[0] == 0x08 && o[1] == 8 && o[2] == 0xf8 && o[3] == 128);
    reel_tensor_free(&out);
    out = expect_run(&left, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_UINT16, 1, &s4, wx), op_tensor(REEL_DTYPE_UINT16, 1, &s4, wy) },
                     REEL_DTYPE_UINT16, 1, &s4);
    const uint16_t *ow = out->data;
    assert_true(ow[0] == 0 && ow[1] == 0x8000 && ow[2] == 0 && ow[3] == 0);
    reel_tensor_free(&out);
    out = expect_run(&right, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_UINT16, 1, &s4, wx), op_tensor(REEL_DTYPE_UINT16, 1, &s4, wy) },
                     REEL_DTYPE_UINT16, 1, &s4);
    ow = out->data;
    assert_true(ow[0] == 0 && ow[1] == 0 && ow[2] == 1 && ow[3] == 0);
    reel_tensor_free(&out);
}

// Logic and comparisons broadcast both ways: (3,1) against (4).
static void logic_broadcast(void **state)
{
    (void)state;
    const int64_t sa[] = { 3, 1 }, sb = 4, so[] = { 3, 4 };
    const uint8_t a[3] = { 0, 1, 1 }, b[4] = { 0, 1, 0, 1 };
    const int64_t ia[3] = { -1, 0, 2 }, ib[4] = { -1, 0, 1, 2 };
    const char *ops[] = { "And", "Or", "Xor", "Less", "LessOrEqual", "GreaterOrEqual" };
    for (int k = 0; k < 6; k++) {
        op_call c = { .op = ops[k] };
        bool cmp = k >= 3;
        reel_tensor *in[2] = { cmp ? op_tensor(REEL_DTYPE_INT64, 2, sa, ia) : op_tensor(REEL_DTYPE_BOOL, 2, sa, a),
                               cmp ? op_tensor(REEL_DTYPE_INT64, 1, &sb, ib) : op_tensor(REEL_DTYPE_BOOL, 1, &sb, b) };
        reel_tensor *out = expect_run(&c, 2, in, REEL_DTYPE_BOOL, 2, so);
        const uint8_t *o = out->data;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) {
                int want;
                switch (k) {
                case 0: want = a[i] && b[j]; break;
                case 1: want = a[i] || b[j]; break;
                case 2: want = a[i] != b[j]; break;
                case 3: want = ia[i] < ib[j]; break;
                case 4: want = ia[i] <= ib[j]; break;
                default: want = ia[i] >= ib[j]; break;
                }
                if (o[i * 4 + j] != want)
                    fail_msg("%s at (%d,%d): %d, expected %d", ops[k], i, j, o[i * 4 + j], want);
            }
        reel_tensor_free(&out);
    }
}

// CastLike takes the second input's type (its values unread): float32 to
// int32 truncates, to float16 rounds to nearest even.
static void castlike(void **state)
{
    (void)state;
    const int64_t s3 = 3, s1 = 1;
    const float x[3] = { 2.9f, -2.9f, 1.0f + 1.0f / 2048 };
    const int32_t like_i = 0;
    const uint16_t like_h = 0;
    op_call c = { .op = "CastLike" };
    reel_tensor *out = expect_run(&c, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, x),
                                                             op_tensor(REEL_DTYPE_INT32, 1, &s1, &like_i) },
                                  REEL_DTYPE_INT32, 1, &s3);
    const int32_t *o = out->data;
    assert_true(o[0] == 2 && o[1] == -2 && o[2] == 1);
    reel_tensor_free(&out);
    out = expect_run(&c, 2, (reel_tensor *[]){ op_tensor(REEL_DTYPE_FLOAT32, 1, &s3, x), op_tensor(REEL_DTYPE_FLOAT16, 1, &s1, &like_h) },
                     REEL_DTYPE_FLOAT16, 1, &s3);
    const uint16_t *h = out->data;
    // 2.9 -> 0x41cd, -2.9 -> 0xc1cd, 1 + 2^-11 is a tie: to even, 1.0 = 0x3c00.
    assert_true(h[0] == 0x41cd && h[1] == 0xc1cd && h[2] == 0x3c00);
    reel_tensor_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused),
        cmocka_unit_test(variadic_broadcast),
        cmocka_unit_test(variadic_edges),
        cmocka_unit_test(empty),
        cmocka_unit_test(mod_signs),
        cmocka_unit_test(shifts),
        cmocka_unit_test(logic_broadcast),
        cmocka_unit_test(castlike),
    };
    return op_run_tests(tests, .opset = 18);
}

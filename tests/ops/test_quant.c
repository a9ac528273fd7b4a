// The quantized kernels (models/cpu/quant.c) where ONNX's cases do not
// reach: per-axis parameters on a negative axis, ties and saturation, int8
// and uint8 operands with per-row/per-column/per-channel zero points and
// scales, batched broadcasting, empty tensors, and the refusals (naming the
// node); MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv on
// realistic shapes against double-precision references, each run on one
// thread and on two workers.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/cpu/qgemm.h"
#include "tests/ops/op_harness.h"

#define MAX_IO OP_MAX_IO

// A tensor of dtype with elements drawn uniformly from [lo, hi] (integers
// for the integer types).
static reel_tensor *random_tensor(reel_dtype dt, int rank, const int64_t *shape, unsigned seed, double lo, double hi)
{
    reel_tensor *t = reel_tensor_new(dt, rank, shape);
    int64_t n = reel_tensor_count(rank, shape);
    srand(seed);
    for (int64_t i = 0; i < n; i++) {
        double u = (double)rand() / RAND_MAX;
        switch (dt) {
        case REEL_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)(lo + u * (hi - lo)); break;
        case REEL_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)floor(lo + u * (hi - lo + 0.999)); break;
        case REEL_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)floor(lo + u * (hi - lo + 0.999)); break;
        case REEL_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)floor(lo + u * (hi - lo + 0.999)); break;
        default: fail_msg("random_tensor: dtype %d", dt);
        }
    }
    return t;
}

static reel_tensor *scalar(reel_dtype dt, double v)
{
    return random_tensor(dt, 0, NULL, 0, v, v);
}

static reel_tensor *floats(int rank, const int64_t *shape, const float *v)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, shape);
    memcpy(t->data, v, t->nbytes);
    return t;
}

// Element i of an integer tensor.
static int64_t ival(const reel_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case REEL_DTYPE_UINT8: return ((const uint8_t *)t->data)[i];
    case REEL_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    default: fail_msg("ival: dtype %d", t->dtype);
    }
    return 0;
}

typedef op_call opcall;
#define attr_int op_attr_int

// The counts before the values, as this file passes them.
static void attr_ints(opcall *c, const char *name, int n, const int64_t *v)
{
    op_attr_ints(c, name, v, n);
}

// The harness's op_run (the inputs kept until the end, for the references);
// *ms: the two-worker run's time.
static int call(const opcall *c, int n_in, reel_tensor **in, reel_tensor **out, double *ms)
{
    int rc = op_run(c, n_in, in, out);
    if (ms)
        *ms = op_run_ms(2);
    return rc;
}

// Expects call() to fail with code and a message naming the node and `what`.
static void expect_refusal(const opcall *c, int n_in, reel_tensor **in, int code, const char *what)
{
    reel_tensor *out[MAX_IO];
    assert_int_equal(call(c, n_in, in, out, NULL), code);
    if (!strstr(op_message(), "node 'n'") || !strstr(op_message(), what))
        fail_msg("%s: message \"%s\" does not name the node and \"%s\"", c->op, op_message(), what);
}

// A requantized value v (the double-precision product plus the zero point)
// saturated to [lo, hi]; got may differ by one only at a rounding tie.
static void expect_requant(int64_t got, double v, double lo, double hi, int64_t i)
{
    double r = nearbyint(v);
    r = r < lo ? lo : r > hi ? hi : r;
    bool tie = fabs(fabs(v - floor(v)) - 0.5) < 1e-4;
    if ((double)got != r && !(tie && fabs((double)got - r) <= 1))
        fail_msg("element %" G_GINT64_FORMAT ": %" G_GINT64_FORMAT ", expected %g (from %.6f)", i, got, r, v);
}

// ---- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear

static void quantize_ties_saturation_axis(void **state)
{
    (void)state;
    // Ties round to even; out-of-range values saturate; uint8 without a zero point.
    const int64_t n6 = 6;
    const float ties[] = { 0.5f, 1.5f, 2.5f, -0.5f, 1000.0f, -1000.0f };
    opcall c = { .op = "QuantizeLinear", .n_out = 1 };
    reel_tensor *in[3] = { floats(1, &n6, ties), scalar(REEL_DTYPE_FLOAT32, 1.0), scalar(REEL_DTYPE_INT8, 3) };
    reel_tensor *out[1];
    assert_int_equal(call(&c, 3, in, out, NULL), 0);
    assert_int_equal(out[0]->dtype, REEL_DTYPE_INT8);
    const int8_t want_s8[] = { 3, 5, 5, 3, 127, -128 };
    assert_memory_equal(out[0]->data, want_s8, 6);
    reel_tensor_free(&out[0]);
    reel_tensor *in2[2] = { floats(1, &n6, ties), scalar(REEL_DTYPE_FLOAT32, 0.5) };
    assert_int_equal(call(&c, 2, in2, out, NULL), 0);
    assert_int_equal(out[0]->dtype, REEL_DTYPE_UINT8);
    const uint8_t want_u8[] = { 1, 3, 5, 0, 255, 0 };
    assert_memory_equal(out[0]->data, want_u8, 6);
    reel_tensor_free(&out[0]);

    // Opset 21's output_dtype int8 without a zero point; an int32 input.
    opcall o21 = { .op = "QuantizeLinear", .n_out = 1, .opset = 21 };
    attr_int(&o21, "output_dtype", 3);
    const int32_t iv[] = { -300, -5, 0, 5, 7, 300 };
    reel_tensor *ints = reel_tensor_new(REEL_DTYPE_INT32, 1, &n6);
    memcpy(ints->data, iv, sizeof iv);
    reel_tensor *in3[2] = { ints, scalar(REEL_DTYPE_FLOAT32, 2.0) };
    assert_int_equal(call(&o21, 2, in3, out, NULL), 0);
    assert_int_equal(out[0]->dtype, REEL_DTYPE_INT8);
    const int8_t want_i[] = { -128, -2, 0, 2, 4, 127 }; // -2.5 and 2.5 to even, 3.5 to 4
    assert_memory_equal(out[0]->data, want_i, 6);
    reel_tensor_free(&out[0]);

    // Per axis -2 of [2, 3, 4]: one scale and int8 zero point per middle index.
    const int64_t xs[] = { 2, 3, 4 }, n3 = 3;
    opcall ca = { .op = "QuantizeLinear", .n_out = 1 };
    attr_int(&ca, "axis", -2);
    const float sc[] = { 0.02f, 0.05f, 0.1f };
    reel_tensor *zp = reel_tensor_new(REEL_DTYPE_INT8, 1, &n3);
    const int8_t zv[] = { -10, 0, 20 };
    memcpy(zp->data, zv, 3);
    reel_tensor *ina[3] = { random_tensor(REEL_DTYPE_FLOAT32, 3, xs, 7, -4, 4), floats(1, &n3, sc), zp };
    assert_int_equal(call(&ca, 3, ina, out, NULL), 0);
    const float *x = ina[0]->data;
    for (int64_t i = 0; i < 24; i++) {
        int64_t ch = i / 4 % 3;
        expect_requant(ival(out[0], i), x[i] / (double)sc[ch] + zv[ch], -128, 127, i);
    }
    reel_tensor_free(&out[0]);
}

static void quantize_refusals(void **state)
{
    (void)state;
    const int64_t xs[] = { 2, 4 }, n4 = 4;
    opcall c = { .op = "QuantizeLinear", .n_out = 1 };
    attr_int(&c, "block_size", 2);
    reel_tensor *in[2] = { random_tensor(REEL_DTYPE_FLOAT32, 2, xs, 1, -1, 1), scalar(REEL_DTYPE_FLOAT32, 0.1) };
    expect_refusal(&c, 2, in, REEL_EUNSUPPORTED, "block_size");

    opcall f8 = { .op = "QuantizeLinear", .n_out = 1, .opset = 21 };
    attr_int(&f8, "output_dtype", 17); // FLOAT8E4M3FN
    reel_tensor *in2[2] = { random_tensor(REEL_DTYPE_FLOAT32, 2, xs, 1, -1, 1), scalar(REEL_DTYPE_FLOAT32, 0.1) };
    expect_refusal(&f8, 2, in2, REEL_EUNSUPPORTED, "output_dtype");

    // Per-axis scales before opset 13, and a scale count that is not axis 1's.
    opcall o10 = { .op = "QuantizeLinear", .n_out = 1, .opset = 10 };
    reel_tensor *in3[2] = { random_tensor(REEL_DTYPE_FLOAT32, 2, xs, 1, -1, 1),
                            random_tensor(REEL_DTYPE_FLOAT32, 1, &n4, 2, 0.1, 0.2) };
    expect_refusal(&o10, 2, in3, REEL_EUNSUPPORTED, "opset 13");
    opcall o13 = { .op = "QuantizeLinear", .n_out = 1, .opset = 13 };
    const int64_t n3 = 3;
    reel_tensor *in4[2] = { random_tensor(REEL_DTYPE_FLOAT32, 2, xs, 1, -1, 1),
                            random_tensor(REEL_DTYPE_FLOAT32, 1, &n3, 2, 0.1, 0.2) };
    expect_refusal(&o13, 2, in4, REEL_EINVAL, "axis");

    // A float16 scale and a double input.
    reel_tensor *in5[2] = { random_tensor(REEL_DTYPE_FLOAT32, 2, xs, 1, -1, 1),
                            reel_tensor_new(REEL_DTYPE_FLOAT16, 0, NULL) };
    expect_refusal(&o13, 2, in5, REEL_EUNSUPPORTED, "float16 scale");
    reel_tensor *in6[2] = { reel_tensor_new(REEL_DTYPE_FLOAT64, 2, xs), scalar(REEL_DTYPE_FLOAT32, 0.1) };
    expect_refusal(&o13, 2, in6, REEL_EUNSUPPORTED, "double input");
}

static void dequantize_forms(void **state)
{
    (void)state;
    // uint8 per axis -1 of [5, 3].
    const int64_t xs[] = { 5, 3 }, n3 = 3;
    opcall c = { .op = "DequantizeLinear", .n_out = 1 };
    attr_int(&c, "axis", -1);
    const float sc[] = { 0.5f, 0.25f, 2.0f };
    reel_tensor *zp = reel_tensor_new(REEL_DTYPE_UINT8, 1, &n3);
    const uint8_t zv[] = { 128, 0, 255 };
    memcpy(zp->data, zv, 3);
    reel_tensor *in[3] = { random_tensor(REEL_DTYPE_UINT8, 2, xs, 3, 0, 255), floats(1, &n3, sc), zp };
    reel_tensor *out[1];
    assert_int_equal(call(&c, 3, in, out, NULL), 0);
    for (int64_t i = 0; i < 15; i++)
        assert_float_equal(((float *)out[0]->data)[i], (ival(in[0], i) - zv[i % 3]) * (double)sc[i % 3], 0);
    reel_tensor_free(&out[0]);

    // int32 without a zero point; an empty int8 tensor.
    opcall c1 = { .op = "DequantizeLinear", .n_out = 1 };
    reel_tensor *in1[2] = { random_tensor(REEL_DTYPE_INT32, 2, xs, 4, -100000, 100000),
                            scalar(REEL_DTYPE_FLOAT32, 0.125) };
    assert_int_equal(call(&c1, 2, in1, out, NULL), 0);
    for (int64_t i = 0; i < 15; i++)
        assert_float_equal(((float *)out[0]->data)[i], ival(in1[0], i) * 0.125, 0);
    reel_tensor_free(&out[0]);
    const int64_t es[] = { 0, 3 };
    reel_tensor *in2[3] = { reel_tensor_new(REEL_DTYPE_INT8, 2, es), scalar(REEL_DTYPE_FLOAT32, 0.5),
                            scalar(REEL_DTYPE_INT8, 1) };
    assert_int_equal(call(&c1, 3, in2, out, NULL), 0);
    assert_int_equal(out[0]->rank, 2);
    assert_int_equal(out[0]->shape[0], 0);
    reel_tensor_free(&out[0]);

    // A zero point of another type than x; an int16 input.
    reel_tensor *in3[3] = { random_tensor(REEL_DTYPE_UINT8, 2, xs, 3, 0, 255), scalar(REEL_DTYPE_FLOAT32, 0.5),
                            scalar(REEL_DTYPE_INT8, 1) };
    expect_refusal(&c1, 3, in3, REEL_EINVAL, "zero point");
    reel_tensor *in4[2] = { reel_tensor_new(REEL_DTYPE_INT16, 2, xs), scalar(REEL_DTYPE_FLOAT32, 0.5) };
    expect_refusal(&c1, 2, in4, REEL_EUNSUPPORTED, "int16 input");
    opcall f16 = { .op = "DequantizeLinear", .n_out = 1, .opset = 21 };
    attr_int(&f16, "output_dtype", 10); // FLOAT16
    reel_tensor *in5[2] = { random_tensor(REEL_DTYPE_UINT8, 2, xs, 3, 0, 255), scalar(REEL_DTYPE_FLOAT32, 0.5) };
    expect_refusal(&f16, 2, in5, REEL_EUNSUPPORTED, "output_dtype");
}

static void dynamic_quantize_forms(void **state)
{
    (void)state;
    // All positive: the range still starts at 0, so the zero point is 0.
    const int64_t n4 = 4;
    const float pos[] = { 1.0f, 2.0f, 3.0f, 5.1f };
    opcall c = { .op = "DynamicQuantizeLinear", .n_out = 3 };
    reel_tensor *in[1] = { floats(1, &n4, pos) }, *out[3];
    assert_int_equal(call(&c, 1, in, out, NULL), 0);
    float s = *(float *)out[1]->data;
    assert_float_equal(s, 5.1f / 255.0f, 1e-9);
    assert_int_equal(*(uint8_t *)out[2]->data, 0);
    for (int i = 0; i < 4; i++)
        expect_requant(ival(out[0], i), pos[i] / (double)s, 0, 255, i);
    for (int i = 0; i < 3; i++)
        reel_tensor_free(&out[i]);

    // Mixed signs: the zero point is round(-min / scale).
    const float mixed[] = { -1.0f, 0.25f, 2.0f, -0.3f };
    reel_tensor *in2[1] = { floats(1, &n4, mixed) };
    assert_int_equal(call(&c, 1, in2, out, NULL), 0);
    s = *(float *)out[1]->data;
    int zp = *(uint8_t *)out[2]->data;
    assert_float_equal(s, 3.0f / 255.0f, 1e-9);
    assert_int_equal(zp, 85);
    for (int i = 0; i < 4; i++)
        expect_requant(ival(out[0], i), mixed[i] / (double)s + zp, 0, 255, i);
    for (int i = 0; i < 3; i++)
        reel_tensor_free(&out[i]);

    // Empty: scale 1/255, zero point 0.
    const int64_t n0 = 0;
    reel_tensor *in3[1] = { reel_tensor_new(REEL_DTYPE_FLOAT32, 1, &n0) };
    assert_int_equal(call(&c, 1, in3, out, NULL), 0);
    assert_float_equal(*(float *)out[1]->data, 1.0f / 255.0f, 1e-9);
    assert_int_equal(*(uint8_t *)out[2]->data, 0);
    for (int i = 0; i < 3; i++)
        reel_tensor_free(&out[i]);
}

// ---- MatMulInteger, QLinearMatMul

// sum_k (a[m,k] - za[m]) (b[k,n] - zb[n]) of one [M,K] x [K,N] pair at
// element offsets ao, bo; za, zb NULL (0), one value, or per row/column.
static double mm_ref(const reel_tensor *a, int64_t ao, const reel_tensor *za, const reel_tensor *b, int64_t bo,
                     const reel_tensor *zb, int64_t m, int64_t n, int64_t K, int64_t N)
{
    int64_t zav = za ? ival(za, reel_tensor_count(za->rank, za->shape) == 1 ? 0 : m) : 0;
    int64_t zbv = zb ? ival(zb, reel_tensor_count(zb->rank, zb->shape) == 1 ? 0 : n) : 0;
    double s = 0;
    for (int64_t k = 0; k < K; k++)
        s += (double)(ival(a, ao + m * K + k) - zav) * (double)(ival(b, bo + k * N + n) - zbv);
    return s;
}

static void matmul_integer_random(void **state)
{
    (void)state;
    // 64x128 uint8 (a zero point per row) by 128x32 int8 (one per column).
    const int64_t as[] = { 64, 128 }, bs[] = { 128, 32 }, M = 64, K = 128, N = 32;
    reel_tensor *in[4] = { random_tensor(REEL_DTYPE_UINT8, 2, as, 11, 0, 255),
                           random_tensor(REEL_DTYPE_INT8, 2, bs, 12, -128, 127),
                           random_tensor(REEL_DTYPE_UINT8, 1, &M, 13, 0, 255),
                           random_tensor(REEL_DTYPE_INT8, 1, &N, 14, -128, 127) };
    opcall c = { .op = "MatMulInteger", .n_out = 1 };
    reel_tensor *out[1];
    double ms;
    assert_int_equal(call(&c, 4, in, out, &ms), 0);
    assert_int_equal(out[0]->dtype, REEL_DTYPE_INT32);
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++)
            assert_int_equal(ival(out[0], m * N + n), (int64_t)mm_ref(in[0], 0, in[2], in[1], 0, in[3], m, n, K, N));
    reel_tensor_free(&out[0]);
    printf("MatMulInteger 64x128 by 128x32 in %.3f ms on two workers\n", ms);

    // Batched broadcasting: [2, 1, 5, 7] int8 by [3, 7, 4] uint8, scalar zero points.
    const int64_t a4[] = { 2, 1, 5, 7 }, b3[] = { 3, 7, 4 };
    reel_tensor *inb[4] = { random_tensor(REEL_DTYPE_INT8, 4, a4, 15, -128, 127),
                            random_tensor(REEL_DTYPE_UINT8, 3, b3, 16, 0, 255), scalar(REEL_DTYPE_INT8, -3),
                            scalar(REEL_DTYPE_UINT8, 200) };
    assert_int_equal(call(&c, 4, inb, out, NULL), 0);
    assert_int_equal(out[0]->rank, 4);
    const int64_t want_shape[] = { 2, 3, 5, 4 };
    assert_memory_equal(out[0]->shape, want_shape, sizeof want_shape);
    for (int64_t i = 0; i < 2; i++)
        for (int64_t j = 0; j < 3; j++)
            for (int64_t m = 0; m < 5; m++)
                for (int64_t n = 0; n < 4; n++)
                    assert_int_equal(ival(out[0], ((i * 3 + j) * 5 + m) * 4 + n),
                                     (int64_t)mm_ref(inb[0], i * 35, inb[2], inb[1], j * 28, inb[3], m, n, 7, 4));
    reel_tensor_free(&out[0]);

    // A reduction too long for the int32 accumulator; int16 operands.
    const int64_t la[] = { 1, 40000 }, lb[] = { 40000, 1 };
    reel_tensor *inl[2] = { reel_tensor_new(REEL_DTYPE_UINT8, 2, la), reel_tensor_new(REEL_DTYPE_UINT8, 2, lb) };
    expect_refusal(&c, 2, inl, REEL_EUNSUPPORTED, "int32");
    reel_tensor *in16[2] = { reel_tensor_new(REEL_DTYPE_INT16, 2, as), reel_tensor_new(REEL_DTYPE_INT8, 2, bs) };
    expect_refusal(&c, 2, in16, REEL_EUNSUPPORTED, "int16");
}

static void qlinear_matmul_random(void **state)
{
    (void)state;
    // uint8 A by int8 B with a scale and zero point per column of B, int8 Y.
    const int64_t as[] = { 64, 128 }, bs[] = { 128, 32 }, K = 128, N = 32;
    reel_tensor *bscale = random_tensor(REEL_DTYPE_FLOAT32, 1, &N, 21, 0.001, 0.01);
    reel_tensor *in[8] = { random_tensor(REEL_DTYPE_UINT8, 2, as, 22, 0, 255), scalar(REEL_DTYPE_FLOAT32, 0.02),
                           scalar(REEL_DTYPE_UINT8, 120), random_tensor(REEL_DTYPE_INT8, 2, bs, 23, -128, 127),
                           bscale, random_tensor(REEL_DTYPE_INT8, 1, &N, 24, -5, 5),
                           scalar(REEL_DTYPE_FLOAT32, 0.9), scalar(REEL_DTYPE_INT8, -7) };
    opcall c = { .op = "QLinearMatMul", .n_out = 1 };
    reel_tensor *out[1];
    assert_int_equal(call(&c, 8, in, out, NULL), 0);
    assert_int_equal(out[0]->dtype, REEL_DTYPE_INT8);
    const float *bsc = bscale->data;
    int64_t saturated = 0;
    for (int64_t m = 0; m < 64; m++)
        for (int64_t n = 0; n < N; n++) {
            double acc = mm_ref(in[0], 0, in[2], in[3], 0, in[5], m, n, K, N);
            double v = acc * 0.02 * bsc[n] / 0.9 - 7;
            saturated += v < -128 || v > 127;
            expect_requant(ival(out[0], m * N + n), v, -128, 127, m * N + n);
        }
    assert_true(saturated < 64 * N / 2); // the scales keep most values in range

    // A per-row a_scale is refused.
    const int64_t M = 64;
    reel_tensor *bad[8] = { random_tensor(REEL_DTYPE_UINT8, 2, as, 22, 0, 255),
                            random_tensor(REEL_DTYPE_FLOAT32, 1, &M, 1, 0.1, 0.2), scalar(REEL_DTYPE_UINT8, 120),
                            random_tensor(REEL_DTYPE_INT8, 2, bs, 23, -128, 127), scalar(REEL_DTYPE_FLOAT32, 0.01),
                            scalar(REEL_DTYPE_INT8, 0), scalar(REEL_DTYPE_FLOAT32, 0.9),
                            scalar(REEL_DTYPE_INT8, -7) };
    expect_refusal(&c, 8, bad, REEL_EUNSUPPORTED, "a_scale");
    reel_tensor_free(&out[0]);
}

// ---- ConvInteger, QLinearConv

typedef struct conv_shape {
    int64_t N, C, H, W, M, KH, KW, G, sh, sw, dh, dw, ph, pw; // symmetric pads
    int64_t OH, OW;
} conv_shape;

static void conv_shape_out(conv_shape *s)
{
    s->OH = (s->H + 2 * s->ph - ((s->KH - 1) * s->dh + 1)) / s->sh + 1;
    s->OW = (s->W + 2 * s->pw - ((s->KW - 1) * s->dw + 1)) / s->sw + 1;
}

// The integer sum of output (n, m, oh, ow): padding contributes 0 (the
// zero point); zw NULL, one value or per output channel.
static double conv_ref(const conv_shape *s, const reel_tensor *x, int64_t zx, const reel_tensor *w,
                       const reel_tensor *zw, int64_t n, int64_t m, int64_t oh, int64_t ow)
{
    int64_t Cg = s->C / s->G, g = m / (s->M / s->G);
    int64_t zwv = zw ? ival(zw, reel_tensor_count(zw->rank, zw->shape) == 1 ? 0 : m) : 0;
    double acc = 0;
    for (int64_t c = 0; c < Cg; c++)
        for (int64_t kh = 0; kh < s->KH; kh++)
            for (int64_t kw = 0; kw < s->KW; kw++) {
                int64_t ih = oh * s->sh - s->ph + kh * s->dh, iw = ow * s->sw - s->pw + kw * s->dw;
                if (ih < 0 || ih >= s->H || iw < 0 || iw >= s->W)
                    continue;
                int64_t xv = ival(x, ((n * s->C + g * Cg + c) * s->H + ih) * s->W + iw) - zx;
                int64_t wv = ival(w, ((m * Cg + c) * s->KH + kh) * s->KW + kw) - zwv;
                acc += (double)(xv * wv);
            }
    return acc;
}

static void conv_attrs(opcall *c, const conv_shape *s, int64_t *store)
{
    int64_t *st = store, *dl = store + 2, *pd = store + 4;
    st[0] = s->sh, st[1] = s->sw, dl[0] = s->dh, dl[1] = s->dw;
    pd[0] = pd[2] = s->ph, pd[1] = pd[3] = s->pw;
    attr_ints(c, "strides", 2, st);
    attr_ints(c, "dilations", 2, dl);
    attr_ints(c, "pads", 4, pd);
    attr_int(c, "group", s->G);
}

static void conv_integer_random(void **state)
{
    (void)state;
    // 3x3, 16 in / 32 out channels at 20x20, pads 1, a zero point per output channel;
    // then grouped, strided and dilated.
    conv_shape shapes[] = {
        { .N = 1, .C = 16, .H = 20, .W = 20, .M = 32, .KH = 3, .KW = 3, .G = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1,
          .ph = 1, .pw = 1 },
        { .N = 2, .C = 6, .H = 9, .W = 11, .M = 4, .KH = 3, .KW = 2, .G = 2, .sh = 2, .sw = 1, .dh = 1, .dw = 2,
          .ph = 1, .pw = 0 },
    };
    for (int si = 0; si < 2; si++) {
        conv_shape *s = &shapes[si];
        conv_shape_out(s);
        const int64_t xs[] = { s->N, s->C, s->H, s->W }, ws[] = { s->M, s->C / s->G, s->KH, s->KW };
        reel_tensor *in[4] = { random_tensor(REEL_DTYPE_UINT8, 4, xs, 31 + si, 0, 255),
                               random_tensor(REEL_DTYPE_UINT8, 4, ws, 32 + si, 0, 255),
                               scalar(REEL_DTYPE_UINT8, 7), random_tensor(REEL_DTYPE_UINT8, 1, &s->M, 33, 0, 255) };
        opcall c = { .op = "ConvInteger", .n_out = 1 };
        int64_t store[8];
        conv_attrs(&c, s, store);
        reel_tensor *out[1];
        double ms;
        assert_int_equal(call(&c, 4, in, out, &ms), 0);
        assert_int_equal(out[0]->dtype, REEL_DTYPE_INT32);
        assert_int_equal(out[0]->shape[2], s->OH);
        assert_int_equal(out[0]->shape[3], s->OW);
        for (int64_t n = 0; n < s->N; n++)
            for (int64_t m = 0; m < s->M; m++)
                for (int64_t i = 0; i < s->OH * s->OW; i++)
                    assert_int_equal(ival(out[0], (n * s->M + m) * s->OH * s->OW + i),
                                     (int64_t)conv_ref(s, in[0], 7, in[1], in[3], n, m, i / s->OW, i % s->OW));
        reel_tensor_free(&out[0]);
        if (si == 0)
            printf("ConvInteger 3x3 16->32 at 20x20 in %.3f ms on two workers\n", ms);
    }

    // 1-D, auto_pad SAME_UPPER, int8.
    const int64_t x1[] = { 1, 3, 10 }, w1[] = { 2, 3, 4 };
    reel_tensor *in1[2] = { random_tensor(REEL_DTYPE_INT8, 3, x1, 41, -128, 127),
                            random_tensor(REEL_DTYPE_INT8, 3, w1, 42, -128, 127) };
    opcall c1 = { .op = "ConvInteger", .n_out = 1 };
    c1.attrs[c1.n_attrs++] = (reel_ir_attr){ .name = "auto_pad", .type = REEL_ATTR_STRING, .s = "SAME_UPPER" };
    reel_tensor *out[1];
    assert_int_equal(call(&c1, 2, in1, out, NULL), 0);
    assert_int_equal(out[0]->shape[2], 10);
    // Total padding 3: 1 before, 2 after.
    for (int64_t m = 0; m < 2; m++)
        for (int64_t o = 0; o < 10; o++) {
            int64_t acc = 0;
            for (int64_t ch = 0; ch < 3; ch++)
                for (int64_t k = 0; k < 4; k++) {
                    int64_t i = o - 1 + k;
                    if (i >= 0 && i < 10)
                        acc += ival(in1[0], ch * 10 + i) * ival(in1[1], (m * 3 + ch) * 4 + k);
                }
            assert_int_equal(ival(out[0], m * 10 + o), acc);
        }
    reel_tensor_free(&out[0]);

    // A per-channel x zero point, and w's of the wrong length, are refused.
    const int64_t three = 3, five = 5;
    reel_tensor *bad[4] = { random_tensor(REEL_DTYPE_INT8, 3, x1, 41, -128, 127),
                            random_tensor(REEL_DTYPE_INT8, 3, w1, 42, -128, 127),
                            random_tensor(REEL_DTYPE_INT8, 1, &three, 1, 0, 3), NULL };
    expect_refusal(&c1, 4, bad, REEL_EUNSUPPORTED, "x's zero point");
    reel_tensor *bad2[4] = { random_tensor(REEL_DTYPE_INT8, 3, x1, 41, -128, 127),
                             random_tensor(REEL_DTYPE_INT8, 3, w1, 42, -128, 127), NULL,
                             random_tensor(REEL_DTYPE_INT8, 1, &five, 1, 0, 3) };
    expect_refusal(&c1, 4, bad2, REEL_EUNSUPPORTED, "w's zero point");
}

static void qlinear_conv_random(void **state)
{
    (void)state;
    // int8 x and w, a w scale per output channel, an int32 bias, uint8 y.
    conv_shape s = { .N = 1, .C = 16, .H = 20, .W = 20, .M = 32, .KH = 3, .KW = 3, .G = 1, .sh = 1, .sw = 1,
                     .dh = 1, .dw = 1, .ph = 1, .pw = 1 };
    conv_shape_out(&s);
    const int64_t xs[] = { s.N, s.C, s.H, s.W }, ws[] = { s.M, s.C, s.KH, s.KW };
    reel_tensor *wscale = random_tensor(REEL_DTYPE_FLOAT32, 1, &s.M, 51, 0.002, 0.02);
    reel_tensor *bias = random_tensor(REEL_DTYPE_INT32, 1, &s.M, 52, -5000, 5000);
    reel_tensor *in[9] = { random_tensor(REEL_DTYPE_INT8, 4, xs, 53, -128, 127), scalar(REEL_DTYPE_FLOAT32, 0.05),
                           scalar(REEL_DTYPE_INT8, -3), random_tensor(REEL_DTYPE_INT8, 4, ws, 54, -128, 127),
                           wscale, scalar(REEL_DTYPE_INT8, 0), scalar(REEL_DTYPE_FLOAT32, 4.0),
                           scalar(REEL_DTYPE_UINT8, 128), bias };
    opcall c = { .op = "QLinearConv", .n_out = 1 };
    int64_t store[8];
    conv_attrs(&c, &s, store);
    reel_tensor *out[1];
    double ms;
    assert_int_equal(call(&c, 9, in, out, &ms), 0);
    assert_int_equal(out[0]->dtype, REEL_DTYPE_UINT8);
    const float *wsc = wscale->data;
    for (int64_t m = 0; m < s.M; m++)
        for (int64_t i = 0; i < s.OH * s.OW; i++) {
            double acc = conv_ref(&s, in[0], -3, in[3], in[5], 0, m, i / s.OW, i % s.OW) + (double)ival(bias, m);
            expect_requant(ival(out[0], m * s.OH * s.OW + i), acc * 0.05 * wsc[m] / 4.0 + 128, 0, 255, i);
        }
    reel_tensor_free(&out[0]);
    printf("QLinearConv 3x3 16->32 at 20x20 in %.3f ms on two workers\n", ms);

    // A float bias and a w_scale of the wrong length are refused.
    const int64_t seven = 7;
    reel_tensor *bad[9] = { random_tensor(REEL_DTYPE_INT8, 4, xs, 53, -128, 127), scalar(REEL_DTYPE_FLOAT32, 0.05),
                            scalar(REEL_DTYPE_INT8, -3), random_tensor(REEL_DTYPE_INT8, 4, ws, 54, -128, 127),
                            scalar(REEL_DTYPE_FLOAT32, 0.01), scalar(REEL_DTYPE_INT8, 0),
                            scalar(REEL_DTYPE_FLOAT32, 4.0), scalar(REEL_DTYPE_UINT8, 128),
                            random_tensor(REEL_DTYPE_FLOAT32, 1, &s.M, 1, 0, 1) };
    expect_refusal(&c, 9, bad, REEL_EUNSUPPORTED, "float32 bias");
    reel_tensor *bad2[9] = { random_tensor(REEL_DTYPE_INT8, 4, xs, 53, -128, 127), scalar(REEL_DTYPE_FLOAT32, 0.05),
                             scalar(REEL_DTYPE_INT8, -3), random_tensor(REEL_DTYPE_INT8, 4, ws, 54, -128, 127),
                             random_tensor(REEL_DTYPE_FLOAT32, 1, &seven, 1, 0.1, 1), scalar(REEL_DTYPE_INT8, 0),
                             scalar(REEL_DTYPE_FLOAT32, 4.0), scalar(REEL_DTYPE_UINT8, 128), NULL };
    expect_refusal(&c, 9, bad2, REEL_EUNSUPPORTED, "w_scale");
}

// The quantized bound of a fused Clip/Relu: sat(rint(bound / y_scale) + zp).
static int64_t clamp_bound(float bound, float y_scale, int64_t zp, int64_t lo, int64_t hi)
{
    float v = rintf(bound / y_scale) + (float)zp;
    return v < lo ? lo : v > hi ? hi : (int64_t)v;
}

// A Relu or Clip the folding pass fused into QLinearConv / QLinearMatMul
// (ir.h: fused_a, fused_b in output units) clamps the requantized output to
// the quantized bounds: the unfused output clamped, and the double-precision
// reference clamped before rounding.
static void qlinear_fused_clamp(void **state)
{
    (void)state;
    conv_shape s = { .N = 1, .C = 8, .H = 9, .W = 7, .M = 12, .KH = 3, .KW = 3, .G = 1, .sh = 2, .sw = 1,
                     .dh = 1, .dw = 1, .ph = 1, .pw = 1 };
    conv_shape_out(&s);
    const int64_t xs[] = { s.N, s.C, s.H, s.W }, ws[] = { s.M, s.C, s.KH, s.KW };
    const char *acts[] = { "Clip", "Relu" };
    for (int ai = 0; ai < 2; ai++)
        for (int yi = 0; yi < 2; yi++) {
            reel_dtype ydt = yi ? REEL_DTYPE_INT8 : REEL_DTYPE_UINT8;
            int64_t yzp = yi ? -20 : 128, ylo = yi ? -128 : 0, yhi = yi ? 127 : 255;
            reel_tensor *in[9] = { random_tensor(REEL_DTYPE_UINT8, 4, xs, 71, 0, 255),
                                   scalar(REEL_DTYPE_FLOAT32, 0.05), scalar(REEL_DTYPE_UINT8, 100),
                                   random_tensor(REEL_DTYPE_INT8, 4, ws, 72, -128, 127),
                                   random_tensor(REEL_DTYPE_FLOAT32, 1, &s.M, 73, 0.002, 0.02),
                                   scalar(REEL_DTYPE_INT8, 0), scalar(REEL_DTYPE_FLOAT32, 0.5),
                                   scalar(ydt, (double)yzp), random_tensor(REEL_DTYPE_INT32, 1, &s.M, 74, -900, 900) };
            opcall plain = { .op = "QLinearConv", .n_out = 1 }, fused = plain;
            int64_t store[8];
            conv_attrs(&plain, &s, store);
            conv_attrs(&fused, &s, store);
            fused.fused = acts[ai];
            fused.fused_a = ai ? 0.0f : -5.3f; // Relu's are 0 and +inf whatever the pass left here
            fused.fused_b = ai ? 0.0f : 7.6f;
            reel_tensor *out0[1], *out1[1];
            assert_int_equal(call(&plain, 9, in, out0, NULL), 0);
            assert_int_equal(call(&fused, 9, in, out1, NULL), 0);
            int64_t lo = ai ? clamp_bound(0.0f, 0.5f, yzp, ylo, yhi) : clamp_bound(-5.3f, 0.5f, yzp, ylo, yhi);
            int64_t hi = ai ? yhi : clamp_bound(7.6f, 0.5f, yzp, ylo, yhi);
            const float *wsc = in[4]->data;
            int64_t P = s.OH * s.OW, below = 0, above = 0;
            for (int64_t m = 0; m < s.M; m++)
                for (int64_t i = 0; i < P; i++) {
                    int64_t y0 = ival(out0[0], m * P + i), y1 = ival(out1[0], m * P + i);
                    assert_int_equal(y1, y0 < lo ? lo : y0 > hi ? hi : y0);
                    below += y0 < lo;
                    above += y0 > hi;
                    double acc = conv_ref(&s, in[0], 100, in[3], in[5], 0, m, i / s.OW, i % s.OW) + ival(in[8], m);
                    double v = acc * 0.05 * wsc[m] / 0.5 + (double)yzp;
                    v = v < lo ? lo : v > hi ? hi : v;
                    expect_requant(y1, v, ylo, yhi, m * P + i);
                }
            assert_true(below > 0); // the clamp did something on both sides
            assert_true(ai || above > 0);
            reel_tensor_free(&out0[0]);
            reel_tensor_free(&out1[0]);
        }

    // QLinearMatMul with a Relu, int8 y: nothing below the zero point.
    const int64_t as[] = { 9, 33 }, bs[] = { 33, 10 };
    reel_tensor *in[8] = { random_tensor(REEL_DTYPE_UINT8, 2, as, 81, 0, 255), scalar(REEL_DTYPE_FLOAT32, 0.02),
                           scalar(REEL_DTYPE_UINT8, 120), random_tensor(REEL_DTYPE_INT8, 2, bs, 82, -128, 127),
                           scalar(REEL_DTYPE_FLOAT32, 0.01), scalar(REEL_DTYPE_INT8, 0),
                           scalar(REEL_DTYPE_FLOAT32, 0.05), scalar(REEL_DTYPE_INT8, -7) };
    opcall c = { .op = "QLinearMatMul", .n_out = 1, .fused = "Relu" };
    reel_tensor *out[1];
    assert_int_equal(call(&c, 8, in, out, NULL), 0);
    int64_t clamped = 0;
    for (int64_t m = 0; m < 9; m++)
        for (int64_t n = 0; n < 10; n++) {
            double v = mm_ref(in[0], 0, in[2], in[3], 0, in[5], m, n, 33, 10) * 0.02 * 0.01 / 0.05;
            clamped += v < 0;
            expect_requant(ival(out[0], m * 10 + n), (v < 0 ? 0 : v) - 7, -128, 127, m * 10 + n);
        }
    assert_true(clamped > 0);
    reel_tensor_free(&out[0]);

    // Another fused activation is refused, naming it.
    opcall sig = { .op = "QLinearMatMul", .n_out = 1, .fused = "Sigmoid" };
    reel_tensor *in2[8] = { random_tensor(REEL_DTYPE_UINT8, 2, as, 81, 0, 255), scalar(REEL_DTYPE_FLOAT32, 0.02),
                            scalar(REEL_DTYPE_UINT8, 120), random_tensor(REEL_DTYPE_INT8, 2, bs, 82, -128, 127),
                            scalar(REEL_DTYPE_FLOAT32, 0.01), scalar(REEL_DTYPE_INT8, 0),
                            scalar(REEL_DTYPE_FLOAT32, 0.05), scalar(REEL_DTYPE_INT8, -7) };
    expect_refusal(&sig, 8, in2, REEL_EUNSUPPORTED, "Sigmoid");
}

// ---- Every int8 GEMM path against the widened-int16 reference

// Runs c on `in` with the reference kernels, then with every kernel set the
// CPU runs (weights packed per run and kept in the state): the same bytes.
static void expect_isas_match(const opcall *c, int n_in, reel_tensor **in, const char *what)
{
    reel_tensor *ref[1], *out[1];
    qgemm_isa_force(QGEMM_REFERENCE);
    assert_int_equal(call(c, n_in, in, ref, NULL), 0);
    for (int isa = QGEMM_GENERIC; isa < QGEMM_ISA_COUNT; isa++) {
        if (!qgemm_isa_supported((qgemm_isa)isa))
            continue;
        for (int kept = 0; kept < 2; kept++) {
            qgemm_isa_force((qgemm_isa)isa);
            opcall ck = *c;
            ck.keep_state = kept;
            assert_int_equal(call(&ck, n_in, in, out, NULL), 0);
            assert_int_equal(out[0]->nbytes, ref[0]->nbytes);
            size_t es = out[0]->nbytes / MAX(1, (size_t)reel_tensor_count(out[0]->rank, out[0]->shape));
            for (size_t i = 0; i < out[0]->nbytes; i += es)
                if (memcmp((char *)out[0]->data + i, (char *)ref[0]->data + i, es))
                    fail_msg("%s, %s kernels%s: element %zu is %" G_GINT64_FORMAT ", the reference's %" G_GINT64_FORMAT,
                             what, qgemm_isa_name((qgemm_isa)isa), kept ? " (weights kept)" : "", i / es,
                             ival(out[0], (int64_t)(i / es)), ival(ref[0], (int64_t)(i / es)));
            reel_tensor_free(&out[0]);
        }
    }
    reel_tensor_free(&ref[0]);
    qgemm_isa_force(QGEMM_ISA_COUNT); // back to the process's choice
}

static reel_dtype q8(int is_signed)
{
    return is_signed ? REEL_DTYPE_INT8 : REEL_DTYPE_UINT8;
}

static reel_tensor *q8_random(int is_signed, int rank, const int64_t *shape, unsigned seed)
{
    return random_tensor(q8(is_signed), rank, shape, seed, is_signed ? -128 : 0, is_signed ? 127 : 255);
}

static reel_tensor *q8_zero_points(int is_signed, int64_t n, unsigned seed)
{
    return n ? random_tensor(q8(is_signed), 1, &n, seed, is_signed ? -40 : 90, is_signed ? 40 : 170)
             : random_tensor(q8(is_signed), 0, NULL, seed, is_signed ? -40 : 90, is_signed ? 40 : 170);
}

static void isa_matmul(void **state)
{
    (void)state;
    // M, K, N off every tile size, K up to a few thousand.
    const int64_t sizes[][3] = { { 1, 1, 1 }, { 7, 13, 5 }, { 17, 300, 33 }, { 9, 2049, 70 }, { 33, 3001, 17 },
                                 { 40, 64, 96 } };
    printf("int8 GEMM kernels checked:");
    for (int isa = QGEMM_GENERIC; isa < QGEMM_ISA_COUNT; isa++)
        printf(" %s%s", qgemm_isa_name((qgemm_isa)isa), qgemm_isa_supported((qgemm_isa)isa) ? "" : " (not on this CPU)");
    printf("\n");
    unsigned seed = 100;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (int types = 0; types < 8; types++) {
            int as = types & 1, bs = types >> 1 & 1, ys = types >> 2 & 1;
            int64_t M = sizes[si][0], K = sizes[si][1], N = sizes[si][2];
            const int64_t ash[] = { M, K }, bsh[] = { K, N };
            bool per_col = (si + types) % 2;
            reel_tensor *in[8] = { q8_random(as, 2, ash, seed + 0), scalar(REEL_DTYPE_FLOAT32, 0.03),
                                   q8_zero_points(as, 0, seed + 1), q8_random(bs, 2, bsh, seed + 2),
                                   per_col ? random_tensor(REEL_DTYPE_FLOAT32, 1, &N, seed + 3, 0.001, 0.004)
                                           : scalar(REEL_DTYPE_FLOAT32, 0.002),
                                   q8_zero_points(bs, per_col ? N : 0, seed + 4),
                                   scalar(REEL_DTYPE_FLOAT32, 0.02 * sqrt((double)K)), q8_zero_points(ys, 0, seed + 5) };
            seed += 6; // the initializers' order is unspecified: each its own seed
            opcall c = { .op = "QLinearMatMul", .n_out = 1 };
            if (types == 3 || types == 6) { // a fused Clip and Relu
                c.fused = types == 3 ? "Clip" : "Relu";
                c.fused_a = -0.3f, c.fused_b = 0.45f;
            }
            char what[96];
            snprintf(what, sizeof what, "QLinearMatMul %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                     " a%s b%s y%s%s", M, K, N, as ? "s8" : "u8", bs ? "s8" : "u8", ys ? "s8" : "u8",
                     c.fused ? c.fused : "");
            expect_isas_match(&c, 8, in, what);

            // MatMulInteger: A's zero point per row, B's per column.
            reel_tensor *mi[4] = { q8_random(as, 2, ash, seed + 0), q8_random(bs, 2, bsh, seed + 1),
                                   q8_zero_points(as, M, seed + 2), q8_zero_points(bs, N, seed + 3) };
            seed += 4; // the initializers' order is unspecified: each its own seed
            opcall ci = { .op = "MatMulInteger", .n_out = 1 };
            snprintf(what, sizeof what, "MatMulInteger %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                     " a%s b%s", M, K, N, as ? "s8" : "u8", bs ? "s8" : "u8");
            expect_isas_match(&ci, 4, mi, what);
        }

    // Batched broadcasting; B without a zero point (uint8: 0 shifted).
    const int64_t a4[] = { 2, 1, 5, 37 }, b3[] = { 3, 37, 19 };
    reel_tensor *inb[3] = { q8_random(1, 4, a4, 7), q8_random(0, 3, b3, 8), q8_zero_points(1, 0, 9) };
    opcall c = { .op = "MatMulInteger", .n_out = 1 };
    expect_isas_match(&c, 3, inb, "MatMulInteger batched");
    reel_tensor *inz[2] = { q8_random(1, 4, a4, 10), q8_random(0, 3, b3, 11) };
    expect_isas_match(&c, 2, inz, "MatMulInteger without zero points");
}

typedef struct qconv_case {
    conv_shape s;
    int xs, ws, ys;      // signedness of x, w, y
    bool per_channel, bias;
    const char *fused;
} qconv_case;

static void isa_conv(void **state)
{
    (void)state;
#define SH(N_, C_, H_, W_, M_, KH_, KW_, G_, sh_, sw_, dh_, dw_, ph_, pw_)                                           { .N = N_, .C = C_, .H = H_, .W = W_, .M = M_, .KH = KH_, .KW = KW_, .G = G_, .sh = sh_, .sw = sw_, .dh = dh_,        .dw = dw_, .ph = ph_, .pw = pw_ }
    qconv_case cases[] = {
        { SH(1, 24, 13, 11, 40, 1, 1, 1, 1, 1, 1, 1, 0, 0), 0, 1, 0, true, true, NULL },       // pointwise
        { SH(2, 17, 9, 10, 21, 1, 1, 1, 2, 2, 1, 1, 0, 0), 1, 1, 1, false, true, "Relu" },     // pointwise, stride 2
        { SH(1, 19, 9, 10, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1), 0, 0, 1, true, false, "Clip" },     // 3x3
        { SH(1, 8, 15, 14, 9, 3, 3, 1, 2, 2, 2, 2, 2, 1), 1, 0, 0, true, true, NULL },         // strided, dilated
        { SH(1, 12, 10, 9, 10, 5, 5, 2, 1, 2, 1, 1, 2, 2), 0, 1, 1, true, true, NULL },        // grouped 5x5
        { SH(1, 3, 23, 21, 17, 7, 7, 1, 2, 2, 1, 1, 3, 3), 0, 1, 0, true, true, "Relu" },      // stem
        { SH(1, 300, 6, 5, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1), 1, 1, 0, true, true, NULL },         // K = 2700
        { SH(2, 10, 12, 11, 13, 3, 3, 1, 1, 1, 2, 3, 2, 1), 1, 0, 1, true, true, "Relu" },     // dilated, stride 1
        { SH(1, 6, 5, 40, 7, 1, 3, 1, 1, 1, 1, 1, 0, 0), 0, 1, 0, true, true, NULL },          // 1x3, no pads, wide
        { SH(1, 32, 12, 13, 32, 3, 3, 32, 1, 1, 1, 1, 1, 1), 0, 1, 0, true, true, "Clip" },    // depthwise
        { SH(2, 16, 11, 12, 16, 3, 3, 16, 2, 2, 1, 1, 1, 1), 1, 0, 1, true, true, NULL },      // depthwise, stride 2
        { SH(1, 8, 14, 13, 8, 5, 5, 8, 2, 1, 1, 1, 2, 2), 0, 0, 0, false, false, "Relu" },     // depthwise 5x5
        { SH(1, 8, 14, 13, 8, 3, 3, 8, 1, 1, 2, 3, 2, 1), 1, 1, 1, true, true, NULL },         // depthwise, dilated
        { SH(1, 6, 600, 1, 6, 3, 1, 6, 1, 1, 1, 1, 1, 0), 0, 1, 0, true, true, NULL },         // depthwise, a long column
    };
#undef SH
    unsigned seed = 500;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        qconv_case *k = &cases[ci];
        conv_shape *s = &k->s;
        conv_shape_out(s);
        const int64_t xsh[] = { s->N, s->C, s->H, s->W }, wsh[] = { s->M, s->C / s->G, s->KH, s->KW };
        int64_t K = s->C / s->G * s->KH * s->KW;
        reel_tensor *in[9] = {
            q8_random(k->xs, 4, xsh, seed + 0), scalar(REEL_DTYPE_FLOAT32, 0.04), q8_zero_points(k->xs, 0, seed + 1),
            q8_random(k->ws, 4, wsh, seed + 2),
            k->per_channel ? random_tensor(REEL_DTYPE_FLOAT32, 1, &s->M, seed + 3, 0.001, 0.01)
                           : scalar(REEL_DTYPE_FLOAT32, 0.004),
            q8_zero_points(k->ws, k->per_channel ? s->M : 0, seed + 4),
            scalar(REEL_DTYPE_FLOAT32, 0.03 * sqrt((double)K)), q8_zero_points(k->ys, 0, seed + 5),
            k->bias ? random_tensor(REEL_DTYPE_INT32, 1, &s->M, seed + 6, -20000, 20000) : NULL };
        seed += 7; // the initializers' order is unspecified: each its own seed
        opcall c = { .op = "QLinearConv", .n_out = 1, .fused = k->fused, .fused_a = -0.5f, .fused_b = 0.7f };
        int64_t store[8];
        conv_attrs(&c, s, store);
        char what[96];
        snprintf(what, sizeof what, "QLinearConv case %zu (%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ", group %"
                 G_GINT64_FORMAT ")", ci, s->KH, s->KW, s->G);
        expect_isas_match(&c, 9, in, what);

        reel_tensor *ii[4] = { q8_random(k->xs, 4, xsh, seed + 0), q8_random(k->ws, 4, wsh, seed + 1),
                               q8_zero_points(k->xs, 0, seed + 2), q8_zero_points(k->ws, k->per_channel ? s->M : 0, seed + 3) };
        seed += 4; // the initializers' order is unspecified: each its own seed
        opcall cc = { .op = "ConvInteger", .n_out = 1 };
        conv_attrs(&cc, s, store);
        snprintf(what, sizeof what, "ConvInteger case %zu", ci);
        expect_isas_match(&cc, 4, ii, what);

        // Without zero points (0, which uint8 weights shift to -128).
        reel_tensor *iz[2] = { q8_random(k->xs, 4, xsh, seed + 0), q8_random(k->ws, 4, wsh, seed + 1) };
        seed += 2; // the initializers' order is unspecified: each its own seed
        snprintf(what, sizeof what, "ConvInteger case %zu without zero points", ci);
        expect_isas_match(&cc, 2, iz, what);

        // Symmetric weights (zero points 0; 128 for uint8, which shifts to
        // 0): the GEMM's short store when the x zero point is one value.
        int wz = k->ws ? 0 : 128;
        reel_tensor *isym[9] = {
            q8_random(k->xs, 4, xsh, seed + 0), scalar(REEL_DTYPE_FLOAT32, 0.04), q8_zero_points(k->xs, 0, seed + 1),
            q8_random(k->ws, 4, wsh, seed + 2),
            k->per_channel ? random_tensor(REEL_DTYPE_FLOAT32, 1, &s->M, seed + 3, 0.001, 0.01)
                           : scalar(REEL_DTYPE_FLOAT32, 0.004),
            k->per_channel ? random_tensor(q8(k->ws), 1, &s->M, 0, wz, wz) : scalar(q8(k->ws), wz),
            scalar(REEL_DTYPE_FLOAT32, 0.03 * sqrt((double)K)), q8_zero_points(k->ys, 0, seed + 5),
            k->bias ? random_tensor(REEL_DTYPE_INT32, 1, &s->M, seed + 6, -20000, 20000) : NULL };
        seed += 7; // the initializers' order is unspecified: each its own seed
        snprintf(what, sizeof what, "QLinearConv case %zu, symmetric weights", ci);
        expect_isas_match(&c, 9, isym, what);
    }

    // 3-D (the im2col path with depth), strided in one dim; grouped.
    const int64_t x3[] = { 1, 4, 5, 6, 7 }, w3[] = { 6, 2, 3, 2, 3 }, six = 6;
    const int64_t st3[] = { 1, 2, 1 }, pd3[] = { 1, 0, 1, 1, 1, 0 };
    opcall c3 = { .op = "QLinearConv", .n_out = 1 };
    attr_ints(&c3, "strides", 3, st3);
    attr_ints(&c3, "pads", 6, pd3);
    attr_int(&c3, "group", 2);
    reel_tensor *in3[9] = { q8_random(0, 5, x3, seed + 0), scalar(REEL_DTYPE_FLOAT32, 0.04), q8_zero_points(0, 0, seed + 1),
                            q8_random(1, 5, w3, seed + 2), random_tensor(REEL_DTYPE_FLOAT32, 1, &six, seed + 3, 0.001, 0.01),
                            q8_zero_points(1, 6, seed + 4), scalar(REEL_DTYPE_FLOAT32, 0.2), q8_zero_points(0, 0, seed + 5),
                            random_tensor(REEL_DTYPE_INT32, 1, &six, seed + 6, -2000, 2000) };
    expect_isas_match(&c3, 9, in3, "QLinearConv 3-D");
}

// Depthwise convs whose weights less their zero points fit int8 (the
// symmetric int8 weights of real models, uint8 ones around 128): the byte
// kernel of AVX512-VNNI with VBMI runs them; strides 1 and 2 each way, 3x3
// to 7x7, pads, rows shorter and longer than a vector (and narrow enough
// for several to a vector), int8 and uint8 x.
static void isa_depthwise_bytes(void **state)
{
    (void)state;
#define SH(N_, C_, H_, W_, KH_, KW_, sh_, sw_, ph_, pw_)                                                          \
    { .N = N_, .C = C_, .H = H_, .W = W_, .M = C_, .KH = KH_, .KW = KW_, .G = C_, .sh = sh_, .sw = sw_, .dh = 1,     \
      .dw = 1, .ph = ph_, .pw = pw_ }
    qconv_case cases[] = {
        { SH(1, 24, 20, 37, 3, 3, 1, 1, 1, 1), 0, 1, 0, true, true, "Relu" },
        { SH(2, 16, 23, 40, 3, 3, 2, 2, 1, 1), 1, 0, 1, true, true, NULL },
        { SH(1, 8, 14, 13, 5, 5, 1, 1, 2, 2), 1, 1, 0, false, true, "Clip" },
        { SH(1, 8, 17, 35, 5, 5, 2, 2, 2, 2), 0, 0, 0, true, false, NULL },
        { SH(1, 5, 7, 7, 3, 3, 1, 1, 0, 0), 0, 1, 1, true, true, NULL },
        { SH(1, 6, 9, 70, 3, 3, 1, 2, 1, 1), 1, 1, 1, true, true, NULL },
        { SH(1, 4, 12, 19, 7, 7, 1, 1, 3, 3), 0, 1, 0, true, true, NULL },
        // Rows narrower than half a vector, several to a vector.
        { SH(1, 12, 7, 7, 3, 3, 1, 1, 1, 1), 0, 1, 0, true, true, "Relu" },
        { SH(2, 9, 14, 14, 3, 3, 2, 2, 1, 1), 1, 1, 1, true, true, NULL },
        { SH(1, 6, 9, 8, 5, 5, 1, 1, 2, 2), 0, 0, 0, true, true, NULL },
        { SH(1, 5, 11, 4, 3, 3, 1, 1, 1, 1), 1, 1, 0, false, true, NULL },
        // Two rows of at most 8 outputs to a vector, 7x7 kernels (two quads per kernel row).
        { SH(1, 4, 9, 6, 7, 7, 1, 1, 3, 3), 0, 1, 0, true, true, "Relu" },
        { SH(1, 3, 10, 11, 7, 7, 2, 2, 3, 3), 1, 0, 1, true, false, NULL },
    };
#undef SH
    unsigned seed = 900;
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        qconv_case *k = &cases[ci];
        conv_shape *s = &k->s;
        conv_shape_out(s);
        const int64_t xsh[] = { s->N, s->C, s->H, s->W }, wsh[] = { s->M, 1, s->KH, s->KW };
        int64_t nz = k->per_channel ? s->M : 0;
        // w in [-60, 60] less a zero point in [-40, 40]; uint8: [60, 200] less [90, 170].
        reel_tensor *w = random_tensor(q8(k->ws), 4, wsh, seed + 2, k->ws ? -60 : 60, k->ws ? 60 : 200);
        reel_tensor *in[9] = {
            q8_random(k->xs, 4, xsh, seed + 0), scalar(REEL_DTYPE_FLOAT32, 0.04), q8_zero_points(k->xs, 0, seed + 1), w,
            k->per_channel ? random_tensor(REEL_DTYPE_FLOAT32, 1, &s->M, seed + 3, 0.001, 0.01)
                           : scalar(REEL_DTYPE_FLOAT32, 0.004),
            q8_zero_points(k->ws, nz, seed + 4), scalar(REEL_DTYPE_FLOAT32, 0.03 * sqrt((double)(s->KH * s->KW))),
            q8_zero_points(k->ys, 0, seed + 5),
            k->bias ? random_tensor(REEL_DTYPE_INT32, 1, &s->M, seed + 6, -20000, 20000) : NULL };
        seed += 7; // the initializers' order is unspecified: each its own seed
        opcall c = { .op = "QLinearConv", .n_out = 1, .fused = k->fused, .fused_a = -0.5f, .fused_b = 0.7f };
        int64_t store[8];
        conv_attrs(&c, s, store);
        char what[96];
        snprintf(what, sizeof what, "depthwise case %zu (%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ", stride %"
                 G_GINT64_FORMAT "x%" G_GINT64_FORMAT ")", ci, s->KH, s->KW, s->sh, s->sw);
        expect_isas_match(&c, 9, in, what);

        reel_tensor *ii[4] = { q8_random(k->xs, 4, xsh, seed + 0),
                               random_tensor(q8(k->ws), 4, wsh, seed + 1, k->ws ? -60 : 60, k->ws ? 60 : 200),
                               q8_zero_points(k->xs, 0, seed + 2), q8_zero_points(k->ws, nz, seed + 3) };
        seed += 4;
        opcall cc = { .op = "ConvInteger", .n_out = 1 };
        conv_attrs(&cc, s, store);
        snprintf(what, sizeof what, "depthwise ConvInteger case %zu", ci);
        expect_isas_match(&cc, 4, ii, what);
    }
}

// A layer of a small detector at a low resolution: 3x3, 32 to 32 channels
// at 80x80, uint8, QLinearConv; prints the time (checked above on smaller shapes).
static void qlinear_conv_timing(void **state)
{
    (void)state;
    const int64_t xs[] = { 1, 32, 80, 80 }, ws[] = { 32, 32, 3, 3 }, M = 32;
    const int64_t pads[] = { 1, 1, 1, 1 };
    double best = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        reel_tensor *in[8] = { random_tensor(REEL_DTYPE_UINT8, 4, xs, 61, 0, 255), scalar(REEL_DTYPE_FLOAT32, 0.05),
                               scalar(REEL_DTYPE_UINT8, 128), random_tensor(REEL_DTYPE_INT8, 4, ws, 62, -128, 127),
                               random_tensor(REEL_DTYPE_FLOAT32, 1, &M, 63, 0.002, 0.02),
                               scalar(REEL_DTYPE_INT8, 0), scalar(REEL_DTYPE_FLOAT32, 4.0),
                               scalar(REEL_DTYPE_UINT8, 128) };
        opcall c = { .op = "QLinearConv", .n_out = 1 };
        attr_ints(&c, "pads", 4, pads);
        reel_tensor *out[1];
        double ms;
        assert_int_equal(call(&c, 8, in, out, &ms), 0);
        best = MIN(best, ms);
        reel_tensor_free(&out[0]);
    }
    printf("QLinearConv 3x3 32->32 at 80x80 in %.3f ms on two workers (%.2f GMAC/s)\n", best,
           32.0 * 32 * 9 * 80 * 80 / best / 1e6);
}

int main(void)
{
    op_harness_begin(&(op_harness_opts){ .opset = 19, .two_workers = true, .keep_inputs = true });
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(quantize_ties_saturation_axis),
        cmocka_unit_test(quantize_refusals),
        cmocka_unit_test(dequantize_forms),
        cmocka_unit_test(dynamic_quantize_forms),
        cmocka_unit_test(matmul_integer_random),
        cmocka_unit_test(qlinear_matmul_random),
        cmocka_unit_test(conv_integer_random),
        cmocka_unit_test(qlinear_conv_random),
        cmocka_unit_test(qlinear_fused_clamp),
        cmocka_unit_test(isa_matmul),
        cmocka_unit_test(isa_conv),
        cmocka_unit_test(isa_depthwise_bytes),
        cmocka_unit_test(qlinear_conv_timing),
    };
    int r = cmocka_run_group_tests(tests, NULL, NULL);
    op_harness_end();
    return r;
}

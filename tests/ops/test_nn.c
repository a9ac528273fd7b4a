// The nn kernels (Conv, ConvTranspose, Gemm, MatMul, BatchNormalization,
// pools, Resize) on small hand-checked cases and against naive references
// on seeded random inputs: each op's infer and run, called as the executor
// calls them.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/cpu/workers.h"
#include "models/op.h"
#include "tests/support/skip.h"

#define MAX_IN 8

// Every op runs twice: on the calling thread and split over two workers; the
// two results must agree.
static reel_workers *pool;

static reel_tensor *tensor(reel_dtype dt, int rank, const int64_t *shape, const void *data)
{
    reel_tensor *t = reel_tensor_new(dt, rank, shape);
    if (data && t->nbytes)
        memcpy(t->data, data, t->nbytes);
    return t;
}

static reel_tensor *ftensor(int rank, const int64_t *shape, const float *data)
{
    return tensor(REEL_DTYPE_FLOAT32, rank, shape, data);
}

static reel_tensor *random_tensor(int rank, const int64_t *shape, unsigned seed)
{
    reel_tensor *t = ftensor(rank, shape, NULL);
    float *d = t->data;
    srand(seed);
    for (size_t i = 0; i < t->nbytes / 4; i++)
        d[i] = (float)rand() / RAND_MAX * 2 - 1;
    return t;
}

typedef struct opcall {
    const char *op;
    reel_ir_attr attrs[8];
    int n_attrs;
    const char *fused;
    float fa, fb;
    int opset;
} opcall;

static void attr_ints(opcall *c, const char *name, int n, const int64_t *v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INTS, .ints = (int64_t *)v, .n = n };
}

static void attr_int(opcall *c, const char *name, int64_t v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INT, .i = v };
}

static void attr_str(opcall *c, const char *name, const char *v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_STRING, .s = (char *)v };
}

static void attr_float(opcall *c, const char *name, float v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOAT, .f = v };
}

// Infers and runs one node; the inputs (NULL: omitted) become the graph's.
// Returns the output, or NULL when infer failed (*rc set).
static reel_tensor *call(const opcall *c, int n_in, reel_tensor **in, int *rc)
{
    const reel_op *op = reel_op_find(c->op);
    assert_non_null(op);
    reel_ir_graph *g = reel_ir_graph_new();
    g->opset = c->opset ? c->opset : 13;
    int inputs[MAX_IN], output = reel_ir_add_value(g, "y");
    for (int i = 0; i < n_in; i++) {
        if (!in[i]) {
            inputs[i] = -1;
            continue;
        }
        char name[8] = { 'x', (char)('0' + i) };
        inputs[i] = reel_ir_add_value(g, name);
        reel_ir_value *v = reel_ir_value_at(g, inputs[i]);
        v->dtype = in[i]->dtype;
        v->rank = in[i]->rank;
        memcpy(v->dims, in[i]->shape, sizeof v->dims);
        v->constant = in[i]; // the graph frees them
    }
    reel_ir_node n = { .name = "n", .op = (char *)c->op, .inputs = inputs, .n_inputs = n_in, .outputs = &output,
                       .n_outputs = 1, .attrs = (reel_ir_attr *)c->attrs, .n_attrs = c->n_attrs,
                       .fused = c->fused, .fused_a = c->fa, .fused_b = c->fb };
    GError *error = NULL;
    *rc = op->infer(g, &n, &error);
    reel_tensor *y = NULL;
    if (*rc) {
        g_clear_error(&error);
    } else {
        reel_ir_value *v = reel_ir_value_at(g, output);
        y = reel_tensor_new(v->dtype, v->rank, v->dims);
        reel_tensor *y2 = reel_tensor_new(v->dtype, v->rank, v->dims);
        for (int threads = 1; threads <= 2; threads++) {
            reel_tensor *out[1] = { threads == 1 ? y : y2 };
            reel_exec_ctx ctx = { .threads = threads, .workers = threads == 2 ? pool : NULL };
            ctx.scratch_size = op->scratch ? op->scratch(&n, in, out) : 0;
            ctx.scratch = g_malloc0(ctx.scratch_size + 1);
            int r = op->run(&n, in, out, &ctx);
            g_free(ctx.scratch);
            if (threads == 1)
                *rc = r;
            else
                assert_int_equal(r, *rc);
        }
        if (!*rc && y->dtype == REEL_DTYPE_FLOAT32) {
            const float *a = y->data, *b = y2->data;
            for (size_t i = 0; i < y->nbytes / 4; i++)
                if (fabsf(a[i] - b[i]) > 1e-5f + 1e-5f * fabsf(a[i]))
                    fail_msg("%s: element %zu is %g on one thread, %g on two", c->op, i, a[i], b[i]);
        }
        reel_tensor_free(&y2);
    }
    reel_ir_graph_free(&g);
    return y;
}

static reel_tensor *call_ok(const opcall *c, int n_in, reel_tensor **in)
{
    int rc;
    reel_tensor *y = call(c, n_in, in, &rc);
    assert_int_equal(rc, 0);
    return y;
}

static void expect(reel_tensor *y, int rank, const int64_t *shape, const float *want, float tol)
{
    assert_int_equal(y->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(y->shape[i], shape[i]);
    const float *d = y->data;
    for (int64_t i = 0; i < reel_tensor_count(rank, shape); i++)
        if (fabsf(d[i] - want[i]) > tol + tol * fabsf(want[i]))
            fail_msg("element %" G_GINT64_FORMAT ": %g, expected %g", i, d[i], want[i]);
    reel_tensor_free(&y);
}

// Naive NCHW conv (2-D), the reference for the random cases.
static float *naive_conv(const reel_tensor *x, const reel_tensor *w, const float *bias, int64_t G, const int64_t *s,
                         const int64_t *d, const int64_t *p, int64_t OH, int64_t OW)
{
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    int64_t M = w->shape[0], Cg = w->shape[1], KH = w->shape[2], KW = w->shape[3], Mg = M / G;
    float *y = g_new0(float, N * M * OH * OW);
    const float *X = x->data, *Wt = w->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = bias ? bias[m] : 0;
                    int64_t g = m / Mg;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t i = 0; i < KH; i++)
                            for (int64_t j = 0; j < KW; j++) {
                                int64_t ih = oh * s[0] - p[0] + i * d[0], iw = ow * s[1] - p[1] + j * d[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                    continue;
                                acc += X[((n * C + g * Cg + c) * H + ih) * W + iw] *
                                       Wt[((m * Cg + c) * KH + i) * KW + j];
                            }
                    y[((n * M + m) * OH + oh) * OW + ow] = (float)acc;
                }
    (void)C;
    return y;
}

static void conv_hand_asymmetric(void **state)
{
    (void)state;
    float xs[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, ws[4] = { 1, 1, 1, 1 };
    int64_t xsh[4] = { 1, 1, 3, 3 }, wsh[4] = { 1, 1, 2, 2 };
    static const int64_t pads[4] = { 1, 0, 0, 1 }; // top 1, right 1
    opcall c = { .op = "Conv" };
    attr_ints(&c, "pads", 4, pads);
    reel_tensor *in[2] = { ftensor(4, xsh, xs), ftensor(4, wsh, ws) };
    int64_t ysh[4] = { 1, 1, 3, 3 };
    float want[9] = { 3, 5, 3, 12, 16, 9, 24, 28, 15 };
    expect(call_ok(&c, 2, in), 4, ysh, want, 1e-6f);
}

static void conv_random(void **state)
{
    (void)state;
    // C, M, group, k, stride, dilation, pads t l b r, H, W
    static const int64_t cases[][12] = {
        { 8, 16, 1, 1, 1, 1, 0, 0, 0, 0, 7, 9 },  // pointwise GEMM
        { 3, 8, 1, 3, 2, 1, 0, 1, 1, 0, 9, 8 },   // stride 2, asymmetric pads (BlazeFace)
        { 4, 6, 2, 3, 1, 2, 2, 2, 2, 2, 10, 11 }, // groups, dilation
        { 6, 6, 6, 3, 1, 1, 1, 1, 1, 1, 8, 8 },   // depthwise
        { 6, 6, 6, 5, 2, 1, 1, 2, 2, 1, 13, 9 },  // depthwise stride 2, asymmetric
        { 4, 8, 4, 3, 1, 1, 1, 1, 1, 1, 5, 6 },   // depthwise with multiplier 2
        { 5, 5, 5, 5, 1, 1, 2, 1, 0, 2, 19, 37 }, // depthwise 5x5 stride 1, asymmetric (padded plane)
        { 3, 3, 3, 3, 1, 1, 0, 0, 0, 0, 9, 40 },  // depthwise, no pads
        { 4, 4, 4, 3, 2, 1, 0, 1, 1, 1, 21, 45 }, // depthwise stride 2, wide rows
        { 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 17, 50 }, // depthwise stride 3
        { 5, 4, 1, 1, 2, 1, 0, 0, 0, 0, 6, 6 },   // 1x1 stride 2 (im2col)
        { 16, 8, 1, 3, 1, 1, 1, 1, 1, 1, 37, 37 }, // im2col tiles starting and ending inside rows
        { 4, 6, 1, 3, 2, 1, 1, 1, 1, 1, 99, 99 }, // im2col stride 2, several tiles
        { 7, 7, 7, 3, 1, 1, 1, 1, 1, 1, 7, 7 },   // depthwise 7x7: padded plane computed in whole vectors
        { 5, 5, 5, 3, 1, 1, 0, 2, 2, 0, 11, 23 }, // depthwise "same", pads all on one side
        { 4, 4, 4, 5, 1, 1, 2, 2, 2, 2, 7, 7 },   // depthwise 5x5 "same" on a 7x7 plane
        { 3, 3, 3, 5, 1, 1, 1, 3, 3, 1, 6, 33 },  // depthwise 5x5 "same", uneven pads
        { 6, 6, 6, 3, 2, 1, 1, 1, 1, 1, 15, 17 }, // depthwise stride 2, odd sizes
        { 6, 6, 6, 3, 2, 1, 0, 0, 1, 1, 14, 14 }, // depthwise stride 2, pads after only
        { 3, 3, 3, 5, 2, 1, 4, 0, 3, 4, 9, 12 },  // depthwise 5x5 stride 2, pads up to k - 1
        { 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, 1, 31 },  // depthwise stride 2, one row
        { 3, 6, 3, 3, 2, 1, 1, 1, 1, 1, 12, 12 }, // depthwise stride 2 with multiplier 2
        { 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 6, 37 },  // depthwise by rows, a partial vector at the end
        { 2, 2, 2, 3, 1, 1, 0, 1, 2, 1, 5, 32 },  // depthwise by rows, pads 0 above and 2 below
        { 3, 3, 3, 3, 2, 1, 0, 1, 1, 1, 7, 33 },  // depthwise by rows, stride 2, odd width
        { 2, 2, 2, 3, 2, 1, 1, 1, 1, 0, 6, 64 },  // depthwise by rows, stride 2, no pad on the right
        { 16, 16, 1, 3, 1, 1, 1, 1, 1, 1, 15, 15 }, // Winograd, an odd number of outputs
        { 8, 12, 1, 3, 1, 1, 0, 2, 1, 0, 14, 17 },  // Winograd, uneven pads
        { 9, 8, 1, 3, 1, 1, 0, 0, 0, 0, 16, 20 },   // Winograd, no pads
        { 8, 8, 1, 3, 1, 1, 2, 2, 2, 2, 12, 12 },   // Winograd, pads of 2
    };
    for (size_t t = 0; t < G_N_ELEMENTS(cases); t++) {
        const int64_t *k = cases[t];
        int64_t C = k[0], M = k[1], G = k[2], K = k[3];
        int64_t xsh[4] = { 2, C, k[10], k[11] }, wsh[4] = { M, C / G, K, K }, bsh[1] = { M };
        int64_t s[2] = { k[4], k[4] }, d[2] = { k[5], k[5] }, pads[4] = { k[6], k[7], k[8], k[9] };
        opcall c = { .op = "Conv", .fused = "Relu" };
        attr_ints(&c, "pads", 4, pads);
        attr_ints(&c, "strides", 2, s);
        attr_ints(&c, "dilations", 2, d);
        attr_int(&c, "group", G);
        reel_tensor *in[3] = { random_tensor(4, xsh, 1 + t), random_tensor(4, wsh, 100 + t), random_tensor(1, bsh, 7) };
        int64_t ek = (K - 1) * k[5] + 1;
        int64_t OH = (k[10] + pads[0] + pads[2] - ek) / s[0] + 1, OW = (k[11] + pads[1] + pads[3] - ek) / s[1] + 1;
        float *want = naive_conv(in[0], in[1], in[2]->data, G, s, d, pads, OH, OW);
        for (int64_t i = 0; i < 2 * M * OH * OW; i++)
            want[i] = want[i] > 0 ? want[i] : 0;
        int64_t ysh[4] = { 2, M, OH, OW };
        expect(call_ok(&c, 3, in), 4, ysh, want, 1e-5f);
        g_free(want);
    }
}

// Few input channels, 3x3 stride 2 with a column of padding on the left: the
// stem kernel's rows (AVX-512; elsewhere im2col, the same answer) against the
// naive conv, with bias, residual and the activations its stores apply.
static void conv_stem(void **state)
{
    (void)state;
    // C, M, H, W, pads t l b r, activation (0 none, 1 Relu, 2 Clip), residual
    static const int64_t cases[][10] = {
        { 3, 32, 32, 32, 1, 1, 1, 1, 2, 0 },  // MobileNetV2's stem, smaller
        { 3, 24, 64, 70, 1, 1, 1, 1, 1, 1 },  // several row tasks, residual
        { 1, 21, 17, 37, 0, 1, 1, 0, 0, 0 },  // odd sizes: 8 + 8 + 5 channels, a partial vector
        { 4, 9, 9, 5, 2, 1, 0, 1, 2, 1 },     // narrow rows, pads of 2 above
        { 2, 17, 31, 290, 1, 1, 1, 1, 1, 0 }, // rows longer than the gathered taps
        { 3, 8, 12, 12, 1, 0, 1, 1, 0, 0 },   // no left pad: im2col
    };
    for (size_t t = 0; t < G_N_ELEMENTS(cases); t++) {
        const int64_t *k = cases[t];
        int64_t C = k[0], M = k[1], H = k[2], W = k[3], act = k[8];
        int64_t xsh[4] = { 2, C, H, W }, wsh[4] = { M, C, 3, 3 }, bsh[1] = { M };
        int64_t s[2] = { 2, 2 }, d[2] = { 1, 1 }, pads[4] = { k[4], k[5], k[6], k[7] };
        int64_t OH = (H + pads[0] + pads[2] - 3) / 2 + 1, OW = (W + pads[1] + pads[3] - 3) / 2 + 1;
        int64_t ysh[4] = { 2, M, OH, OW };
        opcall c = { .op = "Conv", .fused = act == 1 ? "Relu" : act == 2 ? "Clip" : NULL, .fa = -0.3f, .fb = 0.4f };
        attr_ints(&c, "pads", 4, pads);
        attr_ints(&c, "strides", 2, s);
        reel_tensor *in[4] = { random_tensor(4, xsh, 50 + t), random_tensor(4, wsh, 60 + t),
                               random_tensor(1, bsh, 70 + t), k[9] ? random_tensor(4, ysh, 80 + t) : NULL };
        float *want = naive_conv(in[0], in[1], in[2]->data, 1, s, d, pads, OH, OW);
        for (int64_t i = 0; i < 2 * M * OH * OW; i++) {
            float v = want[i] + (in[3] ? ((const float *)in[3]->data)[i] : 0);
            want[i] = act == 1 ? (v > 0 ? v : 0) : act == 2 ? (v < -0.3f ? -0.3f : v > 0.4f ? 0.4f : v) : v;
        }
        expect(call_ok(&c, k[9] ? 4 : 3, in), 4, ysh, want, 1e-5f);
        g_free(want);
    }
}

static void conv_same_and_fused(void **state)
{
    (void)state;
    int64_t xsh[4] = { 1, 2, 5, 5 }, wsh[4] = { 3, 2, 3, 3 };
    const char *fused[] = { "Clip", "Sigmoid", "SiLU", "HardSigmoid", "HardSwish" };
    for (int f = 0; f < 5; f++) {
        opcall c = { .op = "Conv", .fused = fused[f], .fa = f == 0 ? -0.5f : f == 3 ? 0.2f : 0,
                     .fb = f == 0 ? 0.5f : f == 3 ? 0.5f : 0 };
        static const int64_t s2[2] = { 2, 2 };
        attr_str(&c, "auto_pad", "SAME_LOWER");
        attr_ints(&c, "strides", 2, s2);
        reel_tensor *in[2] = { random_tensor(4, xsh, 3), random_tensor(4, wsh, 4) };
        // SAME_LOWER, 5 -> 3 at stride 2: total pad 2, 1 before and 1 after.
        int64_t s[2] = { 2, 2 }, d[2] = { 1, 1 }, p[2] = { 1, 1 };
        float *want = naive_conv(in[0], in[1], NULL, 1, s, d, p, 3, 3);
        for (int i = 0; i < 27; i++) {
            float v = want[i];
            switch (f) {
            case 0: v = v < -0.5f ? -0.5f : v > 0.5f ? 0.5f : v; break;
            case 1: v = 1 / (1 + expf(-v)); break;
            case 2: v = v / (1 + expf(-v)); break;
            case 3: v = fmaxf(0, fminf(1, 0.2f * v + 0.5f)); break;
            case 4: v = v * fmaxf(0, fminf(1, v / 6 + 0.5f)); break;
            }
            want[i] = v;
        }
        int64_t ysh[4] = { 1, 3, 3, 3 };
        expect(call_ok(&c, 2, in), 4, ysh, want, 1e-5f);
        g_free(want);
    }
}

static void conv_bad(void **state)
{
    (void)state;
    int64_t xsh[4] = { 1, 3, 5, 5 }, wsh[4] = { 4, 2, 3, 3 };
    opcall c = { .op = "Conv" };
    reel_tensor *in[2] = { ftensor(4, xsh, NULL), ftensor(4, wsh, NULL) };
    int rc;
    assert_null(call(&c, 2, in, &rc)); // 3 channels, weights for 2
    assert_int_equal(rc, REEL_EINVAL);
}

static void convtranspose_hand(void **state)
{
    (void)state;
    float xs[4] = { 1, 2, 3, 4 }, ws[4] = { 1, 1, 1, 1 };
    int64_t xsh[4] = { 1, 1, 2, 2 }, wsh[4] = { 1, 1, 2, 2 };
    opcall c = { .op = "ConvTranspose" };
    static const int64_t s[2] = { 2, 2 };
    attr_ints(&c, "strides", 2, s);
    reel_tensor *in[2] = { ftensor(4, xsh, xs), ftensor(4, wsh, ws) };
    int64_t ysh[4] = { 1, 1, 4, 4 };
    float want[16] = { 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4 };
    expect(call_ok(&c, 2, in), 4, ysh, want, 1e-6f);

    // Overlapping 3x3 windows at stride 2, pads 1, 3 -> 5 channels (split
    // over the workers by output channel), against the sum written out.
    enum { C = 3, M = 5, H = 4, W = 6, OH = 2 * H - 1, OW = 2 * W - 1 };
    float x[C * H * W], w[C * M * 9], y[M * OH * OW] = { 0 };
    for (int i = 0; i < C * H * W; i++)
        x[i] = (float)((i * 7) % 11) - 5;
    for (int i = 0; i < C * M * 9; i++)
        w[i] = (float)((i * 5) % 13) / 13 - 0.5f;
    for (int ci = 0; ci < C; ci++)
        for (int m = 0; m < M; m++)
            for (int ih = 0; ih < H; ih++)
                for (int iw = 0; iw < W; iw++)
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++) {
                            int oh = ih * 2 + kh - 1, ow = iw * 2 + kw - 1;
                            if (oh >= 0 && oh < OH && ow >= 0 && ow < OW)
                                y[(m * OH + oh) * OW + ow] +=
                                    x[(ci * H + ih) * W + iw] * w[((ci * M + m) * 3 + kh) * 3 + kw];
                        }
    opcall c2 = { .op = "ConvTranspose" };
    static const int64_t pads[4] = { 1, 1, 1, 1 };
    attr_ints(&c2, "strides", 2, s);
    attr_ints(&c2, "pads", 4, pads);
    int64_t x2sh[4] = { 1, C, H, W }, w2sh[4] = { C, M, 3, 3 }, y2sh[4] = { 1, M, OH, OW };
    reel_tensor *in2[2] = { ftensor(4, x2sh, x), ftensor(4, w2sh, w) };
    expect(call_ok(&c2, 2, in2), 4, y2sh, y, 1e-5f);
}

static void gemm_broadcast(void **state)
{
    (void)state;
    float a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 0, 1, 0, 1, 1 }, cc[2] = { 10, 20 };
    int64_t ash[2] = { 2, 3 }, bsh[2] = { 2, 3 }, csh[1] = { 2 };
    opcall c = { .op = "Gemm" };
    attr_int(&c, "transB", 1);
    attr_float(&c, "alpha", 2);
    attr_float(&c, "beta", 0.5f);
    reel_tensor *in[3] = { ftensor(2, ash, a), ftensor(2, bsh, b), ftensor(1, csh, cc) };
    // A B^T = [[4, 5], [10, 11]]; 2x that + [5, 10]
    int64_t ysh[2] = { 2, 2 };
    float want[4] = { 13, 20, 25, 32 };
    expect(call_ok(&c, 3, in), 2, ysh, want, 1e-6f);
}

// Large enough for the product to be split over the workers, every
// transposition, against a naive product.
static void gemm_random(void **state)
{
    (void)state;
    static const int64_t cases[][5] = { // M, N, K, transA, transB
        { 1, 1000, 300, 0, 1 }, { 70, 50, 40, 1, 0 }, { 300, 20, 30, 0, 0 }, { 33, 130, 64, 1, 1 },
    };
    for (size_t t = 0; t < G_N_ELEMENTS(cases); t++) {
        int64_t M = cases[t][0], N = cases[t][1], K = cases[t][2];
        bool ta = cases[t][3], tb = cases[t][4];
        int64_t ash[2] = { ta ? K : M, ta ? M : K }, bsh[2] = { tb ? N : K, tb ? K : N }, csh[1] = { N };
        opcall c = { .op = "Gemm", .fused = "Relu" };
        attr_int(&c, "transA", ta);
        attr_int(&c, "transB", tb);
        reel_tensor *in[3] = { random_tensor(2, ash, 20 + t), random_tensor(2, bsh, 30 + t), random_tensor(1, csh, 40) };
        const float *A = in[0]->data, *B = in[1]->data, *C = in[2]->data;
        float *want = g_new(float, M * N);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = C[j];
                for (int64_t k = 0; k < K; k++)
                    s += (double)A[ta ? k * M + i : i * K + k] * B[tb ? j * K + k : k * N + j];
                want[i * N + j] = s > 0 ? (float)s : 0;
            }
        int64_t ysh[2] = { M, N };
        expect(call_ok(&c, 3, in), 2, ysh, want, 1e-5f);
        g_free(want);
    }
}

static void matmul_batched_broadcast(void **state)
{
    (void)state;
    int64_t ash[4] = { 2, 1, 2, 3 }, bsh[3] = { 3, 3, 2 };
    opcall c = { .op = "MatMul" };
    reel_tensor *in[2] = { random_tensor(4, ash, 11), random_tensor(3, bsh, 12) };
    float want[2 * 3 * 2 * 2];
    const float *A = in[0]->data, *B = in[1]->data;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int m = 0; m < 2; m++)
                for (int n = 0; n < 2; n++) {
                    float s = 0;
                    for (int k = 0; k < 3; k++)
                        s += A[(i * 2 + m) * 3 + k] * B[(j * 3 + k) * 2 + n];
                    want[((i * 3 + j) * 2 + m) * 2 + n] = s;
                }
    int64_t ysh[4] = { 2, 3, 2, 2 };
    expect(call_ok(&c, 2, in), 4, ysh, want, 1e-5f);

    // 1-D operands: [3] x [2, 3, 4] -> [2, 4]; [2, 3] x [3] -> [2]
    float v[3] = { 1, 2, 3 }, m23[6] = { 1, 0, 0, 0, 1, 1 };
    int64_t vsh[1] = { 3 }, msh[2] = { 2, 3 };
    reel_tensor *in2[2] = { ftensor(2, msh, m23), ftensor(1, vsh, v) };
    int64_t y2[1] = { 2 };
    float want2[2] = { 1, 5 };
    expect(call_ok(&c, 2, in2), 1, y2, want2, 1e-6f);
}

static void batchnorm_hand(void **state)
{
    (void)state;
    float x[4] = { 1, 2, 3, 4 }, sc[2] = { 2, 1 }, b[2] = { 0, 1 }, mean[2] = { 1, 3 }, var[2] = { 4, 1 };
    int64_t xsh[3] = { 1, 2, 2 }, vsh[1] = { 2 };
    opcall c = { .op = "BatchNormalization" };
    attr_float(&c, "epsilon", 0);
    reel_tensor *in[5] = { ftensor(3, xsh, x), ftensor(1, vsh, sc), ftensor(1, vsh, b), ftensor(1, vsh, mean),
                           ftensor(1, vsh, var) };
    float want[4] = { 0, 1, 1, 2 };
    expect(call_ok(&c, 5, in), 3, xsh, want, 1e-6f);
}

static void pools_hand(void **state)
{
    (void)state;
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + 1);
    int64_t xsh[4] = { 1, 1, 4, 4 };
    static const int64_t k3[2] = { 3, 3 }, s2[2] = { 2, 2 }, p1[4] = { 1, 1, 1, 1 }, k2[2] = { 2, 2 };
    {   // MaxPool 3x3 stride 2 ceil_mode: 4 -> 2 (the last window starts inside)
        opcall c = { .op = "MaxPool" };
        attr_ints(&c, "kernel_shape", 2, k3);
        attr_ints(&c, "strides", 2, s2);
        attr_int(&c, "ceil_mode", 1);
        reel_tensor *in[1] = { ftensor(4, xsh, x) };
        int64_t ysh[4] = { 1, 1, 2, 2 };
        float want[4] = { 11, 12, 15, 16 };
        expect(call_ok(&c, 1, in), 4, ysh, want, 0);
    }
    {   // MaxPool 2x2 dilation 2: windows {1,3,9,11}, ...
        opcall c = { .op = "MaxPool" };
        attr_ints(&c, "kernel_shape", 2, k2);
        attr_ints(&c, "dilations", 2, s2);
        reel_tensor *in[1] = { ftensor(4, xsh, x) };
        int64_t ysh[4] = { 1, 1, 2, 2 };
        float want[4] = { 11, 12, 15, 16 };
        expect(call_ok(&c, 1, in), 4, ysh, want, 0);
    }
    for (int include = 0; include < 2; include++) {
        opcall c = { .op = "AveragePool" };
        attr_ints(&c, "kernel_shape", 2, k3);
        attr_ints(&c, "strides", 2, s2);
        attr_ints(&c, "pads", 4, p1);
        attr_int(&c, "count_include_pad", include);
        reel_tensor *in[1] = { ftensor(4, xsh, x) };
        int64_t ysh[4] = { 1, 1, 2, 2 };
        // top-left window covers 1,2,5,6 (4 values of 9 positions)
        float want0[4] = { 3.5f, 5, 9.5f, 11 };
        float want1[4] = { 14 / 9.f, 30 / 9.f, 57 / 9.f, 99 / 9.f };
        expect(call_ok(&c, 1, in), 4, ysh, include ? want1 : want0, 1e-6f);
    }
    {
        opcall c = { .op = "GlobalAveragePool" };
        reel_tensor *in[1] = { ftensor(4, xsh, x) };
        int64_t ysh[4] = { 1, 1, 1, 1 };
        float want[1] = { 8.5f };
        expect(call_ok(&c, 1, in), 4, ysh, want, 1e-6f);
    }
}

static void resize_modes(void **state)
{
    (void)state;
    float x[4] = { 1, 2, 3, 4 };
    int64_t xsh[4] = { 1, 1, 1, 4 }, ssh[1] = { 4 };
    float up[4] = { 1, 1, 1, 1.5f }; // 4 -> 6
    const char *modes[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
    // asymmetric: x_orig = o / 1.5 = 0, .667, 1.333, 2, 2.667, 3.333
    float want[4][6] = { { 1, 2, 2, 3, 4, 4 }, { 1, 2, 2, 3, 4, 4 }, { 1, 1, 2, 3, 3, 4 }, { 1, 2, 3, 3, 4, 4 } };
    for (int m = 0; m < 4; m++) {
        opcall c = { .op = "Resize" };
        attr_str(&c, "nearest_mode", modes[m]);
        attr_str(&c, "coordinate_transformation_mode", "asymmetric");
        reel_tensor *in[3] = { ftensor(4, xsh, x), NULL, ftensor(1, ssh, up) };
        int64_t ysh[4] = { 1, 1, 1, 6 };
        expect(call_ok(&c, 3, in), 4, ysh, want[m], 0);
    }
    {   // half_pixel rounding at exactly .5: 2 -> 4 nearest: x_orig = -0.25, 0.25, 0.75, 1.25
        float two[2] = { 5, 7 }, s2[4] = { 1, 1, 1, 2 };
        int64_t tsh[4] = { 1, 1, 1, 2 };
        opcall c = { .op = "Resize" };
        reel_tensor *in[3] = { ftensor(4, tsh, two), NULL, ftensor(1, ssh, s2) };
        int64_t ysh[4] = { 1, 1, 1, 4 };
        float w[4] = { 5, 5, 7, 7 };
        expect(call_ok(&c, 3, in), 4, ysh, w, 0);
    }
    const char *ctms[] = { "align_corners", "half_pixel", "asymmetric", "pytorch_half_pixel" };
    float lin[4][9] = {
        { 1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4 },
        // half_pixel 2 -> 3: x_orig = -1/6, 0.5, 7/6 (clamped at the edges)
        { 1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4 },
        // asymmetric: 0, 2/3, 4/3
        { 1, 1 + 2 / 3.f, 2, 1 + 4 / 3.f, 1 + 4 / 3.f + 2 / 3.f, 3 + 1, 3, 3 + 2 / 3.f, 4 },
        { 1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4 },
    };
    for (int m = 0; m < 4; m++) {
        opcall c = { .op = "Resize" };
        attr_str(&c, "mode", "linear");
        attr_str(&c, "coordinate_transformation_mode", ctms[m]);
        int64_t qsh[4] = { 1, 1, 2, 2 }, sizes[4] = { 1, 1, 3, 3 };
        reel_tensor *in[4] = { ftensor(4, qsh, x), NULL, NULL, tensor(REEL_DTYPE_INT64, 1, ssh, sizes) };
        int64_t ysh[4] = { 1, 1, 3, 3 };
        if (m == 2) { // asymmetric: rows 0, 2/3, 4/3 -> 1, 2+1/3, 3 (clamped)
            float w[9] = { 1, 1 + 2 / 3.f, 2, 1 + 4 / 3.f, 1 + 4 / 3.f + 2 / 3.f, 2 + 4 / 3.f, 3, 3 + 2 / 3.f, 4 };
            expect(call_ok(&c, 4, in), 4, ysh, w, 1e-5f);
        } else {
            expect(call_ok(&c, 4, in), 4, ysh, lin[m], 1e-5f);
        }
    }
    {   // Upsample (opset 9): nearest, scale 3 repeats
        float two[2] = { 5, 7 }, s3[4] = { 1, 1, 1, 3 };
        int64_t tsh[4] = { 1, 1, 1, 2 };
        opcall c = { .op = "Upsample", .opset = 9 };
        reel_tensor *in[2] = { ftensor(4, tsh, two), ftensor(1, ssh, s3) };
        int64_t ysh[4] = { 1, 1, 1, 6 };
        float w[6] = { 5, 5, 5, 7, 7, 7 };
        expect(call_ok(&c, 2, in), 4, ysh, w, 0);
    }
    {   // An FPN's 2x nearest upsample over five planes (split over the
        // workers): each output the input at (row / 2, column / 2).
        enum { C = 5, H = 7, W = 9 };
        float xs[C * H * W], want[C * 2 * H * 2 * W], s2[4] = { 1, 1, 2, 2 };
        for (int i = 0; i < C * H * W; i++)
            xs[i] = (float)i;
        for (int c = 0; c < C; c++)
            for (int y = 0; y < 2 * H; y++)
                for (int x = 0; x < 2 * W; x++)
                    want[(c * 2 * H + y) * 2 * W + x] = xs[(c * H + y / 2) * W + x / 2];
        opcall c = { .op = "Resize" };
        attr_str(&c, "mode", "nearest");
        attr_str(&c, "coordinate_transformation_mode", "asymmetric");
        attr_str(&c, "nearest_mode", "floor");
        int64_t xsh5[4] = { 1, C, H, W }, ysh[4] = { 1, C, 2 * H, 2 * W };
        reel_tensor *in[3] = { ftensor(4, xsh5, xs), NULL, ftensor(1, ssh, s2) };
        expect(call_ok(&c, 3, in), 4, ysh, want, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_hand_asymmetric),
        cmocka_unit_test(conv_random),
        cmocka_unit_test(conv_stem),
        cmocka_unit_test(conv_same_and_fused),
        cmocka_unit_test(conv_bad),
        cmocka_unit_test(convtranspose_hand),
        cmocka_unit_test(gemm_broadcast),
        cmocka_unit_test(gemm_random),
        cmocka_unit_test(matmul_batched_broadcast),
        cmocka_unit_test(batchnorm_hand),
        cmocka_unit_test(pools_hand),
        cmocka_unit_test(resize_modes),
    };
    pool = reel_workers_create(2);
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    reel_workers_destroy(&pool);
    return reel_test_verdict(failed);
}

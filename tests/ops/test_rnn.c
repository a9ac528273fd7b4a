// The recurrent, linear algebra and sampling kernels (models/cpu/rnn.c,
// linalg.c, roi.c) where ONNX's cases do not reach: bidirectional and
// reverse runs with sequence lengths, layout 1, clip, peepholes, GRU's
// linear_before_reset, chosen activations (against a naive double
// reference); Einsum's ellipsis broadcasting, implicit outputs, traces and
// integers; Det of singular and batched matrices; GridSample's padding,
// rounding, volumes and lines; RoiAlign's max; MaxUnpool's padded output; empty tensors and
// the refused attributes.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/cpu/blas.h"
#include "tests/ops/op_harness.h"

// The call fails in infer with a message naming the node and `what`.
static void expect_refused(const op_call *c, int n_in, reel_tensor **in, const char *what)
{
    reel_tensor *out[OP_MAX_IO];
    int rc = op_run(c, n_in, in, out);
    assert_true(rc == REEL_EINVAL || rc == REEL_EUNSUPPORTED);
    const char *msg = op_message();
    if (!strstr(msg, "node 'n'") || !strstr(msg, what))
        fail_msg("%s: message '%s' does not name the node and '%s'", c->op, msg, what);
}

static void expect_close(const reel_tensor *t, const double *want, int64_t count, double tol)
{
    assert_int_equal(t->nbytes, (size_t)count * sizeof(float));
    const float *got = t->data;
    for (int64_t i = 0; i < count; i++)
        if (!(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i]))))
            fail_msg("element %" G_GINT64_FORMAT ": %g, expected %g", i, got[i], want[i]);
}

static void free_all(reel_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        reel_tensor_free(&t[i]);
}

// ---- the recurrent reference, layout 0, in double

enum { REF_RNN, REF_GRU, REF_LSTM };

typedef struct ref_io {
    int cell, D;
    bool reverse, lbr;
    int64_t T, B, I, H;
    const float *X, *W, *R, *Bias, *h0, *c0, *P; // optional ones NULL
    const int32_t *lens;
    double clip;                                  // 0: none
    double leaky[2];                              // RNN: > 0 uses LeakyRelu of that alpha per direction
    double *Y, *Yh, *Yc;
} ref_io;

static double sigm(double x)
{
    return 1 / (1 + exp(-x));
}

static double clipped(const ref_io *r, double x)
{
    return r->clip > 0 ? fmin(fmax(x, -r->clip), r->clip) : x;
}

// Row k of matrix M [rows, cols] times v.
static double dot_row(const float *M, int64_t k, int64_t cols, const double *v)
{
    double s = 0;
    for (int64_t j = 0; j < cols; j++)
        s += M[k * cols + j] * v[j];
    return s;
}

static void reference(const ref_io *r)
{
    int64_t T = r->T, B = r->B, I = r->I, H = r->H;
    int G = r->cell == REF_LSTM ? 4 : r->cell == REF_GRU ? 3 : 1;
    memset(r->Y, 0, sizeof(double) * (size_t)(T * r->D * B * H));
    double h[64], c[64], x[64], rh[64], gate[4][64];
    for (int d = 0; d < r->D; d++)
        for (int64_t b = 0; b < B; b++) {
            const float *W = r->W + d * G * H * I, *R = r->R + d * G * H * H;
            const float *Wb = r->Bias ? r->Bias + d * 2 * G * H : NULL, *Rb = Wb ? Wb + G * H : NULL;
            for (int64_t k = 0; k < H; k++) {
                h[k] = r->h0 ? r->h0[(d * B + b) * H + k] : 0;
                c[k] = r->c0 ? r->c0[(d * B + b) * H + k] : 0;
            }
            int64_t L = r->lens ? r->lens[b] : T;
            for (int64_t s = 0; s < L; s++) {
                int64_t t = r->reverse || d == 1 ? L - 1 - s : s;
                for (int64_t j = 0; j < I; j++)
                    x[j] = r->X[(t * B + b) * I + j];
                for (int gi = 0; gi < G; gi++)
                    for (int64_t k = 0; k < H; k++) {
                        int64_t row = gi * H + k;
                        gate[gi][k] = dot_row(W, row, I, x) + (Wb ? Wb[row] : 0);
                        if (!(r->cell == REF_GRU && gi == 2))
                            gate[gi][k] += dot_row(R, row, H, h) + (Rb ? Rb[row] : 0);
                    }
                if (r->cell == REF_RNN)
                    for (int64_t k = 0; k < H; k++) {
                        double v = clipped(r, gate[0][k]);
                        h[k] = r->leaky[d] > 0 ? (v >= 0 ? v : r->leaky[d] * v) : tanh(v);
                    }
                else if (r->cell == REF_GRU) {
                    double z[64], rr[64];
                    for (int64_t k = 0; k < H; k++) {
                        z[k] = sigm(clipped(r, gate[0][k]));
                        rr[k] = sigm(clipped(r, gate[1][k]));
                        rh[k] = rr[k] * h[k];
                    }
                    for (int64_t k = 0; k < H; k++) {
                        double rb = Rb ? Rb[2 * H + k] : 0;
                        double lin = r->lbr ? rr[k] * (dot_row(R, 2 * H + k, H, h) + rb)
                                            : dot_row(R, 2 * H + k, H, rh) + rb;
                        gate[2][k] = tanh(clipped(r, gate[2][k] + lin));
                    }
                    for (int64_t k = 0; k < H; k++)
                        h[k] = (1 - z[k]) * gate[2][k] + z[k] * h[k];
                } else
                    for (int64_t k = 0; k < H; k++) {
                        const float *P = r->P ? r->P + d * 3 * H : NULL;
                        double i = sigm(clipped(r, gate[0][k] + (P ? P[k] * c[k] : 0)));
                        double f = sigm(clipped(r, gate[2][k] + (P ? P[2 * H + k] * c[k] : 0)));
                        double cc = tanh(clipped(r, gate[3][k]));
                        c[k] = f * c[k] + i * cc;
                        double o = sigm(clipped(r, gate[1][k] + (P ? P[H + k] * c[k] : 0)));
                        h[k] = o * tanh(c[k]);
                    }
                for (int64_t k = 0; k < H; k++)
                    r->Y[((t * r->D + d) * B + b) * H + k] = h[k];
            }
            for (int64_t k = 0; k < H; k++) {
                r->Yh[(d * B + b) * H + k] = h[k];
                if (r->Yc)
                    r->Yc[(d * B + b) * H + k] = c[k];
            }
        }
}

// Swaps the first two dims of a float tensor [a, b, rest...] (layout 0 <-> 1).
static reel_tensor *swap01(const reel_tensor *t)
{
    int64_t s[REEL_TENSOR_MAX_RANK];
    memcpy(s, t->shape, sizeof s);
    s[0] = t->shape[1], s[1] = t->shape[0];
    reel_tensor *o = reel_tensor_new(REEL_DTYPE_FLOAT32, t->rank, s);
    int64_t a = t->shape[0], b = t->shape[1], rest = reel_tensor_count(t->rank - 2, t->shape + 2);
    const float *src = t->data;
    float *dst = o->data;
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++)
            memcpy(dst + (j * a + i) * rest, src + (i * b + j) * rest, sizeof(float) * (size_t)rest);
    return o;
}

static void swap01_double(const double *src, double *dst, int64_t a, int64_t b, int64_t rest)
{
    for (int64_t i = 0; i < a; i++)
        for (int64_t j = 0; j < b; j++)
            memcpy(dst + (j * a + i) * rest, src + (i * b + j) * rest, sizeof(double) * (size_t)rest);
}

static void lstm_bidirectional_lengths_peepholes_clip(void **state)
{
    (void)state;
    const int64_t T = 5, B = 3, I = 4, H = 6, D = 2;
    const int64_t xs[] = { T, B, I }, ws[] = { D, 4 * H, I }, rs[] = { D, 4 * H, H }, bs[] = { D, 8 * H },
                  hs[] = { D, B, H }, ps[] = { D, 3 * H }, ls[] = { B };
    const int32_t lens[] = { 5, 2, 3 };
    reel_tensor *in[8] = { op_random(3, xs, 1, -1, 1), op_random(3, ws, 2, -1, 1),
                           op_random(3, rs, 3, -1, 1), op_random(2, bs, 4, -1, 1),
                           op_tensor(REEL_DTYPE_INT32, 1, ls, lens), op_random(3, hs, 5, -1, 1),
                           op_random(3, hs, 6, -1, 1), op_random(2, ps, 7, -1, 1) };
    double Y[5 * 2 * 3 * 6], Yh[2 * 3 * 6], Yc[2 * 3 * 6];
    ref_io r = { .cell = REF_LSTM, .D = 2, .T = T, .B = B, .I = I, .H = H, .X = in[0]->data, .W = in[1]->data,
                 .R = in[2]->data, .Bias = in[3]->data, .lens = lens, .h0 = in[5]->data, .c0 = in[6]->data,
                 .P = in[7]->data, .clip = 1.5, .Y = Y, .Yh = Yh, .Yc = Yc };
    reference(&r);
    op_call c = { .op = "LSTM", .n_out = 3 };
    op_attr_str(&c, "direction", "bidirectional");
    op_attr_int(&c, "hidden_size", H);
    op_attr_float(&c, "clip", 1.5f);
    reel_tensor *out[3];
    assert_int_equal(op_run(&c, 8, in, out), 0);
    assert_int_equal(out[0]->rank, 4);
    assert_int_equal(out[0]->shape[1], 2);
    expect_close(out[0], Y, T * D * B * H, 1e-5);
    expect_close(out[1], Yh, D * B * H, 1e-5);
    expect_close(out[2], Yc, D * B * H, 1e-5);
    free_all(out, 3);
}

static void gru_reverse_layout1_both_resets(void **state)
{
    (void)state;
    const int64_t T = 4, B = 2, I = 3, H = 5;
    const int64_t xs[] = { T, B, I }, ws[] = { 1, 3 * H, I }, rs[] = { 1, 3 * H, H }, bs[] = { 1, 6 * H },
                  hs[] = { 1, B, H }, ls[] = { B };
    const int32_t lens[] = { 3, 4 };
    for (int lbr = 0; lbr <= 1; lbr++) {
        reel_tensor *x = op_random(3, xs, 11, -2, 2), *h0 = op_random(3, hs, 15, -1, 1);
        reel_tensor *in[6] = { swap01(x), op_random(3, ws, 12, -1, 1), op_random(3, rs, 13, -1, 1),
                               op_random(2, bs, 14, -1, 1), op_tensor(REEL_DTYPE_INT32, 1, ls, lens),
                               swap01(h0) };
        double Y[4 * 2 * 5], Yh[2 * 5], Y1[4 * 2 * 5], Yh1[2 * 5];
        ref_io r = { .cell = REF_GRU, .D = 1, .reverse = true, .lbr = lbr, .T = T, .B = B, .I = I, .H = H,
                     .X = x->data, .W = in[1]->data, .R = in[2]->data, .Bias = in[3]->data, .lens = lens,
                     .h0 = h0->data, .Y = Y, .Yh = Yh };
        reference(&r);
        // Layout 1: Y [B, T, D, H], Y_h [B, D, H].
        swap01_double(Y, Y1, T, B, H);
        swap01_double(Yh, Yh1, 1, B, H);
        op_call c = { .op = "GRU", .n_out = 2 };
        op_attr_str(&c, "direction", "reverse");
        op_attr_int(&c, "layout", 1);
        op_attr_int(&c, "linear_before_reset", lbr);
        reel_tensor *out[2];
        assert_int_equal(op_run(&c, 6, in, out), 0);
        assert_int_equal(out[0]->shape[0], B);
        assert_int_equal(out[0]->shape[1], T);
        expect_close(out[0], Y1, T * B * H, 1e-5);
        expect_close(out[1], Yh1, B * H, 1e-5);
        free_all(out, 2);
        reel_tensor_free(&x);
        reel_tensor_free(&h0);
    }
}

// Both directions at once (two workers), with the reset's second GEMM.
static void gru_bidirectional_lengths(void **state)
{
    (void)state;
    const int64_t T = 6, B = 3, I = 2, H = 7;
    const int64_t xs[] = { T, B, I }, ws[] = { 2, 3 * H, I }, rs[] = { 2, 3 * H, H }, bs[] = { 2, 6 * H },
                  ls[] = { B };
    const int32_t lens[] = { 6, 1, 4 };
    reel_tensor *in[5] = { op_random(3, xs, 61, -2, 2), op_random(3, ws, 62, -1, 1),
                           op_random(3, rs, 63, -1, 1), op_random(2, bs, 64, -1, 1),
                           op_tensor(REEL_DTYPE_INT32, 1, ls, lens) };
    double Y[6 * 2 * 3 * 7], Yh[2 * 3 * 7];
    ref_io r = { .cell = REF_GRU, .D = 2, .T = T, .B = B, .I = I, .H = H, .X = in[0]->data, .W = in[1]->data,
                 .R = in[2]->data, .Bias = in[3]->data, .lens = lens, .Y = Y, .Yh = Yh };
    reference(&r);
    op_call c = { .op = "GRU", .n_out = 2 };
    op_attr_str(&c, "direction", "bidirectional");
    reel_tensor *out[2];
    assert_int_equal(op_run(&c, 5, in, out), 0);
    expect_close(out[0], Y, T * 2 * B * H, 1e-5);
    expect_close(out[1], Yh, 2 * B * H, 1e-5);
    free_all(out, 2);
}

static void rnn_activations_and_omitted_y(void **state)
{
    (void)state;
    const int64_t T = 3, B = 2, I = 3, H = 4;
    const int64_t xs[] = { T, B, I }, ws[] = { 2, H, I }, rs[] = { 2, H, H };
    reel_tensor *in[3] = { op_random(3, xs, 21, -2, 2), op_random(3, ws, 22, -1, 1),
                           op_random(3, rs, 23, -1, 1) };
    double Y[3 * 2 * 2 * 4], Yh[2 * 2 * 4];
    ref_io r = { .cell = REF_RNN, .D = 2, .T = T, .B = B, .I = I, .H = H, .X = in[0]->data, .W = in[1]->data,
                 .R = in[2]->data, .leaky = { 0.3, 0 }, .Y = Y, .Yh = Yh };
    reference(&r);
    op_call c = { .op = "RNN", .n_out = 2 };
    char *acts[] = { "LeakyRelu", "tanh", NULL }; // names are matched without case
    float alpha[] = { 0.3f };
    op_attr_str(&c, "direction", "bidirectional");
    op_attr_strs(&c, "activations", acts, 2);
    op_attr_floats(&c, "activation_alpha", alpha, 1);
    reel_tensor *out[2];
    c.omit = (const bool[]){ true, false };
    assert_int_equal(op_run(&c, 3, in, out), 0);
    assert_null(out[0]);
    expect_close(out[1], Yh, 2 * B * H, 1e-5);
    free_all(out, 2);

    // One list for both directions: its alpha for both too.
    reel_tensor *in2[3] = { op_random(3, xs, 21, -2, 2), op_random(3, ws, 22, -1, 1),
                            op_random(3, rs, 23, -1, 1) };
    r.X = in2[0]->data, r.W = in2[1]->data, r.R = in2[2]->data; // the first inputs went with their graph
    r.leaky[1] = 0.3;
    reference(&r);
    op_call one = { .op = "RNN", .n_out = 2 };
    op_attr_str(&one, "direction", "bidirectional");
    op_attr_strs(&one, "activations", acts, 1);
    op_attr_floats(&one, "activation_alpha", alpha, 1);
    assert_int_equal(op_run(&one, 3, in2, out), 0);
    expect_close(out[0], Y, T * 2 * B * H, 1e-5);
    expect_close(out[1], Yh, 2 * B * H, 1e-5);
    free_all(out, 2);
}

// No batch: empty outputs. No steps: Y empty, Y_h the initial state.
static void recurrent_empty(void **state)
{
    (void)state;
    const int64_t xs[] = { 3, 0, 2 }, ws[] = { 1, 8, 2 }, rs[] = { 1, 8, 2 };
    reel_tensor *in[3] = { op_random(3, xs, 1, 0, 1), op_random(3, ws, 2, 0, 1),
                           op_random(3, rs, 3, 0, 1) };
    op_call c = { .op = "LSTM", .n_out = 3 };
    reel_tensor *out[3];
    assert_int_equal(op_run(&c, 3, in, out), 0);
    assert_int_equal(out[0]->nbytes, 0);
    assert_int_equal(out[2]->shape[1], 0);
    free_all(out, 3);

    const int64_t x0[] = { 0, 2, 2 }, hs[] = { 1, 2, 2 };
    reel_tensor *in2[6] = { op_random(3, x0, 1, 0, 1), op_random(3, ws, 2, 0, 1),
                            op_random(3, rs, 3, 0, 1), NULL, NULL, op_random(3, hs, 4, 0, 1) };
    double h0[4];
    for (int i = 0; i < 4; i++)
        h0[i] = ((float *)in2[5]->data)[i];
    assert_int_equal(op_run(&c, 6, in2, out), 0);
    assert_int_equal(out[0]->shape[0], 0);
    expect_close(out[1], h0, 4, 0);
    free_all(out, 3);
}

static void recurrent_refusals(void **state)
{
    (void)state;
    const int64_t xs[] = { 2, 1, 3 }, ws[] = { 1, 12, 3 }, rs[] = { 1, 12, 4 }, ls[] = { 1 };
    struct { const char *op, *attr, *value, *what; } strs[] = {
        { "LSTM", "direction", "sideways", "'direction' = 'sideways'" },
        { "GRU", "direction", "both", "'direction' = 'both'" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(strs); i++) {
        const int64_t w3[] = { 1, 9, 3 }, r3[] = { 1, 9, 3 };
        bool gru = strcmp(strs[i].op, "GRU") == 0;
        reel_tensor *in[3] = { op_random(3, xs, 1, 0, 1), op_random(3, gru ? w3 : ws, 2, 0, 1),
                               op_random(3, gru ? r3 : rs, 3, 0, 1) };
        op_call c = { .op = strs[i].op, .n_out = 2 };
        op_attr_str(&c, strs[i].attr, strs[i].value);
        expect_refused(&c, 3, in, strs[i].what);
    }
    struct { const char *attr; int64_t v; const char *what; } ints[] = {
        { "layout", 2, "'layout' = 2" },
        { "input_forget", 3, "'input_forget' = 3" },
        { "hidden_size", 5, "hidden_size 5" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(ints); i++) {
        reel_tensor *in[3] = { op_random(3, xs, 1, 0, 1), op_random(3, ws, 2, 0, 1),
                               op_random(3, rs, 3, 0, 1) };
        op_call c = { .op = "LSTM", .n_out = 2 };
        op_attr_int(&c, ints[i].attr, ints[i].v);
        expect_refused(&c, 3, in, ints[i].what);
    }
    {
        reel_tensor *in[3] = { op_random(3, xs, 1, 0, 1), op_random(3, ws, 2, 0, 1),
                               op_random(3, rs, 3, 0, 1) };
        op_call c = { .op = "LSTM", .n_out = 2 };
        char *acts[] = { "Sigmoid", "Swish", "Tanh", NULL };
        op_attr_strs(&c, "activations", acts, 3);
        expect_refused(&c, 3, in, "activation 'Swish'");
    }
    {
        reel_tensor *in[3] = { op_random(3, xs, 1, 0, 1), op_random(3, ws, 2, 0, 1),
                               op_random(3, rs, 3, 0, 1) };
        op_call c = { .op = "LSTM", .n_out = 2 };
        char *acts[] = { "Sigmoid", "Tanh", NULL };
        op_attr_strs(&c, "activations", acts, 2);
        expect_refused(&c, 3, in, "'activations' has 2 entries");
    }
    {
        const float lens[] = { 1 };
        reel_tensor *in[5] = { op_random(3, xs, 1, 0, 1), op_random(3, ws, 2, 0, 1),
                               op_random(3, rs, 3, 0, 1), NULL, op_tensor(REEL_DTYPE_FLOAT32, 1, ls, lens) };
        op_call c = { .op = "LSTM", .n_out = 2 };
        expect_refused(&c, 5, in, "sequence_lens: only int32");
    }
    {
        const int64_t wbad[] = { 1, 11, 3 };
        reel_tensor *in[3] = { op_random(3, xs, 1, 0, 1), op_random(3, wbad, 2, 0, 1),
                               op_random(3, rs, 3, 0, 1) };
        op_call c = { .op = "LSTM", .n_out = 2 };
        expect_refused(&c, 3, in, "input W: dim 1 is 11, 16 expected");
    }
    { // a sequence longer than X: refused when it runs
        const int32_t lens[] = { 3 };
        reel_tensor *in[5] = { op_random(3, xs, 1, 0, 1), op_random(3, ws, 2, 0, 1),
                               op_random(3, rs, 3, 0, 1), NULL, op_tensor(REEL_DTYPE_INT32, 1, ls, lens) };
        op_call c = { .op = "LSTM", .n_out = 2 };
        reel_tensor *out[2];
        assert_int_equal(op_run(&c, 5, in, out), REEL_EINVAL);
    }
}

// ---- Einsum, Det

static void einsum_forms(void **state)
{
    (void)state;
    // Ellipsis dims broadcast: [2,1,3,4] x [5,4,2] -> [2,5,3,2].
    const int64_t as[] = { 2, 1, 3, 4 }, bs[] = { 5, 4, 2 };
    reel_tensor *in[2] = { op_random(4, as, 31, -1, 1), op_random(3, bs, 32, -1, 1) };
    const float *A = in[0]->data, *Bm = in[1]->data;
    double want[2 * 5 * 3 * 2];
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 5; q++)
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 2; k++) {
                    double s = 0;
                    for (int j = 0; j < 4; j++)
                        s += A[(p * 3 + i) * 4 + j] * Bm[(q * 4 + j) * 2 + k];
                    want[((p * 5 + q) * 3 + i) * 2 + k] = s;
                }
    op_call c = { .op = "Einsum", .n_out = 1 };
    op_attr_str(&c, "equation", "...ij, ...jk -> ...ik");
    reel_tensor *out[1];
    assert_int_equal(op_run(&c, 2, in, out), 0);
    assert_int_equal(out[0]->rank, 4);
    assert_int_equal(out[0]->shape[1], 5);
    expect_close(out[0], want, 60, 1e-6);
    reel_tensor_free(&out[0]);

    // Implicit output: the letters used once, in order ("ba" is a transpose).
    const int64_t ms[] = { 2, 3 };
    const float m[] = { 1, 2, 3, 4, 5, 6 };
    reel_tensor *in2[1] = { op_tensor(REEL_DTYPE_FLOAT32, 2, ms, m) };
    op_call t = { .op = "Einsum", .n_out = 1 };
    op_attr_str(&t, "equation", "ba");
    assert_int_equal(op_run(&t, 1, in2, out), 0);
    const double tw[] = { 1, 4, 2, 5, 3, 6 };
    assert_int_equal(out[0]->shape[0], 3);
    expect_close(out[0], tw, 6, 0);
    reel_tensor_free(&out[0]);

    // A trace (rank 0) and a diagonal, in int64.
    const int64_t ss[] = { 3, 3 };
    const int64_t sq[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
    const char *eqs[] = { "ii", "ii->i" };
    const int64_t wants[][3] = { { 15 }, { 1, 5, 9 } };
    for (int e = 0; e < 2; e++) {
        reel_tensor *in3[1] = { op_tensor(REEL_DTYPE_INT64, 2, ss, sq) };
        op_call d = { .op = "Einsum", .n_out = 1 };
        op_attr_str(&d, "equation", eqs[e]);
        assert_int_equal(op_run(&d, 1, in3, out), 0);
        assert_int_equal(out[0]->rank, e);
        assert_int_equal(out[0]->dtype, REEL_DTYPE_INT64);
        assert_memory_equal(out[0]->data, wants[e], out[0]->nbytes);
        reel_tensor_free(&out[0]);
    }

    // An empty contraction: sums of nothing are 0.
    const int64_t es[] = { 2, 0 }, fs[] = { 0, 3 };
    reel_tensor *in4[2] = { op_random(2, es, 1, 0, 1), op_random(2, fs, 2, 0, 1) };
    op_call z = { .op = "Einsum", .n_out = 1 };
    op_attr_str(&z, "equation", "ij,jk->ik");
    assert_int_equal(op_run(&z, 2, in4, out), 0);
    const double zeros[6] = { 0 };
    expect_close(out[0], zeros, 6, 0);
    reel_tensor_free(&out[0]);

    struct { const char *eq, *what; } bad[] = {
        { "ij,kj->ik", "label 'j' has sizes 4 and 2" },
        { "ij,jk->iz", "output label 'z' is in no input" },
        { "ij,j#->ik", "term 1" },
        { "ij->", "for 2 inputs" },
        { "i...,...j->ij", "needs '...'" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        const int64_t a2[] = { 3, 4 }, b2[] = { 4, 2 };
        reel_tensor *in5[2] = { op_random(2, a2, 1, 0, 1), op_random(2, b2, 2, 0, 1) };
        op_call e = { .op = "Einsum", .n_out = 1 };
        op_attr_str(&e, "equation", bad[i].eq);
        expect_refused(&e, 2, in5, bad[i].what);
    }
    const int64_t us[] = { 2 };
    const uint8_t u8[] = { 1, 2 };
    reel_tensor *in6[1] = { op_tensor(REEL_DTYPE_UINT8, 1, us, u8) };
    op_call u = { .op = "Einsum", .n_out = 1 };
    op_attr_str(&u, "equation", "i");
    expect_refused(&u, 1, in6, "uint8 tensors are not supported");
}

static reel_tensor *as_double(const reel_tensor *t)
{
    reel_tensor *d = reel_tensor_new(REEL_DTYPE_FLOAT64, t->rank, t->shape);
    for (size_t i = 0; i < t->nbytes / 4; i++)
        ((double *)d->data)[i] = ((const float *)t->data)[i];
    return d;
}

// Contractions the float32 GEMM path takes (batch labels, several K labels,
// outputs in other orders), against the general loop in float64.
static void einsum_gemm_path(void **state)
{
    (void)state;
    struct { const char *eq; int ra; int64_t a[4]; int rb; int64_t b[4]; } cases[] = {
        { "bhqd,bhkd->bhqk", 4, { 2, 3, 5, 4 }, 4, { 2, 3, 6, 4 } },
        { "ij,jk->ki", 2, { 3, 4 }, 2, { 4, 5 } },
        { "abc,cbd->da", 3, { 2, 3, 4 }, 3, { 4, 3, 5 } },
        { "bij,bjk", 3, { 7, 2, 3 }, 3, { 7, 3, 2 } },
        { "i,j->ij", 1, { 3 }, 1, { 4 } },
        { "...ij,...jk", 3, { 2, 3, 4 }, 3, { 2, 4, 3 } },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        reel_tensor *a = op_random(cases[i].ra, cases[i].a, 40 + (unsigned)i, -1, 1);
        reel_tensor *b = op_random(cases[i].rb, cases[i].b, 50 + (unsigned)i, -1, 1);
        reel_tensor *in[2] = { a, b }, *in64[2] = { as_double(a), as_double(b) }, *out[1], *ref[1];
        op_call c = { .op = "Einsum", .n_out = 1 };
        op_attr_str(&c, "equation", cases[i].eq);
        assert_int_equal(op_run(&c, 2, in64, ref), 0);
        assert_int_equal(op_run(&c, 2, in, out), 0);
        assert_int_equal(out[0]->rank, ref[0]->rank);
        assert_memory_equal(out[0]->shape, ref[0]->shape, sizeof(int64_t) * (size_t)out[0]->rank);
        expect_close(out[0], ref[0]->data, (int64_t)(ref[0]->nbytes / 8), 1e-5);
        reel_tensor_free(&out[0]);
        reel_tensor_free(&ref[0]);
    }
}

static void det_forms(void **state)
{
    (void)state;
    // A 3x3 needing a row swap and a singular one.
    const int64_t s3[] = { 2, 3, 3 };
    const float m[] = { 0, 2, 1, 1, 1, 1, 2, 0, 3, 1, 2, 3, 2, 4, 6, 0, 1, 1 };
    reel_tensor *in[1] = { op_tensor(REEL_DTYPE_FLOAT32, 3, s3, m) };
    op_call c = { .op = "Det", .n_out = 1 };
    reel_tensor *out[1];
    assert_int_equal(op_run(&c, 1, in, out), 0);
    const double want[] = { -4, 0 };
    assert_int_equal(out[0]->rank, 1);
    expect_close(out[0], want, 2, 1e-6);
    reel_tensor_free(&out[0]);

    const int64_t s0[] = { 0, 0 }; // the empty matrix's determinant is 1
    reel_tensor *in0[1] = { reel_tensor_new(REEL_DTYPE_FLOAT32, 2, s0) };
    assert_int_equal(op_run(&c, 1, in0, out), 0);
    const double one[] = { 1 };
    expect_close(out[0], one, 1, 0);
    reel_tensor_free(&out[0]);

    const int64_t s23[] = { 2, 3 };
    reel_tensor *in2[1] = { op_random(2, s23, 1, 0, 1) };
    expect_refused(&c, 1, in2, "not square");
}

// ---- GridSample, RoiAlign

static float grid_one(op_call *c, const float *img, int64_t h, int64_t w, float gx, float gy)
{
    const int64_t xs[] = { 1, 1, h, w }, gs[] = { 1, 1, 1, 2 };
    const float g[] = { gx, gy };
    reel_tensor *in[2] = { op_tensor(REEL_DTYPE_FLOAT32, 4, xs, img), op_tensor(REEL_DTYPE_FLOAT32, 4, gs, g) };
    reel_tensor *out[1];
    assert_int_equal(op_run(c, 2, in, out), 0);
    float v = ((float *)out[0]->data)[0];
    reel_tensor_free(&out[0]);
    return v;
}

static void gridsample_padding_and_rounding(void **state)
{
    (void)state;
    const float img[] = { 1, 2, 3, 4 };
    op_call lin = { .op = "GridSample", .n_out = 1, .opset = 16 };
    op_attr_int(&lin, "align_corners", 1);
    assert_float_equal(grid_one(&lin, img, 2, 2, 0, 0), 2.5f, 1e-6f);
    assert_float_equal(grid_one(&lin, img, 2, 2, 1, 1), 4.0f, 1e-6f);
    assert_float_equal(grid_one(&lin, img, 2, 2, 3, -1), 0.0f, 1e-6f); // zeros outside

    // Reflection: x = 1.25 pixels mirrors to 0.75 on row 0.
    op_call refl = { .op = "GridSample", .n_out = 1, .opset = 16 };
    op_attr_int(&refl, "align_corners", 1);
    op_attr_str(&refl, "padding_mode", "reflection");
    assert_float_equal(grid_one(&refl, img, 2, 2, 1.5f, -1), 1.75f, 1e-6f);

    // Border: clamped to the last column.
    op_call border = { .op = "GridSample", .n_out = 1, .opset = 16 };
    op_attr_str(&border, "padding_mode", "border");
    assert_float_equal(grid_one(&border, img, 2, 2, 3, -1), 2.0f, 1e-6f);

    // Nearest rounds halves to even: pixel 0.5 is pixel 0, 1.5 is 2 (then border 1).
    op_call near = { .op = "GridSample", .n_out = 1, .opset = 16 };
    op_attr_str(&near, "mode", "nearest");
    assert_float_equal(grid_one(&near, img, 2, 2, 0, 0), 1.0f, 0);
    op_attr_str(&near, "padding_mode", "border");
    assert_float_equal(grid_one(&near, img, 2, 2, 1, 0), 2.0f, 0);

    // Opset 20's names, and the old ones refused there; cubic on a pixel is that pixel.
    op_call cubic = { .op = "GridSample", .n_out = 1, .opset = 20 };
    op_attr_str(&cubic, "mode", "cubic");
    op_attr_int(&cubic, "align_corners", 1);
    assert_float_equal(grid_one(&cubic, img, 2, 2, -1, -1), 1.0f, 1e-6f);
    const int64_t xs[] = { 1, 1, 2, 2 }, gs[] = { 1, 1, 1, 2 };
    const float g[] = { 0, 0 };
    struct { int opset; const char *attr, *value, *what; } bad[] = {
        { 20, "mode", "bilinear", "'mode' = 'bilinear'" },
        { 16, "mode", "linear", "'mode' = 'linear'" },
        { 16, "padding_mode", "wrap", "'padding_mode' = 'wrap'" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        reel_tensor *in[2] = { op_tensor(REEL_DTYPE_FLOAT32, 4, xs, img), op_tensor(REEL_DTYPE_FLOAT32, 4, gs, g) };
        op_call c = { .op = "GridSample", .n_out = 1, .opset = bad[i].opset };
        op_attr_str(&c, bad[i].attr, bad[i].value);
        expect_refused(&c, 2, in, bad[i].what);
    }
    // Volumes before opset 20, and four spatial dims, refused.
    const int64_t x5[] = { 1, 1, 2, 2, 2 }, g5[] = { 1, 1, 1, 1, 3 };
    reel_tensor *in5[2] = { op_random(5, x5, 1, 0, 1), op_random(5, g5, 2, 0, 1) };
    op_call c5 = { .op = "GridSample", .n_out = 1, .opset = 16 };
    expect_refused(&c5, 2, in5, "rank, 4 to 4");
    const int64_t x6[] = { 1, 1, 2, 2, 2, 2 }, g6[] = { 1, 1, 1, 1, 1, 4 };
    reel_tensor *in6[2] = { op_random(6, x6, 1, 0, 1), op_random(6, g6, 2, 0, 1) };
    op_call c6 = { .op = "GridSample", .n_out = 1, .opset = 20 };
    expect_refused(&c6, 2, in6, "rank, 3 to 5");
}

// Opset 20's other ranks: a volume (Grid's (x, y, z) index W, H, D) and a line.
static float grid_nd(op_call *c, int rank, const int64_t *xs, const float *img, const float *at)
{
    int64_t gs[5] = { 1 };
    for (int a = 1; a < rank - 1; a++)
        gs[a] = 1;
    gs[rank - 1] = rank - 2;
    reel_tensor *in[2] = { op_tensor(REEL_DTYPE_FLOAT32, rank, xs, img), op_tensor(REEL_DTYPE_FLOAT32, rank, gs, at) };
    reel_tensor *out[1];
    assert_int_equal(op_run(c, 2, in, out), 0);
    assert_int_equal(out[0]->rank, rank);
    float v = ((float *)out[0]->data)[0];
    reel_tensor_free(&out[0]);
    return v;
}

static void gridsample_volume_and_line(void **state)
{
    (void)state;
    const int64_t vs[] = { 1, 1, 2, 2, 2 }, ls[] = { 1, 1, 3 };
    const float vol[] = { 0, 1, 2, 3, 4, 5, 6, 7 }, line[] = { 1, 2, 4 };
    op_call lin = { .op = "GridSample", .n_out = 1, .opset = 20 };
    op_attr_int(&lin, "align_corners", 1);
    const float center[] = { 0, 0, 0 }, corner[] = { 1, -1, 1 }, half[] = { 0.5f };
    assert_float_equal(grid_nd(&lin, 5, vs, vol, center), 3.5f, 1e-6f); // the mean of all eight
    assert_float_equal(grid_nd(&lin, 5, vs, vol, corner), 5.0f, 1e-6f); // d 1, h 0, w 1
    assert_float_equal(grid_nd(&lin, 3, ls, line, half), 3.0f, 1e-6f);  // pixel 1.5
    op_call near = { .op = "GridSample", .n_out = 1, .opset = 20 };
    op_attr_str(&near, "mode", "nearest");
    op_attr_int(&near, "align_corners", 1);
    assert_float_equal(grid_nd(&near, 5, vs, vol, corner), 5.0f, 0);
}

static void roialign_max_and_refusals(void **state)
{
    (void)state;
    float img[16];
    for (int i = 0; i < 16; i++)
        img[i] = (float)i;
    const int64_t xs[] = { 1, 1, 4, 4 }, rs[] = { 1, 4 }, bs[] = { 1 };
    const float roi[] = { 0, 0, 3, 3 };
    const int64_t bi[] = { 0 }, bad_bi[] = { 1 };
    // Four samples at 0.25 and 1.75 (half_pixel): the largest weighted tap
    // is 0.5625 * 10.
    op_call c = { .op = "RoiAlign", .n_out = 1, .opset = 16 };
    op_attr_str(&c, "mode", "max");
    op_attr_int(&c, "sampling_ratio", 2);
    reel_tensor *in[3] = { op_tensor(REEL_DTYPE_FLOAT32, 4, xs, img), op_tensor(REEL_DTYPE_FLOAT32, 2, rs, roi),
                           op_tensor(REEL_DTYPE_INT64, 1, bs, bi) };
    reel_tensor *out[1];
    assert_int_equal(op_run(&c, 3, in, out), 0);
    assert_int_equal(out[0]->shape[2], 1);
    assert_float_equal(((float *)out[0]->data)[0], 5.625f, 1e-5f);
    reel_tensor_free(&out[0]);

    // The average of the same samples: bilinear values 1.25, 2.75, 7.25, 8.75.
    op_call avg = { .op = "RoiAlign", .n_out = 1, .opset = 16 };
    op_attr_int(&avg, "sampling_ratio", 2);
    reel_tensor *in2[3] = { op_tensor(REEL_DTYPE_FLOAT32, 4, xs, img), op_tensor(REEL_DTYPE_FLOAT32, 2, rs, roi),
                            op_tensor(REEL_DTYPE_INT64, 1, bs, bi) };
    assert_int_equal(op_run(&avg, 3, in2, out), 0);
    assert_float_equal(((float *)out[0]->data)[0], 5.0f, 1e-5f);
    reel_tensor_free(&out[0]);

    reel_tensor *in3[3] = { op_tensor(REEL_DTYPE_FLOAT32, 4, xs, img), op_tensor(REEL_DTYPE_FLOAT32, 2, rs, roi),
                            op_tensor(REEL_DTYPE_INT64, 1, bs, bad_bi) };
    assert_int_equal(op_run(&avg, 3, in3, out), REEL_EINVAL); // no image 1

    struct { const char *attr, *value, *what; } bad[] = {
        { "mode", "min", "'mode' = 'min'" },
        { "coordinate_transformation_mode", "asymmetric", "'coordinate_transformation_mode' = 'asymmetric'" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        reel_tensor *in4[3] = { op_tensor(REEL_DTYPE_FLOAT32, 4, xs, img),
                                op_tensor(REEL_DTYPE_FLOAT32, 2, rs, roi), op_tensor(REEL_DTYPE_INT64, 1, bs, bi) };
        op_call e = { .op = "RoiAlign", .n_out = 1, .opset = 16 };
        op_attr_str(&e, bad[i].attr, bad[i].value);
        expect_refused(&e, 3, in4, bad[i].what);
    }
}

// A 1-D unpool with padding, a larger output_shape, the failures.
static void maxunpool_1d_and_refusals(void **state)
{
    (void)state;
    const int64_t xs[] = { 1, 2, 2 }, os[] = { 3 };
    const float x[] = { 5, 6, 7, 8 };
    const int64_t idx[] = { 0, 2, 3, 4 }; // channel 0 at 0 and 2, channel 1 at 0 and 1 (of 3 each)
    const int64_t shape[] = { 1, 2, 4 };
    op_call c = { .op = "MaxUnpool", .n_out = 1, .opset = 11 };
    const int64_t k[] = { 2 }, st[] = { 2 }, pads[] = { 0, 1 };
    op_attr_ints(&c, "kernel_shape", k, 1);
    op_attr_ints(&c, "strides", st, 1);
    op_attr_ints(&c, "pads", pads, 2);
    reel_tensor *in[3] = { op_tensor(REEL_DTYPE_FLOAT32, 3, xs, x), op_tensor(REEL_DTYPE_INT64, 3, xs, idx),
                           op_tensor(REEL_DTYPE_INT64, 1, os, shape) };
    reel_tensor *out[1];
    assert_int_equal(op_run(&c, 3, in, out), 0); // unpooled length (2-1)*2+2-1 = 3, padded to 4
    assert_int_equal(out[0]->shape[2], 4);
    const double want[] = { 5, 0, 6, 0, 7, 8, 0, 0 };
    expect_close(out[0], want, 8, 0);
    reel_tensor_free(&out[0]);

    const int64_t far[] = { 0, 2, 3, 6 };
    reel_tensor *in2[2] = { op_tensor(REEL_DTYPE_FLOAT32, 3, xs, x), op_tensor(REEL_DTYPE_INT64, 3, xs, far) };
    assert_int_equal(op_run(&c, 2, in2, out), REEL_EINVAL); // offset 6 is past the 2x3 elements

    const int64_t small[] = { 1, 2, 2 };
    reel_tensor *in3[3] = { op_tensor(REEL_DTYPE_FLOAT32, 3, xs, x), op_tensor(REEL_DTYPE_INT64, 3, xs, idx),
                            op_tensor(REEL_DTYPE_INT64, 1, os, small) };
    expect_refused(&c, 3, in3, "output_shape dim 2 is 2, below 3");
}

// A text recognizer's head: a bidirectional LSTM over 40 steps of 512
// features, 256 hidden; and attention scores as an Einsum.
static void timing(void **state)
{
    (void)state;
    const int64_t xs[] = { 40, 1, 512 }, ws[] = { 2, 1024, 512 }, rs[] = { 2, 1024, 256 }, bs[] = { 2, 2048 };
    reel_tensor *in[4] = { op_random(3, xs, 1, -1, 1), op_random(3, ws, 2, -0.1f, 0.1f),
                           op_random(3, rs, 3, -0.1f, 0.1f), op_random(2, bs, 4, -0.1f, 0.1f) };
    op_call c = { .op = "LSTM", .n_out = 2 };
    op_attr_str(&c, "direction", "bidirectional");
    reel_tensor *out[2];
    double best = INFINITY;
    for (int rep = 0; rep < 10; rep++) {
        reel_tensor *copy[4] = { reel_tensor_dup(in[0]), reel_tensor_dup(in[1]), reel_tensor_dup(in[2]),
                                 reel_tensor_dup(in[3]) };
        assert_int_equal(op_run(&c, 4, copy, out), 0);
        best = MIN(best, op_run_ms(2));
        free_all(out, 2);
    }
    printf("LSTM 40x1x512, 256 hidden, bidirectional, on two workers: %.3f ms (best of 10)\n", best);
    free_all(in, 4);

    const int64_t qs[] = { 1, 8, 64, 64 };
    op_call e = { .op = "Einsum", .n_out = 1 };
    op_attr_str(&e, "equation", "bhqd,bhkd->bhqk");
    best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        reel_tensor *qk[2] = { op_random(4, qs, 5, -1, 1), op_random(4, qs, 6, -1, 1) };
        assert_int_equal(op_run(&e, 2, qk, out), 0);
        best = MIN(best, op_run_ms(2));
        reel_tensor_free(&out[0]);
    }
    printf("Einsum bhqd,bhkd->bhqk 1x8x64x64 on two workers: %.3f ms (best of 3)\n", best);

    const int64_t is[] = { 1, 32, 128, 128 }, gs[] = { 1, 128, 128, 2 };
    op_call gsc = { .op = "GridSample", .n_out = 1, .opset = 16 };
    best = INFINITY;
    for (int rep = 0; rep < 3; rep++) {
        reel_tensor *xg[2] = { op_random(4, is, 7, -1, 1), op_random(4, gs, 8, -1.1f, 1.1f) };
        assert_int_equal(op_run(&gsc, 2, xg, out), 0);
        best = MIN(best, op_run_ms(2));
        reel_tensor_free(&out[0]);
    }
    printf("GridSample bilinear 1x32x128x128 on two workers: %.3f ms (best of 3)\n", best);
}

int main(void)
{
    reel_blas_configure(1); // as sessions run it: the kernels split their work themselves
    reel_blas_setup();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lstm_bidirectional_lengths_peepholes_clip),
        cmocka_unit_test(gru_reverse_layout1_both_resets),
        cmocka_unit_test(gru_bidirectional_lengths),
        cmocka_unit_test(rnn_activations_and_omitted_y),
        cmocka_unit_test(recurrent_empty),
        cmocka_unit_test(recurrent_refusals),
        cmocka_unit_test(einsum_forms),
        cmocka_unit_test(einsum_gemm_path),
        cmocka_unit_test(det_forms),
        cmocka_unit_test(gridsample_padding_and_rounding),
        cmocka_unit_test(gridsample_volume_and_line),
        cmocka_unit_test(roialign_max_and_refusals),
        cmocka_unit_test(maxunpool_1d_and_refusals),
        cmocka_unit_test(timing),
    };
    return op_run_tests(tests, .opset = 18, .two_workers = true, .workers_tol = 1e-5);
}

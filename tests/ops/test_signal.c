// The signal and text kernels (models/cpu/signal.c, text.c) where ONNX's
// cases do not reach: opset 20's DFT with axis and dft_length inputs (a
// non-power-of-two length, a negative axis), STFT's frames, a double window, TfIdf's IDF
// weights, and the refused attributes and types, whose messages name the node.
#include <complex.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ops/op_harness.h"

static reel_tensor *int_scalar(reel_dtype dt, int64_t v)
{
    reel_tensor *t = reel_tensor_new(dt, 0, NULL);
    if (dt == REEL_DTYPE_INT32)
        *(int32_t *)t->data = (int32_t)v;
    else
        *(int64_t *)t->data = v;
    return t;
}

// Expects infer to fail with code and a message naming the node and `what`.
static void expect_refused(const op_call *c, int n_in, reel_tensor **in, int code, const char *what)
{
    reel_tensor *out[1] = { NULL };
    assert_int_equal(op_run(c, n_in, in, out), code);
    const char *msg = op_message();
    if (!strstr(msg, "node 'sig'") || !strstr(msg, what))
        fail_msg("message '%s' does not name the node and '%s'", msg, what);
}

// Opset 20: axis -2 as an input of a [2, 5, 3, 1] real signal, dft_length 6
// (zero-padded, not a power of two): against a naive sum.
static void dft_opset20_inputs(void **state)
{
    (void)state;
    int64_t xs[4] = { 2, 5, 3, 1 };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, xs);
    float xd[30]; // kept: the graph frees its inputs
    for (int i = 0; i < 30; i++)
        xd[i] = (float)((i * 7) % 11) - 5.0f;
    memcpy(x->data, xd, sizeof xd);
    reel_tensor *in[3] = { x, int_scalar(REEL_DTYPE_INT64, 6), int_scalar(REEL_DTYPE_INT64, -3) };
    op_call c = { .op = "DFT", .opset = 20 };
    reel_tensor *out[1];
    assert_int_equal(op_run(&c, 3, in, out), 0);
    assert_int_equal(out[0]->rank, 4);
    assert_int_equal(out[0]->shape[1], 6);
    assert_int_equal(out[0]->shape[2], 3);
    assert_int_equal(out[0]->shape[3], 2);
    const float *y = out[0]->data;
    for (int b = 0; b < 2; b++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 6; k++) {
                double complex want = 0;
                for (int t = 0; t < 5; t++)
                    want += xd[(b * 5 + t) * 3 + j] * cexp(-2.0 * G_PI * I * k * t / 6.0);
                const float *got = y + ((b * 6 + k) * 3 + j) * 2;
                if (fabs(got[0] - creal(want)) > 1e-4 || fabs(got[1] - cimag(want)) > 1e-4)
                    fail_msg("bin %d of column %d,%d: %g%+gi, expected %g%+gi", k, b, j, got[0], got[1],
                             creal(want), cimag(want));
            }
    reel_tensor_free(&out[0]);
}

// A onesided forward DFT of 8 samples and the inverse of the full spectrum
// give the signal back.
static void dft_roundtrip(void **state)
{
    (void)state;
    int64_t xs[3] = { 1, 8, 1 };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 3, xs);
    float *xd = x->data;
    for (int i = 0; i < 8; i++)
        xd[i] = (float)(i * i % 5);
    reel_tensor *keep = reel_tensor_new(REEL_DTYPE_FLOAT32, 3, xs);
    memcpy(keep->data, xd, x->nbytes);
    reel_tensor *in[1] = { x }, *spec[1];
    op_call fwd = { .op = "DFT" };
    assert_int_equal(op_run(&fwd, 1, in, spec), 0);
    reel_tensor *in2[1] = { spec[0] }, *back[1];
    op_call inv = { .op = "DFT" };
    op_attr_int(&inv, "inverse", 1);
    assert_int_equal(op_run(&inv, 1, in2, back), 0);
    const float *b = back[0]->data, *k = keep->data;
    for (int i = 0; i < 8; i++) {
        assert_true(fabs(b[2 * i] - k[i]) < 1e-5);
        assert_true(fabs(b[2 * i + 1]) < 1e-5);
    }
    reel_tensor_free(&back[0]);
    reel_tensor_free(&keep);

    reel_tensor *x2 = reel_tensor_new(REEL_DTYPE_FLOAT32, 3, xs);
    memset(x2->data, 0, x2->nbytes);
    ((float *)x2->data)[0] = 1.0f; // an impulse: a flat spectrum
    reel_tensor *in3[1] = { x2 }, *half[1];
    op_call one = { .op = "DFT" };
    op_attr_int(&one, "onesided", 1);
    assert_int_equal(op_run(&one, 1, in3, half), 0);
    assert_int_equal(half[0]->shape[1], 5);
    for (int i = 0; i < 5; i++)
        assert_true(fabs(((float *)half[0]->data)[2 * i] - 1.0f) < 1e-6);
    reel_tensor_free(&half[0]);
}

static void dft_refusals(void **state)
{
    (void)state;
    int64_t xs[3] = { 1, 4, 2 };
    reel_tensor *in[1] = { reel_tensor_new(REEL_DTYPE_INT32, 3, xs) };
    op_call c = { .op = "DFT" };
    expect_refused(&c, 1, in, REEL_EUNSUPPORTED, "int32");
    reel_tensor *in2[1] = { reel_tensor_new(REEL_DTYPE_FLOAT32, 3, xs) };
    op_call both = { .op = "DFT" };
    op_attr_int(&both, "inverse", 1);
    op_attr_int(&both, "onesided", 1);
    expect_refused(&both, 1, in2, REEL_EUNSUPPORTED, "onesided");
    reel_tensor *in3[1] = { reel_tensor_new(REEL_DTYPE_FLOAT32, 3, xs) };
    op_call last = { .op = "DFT" };
    op_attr_int(&last, "axis", 2); // the complex dim is not an axis
    expect_refused(&last, 1, in3, REEL_EINVAL, "axis");
}

// A symmetric double Hann window of 5 (0, .5, 1, .5, 0), an empty one, and
// the refused output_datatype.
static void windows(void **state)
{
    (void)state;
    reel_tensor *in[1] = { int_scalar(REEL_DTYPE_INT32, 5) }, *out[1];
    op_call c = { .op = "HannWindow" };
    op_attr_int(&c, "periodic", 0);
    op_attr_int(&c, "output_datatype", 11);
    assert_int_equal(op_run(&c, 1, in, out), 0);
    assert_int_equal(out[0]->dtype, REEL_DTYPE_FLOAT64);
    const double want[5] = { 0, 0.5, 1, 0.5, 0 };
    for (int i = 0; i < 5; i++)
        assert_true(fabs(((double *)out[0]->data)[i] - want[i]) < 1e-12);
    reel_tensor_free(&out[0]);

    reel_tensor *in0[1] = { int_scalar(REEL_DTYPE_INT64, 0) };
    op_call e = { .op = "BlackmanWindow" };
    assert_int_equal(op_run(&e, 1, in0, out), 0);
    assert_int_equal(out[0]->shape[0], 0);
    reel_tensor_free(&out[0]);

    reel_tensor *in2[1] = { int_scalar(REEL_DTYPE_INT32, 4) };
    op_call bad = { .op = "HammingWindow" };
    op_attr_int(&bad, "output_datatype", 7);
    expect_refused(&bad, 1, in2, REEL_EUNSUPPORTED, "output_datatype");
}

// STFT without a window: [1, 10, 1] in frames of 4 every 3 samples (3
// frames), onesided bins against a naive sum; frame_length past the signal
// is refused.
static void stft_frames(void **state)
{
    (void)state;
    int64_t xs[3] = { 1, 10, 1 };
    float xd[10];
    for (int i = 0; i < 10; i++)
        xd[i] = (float)(i % 4) - 1.5f;
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 3, xs);
    memcpy(x->data, xd, sizeof xd);
    reel_tensor *in[4] = { x, int_scalar(REEL_DTYPE_INT64, 3), NULL, int_scalar(REEL_DTYPE_INT64, 4) }, *out[1];
    op_call c = { .op = "STFT" };
    assert_int_equal(op_run(&c, 4, in, out), 0);
    assert_int_equal(out[0]->rank, 4);
    assert_int_equal(out[0]->shape[1], 3);
    assert_int_equal(out[0]->shape[2], 3);
    const float *y = out[0]->data;
    for (int f = 0; f < 3; f++)
        for (int k = 0; k < 3; k++) {
            double complex want = 0;
            for (int t = 0; t < 4; t++)
                want += xd[f * 3 + t] * cexp(-2.0 * G_PI * I * k * t / 4.0);
            const float *got = y + (f * 3 + k) * 2;
            assert_true(fabs(got[0] - creal(want)) < 1e-5 && fabs(got[1] - cimag(want)) < 1e-5);
        }
    reel_tensor_free(&out[0]);

    reel_tensor *in2[4] = { reel_tensor_new(REEL_DTYPE_FLOAT32, 3, xs), int_scalar(REEL_DTYPE_INT64, 3), NULL,
                            int_scalar(REEL_DTYPE_INT64, 11) };
    expect_refused(&c, 4, in2, REEL_EINVAL, "frame_length 11");
}

// TFIDF with weights on [2, 4] int32 tokens; unigrams and bigrams; the
// refused mode and pool_strings.
static void tfidf(void **state)
{
    (void)state;
    int64_t xs[2] = { 2, 4 };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_INT32, 2, xs);
    const int32_t tokens[8] = { 1, 2, 1, 2, 3, 3, 1, 2 };
    memcpy(x->data, tokens, sizeof tokens);
    int64_t pool[5] = { 1, 3, 1, 2 }, counts[2] = { 0, 2 }, idx[3] = { 0, 1, 2 };
    float weights[3] = { 0.5f, 2.0f, 10.0f };
    op_call c = { .op = "TfIdfVectorizer" };
    op_attr_str(&c, "mode", "TFIDF");
    op_attr_int(&c, "min_gram_length", 1);
    op_attr_int(&c, "max_gram_length", 2);
    op_attr_int(&c, "max_skip_count", 0);
    op_attr_ints(&c, "pool_int64s", pool, 4);
    op_attr_ints(&c, "ngram_counts", counts, 2);
    op_attr_ints(&c, "ngram_indexes", idx, 3);
    op_attr_floats(&c, "weights", weights, 3);
    reel_tensor *in[1] = { x }, *out[1];
    assert_int_equal(op_run(&c, 1, in, out), 0);
    assert_int_equal(out[0]->shape[0], 2);
    assert_int_equal(out[0]->shape[1], 3);
    // row 0: two 1s, no 3, two "1 2"; row 1: one 1, two 3s, one "1 2"
    const float want[6] = { 1.0f, 0.0f, 20.0f, 0.5f, 4.0f, 10.0f };
    for (int i = 0; i < 6; i++)
        assert_true(fabsf(((float *)out[0]->data)[i] - want[i]) < 1e-6f);
    reel_tensor_free(&out[0]);

    reel_tensor *in2[1] = { reel_tensor_new(REEL_DTYPE_INT32, 2, xs) };
    op_call bad = c;
    bad.attrs[0].s = (char *)"BM25";
    expect_refused(&bad, 1, in2, REEL_EUNSUPPORTED, "'mode' = 'BM25'");

    char *strs[2] = { (char *)"a", NULL };
    reel_tensor *in3[1] = { reel_tensor_new(REEL_DTYPE_INT32, 2, xs) };
    op_call str = c;
    str.attrs[str.n_attrs++] = (reel_ir_attr){ .name = (char *)"pool_strings", .type = REEL_ATTR_STRINGS, .strings = strs, .n = 1 };
    expect_refused(&str, 1, in3, REEL_EUNSUPPORTED, "pool_strings");

    reel_tensor *in4[1] = { reel_tensor_new(REEL_DTYPE_FLOAT32, 2, xs) };
    expect_refused(&c, 1, in4, REEL_EUNSUPPORTED, "float32");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dft_opset20_inputs),
        cmocka_unit_test(dft_roundtrip),
        cmocka_unit_test(dft_refusals),
        cmocka_unit_test(stft_frames),
        cmocka_unit_test(windows),
        cmocka_unit_test(tfidf),
    };
    return op_run_tests(tests, .opset = 17, .node = "sig");
}

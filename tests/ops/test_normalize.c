// The normalization and loss kernels (models/cpu/normalize.c, loss.c) where
// ONNX's cases do not reach: GroupNormalization in both forms, Scale and B
// that broadcast, int32 targets, the failures; each op's infer and run on
// one thread and on two workers, against naive double references.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ops/op_harness.h"

static void expect_close(const reel_tensor *t, const double *want, int64_t count, double tol)
{
    const float *got = t->data;
    for (int64_t i = 0; i < count; i++)
        if (fabs(got[i] - want[i]) > tol * (1.0 + fabs(want[i])))
            fail_msg("element %" G_GINT64_FORMAT ": %g, expected %g", i, got[i], want[i]);
}

// GroupNormalization's reference: groups of whole channels, then the affine
// per channel (per_channel) or per group.
static void group_ref(const float *x, const float *sc, const float *b, double *y, int64_t N, int64_t C,
                      int64_t P, int64_t G, bool per_channel, double eps)
{
    int64_t cpg = C / G, len = cpg * P;
    for (int64_t gi = 0; gi < N * G; gi++) {
        const float *xg = x + gi * len;
        double m = 0, v = 0;
        for (int64_t i = 0; i < len; i++)
            m += xg[i];
        m /= (double)len;
        for (int64_t i = 0; i < len; i++)
            v += (xg[i] - m) * (xg[i] - m);
        v /= (double)len;
        for (int64_t i = 0; i < len; i++) {
            int64_t c = (gi % G) * cpg + i / P, k = per_channel ? c : gi % G;
            y[gi * len + i] = (xg[i] - m) / sqrt(v + eps) * sc[k] + b[k];
        }
    }
}

static void groupnorm_forms(void **state)
{
    (void)state;
    const int64_t xs[] = { 2, 6, 3, 5 }, N = 2, C = 6, P = 15, G = 3;
    for (int opset = 18; opset <= 21; opset += 3) {
        int64_t ns = opset >= 21 ? C : G;
        reel_tensor *in[3] = { op_random(4, xs, 1, -3, 5), op_random(1, &ns, 2, 0.5f, 2),
                               op_random(1, &ns, 3, -1, 1) };
        double *want = g_new(double, N * C * P);
        group_ref(in[0]->data, in[1]->data, in[2]->data, want, N, C, P, G, opset >= 21, 1e-5);
        op_call c = { .op = "GroupNormalization", .opset = opset, .n_out = 1 };
        op_attr_int(&c, "num_groups", G);
        reel_tensor *out[1];
        assert_int_equal(op_run(&c, 3, in, out), 0);
        expect_close(out[0], want, N * C * P, 1e-5);
        reel_tensor_free(&out[0]);
        g_free(want);
        // The other form's scale length is refused.
        int64_t wrong = opset >= 21 ? G : C;
        reel_tensor *bad[3] = { op_random(4, xs, 1, -3, 5), op_random(1, &wrong, 2, 0.5f, 2),
                                op_random(1, &wrong, 3, -1, 1) };
        assert_int_equal(op_run(&c, 3, bad, out), REEL_EINVAL);
    }
    op_call c = { .op = "GroupNormalization", .n_out = 1 };
    op_attr_int(&c, "num_groups", 4); // does not divide 6
    int64_t ns = 4;
    reel_tensor *in[3] = { op_random(4, xs, 1, -3, 5), op_random(1, &ns, 2, 0.5f, 2),
                           op_random(1, &ns, 3, -1, 1) };
    reel_tensor *out[1];
    assert_int_equal(op_run(&c, 3, in, out), REEL_EINVAL);
}

// LayerNormalization over the last two dims, Scale broadcast from (1, W),
// no B, with Mean and InvStdDev; a large mean keeps the one-pass variance
// honest.
static void layernorm_broadcast_stats(void **state)
{
    (void)state;
    const int64_t xs[] = { 3, 4, 37 }, ss[] = { 1, 37 }, rows = 3, len = 4 * 37;
    reel_tensor *in[2] = { op_random(3, xs, 4, 100, 101), op_random(2, ss, 5, -2, 2) };
    const float *x = in[0]->data, *sc = in[1]->data;
    double *want = g_new(double, rows * len), mean[3], inv[3];
    for (int64_t r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (int64_t i = 0; i < len; i++)
            m += x[r * len + i];
        m /= (double)len;
        for (int64_t i = 0; i < len; i++)
            v += (x[r * len + i] - m) * (x[r * len + i] - m);
        mean[r] = m;
        inv[r] = 1.0 / sqrt(v / (double)len + 1e-5);
        for (int64_t i = 0; i < len; i++)
            want[r * len + i] = (x[r * len + i] - m) * inv[r] * sc[i % 37];
    }
    op_call c = { .op = "LayerNormalization", .n_out = 3 };
    op_attr_int(&c, "axis", -2);
    reel_tensor *out[3];
    assert_int_equal(op_run(&c, 2, in, out), 0);
    expect_close(out[0], want, rows * len, 1e-3);
    assert_int_equal(out[1]->rank, 3);
    assert_int_equal(out[1]->shape[0], 3);
    assert_int_equal(out[1]->shape[2], 1);
    expect_close(out[1], mean, rows, 1e-6);
    expect_close(out[2], inv, rows, 1e-3);
    for (int i = 0; i < 3; i++)
        reel_tensor_free(&out[i]);
    g_free(want);

    op_call bad = { .op = "LayerNormalization", .n_out = 1 };
    op_attr_int(&bad, "stash_type", 10); // float16
    reel_tensor *in2[2] = { op_random(3, xs, 4, 0, 1), op_random(2, ss, 5, -2, 2) };
    assert_int_equal(op_run(&bad, 2, in2, out), REEL_EUNSUPPORTED);
}

// A transformer's LayerNormalization per frame (a 56x56 grid of 96
// channels): the time, for the record.
static void layernorm_timing(void **state)
{
    (void)state;
    const int64_t xs[] = { 1, 3136, 96 }, ss[] = { 96 };
    reel_tensor *in[3] = { op_random(3, xs, 6, -1, 1), op_random(1, ss, 7, 0, 1),
                           op_random(1, ss, 8, 0, 1) };
    op_call c = { .op = "LayerNormalization", .n_out = 1 };
    reel_tensor *out[1];
    double best = INFINITY;
    for (int rep = 0; rep < 5; rep++) {
        reel_tensor *copy[3] = { reel_tensor_dup(in[0]), reel_tensor_dup(in[1]), reel_tensor_dup(in[2]) };
        assert_int_equal(op_run(&c, 3, copy, out), 0);
        best = MIN(best, op_run_ms(2));
        reel_tensor_free(&out[0]);
    }
    printf("LayerNormalization 1x3136x96 on two workers: %.3f ms (best of 5)\n", best);
    for (int i = 0; i < 3; i++)
        reel_tensor_free(&in[i]);
}

static reel_tensor *int_tensor(reel_dtype dt, int rank, const int64_t *shape, const int64_t *v)
{
    reel_tensor *t = reel_tensor_new(dt, rank, shape);
    int64_t n = reel_tensor_count(rank, shape);
    for (int64_t i = 0; i < n; i++) {
        if (dt == REEL_DTYPE_INT32)
            ((int32_t *)t->data)[i] = (int32_t)v[i];
        else
            ((int64_t *)t->data)[i] = v[i];
    }
    return t;
}

// int32 targets, mean over the weights of the targets not ignored; a target
// out of range fails; an unknown reduction too.
static void nll_int32_and_errors(void **state)
{
    (void)state;
    const int64_t xs[] = { 2, 3, 2 }, ts[] = { 2, 2 }, ws = 3;
    const int64_t target[] = { 0, 2, 1, 1 }, out_of_range[] = { 0, 3, 1, 1 };
    reel_tensor *in[3] = { op_random(3, xs, 9, -2, 0), int_tensor(REEL_DTYPE_INT32, 2, ts, target),
                           op_random(1, &ws, 10, 0.5f, 1) };
    const float *x = in[0]->data, *w = in[2]->data;
    // Target 2 at (0, 1) is ignored.
    double num = -x[0 * 2 + 0] * w[0] - x[(3 + 1) * 2 + 0] * w[1] - x[(3 + 1) * 2 + 1] * w[1];
    double want = num / (w[0] + 2 * w[1]);
    op_call c = { .op = "NegativeLogLikelihoodLoss", .n_out = 1 };
    op_attr_int(&c, "ignore_index", 2);
    reel_tensor *out[1];
    assert_int_equal(op_run(&c, 3, in, out), 0);
    assert_int_equal(out[0]->rank, 0);
    expect_close(out[0], &want, 1, 1e-6);
    reel_tensor_free(&out[0]);

    reel_tensor *in2[2] = { op_random(3, xs, 9, -2, 0), int_tensor(REEL_DTYPE_INT64, 2, ts, out_of_range) };
    op_call plain = { .op = "NegativeLogLikelihoodLoss", .n_out = 1 };
    assert_int_equal(op_run(&plain, 2, in2, out), REEL_EINVAL);

    reel_tensor *in3[2] = { op_random(3, xs, 9, -2, 0), int_tensor(REEL_DTYPE_INT64, 2, ts, target) };
    op_call odd = { .op = "SoftmaxCrossEntropyLoss", .n_out = 1 };
    op_attr_str(&odd, "reduction", "max");
    assert_int_equal(op_run(&odd, 2, in3, out), REEL_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(groupnorm_forms),
        cmocka_unit_test(layernorm_broadcast_stats),
        cmocka_unit_test(layernorm_timing),
        cmocka_unit_test(nll_int32_and_errors),
    };
    return op_run_tests(tests, .opset = 18, .two_workers = true);
}

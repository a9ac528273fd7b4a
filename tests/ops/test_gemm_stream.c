// nn_gemm_epi with streaming (non-temporal) stores against the same product
// with plain stores: results must match bit for bit, with C aligned for the
// streaming path and misaligned (plain stores taken instead), K in one and
// in several blocks (partial sums in C), every epilogue, and the padding of
// C between N and ldc never written. CTest runs it for AVX-512 and AVX2.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/cpu/microgemm.h"
#include "tests/support/skip.h"

static uint32_t rng_state;

static float *rnd_array(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++) {
        rng_state = rng_state * 1664525u + 1013904223u;
        p[i] = (float)(rng_state >> 8) / (float)(1u << 23) - 1.0f;
    }
    return p;
}

// C with NaN everywhere, `skew` floats past a 64-byte boundary.
static float *nan_matrix(size_t n, int skew, float **base)
{
    size_t bytes = ((n + (size_t)skew) * sizeof(float) + 63) / 64 * 64 + 64;
    *base = aligned_alloc(64, bytes);
    assert_non_null(*base);
    float *c = *base + skew;
    for (size_t i = 0; i < n; i++)
        c[i] = NAN;
    return c;
}

static void compare(int M, int N, int K, int ldc, int skew, int act, bool res, uint32_t seed)
{
    rng_state = seed;
    float *A = rnd_array((size_t)M * K), *B = rnd_array((size_t)K * N), *bias = rnd_array((size_t)M);
    float *R = rnd_array((size_t)M * N);
    float *base_plain, *base_stream;
    size_t nc = (size_t)M * ldc;
    float *plain = nan_matrix(nc, skew, &base_plain), *streamed = nan_matrix(nc, skew, &base_stream);
    nn_epilogue e = { .bias = bias, .res = res ? R : NULL, .ldr = N, .act = act, .lo = -0.5f, .hi = 0.5f };
    nn_gemm_epi(M, N, K, A, K, B, N, plain, ldc, &e);
    e.stream = true;
    nn_gemm_epi(M, N, K, A, K, B, N, streamed, ldc, &e);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < ldc; j++) {
            float p = plain[(size_t)i * ldc + j], s = streamed[(size_t)i * ldc + j];
            if (j >= N && !isnan(s))
                fail_msg("M=%d N=%d K=%d ldc=%d skew=%d: padding C[%d][%d] was written", M, N, K, ldc, skew, i, j);
            if (j < N && memcmp(&p, &s, sizeof p) != 0)
                fail_msg("M=%d N=%d K=%d ldc=%d skew=%d act=%d res=%d: C[%d][%d] = %.9g streamed, %.9g plain", M,
                         N, K, ldc, skew, act, res, i, j, s, p);
        }
    free(A);
    free(B);
    free(bias);
    free(R);
    free(base_plain);
    free(base_stream);
}

// Pointwise-conv shapes (few channels, many columns) and odd ones.
static void test_stream_matches_plain(void **state)
{
    (void)state;
    static const int shapes[][4] = {
        // M, N, K, ldc
        { 16, 1568, 32, 1568 }, { 96, 784, 16, 784 }, { 13, 197, 7, 197 }, { 9, 50, 3, 64 },
        { 24, 96, 300, 96 },    { 5, 17, 1, 32 },     { 1, 1, 1, 1 },      { 40, 333, 45, 352 },
    };
    uint32_t seed = 1;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int skew = 0; skew < 2; skew++)
            for (int act = NN_ACT_NONE; act <= NN_ACT_CLIP; act++)
                for (int res = 0; res < 2; res++)
                    compare(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], skew, act, res, seed++);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_stream_matches_plain) };
    return reel_run_tests(tests, NULL, NULL);
}

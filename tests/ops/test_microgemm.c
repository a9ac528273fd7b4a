// nn_gemm_epi against a naive double-precision product on seeded random
// inputs: every remainder of the register tiles (rows mod 8, 6, 4, 2;
// columns mod 48, 16, 8 and 4, the rest as dot products), K = 0 and 1, K
// and M past one block, strides wider than the rows, and every epilogue.
// CTest runs it once per instruction set (REEL_GEMM_ISA), so the AVX2 and
// plain C kernels are checked on an AVX-512 machine too.
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

// Tolerance relative to the size of the terms summed (sum |a*b| + |bias| +
// |res|), so cancellation in long sums cannot fail a correct result.
#define REL_TOL 1e-4

static uint32_t rng_state;

static float rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)(rng_state >> 8) / (float)(1u << 23) - 1.0f; // [-1, 1)
}

static float *rnd_array(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

// Epilogue variants: bit 0 bias, bit 1 residual, bits 2-3 activation.
enum { V_BIAS = 1, V_RES = 2, V_ACT_SHIFT = 2, V_COUNT = 12, V_NULL = -1 };

typedef struct shape {
    int M, N, K;
    int pad_a, pad_b, pad_c, pad_r; // extra stride past the row width
} shape;
#define SHAPE(m, n, k) { .M = m, .N = n, .K = k }
#define PADDED(m, n, k, a, b, c, r) { .M = m, .N = n, .K = k, .pad_a = a, .pad_b = b, .pad_c = c, .pad_r = r }

static double act(double y, const nn_epilogue *e)
{
    if (e->act == NN_ACT_RELU)
        return y > 0 ? y : 0;
    if (e->act == NN_ACT_CLIP)
        return y < e->lo ? e->lo : y > e->hi ? e->hi : y;
    return y;
}

// Runs one product and compares every element; the padding of C (between N
// and ldc) must keep its NaN sentinel and no element may stay NaN, so a
// kernel that reads C before writing it, or writes past N, fails.
static void check(shape s, int variant, uint32_t seed)
{
    rng_state = seed;
    int lda = s.K + s.pad_a, ldb = s.N + s.pad_b, ldc = s.N + s.pad_c, ldr = s.N + s.pad_r;
    float *A = rnd_array((size_t)s.M * lda), *B = rnd_array((size_t)s.K * ldb);
    float *bias = rnd_array((size_t)s.M), *res = rnd_array((size_t)s.M * ldr);
    size_t nc = (size_t)s.M * ldc;
    float *C = malloc((nc ? nc : 1) * sizeof *C);
    assert_non_null(C);
    for (size_t i = 0; i < nc; i++)
        C[i] = NAN;
    nn_epilogue epi = { .ldr = ldr, .lo = -0.5f, .hi = 0.5f };
    if (variant != V_NULL) {
        epi.bias = variant & V_BIAS ? bias : NULL;
        epi.res = variant & V_RES ? res : NULL;
        epi.act = variant >> V_ACT_SHIFT;
    }
    const nn_epilogue *e = variant == V_NULL ? NULL : &epi;
    nn_gemm_epi(s.M, s.N, s.K, s.K ? A : NULL, lda, s.K ? B : NULL, ldb, C, ldc, e);

    for (int i = 0; i < s.M; i++) {
        for (int j = 0; j < s.N; j++) {
            double sum = 0, mag = 0;
            for (int k = 0; k < s.K; k++) {
                double t = (double)A[(size_t)i * lda + k] * B[(size_t)k * ldb + j];
                sum += t;
                mag += fabs(t);
            }
            if (epi.bias) {
                sum += bias[i];
                mag += fabs(bias[i]);
            }
            if (epi.res) {
                sum += res[(size_t)i * ldr + j];
                mag += fabs(res[(size_t)i * ldr + j]);
            }
            double want = act(sum, &epi);
            float got = C[(size_t)i * ldc + j];
            if (!(fabs(got - want) <= REL_TOL * (mag + 1e-30)))
                fail_msg("M=%d N=%d K=%d lda=%d ldb=%d ldc=%d ldr=%d variant %d: C[%d][%d] = %.9g, want %.9g", s.M,
                         s.N, s.K, lda, ldb, ldc, ldr, variant, i, j, got, want);
        }
        for (int j = s.N; j < ldc; j++)
            if (!isnan(C[(size_t)i * ldc + j]))
                fail_msg("M=%d N=%d K=%d ldc=%d: padding C[%d][%d] was written", s.M, s.N, s.K, ldc, i, j);
    }
    free(A);
    free(B);
    free(bias);
    free(res);
    free(C);
}

// Every row count 1..17 (remainders of 8, 6, 4, 2) against every column
// count 1..50 (remainders of 16 and 48, a second panel), plain product.
static void test_tile_edges(void **state)
{
    (void)state;
    for (int M = 1; M <= 17; M++)
        for (int N = 1; N <= 50; N++)
            check((shape)SHAPE(M, N, 7), V_NULL, (uint32_t)(M * 100 + N));
}

// Every epilogue on shapes with full and partial tiles in both directions.
static void test_epilogues(void **state)
{
    (void)state;
    static const shape shapes[] = {
        SHAPE(8, 48, 16), SHAPE(13, 37, 9), SHAPE(1, 1, 1),  SHAPE(24, 97, 33),
        SHAPE(6, 16, 5),  SHAPE(5, 200, 3), SHAPE(19, 5, 40),
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        for (int v = 0; v < V_COUNT; v++)
            check(shapes[i], v, (uint32_t)(i * 31 + v));
}

// K = 0 (epilogue of zeros, A and B not read), K = 1, M = 1 and N = 1.
static void test_degenerate(void **state)
{
    (void)state;
    for (int v = V_NULL; v < V_COUNT; v++) {
        check((shape)SHAPE(9, 21, 0), v, 1);
        check((shape)SHAPE(1, 1, 0), v, 2);
        check((shape)SHAPE(17, 53, 1), v, 3);
        check((shape)SHAPE(1, 300, 70), v, 4);
        check((shape)SHAPE(300, 1, 70), v, 5);
        check((shape)SHAPE(1, 1, 500), v, 6);
    }
}

// Strides wider than the rows, for each operand.
static void test_strides(void **state)
{
    (void)state;
    static const shape shapes[] = {
        PADDED(11, 35, 20, 3, 0, 0, 0),  PADDED(11, 35, 20, 0, 5, 0, 0),   PADDED(11, 35, 20, 0, 0, 7, 0),
        PADDED(11, 35, 20, 0, 0, 0, 9),  PADDED(3, 64, 300, 17, 16, 1, 2), PADDED(20, 50, 2, 1, 30, 14, 33),
        PADDED(2, 100, 40, 0, 60, 0, 0), PADDED(64, 1, 64, 64, 1, 3, 0),
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        check(shapes[i], V_NULL, (uint32_t)i);
        check(shapes[i], V_BIAS | V_RES | NN_ACT_CLIP << V_ACT_SHIFT, (uint32_t)i + 50);
    }
}

// K past one block (partial sums kept in C; epilogue on the last block
// only), for the dot products too, and M past one block of rows (B copied).
static void test_blocks(void **state)
{
    (void)state;
    static const shape shapes[] = {
        SHAPE(16, 48, 257), SHAPE(9, 50, 600),  SHAPE(37, 33, 1000), SHAPE(300, 40, 30),
        SHAPE(530, 17, 300), SHAPE(96, 200, 16), SHAPE(160, 49, 960), SHAPE(5, 1, 13000),
        SHAPE(7, 15, 900),
    };
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        check(shapes[i], V_NULL, (uint32_t)i);
        check(shapes[i], V_BIAS | V_RES | NN_ACT_RELU << V_ACT_SHIFT, (uint32_t)i + 70);
    }
}

// M <= 0 or N <= 0 write nothing.
static void test_empty(void **state)
{
    (void)state;
    float C[4] = { 1, 2, 3, 4 }, A[4] = { 1 }, B[4] = { 1 };
    nn_epilogue e = { .act = NN_ACT_RELU };
    nn_gemm_epi(0, 2, 2, A, 2, B, 2, C, 2, &e);
    nn_gemm_epi(2, 0, 2, A, 2, B, 2, C, 2, NULL);
    for (int i = 0; i < 4; i++)
        assert_true(C[i] == i + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile_edges), cmocka_unit_test(test_epilogues), cmocka_unit_test(test_degenerate),
        cmocka_unit_test(test_strides),    cmocka_unit_test(test_blocks),    cmocka_unit_test(test_empty),
    };
    return reel_run_tests(tests, NULL, NULL);
}

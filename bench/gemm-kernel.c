// nn_gemm_epi (bias and Relu fused) against OpenBLAS cblas_sgemm followed by
// a separate bias + Relu pass, as the Conv kernels ran them, single-threaded,
// on MobileNetV2's pointwise shapes. Built by CMake (bench-gemm-kernel), run
// by bench/gemm-kernel.
//
//   bench-gemm-kernel [REPEAT [MxKxN...]]
//
// Columns: nn_gemm_epi with bias + Relu; sgemm then the bias + Relu pass
// (conv.c's epi_row, at -O3); sgemm alone. Each figure is the median over
// REPEAT batches, the three taking turns, a batch being as many calls as
// take our kernel about 10 ms. GFLOP/s counts 2*M*N*K; buffers are 64-byte
// aligned and stay in cache between calls alike for all three.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>

#include "models/cpu/blas.h"
#include "models/cpu/microgemm.h"
#include "clock.h"

typedef struct shape {
    int M, K, N;
} shape;

static const shape mobilenet[] = {
    { 96, 16, 12544 }, { 24, 144, 3136 }, { 144, 24, 3136 }, { 192, 32, 784 }, { 64, 384, 196 },
    { 384, 64, 196 },  { 160, 960, 49 },  { 960, 160, 49 },  { 1280, 320, 49 },
};

typedef struct job {
    shape s;
    const float *A, *B, *bias;
    float *C;
} job;

static void run_ours(const job *j)
{
    nn_epilogue e = { .bias = j->bias, .act = NN_ACT_RELU };
    nn_gemm_epi(j->s.M, j->s.N, j->s.K, j->A, j->s.K, j->B, j->s.N, j->C, j->s.N, &e);
}

// The separate pass as models/cpu/conv.c's epi_row runs it (-O3, vectorized).
static void bias_relu(float *restrict y, float b, int n)
{
    for (int i = 0; i < n; i++) {
        float v = y[i] + b;
        y[i] = v > 0 ? v : 0;
    }
}

static void run_blas(const job *j)
{
    int M = j->s.M, N = j->s.N, K = j->s.K;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, j->A, K, j->B, N, 0, j->C, N);
    for (int m = 0; m < M; m++)
        bias_relu(j->C + (size_t)m * N, j->bias[m], N);
}

static void run_blas_only(const job *j)
{
    int M = j->s.M, N = j->s.N, K = j->s.K;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1, j->A, K, j->B, N, 0, j->C, N);
}

// Seconds per call of fn over a batch of `calls`.
static double batch(void (*fn)(const job *), const job *j, int calls)
{
    double t0 = now();
    for (int i = 0; i < calls; i++)
        fn(j);
    return (now() - t0) / calls;
}

// 64-byte aligned, as reel's tensors are (models/ir.c).
static float *rnd_array(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench-gemm-kernel: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / RAND_MAX * 2 - 1;
    return p;
}

static void bench(shape s, int repeat)
{
    job j = { .s = s };
    float *A = rnd_array((size_t)s.M * s.K), *B = rnd_array((size_t)s.K * s.N), *bias = rnd_array((size_t)s.M);
    j.A = A, j.B = B, j.bias = bias;
    j.C = rnd_array((size_t)s.M * s.N);
    void (*fns[3])(const job *) = { run_ours, run_blas, run_blas_only };
    double *t[3];
    batch(run_blas, &j, 1); // warm up both, then size the batches
    double one = batch(run_ours, &j, 1);
    int calls = (int)(0.01 / (one > 1e-9 ? one : 1e-9)) + 1;
    for (int f = 0; f < 3; f++)
        t[f] = malloc((size_t)repeat * sizeof *t[f]);
    for (int r = 0; r < repeat; r++)
        for (int f = 0; f < 3; f++)
            t[f][r] = batch(fns[f], &j, calls);
    double flop = 2.0 * s.M * s.N * s.K, g[3];
    for (int f = 0; f < 3; f++) {
        g[f] = flop / median(t[f], repeat) * 1e-9;
        free(t[f]);
    }
    printf("%5d %5d %6d | %8.1f %10.1f %10.1f | %5.2f\n", s.M, s.K, s.N, g[0], g[1], g[2], g[0] / g[1]);
    free(A);
    free(B);
    free(bias);
    free(j.C);
}

int main(int argc, char **argv)
{
    int repeat = argc > 1 ? atoi(argv[1]) : 9;
    if (repeat < 1 || repeat > 1000)
        repeat = 9;
    openblas_set_num_threads(1);
    reel_blas_setup();
    printf("single-threaded, GFLOP/s, median of %d; OpenBLAS %s kernels\n", repeat, reel_blas_corename());
    printf("    M     K      N |     ours  blas+epi  blas only | ours/(blas+epi)\n");
    srand(1);
    if (argc > 2) {
        for (int i = 2; i < argc; i++) {
            shape s;
            if (sscanf(argv[i], "%dx%dx%d", &s.M, &s.K, &s.N) != 3 || s.M < 1 || s.K < 1 || s.N < 1) {
                fprintf(stderr, "bench-gemm-kernel: %s is not MxKxN\n", argv[i]);
                return 2;
            }
            bench(s, repeat);
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof mobilenet / sizeof *mobilenet; i++)
        bench(mobilenet[i], repeat);
    return 0;
}

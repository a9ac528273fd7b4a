// Single-threaded SGEMM with a fused epilogue, for Conv (pointwise and
// im2col) and Gemm. Only models/cpu/ (and its tests and benchmarks) include
// this.
#ifndef REEL_MODELS_CPU_MICROGEMM_H
#define REEL_MODELS_CPU_MICROGEMM_H

#include <stdbool.h>
#include <stdint.h>

// Fused epilogue applied to each output element before it is stored:
// y = act(acc + bias[row] + res[row*ldr + col]).
enum { NN_ACT_NONE, NN_ACT_RELU, NN_ACT_CLIP };
typedef struct nn_epilogue {
    const float *bias;   // per row of C (index = row within this call), NULL: none
    const float *res;    // residual with its own row stride ldr, NULL: none
    int64_t ldr;
    int act;             // NN_ACT_*
    float lo, hi;        // NN_ACT_CLIP bounds
    // Non-temporal stores for C's vectors (where aligned): for outputs far
    // bigger than the caches, whose lines would otherwise be read from
    // memory before they are overwritten.
    bool stream;
} nn_epilogue;

// C[M,N] (row stride ldc) = A[M,K] (row-major, stride lda) * B[K,N] (row-major, stride ldb), then the
// epilogue (e may be NULL: plain product). C is written, its old contents never used (no beta).
// Single-threaded; no heap allocation (pack buffers on the stack, <= 64 KiB);
// callers split the N (or M) range across threads themselves.
//
// M <= 0 or N <= 0: nothing is written. K == 0: C = act(bias + res), and A
// and B are not read (they may be NULL). C must not overlap A, B or res:
// with K above one block (256) C holds partial sums before the epilogue.
//
// The kernels are chosen once per process for the CPU (AVX-512, AVX2 with
// FMA, or plain C); REEL_GEMM_ISA=avx2 or =generic caps the choice, to test
// or compare the narrower paths.
// Thread-safety: safe from any thread; calls share nothing.
void nn_gemm_epi(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, const nn_epilogue *e);

#endif

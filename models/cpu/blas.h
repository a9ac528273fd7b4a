// reel's use of OpenBLAS: loaded on demand, which kernels it runs. Only
// models/, lib/ (reel_init's parameters) and tests include this;
// reel_model_cpu_info() says which kernels run.
#ifndef REEL_MODELS_CPU_BLAS_H
#define REEL_MODELS_CPU_BLAS_H

// OpenBLAS's thread count to set when it loads (reel_init_params.blas_threads;
// 0: leave it). Call before the first session. Thread-safety: reel_init's.
void reel_blas_configure(int threads);

// Loads OpenBLAS once (without it, GEMMs run in plain C: slow, correct).
// Thread-safety: safe from any thread; sessions call it.
void reel_blas_setup(void);

// Name of the OpenBLAS kernels in use ("SkylakeX", "Haswell", "Prescott"...),
// "none" without OpenBLAS. Thread-safety: safe from any thread.
const char *reel_blas_corename(void);

#endif

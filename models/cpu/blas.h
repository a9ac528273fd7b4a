// reel's use of OpenBLAS: which kernels it runs and how many threads it uses.
// Only models/ includes this (reel_model_cpu_info() says which kernels run).
#ifndef REEL_MODELS_CPU_BLAS_H
#define REEL_MODELS_CPU_BLAS_H

// Name of the OpenBLAS kernels in use ("SkylakeX", "Haswell", "Prescott"...).
// Calls reel_blas_setup() first. Thread-safety: safe from any thread.
const char *reel_blas_corename(void);

// Once per process: when OPENBLAS_CORETYPE is not set and OpenBLAS picked a
// core type whose kernels do not use the AVX2/AVX-512 this CPU has (Debian's
// 0.3.21 falls back to "Prescott" on CPUs it does not know), re-runs
// OpenBLAS's own core selection with the right type (SkylakeX or Haswell).
// Thread-safety: safe from any thread; call before running kernels.
void reel_blas_setup(void);

// OpenBLAS threads (process-wide).
void reel_blas_set_threads(int threads);

#endif

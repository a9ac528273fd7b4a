// Shared helpers of the nn kernels (conv.c, gemm.c, pool.c, norm.c, resize.c).
// Only models/cpu/ includes this.
#ifndef REEL_MODELS_CPU_NN_H
#define REEL_MODELS_CPU_NN_H

#include <math.h>
#include <string.h>

#include "models/op.h"

#define NN_FAIL(err, code, n, ...) return reel_op_fail(err, n, code, __VA_ARGS__)

static inline void nn_set(reel_ir_value *v, reel_dtype dt, int rank, const int64_t *dims)
{
    if (!v)
        return;
    v->dtype = dt;
    v->rank = rank;
    for (int i = 0; i < rank && i < REEL_TENSOR_MAX_RANK; i++)
        v->dims[i] = dims ? dims[i] : REEL_DIM_UNKNOWN;
}

// The tensor of a constant input, or NULL.
static inline const reel_tensor *nn_const(reel_ir_graph *g, const reel_ir_node *n, int i)
{
    reel_ir_value *v = reel_op_input(g, n, i);
    return v ? v->constant : NULL;
}

// The activation a pass fused into this node, applied in place to y[0..len).
void nn_activate(const reel_ir_node *n, float *y, size_t len);
// Checks that n->fused names an activation nn_activate knows.
int nn_check_fused(const reel_ir_node *n, GError **error);

// Runs fn(arg, task, worker) for every task in [0, n_tasks) on ctx->workers'
// threads (worker in [0, ctx->threads), each worker's tasks one after
// another) or, without workers, on the calling thread as worker 0. Returns
// when all are done.
typedef void (*nn_task_fn)(void *arg, int task, int worker);
void nn_parallel(const reel_exec_ctx *ctx, int n_tasks, nn_task_fn fn, void *arg);

// C[M,N] = alpha * op(A) op(B) + beta * C, row-major (wraps cblas_sgemm).
void nn_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc);

// nn_sgemm split over ctx's workers by rows (tall) or columns (wide) of C.
void nn_sgemm_parallel(const reel_exec_ctx *ctx, bool ta, bool tb, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);

// Geometry of a convolution or pooling window over up to 3 spatial dims
// (missing leading dims are 1 with k=1, s=1, p=0, d=1).
typedef struct nn_window {
    int sp;                       // spatial rank as given (1..3)
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
} nn_window;

// Reads kernel (k may come from weights: kernel != NULL), strides, dilations,
// pads/auto_pad, ceil_mode from the node for spatial input dims in[0..sp).
// Unknown input dims give unknown (-1) output dims.
int nn_window_init(const reel_ir_node *n, int sp, const int64_t *in, const int64_t *kernel,
                   bool ceil_allowed, nn_window *w, GError **error);

#endif

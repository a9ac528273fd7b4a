// Gemm and MatMul (numpy semantics: batched, broadcasting, 1-D operands).
#include "models/cpu/microgemm.h"
#include "models/cpu/nn.h"

// ---- Gemm

static int gemm_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *a = reel_op_input(g, n, 0), *b = reel_op_input(g, n, 1), *c = reel_op_input(g, n, 2);
    if (!a || !b)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs A and B");
    if (a->dtype != REEL_DTYPE_FLOAT32 || b->dtype != REEL_DTYPE_FLOAT32 || (c && c->dtype != REEL_DTYPE_FLOAT32))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
    if (a->rank != 2 || b->rank != 2)
        NN_FAIL(error, REEL_EINVAL, n, "A and B must be matrices (ranks %d and %d)", a->rank, b->rank);
    bool ta = reel_ir_attr_int(n, "transA", 0), tb = reel_ir_attr_int(n, "transB", 0);
    int64_t M = a->dims[ta ? 1 : 0], K = a->dims[ta ? 0 : 1], K2 = b->dims[tb ? 1 : 0], N = b->dims[tb ? 0 : 1];
    if (K >= 0 && K2 >= 0 && K != K2)
        NN_FAIL(error, REEL_EINVAL, n, "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, K, K2);
    if (c && c->rank > 2)
        NN_FAIL(error, REEL_EINVAL, n, "C must have rank 0 to 2");
    if (c && c->rank >= 0) {
        int64_t want[2] = { M, N };
        for (int i = 0; i < c->rank; i++) {
            int64_t cd = c->dims[i], wd = want[2 - c->rank + i];
            if (cd >= 0 && wd >= 0 && cd != 1 && cd != wd)
                NN_FAIL(error, REEL_EINVAL, n, "C does not broadcast to [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]", M, N);
        }
    }
    int r = nn_check_fused(n, error);
    if (r)
        return r;
    int64_t od[2] = { M, N };
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, 2, od);
    return 0;
}

// A classifier's Gemm: one row times weights stored [N, K] (transB), plus a
// bias per output. Done as the weights times the row (a column), with the
// bias fused, split over the workers by output.
typedef struct gemv_job {
    const float *w, *x, *bias;
    float *y;
    int N, K, per_task;
} gemv_job;

static void gemv_task(void *arg, int task, int worker)
{
    (void)worker;
    const gemv_job *j = arg;
    int n0 = task * j->per_task, n = MIN(j->per_task, j->N - n0);
    nn_epilogue e = { .bias = j->bias ? j->bias + n0 : NULL, .ldr = 1 };
    nn_gemm_epi(n, 1, j->K, j->w + (size_t)n0 * j->K, j->K, j->x, 1, j->y + n0, 1, &e);
}

// Whether gemv_task can do this Gemm: A one row, B transposed, alpha 1 and
// C (if any) one value per output, added once.
static bool is_gemv(const reel_ir_node *n, const reel_tensor *c, int64_t M, int64_t N)
{
    bool ta = reel_ir_attr_int(n, "transA", 0), tb = reel_ir_attr_int(n, "transB", 0);
    float alpha = reel_ir_attr_float(n, "alpha", 1), beta = reel_ir_attr_float(n, "beta", 1);
    bool per_column = !c || (beta == 1 && c->rank >= 1 && c->shape[c->rank - 1] == N &&
                             reel_tensor_count(c->rank, c->shape) == N);
    return M == 1 && !ta && tb && alpha == 1 && per_column;
}

static int gemm_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    bool ta = reel_ir_attr_int(n, "transA", 0), tb = reel_ir_attr_int(n, "transB", 0);
    float alpha = reel_ir_attr_float(n, "alpha", 1), beta = reel_ir_attr_float(n, "beta", 1);
    const reel_tensor *a = in[0], *b = in[1], *c = n->n_inputs > 2 ? in[2] : NULL;
    int64_t M = out[0]->shape[0], N = out[0]->shape[1], K = a->shape[ta ? 0 : 1];
    float *y = out[0]->data;
    if (is_gemv(n, c, M, N)) {
        int threads = ctx->workers ? ctx->threads : 1;
        gemv_job j = { b->data, a->data, c ? c->data : NULL, y, (int)N, (int)K, 0 };
        // Whole cache lines of y per task; one task when the product is small.
        j.per_task = (double)N * K < 1e5 ? (int)N : (int)((N + threads - 1) / threads + 15) / 16 * 16;
        nn_parallel(ctx, (j.N + j.per_task - 1) / j.per_task, gemv_task, &j);
        nn_activate(n, y, (size_t)N);
        return 0;
    }
    float cb = 0;
    if (c && beta != 0) {
        int64_t cm = c->rank == 2 ? c->shape[0] : 1, cn = c->rank >= 1 ? c->shape[c->rank - 1] : 1;
        const float *cd = c->data;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                y[i * N + j] = beta * cd[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
        cb = 1;
    }
    nn_sgemm_parallel(ctx, ta, tb, (int)M, (int)N, (int)K, alpha, a->data, (int)a->shape[1], b->data,
                      (int)b->shape[1], cb, y, (int)N);
    nn_activate(n, y, (size_t)(M * N));
    return 0;
}

const reel_op nn_op_gemm = { "Gemm", gemm_infer, NULL, gemm_run };

// ---- MatMul

// Broadcast shapes of A [..., M, K] and B [..., K, N] (1-D operands made 2-D).
typedef struct mm_geom {
    int rank;                      // of the batch dims
    int64_t batch[REEL_TENSOR_MAX_RANK], abatch[REEL_TENSOR_MAX_RANK], bbatch[REEL_TENSOR_MAX_RANK];
    int64_t M, K, N;
    int out_rank;
    int64_t out[REEL_TENSOR_MAX_RANK];
} mm_geom;

static int mm_geom_init(const reel_ir_node *n, int ar, const int64_t *ad, int br, const int64_t *bd, mm_geom *m,
                        GError **error)
{
    if (ar < 1 || br < 1)
        NN_FAIL(error, REEL_EINVAL, n, "operands must have rank at least 1");
    int64_t M = ar == 1 ? 1 : ad[ar - 2], K = ad[ar - 1];
    int64_t K2 = br == 1 ? bd[0] : bd[br - 2], N = br == 1 ? 1 : bd[br - 1];
    if (K >= 0 && K2 >= 0 && K != K2)
        NN_FAIL(error, REEL_EINVAL, n, "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, K, K2);
    int an = ar > 2 ? ar - 2 : 0, bn = br > 2 ? br - 2 : 0;
    m->rank = an > bn ? an : bn;
    for (int i = 0; i < m->rank; i++) {
        int64_t x = i - (m->rank - an) >= 0 ? ad[i - (m->rank - an)] : 1;
        int64_t y = i - (m->rank - bn) >= 0 ? bd[i - (m->rank - bn)] : 1;
        m->abatch[i] = x;
        m->bbatch[i] = y;
        if (x >= 0 && y >= 0 && x != y && x != 1 && y != 1)
            NN_FAIL(error, REEL_EINVAL, n, "batch dims %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " do not broadcast", x, y);
        m->batch[i] = x == 1 ? y : y == 1 ? x : (x < 0 ? y : x);
    }
    m->M = M, m->K = K, m->N = N;
    m->out_rank = 0;
    for (int i = 0; i < m->rank; i++)
        m->out[m->out_rank++] = m->batch[i];
    if (ar > 1)
        m->out[m->out_rank++] = M;
    if (br > 1)
        m->out[m->out_rank++] = N;
    return 0;
}

static int matmul_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *a = reel_op_input(g, n, 0), *b = reel_op_input(g, n, 1);
    if (!a || !b)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs A and B");
    if (a->dtype != REEL_DTYPE_FLOAT32 || b->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
    reel_ir_value *y = reel_op_output(g, n, 0);
    if (a->rank < 0 || b->rank < 0) {
        y->dtype = REEL_DTYPE_FLOAT32;
        y->rank = -1;
        return 0;
    }
    mm_geom m;
    int r = mm_geom_init(n, a->rank, a->dims, b->rank, b->dims, &m, error);
    if (r)
        return r;
    nn_set(y, REEL_DTYPE_FLOAT32, m.out_rank, m.out);
    return 0;
}

static int matmul_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *a = in[0], *b = in[1];
    mm_geom m;
    if (mm_geom_init(n, a->rank, a->shape, b->rank, b->shape, &m, NULL))
        return REEL_EINVAL;
    const float *A = a->data, *B = b->data;
    float *Y = out[0]->data;
    int64_t MK = m.M * m.K, KN = m.K * m.N, MN = m.M * m.N;
    int64_t total = 1, bcount = 1;
    for (int i = 0; i < m.rank; i++) {
        total *= m.batch[i];
        bcount *= m.bbatch[i];
    }
    // B shared by every batch and A contiguous: one tall GEMM.
    if (bcount == 1) {
        nn_sgemm_parallel(ctx, false, false, (int)(total * m.M), (int)m.N, (int)m.K, 1, A, (int)m.K, B, (int)m.N, 0,
                          Y, (int)m.N);
        return 0;
    }
    for (int64_t t = 0; t < total; t++) {
        int64_t rem = t, ai = 0, bi = 0, astride = 1, bstride = 1;
        for (int i = m.rank - 1; i >= 0; i--) {
            int64_t idx = rem % m.batch[i];
            rem /= m.batch[i];
            ai += (m.abatch[i] == 1 ? 0 : idx) * astride;
            bi += (m.bbatch[i] == 1 ? 0 : idx) * bstride;
            astride *= m.abatch[i];
            bstride *= m.bbatch[i];
        }
        nn_sgemm_parallel(ctx, false, false, (int)m.M, (int)m.N, (int)m.K, 1, A + ai * MK, (int)m.K, B + bi * KN,
                          (int)m.N, 0, Y + t * MN, (int)m.N);
    }
    return 0;
}

const reel_op nn_op_matmul = { "MatMul", matmul_infer, NULL, matmul_run };

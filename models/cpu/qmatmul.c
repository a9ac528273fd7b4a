// MatMulInteger and QLinearMatMul through the int8 GEMM (qgemm.h): A's
// rows (the activations, uint8 after the shift) copied with their sums, B
// (the weights, int8 after the shift) packed into panels, once when it is a
// constant (kept in ctx->state for the ISA it was packed for).
#include "models/cpu/qfast.h"

// B packed: bcount matrices of [Np/nr][Kp/4][nr][4] bytes, and per matrix
// and column (Np of them) the column sum and zero point. One allocation.
typedef struct bpack {
    int nr;
    int64_t count, K, N, Np, Kp;
    int32_t *sum, *zp;
    uint8_t *panels;
} bpack;

static size_t bpack_bytes(int64_t count, int64_t K, int64_t N, int nr)
{
    int64_t np = qgemm_np(N, nr);
    return sizeof(bpack) + 8 * (size_t)(count * np) + (size_t)(count * np * qgemm_kp(K)) + 64;
}

typedef struct brow_src {
    const uint8_t *b; // one matrix [K, N]
    int64_t N;
    uint8_t flip;     // 0x80: uint8 shifted to int8
} brow_src;

static const uint8_t *b_row(void *arg, int64_t k, int64_t n, int64_t len, uint8_t *buf)
{
    const brow_src *s = arg;
    const uint8_t *src = s->b + k * s->N + n;
    if (!s->flip)
        return src;
    for (int64_t j = 0; j < len; j++)
        buf[j] = src[j] ^ 0x80;
    return buf;
}

static bpack *bpack_make(void *mem, const qmm_geom *m, const reel_tensor *b, const reel_tensor *zb, int nr)
{
    bpack *p = mem;
    p->nr = nr, p->count = m->bcount, p->K = m->K, p->N = m->N;
    p->Np = qgemm_np(m->N, nr), p->Kp = qgemm_kp(m->K);
    p->sum = (int32_t *)(((uintptr_t)(p + 1) + 63) & ~(uintptr_t)63);
    p->zp = p->sum + p->count * p->Np;
    p->panels = (uint8_t *)(p->zp + p->count * p->Np);
    bool u8 = b->dtype == REEL_DTYPE_UINT8;
    int64_t nz = zb ? reel_tensor_count(zb->rank, zb->shape) : 0;
    for (int64_t i = 0; i < p->count; i++) {
        brow_src s = { (const uint8_t *)b->data + i * m->K * m->N, m->N, u8 ? 0x80 : 0 };
        qgemm_pack_panels(nr, m->K, 0, m->N, true, b_row, &s, p->panels + i * p->Np * p->Kp, p->sum + i * p->Np);
        int32_t *z = p->zp + i * p->Np;
        for (int64_t n = 0; n < p->Np; n++) {
            int64_t zi = nz <= 1 ? 0 : nz == m->N ? n % m->N : i * m->N + n % m->N;
            int32_t v = !nz || n >= m->N ? 0 : u8 ? (int32_t)((const uint8_t *)zb->data)[zi]
                                                    : (int32_t)((const int8_t *)zb->data)[zi];
            z[n] = u8 && n < m->N ? v - 128 : v;
        }
    }
    return p;
}

size_t qmm_fast_scratch(const qmm_geom *m)
{
    int64_t kp = qgemm_kp(m->K), mn = m->acount * m->M;
    // A's rows, zero points and sums; B packed (when not kept); multipliers.
    return (size_t)(mn * kp) + 8 * (size_t)mn + bpack_bytes(m->bcount, m->K, m->N, 32) + 8 * (size_t)m->N + 256;
}

typedef struct mm_job {
    const qmm_geom *m;
    qgemm_isa isa;
    const bpack *bp;
    const uint8_t *a;
    const int32_t *azp, *arr;
    int32_t *C;
    const requant *q;
    void *Y;
    const float *mult;
    bool zb_one;
    int64_t m_per, m_tasks, n_per, n_tasks;
} mm_job;

static void mm_task(void *arg, int task, int worker)
{
    (void)worker;
    const mm_job *j = arg;
    const qmm_geom *m = j->m;
    int64_t nt = task % j->n_tasks, mt = task / j->n_tasks % j->m_tasks, t = task / (j->n_tasks * j->m_tasks);
    int64_t ai, bi;
    quant_mm_batch(m, t, &ai, &bi);
    const bpack *bp = j->bp;
    qgemm_problem p = { .a = j->a + ai * m->M * bp->Kp, .lda = (size_t)bp->Kp, .a_unsigned = true,
                        .a_zp = j->azp + ai * m->M, .a_rr = j->arr + ai * m->M,
                        .b = bp->panels + bi * bp->Np * bp->Kp, .kq = bp->Kp / 4, .nr = bp->nr,
                        .b_sum = bp->sum + bi * bp->Np, .b_zp = bp->zp + bi * bp->Np, .b_zp_one = j->zb_one };
    p.out.ldc = m->N;
    if (j->q) {
        p.out.y = (uint8_t *)j->Y + t * m->M * m->N;
        p.out.y_signed = j->q->dt == REEL_DTYPE_INT8;
        p.out.mult = j->mult, p.out.mult_per_col = true;
        p.out.zp = j->q->zp, p.out.lo = j->q->lo, p.out.hi = j->q->hi;
    } else {
        p.out.c32 = j->C + t * m->M * m->N;
    }
    int64_t m0 = mt * j->m_per, n0 = nt * j->n_per;
    qgemm_compute(j->isa, &p, m0, MIN(m->M, m0 + j->m_per), n0, MIN(m->N, n0 + j->n_per));
}

int qmm_fast(const qmm_geom *m, const reel_tensor *a, const reel_tensor *za, const reel_tensor *b,
             const reel_tensor *zb, int32_t *C, const requant *q, void *Y, bool b_const, const reel_exec_ctx *ctx)
{
    qgemm_isa isa = qgemm_isa_current();
    int nr = qgemm_panel_cols(isa);
    if (ctx->scratch_size < qmm_fast_scratch(m))
        return REEL_EINVAL;
    int64_t kp = qgemm_kp(m->K), mn = m->acount * m->M;
    uint8_t *A = ctx->scratch;
    int32_t *azp = (int32_t *)(A + ((mn * kp + 63) & ~(int64_t)63)), *arr = azp + mn;
    char *rest = (char *)(arr + mn);
    // B: packed once for this ISA's panels when it is a constant.
    bpack *bp = b_const && ctx->state ? *ctx->state : NULL;
    if (bp && bp->nr != nr)
        bp = NULL; // packed for another ISA (tests switch them): pack here
    if (!bp && b_const && ctx->state && !*ctx->state) {
        bp = bpack_make(g_malloc(bpack_bytes(m->bcount, m->K, m->N, nr)), m, b, zb, nr);
        *ctx->state = bp;
    } else if (!bp) {
        bp = bpack_make(rest, m, b, zb, nr);
        rest += bpack_bytes(m->bcount, m->K, m->N, nr);
    }
    // A's rows as uint8, padded to Kp, with zero points and sums.
    bool as = a->dtype == REEL_DTYPE_INT8;
    int64_t nz = za ? reel_tensor_count(za->rank, za->shape) : 0;
    for (int64_t r = 0; r < mn; r++) {
        const uint8_t *src = (const uint8_t *)a->data + r * m->K;
        uint8_t *dst = A + r * kp;
        uint8_t flip = as ? 0x80 : 0;
        uint32_t sum = 0;
        for (int64_t k = 0; k < m->K; k++) {
            dst[k] = src[k] ^ flip;
            sum += dst[k];
        }
        memset(dst + m->K, 0, (size_t)(kp - m->K));
        int64_t zi = nz <= 1 ? 0 : nz == m->M ? r % m->M : r;
        int32_t z = !nz ? 0 : as ? ((const int8_t *)za->data)[zi] : ((const uint8_t *)za->data)[zi];
        z += as ? 128 : 0;
        azp[r] = z;
        arr[r] = (int32_t)(sum - (uint32_t)m->K * (uint32_t)z);
    }
    float *mult = NULL;
    if (q) {
        mult = (float *)(((uintptr_t)rest + 7) & ~(uintptr_t)7);
        for (int64_t n = 0; n < m->N; n++)
            mult[n] = q->mult[q->n_mult == 1 ? 0 : n];
    }
    int64_t threads = ctx->workers ? ctx->threads : 1;
    mm_job j = { .m = m, .isa = isa, .bp = bp, .a = A, .azp = azp, .arr = arr, .C = C, .q = q, .Y = Y,
                 .mult = mult };
    j.zb_one = !zb || reel_tensor_count(zb->rank, zb->shape) <= 1;
    // Rows in blocks of 8; columns split too when the rows are few.
    j.m_tasks = MAX(1, MIN((m->M + 7) / 8, 4 * threads));
    j.m_per = ((m->M + j.m_tasks - 1) / j.m_tasks + 7) / 8 * 8;
    j.m_tasks = (m->M + j.m_per - 1) / j.m_per;
    j.n_tasks = MAX(1, MIN((m->N + 31) / 32, (2 * threads + j.m_tasks * m->total - 1) / (j.m_tasks * m->total)));
    j.n_per = ((m->N + j.n_tasks - 1) / j.n_tasks + 31) / 32 * 32;
    j.n_tasks = (m->N + j.n_per - 1) / j.n_per;
    nn_parallel(ctx, (int)(m->total * j.m_tasks * j.n_tasks), mm_task, &j);
    return 0;
}

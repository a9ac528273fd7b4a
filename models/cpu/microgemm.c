// Single-threaded SGEMM with a fused epilogue (see microgemm.h).
//
// Columns in whole vectors go through register tiles of mr rows × nv
// vectors: each step k broadcasts A[row][k] for the mr rows and multiplies
// it with nv vectors of B's row k, the bias already in the sums. A (the
// weights) is read in place, and so is B unless many tile rows reuse a
// panel of it (then a kc × nr copy on the stack). The last N % VL columns
// are dot products instead (A's rows against B's columns, copied as rows),
// so a column left over costs 1/VL of a vector, not a vector. K is cut into
// blocks: C holds the partial sums between blocks and the residual and
// activation run with the last one, on the registers before the store.
//
// Vector width and tile sizes follow the registers, so the kernels are
// compiled once per instruction set, chosen once at run time:
//   AVX-512  16 floats, tiles 8 × 48 (24 of 32 zmm hold sums)
//   AVX2      8 floats, tiles 6 × 16 (12 of 16 ymm)
//   plain C   4 floats, tiles 4 × 8  (SSE2 on x86-64, NEON elsewhere)
// GCC keeps generic vectors wider than the target's in memory, not in
// registers, so each width needs its own vector types: the kernels sit at
// the end of this file, which includes itself once per width (FFmpeg's
// template idiom, in one file).
#ifndef VL

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "models/cpu/microgemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

enum {
    KC = 256,     // K block
    MC = 256,     // rows per A block (down to whole tiles): MC × KC floats stay in L2
    MR_MAX = 8,   // the largest tiles of any width
    NV_MAX = 3,
    NR_MAX = 48,  // floats per packed B row
    BUF_FLOATS = KC * NR_MAX, // the stack buffer: 48 KiB
    DR_MAX = 4,   // dot tiles: rows × columns
    DC_MAX = 4,
};

typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));

// One B panel against a block of A's rows.
typedef struct panel {
    const float *a; // A at (row0, k0)
    const float *b; // B panel at (k0, col0): packed or in place; B^T for dots
    float *c;       // C at (row0, col0)
    ptrdiff_t lda, ldb, ldc;
    int rows, kc;
    int ncols;  // columns: nv whole vectors, or fewer than a vector for dots
    bool add;   // add the sums to C (a later K block)
    bool last;  // last K block: run the epilogue
    const nn_epilogue *e;
    int row0, col0; // where C is in the caller's C: bias and residual index
} panel;

// One vector width's kernels.
typedef struct isa {
    int vl, mr, nv; // floats per vector, largest tile
    void (*panel)(const panel *p);
    void (*dots)(const panel *p);
    void (*pack)(const float *b, ptrdiff_t ldb, int kc, int nr, float *dst);
} isa;

#define INLINE static inline __attribute__((always_inline))

// C[i][j] of the panel from a dot product's sum: partial sums and epilogue.
INLINE void finish(const panel *p, int i, int j, float y)
{
    float *c = p->c + i * p->ldc + j;
    if (p->add)
        y += *c;
    const nn_epilogue *e = p->e;
    if (p->last && e) {
        int row = p->row0 + i, col = p->col0 + j;
        if (e->bias)
            y += e->bias[row];
        if (e->res)
            y += e->res[row * e->ldr + col];
        if (e->act == NN_ACT_RELU)
            y = y > 0 ? y : 0;
        else if (e->act == NN_ACT_CLIP)
            y = y < e->lo ? e->lo : y > e->hi ? e->hi : y;
    }
    *c = y;
}

// B[0..kc)[0..ncols) transposed into dst: column j as row j, kcp floats
// apart, zero from kc to kcp.
static void pack_bt(const float *b, ptrdiff_t ldb, int kc, int ncols, int kcp, float *dst)
{
    for (int k = 0; k < kc; k++, b += ldb)
        for (int j = 0; j < ncols; j++)
            dst[j * kcp + k] = b[j];
    for (int j = 0; j < ncols; j++)
        memset(dst + j * kcp + kc, 0, (size_t)(kcp - kc) * sizeof *dst);
}

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define ID(x) CAT(x, SUFFIX)

#define VL 4
#define MR 4
#define NV 2
#define DR 4
#define DC 2
#define TARGET
#define SUFFIX generic
#include "microgemm.c"

#if defined(__x86_64__) || defined(__i386__)
#define VL 8
#define MR 6
#define NV 2
#define DR 4
#define DC 2
#define TARGET __attribute__((target("avx2,fma")))
#define SUFFIX avx2
#include "microgemm.c"

#define VL 16
#define MR 8
#define NV 3
#define DR 4
#define DC 4
#define TARGET __attribute__((target("avx512f")))
#define SUFFIX avx512
#include "microgemm.c"
#endif

// The widest the CPU runs, capped by REEL_GEMM_ISA.
static const isa *choose(void)
{
    const char *want = getenv("REEL_GEMM_ISA");
    int cap = !want ? 2 : strcmp(want, "generic") == 0 ? 0 : strcmp(want, "avx2") == 0 ? 1 : 2;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (cap >= 2 && __builtin_cpu_supports("avx512f"))
        return &isa_avx512;
    if (cap >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &isa_avx2;
#else
    (void)cap;
#endif
    return &isa_generic;
}

static const isa *get_isa(void)
{
    // Racing first callers choose the same; the pointer is the only state.
    static _Atomic(const isa *) chosen;
    const isa *s = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (!s) {
        s = choose();
        atomic_store_explicit(&chosen, s, memory_order_relaxed);
    }
    return s;
}

// K in even blocks of at most kmax (a multiple of 16): returns how many,
// *kb their length, a whole number of 16 floats so that the dot products'
// partial vector of A comes once, at K's end.
static int k_blocks(int K, int kmax, int *kb)
{
    int blocks = K > 0 ? (K + kmax - 1) / kmax : 1;
    *kb = ((K + blocks - 1) / blocks + 15) / 16 * 16;
    return blocks;
}

// Columns [0, N), a whole number of vectors: register tiles.
static void gemm_tiles(const isa *s, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                       float *C, int ldc, const nn_epilogue *e, float *buf)
{
    int kb, blocks = k_blocks(K, KC, &kb), nr = s->nv * s->vl, mc = MC / s->mr * s->mr;
    // B is read in place unless many tile rows reuse each panel: on Zen 4 a
    // copy gains nothing even for strides of 4 KiB multiples, and with few
    // rows its strided reads stall the FMAs behind it. A copy read by 16 rows
    // or more costs little and keeps the panel's rows from fighting over
    // cache sets where caches are smaller.
    bool pack = M > 16 * s->mr;
    for (int i = 0, k0 = 0; i < blocks; i++, k0 += kb) {
        int kc = K - k0 < kb ? K - k0 : kb;
        for (int m0 = 0; m0 < M; m0 += mc) {
            // K == 0: A and B may be NULL; the kernels read neither.
            panel p = { .a = kc ? A + (ptrdiff_t)m0 * lda + k0 : buf,
                        .lda = kc ? lda : 0,
                        .ldc = ldc,
                        .rows = M - m0 < mc ? M - m0 : mc,
                        .kc = kc,
                        .add = i > 0,
                        .last = i == blocks - 1,
                        .e = e,
                        .row0 = m0 };
            for (int j0 = 0; j0 < N; j0 += nr) {
                p.ncols = N - j0 < nr ? N - j0 : nr;
                p.c = C + (ptrdiff_t)m0 * ldc + j0;
                p.col0 = j0;
                p.b = kc ? B + (ptrdiff_t)k0 * ldb + j0 : buf;
                p.ldb = ldb;
                if (pack && kc) {
                    s->pack(p.b, ldb, kc, p.ncols, buf);
                    p.b = buf;
                    p.ldb = p.ncols;
                }
                s->panel(&p);
            }
        }
    }
}

// Columns [col0, col0 + N) of the caller's C, N < one vector: dot products,
// B's columns copied as rows, K in blocks as long as the buffer holds (a
// matrix-vector product, N = 1, takes 12288 at a time).
static void gemm_dots(const isa *s, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, const nn_epilogue *e, int col0, float *buf)
{
    int kb, blocks = k_blocks(K, BUF_FLOATS / N / 16 * 16, &kb);
    for (int i = 0, k0 = 0; i < blocks; i++, k0 += kb) {
        int kc = K - k0 < kb ? K - k0 : kb, kcp = (kc + s->vl - 1) / s->vl * s->vl;
        pack_bt(kc ? B + (ptrdiff_t)k0 * ldb : buf, ldb, kc, N, kcp, buf);
        panel p = { .a = kc ? A + k0 : buf,
                    .b = buf,
                    .c = C,
                    .lda = kc ? lda : 0,
                    .ldb = kcp,
                    .ldc = ldc,
                    .rows = M,
                    .kc = kc,
                    .ncols = N,
                    .add = i > 0,
                    .last = i == blocks - 1,
                    .e = e,
                    .col0 = col0 };
        s->dots(&p);
    }
}

void nn_gemm_epi(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                 float *C, int ldc, const nn_epilogue *e)
{
    if (M <= 0 || N <= 0)
        return;
    const isa *s = get_isa();
    _Alignas(64) float buf[BUF_FLOATS];
    int nfull = N / s->vl * s->vl;
    // With both tiles and dots, MC rows at a time: the dots then read that
    // block of A from L2 right after the tiles did, not all of A once more.
    int step = nfull > 0 && nfull < N ? MC : M;
    for (int m0 = 0; m0 < M; m0 += step) {
        int rows = M - m0 < step ? M - m0 : step;
        nn_epilogue sub;
        const nn_epilogue *es = e;
        if (e && m0) {
            sub = *e;
            sub.bias = e->bias ? e->bias + m0 : NULL;
            sub.res = e->res ? e->res + (ptrdiff_t)m0 * e->ldr : NULL;
            es = &sub;
        }
        const float *a = K ? A + (ptrdiff_t)m0 * lda : A;
        float *c = C + (ptrdiff_t)m0 * ldc;
        if (nfull > 0)
            gemm_tiles(s, rows, nfull, K, a, lda, B, ldb, c, ldc, es, buf);
        if (nfull < N)
            gemm_dots(s, rows, N - nfull, K, a, lda, K ? B + nfull : B, ldb, c + nfull, ldc, es, nfull, buf);
    }
#if defined(__x86_64__) || defined(__i386__)
    // Streaming stores are weakly ordered: done before C is handed on.
    if (e && e->stream)
        _mm_sfence();
#endif
}

#else // VL: the kernels for one vector width (VL floats, MR × NV tiles, DR × DC dot tiles)

typedef float ID(vf) __attribute__((vector_size(VL * 4)));
typedef int32_t ID(vi) __attribute__((vector_size(VL * 4)));
// Unaligned and aliasing access, as the intrinsics headers spell it.
typedef float ID(vfu) __attribute__((vector_size(VL * 4), aligned(4), may_alias));
#define vf ID(vf)
#define vi ID(vi)
#define vfu ID(vfu)
#define activate ID(activate)
#define tile ID(tile)
#define tile_rows ID(tile_rows)
#define reduce4 ID(reduce4)
#define dot_tile ID(dot_tile)
#define dot_cols ID(dot_cols)

// Every kernel helper is compiled for the width's target: intrinsics may
// only be inlined into functions built for their instruction set.
#define KERNEL static inline __attribute__((always_inline)) TARGET

// x broadcast to all lanes: x - 0 is x exactly, so GCC folds it away (x + 0
// is not: -0 + 0 = +0).
#define SPLAT(x) ((x) - (vf){ 0 })

// Per width, in one instruction where the target has one (all macros:
// vectors by value would change the ABI between the targets, which GCC
// warns about):
//   VMAX(a, b)  a > b ? a : b, lane by lane (b where either is NaN, as maxps)
//   VMIN(a, b)  a < b ? a : b
//   FMA(a, b, c)  a * b + c, fused (GCC does not fuse it under -std=c11)
//   LOAD_PART(x, p, n)  the first n < VL lanes of *x from p, nothing past
#if VL == 16
#define VMAX(a, b) ((vf)_mm512_max_ps((__m512)(a), (__m512)(b)))
#define VMIN(a, b) ((vf)_mm512_min_ps((__m512)(a), (__m512)(b)))
#define FMA(a, b, c) ((vf)_mm512_fmadd_ps((__m512)(a), (__m512)(b), (__m512)(c)))
#define LOAD_PART(x, p, n) (*(x) = (vf)_mm512_maskz_loadu_ps((__mmask16)((1u << (n)) - 1), p))
#define STREAMS 1
#define STREAM(p, x) _mm512_stream_ps(p, (__m512)(x))
#elif VL == 8
#define VMAX(a, b) ((vf)_mm256_max_ps((__m256)(a), (__m256)(b)))
#define VMIN(a, b) ((vf)_mm256_min_ps((__m256)(a), (__m256)(b)))
#define FMA(a, b, c) ((vf)_mm256_fmadd_ps((__m256)(a), (__m256)(b), (__m256)(c)))
#define LOAD_PART(x, p, n) (*(x) = (vf)_mm256_maskload_ps(p, (__m256i)((vi){ 0, 1, 2, 3, 4, 5, 6, 7 } < (n))))
#define STREAMS 1
#define STREAM(p, x) _mm256_stream_ps(p, (__m256)(x))
#else
#define SELECT(m, a, b) ((vf)(((vi)(a) & (m)) | ((vi)(b) & ~(m))))
#define VMAX(a, b) SELECT((a) > (b), a, b)
#define VMIN(a, b) SELECT((a) < (b), a, b)
#define FMA(a, b, c) ((a) * (b) + (c))
#define STREAMS 0 // plain stores: the baseline has no portable streaming store
#define STREAM(p, x) (*(vfu *)(p) = (x))
#define LOAD_PART(x, p, n)               \
    do {                                 \
        for (int l_ = 0; l_ < (n); l_++) \
            (*(x))[l_] = (p)[l_];        \
    } while (0)
#endif

// Relu and Clip send NaN where nn_activate does (`y > 0 ? y : 0`, `y < lo ?
// lo : y > hi ? hi : y`).
KERNEL void activate(vf *x, int act, float lo, float hi)
{
    if (act == NN_ACT_RELU)
        *x = VMAX(*x, (vf){ 0 });
    else if (act == NN_ACT_CLIP)
        *x = VMAX(SPLAT(lo), VMIN(SPLAT(hi), *x));
}

// One mr × nv tile at row r of the panel; mr and nv are constants once
// inlined, so acc lives in registers. The bias starts the first block's
// sums.
KERNEL void tile(int mr, int nv, const panel *p, int r)
{
    const float *a = p->a + r * p->lda, *b = p->b;
    float *c = p->c + r * p->ldc;
    ptrdiff_t lda = p->lda, ldb = p->ldb, ldc = p->ldc;
    const nn_epilogue *e = p->e;
    const float *bias = !p->add && e && e->bias ? e->bias + p->row0 + r : NULL;
    vf acc[MR_MAX][NV_MAX] = { { { 0 } } }; // all set below; GCC cannot see it
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            if (p->add)
                acc[i][v] = *(const vfu *)(c + i * ldc + v * VL);
            else
                acc[i][v] = bias ? SPLAT(bias[i]) : (vf){ 0 };
    for (int k = 0; k < p->kc; k++, b += ldb) {
        if ((k & 15) == 0)
#pragma GCC unroll 8
            for (int i = 0; i < mr; i++)
                __builtin_prefetch(a + (i + mr) * lda + k);
        vf bk[NV_MAX];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            bk[v] = *(const vfu *)(b + v * VL);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            vf ai = SPLAT(a[i * lda + k]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[i][v] = FMA(ai, bk[v], acc[i][v]);
        }
    }
    // The epilogue in locals: the stores to C may alias e's fields.
    const float *res = NULL;
    ptrdiff_t ldr = 0;
    int act = NN_ACT_NONE;
    float lo = 0, hi = 0;
    bool nt = false;
    if (p->last && e) {
        res = e->res ? e->res + (p->row0 + r) * e->ldr + p->col0 : NULL;
        ldr = e->ldr;
        act = e->act;
        lo = e->lo;
        hi = e->hi;
        nt = STREAMS && e->stream && (uintptr_t)c % (VL * 4) == 0 && ldc % VL == 0;
    }
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            vf x = acc[i][v];
            if (res)
                x += *(const vfu *)(res + i * ldr + v * VL);
            activate(&x, act, lo, hi);
            if (nt)
                STREAM(c + i * ldc + v * VL, x);
            else
                *(vfu *)(c + i * ldc + v * VL) = x;
        }
    }
}

KERNEL void tile_rows(int mr, const panel *p, int r)
{
    int nv = p->ncols / VL;
    if (NV >= 3 && nv == 3)
        tile(mr, 3, p, r);
    else if (NV >= 2 && nv == 2)
        tile(mr, 2, p, r);
    else
        tile(mr, 1, p, r);
}

// All rows of the panel: full MR tiles, then the rest as 4 + 2 + 1.
TARGET static void ID(run_panel)(const panel *p)
{
    int r = 0;
    for (; r + MR <= p->rows; r += MR)
        tile_rows(MR, p, r);
    for (int mr = 4; mr >= 1; mr /= 2)
        if (mr < MR && r + mr <= p->rows) {
            tile_rows(mr, p, r);
            r += mr;
        }
}

// B[0..kc)[0..nr) into dst, rows nr floats apart.
TARGET static void ID(pack_b)(const float *b, ptrdiff_t ldb, int kc, int nr, float *dst)
{
    for (int k = 0; k < kc; k++, b += ldb, dst += nr) {
        for (int j = 0; j < nr; j += 16)
            __builtin_prefetch(b + nr + j);
        for (int j = 0; j < nr; j += VL)
            *(vf *)(dst + j) = *(const vfu *)(b + j);
    }
}

// The sums of four vectors' lanes, as one vector.
KERNEL void reduce4(const vf *x0, const vf *x1, const vf *x2, const vf *x3, vf4 *out)
{
    union quarters {
        vf v;
        vf4 q[VL / 4];
    } u[4] = { { *x0 }, { *x1 }, { *x2 }, { *x3 } };
    vf4 s[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        s[i] = u[i].q[0];
#pragma GCC unroll 4
        for (int q = 1; q < VL / 4; q++)
            s[i] += u[i].q[q];
    }
    // __builtin_shufflevector: gcc 12 and clang both have it.
    vf4 s01 = __builtin_shufflevector(s[0], s[1], 0, 4, 1, 5) + __builtin_shufflevector(s[0], s[1], 2, 6, 3, 7);
    vf4 s23 = __builtin_shufflevector(s[2], s[3], 0, 4, 1, 5) + __builtin_shufflevector(s[2], s[3], 2, 6, 3, 7);
    *out = __builtin_shufflevector(s01, s23, 0, 1, 4, 5) + __builtin_shufflevector(s01, s23, 2, 3, 6, 7);
}

// Rows [r, r + mr) × columns [j, j + nc) as dot products over the panel's
// kc: p->b holds B's columns as rows of ldb floats, zero from kc on.
KERNEL void dot_tile(int mr, int nc, const panel *p, int r, int j)
{
    const float *a = p->a + r * p->lda, *bt = p->b + j * p->ldb;
    ptrdiff_t lda = p->lda, ldb = p->ldb;
    vf acc[DR_MAX][DC_MAX] = { { { 0 } } };
    for (int k = 0; k < p->kc; k += VL) {
        vf bk[DC_MAX];
#pragma GCC unroll 4
        for (int jj = 0; jj < nc; jj++)
            bk[jj] = *(const vf *)(bt + jj * ldb + k);
        int n = p->kc - k; // A's row ends at kc: past it may be anything
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            vf ai = { 0 };
            if (n >= VL)
                ai = *(const vfu *)(a + i * lda + k);
            else
                LOAD_PART(&ai, a + i * lda + k, n);
#pragma GCC unroll 4
            for (int jj = 0; jj < nc; jj++)
                acc[i][jj] = FMA(ai, bk[jj], acc[i][jj]);
        }
    }
    // Four sums at a time: the four rows of a column, or a row's columns.
    if (mr == 4) {
#pragma GCC unroll 4
        for (int jj = 0; jj < nc; jj++) {
            vf4 s;
            reduce4(&acc[0][jj], &acc[1][jj], &acc[2][jj], &acc[3][jj], &s);
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++)
                finish(p, r + i, j + jj, s[i]);
        }
    } else {
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++) {
            vf4 s;
            reduce4(&acc[i][0], &acc[i][1 % nc], &acc[i][2 % nc], &acc[i][3 % nc], &s);
#pragma GCC unroll 4
            for (int jj = 0; jj < nc; jj++)
                finish(p, r + i, j + jj, s[jj]);
        }
    }
}

KERNEL void dot_cols(int mr, const panel *p, int r)
{
    int j = 0;
    for (; j + DC <= p->ncols; j += DC)
        dot_tile(mr, DC, p, r, j);
    switch (p->ncols - j) {
    case 3:
        dot_tile(mr, 3, p, r, j);
        break;
    case 2:
        dot_tile(mr, 2, p, r, j);
        break;
    case 1:
        dot_tile(mr, 1, p, r, j);
        break;
    }
}

// All rows of a dot panel: DR rows at a time, then one by one.
TARGET static void ID(run_dots)(const panel *p)
{
    int r = 0;
    for (; r + DR <= p->rows; r += DR)
        dot_cols(DR, p, r);
    for (; r < p->rows; r++)
        dot_cols(1, p, r);
}

static const isa ID(isa) = { VL, MR, NV, ID(run_panel), ID(run_dots), ID(pack_b) };

#undef vf
#undef vi
#undef vfu
#undef activate
#undef tile
#undef tile_rows
#undef reduce4
#undef dot_tile
#undef dot_cols
#undef KERNEL
#undef SPLAT
#undef SELECT
#undef VMAX
#undef VMIN
#undef FMA
#undef LOAD_PART
#undef STREAMS
#undef STREAM
#undef VL
#undef MR
#undef NV
#undef DR
#undef DC
#undef TARGET
#undef SUFFIX

#endif // VL

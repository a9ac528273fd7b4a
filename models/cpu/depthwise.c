// Depthwise convolution of one channel, fast paths (see depthwise.h).
//
// Two paths compute the outputs as one flat run of positions q, so short
// rows (7 or 14 columns) vectorize as well as long ones, and every tap is
// the same array at a fixed offset from q:
// - stride 1, "same": q is the output and input position alike; the plane is
//   copied once between zero margins (rows above and below the image read
//   zeros) and a tap that would cross the left or right edge is masked by
//   the column of q, kept in a table filled once per worker.
// - stride 2: the input is split into its four phases (even/odd rows x
//   even/odd columns), each a zero-padded plane, so that every tap reads one
//   phase at unit stride; outputs are computed at the phases' width and the
//   rows copied out.
// - 3x3 windows with one column of padding on the left and rows of 48
//   outputs or more (4 at stride 2: there the phases' copies cost more than
//   half-empty vectors), on CPUs with AVX-512, go row by row: each input row is loaded once per 16 outputs and
//   its left and right neighbours made by shifting lanes across vectors
//   (unaligned loads that straddle cache lines would cost more than the
//   FMAs); stride 2 splits even and odd columns with two permutes.
// Built for AVX-512, AVX2 and the baseline, picked at load; the file is built
// with contracted multiply-adds (CMakeLists.txt), the sums of each window row
// kept apart so the adds do not wait on one another.
#include "models/cpu/depthwise.h"

#include <stdlib.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_ROWS 1
#else
#define HAVE_ROWS 0
#endif

#define TARGETS __attribute__((target_clones("avx512f", "avx2,fma", "default")))
// The taps unrolled whole, so that the output loop vectorizes: GCC's own
// limit stops short of 5x5 (25 taps), whose loads it then cannot analyse.
#define UNROLL_K _Pragma("GCC unroll 5")

// The fused activation over y[0..n), as nn_activate computes it (NaN: Relu
// gives 0, Clip passes it on), in forms that become maxps and minps; one
// loop per kind, so the kind is not decided per element.
TARGETS static void activate(float *y, int64_t n, const nn_dw_act *a)
{
    float lo = a->lo, hi = a->hi;
    if (a->act == NN_ACT_RELU)
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] > 0 ? y[i] : 0;
    else if (a->act == NN_ACT_CLIP)
        for (int64_t i = 0; i < n; i++) {
            float v = lo > y[i] ? lo : y[i];
            y[i] = hi < v ? hi : v;
        }
}

enum { SLACK = 16 }; // floats past the last read of a vector loop's tail

static int64_t floor_div2(int64_t a)
{
    return a >= 0 ? a / 2 : -((1 - a) / 2);
}

#if HAVE_ROWS
static bool rows_cpu(void)
{
    __builtin_cpu_init();
    const char *isa = getenv("REEL_GEMM_ISA"); // the narrower paths, for tests and comparisons
    return __builtin_cpu_supports("avx512f") && (!isa || (strcmp(isa, "generic") && strcmp(isa, "avx2")));
}
#else
static bool rows_cpu(void)
{
    return false;
}
#endif

static int64_t round16(int64_t n)
{
    return (n + 15) / 16 * 16;
}

bool nn_dw_plan_init(const nn_window *w, nn_dw_plan *p)
{
    int64_t k = w->k[2];
    if (w->in[0] != 1 || w->k[0] != 1 || w->k[1] != k || (k != 3 && k != 5) || w->d[1] != 1 || w->d[2] != 1 ||
        w->s[1] != w->s[2] || (w->s[2] != 1 && w->s[2] != 2))
        return false;
    for (int i = 1; i < 3; i++)
        if (w->pb[i] >= k || w->pe[i] >= k)
            return false;
    *p = (nn_dw_plan){ .k = (int)k, .s = (int)w->s[2], .H = w->in[1], .W = w->in[2], .OH = w->out[1],
                       .OW = w->out[2], .pt = w->pb[1], .pl = w->pb[2] };
    if (p->s == 1 && (p->OH != p->H || p->OW != p->W))
        return false;
    // Rows: at stride 1 each is at least most of a vector (short rows waste
    // lanes; the flat path fills them); at stride 2 even 7 columns beat the
    // phases (MobileNetV2's 14x14 to 7x7: 0.08 ms against 0.046 ms).
    p->rows = HAVE_ROWS && k == 3 && p->pl == 1 && p->OW >= (p->s == 1 ? 48 : 4) && rows_cpu();
    if (p->rows) {
        p->scratch = (size_t)(p->W + SLACK); // a zero row, for the pads above and below
        return true;
    }
    if (p->s == 1) {
        // The column table, then the plane between its margins.
        p->scratch = (size_t)(round16(p->H * p->W) + round16(p->pt * p->W + p->pl) + p->H * p->W +
                              (k - 1 - p->pt) * p->W + k - 1 - p->pl + SLACK);
        return true;
    }
    p->r0 = floor_div2(-p->pt);
    p->c0 = floor_div2(-p->pl);
    p->Hd = p->OH + floor_div2(k - 1 - p->pt) - p->r0;
    p->Wd = p->OW + floor_div2(k - 1 - p->pl) - p->c0;
    // Four phases (each with a row of slack for the last outputs' reads past
    // the padded width), then the outputs at that width.
    p->scratch = (size_t)(4 * (p->Hd + 1) * p->Wd + p->OH * p->Wd + SLACK);
    return true;
}

// ---- Stride 1

static float *same_plane(const nn_dw_plan *p, float *scratch)
{
    return scratch + round16(p->H * p->W) + round16(p->pt * p->W + p->pl);
}

void nn_dw_prepare(const nn_dw_plan *p, float *scratch)
{
    // Everything not overwritten per channel stays zero: the margins of the
    // stride-1 plane, the stride-2 phases' padding rows and columns.
    memset(scratch, 0, p->scratch * sizeof *scratch);
    if (p->s != 1 || p->rows)
        return;
    int32_t *col = (int32_t *)scratch;
    for (int64_t q = 0, c = 0; q < p->H * p->W; q++) {
        col[q] = (int32_t)c;
        if (++c == p->W)
            c = 0;
    }
}

// y[q] for q < n over the plane xp (row stride W): tap (i, j) reads
// xp[q + (i - pt) * W + j - pl] where column col[q] + j - pl lies in [0, W).
#define DW_SAME(K)                                                                                           \
    TARGETS static void dw_same_##K(const float *restrict xp, const int32_t *restrict col, const float *wt,   \
                                    float bias, float *restrict y, int64_t n, int64_t W, int64_t pt,          \
                                    int64_t pl)                                                              \
    {                                                                                                        \
        float w[K * K];                                                                                      \
        memcpy(w, wt, sizeof w);                                                                             \
        const float *r[K];                                                                                   \
        int32_t lo[K], hi[K];                                                                                \
        for (int i = 0; i < K; i++) {                                                                        \
            r[i] = xp + (i - pt) * W - pl;                                                                   \
            lo[i] = (int32_t)(pl - i);                                                                       \
            hi[i] = (int32_t)(W + pl - i);                                                                   \
        }                                                                                                    \
        for (int64_t q = 0; q < n; q++) {                                                                    \
            int32_t c = col[q];                                                                              \
            float acc[K];                                                                                    \
            UNROLL_K for (int i = 0; i < K; i++) {                                                           \
                acc[i] = 0;                                                                                  \
                UNROLL_K for (int j = 0; j < K; j++) {                                                       \
                    /* Loaded whatever the column: a load under the mask would merge into (and wait on) */   \
                    /* the register of the iteration before. */                                              \
                    float v = r[i][q + j];                                                                   \
                    acc[i] += w[i * K + j] * (c >= lo[j] && c < hi[j] ? v : 0.0f);                           \
                }                                                                                            \
            }                                                                                                \
            float sum = bias;                                                                                \
            for (int i = 0; i < K; i++)                                                                      \
                sum += acc[i];                                                                               \
            y[q] = sum;                                                                                      \
        }                                                                                                    \
    }
DW_SAME(3)
DW_SAME(5)

static void run_same(const nn_dw_plan *p, const float *x, const float *wt, float bias, const nn_dw_act *a, float *y,
                     float *scratch)
{
    float *xp = same_plane(p, scratch);
    memcpy(xp, x, (size_t)(p->H * p->W) * sizeof *x);
    const int32_t *col = (const int32_t *)scratch;
    int64_t n = p->H * p->W;
    if (p->k == 3)
        dw_same_3(xp, col, wt, bias, y, n, p->W, p->pt, p->pl);
    else
        dw_same_5(xp, col, wt, bias, y, n, p->W, p->pt, p->pl);
    activate(y, n, a);
}

// ---- Stride 2

// even[c] = src[2c], odd[c] = src[2c + 1] for c < n: a row's two column phases.
TARGETS static void split_row(float *restrict even, float *restrict odd, const float *restrict src, int64_t n)
{
    for (int64_t c = 0; c < n; c++) {
        even[c] = src[2 * c];
        odd[c] = src[2 * c + 1];
    }
}

// The phases' rows and columns that hold input (the rest stays zero from
// nn_dw_prepare): phase (a, b) row r, column c is x(2(r + r0) + a, 2(c + c0) + b).
static void fill_phases(const nn_dw_plan *p, const float *x, float *phases, int64_t phase)
{
    // Input column 2k goes to column k - c0 of phase (a, 0), 2k + 1 to the
    // same column of phase (a, 1).
    for (int64_t ir = 0; ir < p->H; ir++) {
        int a = (int)(ir & 1);
        int64_t r = ir / 2 - p->r0;
        if (r >= p->Hd)
            break;
        float *row0 = phases + (2 * a) * phase + r * p->Wd, *row1 = row0 + phase;
        const float *src = x + ir * p->W;
        int64_t pairs = MIN(p->W / 2, p->Wd + p->c0);
        split_row(row0 - p->c0, row1 - p->c0, src, pairs);
        if (p->W % 2 && p->W / 2 - p->c0 < p->Wd)
            row0[p->W / 2 - p->c0] = src[p->W - 1];
    }
}

// y[q] = bias + sum of w[t] * base[q + off[t]] for q < n.
#define DW_PHASES(K)                                                                                         \
    TARGETS static void dw_phases_##K(const float *restrict base, const int64_t *off, const float *wt,      \
                                      float bias, float *restrict y, int64_t n)                             \
    {                                                                                                        \
        float w[K * K];                                                                                      \
        memcpy(w, wt, sizeof w);                                                                             \
        const float *t[K * K];                                                                               \
        for (int i = 0; i < K * K; i++)                                                                      \
            t[i] = base + off[i];                                                                            \
        for (int64_t q = 0; q < n; q++) {                                                                    \
            float acc[K];                                                                                    \
            UNROLL_K for (int i = 0; i < K; i++) {                                                           \
                acc[i] = 0;                                                                                  \
                UNROLL_K for (int j = 0; j < K; j++)                                                         \
                    acc[i] += w[i * K + j] * t[i * K + j][q];                                                \
            }                                                                                                \
            float sum = bias;                                                                                \
            for (int i = 0; i < K; i++)                                                                      \
                sum += acc[i];                                                                               \
            y[q] = sum;                                                                                      \
        }                                                                                                    \
    }
DW_PHASES(3)
DW_PHASES(5)

static void run_stride2(const nn_dw_plan *p, const float *x, const float *wt, float bias, const nn_dw_act *a, float *y,
                        float *scratch)
{
    int64_t phase = (p->Hd + 1) * p->Wd;
    fill_phases(p, x, scratch, phase);
    // Tap (i, j) reads input row 2 oh + i - pt: phase (i - pt) mod 2 at
    // phase row oh + floor((i - pt) / 2) - r0; columns alike.
    int64_t off[25];
    for (int i = 0; i < p->k; i++)
        for (int j = 0; j < p->k; j++) {
            int64_t di = floor_div2(i - p->pt), dj = floor_div2(j - p->pl);
            int64_t a = i - p->pt - 2 * di, b = j - p->pl - 2 * dj;
            off[i * p->k + j] = (2 * a + b) * phase + (di - p->r0) * p->Wd + dj - p->c0;
        }
    float *out = scratch + 4 * phase;
    int64_t n = p->OH * p->Wd;
    if (p->k == 3)
        dw_phases_3(scratch, off, wt, bias, out, n);
    else
        dw_phases_5(scratch, off, wt, bias, out, n);
    activate(out, n, a);
    for (int64_t oh = 0; oh < p->OH; oh++)
        memcpy(y + oh * p->OW, out + oh * p->Wd, (size_t)p->OW * sizeof *y);
}

// ---- Rows, AVX-512

#if HAVE_ROWS
#define AVX512 __attribute__((target("avx512f")))

// x[o .. o + 16) of a row of n floats, 0 past its end.
AVX512 static inline __m512 load_upto(const float *x, int64_t o, int64_t n)
{
    if (o + 16 <= n)
        return _mm512_loadu_ps(x + o);
    return o < n ? _mm512_maskz_loadu_ps((__mmask16)((1u << (n - o)) - 1), x + o) : _mm512_setzero_ps();
}

// y[o .. min(o + 16, n)) = act(v).
AVX512 static inline void store_upto(float *y, int64_t o, int64_t n, __m512 v, const nn_dw_act *a)
{
    if (a->act == NN_ACT_RELU)
        v = _mm512_max_ps(v, _mm512_setzero_ps()); // NaN: 0, as nn_activate
    else if (a->act == NN_ACT_CLIP)
        v = _mm512_min_ps(_mm512_set1_ps(a->hi), _mm512_max_ps(_mm512_set1_ps(a->lo), v)); // NaN stays
    if (o + 16 <= n)
        _mm512_storeu_ps(y + o, v);
    else
        _mm512_mask_storeu_ps(y + o, (__mmask16)((1u << (n - o)) - 1), v);
}

// [p[15], c[0..14]] and [c[1..15], n[0]]: the left and right neighbours.
#define LEFT(p, c) _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(c), _mm512_castps_si512(p), 15))
#define RIGHT(c, n) _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(n), _mm512_castps_si512(c), 1))

// One output row, stride 1: y[ow] = bias + sum of w[i][j] * r[i][ow + j - 1].
AVX512 static void row_s1(const float *const *r, const float *w, float bias, const nn_dw_act *a, float *y,
                          int64_t W)
{
    __m512 prev[3], cur[3];
    for (int i = 0; i < 3; i++) {
        prev[i] = _mm512_setzero_ps();
        cur[i] = load_upto(r[i], 0, W);
    }
    for (int64_t o = 0; o < W; o += 16) {
        __m512 acc[3]; // one per input row: three short chains of FMAs, not one long one
        for (int i = 0; i < 3; i++) {
            __m512 next = load_upto(r[i], o + 16, W);
            acc[i] = _mm512_mul_ps(_mm512_set1_ps(w[3 * i]), LEFT(prev[i], cur[i]));
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(w[3 * i + 1]), cur[i], acc[i]);
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(w[3 * i + 2]), RIGHT(cur[i], next), acc[i]);
            prev[i] = cur[i];
            cur[i] = next;
        }
        store_upto(y, o, W, _mm512_add_ps(_mm512_add_ps(_mm512_set1_ps(bias), acc[0]), _mm512_add_ps(acc[1], acc[2])),
                   a);
    }
}

// One output row, stride 2: y[ow] = bias + sum of w[i][j] * r[i][2 ow + j - 1].
AVX512 static void row_s2(const float *const *r, const float *w, float bias, const nn_dw_act *a, float *y,
                          int64_t W, int64_t OW)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    __m512 prev[3] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
    for (int64_t o = 0; o < OW; o += 16) {
        __m512 acc[3];
        for (int i = 0; i < 3; i++) {
            __m512 lo = load_upto(r[i], 2 * o, W), hi = load_upto(r[i], 2 * o + 16, W);
            __m512 e = _mm512_permutex2var_ps(lo, even, hi), d = _mm512_permutex2var_ps(lo, odd, hi);
            acc[i] = _mm512_mul_ps(_mm512_set1_ps(w[3 * i]), LEFT(prev[i], d));
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(w[3 * i + 1]), e, acc[i]);
            acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(w[3 * i + 2]), d, acc[i]);
            prev[i] = d;
        }
        store_upto(y, o, OW, _mm512_add_ps(_mm512_add_ps(_mm512_set1_ps(bias), acc[0]), _mm512_add_ps(acc[1], acc[2])),
                   a);
    }
}

static void run_rows(const nn_dw_plan *p, const float *x, const float *wt, float bias, const nn_dw_act *a, float *y,
                     float *zero)
{
    for (int64_t oh = 0; oh < p->OH; oh++) {
        const float *r[3];
        for (int i = 0; i < 3; i++) {
            int64_t ih = oh * p->s + i - p->pt;
            r[i] = ih >= 0 && ih < p->H ? x + ih * p->W : zero;
        }
        if (p->s == 1)
            row_s1(r, wt, bias, a, y + oh * p->OW, p->W);
        else
            row_s2(r, wt, bias, a, y + oh * p->OW, p->W, p->OW);
    }
}
// ---- A full conv over few input channels, 3x3 stride 2 (a network's stem)
//
// im2col would write 9 C rows as long as the output plane and read them back
// for a GEMM of K = 9 C; here each 16 output columns of a row gather their
// 9 C input vectors once (the permutes of row_s2) and every output channel
// takes its FMAs from them, 8 channels at a time in registers.

enum { STEM_VECTORS = 8 }; // output vectors of a row whose taps are gathered at once

// Lanes i of r[o + i] with 0 <= o + i < n, 0 elsewhere.
AVX512 static inline __m512 load_span(const float *r, int64_t o, int64_t n)
{
    int64_t lo = o < 0 ? -o : 0, hi = n - o < 16 ? n - o : 16;
    if (lo == 0 && hi == 16)
        return _mm512_loadu_ps(r + o);
    if (hi <= lo)
        return _mm512_setzero_ps();
    return _mm512_maskz_loadu_ps((__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1)), r + o);
}

// Output channels [0, mb) at columns [o, o + 16) of one row: bias, the taps'
// FMAs (weights wt[m * taps + t]), residual, activation. mb is a constant
// once inlined, so the sums stay in registers.
AVX512 static inline __attribute__((always_inline)) void stem_channels(
    int mb, const __m512 *tap, int taps, const float *wt, const float *bias, const float *res, int64_t plane,
    const nn_dw_act *a, float *y, int64_t o, int64_t OW)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int m = 0; m < mb; m++)
        acc[m] = _mm512_set1_ps(bias ? bias[m] : 0);
    for (int t = 0; t < taps; t++) {
        __m512 v = tap[t];
#pragma GCC unroll 16
        for (int m = 0; m < mb; m++)
            acc[m] = _mm512_fmadd_ps(_mm512_set1_ps(wt[m * taps + t]), v, acc[m]);
    }
#pragma GCC unroll 16
    for (int m = 0; m < mb; m++) {
        __m512 v = acc[m];
        if (res)
            v = _mm512_add_ps(v, load_upto(res + m * plane, o, OW));
        store_upto(y + m * plane, o, OW, v, a);
    }
}

AVX512 static void stem_rows(const nn_window *w, int64_t C, int64_t M, const float *x, const float *wt,
                             const float *bias, const float *res, const nn_dw_act *a, float *y, int64_t oh0,
                             int64_t oh1)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    int64_t H = w->in[1], W = w->in[2], OW = w->out[2], plane = w->out[1] * OW;
    int taps = (int)(9 * C);
    __m512 tap[STEM_VECTORS][9 * NN_STEM_C_MAX];
    for (int64_t oh = oh0; oh < oh1; oh++)
        for (int64_t o0 = 0; o0 < OW; o0 += 16 * STEM_VECTORS) {
            int nv = (int)MIN(STEM_VECTORS, (OW - o0 + 15) / 16);
            // Tap (c, i, j) reads input columns 2 ow + j - 1 of row 2 oh + i - pt.
            for (int v = 0; v < nv; v++)
                for (int64_t c = 0; c < C; c++)
                    for (int i = 0; i < 3; i++) {
                        __m512 *t = tap[v] + (c * 3 + i) * 3;
                        int64_t ih = 2 * oh + i - w->pb[1], o = o0 + 16 * v;
                        if (ih < 0 || ih >= H) {
                            t[0] = t[1] = t[2] = _mm512_setzero_ps();
                            continue;
                        }
                        const float *r = x + (c * H + ih) * W;
                        __m512 lo = load_span(r, 2 * o, W), hi = load_span(r, 2 * o + 16, W);
                        t[1] = _mm512_permutex2var_ps(lo, even, hi);
                        t[2] = _mm512_permutex2var_ps(lo, odd, hi);
                        lo = load_span(r, 2 * o - 1, W);
                        hi = load_span(r, 2 * o + 15, W);
                        t[0] = _mm512_permutex2var_ps(lo, even, hi);
                    }
            // A few output channels at a time along the row: few planes are
            // written at once (32 store streams run at half the speed of 8).
            int64_t q = oh * OW, m = 0;
#define STEM_BLOCK(MB)                                                                                         \
    for (; m + MB <= M; m += MB)                                                                               \
        for (int v = 0; v < nv; v++)                                                                           \
            stem_channels(MB, tap[v], taps, wt + m * taps, bias ? bias + m : NULL,                             \
                          res ? res + m * plane + q : NULL, plane, a, y + m * plane + q, o0 + 16 * v, OW);
            STEM_BLOCK(8)
            STEM_BLOCK(1)
#undef STEM_BLOCK
        }
}
#else
static void run_rows(const nn_dw_plan *p, const float *x, const float *wt, float bias, const nn_dw_act *a, float *y,
                     float *zero)
{
    (void)p, (void)x, (void)wt, (void)bias, (void)a, (void)y, (void)zero;
}

static void stem_rows(const nn_window *w, int64_t C, int64_t M, const float *x, const float *wt, const float *bias,
                      const float *res, const nn_dw_act *a, float *y, int64_t oh0, int64_t oh1)
{
    (void)w, (void)C, (void)M, (void)x, (void)wt, (void)bias, (void)res, (void)a, (void)y, (void)oh0, (void)oh1;
}
#endif

bool nn_stem_ok(const nn_window *w, int64_t C)
{
    const char *env = getenv("REEL_CONV_STEM");
    if (env && strcmp(env, "0") == 0)
        return false;
    return HAVE_ROWS && C >= 1 && C <= NN_STEM_C_MAX && w->in[0] == 1 && w->k[0] == 1 && w->k[1] == 3 &&
           w->k[2] == 3 && w->s[1] == 2 && w->s[2] == 2 && w->d[1] == 1 && w->d[2] == 1 && w->pb[2] == 1 &&
           rows_cpu();
}

void nn_stem_run(const nn_window *w, int64_t C, int64_t M, const float *x, const float *wt, const float *bias,
                 const float *res, const nn_dw_act *a, float *y, int64_t oh0, int64_t oh1)
{
    stem_rows(w, C, M, x, wt, bias, res, a, y, oh0, oh1);
}

void nn_dw_run(const nn_dw_plan *p, const float *x, const float *wt, float bias, const nn_dw_act *a, float *y,
               float *scratch)
{
    if (p->rows)
        run_rows(p, x, wt, bias, a, y, scratch);
    else if (p->s == 1)
        run_same(p, x, wt, bias, a, y, scratch);
    else
        run_stride2(p, x, wt, bias, a, y, scratch);
}

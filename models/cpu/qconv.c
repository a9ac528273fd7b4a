// ConvInteger and QLinearConv through the int8 GEMM (qgemm.h), and
// depthwise convs through a direct kernel.
//
// The layout stays NCHW: the neighbouring ops and the model's inputs and
// outputs are NCHW, and in NCHW a conv is Y[M, P] = W[M, K] X[K, P] with the
// weights as the GEMM's rows (packed once, kept in ctx->state) and the
// image's columns (pointwise: the input itself; else im2col) packed into
// vpdpbusd panels per run, which costs O(K P) against the product's
// O(M K P) and needs no transpose on either side.
#include "models/cpu/depthwise.h"
#include "models/cpu/qfast.h"

// Weights as GEMM rows: M rows of Kp int8 bytes (uint8 weights shifted by
// 128), each row's zero point (shifted alike) and rowsum - K * zero point.
// One allocation (ctx->state is g_free'd whole).
typedef struct wpack {
    int64_t M, K, Kp;
    int32_t *zp, *rr;
    uint8_t *rows;
} wpack;

static size_t wpack_bytes(int64_t M, int64_t K)
{
    return sizeof(wpack) + 8 * (size_t)M + (size_t)(M * qgemm_kp(K)) + 64;
}

// Lays a wpack out in mem (wpack_bytes of it) and fills it.
static wpack *wpack_make(void *mem, const reel_tensor *w, const reel_tensor *zw, int64_t M, int64_t K)
{
    wpack *p = mem;
    p->M = M, p->K = K, p->Kp = qgemm_kp(K);
    p->zp = (int32_t *)(p + 1);
    p->rr = p->zp + M;
    p->rows = (uint8_t *)(p->rr + M);
    bool u8 = w->dtype == REEL_DTYPE_UINT8;
    int64_t nz = zw ? reel_tensor_count(zw->rank, zw->shape) : 0;
    for (int64_t m = 0; m < M; m++) {
        const uint8_t *src = (const uint8_t *)w->data + m * K;
        uint8_t *dst = p->rows + m * p->Kp;
        int32_t sum = 0;
        for (int64_t k = 0; k < K; k++) {
            uint8_t b = u8 ? (uint8_t)(src[k] ^ 0x80) : src[k];
            dst[k] = b;
            sum += (int8_t)b;
        }
        memset(dst + K, 0, (size_t)(p->Kp - K));
        // The zero point (0 when omitted), shifted as the weights are.
        int32_t z = u8 ? -128 : 0;
        if (nz)
            z = u8 ? (int32_t)((const uint8_t *)zw->data)[nz == 1 ? 0 : m] - 128
                   : (int32_t)((const int8_t *)zw->data)[nz == 1 ? 0 : m];
        p->zp[m] = z;
        p->rr[m] = (int32_t)((uint32_t)sum - (uint32_t)K * (uint32_t)z);
    }
    return p;
}

static bool is_depthwise(const qconv_geom *c)
{
    return c->G > 1 && c->Cg == 1 && c->Mg == 1 && c->w.k[0] == 1 && c->w.in[0] == 1;
}

static int64_t pin_of(const qconv_geom *c)
{
    return c->w.in[0] * c->w.in[1] * c->w.in[2];
}

// Padded int16 planes of the depthwise kernel: rows and columns that the
// windows reach.
static void dw_plane_dims(const qconv_geom *c, int64_t *hp, int64_t *wp)
{
    const nn_window *w = &c->w;
    *hp = (w->out[1] - 1) * w->s[1] + (w->k[1] - 1) * w->d[1] + 1;
    *wp = (w->out[2] - 1) * w->s[2] + (w->k[2] - 1) * w->d[2] + 1;
    *wp += *wp % 2; // even: a flat stride-2 run reads whole int16 pairs
}

// 2-D convs with equal strides s run over a padded copy of the image split
// into s x s phases (rows r s + ph, columns c s + pw of the padded image in
// phase (ph, pw)): with the output's columns as oh * wp + ow over a phase's
// width (ow >= OW computed and then dropped), each im2col row is one
// contiguous slice of one phase.
typedef struct flat_geom {
    bool on;
    int64_t s;           // stride: s * s phases per channel
    int64_t hp, wp, P;   // a phase's rows and columns; the GEMM's columns, OH * wp
} flat_geom;

static flat_geom flat_of(const qconv_geom *c)
{
    const nn_window *w = &c->w;
    flat_geom f = { 0 };
    if (w->k[0] != 1 || w->in[0] != 1 || w->s[1] != w->s[2] || w->s[1] > 4 || w->k[1] * w->k[2] == 1)
        return f;
    f.s = w->s[1];
    f.hp = w->out[1] + (w->k[1] - 1) * w->d[1] / f.s;
    f.wp = w->out[2] + (w->k[2] - 1) * w->d[2] / f.s;
    f.P = w->out[1] * f.wp;
    f.on = f.wp <= 2 * w->out[2];
    return f;
}

static int64_t flat_bytes(const qconv_geom *c, const flat_geom *f)
{
    return c->Cg * f->s * f->s * f->hp * f->wp + 2 * f->wp + 64;
}

size_t qconv_fast_scratch(const qconv_geom *c)
{
    if (is_depthwise(c)) {
        int64_t hp, wp;
        dw_plane_dims(c, &hp, &wp);
        // Flat runs read up to two rows and a vector past a plane (columns
        // that are dropped).
        return 2 * (size_t)(c->C * hp * wp + 2 * wp + 64) + 64;
    }
    flat_geom f = flat_of(c);
    int64_t np = qgemm_np(MAX(c->P, f.P), 32), kp = qgemm_kp(c->K);
    // Panels, column sums and zero points, the weights when they are not
    // constants, and the multipliers; flat: the padded image (and a row past
    // it) and the output before its extra columns are dropped.
    size_t flat = f.on ? (size_t)flat_bytes(c, &f) + 4 * (size_t)(c->Mg * f.P) + 128 : 0;
    return (size_t)(kp * np) + 8 * (size_t)np + wpack_bytes(c->M, c->K) + 8 * (size_t)c->M + 256 + flat;
}

// ---- im2col rows

typedef struct col_src {
    const qconv_geom *c;
    const uint8_t *x;    // this image's group of channels [Cg, Pin]
    uint8_t flip;        // 0x80: int8 input shifted to uint8
    uint8_t pad;         // the (shifted) zero point
    bool direct;         // pointwise, stride 1, no pads: row k is channel k
    const uint8_t *padded; // flat (flat_geom): the group's padded channels, shifted
    flat_geom f;
} col_src;

// Row k (channel, kd, kh, kw) of the im2col matrix, columns [n, n + len).
static const uint8_t *col_row(void *arg, int64_t k, int64_t n, int64_t len, uint8_t *buf)
{
    const col_src *s = arg;
    const qconv_geom *c = s->c;
    const nn_window *w = &c->w;
    int64_t Pin = pin_of(c);
    if (s->padded) {
        int64_t kw = k % w->k[2], kh = k / w->k[2] % w->k[1], ch = k / (w->k[2] * w->k[1]);
        int64_t st = s->f.s, oh = kh * w->d[1], ow = kw * w->d[2]; // the tap's offset in the padded image
        const uint8_t *phase = s->padded + ((ch * st + oh % st) * st + ow % st) * s->f.hp * s->f.wp;
        (void)len, (void)buf;
        return phase + oh / st * s->f.wp + ow / st + n;
    }
    if (s->direct) {
        const uint8_t *src = s->x + k * Pin + n;
        if (!s->flip)
            return src;
        for (int64_t j = 0; j < len; j++)
            buf[j] = src[j] ^ 0x80;
        return buf;
    }
    int64_t kw = k % w->k[2], kh = k / w->k[2] % w->k[1], kd = k / (w->k[2] * w->k[1]) % w->k[0];
    int64_t ch = k / (w->k[2] * w->k[1] * w->k[0]);
    const uint8_t *plane = s->x + ch * Pin;
    int64_t OW = w->out[2], OH = w->out[1];
    for (int64_t j = 0; j < len;) {
        int64_t p = n + j, ow = p % OW, oh = p / OW % OH, od = p / (OW * OH);
        int64_t run = MIN(OW - ow, len - j);
        int64_t id = od * w->s[0] - w->pb[0] + kd * w->d[0], ih = oh * w->s[1] - w->pb[1] + kh * w->d[1];
        uint8_t *restrict d = buf + j;
        if (id < 0 || id >= w->in[0] || ih < 0 || ih >= w->in[1]) {
            memset(d, s->pad, (size_t)run);
        } else {
            // Columns [lo, hi) of the run read the image; the rest is padding.
            const uint8_t *restrict src = plane + (id * w->in[1] + ih) * w->in[2];
            int64_t sw = w->s[2], off = kw * w->d[2] - w->pb[2];
            int64_t lo = off + ow * sw >= 0 ? 0 : MIN(run, (-(off + ow * sw) + sw - 1) / sw);
            int64_t last = w->in[2] - 1 - off - ow * sw; // the run's columns i with (ow + i) sw + off < W
            int64_t hi = last < 0 ? lo : MAX(lo, MIN(run, last / sw + 1));
            memset(d, s->pad, (size_t)lo);
            const uint8_t *restrict from = src + ow * sw + off;
            if (sw == 1 && !s->flip)
                memcpy(d + lo, from + lo, (size_t)(hi - lo));
            else if (sw == 1)
                for (int64_t i = lo; i < hi; i++)
                    d[i] = from[i] ^ s->flip;
            else
                for (int64_t i = lo; i < hi; i++)
                    d[i] = from[i * sw] ^ s->flip;
            memset(d + hi, s->pad, (size_t)(run - hi));
        }
        j += run;
    }
    return buf;
}

// ---- The GEMM path

typedef struct gemm_job {
    const qconv_geom *c;
    qgemm_isa isa;
    col_src src;
    qgemm_problem p;
    uint8_t *panels;
    int32_t *colsum;
    int nr;
    int64_t P;           // the GEMM's columns (c->P, or flat's)
    int64_t tile, tiles, m_per, m_tasks;
    // flat: the output with wp columns per row, copied into Y without the extra ones
    void *wide;
    size_t es;
    void *y;
} gemm_job;

static void pack_task(void *arg, int task, int worker)
{
    (void)worker;
    gemm_job *j = arg;
    int64_t n0 = task * j->tile, len = MIN(j->tile, j->P - n0);
    qgemm_pack_panels(j->nr, j->c->K, n0, len, false, col_row, &j->src, j->panels, j->colsum);
}

static void gemm_task(void *arg, int task, int worker)
{
    (void)worker;
    const gemm_job *j = arg;
    int64_t t = task % j->tiles, mt = task / j->tiles;
    int64_t n0 = t * j->tile, n1 = MIN(j->P, n0 + j->tile);
    int64_t m0 = mt * j->m_per, m1 = MIN(j->c->Mg, m0 + j->m_per);
    qgemm_compute(j->isa, &j->p, m0, m1, n0, n1);
}

// Rows [m0, m1) of a flat output into Y, OW of each wp columns.
static void compact_task(void *arg, int task, int worker)
{
    (void)worker;
    const gemm_job *j = arg;
    const nn_window *w = &j->c->w;
    int64_t m0 = task * j->m_per, m1 = MIN(j->c->Mg, m0 + j->m_per), OW = w->out[2], OH = w->out[1];
    for (int64_t m = m0; m < m1; m++)
        for (int64_t oh = 0; oh < OH; oh++)
            memcpy((char *)j->y + (size_t)(m * j->c->P + oh * OW) * j->es,
                   (const char *)j->wide + (size_t)(m * j->P + oh * j->src.f.wp) * j->es, (size_t)OW * j->es);
}

// The group's channels, padded with the zero point, shifted to uint8 and
// split into phases.
static void pad_image(const col_src *s, const uint8_t *x, uint8_t *padded)
{
    const qconv_geom *c = s->c;
    const nn_window *w = &c->w;
    int64_t H = w->in[1], W = w->in[2], hp = s->f.hp, wp = s->f.wp, st = s->f.s;
    for (int64_t ch = 0; ch < c->Cg; ch++)
        for (int64_t ph = 0; ph < st; ph++)
            for (int64_t pw = 0; pw < st; pw++) {
                uint8_t *plane = padded + ((ch * st + ph) * st + pw) * hp * wp;
                // Columns c of this phase read input column c st + pw - pl: inside for [lo, hi).
                int64_t off = pw - w->pb[2];
                int64_t lo = off >= 0 ? 0 : MIN(wp, (-off + st - 1) / st);
                int64_t hi = W - 1 - off < 0 ? lo : MAX(lo, MIN(wp, (W - 1 - off) / st + 1));
                for (int64_t r = 0; r < hp; r++) {
                    uint8_t *restrict d = plane + r * wp;
                    int64_t ih = r * st + ph - w->pb[1];
                    if (ih < 0 || ih >= H) {
                        memset(d, s->pad, (size_t)wp);
                        continue;
                    }
                    const uint8_t *restrict src = x + (ch * H + ih) * W + off;
                    memset(d, s->pad, (size_t)lo);
                    if (st == 1 && !s->flip)
                        memcpy(d + lo, src + lo, (size_t)(hi - lo));
                    else
                        for (int64_t i = lo; i < hi; i++)
                            d[i] = src[i * st] ^ s->flip;
                    memset(d + hi, s->pad, (size_t)(wp - hi));
                }
            }
    memset(padded + c->Cg * st * st * hp * wp, s->pad, (size_t)(2 * wp + 64)); // read by the last rows' dropped columns
}

// ---- The depthwise kernel

typedef struct dw_job {
    const qconv_geom *c;
    qgemm_isa isa;
    const uint8_t *x;    // this image [C, Pin]
    bool x_signed, w_signed;
    int32_t zx;
    const reel_tensor *w, *zw;
    const int32_t *bias;
    int16_t *planes;     // [C, hp, wp]
    int64_t hp, wp;
    qgemm_out out;       // rows: channels of this image
    int64_t per;
    bool fp32;           // through the fp32 depthwise kernel (plan)
    nn_dw_plan plan;
} dw_job;

// One output row of a channel: acc[0..OW) = b + sum over taps of
// wv[t] * plane[(oh sh + kh dh) wp + ow sw + kw dw], the sums of a run of
// columns kept in registers over all the taps.
typedef struct dw_row {
    const int16_t *plane;
    int32_t *pairs;      // AVX-512, stride 1: (x[c], x[c + dw]) per plane position, built per channel
    int64_t wp, OW, KH, KW, sh, sw, dh, dw;
    const int32_t *wv;   // KH * KW taps, zero point subtracted
} dw_row;

#define DW_ROW(name, target)                                                                                    \
    target static void name(const dw_row *r, int64_t oh, int32_t b, int32_t *restrict acc)                     \
    {                                                                                                            \
        enum { RUN = 64 };                                                                                       \
        for (int64_t o0 = 0; o0 < r->OW; o0 += RUN) {                                                            \
            int64_t len = MIN(RUN, r->OW - o0);                                                                  \
            int32_t a[RUN];                                                                                      \
            for (int64_t j = 0; j < RUN; j++)                                                                    \
                a[j] = b;                                                                                        \
            for (int64_t kh = 0; kh < r->KH; kh++) {                                                             \
                const int16_t *row = r->plane + (oh * r->sh + kh * r->dh) * r->wp + o0 * r->sw;                  \
                for (int64_t kw = 0; kw < r->KW; kw++) {                                                         \
                    const int16_t *restrict src = row + kw * r->dw;                                              \
                    int32_t v = r->wv[kh * r->KW + kw];                                                          \
                    if (r->sw == 1)                                                                              \
                        for (int64_t j = 0; j < len; j++)                                                        \
                            a[j] += v * src[j];                                                                  \
                    else                                                                                         \
                        for (int64_t j = 0; j < len; j++)                                                        \
                            a[j] += v * src[j * r->sw];                                                          \
                }                                                                                                \
            }                                                                                                    \
            memcpy(acc + o0, a, sizeof(int32_t) * (size_t)len);                                                  \
        }                                                                                                        \
    }
DW_ROW(dw_row_generic, )
#if defined(__x86_64__) || defined(__i386__)
DW_ROW(dw_row_avx2, __attribute__((target("avx2,fma"))))

#include <immintrin.h>

// AVX-512: 16 columns per vector, two taps per vpmaddwd: on stride 1 from
// the pair plane (x[c], x[c + dw]) as int32, on stride 2 (no dilation) from
// the plane's own int16 pairs (x[2j], x[2j + 1]). A row of kh's taps starts
// at start + kh * khstep bytes, pair q at q * qstep more; an odd last tap
// pairs with weight 0.
#define T512DW __attribute__((target("avx512f,avx512bw,avx512vl")))
T512DW static inline __attribute__((always_inline)) void dw_pairs_body(const char *start, int64_t khstep,
                                                                       int64_t qstep, int64_t OW, int32_t b,
                                                                       int32_t *acc, const __m512i *w, const int KH,
                                                                       const int NP)
{
    for (int64_t o0 = 0; o0 < OW; o0 += 16) {
        __mmask16 k = OW - o0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (OW - o0)) - 1);
        __m512i a = _mm512_set1_epi32(b), a2 = _mm512_setzero_si512();
        for (int kh = 0; kh < KH; kh++)
            for (int q = 0; q < NP; q++) {
                __m512i x = _mm512_maskz_loadu_epi32(k, start + kh * khstep + q * qstep + o0 * 4);
                if ((kh * NP + q) % 2)
                    a2 = _mm512_add_epi32(a2, _mm512_madd_epi16(x, w[kh * NP + q]));
                else
                    a = _mm512_add_epi32(a, _mm512_madd_epi16(x, w[kh * NP + q]));
            }
        _mm512_mask_storeu_epi32(acc + o0, k, _mm512_add_epi32(a, a2));
    }
}

// Whether dw_row_avx512 takes the row (else the generic kernel).
static bool dw_avx512_fits(const dw_row *r)
{
    return (r->sw == 1 || (r->sw == 2 && r->dw == 1)) && r->KH <= 7 && r->KW <= 7;
}

// len outputs from row oh on (len past the row's end: a flat run over the
// following rows, whose extra columns the caller drops).
T512DW static void dw_run_avx512(const dw_row *r, int64_t oh, int64_t len, int32_t b, int32_t *acc)
{
    int np = (int)(r->KW + 1) / 2;
    __m512i w[7 * 4];
    for (int64_t kh = 0; kh < r->KH; kh++)
        for (int q = 0; q < np; q++) {
            const int32_t *wv = r->wv + kh * r->KW + 2 * q;
            uint32_t w1 = 2 * q + 1 < r->KW ? (uint32_t)(uint16_t)wv[1] : 0;
            w[kh * np + q] = _mm512_set1_epi32((int32_t)((uint32_t)(uint16_t)wv[0] | w1 << 16));
        }
    const char *start;
    int64_t khstep, qstep;
    if (r->sw == 1) {
        start = (const char *)(r->pairs + oh * r->sh * r->wp);
        khstep = 4 * r->dh * r->wp, qstep = 8 * r->dw;
    } else {
        start = (const char *)(r->plane + oh * r->sh * r->wp);
        khstep = 2 * r->dh * r->wp, qstep = 4;
    }
    if (r->KH == 3 && np == 2)
        dw_pairs_body(start, khstep, qstep, len, b, acc, w, 3, 2);
    else if (r->KH == 5 && np == 3)
        dw_pairs_body(start, khstep, qstep, len, b, acc, w, 5, 3);
    else
        dw_pairs_body(start, khstep, qstep, len, b, acc, w, (int)r->KH, np);
}

T512DW static void dw_row_avx512(const dw_row *r, int64_t oh, int32_t b, int32_t *acc)
{
    if (!dw_avx512_fits(r))
        dw_row_generic(r, oh, b, acc);
    else
        dw_run_avx512(r, oh, r->OW, b, acc);
}

// The pair plane of dw_row_avx512: (x[c], x[c + dw]), 0 past the row.
T512DW static void dw_pairs_avx512(const int16_t *plane, int64_t hp,
                                                                                  int64_t wp, int64_t dw,
                                                                                  int32_t *restrict pairs)
{
    for (int64_t r = 0; r < hp; r++) {
        const int16_t *restrict x = plane + r * wp;
        int32_t *restrict d = pairs + r * wp;
        int64_t inner = MAX(0, wp - dw);
        for (int64_t c = 0; c < inner; c++)
            d[c] = (int32_t)((uint32_t)(uint16_t)x[c] | (uint32_t)(uint16_t)x[c + dw] << 16);
        for (int64_t c = inner; c < wp; c++)
            d[c] = (int32_t)(uint32_t)(uint16_t)x[c];
    }
}
#endif

typedef void (*dw_row_fn)(const dw_row *r, int64_t oh, int32_t b, int32_t *acc);

static dw_row_fn dw_row_for(qgemm_isa isa)
{
#if defined(__x86_64__) || defined(__i386__)
    if (isa == QGEMM_AVX512VNNI)
        return dw_row_avx512;
    if (isa == QGEMM_AVX2 || isa == QGEMM_AVXVNNI)
        return dw_row_avx2;
#endif
    (void)isa;
    return dw_row_generic;
}

// The channel's plane: x - zx as int16, zeros (the zero point) in the padding.
#define DW_PLANE(name, target)                                                                                  \
    target static void name(const dw_job *j, const uint8_t *xs, int16_t *plane)                                 \
    {                                                                                                            \
        const nn_window *w = &j->c->w;                                                                           \
        int64_t H = w->in[1], W = w->in[2], left = MIN(w->pb[2], j->wp);                                         \
        int64_t inner = MAX(0, MIN(W, j->wp - left)), right = j->wp - left - inner;                              \
        int16_t z = (int16_t)j->zx;                                                                              \
        for (int64_t r = 0; r < j->hp; r++) {                                                                    \
            int16_t *restrict d = plane + r * j->wp;                                                             \
            int64_t ih = r - w->pb[1];                                                                           \
            if (ih < 0 || ih >= H) {                                                                             \
                for (int64_t i = 0; i < j->wp; i++)                                                              \
                    d[i] = 0;                                                                                    \
                continue;                                                                                        \
            }                                                                                                    \
            for (int64_t i = 0; i < left; i++)                                                                   \
                d[i] = 0;                                                                                        \
            const uint8_t *restrict s = xs + ih * W;                                                             \
            if (j->x_signed)                                                                                     \
                for (int64_t i = 0; i < inner; i++)                                                              \
                    d[left + i] = (int16_t)((int8_t)s[i] - z);                                                   \
            else                                                                                                 \
                for (int64_t i = 0; i < inner; i++)                                                              \
                    d[left + i] = (int16_t)(s[i] - z);                                                           \
            for (int64_t i = 0; i < right; i++)                                                                  \
                d[left + inner + i] = 0;                                                                         \
        }                                                                                                        \
    }
DW_PLANE(dw_plane_generic, )
#if defined(__x86_64__) || defined(__i386__)
DW_PLANE(dw_plane_avx512, T512DW)
#endif

// x - zx in float.
#define DW_TO_FLOAT(name, target)                                                                               \
    target static void name(const uint8_t *restrict xs, int64_t n, bool is_signed, float zx, float *restrict x) \
    {                                                                                                            \
        if (is_signed)                                                                                           \
            for (int64_t i = 0; i < n; i++)                                                                      \
                x[i] = (float)(int8_t)xs[i] - zx;                                                                \
        else                                                                                                     \
            for (int64_t i = 0; i < n; i++)                                                                      \
                x[i] = (float)xs[i] - zx;                                                                        \
    }
DW_TO_FLOAT(dw_to_float_generic, )
#if defined(__x86_64__) || defined(__i386__)
DW_TO_FLOAT(dw_to_float_avx512, T512DW)
#endif

static void dw_to_float(qgemm_isa isa, const uint8_t *xs, int64_t n, bool is_signed, float zx, float *x)
{
#if defined(__x86_64__) || defined(__i386__)
    if (isa == QGEMM_AVX512VNNI) {
        dw_to_float_avx512(xs, n, is_signed, zx, x);
        return;
    }
#endif
    (void)isa;
    dw_to_float_generic(xs, n, is_signed, zx, x);
}

// The windows depthwise.c has fast paths for, run in float: x - zx and
// w - zw are integers of at most 8 bits and a window of at most 25 taps
// sums to below 2^24, so every partial sum is an exact float whatever the
// order, and the result converts back to the exact int32 sum.
static void dw_task_fp32(const dw_job *j, int task)
{
    const qconv_geom *c = j->c;
    const nn_window *w = &c->w;
    int64_t taps = w->k[1] * w->k[2], Pin = w->in[1] * w->in[2];
    int64_t nz = j->zw ? reel_tensor_count(j->zw->rank, j->zw->shape) : 0;
    float *buf = g_new(float, j->plan.scratch + Pin + c->P + taps);
    float *x = buf + j->plan.scratch, *y = x + Pin, *wt = y + c->P;
    nn_dw_prepare(&j->plan, buf);
    nn_dw_act none = { .act = NN_ACT_NONE };
    for (int64_t ch = task * j->per; ch < MIN(c->C, (task + 1) * j->per); ch++) {
        dw_to_float(j->isa, j->x + ch * Pin, Pin, j->x_signed, (float)j->zx, x);
        int32_t z = 0;
        if (nz)
            z = j->w_signed ? ((const int8_t *)j->zw->data)[nz == 1 ? 0 : ch]
                            : ((const uint8_t *)j->zw->data)[nz == 1 ? 0 : ch];
        const uint8_t *wr = (const uint8_t *)j->w->data + ch * taps;
        for (int64_t t = 0; t < taps; t++)
            wt[t] = (float)((j->w_signed ? (int32_t)(int8_t)wr[t] : (int32_t)wr[t]) - z);
        nn_dw_run(&j->plan, x, wt, 0.0f, &none, y, buf);
        qgemm_store_row_f32(j->isa, &j->out, y, c->P, ch, 0, j->bias ? j->bias[ch] : 0);
    }
    g_free(buf);
}

static void dw_task(void *arg, int task, int worker)
{
    if (((const dw_job *)arg)->fp32) {
        dw_task_fp32(arg, task);
        return;
    }
    (void)worker;
    const dw_job *j = arg;
    const qconv_geom *c = j->c;
    const nn_window *w = &c->w;
    dw_row_fn row_fn = dw_row_for(j->isa);
    int64_t KH = w->k[1], KW = w->k[2], OH = w->out[1], OW = w->out[2], H = w->in[1], W = w->in[2];
    int64_t nz = j->zw ? reel_tensor_count(j->zw->rank, j->zw->shape) : 0;
    // The channel's whole output (contiguous in NCHW) is requantized at once.
    int32_t *acc = g_new(int32_t, OH * MAX(OW, j->wp) + 16), *wv = g_new(int32_t, KH * KW);
#if defined(__x86_64__) || defined(__i386__)
    bool pairs = j->isa == QGEMM_AVX512VNNI && w->s[2] == 1;
    int32_t *pair_plane = pairs ? g_new(int32_t, j->hp * j->wp + 2 * j->wp + 64) : NULL;
#else
    int32_t *pair_plane = NULL;
#endif
    for (int64_t ch = task * j->per; ch < MIN(c->C, (task + 1) * j->per); ch++) {
        int16_t *plane = j->planes + ch * j->hp * j->wp;
#if defined(__x86_64__) || defined(__i386__)
        if (j->isa == QGEMM_AVX512VNNI)
            dw_plane_avx512(j, j->x + ch * H * W, plane);
        else
#endif
            dw_plane_generic(j, j->x + ch * H * W, plane);
        int32_t z = 0;
        if (nz)
            z = j->w_signed ? ((const int8_t *)j->zw->data)[nz == 1 ? 0 : ch]
                            : ((const uint8_t *)j->zw->data)[nz == 1 ? 0 : ch];
        const uint8_t *wr = (const uint8_t *)j->w->data + ch * KH * KW;
        for (int64_t t = 0; t < KH * KW; t++)
            wv[t] = (j->w_signed ? (int32_t)(int8_t)wr[t] : (int32_t)wr[t]) - z;
#if defined(__x86_64__) || defined(__i386__)
        if (pair_plane) // over the plane as one row: flat runs read across rows
            dw_pairs_avx512(plane, 1, j->hp * j->wp, w->d[2], pair_plane);
#endif
        dw_row r = { .plane = plane, .pairs = pair_plane, .wp = j->wp, .OW = OW, .KH = KH, .KW = KW, .sh = w->s[1], .sw = w->s[2],
                     .dh = w->d[1], .dw = w->d[2], .wv = wv };
        int32_t b = j->bias ? j->bias[ch] : 0;
#if defined(__x86_64__) || defined(__i386__)
        // Equal strides: the whole output as one flat run of wp columns per
        // row (stride 2 reads every other plane row: the run's rows are wp
        // apart, half of them dropped, so only on narrow images), then the
        // columns past OW dropped: no per-row overhead on small images.
        if (j->isa == QGEMM_AVX512VNNI && w->s[1] == w->s[2] && dw_avx512_fits(&r) && (w->s[2] == 1 || OW < 32)) {
            int64_t width = j->wp;
            dw_run_avx512(&r, 0, OH * width, b, acc);
            for (int64_t oh = 1; oh < OH; oh++)
                memmove(acc + oh * OW, acc + oh * width, sizeof(int32_t) * (size_t)OW);
            qgemm_store_row(j->isa, &j->out, acc, OH * OW, ch, 0);
            continue;
        }
#endif
        for (int64_t oh = 0; oh < OH; oh++)
            row_fn(&r, oh, b, acc + oh * OW);
        qgemm_store_row(j->isa, &j->out, acc, OH * OW, ch, 0);
    }
    g_free(acc);
    g_free(wv);
    g_free(pair_plane);
}

// Multipliers in double, one per output channel.
static double *channel_mults(const requant *q, int64_t M, double *dst)
{
    for (int64_t m = 0; m < M; m++)
        dst[m] = q->mult[q->n_mult == 1 ? 0 : m];
    return dst;
}

static int64_t threads_of(const reel_exec_ctx *ctx)
{
    return ctx->workers ? ctx->threads : 1;
}

static int conv_depthwise(const qconv_geom *c, qgemm_isa isa, const reel_tensor *x, const reel_tensor *zx,
                          const reel_tensor *w, const reel_tensor *zw, const reel_tensor *bias, int32_t *Y32,
                          const requant *q, void *Y, const reel_exec_ctx *ctx)
{
    int64_t hp, wp;
    dw_plane_dims(c, &hp, &wp);
    double *mult = q ? channel_mults(q, c->M, g_new(double, c->M)) : NULL;
    bool xs = x->dtype == REEL_DTYPE_INT8;
    dw_job j = { .c = c, .isa = isa, .x_signed = xs, .w_signed = w->dtype == REEL_DTYPE_INT8,
                 .zx = zx ? (xs ? *(const int8_t *)zx->data : *(const uint8_t *)zx->data) : 0, .w = w, .zw = zw,
                 .bias = bias ? bias->data : NULL, .planes = ctx->scratch, .hp = hp, .wp = wp };
    j.per = MAX(1, c->C / (4 * threads_of(ctx)));
    j.fp32 = c->w.k[1] * c->w.k[2] <= 25 && nn_dw_plan_init(&c->w, &j.plan);
    for (int64_t img = 0; img < c->N; img++) {
        j.x = (const uint8_t *)x->data + img * c->C * pin_of(c);
        j.out = (qgemm_out){ .ldc = c->P, .mult = mult, .zp = q ? q->zp : 0, .lo = q ? q->lo : 0,
                             .hi = q ? q->hi : 0, .y_signed = q && q->dt == REEL_DTYPE_INT8,
                             .mult_small = q && qgemm_mult_small(mult, c->M) };
        if (q)
            j.out.y = (uint8_t *)Y + img * c->M * c->P;
        else
            j.out.c32 = Y32 + img * c->M * c->P;
        nn_parallel(ctx, (int)((c->C + j.per - 1) / j.per), dw_task, &j);
    }
    g_free(mult);
    return 0;
}

int qconv_fast(const qconv_geom *c, const reel_tensor *x, const reel_tensor *zx, const reel_tensor *w,
               const reel_tensor *zw, const reel_tensor *bias, int32_t *Y32, const requant *q, void *Y,
               bool w_const, const reel_exec_ctx *ctx)
{
    qgemm_isa isa = qgemm_isa_current();
    if (ctx->scratch_size < qconv_fast_scratch(c))
        return REEL_EINVAL;
    if (is_depthwise(c))
        return conv_depthwise(c, isa, x, zx, w, zw, bias, Y32, q, Y, ctx);
    int nr = qgemm_panel_cols(isa);
    flat_geom f = flat_of(c);
    int64_t P = f.on ? f.P : c->P;
    int64_t np = qgemm_np(P, nr), kp = qgemm_kp(c->K), Pin = pin_of(c);
    uint8_t *panels = ctx->scratch;
    int32_t *colsum = (int32_t *)(panels + ((kp * np + 63) & ~(int64_t)63)), *bzp = colsum + np;
    char *rest = (char *)(bzp + np);
    // The weights: packed once when they are constants.
    wpack *wp;
    if (w_const && ctx->state && *ctx->state) {
        wp = *ctx->state;
    } else if (w_const && ctx->state) {
        wp = wpack_make(g_malloc(wpack_bytes(c->M, c->K)), w, zw, c->M, c->K);
        *ctx->state = wp;
    } else {
        wp = wpack_make((void *)(((uintptr_t)rest + 63) & ~(uintptr_t)63), w, zw, c->M, c->K);
        rest += wpack_bytes(c->M, c->K) + 64;
    }
    double *mult = q ? channel_mults(q, c->M, (double *)(((uintptr_t)rest + 7) & ~(uintptr_t)7)) : NULL;
    rest = (char *)(((uintptr_t)rest + 8 * (size_t)c->M + 63) & ~(uintptr_t)63);
    uint8_t *padded = f.on ? (uint8_t *)rest : NULL;
    void *wide = f.on ? (void *)(((uintptr_t)rest + (size_t)flat_bytes(c, &f) + 63) & ~(uintptr_t)63) : NULL;
    bool xs = x->dtype == REEL_DTYPE_INT8;
    int32_t z = zx ? (xs ? *(const int8_t *)zx->data + 128 : *(const uint8_t *)zx->data) : (xs ? 128 : 0);
    for (int64_t i = 0; i < np; i++)
        bzp[i] = z;
    bool direct = c->w.k[0] * c->w.k[1] * c->w.k[2] == 1 && c->w.s[0] * c->w.s[1] * c->w.s[2] == 1 &&
                  c->w.pb[0] + c->w.pb[1] + c->w.pb[2] == 0 && c->P == Pin;
    int64_t threads = threads_of(ctx);
    // Column tiles whose panels stay in L2 (~192 KiB) while the rows of W
    // stream by; enough of them for the workers, or rows split among them.
    int64_t tile = MAX(nr, MIN(np, (192 * 1024 / MAX(kp, 1)) / nr * nr));
    if (threads > 1 && (np + tile - 1) / tile < 2 * threads)
        tile = MAX(nr, (np / (2 * threads) + nr - 1) / nr * nr);
    gemm_job j = { .c = c, .isa = isa, .nr = nr, .P = P, .panels = panels, .colsum = colsum, .tile = tile,
                   .tiles = (P + tile - 1) / tile, .wide = wide, .es = q ? 1 : 4 };
    j.src = (col_src){ .c = c, .flip = xs ? 0x80 : 0, .pad = (uint8_t)z, .direct = direct, .padded = padded, .f = f };
    j.m_tasks = MAX(1, MIN((c->Mg + 7) / 8, (2 * threads + j.tiles - 1) / j.tiles));
    j.m_per = ((c->Mg + j.m_tasks - 1) / j.m_tasks + 7) / 8 * 8;
    j.m_tasks = (c->Mg + j.m_per - 1) / j.m_per;
    for (int64_t img = 0; img < c->N; img++)
        for (int64_t g = 0; g < c->G; g++) {
            j.src.x = (const uint8_t *)x->data + (img * c->C + g * c->Cg) * Pin;
            if (padded)
                pad_image(&j.src, j.src.x, padded);
            nn_parallel(ctx, (int)j.tiles, pack_task, &j);
            int64_t m0 = g * c->Mg, y0 = (img * c->M + m0) * c->P;
            j.p = (qgemm_problem){ .a = wp->rows + m0 * wp->Kp, .lda = (size_t)wp->Kp, .a_unsigned = false,
                                   .a_zp = wp->zp + m0, .a_rr = wp->rr + m0, .b = panels, .kq = kp / 4, .nr = nr,
                                   .b_sum = colsum, .b_zp = bzp, .b_zp_one = true };
            j.p.out = (qgemm_out){ .ldc = P, .bias = bias ? (const int32_t *)bias->data + m0 : NULL };
            j.y = q ? (void *)((uint8_t *)Y + y0) : (void *)(Y32 + y0);
            if (q) {
                j.p.out.y = wide ? wide : j.y;
                j.p.out.y_signed = q->dt == REEL_DTYPE_INT8;
                j.p.out.mult = mult + m0;
                j.p.out.zp = q->zp, j.p.out.lo = q->lo, j.p.out.hi = q->hi;
                j.p.out.mult_small = qgemm_mult_small(mult + m0, c->Mg);
            } else {
                j.p.out.c32 = wide ? wide : j.y;
            }
            nn_parallel(ctx, (int)(j.tiles * j.m_tasks), gemm_task, &j);
            if (wide)
                nn_parallel(ctx, (int)j.m_tasks, compact_task, &j);
        }
    return 0;
}

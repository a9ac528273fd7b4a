// Depthwise ConvInteger and QLinearConv (groups == channels == outputs, 2-D):
// on AVX512-VNNI with VBMI, row strides 1 or 2 and weights that fit int8
// (w - zw), on the bytes themselves, four taps per vpdpbusd; otherwise the
// windows depthwise.c has fp32 fast paths for run through them (the integer
// sums are exact in float), the others on int16 planes of x - zx, two taps
// per vpmaddwd on AVX-512, plain loops elsewhere; a channel's whole output is
// requantized at once (qgemm_store_row).
#include "models/cpu/depthwise.h"
#include "models/cpu/qfast.h"

bool qconv_is_depthwise(const qconv_geom *c)
{
    return c->G > 1 && c->Cg == 1 && c->Mg == 1 && c->w.k[0] == 1 && c->w.in[0] == 1;
}

static int64_t pin_of(const qconv_geom *c)
{
    return c->w.in[0] * c->w.in[1] * c->w.in[2];
}

static int64_t threads_of(const reel_exec_ctx *ctx)
{
    return ctx->workers ? ctx->threads : 1;
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

size_t qconv_depthwise_scratch(const qconv_geom *c)
{
    int64_t hp, wp;
    dw_plane_dims(c, &hp, &wp);
    // Flat runs read up to two rows and a vector past a plane (columns that
    // are dropped).
    return 2 * (size_t)(c->C * hp * wp + 2 * wp + 64) + 64;
}

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
    bool vnni;           // through the byte kernel (dw_task_vnni)
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

#if defined(__x86_64__) || defined(__i386__)
// AVX512-VNNI with VBMI: the bytes themselves, four taps of a kernel row per
// vpdpbusd. The channel's plane is copied as bytes (uint8: int8 shifted by
// 128) with the zero point in the padding; for 16 outputs, one 64-byte load
// per kernel row and a vpermb make each output's four bytes (x[o s + 4q + t],
// t < 4), multiplied by the row's weights w - zw (int8: the driver checked
// that they fit; 0 past KW). Since x = (x - zx) + zx, the sum is the exact
// sum over (x - zx)(w - zw) plus zx * sum(w - zw), which the bias takes off.
#define T512VB __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

// Row r of the byte plane: the pad (zero point) everywhere, then the
// image row's inner bytes (int8 flipped to uint8) at left. The fill runs
// up to 63 bytes into the next row (written after it) or the slack.
T512VB static void dw_byte_row(uint8_t *restrict d, int64_t wp, const uint8_t *restrict src, int64_t left,
                               int64_t inner, __m512i pad, __m512i flip)
{
    for (int64_t i = 0; i < wp; i += 64)
        _mm512_storeu_si512(d + i, pad);
    if (!src)
        return;
    int64_t i = 0;
    for (; i + 64 <= inner; i += 64)
        _mm512_storeu_si512(d + left + i, _mm512_xor_si512(_mm512_loadu_si512(src + i), flip));
    if (i < inner) {
        __mmask64 k = (__mmask64)((1ull << (inner - i)) - 1);
        _mm512_mask_storeu_epi8(d + left + i, k, _mm512_xor_si512(_mm512_maskz_loadu_epi8(k, src + i), flip));
    }
}

// acc += u (uint8) . s (int8) by fours, in place (see qgemm.c's dpbusd512:
// GCC copies the accumulators around the intrinsic's tied operand).
T512VB static inline __m512i dw_dpbusd(__m512i acc, __m512i u, __m512i s)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
    return acc;
}

// Whether the byte kernel runs c's windows: strides 1 or 2 along the row
// (16 outputs' bytes within one 64-byte load), no dilation.
static bool dw_vnni_fits(const qconv_geom *c, qgemm_isa isa)
{
    const nn_window *w = &c->w;
    __builtin_cpu_init();
    return isa == QGEMM_AVX512VNNI && __builtin_cpu_supports("avx512vbmi") && (w->s[2] == 1 || w->s[2] == 2) &&
           w->d[1] == 1 && w->d[2] == 1 && w->k[2] <= 8 && w->k[1] <= 8;
}

// Whether every w - zw fits int8 (the byte kernel's weights).
static bool dw_weights_fit_int8(const qconv_geom *c, const reel_tensor *w, const reel_tensor *zw)
{
    bool ws = w->dtype == REEL_DTYPE_INT8;
    int64_t taps = c->w.k[1] * c->w.k[2], nz = zw ? reel_tensor_count(zw->rank, zw->shape) : 0;
    // Symmetric int8 weights (every zero point 0) fit as they are: no scan
    // of the weights on each run.
    bool zero = true;
    for (int64_t i = 0; i < nz && zero; i++)
        zero = ((const uint8_t *)zw->data)[i] == 0;
    if (ws && zero)
        return true;
    for (int64_t ch = 0; ch < c->C; ch++) {
        int32_t z = !nz ? 0 : ws ? ((const int8_t *)zw->data)[nz == 1 ? 0 : ch] : ((const uint8_t *)zw->data)[nz == 1 ? 0 : ch];
        for (int64_t t = 0; t < taps; t++) {
            uint8_t b = ((const uint8_t *)w->data)[ch * taps + t];
            int32_t v = (ws ? (int32_t)(int8_t)b : (int32_t)b) - z;
            if (v < -128 || v > 127)
                return false;
        }
    }
    return true;
}

// Where a row's sums go: int32 (c32), or requantized into bytes (y) with
// qgemm_requant1's arithmetic, 16 at a time.
typedef struct dw_vstore {
    int32_t *c32;
    uint8_t *y;
    __m512 mult, flo, fhi;
    __m512i zp;
} dw_vstore;

// 16 sums (mask k) to st at element off.
T512VB static inline void dw_vstore16(const dw_vstore *st, int64_t off, __mmask16 k, __m512i v)
{
    if (st->c32) {
        _mm512_mask_storeu_epi32(st->c32 + off, k, v);
        return;
    }
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), st->mult);
    f = _mm512_min_ps(_mm512_max_ps(f, st->flo), st->fhi);
    // In [lo, hi]: the truncation to bytes is exact.
    __m128i y = _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(f), st->zp));
    if (k == 0xffff)
        _mm_storeu_si128((__m128i *)(st->y + off), y);
    else
        _mm_mask_storeu_epi8(st->y + off, k, y);
}

// One output row oh: b + the sums over the taps, OW of them, to st at
// element off; KH and NQ (quads per kernel row) constants in the common
// cases.
T512VB static inline __attribute__((always_inline)) void dw_vnni_row(const uint8_t *plane, int64_t wp, int64_t row0,
                                                                     int64_t OW, int sw, int32_t b, const __m512i *wq,
                                                                     const __m512i *idx, const dw_vstore *st,
                                                                     int64_t off, const int KH, const int NQ)
{
    for (int64_t o0 = 0; o0 < OW; o0 += 16) {
        __mmask16 k = OW - o0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (OW - o0)) - 1);
        __m512i a = _mm512_set1_epi32(b), a2 = _mm512_setzero_si512();
        for (int kh = 0; kh < KH; kh++) {
            __m512i x = _mm512_loadu_si512(plane + (row0 + kh) * wp + o0 * sw);
            for (int q = 0; q < NQ; q++) {
                __m512i u = _mm512_permutexvar_epi8(idx[q], x);
                if ((kh * NQ + q) % 2)
                    a2 = dw_dpbusd(a2, u, wq[kh * NQ + q]);
                else
                    a = dw_dpbusd(a, u, wq[kh * NQ + q]);
            }
        }
        dw_vstore16(st, off + o0, k, _mm512_add_epi32(a, a2));
    }
}

// Two output rows oh and oh + 1 of at most 8 outputs each in one vector:
// their bytes from two 32-byte loads (rows row0 + kh and rstep bytes
// further), idx2 giving the first row's outputs lanes [0, OW) and the
// second's [OW, 2 OW), which is where they go in the output (off).
T512VB static inline __attribute__((always_inline)) void dw_vnni_rowpair(const uint8_t *plane, int64_t wp,
                                                                         int64_t row0, int64_t rstep, int64_t OW,
                                                                         int32_t b, const __m512i *wq,
                                                                         const __m512i *idx2, const dw_vstore *st,
                                                                         int64_t off, const int KH, const int NQ)
{
    __mmask16 k = (__mmask16)((1u << (2 * OW)) - 1);
    __m512i a = _mm512_set1_epi32(b), a2 = _mm512_setzero_si512();
    for (int kh = 0; kh < KH; kh++) {
        const uint8_t *r = plane + (row0 + kh) * wp;
        __m512i x = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)r)),
                                       _mm256_loadu_si256((const __m256i *)(r + rstep)), 1);
        for (int q = 0; q < NQ; q++) {
            __m512i u = _mm512_permutexvar_epi8(idx2[q], x);
            if ((kh * NQ + q) % 2)
                a2 = dw_dpbusd(a2, u, wq[kh * NQ + q]);
            else
                a = dw_dpbusd(a, u, wq[kh * NQ + q]);
        }
    }
    dw_vstore16(st, off, k, _mm512_add_epi32(a, a2));
}

T512VB static void dw_task_vnni(const dw_job *j, int task)
{
    const qconv_geom *c = j->c;
    const nn_window *w = &c->w;
    int64_t KH = w->k[1], KW = w->k[2], OH = w->out[1], OW = w->out[2], H = w->in[1], W = w->in[2];
    int64_t hp = j->hp, wp = j->wp, nz = j->zw ? reel_tensor_count(j->zw->rank, j->zw->shape) : 0;
    int sw = (int)w->s[2], nq = (int)(KW + 3) / 4;
    uint8_t flip = j->x_signed ? 0x80 : 0, pad = (uint8_t)(j->zx ^ flip);
    int32_t zxu = pad; // the zero point as the plane holds it
    // 128 bytes past the plane: the last rows' fill and loads run over.
    uint8_t *plane = g_malloc((size_t)(hp * wp + 128));
    memset(plane + hp * wp, pad, 128);
    __m512i vpad = _mm512_set1_epi8((char)pad), vflip = _mm512_set1_epi8((char)flip);
    __m512i idx[2];
    for (int q = 0; q < 2; q++) {
        uint8_t ix[64];
        for (int i = 0; i < 64; i++)
            ix[i] = (uint8_t)(i / 4 * sw + 4 * q + i % 4);
        idx[q] = _mm512_loadu_si512(ix);
    }
    // Rows of at most 8 outputs go two to a vector (dw_vnni_rowpair): the
    // small late layers (7x7) would fill under half of each.
    bool pairs = 2 * OW <= 16;
    __m512i idx2[2];
    for (int q = 0; q < 2 && pairs; q++) {
        uint8_t ix[64] = { 0 };
        for (int i = 0; i < 4 * 2 * OW; i++)
            ix[i] = (uint8_t)((i / 4 < OW ? 0 : 32) + i / 4 % OW * sw + 4 * q + i % 4);
        idx2[q] = _mm512_loadu_si512(ix);
    }
    int64_t left = MIN(w->pb[2], wp), inner = MAX(0, MIN(W, wp - left));
    for (int64_t ch = task * j->per; ch < MIN(c->C, (task + 1) * j->per); ch++) {
        const uint8_t *xs = j->x + ch * H * W;
        for (int64_t r = 0; r < hp; r++) {
            int64_t ih = r - w->pb[1];
            dw_byte_row(plane + r * wp, wp, ih < 0 || ih >= H ? NULL : xs + ih * W, left, inner, vpad, vflip);
        }
        int32_t z = !nz ? 0
                  : j->w_signed ? ((const int8_t *)j->zw->data)[nz == 1 ? 0 : ch]
                                : ((const uint8_t *)j->zw->data)[nz == 1 ? 0 : ch];
        const uint8_t *wr = (const uint8_t *)j->w->data + ch * KH * KW;
        __m512i wq[8 * 2];
        uint32_t wsum = 0;
        for (int64_t kh = 0; kh < KH; kh++)
            for (int q = 0; q < nq; q++) {
                uint32_t quad = 0;
                for (int t = 0; t < 4 && 4 * q + t < KW; t++) {
                    uint8_t b = wr[kh * KW + 4 * q + t];
                    int32_t v = (j->w_signed ? (int32_t)(int8_t)b : (int32_t)b) - z;
                    wsum += (uint32_t)v;
                    quad |= (uint32_t)(uint8_t)v << (8 * t);
                }
                wq[kh * nq + q] = _mm512_set1_epi32((int32_t)quad);
            }
        int32_t b = (int32_t)((uint32_t)(j->bias ? j->bias[ch] : 0) - (uint32_t)zxu * wsum);
        const qgemm_out *o = &j->out;
        dw_vstore st = { .c32 = o->c32 ? o->c32 + ch * o->ldc : NULL,
                         .y = o->c32 ? NULL : (uint8_t *)o->y + ch * o->ldc,
                         .mult = _mm512_set1_ps(o->c32 ? 0 : o->mult[ch]), .flo = _mm512_set1_ps((float)(o->lo - o->zp)),
                         .fhi = _mm512_set1_ps((float)(o->hi - o->zp)), .zp = _mm512_set1_epi32(o->zp) };
        int64_t oh = 0;
        for (; pairs && oh + 2 <= OH; oh += 2) {
            int64_t row0 = oh * w->s[1], rstep = w->s[1] * wp;
            if (KH == 3 && nq == 1)
                dw_vnni_rowpair(plane, wp, row0, rstep, OW, b, wq, idx2, &st, oh * OW, 3, 1);
            else if (KH == 5 && nq == 2)
                dw_vnni_rowpair(plane, wp, row0, rstep, OW, b, wq, idx2, &st, oh * OW, 5, 2);
            else
                dw_vnni_rowpair(plane, wp, row0, rstep, OW, b, wq, idx2, &st, oh * OW, (int)KH, nq);
        }
        for (; oh < OH; oh++) {
            int64_t row0 = oh * w->s[1];
            if (KH == 3 && nq == 1)
                dw_vnni_row(plane, wp, row0, OW, sw, b, wq, idx, &st, oh * OW, 3, 1);
            else if (KH == 5 && nq == 2)
                dw_vnni_row(plane, wp, row0, OW, sw, b, wq, idx, &st, oh * OW, 5, 2);
            else
                dw_vnni_row(plane, wp, row0, OW, sw, b, wq, idx, &st, oh * OW, (int)KH, nq);
        }
    }
    g_free(plane);
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
#if defined(__x86_64__) || defined(__i386__)
    if (((const dw_job *)arg)->vnni) {
        dw_task_vnni(arg, task);
        return;
    }
#endif
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

int qconv_depthwise(const qconv_geom *c, qgemm_isa isa, const reel_tensor *x, const reel_tensor *zx,
                    const reel_tensor *w, const reel_tensor *zw, const reel_tensor *bias, int32_t *Y32,
                    const requant *q, void *Y, const reel_exec_ctx *ctx)
{
    int64_t hp, wp;
    dw_plane_dims(c, &hp, &wp);
    float *mult = q ? qconv_channel_mults(q, c->M, g_new(float, c->M)) : NULL;
    bool xs = x->dtype == REEL_DTYPE_INT8;
    dw_job j = { .c = c, .isa = isa, .x_signed = xs, .w_signed = w->dtype == REEL_DTYPE_INT8,
                 .zx = zx ? (xs ? *(const int8_t *)zx->data : *(const uint8_t *)zx->data) : 0, .w = w, .zw = zw,
                 .bias = bias ? bias->data : NULL, .planes = ctx->scratch, .hp = hp, .wp = wp };
    j.per = MAX(1, c->C / (4 * threads_of(ctx)));
#if defined(__x86_64__) || defined(__i386__)
    j.vnni = dw_vnni_fits(c, isa) && dw_weights_fit_int8(c, w, zw);
#endif
    j.fp32 = !j.vnni && c->w.k[1] * c->w.k[2] <= 25 && nn_dw_plan_init(&c->w, &j.plan);
    for (int64_t img = 0; img < c->N; img++) {
        j.x = (const uint8_t *)x->data + img * c->C * pin_of(c);
        j.out = (qgemm_out){ .ldc = c->P, .mult = mult, .zp = q ? q->zp : 0, .lo = q ? q->lo : 0,
                             .hi = q ? q->hi : 0, .y_signed = q && q->dt == REEL_DTYPE_INT8 };
        if (q)
            j.out.y = (uint8_t *)Y + img * c->M * c->P;
        else
            j.out.c32 = Y32 + img * c->M * c->P;
        nn_parallel(ctx, (int)((c->C + j.per - 1) / j.per), dw_task, &j);
    }
    g_free(mult);
    return 0;
}


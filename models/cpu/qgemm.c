// The int8 GEMM (qgemm.h): register-tile kernels per instruction set, the
// packing of B into vpdpbusd panels, and the store that corrects for the
// zero points and requantizes.
#include "models/cpu/qgemm.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define QGEMM_X86 1
#endif

#define MAX_MR 8
#define MAX_NR 32

static inline int32_t load4(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

// ---- Packing

#ifdef QGEMM_X86
// 64 columns of four rows into two 32-column panels (d0, d1: 128 bytes
// each) and the columns' sums: bytes interleaved in 128-bit lanes, the
// lanes transposed; each column's four bytes summed by a vpdpbusd with ones.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void
pack64_avx512(const uint8_t *const r[4], int64_t j, uint8_t *d0, uint8_t *d1, int32_t *sum, bool is_signed)
{
    __m512i a = _mm512_loadu_si512(r[0] + j), b = _mm512_loadu_si512(r[1] + j);
    __m512i c = _mm512_loadu_si512(r[2] + j), e = _mm512_loadu_si512(r[3] + j);
    __m512i ab0 = _mm512_unpacklo_epi8(a, b), ab1 = _mm512_unpackhi_epi8(a, b);
    __m512i ce0 = _mm512_unpacklo_epi8(c, e), ce1 = _mm512_unpackhi_epi8(c, e);
    // q0..q3: in each lane L, columns 16 L + 4 i .. + 3 of qi.
    __m512i q0 = _mm512_unpacklo_epi16(ab0, ce0), q1 = _mm512_unpackhi_epi16(ab0, ce0);
    __m512i q2 = _mm512_unpacklo_epi16(ab1, ce1), q3 = _mm512_unpackhi_epi16(ab1, ce1);
    __m512i t0 = _mm512_shuffle_i32x4(q0, q1, 0x44), t1 = _mm512_shuffle_i32x4(q2, q3, 0x44);
    __m512i t2 = _mm512_shuffle_i32x4(q0, q1, 0xee), t3 = _mm512_shuffle_i32x4(q2, q3, 0xee);
    __m512i o[4] = { _mm512_shuffle_i32x4(t0, t1, 0x88), _mm512_shuffle_i32x4(t0, t1, 0xdd),
                     _mm512_shuffle_i32x4(t2, t3, 0x88), _mm512_shuffle_i32x4(t2, t3, 0xdd) };
    _mm512_storeu_si512(d0, o[0]);
    _mm512_storeu_si512(d0 + 64, o[1]);
    _mm512_storeu_si512(d1, o[2]);
    _mm512_storeu_si512(d1 + 64, o[3]);
    __m512i ones = _mm512_set1_epi8(1);
    for (int i = 0; i < 4; i++) {
        __m512i s = _mm512_loadu_si512(sum + j + 16 * i);
        s = is_signed ? _mm512_dpbusd_epi32(s, ones, o[i]) : _mm512_dpbusd_epi32(s, o[i], ones);
        _mm512_storeu_si512(sum + j + 16 * i, s);
    }
}
#endif

void qgemm_pack_panels(int nr, int64_t K, int64_t n0, int64_t len, bool is_signed, qgemm_row_fn row, void *arg,
                       uint8_t *panels, int32_t *colsum)
{
    int64_t kq = (K + 3) / 4;
    uint8_t buf[4][QGEMM_PACK_COLS];
    for (int64_t c0 = 0; c0 < len; c0 += QGEMM_PACK_COLS) {
        int64_t cl = len - c0 < QGEMM_PACK_COLS ? len - c0 : QGEMM_PACK_COLS;
        int32_t *sum = colsum + n0 + c0;
        memset(sum, 0, sizeof(int32_t) * (size_t)cl);
        for (int64_t q = 0; q < kq; q++) {
            const uint8_t *r[4];
            for (int i = 0; i < 4; i++) {
                int64_t k = 4 * q + i;
                if (k < K) {
                    r[i] = row(arg, k, n0 + c0, cl, buf[i]);
                } else {
                    memset(buf[i], 0, (size_t)cl);
                    r[i] = buf[i];
                }
            }
            int64_t done = 0; // columns packed and summed by the AVX-512 path
#ifdef QGEMM_X86
            // Only AVX512-VNNI's panels are 32 columns wide.
            if (nr == 32)
                for (; done + 64 <= cl; done += 64) {
                    uint8_t *d = panels + ((n0 + c0 + done) / nr * kq + q) * (int64_t)nr * 4;
                    pack64_avx512(r, done, d, d + kq * nr * 4, sum, is_signed);
                }
#endif
            // Column j of this group goes to panel (c0 + j) / nr, slot j % nr.
            for (int64_t j0 = done; j0 < cl; j0 += nr) {
                uint8_t *restrict d = panels + ((n0 + c0 + j0) / nr * kq + q) * (int64_t)nr * 4;
                int64_t jl = cl - j0 < nr ? cl - j0 : nr;
                const uint8_t *restrict r0 = r[0] + j0, *restrict r1 = r[1] + j0, *restrict r2 = r[2] + j0,
                                        *restrict r3 = r[3] + j0;
                int64_t j = 0;
#ifdef QGEMM_X86
                // 16 columns of the four rows -> 64 interleaved bytes (SSE2).
                for (; j + 16 <= jl; j += 16) {
                    __m128i a = _mm_loadu_si128((const __m128i *)(r0 + j)), b = _mm_loadu_si128((const __m128i *)(r1 + j));
                    __m128i c = _mm_loadu_si128((const __m128i *)(r2 + j)), e = _mm_loadu_si128((const __m128i *)(r3 + j));
                    __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
                    __m128i ce0 = _mm_unpacklo_epi8(c, e), ce1 = _mm_unpackhi_epi8(c, e);
                    _mm_storeu_si128((__m128i *)(d + 4 * j), _mm_unpacklo_epi16(ab0, ce0));
                    _mm_storeu_si128((__m128i *)(d + 4 * j + 16), _mm_unpackhi_epi16(ab0, ce0));
                    _mm_storeu_si128((__m128i *)(d + 4 * j + 32), _mm_unpacklo_epi16(ab1, ce1));
                    _mm_storeu_si128((__m128i *)(d + 4 * j + 48), _mm_unpackhi_epi16(ab1, ce1));
                }
#endif
                for (; j < jl; j++) {
                    d[4 * j] = r0[j];
                    d[4 * j + 1] = r1[j];
                    d[4 * j + 2] = r2[j];
                    d[4 * j + 3] = r3[j];
                }
                if (jl < nr)
                    memset(d + 4 * jl, 0, (size_t)(4 * (nr - jl)));
            }
            // The padding rows are 0 and add nothing.
            int32_t *restrict s = sum;
            if (is_signed)
                for (int64_t j = done; j < cl; j++)
                    s[j] += (int8_t)r[0][j] + (int8_t)r[1][j] + (int8_t)r[2][j] + (int8_t)r[3][j];
            else
                for (int64_t j = done; j < cl; j++)
                    s[j] += r[0][j] + r[1][j] + r[2][j] + r[3][j];
        }
    }
}

// ---- The store: zero-point corrections, bias, requantization

// One row's sums t[0..len) at column n0 of row m, corrected in wrapping
// uint32 arithmetic (the final value fits int32; the terms may not).
static inline void correct_row(const qgemm_problem *p, const int32_t *t, int64_t len, int64_t m, int64_t n0,
                               int32_t *restrict c)
{
    uint32_t za = (uint32_t)p->a_zp[m], rr = (uint32_t)p->a_rr[m];
    uint32_t bias = p->out.bias ? (uint32_t)p->out.bias[m] : 0;
    const int32_t *cs = p->b_sum + n0, *zb = p->b_zp + n0;
    for (int64_t j = 0; j < len; j++)
        c[j] = (int32_t)((uint32_t)t[j] - za * (uint32_t)cs[j] - (uint32_t)zb[j] * rr + bias);
}

// The requantization of qgemm_requant1, one value at a time.
static void requant_generic(const qgemm_out *o, const int32_t *acc, int64_t len, int64_t m, int64_t n0)
{
    for (int64_t j = 0; j < len; j++) {
        int32_t v = qgemm_requant1(acc[j], o->mult_per_col ? o->mult[n0 + j] : o->mult[m], o->zp, o->lo, o->hi);
        if (o->y_signed)
            ((int8_t *)o->y)[m * o->ldc + n0 + j] = (int8_t)v;
        else
            ((uint8_t *)o->y)[m * o->ldc + n0 + j] = (uint8_t)v;
    }
}

static void store32(const qgemm_out *o, const int32_t *acc, int64_t len, int64_t m, int64_t n0)
{
    memcpy(o->c32 + m * o->ldc + n0, acc, sizeof(int32_t) * (size_t)len);
}

#ifdef QGEMM_X86
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,avx2")))
#define T256 __attribute__((target("avx2,fma")))
#define TVNNI __attribute__((target("avxvnni,avx2,fma")))

// The float bounds of the clamp, lo - zp and hi - zp (qgemm_requant1).
#define FLO(o) ((float)((o)->lo - (o)->zp))
#define FHI(o) ((float)((o)->hi - (o)->zp))

// Eight sums -> eight values in [lo, hi], qgemm_requant1's arithmetic.
T256 static inline __m256i requant8(__m256i v, __m256 mult, __m256 flo, __m256 fhi, __m256i zp)
{
    __m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), mult);
    f = _mm256_min_ps(_mm256_max_ps(f, flo), fhi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(f), zp);
}

// Eight values in [-128, 255] to bytes at y (the packs are exact).
T256 static inline void store8(const qgemm_out *o, uint8_t *y, __m256i r)
{
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    __m128i b = o->y_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64((__m128i *)y, b);
}

T256 static void requant_avx2(const qgemm_out *o, const int32_t *acc, int64_t len, int64_t m, int64_t n0)
{
    __m256 flo = _mm256_set1_ps(FLO(o)), fhi = _mm256_set1_ps(FHI(o));
    __m256i zp = _mm256_set1_epi32(o->zp);
    __m256 mr = _mm256_set1_ps(o->mult[o->mult_per_col ? 0 : m]);
    int64_t j = 0;
    for (; j + 8 <= len; j += 8) {
        __m256 mv = o->mult_per_col ? _mm256_loadu_ps(o->mult + n0 + j) : mr;
        __m256i r = requant8(_mm256_loadu_si256((const __m256i *)(acc + j)), mv, flo, fhi, zp);
        store8(o, (uint8_t *)o->y + m * o->ldc + n0 + j, r);
    }
    if (j < len)
        requant_generic(o, acc + j, len - j, m, n0 + j);
}

// AVX2 and AVX-VNNI: a tile's rows from T (row stride nr): the zero-point
// corrections with the per-row constants hoisted, bias, and the store or
// requantization, 8 columns at a time; the last few as the generic store.
T256 static void finish_avx2(const qgemm_problem *p, const int32_t *T, int nr, int rows, int cols, int64_t m,
                             int64_t n)
{
    const qgemm_out *o = &p->out;
    __m256 flo = _mm256_set1_ps(FLO(o)), fhi = _mm256_set1_ps(FHI(o));
    __m256i zp = _mm256_set1_epi32(o->zp);
    int whole = cols / 8 * 8;
    for (int r = 0; r < rows; r++) {
        int64_t mr = m + r;
        int32_t za = p->a_zp[mr], rr = p->a_rr[mr], bias = o->bias ? o->bias[mr] : 0;
        __m256i vza = _mm256_set1_epi32(za), vrr = _mm256_set1_epi32(rr), vb = _mm256_set1_epi32(bias);
        __m256 mrow = _mm256_set1_ps(o->c32 || o->mult_per_col ? 0 : o->mult[mr]);
        const int32_t *t = T + r * nr;
        for (int c0 = 0; c0 < whole; c0 += 8) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(t + c0));
            __m256i cs = _mm256_loadu_si256((const __m256i *)(p->b_sum + n + c0));
            __m256i zb = _mm256_loadu_si256((const __m256i *)(p->b_zp + n + c0));
            v = _mm256_sub_epi32(v, _mm256_mullo_epi32(cs, vza));
            v = _mm256_sub_epi32(v, _mm256_mullo_epi32(zb, vrr));
            v = _mm256_add_epi32(v, vb);
            if (o->c32) {
                _mm256_storeu_si256((__m256i *)(o->c32 + mr * o->ldc + n + c0), v);
                continue;
            }
            __m256 mv = o->mult_per_col ? _mm256_loadu_ps(o->mult + n + c0) : mrow;
            store8(o, (uint8_t *)o->y + mr * o->ldc + n + c0, requant8(v, mv, flo, fhi, zp));
        }
        if (whole < cols) {
            int32_t c[8];
            correct_row(p, t + whole, cols - whole, mr, n + whole, c);
            if (o->c32)
                store32(o, c, cols - whole, mr, n + whole);
            else
                requant_generic(o, c, cols - whole, mr, n + whole);
        }
    }
}

// 16 sums -> 16 values in [lo, hi], qgemm_requant1's arithmetic.
T512 static inline __m512i requant16(__m512i v, __m512 mult, __m512 flo, __m512 fhi, __m512i zp)
{
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(v), mult);
    f = _mm512_min_ps(_mm512_max_ps(f, flo), fhi);
    return _mm512_add_epi32(_mm512_cvtps_epi32(f), zp);
}

// 16 values in range to bytes (truncation is exact): vpmovdb into a
// register, then a plain store where all 16 go (vpmovdb to memory is slow
// on Zen 4).
T512 static inline void store16(const qgemm_out *o, uint8_t *y, __mmask16 k, int64_t len, __m512i v)
{
    (void)o;
    __m128i b = _mm512_cvtepi32_epi8(v);
    __asm__("" : "+x"(b)); // keeps the narrowing apart from the store
    if (len >= 16)
        _mm_storeu_si128((__m128i *)y, b);
    else
        _mm_mask_storeu_epi8(y, k, b);
}

T512 static void requant_avx512(const qgemm_out *o, const int32_t *acc, int64_t len, int64_t m, int64_t n0)
{
    __m512 flo = _mm512_set1_ps(FLO(o)), fhi = _mm512_set1_ps(FHI(o));
    __m512i zp = _mm512_set1_epi32(o->zp);
    __m512 mr = _mm512_set1_ps(o->mult[o->mult_per_col ? 0 : m]);
    uint8_t *y = (uint8_t *)o->y + m * o->ldc + n0;
    for (int64_t j = 0; j < len; j += 16) {
        int64_t n = len - j < 16 ? len - j : 16;
        __mmask16 k = (__mmask16)((1u << n) - 1);
        __m512 mv = o->mult_per_col ? _mm512_maskz_loadu_ps(k, o->mult + n0 + j) : mr;
        __m512i v = _mm512_maskz_loadu_epi32(k, acc + j);
        store16(o, y + j, k, n, requant16(v, mv, flo, fhi, zp));
    }
}
#endif


typedef void (*requant_fn)(const qgemm_out *o, const int32_t *acc, int64_t len, int64_t m, int64_t n0);

static requant_fn requant_for(qgemm_isa isa)
{
#ifdef QGEMM_X86
    if (isa == QGEMM_AVX512VNNI)
        return requant_avx512;
    if (isa == QGEMM_AVX2 || isa == QGEMM_AVXVNNI)
        return requant_avx2;
#endif
    (void)isa;
    return requant_generic;
}

#ifdef QGEMM_X86
T512 static void store_f32_avx512(const qgemm_out *o, const float *acc, int64_t len, int64_t m, int64_t n0,
                                  int32_t bias)
{
    __m512 flo = _mm512_set1_ps(FLO(o)), fhi = _mm512_set1_ps(FHI(o));
    __m512i zp = _mm512_set1_epi32(o->zp);
    __m512 mr = _mm512_set1_ps(o->c32 || o->mult_per_col ? 0 : o->mult[m]);
    __m512i b = _mm512_set1_epi32(bias);
    for (int64_t j = 0; j < len; j += 16) {
        int64_t n = len - j < 16 ? len - j : 16;
        __mmask16 k = (__mmask16)((1u << n) - 1);
        // Exact integers in float: the conversion is exact, the bias wraps as int32 as the reference's.
        __m512i v = _mm512_add_epi32(_mm512_cvtps_epi32(_mm512_maskz_loadu_ps(k, acc + j)), b);
        if (o->c32) {
            _mm512_mask_storeu_epi32(o->c32 + m * o->ldc + n0 + j, k, v);
            continue;
        }
        store16(o, (uint8_t *)o->y + m * o->ldc + n0 + j, k, n, requant16(v, mr, flo, fhi, zp));
    }
}
#endif

void qgemm_store_row_f32(qgemm_isa isa, const qgemm_out *o, const float *acc, int64_t len, int64_t m, int64_t n0,
                         int32_t bias)
{
#ifdef QGEMM_X86
    if (isa == QGEMM_AVX512VNNI && !o->mult_per_col) {
        store_f32_avx512(o, acc, len, m, n0, bias);
        return;
    }
#endif
    int32_t buf[256];
    for (int64_t j = 0; j < len; j += 256) {
        int64_t n = len - j < 256 ? len - j : 256;
        for (int64_t i = 0; i < n; i++)
            buf[i] = (int32_t)((uint32_t)(int32_t)acc[j + i] + (uint32_t)bias);
        qgemm_store_row(isa, o, buf, n, m, n0 + j);
    }
}

void qgemm_store_row(qgemm_isa isa, const qgemm_out *o, const int32_t *acc, int64_t len, int64_t m, int64_t n0)
{
    if (o->c32)
        store32(o, acc, len, m, n0);
    else
        requant_for(isa)(o, acc, len, m, n0);
}

// ---- Register tiles: T[rows][nr] = A[rows][Kp] . panel

// Plain C: 4 rows by 16 columns.
static void dot_generic(const uint8_t *A, size_t lda, const uint8_t *B, int64_t kq, int32_t *T, int rows, int cols,
                        bool a_unsigned)
{
    (void)cols;
    int32_t acc[4][16] = { { 0 } };
    for (int64_t q = 0; q < kq; q++) {
        const uint8_t *b = B + q * 64;
        for (int r = 0; r < rows; r++) {
            const uint8_t *a = A + r * lda + 4 * q;
            for (int j = 0; j < 16; j++) {
                int32_t s = 0;
                for (int i = 0; i < 4; i++)
                    s += a_unsigned ? (int32_t)a[i] * (int8_t)b[4 * j + i] : (int8_t)a[i] * (int32_t)b[4 * j + i];
                acc[r][j] += s;
            }
        }
    }
    for (int r = 0; r < rows; r++)
        memcpy(T + r * 16, acc[r], sizeof acc[r]);
}

#ifdef QGEMM_X86
// vpdpbusd without VNNI: u (uint8) and s (int8) bytes split into their even
// and odd bytes as int16, two vpmaddwd (no saturation: |u s| <= 32640).
typedef struct split16 {
    __m256i lo, hi;
} split16;

T256 static inline split16 split_u8(__m256i v)
{
    return (split16){ _mm256_and_si256(v, _mm256_set1_epi16(0xff)), _mm256_srli_epi16(v, 8) };
}
T256 static inline split16 split_s8(__m256i v)
{
    return (split16){ _mm256_srai_epi16(_mm256_slli_epi16(v, 8), 8), _mm256_srai_epi16(v, 8) };
}
T256 static inline __m256i dp_split(__m256i acc, split16 u, split16 s)
{
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(u.lo, s.lo), _mm256_madd_epi16(u.hi, s.hi)));
}

// AVX2: 4 rows by 16 columns (two ymm of sums per row).
T256 static inline __attribute__((always_inline)) void dot_avx2_body(const uint8_t *A, size_t lda, const uint8_t *B,
                                                                    int64_t kq, int32_t *T, const int rows,
                                                                    const bool a_unsigned)
{
    __m256i c[4][2];
    for (int r = 0; r < 4; r++)
        c[r][0] = c[r][1] = _mm256_setzero_si256();
    for (int64_t q = 0; q < kq; q++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(B + q * 64));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(B + q * 64 + 32));
        split16 s0 = a_unsigned ? split_s8(b0) : split_u8(b0), s1 = a_unsigned ? split_s8(b1) : split_u8(b1);
        for (int r = 0; r < rows; r++) {
            __m256i a = _mm256_set1_epi32(load4(A + r * lda + 4 * q));
            split16 sa = a_unsigned ? split_u8(a) : split_s8(a);
            c[r][0] = a_unsigned ? dp_split(c[r][0], sa, s0) : dp_split(c[r][0], s0, sa);
            c[r][1] = a_unsigned ? dp_split(c[r][1], sa, s1) : dp_split(c[r][1], s1, sa);
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm256_storeu_si256((__m256i *)(T + r * 16), c[r][0]);
        _mm256_storeu_si256((__m256i *)(T + r * 16 + 8), c[r][1]);
    }
}

// AVX-VNNI: 4 rows by 16 columns.
TVNNI static inline __attribute__((always_inline)) void dot_avxvnni_body(const uint8_t *A, size_t lda,
                                                                        const uint8_t *B, int64_t kq, int32_t *T,
                                                                        const int rows, const bool a_unsigned)
{
    __m256i c[4][2];
    for (int r = 0; r < 4; r++)
        c[r][0] = c[r][1] = _mm256_setzero_si256();
    for (int64_t q = 0; q < kq; q++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(B + q * 64));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(B + q * 64 + 32));
        for (int r = 0; r < rows; r++) {
            __m256i a = _mm256_set1_epi32(load4(A + r * lda + 4 * q));
            c[r][0] = a_unsigned ? _mm256_dpbusd_avx_epi32(c[r][0], a, b0) : _mm256_dpbusd_avx_epi32(c[r][0], b0, a);
            c[r][1] = a_unsigned ? _mm256_dpbusd_avx_epi32(c[r][1], a, b1) : _mm256_dpbusd_avx_epi32(c[r][1], b1, a);
        }
    }
    for (int r = 0; r < rows; r++) {
        _mm256_storeu_si256((__m256i *)(T + r * 16), c[r][0]);
        _mm256_storeu_si256((__m256i *)(T + r * 16 + 8), c[r][1]);
    }
}

// acc += u (uint8) . s (int8) by fours, in place: GCC copies the
// accumulators around the intrinsic's tied operand in unrolled loops (two
// moves per vpdpbusd), which doubles the tile's instructions.
T512 static inline __m512i dpbusd512(__m512i acc, __m512i u, __m512i s)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
    return acc;
}

// Each row count a constant, so that the tiles stay in registers.
#define ROWS_CASES(CALL)                                                                                         \
    switch (rows) {                                                                                              \
    case 1: CALL(1); break;                                                                                      \
    case 2: CALL(2); break;                                                                                      \
    case 3: CALL(3); break;                                                                                      \
    case 4: CALL(4); break;                                                                                      \
    case 5: CALL(5); break;                                                                                      \
    case 6: CALL(6); break;                                                                                      \
    case 7: CALL(7); break;                                                                                      \
    default: CALL(8); break;                                                                                     \
    }

T256 static void dot_avx2(const uint8_t *A, size_t lda, const uint8_t *B, int64_t kq, int32_t *T, int rows, int cols,
                          bool a_unsigned)
{
    (void)cols;
#define AVX2_CALL(R)                                                                                             \
    (a_unsigned ? dot_avx2_body(A, lda, B, kq, T, (R) > 4 ? 4 : (R), true)                                       \
                : dot_avx2_body(A, lda, B, kq, T, (R) > 4 ? 4 : (R), false))
    ROWS_CASES(AVX2_CALL)
#undef AVX2_CALL
}

TVNNI static void dot_avxvnni(const uint8_t *A, size_t lda, const uint8_t *B, int64_t kq, int32_t *T, int rows,
                              int cols, bool a_unsigned)
{
    (void)cols;
#define VNNI_CALL(R)                                                                                             \
    (a_unsigned ? dot_avxvnni_body(A, lda, B, kq, T, (R) > 4 ? 4 : (R), true)                                    \
                : dot_avxvnni_body(A, lda, B, kq, T, (R) > 4 ? 4 : (R), false))
    ROWS_CASES(VNNI_CALL)
#undef VNNI_CALL
}


// The store of one vector of sums of row m, columns n.. (mask k): the
// zero-point corrections (per-row constants hoisted by the caller: rc =
// bias - zb * (rowsum - K za) when zb is one value), requantization.
// The store's constants: the tile's (zp, flo, fhi) and the row's (za, rr,
// rc, mult), passed by value so that they stay in registers.
typedef struct row_consts {
    __m512i za, rr, rc, zp;
    __m512 mult, flo, fhi;
} row_consts;

T512 static inline __attribute__((always_inline)) void store_vec(const qgemm_problem *p, __m512i v, int64_t m,
                                                                 int64_t n, __mmask16 k, int len,
                                                                 const row_consts rcs, bool zb_one, bool za_zero)
{
    const qgemm_out *o = &p->out;
    if (!za_zero)
        v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(k, p->b_sum + n), rcs.za));
    if (!zb_one)
        v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_maskz_loadu_epi32(k, p->b_zp + n), rcs.rr));
    v = _mm512_add_epi32(v, rcs.rc);
    if (o->c32) {
        _mm512_mask_storeu_epi32(o->c32 + m * o->ldc + n, k, v);
        return;
    }
    __m512 mv = o->mult_per_col ? _mm512_maskz_loadu_ps(k, o->mult + n) : rcs.mult;
    __m512i r = requant16(v, mv, rcs.flo, rcs.fhi, rcs.zp);
    store16(o, (uint8_t *)o->y + m * o->ldc + n, k, len, r);
}

// AVX512-VNNI: a whole tile of 8 rows by 32 columns (np = 2 zmm) or 16
// (np = 1), rows [m, m + rows) by columns [n, n + cols), the sums never
// leaving the registers.
T512 static inline __attribute__((always_inline)) void tile_avx512_body(const qgemm_problem *p, int64_t m, int64_t n,
                                                                        int cols, const int rows, const int np,
                                                                        const bool a_unsigned, const bool plain)
{
    const uint8_t *A = p->a + m * p->lda, *B = p->b + n / 32 * p->kq * 128;
    size_t lda = p->lda;
    __m512i c[8][2];
    for (int r = 0; r < 8; r++)
        c[r][0] = c[r][1] = _mm512_setzero_si512();
    for (int64_t q = 0; q < p->kq; q++) {
        __m512i b0 = _mm512_loadu_si512(B + q * 128);
        __m512i b1 = np > 1 ? _mm512_loadu_si512(B + q * 128 + 64) : _mm512_setzero_si512();
        for (int r = 0; r < rows; r++) {
            __m512i a = _mm512_set1_epi32(load4(A + r * lda + 4 * q));
            c[r][0] = a_unsigned ? dpbusd512(c[r][0], a, b0) : dpbusd512(c[r][0], b0, a);
            if (np > 1)
                c[r][1] = a_unsigned ? dpbusd512(c[r][1], a, b1) : dpbusd512(c[r][1], b1, a);
        }
    }
    const qgemm_out *o = &p->out;
    bool zb_one = p->b_zp_one;
    int l0 = cols < 16 ? cols : 16, l1 = cols - 16;
    __mmask16 k0 = (__mmask16)((1u << l0) - 1), k1 = l1 > 0 ? (__mmask16)((1u << l1) - 1) : 0;
    row_consts rc = { .zp = _mm512_set1_epi32(o->zp), .flo = _mm512_set1_ps(FLO(o)), .fhi = _mm512_set1_ps(FHI(o)) };
    if (plain) {
        // The common case (tile_is_plain) with every pointer in a register:
        // a byte store may alias p's fields, so store_vec reloads them, and
        // the unrolled rows keep the sums in registers.
        uint8_t *y = (uint8_t *)o->y + m * o->ldc + n;
        int64_t ldc = o->ldc;
        const int32_t *rr = p->a_rr + m, *bias = o->bias ? o->bias + m : NULL;
        const float *mult = o->mult + m;
        uint32_t zb = (uint32_t)p->b_zp[0];
#pragma GCC unroll 8
        for (int r = 0; r < rows; r++) {
            __m512i rcv = _mm512_set1_epi32((int32_t)((bias ? (uint32_t)bias[r] : 0) - zb * (uint32_t)rr[r]));
            __m512 mv = _mm512_set1_ps(mult[r]);
            store16(o, y + r * ldc, k0, l0, requant16(_mm512_add_epi32(c[r][0], rcv), mv, rc.flo, rc.fhi, rc.zp));
            if (np > 1 && l1 > 0)
                store16(o, y + r * ldc + 16, k1, l1,
                        requant16(_mm512_add_epi32(c[r][1], rcv), mv, rc.flo, rc.fhi, rc.zp));
        }
        return;
    }
#pragma GCC unroll 8
    for (int r = 0; r < rows; r++) {
        int64_t mr = m + r;
        int32_t za = p->a_zp[mr], rr = p->a_rr[mr], bias = o->bias ? o->bias[mr] : 0;
        rc.za = _mm512_set1_epi32(za), rc.rr = _mm512_set1_epi32(rr);
        rc.rc = _mm512_set1_epi32((int32_t)((uint32_t)bias - (zb_one ? (uint32_t)p->b_zp[0] * (uint32_t)rr : 0)));
        rc.mult = _mm512_set1_ps(o->c32 || o->mult_per_col ? 0 : o->mult[mr]);
        bool za_zero = za == 0;
        store_vec(p, c[r][0], mr, n, k0, l0, rc, zb_one, za_zero);
        if (np > 1 && l1 > 0)
            store_vec(p, c[r][1], mr, n + 16, k1, l1, rc, zb_one, za_zero);
    }
}

// Rows whose A zero point is 0 (symmetric weights), one B zero point, a
// multiplier per row and bytes out: the store is add, requantize, narrow.
static bool tile_is_plain(const qgemm_problem *p, int64_t m, int rows)
{
    if (!p->b_zp_one || p->out.c32 || p->out.mult_per_col)
        return false;
    for (int r = 0; r < rows; r++)
        if (p->a_zp[m + r] != 0)
            return false;
    return true;
}

T512 static void tile_avx512(const qgemm_problem *p, int64_t m, int64_t n, int rows, int cols)
{
    bool plain = tile_is_plain(p, m, rows);
#define TILE_NP(R, NP, U)                                                                                        \
    (plain ? tile_avx512_body(p, m, n, cols, R, NP, U, true) : tile_avx512_body(p, m, n, cols, R, NP, U, false))
#define TILE_CALL(R)                                                                                             \
    (cols > 16 ? (p->a_unsigned ? TILE_NP(R, 2, true) : TILE_NP(R, 2, false))                                    \
               : (p->a_unsigned ? TILE_NP(R, 1, true) : TILE_NP(R, 1, false)))
    ROWS_CASES(TILE_CALL)
#undef TILE_CALL
#undef TILE_NP
}
#endif

// ---- Choosing the kernels

typedef void (*dot_fn)(const uint8_t *A, size_t lda, const uint8_t *B, int64_t kq, int32_t *T, int rows, int cols,
                       bool a_unsigned);

typedef struct isa_kernels {
    int mr, nr;
    dot_fn dot;
} isa_kernels;

static isa_kernels kernels_for(qgemm_isa isa)
{
    switch (isa) {
#ifdef QGEMM_X86
    case QGEMM_AVX512VNNI: return (isa_kernels){ 8, 32, NULL }; // tile_avx512: the sums never leave the registers
    case QGEMM_AVXVNNI: return (isa_kernels){ 4, 16, dot_avxvnni };
    case QGEMM_AVX2: return (isa_kernels){ 4, 16, dot_avx2 };
#endif
    default: return (isa_kernels){ 4, 16, dot_generic };
    }
}

int qgemm_panel_cols(qgemm_isa isa)
{
    return kernels_for(isa).nr;
}

#ifdef QGEMM_X86
// AVX-VNNI: CPUID leaf 7, subleaf 1, EAX bit 4 (older compilers'
// __builtin_cpu_supports does not know the name).
static bool has_avxvnni(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a >> 4 & 1);
}
#endif

bool qgemm_isa_supported(qgemm_isa isa)
{
#ifdef QGEMM_X86
    __builtin_cpu_init();
    switch (isa) {
    case QGEMM_AVX512VNNI:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vnni");
    case QGEMM_AVXVNNI: return has_avxvnni() && __builtin_cpu_supports("avx2");
    case QGEMM_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    default: return isa == QGEMM_GENERIC || isa == QGEMM_REFERENCE;
    }
#else
    return isa == QGEMM_GENERIC || isa == QGEMM_REFERENCE;
#endif
}

const char *qgemm_isa_name(qgemm_isa isa)
{
    static const char *const names[] = { "reference", "generic", "avx2", "avxvnni", "avx512vnni" };
    return isa >= 0 && isa < QGEMM_ISA_COUNT ? names[isa] : "?";
}

// The widest the CPU runs, capped by REEL_GEMM_ISA.
static qgemm_isa choose(void)
{
    const char *want = getenv("REEL_GEMM_ISA");
    if (want && strcmp(want, "reference") == 0)
        return QGEMM_REFERENCE;
    qgemm_isa cap = !want ? QGEMM_AVX512VNNI
                  : strcmp(want, "generic") == 0 ? QGEMM_GENERIC
                  : strcmp(want, "avx2") == 0 ? QGEMM_AVX2
                  : strcmp(want, "avxvnni") == 0 ? QGEMM_AVXVNNI : QGEMM_AVX512VNNI;
    for (int i = cap; i > QGEMM_GENERIC; i--)
        if (qgemm_isa_supported((qgemm_isa)i))
            return (qgemm_isa)i;
    return QGEMM_GENERIC;
}

static _Atomic int chosen = -1;

qgemm_isa qgemm_isa_current(void)
{
    // Racing first callers choose the same.
    int s = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (s < 0) {
        s = choose();
        atomic_store_explicit(&chosen, s, memory_order_relaxed);
    }
    return (qgemm_isa)s;
}

void qgemm_isa_force(qgemm_isa isa)
{
    atomic_store_explicit(&chosen, qgemm_isa_supported(isa) ? (int)isa : (int)choose(), memory_order_relaxed);
}

// ---- The driver

void qgemm_compute(qgemm_isa isa, const qgemm_problem *p, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    isa_kernels k = kernels_for(isa);
    requant_fn rq = p->out.c32 ? store32 : requant_for(isa);
    int32_t T[MAX_MR * MAX_NR], C[MAX_NR];
    // The rows' block of A stays in L1 while the panels stream by.
    for (int64_t m = m0; m < m1; m += k.mr) {
        int rows = m1 - m < k.mr ? (int)(m1 - m) : k.mr;
        for (int64_t n = n0; n < n1; n += k.nr) {
            int cols = n1 - n < k.nr ? (int)(n1 - n) : k.nr;
#ifdef QGEMM_X86
            if (isa == QGEMM_AVX512VNNI) {
                tile_avx512(p, m, n, rows, cols);
                continue;
            }
#endif
            k.dot(p->a + m * p->lda, p->lda, p->b + n / k.nr * p->kq * k.nr * 4, p->kq, T, rows, cols,
                  p->a_unsigned);
#ifdef QGEMM_X86
            if (isa == QGEMM_AVX2 || isa == QGEMM_AVXVNNI) {
                finish_avx2(p, T, k.nr, rows, cols, m, n);
                continue;
            }
#endif
            for (int r = 0; r < rows; r++) {
                correct_row(p, T + r * k.nr, cols, m + r, n, C);
                rq(&p->out, C, cols, m + r, n);
            }
        }
    }
}

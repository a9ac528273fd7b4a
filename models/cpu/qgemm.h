// The int8 GEMM of the quantized ops (quant.c): C[M,N] = sum over k < K of
// (A[m,k] - za[m]) (B[k,n] - zb[n]), one operand uint8 and the other int8,
// accumulated in int32, then stored as int32 (MatMulInteger, ConvInteger)
// or requantized into uint8/int8 (QLinear*) with the bias, multiplier, zero
// point and clamp fused into the store.
//
// A (the "row" operand) is read as rows of Kp bytes (K rounded up to 4,
// zero padded); B comes packed in panels of nr columns: for every group of
// four k, nr columns of four bytes ([N/nr][Kp/4][nr][4], zero padded), the
// operand layout of vpdpbusd. The zero-point corrections use the row sums
// of A and the column sums of B:
//   C = dot - za[m] colsum[n] - zb[n] (rowsum[m] - K za[m]).
// int8 activations and uint8 weights are shifted by 128 (zero points too)
// so that every type combination is one uint8 x int8 product.
//
// Kernels: AVX512-VNNI (vpdpbusd on 512 bits), AVX-VNNI (256 bits), AVX2
// (bytes widened to int16 and vpmaddwd: no saturation) and plain C, chosen
// once per process for the CPU; REEL_GEMM_ISA caps the choice as it does
// for the fp32 GEMM (generic, avx2, avxvnni; anything else: the widest),
// and REEL_GEMM_ISA=reference sends the quantized ops to quant.c's widened
// int16 reference kernels.
#ifndef REEL_MODELS_CPU_QGEMM_H
#define REEL_MODELS_CPU_QGEMM_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum qgemm_isa {
    QGEMM_REFERENCE,  // quant.c's int16 kernels (no qgemm)
    QGEMM_GENERIC,
    QGEMM_AVX2,
    QGEMM_AVXVNNI,
    QGEMM_AVX512VNNI,
    QGEMM_ISA_COUNT,
} qgemm_isa;

// The kernels in use (chosen at the first call), its name, whether the CPU
// runs an ISA, and (tests, benchmarks) a switch to another one the CPU runs.
qgemm_isa qgemm_isa_current(void);
const char *qgemm_isa_name(qgemm_isa isa);
bool qgemm_isa_supported(qgemm_isa isa);
void qgemm_isa_force(qgemm_isa isa);

// Columns per panel of B (a multiple of 16) for an ISA.
int qgemm_panel_cols(qgemm_isa isa);

static inline int64_t qgemm_kp(int64_t K)
{
    return (K + 3) & ~(int64_t)3;
}
static inline int64_t qgemm_np(int64_t N, int nr)
{
    return (N + nr - 1) / nr * nr;
}

// Packs columns [n0, n0 + len) of a K-row operand into panels (n0 at a
// panel boundary): row(arg, k, n, len, buf) gives row k's bytes for columns
// [n, n + len) (already shifted to the panel's type; in place, or written
// into buf, which holds QGEMM_PACK_COLS), so that im2col rows come straight
// from the image. colsum[n0..) gets each column's sum over the K rows (as
// the panel's type: uint8 or int8).
#define QGEMM_PACK_COLS 1024 // a multiple of every panel's columns
typedef const uint8_t *(*qgemm_row_fn)(void *arg, int64_t k, int64_t n, int64_t len, uint8_t *buf);
void qgemm_pack_panels(int nr, int64_t K, int64_t n0, int64_t len, bool is_signed, qgemm_row_fn row, void *arg,
                       uint8_t *panels, int32_t *colsum);

// How the int32 sums leave.
typedef struct qgemm_out {
    int32_t *c32;            // int32 output (NULL: requantize into y)
    void *y;                 // uint8 or int8 output
    bool y_signed;
    int64_t ldc;             // row stride of c32 / y, in elements
    const int32_t *bias;     // per row of C, or NULL
    const float *mult;       // requantization multiplier: per row, or per column when mult_per_col
    bool mult_per_col;
    int32_t zp, lo, hi;      // output zero point, clamp (saturation and a fused Relu/Clip)
} qgemm_out;

// One sum requantized as ONNX Runtime's MlasRequantizeOutput does it, which
// every kernel set and quant.c's reference follow: the sum (bias included)
// to float, times the float multiplier, clamped in float to [lo - zp,
// hi - zp] (maxps/minps: NaN gives the lower bound), rounded half to even
// (cvtps2dq), plus the zero point.
static inline int32_t qgemm_requant1(int32_t acc, float mult, int32_t zp, int32_t lo, int32_t hi)
{
    float v = (float)acc * mult, flo = (float)(lo - zp), fhi = (float)(hi - zp);
    v = v > flo ? v : flo;
    v = v < fhi ? v : fhi;
    return (int32_t)nearbyintf(v) + zp;
}

typedef struct qgemm_problem {
    const uint8_t *a;        // rows of lda bytes (Kp of them valid, padding 0)
    size_t lda;
    bool a_unsigned;         // A uint8 and B int8, or A int8 and B uint8
    const int32_t *a_zp;     // per row
    const int32_t *a_rr;     // per row: rowsum - K * a_zp
    const uint8_t *b;        // panels
    int64_t kq;              // Kp / 4
    int nr;                  // panel columns
    const int32_t *b_sum, *b_zp; // per column
    bool b_zp_one;           // every column's zero point is b_zp[0]
    qgemm_out out;
} qgemm_problem;

// Rows [m0, m1) and columns [n0, n1) of C (n0 at a panel boundary), with
// the kernels of `isa` (the one the panels were packed for).
void qgemm_compute(qgemm_isa isa, const qgemm_problem *p, int64_t m0, int64_t m1, int64_t n0, int64_t n1);

// Requantizes (or stores as int32) one row of int32 sums acc[0..len) that
// need no zero-point correction: row m's bias and multiplier, columns from
// n0 (the depthwise kernel's store).
void qgemm_store_row(qgemm_isa isa, const qgemm_out *o, const int32_t *acc, int64_t len, int64_t m, int64_t n0);
// The same from sums held as exact integers in float, plus bias (int32).
void qgemm_store_row_f32(qgemm_isa isa, const qgemm_out *o, const float *acc, int64_t len, int64_t m, int64_t n0,
                         int32_t bias);

#endif

// What quant.c's ops hand the int8 GEMM paths (qconv.c, qmatmul.c): the
// geometry it checked and the requantization it set up. Only quant.c and
// those files include this.
#ifndef REEL_MODELS_CPU_QFAST_H
#define REEL_MODELS_CPU_QFAST_H

#include "models/cpu/nn.h"
#include "models/cpu/qgemm.h"

#define QUANT_R REEL_TENSOR_MAX_RANK

// Requantization of int32 sums: y = saturate(rint(acc * mult) + zp), with
// mult = a_scale * b_scale / y_scale and the product in float, as ONNX
// Runtime computes both (qgemm_requant1).
typedef struct requant {
    const float *mult;   // one per channel, or per tensor when n_mult is 1
    int64_t n_mult;
    int32_t zp, lo, hi;  // lo, hi: saturation, narrowed by a fused Relu/Clip
    reel_dtype dt;       // uint8 or int8
} requant;

typedef struct qconv_geom {
    int64_t N, C, M, G, Cg, Mg, K, P;
    nn_window w;
} qconv_geom;

// Broadcast shapes of A [..., M, K] and B [..., K, N], 1-D operands made
// 2-D (numpy's matmul).
typedef struct qmm_geom {
    int rank;   // of the batch dims
    int64_t batch[QUANT_R], abatch[QUANT_R], bbatch[QUANT_R];
    int64_t M, K, N, total, acount, bcount; // total: broadcast batches; acount, bcount: A's and B's
    int out_rank;
    int64_t out[QUANT_R];
} qmm_geom;

// A's and B's matrix indices for broadcast batch t (quant.c).
void quant_mm_batch(const qmm_geom *m, int64_t t, int64_t *ai, int64_t *bi);

// Scratch bytes of the int8 GEMM paths.
size_t qconv_fast_scratch(const qconv_geom *c);
size_t qmm_fast_scratch(const qmm_geom *m);

// ConvInteger (q NULL: int32 sums into Y32) and QLinearConv (bias may be
// NULL) through the int8 GEMM or the depthwise kernel. w_const: w and its
// zero point are constants of the model (the packed weights are kept in
// ctx->state). Returns 0 or a REEL_E* code.
int qconv_fast(const qconv_geom *c, const reel_tensor *x, const reel_tensor *zx, const reel_tensor *w,
               const reel_tensor *zw, const reel_tensor *bias, int32_t *Y32, const requant *q, void *Y,
               bool w_const, const reel_exec_ctx *ctx);

// Depthwise convs (qdepthwise.c): whether c is one, its scratch bytes, and
// the conv (arguments as qconv_fast's).
bool qconv_is_depthwise(const qconv_geom *c);
size_t qconv_depthwise_scratch(const qconv_geom *c);
int qconv_depthwise(const qconv_geom *c, qgemm_isa isa, const reel_tensor *x, const reel_tensor *zx,
                    const reel_tensor *w, const reel_tensor *zw, const reel_tensor *bias, int32_t *Y32,
                    const requant *q, void *Y, const reel_exec_ctx *ctx);
// q's multipliers, one per output channel, into dst[0..M).
float *qconv_channel_mults(const requant *q, int64_t M, float *dst);

// MatMulInteger (q NULL) and QLinearMatMul (q's multipliers per column of
// B or per tensor). b_const: B and its zero point are constants.
int qmm_fast(const qmm_geom *m, const reel_tensor *a, const reel_tensor *za, const reel_tensor *b,
             const reel_tensor *zb, int32_t *C, const requant *q, void *Y, bool b_const, const reel_exec_ctx *ctx);

#endif

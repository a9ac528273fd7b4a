// Quantized (8-bit) operators: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul and
// QLinearConv. uint8 and int8 tensors, float32 scales, zero points per
// tensor or per channel. The products are one integer GEMM: operands widened
// to int16 with their zero points already subtracted, accumulated in int32;
// the QLinear ops then requantize with a_scale * b_scale / y_scale, rounding
// half to even and saturating.
#include "models/cpu/qfast.h"

// |a - za| and |b - zb| are at most 255, so each product is at most 65025 and
// a sum of K of them stays below 2^31 while K <= 2^15.
#define QUANT_MAX_K 32768

static bool is_q8(reel_dtype dt)
{
    return dt == REEL_DTYPE_UINT8 || dt == REEL_DTYPE_INT8;
}

static const char *dtype_name(reel_dtype dt)
{
    switch (dt) {
    case REEL_DTYPE_FLOAT32: return "float32";
    case REEL_DTYPE_FLOAT16: return "float16";
    case REEL_DTYPE_UINT8: return "uint8";
    case REEL_DTYPE_INT8: return "int8";
    case REEL_DTYPE_INT16: return "int16";
    case REEL_DTYPE_UINT16: return "uint16";
    case REEL_DTYPE_INT32: return "int32";
    case REEL_DTYPE_INT64: return "int64";
    case REEL_DTYPE_BOOL: return "bool";
    case REEL_DTYPE_FLOAT64: return "double";
    default: return "an unknown type";
    }
}

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

// Element i of a uint8, int8 or int32 tensor; 0 for an omitted one.
static int32_t int_at(const reel_tensor *t, int64_t i)
{
    if (!t)
        return 0;
    switch (t->dtype) {
    case REEL_DTYPE_UINT8: return ((const uint8_t *)t->data)[i];
    case REEL_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    default: return 0;
    }
}

static void qrange(reel_dtype dt, int32_t *lo, int32_t *hi)
{
    *lo = dt == REEL_DTYPE_INT8 ? -128 : 0;
    *hi = dt == REEL_DTYPE_INT8 ? 127 : 255;
}

// Clamps v (already rounded) into [lo, hi]; NaN becomes lo.
static inline float saturate(float v, float lo, float hi)
{
    v = v >= lo ? v : lo;
    return v <= hi ? v : hi;
}

// Whether a value of known rank has one element (rank 0, or all dims 1).
static bool value_is_scalar(const reel_ir_value *v)
{
    if (v->rank < 0)
        return false;
    for (int i = 0; i < v->rank; i++)
        if (v->dims[i] != 1)
            return false;
    return true;
}

// ---- Per-tensor or per-axis parameters (QuantizeLinear, DequantizeLinear)

// Checks a scale (float32) and its optional zero point (zp_type, or any
// 8-bit type when zp_type is NONE) against x: one value, or (opset 13 on) a
// vector along `axis`.
static int check_axis_params(reel_ir_graph *g, reel_ir_node *n, const reel_ir_value *x, int si, int zi,
                             GError **error)
{
    reel_ir_value *s = reel_op_input(g, n, si), *z = reel_op_input(g, n, zi);
    if (!s)
        NN_FAIL(error, REEL_EINVAL, n, "needs a scale input");
    if (s->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s scale is not supported (only float32)", dtype_name(s->dtype));
    if (reel_ir_attr_int(n, "block_size", 0) != 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'block_size' = %" G_GINT64_FORMAT " is not supported "
                "(blocked quantization)", reel_ir_attr_int(n, "block_size", 0));
    if (s->rank < 0 || value_is_scalar(s)) {
        if (z && z->rank >= 0 && !value_is_scalar(z))
            NN_FAIL(error, REEL_EINVAL, n, "the zero point's shape differs from the scale's");
        return 0;
    }
    if (g->opset < 13)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "per-axis scales need opset 13 (the model has %d)", g->opset);
    if (s->rank != 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a scale of rank %d is not supported (a scalar or a vector)", s->rank);
    if (x->rank < 0)
        return 0;
    int64_t axis = reel_ir_attr_int(n, "axis", 1);
    if (axis < -x->rank || axis >= x->rank)
        NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    int64_t c = x->dims[axis < 0 ? axis + x->rank : axis];
    if (c >= 0 && s->dims[0] >= 0 && c != s->dims[0])
        NN_FAIL(error, REEL_EINVAL, n, "%" G_GINT64_FORMAT " scales for %" G_GINT64_FORMAT " elements along axis %"
                G_GINT64_FORMAT, s->dims[0], c, axis);
    if (z && z->rank >= 0 && (z->rank != 1 || (z->dims[0] >= 0 && s->dims[0] >= 0 && z->dims[0] != s->dims[0])))
        NN_FAIL(error, REEL_EINVAL, n, "the zero point's shape differs from the scale's");
    return 0;
}

// x seen as [outer, channels, inner]: channels is 1 for per-tensor params.
typedef struct axis_split {
    int64_t outer, channels, inner;
} axis_split;

static int split_at_axis(const reel_ir_node *n, const reel_tensor *x, const reel_tensor *scale, axis_split *sp)
{
    int64_t total = count_of(x), ns = count_of(scale);
    if (ns == 1) {
        *sp = (axis_split){ 1, 1, total };
        return 0;
    }
    int64_t axis = reel_ir_attr_int(n, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank || x->shape[axis] != ns)
        return REEL_EINVAL;
    sp->outer = reel_tensor_count((int)axis, x->shape);
    sp->channels = ns;
    sp->inner = reel_tensor_count(x->rank - (int)axis - 1, x->shape + axis + 1);
    return 0;
}

// ---- QuantizeLinear

#define TARGETS __attribute__((target_clones("avx512f", "avx2", "default")))

// y = saturate(round_half_even(x / s) + zp): the division (not a multiply by
// 1/s) and the rounding mode are what ONNX's reference does. Blocks of a
// constant 64 so that -O2's vectorizer takes the loop (it leaves loops
// that would need a remainder).
#define QUANTIZE(name, T, lo, hi)                                                                  \
    TARGETS static void name(const float *restrict x, T *restrict y, int64_t len, float s, float zp) \
    {                                                                                              \
        int64_t i = 0;                                                                             \
        for (; i + 64 <= len; i += 64)                                                             \
            for (int j = 0; j < 64; j++)                                                           \
                y[i + j] = (T)saturate(rintf(x[i + j] / s) + zp, lo, hi);                          \
        for (; i < len; i++)                                                                       \
            y[i] = (T)saturate(rintf(x[i] / s) + zp, lo, hi);                                      \
    }
QUANTIZE(quantize_u8, uint8_t, 0.0f, 255.0f)
QUANTIZE(quantize_s8, int8_t, -128.0f, 127.0f)

// int32 x: numpy divides in double there.
static void quantize_i32(const int32_t *x, void *y, reel_dtype dt, int64_t len, float s, float zp)
{
    int32_t lo, hi;
    qrange(dt, &lo, &hi);
    for (int64_t i = 0; i < len; i++) {
        double v = rint((double)x[i] / (double)s) + zp;
        v = v >= lo ? v : lo;
        v = v <= hi ? v : hi;
        if (dt == REEL_DTYPE_UINT8)
            ((uint8_t *)y)[i] = (uint8_t)v;
        else
            ((int8_t *)y)[i] = (int8_t)v;
    }
}

// The output type: the zero point's, else attribute output_dtype (opset
// 21, ONNX's TensorProto codes), else uint8. NONE when not supported.
static reel_dtype quantize_out_type(const reel_ir_node *n, const reel_ir_value *z, int64_t *code)
{
    *code = reel_ir_attr_int(n, "output_dtype", 0);
    reel_dtype want = *code == 0 ? REEL_DTYPE_NONE : *code == 2 ? REEL_DTYPE_UINT8 : *code == 3 ? REEL_DTYPE_INT8
                                                                                               : REEL_DTYPE_COUNT;
    if (want == REEL_DTYPE_COUNT)
        return REEL_DTYPE_NONE;
    if (z)
        return want == REEL_DTYPE_NONE || want == z->dtype ? z->dtype : REEL_DTYPE_NONE;
    return want == REEL_DTYPE_NONE ? REEL_DTYPE_UINT8 : want;
}

static int quantize_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *z = reel_op_input(g, n, 2);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input x");
    if (x->dtype != REEL_DTYPE_FLOAT32 && x->dtype != REEL_DTYPE_INT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s input is not supported (float32 or int32)", dtype_name(x->dtype));
    if (z && !is_q8(z->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s zero point is not supported (uint8 or int8)", dtype_name(z->dtype));
    int64_t code;
    reel_dtype dt = quantize_out_type(n, z, &code);
    if (dt == REEL_DTYPE_NONE)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'output_dtype' = %" G_GINT64_FORMAT " is not supported "
                "(uint8 or int8, matching the zero point)", code);
    // Opset 23's precision of the division: float32 (1) is what this does.
    int64_t precision = reel_ir_attr_int(n, "precision", 0);
    if (precision != 0 && precision != 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'precision' = %" G_GINT64_FORMAT " is not supported "
                "(float32)", precision);
    int r = check_axis_params(g, n, x, 1, 2, error);
    if (r)
        return r;
    nn_set(reel_op_output(g, n, 0), dt, x->rank, x->dims);
    return 0;
}

static int quantize_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *s = in[1], *z = n->n_inputs > 2 ? in[2] : NULL;
    axis_split sp;
    if (split_at_axis(n, x, s, &sp) || (z && count_of(z) != count_of(s)))
        return REEL_EINVAL;
    reel_dtype dt = out[0]->dtype;
    const float *S = s->data;
    for (int64_t o = 0; o < sp.outer; o++)
        for (int64_t c = 0; c < sp.channels; c++) {
            int64_t off = (o * sp.channels + c) * sp.inner;
            float zp = (float)int_at(z, c);
            if (x->dtype == REEL_DTYPE_INT32)
                quantize_i32((const int32_t *)x->data + off, (uint8_t *)out[0]->data + off, dt, sp.inner, S[c], zp);
            else if (dt == REEL_DTYPE_UINT8)
                quantize_u8((const float *)x->data + off, (uint8_t *)out[0]->data + off, sp.inner, S[c], zp);
            else
                quantize_s8((const float *)x->data + off, (int8_t *)out[0]->data + off, sp.inner, S[c], zp);
        }
    return 0;
}

static const reel_op op_quantize = { "QuantizeLinear", quantize_infer, NULL, quantize_run };

// ---- DequantizeLinear

// y = (x - zp) * s, for each input type (in blocks of 64, as QUANTIZE).
#define DEQUANTIZE(name, T)                                                                     \
    TARGETS static void name(const T *restrict x, float *restrict y, int64_t len, float s, int32_t zp) \
    {                                                                                           \
        int64_t i = 0;                                                                          \
        for (; i + 64 <= len; i += 64)                                                          \
            for (int j = 0; j < 64; j++)                                                        \
                y[i + j] = (float)((int32_t)x[i + j] - zp) * s;                                 \
        for (; i < len; i++)                                                                    \
            y[i] = (float)((int32_t)x[i] - zp) * s;                                             \
    }
DEQUANTIZE(dequantize_u8, uint8_t)
DEQUANTIZE(dequantize_s8, int8_t)
DEQUANTIZE(dequantize_i32, int32_t)

static int dequantize_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *z = reel_op_input(g, n, 2);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input x");
    if (!is_q8(x->dtype) && x->dtype != REEL_DTYPE_INT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s input is not supported (uint8, int8 or int32)",
                dtype_name(x->dtype));
    if (z && z->dtype != x->dtype)
        NN_FAIL(error, REEL_EINVAL, n, "the zero point is %s, the input %s", dtype_name(z->dtype),
                dtype_name(x->dtype));
    int64_t odt = reel_ir_attr_int(n, "output_dtype", 0);
    if (odt != 0 && odt != 1) // float32
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'output_dtype' = %" G_GINT64_FORMAT " is not supported "
                "(float32)", odt);
    int r = check_axis_params(g, n, x, 1, 2, error);
    if (r)
        return r;
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, x->dims);
    return 0;
}

static int dequantize_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                          const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *s = in[1], *z = n->n_inputs > 2 ? in[2] : NULL;
    axis_split sp;
    if (split_at_axis(n, x, s, &sp) || (z && count_of(z) != count_of(s)))
        return REEL_EINVAL;
    const float *S = s->data;
    float *Y = out[0]->data;
    for (int64_t o = 0; o < sp.outer; o++)
        for (int64_t c = 0; c < sp.channels; c++) {
            int64_t off = (o * sp.channels + c) * sp.inner;
            int32_t zp = int_at(z, c);
            if (x->dtype == REEL_DTYPE_UINT8)
                dequantize_u8((const uint8_t *)x->data + off, Y + off, sp.inner, S[c], zp);
            else if (x->dtype == REEL_DTYPE_INT8)
                dequantize_s8((const int8_t *)x->data + off, Y + off, sp.inner, S[c], zp);
            else
                dequantize_i32((const int32_t *)x->data + off, Y + off, sp.inner, S[c], zp);
        }
    return 0;
}

static const reel_op op_dequantize = { "DequantizeLinear", dequantize_infer, NULL, dequantize_run };

// ---- DynamicQuantizeLinear

// uint8 over [min(0, min x), max(0, max x)]: scale (max - min) / 255 (1/255
// when the range is empty), zero point round(saturate(-min / scale)).
static int dynq_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input x");
    if (x->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s input is not supported (float32)", dtype_name(x->dtype));
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_UINT8, x->rank, x->dims);
    nn_set(reel_op_output(g, n, 1), REEL_DTYPE_FLOAT32, 0, NULL);
    nn_set(reel_op_output(g, n, 2), REEL_DTYPE_UINT8, 0, NULL);
    return 0;
}

static int dynq_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    const float *X = in[0]->data;
    int64_t len = count_of(in[0]);
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < len; i++) {
        lo = X[i] < lo ? X[i] : lo;
        hi = X[i] > hi ? X[i] : hi;
    }
    float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
    float zp = rintf(saturate(0.0f - lo / scale, 0.0f, 255.0f));
    quantize_u8(X, out[0]->data, len, scale, zp);
    if (n->n_outputs > 1 && out[1])
        *(float *)out[1]->data = scale;
    if (n->n_outputs > 2 && out[2])
        *(uint8_t *)out[2]->data = (uint8_t)zp;
    return 0;
}

static const reel_op op_dynq = { "DynamicQuantizeLinear", dynq_infer, NULL, dynq_run };

// ---- The integer GEMM

// Sums c[r][0..nb) = a[r][0..K) B[0..K)[0..nb) for four rows r (B's rows N
// apart): each element of B is loaded once for the four rows, whose sums
// stay in L1.
TARGETS static void igemm_block4(const int16_t *const a[4], const int16_t *restrict B, int32_t *const c[4],
                                 int64_t N, int64_t K, int64_t nb)
{
    int32_t *restrict c0 = c[0], *restrict c1 = c[1], *restrict c2 = c[2], *restrict c3 = c[3];
    memset(c0, 0, sizeof(int32_t) * (size_t)nb);
    memset(c1, 0, sizeof(int32_t) * (size_t)nb);
    memset(c2, 0, sizeof(int32_t) * (size_t)nb);
    memset(c3, 0, sizeof(int32_t) * (size_t)nb);
    for (int64_t k = 0; k < K; k++) {
        int32_t a0 = a[0][k], a1 = a[1][k], a2 = a[2][k], a3 = a[3][k];
        const int16_t *restrict b = B + k * N;
        for (int64_t j = 0; j < nb; j++) {
            int32_t bv = b[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
        }
    }
}

// C[rows, N] = A[rows, K] B[K, N] (row-major int16 operands, zero points
// already subtracted, sums in int32), four rows at a time over column
// blocks that keep the four rows of sums in L1 while B's rows stream by.
static void igemm_rows(const int16_t *A, const int16_t *B, int32_t *C, int64_t rows, int64_t N, int64_t K)
{
    enum { NB = 256 };
    // A last group of fewer than four rows repeats its first row of A and
    // sums the missing rows here.
    int32_t spare[3][NB];
    for (int64_t m = 0; m < rows; m += 4)
        for (int64_t n0 = 0; n0 < N; n0 += NB) {
            int64_t nb = MIN(NB, N - n0);
            const int16_t *a[4];
            int32_t *c[4];
            for (int r = 0; r < 4; r++) {
                bool real = m + r < rows;
                a[r] = A + (real ? m + r : m) * K;
                c[r] = real ? C + (m + r) * N + n0 : spare[r - 1];
            }
            igemm_block4(a, B + n0, c, N, K, nb);
        }
}

// src (uint8 or int8, count elements in rows of row_len) minus a zero point
// per row (zp_per_row) or per column (else), widened to int16. zp may be
// NULL (0), or have one element.
static void widen(const reel_tensor *src, int64_t first, int64_t count, int64_t row_len, const reel_tensor *zp,
                  bool zp_per_row, int16_t *dst)
{
    int64_t nz = zp ? count_of(zp) : 0;
    if (row_len <= 0)
        return;
    for (int64_t i = 0; i < count; i += row_len) {
        int64_t r = (first + i) / row_len;
        int64_t len = MIN(row_len, count - i);
        int16_t *restrict d = dst + i;
        if (nz <= 1 || zp_per_row) {
            int16_t z = (int16_t)int_at(zp, nz <= 1 ? 0 : r % nz);
            if (src->dtype == REEL_DTYPE_UINT8) {
                const uint8_t *restrict s = (const uint8_t *)src->data + first + i;
                for (int64_t j = 0; j < len; j++)
                    d[j] = (int16_t)(s[j] - z);
            } else {
                const int8_t *restrict s = (const int8_t *)src->data + first + i;
                for (int64_t j = 0; j < len; j++)
                    d[j] = (int16_t)(s[j] - z);
            }
        } else {
            // Per column: zp has row_len elements, or (batched) one row of them per matrix.
            int64_t zoff = nz == row_len ? 0 : ((first + i) / (row_len * (count_of(src) / nz))) * row_len;
            for (int64_t j = 0; j < len; j++)
                d[j] = (int16_t)(int_at(src, first + i + j) - int_at(zp, zoff + j));
        }
    }
}

// acc[0..len) with multiplier m into y (uint8 or int8) at element off, in
// float as ONNX Runtime does it (qgemm_requant1).
static void requant_span(const requant *q, const int32_t *acc, int64_t len, float m, void *y, int64_t off)
{
    if (q->dt == REEL_DTYPE_UINT8) {
        uint8_t *restrict d = (uint8_t *)y + off;
        for (int64_t i = 0; i < len; i++)
            d[i] = (uint8_t)qgemm_requant1(acc[i], m, q->zp, q->lo, q->hi);
    } else {
        int8_t *restrict d = (int8_t *)y + off;
        for (int64_t i = 0; i < len; i++)
            d[i] = (int8_t)qgemm_requant1(acc[i], m, q->zp, q->lo, q->hi);
    }
}

// A Relu or Clip the folding pass fused into a QLinear node (fused_a, fused_b:
// min and max in output units) narrows [lo, hi] to the quantized bounds
// sat(rint(bound / y_scale) + zp), which is exactly quantizing the clamped
// float output (the map is monotonic). Min above max gives max everywhere,
// as Clip does.
static void requant_fused_clamp(const reel_ir_node *n, float y_scale, requant *q)
{
    if (!n->fused)
        return;
    bool relu = strcmp(n->fused, "Relu") == 0;
    float a = relu ? 0.0f : n->fused_a, b = relu ? INFINITY : n->fused_b;
    float lo = saturate(rintf(a / y_scale) + (float)q->zp, (float)q->lo, (float)q->hi);
    float hi = saturate(rintf(b / y_scale) + (float)q->zp, (float)q->lo, (float)q->hi);
    if (isnan(b / y_scale))
        hi = (float)q->hi;
    q->hi = (int32_t)hi;
    q->lo = (int32_t)MIN(lo, hi);
}

// QLinearConv and QLinearMatMul take a fused Relu or Clip, nothing else.
static int check_fused_clamp(const reel_ir_node *n, GError **error)
{
    if (n->fused && strcmp(n->fused, "Relu") != 0 && strcmp(n->fused, "Clip") != 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "fused activation %s is not supported (Relu or Clip)", n->fused);
    return 0;
}

// Multipliers a_scale[0] * b_scale[c] / y_scale[0] for every c of b_scale.
static float *requant_mults(const reel_tensor *as, const reel_tensor *bs, const reel_tensor *ys, int64_t *n)
{
    *n = count_of(bs);
    float *m = g_new(float, MAX(1, *n));
    float a = *(const float *)as->data, y = *(const float *)ys->data;
    for (int64_t c = 0; c < *n; c++)
        m[c] = a * ((const float *)bs->data)[c] / y;
    return m;
}

// Rows of C per task: a few per worker, each worth at least ~64K multiply-adds.
static int64_t rows_per_task(const reel_exec_ctx *ctx, int64_t rows, int64_t work_per_row)
{
    int threads = ctx->workers ? ctx->threads : 1;
    int64_t per = MAX(1, rows / (4 * (int64_t)threads)), least = MAX(1, 65536 / MAX(1, work_per_row));
    return MIN(rows, MAX(per, least));
}

static int check_k(const reel_ir_node *n, int64_t K, GError **error)
{
    if (K > QUANT_MAX_K)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a reduction of %" G_GINT64_FORMAT " terms could overflow the int32 "
                "accumulator (at most %d)", K, QUANT_MAX_K);
    return 0;
}

// ---- MatMulInteger, QLinearMatMul

static int qmm_geom_init(const reel_ir_node *n, int ar, const int64_t *ad, int br, const int64_t *bd, qmm_geom *m,
                         GError **error)
{
    if (ar < 1 || br < 1)
        NN_FAIL(error, REEL_EINVAL, n, "operands must have rank at least 1");
    m->M = ar == 1 ? 1 : ad[ar - 2];
    m->K = ad[ar - 1];
    int64_t K2 = br == 1 ? bd[0] : bd[br - 2];
    m->N = br == 1 ? 1 : bd[br - 1];
    if (m->K >= 0 && K2 >= 0 && m->K != K2)
        NN_FAIL(error, REEL_EINVAL, n, "inner dims differ: %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT, m->K, K2);
    int an = MAX(ar - 2, 0), bn = MAX(br - 2, 0);
    m->rank = MAX(an, bn);
    m->total = m->acount = m->bcount = 1;
    m->out_rank = 0;
    for (int i = 0; i < m->rank; i++) {
        int64_t x = i - (m->rank - an) >= 0 ? ad[i - (m->rank - an)] : 1;
        int64_t y = i - (m->rank - bn) >= 0 ? bd[i - (m->rank - bn)] : 1;
        if (x >= 0 && y >= 0 && x != y && x != 1 && y != 1)
            NN_FAIL(error, REEL_EINVAL, n, "batch dims %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " do not broadcast",
                    x, y);
        m->abatch[i] = x;
        m->bbatch[i] = y;
        m->batch[i] = x == 1 ? y : y == 1 ? x : (x < 0 ? y : x);
        m->total *= m->batch[i];
        m->acount *= x;
        m->bcount *= y;
        m->out[m->out_rank++] = m->batch[i];
    }
    if (ar > 1)
        m->out[m->out_rank++] = m->M;
    if (br > 1)
        m->out[m->out_rank++] = m->N;
    return 0;
}

void quant_mm_batch(const qmm_geom *m, int64_t t, int64_t *ai, int64_t *bi)
{
    int64_t as = 1, bs = 1;
    *ai = *bi = 0;
    for (int i = m->rank - 1; i >= 0; i--) {
        int64_t idx = t % m->batch[i];
        t /= m->batch[i];
        *ai += (m->abatch[i] == 1 ? 0 : idx) * as;
        *bi += (m->bbatch[i] == 1 ? 0 : idx) * bs;
        as *= m->abatch[i];
        bs *= m->bbatch[i];
    }
}

// A zero point of A (per_row) or B: one value; a vector of `len` (M rows of
// A, N columns of B); or the operand's rank with the matrix dims [M, 1]
// (A) or [1, N] (B) and the operand's own batch dims.
static bool zp_shape_ok(const reel_ir_value *z, const reel_ir_value *x, bool per_row, int64_t len)
{
    if (!z || z->rank < 0 || value_is_scalar(z))
        return true;
    if (z->rank == 1)
        return z->dims[0] == len || z->dims[0] < 0 || len < 0;
    if (z->rank != x->rank)
        return false;
    for (int i = 0; i < z->rank - 2; i++)
        if (z->dims[i] != x->dims[i])
            return false;
    int64_t r = z->dims[z->rank - 2], c = z->dims[z->rank - 1];
    return per_row ? c == 1 && (r == len || len < 0) : r == 1 && (c == len || len < 0);
}

// Checks A (input ai), B (bi) and their zero points (az, bz), sets *m
// (false when a rank is not known yet).
static int qmm_check(reel_ir_graph *g, reel_ir_node *n, int ai, int az, int bi, int bz, qmm_geom *m, bool *known,
                     GError **error)
{
    reel_ir_value *a = reel_op_input(g, n, ai), *b = reel_op_input(g, n, bi);
    reel_ir_value *za = reel_op_input(g, n, az), *zb = reel_op_input(g, n, bz);
    if (!a || !b)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs A and B");
    if (!is_q8(a->dtype) || !is_q8(b->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%s and %s operands are not supported (uint8 or int8)",
                dtype_name(a->dtype), dtype_name(b->dtype));
    if ((za && za->dtype != a->dtype) || (zb && zb->dtype != b->dtype))
        NN_FAIL(error, REEL_EINVAL, n, "a zero point's type differs from its operand's");
    *known = a->rank >= 0 && b->rank >= 0;
    if (!*known)
        return 0;
    int r = qmm_geom_init(n, a->rank, a->dims, b->rank, b->dims, m, error);
    if (r)
        return r;
    if (!zp_shape_ok(za, a, true, m->M) || !zp_shape_ok(zb, b, false, m->N))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "zero point shapes other than a scalar, one per row of A or one per "
                "column of B are not supported");
    return check_k(n, m->K, error);
}

static size_t qmm_scratch_bytes(const qmm_geom *m, bool requant)
{
    size_t wide = 2 * (size_t)(m->acount * m->M * m->K + m->bcount * m->K * m->N);
    return MAX(wide + (requant ? 4 * (size_t)(m->total * m->M * m->N) : 0) + 64, qmm_fast_scratch(m));
}

typedef struct qmm_job {
    const qmm_geom *m;
    const int16_t *A, *B;   // widened: acount [M,K] matrices, bcount [K,N]
    int32_t *C;             // total [M,N] sums
    const requant *q;       // NULL: C is the output
    void *Y;
    int64_t rows_per_task, tasks_per_batch;
} qmm_job;

static void qmm_task(void *arg, int task, int worker)
{
    (void)worker;
    const qmm_job *j = arg;
    const qmm_geom *m = j->m;
    int64_t t = task / j->tasks_per_batch, m0 = (task % j->tasks_per_batch) * j->rows_per_task;
    int64_t rows = MIN(j->rows_per_task, m->M - m0), ai, bi;
    quant_mm_batch(m, t, &ai, &bi);
    int64_t c0 = (t * m->M + m0) * m->N;
    igemm_rows(j->A + (ai * m->M + m0) * m->K, j->B + bi * m->K * m->N, j->C + c0, rows, m->N, m->K);
    if (!j->q)
        return;
    // Per column of B (n_mult == N) or per tensor.
    for (int64_t r = 0; r < rows; r++) {
        const int32_t *acc = j->C + c0 + r * m->N;
        if (j->q->n_mult == 1)
            requant_span(j->q, acc, m->N, j->q->mult[0], j->Y, c0 + r * m->N);
        else
            for (int64_t c = 0; c < m->N; c++)
                requant_span(j->q, acc + c, 1, j->q->mult[c], j->Y, c0 + r * m->N + c);
    }
}

// Widens A and B, then the products by batches and blocks of rows.
static int qmm_compute(const reel_ir_node *n, const reel_tensor *a, const reel_tensor *za, const reel_tensor *b,
                       const reel_tensor *zb, bool b_const, int32_t *C, const requant *q, void *Y,
                       const reel_exec_ctx *ctx)
{
    qmm_geom m = { 0 };
    if (qmm_geom_init(n, a->rank, a->shape, b->rank, b->shape, &m, NULL) || m.K > QUANT_MAX_K)
        return REEL_EINVAL;
    int64_t nza = za ? count_of(za) : 1, nzb = zb ? count_of(zb) : 1;
    if ((nza != 1 && nza != m.M && nza != m.acount * m.M) || (nzb != 1 && nzb != m.N && nzb != m.bcount * m.N))
        return REEL_EINVAL;
    if (m.total * m.M * m.N == 0)
        return 0;
    if (ctx->scratch_size < qmm_scratch_bytes(&m, q != NULL))
        return REEL_EINVAL;
    if (qgemm_isa_current() != QGEMM_REFERENCE)
        return qmm_fast(&m, a, za, b, zb, C, q, Y, b_const, ctx);
    int16_t *A = ctx->scratch, *B = A + m.acount * m.M * m.K;
    // A's zero point is per row, B's per column.
    widen(a, 0, count_of(a), m.K, za, true, A);
    widen(b, 0, count_of(b), m.N, zb, false, B);
    if (q)
        C = (int32_t *)((char *)ctx->scratch + ((2 * (size_t)(m.acount * m.M * m.K + m.bcount * m.K * m.N) + 63)
                                                & ~(size_t)63));
    int64_t per = rows_per_task(ctx, m.M, m.N * m.K);
    qmm_job j = { .m = &m, .A = A, .B = B, .C = C, .q = q, .Y = Y, .rows_per_task = per,
                  .tasks_per_batch = (m.M + per - 1) / per };
    nn_parallel(ctx, (int)(m.total * j.tasks_per_batch), qmm_task, &j);
    return 0;
}

static int mmi_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    qmm_geom m = { 0 };
    bool known = false;
    int r = qmm_check(g, n, 0, 2, 1, 3, &m, &known, error);
    if (r)
        return r;
    if (known)
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_INT32, m.out_rank, m.out);
    else
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_INT32, -1, NULL);
    return 0;
}

static size_t mmi_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    qmm_geom m = { 0 };
    if (qmm_geom_init(n, in[0]->rank, in[0]->shape, in[1]->rank, in[1]->shape, &m, NULL))
        return 0;
    return qmm_scratch_bytes(&m, false);
}

static int mmi_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *za = n->n_inputs > 2 ? in[2] : NULL, *zb = n->n_inputs > 3 ? in[3] : NULL;
    // B and its zero point (inputs 1, 3) constant: packed once.
    bool b_const = (ctx->const_inputs & 2) && (!zb || (ctx->const_inputs & 8));
    return qmm_compute(n, in[0], za, in[1], zb, b_const, out[0]->data, NULL, NULL, ctx);
}

static const reel_op op_matmul_integer = { "MatMulInteger", mmi_infer, mmi_scratch, mmi_run };

// QLinear scales: float32; per tensor, or (the weights') one per channel.
static int check_scale(reel_ir_graph *g, reel_ir_node *n, int i, const char *what, int64_t per_channel,
                       GError **error)
{
    reel_ir_value *s = reel_op_input(g, n, i);
    if (!s)
        NN_FAIL(error, REEL_EINVAL, n, "needs input %s", what);
    if (s->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s %s is not supported (float32)", dtype_name(s->dtype), what);
    if (s->rank < 0 || value_is_scalar(s))
        return 0;
    if (per_channel == 0 || s->rank != 1 || (per_channel > 0 && s->dims[0] >= 0 && s->dims[0] != per_channel))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%s must be a scalar%s", what,
                per_channel ? " or one value per output channel" : "");
    return 0;
}

// y's zero point fixes the output type (uint8 or int8).
static int check_y_zp(reel_ir_graph *g, reel_ir_node *n, int i, reel_dtype *dt, GError **error)
{
    reel_ir_value *z = reel_op_input(g, n, i);
    if (!z)
        NN_FAIL(error, REEL_EINVAL, n, "needs input y_zero_point");
    if (!is_q8(z->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s y_zero_point is not supported (uint8 or int8)",
                dtype_name(z->dtype));
    if (z->rank >= 0 && !value_is_scalar(z))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "y_zero_point must be a scalar");
    *dt = z->dtype;
    return 0;
}

// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
static int qlmm_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    qmm_geom m = { 0 };
    bool known = false;
    reel_dtype dt;
    int r = qmm_check(g, n, 0, 2, 3, 5, &m, &known, error);
    if (!r)
        r = check_scale(g, n, 1, "a_scale", 0, error);
    if (!r)
        r = check_scale(g, n, 4, "b_scale", known ? m.N : -1, error);
    if (!r)
        r = check_scale(g, n, 6, "y_scale", 0, error);
    if (!r)
        r = check_y_zp(g, n, 7, &dt, error);
    if (!r)
        r = check_fused_clamp(n, error);
    if (r)
        return r;
    reel_ir_value *za = reel_op_input(g, n, 2);
    if (za && za->rank >= 0 && !value_is_scalar(za))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a_zero_point must be a scalar (a_scale is per tensor)");
    if (known)
        nn_set(reel_op_output(g, n, 0), dt, m.out_rank, m.out);
    else
        nn_set(reel_op_output(g, n, 0), dt, -1, NULL);
    return 0;
}

static size_t qlmm_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    qmm_geom m = { 0 };
    if (qmm_geom_init(n, in[0]->rank, in[0]->shape, in[3]->rank, in[3]->shape, &m, NULL))
        return 0;
    return qmm_scratch_bytes(&m, true);
}

static int qlmm_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    requant q = { .zp = int_at(in[7], 0), .dt = out[0]->dtype };
    qrange(q.dt, &q.lo, &q.hi);
    int64_t N = in[3]->rank == 1 ? 1 : in[3]->shape[in[3]->rank - 1];
    if ((count_of(in[4]) != 1 && count_of(in[4]) != N) || count_of(in[1]) != 1 || count_of(in[6]) != 1)
        return REEL_EINVAL;
    requant_fused_clamp(n, *(const float *)in[6]->data, &q);
    float *mult = requant_mults(in[1], in[4], in[6], &q.n_mult);
    q.mult = mult;
    bool b_const = (ctx->const_inputs & (1u << 3)) && (!in[5] || (ctx->const_inputs & (1u << 5)));
    int rc = qmm_compute(n, in[0], in[2], in[3], in[5], b_const, NULL, &q, out[0]->data, ctx);
    g_free(mult);
    return rc;
}

static const reel_op op_qlinear_matmul = { "QLinearMatMul", qlmm_infer, qlmm_scratch, qlmm_run };

// ---- ConvInteger, QLinearConv

static int qconv_geom_init(const reel_ir_node *n, int rank, const int64_t *x, const int64_t *wd, qconv_geom *c,
                           GError **error)
{
    c->G = reel_ir_attr_int(n, "group", 1);
    if (c->G < 1)
        NN_FAIL(error, REEL_EINVAL, n, "group must be positive");
    int64_t kernel[3];
    bool known = true;
    for (int i = 0; i < rank - 2; i++) {
        kernel[i] = wd[2 + i];
        known &= kernel[i] > 0;
    }
    int r = nn_window_init(n, rank - 2, x + 2, known ? kernel : NULL, false, &c->w, error);
    if (r)
        return r;
    c->N = x[0], c->C = x[1], c->M = wd[0], c->Cg = wd[1];
    if (c->M >= 0 && c->M % c->G)
        NN_FAIL(error, REEL_EINVAL, n, "%" G_GINT64_FORMAT " output channels do not split into %" G_GINT64_FORMAT
                " groups", c->M, c->G);
    if (c->C >= 0 && c->Cg >= 0 && c->Cg * c->G != c->C)
        NN_FAIL(error, REEL_EINVAL, n, "input has %" G_GINT64_FORMAT " channels, weights expect %" G_GINT64_FORMAT
                " x %" G_GINT64_FORMAT " groups", c->C, c->Cg, c->G);
    c->Mg = c->M / c->G;
    c->K = c->Cg * c->w.k[0] * c->w.k[1] * c->w.k[2];
    c->P = c->w.out[0] * c->w.out[1] * c->w.out[2];
    return 0;
}

// Checks x (input xi), w (wi), their zero points (xz: scalar; wz: scalar or
// per output channel) and the geometry; sets the output's dims into od.
static int qconv_check(reel_ir_graph *g, reel_ir_node *n, int xi, int xz, int wi, int wz, int *rank, int64_t *od,
                       int64_t *M, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, xi), *w = reel_op_input(g, n, wi);
    reel_ir_value *zx = reel_op_input(g, n, xz), *zw = reel_op_input(g, n, wz);
    if (!x || !w)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs x and w");
    if (!is_q8(x->dtype) || !is_q8(w->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%s and %s operands are not supported (uint8 or int8)",
                dtype_name(x->dtype), dtype_name(w->dtype));
    if ((zx && zx->dtype != x->dtype) || (zw && zw->dtype != w->dtype))
        NN_FAIL(error, REEL_EINVAL, n, "a zero point's type differs from its operand's");
    if (zx && zx->rank >= 0 && !value_is_scalar(zx))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "x's zero point must be a scalar");
    *rank = x->rank >= 0 ? x->rank : w->rank;
    *M = w->rank >= 1 ? w->dims[0] : -1;
    if (zw && zw->rank >= 0 && !value_is_scalar(zw) &&
        (zw->rank != 1 || (*M >= 0 && zw->dims[0] >= 0 && zw->dims[0] != *M)))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "w's zero point must be a scalar or one per output channel");
    if (*rank < 0)
        return 0;
    if (*rank < 3 || *rank > 5 || (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank))
        NN_FAIL(error, REEL_EINVAL, n, "x and w must both have rank 3 to 5 (have %d and %d)", x->rank, w->rank);
    int64_t xd[5], wd[5];
    for (int i = 0; i < *rank; i++) {
        xd[i] = x->rank >= 0 ? x->dims[i] : REEL_DIM_UNKNOWN;
        wd[i] = w->rank >= 0 ? w->dims[i] : REEL_DIM_UNKNOWN;
    }
    qconv_geom c = { 0 };
    int r = qconv_geom_init(n, *rank, xd, wd, &c, error);
    if (r)
        return r;
    od[0] = c.N, od[1] = c.M;
    for (int i = 0; i < *rank - 2; i++)
        od[2 + i] = c.w.out[3 - (*rank - 2) + i];
    return c.Cg >= 0 ? check_k(n, c.K, error) : 0;
}

static size_t qconv_wide_bytes(const qconv_geom *c)
{
    return 2 * (size_t)(c->M * c->K + c->K * c->P + c->Cg * c->w.in[0] * c->w.in[1] * c->w.in[2]);
}

static size_t qconv_scratch_bytes(const reel_ir_node *n, const reel_tensor *x, const reel_tensor *w, bool requant)
{
    qconv_geom c = { 0 };
    if (x->rank < 3 || x->rank != w->rank || qconv_geom_init(n, x->rank, x->shape, w->shape, &c, NULL))
        return 0;
    return MAX(((qconv_wide_bytes(&c) + 63) & ~(size_t)63) + (requant ? 4 * (size_t)(c.Mg * c.P) : 0),
               qconv_fast_scratch(&c));
}

// The output columns [lo, hi) whose input column ow * s + off lies in [0, W).
static void inside_columns(int64_t W, int64_t OW, int64_t s, int64_t off, int64_t *lo, int64_t *hi)
{
    *lo = off >= 0 ? 0 : (-off + s - 1) / s;
    *hi = W - 1 - off >= 0 ? MIN(OW, (W - 1 - off) / s + 1) : 0;
    *lo = MIN(*lo, *hi);
}

// col[K, P] from the group's channels xw (int16, the zero point already
// subtracted): taps in the padding are 0, i.e. the zero point.
static void im2col(const qconv_geom *c, const int16_t *xw, int16_t *col)
{
    const nn_window *w = &c->w;
    int64_t Pin = w->in[0] * w->in[1] * w->in[2], row = 0;
    for (int64_t ch = 0; ch < c->Cg; ch++)
        for (int64_t kd = 0; kd < w->k[0]; kd++)
            for (int64_t kh = 0; kh < w->k[1]; kh++)
                for (int64_t kw = 0; kw < w->k[2]; kw++, row++) {
                    int64_t off = kw * w->d[2] - w->pb[2], lo, hi, sw = w->s[2];
                    inside_columns(w->in[2], w->out[2], sw, off, &lo, &hi);
                    for (int64_t od = 0; od < w->out[0]; od++) {
                        int64_t id = od * w->s[0] - w->pb[0] + kd * w->d[0];
                        for (int64_t oh = 0; oh < w->out[1]; oh++) {
                            int64_t ih = oh * w->s[1] - w->pb[1] + kh * w->d[1];
                            int16_t *restrict d = col + row * c->P + (od * w->out[1] + oh) * w->out[2];
                            if (id < 0 || id >= w->in[0] || ih < 0 || ih >= w->in[1]) {
                                memset(d, 0, sizeof(int16_t) * (size_t)w->out[2]);
                                continue;
                            }
                            const int16_t *restrict src = xw + ch * Pin + (id * w->in[1] + ih) * w->in[2] + off;
                            for (int64_t ow = 0; ow < lo; ow++)
                                d[ow] = 0;
                            if (sw == 1)
                                memcpy(d + lo, src + lo, sizeof(int16_t) * (size_t)(hi - lo));
                            else
                                for (int64_t ow = lo; ow < hi; ow++)
                                    d[ow] = src[ow * sw];
                            for (int64_t ow = hi; ow < w->out[2]; ow++)
                                d[ow] = 0;
                        }
                    }
                }
}

typedef struct qconv_job {
    const qconv_geom *c;
    const int16_t *W, *col;    // W [M, K] widened, col [K, P] of this image and group
    int32_t *C;                // [Mg, P]: the output's rows, or scratch when requantizing
    const int32_t *bias;       // QLinearConv's, or NULL
    const requant *q;          // NULL: C is the output
    void *Y;
    int64_t m0, y0, rows_per_task; // this group's first channel; its first output element
} qconv_job;

static void qconv_task(void *arg, int task, int worker)
{
    (void)worker;
    const qconv_job *j = arg;
    const qconv_geom *c = j->c;
    int64_t r0 = task * j->rows_per_task, rows = MIN(j->rows_per_task, c->Mg - r0);
    int32_t *C = j->C + r0 * c->P;
    igemm_rows(j->W + (j->m0 + r0) * c->K, j->col, C, rows, c->P, c->K);
    for (int64_t r = 0; r < rows; r++) {
        int64_t m = j->m0 + r0 + r;
        int32_t *acc = C + r * c->P;
        if (j->bias)
            for (int64_t p = 0; p < c->P; p++)
                acc[p] += j->bias[m];
        if (j->q)
            requant_span(j->q, acc, c->P, j->q->mult[j->q->n_mult == 1 ? 0 : m], j->Y, j->y0 + (r0 + r) * c->P);
    }
}

static int qconv_compute(const reel_ir_node *n, const reel_tensor *x, const reel_tensor *zx, const reel_tensor *w,
                         const reel_tensor *zw, bool w_const, const reel_tensor *bias, int32_t *Y32,
                         const requant *q, void *Y, const reel_exec_ctx *ctx)
{
    qconv_geom c = { 0 };
    if (x->rank < 3 || x->rank != w->rank || qconv_geom_init(n, x->rank, x->shape, w->shape, &c, NULL) ||
        c.K > QUANT_MAX_K || (bias && count_of(bias) != c.M) || (zx && count_of(zx) != 1) ||
        (zw && count_of(zw) != 1 && count_of(zw) != c.M))
        return REEL_EINVAL;
    if (c.N * c.M * c.P == 0)
        return 0;
    if (ctx->scratch_size < qconv_scratch_bytes(n, x, w, q != NULL))
        return REEL_EINVAL;
    if (qgemm_isa_current() != QGEMM_REFERENCE)
        return qconv_fast(&c, x, zx, w, zw, bias, Y32, q, Y, w_const, ctx);
    int64_t Pin = c.w.in[0] * c.w.in[1] * c.w.in[2];
    // W [M, K], col [K, P], and the group's input channels xw [Cg, Pin].
    int16_t *W = ctx->scratch, *col = W + c.M * c.K, *xw = col + c.K * c.P;
    int32_t *acc = (int32_t *)((char *)ctx->scratch + ((qconv_wide_bytes(&c) + 63) & ~(size_t)63));
    widen(w, 0, count_of(w), c.K, zw, true, W);
    int64_t per = rows_per_task(ctx, c.Mg, c.P * c.K);
    for (int64_t img = 0; img < c.N; img++)
        for (int64_t g = 0; g < c.G; g++) {
            widen(x, (img * c.C + g * c.Cg) * Pin, c.Cg * Pin, Pin, zx, true, xw);
            im2col(&c, xw, col);
            int64_t y0 = (img * c.M + g * c.Mg) * c.P;
            qconv_job j = { .c = &c, .W = W, .col = col, .C = q ? acc : Y32 + y0, .q = q, .Y = Y,
                            .bias = bias ? bias->data : NULL, .m0 = g * c.Mg, .y0 = y0, .rows_per_task = per };
            nn_parallel(ctx, (int)((c.Mg + per - 1) / per), qconv_task, &j);
        }
    return 0;
}

static int convi_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int rank;
    int64_t od[5], M;
    int r = qconv_check(g, n, 0, 2, 1, 3, &rank, od, &M, error);
    if (r)
        return r;
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_INT32, MAX(rank, 0), od);
    reel_op_output(g, n, 0)->rank = rank;
    return 0;
}

static size_t convi_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    return qconv_scratch_bytes(n, in[0], in[1], false);
}

static int convi_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    const reel_tensor *zx = n->n_inputs > 2 ? in[2] : NULL, *zw = n->n_inputs > 3 ? in[3] : NULL;
    bool w_const = (ctx->const_inputs & 2) && (!zw || (ctx->const_inputs & 8));
    return qconv_compute(n, in[0], zx, in[1], zw, w_const, NULL, out[0]->data, NULL, NULL, ctx);
}

static const reel_op op_conv_integer = { "ConvInteger", convi_infer, convi_scratch, convi_run };

// Inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B (int32, optional).
static int qlconv_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int rank;
    int64_t od[5], M;
    reel_dtype dt;
    int r = qconv_check(g, n, 0, 2, 3, 5, &rank, od, &M, error);
    if (!r)
        r = check_scale(g, n, 1, "x_scale", 0, error);
    if (!r)
        r = check_scale(g, n, 4, "w_scale", M, error);
    if (!r)
        r = check_scale(g, n, 6, "y_scale", 0, error);
    if (!r)
        r = check_y_zp(g, n, 7, &dt, error);
    if (!r)
        r = check_fused_clamp(n, error);
    if (r)
        return r;
    reel_ir_value *b = reel_op_input(g, n, 8);
    if (b && b->dtype != REEL_DTYPE_INT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a %s bias is not supported (int32)", dtype_name(b->dtype));
    if (b && b->rank >= 0 && (b->rank != 1 || (M >= 0 && b->dims[0] >= 0 && b->dims[0] != M)))
        NN_FAIL(error, REEL_EINVAL, n, "the bias must have one value per output channel");
    nn_set(reel_op_output(g, n, 0), dt, MAX(rank, 0), od);
    reel_op_output(g, n, 0)->rank = rank;
    return 0;
}

static size_t qlconv_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    return qconv_scratch_bytes(n, in[0], in[3], true);
}

static int qlconv_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    requant q = { .zp = int_at(in[7], 0), .dt = out[0]->dtype };
    qrange(q.dt, &q.lo, &q.hi);
    if (count_of(in[4]) != 1 && count_of(in[4]) != in[3]->shape[0])
        return REEL_EINVAL;
    requant_fused_clamp(n, *(const float *)in[6]->data, &q);
    float *mult = requant_mults(in[1], in[4], in[6], &q.n_mult);
    q.mult = mult;
    const reel_tensor *bias = n->n_inputs > 8 ? in[8] : NULL;
    bool w_const = (ctx->const_inputs & (1u << 3)) && (!in[5] || (ctx->const_inputs & (1u << 5)));
    int rc = qconv_compute(n, in[0], in[2], in[3], in[5], w_const, bias, NULL, &q, out[0]->data, ctx);
    g_free(mult);
    return rc;
}

static const reel_op op_qlinear_conv = { "QLinearConv", qlconv_infer, qlconv_scratch, qlconv_run };

const reel_op *const reel_ops_quant[] = {
    &op_quantize, &op_dequantize, &op_dynq, &op_matmul_integer, &op_conv_integer, &op_qlinear_matmul,
    &op_qlinear_conv, NULL,
};

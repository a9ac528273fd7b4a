// MaxPool, AveragePool (1 to 3 spatial dims; pads, ceil_mode, dilations,
// count_include_pad), GlobalAveragePool, GlobalMaxPool.
#include <float.h>

#include "models/cpu/nn.h"

static int pool_window(const reel_ir_node *n, int rank, const int64_t *x, nn_window *w, GError **error)
{
    if (rank < 3 || rank > 5)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input rank %d (3 to 5 supported)", rank);
    return nn_window_init(n, rank - 2, x + 2, NULL, true, w, error);
}

static int pool_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input X");
    bool is_max = strcmp(n->op, "MaxPool") == 0;
    // MaxPool also picks 8-bit values as they are (folded QDQ models).
    bool q8 = x->dtype == REEL_DTYPE_UINT8 || x->dtype == REEL_DTYPE_INT8;
    if (x->dtype != REEL_DTYPE_FLOAT32 && !(is_max && q8))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported%s",
                is_max ? " (and uint8, int8)" : "");
    if (q8 && reel_op_output(g, n, 1))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "output Indices is not supported for %s input",
                x->dtype == REEL_DTYPE_UINT8 ? "uint8" : "int8");
    if (is_max && reel_ir_attr_int(n, "storage_order", 0) > 1)
        NN_FAIL(error, REEL_EINVAL, n, "storage_order must be 0 or 1");
    if (!is_max && reel_ir_attr_find(n, "dilations")) {
        int nd;
        const int64_t *d = reel_ir_attr_ints(n, "dilations", &nd);
        for (int i = 0; i < nd; i++)
            if (d[i] != 1 && g->opset < 19)
                NN_FAIL(error, REEL_EINVAL, n, "dilations need opset 19");
    }
    if (x->rank < 0) {
        reel_op_output(g, n, 0)->dtype = x->dtype;
        reel_op_output(g, n, 0)->rank = -1;
        return 0;
    }
    nn_window w;
    int r = pool_window(n, x->rank, x->dims, &w, error);
    if (r)
        return r;
    int64_t od[5] = { x->dims[0], x->dims[1] };
    for (int i = 0; i < w.sp; i++)
        od[2 + i] = w.out[3 - w.sp + i];
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank, od);
    if (is_max && reel_op_output(g, n, 1))
        nn_set(reel_op_output(g, n, 1), REEL_DTYPE_INT64, x->rank, od);
    return 0;
}

// MaxPool over 1-D/2-D planes without dilation and without indices: per
// output row, the max of the window's input rows (contiguous, vectorized)
// into a row padded with -FLT_MAX on both sides, then the max over each
// window's columns (stride 1 and 2 specialized so the compiler vectorizes).
// No bounds checks in the hot loops.
typedef struct maxpool_job {
    const nn_window *w;
    const float *X;
    float *Y;
    int64_t planes, per_task;
} maxpool_job;

static void maxpool_rows(const float *restrict x, float *restrict y, const nn_window *w, float *restrict m)
{
    int64_t H = w->in[1], W = w->in[2], OH = w->out[1], OW = w->out[2];
    int64_t kh = w->k[1], kw = w->k[2], sh = w->s[1], sw = w->s[2], pl = w->pb[2];
    // m[0..pl) and m[pl+W..) stay -FLT_MAX: the pads and ceil_mode overhang.
    float *mr = m + pl;
    for (int64_t oh = 0; oh < OH; oh++, y += OW) {
        int64_t h0 = oh * sh - w->pb[1], h1 = h0 + kh;
        h0 = h0 < 0 ? 0 : h0;
        h1 = h1 > H ? H : h1;
        if (h0 >= h1) {
            for (int64_t ow = 0; ow < OW; ow++)
                y[ow] = -FLT_MAX;
            continue;
        }
        memcpy(mr, x + h0 * W, (size_t)W * sizeof(float));
        for (int64_t h = h0 + 1; h < h1; h++) {
            const float *xr = x + h * W;
            for (int64_t i = 0; i < W; i++)
                mr[i] = xr[i] > mr[i] ? xr[i] : mr[i];
        }
        if (sw == 2 && kw == 2) {
            for (int64_t ow = 0; ow < OW; ow++) {
                float a = m[2 * ow], b = m[2 * ow + 1];
                y[ow] = b > a ? b : a;
            }
        } else if (sw == 2 && kw == 3) {
            for (int64_t ow = 0; ow < OW; ow++) {
                float a = m[2 * ow], b = m[2 * ow + 1], c = m[2 * ow + 2];
                a = b > a ? b : a;
                y[ow] = c > a ? c : a;
            }
        } else if (sw == 1) {
            memcpy(y, m, (size_t)OW * sizeof(float));
            for (int64_t e = 1; e < kw; e++)
                for (int64_t ow = 0; ow < OW; ow++)
                    y[ow] = m[ow + e] > y[ow] ? m[ow + e] : y[ow];
        } else {
            for (int64_t ow = 0; ow < OW; ow++) {
                const float *mw = m + ow * sw;
                float acc = mw[0];
                for (int64_t e = 1; e < kw; e++)
                    acc = mw[e] > acc ? mw[e] : acc;
                y[ow] = acc;
            }
        }
    }
}

static void maxpool_task(void *arg, int task, int worker)
{
    (void)worker;
    const maxpool_job *j = arg;
    const nn_window *w = j->w;
    // The padded row: begin pad, W inputs, then up to a whole window beyond.
    int64_t len = w->pb[2] + (w->out[2] - 1) * w->s[2] + w->k[2];
    len = MAX(len, w->pb[2] + w->in[2]);
    float *m = g_new(float, len);
    for (int64_t i = 0; i < len; i++)
        m[i] = -FLT_MAX;
    int64_t p0 = task * j->per_task, p1 = MIN(j->planes, p0 + j->per_task);
    int64_t Pin = w->in[1] * w->in[2], P = w->out[1] * w->out[2];
    for (int64_t p = p0; p < p1; p++)
        maxpool_rows(j->X + p * Pin, j->Y + p * P, w, m);
    g_free(m);
}

static bool maxpool_fast(const reel_ir_node *n, const nn_window *w, const int64_t *I)
{
    return !I && w->in[0] == 1 && w->out[0] == 1 && w->k[0] == 1 && w->d[0] == 1 && w->d[1] == 1 && w->d[2] == 1 && w->pb[0] == 0
        && reel_ir_attr_int(n, "storage_order", 0) == 0;
}

// MaxPool of uint8 or int8 planes: the window's largest byte (padding taps
// take no part). 2-D windows without dilation take each output row's input
// rows' elementwise max first (vectorized), then the max over each window's
// columns of that; others go tap by tap.
#define MAXPOOL_Q8(name, T, MIN_V)                                                                               \
    __attribute__((target_clones("avx2", "default"))) static void name(                                               \
        const T *x, T *y, const nn_window *w, int64_t planes, T *row)                                            \
    {                                                                                                            \
        int64_t D = w->in[0], H = w->in[1], W = w->in[2], Pin = D * H * W, P = w->out[0] * w->out[1] * w->out[2]; \
        bool flat = D == 1 && w->k[0] == 1 && w->d[1] == 1 && w->d[2] == 1;                                     \
        for (int64_t p = 0; p < planes; p++, x += Pin, y += P) {                                                 \
            if (flat) {                                                                                          \
                for (int64_t oh = 0; oh < w->out[1]; oh++) {                                                     \
                    int64_t h0 = oh * w->s[1] - w->pb[1];                                                        \
                    for (int64_t i = 0; i < W; i++)                                                              \
                        row[i] = MIN_V;                                                                          \
                    for (int64_t ih = MAX(h0, 0); ih < MIN(h0 + w->k[1], H); ih++) {                             \
                        const T *restrict xr = x + ih * W;                                                       \
                        for (int64_t i = 0; i < W; i++)                                                          \
                            row[i] = xr[i] > row[i] ? xr[i] : row[i];                                            \
                    }                                                                                            \
                    T *yr = y + oh * w->out[2];                                                                  \
                    bool no_rows = MAX(h0, 0) >= MIN(h0 + w->k[1], H);                                           \
                    if (!no_rows && w->k[2] == 2 && w->s[2] == 2 && w->pb[2] == 0 && 2 * w->out[2] <= W) {       \
                        /* The common 2x2 stride-2 pool: pairs of columns. */                                    \
                        for (int64_t ow = 0; ow < w->out[2]; ow++)                                               \
                            yr[ow] = row[2 * ow] > row[2 * ow + 1] ? row[2 * ow] : row[2 * ow + 1];              \
                        continue;                                                                                \
                    }                                                                                            \
                    for (int64_t ow = 0; ow < w->out[2]; ow++) {                                                 \
                        int64_t c0 = ow * w->s[2] - w->pb[2], c1 = MIN(c0 + w->k[2], W);                         \
                        T m = MIN_V;                                                                             \
                        for (int64_t iw = MAX(c0, 0); iw < c1; iw++)                                             \
                            m = row[iw] > m ? row[iw] : m;                                                       \
                        /* A window wholly in the padding: 0, as below. */                                       \
                        yr[ow] = no_rows || MAX(c0, 0) >= c1 ? 0 : m;                                            \
                    }                                                                                            \
                }                                                                                                \
                continue;                                                                                        \
            }                                                                                                    \
            for (int64_t od = 0; od < w->out[0]; od++)                                                           \
                for (int64_t oh = 0; oh < w->out[1]; oh++)                                                       \
                    for (int64_t ow = 0; ow < w->out[2]; ow++) {                                                 \
                        int64_t s0 = od * w->s[0] - w->pb[0], s1 = oh * w->s[1] - w->pb[1];                      \
                        int64_t s2 = ow * w->s[2] - w->pb[2];                                                    \
                        int m = -1000;                                                                           \
                        for (int64_t a = 0; a < w->k[0]; a++) {                                                  \
                            int64_t id = s0 + a * w->d[0];                                                       \
                            for (int64_t b = 0; b < w->k[1] && id >= 0 && id < D; b++) {                         \
                                int64_t ih = s1 + b * w->d[1];                                                   \
                                for (int64_t e = 0; e < w->k[2] && ih >= 0 && ih < H; e++) {                     \
                                    int64_t iw = s2 + e * w->d[2];                                               \
                                    if (iw >= 0 && iw < W && x[(id * H + ih) * W + iw] > m)                      \
                                        m = x[(id * H + ih) * W + iw];                                           \
                                }                                                                                \
                            }                                                                                    \
                        }                                                                                        \
                        y[(od * w->out[1] + oh) * w->out[2] + ow] = (T)(m == -1000 ? 0 : m);                    \
                    }                                                                                            \
        }                                                                                                        \
    }
MAXPOOL_Q8(maxpool_u8, uint8_t, 0)
MAXPOOL_Q8(maxpool_s8, int8_t, -128)

typedef struct maxpool_q8_job {
    const nn_window *w;
    const uint8_t *X;
    uint8_t *Y;
    bool s8;
    int64_t planes, per_task, Pin, P;
} maxpool_q8_job;

static void maxpool_q8_task(void *arg, int task, int worker)
{
    (void)worker;
    const maxpool_q8_job *j = arg;
    int64_t p0 = task * j->per_task, n = MIN(j->planes - p0, j->per_task);
    uint8_t *row = g_malloc(MAX(1, j->w->in[2]));
    if (j->s8)
        maxpool_s8((const int8_t *)j->X + p0 * j->Pin, (int8_t *)j->Y + p0 * j->P, j->w, n, (int8_t *)row);
    else
        maxpool_u8(j->X + p0 * j->Pin, j->Y + p0 * j->P, j->w, n, row);
    g_free(row);
}

static int pool_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    nn_window w;
    if (pool_window(n, in[0]->rank, in[0]->shape, &w, NULL))
        return REEL_EINVAL;
    bool is_max = strcmp(n->op, "MaxPool") == 0;
    if (in[0]->dtype == REEL_DTYPE_UINT8 || in[0]->dtype == REEL_DTYPE_INT8) {
        int threads = ctx->workers ? ctx->threads : 1;
        maxpool_q8_job j = { &w, in[0]->data, out[0]->data, in[0]->dtype == REEL_DTYPE_INT8,
                             in[0]->shape[0] * in[0]->shape[1], 1, w.in[0] * w.in[1] * w.in[2],
                             w.out[0] * w.out[1] * w.out[2] };
        if (j.planes == 0 || j.P == 0)
            return 0;
        j.per_task = MAX(1, j.planes / (4 * threads));
        nn_parallel(ctx, (int)((j.planes + j.per_task - 1) / j.per_task), maxpool_q8_task, &j);
        return 0;
    }
    if (is_max && maxpool_fast(n, &w, n->n_outputs > 1 && out[1] ? out[1]->data : NULL)) {
        int threads = ctx->workers ? ctx->threads : 1;
        maxpool_job j = { &w, in[0]->data, out[0]->data, in[0]->shape[0] * in[0]->shape[1], 1 };
        if (j.planes == 0 || w.out[1] * w.out[2] == 0)
            return 0;
        j.per_task = MAX(1, j.planes / (4 * threads));
        nn_parallel(ctx, (int)((j.planes + j.per_task - 1) / j.per_task), maxpool_task, &j);
        return 0;
    }
    bool include_pad = reel_ir_attr_int(n, "count_include_pad", 0) != 0;
    bool col_major = reel_ir_attr_int(n, "storage_order", 0) == 1;
    int64_t planes = in[0]->shape[0] * in[0]->shape[1];
    int64_t D = w.in[0], H = w.in[1], W = w.in[2], Pin = D * H * W, P = w.out[0] * w.out[1] * w.out[2];
    const float *X = in[0]->data;
    float *Y = out[0]->data;
    int64_t *I = is_max && n->n_outputs > 1 && out[1] ? out[1]->data : NULL;
    for (int64_t p = 0; p < planes; p++) {
        const float *x = X + p * Pin;
        float *y = Y + p * P;
        for (int64_t od = 0; od < w.out[0]; od++)
            for (int64_t oh = 0; oh < w.out[1]; oh++)
                for (int64_t ow = 0; ow < w.out[2]; ow++) {
                    int64_t s0[3] = { od * w.s[0] - w.pb[0], oh * w.s[1] - w.pb[1], ow * w.s[2] - w.pb[2] };
                    float acc = is_max ? -FLT_MAX : 0;
                    int64_t best = -1, count = 0, padded = 1;
                    if (!is_max && include_pad)
                        // Window positions inside input + pads; those beyond
                        // the end pad (ceil_mode) do not count.
                        for (int i = 0; i < 3; i++) {
                            int64_t lim = w.in[i] + w.pe[i], c = 0;
                            for (int64_t k = 0; k < w.k[i]; k++)
                                c += s0[i] + k * w.d[i] < lim;
                            padded *= c;
                        }
                    for (int64_t a = 0; a < w.k[0]; a++) {
                        int64_t id = s0[0] + a * w.d[0];
                        if (id < 0 || id >= D)
                            continue;
                        for (int64_t b = 0; b < w.k[1]; b++) {
                            int64_t ih = s0[1] + b * w.d[1];
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int64_t e = 0; e < w.k[2]; e++) {
                                int64_t iw = s0[2] + e * w.d[2];
                                if (iw < 0 || iw >= W)
                                    continue;
                                int64_t idx = (id * H + ih) * W + iw;
                                float v = x[idx];
                                if (is_max) {
                                    if (v > acc || best < 0) {
                                        acc = v;
                                        best = col_major ? (iw * H + ih) * D + id : idx;
                                    }
                                } else {
                                    acc += v;
                                    count++;
                                }
                            }
                        }
                    }
                    int64_t o = (od * w.out[1] + oh) * w.out[2] + ow;
                    if (is_max) {
                        y[o] = acc;
                        if (I)
                            I[p * P + o] = p * Pin + best;
                    } else {
                        int64_t div = include_pad ? padded : count;
                        y[o] = div ? acc / (float)div : 0;
                    }
                }
    }
    return 0;
}

const reel_op nn_op_maxpool = { "MaxPool", pool_infer, NULL, pool_run };
const reel_op nn_op_averagepool = { "AveragePool", pool_infer, NULL, pool_run };

static int global_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input X");
    if (x->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
    if (x->rank >= 0 && x->rank < 2)
        NN_FAIL(error, REEL_EINVAL, n, "input rank must be at least 2");
    reel_ir_value *y = reel_op_output(g, n, 0);
    nn_set(y, REEL_DTYPE_FLOAT32, x->rank, x->dims);
    for (int i = 2; i < x->rank; i++)
        y->dims[i] = 1;
    return 0;
}

// The sum of x[0..n): 16 float partial sums (a vector's lanes, so the adds
// do not wait on each other), added up in double; each partial sum takes
// n / 16 terms, so even 56x56 planes keep their bits.
__attribute__((target_clones("avx512f", "avx2", "default"))) static double plane_sum(const float *x, int64_t n)
{
    float part[16] = { 0 };
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++)
            part[l] += x[i + l];
    double s = 0;
    for (int l = 0; l < 16; l++)
        s += part[l];
    for (; i < n; i++)
        s += x[i];
    return s;
}

static int global_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    bool is_max = strcmp(n->op, "GlobalMaxPool") == 0;
    int64_t planes = in[0]->shape[0] * in[0]->shape[1];
    int64_t P = reel_tensor_count(in[0]->rank - 2, in[0]->shape + 2);
    const float *x = in[0]->data;
    float *y = out[0]->data;
    for (int64_t p = 0; p < planes; p++, x += P) {
        if (is_max) {
            float m = P ? x[0] : 0;
            for (int64_t i = 1; i < P; i++)
                m = x[i] > m ? x[i] : m;
            y[p] = m;
        } else {
            y[p] = P ? (float)(plane_sum(x, P) / (double)P) : 0;
        }
    }
    return 0;
}

const reel_op nn_op_globalaveragepool = { "GlobalAveragePool", global_infer, NULL, global_run };
const reel_op nn_op_globalmaxpool = { "GlobalMaxPool", global_infer, NULL, global_run };

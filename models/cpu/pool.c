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
    if (x->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
    bool is_max = strcmp(n->op, "MaxPool") == 0;
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
        reel_op_output(g, n, 0)->dtype = REEL_DTYPE_FLOAT32;
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
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, od);
    if (is_max && reel_op_output(g, n, 1))
        nn_set(reel_op_output(g, n, 1), REEL_DTYPE_INT64, x->rank, od);
    return 0;
}

static int pool_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    nn_window w;
    if (pool_window(n, in[0]->rank, in[0]->shape, &w, NULL))
        return REEL_EINVAL;
    bool is_max = strcmp(n->op, "MaxPool") == 0;
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
            double s = 0; // long planes (e.g. 56x56) lose bits in float
            for (int64_t i = 0; i < P; i++)
                s += x[i];
            y[p] = P ? (float)(s / (double)P) : 0;
        }
    }
    return 0;
}

const reel_op nn_op_globalaveragepool = { "GlobalAveragePool", global_infer, NULL, global_run };
const reel_op nn_op_globalmaxpool = { "GlobalMaxPool", global_infer, NULL, global_run };

// BatchNormalization, inference form: y = (x - mean) / sqrt(var + eps) * scale + B.
#include "models/cpu/nn.h"

static int bn_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    if (n->n_inputs < 5)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X, scale, B, mean and var");
    if (reel_ir_attr_int(n, "training_mode", 0))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "training_mode is not supported");
    for (int i = 1; i < n->n_outputs; i++)
        if (n->outputs[i] >= 0)
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "training outputs (mean, var) are not supported");
    reel_ir_value *x = reel_op_input(g, n, 0);
    for (int i = 0; i < 5; i++) {
        reel_ir_value *v = reel_op_input(g, n, i);
        if (!v || v->dtype != REEL_DTYPE_FLOAT32)
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
        if (i > 0 && v->rank >= 0 && (v->rank != 1 || (x->rank >= 2 && x->dims[1] >= 0 && v->dims[0] >= 0 &&
                                                         v->dims[0] != x->dims[1])))
            NN_FAIL(error, REEL_EINVAL, n, "scale, B, mean and var must be vectors of the channel count");
    }
    if (x->rank >= 0 && x->rank < 2)
        NN_FAIL(error, REEL_EINVAL, n, "input rank must be at least 2");
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, x->dims);
    return 0;
}

static int bn_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    float eps = reel_ir_attr_float(n, "epsilon", 1e-5f);
    const reel_tensor *x = in[0];
    int64_t N = x->shape[0], C = x->shape[1], P = reel_tensor_count(x->rank - 2, x->shape + 2);
    const float *sc = in[1]->data, *b = in[2]->data, *mean = in[3]->data, *var = in[4]->data, *X = x->data;
    float *Y = out[0]->data;
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++) {
            float a = sc[c] / sqrtf(var[c] + eps), off = b[c] - mean[c] * a;
            const float *xr = X + (i * C + c) * P;
            float *yr = Y + (i * C + c) * P;
            for (int64_t k = 0; k < P; k++)
                yr[k] = xr[k] * a + off;
        }
    return 0;
}

const reel_op nn_op_batchnorm = { "BatchNormalization", bn_infer, NULL, bn_run };

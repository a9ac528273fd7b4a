// SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss: float32 scores of
// (N, C, d1, ..., dk), int32 or int64 targets of (N, d1, ..., dk), an
// optional weight per class; reduction none, sum or mean.
#include "models/cpu/nn.h"

typedef enum { LOSS_NONE, LOSS_SUM, LOSS_MEAN } loss_reduction;

static int reduction_of(const reel_ir_node *n, loss_reduction *r)
{
    const char *s = reel_ir_attr_string(n, "reduction", "mean");
    if (strcmp(s, "none") == 0)
        *r = LOSS_NONE;
    else if (strcmp(s, "sum") == 0)
        *r = LOSS_SUM;
    else if (strcmp(s, "mean") == 0)
        *r = LOSS_MEAN;
    else
        return -1;
    return 0;
}

// Shared by both ops: inputs (scores, target[, weight]); output 0 the loss,
// output 1 (SoftmaxCrossEntropyLoss only) the scores' log-softmax.
static int loss_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *t = reel_op_input(g, n, 1), *w = reel_op_input(g, n, 2);
    if (!x || !t)
        NN_FAIL(error, REEL_EINVAL, n, "needs the scores and the target");
    loss_reduction red;
    if (reduction_of(n, &red))
        NN_FAIL(error, REEL_EINVAL, n, "reduction '%s' is not none, sum or mean",
                reel_ir_attr_string(n, "reduction", ""));
    if (x->dtype != REEL_DTYPE_FLOAT32 || (w && w->dtype != REEL_DTYPE_FLOAT32))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 scores and weights are supported");
    if (t->dtype != REEL_DTYPE_INT64 && t->dtype != REEL_DTYPE_INT32)
        NN_FAIL(error, REEL_EINVAL, n, "the target must be int32 or int64");
    if (x->rank >= 0 && x->rank < 2)
        NN_FAIL(error, REEL_EINVAL, n, "the scores need rank 2 or more (N, C, ...)");
    if (x->rank >= 0 && t->rank >= 0) {
        bool same = t->rank == x->rank - 1 && (t->dims[0] < 0 || x->dims[0] < 0 || t->dims[0] == x->dims[0]);
        for (int d = 1; same && d < t->rank; d++)
            same = t->dims[d] < 0 || x->dims[d + 1] < 0 || t->dims[d] == x->dims[d + 1];
        if (!same)
            NN_FAIL(error, REEL_EINVAL, n, "the target's shape must be the scores' without dim 1");
    }
    if (w && w->rank >= 0 && (w->rank != 1 || (x->rank >= 2 && x->dims[1] >= 0 && w->dims[0] >= 0 &&
                                                w->dims[0] != x->dims[1])))
        NN_FAIL(error, REEL_EINVAL, n, "the weight must be a vector of the class count");
    if (red == LOSS_NONE)
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, t->rank, t->dims);
    else
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, 0, NULL);
    nn_set(reel_op_output(g, n, 1), REEL_DTYPE_FLOAT32, x->rank, x->dims);
    return 0;
}

static int64_t target_at(const reel_tensor *t, int64_t i)
{
    return t->dtype == REEL_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

// The loss of log-probabilities lp (N, C, P) against target (N, P) into out.
static int nll(const reel_ir_node *n, const float *lp, const reel_tensor *x, const reel_tensor *target,
               const reel_tensor *weight, reel_tensor *out)
{
    loss_reduction red;
    if (reduction_of(n, &red))
        return REEL_EINVAL;
    const reel_ir_attr *ii = reel_ir_attr_find(n, "ignore_index");
    int64_t N = x->shape[0], C = x->shape[1], P = reel_tensor_count(x->rank - 2, x->shape + 2);
    if (weight && reel_tensor_count(weight->rank, weight->shape) != C)
        return REEL_EINVAL;
    const float *w = weight ? weight->data : NULL;
    float *loss = out->data;
    double total = 0.0, weights = 0.0;
    for (int64_t b = 0; b < N; b++)
        for (int64_t j = 0; j < P; j++) {
            int64_t i = b * P + j, c = target_at(target, i);
            float l = 0.0f;
            if (!ii || c != ii->i) {
                if (c < 0 || c >= C)
                    return REEL_EINVAL;
                float wc = w ? w[c] : 1.0f;
                l = -lp[(b * C + c) * P + j] * wc;
                weights += wc;
            }
            if (red == LOSS_NONE)
                loss[i] = l;
            total += l;
        }
    if (red == LOSS_SUM)
        loss[0] = (float)total;
    else if (red == LOSS_MEAN)
        loss[0] = (float)(total / weights); // 0/0 (all ignored) is NaN, as in ONNX
    return 0;
}

static int nll_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    return nll(n, in[0]->data, in[0], in[1], n->n_inputs > 2 ? in[2] : NULL, out[0]);
}

static const reel_op op_nll_loss = { "NegativeLogLikelihoodLoss", loss_infer, NULL, nll_run };

// Log-softmax over dim 1 of x (N, C, P) into lp.
static void log_softmax_classes(const float *x, float *lp, int64_t N, int64_t C, int64_t P)
{
    for (int64_t b = 0; b < N; b++)
        for (int64_t j = 0; j < P; j++) {
            const float *p = x + b * C * P + j;
            float *q = lp + b * C * P + j, m = -INFINITY;
            for (int64_t c = 0; c < C; c++)
                m = p[c * P] > m ? p[c * P] : m;
            double sum = 0.0;
            for (int64_t c = 0; c < C; c++)
                sum += exp((double)(p[c * P] - m));
            float l = (float)log(sum);
            for (int64_t c = 0; c < C; c++)
                q[c * P] = (p[c * P] - m) - l;
        }
}

static bool has_log_prob(const reel_ir_node *n, reel_tensor *const *out)
{
    return n->n_outputs > 1 && out[1];
}

// Room for the log-probabilities when the node does not output them.
static size_t sce_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    return has_log_prob(n, out) ? 0 : sizeof(float) * (size_t)reel_tensor_count(in[0]->rank, in[0]->shape);
}

static int sce_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0];
    float *lp = has_log_prob(n, out) ? out[1]->data : ctx->scratch;
    log_softmax_classes(x->data, lp, x->shape[0], x->shape[1], reel_tensor_count(x->rank - 2, x->shape + 2));
    return nll(n, lp, x, in[1], n->n_inputs > 2 ? in[2] : NULL, out[0]);
}

static const reel_op op_sce_loss = { "SoftmaxCrossEntropyLoss", loss_infer, sce_scratch, sce_run };

const reel_op *const reel_ops_loss[] = {
    &op_nll_loss, &op_sce_loss, NULL,
};

// Vulkan kernels: the float32 unary ops of models/cpu/unary.c that vision
// models run per frame, as more op codes of gpu/shaders/nn_unary.comp
// (Neg, Abs, Log and Reciprocal are models/vulkan/ops_basic.c's). The
// shader has no erf, expm1 or log1p: it computes them itself, close to the
// cpu's libm (see the shader).
#include <string.h>

#include "models/vulkan/vk_ops.h"

// The shader's op codes (gpu/shaders/nn_unary.comp).
enum {
    UN_FLOOR = 32, UN_CEIL, UN_ROUND, UN_SIGN, UN_SIN, UN_COS, UN_ERF, UN_ELU, UN_SELU, UN_CELU,
    UN_THRESHOLDEDRELU, UN_SOFTPLUS, UN_SOFTSIGN, UN_MISH, UN_GELU, UN_GELU_TANH
};

// gpu/kernel.c's nn_unary push constants.
typedef struct unary_push {
    uint32_t n, op;
    float a, b;
} unary_push;
_Static_assert(sizeof(unary_push) == 16, "gpu/kernel.c's nn_unary push size");

// The op's code and parameters, with models/cpu/unary.c's defaults; false
// for an op or attribute value the shader does not have.
static bool unary_params(const reel_ir_node *n, unary_push *p)
{
    static const struct {
        const char *name;
        uint32_t code;
        const char *a, *b; // attributes read into a, b
        float a_def, b_def;
    } ops[] = {
        { "Floor", UN_FLOOR, NULL, NULL, 0, 0 },
        { "Ceil", UN_CEIL, NULL, NULL, 0, 0 },
        { "Round", UN_ROUND, NULL, NULL, 0, 0 },
        { "Sign", UN_SIGN, NULL, NULL, 0, 0 },
        { "Sin", UN_SIN, NULL, NULL, 0, 0 },
        { "Cos", UN_COS, NULL, NULL, 0, 0 },
        { "Erf", UN_ERF, NULL, NULL, 0, 0 },
        { "Elu", UN_ELU, "alpha", NULL, 1.0f, 0 },
        { "Selu", UN_SELU, "alpha", "gamma", 1.67326319217681884765625f, 1.05070102214813232421875f },
        { "Celu", UN_CELU, "alpha", NULL, 1.0f, 0 },
        { "ThresholdedRelu", UN_THRESHOLDEDRELU, "alpha", NULL, 1.0f, 0 },
        { "Softplus", UN_SOFTPLUS, NULL, NULL, 0, 0 },
        { "Softsign", UN_SOFTSIGN, NULL, NULL, 0, 0 },
        { "Mish", UN_MISH, NULL, NULL, 0, 0 },
        { "Gelu", UN_GELU, NULL, NULL, 0, 0 },
    };
    size_t i = 0;
    while (i < G_N_ELEMENTS(ops) && strcmp(ops[i].name, n->op) != 0)
        i++;
    if (i == G_N_ELEMENTS(ops))
        return false;
    p->op = ops[i].code;
    p->a = ops[i].a ? reel_ir_attr_float(n, ops[i].a, ops[i].a_def) : 0.0f;
    p->b = ops[i].b ? reel_ir_attr_float(n, ops[i].b, ops[i].b_def) : 0.0f;
    if (p->op == UN_GELU) {
        const char *approx = reel_ir_attr_string(n, "approximate", "none");
        if (strcmp(approx, "tanh") == 0)
            p->op = UN_GELU_TANH;
        else if (strcmp(approx, "none") != 0)
            return false;
    }
    if (p->op == UN_CELU && p->a == 0.0f)
        return false;
    return true;
}

static bool is_f32(const reel_tensor *t)
{
    if (!t || t->dtype != REEL_DTYPE_FLOAT32 || t->rank < 0 || t->rank > REEL_TENSOR_MAX_RANK)
        return false;
    int64_t count = reel_tensor_count(t->rank, t->shape);
    return count >= 0 && count <= INT32_MAX;
}

static bool unary_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    unary_push p;
    return n->n_inputs == 1 && n->n_outputs >= 1 && is_f32(in[0]) && is_f32(out[0]) &&
           reel_tensor_count(in[0]->rank, in[0]->shape) == reel_tensor_count(out[0]->rank, out[0]->shape) &&
           unary_params(n, &p);
}

static int unary_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    unary_push push;
    if (!unary_params(n, &push))
        return REEL_EINVAL;
    push.n = (uint32_t)reel_tensor_count(out[0]->t->rank, out[0]->t->shape);
    if (push.n == 0)
        return 0;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_unary"), &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR ? error->code : REEL_EUNSUPPORTED;
        g_clear_error(&error);
        return code;
    }
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &push, sizeof push, push.n);
}

// The float16 form computes in float32 too: the same nodes.
#define UNARY_OP(var, Name) \
    static const vk_op var = { .name = Name, .supports = unary_supports, .run = unary_run, \
                               .supports_f16 = unary_supports }
UNARY_OP(op_floor, "Floor");
UNARY_OP(op_ceil, "Ceil");
UNARY_OP(op_round, "Round");
UNARY_OP(op_sign, "Sign");
UNARY_OP(op_sin, "Sin");
UNARY_OP(op_cos, "Cos");
UNARY_OP(op_erf, "Erf");
UNARY_OP(op_elu, "Elu");
UNARY_OP(op_selu, "Selu");
UNARY_OP(op_celu, "Celu");
UNARY_OP(op_thresholdedrelu, "ThresholdedRelu");
UNARY_OP(op_softplus, "Softplus");
UNARY_OP(op_softsign, "Softsign");
UNARY_OP(op_mish, "Mish");
UNARY_OP(op_gelu, "Gelu");

const vk_op *const vk_ops_unary[] = {
    &op_floor, &op_ceil, &op_round, &op_sign, &op_sin, &op_cos, &op_erf, &op_elu, &op_selu, &op_celu,
    &op_thresholdedrelu, &op_softplus, &op_softsign, &op_mish, &op_gelu, NULL,
};

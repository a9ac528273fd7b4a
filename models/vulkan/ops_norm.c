// Vulkan kernels: LayerNormalization, GroupNormalization,
// InstanceNormalization (float32; one nn_norm dispatch, a workgroup per
// normalized row). The shapes models/cpu/normalize.c accepts; a
// LayerNormalization Scale or B that broadcasts (fewer elements than the
// normalized dims) and empty tensors stay on the cpu.
#include <string.h>

#include "models/vulkan/vk_ops.h"

#define R REEL_TENSOR_MAX_RANK
#define MAX_LOCAL 256 // nn_norm's shared partials

// nn_norm's flags.
enum { NORM_PER_CHANNEL = 1, NORM_PER_GROUP = 2, NORM_BIAS = 4, NORM_MEAN = 8, NORM_INV = 16 };

typedef struct norm_push {
    uint32_t rows, len, plane, groups, flags;
    float eps;
} norm_push;
_Static_assert(sizeof(norm_push) == 24, "gpu/kernel.c's nn_norm push size");

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static bool is_f32(const reel_tensor *t)
{
    return t && t->dtype == REEL_DTYPE_FLOAT32 && t->rank >= 0 && t->rank <= R;
}

static bool same_shape(const reel_tensor *a, const reel_tensor *b)
{
    return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) == 0;
}

// X's (and Y's) checks shared by the three: float32, non-empty, indexable
// by the shader's 32-bit words.
static bool x_ok(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    if (n->n_inputs < 2 || n->n_outputs < 1 || !is_f32(in[0]) || !is_f32(in[1]) || !is_f32(out[0]))
        return false;
    int64_t total = count_of(in[0]);
    return total > 0 && total <= INT32_MAX && same_shape(in[0], out[0]);
}

static bool ln_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, norm_push *p)
{
    if (!x_ok(n, in, out) || n->n_inputs > 3 || n->n_outputs > 3)
        return false;
    const reel_tensor *x = in[0], *scale = in[1], *bias = n->n_inputs > 2 ? in[2] : NULL;
    int64_t axis = reel_ir_attr_int(n, "axis", -1);
    if (axis < -x->rank || axis >= x->rank)
        return false;
    if (axis < 0)
        axis += x->rank;
    int64_t len = reel_tensor_count(x->rank - (int)axis, x->shape + axis);
    // A Scale or B of len elements that broadcasts to the normalized dims is
    // laid out as they are; fewer would need expanding (the cpu does that).
    if (count_of(scale) != len || (bias && (!is_f32(bias) || count_of(bias) != len)))
        return false;
    *p = (norm_push){ .rows = (uint32_t)(count_of(x) / len), .len = (uint32_t)len, .plane = 1, .groups = 1,
                      .flags = bias ? NORM_BIAS : 0, .eps = reel_ir_attr_float(n, "epsilon", 1e-5f) };
    // Mean and InvStdDev, where asked for: one value per row.
    for (int k = 1; k < n->n_outputs; k++) {
        if (!out[k])
            continue;
        if (!is_f32(out[k]) || count_of(out[k]) != p->rows)
            return false;
        p->flags |= k == 1 ? NORM_MEAN : NORM_INV;
    }
    return true;
}

// GroupNormalization (G from num_groups) and InstanceNormalization (G = C):
// scale and B per channel, or per group where they have G elements.
static bool group_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, norm_push *p)
{
    if (!x_ok(n, in, out) || n->n_inputs != 3 || n->n_outputs != 1 || !is_f32(in[2]) || in[0]->rank < 2)
        return false;
    const reel_tensor *x = in[0];
    int64_t C = x->shape[1], P = reel_tensor_count(x->rank - 2, x->shape + 2);
    int64_t G = strcmp(n->op, "InstanceNormalization") == 0 ? C : reel_ir_attr_int(n, "num_groups", 0);
    int64_t ns = count_of(in[1]), nb = count_of(in[2]);
    if (G <= 0 || C % G != 0 || ns != nb || (ns != C && ns != G))
        return false;
    *p = (norm_push){ .rows = (uint32_t)(x->shape[0] * G), .len = (uint32_t)(C / G * P), .plane = (uint32_t)P,
                      .groups = (uint32_t)G, .flags = ns != C ? NORM_PER_GROUP : NORM_PER_CHANNEL,
                      .eps = reel_ir_attr_float(n, "epsilon", 1e-5f) };
    return true;
}

static bool norm_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, norm_push *p)
{
    return strcmp(n->op, "LayerNormalization") == 0 ? ln_plan(n, in, out, p) : group_plan(n, in, out, p);
}

static bool norm_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    norm_push p;
    return norm_plan(n, in, out, &p);
}

static reel_mem *mem_or(vk_ctx *ctx, vk_tensor *const *v, int n, int i)
{
    return i < n && v[i] ? v[i]->mem : ctx->dummy;
}

static int norm_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[3] = { NULL }, *tout[3] = { NULL };
    for (int i = 0; i < n->n_inputs && i < 3; i++)
        tin[i] = in[i] ? (reel_tensor *)in[i]->t : NULL;
    for (int i = 0; i < n->n_outputs && i < 3; i++)
        tout[i] = out[i] ? (reel_tensor *)out[i]->t : NULL;
    norm_push p;
    if (!norm_plan(n, tin, tout, &p))
        return REEL_EINVAL;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_norm"), &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("node %s (%s): %s", n->name, n->op, error ? error->message : "nn_norm");
        g_clear_error(&error);
        return code;
    }
    // The shader folds partials in halves within MAX_LOCAL slots.
    uint32_t local = reel_kernel_local_size(k);
    if (local > MAX_LOCAL || (local & (local - 1)) != 0)
        return REEL_EINTERNAL;
    reel_mem *bufs[6] = {
        in[0]->mem, in[1]->mem, mem_or(ctx, in, n->n_inputs, 2),
        out[0]->mem, mem_or(ctx, out, n->n_outputs, 1), mem_or(ctx, out, n->n_outputs, 2),
    };
    return vk_ctx_dispatch(ctx, k, bufs, 6, &p, sizeof p, (uint64_t)p.rows * local);
}

static const vk_op op_layer_norm = { .name = "LayerNormalization", .supports = norm_supports, .run = norm_run,
                                     .supports_f16 = norm_supports };
static const vk_op op_group_norm = { .name = "GroupNormalization", .supports = norm_supports, .run = norm_run,
                                     .supports_f16 = norm_supports };
static const vk_op op_instance_norm = { .name = "InstanceNormalization", .supports = norm_supports,
                                        .run = norm_run, .supports_f16 = norm_supports };

const vk_op *const vk_ops_norm[] = {
    &op_layer_norm,
    &op_group_norm,
    &op_instance_norm,
    NULL,
};

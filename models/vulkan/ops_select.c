// Vulkan kernels: ArgMax, ArgMin (float32, any axis; one nn_argmax
// dispatch), TopK (float32, k up to 32; one nn_topk dispatch). Axis, keepdims and select_last_index as models/cpu/select.c
// reads them; ties and NaN as there. Other dtypes, and float16 storage
// (where rounding makes ties the cpu would not see), stay on the cpu.
#include <string.h>

#include "models/vulkan/vk_ops.h"

#define R REEL_TENSOR_MAX_RANK
#define GROUP_DIM 256 // from this axis length on, a workgroup per output
#define MAX_LOCAL 256 // nn_argmax's shared candidates

enum { ARG_MIN = 1, ARG_LAST = 2, ARG_GROUP = 4 }; // nn_argmax's flags

typedef struct arg_push {
    uint32_t n_out, dim, inner, flags;
} arg_push;
_Static_assert(sizeof(arg_push) == 16, "gpu/kernel.c's nn_argmax push size");

static bool arg_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, arg_push *p)
{
    if (n->n_inputs != 1 || n->n_outputs != 1 || !in[0] || !out[0])
        return false;
    const reel_tensor *x = in[0], *o = out[0];
    int64_t total = reel_tensor_count(x->rank, x->shape);
    if (x->dtype != REEL_DTYPE_FLOAT32 || o->dtype != REEL_DTYPE_INT64 || x->rank < 1 || x->rank > R ||
        total <= 0 || total > INT32_MAX)
        return false;
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (axis < -x->rank || axis >= x->rank)
        return false;
    if (axis < 0)
        axis += x->rank;
    // The output's shape as the cpu's infer_arg makes it.
    bool keep = reel_ir_attr_int(n, "keepdims", 1) != 0;
    int64_t want[R];
    int k = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != axis)
            want[k++] = x->shape[d];
        else if (keep)
            want[k++] = 1;
    if (o->rank != k || memcmp(want, o->shape, sizeof(int64_t) * (size_t)k) != 0)
        return false;
    int64_t dim = x->shape[axis];
    *p = (arg_push){
        .n_out = (uint32_t)(total / dim),
        .dim = (uint32_t)dim,
        .inner = (uint32_t)reel_tensor_count(x->rank - (int)axis - 1, x->shape + axis + 1),
        .flags = (strcmp(n->op, "ArgMin") == 0 ? ARG_MIN : 0) |
                 (reel_ir_attr_int(n, "select_last_index", 0) ? ARG_LAST : 0) | (dim >= GROUP_DIM ? ARG_GROUP : 0),
    };
    return true;
}

static bool arg_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    arg_push p;
    return arg_plan(n, in, out, &p);
}

static int arg_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    arg_push p;
    if (!arg_plan(n, (reel_tensor *[]){ (reel_tensor *)in[0]->t }, (reel_tensor *[]){ (reel_tensor *)out[0]->t }, &p))
        return REEL_EINVAL;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, "nn_argmax", &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("node %s (%s): %s", n->name, n->op, error ? error->message : "nn_argmax");
        g_clear_error(&error);
        return code;
    }
    uint64_t invocations = p.n_out;
    if (p.flags & ARG_GROUP) {
        // The shader folds candidates in halves within MAX_LOCAL slots.
        uint32_t local = reel_kernel_local_size(k);
        if (local > MAX_LOCAL || (local & (local - 1)) != 0)
            return REEL_EINTERNAL;
        invocations *= local;
    }
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &p, sizeof p, invocations);
}

static const vk_op op_argmax = { .name = "ArgMax", .supports = arg_supports, .run = arg_run };
static const vk_op op_argmin = { .name = "ArgMin", .supports = arg_supports, .run = arg_run };

// ---- TopK -----------------------------------------------------------------------

#define TOPK_MAX_K 32 // nn_topk's kept values per slice

typedef struct topk_push {
    uint32_t slices, dim, inner, k, largest;
} topk_push;
_Static_assert(sizeof(topk_push) == 20, "gpu/kernel.c's nn_topk push size");

// k from the output's shape, which the cpu's infer made from the attribute
// (before opset 10) or the constant K input; a K computed at run time, and
// sorted = 0 answered sorted, as the cpu does.
static bool topk_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, topk_push *p)
{
    // Without the Indices output (the kernel writes both) it stays on the cpu.
    if (n->n_inputs < 1 || n->n_inputs > 2 || n->n_outputs != 2 || !in[0] || !out[0] || !out[1])
        return false;
    const reel_tensor *x = in[0], *v = out[0], *ix = out[1];
    int64_t total = reel_tensor_count(x->rank, x->shape);
    if (x->dtype != REEL_DTYPE_FLOAT32 || v->dtype != REEL_DTYPE_FLOAT32 || x->rank < 1 || x->rank > R ||
        total <= 0 || total > INT32_MAX || v->rank != x->rank)
        return false;
    int64_t axis = reel_ir_attr_int(n, "axis", -1);
    if (axis < -x->rank || axis >= x->rank)
        return false;
    if (axis < 0)
        axis += x->rank;
    int64_t k = v->shape[axis], dim = x->shape[axis];
    if (n->n_inputs == 2) { // K must be on the host and agree
        const reel_tensor *kt = in[1];
        if (!kt || !kt->data || kt->dtype != REEL_DTYPE_INT64 || reel_tensor_count(kt->rank, kt->shape) != 1 ||
            ((const int64_t *)kt->data)[0] != k)
            return false;
    }
    if (k < 1 || k > TOPK_MAX_K || k > dim)
        return false;
    for (int d = 0; d < x->rank; d++)
        if (d != axis && v->shape[d] != x->shape[d])
            return false;
    if (ix->dtype != REEL_DTYPE_INT64 || ix->rank != v->rank ||
        memcmp(ix->shape, v->shape, sizeof(int64_t) * (size_t)v->rank) != 0)
        return false;
    int64_t inner = reel_tensor_count(x->rank - (int)axis - 1, x->shape + axis + 1);
    *p = (topk_push){ .slices = (uint32_t)(total / dim), .dim = (uint32_t)dim, .inner = (uint32_t)inner,
                      .k = (uint32_t)k, .largest = reel_ir_attr_int(n, "largest", 1) != 0 };
    return true;
}

static bool topk_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    topk_push p;
    return topk_plan(n, in, out, &p);
}

static int topk_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[2] = { (reel_tensor *)in[0]->t, n->n_inputs > 1 && in[1] ? (reel_tensor *)in[1]->t : NULL };
    reel_tensor *tout[2] = { (reel_tensor *)out[0]->t, n->n_outputs > 1 && out[1] ? (reel_tensor *)out[1]->t : NULL };
    topk_push p;
    if (!topk_plan(n, tin, tout, &p))
        return REEL_EINVAL;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, "nn_topk", &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("node %s (%s): %s", n->name, n->op, error ? error->message : "nn_topk");
        g_clear_error(&error);
        return code;
    }
    reel_mem *bufs[3] = { in[0]->mem, out[0]->mem, out[1]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 3, &p, sizeof p, p.slices);
}

// In fp16 sessions TopK stays on the cpu: float16 rounding makes ties.
static const vk_op op_topk = { .name = "TopK", .supports = topk_supports, .run = topk_run };

const vk_op *const vk_ops_select[] = {
    &op_argmax,
    &op_argmin,
    &op_topk,
    NULL,
};

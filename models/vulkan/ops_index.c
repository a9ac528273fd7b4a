// Vulkan kernels: GatherElements (any axis, 4- and 8-byte elements, int32
// or int64 indices; one nn_gather_elements dispatch). Constant indices out
// of range stay on the cpu, which refuses them; ones computed at run time
// that fall out of range give zeros here, as Gather's kernel does. Other
// element sizes (and float16 storage) stay on the cpu.
#include <string.h>

#include "models/vulkan/vk_ops.h"

#define VK_RANK 6 // dims the kernel's push constants hold

typedef struct gel_push {
    uint32_t n, rank, axis, wpe, idx64, dim;
    uint32_t shape[VK_RANK];
    uint32_t x_st[VK_RANK];
} gel_push;
_Static_assert(sizeof(gel_push) == 72, "gpu/kernel.c's nn_gather_elements push size");

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static int64_t index_value(const reel_tensor *t, int64_t i)
{
    return t->dtype == REEL_DTYPE_INT64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

static bool gel_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, gel_push *p)
{
    if (n->n_inputs != 2 || n->n_outputs != 1 || !in[0] || !in[1] || !out[0])
        return false;
    const reel_tensor *x = in[0], *idx = in[1], *o = out[0];
    size_t es = reel_dtype_size(x->dtype);
    if ((es != 4 && es != 8) || o->dtype != x->dtype ||
        (idx->dtype != REEL_DTYPE_INT64 && idx->dtype != REEL_DTYPE_INT32))
        return false;
    if (x->rank < 1 || x->rank > VK_RANK || idx->rank != x->rank || o->rank != x->rank ||
        memcmp(o->shape, idx->shape, sizeof(int64_t) * (size_t)o->rank) != 0)
        return false;
    int64_t total = count_of(o), xn = count_of(x);
    if (total <= 0 || xn <= 0 || xn * (int64_t)(es / 4) > INT32_MAX || total * (int64_t)(es / 4) > INT32_MAX)
        return false;
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (axis < -x->rank || axis >= x->rank)
        return false;
    if (axis < 0)
        axis += x->rank;
    int64_t dim = x->shape[axis];
    for (int d = 0; d < x->rank; d++)
        if (idx->shape[d] > x->shape[d] && d != axis)
            return false;
    if (idx->data)
        for (int64_t i = 0; i < total; i++)
            if (index_value(idx, i) < -dim || index_value(idx, i) >= dim)
                return false;
    *p = (gel_push){ .n = (uint32_t)total, .rank = (uint32_t)x->rank, .axis = (uint32_t)axis,
                     .wpe = (uint32_t)(es / 4), .idx64 = idx->dtype == REEL_DTYPE_INT64, .dim = (uint32_t)dim };
    int64_t st = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        p->shape[d] = (uint32_t)o->shape[d];
        p->x_st[d] = (uint32_t)st;
        st *= x->shape[d];
    }
    return true;
}

static bool gel_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    gel_push p;
    return gel_plan(n, in, out, &p);
}

static int gel_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    gel_push p;
    reel_tensor *tin[2] = { (reel_tensor *)in[0]->t, (reel_tensor *)in[1]->t };
    if (!gel_plan(n, tin, (reel_tensor *[]){ (reel_tensor *)out[0]->t }, &p))
        return REEL_EINVAL;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, "nn_gather_elements", &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("node %s (%s): %s", n->name, n->op, error ? error->message : "nn_gather_elements");
        g_clear_error(&error);
        return code;
    }
    reel_mem *bufs[3] = { in[0]->mem, in[1]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 3, &p, sizeof p, p.n);
}

static const vk_op op_gather_elements = { .name = "GatherElements", .supports = gel_supports, .run = gel_run };

const vk_op *const vk_ops_index[] = {
    &op_gather_elements,
    NULL,
};

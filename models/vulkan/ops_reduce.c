// ReduceSum, ReduceMean and ReduceMax on a Vulkan device: one nn_reduce
// dispatch, a workgroup per output element. Axes, keepdims and
// noop_with_empty_axes as models/cpu/reduce.c reads them (attribute or
// constant input); axes computed at run time, other dtypes and walks over
// more dims than the kernel holds stay on the cpu. Max propagates NaN.
#include <string.h>

#include "models/vulkan/vk_ops.h"

#define R REEL_TENSOR_MAX_RANK
#define VK_RANK 6         // dims the kernel's push constants hold per walk
#define MAX_AXES (R * 2)  // as the cpu reads them
#define MAX_LOCAL 256     // nn_reduce's shared partials

enum { FOLD_SUM, FOLD_MAX }; // nn_reduce's kinds

typedef struct reduce_push {
    uint32_t n_out, n_red, keep_rank, red_rank, kind;
    float scale;
    uint32_t keep_shape[VK_RANK];
    int32_t keep_st[VK_RANK];
    uint32_t red_shape[VK_RANK];
    int32_t red_st[VK_RANK];
} reduce_push;
_Static_assert(sizeof(reduce_push) == 120, "gpu/kernel.c's nn_reduce push size");

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static bool is_f32(const reel_tensor *t)
{
    return t && t->dtype == REEL_DTYPE_FLOAT32 && t->rank >= 0 && t->rank <= R && count_of(t) >= 0 &&
           count_of(t) <= INT32_MAX;
}

// The reduced dims as a mask, as the cpu's axes_from; false for axes the
// host cannot see (computed at run time) or that the cpu would refuse.
// *noop: empty axes with noop_with_empty_axes, the node copies its input.
static bool axes_mask(const reel_ir_node *n, reel_tensor *const *in, int rank, bool *mask, bool *noop)
{
    int na = 0;
    const int64_t *axes = reel_ir_attr_ints(n, "axes", &na);
    const reel_tensor *t = n->n_inputs > 1 ? in[1] : NULL;
    if (t) {
        int64_t cnt = count_of(t);
        if (axes || !t->data || t->dtype != REEL_DTYPE_INT64 || t->rank > 1 || cnt < 0 || cnt > MAX_AXES)
            return false;
        axes = t->data;
        na = (int)cnt;
    }
    *noop = na == 0 && reel_ir_attr_int(n, "noop_with_empty_axes", 0) != 0;
    for (int d = 0; d < rank; d++)
        mask[d] = na == 0 && !*noop;
    for (int i = 0; i < na; i++) {
        if (axes[i] < -rank || axes[i] >= rank)
            return false;
        mask[axes[i] < 0 ? axes[i] + rank : axes[i]] = true;
    }
    return true;
}

// Dims of x picked by `want` (mask[d] == want) with x's element strides,
// size-1 dims dropped and neighbours merged; false beyond VK_RANK dims.
static bool walk_of(const reel_tensor *x, const bool *mask, bool want, uint32_t *shape, int32_t *st, uint32_t *rank)
{
    int64_t xst[R], dim[R], s[R], stride = 1;
    int r = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        xst[d] = stride;
        stride *= x->shape[d];
    }
    for (int d = 0; d < x->rank; d++) {
        if (mask[d] != want || x->shape[d] == 1)
            continue;
        if (r > 0 && s[r - 1] == xst[d] * x->shape[d]) {
            dim[r - 1] *= x->shape[d];
            s[r - 1] = xst[d];
            continue;
        }
        dim[r] = x->shape[d];
        s[r++] = xst[d];
    }
    if (r == 0) {
        dim[r] = 1;
        s[r++] = 0;
    }
    if (r > VK_RANK)
        return false;
    for (int d = 0; d < r; d++) {
        shape[d] = (uint32_t)dim[d];
        st[d] = (int32_t)s[d];
    }
    *rank = (uint32_t)r;
    return true;
}

static bool reduce_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, reduce_push *p)
{
    if (n->n_inputs < 1 || n->n_inputs > 2 || n->n_outputs < 1 || !is_f32(in[0]) || !is_f32(out[0]))
        return false;
    const reel_tensor *x = in[0], *o = out[0];
    bool mask[R], noop, keep = reel_ir_attr_int(n, "keepdims", 1) != 0;
    if (!axes_mask(n, in, x->rank, mask, &noop))
        return false;
    // The output's shape follows from the mask, as the cpu's infer_reduce.
    int64_t want[R], n_red = 1;
    int k = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!mask[d])
            want[k++] = x->shape[d];
        else if (keep)
            want[k++] = 1;
        if (mask[d])
            n_red *= x->shape[d];
    }
    if (o->rank != k || memcmp(want, o->shape, sizeof(int64_t) * (size_t)k) != 0)
        return false;
    bool mean = strcmp(n->op, "ReduceMean") == 0;
    int64_t total = count_of(x), n_out = count_of(o);
    *p = (reduce_push){
        .n_out = (uint32_t)n_out, .n_red = (uint32_t)n_red,
        // A copy is a max over one element: exact, -0 and NaN included.
        .kind = noop || strcmp(n->op, "ReduceMax") == 0 ? FOLD_MAX : FOLD_SUM,
        // The cpu scales by outputs / inputs, and not at all when empty.
        .scale = mean && !noop && total > 0 ? (float)n_out / (float)total : 1.0f,
    };
    return walk_of(x, mask, false, p->keep_shape, p->keep_st, &p->keep_rank) &&
           walk_of(x, mask, true, p->red_shape, p->red_st, &p->red_rank);
}

static bool reduce_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    reduce_push p;
    return reduce_plan(n, in, out, &p);
}

static int reduce_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[2] = { (reel_tensor *)in[0]->t, n->n_inputs > 1 && in[1] ? (reel_tensor *)in[1]->t : NULL };
    reduce_push p;
    if (!reduce_plan(n, tin, (reel_tensor *[]){ (reel_tensor *)out[0]->t }, &p))
        return REEL_EINVAL;
    if (p.n_out == 0)
        return 0;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_reduce"), &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("node %s (%s): %s", n->name, n->op, error ? error->message : "nn_reduce");
        g_clear_error(&error);
        return code;
    }
    // The shader folds partials in halves within MAX_LOCAL slots.
    uint32_t local = reel_kernel_local_size(k);
    if (local > MAX_LOCAL || (local & (local - 1)) != 0)
        return REEL_EINTERNAL;
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &p, sizeof p, (uint64_t)p.n_out * local);
}

static const vk_op op_reduce_sum = { .name = "ReduceSum", .supports = reduce_supports, .run = reduce_run,
                                     .supports_f16 = reduce_supports };
static const vk_op op_reduce_mean = { .name = "ReduceMean", .supports = reduce_supports, .run = reduce_run,
                                     .supports_f16 = reduce_supports };
static const vk_op op_reduce_max = { .name = "ReduceMax", .supports = reduce_supports, .run = reduce_run,
                                     .supports_f16 = reduce_supports };

const vk_op *const vk_ops_reduce[] = { &op_reduce_sum, &op_reduce_mean, &op_reduce_max, NULL };

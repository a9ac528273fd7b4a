// ConvTranspose and BatchNormalization on a Vulkan device: one dispatch of
// gpu/shaders/nn_convtranspose.comp or nn_batchnorm.comp each. ConvTranspose's
// geometry (pads, auto_pad, output_shape, output_padding) is worked out as
// models/cpu/conv.c's convt_geom_init does it, so both backends agree;
// BatchNormalization follows models/cpu/norm.c. What the kernels do not
// cover (other dtypes, a kernel_shape that disagrees with the weights,
// training outputs) supports() sends to the cpu.
#include <string.h>

#include "models/vulkan/vk_ops.h"

#define MAX_ELEMS ((int64_t)INT32_MAX) // the kernels index with int32

typedef struct convt_push {
    int32_t c, m, cg, mg;
    int32_t in[3], out[3], k[3], s[3], d[3], p[3];
    int32_t flags, act;
    float fa, fb;
    int32_t total;
} convt_push;
_Static_assert(sizeof(convt_push) == 108, "gpu/kernel.c's nn_convtranspose push size");

typedef struct bn_push {
    uint32_t total, c, plane;
    float eps;
} bn_push;
_Static_assert(sizeof(bn_push) == 16, "gpu/kernel.c's nn_batchnorm push size");

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static bool f32(const reel_tensor *t)
{
    return t && t->dtype == REEL_DTYPE_FLOAT32 && t->rank >= 0 && count_of(t) >= 0 && count_of(t) <= MAX_ELEMS;
}

static bool is_vector(const reel_tensor *t, int64_t len)
{
    return f32(t) && t->rank == 1 && t->shape[0] == len;
}

// ---- ConvTranspose

// The node's INTS attribute when absent or of length `len`; false otherwise.
static bool ints_of(const reel_ir_node *n, const char *name, int len, const int64_t **v)
{
    int c;
    *v = reel_ir_attr_ints(n, name, &c);
    return !*v || c == len;
}

// Spatial dim i (of sp) into p's 3-dim slot j: kernel, stride, dilation,
// begin pad and output size as the cpu computes them.
static bool convt_dim(const reel_ir_node *n, const reel_tensor *x, const reel_tensor *w, int i, int sp,
                      convt_push *p)
{
    const int64_t *k, *s, *d, *pads, *opad, *os;
    int nos = 0;
    const char *auto_pad = reel_ir_attr_string(n, "auto_pad", "NOTSET");
    if (!ints_of(n, "kernel_shape", sp, &k) || !ints_of(n, "strides", sp, &s) || !ints_of(n, "dilations", sp, &d) ||
        !ints_of(n, "pads", 2 * sp, &pads) || !ints_of(n, "output_padding", sp, &opad))
        return false;
    os = reel_ir_attr_ints(n, "output_shape", &nos);
    if (os && nos != sp && nos != sp + 2)
        return false;
    bool upper = strcmp(auto_pad, "SAME_UPPER") == 0, same = upper || strcmp(auto_pad, "SAME_LOWER") == 0;
    bool valid = strcmp(auto_pad, "VALID") == 0;
    if (!same && !valid && strcmp(auto_pad, "NOTSET") != 0)
        return false;
    int64_t in = x->shape[2 + i], kk = k ? k[i] : w->shape[2 + i], ss = s ? s[i] : 1, dd = d ? d[i] : 1;
    int64_t pb = pads && !valid ? pads[i] : 0, pe = pads && !valid ? pads[sp + i] : 0, op = opad ? opad[i] : 0;
    // The weights must hold the kernel the attribute names.
    if (kk != w->shape[2 + i] || kk < 1 || ss < 1 || dd < 1 || op < 0)
        return false;
    int64_t natural = ss * (in - 1) + op + (kk - 1) * dd + 1, out;
    if (os || same) {
        out = os ? os[nos - sp + i] : in * ss;
        int64_t total = natural - out, half = total >= 0 ? total / 2 : -((-total + 1) / 2);
        pb = upper ? half : total - half;
    } else {
        out = natural - pb - pe;
    }
    int j = 3 - sp + i;
    if (out < 1 || out > MAX_ELEMS || in > MAX_ELEMS || pb < -MAX_ELEMS || pb > MAX_ELEMS || ss > MAX_ELEMS ||
        dd > MAX_ELEMS)
        return false;
    p->in[j] = (int32_t)in;
    p->out[j] = (int32_t)out;
    p->k[j] = (int32_t)kk;
    p->s[j] = (int32_t)ss;
    p->d[j] = (int32_t)dd;
    p->p[j] = (int32_t)pb;
    return true;
}

static bool convt_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, convt_push *p)
{
    if (n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs < 1)
        return false;
    const reel_tensor *x = in[0], *w = in[1], *b = n->n_inputs > 2 ? in[2] : NULL, *o = out[0];
    if (!f32(x) || !f32(w) || !f32(o) || x->rank != w->rank || x->rank < 3 || x->rank > 5 || vk_act_of(n) < 0)
        return false;
    int sp = x->rank - 2;
    int64_t G = reel_ir_attr_int(n, "group", 1), C = x->shape[1], Mg = w->shape[1];
    if (G < 1 || C % G != 0 || w->shape[0] != C || Mg * G > MAX_ELEMS)
        return false;
    *p = (convt_push){ .c = (int32_t)C, .m = (int32_t)(Mg * G), .cg = (int32_t)(C / G), .mg = (int32_t)Mg,
                       .in = { 1, 1, 1 }, .out = { 1, 1, 1 }, .k = { 1, 1, 1 }, .s = { 1, 1, 1 }, .d = { 1, 1, 1 },
                       .flags = b ? 1 : 0, .act = vk_act_of(n), .fa = n->fused_a, .fb = n->fused_b,
                       .total = (int32_t)count_of(o) };
    for (int i = 0; i < sp; i++)
        if (!convt_dim(n, x, w, i, sp, p))
            return false;
    if (b && !is_vector(b, p->m))
        return false;
    if (o->rank != x->rank || o->shape[0] != x->shape[0] || o->shape[1] != p->m)
        return false;
    for (int i = 0; i < sp; i++)
        if (o->shape[2 + i] != p->out[3 - sp + i])
            return false;
    return true;
}

static bool convt_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    convt_push p;
    return convt_plan(n, in, out, &p);
}

// The kernel called name (its float16 form in an fp16 context), made once
// per ctx, dispatched over `total` threads.
static int dispatch(vk_ctx *ctx, const reel_ir_node *n, const char *name, reel_mem *const *bufs, int n_bufs,
                    const void *push, size_t push_size, uint64_t total)
{
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, name), &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("node %s (%s): %s", n->name, n->op, error ? error->message : name);
        g_clear_error(&error);
        return code;
    }
    return vk_ctx_dispatch(ctx, k, bufs, n_bufs, push, push_size, total);
}

static int convt_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    const vk_tensor *b = n->n_inputs > 2 ? in[2] : NULL;
    reel_tensor *tin[3] = { (reel_tensor *)in[0]->t, (reel_tensor *)in[1]->t, b ? (reel_tensor *)b->t : NULL };
    convt_push p;
    if (!convt_plan(n, tin, (reel_tensor *[]){ (reel_tensor *)out[0]->t }, &p))
        return REEL_EINVAL;
    reel_mem *bufs[4] = { in[0]->mem, in[1]->mem, b ? b->mem : ctx->dummy, out[0]->mem };
    return dispatch(ctx, n, "nn_convtranspose", bufs, 4, &p, sizeof p, (uint64_t)p.total);
}

static const vk_op op_convtranspose = { "ConvTranspose", convt_supports, convt_run, convt_supports };

// ---- BatchNormalization

static bool bn_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, bn_push *p)
{
    if (n->n_inputs < 5 || n->n_outputs < 1 || reel_ir_attr_int(n, "training_mode", 0))
        return false;
    for (int i = 1; i < n->n_outputs; i++)
        if (out[i]) // running mean and variance: training only
            return false;
    const reel_tensor *x = in[0], *o = out[0];
    if (!f32(x) || !f32(o) || x->rank < 2 || o->rank != x->rank ||
        memcmp(o->shape, x->shape, sizeof(int64_t) * (size_t)x->rank) != 0)
        return false;
    for (int i = 1; i < 5; i++)
        if (!is_vector(in[i], x->shape[1]))
            return false;
    *p = (bn_push){ .total = (uint32_t)count_of(x), .c = (uint32_t)x->shape[1],
                    .plane = (uint32_t)reel_tensor_count(x->rank - 2, x->shape + 2),
                    .eps = reel_ir_attr_float(n, "epsilon", 1e-5f) };
    return true;
}

static bool bn_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    bn_push p;
    return bn_plan(n, in, out, &p);
}

static int bn_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[5], *tout[8] = { NULL };
    for (int i = 0; i < 5; i++)
        tin[i] = in[i] ? (reel_tensor *)in[i]->t : NULL;
    for (int i = 0; i < n->n_outputs && i < 8; i++)
        tout[i] = out[i] ? (reel_tensor *)out[i]->t : NULL;
    bn_push p;
    if (n->n_outputs > 8 || !bn_plan(n, tin, tout, &p))
        return REEL_EINVAL;
    reel_mem *bufs[6] = { in[0]->mem, in[1]->mem, in[2]->mem, in[3]->mem, in[4]->mem, out[0]->mem };
    return dispatch(ctx, n, "nn_batchnorm", bufs, 6, &p, sizeof p, p.total);
}

static const vk_op op_batchnorm = { "BatchNormalization", bn_supports, bn_run, bn_supports };

const vk_op *const vk_ops_convt[] = { &op_convtranspose, &op_batchnorm, NULL };

// Conv, Gemm, MatMul and the pools on a Vulkan device: one dispatch each of
// gpu/shaders/nn_conv2d.comp (or nn_conv2d_tiled.comp), nn_gemm.comp, nn_pool2d.comp, with the
// geometry worked out here (conv/pool windows by models/cpu/nn.h's
// nn_window_init, so both backends agree on pads, auto_pad and ceil_mode).
// What the kernels do not cover (3-D windows, MaxPool's indices, ranks
// beyond 4, other dtypes) supports() sends to the cpu.
#include "models/cpu/nn.h"
#include "models/vulkan/vk_ops.h"

// The push constants, field for field as in the shaders; every field 4 bytes.
// gpu/kernel.c's table repeats their sizes.
typedef struct conv_push {
    int32_t c, h, w, m, oh, ow, cg, mg;
    int32_t kh, kw, sh, sw, ph, pw, dh, dw;
    int32_t flags, act;
    float fa, fb;
    int32_t total;
} conv_push;
_Static_assert(sizeof(conv_push) == 84, "gpu/kernel.c: nn_conv2d's push size");

typedef struct gemm_push {
    int32_t m, n, k, sam, sak, sbk, sbn, scm, scn, nb1, sa0, sa1, sb0, sb1;
    int32_t flags, act;
    float alpha, beta, fa, fb;
    int32_t total;
} gemm_push;
_Static_assert(sizeof(gemm_push) == 84, "gpu/kernel.c: nn_gemm's push size");

typedef struct pool_push {
    int32_t h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, limh, limw, mode, total;
} pool_push;
_Static_assert(sizeof(pool_push) == 64, "gpu/kernel.c: nn_pool2d's push size");

// The kernels index with 32-bit ints.
#define MAX_ELEMS ((int64_t)INT32_MAX)

// A float32 tensor of 1..MAX_ELEMS elements.
static bool f32(const reel_tensor *t)
{
    if (!t || t->dtype != REEL_DTYPE_FLOAT32)
        return false;
    int64_t c = reel_tensor_count(t->rank, t->shape);
    return c > 0 && c <= MAX_ELEMS;
}

static reel_tensor *input(const reel_ir_node *n, reel_tensor *const *in, int i)
{
    return i < n->n_inputs ? in[i] : NULL;
}

static const vk_tensor *vinput(const reel_ir_node *n, vk_tensor *const *in, int i)
{
    return i < n->n_inputs ? in[i] : NULL;
}

// The kernel called name (its float16 form in an fp16 context), made once
// per ctx; a REEL_E* code when the device refuses it (the message goes to
// the log: run() has no GError).
static int kernel_of(vk_ctx *ctx, const char *name, reel_kernel **k)
{
    GError *error = NULL;
    if ((*k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, name), &error)))
        return 0;
    int code = error && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
    g_warning("%s", error ? error->message : name);
    g_clear_error(&error);
    return code;
}

static int dispatch(vk_ctx *ctx, const char *name, reel_mem *const *buffers, int n_buffers, const void *push,
                    size_t push_size, int64_t total)
{
    reel_kernel *k;
    int r = kernel_of(ctx, name, &k);
    return r ? r : vk_ctx_dispatch(ctx, k, buffers, n_buffers, push, push_size, (uint64_t)total);
}

static bool same_shape(const reel_tensor *a, const reel_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

// nn_gemm: one workgroup of 64 per 8x8 tile of each batch's output.
static int gemm_dispatch(vk_ctx *ctx, reel_mem *const *buffers, const gemm_push *p)
{
    reel_kernel *k;
    int r = kernel_of(ctx, "nn_gemm", &k);
    if (r)
        return r;
    if (reel_kernel_local_size(k) != 64) // the shader's tiles assume it
        return REEL_EINTERNAL;
    int64_t batches = p->total / ((int64_t)p->m * p->n);
    int64_t tiles = batches * ((p->m + 7) / 8) * ((p->n + 7) / 8);
    return vk_ctx_dispatch(ctx, k, buffers, 4, p, sizeof *p, (uint64_t)tiles * 64);
}

// ---- Conv

static bool conv_geom(const reel_ir_node *n, const reel_tensor *x, const reel_tensor *w, nn_window *win)
{
    if (x->rank != w->rank || (x->rank != 3 && x->rank != 4))
        return false;
    return nn_window_init(n, x->rank - 2, x->shape + 2, w->shape + 2, false, win, NULL) == 0;
}

static bool conv_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    const reel_tensor *x = input(n, in, 0), *w = input(n, in, 1), *b = input(n, in, 2), *r = input(n, in, 3);
    nn_window win;
    if (!f32(x) || !f32(w) || !f32(out[0]) || vk_act_of(n) < 0 || n->n_inputs > 4 || !conv_geom(n, x, w, &win))
        return false;
    int64_t G = reel_ir_attr_int(n, "group", 1), M = w->shape[0];
    if (G < 1 || M % G || w->shape[1] * G != x->shape[1])
        return false;
    if (b && (!f32(b) || b->rank != 1 || b->shape[0] != M))
        return false;
    if (r && (!f32(r) || !same_shape(r, out[0])))
        return false;
    int64_t want[4] = { x->shape[0], M, win.out[1], win.out[2] };
    if (out[0]->rank != x->rank)
        return false;
    // 1-D: [N, M, OW] (win.out[1] is 1).
    for (int i = 0; i < out[0]->rank; i++)
        if (out[0]->shape[i] != (x->rank == 3 && i == 2 ? win.out[2] : want[i]))
            return false;
    return true;
}

// The push constants of both conv kernels; false when the geometry fails.
static bool conv_push_of(const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out, conv_push *p)
{
    const vk_tensor *x = in[0], *w = in[1], *b = vinput(n, in, 2), *r = vinput(n, in, 3);
    nn_window win;
    if (!conv_geom(n, x->t, w->t, &win))
        return false;
    int64_t G = reel_ir_attr_int(n, "group", 1), M = w->t->shape[0];
    int64_t total = reel_tensor_count(out[0]->t->rank, out[0]->t->shape);
    *p = (conv_push){
        .c = (int32_t)x->t->shape[1], .h = (int32_t)win.in[1], .w = (int32_t)win.in[2],
        .m = (int32_t)M, .oh = (int32_t)win.out[1], .ow = (int32_t)win.out[2],
        .cg = (int32_t)w->t->shape[1], .mg = (int32_t)(M / G),
        .kh = (int32_t)win.k[1], .kw = (int32_t)win.k[2], .sh = (int32_t)win.s[1], .sw = (int32_t)win.s[2],
        .ph = (int32_t)win.pb[1], .pw = (int32_t)win.pb[2], .dh = (int32_t)win.d[1], .dw = (int32_t)win.d[2],
        .flags = (b ? 1 : 0) | (r ? 2 : 0), .act = vk_act_of(n), .fa = n->fused_a, .fb = n->fused_b,
        .total = (int32_t)total,
    };
    return true;
}

static void conv_buffers(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out,
                         reel_mem **bufs)
{
    const vk_tensor *b = vinput(n, in, 2), *r = vinput(n, in, 3);
    bufs[0] = in[0]->mem;
    bufs[1] = in[1]->mem;
    bufs[2] = b ? b->mem : ctx->dummy;
    bufs[3] = r ? r->mem : ctx->dummy;
    bufs[4] = out[0]->mem;
}

// For a GPU: 64x64 output tiles from 16x16 invocations, 4x4 outputs each;
// slices of 16 products (8.3 KiB of shared memory). Where too few of them
// would cover the output to keep a large GPU's compute units busy (deep
// layers at small resolutions: ResNet-18's last stage has 8), 32x32 tiles
// from as many invocations, 2x2 outputs each: four times the workgroups.
static const vk_conv_tiles conv_tiles_large = { .tm = 64, .tn = 64, .tk = 16, .rm = 4, .rn = 4 };
static const vk_conv_tiles conv_tiles_small = { .tm = 32, .tn = 32, .tk = 16, .rm = 2, .rn = 2 };
#define CONV_MIN_LARGE_TILES 128

// Every device gives a workgroup this much shared memory (Vulkan's minimum
// maxComputeSharedMemorySize).
#define MIN_SHARED_BYTES 16384

// One workgroup per tile of each group's [Mg, N*OH*OW] output.
static int64_t conv_tile_count(const conv_push *p, const vk_conv_tiles *t)
{
    int64_t P = p->total / p->m, G = p->m / p->mg;
    return G * ((p->mg + t->tm - 1) / t->tm) * ((P + t->tn - 1) / t->tn);
}

static int conv_tiled_dispatch(vk_ctx *ctx, const conv_push *p, reel_mem *const *bufs, const vk_conv_tiles *t)
{
    if (!t->tm || !t->tn || !t->tk || !t->rm || !t->rn || t->tm % t->rm || t->tn % t->rn ||
        (uint64_t)t->tk * (t->tm + 1 + t->tn) * sizeof(float) > MIN_SHARED_BYTES)
        return REEL_EINVAL;
    uint64_t threads = (uint64_t)(t->tm / t->rm) * (t->tn / t->rn);
    if (threads > reel_device_info_of(ctx->dev)->max_workgroup_invocations)
        return REEL_EINVAL;
    const uint32_t constants[5] = { t->tm, t->tn, t->tk, t->rm, t->rn };
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel_spec(ctx, vk_ctx_float_kernel(ctx, "nn_conv2d_tiled"), (uint32_t)threads, constants,
                                        5, &error);
    if (!k) {
        int code = error && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("%s", error ? error->message : "nn_conv2d_tiled");
        g_clear_error(&error);
        return code;
    }
    return vk_ctx_dispatch(ctx, k, bufs, 5, p, sizeof *p, (uint64_t)conv_tile_count(p, t) * threads);
}

static const vk_conv_tiles *conv_tiles_for(const conv_push *p)
{
    return conv_tile_count(p, &conv_tiles_large) >= CONV_MIN_LARGE_TILES ? &conv_tiles_large : &conv_tiles_small;
}

// Enough output channels per group, products per output and pixels to fill
// the tiled kernel's tiles.
static bool conv_tiled_wins(const conv_push *p)
{
    int64_t K = (int64_t)p->cg * p->kh * p->kw, P = p->total / p->m;
    return p->mg >= 16 && K >= 16 && P >= 16;
}

// The tiled kernel stages slices of W and of the input windows in shared
// memory so that each value read serves a whole tile row or column of
// outputs; that pays when a group has enough output channels to share each
// input value (Mg), enough products per output to fill the slices (K =
// cg*kh*kw) and enough pixels to fill the tiles. Depthwise convs (cg = 1,
// Mg = 1: K is one window of one channel, nothing to share across channels)
// and small convs would leave most of a 64x64 tile idle: nn_conv2d.comp, one
// output per invocation reading its window straight from memory, does less
// work there.
static int conv_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    conv_push p;
    reel_mem *bufs[5];
    if (!conv_push_of(n, in, out, &p))
        return REEL_EINVAL;
    conv_buffers(ctx, n, in, out, bufs);
    if (conv_tiled_wins(&p))
        return conv_tiled_dispatch(ctx, &p, bufs, conv_tiles_for(&p));
    return dispatch(ctx, "nn_conv2d", bufs, 5, &p, sizeof p, p.total);
}

int vk_conv_run_tiled(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out,
                      const vk_conv_tiles *tiles)
{
    conv_push p;
    reel_mem *bufs[5];
    if (!conv_push_of(n, in, out, &p))
        return REEL_EINVAL;
    conv_buffers(ctx, n, in, out, bufs);
    return conv_tiled_dispatch(ctx, &p, bufs, tiles);
}

static const vk_op op_conv = { "Conv", conv_supports, conv_run, conv_supports };

// ---- Gemm

// C's strides over [M, N]: 0 along a broadcast dim. False when C does not
// broadcast to [M, N].
static bool c_strides(const reel_tensor *c, int64_t M, int64_t N, int32_t *scm, int32_t *scn)
{
    if (c->rank > 2)
        return false;
    int64_t cm = c->rank == 2 ? c->shape[0] : 1, cn = c->rank >= 1 ? c->shape[c->rank - 1] : 1;
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
        return false;
    *scn = cn == 1 ? 0 : 1;
    *scm = cm == 1 ? 0 : (int32_t)cn;
    return true;
}

static bool gemm_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    const reel_tensor *a = input(n, in, 0), *b = input(n, in, 1), *c = input(n, in, 2);
    if (!f32(a) || !f32(b) || !f32(out[0]) || a->rank != 2 || b->rank != 2 || vk_act_of(n) < 0)
        return false;
    bool ta = reel_ir_attr_int(n, "transA", 0), tb = reel_ir_attr_int(n, "transB", 0);
    int64_t M = a->shape[ta ? 1 : 0], K = a->shape[ta ? 0 : 1], N = b->shape[tb ? 0 : 1];
    if (b->shape[tb ? 1 : 0] != K || out[0]->rank != 2 || out[0]->shape[0] != M || out[0]->shape[1] != N)
        return false;
    int32_t scm, scn;
    return !c || (f32(c) && c_strides(c, M, N, &scm, &scn));
}

static int gemm_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    const vk_tensor *a = in[0], *b = in[1], *c = vinput(n, in, 2);
    bool ta = reel_ir_attr_int(n, "transA", 0), tb = reel_ir_attr_int(n, "transB", 0);
    float alpha = reel_ir_attr_float(n, "alpha", 1), beta = reel_ir_attr_float(n, "beta", 1);
    int64_t M = out[0]->t->shape[0], N = out[0]->t->shape[1], K = a->t->shape[ta ? 0 : 1];
    int32_t lda = (int32_t)a->t->shape[1], ldb = (int32_t)b->t->shape[1];
    gemm_push p = {
        .m = (int32_t)M, .n = (int32_t)N, .k = (int32_t)K,
        .sam = ta ? 1 : lda, .sak = ta ? lda : 1, .sbk = tb ? 1 : ldb, .sbn = tb ? ldb : 1,
        .nb1 = 1, .act = vk_act_of(n), .alpha = alpha, .beta = beta, .fa = n->fused_a, .fb = n->fused_b,
        .total = (int32_t)(M * N),
    };
    // As the cpu: beta 0 ignores C.
    if (c && beta != 0) {
        if (!c_strides(c->t, M, N, &p.scm, &p.scn))
            return REEL_EINVAL;
        p.flags = 1;
    }
    reel_mem *bufs[4] = { a->mem, b->mem, p.flags ? c->mem : ctx->dummy, out[0]->mem };
    return gemm_dispatch(ctx, bufs, &p);
}

static const vk_op op_gemm = { "Gemm", gemm_supports, gemm_run, gemm_supports };

// ---- MatMul

// numpy matmul of A [..., M, K] and B [..., K, N] (1-D operands made 2-D)
// with at most two batch dims: the push constants, or false.
static bool matmul_geom(const reel_tensor *a, const reel_tensor *b, gemm_push *p, int64_t *total)
{
    int ar = a->rank, br = b->rank;
    if (ar < 1 || br < 1 || ar > 4 || br > 4)
        return false;
    int64_t M = ar == 1 ? 1 : a->shape[ar - 2], K = a->shape[ar - 1];
    int64_t K2 = br == 1 ? b->shape[0] : b->shape[br - 2], N = br == 1 ? 1 : b->shape[br - 1];
    if (K != K2)
        return false;
    // Batch dims right-aligned into two: [d0, d1], 1 where absent.
    int64_t ab[2] = { 1, 1 }, bb[2] = { 1, 1 };
    for (int i = 0; i < ar - 2; i++)
        ab[2 - (ar - 2) + i] = a->shape[i];
    for (int i = 0; i < br - 2; i++)
        bb[2 - (br - 2) + i] = b->shape[i];
    int64_t batch[2];
    for (int i = 0; i < 2; i++) {
        if (ab[i] != bb[i] && ab[i] != 1 && bb[i] != 1)
            return false;
        batch[i] = ab[i] == 1 ? bb[i] : ab[i];
    }
    *total = batch[0] * batch[1] * M * N;
    if (*total > MAX_ELEMS)
        return false;
    *p = (gemm_push){
        .m = (int32_t)M, .n = (int32_t)N, .k = (int32_t)K, .sam = (int32_t)K, .sak = 1, .sbk = (int32_t)N, .sbn = 1,
        .nb1 = (int32_t)batch[1], .alpha = 1, .total = (int32_t)*total,
        .sa1 = ab[1] == 1 ? 0 : (int32_t)(M * K), .sa0 = ab[0] == 1 ? 0 : (int32_t)(ab[1] * M * K),
        .sb1 = bb[1] == 1 ? 0 : (int32_t)(K * N), .sb0 = bb[0] == 1 ? 0 : (int32_t)(bb[1] * K * N),
    };
    return true;
}

static bool matmul_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    const reel_tensor *a = input(n, in, 0), *b = input(n, in, 1);
    gemm_push p;
    int64_t total;
    return f32(a) && f32(b) && f32(out[0]) && matmul_geom(a, b, &p, &total) &&
        reel_tensor_count(out[0]->rank, out[0]->shape) == total;
}

static int matmul_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    (void)n;
    gemm_push p;
    int64_t total;
    if (!matmul_geom(in[0]->t, in[1]->t, &p, &total))
        return REEL_EINVAL;
    reel_mem *bufs[4] = { in[0]->mem, in[1]->mem, ctx->dummy, out[0]->mem };
    return gemm_dispatch(ctx, bufs, &p);
}

static const vk_op op_matmul = { "MatMul", matmul_supports, matmul_run, matmul_supports };

// ---- Pools

static bool pool_geom(const reel_ir_node *n, const reel_tensor *x, pool_push *p)
{
    bool global = strncmp(n->op, "Global", 6) == 0;
    int64_t planes = x->shape[0] * x->shape[1];
    nn_window w;
    if (global) {
        // One window over the whole plane, flattened into a row.
        int64_t P = reel_tensor_count(x->rank - 2, x->shape + 2);
        w = (nn_window){ .in = { 1, 1, P }, .out = { 1, 1, 1 }, .k = { 1, 1, P }, .s = { 1, 1, 1 },
                         .d = { 1, 1, 1 } };
    } else if (x->rank != 3 && x->rank != 4) {
        return false;
    } else if (nn_window_init(n, x->rank - 2, x->shape + 2, NULL, true, &w, NULL)) {
        return false;
    }
    bool is_max = strcmp(n->op, "MaxPool") == 0 || strcmp(n->op, "GlobalMaxPool") == 0;
    bool include_pad = !global && reel_ir_attr_int(n, "count_include_pad", 0) != 0;
    int64_t total = planes * w.out[1] * w.out[2];
    if (total <= 0 || total > MAX_ELEMS)
        return false;
    *p = (pool_push){
        .h = (int32_t)w.in[1], .w = (int32_t)w.in[2], .oh = (int32_t)w.out[1], .ow = (int32_t)w.out[2],
        .kh = (int32_t)w.k[1], .kw = (int32_t)w.k[2], .sh = (int32_t)w.s[1], .sw = (int32_t)w.s[2],
        .ph = (int32_t)w.pb[1], .pw = (int32_t)w.pb[2], .dh = (int32_t)w.d[1], .dw = (int32_t)w.d[2],
        .limh = (int32_t)(w.in[1] + w.pe[1]), .limw = (int32_t)(w.in[2] + w.pe[2]),
        .mode = is_max ? 0 : include_pad ? 2 : 1, .total = (int32_t)total,
    };
    return true;
}

static bool pool_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    const reel_tensor *x = input(n, in, 0);
    pool_push p;
    // MaxPool's indices output stays on the cpu.
    if (!f32(x) || x->rank < 2 || !f32(out[0]) || (n->n_outputs > 1 && out[1]) || !pool_geom(n, x, &p))
        return false;
    return reel_tensor_count(out[0]->rank, out[0]->shape) == p.total;
}

static int pool_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    pool_push p;
    if (!pool_geom(n, in[0]->t, &p))
        return REEL_EINVAL;
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return dispatch(ctx, "nn_pool2d", bufs, 2, &p, sizeof p, p.total);
}

static const vk_op op_maxpool = { "MaxPool", pool_supports, pool_run, pool_supports };
static const vk_op op_averagepool = { "AveragePool", pool_supports, pool_run, pool_supports };
static const vk_op op_globalaveragepool = { "GlobalAveragePool", pool_supports, pool_run, pool_supports };
static const vk_op op_globalmaxpool = { "GlobalMaxPool", pool_supports, pool_run, pool_supports };

const vk_op *const vk_ops_nn[] = {
    &op_conv, &op_gemm, &op_matmul, &op_maxpool, &op_averagepool, &op_globalaveragepool, &op_globalmaxpool, NULL,
};

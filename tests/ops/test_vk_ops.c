// The Vulkan nn ops (models/vulkan/ops_nn.c: Conv, Gemm, MatMul, pools)
// against the cpu ops on seeded random inputs over many shapes and
// attributes: each node inferred and run by models/cpu/, then run by its
// vk_op on vulkan:0, results compared. Also what supports() must refuse.
// Exit 77 without a Vulkan device; under REEL_VULKAN_VALIDATION=1 any
// validation message fails the test.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

static reel_tensor *random_tensor(reel_dtype dt, int rank, const int64_t *shape, unsigned *seed)
{
    reel_tensor *t = reel_tensor_new(dt, rank, shape);
    assert_non_null(t);
    if (dt == REEL_DTYPE_FLOAT32) {
        float *d = t->data;
        for (size_t i = 0; i < t->nbytes / 4; i++)
            d[i] = (float)rand_r(seed) / RAND_MAX * 2 - 1;
    }
    return t;
}

// Each element of got within 1e-6 (relative; absolute below 1) of the
// first tiling's.
static void agree(const reel_tensor *got, const reel_tensor *first, const char *what)
{
    const float *a = got->data, *b = first->data;
    for (size_t i = 0; i < first->nbytes / 4; i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-6f * MAX(1.0f, fabsf(b[i]))))
            fail_msg("%s: element %zu is %g on vulkan, %g with the first tiling", what, i, a[i], b[i]);
}

// Infers and runs the node on the cpu, runs it with its vk_op and compares
// within 1e-4 relative (1e-4 absolute below 1); for a Conv also with each of
// the n_tilings tilings of its tiled kernel, whose results must moreover
// agree with each other within 1e-6. Takes the inputs (NULL: omitted).
static void check_tilings(const vkt_call *c, int n_in, reel_tensor **in, const char *what, const vk_conv_tiles *tilings,
                          int n_tilings)
{
    vkt_call call = *c;
    call.tol = 1e-4f;
    vkt_case k;
    vkt_case_init(&k, &call, n_in, in, what);
    if (!vkt_case_supported(&k))
        fail_msg("%s: the vk op does not support it", what);
    vkt_case_run_cpu(&k);
    vkt_case_run_device(&k, NULL);
    vkt_case_compare(&k);
    reel_tensor *first = NULL;
    for (int ti = 0; ti < n_tilings; ti++) {
        const vk_conv_tiles *t = &tilings[ti];
        char with[96];
        snprintf(with, sizeof with, "%s tiled %ux%ux%u by %ux%u", what, t->tm, t->tn, t->tk, t->rm, t->rn);
        k.what = with;
        vkt_case_run_device(&k, t);
        vkt_case_compare(&k);
        // Every tiling sums each output's products in the same order.
        if (ti == 0)
            first = reel_tensor_dup(k.got[0]);
        else
            agree(k.got[0], first, with);
    }
    reel_tensor_free(&first);
    vkt_case_clear(&k);
}

static void check(const vkt_call *c, int n_in, reel_tensor **in, const char *what)
{
    check_tilings(c, n_in, in, what, NULL, 0);
}

// ---- Conv

typedef struct conv_case {
    int64_t n, c, h, w, m, g, kh, kw;
    int64_t s[2], d[2], p[4]; // 0 strides/dilations: absent; pads t l b r
    const char *auto_pad;
    bool one_d;               // [N, C, W] with kw, s[1], d[1], pads l r
    bool bias, res;
    const char *act;
    float fa, fb;
} conv_case;

static void conv_random(void **state)
{
    (void)state;
    static const conv_case cases[] = {
        { 1, 3, 8, 8, 4, 1, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true },
        { 2, 4, 7, 9, 6, 2, 3, 3, .s = { 2, 2 }, .p = { 0, 1, 2, 1 }, .bias = true, .act = "Relu" },
        { 1, 8, 10, 10, 8, 8, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true, .act = "Clip", .fa = 0, .fb = 0.3f },
        { 2, 4, 11, 9, 8, 4, 5, 5, .s = { 2, 2 }, .p = { 2, 2, 2, 2 }, .act = "HardSwish" },
        { 1, 3, 12, 11, 5, 1, 3, 3, .d = { 2, 2 }, .p = { 2, 2, 2, 2 }, .res = true, .act = "SiLU" },
        { 2, 16, 5, 5, 8, 1, 1, 1, .bias = true, .res = true, .act = "HardSwish" },
        { 1, 6, 9, 7, 6, 3, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true, .res = true, .act = "HardSigmoid", .fa = 0.2f, .fb = 0.5f },
        { 1, 5, 6, 6, 7, 1, 2, 2, .s = { 2, 1 }, .bias = true, .act = "Sigmoid" },
        { 1, 4, 6, 6, 4, 1, 3, 3, .act = "HardSwish", .fa = 0.25f, .fb = 0.4f },
        { 1, 4, 1, 20, 6, 1, 1, 3, .s = { 1, 2 }, .p = { 0, 1, 0, 1 }, .one_d = true, .bias = true },
        { 2, 6, 1, 17, 6, 6, 1, 5, .d = { 1, 2 }, .p = { 0, 4, 0, 4 }, .one_d = true, .act = "Relu" },
        { 1, 3, 9, 10, 4, 1, 4, 4, .s = { 2, 2 }, .auto_pad = "SAME_UPPER", .bias = true },
        { 1, 3, 9, 10, 4, 1, 4, 3, .s = { 2, 3 }, .auto_pad = "SAME_LOWER", .res = true },
        { 1, 3, 9, 10, 4, 1, 3, 3, .auto_pad = "VALID", .p = { 1, 1, 1, 1 } },
        { 1, 2, 8, 13, 3, 1, 1, 5, .d = { 1, 3 }, .p = { 0, 3, 0, 2 }, .bias = true },
        { 1, 2, 13, 8, 3, 1, 5, 1, .s = { 3, 1 }, .p = { 2, 0, 1, 0 } },
        { 1, 32, 28, 28, 64, 1, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true, .act = "Relu" },
        { 1, 32, 14, 14, 32, 32, 3, 3, .s = { 2, 2 }, .p = { 0, 0, 1, 1 }, .bias = true, .act = "Clip", .fa = 0, .fb = 6 },
        { 4, 8, 3, 3, 16, 2, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true, .res = true, .act = "Relu" },
        // Shapes Conv runs tiled (16+ channels per group, 16+ products and pixels), mostly not tile multiples.
        { 1, 3, 17, 19, 20, 1, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true },
        { 2, 16, 9, 11, 33, 1, 3, 3, .s = { 2, 2 }, .p = { 0, 1, 2, 1 }, .bias = true, .act = "Relu" },
        { 1, 36, 10, 10, 34, 2, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true, .res = true, .act = "Clip", .fa = -0.2f,
          .fb = 0.7f },
        { 1, 48, 7, 7, 48, 3, 1, 1, .bias = true, .act = "Sigmoid" },
        { 1, 8, 15, 15, 24, 1, 3, 3, .d = { 2, 3 }, .p = { 2, 3, 1, 2 }, .res = true, .act = "SiLU" },
        { 1, 16, 1, 40, 24, 1, 1, 5, .s = { 1, 2 }, .p = { 0, 2, 0, 1 }, .one_d = true, .bias = true,
          .act = "HardSigmoid", .fa = 0.3f, .fb = 0.4f },
        { 1, 3, 32, 32, 64, 1, 7, 7, .s = { 2, 2 }, .p = { 3, 3, 3, 3 }, .bias = true, .act = "Relu" },
        { 1, 24, 12, 12, 96, 1, 1, 1, .bias = true, .act = "HardSwish" },
        { 3, 8, 5, 5, 17, 1, 3, 3, .p = { 1, 1, 1, 1 }, .res = true },
        { 1, 64, 6, 6, 70, 1, 3, 3, .p = { 1, 1, 1, 1 }, .bias = true, .res = true, .act = "Relu" },
        { 1, 17, 13, 11, 19, 1, 4, 4, .s = { 2, 2 }, .auto_pad = "SAME_UPPER", .bias = true, .act = "HardSwish" },
        { 2, 40, 6, 5, 40, 4, 3, 2, .s = { 1, 2 }, .d = { 2, 1 }, .p = { 2, 0, 1, 1 }, .res = true, .act = "SiLU" },
        { 1, 18, 5, 5, 18, 1, 3, 3, .p = { 0, 0, 2, 2 }, .bias = true, .act = "HardSwish", .fa = 0.25f, .fb = 0.4f },
    };
    // Conv's two tilings, then small and uneven ones that put tile, slice
    // and load edges everywhere (odd TM, TN, TK; slices whose loads do not
    // divide among the invocations).
    static const vk_conv_tiles tilings[] = {
        { 64, 64, 16, 4, 4 }, { 32, 32, 16, 2, 2 }, { 8, 8, 4, 2, 2 }, { 12, 20, 5, 3, 5 }, { 32, 16, 8, 4, 2 },
        { 64, 32, 8, 4, 2 }, { 4, 4, 3, 1, 1 },
    };
    for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
        const conv_case *k = &cases[ci];
        unsigned seed = 1000 + (unsigned)ci;
        int sp = k->one_d ? 1 : 2, rank = sp + 2;
        int64_t xs[4] = { k->n, k->c, k->h, k->w }, ws[4] = { k->m, k->c / k->g, k->kh, k->kw };
        if (k->one_d)
            xs[2] = k->w, ws[2] = k->kw;
        vkt_call c = { .op = "Conv", .fused = k->act, .fused_a = k->fa, .fused_b = k->fb };
        int64_t kern[2] = { k->kh, k->kw }, pads[4] = { k->p[0], k->p[1], k->p[2], k->p[3] };
        int64_t pads1[2] = { k->p[1], k->p[3] };
        vkt_attr_ints(&c, "kernel_shape", sp, kern + 2 - sp);
        if (k->s[0])
            vkt_attr_ints(&c, "strides", sp, k->s + 2 - sp);
        if (k->d[0])
            vkt_attr_ints(&c, "dilations", sp, k->d + 2 - sp);
        if (k->auto_pad)
            vkt_attr_string(&c, "auto_pad", k->auto_pad);
        else
            vkt_attr_ints(&c, "pads", 2 * sp, k->one_d ? pads1 : pads);
        if (k->g > 1)
            vkt_attr_int(&c, "group", k->g);
        reel_tensor *in[4] = { random_tensor(REEL_DTYPE_FLOAT32, rank, xs, &seed),
                               random_tensor(REEL_DTYPE_FLOAT32, rank, ws, &seed) };
        if (k->bias)
            in[2] = random_tensor(REEL_DTYPE_FLOAT32, 1, &k->m, &seed);
        int n_in = k->bias ? 3 : 2;
        if (k->res) {
            // The output's shape, from the cpu op's inference.
            reel_ir_graph *g = reel_ir_graph_new();
            int iv[3] = { -1, -1, -1 }, ov = reel_ir_add_value(g, "y");
            for (int i = 0; i < n_in; i++) {
                char name[3] = { 'x', (char)('0' + i) };
                iv[i] = reel_ir_add_value(g, name);
                reel_ir_value *v = reel_ir_value_at(g, iv[i]);
                v->dtype = REEL_DTYPE_FLOAT32;
                v->rank = in[i]->rank;
                memcpy(v->dims, in[i]->shape, sizeof v->dims);
            }
            reel_ir_node n = vkt_node_of(&c, iv, n_in, &ov, 1);
            assert_int_equal(reel_op_find("Conv")->infer(g, &n, NULL), 0);
            reel_ir_value *y = reel_ir_value_at(g, ov);
            in[3] = random_tensor(REEL_DTYPE_FLOAT32, y->rank, y->dims, &seed);
            reel_ir_graph_free(&g);
            n_in = 4;
        }
        char what[32];
        snprintf(what, sizeof what, "conv case %zu", ci);
        check_tilings(&c, n_in, in, what, tilings, G_N_ELEMENTS(tilings));
    }
}

// A Conv's x and w (random) and y in device memory, for runs by hand.
typedef struct conv_operands {
    reel_tensor *t[3]; // x, w, y
    vk_tensor v[3];
    vk_tensor *in[2], *out[1];
} conv_operands;

static void operands_init(conv_operands *o, const int64_t *xs, const int64_t *ws, const int64_t *ys, unsigned seed)
{
    o->t[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, xs, &seed);
    o->t[1] = random_tensor(REEL_DTYPE_FLOAT32, 4, ws, &seed);
    o->t[2] = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, ys);
    for (int i = 0; i < 3; i++)
        o->v[i] = (vk_tensor){ vkt_upload(o->t[i]), o->t[i] };
    o->in[0] = &o->v[0];
    o->in[1] = &o->v[1];
    o->out[0] = &o->v[2];
}

static void operands_clear(conv_operands *o)
{
    for (int i = 0; i < 3; i++) {
        reel_mem_unref(&o->v[i].mem);
        reel_tensor_free(&o->t[i]);
    }
}

// Specialization constants: kernels with different constants are distinct
// cached kernels, the same constants the same one; more constants than a
// kernel takes, or tiles the tiled kernel cannot run, are refused.
static void conv_spec_constants(void **state)
{
    (void)state;
    const uint32_t a[5] = { 64, 64, 16, 4, 4 }, b[5] = { 8, 8, 4, 2, 2 };
    GError *error = NULL;
    reel_kernel *ka = vk_ctx_kernel_spec(&vkt_ctx, "nn_conv2d_tiled", 256, a, 5, &error);
    reel_kernel *kb = vk_ctx_kernel_spec(&vkt_ctx, "nn_conv2d_tiled", 16, b, 5, &error);
    assert_non_null(ka);
    assert_non_null(kb);
    assert_ptr_not_equal(ka, kb);
    assert_ptr_equal(vk_ctx_kernel_spec(&vkt_ctx, "nn_conv2d_tiled", 256, a, 5, &error), ka);
    assert_int_equal(reel_kernel_local_size(kb), 16);
    // Distinct from the plain kernel of that name.
    assert_ptr_not_equal(vk_ctx_kernel(&vkt_ctx, "nn_conv2d_tiled", &error), ka);

    const uint32_t six[6] = { 1, 2, 3, 4, 5, 6 };
    assert_null(reel_kernel_create(vkt_dev, reel_kernel_params(.name = "nn_conv2d_tiled", .constants = six,
                                                               .n_constants = 6), &error));
    assert_int_equal(error->code, REEL_EINVAL);
    g_clear_error(&error);
    assert_null(reel_kernel_create(vkt_dev, reel_kernel_params(.name = "nn_conv2d", .constants = six, .n_constants = 1),
                                   &error));
    assert_int_equal(error->code, REEL_EINVAL);
    g_clear_error(&error);

    // A 1x1 conv whose tiled runs are refused before any dispatch.
    static const int64_t xs[4] = { 1, 4, 3, 3 }, ws[4] = { 4, 4, 1, 1 }, k1[2] = { 1, 1 };
    vkt_call c = { .op = "Conv" };
    vkt_attr_ints(&c, "kernel_shape", 2, k1);
    conv_operands o;
    operands_init(&o, xs, ws, xs, 77);
    int inputs[2] = { 0, 1 }, output = 2;
    reel_ir_node n = vkt_node_of(&c, inputs, 2, &output, 1);
    static const vk_conv_tiles bad[] = {
        { 8, 8, 4, 3, 2 },      // TM not a multiple of RM
        { 8, 9, 4, 2, 2 },      // TN not a multiple of RN
        { 0, 8, 4, 2, 2 },
        { 64, 64, 2, 1, 2 },    // 2048 invocations
        { 64, 64, 40, 4, 4 },   // 20 KiB of shared memory
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
        assert_int_equal(vk_conv_run_tiled(&vkt_ctx, &n, o.in, o.out, &bad[i]), REEL_EINVAL);
    operands_clear(&o);
}

// Conv's choice of kernel: depthwise and small convs direct, larger ones
// tiled, in 64x64 tiles where there are enough of them, else 32x32.
static void conv_kernel_choice(void **state)
{
    (void)state;
    static const struct { int64_t c, hw, m, g, k; const char *kernel; } cases[] = {
        { 32, 12, 32, 32, 3, "nn_conv2d" }, // depthwise
        { 4, 6, 8, 1, 1, "nn_conv2d" },     // 8 channels, 4 products per output
        { 32, 12, 32, 4, 3, "nn_conv2d" },  // 8 channels per group
        { 16, 12, 24, 1, 1, "nn_conv2d_tiled/256/32,32,16,2,2" },
        { 3, 12, 16, 1, 3, "nn_conv2d_tiled/256/32,32,16,2,2" },
        { 16, 91, 64, 1, 1, "nn_conv2d_tiled/256/64,64,16,4,4" }, // 130 tiles of 64x64
    };
    for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
        vk_ctx fresh;
        GError *error = NULL;
        assert_int_equal(vk_ctx_init(&fresh, vkt_dev, &error), 0);
        int64_t xs[4] = { 1, cases[ci].c, cases[ci].hw, cases[ci].hw };
        int64_t ws[4] = { cases[ci].m, cases[ci].c / cases[ci].g, cases[ci].k, cases[ci].k };
        int64_t ys[4] = { 1, cases[ci].m, cases[ci].hw - cases[ci].k + 1, cases[ci].hw - cases[ci].k + 1 };
        int64_t kern[2] = { cases[ci].k, cases[ci].k };
        vkt_call c = { .op = "Conv" };
        vkt_attr_ints(&c, "kernel_shape", 2, kern);
        vkt_attr_int(&c, "group", cases[ci].g);
        conv_operands o;
        operands_init(&o, xs, ws, ys, 6000 + (unsigned)ci);
        int inputs[2] = { 0, 1 }, output = 2;
        reel_ir_node n = vkt_node_of(&c, inputs, 2, &output, 1);
        assert_true(vk_op_find("Conv")->supports(&n, o.t, o.t + 2));
        assert_int_equal(vk_op_find("Conv")->run(&fresh, &n, o.in, o.out), 0);
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, fresh.kernels);
        while (g_hash_table_iter_next(&it, &key, NULL))
            if (strcmp(key, cases[ci].kernel) != 0)
                fail_msg("conv choice %zu: ran %s, not %s", ci, (const char *)key, cases[ci].kernel);
        assert_int_equal(g_hash_table_size(fresh.kernels), 1);
        reel_device_wait(vkt_dev, 0);
        operands_clear(&o);
        vk_ctx_clear(&fresh);
    }
}

// ---- Gemm

typedef struct gemm_case {
    int64_t m, k, n;
    bool ta, tb;
    float alpha, beta;        // 0: absent (1)
    int crank;                // -1: no C
    int64_t cshape[2];
    const char *act;
} gemm_case;

static void gemm_random(void **state)
{
    (void)state;
    static const gemm_case cases[] = {
        { 5, 7, 3, .crank = -1 },
        { 13, 17, 9, false, false, 0.5f, 2, 2, { 13, 9 }, NULL },
        { 13, 17, 9, true, false, 1.5f, 0, 2, { 13, 9 }, NULL },
        { 13, 17, 9, false, true, 0, 0.25f, 1, { 9 }, NULL },
        { 13, 17, 9, true, true, 0, 0, 0, { 0 }, NULL },
        { 11, 4, 6, false, false, 0, 0, 2, { 11, 1 }, NULL },
        { 11, 4, 6, false, true, 0, 0, 2, { 1, 6 }, NULL },
        { 11, 4, 6, true, false, 0, 0, 2, { 1, 1 }, NULL },
        { 11, 4, 6, false, false, 0, 0, 1, { 1 }, NULL },
        { 1, 64, 10, false, true, 0, 0, 1, { 10 }, "Relu" },
        { 1, 64, 10, false, true, 0, 0, 2, { 1, 10 }, NULL },
        { 3, 5, 7, false, false, 1, 1e-30f, 2, { 3, 7 }, "Sigmoid" },
        { 64, 128, 96, false, true, 0, 0, 1, { 96 }, NULL },
        { 33, 65, 17, true, true, 0.75f, -1, 2, { 33, 17 }, "Clip" },
        // Over 65535 tiles: the dispatch spreads into y.
        { 2056, 9, 2048, false, false, 0, 0, 1, { 2048 }, NULL },
    };
    for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
        const gemm_case *k = &cases[ci];
        unsigned seed = 2000 + (unsigned)ci;
        vkt_call c = { .op = "Gemm", .fused = k->act, .fused_a = -0.5f, .fused_b = 0.5f };
        if (k->ta)
            vkt_attr_int(&c, "transA", 1);
        if (k->tb)
            vkt_attr_int(&c, "transB", 1);
        if (k->alpha)
            vkt_attr_float(&c, "alpha", k->alpha);
        if (k->beta)
            vkt_attr_float(&c, "beta", k->beta);
        int64_t as[2] = { k->ta ? k->k : k->m, k->ta ? k->m : k->k }, bs[2] = { k->tb ? k->n : k->k, k->tb ? k->k : k->n };
        reel_tensor *in[3] = { random_tensor(REEL_DTYPE_FLOAT32, 2, as, &seed),
                               random_tensor(REEL_DTYPE_FLOAT32, 2, bs, &seed) };
        if (k->crank >= 0)
            in[2] = random_tensor(REEL_DTYPE_FLOAT32, k->crank, k->cshape, &seed);
        char what[32];
        snprintf(what, sizeof what, "gemm case %zu", ci);
        check(&c, k->crank >= 0 ? 3 : 2, in, what);
    }
}

// ---- MatMul

static void matmul_random(void **state)
{
    (void)state;
    static const struct { int ar; int64_t a[4]; int br; int64_t b[4]; } cases[] = {
        { 2, { 5, 7 }, 2, { 7, 3 } },
        { 1, { 7 }, 2, { 7, 3 } },
        { 2, { 5, 7 }, 1, { 7 } },
        { 1, { 9 }, 1, { 9 } },
        { 4, { 2, 3, 4, 5 }, 4, { 2, 3, 5, 6 } },
        { 3, { 3, 4, 5 }, 2, { 5, 6 } },
        { 2, { 4, 5 }, 4, { 2, 3, 5, 6 } },
        { 4, { 2, 1, 4, 5 }, 3, { 3, 5, 6 } },
        { 4, { 1, 3, 4, 5 }, 4, { 2, 1, 5, 6 } },
        { 3, { 4, 1, 8 }, 3, { 4, 8, 16 } },
        { 3, { 2, 49, 64 }, 1, { 64 } },
        { 1, { 64 }, 3, { 2, 64, 30 } },
        { 3, { 8, 64, 32 }, 3, { 8, 32, 64 } },
    };
    for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
        unsigned seed = 3000 + (unsigned)ci;
        vkt_call c = { .op = "MatMul" };
        reel_tensor *in[2] = { random_tensor(REEL_DTYPE_FLOAT32, cases[ci].ar, cases[ci].a, &seed),
                               random_tensor(REEL_DTYPE_FLOAT32, cases[ci].br, cases[ci].b, &seed) };
        char what[32];
        snprintf(what, sizeof what, "matmul case %zu", ci);
        check(&c, 2, in, what);
    }
}

// ---- Pools

typedef struct pool_case {
    const char *op;
    int64_t n, c, h, w;
    bool one_d;
    int64_t k[2], s[2], d[2], p[4]; // 0 strides/dilations: absent
    bool ceil, include_pad;
    const char *auto_pad;
    int opset;
} pool_case;

static void pool_random(void **state)
{
    (void)state;
    static const pool_case cases[] = {
        { "MaxPool", 1, 3, 9, 9, .k = { 3, 3 }, .s = { 2, 2 }, .p = { 1, 1, 1, 1 } },
        { "MaxPool", 2, 2, 10, 10, .k = { 3, 3 }, .s = { 2, 2 }, .ceil = true },
        { "MaxPool", 1, 4, 8, 8, .k = { 2, 2 }, .s = { 2, 2 } },
        { "MaxPool", 1, 2, 11, 12, .k = { 3, 2 }, .s = { 1, 2 }, .d = { 2, 2 }, .p = { 2, 1, 0, 1 } },
        { "MaxPool", 1, 3, 1, 15, .one_d = true, .k = { 1, 3 }, .s = { 1, 2 }, .p = { 0, 1, 0, 1 } },
        { "MaxPool", 1, 3, 7, 9, .k = { 3, 3 }, .s = { 2, 2 }, .auto_pad = "SAME_UPPER" },
        { "MaxPool", 1, 3, 7, 9, .k = { 2, 4 }, .s = { 2, 3 }, .auto_pad = "SAME_LOWER", .ceil = true },
        { "MaxPool", 1, 16, 13, 13, .k = { 5, 5 }, .p = { 2, 2, 2, 2 } },
        // Over 65535 groups of 64: the dispatch spreads into y.
        { "MaxPool", 1, 5, 1000, 900, .k = { 1, 1 } },
        { "AveragePool", 1, 3, 9, 9, .k = { 3, 3 }, .s = { 2, 2 }, .p = { 1, 1, 1, 1 } },
        { "AveragePool", 1, 3, 9, 9, .k = { 3, 3 }, .s = { 2, 2 }, .p = { 1, 1, 1, 1 }, .include_pad = true },
        { "AveragePool", 2, 2, 10, 11, .k = { 3, 3 }, .s = { 2, 2 }, .p = { 1, 0, 1, 0 }, .ceil = true, .include_pad = true },
        { "AveragePool", 2, 2, 10, 11, .k = { 3, 2 }, .s = { 2, 2 }, .ceil = true },
        { "AveragePool", 1, 3, 1, 16, .one_d = true, .k = { 1, 4 }, .s = { 1, 3 }, .p = { 0, 2, 0, 1 }, .include_pad = true },
        { "AveragePool", 1, 2, 12, 12, .k = { 3, 3 }, .d = { 2, 2 }, .p = { 1, 1, 2, 2 }, .opset = 19 },
        { "AveragePool", 1, 2, 8, 8, .k = { 2, 2 }, .s = { 2, 2 }, .auto_pad = "SAME_UPPER", .include_pad = true },
        { "GlobalAveragePool", 2, 8, 7, 7, .one_d = false },
        { "GlobalAveragePool", 1, 3, 56, 56, .one_d = false },
        { "GlobalAveragePool", 2, 5, 1, 30, .one_d = true },
        { "GlobalMaxPool", 2, 5, 6, 4, .one_d = false },
        { "GlobalMaxPool", 1, 7, 1, 9, .one_d = true },
    };
    for (size_t ci = 0; ci < G_N_ELEMENTS(cases); ci++) {
        const pool_case *k = &cases[ci];
        unsigned seed = 4000 + (unsigned)ci;
        int sp = k->one_d ? 1 : 2, rank = sp + 2;
        int64_t xs[4] = { k->n, k->c, k->h, k->w };
        if (k->one_d)
            xs[2] = k->w;
        vkt_call c = { .op = k->op, .opset = k->opset };
        int64_t pads1[2] = { k->p[1], k->p[3] };
        if (k->k[0]) {
            vkt_attr_ints(&c, "kernel_shape", sp, k->k + 2 - sp);
            if (k->s[0])
                vkt_attr_ints(&c, "strides", sp, k->s + 2 - sp);
            if (k->d[0])
                vkt_attr_ints(&c, "dilations", sp, k->d + 2 - sp);
            if (k->auto_pad)
                vkt_attr_string(&c, "auto_pad", k->auto_pad);
            else
                vkt_attr_ints(&c, "pads", 2 * sp, k->one_d ? pads1 : k->p);
            if (k->ceil)
                vkt_attr_int(&c, "ceil_mode", 1);
            if (k->include_pad)
                vkt_attr_int(&c, "count_include_pad", 1);
        }
        reel_tensor *in[1] = { random_tensor(REEL_DTYPE_FLOAT32, rank, xs, &seed) };
        char what[32];
        snprintf(what, sizeof what, "pool case %zu (%s)", ci, k->op);
        check(&c, 1, in, what);
    }
}

// ---- What stays on the cpu

static bool supports(const vkt_call *c, int n_in, reel_tensor **in, int n_out, reel_tensor **out)
{
    int inputs[4] = { 0, 1, 2, 3 }, outputs[2] = { 4, 5 };
    reel_ir_node n = vkt_node_of(c, inputs, n_in, outputs, n_out);
    bool r = vk_op_find(c->op)->supports(&n, in, out);
    for (int i = 0; i < n_in; i++)
        reel_tensor_free(&in[i]);
    for (int i = 0; i < n_out; i++)
        reel_tensor_free(&out[i]);
    return r;
}

static void unsupported(void **state)
{
    (void)state;
    unsigned seed = 5;
    static const int64_t x5[5] = { 1, 2, 4, 4, 4 }, w5[5] = { 3, 2, 3, 3, 3 }, y5[5] = { 1, 3, 2, 2, 2 };
    static const int64_t k3[3] = { 3, 3, 3 }, k2[2] = { 2, 2 }, s2[2] = { 2, 2 };
    static const int64_t x4[4] = { 1, 2, 4, 4 }, w4[4] = { 3, 2, 3, 3 }, y4[4] = { 1, 3, 2, 2 }, p4[4] = { 1, 2, 2, 2 };
    vkt_call c = { .op = "Conv" };
    vkt_attr_ints(&c, "kernel_shape", 3, k3);
    // 3-D conv.
    reel_tensor *in[3] = { random_tensor(REEL_DTYPE_FLOAT32, 5, x5, &seed), random_tensor(REEL_DTYPE_FLOAT32, 5, w5, &seed) };
    reel_tensor *out[2] = { random_tensor(REEL_DTYPE_FLOAT32, 5, y5, &seed) };
    assert_false(supports(&c, 2, in, 1, out));
    // float16 input.
    vkt_call c2 = { .op = "Conv" };
    in[0] = random_tensor(REEL_DTYPE_FLOAT16, 4, x4, &seed);
    in[1] = random_tensor(REEL_DTYPE_FLOAT32, 4, w4, &seed);
    out[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, y4, &seed);
    assert_false(supports(&c2, 2, in, 1, out));
    // An activation the kernels do not know.
    vkt_call c3 = { .op = "Conv", .fused = "Tanh" };
    in[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, x4, &seed);
    in[1] = random_tensor(REEL_DTYPE_FLOAT32, 4, w4, &seed);
    out[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, y4, &seed);
    assert_false(supports(&c3, 2, in, 1, out));
    // The same conv without it is supported.
    in[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, x4, &seed);
    in[1] = random_tensor(REEL_DTYPE_FLOAT32, 4, w4, &seed);
    out[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, y4, &seed);
    assert_true(supports(&c2, 2, in, 1, out));
    // MaxPool with its indices output.
    vkt_call m = { .op = "MaxPool" };
    vkt_attr_ints(&m, "kernel_shape", 2, k2);
    vkt_attr_ints(&m, "strides", 2, s2);
    in[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, x4, &seed);
    out[0] = random_tensor(REEL_DTYPE_FLOAT32, 4, p4, &seed);
    out[1] = random_tensor(REEL_DTYPE_INT64, 4, p4, &seed);
    assert_false(supports(&m, 1, in, 2, out));
    // 3-D MaxPool.
    vkt_call m3 = { .op = "MaxPool" };
    vkt_attr_ints(&m3, "kernel_shape", 3, k3);
    in[0] = random_tensor(REEL_DTYPE_FLOAT32, 5, x5, &seed);
    out[0] = random_tensor(REEL_DTYPE_FLOAT32, 5, y5, &seed);
    assert_false(supports(&m3, 1, in, 1, out));
    // MatMul beyond rank 4.
    static const int64_t a5[5] = { 2, 1, 2, 3, 4 }, b2[2] = { 4, 5 }, o5[5] = { 2, 1, 2, 3, 5 };
    vkt_call mm = { .op = "MatMul" };
    in[0] = random_tensor(REEL_DTYPE_FLOAT32, 5, a5, &seed);
    in[1] = random_tensor(REEL_DTYPE_FLOAT32, 2, b2, &seed);
    out[0] = random_tensor(REEL_DTYPE_FLOAT32, 5, o5, &seed);
    assert_false(supports(&mm, 2, in, 1, out));
    // Gemm with a C that does not broadcast.
    static const int64_t ga[2] = { 3, 4 }, gb[2] = { 4, 5 }, gc[2] = { 2, 5 }, gy[2] = { 3, 5 };
    vkt_call gm = { .op = "Gemm" };
    in[0] = random_tensor(REEL_DTYPE_FLOAT32, 2, ga, &seed);
    in[1] = random_tensor(REEL_DTYPE_FLOAT32, 2, gb, &seed);
    in[2] = random_tensor(REEL_DTYPE_FLOAT32, 2, gc, &seed);
    out[0] = random_tensor(REEL_DTYPE_FLOAT32, 2, gy, &seed);
    assert_false(supports(&gm, 3, in, 1, out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_random),
        cmocka_unit_test(conv_spec_constants),
        cmocka_unit_test(conv_kernel_choice),
        cmocka_unit_test(gemm_random),
        cmocka_unit_test(matmul_random),
        cmocka_unit_test(pool_random),
        cmocka_unit_test(unsupported),
    };
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 13, false);
}

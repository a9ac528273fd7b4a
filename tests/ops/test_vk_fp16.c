// precision=fp16 on Vulkan: float32 tensors stored as float16 on the device.
//
// Ops: each Vulkan op in an fp16 context (vk_ctx.f16) against the cpu op
// run on the same inputs rounded to float16. Ops that move or select values
// (copies, Gather, Where, Pad, MaxPool, nearest Resize, Cast, comparisons,
// constants) must give the cpu's result rounded to float16 bit for bit, so a
// wrong element size shows; ops that compute within 2e-3 of each value (the
// output's rounding, 2^-11, plus sums in a different order). Odd element
// counts put two halves in one word at every edge.
//
// Sessions: BlazeFace against the cpu runtime in float32 within 3.5e-3 of
// the largest output magnitude (the README's figure), every node on the
// device, the device arena half of fp32's, a node on the cpu (converted
// where it crosses, half the bytes), an input bound in device memory
// (converted on the device, nothing crossing), strict placement. (fp16
// refused on the cpu: test_loader, which needs no Vulkan device.) Exit 77
// without a Vulkan device with fp16; under REEL_VULKAN_VALIDATION=1 any
// validation message fails the test.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

// Of an output's largest magnitude, against the cpu in float32: the README's
// figure for BlazeFace (measured on lavapipe with these inputs: front
// 2.13e-3, back 1.86e-3; back on the astronaut 3.02e-3, test_vulkan_models.sh).
#define BLAZEFACE_TOL 3.5e-3

// ---- tensors ------------------------------------------------------------------

static reel_tensor *i64s(int rank, const int64_t *shape, const int64_t *v)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_INT64, rank, shape);
    memcpy(t->data, v, t->nbytes);
    return t;
}

static reel_tensor *bools(int n, unsigned seed)
{
    int64_t shape[1] = { n };
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_BOOL, 1, shape);
    for (int i = 0; i < n; i++)
        ((uint8_t *)t->data)[i] = rand_r(&seed) & 1;
    return t;
}

// ---- ops: conversions on the host ------------------------------------------------

// Every float16 through float32 and back is itself (NaNs stay NaNs), and
// float32 rounds to nearest even: halfway cases, overflow, subnormals.
static void conversions_round_to_nearest_even(void **state)
{
    (void)state;
    uint16_t h[65536], back[65536];
    float f[65536];
    for (int i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    vk_f16_to_f32(h, f, 65536);
    vk_f32_to_f16(f, back, 65536);
    for (int i = 0; i < 65536; i++) {
        bool nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff);
        if (nan ? !isnan(f[i]) || (back[i] & 0x7c00) != 0x7c00 || !(back[i] & 0x3ff) : back[i] != h[i])
            fail_msg("half 0x%04x: %g back as 0x%04x", i, f[i], back[i]);
    }
    assert_true(f[0x3c00] == 1.0f && f[0x0001] == ldexpf(1, -24) && f[0x7bff] == 65504.0f && f[0xc000] == -2.0f);
    static const struct { float in; uint16_t out; } cases[] = {
        { 1.0f + 0x1p-11f, 0x3c00 },          // halfway: to even (down)
        { 1.0f + 3 * 0x1p-11f, 0x3c02 },      // halfway: to even (up)
        { 1.0f + 0x1p-11f + 0x1p-20f, 0x3c01 }, // above halfway
        { 65519.0f, 0x7bff }, { 65520.0f, 0x7c00 }, { -1e6f, 0xfc00 }, { INFINITY, 0x7c00 },
        { 0x1p-25f, 0x0000 },                 // halfway to the smallest subnormal: to even (0)
        { 0x1p-25f + 0x1p-40f, 0x0001 },      { 3 * 0x1p-25f, 0x0002 }, { 0x1p-14f - 0x1p-30f, 0x0400 },
        { -0.0f, 0x8000 },                    { 1e-30f, 0x0000 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        uint16_t got;
        vk_f32_to_f16(&cases[i].in, &got, 1);
        if (got != cases[i].out)
            fail_msg("%.9g: 0x%04x, not 0x%04x", cases[i].in, got, cases[i].out);
    }
}

// ---- ops: kernels that compute ----------------------------------------------------

static void convs(void **state)
{
    (void)state;
    static const int64_t pads1[] = { 1, 1, 1, 1 }, s2[] = { 2, 2 };
    // Tiled (16 output channels, 72 products per output), then depthwise (direct).
    vkt_call c = { .op = "Conv" };
    vkt_attr_ints(&c, "pads", 4, pads1);
    int64_t xs[] = { 1, 8, 10, 13 }, ws[] = { 16, 8, 3, 3 }, bs[] = { 16 };
    vkt_check(&c, 3,
              (reel_tensor *[]){ vkt_frand(4, xs, 1, -1, 1), vkt_frand(4, ws, 2, -0.3f, 0.3f),
                                 vkt_frand(1, bs, 3, -1, 1) },
              "Conv tiled");
    vkt_call d = { .op = "Conv" };
    vkt_attr_ints(&d, "pads", 4, pads1);
    vkt_attr_ints(&d, "strides", 2, s2);
    vkt_attr_int(&d, "group", 8);
    int64_t ds[] = { 8, 1, 3, 3 }, db[] = { 8 };
    vkt_check(&d, 3,
              (reel_tensor *[]){ vkt_frand(4, xs, 4, -1, 1), vkt_frand(4, ds, 5, -1, 1), vkt_frand(1, db, 6, -1, 1) },
              "Conv depthwise");
    vkt_call t = { .op = "ConvTranspose" };
    vkt_attr_ints(&t, "strides", 2, s2);
    int64_t tx[] = { 1, 4, 5, 5 }, tw[] = { 4, 3, 3, 3 };
    vkt_check(&t, 2, (reel_tensor *[]){ vkt_frand(4, tx, 7, -1, 1), vkt_frand(4, tw, 8, -1, 1) }, "ConvTranspose");
}

static void gemms(void **state)
{
    (void)state;
    vkt_call g = { .op = "Gemm" };
    vkt_attr_int(&g, "transB", 1);
    int64_t as[] = { 5, 37 }, bs[] = { 6, 37 }, cs[] = { 6 };
    vkt_check(&g, 3,
              (reel_tensor *[]){ vkt_frand(2, as, 11, -1, 1), vkt_frand(2, bs, 12, -1, 1),
                                 vkt_frand(1, cs, 13, -1, 1) },
              "Gemm");
    vkt_call m = { .op = "MatMul" };
    int64_t ma[] = { 2, 3, 5, 7 }, mb[] = { 7, 9 };
    vkt_check(&m, 2, (reel_tensor *[]){ vkt_frand(4, ma, 14, -1, 1), vkt_frand(2, mb, 15, -1, 1) }, "MatMul batched");
}

static void pools_and_reductions(void **state)
{
    (void)state;
    static const int64_t k3[] = { 3, 3 }, k2[] = { 2, 2 }, s2[] = { 2, 2 }, pads1[] = { 1, 1, 1, 1 };
    int64_t xs[] = { 1, 4, 9, 11 };
    vkt_call mx = { .op = "MaxPool", .exact = true };
    vkt_attr_ints(&mx, "kernel_shape", 2, k3);
    vkt_attr_ints(&mx, "strides", 2, s2);
    vkt_attr_ints(&mx, "pads", 4, pads1);
    vkt_check(&mx, 1, (reel_tensor *[]){ vkt_frand(4, xs, 21, -4, 4) }, "MaxPool");
    vkt_call av = { .op = "AveragePool" };
    vkt_attr_ints(&av, "kernel_shape", 2, k2);
    vkt_attr_ints(&av, "strides", 2, s2);
    vkt_check(&av, 1, (reel_tensor *[]){ vkt_frand(4, xs, 22, -4, 4) }, "AveragePool");
    vkt_call gap = { .op = "GlobalAveragePool" };
    int64_t gs[] = { 1, 8, 7, 7 };
    vkt_check(&gap, 1, (reel_tensor *[]){ vkt_frand(4, gs, 23, 0, 4) }, "GlobalAveragePool");
    static const int64_t axes23[] = { 2, 3 }, axis1[] = { 1 }, a2[] = { 2 };
    vkt_call mean = { .op = "ReduceMean", .consts = 2 };
    vkt_check(&mean, 2, (reel_tensor *[]){ vkt_frand(4, xs, 24, -1, 1), i64s(1, a2, axes23) }, "ReduceMean");
    vkt_call sum = { .op = "ReduceSum", .consts = 2 };
    vkt_check(&sum, 2, (reel_tensor *[]){ vkt_frand(4, xs, 25, -1, 1), i64s(1, (int64_t[]){ 1 }, axis1) }, "ReduceSum");
    vkt_call rmax = { .op = "ReduceMax", .consts = 2, .exact = true };
    vkt_check(&rmax, 2, (reel_tensor *[]){ vkt_frand(4, xs, 26, -1, 1), i64s(1, (int64_t[]){ 1 }, axis1) },
              "ReduceMax");
}

static void elementwise(void **state)
{
    (void)state;
    int64_t a[] = { 2, 3, 4, 5 }, b[] = { 5 }, c1[] = { 3, 1, 5 }, c2[] = { 1, 4, 5 };
    vkt_call add = { .op = "Add" };
    vkt_check(&add, 2, (reel_tensor *[]){ vkt_frand(4, a, 31, -2, 2), vkt_frand(1, b, 32, -2, 2) }, "Add broadcast");
    vkt_call mul = { .op = "Mul" };
    vkt_check(&mul, 2, (reel_tensor *[]){ vkt_frand(3, c1, 33, -2, 2), vkt_frand(3, c2, 34, -2, 2) }, "Mul broadcast");
    const char *unary[] = { "Relu", "Sigmoid", "HardSwish", "Tanh", "Exp" };
    for (size_t i = 0; i < G_N_ELEMENTS(unary); i++) {
        vkt_call u = { .op = unary[i], .exact = strcmp(unary[i], "Relu") == 0 };
        vkt_check(&u, 1, (reel_tensor *[]){ vkt_frand(4, a, 35 + (unsigned)i, -3, 3) }, unary[i]);
    }
    vkt_call clip = { .op = "Clip", .consts = 6, .exact = true };
    reel_tensor *lo = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL), *hi = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL);
    *(float *)lo->data = -0.5f;
    *(float *)hi->data = 0.75f;
    vkt_check(&clip, 3, (reel_tensor *[]){ vkt_frand(4, a, 40, -2, 2), lo, hi }, "Clip");
    vkt_call sm = { .op = "Softmax" };
    vkt_attr_int(&sm, "axis", -1);
    int64_t ss[] = { 3, 5, 17 };
    vkt_check(&sm, 1, (reel_tensor *[]){ vkt_frand(3, ss, 41, -4, 4) }, "Softmax");
    vkt_call bn = { .op = "BatchNormalization" };
    int64_t bx[] = { 1, 4, 5, 5 }, bc[] = { 4 };
    vkt_check(&bn, 5,
              (reel_tensor *[]){ vkt_frand(4, bx, 42, -1, 1), vkt_frand(1, bc, 43, 0.5f, 2),
                                 vkt_frand(1, bc, 44, -1, 1), vkt_frand(1, bc, 45, -1, 1),
                                 vkt_frand(1, bc, 46, 0.5f, 2) },
              "BatchNormalization");
}

// ---- ops: kernels that move values --------------------------------------------------

static void copies(void **state)
{
    (void)state;
    static const int64_t perm[] = { 0, 2, 3, 1 };
    int64_t ts[] = { 1, 3, 5, 7 };
    vkt_call tr = { .op = "Transpose", .exact = true };
    vkt_attr_ints(&tr, "perm", 4, perm);
    vkt_check(&tr, 1, (reel_tensor *[]){ vkt_frand(4, ts, 51, -8, 8) }, "Transpose");
    vkt_call cat = { .op = "Concat", .exact = true };
    vkt_attr_int(&cat, "axis", 1);
    int64_t c1[] = { 1, 3, 5 }, c2[] = { 1, 2, 5 };
    vkt_check(&cat, 2, (reel_tensor *[]){ vkt_frand(3, c1, 52, -8, 8), vkt_frand(3, c2, 53, -8, 8) },
              "Concat of odd sizes");
    static const int64_t starts[] = { 1, 1 }, ends[] = { 3, 6 }, axes[] = { 1, 3 };
    vkt_call sl = { .op = "Slice", .consts = 2 | 4 | 8, .exact = true };
    int64_t two[] = { 2 };
    vkt_check(&sl, 4, (reel_tensor *[]){ vkt_frand(4, ts, 54, -8, 8), i64s(1, two, starts), i64s(1, two, ends),
                                        i64s(1, two, axes) }, "Slice");
    static const int64_t split[] = { 1, 2 };
    vkt_call sp = { .op = "Split", .consts = 2, .n_out = 2, .exact = true };
    vkt_attr_int(&sp, "axis", 1);
    vkt_check(&sp, 2, (reel_tensor *[]){ vkt_frand(3, c1, 55, -8, 8), i64s(1, two, split) }, "Split");
    static const int64_t pads[] = { 0, 1, 2, 0, 2, 1 };
    vkt_call pad = { .op = "Pad", .consts = 2 | 4, .exact = true };
    reel_tensor *value = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL);
    *(float *)value->data = 0.25f;
    int64_t six[] = { 6 };
    vkt_check(&pad, 3, (reel_tensor *[]){ vkt_frand(3, c1, 56, -8, 8), i64s(1, six, pads), value }, "Pad");
    static const float scales[] = { 1, 1, 2, 2 };
    vkt_call rz = { .op = "Resize", .consts = 4, .exact = true };
    vkt_attr_string(&rz, "mode", "nearest");
    reel_tensor *sc = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, (int64_t[]){ 4 });
    memcpy(sc->data, scales, sizeof scales);
    vkt_check(&rz, 3, (reel_tensor *[]){ vkt_frand(4, ts, 57, -8, 8), NULL, sc }, "Resize nearest");
}

static void gathers_and_wheres(void **state)
{
    (void)state;
    // Chunks of 3 halves (6 bytes: byte by byte), of 1 half, of 4 halves (whole words).
    static const struct { int64_t x[2]; int axis; } cases[] = { { { 5, 3 }, 0 }, { { 4, 7 }, 1 }, { { 5, 4 }, 0 } };
    static const int64_t idx[] = { 2, -1, 0, 2, 1 };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        vkt_call ga = { .op = "Gather", .exact = true };
        vkt_attr_int(&ga, "axis", cases[i].axis);
        vkt_check(&ga, 2, (reel_tensor *[]){ vkt_frand(2, cases[i].x, 61 + (unsigned)i, -8, 8),
                                             i64s(1, (int64_t[]){ 5 }, idx) }, "Gather");
    }
    vkt_call wh = { .op = "Where", .exact = true };
    int64_t seven[] = { 7 }, one[] = { 1 };
    vkt_check(&wh, 3, (reel_tensor *[]){ bools(7, 65), vkt_frand(1, seven, 66, -8, 8), vkt_frand(1, one, 67, -8, 8) },
              "Where of 7 halves");
}

// Casts to and from float32 in an fp16 context; float32 and float16 are the
// same bits there. Comparisons of float32 tensors read float16 halves.
static void casts_and_comparisons(void **state)
{
    (void)state;
    int64_t s[] = { 3, 7 };
    static const int64_t to[] = { 7, 6, 10, 2, 9 }; // ONNX: int64, int32, float16, uint8, bool
    for (size_t i = 0; i < G_N_ELEMENTS(to); i++) {
        vkt_call c = { .op = "Cast", .exact = true };
        vkt_attr_int(&c, "to", to[i]);
        vkt_check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s, 71 + (unsigned)i, -0.5f, 200) }, "Cast from float32");
    }
    int64_t vals[21];
    for (int i = 0; i < 21; i++)
        vals[i] = (i * 7919) % 5000 - 2500;
    vkt_call c = { .op = "Cast", .exact = true };
    vkt_attr_int(&c, "to", 1); // ONNX: float
    vkt_check(&c, 1, (reel_tensor *[]){ i64s(2, s, vals) }, "Cast int64 to float32");
    reel_tensor *h = reel_tensor_new(REEL_DTYPE_FLOAT16, 2, s);
    for (int i = 0; i < 21; i++)
        ((uint16_t *)h->data)[i] = (uint16_t)(0x3c00 + i * 37);
    vkt_check(&c, 1, (reel_tensor *[]){ h }, "Cast float16 to float32");
    // Some elements equal: every other one of b is a's.
    reel_tensor *a = vkt_frand(2, s, 81, -2, 2), *b = vkt_frand(2, s, 82, -2, 2);
    for (int i = 0; i < 21; i += 2)
        ((float *)b->data)[i] = ((float *)a->data)[i];
    reel_tensor *a2 = vkt_frand(2, s, 81, -2, 2), *b2 = vkt_frand(1, (int64_t[]){ 7 }, 83, -2, 2);
    vkt_call eq = { .op = "Equal" }, gt = { .op = "Greater" };
    vkt_check(&eq, 2, (reel_tensor *[]){ a, b }, "Equal");
    vkt_check(&gt, 2, (reel_tensor *[]){ a2, b2 }, "Greater broadcast");
}

static void constants(void **state)
{
    (void)state;
    reel_tensor *v = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, (int64_t[]){ 1 });
    *(float *)v->data = 1.3f; // not a float16: rounded on the way
    vkt_call cs = { .op = "ConstantOfShape", .consts = 1, .exact = true };
    vkt_attr_tensor(&cs, "value", v);
    static const int64_t shape[] = { 3, 5 };
    vkt_check(&cs, 1, (reel_tensor *[]){ i64s(1, (int64_t[]){ 2 }, shape) }, "ConstantOfShape of 15 halves");
    reel_tensor_free(&v);
    reel_tensor *t = vkt_frand(2, (int64_t[]){ 3, 11 }, 91, -8, 8);
    vkt_call k = { .op = "Constant", .exact = true };
    vkt_attr_tensor(&k, "value", t);
    vkt_check(&k, 0, NULL, "Constant of 33 halves");
    reel_tensor_free(&t);
}

// ---- sessions --------------------------------------------------------------------

static reel_session *session_on(reel_model *m, reel_device *d, reel_precision precision)
{
    return vkt_session_new(m, reel_session_params(.threads = 1, .device = d, .precision = precision));
}

// A BlazeFace model: fp16 against the cpu over three runs (recorded once,
// then replayed with new data), every node on the device, the device arena
// half of the same model's in fp32.
static void blazeface_in_fp16(const char *file, int64_t size)
{
    char *path = vkt_cached_model("blazeface", file);
    reel_model *m = vkt_load(path);
    reel_session *cpu = session_on(m, NULL, REEL_PRECISION_FP32), *f32 = session_on(m, vkt_dev, REEL_PRECISION_FP32);
    reel_session *f16 = session_on(m, vkt_dev, REEL_PRECISION_FP16);
    int n_out = reel_model_n_outputs(m);
    assert_true(n_out <= VKT_MAX_OUT);
    const int64_t shape[] = { 1, size, size, 3 };
    double worst = 0;
    for (unsigned r = 0; r < 3; r++) {
        reel_tensor *in = vkt_host_tensor(4, shape, 11 + r);
        reel_tensor *want[VKT_MAX_OUT], *got[VKT_MAX_OUT], *got32[VKT_MAX_OUT];
        vkt_session_run(cpu, &in, want);
        vkt_session_run(f32, &in, got32);
        vkt_session_run(f16, &in, got);
        worst = fmax(worst, vkt_assert_close(got, want, n_out, BLAZEFACE_TOL));
        vkt_free_all(got, n_out);
        vkt_free_all(got32, n_out);
        vkt_free_all(want, n_out);
        reel_tensor_free(&in);
    }
    reel_session_placement p16 = vkt_placement(f16), p32 = vkt_placement(f32);
    printf("%s: fp16 within %.2e of the largest output magnitude; device arena %" G_GINT64_FORMAT
           " bytes (fp32: %" G_GINT64_FORMAT ")\n", file, worst, p16.device_arena_bytes, p32.device_arena_bytes);
    assert_int_equal(p16.cpu_nodes, 0);
    assert_int_equal(p16.device_nodes, p32.device_nodes);
    assert_int_equal(p16.recordings, 1);
    assert_true(p16.device_arena_bytes > 0);
    assert_int_equal(2 * p16.device_arena_bytes, p32.device_arena_bytes);
    // The input crosses as float16, the outputs come back from float16.
    assert_int_equal(2 * p16.bytes_to_device, p32.bytes_to_device);
    assert_int_equal(2 * p16.bytes_to_host, p32.bytes_to_host);
    reel_session_destroy(&f16);
    reel_session_destroy(&f32);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

static void blazeface_front(void **state)
{
    (void)state;
    blazeface_in_fp16("face_detection_front_128x128_barracuda.onnx", 128);
}

static void blazeface_back(void **state)
{
    (void)state;
    blazeface_in_fp16("face_detection_back_256x256_barracuda.onnx", 256);
}

// chain.onnx (Relu -> Sigmoid -> Relu over 256 floats) with the Sigmoid on
// the cpu: its input comes back from float16, its output goes up as
// float16, 512 bytes each way per crossing.
static void partition_edges_convert(void **state)
{
    (void)state;
    g_setenv("REEL_VULKAN_CPU_OPS", "Sigmoid", TRUE);
    vkt_pair t = vkt_pair_open("chain.onnx", REEL_PRECISION_FP16);
    const int64_t shape[] = { 1, 4, 8, 8 };
    for (unsigned r = 0; r < 3; r++) {
        reel_tensor *in = vkt_host_tensor(4, shape, 30 + r);
        // Relu and Sigmoid of float16 inputs: one rounding each way.
        vkt_compare_runs(t.cpu, in, t.gpu, in, 2e-3);
        reel_tensor_free(&in);
        reel_session_placement p = vkt_placement(t.gpu);
        assert_int_equal(p.bytes_to_device, 1024);
        assert_int_equal(p.bytes_to_host, 1024);
    }
    reel_session_placement p = vkt_placement(t.gpu);
    assert_int_equal(p.partitions, 3);
    assert_int_equal(p.cpu_nodes, 1);
    assert_int_equal(p.device_arena_bytes, 512);
    assert_int_equal(p.recordings, 1);
    reel_session_destroy(&t.gpu);
    // Strict placement names the node kept on the cpu, in fp16 too.
    GError *error = NULL;
    reel_session *strict = reel_session_new(t.m, reel_session_params(.device = vkt_dev, .strict = true,
                                                                     .precision = REEL_PRECISION_FP16), &error);
    reel_tensor *in = vkt_host_tensor(4, shape, 39), *out[1] = { NULL };
    assert_non_null(strict);
    assert_int_not_equal(reel_session_run(strict, &in, out, &error), 0);
    assert_non_null(strstr(error->message, "placement=strict: 1 node would run on the cpu"));
    assert_non_null(strstr(error->message, "(Sigmoid): kept on the cpu by REEL_VULKAN_CPU_OPS"));
    g_clear_error(&error);
    g_unsetenv("REEL_VULKAN_CPU_OPS");
    reel_tensor_free(&in);
    reel_session_destroy(&strict);
    vkt_pair_close(&t);
}

// An input already in device memory (float32, as preprocess makes it) is
// converted there: nothing crosses, one recording per memory, replayed
// with each memory's new contents.
static void bound_inputs_convert_on_the_device(void **state)
{
    (void)state;
    vkt_pair t = vkt_pair_open("chain.onnx", REEL_PRECISION_FP16);
    const int64_t shape[] = { 1, 4, 8, 8 };
    reel_mem *mems[2] = { vkt_device_mem(1024), vkt_device_mem(1024) };
    const int order[] = { 0, 1, 0, 1, 0 };
    for (unsigned r = 0; r < G_N_ELEMENTS(order); r++) {
        reel_tensor *host = vkt_host_tensor(4, shape, 50 + r);
        reel_tensor *in = vkt_device_tensor(mems[order[r]], host);
        vkt_compare_runs(t.cpu, host, t.gpu, in, 2e-3);
        reel_session_placement p = vkt_placement(t.gpu);
        assert_int_equal(p.bytes_to_device, 0);
        assert_int_equal(p.bytes_to_host, 512);
        assert_int_equal(p.recordings, r == 0 ? 1 : 2);
        reel_tensor_free(&in);
        reel_tensor_free(&host);
    }
    reel_mem_unref(&mems[0]);
    reel_mem_unref(&mems[1]);
    vkt_pair_close(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conversions_round_to_nearest_even),
        cmocka_unit_test(convs),
        cmocka_unit_test(gemms),
        cmocka_unit_test(pools_and_reductions),
        cmocka_unit_test(elementwise),
        cmocka_unit_test(copies),
        cmocka_unit_test(gathers_and_wheres),
        cmocka_unit_test(casts_and_comparisons),
        cmocka_unit_test(constants),
        cmocka_unit_test(blazeface_front),
        cmocka_unit_test(blazeface_back),
        cmocka_unit_test(partition_edges_convert),
        cmocka_unit_test(bound_inputs_convert_on_the_device),
    };
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 18, true);
}

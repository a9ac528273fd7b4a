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
// Sessions: BlazeFace against the cpu runtime in float32 within 2e-2 of the
// largest output magnitude, the device arena half of fp32's, a node on the
// cpu (converted where it crosses, half the bytes), an input bound in device
// memory (converted on the device, nothing crossing), strict placement, and
// fp16 refused where there is no 16-bit float support. Exit 77 without a
// Vulkan device with fp16; under REEL_VULKAN_VALIDATION=1 any validation
// message fails the test.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/op.h"
#include "models/session.h"
#include "models/vulkan/vk_ops.h"
#include "reel/reel.h"

#define MAX_IN 8
#define MAX_OUT 4
#define MODEL_TOL 2e-2 // of an output's largest magnitude, against the cpu in float32

static reel_device *dev;
static vk_ctx ctx;

// ---- tensors ------------------------------------------------------------------

static reel_tensor *frand(int rank, const int64_t *shape, unsigned seed, float lo, float hi)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, shape);
    assert_non_null(t);
    float *d = t->data;
    for (size_t i = 0; i < t->nbytes / 4; i++)
        d[i] = lo + (hi - lo) * (float)rand_r(&seed) / (float)RAND_MAX;
    return t;
}

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

// float32 values made the nearest float16s, as they are on the device.
static void round_to_f16(reel_tensor *t)
{
    if (!t || t->dtype != REEL_DTYPE_FLOAT32)
        return;
    size_t n = t->nbytes / 4;
    uint16_t *h = g_new(uint16_t, n + 1);
    vk_f32_to_f16(t->data, h, n);
    vk_f16_to_f32(h, t->data, n);
    g_free(h);
}

static reel_mem *device_mem(size_t size)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = MAX(size, 16), .domain = REEL_MEM_DEVICE), &error);
    if (!m)
        fail_msg("%s", error->message);
    return m;
}

// t's values into device memory as an fp16 context stores them.
static reel_mem *upload_stored(const reel_tensor *t)
{
    size_t bytes = vk_stored_bytes(true, t);
    reel_mem *m = device_mem(bytes);
    if (!bytes)
        return m;
    if (t->dtype != REEL_DTYPE_FLOAT32) {
        assert_int_equal(reel_mem_upload(m, 0, t->data, bytes, NULL), 0);
        return m;
    }
    uint16_t *h = g_new(uint16_t, t->nbytes / 4);
    vk_f32_to_f16(t->data, h, t->nbytes / 4);
    assert_int_equal(reel_mem_upload(m, 0, h, bytes, NULL), 0);
    g_free(h);
    return m;
}

// Device memory of an fp16 context into t (float32 from float16).
static void download_stored(reel_mem *m, reel_tensor *t)
{
    size_t bytes = vk_stored_bytes(true, t);
    if (!bytes)
        return;
    if (t->dtype != REEL_DTYPE_FLOAT32) {
        assert_int_equal(reel_mem_download(m, 0, t->data, bytes, NULL), 0);
        return;
    }
    uint16_t *h = g_new(uint16_t, t->nbytes / 4);
    assert_int_equal(reel_mem_download(m, 0, h, bytes, NULL), 0);
    vk_f16_to_f32(h, t->data, t->nbytes / 4);
    g_free(h);
}

// ---- one node -------------------------------------------------------------------

typedef struct opcall {
    const char *op;
    reel_ir_attr attrs[8];
    int n_attrs;
    unsigned consts; // bit i: input i is a constant (its data visible to supports)
    int n_out;       // 0: 1
    bool exact;      // the cpu's float32 result rounded to float16, bit for bit
} opcall;

static void attr_ints(opcall *c, const char *name, int n, const int64_t *v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INTS, .ints = (int64_t *)v,
                                             .n = n };
}

static void attr_int(opcall *c, const char *name, int64_t v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INT, .i = v };
}

static void attr_string(opcall *c, const char *name, const char *v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_STRING, .s = (char *)v };
}

static void attr_tensor(opcall *c, const char *name, reel_tensor *t)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_TENSOR, .t = t };
}

// Output k of the device against the cpu's (want, float32 from inputs
// already rounded to float16).
static void compare(const opcall *c, const reel_tensor *got, reel_tensor *want, int k, const char *what)
{
    int64_t n = reel_tensor_count(want->rank, want->shape);
    if (want->dtype == REEL_DTYPE_FLOAT32 && !c->exact) {
        const float *a = got->data, *b = want->data;
        for (int64_t i = 0; i < n; i++)
            if (!(fabsf(a[i] - b[i]) <= 2e-3f * fabsf(b[i]) + 1e-4f) && !(isnan(a[i]) && isnan(b[i])))
                fail_msg("%s: output %d element %" G_GINT64_FORMAT " is %.9g in fp16, %.9g on the cpu", what, k, i,
                         a[i], b[i]);
        return;
    }
    round_to_f16(want);
    size_t es = reel_dtype_size(want->dtype);
    for (int64_t i = 0; i < n; i++) {
        const char *a = (const char *)got->data + i * es, *b = (const char *)want->data + i * es;
        if (memcmp(a, b, es) != 0) {
            uint64_t x = 0, y = 0;
            memcpy(&x, a, es);
            memcpy(&y, b, es);
            fail_msg("%s: output %d element %" G_GINT64_FORMAT " is 0x%" G_GINT64_MODIFIER "x in fp16, 0x%"
                     G_GINT64_MODIFIER "x on the cpu (rounded to float16)", what, k, i, x, y);
        }
    }
}

// Runs the node's vk_op in the fp16 context on device copies of the inputs.
static void run_device(const vk_op *vop, const reel_ir_node *n, reel_tensor **in, reel_tensor *iview,
                       reel_tensor **got, reel_tensor *oview, const char *what)
{
    vk_tensor vi[MAX_IN], vo[MAX_OUT], *pvi[MAX_IN], *pvo[MAX_OUT];
    for (int i = 0; i < n->n_inputs; i++) {
        pvi[i] = in[i] ? &vi[i] : NULL;
        if (in[i])
            vi[i] = (vk_tensor){ upload_stored(in[i]), &iview[i] };
    }
    for (int i = 0; i < n->n_outputs; i++) {
        // Poisoned, so an element the kernel forgets to write shows.
        size_t bytes = vk_stored_bytes(true, got[i]);
        vo[i] = (vk_tensor){ device_mem(bytes), &oview[i] };
        memset(got[i]->data, 0xa5, got[i]->nbytes);
        if (bytes)
            assert_int_equal(reel_mem_upload(vo[i].mem, 0, got[i]->data, bytes, NULL), 0);
        pvo[i] = &vo[i];
    }
    int rc = vop->run(&ctx, n, pvi, pvo);
    if (rc)
        fail_msg("%s: run: %s", what, reel_strerror(rc));
    for (int k = 0; k < n->n_outputs; k++) {
        download_stored(vo[k].mem, got[k]);
        reel_mem_unref(&vo[k].mem);
    }
    for (int i = 0; i < n->n_inputs; i++)
        if (in[i])
            reel_mem_unref(&vi[i].mem);
}

static void run_cpu(const reel_op *op, const reel_ir_node *n, reel_tensor **in, reel_tensor **want, const char *what)
{
    size_t scratch_size = op->scratch ? op->scratch(n, in, want) : 0;
    void *scratch = scratch_size ? g_malloc0(scratch_size) : NULL;
    reel_exec_ctx ectx = { .opset = 18, .threads = 1, .scratch = scratch, .scratch_size = scratch_size };
    int rc = op->run(n, in, want, &ectx);
    g_free(scratch);
    if (rc)
        fail_msg("%s: the cpu op failed: %s", what, reel_strerror(rc));
}

// One node: inferred, supports_f16() asked (as the executor asks it: data
// only for constants), run in fp16 on vulkan:0 and on the cpu. Takes the
// inputs (NULL: omitted).
static void check(const opcall *c, int n_in, reel_tensor **in, const char *what)
{
    const reel_op *op = reel_op_find(c->op);
    const vk_op *vop = vk_op_find(c->op);
    assert_non_null(op);
    if (!vop || !vop->supports_f16)
        fail_msg("%s: no float16 Vulkan op %s", what, c->op);
    int n_out = c->n_out ? c->n_out : 1;
    reel_ir_graph *g = reel_ir_graph_new();
    g->opset = 18;
    int inputs[MAX_IN], outputs[MAX_OUT];
    for (int i = 0; i < n_in; i++) {
        inputs[i] = -1;
        round_to_f16(in[i]);
        if (!in[i])
            continue;
        char name[8] = { 'x', (char)('0' + i) };
        inputs[i] = reel_ir_add_value(g, name);
        reel_ir_value *v = reel_ir_value_at(g, inputs[i]);
        v->dtype = in[i]->dtype;
        v->rank = in[i]->rank;
        memcpy(v->dims, in[i]->shape, sizeof v->dims);
        if (c->consts & (1u << i))
            v->constant = in[i]; // borrowed: unset before the graph is freed
    }
    for (int i = 0; i < n_out; i++) {
        char name[8] = { 'y', (char)('0' + i) };
        outputs[i] = reel_ir_add_value(g, name);
    }
    reel_ir_node n = { .name = "n", .op = (char *)c->op, .inputs = inputs, .n_inputs = n_in, .outputs = outputs,
                       .n_outputs = n_out, .attrs = (reel_ir_attr *)c->attrs, .n_attrs = c->n_attrs };
    GError *error = NULL;
    if (op->infer(g, &n, &error))
        fail_msg("%s: infer: %s", what, error->message);
    reel_tensor *want[MAX_OUT], *got[MAX_OUT], oview[MAX_OUT], iview[MAX_IN];
    reel_tensor *ov[MAX_OUT], *iv[MAX_IN];
    for (int i = 0; i < n_out; i++) {
        reel_ir_value *v = reel_ir_value_at(g, outputs[i]);
        want[i] = reel_tensor_new(v->dtype, v->rank, v->dims);
        got[i] = reel_tensor_new(v->dtype, v->rank, v->dims);
        if (!want[i] || !got[i])
            fail_msg("%s: infer left output %d without a concrete shape", what, i);
        oview[i] = *got[i];
        oview[i].data = NULL;
        ov[i] = &oview[i];
    }
    for (int i = 0; i < n_in; i++) {
        iv[i] = in[i] ? &iview[i] : NULL;
        if (in[i]) {
            iview[i] = *in[i];
            if (!(c->consts & (1u << i)))
                iview[i].data = NULL;
        }
    }
    if (!vop->supports_f16(&n, iv, ov))
        fail_msg("%s: supports_f16() says no", what);
    run_cpu(op, &n, in, want, what);
    run_device(vop, &n, in, iview, got, oview, what);
    for (int k = 0; k < n_out; k++)
        compare(c, got[k], want[k], k, what);
    for (int i = 0; i < n_in; i++) {
        if (in[i] && (c->consts & (1u << i)))
            reel_ir_value_at(g, inputs[i])->constant = NULL;
        reel_tensor_free(&in[i]);
    }
    for (int i = 0; i < n_out; i++) {
        reel_tensor_free(&want[i]);
        reel_tensor_free(&got[i]);
    }
    reel_ir_graph_free(&g);
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
    opcall c = { .op = "Conv" };
    attr_ints(&c, "pads", 4, pads1);
    int64_t xs[] = { 1, 8, 10, 13 }, ws[] = { 16, 8, 3, 3 }, bs[] = { 16 };
    check(&c, 3, (reel_tensor *[]){ frand(4, xs, 1, -1, 1), frand(4, ws, 2, -0.3f, 0.3f), frand(1, bs, 3, -1, 1) },
          "Conv tiled");
    opcall d = { .op = "Conv" };
    attr_ints(&d, "pads", 4, pads1);
    attr_ints(&d, "strides", 2, s2);
    attr_int(&d, "group", 8);
    int64_t ds[] = { 8, 1, 3, 3 }, db[] = { 8 };
    check(&d, 3, (reel_tensor *[]){ frand(4, xs, 4, -1, 1), frand(4, ds, 5, -1, 1), frand(1, db, 6, -1, 1) },
          "Conv depthwise");
    opcall t = { .op = "ConvTranspose" };
    attr_ints(&t, "strides", 2, s2);
    int64_t tx[] = { 1, 4, 5, 5 }, tw[] = { 4, 3, 3, 3 };
    check(&t, 2, (reel_tensor *[]){ frand(4, tx, 7, -1, 1), frand(4, tw, 8, -1, 1) }, "ConvTranspose");
}

static void gemms(void **state)
{
    (void)state;
    opcall g = { .op = "Gemm" };
    attr_int(&g, "transB", 1);
    int64_t as[] = { 5, 37 }, bs[] = { 6, 37 }, cs[] = { 6 };
    check(&g, 3, (reel_tensor *[]){ frand(2, as, 11, -1, 1), frand(2, bs, 12, -1, 1), frand(1, cs, 13, -1, 1) },
          "Gemm");
    opcall m = { .op = "MatMul" };
    int64_t ma[] = { 2, 3, 5, 7 }, mb[] = { 7, 9 };
    check(&m, 2, (reel_tensor *[]){ frand(4, ma, 14, -1, 1), frand(2, mb, 15, -1, 1) }, "MatMul batched");
}

static void pools_and_reductions(void **state)
{
    (void)state;
    static const int64_t k3[] = { 3, 3 }, k2[] = { 2, 2 }, s2[] = { 2, 2 }, pads1[] = { 1, 1, 1, 1 };
    int64_t xs[] = { 1, 4, 9, 11 };
    opcall mx = { .op = "MaxPool", .exact = true };
    attr_ints(&mx, "kernel_shape", 2, k3);
    attr_ints(&mx, "strides", 2, s2);
    attr_ints(&mx, "pads", 4, pads1);
    check(&mx, 1, (reel_tensor *[]){ frand(4, xs, 21, -4, 4) }, "MaxPool");
    opcall av = { .op = "AveragePool" };
    attr_ints(&av, "kernel_shape", 2, k2);
    attr_ints(&av, "strides", 2, s2);
    check(&av, 1, (reel_tensor *[]){ frand(4, xs, 22, -4, 4) }, "AveragePool");
    opcall gap = { .op = "GlobalAveragePool" };
    int64_t gs[] = { 1, 8, 7, 7 };
    check(&gap, 1, (reel_tensor *[]){ frand(4, gs, 23, 0, 4) }, "GlobalAveragePool");
    static const int64_t axes23[] = { 2, 3 }, axis1[] = { 1 }, a2[] = { 2 };
    opcall mean = { .op = "ReduceMean", .consts = 2 };
    check(&mean, 2, (reel_tensor *[]){ frand(4, xs, 24, -1, 1), i64s(1, a2, axes23) }, "ReduceMean");
    opcall sum = { .op = "ReduceSum", .consts = 2 };
    check(&sum, 2, (reel_tensor *[]){ frand(4, xs, 25, -1, 1), i64s(1, (int64_t[]){ 1 }, axis1) }, "ReduceSum");
    opcall rmax = { .op = "ReduceMax", .consts = 2, .exact = true };
    check(&rmax, 2, (reel_tensor *[]){ frand(4, xs, 26, -1, 1), i64s(1, (int64_t[]){ 1 }, axis1) }, "ReduceMax");
}

static void elementwise(void **state)
{
    (void)state;
    int64_t a[] = { 2, 3, 4, 5 }, b[] = { 5 }, c1[] = { 3, 1, 5 }, c2[] = { 1, 4, 5 };
    opcall add = { .op = "Add" };
    check(&add, 2, (reel_tensor *[]){ frand(4, a, 31, -2, 2), frand(1, b, 32, -2, 2) }, "Add broadcast");
    opcall mul = { .op = "Mul" };
    check(&mul, 2, (reel_tensor *[]){ frand(3, c1, 33, -2, 2), frand(3, c2, 34, -2, 2) }, "Mul broadcast");
    const char *unary[] = { "Relu", "Sigmoid", "HardSwish", "Tanh", "Exp" };
    for (size_t i = 0; i < G_N_ELEMENTS(unary); i++) {
        opcall u = { .op = unary[i], .exact = strcmp(unary[i], "Relu") == 0 };
        check(&u, 1, (reel_tensor *[]){ frand(4, a, 35 + (unsigned)i, -3, 3) }, unary[i]);
    }
    opcall clip = { .op = "Clip", .consts = 6, .exact = true };
    reel_tensor *lo = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL), *hi = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL);
    *(float *)lo->data = -0.5f;
    *(float *)hi->data = 0.75f;
    check(&clip, 3, (reel_tensor *[]){ frand(4, a, 40, -2, 2), lo, hi }, "Clip");
    opcall sm = { .op = "Softmax" };
    attr_int(&sm, "axis", -1);
    int64_t ss[] = { 3, 5, 17 };
    check(&sm, 1, (reel_tensor *[]){ frand(3, ss, 41, -4, 4) }, "Softmax");
    opcall bn = { .op = "BatchNormalization" };
    int64_t bx[] = { 1, 4, 5, 5 }, bc[] = { 4 };
    check(&bn, 5, (reel_tensor *[]){ frand(4, bx, 42, -1, 1), frand(1, bc, 43, 0.5f, 2), frand(1, bc, 44, -1, 1),
                                     frand(1, bc, 45, -1, 1), frand(1, bc, 46, 0.5f, 2) }, "BatchNormalization");
}

// ---- ops: kernels that move values --------------------------------------------------

static void copies(void **state)
{
    (void)state;
    static const int64_t perm[] = { 0, 2, 3, 1 };
    int64_t ts[] = { 1, 3, 5, 7 };
    opcall tr = { .op = "Transpose", .exact = true };
    attr_ints(&tr, "perm", 4, perm);
    check(&tr, 1, (reel_tensor *[]){ frand(4, ts, 51, -8, 8) }, "Transpose");
    opcall cat = { .op = "Concat", .exact = true };
    attr_int(&cat, "axis", 1);
    int64_t c1[] = { 1, 3, 5 }, c2[] = { 1, 2, 5 };
    check(&cat, 2, (reel_tensor *[]){ frand(3, c1, 52, -8, 8), frand(3, c2, 53, -8, 8) }, "Concat of odd sizes");
    static const int64_t starts[] = { 1, 1 }, ends[] = { 3, 6 }, axes[] = { 1, 3 };
    opcall sl = { .op = "Slice", .consts = 2 | 4 | 8, .exact = true };
    int64_t two[] = { 2 };
    check(&sl, 4, (reel_tensor *[]){ frand(4, ts, 54, -8, 8), i64s(1, two, starts), i64s(1, two, ends),
                                    i64s(1, two, axes) }, "Slice");
    static const int64_t split[] = { 1, 2 };
    opcall sp = { .op = "Split", .consts = 2, .n_out = 2, .exact = true };
    attr_int(&sp, "axis", 1);
    check(&sp, 2, (reel_tensor *[]){ frand(3, c1, 55, -8, 8), i64s(1, two, split) }, "Split");
    static const int64_t pads[] = { 0, 1, 2, 0, 2, 1 };
    opcall pad = { .op = "Pad", .consts = 2 | 4, .exact = true };
    reel_tensor *value = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL);
    *(float *)value->data = 0.25f;
    int64_t six[] = { 6 };
    check(&pad, 3, (reel_tensor *[]){ frand(3, c1, 56, -8, 8), i64s(1, six, pads), value }, "Pad");
    static const float scales[] = { 1, 1, 2, 2 };
    opcall rz = { .op = "Resize", .consts = 4, .exact = true };
    attr_string(&rz, "mode", "nearest");
    reel_tensor *sc = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, (int64_t[]){ 4 });
    memcpy(sc->data, scales, sizeof scales);
    check(&rz, 3, (reel_tensor *[]){ frand(4, ts, 57, -8, 8), NULL, sc }, "Resize nearest");
}

static void gathers_and_wheres(void **state)
{
    (void)state;
    // Chunks of 3 halves (6 bytes: byte by byte), of 1 half, of 4 halves (whole words).
    static const struct { int64_t x[2]; int axis; } cases[] = { { { 5, 3 }, 0 }, { { 4, 7 }, 1 }, { { 5, 4 }, 0 } };
    static const int64_t idx[] = { 2, -1, 0, 2, 1 };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        opcall ga = { .op = "Gather", .exact = true };
        attr_int(&ga, "axis", cases[i].axis);
        check(&ga, 2, (reel_tensor *[]){ frand(2, cases[i].x, 61 + (unsigned)i, -8, 8),
                                         i64s(1, (int64_t[]){ 5 }, idx) }, "Gather");
    }
    opcall wh = { .op = "Where", .exact = true };
    int64_t seven[] = { 7 }, one[] = { 1 };
    check(&wh, 3, (reel_tensor *[]){ bools(7, 65), frand(1, seven, 66, -8, 8), frand(1, one, 67, -8, 8) },
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
        opcall c = { .op = "Cast", .exact = true };
        attr_int(&c, "to", to[i]);
        check(&c, 1, (reel_tensor *[]){ frand(2, s, 71 + (unsigned)i, -0.5f, 200) }, "Cast from float32");
    }
    int64_t vals[21];
    for (int i = 0; i < 21; i++)
        vals[i] = (i * 7919) % 5000 - 2500;
    opcall c = { .op = "Cast", .exact = true };
    attr_int(&c, "to", 1); // ONNX: float
    check(&c, 1, (reel_tensor *[]){ i64s(2, s, vals) }, "Cast int64 to float32");
    reel_tensor *h = reel_tensor_new(REEL_DTYPE_FLOAT16, 2, s);
    for (int i = 0; i < 21; i++)
        ((uint16_t *)h->data)[i] = (uint16_t)(0x3c00 + i * 37);
    check(&c, 1, (reel_tensor *[]){ h }, "Cast float16 to float32");
    // Some elements equal: every other one of b is a's.
    reel_tensor *a = frand(2, s, 81, -2, 2), *b = frand(2, s, 82, -2, 2);
    for (int i = 0; i < 21; i += 2)
        ((float *)b->data)[i] = ((float *)a->data)[i];
    reel_tensor *a2 = frand(2, s, 81, -2, 2), *b2 = frand(1, (int64_t[]){ 7 }, 83, -2, 2);
    opcall eq = { .op = "Equal" }, gt = { .op = "Greater" };
    check(&eq, 2, (reel_tensor *[]){ a, b }, "Equal");
    check(&gt, 2, (reel_tensor *[]){ a2, b2 }, "Greater broadcast");
}

static void constants(void **state)
{
    (void)state;
    reel_tensor *v = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, (int64_t[]){ 1 });
    *(float *)v->data = 1.3f; // not a float16: rounded on the way
    opcall cs = { .op = "ConstantOfShape", .consts = 1, .exact = true };
    attr_tensor(&cs, "value", v);
    static const int64_t shape[] = { 3, 5 };
    check(&cs, 1, (reel_tensor *[]){ i64s(1, (int64_t[]){ 2 }, shape) }, "ConstantOfShape of 15 halves");
    reel_tensor_free(&v);
    reel_tensor *t = frand(2, (int64_t[]){ 3, 11 }, 91, -8, 8);
    opcall k = { .op = "Constant", .exact = true };
    attr_tensor(&k, "value", t);
    check(&k, 0, NULL, "Constant of 33 halves");
    reel_tensor_free(&t);
}

// ---- sessions --------------------------------------------------------------------

static char *test_model(const char *name)
{
    const char *dir = getenv("REEL_TEST_MODELS");
    char *path = dir ? g_build_filename(dir, name, NULL) : NULL;
    if (!path || !g_file_test(path, G_FILE_TEST_EXISTS)) {
        printf("no %s (make_models.py writes it): skipped\n", name);
        g_free(path);
        skip();
    }
    return path;
}

static reel_model *load(const char *path)
{
    GError *error = NULL;
    reel_model *m = reel_model_load(path, &error);
    if (!m)
        fail_msg("%s: %s", path, error->message);
    return m;
}

static reel_session *session_on(reel_model *m, reel_device *d, reel_precision precision)
{
    GError *error = NULL;
    reel_session *s = reel_session_new(m, reel_session_params(.threads = 1, .device = d, .precision = precision),
                                       &error);
    if (!s)
        fail_msg("%s", error->message);
    return s;
}

static reel_buffer *host_tensor(int rank, const int64_t *shape, unsigned seed)
{
    int64_t count = 1;
    for (int i = 0; i < rank; i++)
        count *= shape[i];
    reel_buffer *b = reel_buffer_new((size_t)count * 4);
    b->format.media = REEL_MEDIA_TENSOR;
    b->format.memory = REEL_MEMORY_HOST;
    b->format.dtype = REEL_DTYPE_FLOAT32;
    b->format.rank = rank;
    memcpy(b->format.shape, shape, sizeof(int64_t) * (size_t)rank);
    float *f = (float *)b->data;
    for (int64_t i = 0; i < count; i++)
        f[i] = (float)rand_r(&seed) / ((float)RAND_MAX + 1) * 2 - 1;
    return b;
}

static void run(reel_session *s, reel_buffer **in, reel_buffer **out)
{
    GError *error = NULL;
    if (reel_session_run(s, in, out, &error) != 0)
        fail_msg("run: %s", error->message);
}

static void unref_all(reel_buffer **b, int n)
{
    for (int i = 0; i < n; i++)
        reel_buffer_unref(&b[i]);
}

// got within tol of want's largest magnitude; the worst error of all
// outputs (relative to each one's largest magnitude) is returned.
static double assert_close(reel_buffer *const *got, reel_buffer *const *want, int n, double tol)
{
    double worst_all = 0;
    for (int k = 0; k < n; k++) {
        assert_int_equal(got[k]->size, want[k]->size);
        assert_int_equal(got[k]->format.dtype, REEL_DTYPE_FLOAT32);
        const float *g = (const float *)got[k]->data, *w = (const float *)want[k]->data;
        size_t count = want[k]->size / 4;
        double top = 1e-6, worst = 0;
        for (size_t i = 0; i < count; i++)
            top = fmax(top, fabs(w[i]));
        for (size_t i = 0; i < count; i++)
            worst = fmax(worst, fabs((double)g[i] - w[i]));
        if (!(worst <= tol * top))
            fail_msg("output %d: max error %g of the largest magnitude %g", k, worst, top);
        worst_all = fmax(worst_all, worst / top);
    }
    return worst_all;
}

static reel_session_placement placement(const reel_session *s)
{
    reel_session_placement p;
    reel_session_placement_of(s, &p);
    return p;
}

// A BlazeFace model: fp16 against the cpu over three runs (recorded once,
// then replayed with new data), every node on the device, the device arena
// half of the same model's in fp32.
static void blazeface_in_fp16(const char *file, int64_t size)
{
    char *path = g_build_filename(REEL_TEST_MODEL_CACHE, "blazeface", file, NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        printf("no %s (scripts/fetch-models): skipped\n", path);
        g_free(path);
        skip();
    }
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, REEL_PRECISION_FP32), *f32 = session_on(m, dev, REEL_PRECISION_FP32);
    reel_session *f16 = session_on(m, dev, REEL_PRECISION_FP16);
    int n_out = reel_model_n_outputs(m);
    assert_true(n_out <= MAX_OUT);
    const int64_t shape[] = { 1, size, size, 3 };
    double worst = 0;
    for (unsigned r = 0; r < 3; r++) {
        reel_buffer *in = host_tensor(4, shape, 11 + r), *want[MAX_OUT], *got[MAX_OUT], *got32[MAX_OUT];
        run(cpu, &in, want);
        run(f32, &in, got32);
        run(f16, &in, got);
        worst = fmax(worst, assert_close(got, want, n_out, MODEL_TOL));
        unref_all(got, n_out);
        unref_all(got32, n_out);
        unref_all(want, n_out);
        reel_buffer_unref(&in);
    }
    reel_session_placement p16 = placement(f16), p32 = placement(f32);
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
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    g_setenv("REEL_VULKAN_CPU_OPS", "Sigmoid", TRUE);
    reel_session *cpu = session_on(m, NULL, REEL_PRECISION_FP32), *gpu = session_on(m, dev, REEL_PRECISION_FP16);
    const int64_t shape[] = { 1, 4, 8, 8 };
    for (unsigned r = 0; r < 3; r++) {
        reel_buffer *in = host_tensor(4, shape, 30 + r), *want[1], *got[1];
        run(cpu, &in, want);
        run(gpu, &in, got);
        // Relu and Sigmoid of float16 inputs: one rounding each way.
        assert_close(got, want, 1, 2e-3);
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
        reel_session_placement p = placement(gpu);
        assert_int_equal(p.bytes_to_device, 1024);
        assert_int_equal(p.bytes_to_host, 1024);
    }
    reel_session_placement p = placement(gpu);
    assert_int_equal(p.partitions, 3);
    assert_int_equal(p.cpu_nodes, 1);
    assert_int_equal(p.device_arena_bytes, 512);
    assert_int_equal(p.recordings, 1);
    reel_session_destroy(&gpu);
    // Strict placement names the node kept on the cpu, in fp16 too.
    GError *error = NULL;
    reel_session *strict = reel_session_new(m, reel_session_params(.device = dev, .strict = true,
                                                                   .precision = REEL_PRECISION_FP16), &error);
    reel_buffer *in = host_tensor(4, shape, 39), *out[1] = { NULL };
    assert_non_null(strict);
    assert_int_not_equal(reel_session_run(strict, &in, out, &error), 0);
    assert_non_null(strstr(error->message, "placement=strict: 1 node would run on the cpu"));
    assert_non_null(strstr(error->message, "(Sigmoid): kept on the cpu by REEL_VULKAN_CPU_OPS"));
    g_clear_error(&error);
    g_unsetenv("REEL_VULKAN_CPU_OPS");
    reel_buffer_unref(&in);
    reel_session_destroy(&strict);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// An input already in device memory (float32, as preprocess makes it) is
// converted there: nothing crosses, one recording per memory, replayed
// with each memory's new contents.
static void bound_inputs_convert_on_the_device(void **state)
{
    (void)state;
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, REEL_PRECISION_FP32), *gpu = session_on(m, dev, REEL_PRECISION_FP16);
    const int64_t shape[] = { 1, 4, 8, 8 };
    reel_mem *mems[2] = { device_mem(1024), device_mem(1024) };
    const int order[] = { 0, 1, 0, 1, 0 };
    for (unsigned r = 0; r < G_N_ELEMENTS(order); r++) {
        reel_buffer *host = host_tensor(4, shape, 50 + r), *want[1], *got[1];
        reel_mem *mem = mems[order[r]];
        assert_int_equal(reel_mem_upload(mem, 0, host->data, host->size, NULL), 0);
        reel_caps f = host->format;
        f.memory = REEL_MEMORY_DEVICE;
        reel_buffer *in = reel_buffer_new_device(&f, reel_mem_ref(mem));
        run(cpu, &host, want);
        run(gpu, &in, got);
        assert_close(got, want, 1, 2e-3);
        reel_session_placement p = placement(gpu);
        assert_int_equal(p.bytes_to_device, 0);
        assert_int_equal(p.bytes_to_host, 512);
        assert_int_equal(p.recordings, r == 0 ? 1 : 2);
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
        reel_buffer_unref(&host);
    }
    reel_mem_unref(&mems[0]);
    reel_mem_unref(&mems[1]);
    reel_session_destroy(&gpu);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// No 16-bit float support, no fp16: the cpu, as a device or as none.
static void fp16_is_refused_on_the_cpu(void **state)
{
    (void)state;
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    GError *error = NULL;
    reel_device *cpu = reel_device_open("cpu", &error);
    assert_non_null(cpu);
    reel_device *devices[] = { NULL, cpu };
    for (size_t i = 0; i < G_N_ELEMENTS(devices); i++) {
        reel_session *s = reel_session_new(m, reel_session_params(.device = devices[i],
                                                                  .precision = REEL_PRECISION_FP16), &error);
        assert_null(s);
        assert_int_equal(error->code, REEL_EUNSUPPORTED);
        assert_string_equal(error->message, "precision=fp16 needs a GPU with 16-bit float support; cpu has none");
        g_clear_error(&error);
    }
    reel_device_unref(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

static int setup(void **state)
{
    (void)state;
    GError *error = NULL;
    if (!(dev = reel_device_open("vulkan:0", &error))) {
        fprintf(stderr, "no Vulkan device: %s\n", error->message);
        g_error_free(error);
        return -1;
    }
    if (vk_ctx_init(&ctx, dev, &error) < 0) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        return -1;
    }
    ctx.f16 = true;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vk_ctx_clear(&ctx);
    reel_device_unref(&dev);
    return reel_device_validation_messages() == 0 ? 0 : -1;
}

int main(void)
{
    GError *error = NULL;
    reel_device *probe = reel_device_open("vulkan:0", &error);
    if (!probe) {
        printf("skipping: no Vulkan device (%s)\n", error->message);
        g_error_free(error);
        return 77;
    }
    bool fp16 = reel_device_info_of(probe)->fp16;
    reel_device_unref(&probe);
    if (!fp16) {
        printf("skipping: vulkan:0 has no 16-bit float support\n");
        return 77;
    }
    g_unsetenv("REEL_VULKAN_BATCH"); // gathered dispatches are what gets recorded
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
        cmocka_unit_test(fp16_is_refused_on_the_cpu),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

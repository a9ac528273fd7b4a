// The Vulkan Resize, Upsample and Pad ops (models/vulkan/ops_resize.c)
// against the cpu ops on seeded random inputs: each node inferred and run by
// models/cpu/, checked with its vk_op's supports() (inputs that are not
// constants without host data, as the executor passes them) and run on
// vulkan:0, results compared. Also what supports() must refuse. Exit 77
// without a Vulkan device; under REEL_VULKAN_VALIDATION=1 any validation
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
#include "models/vulkan/vk_ops.h"

#define MAX_IN 4

static reel_device *dev;
static vk_ctx ctx;

// ---- tensors ------------------------------------------------------------------

static reel_tensor *frand(int rank, const int64_t *shape, unsigned seed)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, shape);
    assert_non_null(t);
    float *d = t->data;
    for (size_t i = 0; i < t->nbytes / 4; i++)
        d[i] = -2 + 4 * (float)rand_r(&seed) / (float)RAND_MAX;
    return t;
}

static reel_tensor *i64s(int n, const int64_t *v)
{
    int64_t shape[1] = { n };
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_INT64, 1, shape);
    memcpy(t->data, v, sizeof(int64_t) * n);
    return t;
}

static reel_tensor *f32s(int n, const float *v)
{
    int64_t shape[1] = { n };
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, shape);
    memcpy(t->data, v, sizeof(float) * n);
    return t;
}

static reel_tensor *scalar(float v)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL);
    *(float *)t->data = v;
    return t;
}

// ---- nodes --------------------------------------------------------------------

typedef struct opcall {
    const char *op;
    reel_ir_attr attrs[8];
    int n_attrs;
    int opset;       // 0: 13
    unsigned hide;   // bit i: input i is constant for infer, but supports sees no data (computed at run time)
} opcall;

static void attr_str(opcall *c, const char *name, const char *v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_STRING, .s = (char *)v };
}

static void attr_ints(opcall *c, const char *name, int n, const int64_t *v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INTS, .ints = (int64_t *)v, .n = n };
}

static void attr_floats(opcall *c, const char *name, int n, const float *v)
{
    c->attrs[c->n_attrs++] =
        (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOATS, .floats = (float *)v, .n = n };
}

static void attr_float(opcall *c, const char *name, float v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOAT, .f = v };
}

static reel_mem *device_mem(size_t size)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = MAX(size, 16), .domain = REEL_MEM_DEVICE), &error);
    if (!m)
        fail_msg("%s", error->message);
    return m;
}

static int n_checked, n_refused;

// One node on the cpu and on vulkan:0. Takes the inputs (NULL: omitted);
// input 0 is data, the others constants. With `want_support` false, only
// checks supports() refuses; with `may_refuse`, either answer is fine.
static void run_case_(const opcall *c, int n_in, reel_tensor **in, bool want_support, bool may_refuse,
                      const char *what)
{
    const reel_op *op = reel_op_find(c->op);
    const vk_op *vop = vk_op_find(c->op);
    assert_non_null(op);
    assert_non_null(vop);
    reel_ir_graph *g = reel_ir_graph_new();
    g->opset = c->opset ? c->opset : 13;
    int inputs[MAX_IN], output;
    for (int i = 0; i < n_in; i++) {
        inputs[i] = -1;
        if (!in[i])
            continue;
        char name[8] = { 'x', (char)('0' + i) };
        inputs[i] = reel_ir_add_value(g, name);
        reel_ir_value *v = reel_ir_value_at(g, inputs[i]);
        v->dtype = in[i]->dtype;
        v->rank = in[i]->rank;
        memcpy(v->dims, in[i]->shape, sizeof v->dims);
        if (i > 0)
            v->constant = in[i]; // borrowed: unset before the graph is freed
    }
    output = reel_ir_add_value(g, "y");
    reel_ir_node n = { .name = "n", .op = (char *)c->op, .inputs = inputs, .n_inputs = n_in, .outputs = &output,
                       .n_outputs = 1, .attrs = (reel_ir_attr *)c->attrs, .n_attrs = c->n_attrs };
    GError *error = NULL;
    if (op->infer(g, &n, &error))
        fail_msg("%s: infer: %s", what, error->message);
    reel_ir_value *y = reel_ir_value_at(g, output);
    reel_tensor *want = reel_tensor_new(y->dtype, y->rank, y->dims), *got = reel_tensor_new(y->dtype, y->rank, y->dims);
    if (!want || !got)
        fail_msg("%s: infer left the output without a concrete shape", what);
    reel_tensor oview = *got, iview[MAX_IN], *iv[MAX_IN], *ov = &oview;
    oview.data = NULL;
    for (int i = 0; i < n_in; i++) {
        iv[i] = in[i] ? &iview[i] : NULL;
        if (in[i]) {
            iview[i] = *in[i];
            if (i == 0 || (c->hide & (1u << i)))
                iview[i].data = NULL;
        }
    }
    bool supported = vop->supports(&n, iv, &ov);
    if (supported != want_support && !may_refuse)
        fail_msg("%s: supports() says %s", what, supported ? "yes" : "no");
    if (supported) {
        size_t scratch = op->scratch ? op->scratch(&n, in, &want) : 0;
        reel_exec_ctx ectx = { .opset = g->opset, .threads = 1, .scratch = g_malloc(MAX(scratch, 16)),
                               .scratch_size = scratch };
        assert_int_equal(op->run(&n, in, &want, &ectx), 0);
        g_free(ectx.scratch);
        vk_tensor vi[MAX_IN], vo, *pvi[MAX_IN], *pvo = &vo;
        for (int i = 0; i < n_in; i++) {
            pvi[i] = in[i] ? &vi[i] : NULL;
            if (!in[i])
                continue;
            vi[i] = (vk_tensor){ device_mem(in[i]->nbytes), &iview[i] };
            if (in[i]->nbytes)
                assert_int_equal(reel_mem_upload(vi[i].mem, 0, in[i]->data, in[i]->nbytes, NULL), 0);
        }
        vo = (vk_tensor){ device_mem(got->nbytes), &oview };
        int rc = vop->run(&ctx, &n, pvi, &pvo);
        if (rc)
            fail_msg("%s: run: %s", what, reel_strerror(rc));
        if (got->nbytes)
            assert_int_equal(reel_mem_download(vo.mem, 0, got->data, got->nbytes, NULL), 0);
        const float *a = got->data, *b = want->data;
        for (size_t i = 0; i < want->nbytes / 4; i++)
            if (!(fabsf(a[i] - b[i]) <= 1e-5f * (1 + fabsf(b[i]))))
                fail_msg("%s: element %zu is %.9g on vulkan, %.9g on the cpu", what, i, a[i], b[i]);
        reel_mem_unref(&vo.mem);
        for (int i = 0; i < n_in; i++)
            if (in[i])
                reel_mem_unref(&vi[i].mem);
        n_checked++;
    } else {
        n_refused++;
        if (may_refuse)
            printf("  refused (allowed): %s\n", what);
    }
    for (int i = 0; i < n_in; i++) {
        if (in[i] && i > 0)
            reel_ir_value_at(g, inputs[i])->constant = NULL;
        reel_tensor_free(&in[i]);
    }
    reel_tensor_free(&want);
    reel_tensor_free(&got);
    reel_ir_graph_free(&g);
}

static void run_case(const opcall *c, int n_in, reel_tensor **in, bool want_support, const char *what)
{
    run_case_(c, n_in, in, want_support, false, what);
}

// ---- Resize -------------------------------------------------------------------

static const char *const ctms[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                    "asymmetric", "tf_half_pixel_for_nn" };
static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };

typedef struct rcase {
    int rank;
    int64_t x[4];
    float scales[4]; // all 0: sizes instead
    int64_t sizes[4];
} rcase;

static const rcase rcases[] = {
    { 4, { 1, 3, 5, 7 }, { 1, 1, 2, 2 }, { 0 } },         // YOLO's upsample
    { 4, { 2, 3, 8, 6 }, { 1, 1, 0.5f, 0.5f }, { 0 } },   // downscale
    { 4, { 1, 2, 6, 8 }, { 1, 1, 1.5f, 0.75f }, { 0 } },  // non-integer, up and down
    { 4, { 1, 2, 4, 5 }, { 1, 1, 2.5f, 1.25f }, { 0 } },
    { 4, { 1, 2, 5, 7 }, { 1, 1, 1, 3 }, { 0 } },         // one axis only
    { 4, { 1, 3, 5, 7 }, { 0 }, { 1, 3, 8, 4 } },         // sizes: 8/5, 4/7
    { 4, { 2, 1, 9, 4 }, { 0 }, { 2, 1, 4, 11 } },
    { 3, { 3, 6, 5 }, { 1, 0.5f, 3 }, { 0 } },            // rank 3
    { 2, { 7, 5 }, { 0 }, { 3, 12 } },                    // rank 2
};

static void rcase_inputs(const rcase *k, unsigned seed, reel_tensor **in)
{
    in[0] = frand(k->rank, k->x, seed);
    in[1] = NULL; // roi
    in[2] = k->scales[0] ? f32s(k->rank, k->scales) : NULL;
    in[3] = k->scales[0] ? NULL : i64s(k->rank, k->sizes);
}

static void resize_modes(void **state)
{
    (void)state;
    unsigned seed = 1;
    for (size_t k = 0; k < G_N_ELEMENTS(rcases); k++)
        for (size_t t = 0; t < G_N_ELEMENTS(ctms); t++)
            for (int m = 0; m < 1 + (int)G_N_ELEMENTS(nearests); m++) {
                opcall c = { .op = "Resize" };
                attr_str(&c, "coordinate_transformation_mode", ctms[t]);
                attr_str(&c, "mode", m == 0 ? "linear" : "nearest");
                if (m > 0)
                    attr_str(&c, "nearest_mode", nearests[m - 1]);
                reel_tensor *in[4];
                rcase_inputs(&rcases[k], seed++, in);
                char what[128];
                g_snprintf(what, sizeof what, "Resize case %zu %s %s", k, ctms[t], m ? nearests[m - 1] : "linear");
                // half_pixel_symmetric: the cpu's double arithmetic can
                // miss exact rounding ties, which supports() then refuses.
                run_case_(&c, in[3] ? 4 : 3, in, true, t == 1 && m > 0, what);
            }
}

static void resize_defaults_and_old_forms(void **state)
{
    (void)state;
    // Opset 13 defaults (nearest, half_pixel, round_prefer_floor).
    reel_tensor *in[4];
    rcase_inputs(&rcases[2], 7, in);
    run_case(&(opcall){ .op = "Resize" }, 3, in, true, "Resize defaults");
    // Opset 10: X and scales; asymmetric, floor.
    static const char *const modes[] = { "nearest", "linear" };
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 5; k++) {
            opcall c = { .op = "Resize", .opset = 10 };
            attr_str(&c, "mode", modes[m]);
            reel_tensor *x[2] = { frand(rcases[k].rank, rcases[k].x, 20 + k), f32s(4, rcases[k].scales) };
            run_case(&c, 2, x, true, "Resize-10");
        }
    // Upsample 9 (scales input) and 7 (attribute), nearest and (bi)linear.
    static const char *const umodes[] = { "nearest", "linear", "bilinear" };
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 5; k++) {
            opcall c = { .op = "Upsample", .opset = 9 };
            attr_str(&c, "mode", umodes[m]);
            reel_tensor *x[2] = { frand(rcases[k].rank, rcases[k].x, 40 + k), f32s(4, rcases[k].scales) };
            run_case(&c, 2, x, true, "Upsample-9");
            opcall c7 = { .op = "Upsample", .opset = 7 };
            attr_str(&c7, "mode", umodes[m]);
            attr_floats(&c7, "scales", 4, rcases[k].scales);
            reel_tensor *x7[1] = { frand(rcases[k].rank, rcases[k].x, 60 + k) };
            run_case(&c7, 1, x7, true, "Upsample-7");
        }
}

static void resize_refusals(void **state)
{
    (void)state;
    int64_t s4[4] = { 1, 2, 5, 6 };
    float up[4] = { 1, 1, 2, 2 }, chan[4] = { 1, 2, 2, 2 }, odd[4] = { 1, 1, 1.7f, 1.7f };
    opcall cubic = { .op = "Resize" };
    attr_str(&cubic, "mode", "cubic");
    run_case(&cubic, 3, (reel_tensor *[]){ frand(4, s4, 1), NULL, f32s(4, up) }, false, "cubic");
    run_case(&(opcall){ .op = "Resize" }, 3, (reel_tensor *[]){ frand(4, s4, 2), NULL, f32s(4, chan) }, false,
             "scaling C");
    run_case(&(opcall){ .op = "Resize" }, 3, (reel_tensor *[]){ frand(4, s4, 3), NULL, f32s(4, odd) }, false,
             "scale 1.7");
    run_case(&(opcall){ .op = "Resize", .hide = 4 }, 3, (reel_tensor *[]){ frand(4, s4, 4), NULL, f32s(4, up) },
             false, "scales computed at run time");
    opcall ax = { .op = "Resize", .opset = 18 };
    int64_t axes[2] = { 2, 3 };
    attr_ints(&ax, "axes", 2, axes);
    run_case(&ax, 3, (reel_tensor *[]){ frand(4, s4, 5), NULL, f32s(2, up + 2) }, false, "axes");
    opcall crop = { .op = "Resize" };
    attr_str(&crop, "coordinate_transformation_mode", "tf_crop_and_resize");
    float roi[8] = { 0, 0, 0.1f, 0.2f, 1, 1, 0.9f, 0.7f };
    run_case(&crop, 3, (reel_tensor *[]){ frand(4, s4, 6), f32s(8, roi), f32s(4, up) }, false, "tf_crop_and_resize");
}

// ---- Pad ----------------------------------------------------------------------

static void pads(void **state)
{
    (void)state;
    static const struct {
        int rank;
        int64_t x[6];
        int64_t pads[12];
    } cases[] = {
        { 4, { 1, 3, 5, 6 }, { 0, 0, 1, 2, 0, 0, 2, 1 } },
        { 4, { 2, 3, 4, 5 }, { 0, 1, 3, 3, 1, 0, 3, 3 } },   // C too, pads = d - 1
        { 4, { 1, 2, 3, 4 }, { 0, 0, 5, 4, 0, 0, 7, 6 } },   // pads beyond the dim (reflect wraps)
        { 3, { 3, 4, 5 }, { 1, 0, 2, 2, 3, 0 } },
        { 2, { 6, 7 }, { 2, 3, 1, 0 } },
        { 1, { 9 }, { 4, 2 } },
        { 6, { 2, 1, 2, 3, 2, 3 }, { 0, 0, 1, 0, 1, 1, 1, 0, 0, 2, 0, 1 } },
    };
    static const char *const modes[] = { "constant", "reflect", "edge" };
    unsigned seed = 100;
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++)
        for (int m = 0; m < 3; m++) {
            int r = cases[k].rank;
            char what[64];
            // Opset 13: pads and value as inputs.
            opcall c = { .op = "Pad" };
            attr_str(&c, "mode", modes[m]);
            g_snprintf(what, sizeof what, "Pad-13 case %zu %s", k, modes[m]);
            run_case(&c, 3, (reel_tensor *[]){ frand(r, cases[k].x, seed++), i64s(2 * r, cases[k].pads), scalar(1.5f) },
                     true, what);
            // Without a value input.
            run_case(&c, 2, (reel_tensor *[]){ frand(r, cases[k].x, seed++), i64s(2 * r, cases[k].pads) },
                     true, what);
            // Opset 2: attributes.
            opcall c2 = { .op = "Pad", .opset = 2 };
            attr_str(&c2, "mode", modes[m]);
            attr_ints(&c2, "pads", 2 * r, cases[k].pads);
            attr_float(&c2, "value", -3.25f);
            g_snprintf(what, sizeof what, "Pad-2 case %zu %s", k, modes[m]);
            run_case(&c2, 1, (reel_tensor *[]){ frand(r, cases[k].x, seed++) },
                     true, what);
        }
    // Negative pads crop (the cpu takes them in every mode).
    int64_t x4[4] = { 1, 2, 6, 7 }, neg[8] = { 0, 0, -1, 2, 0, -1, 1, -3 };
    for (int m = 0; m < 3; m++) {
        opcall c = { .op = "Pad" };
        attr_str(&c, "mode", modes[m]);
        run_case(&c, 2, (reel_tensor *[]){ frand(4, x4, seed++), i64s(8, neg) }, true, "Pad negative");
    }
}

static void pad_refusals(void **state)
{
    (void)state;
    int64_t x4[4] = { 1, 2, 3, 4 }, p4[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
    run_case(&(opcall){ .op = "Pad", .hide = 2 }, 2, (reel_tensor *[]){ frand(4, x4, 1), i64s(8, p4) }, false,
             "pads computed at run time");
    int64_t x7[7] = { 1, 2, 1, 2, 1, 2, 3 }, p7[14] = { 0 };
    p7[6] = 1;
    run_case(&(opcall){ .op = "Pad" }, 2, (reel_tensor *[]){ frand(7, x7, 2), i64s(14, p7) }, false, "rank 7");
    int64_t s2[2] = { 3, 4 };
    reel_tensor *xi = reel_tensor_new(REEL_DTYPE_INT64, 2, s2);
    int64_t p2[4] = { 1, 1, 1, 1 };
    run_case(&(opcall){ .op = "Pad" }, 2, (reel_tensor *[]){ xi, i64s(4, p2) }, false, "int64 data");
}

static void summary(void **state)
{
    (void)state;
    printf("%d cases checked on vulkan, %d refused as expected\n", n_checked, n_refused);
}

// ---- fixture ------------------------------------------------------------------

static int setup(void **state)
{
    (void)state;
    GError *error = NULL;
    dev = reel_device_open("vulkan:0", &error);
    if (!dev) {
        fprintf(stderr, "no Vulkan device: %s\n", error->message);
        g_error_free(error);
        return -1;
    }
    if (vk_ctx_init(&ctx, dev, &error) == 0)
        return 0;
    fprintf(stderr, "%s\n", error->message);
    g_error_free(error);
    return -1;
}

static int teardown(void **state)
{
    (void)state;
    vk_ctx_clear(&ctx);
    reel_device_unref(&dev);
    // Messages can come from any call, teardown included.
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
    reel_device_unref(&probe);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resize_modes), cmocka_unit_test(resize_defaults_and_old_forms),
        cmocka_unit_test(resize_refusals), cmocka_unit_test(pads), cmocka_unit_test(pad_refusals),
        cmocka_unit_test(summary),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

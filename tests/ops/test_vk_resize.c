// The Vulkan Resize, Upsample and Pad ops (models/vulkan/ops_resize.c)
// against the cpu ops on seeded random inputs: each node inferred and run by
// models/cpu/, checked with its vk_op's supports() (inputs that are not
// constants without host data, as the executor passes them) and run on
// vulkan:0, results compared. Also what supports() must refuse. Exit 77
// without a Vulkan device; under REEL_VULKAN_VALIDATION=1 any validation
// message fails the test.
#include <stdio.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

// ---- tensors ------------------------------------------------------------------

static reel_tensor *frand(int rank, const int64_t *shape, unsigned seed)
{
    return vkt_frand(rank, shape, seed, -2, 2);
}

static reel_tensor *i64s(int n, const int64_t *v)
{
    return vkt_ints(REEL_DTYPE_INT64, n, v);
}

static reel_tensor *f32s(int n, const float *v)
{
    int64_t shape[1] = { n };
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, shape);
    memcpy(t->data, v, sizeof(float) * n);
    return t;
}

// ---- nodes --------------------------------------------------------------------

static int n_checked, n_refused;

// One node on the cpu and on vulkan:0. Takes the inputs (NULL: omitted);
// input 0 is data, the others constants. With `want_support` false, only
// checks supports() refuses; with `may_refuse`, either answer is fine.
static void run_case_(const vkt_call *c, int n_in, reel_tensor **in, bool want_support, bool may_refuse,
                      const char *what)
{
    vkt_call call = *c;
    call.consts = ~1u;
    vkt_expect expect = may_refuse ? VKT_EITHER : want_support ? VKT_SUPPORTED : VKT_REFUSED;
    if (vkt_run_case(&call, n_in, in, expect, what)) {
        n_checked++;
        return;
    }
    n_refused++;
    if (may_refuse)
        printf("  refused (allowed): %s\n", what);
}

static void run_case(const vkt_call *c, int n_in, reel_tensor **in, bool want_support, const char *what)
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
                vkt_call c = { .op = "Resize" };
                vkt_attr_string(&c, "coordinate_transformation_mode", ctms[t]);
                vkt_attr_string(&c, "mode", m == 0 ? "linear" : "nearest");
                if (m > 0)
                    vkt_attr_string(&c, "nearest_mode", nearests[m - 1]);
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
    run_case(&(vkt_call){ .op = "Resize" }, 3, in, true, "Resize defaults");
    // Opset 10: X and scales; asymmetric, floor.
    static const char *const modes[] = { "nearest", "linear" };
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 5; k++) {
            vkt_call c = { .op = "Resize", .opset = 10 };
            vkt_attr_string(&c, "mode", modes[m]);
            reel_tensor *x[2] = { frand(rcases[k].rank, rcases[k].x, 20 + k), f32s(4, rcases[k].scales) };
            run_case(&c, 2, x, true, "Resize-10");
        }
    // Upsample 9 (scales input) and 7 (attribute), nearest and (bi)linear.
    static const char *const umodes[] = { "nearest", "linear", "bilinear" };
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 5; k++) {
            vkt_call c = { .op = "Upsample", .opset = 9 };
            vkt_attr_string(&c, "mode", umodes[m]);
            reel_tensor *x[2] = { frand(rcases[k].rank, rcases[k].x, 40 + k), f32s(4, rcases[k].scales) };
            run_case(&c, 2, x, true, "Upsample-9");
            vkt_call c7 = { .op = "Upsample", .opset = 7 };
            vkt_attr_string(&c7, "mode", umodes[m]);
            vkt_attr_floats(&c7, "scales", 4, rcases[k].scales);
            reel_tensor *x7[1] = { frand(rcases[k].rank, rcases[k].x, 60 + k) };
            run_case(&c7, 1, x7, true, "Upsample-7");
        }
}

static void resize_refusals(void **state)
{
    (void)state;
    int64_t s4[4] = { 1, 2, 5, 6 };
    float up[4] = { 1, 1, 2, 2 }, chan[4] = { 1, 2, 2, 2 }, odd[4] = { 1, 1, 1.7f, 1.7f };
    vkt_call cubic = { .op = "Resize" };
    vkt_attr_string(&cubic, "mode", "cubic");
    run_case(&cubic, 3, (reel_tensor *[]){ frand(4, s4, 1), NULL, f32s(4, up) }, false, "cubic");
    run_case(&(vkt_call){ .op = "Resize" }, 3, (reel_tensor *[]){ frand(4, s4, 2), NULL, f32s(4, chan) }, false,
             "scaling C");
    run_case(&(vkt_call){ .op = "Resize" }, 3, (reel_tensor *[]){ frand(4, s4, 3), NULL, f32s(4, odd) }, false,
             "scale 1.7");
    run_case(&(vkt_call){ .op = "Resize", .hide = 4 }, 3, (reel_tensor *[]){ frand(4, s4, 4), NULL, f32s(4, up) },
             false, "scales computed at run time");
    vkt_call ax = { .op = "Resize", .opset = 18 };
    int64_t axes[2] = { 2, 3 };
    vkt_attr_ints(&ax, "axes", 2, axes);
    run_case(&ax, 3, (reel_tensor *[]){ frand(4, s4, 5), NULL, f32s(2, up + 2) }, false, "axes");
    vkt_call crop = { .op = "Resize" };
    vkt_attr_string(&crop, "coordinate_transformation_mode", "tf_crop_and_resize");
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
            vkt_call c = { .op = "Pad" };
            vkt_attr_string(&c, "mode", modes[m]);
            g_snprintf(what, sizeof what, "Pad-13 case %zu %s", k, modes[m]);
            reel_tensor *value = vkt_scalar(1.5f);
            run_case(&c, 3, (reel_tensor *[]){ frand(r, cases[k].x, seed++), i64s(2 * r, cases[k].pads), value },
                     true, what);
            // Without a value input.
            run_case(&c, 2, (reel_tensor *[]){ frand(r, cases[k].x, seed++), i64s(2 * r, cases[k].pads) },
                     true, what);
            // Opset 2: attributes.
            vkt_call c2 = { .op = "Pad", .opset = 2 };
            vkt_attr_string(&c2, "mode", modes[m]);
            vkt_attr_ints(&c2, "pads", 2 * r, cases[k].pads);
            vkt_attr_float(&c2, "value", -3.25f);
            g_snprintf(what, sizeof what, "Pad-2 case %zu %s", k, modes[m]);
            run_case(&c2, 1, (reel_tensor *[]){ frand(r, cases[k].x, seed++) },
                     true, what);
        }
    // Negative pads crop (the cpu takes them in every mode).
    int64_t x4[4] = { 1, 2, 6, 7 }, neg[8] = { 0, 0, -1, 2, 0, -1, 1, -3 };
    for (int m = 0; m < 3; m++) {
        vkt_call c = { .op = "Pad" };
        vkt_attr_string(&c, "mode", modes[m]);
        run_case(&c, 2, (reel_tensor *[]){ frand(4, x4, seed++), i64s(8, neg) }, true, "Pad negative");
    }
}

static void pad_refusals(void **state)
{
    (void)state;
    int64_t x4[4] = { 1, 2, 3, 4 }, p4[8] = { 0, 0, 1, 1, 0, 0, 1, 1 };
    run_case(&(vkt_call){ .op = "Pad", .hide = 2 }, 2, (reel_tensor *[]){ frand(4, x4, 1), i64s(8, p4) }, false,
             "pads computed at run time");
    int64_t x7[7] = { 1, 2, 1, 2, 1, 2, 3 }, p7[14] = { 0 };
    p7[6] = 1;
    run_case(&(vkt_call){ .op = "Pad" }, 2, (reel_tensor *[]){ frand(7, x7, 2), i64s(14, p7) }, false, "rank 7");
    int64_t s2[2] = { 3, 4 };
    reel_tensor *xi = reel_tensor_new(REEL_DTYPE_INT64, 2, s2);
    int64_t p2[4] = { 1, 1, 1, 1 };
    run_case(&(vkt_call){ .op = "Pad" }, 2, (reel_tensor *[]){ xi, i64s(4, p2) }, false, "int64 data");
}

static void summary(void **state)
{
    (void)state;
    printf("%d cases checked on vulkan, %d refused as expected\n", n_checked, n_refused);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(resize_modes), cmocka_unit_test(resize_defaults_and_old_forms),
        cmocka_unit_test(resize_refusals), cmocka_unit_test(pads), cmocka_unit_test(pad_refusals),
        cmocka_unit_test(summary),
    };
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 13, false);
}

// The Vulkan unary ops (models/vulkan/ops_unary.c, op codes of
// gpu/shaders/nn_unary.comp) against the cpu ops of models/cpu/unary.c on
// seeded random inputs over several shapes, on halves, zeros, infinities
// and NaN, with attributes; and what supports() must refuse. With the
// argument fp16: the same in a float16-storage context. Exit 77 without a
// Vulkan device; under REEL_VULKAN_VALIDATION=1 any validation message
// fails the test.
#include <math.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

typedef struct shape {
    int rank;
    int64_t d[4];
} shape;

static reel_tensor *values(int n, const float *v)
{
    int64_t len = n;
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, &len);
    memcpy(t->data, v, sizeof(float) * (size_t)n);
    return t;
}

// Every op over random values in its range, in four shapes (a rank-0 and
// an empty one among them).
static void random_inputs(void **state)
{
    (void)state;
    static const shape shapes[] = { { 3, { 3, 4, 5 } }, { 1, { 1000 } }, { 0, { 0 } }, { 4, { 2, 0, 3, 1 } } };
    static const struct {
        const char *op;
        float lo, hi, tol;
        bool exact;
    } ops[] = {
        { "Floor", -50, 50, 0, true },      { "Ceil", -50, 50, 0, true },
        { "Round", -50, 50, 0, true },      { "Sign", -2, 2, 0, true },
        { "Sin", -30, 30, 2e-5f, false },   { "Cos", -30, 30, 2e-5f, false },
        { "Erf", -4, 4, 2e-5f, false },     { "Elu", -10, 10, 2e-5f, false },
        { "Selu", -10, 10, 2e-5f, false },  { "Celu", -10, 10, 2e-5f, false },
        { "ThresholdedRelu", -3, 3, 0, true }, { "Softplus", -30, 30, 2e-5f, false },
        { "Softsign", -10, 10, 1e-5f, false }, { "Mish", -20, 20, 2e-5f, false },
        { "Gelu", -8, 8, 2e-5f, false },
    };
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++)
        for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
            reel_tensor *in[1] = { vkt_frand(shapes[s].rank, shapes[s].d, (unsigned)(o * 10 + s), ops[o].lo,
                                             ops[o].hi) };
            char what[64];
            g_snprintf(what, sizeof what, "%s shape %zu", ops[o].op, s);
            vkt_check(&(vkt_call){ .op = ops[o].op, .tol = ops[o].tol, .exact = ops[o].exact }, 1, in, what);
        }
}

// Values where the shader's own erf, expm1, log1p and tanh and its sin
// reduction could go wrong: halves, tiny and huge values, signed zeros,
// infinities, NaN.
static void special_values(void **state)
{
    (void)state;
    static const float v[] = { 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 0.0f, -0.0f, 1e-7f, -1e-7f, 1e-3f, -1e-3f,
                               0.49f, -0.51f, 0.1f, -0.1f, 3.0f, -3.0f, 9.0f, -9.0f, 88.0f, -88.0f, 1e4f, -1e4f,
                               INFINITY, -INFINITY, NAN };
    const int n = (int)G_N_ELEMENTS(v);
    static const char *const ops[] = { "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Erf", "Elu", "Selu",
                                       "Celu", "ThresholdedRelu", "Softplus", "Softsign", "Mish", "Gelu" };
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
        vkt_call c = { .op = ops[o], .tol = 2e-5f };
        // Large arguments of sin and cos: the float32 reduction by whole
        // turns is good to about 1e-7 per turn of 2 pi.
        if (strcmp(ops[o], "Sin") == 0 || strcmp(ops[o], "Cos") == 0)
            c.tol = 1e-3f;
        vkt_check(&c, 1, (reel_tensor *[]){ values(n, v) }, ops[o]);
    }
}

// Parameters from attributes; Gelu's tanh form.
static void attributes(void **state)
{
    (void)state;
    const int64_t s[2] = { 9, 31 };
    vkt_call c = { .op = "Elu", .tol = 2e-5f };
    vkt_attr_float(&c, "alpha", 0.3f);
    vkt_check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s, 1, -4, 4) }, "Elu alpha");
    c = (vkt_call){ .op = "Selu", .tol = 2e-5f };
    vkt_attr_float(&c, "alpha", 2.0f);
    vkt_attr_float(&c, "gamma", 3.0f);
    vkt_check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s, 2, -4, 4) }, "Selu alpha gamma");
    c = (vkt_call){ .op = "Celu", .tol = 2e-5f };
    vkt_attr_float(&c, "alpha", 0.25f);
    vkt_check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s, 3, -4, 4) }, "Celu alpha");
    c = (vkt_call){ .op = "ThresholdedRelu", .exact = true };
    vkt_attr_float(&c, "alpha", -0.5f);
    vkt_check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s, 4, -2, 2) }, "ThresholdedRelu alpha");
    c = (vkt_call){ .op = "Gelu", .tol = 2e-5f };
    vkt_attr_string(&c, "approximate", "tanh");
    vkt_check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s, 5, -8, 8) }, "Gelu tanh");
    c = (vkt_call){ .op = "Gelu", .tol = 2e-5f };
    vkt_attr_string(&c, "approximate", "none");
    vkt_check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s, 6, -8, 8) }, "Gelu none");
}

// What the cpu takes but the device does not: float64, integers, and the
// ops the shader has no code for.
static void refusals(void **state)
{
    (void)state;
    const int64_t len = 6;
    reel_tensor *d = reel_tensor_new(REEL_DTYPE_FLOAT64, 1, &len);
    for (int i = 0; i < 6; i++)
        ((double *)d->data)[i] = i - 2.5;
    vkt_refuse(&(vkt_call){ .op = "Floor" }, 1, (reel_tensor *[]){ d }, "Floor float64");
    vkt_refuse(&(vkt_call){ .op = "Sign" }, 1,
               (reel_tensor *[]){ vkt_ints(REEL_DTYPE_INT32, 4, (const int64_t[]){ -3, 0, 2, 7 }) }, "Sign int32");
    // Ops the shader has no code for stay on the cpu.
    static const char *const cpu_only[] = { "Tan", "Asin", "Acosh", "Shrink", "IsInf", "IsNaN" };
    for (size_t i = 0; i < G_N_ELEMENTS(cpu_only); i++)
        assert_null(vk_op_find(cpu_only[i]));
}

int main(int argc, char **argv)
{
    bool f16 = argc > 1 && strcmp(argv[1], "fp16") == 0;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_inputs),
        cmocka_unit_test(special_values),
        cmocka_unit_test(attributes),
        cmocka_unit_test(refusals),
    };
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 20, f16);
}

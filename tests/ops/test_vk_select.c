// The Vulkan ArgMax and ArgMin (models/vulkan/ops_select.c) against the cpu
// ops: every axis, keepdims, select_last_index, values with many ties and
// NaN, short axes (an invocation per output) and long ones (a workgroup per
// output), more outputs than one dispatch row holds; and what supports()
// must refuse. Exit 77 without a Vulkan device; under
// REEL_VULKAN_VALIDATION=1 any validation message fails the test.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

typedef struct shape {
    int rank;
    int64_t d[6];
} shape;

// Small integers as floats (ties everywhere), with every 37th a NaN when nan.
static reel_tensor *tied(shape s, unsigned seed, bool nan)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, s.rank, s.d);
    assert_non_null(t);
    float *v = t->data;
    int64_t n = reel_tensor_count(s.rank, s.d);
    for (int64_t i = 0; i < n; i++)
        v[i] = nan && i % 37 == 5 ? NAN : (float)(rand_r(&seed) % 5) - 2.0f;
    return t;
}

static void args(void **state)
{
    (void)state;
    static const shape shapes[] = {
        { 1, { 7 } },          { 2, { 3, 5 } },          { 3, { 2, 3, 4 } },    { 4, { 2, 1, 3, 5 } },
        { 2, { 2, 1000 } },    { 3, { 2, 300, 3 } },     { 2, { 70000, 3 } },   { 3, { 1, 21, 64 } },
    };
    static const char *const ops[] = { "ArgMax", "ArgMin" };
    unsigned seed = 900;
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++)
        for (size_t k = 0; k < G_N_ELEMENTS(shapes); k++)
            for (int axis = -1; axis < shapes[k].rank; axis++)
                for (int v = 0; v < 4; v++) {
                    bool last = v & 1, nan = v & 2;
                    vkt_call c = { .op = ops[o] };
                    vkt_attr_int(&c, "axis", axis);
                    vkt_attr_int(&c, "keepdims", (int)(k + (size_t)v) % 2);
                    vkt_attr_int(&c, "select_last_index", last);
                    char what[96];
                    g_snprintf(what, sizeof what, "%s shape %zu axis %d%s%s", ops[o], k, axis,
                               last ? " last" : "", nan ? " NaN" : "");
                    vkt_check(&c, 1, (reel_tensor *[]){ tied(shapes[k], seed++, nan) }, what);
                }
}

static void refusals(void **state)
{
    (void)state;
    vkt_call c = { .op = "ArgMax" };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_INT32, 2, (int64_t[]){ 3, 4 });
    vkt_refuse(&c, 1, (reel_tensor *[]){ x }, "ArgMax of int32");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(args),
        cmocka_unit_test(refusals),
    };
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 18, false);
}

// The Vulkan kernels of models/vulkan/ops_norm.c (LayerNormalization,
// GroupNormalization, InstanceNormalization), ops_index.c (GatherElements),
// ops_select.c (TopK) and ops_misc.c's newer comparisons and bool logic
// against the cpu ops: negative axes, rows longer and shorter than a
// workgroup, Mean and InvStdDev, per-group and per-channel affines, int32
// and int64 indices and 8-byte data, broadcasting, ties and NaN, K as an
// attribute and an input; and what supports() must refuse (a broadcast
// Scale, an empty tensor, a constant index out of range, bool data, k past
// 32, K computed at run time). The normalizations run again in an fp16
// context. Exit 77 without a Vulkan device; under REEL_VULKAN_VALIDATION=1
// any validation message fails the test.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

static reel_tensor *frand(int rank, const int64_t *shape, unsigned seed)
{
    return vkt_frand(rank, shape, seed, -3.0f, 5.0f);
}

static void layer_norm(void **state)
{
    (void)state;
    static const struct {
        int rank;
        int64_t d[4];
        int axis;
    } cases[] = {
        { 2, { 3, 5 }, -1 }, { 2, { 3, 5 }, 0 },      { 3, { 2, 3, 700 }, -1 },
        { 4, { 2, 3, 4, 5 }, 1 }, { 4, { 2, 3, 4, 5 }, -3 }, { 2, { 1000, 7 }, 1 },
    };
    unsigned seed = 100;
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++)
        for (int v = 0; v < 3; v++) {
            int rank = cases[k].rank, axis = cases[k].axis < 0 ? cases[k].axis + rank : cases[k].axis;
            vkt_call c = { .op = "LayerNormalization", .opset = 17, .n_out = v == 2 ? 3 : 1, .tol = 1e-4f };
            vkt_attr_int(&c, "axis", cases[k].axis);
            vkt_attr_float(&c, "epsilon", v == 1 ? 1e-2f : 1e-5f);
            reel_tensor *x = frand(rank, cases[k].d, seed++);
            reel_tensor *sc = frand(rank - axis, cases[k].d + axis, seed++);
            reel_tensor *b = v == 1 ? NULL : frand(rank - axis, cases[k].d + axis, seed++);
            char what[64];
            g_snprintf(what, sizeof what, "LayerNormalization case %zu variant %d", k, v);
            vkt_check(&c, v == 1 ? 2 : 3, (reel_tensor *[]){ x, sc, b }, what);
        }
}

static void group_norms(void **state)
{
    (void)state;
    unsigned seed = 200;
    // InstanceNormalization: a plane of one element, a plane past a workgroup.
    static const int64_t shapes[][4] = { { 2, 3, 1, 1 }, { 1, 4, 30, 20 }, { 3, 2, 5, 0 } };
    for (int k = 0; k < 2; k++) {
        vkt_call c = { .op = "InstanceNormalization", .tol = 1e-4f };
        vkt_attr_float(&c, "epsilon", 1e-3f);
        const int64_t *d = shapes[k];
        vkt_check(&c, 3,
                  (reel_tensor *[]){ frand(4, d, seed++), frand(1, d + 1, seed++), frand(1, d + 1, seed++) },
                  "InstanceNormalization");
    }
    // GroupNormalization: opset 18 (per group) and 21 (per channel).
    for (int opset = 18; opset <= 21; opset += 3) {
        int64_t d[3] = { 2, 6, 9 }, G = 3, na = opset >= 21 ? 6 : G;
        vkt_call c = { .op = "GroupNormalization", .opset = opset, .tol = 1e-4f };
        vkt_attr_int(&c, "num_groups", G);
        char what[64];
        g_snprintf(what, sizeof what, "GroupNormalization opset %d", opset);
        vkt_check(&c, 3, (reel_tensor *[]){ frand(3, d, seed++), frand(1, &na, seed++), frand(1, &na, seed++) },
                  what);
    }
}

static void norm_refusals(void **state)
{
    (void)state;
    unsigned seed = 300;
    // A Scale broadcast along the normalized dims: the cpu expands it.
    vkt_call c = { .op = "LayerNormalization", .opset = 17 };
    vkt_attr_int(&c, "axis", 1);
    int64_t d[3] = { 2, 3, 4 }, one[2] = { 1, 4 };
    vkt_refuse(&c, 2, (reel_tensor *[]){ frand(3, d, seed++), frand(2, one, seed++) }, "broadcast Scale");
    // An empty X.
    vkt_call e = { .op = "InstanceNormalization" };
    int64_t z[4] = { 3, 2, 5, 0 };
    vkt_refuse(&e, 3, (reel_tensor *[]){ frand(4, z, seed++), frand(1, z + 1, seed++), frand(1, z + 1, seed++) },
               "empty InstanceNormalization");
}

// Indices in [-dim, dim) of dtype dt and shape s.
static reel_tensor *indices(reel_dtype dt, int rank, const int64_t *s, int64_t dim, unsigned seed)
{
    reel_tensor *t = reel_tensor_new(dt, rank, s);
    assert_non_null(t);
    int64_t n = reel_tensor_count(rank, s);
    for (int64_t i = 0; i < n; i++)
        vkt_set_int(t, i, (int64_t)(rand_r(&seed) % (unsigned)(2 * dim)) - dim);
    return t;
}

static void gather_elements(void **state)
{
    (void)state;
    int64_t xs[3] = { 3, 4, 5 }, is[3] = { 2, 3, 7 };
    unsigned seed = 400;
    for (int axis = -3; axis < 3; axis++)
        for (int v = 0; v < 3; v++) {
            int a = axis < 0 ? axis + 3 : axis;
            int64_t s[3] = { 2, 3, 4 };
            s[a] = is[a];
            reel_tensor *x;
            if (v == 2) { // int64 data: two words an element
                x = reel_tensor_new(REEL_DTYPE_INT64, 3, xs);
                for (int64_t i = 0; i < 60; i++)
                    ((int64_t *)x->data)[i] = (i - 30) * 0x100000001ll;
            } else {
                x = frand(3, xs, seed++);
            }
            vkt_call c = { .op = "GatherElements", .exact = true };
            vkt_attr_int(&c, "axis", axis);
            char what[64];
            g_snprintf(what, sizeof what, "GatherElements axis %d variant %d", axis, v);
            reel_dtype dt = v == 1 ? REEL_DTYPE_INT32 : REEL_DTYPE_INT64;
            vkt_check(&c, 2, (reel_tensor *[]){ x, indices(dt, 3, s, xs[a], seed++) }, what);
        }
    // A constant index out of range: the cpu's to refuse.
    vkt_call c = { .op = "GatherElements", .consts = 2u };
    int64_t one = 1;
    reel_tensor *idx = vkt_ints(REEL_DTYPE_INT64, 1, (int64_t[]){ 5 });
    (void)one;
    vkt_refuse(&c, 2, (reel_tensor *[]){ frand(1, (int64_t[]){ 4 }, seed++), idx }, "index out of range");
    // bool data: one byte an element.
    vkt_call b = { .op = "GatherElements" };
    reel_tensor *xb = reel_tensor_new(REEL_DTYPE_BOOL, 1, (int64_t[]){ 4 });
    vkt_refuse(&b, 2, (reel_tensor *[]){ xb, vkt_ints(REEL_DTYPE_INT64, 1, (int64_t[]){ 1 }) }, "bool data");
}

// Small integers as floats (ties everywhere), every 11th a NaN.
static reel_tensor *tied(int rank, const int64_t *s, unsigned seed)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, s);
    assert_non_null(t);
    int64_t n = reel_tensor_count(rank, s);
    for (int64_t i = 0; i < n; i++)
        ((float *)t->data)[i] = i % 11 == 4 ? NAN : (float)(rand_r(&seed) % 3);
    return t;
}

static reel_tensor *bools(int rank, const int64_t *s, unsigned seed)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_BOOL, rank, s);
    assert_non_null(t);
    int64_t n = reel_tensor_count(rank, s);
    for (int64_t i = 0; i < n; i++)
        vkt_set_int(t, i, rand_r(&seed) % 2);
    return t;
}

// The comparisons and the logic, broadcasting (a scalar, a row, a column)
// and with an empty-free odd length (the kernel writes bools by the word).
static void compare_logic(void **state)
{
    (void)state;
    static const char *const cmp[] = { "Less", "LessOrEqual", "GreaterOrEqual" };
    static const char *const logic[] = { "And", "Or", "Xor" };
    int64_t as[3] = { 2, 3, 5 }, bs[3][3] = { { 1, 1, 1 }, { 1, 1, 5 }, { 2, 3, 1 } };
    unsigned seed = 500;
    for (int o = 0; o < 3; o++)
        for (int k = 0; k < 3; k++) {
            char what[64];
            vkt_call c = { .op = cmp[o] };
            g_snprintf(what, sizeof what, "%s float32 b %d", cmp[o], k);
            vkt_check(&c, 2, (reel_tensor *[]){ tied(3, as, seed++), tied(3, bs[k], seed++) }, what);
            reel_tensor *a = reel_tensor_new(REEL_DTYPE_INT64, 3, as), *b = reel_tensor_new(REEL_DTYPE_INT64, 2, as + 1);
            for (int64_t i = 0; i < 30; i++)
                vkt_set_int(a, i, (i % 7 - 3) * 0x100000000ll + i % 2);
            for (int64_t i = 0; i < 15; i++)
                vkt_set_int(b, i, (i % 5 - 2) * 0x100000000ll);
            g_snprintf(what, sizeof what, "%s int64", cmp[o]);
            vkt_check(&c, 2, (reel_tensor *[]){ a, b }, what);
            vkt_call l = { .op = logic[o] };
            g_snprintf(what, sizeof what, "%s b %d", logic[o], k);
            vkt_check(&l, 2, (reel_tensor *[]){ bools(3, as, seed++), bools(3, bs[k], seed++) }, what);
        }
    vkt_call n = { .op = "Not" };
    vkt_check(&n, 1, (reel_tensor *[]){ bools(3, as, seed++) }, "Not");
    vkt_check(&n, 1, (reel_tensor *[]){ bools(1, (int64_t[]){ 7 }, seed++) }, "Not of 7");
}

// TopK against the cpu: every axis, largest and smallest, k from 1 to the
// most the kernel keeps, ties and NaN; K from the input (opset 11) and the
// attribute (opset 1); what stays on the cpu.
static void topk(void **state)
{
    (void)state;
    int64_t s[3] = { 3, 40, 5 };
    static const int64_t ks[] = { 1, 3, 5, 32 };
    unsigned seed = 600;
    for (int axis = -3; axis < 3; axis++)
        for (size_t kk = 0; kk < G_N_ELEMENTS(ks); kk++)
            for (int largest = 0; largest < 2; largest++) {
                int a = axis < 0 ? axis + 3 : axis;
                if (ks[kk] > s[a])
                    continue;
                vkt_call c = { .op = "TopK", .opset = 11, .consts = 2u, .n_out = 2, .exact = true };
                vkt_attr_int(&c, "axis", axis);
                vkt_attr_int(&c, "largest", largest);
                char what[64];
                g_snprintf(what, sizeof what, "TopK axis %d k %d largest %d", axis, (int)ks[kk], largest);
                vkt_check(&c, 2, (reel_tensor *[]){ tied(3, s, seed++), vkt_ints(REEL_DTYPE_INT64, 1, &ks[kk]) },
                          what);
            }
    vkt_call old = { .op = "TopK", .opset = 1, .n_out = 2, .exact = true };
    vkt_attr_int(&old, "k", 2);
    vkt_check(&old, 1, (reel_tensor *[]){ tied(2, (int64_t[]){ 4, 9 }, seed++) }, "TopK opset 1");
    // k past what the kernel keeps, and K computed at run time.
    vkt_call big = { .op = "TopK", .opset = 11, .consts = 2u, .n_out = 2 };
    vkt_refuse(&big, 2, (reel_tensor *[]){ tied(1, (int64_t[]){ 40 }, seed++), vkt_ints(REEL_DTYPE_INT64, 1, (int64_t[]){ 33 }) },
               "TopK k 33");
    vkt_call hidden = { .op = "TopK", .opset = 11, .consts = 2u, .hide = 2u, .n_out = 2 };
    vkt_refuse(&hidden, 2, (reel_tensor *[]){ tied(1, (int64_t[]){ 40 }, seed++), vkt_ints(REEL_DTYPE_INT64, 1, (int64_t[]){ 3 }) },
               "TopK K at run time");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layer_norm),
        cmocka_unit_test(group_norms),
        cmocka_unit_test(norm_refusals),
        cmocka_unit_test(gather_elements),
        cmocka_unit_test(compare_logic),
        cmocka_unit_test(topk),
    };
    int rc = vkt_run_group(tests, G_N_ELEMENTS(tests), 18, false);
    if (rc != 0)
        return rc;
    // The normalizations again with float16 storage (their _f16 kernel).
    const struct CMUnitTest f16_tests[] = {
        cmocka_unit_test(layer_norm),
        cmocka_unit_test(group_norms),
    };
    return vkt_run_group(f16_tests, G_N_ELEMENTS(f16_tests), 18, true);
}

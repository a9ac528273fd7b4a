// The Vulkan elementwise, copy and Softmax ops (models/vulkan/ops_basic.c)
// against the cpu ops on seeded random inputs over many shapes: each node
// inferred and run by models/cpu/, then checked with its vk_op's supports()
// (inputs that are not constants without host data, as the executor passes
// them) and run on vulkan:0, results compared. Ops without a cpu version
// (Max, Min, Log, Neg, Abs, Reciprocal) against references written here.
// Also what supports() must refuse. Exit 77 without a Vulkan device; under
// REEL_VULKAN_VALIDATION=1 any validation message fails the test.
#include <math.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

// ---- references ---------------------------------------------------------------

// References for the ops the cpu does not have.
static float ref_max(float x, float y) { return isnan(x) || isnan(y) ? NAN : x > y ? x : y; }
static float ref_min(float x, float y) { return isnan(x) || isnan(y) ? NAN : x < y ? x : y; }
static float ref_log(float x) { return logf(x); }
static float ref_neg(float x) { return -x; }
static float ref_abs(float x) { return fabsf(x); }
static float ref_reciprocal(float x) { return 1.0f / x; }

static const struct {
    const char *op, *like; // `like`: a cpu op with the same shape inference
    float (*bin)(float, float);
    float (*un)(float);
} refs[] = {
    { "Max", "Add", ref_max, NULL },
    { "Min", "Add", ref_min, NULL },
    { "Log", "Relu", NULL, ref_log },
    { "Neg", "Relu", NULL, ref_neg },
    { "Abs", "Relu", NULL, ref_abs },
    { "Reciprocal", "Relu", NULL, ref_reciprocal },
};

// Naive numpy broadcasting: the element of `t` at output index i.
static float bcast_at(const reel_tensor *t, const reel_tensor *o, int64_t i)
{
    int64_t off = 0, s = 1;
    for (int d = o->rank - 1; d >= 0; d--) {
        int64_t c = i % o->shape[d];
        i /= o->shape[d];
        int id = d - (o->rank - t->rank);
        if (id < 0)
            continue;
        if (t->shape[id] != 1)
            off += c * s;
        s *= t->shape[id];
    }
    return ((const float *)t->data)[off];
}

static void reference(const char *op, reel_tensor **in, reel_tensor *out)
{
    float *o = out->data;
    int64_t n = reel_tensor_count(out->rank, out->shape);
    for (size_t r = 0; r < G_N_ELEMENTS(refs); r++) {
        if (strcmp(refs[r].op, op) != 0)
            continue;
        for (int64_t i = 0; i < n; i++)
            o[i] = refs[r].bin ? refs[r].bin(bcast_at(in[0], out, i), bcast_at(in[1], out, i))
                               : refs[r].un(((const float *)in[0]->data)[i]);
        return;
    }
    fail_msg("no reference for %s", op);
}

// One node on the cpu and on vulkan:0, the ops of refs[] against their
// references. Takes the inputs (NULL: omitted). With `want_support` false,
// only checks supports() refuses.
static void run_case(const vkt_call *c, int n_in, reel_tensor **in, bool want_support, const char *what)
{
    vkt_call call = *c;
    for (size_t r = 0; r < G_N_ELEMENTS(refs); r++)
        if (strcmp(refs[r].op, c->op) == 0) {
            call.infer_as = refs[r].like;
            call.reference = reference;
        }
    vkt_run_case(&call, n_in, in, want_support ? VKT_SUPPORTED : VKT_REFUSED, what);
}

static void check(const vkt_call *c, int n_in, reel_tensor **in, const char *what)
{
    run_case(c, n_in, in, true, what);
}

static void refuse(const vkt_call *c, int n_in, reel_tensor **in, const char *what)
{
    run_case(c, n_in, in, false, what);
}

// ---- elementwise --------------------------------------------------------------

typedef struct shape {
    int rank;
    int64_t d[8];
} shape;

static void binary_broadcast(void **state)
{
    (void)state;
    static const struct {
        shape a, b;
    } pairs[] = {
        { { 4, { 2, 3, 4, 5 } }, { 4, { 2, 3, 4, 5 } } },
        { { 4, { 2, 3, 4, 5 } }, { 1, { 5 } } },
        { { 1, { 5 } }, { 4, { 2, 3, 4, 5 } } },
        { { 4, { 2, 3, 4, 5 } }, { 4, { 1, 3, 1, 1 } } },
        { { 3, { 3, 1, 5 } }, { 2, { 4, 1 } } },
        { { 1, { 1 } }, { 2, { 2, 3 } } },
        { { 0, { 0 } }, { 2, { 2, 3 } } },
        { { 2, { 7, 3 } }, { 0, { 0 } } },
        { { 0, { 0 } }, { 0, { 0 } } },
        { { 6, { 2, 1, 3, 1, 2, 1 } }, { 6, { 1, 4, 1, 5, 1, 3 } } },
        { { 5, { 3, 1, 4, 1, 5 } }, { 5, { 1, 2, 1, 3, 1 } } },
        { { 7, { 7, 1, 1, 1, 1, 1, 2 } }, { 6, { 3, 1, 1, 1, 1, 2 } } },
        { { 8, { 2, 3, 1, 2, 1, 2, 1, 3 } }, { 3, { 1, 1, 3 } } },
        { { 2, { 300, 257 } }, { 1, { 257 } } },
        { { 3, { 2, 0, 3 } }, { 1, { 3 } } },
    };
    static const char *const ops[] = { "Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Max", "Min" };
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++) {
        for (size_t p = 0; p < G_N_ELEMENTS(pairs); p++) {
            unsigned seed = (unsigned)(o * 100 + p);
            bool is_pow = strcmp(ops[o], "Pow") == 0, is_div = strcmp(ops[o], "Div") == 0;
            reel_tensor *in[2] = {
                vkt_frand(pairs[p].a.rank, pairs[p].a.d, seed, is_pow ? 0.1f : -2, 2),
                vkt_frand(pairs[p].b.rank, pairs[p].b.d, seed + 7, is_div ? 0.5f : is_pow ? -3 : -2, is_pow ? 3 : 2),
            };
            vkt_call c = { .op = ops[o], .tol = is_pow ? 1e-4f : 0 };
            char what[64];
            g_snprintf(what, sizeof what, "%s pair %zu", ops[o], p);
            check(&c, 2, in, what);
        }
    }
    // Pow with a negative base: integer exponents keep the sign, others are NaN.
    int64_t s[1] = { 12 };
    reel_tensor *in[2] = { vkt_frand(1, s, 5, -3, 3), vkt_frand(1, s, 6, 0, 1) };
    float *y = in[1]->data, *x = in[0]->data;
    static const float ys[12] = { 0, 1, 2, 3, -1, -2, -3, 0.5f, 4, 5, 1.5f, 2 };
    memcpy(y, ys, sizeof ys);
    x[0] = -2;
    x[11] = 0;
    check(&(vkt_call){ .op = "Pow", .tol = 1e-4f }, 2, in, "Pow negative bases");
    // Square and square root through a constant exponent, as models have them.
    int64_t s3[3] = { 2, 5, 7 };
    reel_tensor *sq[2] = { vkt_frand(3, s3, 8, -3, 3), vkt_scalar(2) };
    check(&(vkt_call){ .op = "Pow", .consts = 2, .tol = 1e-4f }, 2, sq, "Pow x^2");
    reel_tensor *rt[2] = { vkt_frand(3, s3, 9, 0, 3), vkt_scalar(0.5f) };
    check(&(vkt_call){ .op = "Pow", .consts = 2, .tol = 1e-4f }, 2, rt, "Pow x^0.5");
    // Add of a tensor to itself (one memory bound twice).
    int64_t s2[2] = { 16, 9 };
    reel_tensor *aa[2] = { vkt_frand(2, s2, 10, -1, 1), NULL };
    aa[1] = reel_tensor_dup(aa[0]);
    check(&(vkt_call){ .op = "Mul" }, 2, aa, "Mul x*x");
}

static void unary_ops(void **state)
{
    (void)state;
    static const shape shapes[] = { { 3, { 3, 4, 5 } }, { 1, { 1000 } }, { 0, { 0 } }, { 4, { 2, 0, 3, 1 } } };
    static const struct {
        const char *op;
        float lo, hi, tol;
    } ops[] = {
        { "Relu", -2, 2, 0 }, { "LeakyRelu", -2, 2, 0 }, { "Sigmoid", -10, 10, 1e-4f },
        { "HardSigmoid", -5, 5, 0 }, { "HardSwish", -5, 5, 0 }, { "Tanh", -30, 30, 1e-4f },
        { "Exp", -80, 80, 1e-4f }, { "Sqrt", 0, 100, 1e-4f }, { "Log", 0.001f, 100, 1e-4f },
        { "Neg", -2, 2, 0 }, { "Abs", -2, 2, 0 }, { "Reciprocal", 0.1f, 10, 1e-4f }, { "Clip", -2, 2, 0 },
    };
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++)
        for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
            unsigned seed = (unsigned)(o * 10 + s);
            reel_tensor *in[1] = { vkt_frand(shapes[s].rank, shapes[s].d, seed, ops[o].lo, ops[o].hi) };
            char what[64];
            g_snprintf(what, sizeof what, "%s shape %zu", ops[o].op, s);
            check(&(vkt_call){ .op = ops[o].op, .tol = ops[o].tol }, 1, in, what);
        }
    int64_t s1[2] = { 7, 33 };
    // Parameters from attributes.
    vkt_call c = { .op = "LeakyRelu" };
    vkt_attr_float(&c, "alpha", 0.3f);
    check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s1, 1, -2, 2) }, "LeakyRelu alpha");
    c = (vkt_call){ .op = "HardSigmoid" };
    vkt_attr_float(&c, "alpha", 0.5f);
    vkt_attr_float(&c, "beta", 0.25f);
    check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s1, 2, -4, 4) }, "HardSigmoid alpha beta");
    // Clip: attributes before opset 11, constant inputs after.
    c = (vkt_call){ .op = "Clip", .opset = 6 };
    vkt_attr_float(&c, "min", -0.5f);
    vkt_attr_float(&c, "max", 0.25f);
    check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s1, 3, -2, 2) }, "Clip opset 6");
    c = (vkt_call){ .op = "Clip", .opset = 6 };
    vkt_attr_float(&c, "max", 0.25f);
    check(&c, 1, (reel_tensor *[]){ vkt_frand(2, s1, 4, -2, 2) }, "Clip opset 6 max only");
    check(&(vkt_call){ .op = "Clip", .consts = 6 }, 3,
          (reel_tensor *[]){ vkt_frand(2, s1, 5, -2, 2), vkt_scalar(0), vkt_scalar(6) },
          "Clip min max");
    check(&(vkt_call){ .op = "Clip", .consts = 6 }, 3,
          (reel_tensor *[]){ vkt_frand(2, s1, 6, -2, 2), NULL, vkt_scalar(0.5f) },
          "Clip max only");
    check(&(vkt_call){ .op = "Clip", .consts = 2 }, 2,
          (reel_tensor *[]){ vkt_frand(2, s1, 7, -2, 2), vkt_scalar(-0.1f) },
          "Clip min only");
    // Past 65535 groups: launches spread into y.
    int64_t big[1] = { 65535LL * 256 + 1000 };
    check(&(vkt_call){ .op = "Neg" }, 1, (reel_tensor *[]){ vkt_frand(1, big, 8, -1, 1) }, "Neg over 2-D launch");
}

// ---- copies -------------------------------------------------------------------

static void next_perm(int64_t *p, int n, bool *done)
{
    int i = n - 2;
    while (i >= 0 && p[i] >= p[i + 1])
        i--;
    if (i < 0) {
        *done = true;
        return;
    }
    int j = n - 1;
    while (p[j] <= p[i])
        j--;
    int64_t t = p[i];
    p[i] = p[j];
    p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) {
        t = p[a];
        p[a] = p[b];
        p[b] = t;
    }
}

static void transposes(void **state)
{
    (void)state;
    static const shape shapes[] = {
        { 2, { 17, 33 } }, { 3, { 2, 3, 4 } }, { 3, { 5, 1, 7 } }, { 4, { 2, 3, 4, 5 } }, { 4, { 1, 6, 1, 3 } },
        { 5, { 2, 3, 2, 4, 3 } }, { 6, { 2, 1, 3, 2, 2, 3 } },
    };
    unsigned seed = 100;
    for (size_t s = 0; s < G_N_ELEMENTS(shapes); s++) {
        int r = shapes[s].rank;
        int64_t perm[8];
        for (int i = 0; i < r; i++)
            perm[i] = i;
        bool done = false;
        int k = 0;
        // Every permutation up to rank 4; one in five beyond.
        for (; !done; next_perm(perm, r, &done), k++) {
            if (r > 4 && k % 5)
                continue;
            vkt_call c = { .op = "Transpose" };
            vkt_attr_ints(&c, "perm", r, perm);
            char what[64];
            g_snprintf(what, sizeof what, "Transpose shape %zu perm %d", s, k);
            check(&c, 1, (reel_tensor *[]){ vkt_frand(r, shapes[s].d, seed++, -1, 1) }, what);
        }
        check(&(vkt_call){ .op = "Transpose" }, 1, (reel_tensor *[]){ vkt_frand(r, shapes[s].d, seed++, -1, 1) },
              "Transpose default perm");
    }
}

static void concats(void **state)
{
    (void)state;
    unsigned seed = 200;
    static const shape base[] = { { 1, { 5 } }, { 2, { 3, 4 } }, { 3, { 2, 3, 4 } }, { 4, { 2, 3, 4, 5 } },
                                  { 5, { 2, 1, 3, 2, 2 } } };
    static const int64_t lens[][4] = { { 1, 2, 3, 0 }, { 4, 0, 2, 0 }, { 3, 3, 0, 0 }, { 2, 5, 1, 3 } };
    static const int counts[] = { 3, 3, 2, 4 };
    for (size_t b = 0; b < G_N_ELEMENTS(base); b++) {
        int r = base[b].rank;
        for (int axis = -r; axis < r; axis++) {
            int ax = axis < 0 ? axis + r : axis;
            for (size_t l = 0; l < G_N_ELEMENTS(lens); l++) {
                reel_tensor *in[4];
                for (int i = 0; i < counts[l]; i++) {
                    int64_t d[8];
                    memcpy(d, base[b].d, sizeof d);
                    d[ax] = lens[l][i];
                    in[i] = vkt_frand(r, d, seed++, -1, 1);
                }
                vkt_call c = { .op = "Concat" };
                vkt_attr_int(&c, "axis", axis);
                char what[64];
                g_snprintf(what, sizeof what, "Concat rank %d axis %d lens %zu", r, axis, l);
                check(&c, counts[l], in, what);
            }
        }
    }
}

static void splits(void **state)
{
    (void)state;
    unsigned seed = 300;
    int64_t s3[3] = { 4, 6, 5 };
    for (int axis = -3; axis < 3; axis++) {
        int ax = axis < 0 ? axis + 3 : axis;
        // Equal parts.
        vkt_call c = { .op = "Split", .n_out = 2 };
        vkt_attr_int(&c, "axis", axis);
        int64_t d[3] = { 4, 6, 4 };
        char what[64];
        g_snprintf(what, sizeof what, "Split axis %d equal", axis);
        check(&c, 1, (reel_tensor *[]){ vkt_frand(3, d, seed++, -1, 1) }, what);
        // Sizes from the attribute (opset 11) and from a constant input (13).
        int64_t sizes[3] = { 1, s3[ax] - 3, 2 };
        c = (vkt_call){ .op = "Split", .n_out = 3, .opset = 11 };
        vkt_attr_int(&c, "axis", axis);
        vkt_attr_ints(&c, "split", 3, sizes);
        g_snprintf(what, sizeof what, "Split axis %d opset 11", axis);
        check(&c, 1, (reel_tensor *[]){ vkt_frand(3, s3, seed++, -1, 1) }, what);
        int64_t sizes0[3] = { 0, s3[ax] - 1, 1 };
        c = (vkt_call){ .op = "Split", .n_out = 3, .consts = 2 };
        vkt_attr_int(&c, "axis", axis);
        g_snprintf(what, sizeof what, "Split axis %d opset 13", axis);
        check(&c, 2, (reel_tensor *[]){ vkt_frand(3, s3, seed++, -1, 1), vkt_ints(REEL_DTYPE_INT64, 3, sizes0) }, what);
    }
}

typedef struct slice_case {
    int n;
    int64_t starts[4], ends[4], axes[4], steps[4];
    bool no_axes, no_steps;
} slice_case;

static void slices(void **state)
{
    (void)state;
    unsigned seed = 400;
    int64_t s4[4] = { 3, 7, 6, 5 };
    static const slice_case cases[] = {
        { 1, { 1 }, { 3 }, { 1 }, { 1 }, false, false },
        { 2, { 0, 1 }, { 2, -1 }, { 0, 1 }, { 1, 2 }, .no_steps = true },
        { 2, { -1, 5 }, { -100, 0 }, { 2, 1 }, { -1, -2 }, false, false },
        { 3, { 0, 0, 0 }, { INT64_MAX, INT64_MAX, INT64_MAX }, { -1, -2, -3 }, { 3, 2, 4 }, false, false },
        { 2, { 2, -3 }, { 2, 100 }, { 0, 3 }, { 1, 1 }, false, false }, // empty along axis 0
        { 4, { 1, 6, 5, 4 }, { 3, -8, -7, -6 }, { 0, 1, 2, 3 }, { 1, -3, -2, -1 }, false, false },
        { 2, { 1, 2 }, { 3, 6 }, .no_axes = true, .no_steps = true },
        { 1, { 100 }, { -100 }, { 1 }, { -1 }, false, false },
    };
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
        const slice_case *sc = &cases[k];
        char what[64];
        for (int form = 0; form < 3; form++) {
            if (form == 0 && !sc->no_steps)
                continue; // opset 9 has no steps
            reel_tensor *in[5] = { vkt_frand(4, s4, seed++, -1, 1) };
            vkt_call c = { .op = "Slice" };
            int n_in = 1;
            if (form == 0) {
                // Opset 9: attributes.
                c.opset = 9;
                vkt_attr_ints(&c, "starts", sc->n, sc->starts);
                vkt_attr_ints(&c, "ends", sc->n, sc->ends);
                if (!sc->no_axes)
                    vkt_attr_ints(&c, "axes", sc->n, sc->axes);
            } else {
                reel_dtype dt = form == 1 ? REEL_DTYPE_INT64 : REEL_DTYPE_INT32;
                in[1] = vkt_ints(dt, sc->n, sc->starts);
                in[2] = vkt_ints(dt, sc->n, sc->ends);
                n_in = 3;
                if (!sc->no_axes || !sc->no_steps)
                    in[n_in++] = sc->no_axes ? NULL : vkt_ints(dt, sc->n, sc->axes);
                if (!sc->no_steps)
                    in[n_in++] = vkt_ints(dt, sc->n, sc->steps);
                c.consts = 0x1e;
                if (dt == REEL_DTYPE_INT32) { // INT64_MAX ends as INT32_MAX
                    int32_t *e = in[2]->data;
                    for (int i = 0; i < sc->n; i++)
                        if (sc->ends[i] > INT32_MAX)
                            e[i] = INT32_MAX;
                }
            }
            g_snprintf(what, sizeof what, "Slice case %zu form %d", k, form);
            check(&c, n_in, in, what);
        }
    }
    // Starts computed on the device: the cpu's business.
    int64_t st[1] = { 1 }, en[1] = { 3 };
    reel_tensor *in[3] = { vkt_frand(4, s4, seed++, -1, 1), vkt_ints(REEL_DTYPE_INT64, 1, st),
                           vkt_ints(REEL_DTYPE_INT64, 1, en) };
    refuse(&(vkt_call){ .op = "Slice", .consts = 6, .hide = 2 }, 3, in, "Slice with non-constant starts");
}

static void expands_and_plain(void **state)
{
    (void)state;
    unsigned seed = 500;
    static const struct {
        shape x;
        int n;
        int64_t to[6];
    } ex[] = {
        { { 2, { 3, 1 } }, 3, { 2, 3, 4 } },
        { { 1, { 1 } }, 2, { 5, 5 } },
        { { 3, { 2, 1, 3 } }, 3, { 2, 4, 3 } },
        { { 2, { 2, 3 } }, 1, { 1 } },
        { { 3, { 1, 3, 1 } }, 5, { 2, 2, 1, 3, 4 } },
        { { 0, { 0 } }, 2, { 3, 2 } },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(ex); i++) {
        char what[64];
        g_snprintf(what, sizeof what, "Expand case %zu", i);
        check(&(vkt_call){ .op = "Expand", .consts = 2 }, 2,
              (reel_tensor *[]){ vkt_frand(ex[i].x.rank, ex[i].x.d, seed++, -1, 1),
                                 vkt_ints(REEL_DTYPE_INT64, ex[i].n, ex[i].to) },
              what);
    }
    int64_t s4[4] = { 2, 3, 1, 4 }, shape2[2] = { 6, -1 }, ax1[1] = { 2 }, ax2[2] = { 0, 3 };
    check(&(vkt_call){ .op = "Reshape", .consts = 2 }, 2,
          (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1), vkt_ints(REEL_DTYPE_INT64, 2, shape2) }, "Reshape");
    vkt_call c = { .op = "Flatten" };
    vkt_attr_int(&c, "axis", 2);
    check(&c, 1, (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1) }, "Flatten");
    check(&(vkt_call){ .op = "Squeeze", .consts = 2 }, 2,
          (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1), vkt_ints(REEL_DTYPE_INT64, 1, ax1) }, "Squeeze opset 13");
    c = (vkt_call){ .op = "Squeeze", .opset = 11 };
    vkt_attr_ints(&c, "axes", 1, ax1);
    check(&c, 1, (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1) }, "Squeeze opset 11");
    check(&(vkt_call){ .op = "Squeeze" }, 1, (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1) }, "Squeeze all");
    check(&(vkt_call){ .op = "Unsqueeze", .consts = 2 }, 2,
          (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1), vkt_ints(REEL_DTYPE_INT64, 2, ax2) },
          "Unsqueeze opset 13");
    c = (vkt_call){ .op = "Unsqueeze", .opset = 11 };
    vkt_attr_ints(&c, "axes", 2, ax2);
    check(&c, 1, (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1) }, "Unsqueeze opset 11");
    check(&(vkt_call){ .op = "Identity" }, 1, (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1) }, "Identity");
    check(&(vkt_call){ .op = "Dropout" }, 1, (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1) }, "Dropout");
    // The mask output stays on the cpu.
    refuse(&(vkt_call){ .op = "Dropout", .n_out = 2 }, 1, (reel_tensor *[]){ vkt_frand(4, s4, seed++, -1, 1) },
           "Dropout with mask");
}

// ---- Softmax ------------------------------------------------------------------

static void softmaxes(void **state)
{
    (void)state;
    unsigned seed = 600;
    static const struct {
        shape x;
        int64_t axis; // 99: none
        int opset;
        bool ok;      // both opset forms agree, so the GPU takes it
    } cases[] = {
        { { 2, { 4, 1000 } }, 99, 13, true },
        { { 2, { 4, 1000 } }, 99, 11, true },
        { { 2, { 7, 9 } }, 1, 11, true },
        { { 2, { 7, 9 } }, -1, 13, true },
        { { 3, { 2, 5, 17 } }, -1, 13, true },
        { { 3, { 2, 5, 17 } }, 2, 11, true },
        { { 3, { 2, 5, 17 } }, 99, 13, false },   // default axis: -1 at 13, 1 before
        { { 3, { 2, 5, 17 } }, 2, 13, true },
        { { 4, { 2, 3, 4, 5 } }, 3, 13, true },
        { { 4, { 2, 3, 5, 1 } }, 2, 13, true },   // trailing 1: rows are still contiguous
        { { 4, { 2, 3, 4, 5 } }, 1, 11, false },  // coerced 2-D: rows of 60
        { { 4, { 2, 3, 4, 5 } }, 1, 13, false },  // axis 1 alone: strided rows
        { { 3, { 2, 5, 17 } }, 99, 11, false },   // default axis 1: rows of 85
        { { 3, { 2, 1, 17 } }, 1, 13, false },    // rows of 1 vs rows of 17
        { { 1, { 33 } }, 99, 13, true },          // axis 1 is out of range: only opset 13 takes it
        { { 1, { 33 } }, 0, 11, true },
        { { 0, { 0 } }, 99, 13, true },
        { { 3, { 2, 0, 4 } }, -1, 13, true },
    };
    static const char *const ops[] = { "Softmax", "LogSoftmax" };
    for (size_t o = 0; o < 2; o++)
        for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
            // Large inputs: without subtracting the max, exp overflows.
            float scale = k % 2 ? 80.0f : 3.0f;
            vkt_call c = { .op = ops[o], .opset = cases[k].opset, .tol = 1e-4f };
            if (cases[k].axis != 99)
                vkt_attr_int(&c, "axis", cases[k].axis);
            char what[64];
            g_snprintf(what, sizeof what, "%s case %zu", ops[o], k);
            run_case(&c, 1, (reel_tensor *[]){ vkt_frand(cases[k].x.rank, cases[k].x.d, seed++, -scale, scale) },
                     cases[k].ok, what);
        }
}

// ---- refusals -----------------------------------------------------------------

static void refusals(void **state)
{
    (void)state;
    int64_t s2[2] = { 3, 4 };
    int64_t one[1] = { 4 };
    // Integer arithmetic stays on the cpu.
    reel_tensor *a = reel_tensor_new(REEL_DTYPE_INT64, 2, s2), *b = reel_tensor_new(REEL_DTYPE_INT64, 1, one);
    refuse(&(vkt_call){ .op = "Add" }, 2, (reel_tensor *[]){ a, b }, "int64 Add");
    // Clip bounds computed at run time.
    refuse(&(vkt_call){ .op = "Clip" }, 3,
           (reel_tensor *[]){ vkt_frand(2, s2, 1, -1, 1), vkt_scalar(0), vkt_scalar(1) },
           "Clip with non-constant bounds");
    // Rank 8 with nothing to merge: more dims than the kernel walks.
    int64_t r8a[8] = { 2, 1, 2, 1, 2, 1, 2, 1 }, r8b[8] = { 1, 2, 1, 2, 1, 2, 1, 2 };
    refuse(&(vkt_call){ .op = "Add" }, 2, (reel_tensor *[]){ vkt_frand(8, r8a, 2, -1, 1), vkt_frand(8, r8b, 3, -1, 1) },
           "rank-8 broadcast");
    int64_t r7[7] = { 2, 3, 2, 3, 2, 3, 2 }, perm7[7] = { 6, 5, 4, 3, 2, 1, 0 };
    vkt_call c = { .op = "Transpose" };
    vkt_attr_ints(&c, "perm", 7, perm7);
    refuse(&c, 1, (reel_tensor *[]){ vkt_frand(7, r7, 4, -1, 1) }, "rank-7 transpose");
    // Pow with an integer exponent: the cpu's mixed-type form.
    reel_tensor *e = reel_tensor_new(REEL_DTYPE_INT64, 0, NULL);
    refuse(&(vkt_call){ .op = "Pow" }, 2, (reel_tensor *[]){ vkt_frand(2, s2, 5, -1, 1), e }, "Pow int exponent");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_broadcast), cmocka_unit_test(unary_ops), cmocka_unit_test(transposes),
        cmocka_unit_test(concats),          cmocka_unit_test(splits),    cmocka_unit_test(slices),
        cmocka_unit_test(expands_and_plain), cmocka_unit_test(softmaxes), cmocka_unit_test(refusals),
    };
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 13, false);
}

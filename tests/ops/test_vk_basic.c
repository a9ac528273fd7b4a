// The Vulkan elementwise, copy and Softmax ops (models/vulkan/ops_basic.c)
// against the cpu ops on seeded random inputs over many shapes: each node
// inferred and run by models/cpu/, then checked with its vk_op's supports()
// (inputs that are not constants without host data, as the executor passes
// them) and run on vulkan:0, results compared. Ops without a cpu version
// (Max, Min, Log, Neg, Abs, Reciprocal) against references written here.
// Also what supports() must refuse. Exit 77 without a Vulkan device; under
// REEL_VULKAN_VALIDATION=1 any validation message fails the test.
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

#define MAX_IN 8
#define MAX_OUT 8

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

static reel_tensor *ints(reel_dtype dt, int n, const int64_t *v)
{
    int64_t shape[1] = { n };
    reel_tensor *t = reel_tensor_new(dt, 1, shape);
    for (int i = 0; i < n; i++) {
        if (dt == REEL_DTYPE_INT64)
            ((int64_t *)t->data)[i] = v[i];
        else
            ((int32_t *)t->data)[i] = (int32_t)v[i];
    }
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
    unsigned consts; // bit i: input i is a constant (its data visible to supports)
    unsigned hide;   // bit i: input i is constant for infer, but supports sees no data (computed at run time)
    int n_out;       // 0: 1
    float tol;       // 0: 1e-5
} opcall;

static void attr_ints(opcall *c, const char *name, int n, const int64_t *v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INTS, .ints = (int64_t *)v, .n = n };
}

static void attr_int(opcall *c, const char *name, int64_t v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INT, .i = v };
}

static void attr_float(opcall *c, const char *name, float v)
{
    c->attrs[c->n_attrs++] = (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOAT, .f = v };
}

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

static const char *infer_as(const char *op)
{
    for (size_t r = 0; r < G_N_ELEMENTS(refs); r++)
        if (strcmp(refs[r].op, op) == 0)
            return refs[r].like;
    return op;
}

static reel_mem *device_mem(size_t size)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = MAX(size, 16), .domain = REEL_MEM_DEVICE), &error);
    if (!m)
        fail_msg("%s", error->message);
    return m;
}

// One node on the cpu and on vulkan:0. Takes the inputs (NULL: omitted).
// With `want_support` false, only checks supports() refuses.
static void run_case(const opcall *c, int n_in, reel_tensor **in, bool want_support, const char *what)
{
    const reel_op *op = reel_op_find(infer_as(c->op));
    const vk_op *vop = vk_op_find(c->op);
    bool has_cpu = reel_op_find(c->op) != NULL;
    assert_non_null(op);
    assert_non_null(vop);
    int n_out = c->n_out ? c->n_out : 1;
    reel_ir_graph *g = reel_ir_graph_new();
    g->opset = c->opset ? c->opset : 13;
    int inputs[MAX_IN], outputs[MAX_OUT];
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
            if (!(c->consts & (1u << i)) || (c->hide & (1u << i)))
                iview[i].data = NULL;
        }
    }
    bool supported = vop->supports(&n, iv, ov);
    if (supported != want_support)
        fail_msg("%s: supports() says %s", what, supported ? "yes" : "no");
    if (supported) {
        if (has_cpu) {
            reel_exec_ctx ectx = { .opset = g->opset, .threads = 1 };
            assert_int_equal(op->run(&n, in, want, &ectx), 0);
        } else {
            reference(c->op, in, want[0]);
        }
        vk_tensor vi[MAX_IN], vo[MAX_OUT], *pvi[MAX_IN], *pvo[MAX_OUT];
        for (int i = 0; i < n_in; i++) {
            pvi[i] = in[i] ? &vi[i] : NULL;
            if (!in[i])
                continue;
            vi[i] = (vk_tensor){ device_mem(in[i]->nbytes), &iview[i] };
            if (in[i]->nbytes)
                assert_int_equal(reel_mem_upload(vi[i].mem, 0, in[i]->data, in[i]->nbytes, NULL), 0);
        }
        for (int i = 0; i < n_out; i++) {
            vo[i] = (vk_tensor){ device_mem(got[i]->nbytes), &oview[i] };
            pvo[i] = &vo[i];
        }
        int rc = vop->run(&ctx, &n, pvi, pvo);
        if (rc)
            fail_msg("%s: run: %s", what, reel_strerror(rc));
        float tol = c->tol ? c->tol : 1e-5f;
        for (int k = 0; k < n_out; k++) {
            if (got[k]->nbytes)
                assert_int_equal(reel_mem_download(vo[k].mem, 0, got[k]->data, got[k]->nbytes, NULL), 0);
            const float *a = got[k]->data, *b = want[k]->data;
            for (size_t i = 0; i < want[k]->nbytes / 4; i++)
                if (!(fabsf(a[i] - b[i]) <= tol * (1 + fabsf(b[i]))) && !(isnan(a[i]) && isnan(b[i])) &&
                    !(a[i] == b[i]))
                    fail_msg("%s: output %d element %zu is %.9g on vulkan, %.9g on the cpu", what, k, i, a[i], b[i]);
            reel_mem_unref(&vo[k].mem);
        }
        for (int i = 0; i < n_in; i++)
            if (in[i])
                reel_mem_unref(&vi[i].mem);
    }
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

static void check(const opcall *c, int n_in, reel_tensor **in, const char *what)
{
    run_case(c, n_in, in, true, what);
}

static void refuse(const opcall *c, int n_in, reel_tensor **in, const char *what)
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
                frand(pairs[p].a.rank, pairs[p].a.d, seed, is_pow ? 0.1f : -2, 2),
                frand(pairs[p].b.rank, pairs[p].b.d, seed + 7, is_div ? 0.5f : is_pow ? -3 : -2, is_pow ? 3 : 2),
            };
            opcall c = { .op = ops[o], .tol = is_pow ? 1e-4f : 0 };
            char what[64];
            g_snprintf(what, sizeof what, "%s pair %zu", ops[o], p);
            check(&c, 2, in, what);
        }
    }
    // Pow with a negative base: integer exponents keep the sign, others are NaN.
    int64_t s[1] = { 12 };
    reel_tensor *in[2] = { frand(1, s, 5, -3, 3), frand(1, s, 6, 0, 1) };
    float *y = in[1]->data, *x = in[0]->data;
    static const float ys[12] = { 0, 1, 2, 3, -1, -2, -3, 0.5f, 4, 5, 1.5f, 2 };
    memcpy(y, ys, sizeof ys);
    x[0] = -2;
    x[11] = 0;
    check(&(opcall){ .op = "Pow", .tol = 1e-4f }, 2, in, "Pow negative bases");
    // Square and square root through a constant exponent, as models have them.
    int64_t s3[3] = { 2, 5, 7 };
    reel_tensor *sq[2] = { frand(3, s3, 8, -3, 3), scalar(2) };
    check(&(opcall){ .op = "Pow", .consts = 2, .tol = 1e-4f }, 2, sq, "Pow x^2");
    reel_tensor *rt[2] = { frand(3, s3, 9, 0, 3), scalar(0.5f) };
    check(&(opcall){ .op = "Pow", .consts = 2, .tol = 1e-4f }, 2, rt, "Pow x^0.5");
    // Add of a tensor to itself (one memory bound twice).
    int64_t s2[2] = { 16, 9 };
    reel_tensor *aa[2] = { frand(2, s2, 10, -1, 1), NULL };
    aa[1] = reel_tensor_dup(aa[0]);
    check(&(opcall){ .op = "Mul" }, 2, aa, "Mul x*x");
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
            reel_tensor *in[1] = { frand(shapes[s].rank, shapes[s].d, (unsigned)(o * 10 + s), ops[o].lo, ops[o].hi) };
            char what[64];
            g_snprintf(what, sizeof what, "%s shape %zu", ops[o].op, s);
            check(&(opcall){ .op = ops[o].op, .tol = ops[o].tol }, 1, in, what);
        }
    int64_t s1[2] = { 7, 33 };
    // Parameters from attributes.
    opcall c = { .op = "LeakyRelu" };
    attr_float(&c, "alpha", 0.3f);
    check(&c, 1, (reel_tensor *[]){ frand(2, s1, 1, -2, 2) }, "LeakyRelu alpha");
    c = (opcall){ .op = "HardSigmoid" };
    attr_float(&c, "alpha", 0.5f);
    attr_float(&c, "beta", 0.25f);
    check(&c, 1, (reel_tensor *[]){ frand(2, s1, 2, -4, 4) }, "HardSigmoid alpha beta");
    // Clip: attributes before opset 11, constant inputs after.
    c = (opcall){ .op = "Clip", .opset = 6 };
    attr_float(&c, "min", -0.5f);
    attr_float(&c, "max", 0.25f);
    check(&c, 1, (reel_tensor *[]){ frand(2, s1, 3, -2, 2) }, "Clip opset 6");
    c = (opcall){ .op = "Clip", .opset = 6 };
    attr_float(&c, "max", 0.25f);
    check(&c, 1, (reel_tensor *[]){ frand(2, s1, 4, -2, 2) }, "Clip opset 6 max only");
    check(&(opcall){ .op = "Clip", .consts = 6 }, 3, (reel_tensor *[]){ frand(2, s1, 5, -2, 2), scalar(0), scalar(6) },
          "Clip min max");
    check(&(opcall){ .op = "Clip", .consts = 6 }, 3, (reel_tensor *[]){ frand(2, s1, 6, -2, 2), NULL, scalar(0.5f) },
          "Clip max only");
    check(&(opcall){ .op = "Clip", .consts = 2 }, 2, (reel_tensor *[]){ frand(2, s1, 7, -2, 2), scalar(-0.1f) },
          "Clip min only");
    // Past 65535 groups: launches spread into y.
    int64_t big[1] = { 65535LL * 256 + 1000 };
    check(&(opcall){ .op = "Neg" }, 1, (reel_tensor *[]){ frand(1, big, 8, -1, 1) }, "Neg over 2-D launch");
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
            opcall c = { .op = "Transpose" };
            attr_ints(&c, "perm", r, perm);
            char what[64];
            g_snprintf(what, sizeof what, "Transpose shape %zu perm %d", s, k);
            check(&c, 1, (reel_tensor *[]){ frand(r, shapes[s].d, seed++, -1, 1) }, what);
        }
        check(&(opcall){ .op = "Transpose" }, 1, (reel_tensor *[]){ frand(r, shapes[s].d, seed++, -1, 1) },
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
                    in[i] = frand(r, d, seed++, -1, 1);
                }
                opcall c = { .op = "Concat" };
                attr_int(&c, "axis", axis);
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
        opcall c = { .op = "Split", .n_out = 2 };
        attr_int(&c, "axis", axis);
        int64_t d[3] = { 4, 6, 4 };
        char what[64];
        g_snprintf(what, sizeof what, "Split axis %d equal", axis);
        check(&c, 1, (reel_tensor *[]){ frand(3, d, seed++, -1, 1) }, what);
        // Sizes from the attribute (opset 11) and from a constant input (13).
        int64_t sizes[3] = { 1, s3[ax] - 3, 2 };
        c = (opcall){ .op = "Split", .n_out = 3, .opset = 11 };
        attr_int(&c, "axis", axis);
        attr_ints(&c, "split", 3, sizes);
        g_snprintf(what, sizeof what, "Split axis %d opset 11", axis);
        check(&c, 1, (reel_tensor *[]){ frand(3, s3, seed++, -1, 1) }, what);
        int64_t sizes0[3] = { 0, s3[ax] - 1, 1 };
        c = (opcall){ .op = "Split", .n_out = 3, .consts = 2 };
        attr_int(&c, "axis", axis);
        g_snprintf(what, sizeof what, "Split axis %d opset 13", axis);
        check(&c, 2, (reel_tensor *[]){ frand(3, s3, seed++, -1, 1), ints(REEL_DTYPE_INT64, 3, sizes0) }, what);
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
            reel_tensor *in[5] = { frand(4, s4, seed++, -1, 1) };
            opcall c = { .op = "Slice" };
            int n_in = 1;
            if (form == 0) {
                // Opset 9: attributes.
                c.opset = 9;
                attr_ints(&c, "starts", sc->n, sc->starts);
                attr_ints(&c, "ends", sc->n, sc->ends);
                if (!sc->no_axes)
                    attr_ints(&c, "axes", sc->n, sc->axes);
            } else {
                reel_dtype dt = form == 1 ? REEL_DTYPE_INT64 : REEL_DTYPE_INT32;
                in[1] = ints(dt, sc->n, sc->starts);
                in[2] = ints(dt, sc->n, sc->ends);
                n_in = 3;
                if (!sc->no_axes || !sc->no_steps)
                    in[n_in++] = sc->no_axes ? NULL : ints(dt, sc->n, sc->axes);
                if (!sc->no_steps)
                    in[n_in++] = ints(dt, sc->n, sc->steps);
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
    reel_tensor *in[3] = { frand(4, s4, seed++, -1, 1), ints(REEL_DTYPE_INT64, 1, st), ints(REEL_DTYPE_INT64, 1, en) };
    refuse(&(opcall){ .op = "Slice", .consts = 6, .hide = 2 }, 3, in, "Slice with non-constant starts");
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
        check(&(opcall){ .op = "Expand", .consts = 2 }, 2,
              (reel_tensor *[]){ frand(ex[i].x.rank, ex[i].x.d, seed++, -1, 1), ints(REEL_DTYPE_INT64, ex[i].n, ex[i].to) },
              what);
    }
    int64_t s4[4] = { 2, 3, 1, 4 }, shape2[2] = { 6, -1 }, ax1[1] = { 2 }, ax2[2] = { 0, 3 };
    check(&(opcall){ .op = "Reshape", .consts = 2 }, 2,
          (reel_tensor *[]){ frand(4, s4, seed++, -1, 1), ints(REEL_DTYPE_INT64, 2, shape2) }, "Reshape");
    opcall c = { .op = "Flatten" };
    attr_int(&c, "axis", 2);
    check(&c, 1, (reel_tensor *[]){ frand(4, s4, seed++, -1, 1) }, "Flatten");
    check(&(opcall){ .op = "Squeeze", .consts = 2 }, 2,
          (reel_tensor *[]){ frand(4, s4, seed++, -1, 1), ints(REEL_DTYPE_INT64, 1, ax1) }, "Squeeze opset 13");
    c = (opcall){ .op = "Squeeze", .opset = 11 };
    attr_ints(&c, "axes", 1, ax1);
    check(&c, 1, (reel_tensor *[]){ frand(4, s4, seed++, -1, 1) }, "Squeeze opset 11");
    check(&(opcall){ .op = "Squeeze" }, 1, (reel_tensor *[]){ frand(4, s4, seed++, -1, 1) }, "Squeeze all");
    check(&(opcall){ .op = "Unsqueeze", .consts = 2 }, 2,
          (reel_tensor *[]){ frand(4, s4, seed++, -1, 1), ints(REEL_DTYPE_INT64, 2, ax2) }, "Unsqueeze opset 13");
    c = (opcall){ .op = "Unsqueeze", .opset = 11 };
    attr_ints(&c, "axes", 2, ax2);
    check(&c, 1, (reel_tensor *[]){ frand(4, s4, seed++, -1, 1) }, "Unsqueeze opset 11");
    check(&(opcall){ .op = "Identity" }, 1, (reel_tensor *[]){ frand(4, s4, seed++, -1, 1) }, "Identity");
    check(&(opcall){ .op = "Dropout" }, 1, (reel_tensor *[]){ frand(4, s4, seed++, -1, 1) }, "Dropout");
    // The mask output stays on the cpu.
    refuse(&(opcall){ .op = "Dropout", .n_out = 2 }, 1, (reel_tensor *[]){ frand(4, s4, seed++, -1, 1) },
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
            opcall c = { .op = ops[o], .opset = cases[k].opset, .tol = 1e-4f };
            if (cases[k].axis != 99)
                attr_int(&c, "axis", cases[k].axis);
            char what[64];
            g_snprintf(what, sizeof what, "%s case %zu", ops[o], k);
            run_case(&c, 1, (reel_tensor *[]){ frand(cases[k].x.rank, cases[k].x.d, seed++, -scale, scale) },
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
    refuse(&(opcall){ .op = "Add" }, 2, (reel_tensor *[]){ a, b }, "int64 Add");
    // Clip bounds computed at run time.
    refuse(&(opcall){ .op = "Clip" }, 3, (reel_tensor *[]){ frand(2, s2, 1, -1, 1), scalar(0), scalar(1) },
           "Clip with non-constant bounds");
    // Rank 8 with nothing to merge: more dims than the kernel walks.
    int64_t r8a[8] = { 2, 1, 2, 1, 2, 1, 2, 1 }, r8b[8] = { 1, 2, 1, 2, 1, 2, 1, 2 };
    refuse(&(opcall){ .op = "Add" }, 2, (reel_tensor *[]){ frand(8, r8a, 2, -1, 1), frand(8, r8b, 3, -1, 1) },
           "rank-8 broadcast");
    int64_t r7[7] = { 2, 3, 2, 3, 2, 3, 2 }, perm7[7] = { 6, 5, 4, 3, 2, 1, 0 };
    opcall c = { .op = "Transpose" };
    attr_ints(&c, "perm", 7, perm7);
    refuse(&c, 1, (reel_tensor *[]){ frand(7, r7, 4, -1, 1) }, "rank-7 transpose");
    // Pow with an integer exponent: the cpu's mixed-type form.
    reel_tensor *e = reel_tensor_new(REEL_DTYPE_INT64, 0, NULL);
    refuse(&(opcall){ .op = "Pow" }, 2, (reel_tensor *[]){ frand(2, s2, 5, -1, 1), e }, "Pow int exponent");
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
        cmocka_unit_test(binary_broadcast), cmocka_unit_test(unary_ops), cmocka_unit_test(transposes),
        cmocka_unit_test(concats),          cmocka_unit_test(splits),    cmocka_unit_test(slices),
        cmocka_unit_test(expands_and_plain), cmocka_unit_test(softmaxes), cmocka_unit_test(refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

// Elementwise, shape and reduce ops: each through infer (a one-node graph)
// and run (tensors allocated with the inferred shapes), on hand-checked
// values; bad attributes must fail infer with a message naming the node.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "models/op.h"
#include "tests/support/skip.h"

extern const reel_op *const reel_ops_elementwise[];
extern const reel_op *const reel_ops_shape[];
extern const reel_op *const reel_ops_reduce[];

static const reel_op *find(const char *name)
{
    const reel_op *const *tables[] = { reel_ops_elementwise, reel_ops_shape, reel_ops_reduce };
    for (int t = 0; t < 3; t++)
        for (const reel_op *const *op = tables[t]; *op; op++)
            if (!strcmp((*op)->name, name))
                return *op;
    return NULL;
}

// ---- a one-node case --------------------------------------------------------

#define F32 REEL_DTYPE_FLOAT32
#define I64 REEL_DTYPE_INT64
#define I32 REEL_DTYPE_INT32
#define U8 REEL_DTYPE_UINT8
#define BOOL REEL_DTYPE_BOOL
#define MAXIO 6

typedef struct tc {
    reel_ir_graph *g;
    reel_ir_node *n;
    reel_tensor *in[MAXIO], *out[MAXIO];
    int nin, nout;
    GError *err;
} tc;

static reel_tensor *T(reel_dtype t, int rank, const int64_t *shape, const void *data)
{
    reel_tensor *x = reel_tensor_new(t, rank, shape);
    assert_non_null(x);
    if (data)
        memcpy(x->data, data, x->nbytes);
    return x;
}

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define FV(...) ((const float[]){ __VA_ARGS__ })
#define IV(...) ((const int64_t[]){ __VA_ARGS__ })

static tc *tc_new(int opset, const char *op, int nout)
{
    tc *c = g_new0(tc, 1);
    c->g = reel_ir_graph_new();
    c->g->opset = opset;
    c->n = g_new0(reel_ir_node, 1);
    c->n->name = g_strdup_printf("%s_7", op);
    c->n->op = g_strdup(op);
    c->n->inputs = g_new0(int, MAXIO);
    c->n->outputs = g_new0(int, MAXIO);
    c->n->attrs = g_new0(reel_ir_attr, 8);
    g_ptr_array_add(c->g->nodes, c->n);
    for (int i = 0; i < nout; i++) {
        char name[16];
        snprintf(name, sizeof name, "y%d", i);
        c->n->outputs[i] = reel_ir_add_value(c->g, name);
        reel_ir_value_at(c->g, c->n->outputs[i])->producer = 0;
    }
    c->n->n_outputs = c->nout = nout;
    return c;
}

// Adds input tensor t (taken); `constant` makes it a constant value. NULL: an
// omitted optional input.
static void tc_in(tc *c, reel_tensor *t, bool constant)
{
    int i = c->nin++;
    c->n->n_inputs = c->nin;
    c->in[i] = t;
    if (!t) {
        c->n->inputs[i] = -1;
        return;
    }
    char name[16];
    snprintf(name, sizeof name, "x%d", i);
    int v = reel_ir_add_value(c->g, name);
    reel_ir_value *val = reel_ir_value_at(c->g, v);
    val->dtype = t->dtype;
    val->rank = t->rank;
    memcpy(val->dims, t->shape, sizeof(int64_t) * t->rank);
    if (constant)
        val->constant = reel_tensor_dup(t);
    c->n->inputs[i] = v;
}

static reel_ir_attr *attr(tc *c, const char *name, reel_attr_type type)
{
    reel_ir_attr *a = &c->n->attrs[c->n->n_attrs++];
    a->name = g_strdup(name);
    a->type = type;
    return a;
}
static void a_int(tc *c, const char *name, int64_t v) { attr(c, name, REEL_ATTR_INT)->i = v; }
static void a_float(tc *c, const char *name, float v) { attr(c, name, REEL_ATTR_FLOAT)->f = v; }
static void a_str(tc *c, const char *name, const char *v) { attr(c, name, REEL_ATTR_STRING)->s = g_strdup(v); }
static void a_ints(tc *c, const char *name, int n, const int64_t *v)
{
    reel_ir_attr *a = attr(c, name, REEL_ATTR_INTS);
    a->ints = g_memdup2(v, sizeof(int64_t) * n);
    a->n = n;
}

// Infers; returns its code (error text in c->err).
static int tc_infer(tc *c)
{
    const reel_op *op = find(c->n->op);
    assert_non_null(op);
    g_clear_error(&c->err);
    int r = op->infer(c->g, c->n, &c->err);
    if (r)
        assert_non_null(c->err);
    return r;
}

static reel_ir_value *outv(tc *c, int i)
{
    return reel_ir_value_at(c->g, c->n->outputs[i]);
}

// Infers (must succeed), allocates outputs from the inferred shapes, runs.
static void tc_run(tc *c)
{
    int r = tc_infer(c);
    if (r)
        fail_msg("infer failed: %s", c->err->message);
    for (int i = 0; i < c->nout; i++) {
        reel_ir_value *v = outv(c, i);
        assert_true(v->rank >= 0);
        for (int d = 0; d < v->rank; d++)
            assert_true(v->dims[d] >= 0);
        c->out[i] = T(v->dtype, v->rank, v->dims, NULL);
    }
    reel_exec_ctx ctx = { .opset = c->g->opset, .threads = 1 };
    assert_int_equal(find(c->n->op)->run(c->n, c->in, c->out, &ctx), 0);
}

static void tc_free(tc *c)
{
    for (int i = 0; i < MAXIO; i++) {
        reel_tensor_free(&c->in[i]);
        reel_tensor_free(&c->out[i]);
    }
    g_clear_error(&c->err);
    reel_ir_graph_free(&c->g);
    g_free(c);
}

static void check_shape(const reel_tensor *t, int rank, const int64_t *shape)
{
    assert_int_equal(t->rank, rank);
    for (int i = 0; i < rank; i++)
        assert_int_equal(t->shape[i], shape[i]);
}

static void check_f32(const reel_tensor *t, int n, const float *want)
{
    assert_int_equal(t->dtype, F32);
    assert_int_equal(reel_tensor_count(t->rank, t->shape), n);
    const float *p = t->data;
    for (int i = 0; i < n; i++)
        if (!(fabsf(p[i] - want[i]) <= 1e-5f + 1e-4f * fabsf(want[i])))
            fail_msg("element %d: %g, want %g", i, p[i], want[i]);
}

static void check_i64(const reel_tensor *t, int n, const int64_t *want)
{
    assert_int_equal(t->dtype, I64);
    assert_int_equal(reel_tensor_count(t->rank, t->shape), n);
    for (int i = 0; i < n; i++)
        assert_int_equal(((const int64_t *)t->data)[i], want[i]);
}

static void check_u8(const reel_tensor *t, int n, const uint8_t *want)
{
    assert_int_equal(reel_tensor_count(t->rank, t->shape), n);
    assert_memory_equal(t->data, want, n);
}

// infer must fail naming the node and mentioning `what`.
static void check_rejects(tc *c, const char *what)
{
    assert_int_not_equal(tc_infer(c), 0);
    assert_non_null(strstr(c->err->message, c->n->name));
    if (!strstr(c->err->message, what))
        fail_msg("message '%s' lacks '%s'", c->err->message, what);
}

static float seqf(int i) { return (float)i; }

static reel_tensor *Tseq(int rank, const int64_t *shape)
{
    reel_tensor *t = T(F32, rank, shape, NULL);
    float *p = t->data;
    for (int64_t i = 0; i < reel_tensor_count(rank, shape); i++)
        p[i] = seqf((int)i);
    return t;
}

// ---- elementwise ------------------------------------------------------------

static int wrap_released;
static void count_release(void *opaque)
{
    wrap_released += *(int *)opaque;
}

// A wrapped tensor borrows its elements: freeing it calls release, or
// nothing without one (the caller's stack array below must not be free()d).
static void test_tensor_wrap_borrows(void **state)
{
    (void)state;
    float data[6] = { 1, 2, 3, 4, 5, 6 };
    int64_t shape[2] = { 2, 3 };
    reel_tensor *t = reel_tensor_wrap(REEL_DTYPE_FLOAT32, 2, shape, data, sizeof data, NULL, NULL);
    assert_non_null(t);
    assert_ptr_equal(t->data, data);
    reel_tensor_free(&t);
    assert_null(t);
    assert_float_equal(data[5], 6, 0);
    int one = 1;
    t = reel_tensor_wrap(REEL_DTYPE_FLOAT32, 2, shape, data, sizeof data, count_release, &one);
    reel_tensor_free(&t);
    assert_int_equal(wrap_released, 1);
    // Too small for its shape: NULL, and release is still called.
    assert_null(reel_tensor_wrap(REEL_DTYPE_FLOAT32, 2, shape, data, sizeof data - 1, count_release, &one));
    assert_int_equal(wrap_released, 2);
}

static void test_add_broadcast(void **state)
{
    (void)state;
    // [2,3] + [3]
    tc *c = tc_new(14, "Add", 1);
    tc_in(c, T(F32, 2, SHAPE(2, 3), FV(1, 2, 3, 4, 5, 6)), false);
    tc_in(c, T(F32, 1, SHAPE(3), FV(10, 20, 30)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 3));
    check_f32(c->out[0], 6, FV(11, 22, 33, 14, 25, 36));
    tc_free(c);

    // [2,1,2] - [3,1] -> [2,3,2], both sides broadcast
    c = tc_new(14, "Sub", 1);
    tc_in(c, T(F32, 3, SHAPE(2, 1, 2), FV(1, 2, 3, 4)), false);
    tc_in(c, T(F32, 2, SHAPE(3, 1), FV(0, 10, 20)), false);
    tc_run(c);
    check_shape(c->out[0], 3, SHAPE(2, 3, 2));
    check_f32(c->out[0], 12, FV(1, 2, -9, -8, -19, -18, 3, 4, -7, -6, -17, -16));
    tc_free(c);

    // [1,2,2,2] * [1,2,1,1] (per-channel) and scalar Div
    c = tc_new(14, "Mul", 1);
    tc_in(c, Tseq(4, SHAPE(1, 2, 2, 2)), false);
    tc_in(c, T(F32, 4, SHAPE(1, 2, 1, 1), FV(2, -1)), false);
    tc_run(c);
    check_f32(c->out[0], 8, FV(0, 2, 4, 6, -4, -5, -6, -7));
    tc_free(c);

    c = tc_new(14, "Div", 1);
    tc_in(c, T(F32, 0, NULL, FV(12)), false);
    tc_in(c, T(F32, 1, SHAPE(3), FV(1, 2, 4)), false);
    tc_run(c);
    check_f32(c->out[0], 3, FV(12, 6, 3));
    tc_free(c);

    // int64 and uint8 (wrapping, as numpy)
    c = tc_new(14, "Add", 1);
    tc_in(c, T(I64, 1, SHAPE(2), IV(5, -7)), false);
    tc_in(c, T(I64, 0, NULL, IV(3)), false);
    tc_run(c);
    check_i64(c->out[0], 2, IV(8, -4));
    tc_free(c);
    c = tc_new(14, "Mul", 1);
    tc_in(c, T(U8, 1, SHAPE(2), (uint8_t[]){ 100, 3 }), false);
    tc_in(c, T(U8, 1, SHAPE(2), (uint8_t[]){ 3, 4 }), false);
    tc_run(c);
    check_u8(c->out[0], 2, (uint8_t[]){ 44, 12 });
    tc_free(c);
}

static void test_binary_rejects(void **state)
{
    (void)state;
    tc *c = tc_new(14, "Add", 1);
    tc_in(c, T(F32, 2, SHAPE(2, 3), NULL), false);
    tc_in(c, T(F32, 1, SHAPE(4), NULL), false);
    check_rejects(c, "broadcast");
    tc_free(c);
    c = tc_new(14, "Mul", 1);
    tc_in(c, T(F32, 1, SHAPE(2), NULL), false);
    tc_in(c, T(I64, 1, SHAPE(2), NULL), false);
    check_rejects(c, "types differ");
    tc_free(c);
}

static void test_pow(void **state)
{
    (void)state;
    tc *c = tc_new(15, "Pow", 1);
    tc_in(c, T(F32, 2, SHAPE(2, 2), FV(1, 2, 3, 4)), false);
    tc_in(c, T(F32, 1, SHAPE(2), FV(2, 0.5f)), false);
    tc_run(c);
    check_f32(c->out[0], 4, FV(1, 1.4142135f, 9, 2));
    tc_free(c);
    // int base, float exponent: result in the base's type
    c = tc_new(15, "Pow", 1);
    tc_in(c, T(I64, 1, SHAPE(3), IV(1, 2, 3)), false);
    tc_in(c, T(F32, 1, SHAPE(3), FV(4, 5, 6)), false);
    tc_run(c);
    check_i64(c->out[0], 3, IV(1, 32, 729));
    tc_free(c);
}

static void unary(const char *op, int nattr, const char *an, float av, const float *in, const float *want, int n)
{
    tc *c = tc_new(14, op, 1);
    if (nattr)
        a_float(c, an, av);
    tc_in(c, T(F32, 1, SHAPE(n), in), false);
    tc_run(c);
    check_f32(c->out[0], n, want);
    tc_free(c);
}

static void test_activations(void **state)
{
    (void)state;
    const float *x = FV(-4, -1, 0, 0.5f, 3);
    unary("Relu", 0, NULL, 0, x, FV(0, 0, 0, 0.5f, 3), 5);
    unary("LeakyRelu", 0, NULL, 0, x, FV(-0.04f, -0.01f, 0, 0.5f, 3), 5);
    unary("LeakyRelu", 1, "alpha", 0.5f, x, FV(-2, -0.5f, 0, 0.5f, 3), 5);
    unary("Sigmoid", 0, NULL, 0, x, FV(0.01798621f, 0.26894142f, 0.5f, 0.62245933f, 0.95257413f), 5);
    unary("HardSigmoid", 0, NULL, 0, x, FV(0, 0.3f, 0.5f, 0.6f, 1), 5);
    unary("HardSwish", 0, NULL, 0, x, FV(0, -1.0f / 3, 0, 0.5f * 3.5f / 6, 3), 5);
    unary("Tanh", 0, NULL, 0, x, FV(-0.99932930f, -0.76159416f, 0, 0.46211716f, 0.99505475f), 5);
    unary("Exp", 0, NULL, 0, x, FV(0.01831564f, 0.36787944f, 1, 1.64872127f, 20.08553692f), 5);
    unary("Sqrt", 0, NULL, 0, FV(0, 1, 4, 2), FV(0, 1, 2, 1.41421356f), 4);

    tc *c = tc_new(14, "Relu", 1);
    tc_in(c, T(I64, 1, SHAPE(2), NULL), false);
    check_rejects(c, "float32");
    tc_free(c);

    // PRelu: slope broadcast per channel
    c = tc_new(16, "PRelu", 1);
    tc_in(c, T(F32, 2, SHAPE(2, 2), FV(-1, 2, -3, -4)), false);
    tc_in(c, T(F32, 1, SHAPE(2), FV(0.1f, 0.5f)), false);
    tc_run(c);
    check_f32(c->out[0], 4, FV(-0.1f, 2, -0.3f, -2));
    tc_free(c);
}

static void test_clip(void **state)
{
    (void)state;
    // opset 6: attributes
    tc *c = tc_new(6, "Clip", 1);
    a_float(c, "min", -1);
    a_float(c, "max", 2);
    tc_in(c, T(F32, 1, SHAPE(4), FV(-5, 0, 1.5f, 9)), false);
    tc_run(c);
    check_f32(c->out[0], 4, FV(-1, 0, 1.5f, 2));
    tc_free(c);
    // opset 13: inputs, min omitted
    c = tc_new(13, "Clip", 1);
    tc_in(c, T(F32, 1, SHAPE(4), FV(-5, 0, 1.5f, 9)), false);
    tc_in(c, NULL, false);
    tc_in(c, T(F32, 0, NULL, FV(1)), false);
    tc_run(c);
    check_f32(c->out[0], 4, FV(-5, 0, 1, 1));
    tc_free(c);
    // int8 with min only
    c = tc_new(13, "Clip", 1);
    tc_in(c, T(REEL_DTYPE_INT8, 1, SHAPE(3), (int8_t[]){ -100, 0, 100 }), false);
    tc_in(c, T(REEL_DTYPE_INT8, 0, NULL, (int8_t[]){ -10 }), false);
    tc_run(c);
    check_u8(c->out[0], 3, (uint8_t[]){ (uint8_t)-10, 0, 100 });
    tc_free(c);
    // attributes are not allowed from opset 11
    c = tc_new(13, "Clip", 1);
    a_float(c, "min", 0);
    tc_in(c, T(F32, 1, SHAPE(4), NULL), false);
    check_rejects(c, "opset 11");
    tc_free(c);
}

static void test_compare_where(void **state)
{
    (void)state;
    tc *c = tc_new(13, "Greater", 1);
    tc_in(c, T(F32, 2, SHAPE(2, 2), FV(1, 5, 3, 0)), false);
    tc_in(c, T(F32, 1, SHAPE(2), FV(2, 2)), false);
    tc_run(c);
    assert_int_equal(c->out[0]->dtype, BOOL);
    check_u8(c->out[0], 4, (uint8_t[]){ 0, 1, 1, 0 });
    tc_free(c);
    c = tc_new(13, "Equal", 1);
    tc_in(c, T(I32, 1, SHAPE(3), (int32_t[]){ 1, 2, 3 }), false);
    tc_in(c, T(I32, 0, NULL, (int32_t[]){ 2 }), false);
    tc_run(c);
    check_u8(c->out[0], 3, (uint8_t[]){ 0, 1, 0 });
    tc_free(c);
    // Where with a broadcast condition and a scalar Y
    c = tc_new(16, "Where", 1);
    tc_in(c, T(BOOL, 1, SHAPE(2), (uint8_t[]){ 1, 0 }), false);
    tc_in(c, T(F32, 2, SHAPE(2, 2), FV(1, 2, 3, 4)), false);
    tc_in(c, T(F32, 0, NULL, FV(-1)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 2));
    check_f32(c->out[0], 4, FV(1, -1, 3, -1));
    tc_free(c);
    c = tc_new(16, "Where", 1);
    tc_in(c, T(F32, 1, SHAPE(2), NULL), false);
    tc_in(c, T(F32, 1, SHAPE(2), NULL), false);
    tc_in(c, T(F32, 1, SHAPE(2), NULL), false);
    check_rejects(c, "bool");
    tc_free(c);
}

static void test_cast(void **state)
{
    (void)state;
    tc *c = tc_new(13, "Cast", 1);
    a_int(c, "to", 7); // int64
    tc_in(c, T(F32, 1, SHAPE(4), FV(1.9f, -1.9f, 0, 3)), false);
    tc_run(c);
    check_i64(c->out[0], 4, IV(1, -1, 0, 3));
    tc_free(c);
    // float32 -> float16 -> float32 round trip (1/3 rounds to 0x3555)
    c = tc_new(13, "Cast", 1);
    a_int(c, "to", 10);
    tc_in(c, T(F32, 1, SHAPE(3), FV(1.0f / 3, 65504, -2)), false);
    tc_run(c);
    const uint16_t *h = c->out[0]->data;
    assert_int_equal(h[0], 0x3555);
    assert_int_equal(h[1], 0x7bff);
    assert_int_equal(h[2], 0xc000);
    tc_free(c);
    c = tc_new(13, "Cast", 1);
    a_int(c, "to", 9); // bool
    tc_in(c, T(I64, 1, SHAPE(3), IV(0, 5, -1)), false);
    tc_run(c);
    check_u8(c->out[0], 3, (uint8_t[]){ 0, 1, 1 });
    tc_free(c);
    c = tc_new(13, "Cast", 1);
    a_int(c, "to", 8); // string
    tc_in(c, T(F32, 1, SHAPE(3), NULL), false);
    check_rejects(c, "not supported");
    tc_free(c);
}

static void test_identity_dropout(void **state)
{
    (void)state;
    tc *c = tc_new(16, "Identity", 1);
    tc_in(c, T(I64, 1, SHAPE(2), IV(4, 5)), false);
    tc_run(c);
    check_i64(c->out[0], 2, IV(4, 5));
    tc_free(c);
    c = tc_new(13, "Dropout", 2);
    tc_in(c, T(F32, 1, SHAPE(2), FV(4, 5)), false);
    tc_in(c, T(F32, 0, NULL, FV(0.5f)), true);
    tc_run(c);
    check_f32(c->out[0], 2, FV(4, 5));
    assert_int_equal(c->out[1]->dtype, BOOL);
    check_u8(c->out[1], 2, (uint8_t[]){ 1, 1 });
    tc_free(c);
}

// ---- shape ------------------------------------------------------------------

static void test_reshape(void **state)
{
    (void)state;
    // 0 copies, -1 infers
    tc *c = tc_new(14, "Reshape", 1);
    tc_in(c, Tseq(3, SHAPE(2, 3, 4)), false);
    tc_in(c, T(I64, 1, SHAPE(3), IV(0, -1, 2)), true);
    tc_run(c);
    check_shape(c->out[0], 3, SHAPE(2, 6, 2));
    assert_float_equal(((float *)c->out[0]->data)[23], 23, 0);
    tc_free(c);
    // allowzero keeps a literal 0
    c = tc_new(14, "Reshape", 1);
    a_int(c, "allowzero", 1);
    tc_in(c, T(F32, 3, SHAPE(0, 3, 4), NULL), false);
    tc_in(c, T(I64, 1, SHAPE(3), IV(3, 4, 0)), true);
    tc_run(c);
    check_shape(c->out[0], 3, SHAPE(3, 4, 0));
    tc_free(c);
    // non-constant shape: rank known, dims unknown
    c = tc_new(14, "Reshape", 1);
    tc_in(c, Tseq(1, SHAPE(6)), false);
    tc_in(c, T(I64, 1, SHAPE(2), IV(3, 2)), false);
    assert_int_equal(tc_infer(c), 0);
    assert_int_equal(outv(c, 0)->rank, 2);
    assert_int_equal(outv(c, 0)->dims[0], REEL_DIM_UNKNOWN);
    tc_free(c);
    // opset 1-4: attribute
    c = tc_new(4, "Reshape", 1);
    a_ints(c, "shape", 2, IV(-1, 3));
    tc_in(c, Tseq(1, SHAPE(6)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 3));
    tc_free(c);
    c = tc_new(14, "Reshape", 1);
    tc_in(c, Tseq(1, SHAPE(6)), false);
    tc_in(c, T(I64, 1, SHAPE(2), IV(4, -1)), true);
    check_rejects(c, "integer size");
    tc_free(c);
}

static void test_flatten_transpose(void **state)
{
    (void)state;
    tc *c = tc_new(13, "Flatten", 1);
    a_int(c, "axis", -1);
    tc_in(c, Tseq(3, SHAPE(2, 3, 4)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(6, 4));
    tc_free(c);
    c = tc_new(13, "Flatten", 1);
    a_int(c, "axis", 0);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(1, 6));
    tc_free(c);
    c = tc_new(13, "Flatten", 1);
    a_int(c, "axis", 4);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    check_rejects(c, "out of range");
    tc_free(c);

    // default perm reverses
    c = tc_new(13, "Transpose", 1);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(3, 2));
    check_f32(c->out[0], 6, FV(0, 3, 1, 4, 2, 5));
    tc_free(c);
    c = tc_new(13, "Transpose", 1);
    a_ints(c, "perm", 3, IV(1, 2, 0));
    tc_in(c, Tseq(3, SHAPE(2, 2, 3)), false);
    tc_run(c);
    check_shape(c->out[0], 3, SHAPE(2, 3, 2));
    check_f32(c->out[0], 12, FV(0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11));
    tc_free(c);
    c = tc_new(13, "Transpose", 1);
    a_ints(c, "perm", 3, IV(0, 2, 1));
    tc_in(c, Tseq(4, SHAPE(1, 2, 3, 4)), false);
    check_rejects(c, "perm has 3 entries for a rank-4 input");
    tc_free(c);
}

static void test_squeeze_unsqueeze(void **state)
{
    (void)state;
    // opset 11 attribute form, negative axis
    tc *c = tc_new(11, "Squeeze", 1);
    a_ints(c, "axes", 1, IV(-2));
    tc_in(c, Tseq(4, SHAPE(1, 3, 1, 5)), false);
    tc_run(c);
    check_shape(c->out[0], 3, SHAPE(1, 3, 5));
    tc_free(c);
    // opset 13 without axes: every 1 goes
    c = tc_new(13, "Squeeze", 1);
    tc_in(c, Tseq(4, SHAPE(1, 3, 1, 5)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(3, 5));
    tc_free(c);
    c = tc_new(13, "Squeeze", 1);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_in(c, T(I64, 1, SHAPE(1), IV(0)), true);
    check_rejects(c, "size 2");
    tc_free(c);
    // opset 13 input form, unsorted axes
    c = tc_new(13, "Unsqueeze", 1);
    tc_in(c, Tseq(3, SHAPE(3, 4, 5)), false);
    tc_in(c, T(I64, 1, SHAPE(3), IV(5, 4, 2)), true);
    tc_run(c);
    check_shape(c->out[0], 6, SHAPE(3, 4, 1, 5, 1, 1));
    tc_free(c);
    c = tc_new(11, "Unsqueeze", 1);
    a_ints(c, "axes", 1, IV(-1));
    tc_in(c, Tseq(1, SHAPE(3)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(3, 1));
    tc_free(c);
    c = tc_new(11, "Unsqueeze", 1);
    a_ints(c, "axes", 2, IV(0, 0));
    tc_in(c, Tseq(1, SHAPE(3)), false);
    check_rejects(c, "repeated");
    tc_free(c);
}

static void test_concat_split(void **state)
{
    (void)state;
    tc *c = tc_new(13, "Concat", 1);
    a_int(c, "axis", -1);
    tc_in(c, Tseq(2, SHAPE(2, 1)), false);
    tc_in(c, T(F32, 2, SHAPE(2, 2), FV(10, 11, 12, 13)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 3));
    check_f32(c->out[0], 6, FV(0, 10, 11, 1, 12, 13));
    tc_free(c);
    c = tc_new(13, "Concat", 1);
    a_int(c, "axis", 0);
    tc_in(c, Tseq(2, SHAPE(2, 1)), false);
    tc_in(c, Tseq(2, SHAPE(2, 2)), false);
    check_rejects(c, "dim 1");
    tc_free(c);

    // opset 11: split attribute
    c = tc_new(11, "Split", 2);
    a_int(c, "axis", 1);
    a_ints(c, "split", 2, IV(1, 2));
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_run(c);
    check_f32(c->out[0], 2, FV(0, 3));
    check_f32(c->out[1], 4, FV(1, 2, 4, 5));
    tc_free(c);
    // opset 13: equal parts, negative axis
    c = tc_new(13, "Split", 3);
    a_int(c, "axis", -1);
    tc_in(c, Tseq(1, SHAPE(6)), false);
    tc_run(c);
    check_f32(c->out[2], 2, FV(4, 5));
    tc_free(c);
    c = tc_new(13, "Split", 2);
    tc_in(c, Tseq(1, SHAPE(6)), false);
    tc_in(c, T(I64, 1, SHAPE(2), IV(2, 3)), true);
    check_rejects(c, "add up");
    tc_free(c);
}

static void test_slice(void **state)
{
    (void)state;
    // opset 13 inputs: negative step, clamped out-of-range ends
    tc *c = tc_new(13, "Slice", 1);
    tc_in(c, Tseq(2, SHAPE(3, 4)), false);
    tc_in(c, T(I64, 1, SHAPE(2), IV(-1, 100)), true);
    tc_in(c, T(I64, 1, SHAPE(2), IV(INT64_MIN, 1)), true);
    tc_in(c, T(I64, 1, SHAPE(2), IV(1, 0)), true);     // axes
    tc_in(c, T(I64, 1, SHAPE(2), IV(-1, -2)), true);   // steps
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(1, 4)); // x[2:1:-2, 3::-1]
    check_f32(c->out[0], 4, FV(11, 10, 9, 8));
    tc_free(c);
    // opset 9 attributes, default axes
    c = tc_new(9, "Slice", 1);
    a_ints(c, "starts", 2, IV(1, 1));
    a_ints(c, "ends", 2, IV(3, -1));
    tc_in(c, Tseq(2, SHAPE(3, 4)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 2));
    check_f32(c->out[0], 4, FV(5, 6, 9, 10));
    tc_free(c);
    c = tc_new(13, "Slice", 1);
    tc_in(c, Tseq(1, SHAPE(4)), false);
    tc_in(c, T(I64, 1, SHAPE(1), IV(0)), true);
    tc_in(c, T(I64, 1, SHAPE(1), IV(4)), true);
    tc_in(c, NULL, false);
    tc_in(c, T(I64, 1, SHAPE(1), IV(0)), true);
    check_rejects(c, "step is 0");
    tc_free(c);
}

static void test_gather_shape(void **state)
{
    (void)state;
    tc *c = tc_new(13, "Gather", 1);
    a_int(c, "axis", -1);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_in(c, T(I64, 2, SHAPE(1, 2), IV(-1, 0)), false);
    tc_run(c);
    check_shape(c->out[0], 3, SHAPE(2, 1, 2));
    check_f32(c->out[0], 4, FV(2, 0, 5, 3));
    tc_free(c);
    c = tc_new(13, "Gather", 1);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_in(c, T(I64, 1, SHAPE(1), IV(2)), true);
    check_rejects(c, "out of range");
    tc_free(c);

    c = tc_new(15, "Shape", 1);
    a_int(c, "start", 1);
    a_int(c, "end", -1);
    tc_in(c, Tseq(4, SHAPE(2, 3, 4, 5)), false);
    tc_run(c);
    check_i64(c->out[0], 2, IV(3, 4));
    tc_free(c);

    c = tc_new(9, "ConstantOfShape", 1);
    tc_in(c, T(I64, 1, SHAPE(2), IV(2, 3)), true);
    tc_run(c);
    check_f32(c->out[0], 6, FV(0, 0, 0, 0, 0, 0));
    tc_free(c);
    c = tc_new(9, "ConstantOfShape", 1);
    reel_ir_attr *a = attr(c, "value", REEL_ATTR_TENSOR);
    a->t = T(I64, 1, SHAPE(1), IV(7));
    tc_in(c, T(I64, 1, SHAPE(1), IV(2)), true);
    tc_run(c);
    check_i64(c->out[0], 2, IV(7, 7));
    tc_free(c);
    c = tc_new(9, "ConstantOfShape", 1);
    tc_in(c, T(I64, 1, SHAPE(1), IV(-2)), true);
    check_rejects(c, "negative");
    tc_free(c);

    c = tc_new(13, "Constant", 1);
    a_ints(c, "value_ints", 3, IV(1, 2, 3));
    tc_run(c);
    check_i64(c->out[0], 3, IV(1, 2, 3));
    tc_free(c);
}

static void test_pad_expand(void **state)
{
    (void)state;
    // opset 2 attributes, constant 9 on both sides of the last dim
    tc *c = tc_new(2, "Pad", 1);
    a_ints(c, "pads", 4, IV(0, 1, 0, 2));
    a_float(c, "value", 9);
    tc_in(c, Tseq(2, SHAPE(2, 2)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 5));
    check_f32(c->out[0], 10, FV(9, 0, 1, 9, 9, 9, 2, 3, 9, 9));
    tc_free(c);
    // opset 13: reflect and edge, pads as input, a pad row on dim 0
    c = tc_new(13, "Pad", 1);
    a_str(c, "mode", "reflect");
    tc_in(c, Tseq(1, SHAPE(3)), false);
    tc_in(c, T(I64, 1, SHAPE(2), IV(2, 2)), true);
    tc_run(c);
    check_f32(c->out[0], 7, FV(2, 1, 0, 1, 2, 1, 0));
    tc_free(c);
    c = tc_new(13, "Pad", 1);
    a_str(c, "mode", "edge");
    tc_in(c, Tseq(2, SHAPE(1, 2)), false);
    tc_in(c, T(I64, 1, SHAPE(4), IV(1, 1, 0, 0)), true);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 3));
    check_f32(c->out[0], 6, FV(0, 0, 1, 0, 0, 1));
    tc_free(c);
    c = tc_new(13, "Pad", 1);
    tc_in(c, Tseq(2, SHAPE(1, 2)), false);
    tc_in(c, T(I64, 1, SHAPE(4), IV(1, 0, 0, 0)), true);
    tc_in(c, T(F32, 0, NULL, FV(-1)), false);
    tc_run(c);
    check_f32(c->out[0], 4, FV(-1, -1, 0, 1));
    tc_free(c);
    c = tc_new(13, "Pad", 1);
    a_str(c, "mode", "wrap");
    tc_in(c, Tseq(1, SHAPE(3)), false);
    tc_in(c, T(I64, 1, SHAPE(2), IV(1, 1)), true);
    check_rejects(c, "wrap");
    tc_free(c);

    c = tc_new(13, "Expand", 1);
    tc_in(c, T(F32, 2, SHAPE(2, 1), FV(1, 2)), false);
    tc_in(c, T(I64, 1, SHAPE(3), IV(2, 1, 3)), true);
    tc_run(c);
    check_shape(c->out[0], 3, SHAPE(2, 2, 3));
    check_f32(c->out[0], 12, FV(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2));
    tc_free(c);
}

// ---- reduce -----------------------------------------------------------------

static void test_reduce(void **state)
{
    (void)state;
    // ReduceMean over H,W keepdims (opset 13 attribute)
    tc *c = tc_new(13, "ReduceMean", 1);
    a_ints(c, "axes", 2, IV(-1, -2));
    tc_in(c, Tseq(4, SHAPE(1, 2, 2, 2)), false);
    tc_run(c);
    check_shape(c->out[0], 4, SHAPE(1, 2, 1, 1));
    check_f32(c->out[0], 2, FV(1.5f, 5.5f));
    tc_free(c);
    // ReduceMax over the middle axis, no keepdims
    c = tc_new(13, "ReduceMax", 1);
    a_ints(c, "axes", 1, IV(1));
    a_int(c, "keepdims", 0);
    tc_in(c, T(F32, 3, SHAPE(2, 2, 2), FV(1, 8, 3, 4, -1, -2, -3, 0)), false);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(2, 2));
    check_f32(c->out[0], 4, FV(3, 8, -1, 0));
    tc_free(c);
    // ReduceSum opset 13: axes input; empty axes reduce all / noop
    c = tc_new(13, "ReduceSum", 1);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_in(c, T(I64, 1, SHAPE(1), IV(0)), true);
    tc_run(c);
    check_shape(c->out[0], 2, SHAPE(1, 3));
    check_f32(c->out[0], 3, FV(3, 5, 7));
    tc_free(c);
    c = tc_new(13, "ReduceSum", 1);
    a_int(c, "keepdims", 0);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_in(c, T(I64, 1, SHAPE(0), NULL), true);
    tc_run(c);
    check_shape(c->out[0], 0, NULL);
    check_f32(c->out[0], 1, FV(15));
    tc_free(c);
    c = tc_new(13, "ReduceSum", 1);
    a_int(c, "noop_with_empty_axes", 1);
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    tc_in(c, T(I64, 1, SHAPE(0), NULL), true);
    tc_run(c);
    check_f32(c->out[0], 6, FV(0, 1, 2, 3, 4, 5));
    tc_free(c);
    c = tc_new(13, "ReduceMean", 1);
    a_ints(c, "axes", 1, IV(3));
    tc_in(c, Tseq(2, SHAPE(2, 3)), false);
    check_rejects(c, "out of range");
    tc_free(c);
}

static void test_softmax(void **state)
{
    (void)state;
    // opset 13, axis 0 of [2,2]: along columns
    tc *c = tc_new(13, "Softmax", 1);
    a_int(c, "axis", 0);
    tc_in(c, T(F32, 2, SHAPE(2, 2), FV(0, 1, 0, 3)), false);
    tc_run(c);
    check_f32(c->out[0], 4, FV(0.5f, 0.11920292f, 0.5f, 0.88079708f));
    tc_free(c);
    // default axis -1, LogSoftmax, large numbers stay finite
    c = tc_new(13, "LogSoftmax", 1);
    tc_in(c, T(F32, 2, SHAPE(1, 3), FV(1000, 1001, 1002)), false);
    tc_run(c);
    check_f32(c->out[0], 3, FV(-2.40760596f, -1.40760596f, -0.40760596f));
    tc_free(c);
    // opset 11 on rank 2 with the default axis 1 is the same as 13's last axis
    c = tc_new(11, "Softmax", 1);
    tc_in(c, T(F32, 2, SHAPE(1, 2), FV(0, 0)), false);
    tc_run(c);
    check_f32(c->out[0], 2, FV(0.5f, 0.5f));
    tc_free(c);
    // opset 11 coerces [2,2,2] at the default axis 1 to rows of 4
    c = tc_new(11, "Softmax", 1);
    tc_in(c, Tseq(3, SHAPE(2, 2, 2)), false);
    tc_run(c);
    check_f32(c->out[0], 8, FV(0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f,
                               0.0320586f, 0.0871443f, 0.2368828f, 0.6439143f));
    tc_free(c);
    c = tc_new(13, "Softmax", 1);
    a_int(c, "axis", 2);
    tc_in(c, Tseq(2, SHAPE(2, 2)), false);
    check_rejects(c, "out of range");
    tc_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_wrap_borrows),
        cmocka_unit_test(test_add_broadcast),
        cmocka_unit_test(test_binary_rejects),
        cmocka_unit_test(test_pow),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_clip),
        cmocka_unit_test(test_compare_where),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_identity_dropout),
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_flatten_transpose),
        cmocka_unit_test(test_squeeze_unsqueeze),
        cmocka_unit_test(test_concat_split),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_gather_shape),
        cmocka_unit_test(test_pad_expand),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_softmax),
    };
    return reel_run_tests(tests, NULL, NULL);
}

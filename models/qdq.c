// QDQ folding: DequantizeLinear -> float op -> QuantizeLinear rewritten as
// one integer op on the 8-bit tensors, as ONNX Runtime's QDQ transformer
// does (see passes.h, reel_pass_fold_qdq). A fold happens only where it is
// exact: constant per-tensor scales and zero points (per channel for
// weights), the float result used by the Q alone, matching 8-bit types;
// every rewritten node passes its op's inference, or is put back.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/op.h"
#include "models/passes.h"

// A Q or DQ node's parameters: its scale and zero point values (zp -1 when
// omitted), constants.
typedef struct qparams {
    int scale, zp;
    const float *s;   // the scales
    int64_t count;    // how many
    int64_t axis;     // normalized; meaningful when count > 1
    reel_dtype dt;    // the 8-bit (or, for a bias, int32) side's type
} qparams;

static reel_ir_node *live_producer(const reel_ir_graph *g, int v)
{
    const reel_ir_value *rv = reel_ir_value_at(g, v);
    if (!rv || rv->producer < 0)
        return NULL;
    reel_ir_node *n = reel_ir_node_at(g, rv->producer);
    return n->dead ? NULL : n;
}

static bool is_op(const reel_ir_node *n, const char *op)
{
    return n && strcmp(n->op, op) == 0;
}

// The parameters of Q/DQ node n whose 8-bit (or int32) side is value `side`;
// false unless they are constants of consistent shapes.
static bool params_of(const reel_ir_graph *g, const reel_ir_node *n, int side, qparams *p)
{
    if (n->n_inputs < 2 || n->n_outputs != 1 || reel_ir_attr_int(n, "block_size", 0) != 0)
        return false;
    const reel_ir_value *s = reel_ir_value_at(g, n->inputs[1]);
    const reel_ir_value *z = n->n_inputs > 2 ? reel_ir_value_at(g, n->inputs[2]) : NULL;
    const reel_ir_value *x = reel_ir_value_at(g, side);
    if (!s || !s->constant || s->constant->dtype != REEL_DTYPE_FLOAT32 || s->constant->rank > 1 || !x)
        return false;
    p->scale = n->inputs[1];
    p->zp = z ? n->inputs[2] : -1;
    p->s = s->constant->data;
    p->count = reel_tensor_count(s->constant->rank, s->constant->shape);
    p->dt = x->dtype;
    if (p->count < 1 || (z && (!z->constant || z->constant->dtype != p->dt
                               || reel_tensor_count(z->constant->rank, z->constant->shape) != p->count)))
        return false;
    p->axis = 0;
    if (p->count > 1) {
        if (x->rank < 1)
            return false;
        p->axis = reel_ir_attr_int(n, "axis", 1);
        if (p->axis < 0)
            p->axis += x->rank;
        if (p->axis < 0 || p->axis >= x->rank || x->dims[p->axis] != p->count)
            return false;
    }
    return true;
}

static int32_t zp_at(const reel_ir_graph *g, const qparams *p, int64_t i)
{
    if (p->zp < 0)
        return 0;
    const reel_tensor *z = reel_ir_value_at(g, p->zp)->constant;
    switch (z->dtype) {
    case REEL_DTYPE_UINT8: return ((const uint8_t *)z->data)[i];
    case REEL_DTYPE_INT8: return ((const int8_t *)z->data)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)z->data)[i];
    default: return 0;
    }
}

static bool is_q8(reel_dtype dt)
{
    return dt == REEL_DTYPE_UINT8 || dt == REEL_DTYPE_INT8;
}

// A per-tensor 8-bit DQ writes value v: its input and parameters.
static bool dq_input(const reel_ir_graph *g, int v, int *x, qparams *p)
{
    reel_ir_node *dq = v >= 0 ? live_producer(g, v) : NULL;
    if (!is_op(dq, "DequantizeLinear") || dq->inputs[0] < 0 || !params_of(g, dq, dq->inputs[0], p))
        return false;
    *x = dq->inputs[0];
    return is_q8(p->dt);
}

static bool per_tensor_dq(const reel_ir_graph *g, int v, int *x, qparams *p)
{
    return dq_input(g, v, x, p) && p->count == 1;
}

// The one consumer of value y, a per-tensor 8-bit QuantizeLinear: its params
// and output.
static bool single_q(reel_ir_graph *g, int y, qparams *p, int *qout, reel_ir_node **q)
{
    reel_ir_node *c[2];
    if (y < 0 || reel_pass_is_graph_output(g, y) || reel_pass_consumers(g, y, c, 2) != 1)
        return false;
    if (!is_op(c[0], "QuantizeLinear") || c[0]->inputs[0] != y || c[0]->n_outputs != 1 || c[0]->outputs[0] < 0)
        return false;
    *qout = c[0]->outputs[0];
    *q = c[0];
    return params_of(g, c[0], *qout, p) && p->count == 1 && is_q8(p->dt);
}

// The zero point value of p, or a new constant 0 of its type.
static int zp_value(reel_ir_graph *g, const reel_ir_node *n, const qparams *p)
{
    if (p->zp >= 0)
        return p->zp;
    return reel_pass_add_constant(g, n->name, ".zero_point", reel_tensor_new(p->dt, 0, NULL));
}

static bool same_params(const reel_ir_graph *g, const qparams *a, const qparams *b)
{
    return a->count == 1 && b->count == 1 && a->dt == b->dt && a->s[0] == b->s[0] && zp_at(g, a, 0) == zp_at(g, b, 0);
}

typedef struct fold_ctx {
    reel_ir_graph *g;
    int index;         // of the node being rewritten
    int rewritten;
} fold_ctx;

// n becomes `op` with `inputs`, writing the Q's output; the Q dies. Kept only
// if the op's inference takes it; otherwise n is restored.
static bool rewrite(fold_ctx *f, reel_ir_node *n, const char *op, const int *inputs, int n_inputs,
                    reel_ir_node *q)
{
    reel_ir_graph *g = f->g;
    const reel_op *impl = reel_op_find(op);
    if (!impl || !impl->infer)
        return false;
    char *old_op = n->op;
    int *old_in = n->inputs, old_n = n->n_inputs, old_out = n->outputs[0], qout = q->outputs[0];
    reel_ir_value *qv = reel_ir_value_at(g, qout);
    reel_ir_value saved = *qv;
    n->op = g_strdup(op);
    n->inputs = g_memdup2(inputs, sizeof(int) * (size_t)n_inputs);
    n->n_inputs = n_inputs;
    n->outputs[0] = qout;
    GError *e = NULL;
    if (impl->infer(g, n, &e) != 0 || qv->dtype != saved.dtype) {
        g_clear_error(&e);
        g_free(n->op);
        g_free(n->inputs);
        n->op = old_op;
        n->inputs = old_in;
        n->n_inputs = old_n;
        n->outputs[0] = old_out;
        *qv = saved;
        return false;
    }
    g_free(old_op);
    g_free(old_in);
    qv->producer = f->index;
    reel_ir_value_at(g, old_out)->producer = -1;
    q->dead = true;
    f->rewritten++;
    return true;
}

// ---- Conv, MatMul, Gemm

// The Q's clamp absorbs a fused Relu or Clip only where the kernel clamps
// (QLinearConv reads the node's fused, fused_a, fused_b).
static bool fused_ok(const reel_ir_node *conv)
{
    return !conv->fused || strcmp(conv->fused, "Relu") == 0 || strcmp(conv->fused, "Clip") == 0;
}

// The bias of QLinearConv from input value b: a DQ of int32 constants whose
// scale is x_scale * w_scale (used as is), or float32 constants quantized at
// that scale. -1 when neither.
static int conv_bias(fold_ctx *f, reel_ir_node *conv, int b, const qparams *px, const qparams *pw, int64_t M)
{
    reel_ir_graph *g = f->g;
    reel_ir_node *dq = live_producer(g, b);
    qparams pb;
    if (is_op(dq, "DequantizeLinear")) {
        const reel_ir_value *bi = reel_ir_value_at(g, dq->inputs[0]);
        if (!bi || !bi->constant || bi->constant->dtype != REEL_DTYPE_INT32 || !params_of(g, dq, dq->inputs[0], &pb)
            || reel_tensor_count(bi->constant->rank, bi->constant->shape) != M || (pb.count != 1 && pb.count != M))
            return -1;
        for (int64_t c = 0; c < M; c++) {
            float want = px->s[0] * pw->s[pw->count == 1 ? 0 : c], have = pb.s[pb.count == 1 ? 0 : c];
            if (zp_at(g, &pb, pb.count == 1 ? 0 : c) != 0 || fabsf(have - want) > 1e-6f * fabsf(want))
                return -1;
        }
        return dq->inputs[0];
    }
    const reel_ir_value *bv = reel_ir_value_at(g, b);
    if (!bv || !bv->constant || bv->constant->dtype != REEL_DTYPE_FLOAT32
        || reel_tensor_count(bv->constant->rank, bv->constant->shape) != M)
        return -1;
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_INT32, 1, &M);
    const float *fb = bv->constant->data;
    for (int64_t c = 0; c < M; c++) {
        double v = rint((double)fb[c] / ((double)px->s[0] * pw->s[pw->count == 1 ? 0 : c]));
        if (!(fabs(v) < 2147483647.0)) {
            reel_tensor_free(&t);
            return -1;
        }
        ((int32_t *)t->data)[c] = (int32_t)v;
    }
    return reel_pass_add_constant(g, conv->name, ".bias_q", t);
}

// A DQ of 8-bit constant weights, per tensor or per channel along `axis`.
static bool weight_dq(const reel_ir_graph *g, int v, int64_t axis, int *w, qparams *p)
{
    if (!dq_input(g, v, w, p) || !reel_ir_value_at(g, *w)->constant)
        return false;
    return p->count == 1 || p->axis == axis;
}

static bool fold_conv(fold_ctx *f, reel_ir_node *n)
{
    reel_ir_graph *g = f->g;
    qparams px, pw, py;
    int x, w, qout;
    reel_ir_node *q;
    if (n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs != 1 || !fused_ok(n)
        || !single_q(g, n->outputs[0], &py, &qout, &q) || !per_tensor_dq(g, n->inputs[0], &x, &px)
        || !weight_dq(g, n->inputs[1], 0, &w, &pw))
        return false;
    const reel_tensor *wt = reel_ir_value_at(g, w)->constant;
    int64_t M = wt->rank >= 1 ? wt->shape[0] : 0;
    int bias = -1;
    if (n->n_inputs > 2 && n->inputs[2] >= 0 && (bias = conv_bias(f, n, n->inputs[2], &px, &pw, M)) < 0)
        return false;
    int in[9] = { x, px.scale, zp_value(g, n, &px), w, pw.scale, zp_value(g, n, &pw), py.scale, zp_value(g, n, &py),
                  bias };
    return rewrite(f, n, "QLinearConv", in, bias >= 0 ? 9 : 8, q);
}

static bool fold_matmul(fold_ctx *f, reel_ir_node *n)
{
    reel_ir_graph *g = f->g;
    qparams pa, pb, py;
    int a, b, qout;
    reel_ir_node *q;
    if (n->n_inputs != 2 || !single_q(g, n->outputs[0], &py, &qout, &q) || !per_tensor_dq(g, n->inputs[0], &a, &pa)
        || !dq_input(g, n->inputs[1], &b, &pb))
        return false;
    // B per tensor, or per column of a 2-D B.
    const reel_ir_value *bv = reel_ir_value_at(g, b);
    if (pb.count != 1 && (bv->rank != 2 || pb.axis != 1))
        return false;
    int in[8] = { a, pa.scale, zp_value(g, n, &pa), b, pb.scale, zp_value(g, n, &pb), py.scale, zp_value(g, n, &py) };
    return rewrite(f, n, "QLinearMatMul", in, 8, q);
}

// Gemm (A not transposed, alpha 1): without C a MatMul (transB's constant
// weights transposed here); with C (beta 1, one value per column: a DQ of
// int32 at a_scale * b_scale, or float32 quantized so) com.microsoft's
// QGemm.
static bool fold_gemm(fold_ctx *f, reel_ir_node *n)
{
    reel_ir_graph *g = f->g;
    qparams pa, pb, py;
    int a, b, qout;
    reel_ir_node *q;
    bool tb = reel_ir_attr_int(n, "transB", 0) != 0, has_c = n->n_inputs > 2 && n->inputs[2] >= 0;
    if (n->n_inputs < 2 || n->n_inputs > 3 || reel_ir_attr_int(n, "transA", 0) != 0
        || reel_ir_attr_float(n, "alpha", 1.0f) != 1.0f || (has_c && reel_ir_attr_float(n, "beta", 1.0f) != 1.0f)
        || !single_q(g, n->outputs[0], &py, &qout, &q) || !per_tensor_dq(g, n->inputs[0], &a, &pa)
        || !weight_dq(g, n->inputs[1], tb ? 0 : 1, &b, &pb))
        return false;
    const reel_tensor *bt = reel_ir_value_at(g, b)->constant;
    if (bt->rank != 2 || reel_ir_value_at(g, a)->rank != 2)
        return false;
    if (has_c) {
        int c = conv_bias(f, n, n->inputs[2], &pa, &pb, tb ? bt->shape[0] : bt->shape[1]);
        int in[9] = { a, pa.scale, zp_value(g, n, &pa), b, pb.scale, zp_value(g, n, &pb), c, py.scale,
                      zp_value(g, n, &py) };
        return c >= 0 && rewrite(f, n, "com.microsoft:QGemm", in, 9, q);
    }
    int bin = b;
    if (tb) {
        int64_t N = bt->shape[0], K = bt->shape[1], shape[2] = { K, N };
        reel_tensor *t = reel_tensor_new(bt->dtype, 2, shape);
        const uint8_t *s = bt->data;
        uint8_t *d = t->data;
        for (int64_t i = 0; i < N; i++)
            for (int64_t k = 0; k < K; k++)
                d[k * N + i] = s[i * K + k];
        bin = reel_pass_add_constant(g, n->name, ".weight_t", t);
    }
    int in[8] = { a, pa.scale, zp_value(g, n, &pa), bin, pb.scale, zp_value(g, n, &pb), py.scale,
                  zp_value(g, n, &py) };
    return rewrite(f, n, "QLinearMatMul", in, 8, q);
}

// ---- The com.microsoft ops

static bool fold_binary(fold_ctx *f, reel_ir_node *n, const char *op)
{
    reel_ir_graph *g = f->g;
    qparams pa, pb, py;
    int a, b, qout;
    reel_ir_node *q;
    if (n->n_inputs != 2 || !single_q(g, n->outputs[0], &py, &qout, &q) || !per_tensor_dq(g, n->inputs[0], &a, &pa)
        || !per_tensor_dq(g, n->inputs[1], &b, &pb) || pa.dt != py.dt || pb.dt != py.dt)
        return false;
    int in[8] = { a, pa.scale, zp_value(g, n, &pa), b, pb.scale, zp_value(g, n, &pb), py.scale, zp_value(g, n, &py) };
    return rewrite(f, n, op, in, 8, q);
}

// X, x_scale, x_zero_point, y_scale, y_zero_point: the pools and the unary ops.
static bool fold_unary(fold_ctx *f, reel_ir_node *n, const char *op)
{
    reel_ir_graph *g = f->g;
    qparams px, py;
    int x, qout;
    reel_ir_node *q;
    if (n->n_inputs != 1 || n->n_outputs != 1 || !single_q(g, n->outputs[0], &py, &qout, &q)
        || !per_tensor_dq(g, n->inputs[0], &x, &px) || px.dt != py.dt)
        return false;
    int in[5] = { x, px.scale, zp_value(g, n, &px), py.scale, zp_value(g, n, &py) };
    return rewrite(f, n, op, in, 5, q);
}

static bool fold_concat(fold_ctx *f, reel_ir_node *n)
{
    reel_ir_graph *g = f->g;
    qparams py;
    int qout;
    reel_ir_node *q;
    if (n->n_inputs < 1 || !single_q(g, n->outputs[0], &py, &qout, &q))
        return false;
    int *in = g_new(int, 2 + 3 * (size_t)n->n_inputs);
    in[0] = py.scale;
    in[1] = zp_value(g, n, &py);
    bool ok = true;
    for (int k = 0; k < n->n_inputs && ok; k++) {
        qparams px;
        int x;
        ok = per_tensor_dq(g, n->inputs[k], &x, &px) && px.dt == py.dt;
        if (ok) {
            in[2 + 3 * k] = x;
            in[3 + 3 * k] = px.scale;
            in[4 + 3 * k] = zp_value(g, n, &px);
        }
    }
    ok = ok && rewrite(f, n, "com.microsoft:QLinearConcat", in, 2 + 3 * n->n_inputs, q);
    g_free(in);
    return ok;
}

// ---- Ops that move or pick 8-bit values as they are: with the same scale and
// zero point on both sides they run on the 8-bit tensor itself.
static bool fold_passthrough(fold_ctx *f, reel_ir_node *n)
{
    reel_ir_graph *g = f->g;
    qparams px, py;
    int x, qout;
    reel_ir_node *q;
    if (n->n_inputs < 1 || n->n_outputs != 1 || !single_q(g, n->outputs[0], &py, &qout, &q)
        || !per_tensor_dq(g, n->inputs[0], &x, &px) || !same_params(g, &px, &py))
        return false;
    int *in = g_memdup2(n->inputs, sizeof(int) * (size_t)n->n_inputs);
    in[0] = x;
    bool ok = rewrite(f, n, n->op, in, n->n_inputs, q);
    g_free(in);
    return ok;
}

// Pad (opset 11 on: pads and the constant value are inputs) likewise; a
// constant mode's value becomes its quantized byte, which is what quantizing
// the padded float tensor gives there.
static bool fold_pad(fold_ctx *f, reel_ir_node *n)
{
    reel_ir_graph *g = f->g;
    qparams px, py;
    int x, qout;
    reel_ir_node *q;
    if (g->opset < 11 || n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs != 1
        || !single_q(g, n->outputs[0], &py, &qout, &q) || !per_tensor_dq(g, n->inputs[0], &x, &px)
        || !same_params(g, &px, &py))
        return false;
    float v = 0.0f;
    if (n->n_inputs > 2 && n->inputs[2] >= 0) {
        const reel_ir_value *cv = reel_ir_value_at(g, n->inputs[2]);
        if (!cv->constant || cv->constant->dtype != REEL_DTYPE_FLOAT32
            || reel_tensor_count(cv->constant->rank, cv->constant->shape) != 1)
            return false;
        v = *(const float *)cv->constant->data;
    }
    float lo = py.dt == REEL_DTYPE_INT8 ? -128.0f : 0.0f, hi = py.dt == REEL_DTYPE_INT8 ? 127.0f : 255.0f;
    float b = rintf(v / py.s[0]) + (float)zp_at(g, &py, 0);
    b = b >= lo ? b : lo;
    b = b <= hi ? b : hi;
    reel_tensor *t = reel_tensor_new(py.dt, 0, NULL);
    if (py.dt == REEL_DTYPE_INT8)
        *(int8_t *)t->data = (int8_t)b;
    else
        *(uint8_t *)t->data = (uint8_t)b;
    int in[3] = { x, n->inputs[1], reel_pass_add_constant(g, n->name, ".value_q", t) };
    return rewrite(f, n, "Pad", in, 3, q);
}

// A Relu or Clip whose output only a Q reads, where the Q's saturation
// already clamps as it does (Relu: the zero point is the type's minimum;
// Clip: its bounds quantize to the type's ends), goes: the Q reads its
// input. ONNX Runtime's Relu/Clip quantization fusions do the same; the
// op before can then fold (Add -> Relu -> Q is QLinearAdd).
static bool drop_clamp(fold_ctx *f, reel_ir_node *n)
{
    reel_ir_graph *g = f->g;
    qparams py;
    int qout;
    reel_ir_node *q;
    if (n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs != 1 || !single_q(g, n->outputs[0], &py, &qout, &q))
        return false;
    float qmin = py.dt == REEL_DTYPE_INT8 ? -128.0f : 0.0f, qmax = py.dt == REEL_DTYPE_INT8 ? 127.0f : 255.0f;
    float zp = (float)zp_at(g, &py, 0), lo = 0.0f, hi = INFINITY;
    if (is_op(n, "Clip") && !reel_pass_clip_bounds(g, n, &lo, &hi))
        return false;
    // The quantized bounds, saturated as Q does.
    float qlo = rintf(lo / py.s[0]) + zp, qhi = rintf(hi / py.s[0]) + zp;
    if (!(qlo <= qmin) || !(qhi >= qmax))
        return false;
    q->inputs[0] = n->inputs[0];
    n->dead = true;
    return true;
}

static int live_nodes(const reel_ir_graph *g)
{
    int c = 0;
    for (guint i = 0; i < g->nodes->len; i++)
        c += !reel_ir_node_at(g, (int)i)->dead;
    return c;
}

bool reel_qdq_fold_enabled(void)
{
    const char *e = getenv("REEL_QDQ_FOLD");
    return !e || strcmp(e, "0") != 0;
}

int reel_pass_fold_qdq(reel_ir_graph *g)
{
    // Producers as the live nodes say (earlier passes moved nodes).
    for (guint v = 0; v < g->values->len; v++)
        reel_ir_value_at(g, (int)v)->producer = -1;
    for (guint i = 0; i < g->nodes->len; i++) {
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        for (int k = 0; k < n->n_outputs && !n->dead; k++)
            if (n->outputs[k] >= 0)
                reel_ir_value_at(g, n->outputs[k])->producer = (int)i;
    }
    reel_pass_remove_dead(g);
    int before = live_nodes(g);
    fold_ctx f = { .g = g };
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *n = reel_ir_node_at(g, (int)i);
        if (!n->dead && (is_op(n, "Relu") || is_op(n, "Clip")))
            drop_clamp(&f, n);
    }
    static const char *const passthrough[] = { "MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze",
                                               NULL };
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *n = reel_ir_node_at(g, (int)i);
        if (n->dead || n->n_outputs < 1 || n->outputs[0] < 0)
            continue;
        f.index = (int)i;
        if (is_op(n, "Conv"))
            fold_conv(&f, n);
        else if (is_op(n, "MatMul"))
            fold_matmul(&f, n);
        else if (is_op(n, "Gemm"))
            fold_gemm(&f, n);
        else if (is_op(n, "Add"))
            fold_binary(&f, n, "com.microsoft:QLinearAdd");
        else if (is_op(n, "Mul"))
            fold_binary(&f, n, "com.microsoft:QLinearMul");
        else if (is_op(n, "AveragePool"))
            fold_unary(&f, n, "com.microsoft:QLinearAveragePool");
        else if (is_op(n, "GlobalAveragePool"))
            fold_unary(&f, n, "com.microsoft:QLinearGlobalAveragePool");
        else if (is_op(n, "Sigmoid"))
            fold_unary(&f, n, "com.microsoft:QLinearSigmoid");
        else if (is_op(n, "LeakyRelu"))
            fold_unary(&f, n, "com.microsoft:QLinearLeakyRelu");
        else if (is_op(n, "Concat"))
            fold_concat(&f, n);
        else if (is_op(n, "Pad"))
            fold_pad(&f, n);
        else if (is_op(n, "Resize") && strcmp(reel_ir_attr_string(n, "mode", "nearest"), "nearest") == 0)
            fold_passthrough(&f, n);
        else
            for (int k = 0; passthrough[k]; k++)
                if (is_op(n, passthrough[k]) && fold_passthrough(&f, n))
                    break;
    }
    reel_pass_remove_dead(g);
    g->qdq_into += f.rewritten;
    g->qdq_folded += f.rewritten + before - live_nodes(g);
    return f.rewritten;
}

// HardSwish written out in four nodes, as exporters write it for opsets
// before 14 (paddle2onnx's PP-OCR and PP-LCNet models, among others):
//   y = Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6)
// becomes one HardSwish node, which reel_pass_fuse_activations then folds
// into the Conv before it: four passes over the tensor become none.
#include <math.h>
#include <string.h>

#include "models/passes.h"

// Input k of n as a float32 scalar constant, or NAN.
static float scalar(const reel_ir_graph *g, const reel_ir_node *n, int k)
{
    const reel_ir_value *v = k < n->n_inputs && n->inputs[k] >= 0 ? reel_ir_value_at(g, n->inputs[k]) : NULL;
    const reel_tensor *t = v ? v->constant : NULL;
    if (!t || t->dtype != REEL_DTYPE_FLOAT32 || reel_tensor_count(t->rank, t->shape) != 1)
        return NAN;
    return *(const float *)t->data;
}

// The live node producing value v when it is op with two inputs (or Clip),
// one output, and that output read by that one consumer alone (and not a
// graph output); else NULL.
static reel_ir_node *sole_producer(const reel_ir_graph *g, int v, const char *op)
{
    const reel_ir_value *val = v >= 0 ? reel_ir_value_at(g, v) : NULL;
    reel_ir_node *n = val && val->producer >= 0 ? reel_ir_node_at(g, val->producer) : NULL;
    reel_ir_node *users[2];
    if (!n || n->dead || strcmp(n->op, op) != 0 || n->n_outputs != 1 || n->outputs[0] != v
        || reel_pass_is_graph_output(g, v) || reel_pass_consumers(g, v, users, 2) != 1)
        return NULL;
    return n;
}

// The operand of binary node n that is not value v; -1 when neither is v.
static int other_operand(const reel_ir_node *n, int v)
{
    if (n->n_inputs != 2)
        return -1;
    return n->inputs[0] == v ? n->inputs[1] : n->inputs[1] == v ? n->inputs[0] : -1;
}

// Whether d, a Div by 6 or a Mul by 1/6, ends a written-out HardSwish; its
// x in *x and the three nodes before it in chain[].
static bool hardswish_of(const reel_ir_graph *g, const reel_ir_node *d, int *x, reel_ir_node **chain)
{
    bool div = strcmp(d->op, "Div") == 0;
    if ((!div && strcmp(d->op, "Mul") != 0) || d->n_inputs != 2 || d->n_outputs != 1)
        return false;
    float k = scalar(g, d, 1);
    int m_out = d->inputs[0];
    if (!div && !(k == 1.0f / 6.0f)) { // Mul: the scalar on either side
        k = scalar(g, d, 0);
        m_out = d->inputs[1];
    }
    if (!(div ? k == 6.0f : k == 1.0f / 6.0f))
        return false;
    reel_ir_node *m = sole_producer(g, m_out, "Mul");
    for (int side = 0; m && side < 2; side++) {
        reel_ir_node *c = sole_producer(g, m->inputs[side], "Clip");
        float lo, hi;
        if (!c || c->n_inputs < 1 || !reel_pass_clip_bounds(g, c, &lo, &hi) || lo != 0.0f || hi != 6.0f)
            continue;
        reel_ir_node *a = sole_producer(g, c->inputs[0], "Add");
        int xv = m->inputs[1 - side];
        int three = a ? other_operand(a, xv) : -1;
        if (three < 0 || scalar(g, a, a->inputs[0] == three ? 0 : 1) != 3.0f)
            continue;
        const reel_ir_value *xval = reel_ir_value_at(g, xv);
        if (xval->dtype != REEL_DTYPE_FLOAT32)
            continue;
        *x = xv;
        chain[0] = a, chain[1] = c, chain[2] = m;
        return true;
    }
    return false;
}

int reel_pass_fuse_hardswish(reel_ir_graph *g)
{
    int fusions = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *d = reel_ir_node_at(g, (int)i);
        reel_ir_node *chain[3];
        int x;
        if (d->dead || !hardswish_of(g, d, &x, chain))
            continue;
        for (int k = 0; k < 3; k++) {
            chain[k]->dead = true;
            reel_ir_value_at(g, chain[k]->outputs[0])->producer = -1;
        }
        // The Div becomes the HardSwish, in its place in the order (x is
        // computed before the Add, so before it).
        g_free(d->op);
        d->op = g_strdup("HardSwish");
        d->inputs[0] = x;
        d->n_inputs = 1;
        fusions++;
    }
    return fusions;
}

// Graph passes: inference with constant folding, Conv+BN folding, residual
// Add and activation fusion into Conv, dead-node removal.
#include <float.h>
#include <math.h>
#include <string.h>

#include "models/op.h"
#include "models/passes.h"

// Folding makes constants of at most this many bytes per node; bigger
// results (a ConstantOfShape of a whole activation) stay kernels.
#define FOLD_MAX_BYTES ((size_t)64 << 20)

static bool value_static(const reel_ir_value *v)
{
    if (v->rank < 0 || v->dtype == REEL_DTYPE_NONE)
        return false;
    return reel_tensor_count(v->rank, v->dims) >= 0;
}

// Shape of a value with static dims.
static bool fold_shape(reel_ir_graph *g, reel_ir_node *n, int opset)
{
    if (n->n_inputs < 1 || n->n_outputs < 1 || n->outputs[0] < 0)
        return false;
    const reel_ir_value *in = reel_ir_value_at(g, n->inputs[0]);
    if (!in || in->rank < 0)
        return false;
    int64_t start = 0, end = in->rank;
    if (opset >= 15) {
        start = reel_ir_attr_int(n, "start", 0);
        end = reel_ir_attr_int(n, "end", in->rank);
    }
    if (start < 0) start += in->rank;
    if (end < 0) end += in->rank;
    start = CLAMP(start, 0, in->rank);
    end = CLAMP(end, start, in->rank);
    for (int64_t i = start; i < end; i++)
        if (in->dims[i] < 0)
            return false;
    int64_t len = end - start;
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_INT64, 1, &len);
    for (int64_t i = start; i < end; i++)
        ((int64_t *)t->data)[i - start] = in->dims[i];
    reel_ir_value_set_constant(reel_ir_value_at(g, n->outputs[0]), t);
    return true;
}

// Runs a node whose inputs are all constants; its outputs become constants.
static bool fold_node(reel_ir_graph *g, reel_ir_node *n, const reel_op *op)
{
    if (!op->run || n->n_outputs == 0)
        return false;
    for (int k = 0; k < n->n_inputs; k++) {
        const reel_ir_value *v = reel_ir_value_at(g, n->inputs[k]);
        if (v && !v->constant)
            return false;
    }
    size_t total = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        const reel_ir_value *v = reel_ir_value_at(g, n->outputs[k]);
        if (!v)
            continue;
        if (!value_static(v))
            return false;
        size_t b = (size_t)reel_tensor_count(v->rank, v->dims);
        if (__builtin_mul_overflow(b, reel_dtype_size(v->dtype), &b) || (total += b) > FOLD_MAX_BYTES)
            return false;
    }
    reel_tensor **in = g_new0(reel_tensor *, n->n_inputs + 1);
    reel_tensor **out = g_new0(reel_tensor *, n->n_outputs + 1);
    bool ok = true;
    for (int k = 0; k < n->n_inputs; k++)
        in[k] = n->inputs[k] >= 0 ? reel_ir_value_at(g, n->inputs[k])->constant : NULL;
    for (int k = 0; k < n->n_outputs && ok; k++) {
        const reel_ir_value *v = reel_ir_value_at(g, n->outputs[k]);
        if (v)
            ok = (out[k] = reel_tensor_new(v->dtype, v->rank, v->dims)) != NULL;
    }
    void *scratch = NULL;
    size_t scratch_size = 0;
    if (ok && op->scratch) {
        scratch_size = op->scratch(n, in, out);
        if (scratch_size)
            ok = (scratch = g_try_malloc0(scratch_size)) != NULL;
    }
    reel_exec_ctx ctx = { .threads = 1, .scratch = scratch, .scratch_size = scratch_size };
    // A kernel that fails here fails again at run time, where it is reported.
    // Empty outputs need no kernel: it could loop over the other dims for
    // nothing (a Gather of rows of zero bytes, a billion times).
    ok = ok && (total == 0 || op->run(n, in, out, &ctx) == 0);
    for (int k = 0; k < n->n_outputs; k++) {
        if (ok && out[k])
            reel_ir_value_set_constant(reel_ir_value_at(g, n->outputs[k]), out[k]);
        else
            reel_tensor_free(&out[k]);
    }
    g_free(scratch);
    g_free(in);
    g_free(out);
    return ok;
}

// RNN, GRU and LSTM: Y may be omitted (models keep only Y_h).
static bool first_output_optional(const reel_ir_node *n)
{
    return strcmp(n->op, "RNN") == 0 || strcmp(n->op, "GRU") == 0 || strcmp(n->op, "LSTM") == 0;
}

int reel_pass_infer_fold(reel_ir_graph *g, GHashTable *unsupported, GError **error)
{
    // Values whose shape cannot be known because their producer was skipped.
    GHashTable *unknown = g_hash_table_new(g_direct_hash, g_direct_equal);
    int rc = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *n = reel_ir_node_at(g, (int)i);
        if (n->dead)
            continue;
        const reel_op *op = reel_op_find(n->op);
        bool blocked = !op;
        for (int k = 0; k < n->n_inputs && !blocked; k++)
            blocked = n->inputs[k] >= 0 && g_hash_table_contains(unknown, GINT_TO_POINTER(n->inputs[k]));
        // Every op's first output is required (later ones may be omitted);
        // inference writes to it. The recurrent ops' infer handles any.
        if (!blocked && (n->n_outputs < 1 || (n->outputs[0] < 0 && !first_output_optional(n)))) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "node '%s' (%s): its first output has no name", n->name,
                        n->op);
            rc = REEL_EFORMAT;
            break;
        }
        if (!blocked) {
            GError *e = NULL;
            int r = op->infer ? op->infer(g, n, &e) : REEL_EUNSUPPORTED;
            if (r == REEL_EUNSUPPORTED) {
                if (unsupported)
                    g_hash_table_replace(unsupported, g_strdup(n->name),
                                         g_strdup(e ? e->message : "no shape inference"));
                g_clear_error(&e);
                blocked = true;
            } else if (r) {
                if (!e)
                    g_set_error(&e, REEL_ERROR, r, "node '%s' (%s): shape inference failed", n->name, n->op);
                g_propagate_error(error, e);
                rc = r;
                break;
            }
        }
        if (blocked) {
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0)
                    g_hash_table_add(unknown, GINT_TO_POINTER(n->outputs[k]));
            continue;
        }
        // The QDQ pass reads the weights' DequantizeLinear (kept, if asked).
        if (g->keep_const_dq && strcmp(n->op, "DequantizeLinear") == 0)
            continue;
        if (strcmp(n->op, "Shape") == 0 ? fold_shape(g, n, g->opset) : fold_node(g, n, op))
            n->dead = true;
    }
    g_hash_table_destroy(unknown);
    return rc;
}

// uses[v]: live nodes reading value v, plus one per graph output naming it.
static int *count_uses(const reel_ir_graph *g)
{
    int *uses = g_new0(int, g->values->len);
    for (guint i = 0; i < g->nodes->len; i++) {
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        if (n->dead)
            continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0)
                uses[n->inputs[k]]++;
    }
    for (guint i = 0; i < g->outputs->len; i++)
        uses[g_array_index(g->outputs, int, i)]++;
    return uses;
}

bool reel_pass_is_graph_output(const reel_ir_graph *g, int v)
{
    for (guint i = 0; i < g->outputs->len; i++)
        if (g_array_index(g->outputs, int, i) == v)
            return true;
    return false;
}

// The live consumers of value v (at most `max`); returns how many there are.
int reel_pass_consumers(const reel_ir_graph *g, int v, reel_ir_node **out, int max)
{
    int c = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *n = reel_ir_node_at(g, (int)i);
        if (n->dead)
            continue;
        for (int k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] == v) {
                if (c < max)
                    out[c] = n;
                c++;
                break;
            }
        }
    }
    return c;
}

static const reel_tensor *const_f32(const reel_ir_graph *g, const reel_ir_node *n, int k)
{
    if (k >= n->n_inputs)
        return NULL;
    const reel_ir_value *v = reel_ir_value_at(g, n->inputs[k]);
    return v && v->constant && v->constant->dtype == REEL_DTYPE_FLOAT32 ? v->constant : NULL;
}

int reel_pass_add_constant(reel_ir_graph *g, const char *base, const char *suffix, reel_tensor *t)
{
    char *name = g_strconcat(base, suffix, NULL);
    for (int i = 2; reel_ir_find_value(g, name) >= 0; i++) {
        g_free(name);
        name = g_strdup_printf("%s%s%d", base, suffix, i);
    }
    int v = reel_ir_add_value(g, name);
    g_free(name);
    reel_ir_value_set_constant(reel_ir_value_at(g, v), t);
    return v;
}

// The Conv now writes what `last` wrote; `last` and the nodes between die.
static void take_output(reel_ir_graph *g, reel_ir_node *conv, int conv_index, reel_ir_node *last)
{
    int old = conv->outputs[0];
    conv->outputs[0] = last->outputs[0];
    reel_ir_value_at(g, conv->outputs[0])->producer = conv_index;
    reel_ir_value_at(g, old)->producer = -1;
    last->dead = true;
}

int reel_pass_fold_conv_bn(reel_ir_graph *g)
{
    int folds = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *conv = reel_ir_node_at(g, (int)i);
        if (conv->dead || strcmp(conv->op, "Conv") != 0 || conv->fused || conv->n_outputs != 1)
            continue;
        int y = conv->outputs[0];
        reel_ir_node *bn = NULL;
        if (y < 0 || reel_pass_is_graph_output(g, y) || reel_pass_consumers(g, y, &bn, 1) != 1)
            continue;
        if (strcmp(bn->op, "BatchNormalization") != 0 || bn->n_inputs != 5 || bn->inputs[0] != y
            || bn->outputs[0] < 0 || reel_ir_attr_int(bn, "spatial", 1) != 1
            || reel_ir_attr_int(bn, "training_mode", 0) != 0)
            continue;
        bool extra = false; // training outputs in use
        for (int k = 1; k < bn->n_outputs; k++) {
            reel_ir_node *u;
            extra |= bn->outputs[k] >= 0
                && (reel_pass_is_graph_output(g, bn->outputs[k])
                    || reel_pass_consumers(g, bn->outputs[k], &u, 1) > 0);
        }
        const reel_tensor *w = const_f32(g, conv, 1);
        const reel_tensor *b = conv->n_inputs > 2 && conv->inputs[2] >= 0 ? const_f32(g, conv, 2) : NULL;
        bool has_b = conv->n_inputs > 2 && conv->inputs[2] >= 0;
        const reel_tensor *p[4];
        bool ok = !extra && w && w->rank >= 3 && (!has_b || b);
        for (int k = 0; k < 4 && ok; k++) {
            p[k] = const_f32(g, bn, k + 1);
            ok = p[k] && reel_tensor_count(p[k]->rank, p[k]->shape) == w->shape[0];
        }
        if (!ok || (b && reel_tensor_count(b->rank, b->shape) != w->shape[0]))
            continue;
        int64_t m_out = w->shape[0];
        float eps = reel_ir_attr_float(bn, "epsilon", 1e-5f);
        const float *scale = p[0]->data, *bias = p[1]->data, *mean = p[2]->data, *var = p[3]->data;
        reel_tensor *nw = reel_tensor_dup(w);
        reel_tensor *nb = reel_tensor_new(REEL_DTYPE_FLOAT32, 1, &m_out);
        if (!nw || !nb) {
            reel_tensor_free(&nw);
            reel_tensor_free(&nb);
            continue;
        }
        int64_t per = reel_tensor_count(w->rank, w->shape) / m_out;
        for (int64_t m = 0; m < m_out; m++) {
            float s = scale[m] / sqrtf(var[m] + eps);
            float *wm = (float *)nw->data + m * per;
            for (int64_t j = 0; j < per; j++)
                wm[j] *= s;
            float b0 = b ? ((const float *)b->data)[m] : 0.0f;
            ((float *)nb->data)[m] = (b0 - mean[m]) * s + bias[m];
        }
        int vw = reel_pass_add_constant(g, conv->name, ".weight_bn", nw);
        int vb = reel_pass_add_constant(g, conv->name, ".bias_bn", nb);
        if (conv->n_inputs < 3) {
            conv->inputs = g_renew(int, conv->inputs, 3);
            conv->n_inputs = 3;
        }
        conv->inputs[1] = vw;
        conv->inputs[2] = vb;
        take_output(g, conv, (int)i, bn);
        folds++;
    }
    return folds;
}

static bool same_static_shape(const reel_ir_value *a, const reel_ir_value *b)
{
    if (!value_static(a) || !value_static(b) || a->rank != b->rank || a->dtype != b->dtype)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return false;
    return true;
}

int reel_pass_fuse_residual(reel_ir_graph *g)
{
    int fusions = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *conv = reel_ir_node_at(g, (int)i);
        if (conv->dead || strcmp(conv->op, "Conv") != 0 || conv->fused || conv->n_inputs < 2 || conv->n_inputs > 3
            || conv->n_outputs != 1)
            continue;
        int y = conv->outputs[0];
        const reel_ir_value *yv = reel_ir_value_at(g, y);
        reel_ir_node *add = NULL;
        if (!yv || yv->dtype != REEL_DTYPE_FLOAT32 || reel_pass_is_graph_output(g, y)
            || reel_pass_consumers(g, y, &add, 1) != 1)
            continue;
        if (strcmp(add->op, "Add") != 0 || add->n_inputs != 2 || add->n_outputs != 1 || add->outputs[0] < 0)
            continue;
        int r = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
        const reel_ir_value *rv = reel_ir_value_at(g, r);
        // Broadcasting Adds (a bias of shape [C,1,1]) stay Adds.
        if (r < 0 || r == y || !same_static_shape(rv, yv)
            || !same_static_shape(reel_ir_value_at(g, add->outputs[0]), yv))
            continue;
        int add_index = -1;
        for (guint j = i + 1; j < g->nodes->len && add_index < 0; j++)
            if (reel_ir_node_at(g, (int)j) == add)
                add_index = (int)j;
        if (add_index < 0)
            continue;
        int bias = conv->n_inputs > 2 ? conv->inputs[2] : -1;
        conv->inputs = g_renew(int, conv->inputs, 4);
        conv->inputs[2] = bias;
        conv->inputs[3] = r;
        conv->n_inputs = 4;
        // The Conv's inputs are all computed before it, the residual before
        // the Add: the Add's slot suits both. The Add (now dead) takes the
        // Conv's old slot; the loop meets the Conv again there, harmlessly.
        g->nodes->pdata[i] = add;
        g->nodes->pdata[add_index] = conv;
        take_output(g, conv, add_index, add);
        fusions++;
    }
    return fusions;
}

static bool single_output(const reel_ir_node *n)
{
    return n->n_outputs >= 1 && n->outputs[0] >= 0;
}

// Clip's bounds: attributes before opset 11, optional constant inputs after.
bool reel_pass_clip_bounds(const reel_ir_graph *g, const reel_ir_node *n, float *lo, float *hi)
{
    *lo = -FLT_MAX;
    *hi = FLT_MAX;
    if (g->opset < 11) {
        *lo = reel_ir_attr_float(n, "min", -FLT_MAX);
        *hi = reel_ir_attr_float(n, "max", FLT_MAX);
        return true;
    }
    for (int k = 1; k < n->n_inputs && k < 3; k++) {
        if (n->inputs[k] < 0)
            continue;
        const reel_tensor *t = const_f32(g, n, k);
        if (!t || reel_tensor_count(t->rank, t->shape) != 1)
            return false;
        *(k == 1 ? lo : hi) = *(const float *)t->data;
    }
    return true;
}

int reel_pass_fuse_activations(reel_ir_graph *g)
{
    int fusions = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *conv = reel_ir_node_at(g, (int)i);
        if (conv->dead || strcmp(conv->op, "Conv") != 0 || conv->fused || conv->n_outputs != 1)
            continue;
        int y = conv->outputs[0];
        const reel_ir_value *yv = reel_ir_value_at(g, y);
        if (!yv || reel_pass_is_graph_output(g, y) || (yv->dtype != REEL_DTYPE_FLOAT32 && yv->dtype != REEL_DTYPE_NONE))
            continue;
        reel_ir_node *c[3];
        int nc = reel_pass_consumers(g, y, c, 3);
        if (nc == 1 && single_output(c[0]) && c[0]->n_inputs >= 1 && c[0]->inputs[0] == y) {
            reel_ir_node *a = c[0];
            const char *f = NULL;
            float fa = 0, fb = 0;
            if (strcmp(a->op, "Relu") == 0) {
                f = "Relu";
            } else if (strcmp(a->op, "Sigmoid") == 0) {
                f = "Sigmoid";
            } else if (strcmp(a->op, "Clip") == 0) {
                if (reel_pass_clip_bounds(g, a, &fa, &fb))
                    f = "Clip";
            } else if (strcmp(a->op, "HardSigmoid") == 0) {
                f = "HardSigmoid";
                fa = reel_ir_attr_float(a, "alpha", 0.2f);
                fb = reel_ir_attr_float(a, "beta", 0.5f);
            } else if (strcmp(a->op, "HardSwish") == 0) {
                f = "HardSwish";
                fa = 1.0f / 6.0f;
                fb = 0.5f;
            }
            if (!f)
                continue;
            conv->fused = f;
            conv->fused_a = fa;
            conv->fused_b = fb;
            take_output(g, conv, (int)i, a);
            fusions++;
        } else if (nc == 2) {
            // x * sigmoid(x) and x * hardsigmoid(x), in either operand order.
            reel_ir_node *s = strcmp(c[0]->op, "Mul") == 0 ? c[1] : c[0];
            reel_ir_node *m = s == c[0] ? c[1] : c[0];
            bool sig = strcmp(s->op, "Sigmoid") == 0, hsig = strcmp(s->op, "HardSigmoid") == 0;
            if ((!sig && !hsig) || strcmp(m->op, "Mul") != 0 || !single_output(s) || !single_output(m)
                || s->inputs[0] != y || m->n_inputs != 2 || reel_pass_is_graph_output(g, s->outputs[0]))
                continue;
            int sv = s->outputs[0];
            reel_ir_node *u;
            if (!((m->inputs[0] == y && m->inputs[1] == sv) || (m->inputs[0] == sv && m->inputs[1] == y))
                || reel_pass_consumers(g, sv, &u, 1) != 1)
                continue;
            conv->fused = sig ? "SiLU" : "HardSwish";
            conv->fused_a = hsig ? reel_ir_attr_float(s, "alpha", 0.2f) : 0;
            conv->fused_b = hsig ? reel_ir_attr_float(s, "beta", 0.5f) : 0;
            s->dead = true;
            reel_ir_value_at(g, sv)->producer = -1;
            take_output(g, conv, (int)i, m);
            fusions++;
        }
    }
    return fusions;
}

int reel_pass_remove_dead(reel_ir_graph *g)
{
    bool *live = g_new0(bool, g->values->len);
    for (guint i = 0; i < g->outputs->len; i++)
        live[g_array_index(g->outputs, int, i)] = true;
    int removed = 0;
    for (guint i = g->nodes->len; i-- > 0;) {
        reel_ir_node *n = reel_ir_node_at(g, (int)i);
        if (n->dead)
            continue;
        bool used = false;
        for (int k = 0; k < n->n_outputs; k++)
            used |= n->outputs[k] >= 0 && live[n->outputs[k]];
        if (!used) {
            n->dead = true;
            removed++;
            continue;
        }
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0)
                live[n->inputs[k]] = true;
    }
    g_free(live);
    return removed;
}

void reel_pass_compact(reel_ir_graph *g)
{
    for (guint i = g->nodes->len; i-- > 0;)
        if (reel_ir_node_at(g, (int)i)->dead)
            g_ptr_array_remove_index(g->nodes, i);
    for (guint v = 0; v < g->values->len; v++)
        reel_ir_value_at(g, (int)v)->producer = -1;
    for (guint i = 0; i < g->nodes->len; i++) {
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0)
                reel_ir_value_at(g, n->outputs[k])->producer = (int)i;
    }
    int *uses = count_uses(g);
    for (guint v = 0; v < g->values->len; v++)
        if (!uses[v])
            reel_tensor_free(&reel_ir_value_at(g, (int)v)->constant);
    g_free(uses);
}

// Whether a live DequantizeLinear reads only constants (kept for the QDQ pass).
static bool has_const_dq(const reel_ir_graph *g)
{
    for (guint i = 0; i < g->nodes->len; i++) {
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        bool all = !n->dead && strcmp(n->op, "DequantizeLinear") == 0;
        for (int k = 0; k < n->n_inputs && all; k++)
            all = n->inputs[k] < 0 || reel_ir_value_at(g, n->inputs[k])->constant;
        if (all)
            return true;
    }
    return false;
}

int reel_passes_run(reel_ir_graph *g, GHashTable *unsupported, GError **error)
{
    g->keep_const_dq = reel_qdq_fold_enabled();
    int rc = reel_pass_infer_fold(g, unsupported, error);
    if (rc)
        return rc;
    reel_pass_fold_conv_bn(g);
    reel_pass_fuse_hardswish(g);
    reel_pass_fuse_residual(g);
    reel_pass_fuse_activations(g);
    if (g->keep_const_dq) {
        reel_pass_fold_qdq(g);
        g->keep_const_dq = false;
    }
    if (has_const_dq(g)) {
        // The DequantizeLinear of constants the pass left fold now, and
        // what they feed; float Convs whose weights were among them fuse.
        if (unsupported)
            g_hash_table_remove_all(unsupported);
        if ((rc = reel_pass_infer_fold(g, unsupported, error)))
            return rc;
        reel_pass_fold_conv_bn(g);
        reel_pass_fuse_hardswish(g);
        reel_pass_fuse_residual(g);
        reel_pass_fuse_activations(g);
    }
    reel_pass_remove_dead(g);
    reel_pass_compact(g);
    return 0;
}

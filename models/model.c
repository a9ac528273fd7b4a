// The public model API: load (parse, infer, passes, check, ops resolved),
// ref/unref, I/O descriptions, summary, and the stores its sessions share
// per device. Sessions live in models/session.c.
#include <string.h>

#include "models/model_internal.h"
#include "models/onnx/load.h"
#include "models/op.h"
#include "models/passes.h"
#include "models/vulkan/store.h"
#include "reel/error.h"

// a *= b, false (a = -1) on overflow or when either is unknown.
static bool mul_flops(int64_t *a, int64_t b)
{
    if (*a < 0 || b < 0 || __builtin_mul_overflow(*a, b, a)) {
        *a = -1;
        return false;
    }
    return true;
}

static const reel_ir_value *in_value(const reel_ir_graph *g, const reel_ir_node *n, int k)
{
    return k < n->n_inputs ? reel_ir_value_at(g, n->inputs[k]) : NULL;
}

static int64_t elements(const reel_ir_value *v)
{
    return v ? reel_tensor_count(v->rank, v->dims) : -1;
}

// Multiply-adds x2 of one node at the inferred static shapes (the integer
// forms too); 0 for ops not counted, -1 when a shape is unknown.
static int64_t node_flops(const reel_ir_graph *g, const reel_ir_node *n)
{
    bool qlconv = strcmp(n->op, "QLinearConv") == 0;
    const reel_ir_value *a = in_value(g, n, 0), *w = in_value(g, n, qlconv ? 3 : 1);
    const reel_ir_value *y = n->n_outputs ? reel_ir_value_at(g, n->outputs[0]) : NULL;
    int64_t f = 2;
    if (strcmp(n->op, "Conv") == 0 || qlconv || strcmp(n->op, "ConvInteger") == 0) {
        // out elements x (C/group x kernel) per output
        if (!w || w->rank < 3)
            return -1;
        mul_flops(&f, elements(y));
        for (int i = 1; i < w->rank; i++)
            mul_flops(&f, w->dims[i]);
        return f;
    }
    if (strcmp(n->op, "ConvTranspose") == 0) {
        // in elements x (M/group x kernel) per input
        if (!w || w->rank < 3)
            return -1;
        mul_flops(&f, elements(a));
        for (int i = 1; i < w->rank; i++)
            mul_flops(&f, w->dims[i]);
        return f;
    }
    if (strcmp(n->op, "Gemm") == 0 || strcmp(n->op, "com.microsoft:QGemm") == 0) {
        if (!a || a->rank != 2)
            return -1;
        int64_t k = reel_ir_attr_int(n, "transA", 0) ? a->dims[0] : a->dims[1];
        mul_flops(&f, elements(y));
        mul_flops(&f, k);
        return f;
    }
    if (strcmp(n->op, "MatMul") == 0 || strcmp(n->op, "QLinearMatMul") == 0 || strcmp(n->op, "MatMulInteger") == 0) {
        if (!a || a->rank < 1)
            return -1;
        mul_flops(&f, elements(y));
        mul_flops(&f, a->dims[a->rank - 1]);
        return f;
    }
    return 0;
}

static void summarize(reel_model *m)
{
    const reel_ir_graph *g = m->graph;
    reel_model_summary *s = &m->summary;
    s->opset = g->opset;
    s->producer = g->producer;
    s->nodes = (int)g->nodes->len;
    s->qdq_folded = g->qdq_folded;
    s->qdq_into = g->qdq_into;
    s->op_histogram = g_hash_table_new(g_str_hash, g_str_equal);
    s->flops = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        int c = GPOINTER_TO_INT(g_hash_table_lookup(s->op_histogram, n->op));
        g_hash_table_insert(s->op_histogram, n->op, GINT_TO_POINTER(c + 1));
        int64_t f = node_flops(g, n);
        if (f < 0 || s->flops < 0 || __builtin_add_overflow(s->flops, f, &s->flops))
            s->flops = -1;
    }
    s->parameters = 0;
    for (guint v = 0; v < g->values->len; v++) {
        const reel_tensor *t = reel_ir_value_at(g, (int)v)->constant;
        if (t)
            s->parameters += reel_tensor_count(t->rank, t->shape);
    }
}

static void describe(const reel_ir_graph *g, const GArray *idx, reel_model_io **out, int *n)
{
    *n = (int)idx->len;
    *out = g_new0(reel_model_io, idx->len ? idx->len : 1);
    for (guint i = 0; i < idx->len; i++) {
        const reel_ir_value *v = reel_ir_value_at(g, g_array_index(idx, int, i));
        reel_model_io *io = &(*out)[i];
        io->name = v->name;
        io->dtype = v->dtype;
        io->rank = v->rank;
        for (int d = 0; d < REEL_TENSOR_MAX_RANK; d++) {
            io->dims[d] = d < v->rank ? v->dims[d] : -1;
            io->dim_names[d] = d < v->rank ? v->dim_names[d] : NULL;
        }
    }
}

// Every live node without a kernel or whose inference refused it, in one
// message.
static int check_supported(reel_ir_graph *g, GHashTable *unsupported, const char *path,
                           GError **error)
{
    GString *msg = g_string_new(NULL);
    int bad = 0;
    for (guint i = 0; i < g->nodes->len; i++) {
        reel_ir_node *n = reel_ir_node_at(g, (int)i);
        const char *why = g_hash_table_lookup(unsupported, n->name);
        // Resolved once here: executors use n->impl from now on.
        if ((n->impl = reel_op_find(n->op)) && !why)
            continue;
        if (why && strstr(why, n->name)) // inference messages name the node already
            g_string_append_printf(msg, "\n  %s", why);
        else
            g_string_append_printf(msg, "\n  node '%s' (%s)%s%s", n->name, n->op, why ? ": " : "",
                                   why ? why : "");
        bad++;
    }
    if (bad)
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s: %d node%s not supported:%s", path,
                    bad, bad == 1 ? "" : "s", msg->str);
    g_string_free(msg, TRUE);
    return bad ? REEL_EUNSUPPORTED : 0;
}

// The passes and checks after parsing; takes g.
static reel_model *model_from_graph(reel_ir_graph *g, const char *path, GError **error)
{
    GHashTable *unsupported = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    GError *e = NULL;
    int rc = reel_passes_run(g, unsupported, &e);
    if (rc)
        g_prefix_error(&e, "%s: ", path);
    else
        rc = check_supported(g, unsupported, path, &e);
    g_hash_table_destroy(unsupported);
    if (rc) {
        g_propagate_error(error, e);
        reel_ir_graph_free(&g);
        return NULL;
    }
    reel_model *m = g_new0(reel_model, 1);
    atomic_init(&m->refcount, 1);
    m->path = g_strdup(path);
    m->graph = g;
    describe(g, g->inputs, &m->inputs, &m->n_inputs);
    describe(g, g->outputs, &m->outputs, &m->n_outputs);
    summarize(m);
    m->const_inputs = g_new0(uint32_t, g->nodes->len + 1);
    for (guint i = 0; i < g->nodes->len; i++) {
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        for (int k = 0; k < n->n_inputs && k < 32; k++)
            if (n->inputs[k] >= 0 && reel_ir_value_at(g, n->inputs[k])->constant)
                m->const_inputs[i] |= 1u << k;
    }
    g_mutex_init(&m->stores_lock);
    m->stores = g_ptr_array_new();
    return m;
}

reel_model *reel_model_load(const char *path, GError **error)
{
    g_return_val_if_fail(path, NULL);
    reel_ir_graph *g = reel_onnx_load(path, error);
    return g ? model_from_graph(g, path, error) : NULL;
}

reel_model *reel_model_load_data(const void *data, size_t size, const char *name, GError **error)
{
    g_return_val_if_fail(data || size == 0, NULL);
    if (!name)
        name = "(memory)";
    reel_ir_graph *g = reel_onnx_load_data(data, size, name, NULL, error);
    return g ? model_from_graph(g, name, error) : NULL;
}

reel_model *reel_model_ref(reel_model *m)
{
    if (m)
        atomic_fetch_add(&m->refcount, 1);
    return m;
}

void reel_model_unref(reel_model **pm)
{
    if (!pm || !*pm)
        return;
    reel_model *m = *pm;
    *pm = NULL;
    if (atomic_fetch_sub(&m->refcount, 1) != 1)
        return;
    if (m->summary.op_histogram)
        g_hash_table_destroy(m->summary.op_histogram);
    // Every session is gone (each held a reference), and with them the stores.
    g_warn_if_fail(m->stores->len == 0);
    g_ptr_array_free(m->stores, TRUE);
    g_mutex_clear(&m->stores_lock);
    g_free(m->const_inputs);
    g_free(m->inputs);
    g_free(m->outputs);
    reel_ir_graph_free(&m->graph);
    g_free(m->path);
    g_free(m);
}

int reel_model_n_inputs(const reel_model *m)
{
    return m ? m->n_inputs : 0;
}

int reel_model_n_outputs(const reel_model *m)
{
    return m ? m->n_outputs : 0;
}

const reel_model_io *reel_model_input(const reel_model *m, int i)
{
    return m && i >= 0 && i < m->n_inputs ? &m->inputs[i] : NULL;
}

const reel_model_io *reel_model_output(const reel_model *m, int i)
{
    return m && i >= 0 && i < m->n_outputs ? &m->outputs[i] : NULL;
}

void reel_model_summarize(const reel_model *m, reel_model_summary *out)
{
    *out = m->summary;
}

static void store_free(reel_model *m, reel_model_store *st)
{
    for (guint i = 0; i < m->graph->nodes->len; i++)
        g_free(st->states[i]);
    g_free(st->states);
    vk_store_free(&st->vk);
    g_free(st);
}

reel_model_store *reel_model_store_get(reel_model *m, reel_device *dev, GError **error)
{
    if (dev && reel_device_info_of(dev)->backend != REEL_BACKEND_VULKAN)
        dev = NULL; // the cpu device: the cpu's store
    g_mutex_lock(&m->stores_lock);
    reel_model_store *st = NULL;
    for (guint i = 0; i < m->stores->len && !st; i++)
        if (((reel_model_store *)m->stores->pdata[i])->dev == dev)
            st = m->stores->pdata[i];
    if (!st) {
        // Made under the lock: a second session on dev waits for this one
        // rather than making a store of its own.
        st = g_new0(reel_model_store, 1);
        st->dev = dev;
        st->states = g_new0(void *, m->graph->nodes->len + 1);
        atomic_init(&st->states_made, 0);
        if (dev && !(st->vk = vk_store_new(dev, m->graph, error))) {
            store_free(m, st);
            g_mutex_unlock(&m->stores_lock);
            return NULL;
        }
        g_ptr_array_add(m->stores, st);
    }
    st->sessions++;
    g_mutex_unlock(&m->stores_lock);
    return st;
}

void reel_model_store_put(reel_model *m, reel_model_store **pst)
{
    reel_model_store *st = pst ? *pst : NULL;
    if (!st)
        return;
    *pst = NULL;
    g_mutex_lock(&m->stores_lock);
    bool last = --st->sessions == 0;
    if (last)
        g_ptr_array_remove_fast(m->stores, st);
    g_mutex_unlock(&m->stores_lock);
    if (last)
        store_free(m, st); // outside the lock: freeing waits for the device
}

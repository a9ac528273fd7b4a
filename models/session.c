// Sessions: per concrete set of input shapes, a plan (shapes inferred again
// with concrete dims, shape-only work folded, one arena with lifetimes and
// reuse); a run walks the nodes over views into the arena.
//
// Plans are cached by input shape, at most plan_cache of them: beyond, the
// least recently run one is freed (its values, folded constants, device
// memory and recordings). What does not depend on the shape is the
// model's store on the session's device (models/model_internal.h), shared
// with every plan and every session there: the kernels' state derived from
// weights, and on Vulkan the uploaded weights and compiled kernels.
//
// Threads: a session with more than one thread owns a reel_workers that
// kernels split their work over (nn_parallel), each piece calling sgemm:
// OpenBLAS should be single-threaded then (reel_init_params.blas_threads;
// sessions never change it themselves, as the setting is the process's).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cpu/blas.h"
#include "models/cpu/workers.h"
#include "models/model_internal.h"
#include "models/op.h"
#include "models/session.h"
#include "models/vulkan/exec.h"
#include "models/vulkan/store.h"
#include "reel/error.h"
#include "reel/limits.h"

#define ALIGN 64
#define KEY_INPUT_MAX 64 // small inputs a plan may read as constants

enum { V_NONE, V_ARENA, V_CONST, V_INPUT, V_DYN };

typedef struct plan {
    reel_ir_graph g;          // values: this plan's copies; nodes etc. borrowed
    int n_values;
    int *kind;                // V_*
    int *input_of;            // V_INPUT: index of the graph input
    size_t *offset;           // V_ARENA
    reel_tensor *t;           // views; data set before each run
    bool *skip;               // per node: folded while planning
    // Per node: its output shapes depend on values computed in the graph
    // (NonZero on a computed mask) or on such a node's outputs. Those nodes
    // are inferred again at run time with their inputs' values, their
    // outputs (V_DYN) allocated then, outside the arena, and run on the cpu.
    bool *dyn;
    bool dynamic;             // any node is: a plan without is run as before
    GPtrArray *run_owned;     // reel_tensor * of V_DYN values, this run's
    GPtrArray *owned;         // reel_tensor * made while planning
    size_t arena_bytes, scratch_bytes;
    vk_exec *vk;              // the nodes on a Vulkan device, or NULL
    const char *key;          // the session's key for it (owned by its table)
    GList link;               // in the session's lru; data: the plan
} plan;

struct reel_session {
    reel_model *m;
    int threads;
    reel_device *device;      // Vulkan, or NULL: the cpu
    bool strict;
    uint64_t device_memory_limit;
    bool f16;                 // precision=fp16: float32 values are float16 on the device
    reel_model_store *store;  // the model's on this device (held)
    int plan_cache;           // plans kept at most
    GHashTable *plans;        // key -> plan *
    GQueue lru;               // the plans, the most recently run first
    int64_t plans_built, plans_evicted;
    plan *last;
    reel_workers *workers;       // NULL for one thread; made at the first run
    void *arena, *scratch;
    size_t arena_cap, scratch_cap;
    bool profile;
    GArray *times;            // reel_session_node_time
};

// The outputs of the last run's dynamic nodes.
static void drop_run_owned(plan *pl)
{
    for (guint i = 0; pl->run_owned && i < pl->run_owned->len; i++) {
        reel_tensor *t = pl->run_owned->pdata[i];
        reel_tensor_free(&t);
    }
    if (pl->run_owned)
        g_ptr_array_set_size(pl->run_owned, 0);
}

static void plan_free(gpointer p)
{
    plan *pl = p;
    if (!pl)
        return;
    if (pl->g.values)
        for (guint i = 0; i < pl->g.values->len; i++)
            g_free(pl->g.values->pdata[i]); // shallow copies: names belong to the model
    if (pl->g.values)
        g_ptr_array_free(pl->g.values, TRUE);
    if (pl->owned) {
        for (guint i = 0; i < pl->owned->len; i++) {
            reel_tensor *t = pl->owned->pdata[i];
            reel_tensor_free(&t);
        }
        g_ptr_array_free(pl->owned, TRUE);
    }
    g_free(pl->kind);
    g_free(pl->input_of);
    g_free(pl->offset);
    g_free(pl->t);
    g_free(pl->skip);
    g_free(pl->dyn);
    drop_run_owned(pl);
    if (pl->run_owned)
        g_ptr_array_free(pl->run_owned, TRUE);
    vk_exec_free(&pl->vk);
    g_free(pl);
}

reel_session *reel_session_new(reel_model *m, const reel_session_params *params, GError **error)
{
    if (!m) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "reel_session_new: no model");
        return NULL;
    }
    if (params && params->precision == REEL_PRECISION_FP16) {
        const reel_device_info *info = params->device ? reel_device_info_of(params->device) : NULL;
        if (!info || info->backend != REEL_BACKEND_VULKAN || !info->fp16) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                        "precision=fp16 needs a GPU with 16-bit float support; %s has none", info ? info->spec : "cpu");
            return NULL;
        }
    }
    reel_device *device = NULL;
    if (params && params->device && reel_device_info_of(params->device)->backend == REEL_BACKEND_VULKAN)
        device = params->device;
    reel_model_store *store = reel_model_store_get(m, device, error);
    if (!store)
        return NULL;
    reel_blas_setup();
    reel_session *s = g_new0(reel_session, 1);
    s->m = reel_model_ref(m);
    s->store = store;
    s->threads = params && params->threads > 0 ? params->threads : (int)g_get_num_processors();
    s->device = device ? reel_device_ref(device) : NULL;
    s->strict = params && params->strict;
    s->device_memory_limit = params ? params->device_memory_limit : 0;
    s->f16 = s->device && params->precision == REEL_PRECISION_FP16;
    s->plan_cache = params && params->plan_cache > 0 ? params->plan_cache : REEL_SESSION_PLAN_CACHE;
    s->plans = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, plan_free);
    g_queue_init(&s->lru);
    s->times = g_array_new(FALSE, FALSE, sizeof(reel_session_node_time));
    return s;
}

void reel_session_destroy(reel_session **ps)
{
    reel_session *s = ps ? *ps : NULL;
    if (!s)
        return;
    g_hash_table_destroy(s->plans); // first: plans borrow from the store
    reel_model_store_put(s->m, &s->store);
    reel_device_unref(&s->device);
    reel_workers_destroy(&s->workers);
    free(s->arena);
    free(s->scratch);
    g_array_free(s->times, TRUE);
    reel_model_unref(&s->m);
    g_free(s);
    *ps = NULL;
}

int64_t reel_session_arena_bytes(const reel_session *s)
{
    return s && s->last ? (int64_t)s->last->arena_bytes : 0;
}

void reel_session_set_profile(reel_session *s, bool on)
{
    s->profile = on;
}

const reel_session_node_time *reel_session_node_times(const reel_session *s, int *n)
{
    *n = (int)s->times->len;
    return (const reel_session_node_time *)(void *)s->times->data;
}

int reel_session_dynamic_nodes(const reel_session *s)
{
    int n = 0;
    for (guint i = 0; s->last && i < s->m->graph->nodes->len; i++)
        n += s->last->dyn[i];
    return n;
}

int reel_session_n_plans(const reel_session *s)
{
    return (int)g_hash_table_size(s->plans);
}

void reel_session_stats_of(const reel_session *s, reel_session_stats *out)
{
    *out = (reel_session_stats){ .plans = (int)g_hash_table_size(s->plans), .plan_cache = s->plan_cache,
                                 .plans_built = s->plans_built, .plans_evicted = s->plans_evicted,
                                 .arena_bytes_held = (int64_t)s->arena_cap,
                                 .kernel_states = atomic_load(&s->store->states_made) };
    for (GList *l = s->lru.head; l; l = l->next) {
        const plan *pl = l->data;
        vk_exec_stats st;
        if (pl->vk) {
            vk_exec_get_stats(pl->vk, &st);
            out->device_bytes += st.device_bytes;
        }
    }
    if (s->store->vk) {
        vk_store_stats st;
        vk_store_get_stats(s->store->vk, &st);
        out->weights_uploaded = st.weights;
        out->weight_bytes_uploaded = st.weight_bytes;
        out->kernels_compiled = st.kernels;
    }
}

static size_t value_bytes(const reel_ir_value *v)
{
    int64_t c = reel_tensor_count(v->rank, v->dims);
    return c < 0 ? 0 : (size_t)c * reel_dtype_size(v->dtype);
}

// Small inputs that decide shapes (int64 ones, the scales/sizes of
// Resize/Upsample, Range's scalars, OneHot's depth of any type) are read as
// constants while planning; their contents are then part of the plan's key.
static bool shape_input(const reel_ir_graph *g, int vi, const reel_tensor *b)
{
    if (b->mem)
        return false; // in device memory: not for the host to read while planning
    const reel_ir_value *v = reel_ir_value_at(g, vi);
    int64_t c = reel_tensor_count(b->rank, b->shape);
    if (c < 0 || c > KEY_INPUT_MAX)
        return false;
    if (v->dtype == REEL_DTYPE_INT64)
        return true;
    for (guint i = 0; i < g->nodes->len; i++) {
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        if (strcmp(n->op, "OneHot") == 0 && n->n_inputs > 1 && n->inputs[1] == vi)
            return true;
        // the signal ops' sizes (int32 in ONNX's cases)
        if (strstr(n->op, "Window") || strcmp(n->op, "MelWeightMatrix") == 0 || strcmp(n->op, "STFT") == 0 ||
            strcmp(n->op, "DFT") == 0)
            for (int k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] == vi && v->dtype == REEL_DTYPE_INT32)
                    return true;
        bool range = strcmp(n->op, "Range") == 0;
        if (!range && strcmp(n->op, "Resize") && strcmp(n->op, "Upsample"))
            continue;
        for (int k = range ? 0 : 1; k < n->n_inputs; k++)
            if (n->inputs[k] == vi)
                return true;
    }
    return false;
}

// Whether every dim of v is known (its count may still overflow).
static bool dims_known(const reel_ir_value *v)
{
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
            return false;
    return true;
}

static void view_of(const reel_ir_value *v, reel_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->dtype = v->dtype;
    t->rank = v->rank;
    memcpy(t->shape, v->dims, sizeof t->shape);
    t->nbytes = value_bytes(v);
    if (v->constant)
        t->data = v->constant->data;
}

static int fold_node(plan *pl, const reel_op *op, reel_ir_node *n, GError **error)
{
    reel_tensor *ins = g_new0(reel_tensor, n->n_inputs + 1);
    reel_tensor **in = g_new0(reel_tensor *, n->n_inputs + 1);
    reel_tensor **out = g_new0(reel_tensor *, n->n_outputs + 1);
    int rc = 0;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0) {
            view_of(reel_ir_value_at(&pl->g, n->inputs[k]), &ins[k]);
            in[k] = &ins[k];
        }
    for (int k = 0; k < n->n_outputs; k++) {
        reel_ir_value *v = reel_ir_value_at(&pl->g, n->outputs[k]);
        if (!v)
            continue;
        out[k] = reel_tensor_new(v->dtype, v->rank, v->dims);
        if (!out[k]) {
            g_set_error(error, REEL_ERROR, REEL_ENOMEM, "node %s (%s): output too large", n->name, n->op);
            rc = REEL_ENOMEM;
            goto fail;
        }
        g_ptr_array_add(pl->owned, out[k]);
        v->constant = out[k];
    }
    reel_exec_ctx ctx = { .opset = pl->g.opset, .threads = 1 };
    ctx.scratch_size = op->scratch ? op->scratch(n, in, out) : 0;
    ctx.scratch = ctx.scratch_size ? g_malloc0(ctx.scratch_size) : NULL;
    rc = op->run(n, in, out, &ctx);
    g_free(ctx.scratch);
    if (rc)
        g_set_error(error, REEL_ERROR, rc, "node %s (%s): %s", n->name, n->op, reel_strerror(rc));
fail:
    g_free(ins);
    g_free(in);
    g_free(out);
    return rc;
}

typedef reel_arena_value live;

static int by_size(const void *a, const void *b)
{
    const live *x = a, *y = b;
    return x->size < y->size ? 1 : x->size > y->size ? -1 : x->v - y->v;
}

// Greedy by size: largest first, each at the lowest offset that does not
// overlap a placed value whose lifetime intersects its own.
size_t reel_arena_place(live *lv, int n, size_t *offset)
{
    qsort(lv, (size_t)n, sizeof *lv, by_size);
    size_t peak = 0;
    typedef struct { size_t lo, hi; } span;
    span *busy = g_new(span, n + 1);
    for (int i = 0; i < n; i++) {
        int nb = 0;
        for (int j = 0; j < i; j++)
            if (lv[j].def <= lv[i].last && lv[i].def <= lv[j].last)
                busy[nb++] = (span){ offset[lv[j].v], offset[lv[j].v] + lv[j].size };
        // Sort the conflicting spans by start and take the first gap.
        for (int a = 1; a < nb; a++)
            for (int b = a; b > 0 && busy[b - 1].lo > busy[b].lo; b--) {
                span t = busy[b];
                busy[b] = busy[b - 1];
                busy[b - 1] = t;
            }
        size_t at = 0;
        for (int a = 0; a < nb; a++) {
            if (busy[a].lo >= at + lv[i].size)
                break;
            if (busy[a].hi > at)
                at = busy[a].hi;
        }
        offset[lv[i].v] = at;
        if (at + lv[i].size > peak)
            peak = at + lv[i].size;
    }
    g_free(busy);
    return peak;
}

static plan *plan_build(reel_session *s, reel_tensor *const *inputs, GError **error)
{
    const reel_ir_graph *mg = s->m->graph;
    plan *pl = g_new0(plan, 1);
    pl->g = *mg;
    pl->n_values = (int)mg->values->len;
    pl->g.values = g_ptr_array_sized_new((guint)pl->n_values);
    for (int i = 0; i < pl->n_values; i++)
        g_ptr_array_add(pl->g.values, g_memdup2(mg->values->pdata[i], sizeof(reel_ir_value)));
    pl->owned = g_ptr_array_new();
    pl->kind = g_new0(int, pl->n_values);
    pl->input_of = g_new0(int, pl->n_values);
    pl->offset = g_new0(size_t, pl->n_values);
    pl->t = g_new0(reel_tensor, pl->n_values);
    int n_nodes = (int)mg->nodes->len;
    pl->skip = g_new0(bool, n_nodes);
    pl->dyn = g_new0(bool, n_nodes + 1);
    bool *vdyn = g_new0(bool, pl->n_values + 1); // made by a dynamic node
    reel_ir_graph *g = &pl->g;

    for (guint k = 0; k < mg->inputs->len; k++) {
        int vi = g_array_index(mg->inputs, int, k);
        reel_ir_value *v = reel_ir_value_at(g, vi);
        const reel_tensor *b = inputs[k];
        v->rank = b->rank;
        memcpy(v->dims, b->shape, sizeof v->dims);
        if (shape_input(mg, vi, b)) {
            reel_tensor *t = reel_tensor_new(v->dtype, v->rank, v->dims);
            if (t->nbytes)
                memcpy(t->data, b->data, t->nbytes);
            g_ptr_array_add(pl->owned, t);
            v->constant = t;
        }
    }
    // Shapes again with concrete dims; fold what only depends on constants.
    for (int i = 0; i < n_nodes; i++) {
        reel_ir_node *n = reel_ir_node_at(g, i);
        if (n->dead) {
            pl->skip[i] = true;
            continue;
        }
        const reel_op *op = n->impl;
        if (!op) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "node %s: op %s is not supported", n->name, n->op);
            goto fail;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            reel_ir_value *v = reel_ir_value_at(g, n->outputs[k]);
            if (v)
                v->constant = NULL;
        }
        // Downstream of a dynamic node: inferred at run time only.
        bool dyn = false;
        for (int k = 0; k < n->n_inputs; k++)
            dyn = dyn || (n->inputs[k] >= 0 && vdyn[n->inputs[k]]);
        if (!dyn && op->infer(g, n, error))
            goto fail;
        // Concrete input shapes, yet unknown output dims: they depend on
        // the values of a computed input.
        // (Known dims whose count overflows are an error below, not dynamic.)
        for (int k = 0; !dyn && k < n->n_outputs; k++) {
            reel_ir_value *v = reel_ir_value_at(g, n->outputs[k]);
            dyn = v && v->dtype != REEL_DTYPE_NONE && v->rank >= 0 && !dims_known(v);
        }
        if (dyn) {
            pl->dyn[i] = pl->dynamic = true;
            for (int k = 0; k < n->n_outputs; k++)
                if (n->outputs[k] >= 0)
                    vdyn[n->outputs[k]] = true;
            continue;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            reel_ir_value *v = reel_ir_value_at(g, n->outputs[k]);
            // Static dims whose product overflows or passes the tensor limit.
            bool known = v && v->rank >= 0 && v->dtype != REEL_DTYPE_NONE;
            for (int d = 0; known && d < v->rank; d++)
                known = v->dims[d] >= 0;
            if (known && reel_limit_check_tensor(v->rank, v->dims, reel_dtype_size(v->dtype), NULL, error)) {
                g_prefix_error(error, "node %s (%s): output %s: ", n->name, n->op, v->name);
                goto fail;
            }
            if (v && (v->rank < 0 || reel_tensor_count(v->rank, v->dims) < 0 || v->dtype == REEL_DTYPE_NONE)) {
                g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                            "node %s (%s): the shape of output %s is not known for these input shapes", n->name,
                            n->op, v->name);
                goto fail;
            }
        }
        bool fold = strcmp(n->op, "Shape") == 0 || strcmp(n->op, "Size") == 0;
        if (!fold) {
            fold = true;
            for (int k = 0; k < n->n_inputs; k++) {
                reel_ir_value *v = reel_ir_value_at(g, n->inputs[k]);
                if (v && !v->constant)
                    fold = false;
            }
        }
        if (fold) {
            if (fold_node(pl, op, n, error))
                goto fail;
            pl->skip[i] = true;
        }
    }
    // Lifetimes of computed values, then their places in the arena.
    int *def = g_new(int, pl->n_values), *last = g_new(int, pl->n_values);
    for (int v = 0; v < pl->n_values; v++)
        def[v] = last[v] = -1;
    for (int i = 0; i < n_nodes; i++) {
        if (pl->skip[i])
            continue;
        const reel_ir_node *n = reel_ir_node_at(g, i);
        for (int k = 0; k < n->n_outputs && !pl->dyn[i]; k++)
            if (n->outputs[k] >= 0)
                def[n->outputs[k]] = last[n->outputs[k]] = i;
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && last[n->inputs[k]] < i)
                last[n->inputs[k]] = i;
    }
    for (guint k = 0; k < mg->outputs->len; k++)
        last[g_array_index(mg->outputs, int, k)] = n_nodes;
    live *lv = g_new(live, pl->n_values + 1);
    int nl = 0;
    for (int v = 0; v < pl->n_values; v++) {
        reel_ir_value *val = reel_ir_value_at(g, v);
        view_of(val, &pl->t[v]);
        if (vdyn[v])
            pl->kind[v] = V_DYN;
        else if (val->constant)
            pl->kind[v] = V_CONST;
        else if (def[v] >= 0)
            lv[nl++] = (live){ v, def[v], last[v], (pl->t[v].nbytes + ALIGN - 1) / ALIGN * ALIGN };
    }
    for (int i = 0; i < nl; i++)
        pl->kind[lv[i].v] = V_ARENA;
    for (guint k = 0; k < mg->inputs->len; k++) {
        int vi = g_array_index(mg->inputs, int, k);
        if (pl->kind[vi] != V_CONST) {
            pl->kind[vi] = V_INPUT;
            pl->input_of[vi] = (int)k;
        }
    }
    pl->arena_bytes = reel_arena_place(lv, nl, pl->offset);
    g_free(lv);
    // Scratch: the most any node asks for (kernels see shapes, no data yet).
    for (int i = 0; i < n_nodes; i++) {
        if (pl->skip[i] || pl->dyn[i])
            continue;
        reel_ir_node *n = reel_ir_node_at(g, i);
        const reel_op *op = n->impl;
        if (!op->scratch)
            continue;
        reel_tensor **in = g_new0(reel_tensor *, n->n_inputs + 1), **out = g_new0(reel_tensor *, n->n_outputs + 1);
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = n->inputs[k] >= 0 ? &pl->t[n->inputs[k]] : NULL;
        for (int k = 0; k < n->n_outputs; k++)
            out[k] = n->outputs[k] >= 0 ? &pl->t[n->outputs[k]] : NULL;
        size_t need = op->scratch(n, in, out);
        if (need > pl->scratch_bytes)
            pl->scratch_bytes = need;
        g_free(in);
        g_free(out);
    }
    // The device's arena from the same lifetimes.
    // Dynamic nodes are not the device's: they run on the cpu, their
    // inputs read back first as any cpu node's.
    if (s->device) {
        vk_exec_params vp = { .store = s->store->vk, .strict = s->strict, .memory_limit = s->device_memory_limit,
                              .def = def, .last = last, .f16 = s->f16 };
        bool *placed = g_new0(bool, n_nodes + 1);
        for (int i = 0; i < n_nodes; i++)
            placed[i] = pl->skip[i] || pl->dyn[i];
        pl->vk = vk_exec_new(&vp, g, pl->t, placed, error);
        g_free(placed);
    }
    if (pl->dynamic)
        pl->run_owned = g_ptr_array_new();
    g_free(def);
    g_free(last);
    if (s->device && !pl->vk)
        goto fail;
    g_free(vdyn);
    return pl;
fail:
    g_free(vdyn);
    plan_free(pl);
    return NULL;
}

// Never leaves *p NULL, so that empty tensors in the arena still have an
// address (kernels may hand it to memcpy with a length of 0).
static bool grow(void **p, size_t *cap, size_t need)
{
    need = MAX(need, ALIGN);
    if (need <= *cap && *p)
        return true;
    free(*p);
    *p = NULL;
    *cap = 0;
    if (posix_memalign(p, ALIGN, need))
        return false;
    *cap = need;
    return true;
}

// "float32 [1,3,224,224]" (rank -1: "nothing").
static char *describe(reel_dtype dtype, int rank, const int64_t *dims, const char *const *names)
{
    if (rank < 0)
        return g_strdup("nothing");
    GString *s = g_string_new("");
    g_string_append_printf(s, "%s [", reel_dtype_name(dtype) ? reel_dtype_name(dtype) : "?");
    for (int i = 0; i < rank; i++) {
        if (i)
            g_string_append_c(s, ',');
        if (dims[i] >= 0)
            g_string_append_printf(s, "%" G_GINT64_FORMAT, dims[i]);
        else
            g_string_append(s, names && names[i] ? names[i] : "?");
    }
    g_string_append_c(s, ']');
    return g_string_free(s, FALSE);
}

static int check_inputs(reel_session *s, reel_tensor *const *inputs, GError **error)
{
    const reel_model *m = s->m;
    for (int k = 0; k < m->n_inputs; k++) {
        const reel_model_io *io = &m->inputs[k];
        const reel_tensor *b = inputs[k];
        // Device memory only of this session's device.
        bool bad = !b || (b->mem && reel_mem_device(b->mem) != s->device) || b->dtype != io->dtype ||
                   b->rank != io->rank || (b->nbytes > 0 && !b->data && !b->mem);
        for (int i = 0; !bad && i < io->rank; i++)
            bad = b->shape[i] < 0 || (io->dims[i] >= 0 && b->shape[i] != io->dims[i]);
        if (bad) {
            char *want = describe(io->dtype, io->rank, io->dims, io->dim_names);
            char *got = b ? describe(b->dtype, b->rank, b->shape, NULL) : g_strdup("nothing");
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "input %s: expected a tensor %s (host memory, or the "
                        "session's device's), got %s%s", io->name, want, got,
                        b && b->mem && reel_mem_device(b->mem) != s->device ? " in another device's memory" : "");
            g_free(want);
            g_free(got);
            return REEL_EINVAL;
        }
    }
    return 0;
}

// A cpu node's inputs made on the device come back first.
static int cpu_inputs(plan *pl, const reel_ir_node *n, GError **error)
{
    for (int k = 0; pl->vk && k < n->n_inputs; k++) {
        int v = n->inputs[k];
        int rc = v >= 0 ? vk_exec_to_host(pl->vk, v, &pl->t[v], error) : 0;
        if (rc < 0)
            return rc;
    }
    return 0;
}

void reel_session_placement_of(const reel_session *s, reel_session_placement *out)
{
    memset(out, 0, sizeof *out);
    out->cpu_reasons = "";
    if (!s->last || !s->last->vk)
        return;
    vk_exec_stats st;
    vk_exec_get_stats(s->last->vk, &st);
    *out = (reel_session_placement){ st.device_nodes, st.cpu_nodes, st.partitions, st.bytes_to_device,
                                     st.bytes_to_host, st.cpu_reasons, st.arena_bytes, st.recordings };
}

static char *plan_key(reel_session *s, reel_tensor *const *inputs)
{
    const reel_ir_graph *g = s->m->graph;
    GString *k = g_string_new("");
    for (int i = 0; i < s->m->n_inputs; i++) {
        const reel_tensor *b = inputs[i];
        for (int d = 0; d < b->rank; d++)
            g_string_append_printf(k, "%" G_GINT64_FORMAT "x", b->shape[d]);
        int vi = g_array_index(g->inputs, int, i);
        if (shape_input(g, vi, b)) {
            g_string_append_c(k, '=');
            for (size_t j = 0; j < b->nbytes; j++)
                g_string_append_printf(k, "%02x", ((const uint8_t *)b->data)[j]);
        }
        g_string_append_c(k, ';');
    }
    return g_string_free(k, FALSE);
}

static int bind_inputs(reel_session *s, plan *pl, reel_tensor *const *inputs, reel_tensor **copies, GError **error);
static int run_nodes(reel_session *s, plan *pl, reel_tensor **outputs, GError **error);

// Frees the least recently run plans beyond plan_cache (never the newest,
// at the head). The session's arena and scratch, sized for the largest
// plan run so far, shrink to what the plans kept need (reallocated by the
// run that follows).
static void evict(reel_session *s)
{
    if ((int)s->lru.length <= s->plan_cache)
        return;
    while ((int)s->lru.length > s->plan_cache) {
        plan *old = g_queue_peek_tail(&s->lru);
        g_queue_unlink(&s->lru, &old->link);
        g_hash_table_remove(s->plans, old->key); // frees old
        s->plans_evicted++;
    }
    size_t arena = 0, scratch = 0;
    for (GList *l = s->lru.head; l; l = l->next) {
        const plan *pl = l->data;
        arena = MAX(arena, pl->arena_bytes);
        scratch = MAX(scratch, pl->scratch_bytes);
    }
    if (s->arena_cap > MAX(arena, ALIGN)) {
        free(s->arena);
        s->arena = NULL;
        s->arena_cap = 0;
    }
    if (s->scratch_cap > MAX(scratch, ALIGN)) {
        free(s->scratch);
        s->scratch = NULL;
        s->scratch_cap = 0;
    }
}

int reel_session_run(reel_session *s, reel_tensor *const *inputs, reel_tensor **outputs, GError **error)
{
    if (!s || (!inputs && s->m->n_inputs) || !outputs) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "reel_session_run: missing session, inputs or outputs");
        return REEL_EINVAL;
    }
    int rc = check_inputs(s, inputs, error);
    if (rc)
        return rc;
    char *key = plan_key(s, inputs);
    plan *pl = g_hash_table_lookup(s->plans, key);
    if (!pl) {
        pl = plan_build(s, inputs, error);
        if (!pl) {
            g_free(key);
            return error && *error ? (*error)->code : REEL_EINVAL;
        }
        pl->key = key;
        pl->link.data = pl;
        g_hash_table_insert(s->plans, key, pl);
        g_queue_push_head_link(&s->lru, &pl->link);
        s->plans_built++;
        evict(s);
    } else {
        g_free(key);
        if (s->lru.head != &pl->link) {
            g_queue_unlink(&s->lru, &pl->link);
            g_queue_push_head_link(&s->lru, &pl->link);
        }
    }
    s->last = pl;
    if (!grow(&s->arena, &s->arena_cap, pl->arena_bytes) || !grow(&s->scratch, &s->scratch_cap, pl->scratch_bytes)) {
        g_set_error(error, REEL_ERROR, REEL_ENOMEM, "cannot allocate %zu bytes of activations", pl->arena_bytes);
        return REEL_ENOMEM;
    }
    if (pl->vk)
        vk_exec_begin(pl->vk);
    reel_tensor **copies = g_new0(reel_tensor *, s->m->n_inputs + 1);
    rc = bind_inputs(s, pl, inputs, copies, error);
    if (rc == 0)
        rc = run_nodes(s, pl, outputs, error);
    for (int k = 0; k < s->m->n_inputs; k++)
        reel_tensor_free(&copies[k]);
    g_free(copies);
    return rc;
}

// The views of the arena's values and of the inputs. An input in device
// memory is used there when only device nodes read it, else read back into
// copies[k] first.
static int bind_inputs(reel_session *s, plan *pl, reel_tensor *const *inputs, reel_tensor **copies, GError **error)
{
    for (int v = 0; v < pl->n_values; v++) {
        if (pl->kind[v] == V_ARENA) {
            pl->t[v].data = (char *)s->arena + pl->offset[v];
            continue;
        }
        if (pl->kind[v] != V_INPUT)
            continue;
        int k = pl->input_of[v];
        const reel_tensor *b = inputs[k];
        if (b->mem && pl->vk && vk_exec_device_only(pl->vk, &pl->g, pl->skip, v)) {
            vk_exec_bind(pl->vk, v, b->mem);
            pl->t[v].data = NULL;
            continue;
        }
        if (b->mem && !(b = copies[k] = reel_tensor_dup(b))) {
            g_set_error(error, REEL_ERROR, REEL_EIO, "input %s: cannot read it back from the device",
                        s->m->inputs[k].name);
            return REEL_EIO;
        }
        pl->t[v].data = b->data;
    }
    return 0;
}

// A dynamic node: inferred again with its inputs' values given as
// constants (the ops that read constant inputs then know their output
// shapes), its outputs allocated for this run, then run.
static int run_dynamic(plan *pl, reel_ir_node *n, reel_tensor **in, reel_tensor **out, reel_exec_ctx *ctx,
                       GError **error)
{
    reel_ir_graph *g = &pl->g;
    bool lent[n->n_inputs + 1];
    for (int k = 0; k < n->n_inputs; k++) {
        reel_ir_value *v = n->inputs[k] >= 0 ? reel_ir_value_at(g, n->inputs[k]) : NULL;
        lent[k] = v && !v->constant;
        if (lent[k])
            v->constant = in[k];
    }
    for (int k = 0; k < n->n_outputs; k++) {
        reel_ir_value *v = n->outputs[k] >= 0 ? reel_ir_value_at(g, n->outputs[k]) : NULL;
        if (v)
            v->constant = NULL;
    }
    int rc = n->impl->infer(g, n, error);
    for (int k = 0; k < n->n_inputs; k++)
        if (lent[k])
            reel_ir_value_at(g, n->inputs[k])->constant = NULL;
    for (int k = 0; !rc && k < n->n_outputs; k++) {
        reel_ir_value *v = n->outputs[k] >= 0 ? reel_ir_value_at(g, n->outputs[k]) : NULL;
        if (!v)
            continue;
        if (v->rank < 0 || v->dtype == REEL_DTYPE_NONE || !dims_known(v)) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                        "node %s (%s): the shape of output %s is not known even from its inputs' values", n->name,
                        n->op, v->name);
            return REEL_EUNSUPPORTED;
        }
        if ((rc = reel_limit_check_tensor(v->rank, v->dims, reel_dtype_size(v->dtype), NULL, error))) {
            g_prefix_error(error, "node %s (%s): output %s: ", n->name, n->op, v->name);
            return rc;
        }
        reel_tensor *t = reel_tensor_new(v->dtype, v->rank, v->dims);
        if (!t) {
            g_set_error(error, REEL_ERROR, REEL_ENOMEM, "node %s (%s): output too large", n->name, n->op);
            return REEL_ENOMEM;
        }
        g_ptr_array_add(pl->run_owned, t);
        view_of(v, &pl->t[n->outputs[k]]);
        pl->t[n->outputs[k]].data = t->data;
    }
    if (rc)
        return rc;
    // Scratch of its own: the session's is sized for the static nodes.
    size_t need = n->impl->scratch ? n->impl->scratch(n, in, out) : 0;
    void *scratch = ctx->scratch;
    size_t had = ctx->scratch_size;
    if (need > had) {
        ctx->scratch = g_malloc0(need);
        ctx->scratch_size = need;
    }
    rc = n->impl->run(n, in, out, ctx);
    if (need > had) {
        g_free(ctx->scratch);
        ctx->scratch = scratch;
        ctx->scratch_size = had;
    }
    return rc;
}

static int run_nodes(reel_session *s, plan *pl, reel_tensor **outputs, GError **error)
{
    int rc = 0;
    if (s->threads > 1 && !s->workers)
        s->workers = reel_workers_create(s->threads);
    reel_exec_ctx ctx = {
        .opset = pl->g.opset, .threads = s->workers ? s->threads : 1, .workers = s->workers, .scratch = s->scratch,
        .scratch_size = pl->scratch_bytes,
    };
    g_array_set_size(s->times, 0);
    const reel_ir_graph *g = &pl->g;
    void **states = s->store->states;
    drop_run_owned(pl);
    for (guint i = 0; i < g->nodes->len; i++) {
        if (pl->skip[i])
            continue;
        const reel_ir_node *n = reel_ir_node_at(g, (int)i);
        reel_tensor *in[n->n_inputs + 1], *out[n->n_outputs + 1];
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = n->inputs[k] >= 0 ? &pl->t[n->inputs[k]] : NULL;
        for (int k = 0; k < n->n_outputs; k++)
            out[k] = n->outputs[k] >= 0 ? &pl->t[n->outputs[k]] : NULL;
        gint64 t0 = s->profile ? g_get_monotonic_time() : 0;
        bool on_device = pl->vk && vk_exec_on_device(pl->vk, (int)i);
        if (on_device) {
            vk_exec_set_profile(pl->vk, s->profile);
            rc = vk_exec_node(pl->vk, g, (int)i, pl->t, error);
        } else if (!(rc = cpu_inputs(pl, n, error))) {
            // The kernel's state is the store's, for every plan and session:
            // the first to make it publishes it, one that lost the race
            // frees its own copy once it ran.
            void *state = g_atomic_pointer_get(&states[i]), *had = state;
            ctx.state = &state;
            ctx.const_inputs = s->m->const_inputs[i];
            rc = pl->dyn[i] ? run_dynamic(pl, (reel_ir_node *)n, in, out, &ctx, error) : n->impl->run(n, in, out, &ctx);
            if (state != had) {
                if (g_atomic_pointer_compare_and_exchange(&states[i], NULL, state))
                    atomic_fetch_add(&s->store->states_made, 1);
                else
                    g_free(state);
            }
        }
        if (!rc && pl->vk && !on_device)
            for (int k = 0; k < n->n_outputs; k++)
                vk_exec_host_made(pl->vk, n->outputs[k]);
        if (s->profile) {
            // Device nodes: their dispatches' time on the device (timestamp queries).
            double secs = on_device ? vk_exec_node_ns(pl->vk) * 1e-9 : (g_get_monotonic_time() - t0) * 1e-6;
            reel_session_node_time nt = { n->name, n->op, secs };
            g_array_append_val(s->times, nt);
        }
        if (rc) {
            if (error && !*error)
                g_set_error(error, REEL_ERROR, rc, "node %s (%s) failed: %s", n->name, n->op, reel_strerror(rc));
            return rc;
        }
    }
    for (guint k = 0; pl->vk && k < g->outputs->len; k++) {
        int v = g_array_index(g->outputs, int, k);
        if ((rc = vk_exec_to_host(pl->vk, v, &pl->t[v], error)) < 0)
            return rc;
    }
    // Nothing of this run waits to be submitted when the next one writes
    // its inputs.
    if (pl->vk && (rc = vk_exec_end(pl->vk, error)) < 0)
        return rc;
    for (guint k = 0; k < g->outputs->len; k++) {
        const reel_tensor *t = &pl->t[g_array_index(g->outputs, int, k)];
        if (!(outputs[k] = reel_tensor_dup(t))) {
            for (guint j = 0; j < k; j++)
                reel_tensor_free(&outputs[j]);
            g_set_error(error, REEL_ERROR, REEL_ENOMEM, "cannot allocate output %u", k);
            return REEL_ENOMEM;
        }
    }
    return 0;
}

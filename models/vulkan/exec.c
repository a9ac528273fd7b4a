// The Vulkan side of a plan (models/vulkan/exec.h): placement of each node,
// device memory per value (one arena for the values the device makes),
// copies only where a value crosses between a node on the cpu and one on
// the device, and each run's submissions recorded once and resubmitted.
//
// Why the arena holds only values the device makes: an upload is written
// when its node comes, before the dispatches gathered ahead of it run, so a
// value from the host must not share bytes with those; a download waits for
// what made it, and the value's lifetime covers its cpu readers. Views of
// one arena share its timeline points, so submissions that touch it run in
// order, and within one every dispatch sees the writes of those before it.
//
// Weights (the model's constants) and kernels come from the model's store
// on the device (models/vulkan/store.h): uploaded and compiled once for
// every plan and session there; constants a plan folded for its shapes are
// uploaded with the plan. What a plan allocates itself is not pooled, so
// that a plan dropped from the session's cache gives its memory back.
//
// precision=fp16: float32 values are float16 on the device. What crosses to
// or from the host is converted on the host (half the bytes cross); a
// float32 input bound in device memory is converted by a dispatch (nn_cast)
// into memory of the value's own, recorded with the run like any other.
#include <string.h>

#include "models/session.h"
#include "models/vulkan/exec.h"
#include "models/vulkan/store.h"
#include "models/vulkan/vk_ops.h"

// Recordings kept per plan, one per set of memories bound to the graph's
// inputs (vk_exec_bind). Recording per set rather than copying a bound input
// into memory of our own inside the recording: the copy would move every
// frame's input once more on the device, where the buffer pools that feed
// an infer (preprocess's) recycle a few buffers, which a few recordings cover.
#define MAX_REPLAYS 4

enum { VAL_NONE, VAL_OWN, VAL_ARENA }; // where a value's device copy lives

// How this run submits: each node's dispatches gathered and submitted as
// they come (profiling, REEL_VULKAN_BATCH=0), gathered and recorded for
// the runs after, or resubmitted from a recording.
typedef enum { RUN_UNSET, RUN_DIRECT, RUN_RECORD, RUN_REPLAY } run_mode;

// The command buffers of one run for one set of bound inputs: one per
// stretch of dispatches between two host waits, in submission order.
typedef struct replay {
    reel_mem **bound;    // per graph input: the memory bound when recorded (referenced), or NULL
    GPtrArray *segments; // reel_recording *; NULL for a stretch that dispatched nothing
    bool complete;       // a whole run was recorded
} replay;

struct vk_exec {
    vk_ctx ctx;
    int n_nodes, n_values;
    int n_inputs, *inputs; // the graph's input values
    bool *on_device;     // per node
    const char **why;    // per node kept on the cpu: the reason
    char *where;         // per value: VAL_*
    reel_mem **mem;      // per value: its device memory (its own, or a view of the arena), or NULL
    reel_mem *arena;     // the values the device makes, or NULL
    uint64_t arena_bytes;
    uint64_t own_bytes;  // memory of its own (not the store's weights) besides the arena
    reel_mem **bound;    // per value: memory given for this run instead (borrowed)
    bool *constant;      // per value: uploaded once, valid for every run
    bool *half;          // per value: a float32 stored as float16 (fp16 plans)
    bool *dev_valid, *host_valid;
    int device_nodes, cpu_nodes, partitions;
    int64_t to_device, to_host; // this run
    GString *reasons;    // every node kept on the cpu, and why
    GString *summary;    // the same by op: "Concat x11: why"
    GPtrArray *replays;  // replay *, the most recently used first
    run_mode mode;       // this run's
    replay *run;         // this run's recording (RUN_RECORD, RUN_REPLAY)
    int next_segment;    // RUN_REPLAY: the next one to submit
    bool pending;        // a device node ran since the last submission
    int recordings;      // runs recorded
};

// Ops kept on the cpu on request ($REEL_VULKAN_CPU_OPS="Concat,Softmax"):
// for tests of partitioning, and to work around a kernel.
static bool kept_on_cpu(const char *op)
{
    const char *env = g_getenv("REEL_VULKAN_CPU_OPS");
    if (!env)
        return false;
    char **list = g_strsplit(env, ",", -1);
    bool found = g_strv_contains((const char *const *)list, op);
    g_strfreev(list);
    return found;
}

static bool touches_float32(const reel_ir_node *n, reel_tensor **in, reel_tensor **out)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (in[k] && in[k]->dtype == REEL_DTYPE_FLOAT32)
            return true;
    for (int k = 0; k < n->n_outputs; k++)
        if (out[k] && out[k]->dtype == REEL_DTYPE_FLOAT32)
            return true;
    return false;
}

// Why node i (n) cannot run on the device, or NULL when it can. In an fp16
// plan a node with float32 tensors needs its op's float16 form.
static const char *why_not(const vk_exec *x, int i, const reel_ir_node *n, reel_tensor **in, reel_tensor **out)
{
    const vk_op *op = vk_store_op(x->ctx.store, i);
    if (!op)
        return "no Vulkan kernel for this op";
    if (kept_on_cpu(n->op))
        return "kept on the cpu by REEL_VULKAN_CPU_OPS";
    if (x->ctx.f16 && touches_float32(n, in, out)) {
        if (!op->supports_f16)
            return "no float16 Vulkan kernel for this op";
        if (!op->supports_f16(n, in, out))
            return "these shapes, types or attributes have no float16 Vulkan kernel";
        return NULL;
    }
    if (!op->supports(n, in, out))
        return "these shapes or attributes have no Vulkan kernel";
    return NULL;
}

static size_t device_bytes(const vk_exec *x, const reel_tensor *t)
{
    return MAX(vk_stored_bytes(x->ctx.f16, t), 16); // an empty tensor still binds a buffer
}

// A value's bytes in the arena: whole view alignments, so that every
// offset the planner gives is one (offsets are sums of sizes).
static size_t arena_bytes_of(const vk_exec *x, const reel_tensor *t)
{
    return (device_bytes(x, t) + REEL_MEM_VIEW_ALIGN - 1) / REEL_MEM_VIEW_ALIGN * REEL_MEM_VIEW_ALIGN;
}

// Value v's host data (view) into its device memory, as float16 when it is
// stored so.
static int upload_value(vk_exec *x, int v, const reel_tensor *view)
{
    if (!x->half[v])
        return reel_mem_upload(x->mem[v], 0, view->data, view->nbytes, NULL);
    size_t count = view->nbytes / sizeof(float);
    uint16_t *halves = g_new(uint16_t, count + 1);
    vk_f32_to_f16(view->data, halves, count);
    int rc = reel_mem_upload(x->mem[v], 0, halves, count * sizeof(uint16_t), NULL);
    g_free(halves);
    return rc;
}

// Device memory of its own for value v: a weight of the model's (the
// store's), a constant this plan folded (uploaded here), or a value from
// the host (uploaded each run).
static int alloc_own(vk_exec *x, int v, const reel_tensor *view, GError **error)
{
    if (x->constant[v] && vk_store_is_weight(x->ctx.store, v, view)) {
        if (!(x->mem[v] = vk_store_weight(x->ctx.store, v, x->half[v], error)))
            return REEL_ENOMEM_DEVICE;
        x->where[v] = VAL_OWN;
        x->dev_valid[v] = true;
        return 0;
    }
    x->mem[v] = reel_mem_new(x->ctx.dev, reel_mem_params(.size = device_bytes(x, view), .domain = REEL_MEM_DEVICE,
                                                         .no_pool = true), error);
    if (!x->mem[v])
        return REEL_ENOMEM_DEVICE;
    x->own_bytes += device_bytes(x, view);
    x->where[v] = VAL_OWN;
    if (x->constant[v]) {
        int rc = upload_value(x, v, view);
        if (rc < 0) {
            g_set_error(error, REEL_ERROR, rc, "upload of a weight failed: %s", reel_strerror(rc));
            return rc;
        }
        x->dev_valid[v] = true;
    }
    return 0;
}

// What placing has taken so far: memory of their own, and the values of
// the arena with their lifetimes.
typedef struct placing {
    uint64_t own;
    GArray *arena;      // reel_arena_value
    uint64_t arena_sum; // their sizes added up: the arena's size without reuse
    size_t *offset;     // per value, for the planner
    const int *def, *last;
} placing;

// Whether k is the first of node n's inputs that is value inputs[k].
static bool first_use(const reel_ir_node *n, int k)
{
    for (int j = 0; j < k; j++)
        if (n->inputs[j] == n->inputs[k])
            return false;
    return true;
}

// Whether the device memory still holds node n within limit: its inputs
// new to the device in memory of their own, its outputs in the arena.
static bool fits(const vk_exec *x, placing *pc, const reel_ir_node *n, const reel_tensor *views, uint64_t limit)
{
    uint64_t own = pc->own, sum = pc->arena_sum;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && x->where[n->inputs[k]] == VAL_NONE && first_use(n, k))
            own += device_bytes(x, &views[n->inputs[k]]);
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0)
            sum += arena_bytes_of(x, &views[n->outputs[k]]);
    if (own + sum <= limit)
        return true; // even without reuse: no need to plan
    if (own >= limit)
        return false;
    GArray *lv = g_array_copy(pc->arena);
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v >= 0)
            g_array_append_vals(lv, &(reel_arena_value){ v, pc->def[v], pc->last[v], arena_bytes_of(x, &views[v]) },
                                1);
    }
    uint64_t arena = reel_arena_place((reel_arena_value *)(void *)lv->data, (int)lv->len, pc->offset);
    g_array_free(lv, TRUE);
    return own + arena <= limit;
}

// Node n goes to the device: its inputs new there get memory of their own,
// its outputs places in the arena (laid out once every node is placed).
static int take(vk_exec *x, placing *pc, const reel_ir_node *n, const reel_tensor *views, GError **error)
{
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0 || x->where[v] != VAL_NONE)
            continue;
        if (alloc_own(x, v, &views[v], error) < 0)
            return REEL_ENOMEM_DEVICE;
        pc->own += device_bytes(x, &views[v]);
    }
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        if (v < 0)
            continue;
        reel_arena_value a = { v, pc->def[v], pc->last[v], arena_bytes_of(x, &views[v]) };
        g_array_append_val(pc->arena, a);
        pc->arena_sum += a.size;
        x->where[v] = VAL_ARENA;
    }
    return 0;
}

// The arena, laid out by the values' lifetimes, and a view of it per value.
static int lay_out_arena(vk_exec *x, placing *pc, const reel_tensor *views, GError **error)
{
    if (!pc->arena->len)
        return 0;
    x->arena_bytes = reel_arena_place((reel_arena_value *)(void *)pc->arena->data, (int)pc->arena->len, pc->offset);
    x->arena = reel_mem_new(x->ctx.dev, reel_mem_params(.size = x->arena_bytes, .domain = REEL_MEM_DEVICE,
                                                        .no_pool = true), error);
    if (!x->arena)
        return REEL_ENOMEM_DEVICE;
    for (guint i = 0; i < pc->arena->len; i++) {
        int v = g_array_index(pc->arena, reel_arena_value, i).v;
        if (!(x->mem[v] = reel_mem_new_view(x->arena, pc->offset[v], device_bytes(x, &views[v]), error)))
            return REEL_EINVAL;
    }
    return 0;
}

// The cpu nodes grouped by op, in order of first appearance, with the
// first one's reason: "Concat x11 (no Vulkan kernel for this op)".
static void summarize(vk_exec *x, const reel_ir_graph *g, const bool *skip)
{
    GHashTable *count = g_hash_table_new(g_str_hash, g_str_equal); // op -> nodes
    GPtrArray *order = g_ptr_array_new();                          // ops, first seen first
    GPtrArray *why = g_ptr_array_new();
    for (int i = 0; i < x->n_nodes; i++) {
        if (skip[i] || x->on_device[i])
            continue;
        const char *op = reel_ir_node_at(g, i)->op;
        int c = GPOINTER_TO_INT(g_hash_table_lookup(count, op));
        if (!c) {
            g_ptr_array_add(order, (gpointer)op);
            g_ptr_array_add(why, (gpointer)x->why[i]);
        }
        g_hash_table_insert(count, (gpointer)op, GINT_TO_POINTER(c + 1));
    }
    for (guint k = 0; k < order->len; k++)
        g_string_append_printf(x->summary, "%s%s x%d (%s)", k ? ", " : "", (const char *)order->pdata[k],
                               GPOINTER_TO_INT(g_hash_table_lookup(count, order->pdata[k])),
                               (const char *)why->pdata[k]);
    g_hash_table_destroy(count);
    g_ptr_array_free(order, TRUE);
    g_ptr_array_free(why, TRUE);
}

static int place(vk_exec *x, const vk_exec_params *params, const reel_ir_graph *g, const reel_tensor *views,
                 const bool *skip, placing *pc, GError **error)
{
    bool full = false, last_device = false;
    for (int i = 0; i < x->n_nodes; i++) {
        if (skip[i])
            continue;
        const reel_ir_node *n = reel_ir_node_at(g, i);
        reel_tensor *in[n->n_inputs + 1], *out[n->n_outputs + 1];
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = n->inputs[k] >= 0 ? (reel_tensor *)&views[n->inputs[k]] : NULL;
        for (int k = 0; k < n->n_outputs; k++)
            out[k] = n->outputs[k] >= 0 ? (reel_tensor *)&views[n->outputs[k]] : NULL;
        const char *why = why_not(x, i, n, in, out);
        if (!why && params->memory_limit && (full || !fits(x, pc, n, views, params->memory_limit))) {
            full = true; // the device holds a prefix of the model; the rest runs on the cpu
            why = "past the device memory limit";
        }
        if (why) {
            x->why[i] = why;
            g_string_append_printf(x->reasons, "%s%s (%s): %s", x->reasons->len ? "; " : "", n->name, n->op, why);
            x->cpu_nodes++;
            if (last_device || x->device_nodes + x->cpu_nodes == 1)
                x->partitions++;
            last_device = false;
            continue;
        }
        if (take(x, pc, n, views, error) < 0)
            return REEL_ENOMEM_DEVICE;
        x->on_device[i] = true;
        x->device_nodes++;
        if (!last_device)
            x->partitions++;
        last_device = true;
    }
    summarize(x, g, skip);
    if (params->strict && x->cpu_nodes) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                    "placement=strict: %d node%s would run on the cpu, not on %s: %s", x->cpu_nodes,
                    x->cpu_nodes == 1 ? "" : "s", reel_device_info_of(x->ctx.dev)->spec, x->reasons->str);
        return REEL_EUNSUPPORTED;
    }
    return lay_out_arena(x, pc, views, error);
}

vk_exec *vk_exec_new(const vk_exec_params *params, const reel_ir_graph *g, const reel_tensor *views,
                     const bool *skip, GError **error)
{
    vk_exec *x = g_new0(vk_exec, 1);
    x->n_nodes = (int)g->nodes->len;
    x->n_values = (int)g->values->len;
    x->n_inputs = (int)g->inputs->len;
    x->inputs = g_new0(int, x->n_inputs + 1);
    for (int k = 0; k < x->n_inputs; k++)
        x->inputs[k] = g_array_index(g->inputs, int, k);
    x->on_device = g_new0(bool, x->n_nodes + 1);
    x->why = g_new0(const char *, x->n_nodes + 1);
    x->where = g_new0(char, x->n_values + 1);
    x->mem = g_new0(reel_mem *, x->n_values + 1);
    x->bound = g_new0(reel_mem *, x->n_values + 1);
    x->constant = g_new0(bool, x->n_values + 1);
    x->half = g_new0(bool, x->n_values + 1);
    x->dev_valid = g_new0(bool, x->n_values + 1);
    x->host_valid = g_new0(bool, x->n_values + 1);
    x->reasons = g_string_new(NULL);
    x->summary = g_string_new(NULL);
    x->replays = g_ptr_array_new();
    for (int v = 0; v < x->n_values; v++) {
        x->constant[v] = views[v].data != NULL;
        x->half[v] = params->f16 && views[v].dtype == REEL_DTYPE_FLOAT32;
    }
    placing pc = { .arena = g_array_new(FALSE, FALSE, sizeof(reel_arena_value)),
                   .offset = g_new0(size_t, x->n_values + 1), .def = params->def, .last = params->last };
    vk_ctx_init_shared(&x->ctx, params->store);
    x->ctx.f16 = params->f16;
    // A partition's dispatches go to the device in one submission
    // (REEL_VULKAN_BATCH=0: one each, to compare).
    if (g_strcmp0(g_getenv("REEL_VULKAN_BATCH"), "0") != 0)
        x->ctx.batch = reel_batch_new(x->ctx.dev);
    if (place(x, params, g, views, skip, &pc, error) < 0)
        vk_exec_free(&x);
    g_array_free(pc.arena, TRUE);
    g_free(pc.offset);
    return x;
}

static void replay_free(vk_exec *x, replay *r)
{
    for (guint i = 0; i < r->segments->len; i++) {
        reel_recording *rec = r->segments->pdata[i];
        reel_recording_free(&rec);
    }
    g_ptr_array_free(r->segments, TRUE);
    for (int k = 0; k < x->n_inputs; k++)
        reel_mem_unref(&r->bound[k]);
    g_free(r->bound);
    g_free(r);
}

void vk_exec_free(vk_exec **px)
{
    vk_exec *x = *px;
    *px = NULL;
    if (!x)
        return;
    for (guint i = 0; i < x->replays->len; i++)
        replay_free(x, x->replays->pdata[i]);
    g_ptr_array_free(x->replays, TRUE);
    for (int v = 0; v < x->n_values; v++)
        reel_mem_unref(&x->mem[v]);
    reel_mem_unref(&x->arena);
    vk_ctx_clear(&x->ctx);
    g_free(x->inputs);
    g_free(x->on_device);
    g_free(x->why);
    g_free(x->where);
    g_free(x->mem);
    g_free(x->bound);
    g_free(x->constant);
    g_free(x->half);
    g_free(x->dev_valid);
    g_free(x->host_valid);
    g_string_free(x->reasons, TRUE);
    g_string_free(x->summary, TRUE);
    g_free(x);
}

bool vk_exec_on_device(const vk_exec *x, int node)
{
    return x->on_device[node];
}

bool vk_exec_device_only(const vk_exec *x, const reel_ir_graph *g, const bool *skip, int v)
{
    for (int i = 0; i < x->n_nodes; i++) {
        if (skip[i])
            continue;
        const reel_ir_node *n = reel_ir_node_at(g, i);
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == v && !x->on_device[i])
                return false;
    }
    for (guint k = 0; k < g->outputs->len; k++)
        if (g_array_index(g->outputs, int, k) == v)
            return false; // an input that is also an output comes back to the host
    return true;
}

void vk_exec_bind(vk_exec *x, int v, reel_mem *m)
{
    x->bound[v] = m;
    x->dev_valid[v] = !x->half[v]; // a float32 one is converted when first read
    x->host_valid[v] = false;
}

// ---- recordings ------------------------------------------------------------

static void drop_replay(vk_exec *x, replay *r)
{
    g_ptr_array_remove(x->replays, r);
    replay_free(x, r);
}

// The recording for the memories bound this run, made the most recently
// used; NULL when there is none.
static replay *find_replay(vk_exec *x)
{
    for (guint i = 0; i < x->replays->len; i++) {
        replay *r = x->replays->pdata[i];
        int k = 0;
        while (k < x->n_inputs && r->bound[k] == x->bound[x->inputs[k]])
            k++;
        if (k == x->n_inputs) {
            g_ptr_array_remove_index(x->replays, i);
            g_ptr_array_insert(x->replays, 0, r);
            return r;
        }
    }
    return NULL;
}

// A recording to fill for the memories bound this run (referenced, so that
// none is freed and its address taken by another while recorded), first in
// the list; the least recently used beyond MAX_REPLAYS is dropped.
static replay *new_replay(vk_exec *x)
{
    replay *r = g_new0(replay, 1);
    r->bound = g_new0(reel_mem *, x->n_inputs + 1);
    for (int k = 0; k < x->n_inputs; k++)
        if (x->bound[x->inputs[k]])
            r->bound[k] = reel_mem_ref(x->bound[x->inputs[k]]);
    r->segments = g_ptr_array_new();
    g_ptr_array_insert(x->replays, 0, r);
    if (x->replays->len > MAX_REPLAYS)
        drop_replay(x, x->replays->pdata[x->replays->len - 1]);
    return r;
}

// Decided at the run's first device node, once its inputs are bound and
// profiling set.
static void choose_mode(vk_exec *x)
{
    if (x->ctx.profile || !x->ctx.batch) {
        x->mode = RUN_DIRECT;
        return;
    }
    replay *r = find_replay(x);
    if (r && r->complete) {
        x->mode = RUN_REPLAY;
        x->run = r;
        return;
    }
    if (r)
        drop_replay(x, r);
    x->mode = RUN_RECORD;
    x->run = new_replay(x);
}

// At a host wait (a download, the run's end): what the device nodes since
// the last one did goes to the device, gathered, recorded or replayed.
static int submit_pending(vk_exec *x, GError **error)
{
    int rc = 0;
    bool pending = x->pending;
    x->pending = false;
    if (x->mode == RUN_DIRECT) {
        rc = x->ctx.batch ? reel_batch_submit(x->ctx.batch, NULL) : 0;
    } else if (x->mode == RUN_RECORD && pending) {
        reel_recording *rec = NULL;
        if (reel_batch_size(x->ctx.batch) && !(rec = reel_batch_record(x->ctx.batch, error)))
            return error && *error ? (*error)->code : REEL_ENOMEM_DEVICE;
        g_ptr_array_add(x->run->segments, rec);
        rc = rec ? reel_recording_submit(rec, NULL) : 0;
    } else if (x->mode == RUN_REPLAY && pending) {
        if (x->next_segment >= (int)x->run->segments->len) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "%s: this run submits more often than the recorded one",
                        reel_device_info_of(x->ctx.dev)->spec);
            return REEL_EINVAL;
        }
        reel_recording *rec = x->run->segments->pdata[x->next_segment++];
        rc = rec ? reel_recording_submit(rec, NULL) : 0;
    }
    if (rc < 0)
        g_set_error(error, REEL_ERROR, rc, "submitting to %s failed: %s", reel_device_info_of(x->ctx.dev)->spec,
                    reel_strerror(rc));
    return rc;
}

// ---- runs ------------------------------------------------------------------

void vk_exec_begin(vk_exec *x)
{
    // A run that failed while recording leaves no usable recording, and
    // maybe dispatches gathered but not submitted: they go now, unrecorded.
    if (x->mode == RUN_RECORD && !x->run->complete)
        drop_replay(x, x->run);
    if (x->ctx.batch && reel_batch_size(x->ctx.batch))
        reel_batch_submit(x->ctx.batch, NULL);
    x->mode = RUN_UNSET;
    x->run = NULL;
    x->next_segment = 0;
    x->pending = false;
    memset(x->bound, 0, sizeof(reel_mem *) * (size_t)x->n_values);
    for (int v = 0; v < x->n_values; v++) {
        x->host_valid[v] = true; // inputs and constants are; the rest once made
        if (!x->constant[v])
            x->dev_valid[v] = false;
    }
    x->to_device = x->to_host = 0;
}

// A float32 input bound in device memory, into its float16 memory: a
// dispatch gathered ahead of the node's (a replayed run has it recorded).
static int convert_bound(vk_exec *x, const reel_ir_node *n, int v, const reel_tensor *view, GError **error)
{
    if (x->mode == RUN_REPLAY)
        return 0;
    int rc = vk_convert_f32_to_f16(&x->ctx, x->bound[v], x->mem[v], reel_tensor_count(view->rank, view->shape));
    if (rc < 0)
        g_set_error(error, REEL_ERROR, rc, "node %s (%s): converting its float32 input to float16 on %s failed: %s",
                    n->name, n->op, reel_device_info_of(x->ctx.dev)->spec, reel_strerror(rc));
    return rc;
}

// Node n's inputs made on the host cross here (also when the node's
// dispatches are replayed: the recording reads the same memory).
static int upload_inputs(vk_exec *x, const reel_ir_node *n, const reel_tensor *views, GError **error)
{
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        if (v < 0 || x->dev_valid[v])
            continue;
        if (x->bound[v]) {
            int rc = convert_bound(x, n, v, &views[v], error);
            if (rc < 0)
                return rc;
            x->dev_valid[v] = true;
            continue;
        }
        int rc = upload_value(x, v, &views[v]);
        if (rc < 0) {
            g_set_error(error, REEL_ERROR, rc, "node %s (%s): upload failed: %s", n->name, n->op, reel_strerror(rc));
            return rc;
        }
        x->to_device += (int64_t)vk_stored_bytes(x->ctx.f16, &views[v]);
        x->dev_valid[v] = true;
    }
    return 0;
}

// Node i's (n's) dispatches, gathered into the batch or submitted.
static int run_op(vk_exec *x, int i, const reel_ir_node *n, const reel_tensor *views, GError **error)
{
    vk_tensor tin[n->n_inputs + 1], tout[n->n_outputs + 1];
    vk_tensor *in[n->n_inputs + 1], *out[n->n_outputs + 1];
    reel_tensor shapes[n->n_inputs + n->n_outputs + 1];
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        in[k] = NULL;
        if (v < 0)
            continue;
        shapes[k] = views[v];
        if (!x->constant[v])
            shapes[k].data = NULL;
        tin[k] = (vk_tensor){ x->bound[v] && !x->half[v] ? x->bound[v] : x->mem[v], &shapes[k] };
        in[k] = &tin[k];
    }
    for (int k = 0; k < n->n_outputs; k++) {
        int v = n->outputs[k];
        out[k] = NULL;
        if (v < 0)
            continue;
        shapes[n->n_inputs + k] = views[v];
        shapes[n->n_inputs + k].data = NULL;
        tout[k] = (vk_tensor){ x->mem[v], &shapes[n->n_inputs + k] };
        out[k] = &tout[k];
    }
    int rc = vk_store_op(x->ctx.store, i)->run(&x->ctx, n, in, out);
    if (rc < 0)
        g_set_error(error, REEL_ERROR, rc, "node %s (%s) failed on %s: %s", n->name, n->op,
                    reel_device_info_of(x->ctx.dev)->spec, reel_strerror(rc));
    return rc;
}

int vk_exec_node(vk_exec *x, const reel_ir_graph *g, int i, reel_tensor *views, GError **error)
{
    const reel_ir_node *n = reel_ir_node_at(g, i);
    if (x->mode == RUN_UNSET)
        choose_mode(x);
    int rc = upload_inputs(x, n, views, error);
    x->ctx.profile_ns = 0;
    if (rc == 0 && x->mode != RUN_REPLAY)
        rc = run_op(x, i, n, views, error);
    if (rc < 0)
        return rc;
    x->pending = true;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) {
            x->dev_valid[n->outputs[k]] = true;
            x->host_valid[n->outputs[k]] = false;
        }
    return 0;
}

// Value v's device memory into its host view, from float16 when it is
// stored so.
static int download_value(vk_exec *x, int v, reel_tensor *view)
{
    if (!x->half[v])
        return reel_mem_download(x->mem[v], 0, view->data, view->nbytes, NULL);
    size_t count = view->nbytes / sizeof(float);
    uint16_t *halves = g_new(uint16_t, count + 1);
    int rc = reel_mem_download(x->mem[v], 0, halves, count * sizeof(uint16_t), NULL);
    if (rc == 0)
        vk_f16_to_f32(halves, view->data, count);
    g_free(halves);
    return rc;
}

int vk_exec_to_host(vk_exec *x, int v, reel_tensor *view, GError **error)
{
    if (v < 0 || x->host_valid[v])
        return 0;
    // The dispatches gathered so far (those that made v among them) go now.
    int rc = submit_pending(x, error);
    if (rc < 0)
        return rc;
    if ((rc = download_value(x, v, view)) < 0) {
        g_set_error(error, REEL_ERROR, rc, "download of a tensor failed: %s", reel_strerror(rc));
        return rc;
    }
    x->to_host += (int64_t)vk_stored_bytes(x->ctx.f16, view);
    x->host_valid[v] = true;
    return 0;
}

void vk_exec_set_profile(vk_exec *x, bool on)
{
    // A run being recorded or replayed is profiled from the next one on.
    if (x->mode == RUN_RECORD || x->mode == RUN_REPLAY)
        return;
    if (on && x->ctx.batch)
        reel_batch_submit(x->ctx.batch, NULL); // what was gathered goes untimed
    x->ctx.profile = on;
}

int64_t vk_exec_node_ns(const vk_exec *x)
{
    return x->ctx.profile_ns;
}

int vk_exec_end(vk_exec *x, GError **error)
{
    int rc = submit_pending(x, error);
    if (rc < 0)
        return rc;
    if (x->mode == RUN_RECORD) {
        x->run->complete = true;
        x->recordings++;
    } else if (x->mode == RUN_REPLAY && x->next_segment != (int)x->run->segments->len) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "%s: this run submitted less often than the recorded one",
                    reel_device_info_of(x->ctx.dev)->spec);
        return REEL_EINVAL;
    }
    return 0;
}

void vk_exec_host_made(vk_exec *x, int v)
{
    if (v >= 0) {
        x->host_valid[v] = true;
        x->dev_valid[v] = false;
    }
}

void vk_exec_get_stats(const vk_exec *x, vk_exec_stats *out)
{
    *out = (vk_exec_stats){ x->device_nodes, x->cpu_nodes, x->partitions, x->to_device, x->to_host,
                            x->summary->str, (int64_t)x->arena_bytes, x->recordings,
                            (int64_t)(x->arena_bytes + x->own_bytes) };
}

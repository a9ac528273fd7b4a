// The Vulkan side of a plan (models/vulkan/exec.h): placement of each node,
// device memory per value, copies only where a value crosses between a node
// on the cpu and one on the device.
#include <string.h>

#include "models/vulkan/exec.h"
#include "models/vulkan/vk_ops.h"

struct vk_exec {
    vk_ctx ctx;
    int n_nodes, n_values;
    bool *on_device;     // per node
    const char **why;    // per node kept on the cpu: the reason
    reel_mem **mem;      // per value: its device memory, or NULL
    reel_mem **bound;    // per value: memory given for this run instead (borrowed)
    bool *constant;      // per value: uploaded once, valid for every run
    bool *dev_valid, *host_valid;
    int device_nodes, cpu_nodes, partitions;
    int64_t to_device, to_host; // this run
    GString *reasons;    // every node kept on the cpu, and why
    GString *summary;    // the same by op: "Concat x11: why"
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

// Why node n cannot run on the device, or NULL when it can.
static const char *why_not(const reel_ir_node *n, reel_tensor **in, reel_tensor **out)
{
    const vk_op *op = vk_op_find(n->op);
    if (!op)
        return "no Vulkan kernel for this op";
    if (kept_on_cpu(n->op))
        return "kept on the cpu by REEL_VULKAN_CPU_OPS";
    if (!op->supports(n, in, out))
        return "these shapes or attributes have no Vulkan kernel";
    return NULL;
}

static size_t device_bytes(const reel_tensor *t)
{
    return MAX(t->nbytes, 16); // an empty tensor still binds a buffer
}

// Device memory for value v (once); bytes allocated added to *used.
static int alloc_value(vk_exec *x, int v, const reel_tensor *view, uint64_t *used, GError **error)
{
    if (x->mem[v])
        return 0;
    x->mem[v] = reel_mem_new(x->ctx.dev, reel_mem_params(.size = device_bytes(view), .domain = REEL_MEM_DEVICE),
                             error);
    if (!x->mem[v])
        return REEL_ENOMEM_DEVICE;
    *used += device_bytes(view);
    if (x->constant[v]) {
        int rc = reel_mem_upload(x->mem[v], 0, view->data, view->nbytes, NULL);
        if (rc < 0) {
            g_set_error(error, REEL_ERROR, rc, "upload of a weight failed: %s", reel_strerror(rc));
            return rc;
        }
        x->dev_valid[v] = true;
    }
    return 0;
}

// Bytes node i would newly need on the device.
static uint64_t node_bytes(const vk_exec *x, const reel_ir_node *n, const reel_tensor *views)
{
    uint64_t need = 0;
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && !x->mem[n->inputs[k]])
            need += device_bytes(&views[n->inputs[k]]);
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && !x->mem[n->outputs[k]])
            need += device_bytes(&views[n->outputs[k]]);
    return need;
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
                 const bool *skip, GError **error)
{
    uint64_t used = 0;
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
        const char *why = why_not(n, in, out);
        if (!why && params->memory_limit && (full || used + node_bytes(x, n, views) > params->memory_limit)) {
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
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && alloc_value(x, n->inputs[k], &views[n->inputs[k]], &used, error) < 0)
                return REEL_ENOMEM_DEVICE;
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && alloc_value(x, n->outputs[k], &views[n->outputs[k]], &used, error) < 0)
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
    return 0;
}

vk_exec *vk_exec_new(const vk_exec_params *params, const reel_ir_graph *g, const reel_tensor *views,
                     const bool *skip, GError **error)
{
    vk_exec *x = g_new0(vk_exec, 1);
    x->n_nodes = (int)g->nodes->len;
    x->n_values = (int)g->values->len;
    x->on_device = g_new0(bool, x->n_nodes + 1);
    x->why = g_new0(const char *, x->n_nodes + 1);
    x->mem = g_new0(reel_mem *, x->n_values + 1);
    x->bound = g_new0(reel_mem *, x->n_values + 1);
    x->constant = g_new0(bool, x->n_values + 1);
    x->dev_valid = g_new0(bool, x->n_values + 1);
    x->host_valid = g_new0(bool, x->n_values + 1);
    x->reasons = g_string_new(NULL);
    x->summary = g_string_new(NULL);
    for (int v = 0; v < x->n_values; v++)
        x->constant[v] = views[v].data != NULL;
    int rc = vk_ctx_init(&x->ctx, params->dev, error);
    // A partition's dispatches go to the device in one submission
    // (REEL_VULKAN_BATCH=0: one each, to compare).
    if (rc == 0 && g_strcmp0(g_getenv("REEL_VULKAN_BATCH"), "0") != 0)
        x->ctx.batch = reel_batch_new(x->ctx.dev);
    if (rc < 0 || place(x, params, g, views, skip, error) < 0)
        vk_exec_free(&x);
    return x;
}

void vk_exec_free(vk_exec **px)
{
    vk_exec *x = *px;
    *px = NULL;
    if (!x)
        return;
    for (int v = 0; v < x->n_values; v++)
        reel_mem_unref(&x->mem[v]);
    vk_ctx_clear(&x->ctx);
    g_free(x->on_device);
    g_free(x->why);
    g_free(x->mem);
    g_free(x->bound);
    g_free(x->constant);
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
    x->dev_valid[v] = true;
    x->host_valid[v] = false;
}

void vk_exec_begin(vk_exec *x)
{
    memset(x->bound, 0, sizeof(reel_mem *) * (size_t)x->n_values);
    for (int v = 0; v < x->n_values; v++) {
        x->host_valid[v] = true; // inputs and constants are; the rest once made
        if (!x->constant[v])
            x->dev_valid[v] = false;
    }
    x->to_device = x->to_host = 0;
}

int vk_exec_node(vk_exec *x, const reel_ir_graph *g, int i, reel_tensor *views, GError **error)
{
    const reel_ir_node *n = reel_ir_node_at(g, i);
    vk_tensor tin[n->n_inputs + 1], tout[n->n_outputs + 1];
    vk_tensor *in[n->n_inputs + 1], *out[n->n_outputs + 1];
    reel_tensor shapes[n->n_inputs + n->n_outputs + 1];
    int rc = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        int v = n->inputs[k];
        in[k] = NULL;
        if (v < 0)
            continue;
        if (!x->dev_valid[v]) { // made on the host: it crosses here
            if ((rc = reel_mem_upload(x->mem[v], 0, views[v].data, views[v].nbytes, NULL)) < 0) {
                g_set_error(error, REEL_ERROR, rc, "node %s (%s): upload failed: %s", n->name, n->op,
                            reel_strerror(rc));
                return rc;
            }
            x->to_device += (int64_t)views[v].nbytes;
            x->dev_valid[v] = true;
        }
        shapes[k] = views[v];
        if (!x->constant[v])
            shapes[k].data = NULL;
        tin[k] = (vk_tensor){ x->bound[v] ? x->bound[v] : x->mem[v], &shapes[k] };
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
    x->ctx.profile_ns = 0;
    if ((rc = vk_op_find(n->op)->run(&x->ctx, n, in, out)) < 0) {
        g_set_error(error, REEL_ERROR, rc, "node %s (%s) failed on %s: %s", n->name, n->op,
                    reel_device_info_of(x->ctx.dev)->spec, reel_strerror(rc));
        return rc;
    }
    for (int k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0) {
            x->dev_valid[n->outputs[k]] = true;
            x->host_valid[n->outputs[k]] = false;
        }
    return 0;
}

int vk_exec_to_host(vk_exec *x, int v, reel_tensor *view, GError **error)
{
    if (v < 0 || x->host_valid[v])
        return 0;
    // The dispatches gathered so far (those that made v among them) go now.
    int rc = x->ctx.batch ? reel_batch_submit(x->ctx.batch, NULL) : 0;
    if (rc == 0)
        rc = reel_mem_download(x->mem[v], 0, view->data, view->nbytes, NULL);
    if (rc < 0) {
        g_set_error(error, REEL_ERROR, rc, "download of a tensor failed: %s", reel_strerror(rc));
        return rc;
    }
    x->to_host += (int64_t)view->nbytes;
    x->host_valid[v] = true;
    return 0;
}

void vk_exec_set_profile(vk_exec *x, bool on)
{
    if (on)
        reel_batch_submit(x->ctx.batch, NULL); // what was gathered goes untimed
    x->ctx.profile = on;
}

int64_t vk_exec_node_ns(const vk_exec *x)
{
    return x->ctx.profile_ns;
}

int vk_exec_end(vk_exec *x, GError **error)
{
    int rc = x->ctx.batch ? reel_batch_submit(x->ctx.batch, NULL) : 0;
    if (rc < 0)
        g_set_error(error, REEL_ERROR, rc, "submitting to %s failed: %s", reel_device_info_of(x->ctx.dev)->spec,
                    reel_strerror(rc));
    return rc;
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
                            x->summary->str };
}

// A model's weights, kernels and ops on one Vulkan device, shared by its
// plans and sessions there (models/vulkan/store.h).
#include <string.h>

#include "models/vulkan/store.h"

struct vk_store {
    reel_device *dev;            // referenced
    const reel_ir_graph *g;      // the model's, borrowed
    int n_values;
    const vk_op **ops;           // per node
    reel_mem *dummy;
    GMutex lock;                 // weights, kernels and the counts below
    reel_mem **weights[2];       // [half] per value: uploaded, or NULL
    GHashTable *kernels;         // key -> reel_kernel *
    int64_t n_weights, weight_bytes;
};

static void kernel_destroy(gpointer k)
{
    reel_kernel *kernel = k;
    reel_kernel_destroy(&kernel);
}

vk_store *vk_store_new(reel_device *dev, const reel_ir_graph *g, GError **error)
{
    vk_store *s = g_new0(vk_store, 1);
    s->dev = reel_device_ref(dev);
    s->g = g;
    s->n_values = (int)g->values->len;
    g_mutex_init(&s->lock);
    s->ops = g_new0(const vk_op *, g->nodes->len + 1);
    for (guint i = 0; i < g->nodes->len; i++)
        s->ops[i] = vk_op_find(reel_ir_node_at(g, (int)i)->op);
    for (int h = 0; h < 2; h++)
        s->weights[h] = g_new0(reel_mem *, s->n_values + 1);
    s->kernels = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kernel_destroy);
    s->dummy = reel_mem_new(dev, reel_mem_params(.size = 16, .domain = REEL_MEM_DEVICE, .no_pool = true), error);
    static const float zero[4];
    int rc = s->dummy ? reel_mem_upload(s->dummy, 0, zero, sizeof zero, NULL) : REEL_ENOMEM_DEVICE;
    if (rc < 0) {
        if (s->dummy)
            g_set_error(error, REEL_ERROR, rc, "%s: %s", reel_device_info_of(dev)->spec, reel_strerror(rc));
        vk_store_free(&s);
    }
    return s;
}

void vk_store_free(vk_store **ps)
{
    vk_store *s = *ps;
    *ps = NULL;
    if (!s)
        return;
    for (int h = 0; h < 2; h++) {
        for (int v = 0; v < s->n_values; v++)
            reel_mem_unref(&s->weights[h][v]);
        g_free(s->weights[h]);
    }
    g_hash_table_destroy(s->kernels);
    reel_mem_unref(&s->dummy);
    g_free(s->ops);
    g_mutex_clear(&s->lock);
    reel_device_unref(&s->dev);
    g_free(s);
}

reel_device *vk_store_device(const vk_store *s)
{
    return s->dev;
}

reel_mem *vk_store_dummy(const vk_store *s)
{
    return s->dummy;
}

const vk_op *vk_store_op(const vk_store *s, int node)
{
    return s->ops[node];
}

bool vk_store_is_weight(const vk_store *s, int v, const reel_tensor *view)
{
    const reel_tensor *c = v < s->n_values ? reel_ir_value_at(s->g, v)->constant : NULL;
    return c && view->data == c->data;
}

// Constant t into new device memory of its own (float32 as float16 with
// half): it stays as long as the store.
static reel_mem *upload(vk_store *s, const reel_tensor *t, bool half, size_t *bytes, GError **error)
{
    bool f16 = half && t->dtype == REEL_DTYPE_FLOAT32;
    *bytes = vk_stored_bytes(f16, t);
    // Not pooled: freed with the store, not kept idle by the device.
    reel_mem *m = reel_mem_new(s->dev, reel_mem_params(.size = MAX(*bytes, 16), .domain = REEL_MEM_DEVICE,
                                                       .no_pool = true), error);
    if (!m)
        return NULL;
    int rc = 0;
    if (f16 && *bytes) {
        size_t count = t->nbytes / sizeof(float);
        uint16_t *halves = g_new(uint16_t, count + 1);
        vk_f32_to_f16(t->data, halves, count);
        rc = reel_mem_upload(m, 0, halves, *bytes, NULL);
        g_free(halves);
    } else if (*bytes) {
        rc = reel_mem_upload(m, 0, t->data, *bytes, NULL);
    }
    if (rc < 0) {
        g_set_error(error, REEL_ERROR, rc, "upload of a weight failed: %s", reel_strerror(rc));
        reel_mem_unref(&m);
    }
    return m;
}

reel_mem *vk_store_weight(vk_store *s, int v, bool half, GError **error)
{
    const reel_tensor *t = reel_ir_value_at(s->g, v)->constant;
    g_return_val_if_fail(t, NULL);
    g_mutex_lock(&s->lock);
    reel_mem **slot = &s->weights[half][v];
    if (!*slot) {
        size_t bytes = 0;
        if ((*slot = upload(s, t, half, &bytes, error))) {
            s->n_weights++;
            s->weight_bytes += (int64_t)bytes;
        }
    }
    reel_mem *m = *slot ? reel_mem_ref(*slot) : NULL;
    g_mutex_unlock(&s->lock);
    return m;
}

reel_kernel *vk_store_kernel(vk_store *s, const char *key, const reel_kernel_params *params, GError **error)
{
    g_mutex_lock(&s->lock);
    reel_kernel *k = g_hash_table_lookup(s->kernels, key);
    if (!k && (k = reel_kernel_create(s->dev, params, error)))
        g_hash_table_insert(s->kernels, g_strdup(key), k);
    g_mutex_unlock(&s->lock);
    return k;
}

void vk_store_get_stats(vk_store *s, vk_store_stats *out)
{
    g_mutex_lock(&s->lock);
    *out = (vk_store_stats){ s->n_weights, s->weight_bytes, (int)g_hash_table_size(s->kernels) };
    g_mutex_unlock(&s->lock);
}

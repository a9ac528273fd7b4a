// Pipelines: owning elements and the links between them.
#include "pipeline/internal.h"
#include "reel/error.h"
#include "reel/limits.h"

#include <string.h>

#define DEFAULT_QUEUE_SIZE 8

reel_pipeline *reel_pipeline_new(const reel_pipeline_params *params)
{
    reel_pipeline *p = g_new0(reel_pipeline, 1);
    if (params)
        p->params = *params;
    if (p->params.threads <= 0)
        p->params.threads = (int)g_get_num_processors();
    if (p->params.queue_size <= 0)
        p->params.queue_size = DEFAULT_QUEUE_SIZE;
    if (p->params.queue_bytes <= 0)
        p->params.queue_bytes = reel_limit_get(REEL_LIMIT_QUEUE_BYTES);
    if (p->params.stats_interval_ms == 0)
        p->params.stats_interval_ms = 1000;
    p->device = g_strdup("cpu");
    p->elements = g_ptr_array_new();
    g_ptr_array_add(p->elements, NULL);
    p->links = g_ptr_array_new();
    g_mutex_init(&p->lock);
    g_cond_init(&p->cond);
    g_cond_init(&p->state_cond);
    g_cond_init(&p->timer_cond);
    g_mutex_init(&p->shared_lock);
    g_rw_lock_init(&p->graph_lock);
    g_mutex_init(&p->change_lock);
    return p;
}

static guint n_elements(const reel_pipeline *p)
{
    return p->elements->len - 1;
}

void reel_pipeline_destroy(reel_pipeline **pp)
{
    reel_pipeline *p = *pp;
    *pp = NULL;
    if (!p)
        return;
    if (p->running) {
        reel_pipeline_abort(p);
        reel_pipeline_wait(p, NULL);
    }
    reel_waiting_free(p);
    for (guint i = 0; i < p->links->len; i++)
        reel_link_free(p->links->pdata[i]);
    for (guint i = 0; i < n_elements(p); i++) {
        reel_element *e = p->elements->pdata[i];
        reel_element_destroy(&e);
    }
    g_ptr_array_free(p->links, TRUE);
    if (p->auto_next)
        g_hash_table_destroy(p->auto_next);
    g_ptr_array_free(p->elements, TRUE);
    g_clear_error(&p->error);
    g_free(p->ready);
    g_free(p->device);
    if (p->devices)
        g_hash_table_destroy(p->devices);
    g_mutex_clear(&p->lock);
    g_cond_clear(&p->cond);
    g_cond_clear(&p->state_cond);
    g_cond_clear(&p->timer_cond);
    if (p->shared)
        g_hash_table_destroy(p->shared);
    g_mutex_clear(&p->shared_lock);
    g_rw_lock_clear(&p->graph_lock);
    g_mutex_clear(&p->change_lock);
    if (p->removed_streams)
        g_hash_table_destroy(p->removed_streams);
    g_free(p->stream_template);
    g_free(p);
}

void reel_pipeline_set_shared(reel_pipeline *p, const char *key, void *ptr)
{
    g_mutex_lock(&p->shared_lock);
    if (!p->shared)
        p->shared = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (ptr)
        g_hash_table_insert(p->shared, g_strdup(key), ptr);
    else
        g_hash_table_remove(p->shared, key);
    g_mutex_unlock(&p->shared_lock);
}

void *reel_pipeline_shared(reel_pipeline *p, const char *key)
{
    if (!p || !key)
        return NULL;
    g_mutex_lock(&p->shared_lock);
    void *ptr = p->shared ? g_hash_table_lookup(p->shared, key) : NULL;
    g_mutex_unlock(&p->shared_lock);
    return ptr;
}

void reel_device_unref_(reel_device *dev)
{
    reel_device_unref(&dev);
}

int reel_pipeline_set(reel_pipeline *p, const char *key, const char *value, GError **error)
{
    if (strcmp(key, "stream-template") == 0) { // a text, used only when a stream is added
        g_free(p->stream_template);
        p->stream_template = *value ? g_strdup(value) : NULL;
        return 0;
    }
    if (p->prepared || p->running) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "cannot set '%s': the pipeline is already prepared", key);
        return REEL_EINVAL;
    }
    if (strcmp(key, "device") == 0 && *value) {
        g_free(p->device);
        p->device = g_strdup(value);
        return 0;
    }
    if (strcmp(key, "memory-budget") == 0) {
        char *end;
        unsigned long long v = g_ascii_strtoull(value, &end, 10);
        if (*value && !*end) {
            p->memory_budget = v;
            return 0;
        }
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "invalid memory-budget '%s': expected bytes", value);
        return REEL_EINVAL;
    }
    if (strcmp(key, "queue-max-bytes") == 0) {
        char *end;
        gint64 v = g_ascii_strtoll(value, &end, 10);
        if (*value && !*end && v > 0) {
            p->params.queue_bytes = v;
            return 0;
        }
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "invalid queue-max-bytes '%s': expected bytes above 0", value);
        return REEL_EINVAL;
    }
    if (strcmp(key, "placement") == 0 && (strcmp(value, "prefer") == 0 || strcmp(value, "strict") == 0)) {
        p->strict_placement = strcmp(value, "strict") == 0;
        return 0;
    }
    if (strcmp(key, "placement") == 0)
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "invalid placement '%s': expected prefer or strict", value);
    else if (strcmp(key, "device") == 0)
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "empty device");
    else
        g_set_error(error, REEL_ERROR, REEL_EINVAL,
                    "unknown pipeline setting '%s' (known: device, placement, memory-budget, queue-max-bytes, "
                    "stream-template)", key);
    return REEL_EINVAL;
}

// Auto-named elements are called after their class and numbered per
// pipeline from 0, so the same description always gives the same names.
// Names are never removed, so each class's search resumes where its last
// one ended: one lookup per element, not one per element before it.
static char *auto_name(reel_pipeline *p, const char *klass)
{
    if (!p->auto_next)
        p->auto_next = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int n = GPOINTER_TO_INT(g_hash_table_lookup(p->auto_next, klass));; n++) {
        char *name = g_strdup_printf("%s%d", klass, n);
        if (!reel_pipeline_find(p, name)) {
            g_hash_table_insert(p->auto_next, g_strdup(klass), GINT_TO_POINTER(n + 1));
            return name;
        }
        g_free(name);
    }
}

int reel_pipeline_add(reel_pipeline *p, reel_element *e, GError **error)
{
    bool staging = reel_dynamic_staging(p);
    if (!staging && (p->running || p->prepared)) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "cannot add '%s': the pipeline is already prepared",
                    e->name);
        reel_element_destroy(&e);
        return REEL_EINVAL;
    }
    if (e->auto_name) {
        g_free(e->name);
        e->name = auto_name(p, e->klass->name);
    } else if (reel_pipeline_find(p, e->name)) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "an element named '%s' is already in the pipeline",
                    e->name);
        reel_element_destroy(&e);
        return REEL_EINVAL;
    }
    e->pipeline = p;
    if (staging) { // a branch for a running graph: it joins once negotiated and started
        e->staged = true;
        g_ptr_array_add(p->staged, e);
        return 0;
    }
    p->elements->pdata[p->elements->len - 1] = e;
    g_ptr_array_add(p->elements, NULL);
    return 0;
}

reel_element *reel_pipeline_find(reel_pipeline *p, const char *name)
{
    for (guint i = 0; i < n_elements(p); i++) {
        reel_element *e = p->elements->pdata[i];
        if (strcmp(e->name, name) == 0)
            return e;
    }
    for (guint i = 0; reel_dynamic_staging(p) && i < p->staged->len; i++) {
        reel_element *e = p->staged->pdata[i];
        if (strcmp(e->name, name) == 0)
            return e;
    }
    return NULL;
}

const char *reel_pipeline_stream_template(reel_pipeline *p)
{
    return p->stream_template;
}

void reel_pipeline_lock_graph(reel_pipeline *p)
{
    g_rw_lock_reader_lock(&p->graph_lock);
}

void reel_pipeline_unlock_graph(reel_pipeline *p)
{
    g_rw_lock_reader_unlock(&p->graph_lock);
}

reel_element *const *reel_pipeline_elements(reel_pipeline *p)
{
    return (reel_element *const *)p->elements->pdata;
}

static bool pads_full(int used, int max)
{
    return max != REEL_PADS_ANY && used >= max;
}

// Why a running element `x` cannot take a new pad (NULL when it can): it
// must pass frames on unchanged and call no format hook, so that its new
// pad's format follows from its others without asking it.
static char *cannot_grow(const reel_element *x)
{
    const reel_element_class *k = x->klass;
    if ((k->flags & REEL_CLASS_PASSTHROUGH) && !k->want && !k->configure && x->inputs->len > 0)
        return NULL;
    return g_strdup_printf("'%s' (%s) runs already, and only elements that pass frames on unchanged (batch, "
                           "unbatch, tee, funnel) take new branches while running", x->name, k->name);
}

int reel_pipeline_link(reel_pipeline *p, reel_element *src, reel_element *dst, GError **error)
{
    char *why = NULL;
    bool staging = reel_dynamic_staging(p) && (src->staged || dst->staged);
    if (src->pipeline != p || dst->pipeline != p)
        why = g_strdup("both elements must be in the pipeline");
    else if (!staging && (p->prepared || p->running))
        why = g_strdup("the pipeline is already prepared");
    else if (staging && !src->staged && p->running && (why = cannot_grow(src)))
        ;
    else if (staging && !dst->staged && p->running && (why = cannot_grow(dst)))
        ;
    else if (src->klass->max_outputs == 0)
        why = g_strdup_printf("'%s' (%s) has no outputs", src->name, src->klass->name);
    else if (dst->klass->max_inputs == 0)
        why = g_strdup_printf("'%s' (%s) has no inputs", dst->name, dst->klass->name);
    else if (pads_full((int)src->outputs->len, src->klass->max_outputs))
        why = g_strdup_printf("every output of '%s' is already linked", src->name);
    else if (pads_full((int)dst->inputs->len, dst->klass->max_inputs))
        why = g_strdup_printf("every input of '%s' is already linked", dst->name);
    if (why) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "cannot link '%s' to '%s': %s", src->name, dst->name, why);
        g_free(why);
        return REEL_EINVAL;
    }
    reel_link *l = reel_link_new(src, dst, p->params.queue_size);
    // A pad of an element outside a staged branch is joined later, by that
    // element's runner when it runs (dynamic.c).
    bool defer_src = staging && !src->staged && p->running, defer_dst = staging && !dst->staged && p->running;
    l->src_pad = defer_src ? -1 : (int)src->outputs->len;
    l->dst_pad = defer_dst ? -1 : (int)dst->inputs->len;
    if (!defer_src)
        g_ptr_array_add(src->outputs, l);
    if (!defer_dst)
        g_ptr_array_add(dst->inputs, l);
    g_ptr_array_add(staging ? p->staged_links : p->links, l);
    return 0;
}

int64_t reel_pipeline_wall_us(reel_pipeline *p)
{
    int64_t end = p->end_us ? p->end_us : g_get_monotonic_time();
    return p->start_us ? end - p->start_us : 0;
}

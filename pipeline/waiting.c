// Waiting branches: a live source whose input is not there at the start (a
// camera down) must not keep the pipeline's other streams from running. Its
// branch, the elements it alone feeds, leaves the graph before negotiation
// and waits aside; its source tries again with backoff on a thread of its
// own, and once the input opens the branch joins the run as one added while
// running does (dynamic.c).
#include "pipeline/internal.h"
#include "reel/error.h"

typedef struct reel_waiting {
    reel_element *source;
    GPtrArray *elements;
    GPtrArray *links;   // among them, and into the elements they join (dst_pad -1)
    GThread *thread;
    bool joined;        // under the graph lock
} reel_waiting;

static bool in(GHashTable *set, const reel_element *e)
{
    return g_hash_table_contains(set, e);
}

// `source` and, downstream, every element whose inputs all come from those.
static void add_fed_by(reel_pipeline *p, reel_element *source, GHashTable *set)
{
    g_hash_table_add(set, source);
    for (bool more = true; more;) {
        more = false;
        for (guint i = 0; i < p->links->len; i++) {
            reel_link *l = p->links->pdata[i];
            if (!in(set, l->src) || in(set, l->dst))
                continue;
            bool all = true;
            for (guint k = 0; k < l->dst->inputs->len && all; k++)
                all = in(set, ((reel_link *)l->dst->inputs->pdata[k])->src);
            if (all) {
                g_hash_table_add(set, l->dst);
                more = true;
            }
        }
    }
}

// Why the rest of the pipeline cannot run without the branches in `set`,
// or NULL when it can.
static char *why_not_without(reel_pipeline *p, GHashTable *set)
{
    int sources = 0;
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *x = p->elements->pdata[i];
        if (in(set, x))
            continue;
        sources += x->inputs->len == 0;
        int ins = 0;
        for (guint k = 0; k < x->inputs->len; k++)
            ins += in(set, ((reel_link *)x->inputs->pdata[k])->src);
        if (ins && ins == (int)x->inputs->len)
            return g_strdup_printf("every input of '%s' waits for one", x->name);
        if (ins && !(x->klass->flags & REEL_CLASS_PASSTHROUGH))
            return g_strdup_printf("'%s' (%s) cannot take an input while running; only batch and funnel can",
                                   x->name, x->klass->name);
    }
    return sources ? NULL : g_strdup("no other source would run");
}

bool reel_element_may_wait_to_join(const reel_element *e)
{
    reel_pipeline *p = e->pipeline;
    if (e->waiting)
        return true;
    if (p->prepared || p->running || e->staged || e->inputs->len) // only at the first start
        return false;
    GHashTable *set = g_hash_table_new(NULL, NULL);
    add_fed_by(p, (reel_element *)e, set);
    char *why = why_not_without(p, set);
    g_hash_table_destroy(set);
    g_free(why);
    return why == NULL;
}

// Sources keep the stream ids they would have had with every source there.
static void pin_stream_ids(reel_pipeline *p)
{
    int index = 0;
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->inputs->len)
            continue;
        if (e->stream_id_request < 0)
            e->stream_id_request = index;
        index++;
    }
}

static reel_waiting *take_out(reel_pipeline *p, reel_element *source)
{
    GHashTable *set = g_hash_table_new(NULL, NULL);
    add_fed_by(p, source, set);
    reel_waiting *w = g_new0(reel_waiting, 1);
    w->source = source;
    w->elements = g_ptr_array_new();
    w->links = g_ptr_array_new();
    for (guint i = 0; i < p->links->len;) {
        reel_link *l = p->links->pdata[i];
        if (!in(set, l->src)) {
            i++;
            continue;
        }
        if (!in(set, l->dst)) {
            reel_dynamic_drop_pad(l->dst->inputs, l->dst_pad, false);
            l->dst_pad = -1;
        }
        g_ptr_array_add(w->links, g_ptr_array_steal_index(p->links, i));
    }
    for (guint i = 0; i + 1 < p->elements->len;) {
        reel_element *e = p->elements->pdata[i];
        if (in(set, e))
            g_ptr_array_add(w->elements, g_ptr_array_steal_index(p->elements, i));
        else
            i++;
    }
    source->waiting = true;
    g_hash_table_destroy(set);
    return w;
}

int reel_waiting_defer(reel_pipeline *p, reel_element *const *sources, guint n, GError **error)
{
    GHashTable *set = g_hash_table_new(NULL, NULL);
    for (guint i = 0; i < n; i++)
        add_fed_by(p, sources[i], set);
    char *why = why_not_without(p, set);
    g_hash_table_destroy(set);
    if (why) {
        GString *names = g_string_new(NULL);
        for (guint i = 0; i < n; i++)
            g_string_append_printf(names, "%s'%s'", i ? ", " : "", sources[i]->name);
        g_set_error(error, REEL_ERROR, REEL_EIO, "cannot start: %s cannot be opened, and the rest cannot run "
                    "without %s: %s", names->str, n > 1 ? "them" : "it", why);
        g_string_free(names, TRUE);
        g_free(why);
        return REEL_EIO;
    }
    pin_stream_ids(p);
    g_rw_lock_writer_lock(&p->graph_lock);
    if (!p->waiting)
        p->waiting = g_ptr_array_new();
    for (guint i = 0; i < n; i++)
        g_ptr_array_add(p->waiting, take_out(p, sources[i]));
    g_rw_lock_writer_unlock(&p->graph_lock);
    return 0;
}

// The source opened: its branch joins the run, staged as an added one.
static int join(reel_pipeline *p, reel_waiting *w, GError **error)
{
    int rc = reel_dynamic_begin(p, error);
    if (rc < 0)
        return rc;
    if (!p->staged) { // no longer running
        g_mutex_unlock(&p->change_lock);
        return REEL_ESTOPPED;
    }
    g_rw_lock_writer_lock(&p->graph_lock);
    w->joined = true;
    w->source->waiting = false;
    g_rw_lock_writer_unlock(&p->graph_lock);
    for (guint i = 0; i < w->elements->len; i++)
        ((reel_element *)w->elements->pdata[i])->staged = true;
    g_ptr_array_extend_and_steal(p->staged, g_steal_pointer(&w->elements));
    g_ptr_array_extend_and_steal(p->staged_links, g_steal_pointer(&w->links));
    w->elements = g_ptr_array_new();
    w->links = g_ptr_array_new();
    return reel_dynamic_commit_staged(p, true, error);
}

static gpointer wait_main(gpointer data)
{
    reel_waiting *w = data;
    reel_element *s = w->source;
    reel_pipeline *p = s->pipeline;
    int rc;
    while ((rc = s->klass->open(s)) == REEL_AGAIN)
        ;
    GError *err = NULL;
    if (rc == 0 && join(p, w, &err) < 0 && err && err->code != REEL_ESTOPPED)
        reel_pipeline_post(p, REEL_MESSAGE_WARNING, err->code, NULL, err->message);
    g_clear_error(&err);
    return NULL;
}

void reel_waiting_start(reel_pipeline *p)
{
    for (guint i = 0; p->waiting && i < p->waiting->len; i++) {
        reel_waiting *w = p->waiting->pdata[i];
        if (w->joined)
            continue;
        atomic_store(&w->source->eos_requested, false); // waiting through a run before
        w->thread = g_thread_new(w->source->name, wait_main, w);
    }
}

void reel_waiting_end(reel_pipeline *p)
{
    if (!p->waiting)
        return;
    g_rw_lock_reader_lock(&p->graph_lock); // `joined`
    g_mutex_lock(&p->lock);
    for (guint i = 0; i < p->waiting->len; i++) {
        reel_waiting *w = p->waiting->pdata[i];
        if (!w->joined)
            atomic_store(&w->source->eos_requested, true); // its backoff and open give up
    }
    g_cond_broadcast(&p->state_cond);
    g_mutex_unlock(&p->lock);
    g_rw_lock_reader_unlock(&p->graph_lock);
    for (guint i = 0; i < p->waiting->len; i++) {
        reel_waiting *w = p->waiting->pdata[i];
        if (w->thread)
            g_thread_join(g_steal_pointer(&w->thread));
    }
}

void reel_waiting_free(reel_pipeline *p)
{
    for (guint i = 0; p->waiting && i < p->waiting->len; i++) {
        reel_waiting *w = p->waiting->pdata[i];
        for (guint k = 0; k < w->links->len; k++)
            reel_link_free(w->links->pdata[k]);
        for (guint k = 0; k < w->elements->len; k++) {
            reel_element *e = w->elements->pdata[k];
            reel_element_destroy(&e);
        }
        g_ptr_array_free(w->links, TRUE);
        g_ptr_array_free(w->elements, TRUE);
        g_free(w);
    }
    g_clear_pointer(&p->waiting, g_ptr_array_unref);
}

guint reel_waiting_sources(reel_pipeline *p, reel_element **out, guint n)
{
    guint count = 0;
    for (guint i = 0; p->waiting && i < p->waiting->len; i++) {
        reel_waiting *w = p->waiting->pdata[i];
        if (w->joined)
            continue;
        if (count < n)
            out[count] = w->source;
        count++;
    }
    return count;
}

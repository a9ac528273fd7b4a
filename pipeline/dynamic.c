// Dynamic graphs: branches added to and removed from a running pipeline,
// the others running on without a lost frame (as GStreamer's dynamic
// pipelines, without blocking pads).
//
// Adding: the branch is built aside (staged), placed, negotiated against
// the pads of the running elements it joins, opened and started; then it
// joins `elements` in one step, and each running element it links to takes
// its new pad on its own runner between two buffers (a pad op), so no
// runner ever sees its pads change under it.
//
// Removing: the branch's sources end as at EOS; the EOS of a link from the
// branch into a running element frees that element's pad instead of
// counting towards its end; a running element feeding the branch ends that
// output (EOS) on its runner. Once every element of the branch has
// finished and is idle, it leaves `elements`, its sinks finalize and it is
// freed.
#include "pipeline/internal.h"
#include "reel/error.h"

#include <string.h>

bool reel_dynamic_staging(const reel_pipeline *p)
{
    return p->staged && p->staging_thread == g_thread_self();
}

// ---- pad ops, on the running element's runner ---------------------------------

// Counts pad changes made (or given up) and wakes those waiting for them.
static void pad_ops_done(reel_pipeline *p, int n)
{
    g_mutex_lock(&p->lock);
    p->pad_ops_left -= n;
    g_cond_broadcast(&p->state_cond);
    g_mutex_unlock(&p->lock);
}

static void detach_output(reel_element *e, reel_link *l)
{
    guint pad = (guint)l->src_pad;
    reel_link_push_eos(l);
    g_ptr_array_remove_index(e->outputs, pad);
    reel_pool_release(&e->out_pool[pad]);
    memmove(&e->out_pool[pad], &e->out_pool[pad + 1], (e->outputs->len - pad) * sizeof *e->out_pool);
    for (guint o = pad; o < e->outputs->len; o++)
        ((reel_link *)e->outputs->pdata[o])->src_pad = (int)o;
    l->src_pad = -1;
}

void reel_dynamic_apply_pad_ops(reel_element *e)
{
    reel_pipeline *p = e->pipeline;
    g_rw_lock_writer_lock(&p->graph_lock);
    g_mutex_lock(&p->lock);
    GArray *ops = g_steal_pointer(&e->pad_ops);
    atomic_store(&e->has_pad_ops, false);
    g_mutex_unlock(&p->lock);
    for (guint i = 0; ops && i < ops->len; i++) {
        const reel_pad_op *op = &g_array_index(ops, reel_pad_op, i);
        reel_link *l = op->link;
        guint n;
        switch (op->kind) {
        case PAD_ATTACH_INPUT:
            l->dst_pad = (int)e->inputs->len;
            g_ptr_array_add(e->inputs, l);
            n = e->inputs->len;
            e->in_eos = g_renew(bool, e->in_eos, n);
            e->in_eos[n - 1] = false;
            break;
        case PAD_ATTACH_OUTPUT:
            l->src_pad = (int)e->outputs->len;
            g_ptr_array_add(e->outputs, l);
            n = e->outputs->len;
            e->out_pool = g_renew(reel_pool *, e->out_pool, n);
            e->out_pool[n - 1] = NULL;
            break;
        case PAD_DETACH_OUTPUT:
            detach_output(e, l);
            break;
        }
    }
    g_rw_lock_writer_unlock(&p->graph_lock);
    if (ops) {
        pad_ops_done(p, (int)ops->len);
        g_array_free(ops, TRUE);
    }
}

void reel_dynamic_release_input(reel_element *e, int pad)
{
    reel_pipeline *p = e->pipeline;
    g_rw_lock_writer_lock(&p->graph_lock);
    reel_link *l = e->inputs->pdata[pad];
    g_ptr_array_remove_index(e->inputs, (guint)pad);
    guint n = e->inputs->len;
    memmove(&e->in_eos[pad], &e->in_eos[pad + 1], (n - (guint)pad) * sizeof *e->in_eos);
    for (guint i = (guint)pad; i < n; i++)
        ((reel_link *)e->inputs->pdata[i])->dst_pad = (int)i;
    if (e->next_input >= (int)n)
        e->next_input = 0;
    l->dst_pad = -1;
    g_rw_lock_writer_unlock(&p->graph_lock);
    pad_ops_done(p, 1);
}

// Queues a pad change for running element x (under p->lock).
static void queue_pad_op_locked(reel_element *x, reel_pad_op_kind kind, reel_link *l)
{
    if (!x->pad_ops)
        x->pad_ops = g_array_new(FALSE, FALSE, sizeof(reel_pad_op));
    g_array_append_val(x->pad_ops, ((reel_pad_op){ kind, l }));
    atomic_store(&x->has_pad_ops, true);
    x->pipeline->pad_ops_left++;
}

// ---- adding -------------------------------------------------------------------

int reel_dynamic_begin(reel_pipeline *p, GError **error)
{
    g_mutex_lock(&p->change_lock);
    g_mutex_lock(&p->lock);
    bool running = p->running && !p->quit;
    g_mutex_unlock(&p->lock);
    if (running) {
        p->staged = g_ptr_array_new();
        p->staged_links = g_ptr_array_new();
        p->staging_thread = g_thread_self();
        return 0;
    }
    if (p->prepared) {
        g_mutex_unlock(&p->change_lock);
        g_set_error(error, REEL_ERROR, REEL_EINVAL,
                    "cannot add a branch: the pipeline has run and is stopped; add branches before it starts "
                    "or while it runs");
        return REEL_EINVAL;
    }
    return 0;
}

static void free_staged(reel_pipeline *p)
{
    g_clear_error(&p->staged_error);
    for (guint i = 0; i < p->staged_links->len; i++)
        reel_link_free(p->staged_links->pdata[i]);
    for (guint i = 0; i < p->staged->len; i++) {
        reel_element *e = p->staged->pdata[i];
        reel_element_destroy(&e);
    }
    g_ptr_array_free(p->staged, TRUE);
    g_ptr_array_free(p->staged_links, TRUE);
    p->staged = p->staged_links = NULL;
    p->staging_thread = NULL;
}

// Elements of `els` with every upstream one before them (links among them).
static reel_element **staged_order(GPtrArray *els, GPtrArray *links)
{
    guint n = els->len, done = 0;
    reel_element **order = g_new0(reel_element *, n ? n : 1);
    GHashTable *placed = g_hash_table_new(NULL, NULL);
    while (done < n) {
        guint before = done;
        for (guint i = 0; i < n; i++) {
            reel_element *e = els->pdata[i];
            if (g_hash_table_contains(placed, e))
                continue;
            bool ready = true;
            for (guint k = 0; k < links->len && ready; k++) {
                reel_link *l = links->pdata[k];
                ready = !(l->dst == e && l->src->staged && !g_hash_table_contains(placed, l->src));
            }
            if (ready) {
                g_hash_table_add(placed, e);
                order[done++] = e;
            }
        }
        if (done == before) // a cycle: reel_graph_validate's message is not reachable here
            break;
    }
    g_hash_table_destroy(placed);
    if (done < n)
        g_clear_pointer(&order, g_free);
    return order;
}

// The lowest stream id above every source's among the first `upto`
// elements (and those given out).
static int free_stream_id_locked(reel_pipeline *p, guint upto)
{
    int next = p->next_stream_id, index = 0;
    for (guint i = 0; i < upto; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->inputs->len || e->outputs->len == 0)
            continue;
        int id = p->running ? e->stream_id : e->stream_id_request >= 0 ? e->stream_id_request : index;
        next = MAX(next, id + 1);
        index++;
    }
    return next;
}

int reel_pipeline_free_stream_id(reel_pipeline *p)
{
    g_rw_lock_reader_lock(&p->graph_lock);
    int id = free_stream_id_locked(p, p->elements->len - 1);
    g_rw_lock_reader_unlock(&p->graph_lock);
    return id;
}

// Stream ids for the branch's sources; its outputs from a running element
// (an unbatch) take the stream of its one source.
static void number_streams(reel_pipeline *p)
{
    int source_stream = -1, sources = 0;
    for (guint i = 0; i < p->staged->len; i++) {
        reel_element *e = p->staged->pdata[i];
        if (e->inputs->len || e->outputs->len == 0)
            continue;
        if (e->stream_id_request < 0) // kept for the next run too
            e->stream_id_request = free_stream_id_locked(p, p->elements->len - 1);
        e->stream_id = e->stream_id_request;
        p->next_stream_id = MAX(p->next_stream_id, e->stream_id + 1);
        source_stream = e->stream_id;
        sources++;
    }
    for (guint i = 0; i < p->staged_links->len; i++) {
        reel_link *l = p->staged_links->pdata[i];
        l->stream = !l->src->staged && sources == 1 ? source_stream : l->src_pad;
    }
}

// Before a start: the sources of a branch added from element `first` on
// are numbered as if it joined a run, and links into it from the elements
// before take its one source's stream, so that it routes the same either way.
static void number_added_streams(reel_pipeline *p, guint first)
{
    guint n = p->elements->len - 1;
    int source_stream = -1, sources = 0;
    for (guint i = first; i < n; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->inputs->len || e->outputs->len == 0)
            continue;
        if (e->stream_id_request < 0)
            e->stream_id_request = free_stream_id_locked(p, first);
        p->next_stream_id = MAX(p->next_stream_id, e->stream_id_request + 1);
        source_stream = e->stream_id_request;
        sources++;
    }
    GHashTable *added = g_hash_table_new(NULL, NULL);
    for (guint i = first; i < n; i++)
        g_hash_table_add(added, p->elements->pdata[i]);
    for (guint i = 0; sources == 1 && i < p->links->len; i++) {
        reel_link *l = p->links->pdata[i];
        if (!g_hash_table_contains(added, l->src) && g_hash_table_contains(added, l->dst))
            l->stream = source_stream;
    }
    g_hash_table_destroy(added);
}

// Readies the staged elements for the run (as a start does) and starts them.
static int start_staged(reel_pipeline *p, reel_element **order, GError **error)
{
    guint n = p->staged->len;
    for (guint i = 0; i < p->staged_links->len; i++) {
        reel_link *l = p->staged_links->pdata[i];
        l->sent_format = l->format;
        l->max_age_ns = l->leaky != REEL_LEAKY_NO ? (int64_t)p->params.latency_ms * 1000000 : 0;
        l->max_bytes = l->max_bytes_request > 0 ? l->max_bytes_request : p->params.queue_bytes;
    }
    atomic_store(&p->setup_thread, g_thread_self()); // sets made by start hooks store at once
    int rc = 0;
    for (guint i = 0; i < n && rc == 0; i++) {
        reel_element *e = order[i];
        reel_props_run_begin(e);
        reel_sched_reset_element(e);
        e->last_capture_ns = 0;
        e->last_stream_id = 0;
        if (e->outputs->len == 0)
            e->latency = e->latency ? memset(e->latency, 0, sizeof *e->latency) : g_new0(reel_latency, 1);
        if (e->klass->start && (rc = e->klass->start(e)) < 0) {
            g_mutex_lock(&p->lock);
            if (p->staged_error) // what the element said
                g_propagate_error(error, g_steal_pointer(&p->staged_error));
            g_mutex_unlock(&p->lock);
            if (error && !*error)
                g_set_error(error, REEL_ERROR, rc, "%s: failed to start: %s", e->name, reel_strerror(rc));
            break;
        }
        e->started = true;
    }
    atomic_store(&p->setup_thread, NULL);
    if (rc < 0)
        for (guint i = 0; i < n; i++) {
            reel_element *e = order[i];
            if (e->started && e->klass->stop)
                e->klass->stop(e);
            e->started = false;
            reel_props_run_end(e);
        }
    return rc;
}

// The staged branch joins the running graph. False when the run ended
// meanwhile.
static bool join_running(reel_pipeline *p)
{
    GPtrArray *grown = g_ptr_array_new();
    g_rw_lock_writer_lock(&p->graph_lock);
    g_mutex_lock(&p->lock);
    bool ok = p->running && !p->quit && !atomic_load(&p->stopping);
    if (ok) {
        for (guint i = 0; i < p->staged->len; i++) {
            reel_element *e = p->staged->pdata[i];
            e->staged = false;
            p->elements->pdata[p->elements->len - 1] = e;
            g_ptr_array_add(p->elements, NULL);
        }
        for (guint i = 0; i < p->staged_links->len; i++) {
            reel_link *l = p->staged_links->pdata[i];
            if (l->dst_pad < 0) {
                queue_pad_op_locked(l->dst, PAD_ATTACH_INPUT, l);
                g_ptr_array_add(grown, l->dst);
            } else if (l->src_pad < 0) {
                queue_pad_op_locked(l->src, PAD_ATTACH_OUTPUT, l);
                g_ptr_array_add(grown, l->src);
            }
        }
        g_ptr_array_extend_and_steal(p->links, g_steal_pointer(&p->staged_links));
        p->staged_links = g_ptr_array_new();
        p->remaining += (int)p->staged->len;
        reel_sched_grow_ready_locked(p, (int)p->elements->len - 1);
        for (guint i = 0; i < p->staged->len; i++)
            reel_sched_launch(p->staged->pdata[i], true);
        g_ptr_array_set_size(p->staged, 0); // owned by the pipeline now
    }
    g_mutex_unlock(&p->lock);
    g_rw_lock_writer_unlock(&p->graph_lock);
    for (guint i = 0; i < grown->len; i++)
        reel_sched_notify(grown->pdata[i]);
    g_ptr_array_free(grown, TRUE);
    return ok;
}

// Waits for the running elements to make the pad changes queued; false
// when the run ends first.
static bool wait_pad_ops(reel_pipeline *p)
{
    g_mutex_lock(&p->lock);
    while (p->pad_ops_left > 0 && p->running && !p->quit)
        g_cond_wait(&p->state_cond, &p->lock);
    bool ok = p->pad_ops_left == 0;
    g_mutex_unlock(&p->lock);
    return ok;
}

// Stages, negotiates, opens and starts the branch, then joins it.
static int commit_running(reel_pipeline *p, bool placed, GError **error)
{
    guint n = p->staged->len;
    int rc = 0;
    if (!placed) {
        reel_element **els = g_memdup2(p->staged->pdata, n * sizeof *els);
        rc = reel_place_some(p, els, n, p->staged_links, error); // may stage uploads and downloads
        g_free(els);
    }
    reel_element **order = rc == 0 ? staged_order(p->staged, p->staged_links) : NULL;
    if (rc == 0 && !order) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "the branch loops back on itself");
        rc = REEL_EINVAL;
    }
    if (rc == 0)
        rc = reel_negotiate_some(p, order, p->staged->len, p->staged_links, error);
    if (rc == 0) {
        g_rw_lock_reader_lock(&p->graph_lock);
        number_streams(p);
        g_rw_lock_reader_unlock(&p->graph_lock);
        rc = start_staged(p, order, error);
    }
    g_free(order);
    if (rc == 0 && !join_running(p)) {
        g_set_error(error, REEL_ERROR, REEL_ESTOPPED, "the pipeline stopped before the branch could join it");
        for (guint i = 0; i < p->staged->len; i++) {
            reel_element *e = p->staged->pdata[i];
            if (e->klass->stop)
                e->klass->stop(e);
            reel_props_run_end(e);
        }
        rc = REEL_ESTOPPED;
    }
    if (rc == 0 && !wait_pad_ops(p)) {
        g_set_error(error, REEL_ERROR, REEL_ESTOPPED, "the pipeline stopped while the branch joined it");
        rc = REEL_ESTOPPED;
    }
    return rc;
}

// Names of the elements from `first` on, or of the staged ones.
static char **names_of(GPtrArray *els, guint first)
{
    GStrvBuilder *b = g_strv_builder_new();
    for (guint i = first; i < els->len; i++)
        if (els->pdata[i])
            g_strv_builder_add(b, ((reel_element *)els->pdata[i])->name);
    char **names = g_strv_builder_end(b);
    g_strv_builder_unref(b);
    return names;
}

static void unlink_and_free(reel_pipeline *p, GHashTable *gone);

char **reel_dynamic_commit(reel_pipeline *p, guint first_element, bool built, GError **error)
{
    char **names = NULL;
    if (p->staged) { // running
        char **staged = names_of(p->staged, 0);
        int rc = built ? commit_running(p, false, error) : REEL_EINVAL;
        if (rc == 0)
            names = g_steal_pointer(&staged);
        g_strfreev(staged);
        free_staged(p); // what did not join
    } else if (built) {
        number_added_streams(p, first_element);
        names = names_of(p->elements, first_element);
    } else { // a stopped pipeline: what the failed build added goes again
        GHashTable *gone = g_hash_table_new(NULL, NULL);
        for (guint i = first_element; i + 1 < p->elements->len; i++)
            g_hash_table_add(gone, p->elements->pdata[i]);
        unlink_and_free(p, gone);
        g_hash_table_destroy(gone);
    }
    g_mutex_unlock(&p->change_lock);
    return names;
}

int reel_dynamic_commit_staged(reel_pipeline *p, bool placed, GError **error)
{
    int rc = commit_running(p, placed, error);
    free_staged(p);
    g_mutex_unlock(&p->change_lock);
    return rc;
}

// ---- removing -----------------------------------------------------------------

static bool in(GHashTable *set, const reel_element *e)
{
    return g_hash_table_contains(set, e);
}

void reel_dynamic_drop_pad(GPtrArray *pads, int pad, bool output)
{
    if (pad < 0 || pad >= (int)pads->len)
        return;
    g_ptr_array_remove_index(pads, (guint)pad);
    for (guint i = (guint)pad; i < pads->len; i++) {
        reel_link *k = pads->pdata[i];
        *(output ? &k->src_pad : &k->dst_pad) = (int)i;
    }
}

// Frees elements and links taken out of the graph, and the arrays.
static void free_taken(GPtrArray *els, GPtrArray *links)
{
    for (guint i = 0; i < links->len; i++)
        reel_link_free(links->pdata[i]);
    for (guint i = 0; i < els->len; i++) {
        reel_element *e = els->pdata[i];
        reel_element_destroy(&e);
    }
    g_ptr_array_free(links, TRUE);
    g_ptr_array_free(els, TRUE);
}

// A stopped pipeline (or a run over): the elements of `gone` and their
// links leave it at once.
static void unlink_and_free(reel_pipeline *p, GHashTable *gone)
{
    g_rw_lock_writer_lock(&p->graph_lock);
    g_mutex_lock(&p->lock);
    GPtrArray *links = g_ptr_array_new();
    for (guint i = p->links->len; i-- > 0;) {
        reel_link *l = p->links->pdata[i];
        if (!in(gone, l->src) && !in(gone, l->dst))
            continue;
        if (!in(gone, l->src))
            reel_dynamic_drop_pad(l->src->outputs, l->src_pad, true);
        if (!in(gone, l->dst))
            reel_dynamic_drop_pad(l->dst->inputs, l->dst_pad, false);
        g_ptr_array_remove_index(p->links, i);
        g_ptr_array_add(links, l);
    }
    GPtrArray *els = g_ptr_array_new();
    for (guint i = p->elements->len - 1; i-- > 0;)
        if (in(gone, p->elements->pdata[i]))
            g_ptr_array_add(els, g_ptr_array_steal_index(p->elements, i));
    g_mutex_unlock(&p->lock);
    g_rw_lock_writer_unlock(&p->graph_lock);
    free_taken(els, links);
}

// The named elements, and the uploads and downloads the pipeline put next
// to them; or NULL with *error set for a name that is not there.
static GHashTable *branch_of(reel_pipeline *p, const char *const *names, GError **error)
{
    GHashTable *gone = g_hash_table_new(NULL, NULL);
    for (const char *const *n = names; n && *n; n++) {
        reel_element *e = reel_pipeline_find(p, *n);
        if (!e) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "cannot remove '%s': no element of that name", *n);
            g_hash_table_destroy(gone);
            return NULL;
        }
        g_hash_table_add(gone, e);
    }
    for (bool more = true; more;) {
        more = false;
        for (guint i = 0; i < p->links->len; i++) {
            reel_link *l = p->links->pdata[i];
            reel_element *other = in(gone, l->src) ? l->dst : in(gone, l->dst) ? l->src : NULL;
            if (other && other->inserted && !in(gone, other)) {
                g_hash_table_add(gone, other);
                more = true;
            }
        }
    }
    return gone;
}

// Whether the rest can run without the branch: each element it leaves
// keeps an input and an output where it had them.
static int check_leaves(reel_pipeline *p, GHashTable *gone, GError **error)
{
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *x = p->elements->pdata[i];
        if (in(gone, x))
            continue;
        int ins = 0, outs = 0;
        for (guint k = 0; k < x->inputs->len; k++)
            ins += in(gone, ((reel_link *)x->inputs->pdata[k])->src);
        for (guint k = 0; k < x->outputs->len; k++)
            outs += in(gone, ((reel_link *)x->outputs->pdata[k])->dst);
        const char *what = ins && ins == (int)x->inputs->len     ? "input"
                           : outs && outs == (int)x->outputs->len ? "output"
                                                                  : NULL;
        if (what) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL,
                        "cannot remove the branch: it holds every %s of '%s', which would be left without one",
                        what, x->name);
            return REEL_EINVAL;
        }
        if ((ins || outs) && p->running && !(x->klass->flags & REEL_CLASS_PASSTHROUGH)) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL,
                        "cannot remove the branch while running: '%s' (%s) links to it, and only elements that "
                        "pass frames on unchanged (batch, unbatch, tee, funnel) let a branch go while running",
                        x->name, x->klass->name);
            return REEL_EINVAL;
        }
    }
    return 0;
}

// Ends the branch's sources and detaches it from the elements it leaves.
// False when the run is over.
static bool end_branch(reel_pipeline *p, GHashTable *gone)
{
    GPtrArray *wake = g_ptr_array_new();
    g_mutex_lock(&p->lock);
    bool ok = p->running && !p->quit;
    for (guint i = 0; ok && i < p->links->len; i++) {
        reel_link *l = p->links->pdata[i];
        if (in(gone, l->src) && !in(gone, l->dst)) {
            l->detach = true; // its EOS frees the pad
            p->pad_ops_left++;
        } else if (in(gone, l->dst) && !in(gone, l->src)) {
            queue_pad_op_locked(l->src, PAD_DETACH_OUTPUT, l);
            g_ptr_array_add(wake, l->src);
        }
    }
    for (guint i = 0; ok && i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (!in(gone, e))
            continue;
        e->removing = true;
        if (e->inputs->len)
            continue;
        if (!p->removed_streams)
            p->removed_streams = g_hash_table_new(NULL, NULL);
        g_hash_table_add(p->removed_streams, GINT_TO_POINTER(e->stream_id));
        atomic_store(&e->eos_requested, true);
        if (e->blocking)
            g_cond_signal(&e->wake);
        if (e->klass->unblock)
            e->klass->unblock(e);
        g_ptr_array_add(wake, e);
    }
    g_mutex_unlock(&p->lock);
    for (guint i = 0; i < wake->len; i++)
        reel_sched_notify(wake->pdata[i]);
    g_ptr_array_free(wake, TRUE);
    return ok;
}

static bool all_finished_locked(reel_pipeline *p, GHashTable *gone)
{
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (in(gone, e) && !e->finished)
            return false;
    }
    return true;
}

// Waits for the branch to drain; false when the run ends first.
static bool wait_branch_done(reel_pipeline *p, GHashTable *gone)
{
    g_mutex_lock(&p->lock);
    while (p->running && !p->quit && !atomic_load(&p->stopping) &&
           (p->pad_ops_left > 0 || !all_finished_locked(p, gone)))
        g_cond_wait(&p->state_cond, &p->lock);
    bool done = p->pad_ops_left == 0 && all_finished_locked(p, gone);
    if (!done) // the run is ending: its end stops every element, the branch's too
        while (p->running)
            g_cond_wait(&p->state_cond, &p->lock);
    g_mutex_unlock(&p->lock);
    return done;
}

// Takes the drained branch out of the running graph once no worker holds
// any of its elements; returns them, and their links, to stop and free.
static void take_out(reel_pipeline *p, GHashTable *gone, GPtrArray *els, GPtrArray *links)
{
    for (;;) {
        g_rw_lock_writer_lock(&p->graph_lock);
        g_mutex_lock(&p->lock);
        bool idle = true;
        for (guint i = 0; i + 1 < p->elements->len && idle; i++) {
            reel_element *e = p->elements->pdata[i];
            idle = !in(gone, e) || atomic_load(&e->sched) == STATE_IDLE;
        }
        if (idle) {
            for (guint i = p->links->len; i-- > 0;) {
                reel_link *l = p->links->pdata[i];
                if (in(gone, l->src) || in(gone, l->dst))
                    g_ptr_array_add(links, g_ptr_array_steal_index(p->links, i));
            }
            for (guint i = p->elements->len - 1; i-- > 0;)
                if (in(gone, p->elements->pdata[i]))
                    g_ptr_array_add(els, g_ptr_array_steal_index(p->elements, i));
        }
        g_mutex_unlock(&p->lock);
        g_rw_lock_writer_unlock(&p->graph_lock);
        if (idle)
            return;
        g_usleep(200); // a worker is about to see it finished
    }
}

int reel_pipeline_remove_branch(reel_pipeline *p, const char *const *names, GError **error)
{
    g_mutex_lock(&p->change_lock);
    GHashTable *gone = branch_of(p, names, error);
    int rc = gone ? check_leaves(p, gone, error) : REEL_EINVAL;
    if (rc < 0) {
        if (gone)
            g_hash_table_destroy(gone);
        g_mutex_unlock(&p->change_lock);
        return rc;
    }
    if (!end_branch(p, gone) || !wait_branch_done(p, gone)) {
        // Not running (or no longer): the run's end has stopped everything.
        unlink_and_free(p, gone);
    } else {
        GPtrArray *els = g_ptr_array_new(), *links = g_ptr_array_new();
        take_out(p, gone, els, links);
        for (guint i = 0; i < els->len; i++) {
            reel_element *e = els->pdata[i];
            if (e->thread)
                g_thread_join(g_steal_pointer(&e->thread));
            if (e->started && e->klass->stop)
                e->klass->stop(e); // sinks finalize
            e->started = false;
            reel_props_run_end(e);
        }
        free_taken(els, links);
    }
    g_hash_table_destroy(gone);
    g_mutex_unlock(&p->change_lock);
    return 0;
}

// ---- what elements ask --------------------------------------------------------

int reel_element_output_for_stream(const reel_element *e, int stream)
{
    for (guint o = 0; o < e->outputs->len; o++)
        if (((const reel_link *)e->outputs->pdata[o])->stream == stream)
            return (int)o;
    return -1;
}

bool reel_element_stream_removed(const reel_element *e, int stream)
{
    reel_pipeline *p = e->pipeline;
    g_mutex_lock(&p->lock);
    bool removed = p->removed_streams && g_hash_table_contains(p->removed_streams, GINT_TO_POINTER(stream));
    g_mutex_unlock(&p->lock);
    return removed;
}

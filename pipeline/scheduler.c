// The scheduler: a pool of workers runs elements whose inputs are ready.
//
// An element is in the ready queue at most once and run by one worker at a
// time (see the STATE_* values). It is runnable while some input has data
// (or, for a source, always) and every output link has room; a full link
// stops its producer until the consumer drains it, which bounds memory.
// Sources that block on I/O run on a thread of their own.
#include "pipeline/internal.h"
#include "base/redact.h"
#include "reel/error.h"

#include <time.h>

// Buffers an element may take in one turn before it yields its worker.
#define TURN_BUDGET 64

int64_t reel_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// ---- ready queue (under p->lock) --------------------------------------------

static void ready_push_locked(reel_pipeline *p, reel_element *e)
{
    p->ready[(p->ready_head + p->ready_count) % p->ready_size] = e;
    p->ready_count++;
    // Waking a sleeping worker is a system call; skip it when none sleeps.
    if (p->idle_workers > 0)
        g_cond_signal(&p->cond);
}

static reel_element *ready_pop(reel_pipeline *p)
{
    g_mutex_lock(&p->lock);
    while (p->ready_count == 0 && !p->quit) {
        p->idle_workers++;
        g_cond_wait(&p->cond, &p->lock);
        p->idle_workers--;
    }
    reel_element *e = NULL;
    if (!p->quit) {
        e = p->ready[p->ready_head];
        p->ready_head = (p->ready_head + 1) % p->ready_size;
        p->ready_count--;
    }
    g_mutex_unlock(&p->lock);
    return e;
}

void reel_sched_grow_ready_locked(reel_pipeline *p, int size)
{
    if (size <= p->ready_size)
        return;
    reel_element **ready = g_new0(reel_element *, size);
    for (int i = 0; i < p->ready_count; i++)
        ready[i] = p->ready[(p->ready_head + i) % p->ready_size];
    g_free(p->ready);
    p->ready = ready;
    p->ready_head = 0;
    p->ready_size = size;
}

// reel_sched_notify() with p->lock held (`locked`) or not.
static void notify(reel_element *e, bool locked)
{
    reel_pipeline *p = e->pipeline;
    if (e->blocking) {
        if (!locked)
            g_mutex_lock(&p->lock);
        g_cond_signal(&e->wake);
        if (!locked)
            g_mutex_unlock(&p->lock);
        return;
    }
    for (;;) {
        int s = atomic_load(&e->sched);
        if (s == STATE_IDLE) {
            if (!atomic_compare_exchange_weak(&e->sched, &s, STATE_QUEUED))
                continue;
            if (!locked)
                g_mutex_lock(&p->lock);
            if (p->running && !p->quit)
                ready_push_locked(p, e);
            else
                atomic_store(&e->sched, STATE_IDLE);
            if (!locked)
                g_mutex_unlock(&p->lock);
            return;
        }
        if (s == STATE_RUNNING && !atomic_compare_exchange_weak(&e->sched, &s, STATE_DIRTY))
            continue;
        return; // queued already, or its runner will look again
    }
}

void reel_sched_notify(reel_element *e)
{
    notify(e, false);
}

void reel_sched_poke(reel_element *e)
{
    reel_pipeline *p = e->pipeline;
    g_mutex_lock(&p->lock);
    bool running = p->running && !p->quit;
    g_mutex_unlock(&p->lock);
    if (running)
        reel_sched_notify(e);
}

// ---- ending -----------------------------------------------------------------

static void wake_all_locked(reel_pipeline *p)
{
    g_cond_broadcast(&p->state_cond);
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->blocking)
            g_cond_signal(&e->wake);
        if (e->klass->unblock)
            e->klass->unblock(e);
    }
}

// Hides the credentials of any URL in an error that leaves the pipeline.
static void redact_error(GError **error)
{
    if (!error || !*error)
        return;
    char *shown = reel_redact((*error)->message, false);
    g_free((*error)->message);
    (*error)->message = shown;
}

void reel_pipeline_fail(reel_pipeline *p, const reel_element *e, int code, const char *text_in)
{
    char *text = reel_redact(text_in, false);
    g_mutex_lock(&p->lock);
    if (e && e->staged) { // a branch being added failed: it is not added, the run goes on
        if (!p->staged_error)
            p->staged_error = g_error_new(REEL_ERROR, code < 0 ? code : REEL_EINTERNAL, "%s: %s", e->name, text);
        g_mutex_unlock(&p->lock);
        g_free(text);
        return;
    }
    bool first = p->error_code == 0;
    if (first) {
        p->error_code = code < 0 ? code : REEL_EINTERNAL;
        p->error = g_error_new(REEL_ERROR, p->error_code, "%s%s%s", e ? e->name : "", e ? ": " : "", text);
        atomic_store(&p->stopping, true);
        wake_all_locked(p);
    }
    g_mutex_unlock(&p->lock);
    // Only the error that stopped the run is reported as an error; the
    // failures it causes downstream are noise.
    if (first)
        reel_pipeline_post(p, REEL_MESSAGE_ERROR, code, e, text);
    g_free(text);
}

// The element has seen EOS on every input (or, a source, produced its last
// buffer): drain it, pass EOS on, and count it done.
static void finish(reel_element *e)
{
    reel_pipeline *p = e->pipeline;
    if (e->klass->flush) {
        int64_t t0 = reel_now_ns();
        int rc = e->klass->flush(e);
        atomic_fetch_add_explicit(&e->busy_ns, reel_now_ns() - t0, memory_order_relaxed);
        if (rc < 0 && !atomic_load(&p->stopping))
            reel_pipeline_fail(p, e, rc, reel_strerror(rc));
    }
    e->finished = true;
    for (guint i = 0; i < e->outputs->len; i++)
        reel_link_push_eos(e->outputs->pdata[i]);
    g_mutex_lock(&p->lock);
    if (--p->remaining == 0 || e->removing) // a branch being removed waits for its elements
        g_cond_broadcast(&p->state_cond);
    g_mutex_unlock(&p->lock);
}

static bool outputs_have_space(reel_element *e)
{
    for (guint i = 0; i < e->outputs->len; i++)
        if (!reel_link_has_space(e->outputs->pdata[i]))
            return false;
    return true;
}

// Returns whether the process result ends this element's turn.
static bool check(reel_element *e, int rc)
{
    if (rc >= 0)
        return false;
    // Elements usually report through reel_element_error(); this catches a
    // bare error code (a no-op when one was reported already).
    reel_pipeline_fail(e->pipeline, e, rc, reel_strerror(rc));
    return true;
}

// Takes the property changes set since the last look (one load when there
// are none), on the element's runner between two buffers. Returns whether
// applying them failed, which ends the turn.
static bool take_changes(reel_element *e)
{
    if (atomic_load_explicit(&e->has_pad_ops, memory_order_acquire))
        reel_dynamic_apply_pad_ops(e);
    if (!atomic_load_explicit(&e->has_pending, memory_order_acquire))
        return false;
    return check(e, reel_props_apply(e));
}

// process(), with a span recorded when the pipeline traces.
static int traced_process(reel_element *e, int pad, reel_buffer *buf)
{
    if (!e->pipeline->params.trace)
        return e->klass->process(e, pad, buf);
    int64_t frame = buf ? buf->frame_number : -1;
    int64_t t0 = reel_now_ns();
    int rc = e->klass->process(e, pad, buf);
    reel_trace_record(e, t0, reel_now_ns(), frame);
    return rc;
}

// One turn of a source. Returns true when it may have more to do.
static bool run_source(reel_element *e)
{
    reel_pipeline *p = e->pipeline;
    for (int n = 0; n < TURN_BUDGET; n++) {
        if (atomic_load(&p->stopping))
            return false;
        if (atomic_load(&p->eos_requested) || atomic_load(&e->eos_requested)) {
            finish(e);
            return false;
        }
        if (take_changes(e) || !outputs_have_space(e))
            return false;
        int rc = traced_process(e, -1, NULL);
        if (rc == REEL_EOS) {
            finish(e);
            return false;
        }
        if (check(e, rc) || rc == REEL_AGAIN)
            return false;
    }
    return true;
}

// Takes one item from the next input with data, round robin.
static int pop_any(reel_element *e, int *pad, reel_buffer **buf)
{
    int n = (int)e->inputs->len;
    for (int k = 0; k < n; k++) {
        int i = (e->next_input + k) % n;
        if (e->in_eos[i])
            continue;
        int rc = reel_link_pop(e->inputs->pdata[i], buf);
        if (rc == REEL_AGAIN)
            continue;
        e->next_input = (i + 1) % n;
        *pad = i;
        return rc;
    }
    return REEL_AGAIN;
}

static bool run_filter(reel_element *e)
{
    reel_pipeline *p = e->pipeline;
    for (int n = 0; n < TURN_BUDGET; n++) {
        // Changes are taken before looking for room: a turn given only for
        // them (reel_sched_poke) applies them even while the outputs are full.
        if (atomic_load(&p->stopping) || take_changes(e) || !outputs_have_space(e))
            return false;
        if (atomic_exchange(&e->timeout_due, false) && check(e, e->klass->timeout(e)))
            return false;
        int pad;
        reel_buffer *buf = NULL;
        int rc = pop_any(e, &pad, &buf);
        if (rc == REEL_AGAIN)
            return false;
        if (rc == REEL_EOS && ((reel_link *)e->inputs->pdata[pad])->detach) {
            reel_dynamic_release_input(e, pad); // its producer was removed
            if (e->n_in_eos == (int)e->inputs->len) { // the others had ended already
                finish(e);
                return false;
            }
            continue;
        }
        if (rc == REEL_EOS) {
            e->in_eos[pad] = true;
            if (++e->n_in_eos == (int)e->inputs->len) {
                finish(e);
                return false;
            }
            continue;
        }
        // Again once the buffer is in hand: a change set before it arrived
        // applies to it.
        if (take_changes(e)) {
            reel_buffer_unref(&buf);
            return false;
        }
        atomic_fetch_add_explicit(&e->buffers_in, 1, memory_order_relaxed);
        reel_latency_arrive(e, buf);
        if (check(e, traced_process(e, pad, buf)))
            return false;
    }
    return true;
}

static bool run_turn(reel_element *e)
{
    if (e->finished)
        return false;
    int64_t t0 = reel_now_ns();
    bool more = e->inputs->len ? run_filter(e) : run_source(e);
    atomic_fetch_add_explicit(&e->busy_ns, reel_now_ns() - t0, memory_order_relaxed);
    return more && !e->finished;
}

static gpointer worker_main(gpointer data)
{
    reel_pipeline *p = data;
    reel_element *e;
    while ((e = ready_pop(p))) {
        atomic_store(&e->sched, STATE_RUNNING);
        bool more = run_turn(e);
        int s = STATE_RUNNING;
        if (!more && atomic_compare_exchange_strong(&e->sched, &s, STATE_IDLE))
            continue;
        // More to do, or new work arrived while it ran: back of the queue,
        // so that one busy element cannot starve the rest.
        atomic_store(&e->sched, STATE_QUEUED);
        g_mutex_lock(&p->lock);
        if (!p->quit)
            ready_push_locked(p, e);
        g_mutex_unlock(&p->lock);
    }
    return NULL;
}

// ---- deadlines ----------------------------------------------------------------

void reel_element_wake_at(reel_element *e, int64_t deadline_us)
{
    reel_pipeline *p = e->pipeline;
    atomic_store(&e->wake_us, deadline_us);
    g_mutex_lock(&p->lock);
    g_cond_signal(&p->timer_cond);
    g_mutex_unlock(&p->lock);
}

// The timer thread: marks the elements whose wake_at deadline has passed
// and schedules them (their timeout hook runs at their next turn), then
// sleeps until the next deadline or a new one.
static gpointer timer_main(gpointer data)
{
    reel_pipeline *p = data;
    g_mutex_lock(&p->lock);
    while (!p->quit) {
        int64_t now = g_get_monotonic_time(), next = G_MAXINT64;
        bool fired = false;
        // Under the lock, which a branch being removed takes to leave `elements`.
        for (guint i = 0; i + 1 < p->elements->len; i++) {
            reel_element *e = p->elements->pdata[i];
            long long at = atomic_load(&e->wake_us);
            if (at == 0)
                continue;
            if (at > now) {
                next = MIN(next, at);
            } else if (atomic_compare_exchange_strong(&e->wake_us, &at, 0)) {
                atomic_store(&e->timeout_due, true);
                notify(e, true);
                fired = true;
            }
        }
        if (fired)
            continue;
        if (next == G_MAXINT64)
            g_cond_wait(&p->timer_cond, &p->lock);
        else
            g_cond_wait_until(&p->timer_cond, &p->lock, next);
    }
    g_mutex_unlock(&p->lock);
    return NULL;
}

// A source with a thread of its own: it waits (on e->wake) for room
// downstream instead of being scheduled.
static gpointer blocking_main(gpointer data)
{
    reel_element *e = data;
    reel_pipeline *p = e->pipeline;
    for (;;) {
        g_mutex_lock(&p->lock);
        while (!reel_element_should_stop(e) && !outputs_have_space(e) && !atomic_load(&e->has_pending))
            g_cond_wait(&e->wake, &p->lock);
        g_mutex_unlock(&p->lock);
        if (atomic_load(&p->stopping) || take_changes(e))
            break;
        if (!reel_element_should_stop(e) && !outputs_have_space(e))
            continue; // woken for the changes alone
        int64_t t0 = reel_now_ns();
        bool ending = atomic_load(&p->eos_requested) || atomic_load(&e->eos_requested);
        int rc = ending ? REEL_EOS : traced_process(e, -1, NULL);
        atomic_fetch_add_explicit(&e->busy_ns, reel_now_ns() - t0, memory_order_relaxed);
        if (rc == REEL_EOS) {
            finish(e);
            break;
        }
        if (check(e, rc))
            break;
    }
    return NULL;
}

// ---- run --------------------------------------------------------------------

int reel_pipeline_prepare(reel_pipeline *p, GError **error)
{
    if (p->prepared)
        return 0;
    reel_element **order = NULL;
    int rc = reel_graph_validate(p, error);
    if (rc == 0)
        rc = reel_place(p, error);
    if (rc == 0)
        rc = reel_graph_sort(p, &order, error);
    if (rc == 0)
        rc = reel_open_elements(p, order, error);
    if (rc == 0 && p->waiting) { // branches left the graph
        g_clear_pointer(&order, g_free);
        rc = reel_graph_sort(p, &order, error);
    }
    if (rc == 0)
        rc = reel_negotiate(p, order, error);
    g_free(order);
    p->prepared = rc == 0;
    redact_error(error);
    return rc;
}

static void reset_run_state(reel_pipeline *p)
{
    g_clear_error(&p->error);
    p->error_code = 0;
    p->quit = false;
    p->ready_head = p->ready_count = 0;
    atomic_store(&p->stopping, false);
    atomic_store(&p->eos_requested, false);
    p->remaining = (int)p->elements->len - 1;
    for (guint i = 0; i < p->links->len; i++) {
        reel_link *l = p->links->pdata[i];
        reel_link_reset(l);
        atomic_store(&l->dropped, 0);
        l->sent_format = l->format;
        if (l->stream < 0) // an unbatch's output k takes stream k, also once pads before it are gone
            l->stream = l->src_pad;
    }
    for (guint i = 0; i + 1 < p->elements->len; i++)
        reel_sched_reset_element(p->elements->pdata[i]);
    reel_latency_reset(p);
}

void reel_sched_reset_element(reel_element *e)
{
    e->finished = e->started = false;
    e->n_in_eos = 0;
    e->next_input = 0;
    g_free(e->in_eos);
    e->in_eos = g_new0(bool, MAX(e->inputs->len, 1));
    reel_trace_clear(e);
    g_free(e->out_pool);
    e->out_pool = g_new0(reel_pool *, MAX(e->outputs->len, 1));
    e->blocking = (e->klass->flags & REEL_CLASS_BLOCKING) && e->inputs->len == 0;
    atomic_store(&e->live, false);
    atomic_store(&e->sched, STATE_IDLE);
    atomic_store(&e->wake_us, 0);
    atomic_store(&e->timeout_due, false);
    atomic_store(&e->buffers_in, 0);
    atomic_store(&e->buffers_out, 0);
    atomic_store(&e->busy_ns, 0);
    atomic_store(&e->eos_requested, false);
    e->xfer = (reel_xfer){ 0 };
}

// Stops each started element (sinks finalize here) and frees its pools.
static void stop_elements(reel_pipeline *p)
{
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->started && e->klass->stop)
            e->klass->stop(e);
        e->started = false;
    }
    for (guint i = 0; i < p->links->len; i++)
        reel_link_reset(p->links->pdata[i]);
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        for (guint o = 0; o < e->outputs->len; o++)
            reel_pool_release(&e->out_pool[o]);
    }
}

// The run is over (or never started): changes still queued are stored, and
// sets store at once again.
static void end_props(reel_pipeline *p)
{
    atomic_store(&p->setup_thread, NULL);
    for (guint i = 0; i + 1 < p->elements->len; i++)
        reel_props_run_end(p->elements->pdata[i]);
}

int reel_pipeline_start(reel_pipeline *p, GError **error)
{
    if (p->running) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "the pipeline is already running");
        return REEL_EINVAL;
    }
    // From here on, property sets from other threads wait for each
    // element's next buffer; this thread's (manifests applied in `start`)
    // store at once.
    guint n = p->elements->len - 1;
    atomic_store(&p->setup_thread, g_thread_self());
    for (guint i = 0; i < n; i++)
        reel_props_run_begin(p->elements->pdata[i]);
    int rc = reel_pipeline_prepare(p, error);
    if (rc < 0) {
        end_props(p);
        return rc;
    }
    reset_run_state(p);
    n = p->elements->len - 1; // prepare may have inserted uploads and downloads
    for (guint i = 0; i < n; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->klass->start && (rc = e->klass->start(e)) < 0) {
            if (p->error)
                g_propagate_error(error, g_steal_pointer(&p->error));
            else
                g_set_error(error, REEL_ERROR, rc, "%s: failed to start: %s", e->name, reel_strerror(rc));
            redact_error(error);
            stop_elements(p);
            end_props(p);
            return rc;
        }
        e->started = true;
    }
    atomic_store(&p->setup_thread, NULL);
    // The latency bound applies where the elements said to drop (started
    // elements have configured their inputs).
    for (guint i = 0; i < p->links->len; i++) {
        reel_link *l = p->links->pdata[i];
        l->max_age_ns = l->leaky != REEL_LEAKY_NO ? (int64_t)p->params.latency_ms * 1000000 : 0;
        l->max_bytes = l->max_bytes_request > 0 ? l->max_bytes_request : p->params.queue_bytes;
    }

    p->start_us = g_get_monotonic_time();
    p->end_us = 0;
    g_free(p->ready);
    p->ready = g_new0(reel_element *, n);
    p->ready_size = (int)n;
    // Under the lock: reel_sched_poke() reads it from any thread.
    g_mutex_lock(&p->lock);
    p->running = true;
    g_mutex_unlock(&p->lock);
    p->n_workers = p->params.threads;
    p->workers = g_new0(GThread *, p->n_workers);
    for (int i = 0; i < p->n_workers; i++)
        p->workers[i] = g_thread_new("reel-worker", worker_main, p);
    for (guint i = 0; i < n; i++)
        reel_sched_launch(p->elements->pdata[i], false);
    reel_waiting_start(p);
    return 0;
}

void reel_sched_launch(reel_element *e, bool locked)
{
    reel_pipeline *p = e->pipeline;
    if (e->klass->timeout && !p->timer)
        p->timer = g_thread_new("reel-timer", timer_main, p);
    if (e->blocking)
        e->thread = g_thread_new(e->name, blocking_main, e);
    else if (e->inputs->len == 0)
        notify(e, locked);
}

// Progress: frames that reached the sinks (the most any sink received) and,
// when the sources know their length, the total and an ETA.
static void post_stats(reel_pipeline *p)
{
    int64_t done = 0, total = -1, dropped = 0, p95_ns = 0;
    g_rw_lock_reader_lock(&p->graph_lock);
    for (guint i = 0; i < p->links->len; i++)
        dropped += atomic_load(&((reel_link *)p->links->pdata[i])->dropped);
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->latency && e->outputs->len == 0)
            p95_ns = MAX(p95_ns, reel_latency_quantile(e->latency, 0.95));
        if (e->outputs->len == 0)
            done = MAX(done, atomic_load(&e->buffers_in));
        if (e->inputs->len == 0 && e->expected_frames >= 0)
            total = MAX(total, e->expected_frames);
    }
    g_rw_lock_reader_unlock(&p->graph_lock);
    double secs = (g_get_monotonic_time() - p->start_us) / 1e6;
    double rate = secs > 0 ? done / secs : 0.0;
    char *text;
    if (total > 0 && done > 0 && done <= total)
        text = g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT " frames, %.1f fps, ETA %.0f s", done, total,
                               rate, (total - done) / rate);
    else
        text = g_strdup_printf("%" G_GINT64_FORMAT " frames, %.1f fps", done, rate);
    // Latency (the worst sink's p95) and drops, once there are any.
    if (p95_ns > 0 || dropped > 0) {
        char *more = g_strdup_printf("%s, latency p95 %.1f ms, %" G_GINT64_FORMAT " dropped", text, p95_ns / 1e6,
                                     dropped);
        g_free(text);
        text = more;
    }
    reel_pipeline_post(p, REEL_MESSAGE_STATS, 0, NULL, text);
    g_free(text);
}

int reel_pipeline_wait(reel_pipeline *p, GError **error)
{
    if (!p->running) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "the pipeline is not running");
        return REEL_EINVAL;
    }
    int64_t interval = p->params.stats_interval_ms * (int64_t)1000;
    int64_t next_stats = g_get_monotonic_time() + interval;
    g_mutex_lock(&p->lock);
    while (p->remaining > 0 && !atomic_load(&p->stopping)) {
        if (interval < 0) {
            g_cond_wait(&p->state_cond, &p->lock);
        } else if (!g_cond_wait_until(&p->state_cond, &p->lock, next_stats)) {
            g_mutex_unlock(&p->lock);
            post_stats(p);
            g_mutex_lock(&p->lock);
            next_stats += interval;
        }
    }
    p->quit = true;
    g_cond_broadcast(&p->cond);
    g_cond_signal(&p->timer_cond);
    wake_all_locked(p);
    g_mutex_unlock(&p->lock);

    for (int i = 0; i < p->n_workers; i++)
        g_thread_join(p->workers[i]);
    g_clear_pointer(&p->workers, g_free);
    reel_waiting_end(p);
    if (p->timer)
        g_thread_join(g_steal_pointer(&p->timer));
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->thread)
            g_thread_join(g_steal_pointer(&e->thread));
    }
    stop_elements(p);
    end_props(p);
    p->end_us = g_get_monotonic_time();
    g_mutex_lock(&p->lock);
    p->running = false;
    g_cond_broadcast(&p->state_cond); // a branch being removed waits for this
    g_mutex_unlock(&p->lock);

    int rc = p->error_code;
    if (rc < 0) {
        if (error)
            *error = g_error_copy(p->error);
        return rc;
    }
    reel_pipeline_post(p, REEL_MESSAGE_EOS, 0, NULL, "end of stream");
    return 0;
}

int reel_pipeline_run(reel_pipeline *p, GError **error)
{
    int rc = reel_pipeline_start(p, error);
    return rc < 0 ? rc : reel_pipeline_wait(p, error);
}

void reel_pipeline_send_eos(reel_pipeline *p)
{
    g_mutex_lock(&p->lock);
    bool running = p->running;
    atomic_store(&p->eos_requested, true);
    wake_all_locked(p);
    g_mutex_unlock(&p->lock);
    if (!running)
        return;
    g_rw_lock_reader_lock(&p->graph_lock);
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->inputs->len == 0)
            reel_sched_notify(e);
    }
    g_rw_lock_reader_unlock(&p->graph_lock);
}

void reel_pipeline_abort(reel_pipeline *p)
{
    reel_pipeline_fail(p, NULL, REEL_ESTOPPED, "stopped");
}

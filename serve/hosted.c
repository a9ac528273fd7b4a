// A hosted pipeline's runner (serve/hosted.h).
#include "serve/hosted.h"

#include "base/redact.h"
#include "reel/reel.h"

// Backoff between restarts: 1 s, doubling up to a minute.
enum { FIRST_BACKOFF_MS = 1000, MAX_BACKOFF_MS = 60000 };

struct serve_hosted {
    char *id, *text, *origin;
    GThread *thread;
    GMutex lock;
    GCond wake;           // a stop ends the backoff wait
    bool stop_asked;
    reel_pipeline *pipeline; // the running one, or NULL
    serve_state state;
    int64_t started_us;   // of the current run
    int64_t restarts;
    char *error;
};

const char *serve_state_name(serve_state s)
{
    static const char *const names[] = { "starting", "running", "restarting", "finished", "failed", "stopped" };
    return s >= 0 && s < (int)G_N_ELEMENTS(names) ? names[s] : "unknown";
}

static void set_error(serve_hosted *h, const char *message)
{
    g_free(h->error);
    h->error = reel_redact(message, false);
}

// One run: parse, start, wait. Returns 0 when it reached its end (or was
// stopped), 1 when it failed and may be restarted, -1 when it cannot run.
static int run_once(serve_hosted *h)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(h->text, h->origin, reel_pipeline_params(.stats_interval_ms = -1), &err);
    g_mutex_lock(&h->lock);
    if (!p) {
        set_error(h, err->message);
        g_mutex_unlock(&h->lock);
        g_error_free(err);
        return -1;
    }
    h->pipeline = p;
    h->state = SERVE_STARTING;
    bool stop = h->stop_asked;
    g_mutex_unlock(&h->lock);
    int rc = stop ? 0 : reel_pipeline_start(p, &err);
    if (rc == 0 && !stop) {
        g_mutex_lock(&h->lock);
        h->state = SERVE_RUNNING;
        h->started_us = g_get_monotonic_time();
        // A stop that came while starting: the pipeline is now there to end.
        if (h->stop_asked)
            reel_pipeline_send_eos(p);
        g_mutex_unlock(&h->lock);
        rc = reel_pipeline_wait(p, &err);
    }
    g_mutex_lock(&h->lock);
    h->pipeline = NULL;
    // Failing to start for the description's sake (a bad property, formats
    // that do not meet, something unsupported) fails the same way every
    // time; an input that cannot be opened (REEL_EIO) may be there later.
    bool hopeless = rc < 0 && h->state == SERVE_STARTING
                    && (err->code == REEL_EINVAL || err->code == REEL_EFORMAT || err->code == REEL_EUNSUPPORTED);
    h->started_us = 0;
    if (rc < 0)
        set_error(h, err->message);
    g_mutex_unlock(&h->lock);
    g_clear_error(&err);
    reel_pipeline_destroy(&p);
    return hopeless ? -1 : rc < 0 ? 1 : 0;
}

static gpointer runner(gpointer data)
{
    serve_hosted *h = data;
    int64_t backoff_ms = FIRST_BACKOFF_MS;
    for (;;) {
        int outcome = run_once(h);
        g_mutex_lock(&h->lock);
        if (h->stop_asked) {
            h->state = SERVE_STOPPED;
        } else if (outcome < 0) {
            h->state = SERVE_FAILED;
        } else if (outcome == 0) {
            h->state = SERVE_FINISHED;
        } else {
            // Failed while running: again after the backoff, unless stopped.
            h->state = SERVE_RESTARTING;
            int64_t until = g_get_monotonic_time() + backoff_ms * 1000;
            while (!h->stop_asked && g_cond_wait_until(&h->wake, &h->lock, until))
                ;
            backoff_ms = MIN(backoff_ms * 2, MAX_BACKOFF_MS);
            if (!h->stop_asked) {
                h->restarts++;
                g_mutex_unlock(&h->lock);
                continue;
            }
            h->state = SERVE_STOPPED;
        }
        g_mutex_unlock(&h->lock);
        return NULL;
    }
}

serve_hosted *serve_hosted_start(const char *id, const char *text, const char *origin)
{
    serve_hosted *h = g_new0(serve_hosted, 1);
    h->id = g_strdup(id);
    h->text = g_strdup(text);
    h->origin = g_strdup(origin);
    g_mutex_init(&h->lock);
    g_cond_init(&h->wake);
    h->state = SERVE_STARTING;
    char *name = g_strdup_printf("reel-serve-%s", id);
    h->thread = g_thread_new(name, runner, h);
    g_free(name);
    return h;
}

void serve_hosted_ask_stop(serve_hosted *h)
{
    g_mutex_lock(&h->lock);
    if (!h->stop_asked && h->pipeline && h->state == SERVE_RUNNING)
        reel_pipeline_send_eos(h->pipeline);
    h->stop_asked = true;
    g_cond_broadcast(&h->wake);
    g_mutex_unlock(&h->lock);
}

void serve_hosted_stop(serve_hosted **hp)
{
    serve_hosted *h = *hp;
    if (!h)
        return;
    serve_hosted_ask_stop(h);
    g_thread_join(h->thread);
    g_mutex_clear(&h->lock);
    g_cond_clear(&h->wake);
    g_free(h->id);
    g_free(h->text);
    g_free(h->origin);
    g_free(h->error);
    g_free(h);
    *hp = NULL;
}

const char *serve_hosted_id(const serve_hosted *h)
{
    return h->id;
}

const char *serve_hosted_text(const serve_hosted *h)
{
    return h->text;
}

void serve_hosted_status(serve_hosted *h, serve_status *out)
{
    g_mutex_lock(&h->lock);
    out->state = h->state;
    out->uptime_s = h->started_us ? (g_get_monotonic_time() - h->started_us) / 1e6 : 0;
    out->restarts = h->restarts;
    out->error = g_strdup(h->error);
    g_mutex_unlock(&h->lock);
}

void serve_hosted_with_pipeline(serve_hosted *h, void (*fn)(reel_pipeline *p, void *data), void *data)
{
    g_mutex_lock(&h->lock);
    fn(h->state == SERVE_RUNNING ? h->pipeline : NULL, data);
    g_mutex_unlock(&h->lock);
}

// A hosted pipeline's runner (serve/hosted.h).
#include "serve/hosted.h"

#include <string.h>

#include "base/json.h"
#include "base/redact.h"
#include "reel/reel.h"

G_DEFINE_QUARK(reel-serve-stream-error-quark, serve_stream_error)

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
    int holds;            // callers using h outside the service's lock
    int users;            // callers using `pipeline` outside `lock`: it is not destroyed under them
    GCond idle;           // holds or users went down
    GMutex change_lock;   // one stream added or removed at a time
    GPtrArray *streams;   // serve_stream *, in the order added
};

// A camera added through the API: what its branch was made from, and the
// names of its elements in the current run.
typedef struct serve_stream {
    int id;
    char **values; // NAME, VALUE, ..., NULL, with "stream" last
    char **names;
} serve_stream;

static void stream_free(gpointer data)
{
    serve_stream *st = data;
    g_strfreev(st->values);
    g_strfreev(st->names);
    g_free(st);
}

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

// The streams added through the API join a new run before it starts.
static int readd_streams(serve_hosted *h, reel_pipeline *p, GError **error)
{
    g_mutex_lock(&h->change_lock);
    int rc = 0;
    for (guint i = 0; i < h->streams->len && rc == 0; i++) {
        serve_stream *st = h->streams->pdata[i];
        const char *tmpl = reel_pipeline_stream_template(p);
        char **names = tmpl ? reel_pipeline_add_branch(p, tmpl, (const char *const *)st->values, error) : NULL;
        if (!tmpl)
            g_set_error(error, SERVE_STREAM_ERROR, SERVE_STREAM_NO_TEMPLATE,
                        "stream %d: the pipeline has no stream-template any more", st->id);
        if (!names) {
            g_prefix_error(error, "stream %d: ", st->id);
            rc = REEL_EINVAL;
            break;
        }
        g_mutex_lock(&h->lock);
        g_strfreev(st->names);
        st->names = names;
        g_mutex_unlock(&h->lock);
    }
    g_mutex_unlock(&h->change_lock);
    return rc;
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
    int rc = stop ? 0 : readd_streams(h, p, &err);
    if (rc == 0 && !stop)
        rc = reel_pipeline_start(p, &err);
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
    while (h->users > 0) // a stream change still holds the pipeline
        g_cond_wait(&h->idle, &h->lock);
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
    g_cond_init(&h->idle);
    g_mutex_init(&h->change_lock);
    h->streams = g_ptr_array_new_with_free_func(stream_free);
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
    g_mutex_lock(&h->lock);
    while (h->holds > 0)
        g_cond_wait(&h->idle, &h->lock);
    g_mutex_unlock(&h->lock);
    g_thread_join(h->thread);
    g_ptr_array_free(h->streams, TRUE);
    g_mutex_clear(&h->change_lock);
    g_cond_clear(&h->idle);
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

void serve_hosted_hold(serve_hosted *h)
{
    g_mutex_lock(&h->lock);
    h->holds++;
    g_mutex_unlock(&h->lock);
}

void serve_hosted_release(serve_hosted *h)
{
    g_mutex_lock(&h->lock);
    h->holds--;
    g_cond_broadcast(&h->idle);
    g_mutex_unlock(&h->lock);
}

// The running pipeline, kept from being destroyed until put back; NULL
// when none runs.
static reel_pipeline *take_pipeline(serve_hosted *h)
{
    g_mutex_lock(&h->lock);
    reel_pipeline *p = h->state == SERVE_RUNNING && !h->stop_asked ? h->pipeline : NULL;
    if (p)
        h->users++;
    g_mutex_unlock(&h->lock);
    return p;
}

static void put_pipeline(serve_hosted *h)
{
    g_mutex_lock(&h->lock);
    h->users--;
    g_cond_broadcast(&h->idle);
    g_mutex_unlock(&h->lock);
}

int serve_hosted_add_stream(serve_hosted *h, const char *const *values, GError **error)
{
    g_mutex_lock(&h->change_lock);
    reel_pipeline *p = take_pipeline(h);
    int id = -1;
    if (!p) {
        g_set_error(error, SERVE_STREAM_ERROR, SERVE_STREAM_NOT_RUNNING, "the pipeline is not running");
    } else if (!reel_pipeline_stream_template(p)) {
        g_set_error(error, SERVE_STREAM_ERROR, SERVE_STREAM_NO_TEMPLATE,
                    "the pipeline has no stream-template setting, the branch a stream becomes "
                    "(stream-template=\"source location={url} stream-id={stream} ! b.  u. ! ...\")");
    } else {
        int sid = reel_pipeline_free_stream_id(p);
        GStrvBuilder *b = g_strv_builder_new();
        g_strv_builder_addv(b, (const char **)values);
        char number[16];
        g_snprintf(number, sizeof number, "%d", sid);
        g_strv_builder_add_many(b, "stream", number, NULL);
        char **all = g_strv_builder_end(b);
        g_strv_builder_unref(b);
        char **names = reel_pipeline_add_branch(p, reel_pipeline_stream_template(p), (const char *const *)all, error);
        if (names) {
            serve_stream *st = g_new0(serve_stream, 1);
            *st = (serve_stream){ .id = sid, .values = all, .names = names };
            g_mutex_lock(&h->lock);
            g_ptr_array_add(h->streams, st);
            g_mutex_unlock(&h->lock);
            id = sid;
        } else {
            g_strfreev(all);
        }
    }
    if (p)
        put_pipeline(h);
    g_mutex_unlock(&h->change_lock);
    return id;
}

static serve_stream *find_stream_locked(serve_hosted *h, int id)
{
    for (guint i = 0; i < h->streams->len; i++)
        if (((serve_stream *)h->streams->pdata[i])->id == id)
            return h->streams->pdata[i];
    return NULL;
}

bool serve_hosted_remove_stream(serve_hosted *h, int id, GError **error)
{
    g_mutex_lock(&h->change_lock);
    g_mutex_lock(&h->lock);
    serve_stream *st = find_stream_locked(h, id);
    g_mutex_unlock(&h->lock);
    bool ok = st != NULL;
    if (!st)
        g_set_error(error, SERVE_STREAM_ERROR, SERVE_STREAM_UNKNOWN, "no stream %d in the pipeline", id);
    reel_pipeline *p = st ? take_pipeline(h) : NULL;
    if (p) { // else not running: it is only not added again
        ok = reel_pipeline_remove_branch(p, (const char *const *)st->names, error) == 0;
        put_pipeline(h);
    }
    if (ok) {
        g_mutex_lock(&h->lock);
        g_ptr_array_remove(h->streams, st);
        g_mutex_unlock(&h->lock);
    }
    g_mutex_unlock(&h->change_lock);
    return ok;
}

void serve_hosted_streams_json(serve_hosted *h, GString *out)
{
    g_mutex_lock(&h->lock);
    g_string_append_c(out, '[');
    for (guint i = 0; i < h->streams->len; i++) {
        const serve_stream *st = h->streams->pdata[i];
        g_string_append_printf(out, "%s{\"id\": \"%d\", \"values\": {", i ? ", " : "", st->id);
        for (char **v = st->values; v[0] && v[1]; v += 2) {
            if (strcmp(v[0], "stream") == 0)
                continue;
            char *shown = reel_redact(v[1], false);
            g_string_append(out, v == st->values ? "" : ", ");
            reel_json_string(out, v[0]);
            g_string_append(out, ": ");
            reel_json_string(out, shown);
            g_free(shown);
        }
        g_string_append(out, "}, \"elements\": [");
        for (char **n = st->names; n && *n; n++) {
            g_string_append(out, n == st->names ? "" : ", ");
            reel_json_string(out, *n);
        }
        g_string_append(out, "]}");
    }
    g_string_append_c(out, ']');
    g_mutex_unlock(&h->lock);
}

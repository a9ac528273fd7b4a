// appsink: a sink the application reads (reel/app.h), by pulling from a
// bounded queue or through a callback on the pipeline's thread.
#include "reel/app.h"
#include "reel/reel.h"

typedef struct appsink_priv {
    char *caps;
    int max_buffers;
    bool drop;

    GMutex lock;       // guards everything below
    GCond cond;        // queue changed, end of stream, or stop
    GQueue queue;      // reel_buffer *, at most max_buffers
    bool running;      // between start and stop
    bool eos;          // end of stream arrived (flush)
    reel_appsink_callback fn;
    void *user;
} appsink_priv;

static const reel_prop props[] = {
    { "caps", REEL_PROP_STRING, offsetof(appsink_priv, caps), "any",
      .help = "formats accepted, e.g. video/raw,format=rgb24" },
    { "max-buffers", REEL_PROP_INT, offsetof(appsink_priv, max_buffers), "8", 1, 1 << 16,
      .help = "buffers queued for the application before the pipeline waits (or, with drop, drops)" },
    { "drop", REEL_PROP_BOOL, offsetof(appsink_priv, drop), "false",
      .help = "when the queue is full, drop the oldest buffer instead of waiting" },
    { NULL },
};

extern const reel_element_class reel_appsink_class;

static int init(reel_element *e)
{
    appsink_priv *s = reel_element_priv(e);
    g_mutex_init(&s->lock);
    g_cond_init(&s->cond);
    g_queue_init(&s->queue);
    return 0;
}

static void unref_buffer(gpointer b)
{
    reel_buffer_unref((reel_buffer **)&b);
}

static void uninit(reel_element *e)
{
    appsink_priv *s = reel_element_priv(e);
    g_queue_clear_full(&s->queue, unref_buffer);
    g_mutex_clear(&s->lock);
    g_cond_clear(&s->cond);
}

static int want(reel_element *e, int pad, reel_caps *want)
{
    (void)pad;
    appsink_priv *s = reel_element_priv(e);
    reel_caps caps;
    GError *err = NULL;
    if (!reel_caps_parse(s->caps, &caps, NULL, &err)) {
        int rc = reel_element_error(e, REEL_EINVAL, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    if (!reel_caps_intersect(want, &caps, want))
        return reel_element_error(e, REEL_EFORMAT, "caps '%s' are not something it can take", s->caps);
    return 0;
}

static int start(reel_element *e)
{
    appsink_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    g_queue_clear_full(&s->queue, unref_buffer);
    s->running = true;
    s->eos = false;
    g_mutex_unlock(&s->lock);
    return 0;
}

// Buffers still queued stay for the application to pull: a normal end
// comes while the last max-buffers wait for it.
static void stop(reel_element *e)
{
    appsink_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    s->running = false;
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
}

static int flush(reel_element *e)
{
    appsink_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    s->eos = true;
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
    return 0;
}

static void unblock(reel_element *e)
{
    appsink_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
}

// Makes room for one more buffer: drops the oldest, or waits for the
// application to pull (the pipeline's backpressure). False when stopping.
static bool make_room_locked(reel_element *e, appsink_priv *s)
{
    while ((int)s->queue.length >= s->max_buffers) {
        if (s->drop) {
            reel_buffer *old = g_queue_pop_head(&s->queue);
            reel_buffer_unref(&old);
        } else if (reel_element_is_aborting(e)) {
            return false; // an end of stream still delivers what is on its way
        } else {
            g_cond_wait(&s->cond, &s->lock);
        }
    }
    return true;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    appsink_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    reel_appsink_callback fn = s->fn;
    void *user = s->user;
    if (fn) {
        g_mutex_unlock(&s->lock);
        fn(buf, user);
        return 0;
    }
    if (make_room_locked(e, s)) {
        g_queue_push_tail(&s->queue, buf);
        buf = NULL;
        g_cond_broadcast(&s->cond);
    }
    g_mutex_unlock(&s->lock);
    reel_buffer_unref(&buf); // the pipeline stopped while it waited
    return 0;
}

static appsink_priv *appsink_of(reel_element *e)
{
    return e && reel_element_get_class(e) == &reel_appsink_class ? reel_element_priv(e) : NULL;
}

reel_buffer *reel_appsink_pull(reel_element *appsink, int64_t timeout_us)
{
    appsink_priv *s = appsink_of(appsink);
    g_return_val_if_fail(s, NULL);
    int64_t deadline = timeout_us < 0 ? G_MAXINT64 : g_get_monotonic_time() + timeout_us;
    g_mutex_lock(&s->lock);
    // Woken by a buffer, the end of stream (flush), an abort (unblock) or the
    // end of the run (stop).
    while (g_queue_is_empty(&s->queue) && s->running && !s->eos && !reel_element_is_aborting(appsink)) {
        if (timeout_us < 0)
            g_cond_wait(&s->cond, &s->lock);
        else if (!g_cond_wait_until(&s->cond, &s->lock, deadline))
            break; // timed out
    }
    reel_buffer *b = g_queue_pop_head(&s->queue);
    if (b)
        g_cond_broadcast(&s->cond); // room for a waiting pipeline
    g_mutex_unlock(&s->lock);
    return b;
}

bool reel_appsink_is_eos(reel_element *appsink)
{
    appsink_priv *s = appsink_of(appsink);
    g_return_val_if_fail(s, false);
    g_mutex_lock(&s->lock);
    bool eos = s->eos && g_queue_is_empty(&s->queue);
    g_mutex_unlock(&s->lock);
    return eos;
}

void reel_appsink_set_callback(reel_element *appsink, reel_appsink_callback fn, void *user)
{
    appsink_priv *s = appsink_of(appsink);
    g_return_if_fail(s);
    g_mutex_lock(&s->lock);
    s->fn = fn;
    s->user = user;
    g_mutex_unlock(&s->lock);
}

const reel_element_class reel_appsink_class = {
    .name = "appsink",
    .description = "Hands buffers to the application: reel_appsink_pull() or a callback",
    .priv_size = sizeof(appsink_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 0,
    .input_caps = "any",
    .init = init,
    .uninit = uninit,
    .want = want,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .unblock = unblock,
};

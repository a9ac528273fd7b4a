// appsrc: a source fed by the application (reel/app.h). The application's
// threads queue buffers; the appsrc's own thread (a blocking source) takes
// them off the queue and sends them downstream.
#include "reel/app.h"
#include "reel/reel.h"

typedef struct appsrc_priv {
    char *caps;
    int max_buffers;
    bool block;

    GMutex lock;       // guards everything below
    GCond cond;        // queue changed, or end
    GQueue queue;      // reel_buffer *, at most max_buffers
    bool running;      // between start and stop
    bool ended;        // reel_appsrc_end() was called
    reel_caps format;  // negotiated: what pushed buffers must be
    reel_pool *pool;   // for reel_appsrc_alloc(), made on first use
    int64_t frames;    // buffers pushed this run
    int64_t start_us;
} appsrc_priv;

static const reel_prop props[] = {
    { "caps", REEL_PROP_STRING, offsetof(appsrc_priv, caps), "any",
      .help = "format of the buffers pushed, e.g. video/raw,format=rgb24,width=640,height=480,framerate=30/1" },
    { "max-buffers", REEL_PROP_INT, offsetof(appsrc_priv, max_buffers), "8", 1, 1 << 16,
      .help = "buffers queued before a push waits (or, with block=false, fails)" },
    { "block", REEL_PROP_BOOL, offsetof(appsrc_priv, block), "true",
      .help = "when the queue is full, wait; false: the push fails with REEL_AGAIN" },
    { NULL },
};

extern const reel_element_class reel_appsrc_class;

static int init(reel_element *e)
{
    appsrc_priv *s = reel_element_priv(e);
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
    appsrc_priv *s = reel_element_priv(e);
    g_queue_clear_full(&s->queue, unref_buffer);
    reel_pool_release(&s->pool);
    g_mutex_clear(&s->lock);
    g_cond_clear(&s->cond);
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    appsrc_priv *s = reel_element_priv(e);
    reel_caps caps;
    GError *err = NULL;
    if (!reel_caps_parse(s->caps, &caps, NULL, &err)) {
        int rc = reel_element_error(e, REEL_EINVAL, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    if (!reel_caps_intersect(out, &caps, out))
        return reel_element_error(e, REEL_EFORMAT, "caps '%s' are not something it can produce", s->caps);
    // An application's frames come when they come: variable rate by default.
    if (out->media == REEL_MEDIA_VIDEO_RAW && !out->framerate.den)
        out->framerate = (reel_fraction){ 0, 1 };
    return 0;
}

static int start(reel_element *e)
{
    appsrc_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    g_queue_clear_full(&s->queue, unref_buffer);
    s->format = *reel_element_output_format(e, 0);
    s->running = true;
    s->ended = false;
    s->frames = 0;
    s->start_us = g_get_monotonic_time();
    g_mutex_unlock(&s->lock);
    return 0;
}

// After the run: wakes pushers still waiting and drops what they queued.
static void stop(reel_element *e)
{
    appsrc_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    s->running = false;
    g_queue_clear_full(&s->queue, unref_buffer);
    reel_pool_release(&s->pool);
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
}

// Waits on the queue's condition; false once the pipeline is asked to end
// (its unblock wakes the wait).
static bool wait_for_change(reel_element *e, appsrc_priv *s)
{
    if (reel_element_should_stop(e))
        return false;
    g_cond_wait(&s->cond, &s->lock);
    return !reel_element_should_stop(e);
}

static void unblock(reel_element *e)
{
    appsrc_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
}

// The appsrc's thread: the next queued buffer, once there is one.
static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    (void)in;
    appsrc_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    while (g_queue_is_empty(&s->queue) && !s->ended && wait_for_change(e, s))
        ;
    reel_buffer *b = g_queue_pop_head(&s->queue);
    g_cond_broadcast(&s->cond); // room for a waiting push
    g_mutex_unlock(&s->lock);
    return b ? reel_element_push(e, 0, b) : REEL_EOS;
}

static appsrc_priv *appsrc_of(reel_element *e)
{
    return e && reel_element_get_class(e) == &reel_appsrc_class ? reel_element_priv(e) : NULL;
}

reel_buffer *reel_appsrc_alloc(reel_element *appsrc)
{
    appsrc_priv *s = appsrc_of(appsrc);
    g_return_val_if_fail(s, NULL);
    reel_buffer *b = NULL;
    // A pool has one acquirer at a time: the lock makes the callers one.
    g_mutex_lock(&s->lock);
    if (s->running && !s->pool && reel_caps_is_fixed(&s->format) && s->format.media != REEL_MEDIA_VIDEO_ENCODED)
        s->pool = reel_pool_new(&s->format);
    if (s->running && s->pool)
        b = reel_pool_acquire(s->pool);
    g_mutex_unlock(&s->lock);
    return b;
}

// Numbers the buffer and, when the application gave no time, stamps it.
static void stamp(appsrc_priv *s, reel_buffer *b)
{
    b->frame_number = s->frames++;
    if (b->pts != REEL_PTS_NONE)
        return;
    reel_fraction rate = s->format.framerate;
    if (rate.num > 0) {
        b->time_base = (reel_fraction){ rate.den, rate.num };
        b->pts = b->frame_number;
        b->duration = 1;
    } else {
        b->time_base = (reel_fraction){ 1, G_USEC_PER_SEC };
        b->pts = g_get_monotonic_time() - s->start_us;
    }
}

// A wrong buffer is the application's bug: say so loudly, naming both formats.
static int format_error(reel_element *e, const reel_caps *want, const reel_caps *got)
{
    char *sw = reel_caps_to_string(want), *sg = reel_caps_to_string(got);
    int rc = reel_element_error(e, REEL_EFORMAT, "the application pushed a buffer of %s, but caps= says %s", sg, sw);
    g_free(sw);
    g_free(sg);
    return rc;
}

// Checks and queues buf under the lock; returns what push returns. Ownership
// of buf passes to the queue only on 0.
static int push_locked(reel_element *e, appsrc_priv *s, reel_buffer *buf)
{
    if (!s->running || reel_element_should_stop(e))
        return REEL_ESTOPPED;
    if (s->ended)
        return REEL_EINVAL;
    if (!reel_caps_equal(&buf->format, &s->format))
        return REEL_EFORMAT;
    while ((int)s->queue.length >= s->max_buffers) {
        if (!s->block)
            return REEL_AGAIN;
        if (!wait_for_change(e, s) || !s->running)
            return REEL_ESTOPPED;
    }
    stamp(s, buf);
    g_queue_push_tail(&s->queue, buf);
    g_cond_broadcast(&s->cond);
    return 0;
}

int reel_appsrc_push(reel_element *appsrc, reel_buffer *buf)
{
    appsrc_priv *s = appsrc_of(appsrc);
    if (!s || !buf) {
        reel_buffer_unref(&buf);
        return REEL_EINVAL;
    }
    g_mutex_lock(&s->lock);
    int rc = push_locked(appsrc, s, buf);
    reel_caps want = s->format;
    g_mutex_unlock(&s->lock);
    // Reported outside the lock: the error stops the pipeline, which takes its own.
    if (rc == REEL_EFORMAT)
        format_error(appsrc, &want, &buf->format);
    if (rc != 0)
        reel_buffer_unref(&buf);
    return rc;
}

int reel_appsrc_end(reel_element *appsrc)
{
    appsrc_priv *s = appsrc_of(appsrc);
    if (!s)
        return REEL_EINVAL;
    g_mutex_lock(&s->lock);
    s->ended = true;
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
    return 0;
}

const reel_element_class reel_appsrc_class = {
    .name = "appsrc",
    .description = "Sends buffers the application pushes (reel_appsrc_push) into the pipeline",
    .flags = REEL_CLASS_BLOCKING, // waits for the application on a thread of its own
    .priv_size = sizeof(appsrc_priv),
    .props = props,
    .min_inputs = 0, .max_inputs = 0,
    .min_outputs = 1, .max_outputs = 1,
    .output_caps = "any",
    .init = init,
    .uninit = uninit,
    .configure = configure,
    .start = start,
    .process = process,
    .stop = stop,
    .unblock = unblock,
};

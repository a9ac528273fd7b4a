// Element instances: creation, accessors, and the calls elements make at
// run time (push, alloc, error).
#include "pipeline/internal.h"
#include "reel/error.h"
#include "reel/limits.h"

#include <stdarg.h>

reel_element *reel_element_new(const reel_element_class *klass, const char *name, GError **error)
{
    reel_element *e = g_new0(reel_element, 1);
    e->klass = klass;
    e->auto_name = name == NULL;
    e->name = g_strdup(name ? name : klass->name);
    e->priv = g_malloc0(klass->priv_size ? klass->priv_size : 1);
    e->expected_frames = -1;
    e->stream_id_request = -1;
    e->inputs = g_ptr_array_new();
    e->outputs = g_ptr_array_new();
    g_cond_init(&e->wake);
    g_rec_mutex_init(&e->prop_lock);

    int rc = reel_props_set_defaults(e, error);
    if (rc == 0 && klass->init && (rc = klass->init(e)) < 0)
        g_set_error(error, REEL_ERROR, rc, "element '%s' (%s) failed to initialise: %s", e->name,
                    klass->name, reel_strerror(rc));
    if (rc < 0)
        reel_element_destroy(&e);
    return e;
}

void reel_element_destroy(reel_element **ep)
{
    reel_element *e = *ep;
    *ep = NULL;
    if (!e)
        return;
    if (e->klass->uninit)
        e->klass->uninit(e);
    reel_props_free(e);
    for (guint i = 0; e->out_pool && i < e->outputs->len; i++)
        reel_pool_release(&e->out_pool[i]);
    g_free(e->out_pool);
    g_free(e->in_eos);
    g_free(e->latency);
    if (e->trace)
        g_array_free(e->trace, TRUE);
    if (e->gpu_trace)
        g_array_free(e->gpu_trace, TRUE);
    g_ptr_array_free(e->inputs, TRUE);
    g_ptr_array_free(e->outputs, TRUE);
    g_cond_clear(&e->wake);
    g_rec_mutex_clear(&e->prop_lock);
    g_free(e->priv);
    g_free(e->name);
    g_free(e->device_request);
    g_free(e->device);
    g_free(e->placement_reason);
    g_free(e);
}

const char *reel_element_name(const reel_element *e)
{
    return e->name;
}

reel_device *reel_element_device(reel_element *e)
{
    return e->dev;
}

reel_xfer *reel_element_xfer(reel_element *e)
{
    return &e->xfer;
}

const char *reel_element_device_request(const reel_element *e)
{
    return e->device_request;
}

const reel_element_class *reel_element_get_class(const reel_element *e)
{
    return e->klass;
}

void *reel_element_priv(reel_element *e)
{
    return e->priv;
}

reel_pipeline *reel_element_pipeline(reel_element *e)
{
    return e->pipeline;
}

int reel_element_n_inputs(const reel_element *e)
{
    return (int)e->inputs->len;
}

int reel_element_n_outputs(const reel_element *e)
{
    return (int)e->outputs->len;
}

const reel_caps *reel_element_input_format(const reel_element *e, int pad)
{
    g_return_val_if_fail(pad >= 0 && pad < (int)e->inputs->len, NULL);
    reel_link *l = e->inputs->pdata[pad];
    return &l->format;
}

const reel_caps *reel_element_output_format(const reel_element *e, int pad)
{
    g_return_val_if_fail(pad >= 0 && pad < (int)e->outputs->len, NULL);
    const reel_link *l = e->outputs->pdata[pad];
    return &l->format;
}

bool reel_element_placement_strict(const reel_element *e)
{
    return e->pipeline && e->pipeline->strict_placement;
}

void reel_element_note_placement(reel_element *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *note = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    char *reason = e->placement_reason ? g_strdup_printf("%s; %s", e->placement_reason, note) : note;
    if (reason != note)
        g_free(note);
    g_free(e->placement_reason);
    e->placement_reason = reason;
}

reel_element *reel_element_upstream(const reel_element *e, int pad)
{
    if (pad < 0 || pad >= (int)e->inputs->len)
        return NULL;
    return ((reel_link *)e->inputs->pdata[pad])->src;
}

reel_element *reel_element_downstream(const reel_element *e, int pad)
{
    if (pad < 0 || pad >= (int)e->outputs->len)
        return NULL;
    return ((reel_link *)e->outputs->pdata[pad])->dst;
}

const reel_caps *reel_element_output_want(const reel_element *e, int pad)
{
    g_return_val_if_fail(pad >= 0 && pad < (int)e->outputs->len, NULL);
    reel_link *l = e->outputs->pdata[pad];
    return &l->want;
}

reel_buffer *reel_element_alloc(reel_element *e, int pad)
{
    g_return_val_if_fail(pad >= 0 && pad < (int)e->outputs->len && e->out_pool, NULL);
    if (!e->out_pool[pad])
        e->out_pool[pad] = reel_pool_new(&((reel_link *)e->outputs->pdata[pad])->format);
    reel_buffer *b = e->out_pool[pad] ? reel_pool_acquire(e->out_pool[pad]) : NULL;
    if (!b) {
        char *f = reel_caps_to_string(&((reel_link *)e->outputs->pdata[pad])->format);
        reel_element_error(e, REEL_ENOMEM, "cannot allocate a buffer of %s", f);
        g_free(f);
    }
    return b;
}

// A buffer whose format differs from the last one sent on its link (a new
// resolution mid-stream) is renegotiation: it goes on when the receiver's
// negotiated wishes accept it, and is an error naming both ends otherwise.
static int check_format_change(reel_element *e, reel_link *l, const reel_caps *f)
{
    if (reel_caps_equal(f, &l->sent_format))
        return 0;
    GError *limit = NULL;
    if (reel_caps_check_limits(f, &limit) < 0) {
        int rc = reel_element_error(e, limit->code, "%s", limit->message);
        g_error_free(limit);
        return rc;
    }
    const reel_caps *want = &l->want;
    if (!reel_caps_accepts(want, f)) {
        char *sf = reel_caps_to_string(f), *sw = reel_caps_to_string(want);
        int rc = reel_element_error(e, REEL_EFORMAT, "the format changed to %s, which '%s' does not accept (%s)",
                                    sf, l->dst->name, sw);
        g_free(sf);
        g_free(sw);
        return rc;
    }
    l->sent_format = *f;
    return 0;
}

int reel_element_push(reel_element *e, int pad, reel_buffer *buf)
{
    g_return_val_if_fail(pad >= 0 && pad < (int)e->outputs->len, REEL_EINVAL);
    reel_link *l = e->outputs->pdata[pad];
    int rc = atomic_load(&e->pipeline->stopping) ? REEL_ESTOPPED : check_format_change(e, l, &buf->format);
    if (rc < 0) {
        reel_buffer_unref(&buf);
        return rc;
    }
    atomic_fetch_add_explicit(&e->buffers_out, 1, memory_order_relaxed);
    reel_latency_stamp(e, buf);
    reel_link_push(l, buf);
    return 0;
}

int reel_element_error(reel_element *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (e->pipeline)
        reel_pipeline_fail(e->pipeline, e, code, text);
    g_free(text);
    return code;
}

static void post_text(reel_element *e, reel_message_type type, const char *fmt, va_list ap)
{
    char *text = g_strdup_vprintf(fmt, ap);
    if (e->pipeline)
        reel_pipeline_post(e->pipeline, type, 0, e, text);
    g_free(text);
}

void reel_element_warning(reel_element *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    post_text(e, REEL_MESSAGE_WARNING, fmt, ap);
    va_end(ap);
}

void reel_element_info(reel_element *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    post_text(e, REEL_MESSAGE_INFO, fmt, ap);
    va_end(ap);
}

bool reel_element_should_stop(const reel_element *e)
{
    reel_pipeline *p = e->pipeline;
    return atomic_load(&p->stopping) || atomic_load(&p->eos_requested) || atomic_load(&e->eos_requested);
}

bool reel_element_is_aborting(const reel_element *e)
{
    return atomic_load(&e->pipeline->stopping);
}

bool reel_element_wait_until(reel_element *e, int64_t deadline_us)
{
    reel_pipeline *p = e->pipeline;
    g_mutex_lock(&p->lock);
    while (!reel_element_should_stop(e) && g_get_monotonic_time() < deadline_us)
        g_cond_wait_until(&p->state_cond, &p->lock, deadline_us);
    bool ok = !reel_element_should_stop(e);
    g_mutex_unlock(&p->lock);
    return ok;
}

void reel_element_configure_input_bytes(reel_element *e, int pad, int64_t max_bytes)
{
    g_return_if_fail(pad >= 0 && pad < (int)e->inputs->len && max_bytes >= 0);
    reel_link_set_max_bytes(e->inputs->pdata[pad], max_bytes);
}

void reel_element_configure_input(reel_element *e, int pad, int capacity, reel_leaky leaky)
{
    g_return_if_fail(pad >= 0 && pad < (int)e->inputs->len && capacity > 0);
    // Once started, upstream may be pushing: only the bounds change, in place.
    if (e->started)
        reel_link_change_bounds(e->inputs->pdata[pad], capacity, leaky);
    else
        reel_link_set_capacity(e->inputs->pdata[pad], capacity, leaky);
}

void reel_element_set_blocking(reel_element *e, bool blocking)
{
    e->blocking = blocking && e->inputs->len == 0;
}

void reel_element_set_live(reel_element *e, bool live)
{
    atomic_store(&e->live, live);
}

bool reel_element_is_live(const reel_element *e)
{
    return atomic_load(&e->live);
}

int reel_element_snapshot(reel_element *e, int max_width, GBytes **jpeg, GError **error)
{
    *jpeg = NULL;
    if (!e->klass->snapshot) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s (%s) gives no pictures: a preview element does",
                    e->name, e->klass->name);
        return REEL_EUNSUPPORTED;
    }
    return e->klass->snapshot(e, max_width, jpeg, error);
}

const char *reel_input_state_name(reel_input_state state)
{
    static const char *const names[] = { "", "connecting", "live", "lost", "ended" };
    return state >= 0 && state < (int)G_N_ELEMENTS(names) ? names[state] : "";
}

void reel_element_set_input_state(reel_element *e, reel_input_state state, int64_t reconnects)
{
    if (atomic_exchange(&e->input_state, (int)state) != (int)state)
        atomic_store(&e->input_since_us, g_get_monotonic_time());
    atomic_store(&e->reconnects, reconnects);
}

void reel_element_set_expected_frames(reel_element *e, int64_t frames)
{
    e->expected_frames = frames;
}

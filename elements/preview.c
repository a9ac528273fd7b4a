// preview: keeps the last frame that reached it, and makes a JPEG of it
// when asked (reel_element_snapshot: `reel serve`'s previews); linked on,
// it passes every frame through (`preview ! metasink`). Taking a frame is
// swapping a reference, so a preview never slows the pipeline;
// the scaling and encoding happen only for someone watching, on their
// thread, at their rate.
#include "elements/av_common.h"


typedef struct preview_priv {
    GMutex lock;
    reel_buffer *last; // the latest frame, or NULL
} preview_priv;

static int init(reel_element *e)
{
    preview_priv *s = reel_element_priv(e);
    g_mutex_init(&s->lock);
    return 0;
}

static void drop_last(preview_priv *s)
{
    g_mutex_lock(&s->lock);
    reel_buffer *old = s->last;
    s->last = NULL;
    g_mutex_unlock(&s->lock);
    reel_buffer_unref(&old);
}

static void uninit(reel_element *e)
{
    preview_priv *s = reel_element_priv(e);
    drop_last(s);
    g_mutex_clear(&s->lock);
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    preview_priv *s = reel_element_priv(e);
    bool on = reel_element_n_outputs(e) > 0;
    g_mutex_lock(&s->lock);
    reel_buffer *old = s->last;
    s->last = on ? reel_buffer_ref(buf) : buf;
    g_mutex_unlock(&s->lock);
    reel_buffer_unref(&old);
    return on ? reel_element_push(e, 0, buf) : 0;
}

static void stop(reel_element *e)
{
    drop_last(reel_element_priv(e));
}

static int snapshot(reel_element *e, int max_width, GBytes **jpeg, GError **error)
{
    preview_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    reel_buffer *frame = s->last ? reel_buffer_ref(s->last) : NULL;
    g_mutex_unlock(&s->lock);
    if (!frame) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: no frame yet", reel_element_name(e));
        return REEL_EIO;
    }
    int w = frame->format.width, h = frame->format.height;
    if (max_width > 0 && w > max_width) {
        h = (int)((int64_t)h * max_width / w);
        w = max_width;
    }
    // JPEG's 4:2:0 wants even sides.
    w = MAX(2, w & ~1);
    h = MAX(2, h & ~1);
    AVFrame *view = av_frame_alloc();
    int rc = REEL_ENOMEM;
    if (view) {
        reel_av_frame_view(view, frame);
        rc = reel_av_jpeg(view, w, h, jpeg, error);
        av_frame_free(&view);
    }
    if (rc < 0 && error && *error)
        g_prefix_error(error, "%s: ", reel_element_name(e));
    reel_buffer_unref(&frame);
    return rc;
}

const reel_element_class reel_preview_class = {
    .name = "preview",
    .description = "Keeps the last frame for previews (reel serve shows it as JPEG or MJPEG), passing frames on "
                   "when linked on; never slows the pipeline",
    .flags = REEL_CLASS_PASSTHROUGH,
    .priv_size = sizeof(preview_priv),
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .init = init,
    .uninit = uninit,
    .process = process,
    .stop = stop,
    .snapshot = snapshot,
};

// preview: keeps the last frame that reached it, and makes a JPEG of it
// when asked (reel_element_snapshot: `reel serve`'s previews); linked on,
// it passes every frame through (`preview ! metasink`). Taking a frame is
// swapping a reference, so a preview never slows the pipeline;
// the scaling and encoding happen only for someone watching, on their
// thread, at their rate.
#include "elements/av_common.h"

#include <libavutil/opt.h>
#include <libswscale/swscale.h>

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

// The frame scaled to w x h as full-range yuv420p, then JPEG.
static int encode_jpeg(reel_element *e, const reel_buffer *in, int w, int h, GBytes **jpeg, GError **error)
{
    int rc = REEL_ENOMEM;
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
    AVCodecContext *c = codec ? avcodec_alloc_context3(codec) : NULL;
    AVFrame *out = av_frame_alloc(), *view = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    struct SwsContext *sws = NULL;
    if (!c || !out || !view || !pkt)
        goto fail;
    c->width = w;
    c->height = h;
    c->pix_fmt = AV_PIX_FMT_YUVJ420P;
    c->time_base = (AVRational){ 1, 25 };
    c->color_range = AVCOL_RANGE_JPEG;
    av_opt_set_int(c, "qmin", 2, AV_OPT_SEARCH_CHILDREN);
    c->flags |= AV_CODEC_FLAG_QSCALE;
    c->global_quality = FF_QP2LAMBDA * 4;
    out->format = AV_PIX_FMT_YUVJ420P;
    out->width = w;
    out->height = h;
    reel_av_frame_view(view, in);
    enum AVPixelFormat src = reel_av_pixfmt(__builtin_ctzll(in->format.pixfmts));
    sws = sws_getContext(in->format.width, in->format.height, src, w, h, AV_PIX_FMT_YUVJ420P, SWS_BILINEAR, NULL,
                         NULL, NULL);
    int ret;
    if (!sws || av_frame_get_buffer(out, 0) < 0 || avcodec_open2(c, codec, NULL) < 0) {
        rc = REEL_EUNSUPPORTED;
        goto fail;
    }
    sws_scale(sws, (const uint8_t *const *)view->data, view->linesize, 0, in->format.height, out->data,
              out->linesize);
    out->quality = c->global_quality;
    if ((ret = avcodec_send_frame(c, out)) < 0 || (ret = avcodec_send_frame(c, NULL)) < 0
        || (ret = avcodec_receive_packet(c, pkt)) < 0) {
        rc = REEL_EFORMAT;
        g_set_error(error, REEL_ERROR, rc, "%s: cannot encode a JPEG: %s", reel_element_name(e), reel_av_err(ret));
        goto done;
    }
    *jpeg = g_bytes_new(pkt->data, (gsize)pkt->size);
    rc = 0;
    goto done;
fail:
    g_set_error(error, REEL_ERROR, rc, "%s: cannot set up a JPEG of %dx%d %s", reel_element_name(e), w, h,
                reel_pixfmt_name(__builtin_ctzll(in->format.pixfmts)));
done:
    sws_freeContext(sws);
    av_packet_free(&pkt);
    av_frame_free(&view);
    av_frame_free(&out);
    avcodec_free_context(&c);
    return rc;
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
    int rc = encode_jpeg(e, frame, w, h, jpeg, error);
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

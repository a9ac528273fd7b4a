// encode: raw frames to compressed packets with libavcodec. The encoder's
// own list of pixel formats is what this element asks for upstream, so a
// `convert` before it picks one of them and a mismatch fails at prepare time.
#include "elements/av_common.h"

#include <libavutil/opt.h>

// Short names for the encoders reel has always offered; any other name is
// FFmpeg's: an encoder (mpeg4, libvpx-vp9, libsvtav1, h264_nvenc) or a
// codec, which then gets FFmpeg's default encoder for it (vp9, av1).
static const struct {
    const char *name, *encoder;
} aliases[] = {
    { "h264", "libx264" },
    { "hevc", "libx265" },
};

// The video encoder `name` stands for, or NULL.
static const AVCodec *encoder_for(const char *name)
{
    if (!name || !*name)
        return NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(aliases); i++)
        if (strcmp(name, aliases[i].name) == 0)
            name = aliases[i].encoder;
    const AVCodec *c = avcodec_find_encoder_by_name(name);
    if (!c) {
        const AVCodecDescriptor *d = avcodec_descriptor_get_by_name(name);
        c = d ? avcodec_find_encoder(d->id) : NULL;
    }
    return c && c->type == AVMEDIA_TYPE_VIDEO ? c : NULL;
}

static const char *known_encoder(const void *value)
{
    return encoder_for(*(char *const *)value) ? NULL
           : "a video encoder of this FFmpeg (`ffmpeg -encoders`): h264, hevc, mjpeg, ffv1, png, rawvideo, "
             "mpeg4, libvpx-vp9, libsvtav1..., or a codec (vp9, av1) for its default encoder";
}

typedef struct encode_priv {
    char *codec;
    char *options;
    int bitrate;
    int crf;
    char *preset;
    int gop;
    int threads;

    AVCodecContext *ctx;
    AVFrame *frame;
    AVPacket *pkt;
    reel_caps opened;   // the input format the encoder was opened for
    bool par_sent;      // codec parameters went out with a packet
    // What each frame in the encoder says about itself (metadata, stream,
    // frame number), by its pts, as a buffer of no bytes: its packet takes
    // it on, so detections and events travel on past the encoder.
    GHashTable *in_flight; // gint64 pts -> reel_buffer
} encode_priv;

static const reel_prop props[] = {
    { "codec", REEL_PROP_STRING, offsetof(encode_priv, codec), "h264", .check = known_encoder,
      .help = "h264 (libx264), hevc (libx265), mjpeg, ffv1, png, rawvideo, or any video encoder of FFmpeg by name "
              "(mpeg4, libvpx-vp9, libsvtav1, h264_nvenc...) or codec (vp9, av1)" },
    { "options", REEL_PROP_STRING, offsetof(encode_priv, options), NULL,
      .help = "the encoder's own options, KEY=VALUE:KEY=VALUE (`ffmpeg -h encoder=NAME`); "
              "one the encoder does not take is warned about" },
    { "bitrate", REEL_PROP_INT, offsetof(encode_priv, bitrate), "0", 0, INT32_MAX,
      .help = "target bits per second (2M, 500k); 0: the encoder's default" },
    { "crf", REEL_PROP_INT, offsetof(encode_priv, crf), "-1", -1, 63,
      .help = "constant quality for h264/hevc (lower is better); -1: unset" },
    { "preset", REEL_PROP_STRING, offsetof(encode_priv, preset), NULL,
      .help = "speed/size trade-off for h264/hevc: ultrafast ... medium ... veryslow" },
    { "gop", REEL_PROP_INT, offsetof(encode_priv, gop), "0", 0, 100000,
      .help = "frames between keyframes; 0: the encoder's default" },
    { "threads", REEL_PROP_INT, offsetof(encode_priv, threads), "0", 0, 256,
      .help = "encoder threads; 0: automatic" },
    { NULL },
};

static const AVCodec *find_encoder(const encode_priv *s)
{
    return encoder_for(s->codec);
}

static int want(reel_element *e, int pad, reel_caps *want)
{
    (void)pad;
    encode_priv *s = reel_element_priv(e);
    const AVCodec *codec = find_encoder(s);
    want->memory &= REEL_MEMORY_HOST;
    // A missing encoder is reported by start, where the message reaches the
    // user; here it would only read "rejected every format".
    if (!codec || !codec->pix_fmts)
        return 0;
    uint64_t mask = 0;
    for (const enum AVPixelFormat *p = codec->pix_fmts; *p != AV_PIX_FMT_NONE; p++)
        mask |= REEL_PIXFMT_BIT(reel_av_from_pixfmt(*p));
    mask &= REEL_PIXFMT_MASK_ALL;
    // mjpeg lists limited-range yuv too but refuses it unless told to write
    // non-standard files, which decoders then show washed out.
    if (codec->id == AV_CODEC_ID_MJPEG)
        mask &= ~(REEL_PIXFMT_BIT(REEL_PIXFMT_YUV420P) | REEL_PIXFMT_BIT(REEL_PIXFMT_YUV422P)
                  | REEL_PIXFMT_BIT(REEL_PIXFMT_YUV444P));
    want->pixfmts &= mask;
    return want->pixfmts ? 0 : REEL_EFORMAT;
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    encode_priv *s = reel_element_priv(e);
    const reel_caps *in = reel_element_input_format(e, 0);
    const AVCodec *codec = find_encoder(s);
    out->media = REEL_MEDIA_VIDEO_ENCODED;
    out->memory = REEL_MEMORY_HOST;
    g_strlcpy(out->codec, codec ? avcodec_get_name(codec->id) : s->codec, sizeof out->codec);
    out->width = in->width;
    out->height = in->height;
    out->framerate = in->framerate;
    return 0;
}

// Frames an encoder holds at most (x264's lookahead and B-frames take a
// few dozen).
#define MAX_IN_FLIGHT 512

// What a frame's packet takes from it: what vision elements found.
static const reel_meta_type *const carried[] = { &reel_detections_meta, &reel_classifications_meta,
                                                 &reel_analytics_meta };

static void carry(reel_buffer *dst, const reel_buffer *src)
{
    dst->stream_id = src->stream_id;
    dst->frame_number = src->frame_number;
    dst->capture_ns = src->capture_ns;
    for (size_t i = 0; i < G_N_ELEMENTS(carried); i++)
        reel_buffer_copy_metas(dst, src, carried[i]);
}

// The packet takes its frame's stream, frame number, capture time and
// findings; its own timestamps and flags stay.
static void carry_props(encode_priv *s, reel_buffer *pkt)
{
    gint64 pts = pkt->pts;
    reel_buffer *frame = pkt->pts != REEL_PTS_NONE ? g_hash_table_lookup(s->in_flight, &pts) : NULL;
    if (frame) {
        carry(pkt, frame);
        g_hash_table_remove(s->in_flight, &pts);
    }
}

// An encoder that drops a frame never gives its packet: past what any
// encoder holds, the oldest frame's findings go, so memory stays bounded.
static void forget_oldest(encode_priv *s)
{
    if (g_hash_table_size(s->in_flight) <= MAX_IN_FLIGHT)
        return;
    GHashTableIter it;
    gpointer key;
    gint64 oldest = G_MAXINT64;
    g_hash_table_iter_init(&it, s->in_flight);
    while (g_hash_table_iter_next(&it, &key, NULL))
        oldest = MIN(oldest, *(gint64 *)key);
    g_hash_table_remove(s->in_flight, &oldest);
}

static void unref_carrier(gpointer b)
{
    reel_buffer *buf = b;
    reel_buffer_unref(&buf);
}

static int start(reel_element *e)
{
    encode_priv *s = reel_element_priv(e);
    if (!find_encoder(s))
        return reel_element_error(e, REEL_EUNSUPPORTED, "this FFmpeg has no %s encoder", s->codec);
    s->frame = av_frame_alloc();
    s->pkt = av_packet_alloc();
    s->par_sent = false;
    s->in_flight = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, unref_carrier);
    return 0;
}

// Opens the encoder for the first frame's format and time base.
static int open_encoder(reel_element *e, const reel_buffer *buf)
{
    encode_priv *s = reel_element_priv(e);
    const reel_caps *f = &buf->format;
    const AVCodec *codec = find_encoder(s);
    AVCodecContext *c = s->ctx = avcodec_alloc_context3(codec);
    if (!c)
        return reel_element_error(e, REEL_ENOMEM, "cannot allocate the %s encoder", codec->name);
    reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
    c->pix_fmt = reel_av_pixfmt(pf);
    c->width = f->width;
    c->height = f->height;
    c->sample_aspect_ratio = (AVRational){ 1, 1 };
    if (f->framerate.num > 0 && f->framerate.den > 0)
        c->framerate = (AVRational){ f->framerate.num, f->framerate.den };
    if (buf->time_base.num > 0 && buf->time_base.den > 0)
        c->time_base = (AVRational){ buf->time_base.num, buf->time_base.den };
    else if (c->framerate.num > 0)
        c->time_base = av_inv_q(c->framerate);
    else
        c->time_base = (AVRational){ 1, 25 }; // no clock at all: number frames at 25 fps
    if (pf == REEL_PIXFMT_YUVJ420P)
        c->color_range = AVCOL_RANGE_JPEG;
    else if (pf >= REEL_PIXFMT_YUV420P)
        c->color_range = AVCOL_RANGE_MPEG;
    if (s->bitrate > 0)
        c->bit_rate = s->bitrate;
    if (s->gop > 0)
        c->gop_size = s->gop;
    c->thread_count = s->threads;
    // mp4 and mkv keep a codec's headers (SPS/PPS, ffv1's) out of band; the
    // sink puts them back in-band for containers that need that. Image
    // codecs have none.
    const AVCodecDescriptor *desc = avcodec_descriptor_get(codec->id);
    if (codec->id == AV_CODEC_ID_FFV1 || !desc || !(desc->props & AV_CODEC_PROP_INTRA_ONLY))
        c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

    AVDictionary *opts = NULL;
    if (s->options && *s->options && av_dict_parse_string(&opts, s->options, "=", ":", 0) < 0) {
        av_dict_free(&opts);
        return reel_element_error(e, REEL_EINVAL, "options '%s' are not KEY=VALUE:KEY=VALUE", s->options);
    }
    if (s->crf >= 0)
        av_dict_set_int(&opts, "crf", s->crf, 0);
    if (s->preset && *s->preset)
        av_dict_set(&opts, "preset", s->preset, 0);
    // x264 and x265 report settings and statistics at info level on every
    // run; a pipeline's stderr is for reel's own summary. Warnings remain.
    if (strcmp(codec->name, "libx264") == 0 && !av_dict_get(opts, "x264-params", NULL, 0))
        av_dict_set(&opts, "x264-params", "log=1", 0);
    if (strcmp(codec->name, "libx265") == 0 && !av_dict_get(opts, "x265-params", NULL, 0))
        av_dict_set(&opts, "x265-params", "log-level=warning", 0);
    int ret = avcodec_open2(c, codec, &opts);
    if (ret < 0) {
        av_dict_free(&opts);
        return reel_element_error(e, REEL_EINVAL, "cannot open the %s encoder for %dx%d %s%s%s%s: %s",
                                  codec->name, f->width, f->height, reel_pixfmt_name(pf),
                                  s->preset ? " with preset '" : "", s->preset ? s->preset : "",
                                  s->preset ? "'" : "", reel_av_err(ret));
    }
    // What the encoder did not take was meant for another codec: say so
    // rather than ignore it silently.
    const AVDictionaryEntry *t = NULL;
    while ((t = av_dict_get(opts, "", t, AV_DICT_IGNORE_SUFFIX)))
        reel_element_warning(e, "%s ignores %s=%s", codec->name, t->key, t->value);
    av_dict_free(&opts);
    s->opened = *f;
    return 0;
}

// Sends out every packet the encoder has ready.
static int drain(reel_element *e)
{
    encode_priv *s = reel_element_priv(e);
    const reel_caps *f = reel_element_output_format(e, 0);
    for (;;) {
        int ret = avcodec_receive_packet(s->ctx, s->pkt);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF)
            return 0;
        if (ret < 0)
            return reel_element_error(e, REEL_EFORMAT, "encoding failed: %s", reel_av_err(ret));
        // Encoders with a delay leave the duration out; every frame lasts one
        // frame interval here.
        if (s->pkt->duration <= 0 && s->ctx->framerate.num > 0)
            s->pkt->duration = av_rescale_q(1, av_inv_q(s->ctx->framerate), s->ctx->time_base);
        reel_buffer *b = reel_av_wrap_packet(f, s->pkt);
        av_packet_unref(s->pkt);
        if (!b)
            return reel_element_error(e, REEL_ENOMEM, "cannot wrap a packet");
        b->time_base = (reel_fraction){ s->ctx->time_base.num, s->ctx->time_base.den };
        carry_props(s, b);
        if (!s->par_sent) {
            AVCodecParameters *par = avcodec_parameters_alloc();
            int rc = par && avcodec_parameters_from_context(par, s->ctx) >= 0 ? reel_av_attach_codecpar(b, par)
                                                                              : REEL_ENOMEM;
            avcodec_parameters_free(&par);
            if (rc < 0) {
                reel_buffer_unref(&b);
                return reel_element_error(e, rc, "cannot attach codec parameters");
            }
            s->par_sent = true;
        }
        int rc = reel_element_push(e, 0, b);
        if (rc < 0)
            return rc;
    }
}

static void release_buffer(void *opaque, uint8_t *data)
{
    (void)data;
    reel_buffer *b = opaque;
    reel_buffer_unref(&b);
}

static bool same_picture(const reel_caps *a, const reel_caps *b)
{
    return a->pixfmts == b->pixfmts && a->width == b->width && a->height == b->height;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    encode_priv *s = reel_element_priv(e);
    int rc = 0;
    if (!s->ctx && (rc = open_encoder(e, buf)) < 0)
        goto done;
    if (!same_picture(&buf->format, &s->opened)) {
        char *was = reel_caps_to_string(&s->opened), *now = reel_caps_to_string(&buf->format);
        rc = reel_element_error(e, REEL_EFORMAT,
                                "the input changed from %s to %s mid-stream; an encoder cannot change size or "
                                "format (put a convert with a fixed size before it)",
                                was, now);
        g_free(was);
        g_free(now);
        goto done;
    }
    // The frame refers to the buffer's memory and holds a reference on it:
    // encoders that keep frames keep the buffer, none copies it needlessly.
    AVFrame *fr = s->frame;
    reel_av_frame_view(fr, buf);
    fr->buf[0] = av_buffer_create(buf->data ? buf->data : buf->planes[0], buf->size, release_buffer,
                                  reel_buffer_ref(buf), AV_BUFFER_FLAG_READONLY);
    if (!fr->buf[0]) {
        reel_buffer_unref(&buf); // the reference taken for the AVBufferRef
        rc = reel_element_error(e, REEL_ENOMEM, "cannot wrap a frame");
        goto done;
    }
    fr->pts = buf->pts == REEL_PTS_NONE ? AV_NOPTS_VALUE : buf->pts;
    if (buf->pts != REEL_PTS_NONE && buf->time_base.num > 0
        && (buf->time_base.num != s->ctx->time_base.num || buf->time_base.den != s->ctx->time_base.den))
        fr->pts = av_rescale_q(buf->pts, (AVRational){ buf->time_base.num, buf->time_base.den },
                               s->ctx->time_base);
    fr->color_range = s->ctx->color_range;
    if (fr->pts != AV_NOPTS_VALUE) {
        reel_buffer *carrier = reel_buffer_new(0);
        if (carrier) {
            carry(carrier, buf);
            gint64 *key = g_new(gint64, 1);
            *key = fr->pts;
            g_hash_table_replace(s->in_flight, key, carrier);
        }
        forget_oldest(s);
    }
    int ret = avcodec_send_frame(s->ctx, fr);
    av_frame_unref(fr);
    if (ret < 0) {
        rc = reel_element_error(e, REEL_EFORMAT, "encoding failed: %s", reel_av_err(ret));
        goto done;
    }
    rc = drain(e);
done:
    reel_buffer_unref(&buf);
    return rc;
}

static int flush(reel_element *e)
{
    encode_priv *s = reel_element_priv(e);
    if (!s->ctx)
        return 0;
    int ret = avcodec_send_frame(s->ctx, NULL);
    if (ret < 0 && ret != AVERROR_EOF)
        return reel_element_error(e, REEL_EFORMAT, "flushing the encoder failed: %s", reel_av_err(ret));
    return drain(e);
}

static void stop(reel_element *e)
{
    encode_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->in_flight, g_hash_table_destroy);
    avcodec_free_context(&s->ctx);
    av_frame_free(&s->frame);
    av_packet_free(&s->pkt);
}

const reel_element_class reel_encode_class = {
    .name = "encode",
    .description = "Encodes raw video with any of libavcodec's video encoders (h264, hevc, mjpeg, ffv1, png, "
                   "rawvideo, mpeg4, vp9, av1...)",
    .priv_size = sizeof(encode_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/encoded",
    .want = want,
    .configure = configure,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .uninit = stop,
};

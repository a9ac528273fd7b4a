// decode: encoded video packets to raw frames with libavcodec. Frames are
// the decoder's own (wrapped, not copied); damaged data is concealed,
// counted and reported rather than fatal.
#include "elements/av_common.h"

#include <string.h>

#include <libavutil/pixdesc.h>
#include <libavutil/version.h>

enum { THREAD_FRAME = FF_THREAD_FRAME, THREAD_SLICE = FF_THREAD_SLICE, THREAD_BOTH = FF_THREAD_FRAME | FF_THREAD_SLICE };

// Consecutive errors from avcodec_receive_frame() after which we stop asking
// for now: a guard against a decoder that keeps failing without progress.
#define MAX_ERRORS_IN_ROW 100

typedef struct decode_priv {
    int threads;
    int thread_type;

    AVCodecContext *ctx;
    AVPacket *pkt;
    AVFrame *frame;
    reel_fraction time_base;  // of the packets, and so of the frames
    int64_t frames_out;
    int64_t corrupt;          // packets rejected plus frames flagged damaged
} decode_priv;

static const reel_enum_value thread_types[] = {
    { "frame", THREAD_FRAME, "several frames at once (more latency)" },
    { "slice", THREAD_SLICE, "several slices of one frame (when the stream has them)" },
    { "both", THREAD_BOTH, "whichever the decoder supports" },
    { NULL },
};

static const reel_prop props[] = {
    { "threads", REEL_PROP_INT, offsetof(decode_priv, threads), "0", 0, 256,
      .help = "decoding threads; 0: one per core" },
    { "thread-type", REEL_PROP_ENUM, offsetof(decode_priv, thread_type), "both", .values = thread_types,
      .help = "how the decoder uses its threads" },
    { NULL },
};

static const AVCodec *find_decoder(const char *codec_name)
{
    const AVCodecDescriptor *d = avcodec_descriptor_get_by_name(codec_name);
    return d ? avcodec_find_decoder(d->id) : NULL;
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    const reel_caps *in = reel_element_input_format(e, 0);
    if (in->codec[0] && !find_decoder(in->codec))
        return reel_element_error(e, REEL_EUNSUPPORTED, "no decoder for codec '%s'", in->codec);
    // A single bit is the stream's format; anything else means the source
    // knew it but reel has no equivalent (10-bit, 4:4:4 16-bit, ...), or it
    // is unknown. The caps do not carry FFmpeg's name for it.
    uint64_t pf = in->pixfmts & REEL_PIXFMT_MASK_ALL;
    if (!pf || (pf & (pf - 1)))
        return reel_element_error(e, REEL_EUNSUPPORTED,
                                  "the pixel format of the %s stream is unknown or not supported yet "
                                  "(reel decodes to 8-bit gray, rgb, yuv420p/422p/444p and nv12)",
                                  in->codec[0] ? in->codec : "input");
    out->media = REEL_MEDIA_VIDEO_RAW;
    out->memory = REEL_MEMORY_HOST;
    out->pixfmts = pf;
    out->width = in->width;
    out->height = in->height;
    out->framerate = in->framerate;
    out->codec[0] = '\0';
    return 0;
}

static int start(reel_element *e)
{
    decode_priv *s = reel_element_priv(e);
    s->frames_out = 0;
    s->corrupt = 0;
    s->pkt = av_packet_alloc();
    s->frame = av_frame_alloc();
    if (!s->pkt || !s->frame)
        return reel_element_error(e, REEL_ENOMEM, "out of memory");
    return 0;
}

static void stop(reel_element *e)
{
    decode_priv *s = reel_element_priv(e);
    avcodec_free_context(&s->ctx);
    av_packet_free(&s->pkt);
    av_frame_free(&s->frame);
}

// Opens the decoder from the stream's parameters (extradata, profile) when
// the packet carries them, else from the negotiated codec name alone (enough
// for Annex B H.264/HEVC, which repeat their parameter sets in-band).
static int open_decoder(reel_element *e, const AVCodecParameters *par, reel_fraction tb)
{
    decode_priv *s = reel_element_priv(e);
    const char *name = reel_element_input_format(e, 0)->codec;
    const AVCodec *codec = par ? avcodec_find_decoder(par->codec_id) : find_decoder(name);
    if (!codec)
        return reel_element_error(e, REEL_EUNSUPPORTED, "no decoder for codec '%s'",
                                  par ? avcodec_get_name(par->codec_id) : name);
    s->ctx = avcodec_alloc_context3(codec);
    if (!s->ctx)
        return reel_element_error(e, REEL_ENOMEM, "out of memory");
    int rc = par ? avcodec_parameters_to_context(s->ctx, par) : 0;
    if (rc < 0)
        return reel_element_error(e, REEL_ENOMEM, "cannot set up the %s decoder: %s", codec->name, reel_av_err(rc));
    if (tb.num > 0 && tb.den > 0)
        s->ctx->pkt_timebase = (AVRational){ tb.num, tb.den };
    s->ctx->thread_count = s->threads;
    s->ctx->thread_type = s->thread_type;
    if ((rc = avcodec_open2(s->ctx, codec, NULL)) < 0)
        return reel_element_error(e, REEL_EUNSUPPORTED, "cannot open the %s decoder: %s", codec->name,
                                  reel_av_err(rc));
    return 0;
}

// Whether new codec parameters need a new decoder (another codec, other
// extradata), rather than being the same stream again (a loop restart).
static bool params_changed(const AVCodecContext *ctx, const AVCodecParameters *par)
{
    if (ctx->codec_id != par->codec_id || ctx->extradata_size != par->extradata_size)
        return true;
    return par->extradata_size && memcmp(ctx->extradata, par->extradata, (size_t)par->extradata_size) != 0;
}

static void note_corrupt(reel_element *e, const char *what, int64_t n, int averr)
{
    decode_priv *s = reel_element_priv(e);
    // The first one now, the total at the end: a damaged stream would
    // otherwise flood the bus.
    if (s->corrupt++ == 0)
        reel_element_warning(e, "corrupt data in %s %" G_GINT64_FORMAT "%s%s; concealing and going on", what, n,
                             averr ? ": " : "", averr ? reel_av_err(averr) : "");
}

static int64_t frame_duration(const AVFrame *f)
{
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(58, 2, 100)
    return f->duration;
#else
    return f->pkt_duration;
#endif
}

static int push_frame(reel_element *e, AVFrame *frame)
{
    decode_priv *s = reel_element_priv(e);
    bool damaged = frame->decode_error_flags || (frame->flags & AV_FRAME_FLAG_CORRUPT);
    if (damaged)
        note_corrupt(e, "frame", s->frames_out, 0);
    // The negotiated format, with this frame's size and pixel format: after
    // a mid-stream change the framework renegotiates on push.
    const reel_caps *of = reel_element_output_format(e, 0);
    reel_caps fc;
    if (!reel_av_frame_caps(frame, of->framerate, &fc)) {
        const char *name = av_get_pix_fmt_name(frame->format);
        return reel_element_error(e, REEL_EUNSUPPORTED, "pixel format %s is not supported yet",
                                  name ? name : "(unknown)");
    }
    reel_caps f = *of;
    f.pixfmts = fc.pixfmts;
    f.width = fc.width;
    f.height = fc.height;
    reel_buffer *b = reel_av_wrap_frame(&f, frame);
    if (!b)
        return reel_element_error(e, REEL_ENOMEM, "out of memory wrapping a %dx%d frame", f.width, f.height);
    int64_t pts = frame->best_effort_timestamp != AV_NOPTS_VALUE ? frame->best_effort_timestamp : frame->pts;
    b->pts = pts == AV_NOPTS_VALUE ? REEL_PTS_NONE : pts;
    b->duration = frame_duration(frame) > 0 ? frame_duration(frame) : REEL_PTS_NONE;
    b->time_base = s->time_base;
    b->frame_number = s->frames_out++;
    if (frame->key_frame)
        b->flags |= REEL_BUFFER_FLAG_KEYFRAME;
    if (damaged)
        b->flags |= REEL_BUFFER_FLAG_CORRUPT;
    return reel_element_push(e, 0, b);
}

// Takes every frame the decoder has ready. Returns 0 or an error.
static int receive_frames(reel_element *e)
{
    decode_priv *s = reel_element_priv(e);
    int errors = 0;
    for (;;) {
        int rc = avcodec_receive_frame(s->ctx, s->frame);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF)
            return 0;
        if (rc == AVERROR(ENOMEM))
            return reel_element_error(e, REEL_ENOMEM, "out of memory decoding");
        if (rc < 0) {
            note_corrupt(e, "frame", s->frames_out, rc);
            if (++errors >= MAX_ERRORS_IN_ROW)
                return 0;
            continue;
        }
        errors = 0;
        rc = push_frame(e, s->frame);
        av_frame_unref(s->frame);
        if (rc < 0)
            return rc;
    }
}

// Sends one packet (NULL: drain) and takes the frames it yields.
static int decode_packet(reel_element *e, const AVPacket *pkt, int64_t n)
{
    decode_priv *s = reel_element_priv(e);
    int rc = avcodec_send_packet(s->ctx, pkt);
    if (rc == AVERROR(EAGAIN)) {
        // Full: the frames it holds must be taken before it takes more.
        if ((rc = receive_frames(e)) < 0)
            return rc;
        rc = avcodec_send_packet(s->ctx, pkt);
    }
    if (rc == AVERROR(ENOMEM))
        return reel_element_error(e, REEL_ENOMEM, "out of memory decoding");
    if (rc < 0 && rc != AVERROR_EOF)
        note_corrupt(e, "packet", n, rc);
    return receive_frames(e);
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    decode_priv *s = reel_element_priv(e);
    int rc = 0;
    const AVCodecParameters *par = reel_buffer_get_meta(buf, &reel_av_codecpar_meta);
    if (par && s->ctx && params_changed(s->ctx, par)) {
        // Another stream: finish the old decoder's frames, then start anew.
        if ((rc = decode_packet(e, NULL, buf->frame_number)) < 0)
            goto done;
        avcodec_free_context(&s->ctx);
    }
    if (!s->ctx) {
        s->time_base = buf->time_base;
        if ((rc = open_decoder(e, par, buf->time_base)) < 0)
            goto done;
    }
    // Not reference-counted: the decoder copies it (with the padding it
    // needs, which a wrapped buffer need not have). Packets are small.
    AVPacket *pkt = s->pkt;
    pkt->data = buf->data;
    pkt->size = (int)buf->size;
    pkt->pts = buf->pts == REEL_PTS_NONE ? AV_NOPTS_VALUE : buf->pts;
    pkt->dts = buf->dts == REEL_PTS_NONE ? AV_NOPTS_VALUE : buf->dts;
    pkt->duration = buf->duration > 0 ? buf->duration : 0;
    pkt->flags = (buf->flags & REEL_BUFFER_FLAG_KEYFRAME ? AV_PKT_FLAG_KEY : 0) |
                 (buf->flags & REEL_BUFFER_FLAG_CORRUPT ? AV_PKT_FLAG_CORRUPT : 0);
    rc = decode_packet(e, pkt, buf->frame_number);
    pkt->data = NULL;
    pkt->size = 0;
done:
    reel_buffer_unref(&buf);
    return rc;
}

static int flush(reel_element *e)
{
    decode_priv *s = reel_element_priv(e);
    if (!s->ctx)
        return 0;
    int rc = decode_packet(e, NULL, -1);
    if (rc < 0)
        return rc;
    if (s->corrupt && s->frames_out == 0)
        return reel_element_error(e, REEL_EFORMAT, "no frame could be decoded (%" G_GINT64_FORMAT
                                  " corrupt packets/frames)", s->corrupt);
    if (s->corrupt)
        reel_element_warning(e, "%" G_GINT64_FORMAT " corrupt packets/frames (%" G_GINT64_FORMAT
                             " frames decoded)", s->corrupt, s->frames_out);
    return 0;
}

const reel_element_class reel_decode_class = {
    .name = "decode",
    .description = "Decodes video with libavcodec (any codec FFmpeg has)",
    .priv_size = sizeof(decode_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/encoded",
    .output_caps = "video/raw",
    .configure = configure,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .uninit = stop,
};

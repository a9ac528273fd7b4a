// encode: raw frames to compressed packets with libavcodec. The encoder's
// own list of pixel formats is what this element asks for upstream, so a
// `convert` before it picks one of them and a mismatch fails at prepare time.
// Frames come in host or device memory (no download is put before it): on
// a GPU that CUDA shares memory with, NVIDIA's encoders (NVENC) take device
// frames copied on the GPU into their own CUDA frames (elements/cuda_frames.h:
// straight from NVDEC's exportable memory, other memory through one more
// copy on the device); any other encoder, or NVENC where that cannot be,
// gets each device frame downloaded here, once, counted in the report and
// said why.
#include "elements/av_common.h"
#include "elements/cuda_frames.h"

#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>

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
    // Where device frames go, decided once (configure): into NVENC's CUDA
    // frames on the GPU (cuda, on the process's CUDA device hw_device), else
    // downloaded into `scratch` and encoded from host memory.
    bool path_decided;
    cuda_frames *cuda;
    AVBufferRef *hw_device;
    uint8_t *scratch;
    size_t scratch_size;
    AVFrame *sw_frame;  // a downloaded frame on its way up into a CUDA frame
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

// Whether the encoder is NVIDIA's: it takes CUDA frames of a CUDA device.
static bool takes_cuda_frames(const AVCodec *codec)
{
    const AVCodecHWConfig *cfg;
    for (int k = 0; (cfg = avcodec_get_hw_config(codec, k)); k++)
        if (cfg->device_type == AV_HWDEVICE_TYPE_CUDA && cfg->pix_fmt == AV_PIX_FMT_CUDA
            && (cfg->methods & AV_CODEC_HW_CONFIG_METHOD_HW_FRAMES_CTX))
            return true;
    return false;
}

// Where the device frames of this run go, said once on the bus and in the
// report: to NVENC on the GPU where the encoder is NVIDIA's and CUDA can
// share the Vulkan device's memory (libcuda there, the same GPU), else one
// download each.
static void decide_path(reel_element *e, const AVCodec *codec)
{
    encode_priv *s = reel_element_priv(e);
    reel_device *dev = reel_element_device(e);
    const char *spec = reel_device_info_of(dev)->spec;
    s->path_decided = true;
    if (!takes_cuda_frames(codec)) {
        reel_element_info(e, "%s encodes from host memory: each frame is downloaded from %s once", codec->name,
                          spec);
        reel_element_note_placement(e, "%s encodes from host memory: frames downloaded from %s", codec->name, spec);
        return;
    }
    char *why = NULL;
    AVBufferRef *hw = NULL;
    if (cuda_frames_possible(dev, &why)) {
        int rc = reel_av_shared_hw_device(AV_HWDEVICE_TYPE_CUDA, &hw);
        if (rc < 0)
            why = g_strdup_printf("cannot open a CUDA device: %s", reel_av_err(rc));
        else
            s->cuda = cuda_frames_open(dev, hw, &why);
    }
    if (s->cuda) {
        s->hw_device = hw;
        reel_element_info(e, "NVENC frames copied from %s's memory on the GPU (CUDA external memory)", spec);
        reel_element_note_placement(e, "%s takes frames on the GPU (CUDA external memory)", codec->name);
    } else {
        av_buffer_unref(&hw);
        reel_element_warning(e, "NVENC frames go through host memory: %s", why);
        reel_element_note_placement(e, "%s takes frames through host memory: %s", codec->name, why);
    }
    g_free(why);
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    encode_priv *s = reel_element_priv(e);
    const reel_caps *in = reel_element_input_format(e, 0);
    const AVCodec *codec = find_encoder(s);
    if (codec && in->memory == REEL_MEMORY_DEVICE && !s->path_decided)
        decide_path(e, codec);
    // Strict placement allows no transfer the pipeline did not ask for.
    if (codec && in->memory == REEL_MEMORY_DEVICE && !s->cuda && reel_element_placement_strict(e))
        return reel_element_error(e, REEL_EUNSUPPORTED,
                                  "placement=strict: %s encodes from host memory and the frames are in %s's: "
                                  "they would be downloaded (put an explicit download before it)",
                                  codec->name, reel_device_info_of(reel_element_device(e))->spec);
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

// NVENC opened for CUDA frames of the frames' software format, from the
// shared CUDA device; where that context cannot be made, frames go through
// host memory (said why), the encoder not yet open.
static void use_cuda_frames(reel_element *e, AVCodecContext *c)
{
    encode_priv *s = reel_element_priv(e);
    AVBufferRef *ref = av_hwframe_ctx_alloc(s->hw_device);
    int rc = AVERROR(ENOMEM);
    if (ref) {
        AVHWFramesContext *fc = (AVHWFramesContext *)ref->data;
        fc->format = AV_PIX_FMT_CUDA;
        fc->sw_format = c->pix_fmt;
        fc->width = c->width;
        fc->height = c->height;
        rc = av_hwframe_ctx_init(ref);
    }
    if (rc < 0) {
        av_buffer_unref(&ref);
        reel_element_warning(e, "NVENC frames go through host memory: no CUDA frames of %s: %s",
                             av_get_pix_fmt_name(c->pix_fmt), reel_av_err(rc));
        reel_element_note_placement(e, "NVENC frames go through host memory: no CUDA frames of %s",
                                    av_get_pix_fmt_name(c->pix_fmt));
        cuda_frames_close(&s->cuda);
        return;
    }
    c->hw_frames_ctx = ref;
    c->sw_pix_fmt = c->pix_fmt;
    c->pix_fmt = AV_PIX_FMT_CUDA;
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
    if (s->cuda && buf->mem)
        use_cuda_frames(e, c);
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
        // FFmpeg's code alone ("Operation not permitted") does not say
        // what NVENC lacks.
        return reel_element_error(e, REEL_EINVAL, "cannot open the %s encoder for %dx%d %s%s%s%s: %s%s",
                                  codec->name, f->width, f->height, reel_pixfmt_name(pf),
                                  s->preset ? " with preset '" : "", s->preset ? s->preset : "",
                                  s->preset ? "'" : "", reel_av_err(ret),
                                  takes_cuda_frames(codec) ? " (NVENC needs an NVIDIA GPU with its driver: "
                                                             "libcuda.so.1 and libnvidia-encode.so.1)"
                                                           : "");
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

// A device frame in host memory: one download, counted. Replaces *bufp.
static int download(reel_element *e, reel_buffer **bufp)
{
    encode_priv *s = reel_element_priv(e);
    GError *err = NULL;
    reel_buffer *host = reel_buffer_to_host(*bufp, &s->scratch, &s->scratch_size, reel_element_xfer(e), &err);
    if (!host) {
        int rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    reel_buffer_unref(bufp);
    *bufp = host;
    return 0;
}

// A host frame up into a CUDA frame fr, for NVENC opened for CUDA frames
// after the copy on the GPU failed mid-stream.
static int upload_to_cuda(reel_element *e, const reel_buffer *buf, AVFrame *fr)
{
    encode_priv *s = reel_element_priv(e);
    if (!s->sw_frame && !(s->sw_frame = av_frame_alloc()))
        return reel_element_error(e, REEL_ENOMEM, "out of memory");
    reel_av_frame_view(s->sw_frame, buf);
    int rc = av_hwframe_get_buffer(s->ctx->hw_frames_ctx, fr, 0);
    if (rc >= 0)
        rc = av_hwframe_transfer_data(fr, s->sw_frame, 0);
    av_frame_unref(s->sw_frame);
    if (rc < 0)
        return reel_element_error(e, REEL_EIO, "cannot copy a frame into %s's CUDA frame: %s", s->ctx->codec->name,
                                  reel_av_err(rc));
    reel_element_xfer(e)->to_device += av_image_get_buffer_size(s->ctx->sw_pix_fmt, fr->width, fr->height, 1);
    return 0;
}

// The frame the encoder takes for *bufp, in fr: a device frame copied into
// a CUDA frame on the GPU, or a host frame (a device one downloaded first;
// *bufp is then that copy) referred to without a copy. Returns 0 or an
// error posted.
static int frame_of(reel_element *e, reel_buffer **bufp, AVFrame *fr)
{
    encode_priv *s = reel_element_priv(e);
    bool cuda_in = s->ctx->pix_fmt == AV_PIX_FMT_CUDA;
    if ((*bufp)->mem && s->cuda && cuda_in) {
        char *why = NULL;
        int rc = av_hwframe_get_buffer(s->ctx->hw_frames_ctx, fr, 0);
        if (rc < 0)
            why = g_strdup_printf("no CUDA frame: %s", reel_av_err(rc));
        else if (cuda_frames_to_cuda(s->cuda, *bufp, fr, &why) == 0) {
            // Host memory the GPU read (a software decoder's frames on a
            // discrete GPU) crossed the bus all the same.
            if (reel_mem_domain_of((*bufp)->mem) == REEL_MEM_HOST
                && !reel_device_info_of(reel_element_device(e))->unified_memory)
                reel_element_xfer(e)->to_device += (int64_t)reel_mem_size((*bufp)->mem);
            return 0;
        }
        // From now on through the host, the encoder as it was opened.
        av_frame_unref(fr);
        reel_element_warning(e, "NVENC frames go through host memory from now on: %s", why);
        reel_element_note_placement(e, "NVENC frames went through host memory after a failure: %s", why);
        g_free(why);
        cuda_frames_close(&s->cuda);
    }
    int rc;
    if ((*bufp)->mem && (rc = download(e, bufp)) < 0)
        return rc;
    reel_buffer *buf = *bufp;
    if (cuda_in)
        return upload_to_cuda(e, buf, fr);
    // The frame refers to the buffer's memory and holds a reference on it:
    // encoders that keep frames keep the buffer, none copies it needlessly.
    reel_av_frame_view(fr, buf);
    fr->buf[0] = av_buffer_create(buf->data ? buf->data : buf->planes[0], buf->size, release_buffer,
                                  reel_buffer_ref(buf), AV_BUFFER_FLAG_READONLY);
    if (!fr->buf[0]) {
        reel_buffer_unref(&buf); // the reference taken for the AVBufferRef
        return reel_element_error(e, REEL_ENOMEM, "cannot wrap a frame");
    }
    return 0;
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
    AVFrame *fr = s->frame;
    if ((rc = frame_of(e, &buf, fr)) < 0)
        goto done;
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
    av_frame_free(&s->sw_frame);
    av_packet_free(&s->pkt);
    g_clear_pointer(&s->scratch, g_free);
    s->scratch_size = 0;
}

// The path decided at negotiation holds for every run of the element.
static void uninit(reel_element *e)
{
    encode_priv *s = reel_element_priv(e);
    stop(e);
    cuda_frames_close(&s->cuda);
    av_buffer_unref(&s->hw_device);
}

const reel_element_class reel_encode_class = {
    .name = "encode",
    .description = "Encodes raw video with any of libavcodec's video encoders (h264, hevc, mjpeg, ffv1, png, "
                   "rawvideo, mpeg4, vp9, av1...)",
    .priv_size = sizeof(encode_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    // Devices: where frames come from; the encoder itself is libavcodec's.
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .input_caps = "video/raw,memory=host|device", .output_caps = "video/encoded,memory=host",
    .want = want,
    .configure = configure,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .uninit = uninit,
};

// decode: encoded video packets to raw frames with libavcodec. Frames are
// the decoder's own (wrapped, not copied); damaged data is concealed,
// counted and reported rather than fatal. Pinned to a GPU, the decoder
// writes its frames straight into host-visible memory of that device (its
// own get_buffer2), so the GPU reads them where they were decoded.
#include "elements/av_common.h"
#include "elements/cuda_frames.h"

#include <string.h>

#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libavutil/version.h>

enum { HW_NONE, HW_AUTO, HW_VAAPI, HW_CUDA, HW_VULKAN };

enum { THREAD_FRAME = FF_THREAD_FRAME, THREAD_SLICE = FF_THREAD_SLICE, THREAD_BOTH = FF_THREAD_FRAME | FF_THREAD_SLICE };

// Consecutive errors from avcodec_receive_frame() after which we stop asking
// for now: a guard against a decoder that keeps failing without progress.
#define MAX_ERRORS_IN_ROW 100

typedef struct decode_priv {
    int threads;
    int thread_type;
    int hw;

    AVCodecContext *ctx;
    AVPacket *pkt;
    AVFrame *frame;
    reel_fraction time_base;  // of the packets, and so of the frames
    int64_t frames_out;
    int64_t corrupt;          // packets rejected plus frames flagged damaged
    bool discont;             // the next frame at or after discont_pts carries the discontinuity flag
    int64_t discont_pts;      // of the flagged packet (a live source's first after a reconnect)

    reel_device *dev;         // set when frames go to device memory
    reel_mem_domain domain;   // where the decoder writes them
    bool direct;              // the decoder writes into device memory itself (get_buffer2)
    enum AVPixelFormat hw_format; // frames of a hardware decoder; AV_PIX_FMT_NONE: software
    AVFrame *sw_frame;        // a hardware frame's contents, transferred
    cuda_frames *cuda;        // NVDEC frames copied into the pinned GPU's memory there; NULL: through the host
    bool noted;               // the report says how the first decoder decoded (not each stream's again)
} decode_priv;

static const reel_enum_value hw_modes[] = {
    { "none", HW_NONE, "software decoding" },
    { "auto", HW_AUTO, "a hardware decoder of the pinned GPU's kind when FFmpeg has one, else software" },
    { "vaapi", HW_VAAPI, "VA-API (Intel, AMD)" },
    { "cuda", HW_CUDA, "NVDEC (NVIDIA)" },
    { "vulkan", HW_VULKAN, "Vulkan video" },
    { NULL },
};

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
    { "hw", REEL_PROP_ENUM, offsetof(decode_priv, hw), "auto", .values = hw_modes,
      .help = "hardware decoding; unavailable: software, with a warning saying why" },
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
    reel_device *dev = reel_element_device(e);
    out->memory = dev && reel_device_info_of(dev)->backend != REEL_BACKEND_CPU ? REEL_MEMORY_DEVICE : REEL_MEMORY_HOST;
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
    s->dev = NULL;
    if (reel_element_output_format(e, 0)->memory == REEL_MEMORY_DEVICE) {
        s->dev = reel_element_device(e);
        // Unified memory: the device's own memory is the host's. Otherwise
        // host memory the GPU reads over the bus (counted as moved).
        s->domain = reel_device_info_of(s->dev)->unified_memory ? REEL_MEM_DEVICE : REEL_MEM_HOST;
    }
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
    av_frame_free(&s->sw_frame);
    cuda_frames_close(&s->cuda);
}

// ---- Frames in device memory

static void release_mem(void *opaque, uint8_t *data)
{
    (void)data;
    reel_mem *m = opaque;
    reel_mem_unmap(m);
    reel_mem_unref(&m);
}

// The decoder's frame buffers as device memory: FFmpeg's alignment rules
// (avcodec_align_dimensions2, linesizes rounded up to the SIMD alignment),
// all planes in one reel_mem. Called from the decoder's threads.
static int get_buffer(AVCodecContext *ctx, AVFrame *frame, int flags)
{
    (void)flags;
    decode_priv *s = ctx->opaque;
    int w = frame->width, h = frame->height, align[AV_NUM_DATA_POINTERS];
    avcodec_align_dimensions2(ctx, &w, &h, align);
    int linesize[4] = { 0 };
    for (int tries = 0;; tries++) {
        if (av_image_fill_linesizes(linesize, frame->format, w) < 0 || tries > 8)
            return AVERROR(EINVAL);
        bool aligned = true;
        for (int i = 0; i < 4; i++)
            aligned &= linesize[i] % align[i] == 0;
        if (aligned)
            break;
        w += w & ~(w - 1);
    }
    size_t sizes[4];
    ptrdiff_t strides[4] = { linesize[0], linesize[1], linesize[2], linesize[3] };
    if (av_image_fill_plane_sizes(sizes, frame->format, h, strides) < 0)
        return AVERROR(EINVAL);
    size_t offsets[4], total = 0;
    for (int i = 0; i < 4; i++) {
        offsets[i] = total;
        total += (sizes[i] + 63) & ~(size_t)63;
    }
    total += 64; // SIMD readers may read a little past the end
    reel_mem *m = reel_mem_new(s->dev, reel_mem_params(.size = total, .domain = s->domain), NULL);
    void *ptr = NULL;
    if (!m || reel_mem_map(m, REEL_MAP_WRITE, &ptr) < 0) {
        reel_mem_unref(&m);
        return AVERROR(ENOMEM);
    }
    frame->buf[0] = av_buffer_create(ptr, total, release_mem, m, 0);
    if (!frame->buf[0]) {
        release_mem(m, ptr);
        return AVERROR(ENOMEM);
    }
    for (int i = 0; i < 4; i++) {
        frame->data[i] = sizes[i] ? (uint8_t *)ptr + offsets[i] : NULL;
        frame->linesize[i] = sizes[i] ? linesize[i] : 0;
    }
    frame->extended_data = frame->data;
    return 0;
}

// A hardware frame's contents read back to the host (the bytes counted),
// from there to go to the pinned device as any software frame; NULL after
// an error posted.
static AVFrame *download_hw_frame(reel_element *e, const AVFrame *frame)
{
    decode_priv *s = reel_element_priv(e);
    if (!s->sw_frame && !(s->sw_frame = av_frame_alloc())) {
        reel_element_error(e, REEL_ENOMEM, "out of memory");
        return NULL;
    }
    int rc;
    if ((rc = av_hwframe_transfer_data(s->sw_frame, frame, 0)) < 0 || (rc = av_frame_copy_props(s->sw_frame, frame)) < 0) {
        reel_element_error(e, REEL_EIO, "cannot read a hardware frame: %s", reel_av_err(rc));
        return NULL;
    }
    reel_element_xfer(e)->to_host +=
        (int64_t)av_image_get_buffer_size(s->sw_frame->format, s->sw_frame->width, s->sw_frame->height, 1);
    return s->sw_frame;
}

// A frame as a buffer in device memory: the decoder's own memory when it
// wrote there, else a copy (decoders that cannot take a get_buffer2).
static reel_buffer *device_frame(reel_element *e, const reel_caps *f, const AVFrame *frame)
{
    decode_priv *s = reel_element_priv(e);
    reel_pixfmt pf = (reel_pixfmt)__builtin_ctzll(f->pixfmts);
    if (frame->format == AV_PIX_FMT_CUDA) {
        char *why = NULL;
        reel_buffer *b = cuda_frames_copy(s->cuda, f, frame, &why);
        if (b)
            return b;
        // From now on through the host, as without the interop.
        reel_element_warning(e, "NVDEC frames go through host memory from now on: %s", why);
        reel_element_note_placement(e, "NVDEC frames went through host memory after a failure: %s", why);
        g_free(why);
        cuda_frames_close(&s->cuda);
        if (!(frame = download_hw_frame(e, frame)))
            return NULL;
    }
    if (s->direct) {
        reel_mem *m = av_buffer_get_opaque(frame->buf[0]);
        size_t offsets[REEL_MAX_PLANES] = { 0 };
        for (int p = 0; p < reel_pixfmt_planes(pf); p++)
            offsets[p] = (size_t)(frame->data[p] - frame->buf[0]->data);
        reel_buffer *b = reel_buffer_new_device_planes(f, reel_mem_ref(m), offsets, frame->linesize);
        // Host memory read by the GPU crosses the bus all the same.
        if (b && s->domain == REEL_MEM_HOST)
            reel_element_xfer(e)->to_device += (int64_t)reel_buffer_packed_size(f);
        return b;
    }
    reel_buffer *host = reel_av_wrap_frame(f, frame);
    size_t size = reel_buffer_packed_size(f);
    reel_mem *m = host ? reel_mem_new(s->dev, reel_mem_params(.size = size, .domain = REEL_MEM_DEVICE), NULL) : NULL;
    uint8_t *packed = m ? g_malloc(size) : NULL;
    if (packed) {
        reel_buffer_pack(host, packed);
        if (reel_mem_upload(m, 0, packed, size, reel_element_xfer(e)) < 0)
            reel_mem_unref(&m);
    }
    g_free(packed);
    reel_buffer_unref(&host);
    return m ? reel_buffer_new_device(f, m) : NULL;
}

// ---- Hardware decoding

static enum AVPixelFormat pick_hw_format(AVCodecContext *ctx, const enum AVPixelFormat *formats)
{
    const decode_priv *s = ctx->opaque;
    for (const enum AVPixelFormat *f = formats; *f != AV_PIX_FMT_NONE; f++)
        if (*f == s->hw_format)
            return *f;
    return formats[0]; // the decoder's software choice
}

// The hardware device types to try for the hw property and the pinned device.
static int hw_candidates(reel_element *e, enum AVHWDeviceType *types)
{
    decode_priv *s = reel_element_priv(e);
    switch (s->hw) {
    case HW_VAAPI: types[0] = AV_HWDEVICE_TYPE_VAAPI; return 1;
    case HW_CUDA: types[0] = AV_HWDEVICE_TYPE_CUDA; return 1;
    case HW_VULKAN: types[0] = AV_HWDEVICE_TYPE_VULKAN; return 1;
    case HW_AUTO:
        // On the cpu or a software GPU (lavapipe), software is the decoder.
        if (!s->dev || reel_device_info_of(s->dev)->type == REEL_DEVICE_CPU)
            return 0;
        types[0] = reel_device_info_of(s->dev)->vendor_id == 0x10de ? AV_HWDEVICE_TYPE_CUDA : AV_HWDEVICE_TYPE_VAAPI;
        types[1] = AV_HWDEVICE_TYPE_VULKAN;
        return 2;
    default:
        return 0;
    }
}

// NVDEC's frames straight into the pinned GPU's memory where CUDA and the
// Vulkan device can share it; otherwise through the host, and why.
static void open_cuda_frames(reel_element *e, AVBufferRef *hwdev)
{
    decode_priv *s = reel_element_priv(e);
    char *why = NULL;
    cuda_frames_close(&s->cuda);
    const char *spec = reel_device_info_of(s->dev)->spec;
    if ((s->cuda = cuda_frames_open(s->dev, hwdev, &why))) {
        reel_element_info(e, "NVDEC frames copied into %s's memory on the GPU (CUDA external memory)", spec);
        if (!s->noted)
            reel_element_note_placement(e, "NVDEC frames copied into %s's memory on the GPU", spec);
    } else {
        reel_element_warning(e, "NVDEC frames go through host memory: %s", why);
        if (!s->noted)
            reel_element_note_placement(e, "NVDEC frames go through host memory: %s", why);
    }
    g_free(why);
}

// Sets up a hardware decoder when asked for and available; otherwise the
// decoder stays in software and a warning says why (for an explicit choice,
// or `auto` on a GPU).
static void try_hw(reel_element *e, const AVCodec *codec)
{
    decode_priv *s = reel_element_priv(e);
    enum AVHWDeviceType types[2];
    int n = hw_candidates(e, types);
    GString *why = g_string_new(NULL);
    for (int i = 0; i < n; i++) {
        const char *name = av_hwdevice_get_type_name(types[i]);
        enum AVPixelFormat format = AV_PIX_FMT_NONE;
        for (int k = 0;; k++) {
            const AVCodecHWConfig *cfg = avcodec_get_hw_config(codec, k);
            if (!cfg)
                break;
            if (cfg->device_type == types[i] && (cfg->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
                format = cfg->pix_fmt;
        }
        AVBufferRef *hwdev = NULL;
        int rc = format == AV_PIX_FMT_NONE ? AVERROR(ENOSYS) : reel_av_shared_hw_device(types[i], &hwdev);
        if (rc >= 0) {
            s->hw_format = format;
            s->ctx->hw_device_ctx = hwdev;
            s->ctx->get_format = pick_hw_format;
            reel_element_info(e, "decoding %s with %s", codec->name, name);
            if (!s->noted)
                reel_element_note_placement(e, "decoding %s with %s", codec->name, name);
            if (types[i] == AV_HWDEVICE_TYPE_CUDA && s->dev)
                open_cuda_frames(e, hwdev);
            g_string_free(why, TRUE);
            return;
        }
        g_string_append_printf(why, "%s%s: %s", why->len ? "; " : "", name ? name : "?",
                               format == AV_PIX_FMT_NONE ? "FFmpeg's decoder has no such hardware path"
                                                         : reel_av_err(rc));
    }
    if (n) {
        reel_element_warning(e, "no hardware decoder (%s); decoding %s in software", why->str, codec->name);
        if (!s->noted)
            reel_element_note_placement(e, "decoding %s in software: no hardware decoder (%s)", codec->name,
                                        why->str);
    }
    g_string_free(why, TRUE);
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
    s->ctx->opaque = s;
    s->hw_format = AV_PIX_FMT_NONE;
    try_hw(e, codec);
    s->noted = true;
    s->direct = s->dev && s->hw_format == AV_PIX_FMT_NONE && (codec->capabilities & AV_CODEC_CAP_DR1);
    if (s->direct)
        s->ctx->get_buffer2 = get_buffer;
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

// A frame's caps; a hardware frame's are those of its contents.
static bool frame_caps(const AVFrame *frame, reel_fraction rate, reel_caps *out)
{
    if (!frame->hw_frames_ctx)
        return reel_av_frame_caps(frame, rate, out);
    const AVHWFramesContext *hw = (const AVHWFramesContext *)frame->hw_frames_ctx->data;
    AVFrame *shape = av_frame_alloc();
    if (!shape)
        return false;
    shape->format = hw->sw_format;
    shape->width = frame->width;
    shape->height = frame->height;
    bool ok = reel_av_frame_caps(shape, rate, out);
    av_frame_free(&shape);
    return ok;
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
    if (!frame_caps(frame, of->framerate, &fc)) {
        const char *name = av_get_pix_fmt_name(frame->format);
        return reel_element_error(e, REEL_EUNSUPPORTED, "pixel format %s is not supported yet",
                                  name ? name : "(unknown)");
    }
    reel_caps f = *of;
    f.pixfmts = fc.pixfmts;
    f.width = fc.width;
    f.height = fc.height;
    f.memory = s->dev ? REEL_MEMORY_DEVICE : REEL_MEMORY_HOST;
    reel_buffer *b = s->dev ? device_frame(e, &f, frame) : reel_av_wrap_frame(&f, frame);
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
    // Frames decoded from packets before the flagged one may still come out
    // (reordering): the flag goes to the first frame of the new stretch.
    if (s->discont && (pts == AV_NOPTS_VALUE || s->discont_pts == AV_NOPTS_VALUE || pts >= s->discont_pts)) {
        b->flags |= REEL_BUFFER_FLAG_DISCONT;
        s->discont = false;
    }
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
        AVFrame *frame = s->frame;
        // A hardware frame stays on the GPU where the interop takes it
        // (device_frame), else it is read back here.
        if (s->frame->format == s->hw_format && s->hw_format != AV_PIX_FMT_NONE && !s->cuda &&
            !(frame = download_hw_frame(e, s->frame))) {
            av_frame_unref(s->frame);
            return REEL_EIO;
        }
        rc = push_frame(e, frame);
        av_frame_unref(s->frame);
        if (s->sw_frame)
            av_frame_unref(s->sw_frame);
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
    if (buf->flags & REEL_BUFFER_FLAG_DISCONT) {
        s->discont = true;
        s->discont_pts = pkt->pts;
    }
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
    .description = "Decodes video with libavcodec (any codec FFmpeg has), into the device's memory when pinned to one",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .priv_size = sizeof(decode_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/encoded,memory=host",
    .output_caps = "video/raw",
    .configure = configure,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .uninit = stop,
};

// Shared FFmpeg glue for the media elements.
#include "elements/av_common.h"

#include <libavutil/error.h>

static const enum AVPixelFormat to_av[REEL_PIXFMT_COUNT] = {
    [REEL_PIXFMT_NONE] = AV_PIX_FMT_NONE,
    [REEL_PIXFMT_GRAY8] = AV_PIX_FMT_GRAY8,
    [REEL_PIXFMT_RGB24] = AV_PIX_FMT_RGB24,
    [REEL_PIXFMT_BGR24] = AV_PIX_FMT_BGR24,
    [REEL_PIXFMT_RGBA] = AV_PIX_FMT_RGBA,
    [REEL_PIXFMT_BGRA] = AV_PIX_FMT_BGRA,
    [REEL_PIXFMT_YUV420P] = AV_PIX_FMT_YUV420P,
    [REEL_PIXFMT_YUVJ420P] = AV_PIX_FMT_YUVJ420P,
    [REEL_PIXFMT_NV12] = AV_PIX_FMT_NV12,
    [REEL_PIXFMT_YUV422P] = AV_PIX_FMT_YUV422P,
    [REEL_PIXFMT_YUV444P] = AV_PIX_FMT_YUV444P,
};

enum AVPixelFormat reel_av_pixfmt(reel_pixfmt f)
{
    return f > REEL_PIXFMT_NONE && f < REEL_PIXFMT_COUNT ? to_av[f] : AV_PIX_FMT_NONE;
}

reel_pixfmt reel_av_from_pixfmt(enum AVPixelFormat f)
{
    for (int i = 1; i < REEL_PIXFMT_COUNT; i++)
        if (to_av[i] == f)
            return i;
    return REEL_PIXFMT_NONE;
}

static void codecpar_free(void *data)
{
    AVCodecParameters *par = data;
    avcodec_parameters_free(&par);
}

static void *codecpar_copy(const void *data)
{
    AVCodecParameters *par = avcodec_parameters_alloc();
    if (par && avcodec_parameters_copy(par, data) < 0)
        avcodec_parameters_free(&par);
    return par;
}

const reel_meta_type reel_av_codecpar_meta = { "codec-parameters", codecpar_free, codecpar_copy };

int reel_av_attach_codecpar(reel_buffer *b, const AVCodecParameters *par)
{
    AVCodecParameters *copy = codecpar_copy(par);
    if (!copy)
        return REEL_ENOMEM;
    reel_buffer_add_meta(b, &reel_av_codecpar_meta, copy);
    return 0;
}

const char *reel_av_err_str(char *buf, int code)
{
    av_strerror(code, buf, AV_ERROR_MAX_STRING_SIZE);
    return buf;
}

static void unref_frame(void *opaque)
{
    AVFrame *f = opaque;
    av_frame_free(&f);
}

reel_buffer *reel_av_wrap_frame(const reel_caps *f, const AVFrame *frame)
{
    AVFrame *ref = av_frame_clone(frame);
    if (!ref)
        return NULL;
    reel_buffer *b = reel_buffer_new_wrapped(f, ref->data[0], 0, unref_frame, ref);
    if (!b)
        return NULL;
    for (int p = 0; p < REEL_MAX_PLANES && p < AV_NUM_DATA_POINTERS; p++) {
        b->planes[p] = ref->data[p];
        b->strides[p] = ref->linesize[p];
    }
    return b;
}

static void unref_packet(void *opaque)
{
    AVPacket *p = opaque;
    av_packet_free(&p);
}

reel_buffer *reel_av_wrap_packet(const reel_caps *f, const AVPacket *pkt)
{
    AVPacket *ref = av_packet_clone(pkt);
    if (!ref)
        return NULL;
    reel_buffer *b = reel_buffer_new_wrapped(f, ref->data, (size_t)ref->size, unref_packet, ref);
    if (!b)
        return NULL;
    b->pts = ref->pts == AV_NOPTS_VALUE ? REEL_PTS_NONE : ref->pts;
    b->dts = ref->dts == AV_NOPTS_VALUE ? REEL_PTS_NONE : ref->dts;
    b->duration = ref->duration;
    if (ref->flags & AV_PKT_FLAG_KEY)
        b->flags |= REEL_BUFFER_FLAG_KEYFRAME;
    if (ref->flags & AV_PKT_FLAG_CORRUPT)
        b->flags |= REEL_BUFFER_FLAG_CORRUPT;
    return b;
}

void reel_av_frame_view(AVFrame *frame, const reel_buffer *b)
{
    const reel_caps *f = &b->format;
    frame->format = reel_av_pixfmt(__builtin_ctzll(f->pixfmts));
    frame->width = f->width;
    frame->height = f->height;
    for (int p = 0; p < REEL_MAX_PLANES; p++) {
        frame->data[p] = b->planes[p];
        frame->linesize[p] = b->strides[p];
    }
    frame->pts = b->pts == REEL_PTS_NONE ? AV_NOPTS_VALUE : b->pts;
}

bool reel_av_frame_caps(const AVFrame *frame, reel_fraction rate, reel_caps *out)
{
    reel_pixfmt pf = reel_av_from_pixfmt(frame->format);
    if (!pf)
        return false;
    *out = reel_caps_any();
    out->media = REEL_MEDIA_VIDEO_RAW;
    out->memory = REEL_MEMORY_HOST;
    out->pixfmts = REEL_PIXFMT_BIT(pf);
    out->width = frame->width;
    out->height = frame->height;
    out->framerate = rate.den ? rate : (reel_fraction){ 0, 1 };
    return true;
}

int reel_av_shared_hw_device(enum AVHWDeviceType type, AVBufferRef **out)
{
    static GMutex lock;
    static AVBufferRef *devices[AV_HWDEVICE_TYPE_VULKAN + 8];
    if ((unsigned)type >= G_N_ELEMENTS(devices))
        return av_hwdevice_ctx_create(out, type, NULL, NULL, 0);
    g_mutex_lock(&lock);
    int rc = devices[type] ? 0 : av_hwdevice_ctx_create(&devices[type], type, NULL, NULL, 0);
    if (rc >= 0 && !(*out = av_buffer_ref(devices[type])))
        rc = AVERROR(ENOMEM);
    g_mutex_unlock(&lock);
    return rc;
}

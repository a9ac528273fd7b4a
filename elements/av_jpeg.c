// A picture as a JPEG (elements/av_common.h): preview's snapshots and
// record's trigger frames.
#include "elements/av_common.h"

#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

int reel_av_jpeg(const AVFrame *in, int w, int h, GBytes **jpeg, GError **error)
{
    int rc = REEL_ENOMEM;
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MJPEG);
    AVCodecContext *c = codec ? avcodec_alloc_context3(codec) : NULL;
    AVFrame *out = av_frame_alloc();
    AVPacket *pkt = av_packet_alloc();
    struct SwsContext *sws = NULL;
    if (!c || !out || !pkt)
        goto fail;
    // JPEG's 4:2:0 wants even sides.
    w = MAX(2, w & ~1);
    h = MAX(2, h & ~1);
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
    sws = sws_getContext(in->width, in->height, in->format, w, h, AV_PIX_FMT_YUVJ420P, SWS_BILINEAR, NULL, NULL,
                         NULL);
    int ret;
    if (!sws || av_frame_get_buffer(out, 0) < 0 || avcodec_open2(c, codec, NULL) < 0) {
        rc = REEL_EUNSUPPORTED;
        goto fail;
    }
    sws_scale(sws, (const uint8_t *const *)in->data, in->linesize, 0, in->height, out->data, out->linesize);
    out->quality = c->global_quality;
    if ((ret = avcodec_send_frame(c, out)) < 0 || (ret = avcodec_send_frame(c, NULL)) < 0
        || (ret = avcodec_receive_packet(c, pkt)) < 0) {
        rc = REEL_EFORMAT;
        g_set_error(error, REEL_ERROR, rc, "cannot encode a JPEG: %s", reel_av_err(ret));
        goto done;
    }
    *jpeg = g_bytes_new(pkt->data, (gsize)pkt->size);
    rc = 0;
    goto done;
fail:
    g_set_error(error, REEL_ERROR, rc, "cannot set up a JPEG of %dx%d %s", w, h,
                av_get_pix_fmt_name(in->format) ? av_get_pix_fmt_name(in->format) : "?");
done:
    sws_freeContext(sws);
    av_packet_free(&pkt);
    av_frame_free(&out);
    avcodec_free_context(&c);
    return rc;
}

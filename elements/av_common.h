// What the FFmpeg-based elements share: pixel format mapping, codec
// parameters travelling with packets, and AVFrame/AVPacket wrapped as
// buffers without a copy. Only elements/ includes this.
#ifndef REEL_ELEMENTS_AV_COMMON_H
#define REEL_ELEMENTS_AV_COMMON_H

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixfmt.h>

#include "reel/reel.h"

// reel pixel format <-> FFmpeg's; NONE / AV_PIX_FMT_NONE when there is none.
enum AVPixelFormat reel_av_pixfmt(reel_pixfmt f);
reel_pixfmt reel_av_from_pixfmt(enum AVPixelFormat f);

// The codec parameters of a stream (extradata, profile, dimensions) ride on
// packets as this meta: the source attaches them to the first packet of a
// stream (and again when they change), a decoder or muxer opens with them.
// The data is an AVCodecParameters *, owned by the meta.
extern const reel_meta_type reel_av_codecpar_meta;
// Attaches a copy of par to b. Returns 0 or REEL_ENOMEM.
int reel_av_attach_codecpar(reel_buffer *b, const AVCodecParameters *par);

// FFmpeg's message for an AVERROR code, in a static-per-call buffer.
#define reel_av_err(code) reel_av_err_str((char[AV_ERROR_MAX_STRING_SIZE]){ 0 }, (code))
const char *reel_av_err_str(char *buf, int code);

// The frame as a buffer of format f (raw video, fixed); takes a reference
// on the frame's data, the caller keeps its frame. NULL on failure.
reel_buffer *reel_av_wrap_frame(const reel_caps *f, const AVFrame *frame);
// The packet as a buffer of format f (encoded video); takes a reference on
// the packet's data; copies pts, dts, duration and the keyframe flag. The caller
// sets time_base. NULL on failure.
reel_buffer *reel_av_wrap_packet(const reel_caps *f, const AVPacket *pkt);

// Points an AVFrame (no data of its own) at a raw video buffer's planes,
// for encoders and swscale; the buffer must outlive the frame's use.
void reel_av_frame_view(AVFrame *frame, const reel_buffer *b);

// Raw video caps for a frame's format and size (framerate from `rate`),
// false when FFmpeg's pixel format has no reel equivalent.
bool reel_av_frame_caps(const AVFrame *frame, reel_fraction rate, reel_caps *out);

// One FFmpeg hardware device per kind for the whole process, shared by
// every decoder and encoder: a hundred streams open one CUDA context, not a
// hundred (each costs memory on the GPU and a fraction of a second to
// create), and NVDEC's and NVENC's frames are in one context. It lives as
// long as the process. Returns 0 with a new reference in *out, or an
// AVERROR code.
int reel_av_shared_hw_device(enum AVHWDeviceType type, AVBufferRef **out);

// `in` scaled to w x h (sides made even) as a full-range JPEG; 0, or a
// REEL_E* code with *error set.
int reel_av_jpeg(const AVFrame *in, int w, int h, GBytes **jpeg, GError **error);

#endif

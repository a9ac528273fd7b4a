// source: demuxes a file, URL or capture device with libavformat and sends
// the packets of one video stream downstream, undecoded.
#include "elements/av_common.h"

#include <string.h>

#include <libavdevice/avdevice.h>
#include <libavformat/avformat.h>

enum { LIVE_AUTO, LIVE_TRUE, LIVE_FALSE };

typedef struct source_priv {
    char *location;
    char *format;
    int stream;
    int loop;
    double start_time;
    int live;

    AVFormatContext *fmt;
    AVPacket *pkt;
    int index;            // the stream we read
    bool is_live;
    bool send_par;        // attach the codec parameters to the next packet
    int64_t packets;      // packets sent this run
    int64_t packets_this_play;
    int plays;            // plays finished
    int64_t offset;       // added to timestamps after each loop
    int64_t first_ts, end_ts; // span of this play's timestamps, for the offset
} source_priv;

static const reel_enum_value live_values[] = {
    { "auto", LIVE_AUTO, "live for network URLs (rtsp, udp, rtp, srt, tcp, http) and capture devices" },
    { "true", LIVE_TRUE, "a live input: no frame count, no looping, no demuxer buffering" },
    { "false", LIVE_FALSE, "a file: read as fast as downstream takes it" },
    { NULL },
};

static const reel_prop props[] = {
    { "location", REEL_PROP_STRING, offsetof(source_priv, location), NULL,
      .help = "file, URL or device to read (in.mp4, rtsp://host/path, /dev/video0)" },
    { "format", REEL_PROP_STRING, offsetof(source_priv, format), NULL,
      .help = "input format name (v4l2, h264, ...); default: guessed from the input" },
    { "stream", REEL_PROP_INT, offsetof(source_priv, stream), "-1", -1, 1000,
      .help = "index of the video stream to read; -1: the best one" },
    { "loop", REEL_PROP_INT, offsetof(source_priv, loop), "1", 0, INT32_MAX,
      .help = "times to play the input; 0: forever (timestamps keep increasing)" },
    { "start-time", REEL_PROP_DOUBLE, offsetof(source_priv, start_time), "0", 0, 1e9,
      .help = "seconds to skip: seeks to the keyframe at or before this time" },
    { "live", REEL_PROP_ENUM, offsetof(source_priv, live), "auto", .values = live_values,
      .help = "whether the input is live" },
    { NULL },
};

// Makes blocking reads (a stalled network stream, a camera) give up when the
// pipeline stops, so that Ctrl-C ends a run at once.
static int interrupt_cb(void *opaque)
{
    reel_element *e = opaque;
    return reel_element_pipeline(e) && reel_element_should_stop(e);
}

static bool is_live_input(const source_priv *s, const AVInputFormat *ifmt)
{
    if (s->live != LIVE_AUTO)
        return s->live == LIVE_TRUE;
    static const char *const schemes[] = { "rtsp:", "rtsps:", "udp:", "rtp:", "srt:", "tcp:", "http:", "https:" };
    for (size_t i = 0; i < G_N_ELEMENTS(schemes); i++)
        if (g_ascii_strncasecmp(s->location, schemes[i], strlen(schemes[i])) == 0)
            return true;
    return ifmt && ifmt->priv_class && AV_IS_INPUT_DEVICE(ifmt->priv_class->category);
}

static void close_input(source_priv *s)
{
    avformat_close_input(&s->fmt);
    av_packet_free(&s->pkt);
}

// Seeks to start-time (or the beginning). Returns an AVERROR code.
static int seek_start(source_priv *s)
{
    int64_t ts = (int64_t)(s->start_time * AV_TIME_BASE);
    if (s->fmt->start_time != AV_NOPTS_VALUE)
        ts += s->fmt->start_time;
    return avformat_seek_file(s->fmt, -1, INT64_MIN, ts, ts, 0);
}

static int open_input(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    static gsize devices_registered;
    if (g_once_init_enter(&devices_registered)) {
        avdevice_register_all();
        g_once_init_leave(&devices_registered, 1);
    }
    if (!s->location || !*s->location)
        return reel_element_error(e, REEL_EINVAL, "no input: set location=FILE or URL");
    const AVInputFormat *ifmt = NULL;
    if (s->format && *s->format && !(ifmt = av_find_input_format(s->format)))
        return reel_element_error(e, REEL_EINVAL, "unknown input format '%s'", s->format);

    close_input(s);
    s->fmt = avformat_alloc_context();
    s->pkt = av_packet_alloc();
    if (!s->fmt || !s->pkt) {
        close_input(s);
        return reel_element_error(e, REEL_ENOMEM, "out of memory opening '%s'", s->location);
    }
    s->fmt->interrupt_callback = (AVIOInterruptCB){ interrupt_cb, e };
    s->is_live = is_live_input(s, ifmt);
    // Live: hand packets on as they come instead of holding the ones read
    // while probing.
    if (s->is_live)
        s->fmt->flags |= AVFMT_FLAG_NOBUFFER;
    int rc = avformat_open_input(&s->fmt, s->location, ifmt, NULL); // frees fmt on failure
    if (rc < 0) {
        close_input(s);
        return reel_element_error(e, REEL_EIO, "cannot open '%s': %s", s->location, reel_av_err(rc));
    }
    if (!ifmt)
        s->is_live = is_live_input(s, s->fmt->iformat);
    if ((rc = avformat_find_stream_info(s->fmt, NULL)) < 0) {
        close_input(s);
        return reel_element_error(e, REEL_EIO, "cannot read '%s': %s", s->location, reel_av_err(rc));
    }

    if (s->stream < 0) {
        s->index = av_find_best_stream(s->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        if (s->index < 0) {
            close_input(s);
            return reel_element_error(e, REEL_EIO, "'%s' has no video stream", s->location);
        }
    } else if (s->stream >= (int)s->fmt->nb_streams ||
               s->fmt->streams[s->stream]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) {
        int n = (int)s->fmt->nb_streams;
        close_input(s);
        return reel_element_error(e, REEL_EINVAL, "stream %d of '%s' is not a video stream (it has %d streams)",
                                  s->stream, s->location, n);
    } else {
        s->index = s->stream;
    }
    // The demuxer drops packets of other streams without returning them.
    for (unsigned i = 0; i < s->fmt->nb_streams; i++)
        if ((int)i != s->index)
            s->fmt->streams[i]->discard = AVDISCARD_ALL;

    if (s->start_time > 0 && (rc = seek_start(s)) < 0)
        reel_element_warning(e, "cannot seek to %.3f s in '%s' (%s); starting at the beginning", s->start_time,
                             s->location, reel_av_err(rc));

    s->packets = s->packets_this_play = 0;
    s->plays = 0;
    s->offset = 0;
    s->first_ts = AV_NOPTS_VALUE;
    s->end_ts = AV_NOPTS_VALUE;
    s->send_par = true;
    return 0;
}

static AVRational stream_rate(const AVStream *st)
{
    if (st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0)
        return st->avg_frame_rate;
    if (st->r_frame_rate.num > 0 && st->r_frame_rate.den > 0)
        return st->r_frame_rate;
    return (AVRational){ 0, 1 };
}

static void set_expected_frames(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    const AVStream *st = s->fmt->streams[s->index];
    AVRational rate = stream_rate(st);
    if (s->is_live || s->loop == 0)
        return;
    int64_t n = -1;
    if (st->nb_frames > 0)
        n = st->nb_frames;
    else if (rate.num > 0 && st->duration > 0 && st->duration != AV_NOPTS_VALUE)
        n = av_rescale_q(st->duration, st->time_base, av_inv_q(rate));
    else if (rate.num > 0 && s->fmt->duration > 0)
        n = av_rescale_q(s->fmt->duration, AV_TIME_BASE_Q, av_inv_q(rate));
    if (n < 0)
        return;
    if (s->start_time > 0 && rate.num > 0)
        n = MAX(0, n - (int64_t)(s->start_time * av_q2d(rate)));
    reel_element_set_expected_frames(e, n * s->loop);
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    source_priv *s = reel_element_priv(e);
    int rc = open_input(e);
    if (rc < 0)
        return rc;
    const AVStream *st = s->fmt->streams[s->index];
    const AVCodecParameters *par = st->codecpar;
    out->media = REEL_MEDIA_VIDEO_ENCODED;
    out->memory = REEL_MEMORY_HOST;
    g_strlcpy(out->codec, avcodec_get_name(par->codec_id), sizeof out->codec);
    // Formats reel has no equivalent for stay open: a decoder downstream
    // says it cannot handle them, a muxer does not care.
    reel_pixfmt pf = reel_av_from_pixfmt(par->format);
    if (pf)
        out->pixfmts = REEL_PIXFMT_BIT(pf);
    out->width = par->width;
    out->height = par->height;
    AVRational rate = stream_rate(st);
    out->framerate = (reel_fraction){ rate.num, rate.den };
    set_expected_frames(e);
    return 0;
}

static int start(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    // Open from configure for the first run; stop closed it after a run.
    return s->fmt ? 0 : open_input(e);
}

static void stop(reel_element *e)
{
    close_input(reel_element_priv(e));
}

// At the end of one play: seeks back for the next one, moving timestamps on
// by the duration played. Returns false when the stream should end.
static bool restart_play(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    s->plays++;
    if (s->loop != 0 && s->plays >= s->loop)
        return false;
    if (s->is_live) {
        reel_element_warning(e, "'%s' is live: cannot loop", s->location);
        return false;
    }
    if (s->packets_this_play == 0)
        return false; // nothing to repeat: looping would spin
    int rc = seek_start(s);
    if (rc < 0) {
        reel_element_warning(e, "cannot loop '%s': seeking failed (%s)", s->location, reel_av_err(rc));
        return false;
    }
    if (s->first_ts != AV_NOPTS_VALUE && s->end_ts != AV_NOPTS_VALUE)
        s->offset += s->end_ts - s->first_ts;
    s->first_ts = s->end_ts = AV_NOPTS_VALUE;
    s->packets_this_play = 0;
    s->send_par = true;
    return true;
}

static void shift_timestamps(source_priv *s, AVPacket *pkt)
{
    // The play's span is measured before shifting: the offset grows by it.
    if (pkt->pts != AV_NOPTS_VALUE) {
        if (s->first_ts == AV_NOPTS_VALUE || pkt->pts < s->first_ts)
            s->first_ts = pkt->pts;
        // Without a duration (Matroska often has none), one frame at the
        // stream's rate, so the next play does not repeat the last pts.
        const AVStream *st = s->fmt->streams[s->index];
        AVRational rate = stream_rate(st);
        int64_t dur = pkt->duration > 0 ? pkt->duration
                      : rate.num > 0    ? av_rescale_q(1, av_inv_q(rate), st->time_base)
                                        : 1;
        int64_t end = pkt->pts + dur;
        if (s->end_ts == AV_NOPTS_VALUE || end > s->end_ts)
            s->end_ts = end;
        pkt->pts += s->offset;
    }
    if (pkt->dts != AV_NOPTS_VALUE)
        pkt->dts += s->offset;
}

// Reads the next packet of our stream into s->pkt. Returns 0, REEL_EOS or
// an error (already reported).
static int read_packet(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    for (;;) {
        int rc = av_read_frame(s->fmt, s->pkt);
        if (rc >= 0) {
            if (s->pkt->stream_index == s->index)
                return 0;
            av_packet_unref(s->pkt);
            continue;
        }
        if (reel_element_should_stop(e))
            return REEL_EOS;
        if (rc == AVERROR(EAGAIN)) {
            // A device with nothing yet: wait a little, wake on stop.
            if (!reel_element_wait_until(e, g_get_monotonic_time() + 5000))
                return REEL_EOS;
            continue;
        }
        if (rc == AVERROR_EOF) {
            const AVStream *st = s->fmt->streams[s->index];
            if (s->plays == 0 && s->start_time <= 0 && st->nb_frames > 0 && s->packets_this_play < st->nb_frames)
                reel_element_warning(e, "'%s' ended early: %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                                     " packets (truncated?)", s->location, s->packets_this_play, st->nb_frames);
            if (restart_play(e))
                continue;
            return REEL_EOS;
        }
        if (s->packets == 0)
            return reel_element_error(e, REEL_EIO, "cannot read '%s': %s", s->location, reel_av_err(rc));
        // A damaged or truncated file: keep what was read.
        reel_element_warning(e, "error reading '%s' after %" G_GINT64_FORMAT " packets (%s); ending the stream",
                             s->location, s->packets, reel_av_err(rc));
        return REEL_EOS;
    }
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    (void)in;
    source_priv *s = reel_element_priv(e);
    if (!s->fmt)
        return REEL_EOS;
    int rc = read_packet(e);
    if (rc != 0)
        return rc;
    const AVStream *st = s->fmt->streams[s->index];
    shift_timestamps(s, s->pkt);
    reel_buffer *b = reel_av_wrap_packet(reel_element_output_format(e, 0), s->pkt);
    av_packet_unref(s->pkt);
    if (!b)
        return reel_element_error(e, REEL_ENOMEM, "out of memory reading '%s'", s->location);
    b->time_base = (reel_fraction){ st->time_base.num, st->time_base.den };
    b->frame_number = s->packets++;
    s->packets_this_play++;
    if (s->send_par) {
        if (reel_av_attach_codecpar(b, st->codecpar) < 0) {
            reel_buffer_unref(&b);
            return reel_element_error(e, REEL_ENOMEM, "out of memory reading '%s'", s->location);
        }
        s->send_par = false;
    }
    return reel_element_push(e, 0, b);
}

const reel_element_class reel_source_class = {
    .name = "source",
    .description = "Reads encoded video from a file, URL or capture device (libavformat)",
    .flags = REEL_CLASS_BLOCKING,
    .priv_size = sizeof(source_priv),
    .props = props,
    .min_inputs = 0, .max_inputs = 0,
    .min_outputs = 1, .max_outputs = 1,
    .output_caps = "video/encoded",
    .configure = configure,
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

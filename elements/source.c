// source: demuxes a file, URL or capture device with libavformat and sends
// the packets of one video stream downstream, undecoded.
//
// Live inputs (network streams, capture devices) are read without buffering
// ahead, their timestamps are mapped onto the run's clock (starting at 0,
// always increasing), and a stream that is lost (an error, its end, no data
// for `timeout` ms) is reopened with exponential backoff while downstream
// keeps running.
#include "elements/av_common.h"

#include <string.h>

#if REEL_WITH_CAPTURE
#include <libavdevice/avdevice.h>
#endif
#include <libavformat/avformat.h>
#include <libavutil/mathematics.h>

enum { LIVE_AUTO, LIVE_TRUE, LIVE_FALSE };
enum { ON_FAILURE_AUTO, ON_FAILURE_RETRY, ON_FAILURE_DROP, ON_FAILURE_FAIL };
enum { RTSP_AUTO, RTSP_TCP, RTSP_UDP };

// Backoff between reconnect attempts doubles up to this (or retry-delay,
// when that is longer).
#define MAX_RETRY_DELAY_MS 10000
// Live demuxer probing: enough to see the parameter sets of a stream joined
// mid-GOP, short because formats without a header (MPEG-TS) probe for all of
// it and, unbuffered, what was read while probing is not sent.
#define LIVE_PROBESIZE (1 << 20)
#define LIVE_ANALYZE_US (AV_TIME_BASE)
// After (re)connecting, packets before the first keyframe are dropped, as a
// decoder could only conceal them; a stream that never marks keyframes is
// let through after this many.
#define MAX_PACKETS_BEFORE_KEY 300

typedef struct source_priv {
    char *location;
    char *format;
    int stream;
    int loop;
    double start_time;
    int live;
    int rtsp_transport;
    int timeout_ms;
    int retry_max;
    int retry_delay_ms;
    int on_failure;
    int num_buffers;

    AVFormatContext *fmt;
    AVPacket *pkt;
    int index;            // the stream we read
    bool is_live;
    bool send_par;        // attach the codec parameters to the next packet
    int64_t packets;      // packets sent this run
    int64_t packets_this_play;
    int plays;            // plays finished
    int64_t offset;       // added to timestamps after each loop (files), or to map a live stream (out_tb)
    int64_t first_ts, end_ts; // span of this play's timestamps, for the offset

    // Live inputs.
    int64_t last_data_us;  // monotonic time data last arrived; the timeout counts from it
    bool timed_out;        // the last blocking call gave up for want of data
    AVRational out_tb;     // time base of the packets sent: the first stream's
    reel_caps out_caps;    // format of the packets sent (changes when a reconnect brings another stream)
    bool have_caps;
    bool rebase;           // the next timestamp sets `offset` (a new stream)
    bool await_key;        // drop packets until a keyframe
    int skipped;           // packets dropped waiting for it
    bool discont;          // mark the next packet sent
    int64_t last_dts;      // out_tb, of the last packet sent; AV_NOPTS_VALUE before any (or without dts)
    int64_t max_ts;        // out_tb, the latest pts or dts sent; AV_NOPTS_VALUE before any
    int64_t last_sent_us;  // monotonic time a packet was last sent
    int64_t reconnects;    // reconnect attempts this run
    int failure;           // on_failure resolved at start: RETRY, DROP or FAIL
    bool waiting;          // not opened at the start: the branch waits aside (REEL_AGAIN from open)
    int64_t wait_delay_ms; // before the next attempt to open while waiting
} source_priv;

static const reel_enum_value live_values[] = {
    { "auto", LIVE_AUTO, "live for network URLs (rtsp, udp, rtp, srt, tcp, http) and capture devices" },
    { "true", LIVE_TRUE, "a live input: no frame count, no looping, no demuxer buffering" },
    { "false", LIVE_FALSE, "a file: read as fast as downstream takes it" },
    { NULL },
};

static const reel_enum_value on_failure_values[] = {
    { "auto", ON_FAILURE_AUTO, "retry for a live input in a pipeline with other sources (unless retry-max is set), "
                               "else fail" },
    { "retry", ON_FAILURE_RETRY, "reconnect forever, whatever retry-max says; the other streams run meanwhile" },
    { "drop", ON_FAILURE_DROP, "after retry-max attempts, end this stream only; the others go on" },
    { "fail", ON_FAILURE_FAIL, "after retry-max attempts, fail the run" },
    { NULL },
};

static const reel_enum_value rtsp_values[] = {
    { "auto", RTSP_AUTO, "UDP, falling back to TCP (FFmpeg's default)" },
    { "tcp", RTSP_TCP, "interleaved in the RTSP connection: no loss, survives NAT" },
    { "udp", RTSP_UDP, "RTP over UDP: lowest latency, packets may be lost" },
    { NULL },
};

static const reel_prop props[] = {
    { "location", REEL_PROP_STRING, offsetof(source_priv, location), NULL, .flags = REEL_PROP_READS_URL,
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
    { "rtsp-transport", REEL_PROP_ENUM, offsetof(source_priv, rtsp_transport), "auto", .values = rtsp_values,
      .help = "how an rtsp:// input carries its packets" },
    { "timeout", REEL_PROP_INT, offsetof(source_priv, timeout_ms), "5000", 0, INT32_MAX,
      .help = "live: milliseconds without data after which the stream counts as lost; 0: wait forever" },
    { "retry-max", REEL_PROP_INT, offsetof(source_priv, retry_max), "10", -1, INT32_MAX,
      .help = "live: reconnect attempts after the stream is lost, then an error; 0: end the stream; -1: forever" },
    { "retry-delay", REEL_PROP_INT, offsetof(source_priv, retry_delay_ms), "500", 1, 3600000,
      .help = "live: milliseconds before the first reconnect attempt; doubles per attempt up to 10 s "
              "(or retry-delay, when longer)" },
    { "on-failure", REEL_PROP_ENUM, offsetof(source_priv, on_failure), "auto", .values = on_failure_values,
      .help = "live: what a lost stream does once reconnecting has not brought it back" },
    { "num-buffers", REEL_PROP_INT, offsetof(source_priv, num_buffers), "-1", -1, INT32_MAX,
      .help = "packets of the stream to send, over all loops, then end the stream; -1: all" },
    { NULL },
};

// Makes blocking reads give up when the pipeline stops, so that Ctrl-C ends
// a run at once, and, on a live input, when no data came for `timeout` ms.
static int interrupt_cb(void *opaque)
{
    reel_element *e = opaque;
    source_priv *s = reel_element_priv(e);
    if (reel_element_pipeline(e) && reel_element_should_stop(e))
        return 1;
    if (s->is_live && s->timeout_ms > 0 && g_get_monotonic_time() - s->last_data_us > s->timeout_ms * INT64_C(1000)) {
        s->timed_out = true;
        return 1;
    }
    return 0;
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

// Demuxer options of a live input: the RTSP transport asked for.
static AVDictionary *live_options(const source_priv *s)
{
    AVDictionary *opts = NULL;
    if (s->rtsp_transport != RTSP_AUTO)
        av_dict_set(&opts, "rtsp_transport", s->rtsp_transport == RTSP_TCP ? "tcp" : "udp", 0);
    return opts;
}

// A live input of known duration and size (a file served over HTTP) ends at
// its end instead of reconnecting; a live stream has neither.
static bool has_end(const source_priv *s)
{
    return s->fmt->duration > 0 && s->fmt->pb && avio_size(s->fmt->pb) > 0;
}

// Picks the video stream to read and discards the others. Returns 0 or a
// REEL_E* code with *why set.
static int pick_stream(source_priv *s, char **why)
{
    if (s->stream < 0) {
        s->index = av_find_best_stream(s->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        if (s->index < 0) {
            *why = g_strdup_printf("'%s' has no video stream", s->location);
            return REEL_EIO;
        }
    } else if (s->stream >= (int)s->fmt->nb_streams ||
               s->fmt->streams[s->stream]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) {
        *why = g_strdup_printf("stream %d of '%s' is not a video stream (it has %u streams)", s->stream, s->location,
                               s->fmt->nb_streams);
        return REEL_EINVAL;
    } else {
        s->index = s->stream;
    }
    // The demuxer drops packets of other streams without returning them.
    for (unsigned i = 0; i < s->fmt->nb_streams; i++)
        if ((int)i != s->index)
            s->fmt->streams[i]->discard = AVDISCARD_ALL;
    return 0;
}

// Opens the input, reads its stream parameters and picks the stream; posts
// nothing, so that a reconnect attempt can fail quietly. Returns 0 or a
// REEL_E* code with *why (g_free it) naming the input and the cause.
static int connect_input(reel_element *e, char **why)
{
    source_priv *s = reel_element_priv(e);
    const AVInputFormat *ifmt = NULL;
    if (s->format && *s->format && !(ifmt = av_find_input_format(s->format))) {
        *why = g_strdup_printf("unknown input format '%s'%s", s->format,
                               REEL_WITH_CAPTURE ? "" : " (this build has no capture devices: REEL_WITH_CAPTURE=OFF)");
        return REEL_EINVAL;
    }
    close_input(s);
    s->fmt = avformat_alloc_context();
    s->pkt = av_packet_alloc();
    if (!s->fmt || !s->pkt) {
        close_input(s);
        *why = g_strdup_printf("out of memory opening '%s'", s->location);
        return REEL_ENOMEM;
    }
    s->fmt->interrupt_callback = (AVIOInterruptCB){ interrupt_cb, e };
    s->is_live = is_live_input(s, ifmt);
    s->timed_out = false;
    // Opening reads the stream's headers, which takes a probe's length.
    s->last_data_us = g_get_monotonic_time() + (s->is_live ? LIVE_ANALYZE_US : 0);
    AVDictionary *opts = NULL;
    // Live: probe no longer than a keyframe interval.
    if (s->is_live) {
        s->fmt->probesize = LIVE_PROBESIZE;
        s->fmt->max_analyze_duration = LIVE_ANALYZE_US;
        // The rate comes from the stream's headers where it has one; counting
        // frames to estimate it would drop a second of video at start.
        s->fmt->fps_probe_size = 0;
        opts = live_options(s);
    }
    int rc = avformat_open_input(&s->fmt, s->location, ifmt, &opts); // frees fmt on failure
    av_dict_free(&opts);
    if (rc < 0) {
        *why = g_strdup_printf("cannot open '%s': %s", s->location, s->timed_out ? "no data" : reel_av_err(rc));
        close_input(s);
        return REEL_EIO;
    }
    if (!ifmt && !s->is_live)
        s->is_live = is_live_input(s, s->fmt->iformat);
    // The run's status line and latency figures follow live sources; their
    // frames' capture time is when they arrive (the core's stamp).
    reel_element_set_live(e, s->is_live);
    // Live: hand packets on as they come instead of holding the ones read
    // while probing (stale by then), unless the input is a whole file.
    if (s->is_live && !has_end(s))
        s->fmt->flags |= AVFMT_FLAG_NOBUFFER;
    // Probing reads for a while: the timeout counts from its start.
    s->last_data_us = g_get_monotonic_time() + (s->is_live ? LIVE_ANALYZE_US : 0);
    if ((rc = avformat_find_stream_info(s->fmt, NULL)) < 0) {
        *why = g_strdup_printf("cannot read '%s': %s", s->location, s->timed_out ? "no data" : reel_av_err(rc));
        close_input(s);
        return REEL_EIO;
    }
    s->last_data_us = g_get_monotonic_time();
    if ((rc = pick_stream(s, why)) < 0) {
        close_input(s);
        return rc;
    }
    return 0;
}

static int resolve_failure(reel_element *e);
static const char *attempts_text(const source_priv *s, char *buf, size_t size);

// An input not there at the start (a camera down) in a pipeline whose
// other streams can run without it: reports REEL_AGAIN, so that its branch
// waits aside and open is called again, which first waits out a backoff.
// on-failure=retry waits for good; drop gives up after retry-max attempts.
static int wait_to_join(reel_element *e, const char *why)
{
    source_priv *s = reel_element_priv(e);
    if (!s->waiting)
        s->failure = resolve_failure(e);
    bool may = reel_element_may_wait_to_join(e) &&
               (s->failure == ON_FAILURE_RETRY || (s->failure == ON_FAILURE_DROP && s->reconnects < s->retry_max));
    if (!may) {
        if (!s->waiting)
            return 0;
        reel_element_warning(e, "%s; gave up after %" G_GINT64_FORMAT " attempts: this stream never joins, the "
                             "others go on (on-failure=drop)", why, s->reconnects);
        reel_element_set_input_state(e, REEL_INPUT_ENDED, s->reconnects);
        return REEL_EOS;
    }
    int64_t cap_ms = MAX(MAX_RETRY_DELAY_MS, s->retry_delay_ms);
    s->wait_delay_ms = s->waiting ? MIN(s->wait_delay_ms * 2, cap_ms) : s->retry_delay_ms;
    s->waiting = true;
    s->reconnects++;
    char max_text[16];
    reel_element_warning(e, "%s; trying again in %" G_GINT64_FORMAT " ms (attempt %" G_GINT64_FORMAT " of %s)", why,
                         s->wait_delay_ms, s->reconnects, attempts_text(s, max_text, sizeof max_text));
    reel_element_set_input_state(e, REEL_INPUT_CONNECTING, s->reconnects);
    return REEL_AGAIN;
}

// Opens the input (at the start, or again while waiting to join).
// Returns 0, REEL_AGAIN (waiting: see wait_to_join), REEL_EOS (gave up
// waiting), REEL_ESTOPPED or a reported error.
static int open_input(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
#if REEL_WITH_CAPTURE
    static gsize devices_registered;
    if (g_once_init_enter(&devices_registered)) {
        avdevice_register_all();
        g_once_init_leave(&devices_registered, 1);
    }
#endif
    if (!s->location || !*s->location)
        return reel_element_error(e, REEL_EINVAL, "no input: set location=FILE or URL");
    if (s->waiting && !reel_element_wait_until(e, g_get_monotonic_time() + s->wait_delay_ms * 1000))
        return REEL_ESTOPPED;
    char *why = NULL;
    if (!s->waiting)
        s->reconnects = 0;
    if (is_live_input(s, NULL))
        reel_element_set_input_state(e, REEL_INPUT_CONNECTING, s->reconnects);
    int rc = connect_input(e, &why);
    if (rc < 0 && s->is_live) {
        int wait = wait_to_join(e, why);
        if (wait != 0) {
            g_free(why);
            return wait;
        }
    }
    if (s->is_live)
        reel_element_set_input_state(e, rc < 0 ? REEL_INPUT_ENDED : REEL_INPUT_LIVE, s->reconnects);
    if (rc < 0) {
        rc = reel_element_error(e, rc, "%s", why);
        g_free(why);
        return rc;
    }
    if (s->waiting)
        reel_element_info(e, "opened '%s' (attempt %" G_GINT64_FORMAT "); its stream joins the run", s->location,
                          s->reconnects);
    else
        s->failure = resolve_failure(e);
    s->waiting = false;
    if (s->start_time > 0 && (rc = seek_start(s)) < 0)
        reel_element_warning(e, "cannot seek to %.3f s in '%s' (%s); starting at the beginning", s->start_time,
                             s->location, reel_av_err(rc));

    s->packets = s->packets_this_play = 0;
    s->plays = 0;
    s->offset = 0;
    s->first_ts = AV_NOPTS_VALUE;
    s->end_ts = AV_NOPTS_VALUE;
    s->send_par = true;
    s->out_tb = s->fmt->streams[s->index]->time_base;
    s->have_caps = false;
    s->rebase = true;
    s->await_key = s->is_live;
    s->skipped = 0;
    s->discont = false;
    s->last_dts = AV_NOPTS_VALUE;
    s->max_ts = AV_NOPTS_VALUE;
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
    if (s->is_live || s->loop == 0) {
        if (s->num_buffers >= 0)
            reel_element_set_expected_frames(e, s->num_buffers);
        return;
    }
    int64_t n = -1;
    if (st->nb_frames > 0)
        n = st->nb_frames;
    else if (rate.num > 0 && st->duration > 0 && st->duration != AV_NOPTS_VALUE)
        n = av_rescale_q(st->duration, st->time_base, av_inv_q(rate));
    else if (rate.num > 0 && s->fmt->duration > 0)
        n = av_rescale_q(s->fmt->duration, AV_TIME_BASE_Q, av_inv_q(rate));
    if (n < 0) {
        if (s->num_buffers >= 0)
            reel_element_set_expected_frames(e, s->num_buffers);
        return;
    }
    if (s->start_time > 0 && rate.num > 0)
        n = MAX(0, n - (int64_t)(s->start_time * av_q2d(rate)));
    n *= s->loop;
    reel_element_set_expected_frames(e, s->num_buffers >= 0 ? MIN(n, s->num_buffers) : n);
}

// Before negotiation, at the same time as the other sources (a live input
// probes for up to a second).
static int open_io(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    return s->fmt ? 0 : open_input(e);
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    source_priv *s = reel_element_priv(e);
    int rc = open_io(e);
    if (rc < 0)
        return rc;
    const AVStream *st = s->fmt->streams[s->index];
    const AVCodecParameters *par = st->codecpar;
    // Raw video has its size from the container alone: none (FFmpeg
    // refused what the header claims) means a damaged header, not a size
    // the decoder will find.
    if (par->codec_id == AV_CODEC_ID_RAWVIDEO && (par->width <= 0 || par->height <= 0))
        return reel_element_error(e, REEL_EUNSUPPORTED, "'%s': stream %d is raw video without a valid frame size "
                                  "(a damaged header?)", s->location, s->index);
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
    // Opened before negotiation for the first run; stop closed it after a run.
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

// ---- live inputs ---------------------------------------------------------

static int64_t us_to_out_tb(const source_priv *s, int64_t us)
{
    return av_rescale_q(us, AV_TIME_BASE_Q, s->out_tb);
}

static int64_t frame_duration_out(const source_priv *s, const AVPacket *pkt)
{
    if (pkt->duration > 0)
        return pkt->duration;
    AVRational rate = stream_rate(s->fmt->streams[s->index]);
    return rate.num > 0 ? MAX(1, av_rescale_q(1, av_inv_q(rate), s->out_tb)) : 1;
}

// Maps a live packet's timestamps (already in out_tb) onto the run's clock:
// the first stream starts at 0; a new stream after a reconnect, or one whose
// clock jumped back, goes on from the last packet plus the time that passed,
// so that timestamps keep increasing across the whole run.
static void map_live_timestamps(source_priv *s, AVPacket *pkt)
{
    int64_t ts = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
    if (ts == AV_NOPTS_VALUE)
        return;
    // Only decode timestamps always increase (pts go back with B-frames).
    if (!s->rebase && pkt->dts != AV_NOPTS_VALUE && s->last_dts != AV_NOPTS_VALUE &&
        pkt->dts + s->offset < s->last_dts) {
        s->rebase = true;
        s->discont = true;
    }
    if (s->rebase) {
        int64_t target = 0;
        if (s->max_ts != AV_NOPTS_VALUE) {
            int64_t since = us_to_out_tb(s, g_get_monotonic_time() - s->last_sent_us);
            target = s->max_ts + MAX(since, frame_duration_out(s, pkt));
        }
        s->offset = target - ts;
        s->rebase = false;
    }
    if (pkt->pts != AV_NOPTS_VALUE)
        pkt->pts += s->offset;
    if (pkt->dts != AV_NOPTS_VALUE)
        pkt->dts += s->offset;
}

static void note_sent_timestamps(source_priv *s, const AVPacket *pkt)
{
    s->last_sent_us = g_get_monotonic_time();
    s->last_dts = pkt->dts;
    int64_t ts = MAX(pkt->pts, pkt->dts); // AV_NOPTS_VALUE is the smallest int64_t
    if (ts != AV_NOPTS_VALUE && (s->max_ts == AV_NOPTS_VALUE || ts > s->max_ts))
        s->max_ts = ts;
}

// The caps of the stream now open: those negotiated, with the codec, size
// and rate of this stream, so that a reconnect to a changed stream
// renegotiates downstream and an unchanged one does not.
static void update_caps(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    const AVStream *st = s->fmt->streams[s->index];
    if (!s->have_caps) {
        s->out_caps = *reel_element_output_format(e, 0);
        s->have_caps = true;
    }
    reel_caps c = s->out_caps;
    g_strlcpy(c.codec, avcodec_get_name(st->codecpar->codec_id), sizeof c.codec);
    reel_pixfmt pf = reel_av_from_pixfmt(st->codecpar->format);
    if (pf)
        c.pixfmts = REEL_PIXFMT_BIT(pf);
    c.width = st->codecpar->width;
    c.height = st->codecpar->height;
    AVRational rate = stream_rate(st);
    c.framerate = (reel_fraction){ rate.num, rate.den };
    // Fields the new stream leaves unknown keep their value: probing a live
    // stream can miss what the first one showed.
    if (!c.width || !c.height) {
        c.width = s->out_caps.width;
        c.height = s->out_caps.height;
    }
    if (!c.framerate.num)
        c.framerate = s->out_caps.framerate;
    if (strcmp(c.codec, s->out_caps.codec) != 0 || c.width != s->out_caps.width || c.height != s->out_caps.height)
        s->out_caps = c;
}

// The attempts a lost stream gets, or -1 for no end.
static int attempts_allowed(const source_priv *s)
{
    return s->failure == ON_FAILURE_RETRY ? -1 : s->retry_max;
}

static const char *attempts_text(const source_priv *s, char *buf, size_t size)
{
    if (attempts_allowed(s) < 0)
        return "unlimited";
    g_snprintf(buf, size, "%d", s->retry_max);
    return buf;
}

// The on-failure policy in force: `auto` retries a live input that shares
// the pipeline with other sources (one lost camera must not end the others)
// unless retry-max was given, and fails otherwise.
static int resolve_failure(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    if (s->on_failure != ON_FAILURE_AUTO)
        return s->on_failure;
    if (!s->is_live || reel_element_prop_is_set(e, "retry-max"))
        return ON_FAILURE_FAIL;
    int sources = 0;
    for (reel_element *const *x = reel_pipeline_elements(reel_element_pipeline(e)); *x; x++)
        sources += reel_element_n_inputs(*x) == 0;
    return sources > 1 ? ON_FAILURE_RETRY : ON_FAILURE_FAIL;
}

// The live stream is gone (`why`): reopens it with exponential backoff,
// posting a warning per attempt. Returns 0 with a new stream open, REEL_EOS
// when the pipeline stops meanwhile, retry-max is 0 or on-failure=drop gave
// up, or REEL_EIO (reported) when on-failure=fail gave up.
static int reconnect(reel_element *e, const char *why)
{
    source_priv *s = reel_element_priv(e);
    int allowed = attempts_allowed(s);
    if (allowed == 0) {
        reel_element_warning(e, "lost '%s' (%s) after %" G_GINT64_FORMAT " packets; ending the stream (retry-max=0)",
                             s->location, why, s->packets);
        reel_element_set_input_state(e, REEL_INPUT_ENDED, s->reconnects);
        return REEL_EOS;
    }
    avformat_close_input(&s->fmt);
    reel_element_set_input_state(e, REEL_INPUT_LOST, s->reconnects);
    char *reason = g_strdup(why);
    char max_text[16];
    int64_t delay_ms = s->retry_delay_ms;
    int64_t cap_ms = MAX(MAX_RETRY_DELAY_MS, s->retry_delay_ms);
    int rc = REEL_EOS;
    for (int attempt = 1; allowed < 0 || attempt <= allowed; attempt++) {
        reel_element_warning(e, "%s '%s' (%s); reconnecting in %" G_GINT64_FORMAT " ms (attempt %d of %s)",
                             attempt == 1 ? "lost" : "still no", s->location, reason, delay_ms, attempt,
                             attempts_text(s, max_text, sizeof max_text));
        if (!reel_element_wait_until(e, g_get_monotonic_time() + delay_ms * 1000))
            goto done;
        g_clear_pointer(&reason, g_free);
        reel_element_set_input_state(e, REEL_INPUT_LOST, ++s->reconnects);
        if (connect_input(e, &reason) == 0) {
            reel_element_info(e, "reconnected to '%s' (attempt %d)", s->location, attempt);
            reel_element_set_input_state(e, REEL_INPUT_LIVE, s->reconnects);
            s->send_par = true;
            s->rebase = true;
            s->await_key = true;
            s->skipped = 0;
            s->discont = true;
            update_caps(e);
            rc = 0;
            goto done;
        }
        if (reel_element_should_stop(e))
            goto done;
        delay_ms = MIN(delay_ms * 2, cap_ms);
    }
    if (s->failure == ON_FAILURE_DROP)
        reel_element_warning(e, "lost '%s' and gave up after %d reconnect attempts: %s; ending this stream, the "
                             "others go on (on-failure=drop)", s->location, s->retry_max, reason);
    else
        rc = reel_element_error(e, REEL_EIO, "lost '%s' and gave up after %d reconnect attempts: %s", s->location,
                                s->retry_max, reason);
done:
    if (rc != 0)
        reel_element_set_input_state(e, REEL_INPUT_ENDED, s->reconnects);
    g_free(reason);
    return rc;
}

// Why a failed read of a live input ended the stream, for the warnings.
static char *loss_reason(const source_priv *s, int averr)
{
    if (s->timed_out)
        return g_strdup_printf("no data for %d ms", s->timeout_ms);
    if (averr == AVERROR_EOF)
        return g_strdup("end of stream");
    return g_strdup(reel_av_err(averr));
}

// Whether a live packet waits for a keyframe (dropped), after a connect.
static bool before_keyframe(source_priv *s, const AVPacket *pkt)
{
    if (!s->await_key)
        return false;
    if ((pkt->flags & AV_PKT_FLAG_KEY) || ++s->skipped > MAX_PACKETS_BEFORE_KEY) {
        s->await_key = false;
        return false;
    }
    return true;
}

// ---- reading ---------------------------------------------------------------

// A file's read failed (not at its end). Returns REEL_EOS or an error.
static int file_read_failed(reel_element *e, int averr)
{
    source_priv *s = reel_element_priv(e);
    if (s->packets == 0)
        return reel_element_error(e, REEL_EIO, "cannot read '%s': %s", s->location, reel_av_err(averr));
    // A damaged or truncated file: keep what was read.
    reel_element_warning(e, "error reading '%s' after %" G_GINT64_FORMAT " packets (%s); ending the stream",
                         s->location, s->packets, reel_av_err(averr));
    return REEL_EOS;
}

// The span of our stream the header promises, in its time base: its own
// duration, else the file's when it holds nothing else (Matroska gives
// only the file's); 0 when unknown.
static int64_t promised_span(const source_priv *s)
{
    const AVStream *st = s->fmt->streams[s->index];
    if (st->duration > 0)
        return st->duration;
    if (s->fmt->nb_streams == 1 && s->fmt->duration > 0)
        return av_rescale_q(s->fmt->duration, AV_TIME_BASE_Q, st->time_base);
    return 0;
}

// A first play that ends short of what the header promises: a frame count
// where the container has one, else its duration (less half a frame, for
// rounding).
static void warn_if_short(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    const AVStream *st = s->fmt->streams[s->index];
    if (s->plays != 0 || s->start_time > 0)
        return;
    if (st->nb_frames > 0) {
        if (s->packets_this_play < st->nb_frames)
            reel_element_warning(e, "'%s' ended early: %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                                 " packets (truncated?)", s->location, s->packets_this_play, st->nb_frames);
        return;
    }
    int64_t span = promised_span(s);
    AVRational rate = stream_rate(st);
    if (span <= 0 || rate.num <= 0 || s->first_ts == AV_NOPTS_VALUE)
        return;
    int64_t frame = av_rescale_q(1, av_inv_q(rate), st->time_base);
    int64_t played = s->end_ts - s->first_ts;
    if (played < span - frame / 2)
        reel_element_warning(e, "'%s' ended early: %.3f of %.3f s (truncated?)", s->location,
                             played * av_q2d(st->time_base), span * av_q2d(st->time_base));
}

static int file_ended(reel_element *e)
{
    warn_if_short(e);
    return restart_play(e) ? 0 : REEL_EOS;
}

// Reads the next packet of our stream into s->pkt. Returns 0, REEL_EOS or
// an error (already reported).
static int read_packet(reel_element *e)
{
    source_priv *s = reel_element_priv(e);
    // The timeout counts from when a packet is wanted: time spent waiting
    // for a full link downstream is not the stream's silence.
    s->last_data_us = g_get_monotonic_time();
    for (;;) {
        int rc = av_read_frame(s->fmt, s->pkt);
        if (rc >= 0) {
            s->last_data_us = g_get_monotonic_time();
            if (s->pkt->stream_index == s->index && !(s->is_live && before_keyframe(s, s->pkt)))
                return 0;
            av_packet_unref(s->pkt);
            continue;
        }
        if (reel_element_should_stop(e))
            return REEL_EOS;
        if (rc == AVERROR(EAGAIN) && !interrupt_cb(e)) {
            // A device with nothing yet: wait a little, wake on stop.
            if (!reel_element_wait_until(e, g_get_monotonic_time() + 5000))
                return REEL_EOS;
            continue;
        }
        if (s->is_live && s->packets > 0 && !(rc == AVERROR_EOF && has_end(s))) {
            char *why = loss_reason(s, rc);
            rc = reconnect(e, why);
            g_free(why);
            if (rc != 0)
                return rc;
            continue;
        }
        if (rc == AVERROR_EOF && !s->timed_out) {
            if (file_ended(e) == 0)
                continue;
            return REEL_EOS;
        }
        if (s->timed_out && s->packets == 0)
            return reel_element_error(e, REEL_EIO, "no data from '%s' for %d ms", s->location, s->timeout_ms);
        return file_read_failed(e, rc);
    }
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    (void)in;
    source_priv *s = reel_element_priv(e);
    if (!s->fmt || (s->num_buffers >= 0 && s->packets >= s->num_buffers))
        return REEL_EOS;
    int rc = read_packet(e);
    if (rc != 0) {
        if (s->is_live)
            reel_element_set_input_state(e, REEL_INPUT_ENDED, s->reconnects);
        return rc;
    }
    const AVStream *st = s->fmt->streams[s->index];
    if (s->is_live) {
        av_packet_rescale_ts(s->pkt, st->time_base, s->out_tb);
        map_live_timestamps(s, s->pkt);
        note_sent_timestamps(s, s->pkt);
    } else {
        shift_timestamps(s, s->pkt);
    }
    if (!s->have_caps) {
        s->out_caps = *reel_element_output_format(e, 0);
        s->have_caps = true;
    }
    reel_buffer *b = reel_av_wrap_packet(&s->out_caps, s->pkt);
    av_packet_unref(s->pkt);
    if (!b)
        return reel_element_error(e, REEL_ENOMEM, "out of memory reading '%s'", s->location);
    b->time_base = (reel_fraction){ s->out_tb.num, s->out_tb.den };
    b->frame_number = s->packets++;
    s->packets_this_play++;
    if (s->discont) {
        b->flags |= REEL_BUFFER_FLAG_DISCONT;
        s->discont = false;
    }
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
    .open = open_io,
    .configure = configure,
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

// sink: writes encoded packets to a file with libavformat (mp4, mkv, nut,
// avi, mpegts, raw streams, image sequences). The container opens on the
// first packet, which carries the codec parameters; `stop` writes the
// trailer on every kind of ending, so whatever was written stays playable.
//
// A single-file container is written to LOCATION.part beside it and renamed
// into place once finalized (end of stream, error, Ctrl-C or SIGTERM: the
// trailer first, then the rename), so a run killed outright never leaves a
// half-written file under the final name: only the .part. Image sequences,
// HLS, standard output (location=-), URLs and files that are not regular
// (a FIFO, /dev/null) are written directly.
#include "elements/av_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>

typedef struct sink_priv {
    char *location;
    char *format;
    char *options;

    const AVOutputFormat *ofmt;
    AVIOContext *pb;       // opened in start, so an unwritable path fails early
    AVFormatContext *oc;
    AVBSFContext *bsf;     // puts out-of-band headers in-band, when the container needs that
    AVPacket *pkt;
    AVRational tb;         // time base of the packets coming in
    bool header_written;
    bool write_failed;     // a packet could not be written: the output is incomplete
    bool proto_opened;        // reel opened the protocol (not the muxer itself)
    AVDictionary *proto_left; // ... and these options it did not take
    char *part_path;       // the temporary name written to, or NULL when writing directly
    char *final_path;      // where part_path goes when finalized (location, or its link's target)
} sink_priv;

static const reel_prop props[] = {
    { "location", REEL_PROP_STRING, offsetof(sink_priv, location), NULL, .flags = REEL_PROP_WRITES_URL,
      .help = "output file: out.mp4, out.mkv, frame-%05d.png (a numbered image sequence), - (standard output); "
              "a single file is written as LOCATION.part and renamed to LOCATION once finalized" },
    { "format", REEL_PROP_STRING, offsetof(sink_priv, format), NULL,
      .help = "container (mp4, matroska, nut, mpegts, hls, flv, image2, ...); default: from the file name "
              "(.m3u8: HLS), or the URL's scheme (rtmp: flv, srt and udp: mpegts, rtsp: rtsp)" },
    { "options", REEL_PROP_STRING, offsetof(sink_priv, options), NULL,
      .help = "the container's and the protocol's own options, KEY=VALUE:KEY=VALUE (`ffmpeg -h muxer=hls`: "
              "hls_time=2:hls_list_size=6:hls_flags=delete_segments); one neither takes is warned about" },
    { NULL },
};

// Containers for the URLs that name a protocol, not a file.
static const struct {
    const char *scheme, *format;
} scheme_formats[] = {
    { "rtmp", "flv" }, { "rtmps", "flv" }, { "srt", "mpegts" }, { "udp", "mpegts" },
    { "tcp", "mpegts" }, { "rtsp", "rtsp" }, { "rtsps", "rtsp" },
};

static const AVOutputFormat *guess_format(const sink_priv *s)
{
    if (s->format && *s->format)
        return av_guess_format(s->format, NULL, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(scheme_formats); i++) {
        size_t n = strlen(scheme_formats[i].scheme);
        if (g_ascii_strncasecmp(s->location, scheme_formats[i].scheme, n) == 0 && s->location[n] == ':')
            return av_guess_format(scheme_formats[i].format, NULL, NULL);
    }
    return av_guess_format(NULL, s->location, NULL);
}

// A local path (not a URL, not standard output).
static bool is_local(const char *location)
{
    // rtsp:// is a muxer, not a protocol avio knows: "://" says URL too.
    const char *proto = avio_find_protocol_name(location);
    return strcmp(location, "-") != 0 && (proto ? strcmp(proto, "file") == 0 : !strstr(location, "://"));
}

// The options property as a dictionary (*opts NULL when unset).
static int parse_options(reel_element *e, const sink_priv *s, AVDictionary **opts)
{
    *opts = NULL;
    if (!s->options || !*s->options || av_dict_parse_string(opts, s->options, "=", ":", 0) >= 0)
        return 0;
    av_dict_free(opts);
    return reel_element_error(e, REEL_EINVAL, "options '%s' are not KEY=VALUE:KEY=VALUE", s->options);
}

static const char part_suffix[] = ".part";

// Where the container's bytes go: for a local path that is, or will be, a
// regular file, a temporary name beside it (s->part_path) renamed over
// s->final_path when finalized; else the location itself. Returns the URL
// to open (owned by s, or location).
static const char *choose_target(sink_priv *s)
{
    if (strcmp(s->location, "-") == 0)
        return "pipe:1";
    const char *proto = avio_find_protocol_name(s->location);
    if (!proto || strcmp(proto, "file") != 0 || g_str_has_prefix(s->location, "file:"))
        return s->location; // a URL or pipe: written as it comes
    struct stat st;
    char *final = NULL;
    if (lstat(s->location, &st) != 0)
        final = g_strdup(s->location); // a new file
    else if (S_ISREG(st.st_mode))
        final = g_strdup(s->location);
    else if (S_ISLNK(st.st_mode) && stat(s->location, &st) == 0 && S_ISREG(st.st_mode))
        final = realpath(s->location, NULL); // replace the file the link names, keep the link
    if (!final)
        return s->location; // a FIFO, a device, a dangling link: no rename possible
    s->final_path = g_strdup(final);
    free(final);
    s->part_path = g_strconcat(s->final_path, part_suffix, NULL);
    return s->part_path;
}

static int start(reel_element *e)
{
    sink_priv *s = reel_element_priv(e);
    if (!s->location || !*s->location)
        return reel_element_error(e, REEL_EINVAL, "no location set: where should the output go?");
    s->ofmt = guess_format(s);
    if (!s->ofmt) {
        if (s->format && *s->format)
            return reel_element_error(e, REEL_EUNSUPPORTED, "this FFmpeg has no '%s' container", s->format);
        return reel_element_error(e, REEL_EINVAL,
                                  "cannot tell the container from '%s': use a known extension or set format=",
                                  s->location);
    }
    // A codec the container cannot hold fails now, not after the first frame
    // was encoded (0: no; 1: yes; negative: the muxer cannot tell). Asked
    // leniently: matroska writes what it has no native id for (VFW).
    const AVCodecDescriptor *d = avcodec_descriptor_get_by_name(reel_element_input_format(e, 0)->codec);
    if (d && avformat_query_codec(s->ofmt, d->id, FF_COMPLIANCE_EXPERIMENTAL) == 0)
        return reel_element_error(e, REEL_EUNSUPPORTED, "the %s container cannot hold %s (for '%s')",
                                  s->ofmt->name, d->name, s->location);
    // Options are checked now; the protocol takes its own (srt's latency,
    // rtmp's) when it opens, the container the rest at its header.
    AVDictionary *opts = NULL;
    int rc = parse_options(e, s, &opts);
    if (rc < 0)
        return rc;
    if ((s->ofmt->flags & AVFMT_NOFILE) && is_local(s->location)) {
        // The muxer opens its files itself (an image sequence, HLS
        // segments): their directory must be writable.
        char *dir = g_path_get_dirname(s->location);
        int ok = g_access(dir, W_OK) == 0;
        int err = errno;
        g_free(dir);
        if (!ok)
            rc = reel_element_error(e, REEL_EIO, "cannot write '%s': %s", s->location, g_strerror(err));
    } else if (!(s->ofmt->flags & AVFMT_NOFILE)) {
        const char *url = choose_target(s);
        int ret = avio_open2(&s->pb, url, AVIO_FLAG_WRITE, NULL, &opts);
        s->proto_left = g_steal_pointer(&opts);
        s->proto_opened = true;
        if (ret < 0 && s->part_path)
            rc = reel_element_error(e, REEL_EIO, "cannot write '%s' (via '%s'): %s", s->location, s->part_path,
                                    reel_av_err(ret));
        else if (ret < 0)
            rc = reel_element_error(e, REEL_EIO, "cannot write '%s': %s", s->location, reel_av_err(ret));
    }
    av_dict_free(&opts);
    if (rc < 0)
        return rc;
    s->pkt = av_packet_alloc();
    s->tb = (AVRational){ 0, 1 };
    s->write_failed = false;
    return 0;
}

// Whether extradata is an Annex B header (start codes), which can go in-band
// as it is; avcC/hvcC from an mp4 cannot, the muxer converts those packets.
static bool annexb_extradata(const AVCodecParameters *par)
{
    const uint8_t *d = par->extradata;
    int n = par->extradata_size;
    return (n >= 3 && d[0] == 0 && d[1] == 0 && d[2] == 1)
           || (n >= 4 && d[0] == 0 && d[1] == 0 && d[2] == 0 && d[3] == 1);
}

static int open_bsf(reel_element *e, const AVStream *st)
{
    sink_priv *s = reel_element_priv(e);
    const AVBitStreamFilter *f = av_bsf_get_by_name("dump_extra");
    int ret = f ? av_bsf_alloc(f, &s->bsf) : AVERROR_BSF_NOT_FOUND;
    if (ret >= 0)
        ret = avcodec_parameters_copy(s->bsf->par_in, st->codecpar);
    if (ret >= 0) {
        s->bsf->time_base_in = s->tb;
        ret = av_bsf_init(s->bsf);
    }
    if (ret < 0)
        return reel_element_error(e, REEL_EUNSUPPORTED, "cannot set up the dump_extra filter for %s: %s",
                                  s->ofmt->name, reel_av_err(ret));
    return 0;
}

// Creates the container for the first packet.
static int open_output(reel_element *e, const reel_buffer *buf)
{
    sink_priv *s = reel_element_priv(e);
    const reel_caps *f = &buf->format;
    int ret = avformat_alloc_output_context2(&s->oc, s->ofmt, NULL, s->location);
    if (ret < 0)
        return reel_element_error(e, REEL_ENOMEM, "cannot create the %s muxer: %s", s->ofmt->name,
                                  reel_av_err(ret));
    AVStream *st = avformat_new_stream(s->oc, NULL);
    if (!st)
        return reel_element_error(e, REEL_ENOMEM, "cannot create a stream");
    const AVCodecParameters *par = reel_buffer_get_meta(buf, &reel_av_codecpar_meta);
    if (par) {
        if ((ret = avcodec_parameters_copy(st->codecpar, par)) < 0)
            return reel_element_error(e, REEL_ENOMEM, "cannot copy codec parameters: %s", reel_av_err(ret));
    } else {
        // No parameters came with the stream: what the caps say is all we know.
        const AVCodecDescriptor *d = avcodec_descriptor_get_by_name(f->codec);
        if (!d)
            return reel_element_error(e, REEL_EFORMAT,
                                      "the first packet carries no codec parameters and codec '%s' is unknown",
                                      f->codec);
        st->codecpar->codec_type = AVMEDIA_TYPE_VIDEO;
        st->codecpar->codec_id = d->id;
        st->codecpar->width = f->width;
        st->codecpar->height = f->height;
    }
    // Keep the tag (rawvideo's says the pixel layout) unless this container
    // maps it to another codec and has one of its own, as ffmpeg does.
    unsigned int tag;
    if (s->ofmt->codec_tag && av_codec_get_id(s->ofmt->codec_tag, st->codecpar->codec_tag) != st->codecpar->codec_id
        && av_codec_get_tag2(s->ofmt->codec_tag, st->codecpar->codec_id, &tag))
        st->codecpar->codec_tag = 0;
    s->tb = buf->time_base.num > 0 && buf->time_base.den > 0 ? (AVRational){ buf->time_base.num, buf->time_base.den }
            : f->framerate.num > 0 ? (AVRational){ f->framerate.den, f->framerate.num }
                                   : (AVRational){ 1, 90000 };
    st->time_base = s->tb;
    if (f->framerate.num > 0 && f->framerate.den > 0)
        st->avg_frame_rate = st->r_frame_rate = (AVRational){ f->framerate.num, f->framerate.den };

    if (!(s->ofmt->flags & AVFMT_GLOBALHEADER) && st->codecpar->extradata_size > 0
        && (st->codecpar->codec_id == AV_CODEC_ID_H264 || st->codecpar->codec_id == AV_CODEC_ID_HEVC)
        && annexb_extradata(st->codecpar) && (ret = open_bsf(e, st)) < 0)
        return ret;

    if (!(s->ofmt->flags & AVFMT_NOFILE))
        s->oc->pb = g_steal_pointer(&s->pb);
    AVDictionary *opts = NULL;
    if ((ret = parse_options(e, s, &opts)) < 0)
        return ret;
    // One image file without a number in its name: keep overwriting it.
    if (strcmp(s->ofmt->name, "image2") == 0 && !strchr(s->location, '%'))
        av_dict_set(&opts, "update", "1", 0);
    ret = avformat_write_header(s->oc, &opts);
    // What neither the protocol nor the container took was meant for
    // something else: say so rather than ignore it.
    const AVDictionaryEntry *t = NULL;
    while ((t = av_dict_get(opts, "", t, AV_DICT_IGNORE_SUFFIX)))
        if (!s->proto_opened || av_dict_get(s->proto_left, t->key, NULL, 0))
            reel_element_warning(e, "the %s container ignores %s=%s", s->ofmt->name, t->key, t->value);
    av_dict_free(&opts);
    if (ret < 0)
        return reel_element_error(e, REEL_EFORMAT, "cannot write a %s header for %s to '%s': %s", s->ofmt->name,
                                  avcodec_get_name(st->codecpar->codec_id), s->location, reel_av_err(ret));
    s->header_written = true;
    return 0;
}

static int write_packet(reel_element *e, AVPacket *pkt)
{
    sink_priv *s = reel_element_priv(e);
    av_packet_rescale_ts(pkt, s->tb, s->oc->streams[0]->time_base);
    pkt->stream_index = 0;
    int ret = av_interleaved_write_frame(s->oc, pkt);
    if (ret < 0) {
        s->write_failed = true;
        return reel_element_error(e, REEL_EIO, "cannot write to '%s': %s", s->location, reel_av_err(ret));
    }
    return 0;
}

// Passes a packet (or NULL: the end) through the filter, writing what comes out.
static int filter_and_write(reel_element *e, AVPacket *pkt)
{
    sink_priv *s = reel_element_priv(e);
    if (!s->bsf)
        return pkt ? write_packet(e, pkt) : 0;
    int ret = av_bsf_send_packet(s->bsf, pkt);
    if (ret < 0)
        return reel_element_error(e, REEL_EFORMAT, "dump_extra failed: %s", reel_av_err(ret));
    while ((ret = av_bsf_receive_packet(s->bsf, s->pkt)) >= 0) {
        int rc = write_packet(e, s->pkt);
        av_packet_unref(s->pkt);
        if (rc < 0)
            return rc;
    }
    if (ret != AVERROR(EAGAIN) && ret != AVERROR_EOF)
        return reel_element_error(e, REEL_EFORMAT, "dump_extra failed: %s", reel_av_err(ret));
    return 0;
}

static void release_buffer(void *opaque, uint8_t *data)
{
    (void)data;
    reel_buffer *b = opaque;
    reel_buffer_unref(&b);
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    sink_priv *s = reel_element_priv(e);
    int rc = 0;
    if (!s->header_written) {
        // A failed first attempt was reported; do not try again per packet.
        rc = s->oc ? REEL_EFORMAT : open_output(e, buf);
        if (rc < 0)
            goto done;
    }
    // The packet refers to the buffer's bytes and holds a reference, so the
    // muxer may keep it (interleaving) without a copy.
    AVPacket *pkt = av_packet_alloc();
    if (!pkt) {
        rc = reel_element_error(e, REEL_ENOMEM, "cannot allocate a packet");
        goto done;
    }
    pkt->buf = av_buffer_create(buf->data, buf->size, release_buffer, reel_buffer_ref(buf), AV_BUFFER_FLAG_READONLY);
    if (!pkt->buf) {
        reel_buffer *extra = buf;
        reel_buffer_unref(&extra); // the reference taken for the AVBufferRef
        av_packet_free(&pkt);
        rc = reel_element_error(e, REEL_ENOMEM, "cannot wrap a packet");
        goto done;
    }
    pkt->data = buf->data;
    pkt->size = (int)buf->size;
    pkt->pts = buf->pts == REEL_PTS_NONE ? AV_NOPTS_VALUE : buf->pts;
    pkt->dts = buf->dts == REEL_PTS_NONE ? AV_NOPTS_VALUE : buf->dts;
    pkt->duration = buf->duration;
    if (buf->flags & REEL_BUFFER_FLAG_KEYFRAME)
        pkt->flags |= AV_PKT_FLAG_KEY;
    // Packets in another time base than the first (a new stream joined):
    // bring them to the one the stream was set up with.
    AVRational tb = { buf->time_base.num, buf->time_base.den };
    if (tb.num > 0 && tb.den > 0 && av_cmp_q(tb, s->tb) != 0)
        av_packet_rescale_ts(pkt, tb, s->tb);
    rc = filter_and_write(e, pkt);
    av_packet_free(&pkt);
done:
    reel_buffer_unref(&buf);
    return rc;
}

// Puts the finalized temporary file in place, or says why it stays where it is.
static void publish(reel_element *e, bool complete)
{
    sink_priv *s = reel_element_priv(e);
    if (!complete)
        reel_element_warning(e, "'%s' is incomplete: left as '%s'", s->final_path, s->part_path);
    else if (g_rename(s->part_path, s->final_path) != 0)
        reel_element_warning(e, "cannot rename '%s' to '%s': %s", s->part_path, s->final_path, g_strerror(errno));
}

static void close_output(reel_element *e)
{
    sink_priv *s = reel_element_priv(e);
    bool complete = !s->write_failed;
    if (s->header_written) {
        if (s->bsf && filter_and_write(e, NULL) < 0)
            complete = false;
        int ret = av_write_trailer(s->oc);
        if (ret < 0) {
            complete = false;
            reel_element_warning(e, "cannot finish '%s': %s", s->location, reel_av_err(ret));
        }
    }
    if (s->oc && !(s->oc->oformat->flags & AVFMT_NOFILE) && s->oc->pb) {
        // A failed write of the last bytes shows in pb->error once flushed;
        // closing reports a failed close.
        avio_flush(s->oc->pb);
        int ret = s->oc->pb->error;
        int closed = avio_closep(&s->oc->pb);
        ret = ret < 0 ? ret : closed;
        if (ret < 0) {
            complete = false;
            reel_element_warning(e, "error closing '%s': %s", s->location, reel_av_err(ret));
        }
    }
    // Opened but nothing ever arrived: an empty file with no header plays
    // nowhere, so leave none behind: the temporary file goes (what is
    // written directly, a pipe or a device, is not ours to remove).
    bool unused = s->pb != NULL || (s->oc && !s->header_written && !(s->ofmt->flags & AVFMT_NOFILE));
    avio_closep(&s->pb);
    if (unused && s->part_path)
        g_unlink(s->part_path);
    else if (s->header_written && s->part_path)
        publish(e, complete);
    g_clear_pointer(&s->part_path, g_free);
    g_clear_pointer(&s->final_path, g_free);
    avformat_free_context(s->oc);
    s->oc = NULL;
    av_bsf_free(&s->bsf);
    av_packet_free(&s->pkt);
    av_dict_free(&s->proto_left);
    s->proto_opened = false;
    s->header_written = false;
}

static void stop(reel_element *e)
{
    close_output(e);
}

const reel_element_class reel_sink_class = {
    .name = "sink",
    .description = "Writes encoded video with libavformat: a file (mp4, mkv, nut, avi, ts, image sequences), HLS "
                   "(.m3u8 and segments), or a stream pushed to rtmp://, srt://, rtsp://, udp://",
    .priv_size = sizeof(sink_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 0,
    .input_caps = "video/encoded,memory=host",
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

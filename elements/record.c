// record: event clips with pre-roll. Keeps the last `pre` seconds of a
// stream's encoded packets (from the keyframe before them, bounded in
// bytes); on a trigger writes a clip from the keyframe at or before `pre`
// seconds before it to `post` seconds after the last trigger, triggers
// during a clip extending it up to `max-length`. Triggers: events of
// `zones` and detections of a class in the packets' metadata (after
// `encode`, which hands each frame's findings to its packet), or setting
// `mark` while running (an application, `reel serve`'s PATCH); with
// `snapshot`, the trigger's picture as a JPEG too. A clip is
// written as NAME.part and renamed once finalized, like `sink`, with
// NAME.json beside it (its span, its trigger and the zones events in it); a
// clip that cannot be written (the disk full) is dropped with a warning and
// the stream goes on.
#include "elements/av_common.h"
#include "elements/meta_json.h"
#include "base/json.h"

#include <math.h>

#include <glib/gstdio.h>
#include <libavformat/avformat.h>

typedef struct record_priv {
    char *location;
    double pre_s, post_s, max_s;
    int buffer_mb;
    char *trigger;
    char *mark;
    bool snapshot;

    char **rules;           // parsed `trigger`: TYPE, TYPE@REGION or class:LABEL; NULL: any event
    GQueue ring;            // reel_buffer, oldest first, from a keyframe
    int64_t ring_bytes;
    bool warned_bytes;
    AVCodecParameters *par; // the stream's, from the packets that carried them
    bool marked;            // `mark` was set: record at the next packet

    // The clip being written.
    AVFormatContext *oc;
    char *path, *part;
    AVRational tb;
    double start_s, stop_s; // pts seconds: its first packet, and where it ends
    double last_s;          // its last packet's
    char *event;            // what started it
    int stream;
    GString *events;        // the zones events of its packets, JSON items
    int clips;
} record_priv;

static const char *check_trigger(const void *value);

static const reel_prop props[] = {
    { "location", REEL_PROP_STRING, offsetof(record_priv, location), "clip-{stream}-{time}.mkv",
      .flags = REEL_PROP_WRITES_FILE,
      .help = "each clip's file: {stream}, {time} (the trigger's UTC time, YYYYMMDD-HHMMSS), {event} (what "
              "triggered it, as cross-door), {n} (clips so far); the extension picks the container" },
    { "pre", REEL_PROP_DOUBLE, offsetof(record_priv, pre_s), "5", 0, 3600, .flags = REEL_PROP_MUTABLE,
      .help = "seconds kept before a trigger (from the keyframe at or before them)" },
    { "post", REEL_PROP_DOUBLE, offsetof(record_priv, post_s), "5", 0, 3600, .flags = REEL_PROP_MUTABLE,
      .help = "seconds recorded after the last trigger" },
    { "max-length", REEL_PROP_DOUBLE, offsetof(record_priv, max_s), "300", 1, 86400, .flags = REEL_PROP_MUTABLE,
      .help = "longest clip in seconds: triggers during a clip extend it up to this" },
    { "buffer-mb", REEL_PROP_INT, offsetof(record_priv, buffer_mb), "64", 1, 4096,
      .help = "the pre-roll's bound in MiB, whatever the bitrate (a shorter pre-roll past it, with a warning)" },
    { "trigger", REEL_PROP_STRING, offsetof(record_priv, trigger), "any", .check = check_trigger,
      .help = "what starts a clip, comma-separated: any (every event), enter, leave, loiter, cross (TYPE@NAME: "
              "of that zone or line only), class:LABEL (a detection of that class), none (only mark)" },
    { "snapshot", REEL_PROP_BOOL, offsetof(record_priv, snapshot), "false", .flags = REEL_PROP_MUTABLE,
      .help = "also write the trigger's picture as NAME.jpg (what the clip shows, overlay included)" },
    { "mark", REEL_PROP_STRING, offsetof(record_priv, mark), NULL, .flags = REEL_PROP_MUTABLE,
      .help = "set while running to record now; the value is the clip's {event}" },
    { NULL },
};

// ---- triggers ----------------------------------------------------------------------

static const char *const event_types[] = { "enter", "leave", "loiter", "cross" };

static bool valid_rule(const char *r)
{
    if (g_str_has_prefix(r, "class:"))
        return r[6] != '\0';
    if (strcmp(r, "any") == 0 || strcmp(r, "none") == 0)
        return true;
    const char *at = strchr(r, '@');
    size_t n = at ? (size_t)(at - r) : strlen(r);
    for (size_t i = 0; i < G_N_ELEMENTS(event_types); i++)
        if (strlen(event_types[i]) == n && strncmp(r, event_types[i], n) == 0)
            return !at || at[1] != '\0';
    return false;
}

static char **parse_rules(const char *text, char **bad)
{
    char **rules = g_strsplit(text ? text : "any", ",", -1);
    for (char **r = rules; *r; r++) {
        g_strstrip(*r);
        if (!valid_rule(*r)) {
            if (bad)
                *bad = g_strdup(*r);
            g_strfreev(rules);
            return NULL;
        }
    }
    return rules;
}

static const char *check_trigger(const void *value)
{
    char **rules = parse_rules(*(char *const *)value, NULL);
    g_strfreev(rules);
    return rules ? NULL
                 : "triggers, comma-separated: any, none, enter, leave, loiter, cross (each may be TYPE@NAME), "
                   "class:LABEL";
}

// What in this packet's metadata triggers a clip, as {event}; NULL: nothing.
static char *trigger_of(const record_priv *s, const reel_buffer *b)
{
    const reel_analytics *a = reel_buffer_get_meta(b, &reel_analytics_meta);
    const reel_detections *d = reel_buffer_get_meta(b, &reel_detections_meta);
    for (char **r = s->rules; *r; r++) {
        if (g_str_has_prefix(*r, "class:")) {
            for (int i = 0; d && i < d->n; i++) {
                char id[16];
                g_snprintf(id, sizeof id, "%d", d->items[i].class_id);
                if (strncmp(d->items[i].label, *r + 6, REEL_LABEL_MAX) == 0 || strcmp(id, *r + 6) == 0)
                    return g_strdup_printf("class-%s", *r + 6);
            }
            continue;
        }
        if (strcmp(*r, "none") == 0)
            continue;
        const char *at = strchr(*r, '@');
        size_t n = at ? (size_t)(at - *r) : strlen(*r);
        for (int i = 0; a && i < a->n_events; i++) {
            const reel_region_event *ev = &a->events[i];
            const char *type = reel_region_event_name(ev->type);
            if ((strcmp(*r, "any") == 0 || (strlen(type) == n && strncmp(*r, type, n) == 0)) &&
                (!at || strncmp(at + 1, ev->region, REEL_LABEL_MAX) == 0)) {
                char region[REEL_LABEL_MAX + 1];
                g_strlcpy(region, ev->region, sizeof region);
                return g_strdup_printf("%s-%s", type, region);
            }
        }
    }
    return NULL;
}

// ---- the pre-roll ------------------------------------------------------------------

static double seconds(const reel_buffer *b)
{
    return b->pts == REEL_PTS_NONE || b->time_base.den <= 0 ? NAN
                                                            : (double)b->pts * b->time_base.num / b->time_base.den;
}

static bool is_key(const reel_buffer *b)
{
    return (b->flags & REEL_BUFFER_FLAG_KEYFRAME) != 0;
}

static void drop_head(record_priv *s)
{
    reel_buffer *b = g_queue_pop_head(&s->ring);
    s->ring_bytes -= (int64_t)b->size;
    reel_buffer_unref(&b);
}

// Drops whole groups of pictures from the front while the next keyframe
// still starts at least `pre` seconds back, or while over the byte bound.
static void trim(reel_element *e, double now)
{
    record_priv *s = reel_element_priv(e);
    int64_t bound = (int64_t)s->buffer_mb << 20;
    for (;;) {
        GList *next_key = NULL;
        for (GList *l = s->ring.head ? s->ring.head->next : NULL; l && !next_key; l = l->next)
            if (is_key(l->data))
                next_key = l;
        if (!next_key)
            break;
        bool old = seconds(next_key->data) <= now - s->pre_s, full = s->ring_bytes > bound;
        if (!old && !full)
            break;
        if (full && !old && !s->warned_bytes) {
            reel_element_warning(e, "the pre-roll passed buffer-mb=%d MiB: clips start later than pre=%g s before "
                                 "their trigger", s->buffer_mb, s->pre_s);
            s->warned_bytes = true;
        }
        while (s->ring.head != next_key)
            drop_head(s);
    }
    while (s->ring.head && !is_key(s->ring.head->data)) // a clip starts at a keyframe
        drop_head(s);
}

// ---- clips ---------------------------------------------------------------------

static char *clip_name(record_priv *s, const reel_buffer *b, const char *event)
{
    char stream[16], n[16], when[32];
    g_snprintf(stream, sizeof stream, "%d", b->stream_id);
    g_snprintf(n, sizeof n, "%d", s->clips + 1);
    GDateTime *now = g_date_time_new_now_utc();
    char *t = g_date_time_format(now, "%Y%m%d-%H%M%S");
    g_strlcpy(when, t, sizeof when);
    g_free(t);
    g_date_time_unref(now);
    const char *keys[] = { "{stream}", "{time}", "{event}", "{n}" }, *values[] = { stream, when, event, n };
    char *name = g_strdup(s->location);
    for (size_t k = 0; k < G_N_ELEMENTS(keys); k++) {
        char **parts = g_strsplit(name, keys[k], -1);
        g_free(name);
        name = g_strjoinv(values[k], parts);
        g_strfreev(parts);
    }
    return name;
}

// NAME.json beside a finished clip: what it holds and the zones events in it.
static void write_sidecar(reel_element *e)
{
    record_priv *s = reel_element_priv(e);
    GString *j = g_string_new("{\"clip\": ");
    reel_json_string(j, s->path);
    g_string_append(j, ", \"trigger\": ");
    reel_json_string(j, s->event);
    g_string_append_printf(j, ", \"stream\": %d, \"start\": ", s->stream);
    reel_meta_add_number(j, s->start_s, "%.6f", "null");
    g_string_append(j, ", \"end\": ");
    reel_meta_add_number(j, s->last_s, "%.6f", "null");
    g_string_append_printf(j, ", \"events\": [%s]}\n", s->events ? s->events->str : "");
    char *path = g_strconcat(s->path, ".json", NULL);
    GError *err = NULL;
    if (reel_write_file_atomically(path, j, &err) < 0) {
        reel_element_warning(e, "%s", err->message);
        g_error_free(err);
    }
    g_free(path);
    g_string_free(j, TRUE);
}

static void close_clip(reel_element *e, bool keep)
{
    record_priv *s = reel_element_priv(e);
    if (!s->oc)
        return;
    bool ok = keep && av_write_trailer(s->oc) >= 0;
    if (s->oc->pb)
        ok = avio_closep(&s->oc->pb) >= 0 && ok;
    avformat_free_context(g_steal_pointer(&s->oc));
    if (ok && g_rename(s->part, s->path) == 0) {
        s->clips++;
        write_sidecar(e);
        reel_element_info(e, "clip %s: %.2f s to %.2f s", s->path, s->start_s, s->last_s);
    } else {
        if (keep)
            reel_element_warning(e, "clip %s could not be finished; it is dropped, the stream goes on", s->path);
        g_unlink(s->part);
    }
    g_clear_pointer(&s->path, g_free);
    g_clear_pointer(&s->part, g_free);
    g_clear_pointer(&s->event, g_free);
    if (s->events)
        g_string_truncate(s->events, 0);
}

static bool write_packet(reel_element *e, const reel_buffer *b)
{
    record_priv *s = reel_element_priv(e);
    AVPacket *pkt = av_packet_alloc();
    if (!pkt)
        return false;
    pkt->data = b->data ? b->data : b->planes[0];
    pkt->size = (int)b->size;
    AVRational in = { b->time_base.num, b->time_base.den };
    pkt->pts = b->pts == REEL_PTS_NONE ? AV_NOPTS_VALUE : av_rescale_q(b->pts, in, s->oc->streams[0]->time_base);
    pkt->dts = b->dts == REEL_PTS_NONE ? pkt->pts : av_rescale_q(b->dts, in, s->oc->streams[0]->time_base);
    pkt->duration = av_rescale_q(b->duration, in, s->oc->streams[0]->time_base);
    pkt->flags = is_key(b) ? AV_PKT_FLAG_KEY : 0;
    int ret = av_write_frame(s->oc, pkt); // not interleaved: the packet is not ours to keep
    av_packet_free(&pkt);
    if (ret < 0) {
        reel_element_warning(e, "cannot write clip %s: %s", s->path, reel_av_err(ret));
        return false;
    }
    s->last_s = seconds(b);
    const reel_analytics *a = reel_buffer_get_meta(b, &reel_analytics_meta);
    for (int i = 0; a && i < a->n_events; i++) {
        g_string_append(s->events, s->events->len ? ", {\"pts\": " : "{\"pts\": ");
        reel_meta_add_number(s->events, seconds(b), "%.6f", "null");
        g_string_append(s->events, ", \"event\": ");
        reel_meta_json_event(s->events, &a->events[i]);
        g_string_append_c(s->events, '}');
    }
    return true;
}

// The picture of the newest packet (the trigger's) as NAME.jpg: decoded
// from the keyframe before it, on this thread, once per clip.
static void write_snapshot(reel_element *e)
{
    record_priv *s = reel_element_priv(e);
    GList *key = NULL;
    for (GList *l = s->ring.head; l; l = l->next)
        if (is_key(l->data))
            key = l;
    const reel_buffer *want = s->ring.tail ? s->ring.tail->data : NULL;
    const AVCodec *codec = s->par ? avcodec_find_decoder(s->par->codec_id) : NULL;
    AVCodecContext *c = codec ? avcodec_alloc_context3(codec) : NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *frame = av_frame_alloc(), *shot = av_frame_alloc();
    bool got = false;
    if (key && c && pkt && frame && shot && avcodec_parameters_to_context(c, s->par) >= 0 &&
        avcodec_open2(c, codec, NULL) >= 0) {
        for (GList *l = key; l; l = l->next) {
            const reel_buffer *b = l->data;
            pkt->data = b->data ? b->data : b->planes[0];
            pkt->size = (int)b->size;
            pkt->pts = b->pts;
            pkt->dts = b->dts == REEL_PTS_NONE ? b->pts : b->dts;
            pkt->flags = is_key(b) ? AV_PKT_FLAG_KEY : 0;
            avcodec_send_packet(c, pkt);
            while (avcodec_receive_frame(c, frame) >= 0) {
                if (!got || frame->pts == want->pts) {
                    av_frame_unref(shot);
                    av_frame_move_ref(shot, frame);
                    got = true;
                }
                av_frame_unref(frame);
            }
        }
        avcodec_send_packet(c, NULL);
        while (avcodec_receive_frame(c, frame) >= 0) {
            if (frame->pts == want->pts) {
                av_frame_unref(shot);
                av_frame_move_ref(shot, frame);
                got = true;
            }
            av_frame_unref(frame);
        }
    }
    GBytes *jpeg = NULL;
    GError *err = NULL;
    char *path = g_strconcat(s->path, ".jpg", NULL);
    if (!got)
        reel_element_warning(e, "no picture for %s: the trigger's packet did not decode", path);
    else if (reel_av_jpeg(shot, shot->width, shot->height, &jpeg, &err) < 0 ||
             !g_file_set_contents(path, g_bytes_get_data(jpeg, NULL), (gssize)g_bytes_get_size(jpeg), &err))
        reel_element_warning(e, "no picture for %s: %s", path, err ? err->message : "?");
    g_clear_error(&err);
    if (jpeg)
        g_bytes_unref(jpeg);
    g_free(path);
    av_frame_free(&shot);
    av_frame_free(&frame);
    av_packet_free(&pkt);
    avcodec_free_context(&c);
}

// Starts a clip at trigger time `at`: the pre-roll from the keyframe at or
// before at - pre, then what comes.
static void open_clip(reel_element *e, const reel_buffer *b, const char *event, double at)
{
    record_priv *s = reel_element_priv(e);
    if (!s->par) {
        reel_element_warning(e, "a trigger (%s) before the stream's codec parameters came: no clip", event);
        return;
    }
    s->path = clip_name(s, b, event);
    s->event = g_strdup(event);
    s->stream = b->stream_id;
    if (!s->events)
        s->events = g_string_new(NULL);
    g_string_truncate(s->events, 0);
    s->part = g_strconcat(s->path, ".part", NULL);
    const AVOutputFormat *fmt = av_guess_format(NULL, s->path, NULL);
    int ret = fmt ? avformat_alloc_output_context2(&s->oc, fmt, NULL, s->part) : AVERROR_MUXER_NOT_FOUND;
    AVStream *st = ret >= 0 ? avformat_new_stream(s->oc, NULL) : NULL;
    if (st && avcodec_parameters_copy(st->codecpar, s->par) >= 0) {
        st->codecpar->codec_tag = 0;
        st->time_base = (AVRational){ b->time_base.num, b->time_base.den };
        ret = avio_open(&s->oc->pb, s->part, AVIO_FLAG_WRITE);
        if (ret >= 0)
            ret = avformat_write_header(s->oc, NULL);
    } else if (ret >= 0) {
        ret = AVERROR(ENOMEM);
    }
    if (ret < 0) {
        reel_element_warning(e, "cannot start clip %s: %s", s->path, reel_av_err(ret));
        close_clip(e, false);
        return;
    }
    // The latest keyframe at or before at - pre (or the first there is).
    GList *from = s->ring.head;
    for (GList *l = s->ring.head; l; l = l->next)
        if (is_key(l->data) && seconds(l->data) <= at - s->pre_s)
            from = l;
    s->start_s = from ? seconds(from->data) : at;
    s->stop_s = MIN(at + s->post_s, s->start_s + s->max_s);
    for (GList *l = from; l && s->oc; l = l->next)
        if (!write_packet(e, l->data))
            close_clip(e, false);
    if (s->oc && s->snapshot)
        write_snapshot(e);
}

// ---- the element ---------------------------------------------------------------

static int start(reel_element *e)
{
    record_priv *s = reel_element_priv(e);
    char *bad = NULL;
    g_strfreev(s->rules);
    s->rules = parse_rules(s->trigger, &bad);
    if (!s->rules) {
        int rc = reel_element_error(e, REEL_EINVAL, "unknown trigger '%s' (any, none, enter, leave, loiter, cross, "
                                    "TYPE@NAME, class:LABEL)", bad);
        g_free(bad);
        return rc;
    }
    g_queue_init(&s->ring);
    s->ring_bytes = 0;
    s->clips = 0;
    return 0;
}

static int changed(reel_element *e, const reel_prop *prop)
{
    record_priv *s = reel_element_priv(e);
    if (prop->offset == offsetof(record_priv, mark))
        s->marked = s->mark && *s->mark;
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    record_priv *s = reel_element_priv(e);
    const AVCodecParameters *par = reel_buffer_get_meta(buf, &reel_av_codecpar_meta);
    if (par) {
        avcodec_parameters_free(&s->par);
        s->par = avcodec_parameters_alloc();
        if (!s->par || avcodec_parameters_copy(s->par, par) < 0) {
            reel_buffer_unref(&buf);
            return reel_element_error(e, REEL_ENOMEM, "cannot keep the codec parameters");
        }
    }
    double now = seconds(buf);
    if (isnan(now)) {
        reel_buffer_unref(&buf);
        return 0; // no time: neither pre-roll nor clip can place it
    }
    char *event = s->marked ? g_strdup(s->mark) : trigger_of(s, buf);
    s->marked = false;
    g_queue_push_tail(&s->ring, reel_buffer_ref(buf));
    s->ring_bytes += (int64_t)buf->size;
    if (s->oc && now > s->stop_s && (!event || now > s->start_s + s->max_s)) {
        close_clip(e, true);
    } else if (s->oc) {
        if (event)
            s->stop_s = MIN(MAX(s->stop_s, now + s->post_s), s->start_s + s->max_s);
        if (!write_packet(e, buf))
            close_clip(e, false);
        g_clear_pointer(&event, g_free);
    }
    if (event && !s->oc)
        open_clip(e, buf, event, now); // writes the pre-roll and this packet
    g_free(event);
    trim(e, now);
    reel_buffer_unref(&buf);
    return 0;
}

static int flush(reel_element *e)
{
    close_clip(e, true);
    return 0;
}

static void stop(reel_element *e)
{
    record_priv *s = reel_element_priv(e);
    close_clip(e, true);
    while (s->ring.head)
        drop_head(s);
    avcodec_parameters_free(&s->par);
    g_clear_pointer(&s->rules, g_strfreev);
    if (s->events)
        g_string_free(g_steal_pointer(&s->events), TRUE);
}

const reel_element_class reel_record_class = {
    .name = "record",
    .description = "Event clips with pre-roll: keeps the last seconds of encoded packets and writes a clip around "
                   "each trigger (zones events, a class, or mark)",
    .priv_size = sizeof(record_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 0,
    .input_caps = "video/encoded,memory=host",
    .start = start,
    .process = process,
    .changed = changed,
    .flush = flush,
    .stop = stop,
    .uninit = stop,
};

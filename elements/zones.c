// zones: analytics over tracked detections. Each tracked object's anchor
// point (bottom centre of its box by default) is followed through the
// stream's zones (polygons) and lines (directed segments):
//  - a zone is entered once the anchor has been inside `inertia` frames in
//    a row, and left once it has been outside as long (or the track was
//    lost), so that a box jittering on an edge does not count twice; its
//    dwell runs from the first of those frames inside to the first outside;
//    `loiter` seconds inside makes one loiter event per visit;
//  - a line is crossed when the anchor's move from one frame to the next
//    goes from one side to the other through the segment; "in" is from its
//    left to its right walking from its first point to its second (y down).
// Every frame leaves with its stream's counts (occupancy, entered and left
// per zone, crossings per line; in total and per class) and this frame's
// events, as reel_analytics metadata that metasink, natssink and mqttsink
// write. Streams keep their own tracks and counts. Only metadata changes.
#include <math.h>
#include <string.h>

#include "elements/zones_config.h"
#include "base/read_file.h"

enum { ANCHOR_BOTTOM, ANCHOR_CENTER, ANCHOR_TOP };

typedef struct zones_priv {
    char *zones, *lines, *config;
    int normalized;
    int anchor;
    int inertia;
    double loiter_s;
    int lost_frames;

    char *config_text;    // the file, read at start
    zones_config *cfg;
    GHashTable *streams;  // stream id -> stream_state
} zones_priv;

static const reel_enum_value coordinate_values[] = {
    { "normalized", 1, "0 to 1 across the frame's width and height" },
    { "pixels", 0, "frame pixels" },
    { NULL },
};

static const reel_enum_value anchor_values[] = {
    { "bottom-center", ANCHOR_BOTTOM, "the middle of the box's bottom edge: where a person or car stands" },
    { "center", ANCHOR_CENTER, "the box's centre" },
    { "top-center", ANCHOR_TOP, "the middle of the box's top edge" },
    { NULL },
};

// The property's own check (structure only: the units are another
// property's): the reason, kept per thread for the setter's message.
static const char *check_regions(const void *value, bool line)
{
    static _Thread_local char why[256];
    const char *text = *(char *const *)value;
    GError *err = NULL;
    zones_config *c = zones_config_parse(line ? NULL : text, line ? text : NULL, NULL, NULL, false, &err);
    zones_config_free(c);
    if (c)
        return NULL;
    g_snprintf(why, sizeof why, "%s as NAME: x,y x,y%s; NAME: ..., but %s", line ? "lines" : "zones",
               line ? "" : " x,y ...", err->message);
    g_error_free(err);
    return why;
}

static const char *check_zones(const void *value)
{
    return check_regions(value, false);
}

static const char *check_lines(const void *value)
{
    return check_regions(value, true);
}

static const reel_prop props[] = {
    { "zones", REEL_PROP_STRING, offsetof(zones_priv, zones), NULL, .flags = REEL_PROP_MUTABLE, .check = check_zones,
      .help = "polygons, NAME: x,y x,y x,y ...; NAME: ... (every stream, every class)" },
    { "lines", REEL_PROP_STRING, offsetof(zones_priv, lines), NULL, .flags = REEL_PROP_MUTABLE, .check = check_lines,
      .help = "directed segments, NAME: x0,y0 x1,y1; ... (crossing from left to right of x0,y0 -> x1,y1 is \"in\")" },
    { "config", REEL_PROP_STRING, offsetof(zones_priv, config), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "a JSON file: {\"zones\": [{\"name\", \"points\": [[x, y], ...], \"classes\": [...], \"stream\": N}], "
              "\"lines\": [...]}" },
    { "coordinates", REEL_PROP_ENUM, offsetof(zones_priv, normalized), "normalized", .values = coordinate_values,
      .flags = REEL_PROP_MUTABLE, .help = "the units of the points" },
    { "anchor", REEL_PROP_ENUM, offsetof(zones_priv, anchor), "bottom-center", .values = anchor_values,
      .flags = REEL_PROP_MUTABLE, .help = "the point of a box that is in a zone or crosses a line" },
    { "inertia", REEL_PROP_INT, offsetof(zones_priv, inertia), "3", 1, 1000, .flags = REEL_PROP_MUTABLE,
      .help = "frames in a row inside (outside) a zone before a track counts as entered (left)" },
    { "loiter", REEL_PROP_DOUBLE, offsetof(zones_priv, loiter_s), "0", 0, 1e7, .flags = REEL_PROP_MUTABLE,
      .help = "seconds in a zone that make a loiter event; 0: none" },
    { "lost", REEL_PROP_INT, offsetof(zones_priv, lost_frames), "30", 1, 100000, .flags = REEL_PROP_MUTABLE,
      .help = "frames a track may go unseen before it counts as gone (leaving its zones)" },
    { NULL },
};

// ---- state ----------------------------------------------------------------------

typedef struct visit {
    bool inside;
    int streak;          // frames in a row on the other side of the zone's edge
    double streak_pts;   // the first of them
    double since;        // when the visit began (inside)
    bool loitered;
} visit;

typedef struct track_state {
    int class_id;
    char label[REEL_LABEL_MAX];
    int64_t last_frame;  // the stream's frame count when last seen
    double last_pts;
    visit *visits;       // per region (lines leave theirs unused)
    zones_point *last;   // per region: the anchor when last on one side of it (lines)
    bool *has_last;
} track_state;

typedef struct region_count {
    int class_id;        // -1: every class
    char label[REEL_LABEL_MAX];
    int occupancy;
    int64_t in, out;
} region_count;

typedef struct stream_state {
    int64_t frames;
    GHashTable *tracks;  // track id (gint64 *) -> track_state
    GArray **counts;     // per region: region_count, the total first
    GArray *events;      // reel_region_event, this frame's
} stream_state;

static void track_free(gpointer data)
{
    track_state *t = data;
    g_free(t->visits);
    g_free(t->last);
    g_free(t->has_last);
    g_free(t);
}

static void stream_free(gpointer data)
{
    stream_state *st = data;
    g_hash_table_destroy(st->tracks);
    for (int i = 0; st->counts && st->counts[i]; i++)
        g_array_free(st->counts[i], TRUE);
    g_free(st->counts);
    g_array_free(st->events, TRUE);
    g_free(st);
}

static stream_state *stream_of(zones_priv *s, int stream)
{
    stream_state *st = g_hash_table_lookup(s->streams, GINT_TO_POINTER(stream));
    if (st)
        return st;
    st = g_new0(stream_state, 1);
    st->tracks = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, track_free);
    st->counts = g_new0(GArray *, s->cfg->n + 1);
    for (int i = 0; i < s->cfg->n; i++) {
        st->counts[i] = g_array_new(FALSE, TRUE, sizeof(region_count));
        g_array_append_val(st->counts[i], ((region_count){ .class_id = -1 }));
    }
    st->events = g_array_new(FALSE, TRUE, sizeof(reel_region_event));
    g_hash_table_insert(s->streams, GINT_TO_POINTER(stream), st);
    return st;
}

static track_state *track_of(zones_priv *s, stream_state *st, const reel_detection *d)
{
    track_state *t = g_hash_table_lookup(st->tracks, &d->track_id);
    if (t)
        return t;
    t = g_new0(track_state, 1);
    t->class_id = d->class_id;
    g_strlcpy(t->label, d->label, sizeof t->label);
    t->visits = g_new0(visit, MAX(s->cfg->n, 1));
    t->last = g_new0(zones_point, MAX(s->cfg->n, 1));
    t->has_last = g_new0(bool, MAX(s->cfg->n, 1));
    gint64 *key = g_new(gint64, 1);
    *key = d->track_id;
    g_hash_table_insert(st->tracks, key, t);
    return t;
}

// The total and the class's counts of region r (the class's made on first use).
static void counts_of(stream_state *st, int r, const track_state *t, region_count *out[2])
{
    GArray *a = st->counts[r];
    out[0] = &g_array_index(a, region_count, 0);
    for (guint i = 1; i < a->len; i++) {
        region_count *c = &g_array_index(a, region_count, i);
        if (c->class_id == t->class_id && strcmp(c->label, t->label) == 0) {
            out[1] = c;
            return;
        }
    }
    region_count c = { .class_id = t->class_id };
    g_strlcpy(c.label, t->label, sizeof c.label);
    g_array_append_val(a, c);
    out[0] = &g_array_index(a, region_count, 0);
    out[1] = &g_array_index(a, region_count, a->len - 1);
}

static void add_event(zones_priv *s, stream_state *st, reel_region_event_type type, int r, int64_t track,
                      const track_state *t, int direction, double dwell)
{
    reel_region_event ev = { .type = type, .track_id = track, .class_id = t->class_id, .direction = direction,
                             .dwell_s = dwell };
    g_strlcpy(ev.region, s->cfg->regions[r].name, sizeof ev.region);
    g_strlcpy(ev.label, t->label, sizeof ev.label);
    g_array_append_val(st->events, ev);
}

// ---- per frame -------------------------------------------------------------------

static void enter_or_leave(zones_priv *s, stream_state *st, int r, int64_t id, track_state *t, bool entering,
                           double at)
{
    visit *v = &t->visits[r];
    region_count *c[2];
    counts_of(st, r, t, c);
    for (int k = 0; k < 2; k++) {
        c[k]->occupancy += entering ? 1 : -1;
        *(entering ? &c[k]->in : &c[k]->out) += 1;
    }
    if (entering) {
        *v = (visit){ .inside = true, .since = at };
        add_event(s, st, REEL_EVENT_ENTER, r, id, t, 0, 0);
    } else {
        add_event(s, st, REEL_EVENT_LEAVE, r, id, t, 0, at - v->since);
        *v = (visit){ 0 };
    }
}

static void follow_zone(zones_priv *s, stream_state *st, int r, int64_t id, track_state *t, zones_point p,
                        double pts)
{
    visit *v = &t->visits[r];
    bool inside = zones_region_holds(&s->cfg->regions[r], p);
    if (inside == v->inside) {
        v->streak = 0;
    } else {
        if (v->streak++ == 0)
            v->streak_pts = pts;
        if (v->streak >= s->inertia)
            enter_or_leave(s, st, r, id, t, inside, v->streak_pts);
    }
    if (v->inside && s->loiter_s > 0 && !v->loitered && pts - v->since >= s->loiter_s) {
        v->loitered = true;
        add_event(s, st, REEL_EVENT_LOITER, r, id, t, 0, pts - v->since);
    }
}

static void follow_line(zones_priv *s, stream_state *st, int r, int64_t id, track_state *t, zones_point p)
{
    const zones_region *line = &s->cfg->regions[r];
    double side = zones_line_side(line, p);
    if (side == 0)
        return; // on the line: the move counts from where it was on one side
    if (t->has_last[r] && zones_line_crossed(line, t->last[r], p)) {
        int direction = side > 0 ? 1 : -1;
        region_count *c[2];
        counts_of(st, r, t, c);
        for (int k = 0; k < 2; k++)
            *(direction > 0 ? &c[k]->in : &c[k]->out) += 1;
        add_event(s, st, REEL_EVENT_CROSS, r, id, t, direction, 0);
    }
    t->last[r] = p;
    t->has_last[r] = true;
}

static zones_point anchor_of(const zones_priv *s, const reel_detection *d, int width, int height)
{
    zones_point p = { (d->x0 + d->x1) / 2.0, s->anchor == ANCHOR_BOTTOM ? d->y1
                                             : s->anchor == ANCHOR_TOP  ? d->y0
                                                                        : (d->y0 + d->y1) / 2.0 };
    if (s->normalized && width > 0 && height > 0) {
        p.x /= width;
        p.y /= height;
    }
    return p;
}

// Tracks unseen for `lost` frames leave their zones and are forgotten.
static void forget_lost(zones_priv *s, stream_state *st)
{
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, st->tracks);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        track_state *t = value;
        if (st->frames - t->last_frame < s->lost_frames)
            continue;
        for (int r = 0; r < s->cfg->n; r++)
            if (t->visits[r].inside)
                enter_or_leave(s, st, r, *(gint64 *)key, t, false, t->last_pts);
        g_hash_table_iter_remove(&it);
    }
}

static void step(zones_priv *s, stream_state *st, const reel_buffer *buf, const reel_detections *dets)
{
    double pts = buf->pts != REEL_PTS_NONE && buf->time_base.den > 0
                     ? (double)buf->pts * buf->time_base.num / buf->time_base.den
                     : (double)st->frames / 30.0;
    for (int i = 0; dets && i < dets->n; i++) {
        const reel_detection *d = &dets->items[i];
        if (d->track_id < 0)
            continue; // only tracked objects have a path
        track_state *t = track_of(s, st, d);
        t->last_frame = st->frames;
        t->last_pts = pts;
        zones_point p = anchor_of(s, d, buf->format.width, buf->format.height);
        for (int r = 0; r < s->cfg->n; r++) {
            const zones_region *reg = &s->cfg->regions[r];
            if ((reg->stream >= 0 && reg->stream != buf->stream_id) || !zones_region_counts(reg, t->class_id, t->label))
                continue;
            if (reg->line)
                follow_line(s, st, r, d->track_id, t, p);
            else
                follow_zone(s, st, r, d->track_id, t, p, pts);
        }
    }
    forget_lost(s, st);
    st->frames++;
}

// The stream's counts, this frame's events and the regions' shapes in
// the frame's pixels, as metadata.
static reel_analytics *analytics_of(const zones_priv *s, const stream_state *st, const reel_buffer *buf)
{
    int stream = buf->stream_id, n = 0, shapes = 0;
    for (int r = 0; r < s->cfg->n; r++)
        if (s->cfg->regions[r].stream < 0 || s->cfg->regions[r].stream == stream) {
            n += (int)st->counts[r]->len;
            shapes++;
        }
    reel_analytics *a = reel_analytics_new(n, (int)st->events->len, shapes);
    int k = 0, sh = 0;
    double sx = s->normalized ? buf->format.width : 1, sy = s->normalized ? buf->format.height : 1;
    for (int r = 0; r < s->cfg->n; r++) {
        const zones_region *reg = &s->cfg->regions[r];
        if (reg->stream >= 0 && reg->stream != stream)
            continue;
        reel_region_shape *shape = &a->shapes[sh++];
        g_strlcpy(shape->region, reg->name, sizeof shape->region);
        shape->line = reg->line;
        shape->n = reg->n;
        for (int i = 0; i < reg->n; i++) {
            shape->points[i][0] = (float)(reg->points[i].x * sx);
            shape->points[i][1] = (float)(reg->points[i].y * sy);
        }
        for (guint i = 0; i < st->counts[r]->len; i++, k++) {
            const region_count *c = &g_array_index(st->counts[r], region_count, i);
            a->counts[k] = (reel_region_count){ .line = reg->line, .class_id = c->class_id,
                                                .occupancy = c->occupancy, .in = c->in, .out = c->out };
            g_strlcpy(a->counts[k].region, reg->name, sizeof a->counts[k].region);
            g_strlcpy(a->counts[k].label, c->label, sizeof a->counts[k].label);
        }
    }
    if (st->events->len)
        memcpy(a->events, st->events->data, st->events->len * sizeof(reel_region_event));
    return a;
}

// ---- the element -------------------------------------------------------------------

// The regions from the properties and the file; state starts again. While
// running (`running`), regions that do not hold leave the last ones in
// place with a warning instead of failing the run.
static int configure_regions(reel_element *e, bool running)
{
    zones_priv *s = reel_element_priv(e);
    GError *err = NULL;
    zones_config *cfg = zones_config_parse(s->zones, s->lines, s->config_text, s->config, s->normalized, &err);
    if (!cfg) {
        int rc = 0;
        if (running)
            reel_element_warning(e, "%s; the zones and lines stay as they were", err->message);
        else
            rc = reel_element_error(e, REEL_EINVAL, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    zones_config_free(s->cfg);
    s->cfg = cfg;
    if (s->streams)
        g_hash_table_remove_all(s->streams);
    return 0;
}

static int start(reel_element *e)
{
    zones_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->config_text, g_free);
    if (s->config && *s->config) {
        GError *err = NULL;
        if (reel_read_text_file(s->config, "zones config", &s->config_text, &err) < 0) {
            int rc = reel_element_error(e, REEL_EIO, "%s", err->message);
            g_error_free(err);
            return rc;
        }
    }
    s->streams = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, stream_free);
    return configure_regions(e, false);
}

static int changed(reel_element *e, const reel_prop *prop)
{
    zones_priv *s = reel_element_priv(e);
    if (prop->offset == offsetof(zones_priv, zones) || prop->offset == offsetof(zones_priv, lines) ||
        prop->offset == offsetof(zones_priv, normalized))
        return configure_regions(e, true);
    if (prop->offset == offsetof(zones_priv, anchor))
        g_hash_table_remove_all(s->streams); // paths measured from another point
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    zones_priv *s = reel_element_priv(e);
    if (!s->normalized) {
        GError *err = NULL;
        if (zones_config_check_frame(s->cfg, buf->format.width, buf->format.height, &err) < 0) {
            reel_buffer_unref(&buf);
            int rc = reel_element_error(e, REEL_EINVAL, "%s", err->message);
            g_error_free(err);
            return rc;
        }
    }
    stream_state *st = stream_of(s, buf->stream_id);
    g_array_set_size(st->events, 0);
    step(s, st, buf, reel_buffer_get_meta(buf, &reel_detections_meta));
    // The frame may be shared (a tee): its metadata then changes on a copy.
    int rc = reel_buffer_make_writable(&buf);
    if (rc < 0) {
        reel_buffer_unref(&buf);
        return reel_element_error(e, rc, "cannot copy a shared frame to add its zone counts: %s", reel_strerror(rc));
    }
    reel_buffer_add_meta(buf, &reel_analytics_meta, analytics_of(s, st, buf));
    return reel_element_push(e, 0, buf);
}

static void stop(reel_element *e)
{
    zones_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->streams, g_hash_table_destroy);
    g_clear_pointer(&s->cfg, zones_config_free);
    g_clear_pointer(&s->config_text, g_free);
}

const reel_element_class reel_zones_class = {
    .name = "zones",
    .description = "Zones and lines over tracked detections: enter, leave, loiter and crossing events, occupancy "
                   "and counts per class, per stream",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // reads and writes metadata only
    .priv_size = sizeof(zones_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw", .output_caps = "video/raw",
    .start = start,
    .process = process,
    .changed = changed,
    .stop = stop,
    .uninit = stop,
};

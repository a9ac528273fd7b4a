// metasink: writes what elements found in each buffer (detections,
// classifications) as text, one frame at a time, for scripts and databases.
// It reads only metadata and buffer fields, so frames may be in any memory,
// and tensors are accepted too.
//
// format=jsonl: one JSON object per buffer, one line each, keys in this order:
//   "stream":          int, the buffer's stream id
//   "frame":           int, its frame number
//   "pts":             number, seconds (6 decimals); null when unknown
//   "width", "height": int, for video frames
//   "shape":           [int, ...], for tensors (instead of width and height)
//   "detections":      array, always there (maybe empty), each:
//       "box":       [x0, y0, x1, y1], frame pixels, 3 decimals
//       "score":     number, 4 decimals
//       "class":     int            (omitted when none: class id -1)
//       "label":     string         (omitted when empty)
//       "track":     int            (omitted when untracked: track id -1)
//       "landmarks": [[x, y], ...]  (omitted when none; 3 decimals)
//       "keypoints": [[x, y, score], ...] instead, when the landmarks are
//                    scored (pose; score with 4 decimals)
//       "mask":      {"x", "y", "width", "height": the box's pixel
//                    rectangle; "runs": [int, ...] off/on run lengths row by
//                    row over it, off first; "truncated": true when cut at
//                    REEL_MASK_MAX_RUNS} (detect decoder=yolov8-seg only)
//       "text":      string         (what ocr read; omitted when none)
//       "text_score": number        (with text: its mean character probability, 4 decimals)
//       "landmarks": [[x, y], ...]  (omitted when none; 3 decimals; a text box's 4 corners)
//   "classifications": array, always there (maybe empty), each:
//       "class":     int
//       "label":     string         (omitted when empty)
//       "score":     number, 4 decimals
//       "detection": int, index into "detections" (omitted for the whole frame)
//   after a `zones` element (elements/zones.c), also:
//   "zones":  array, per zone: "name", "occupancy", "entered", "left", and
//             "classes": [{"class", "label", "occupancy", "entered", "left"}]
//             (class and label omitted when none)
//   "lines":  array, per line: "name", "in", "out", and "classes" the same way
//   "events": array, this frame's, each: "type" ("enter", "leave", "loiter",
//             "cross"), "zone" or "line" (its name), "track", "class",
//             "label", "direction" ("in" or "out", for cross), "dwell"
//             (seconds in the zone, 3 decimals, for leave and loiter)
// A number that is not finite is written as null. Strings are JSON-escaped
// and made valid UTF-8.
//
// format=csv: a header line, then one row per detection (a frame without any
// writes no row): stream,frame,pts,x0,y0,x1,y1,score,class,label,track with
// the same precision; pts, class, label and track are empty when none, and
// a label holding a comma, quote or line break is quoted (RFC 4180).
//
// Each frame's lines go out in one write() as soon as the frame arrives,
// with no buffering in between: a run killed at any moment leaves only whole
// lines. location=- writes to standard output.
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "elements/meta_json.h"
#include "reel/reel.h"

enum { FORMAT_JSONL, FORMAT_CSV };

typedef struct metasink_priv {
    char *location;
    int format;

    int fd;          // -1 when closed
    off_t end;       // where the last whole line ends; -1 for standard output or a pipe
    GString *line;   // this frame's text, reused
} metasink_priv;

static const reel_enum_value formats[] = {
    { "jsonl", FORMAT_JSONL, "one JSON object per frame per line" },
    { "csv", FORMAT_CSV, "a header, then one row per detection" },
    { NULL },
};

static const reel_prop props[] = {
    { "location", REEL_PROP_STRING, offsetof(metasink_priv, location), NULL, .flags = REEL_PROP_WRITES_FILE,
      .help = "file to write (created or truncated); - for standard output" },
    { "format", REEL_PROP_ENUM, offsetof(metasink_priv, format), "jsonl", .values = formats,
      .help = "how to write each frame's metadata" },
    { NULL },
};

static const char csv_header[] = "stream,frame,pts,x0,y0,x1,y1,score,class,label,track\n";

static bool to_stdout(const metasink_priv *s)
{
    return strcmp(s->location, "-") == 0;
}

// Writes all of text, retrying what a signal or a full pipe cut short.
static int write_all(int fd, const char *text, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

static int init(reel_element *e)
{
    metasink_priv *s = reel_element_priv(e);
    s->fd = -1;
    return 0;
}

static int start(reel_element *e)
{
    metasink_priv *s = reel_element_priv(e);
    if (!s->location || !*s->location)
        return reel_element_error(e, REEL_EINVAL, "no location set: give a file, or - for standard output");
    s->fd = to_stdout(s) ? STDOUT_FILENO : open(s->location, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (s->fd < 0)
        return reel_element_error(e, REEL_EIO, "cannot write '%s': %s", s->location, g_strerror(errno));
    s->line = g_string_new(NULL);
    int err = s->format == FORMAT_CSV ? write_all(s->fd, csv_header, strlen(csv_header)) : 0;
    if (err < 0)
        return reel_element_error(e, REEL_EIO, "cannot write to '%s': %s", s->location, g_strerror(-err));
    // Only a file of our own is cut back: standard output may be shared.
    s->end = to_stdout(s) ? -1 : lseek(s->fd, 0, SEEK_CUR);
    return 0;
}

// ---- text of one frame (JSON: meta_json.c) ----------------------------------

static void csv_label(GString *out, const char label[REEL_LABEL_MAX])
{
    char *text = reel_meta_label_text(label);
    if (!strpbrk(text, ",\"\r\n")) {
        g_string_append(out, text);
    } else {
        g_string_append_c(out, '"');
        for (const char *c = text; *c; c++) {
            if (*c == '"')
                g_string_append_c(out, '"'); // doubled, as RFC 4180 escapes it
            g_string_append_c(out, *c);
        }
        g_string_append_c(out, '"');
    }
    g_free(text);
}

static void csv_rows(GString *out, const reel_buffer *b, const reel_detections *dets)
{
    for (int i = 0; dets && i < dets->n; i++) {
        const reel_detection *d = &dets->items[i];
        g_string_append_printf(out, "%d,%" G_GINT64_FORMAT ",", b->stream_id, (gint64)b->frame_number);
        reel_meta_add_number(out, reel_meta_pts_seconds(b), "%.6f", "");
        const float box[4] = { d->x0, d->y0, d->x1, d->y1 };
        for (int k = 0; k < 4; k++) {
            g_string_append_c(out, ',');
            reel_meta_add_number(out, box[k], "%.3f", "");
        }
        g_string_append_c(out, ',');
        reel_meta_add_number(out, d->score, "%.4f", "");
        g_string_append_c(out, ',');
        if (d->class_id >= 0)
            g_string_append_printf(out, "%d", d->class_id);
        g_string_append_c(out, ',');
        csv_label(out, d->label);
        g_string_append_c(out, ',');
        if (d->track_id >= 0)
            g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)d->track_id);
        g_string_append_c(out, '\n');
    }
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    metasink_priv *s = reel_element_priv(e);
    const reel_detections *dets = reel_buffer_get_meta(buf, &reel_detections_meta);
    g_string_truncate(s->line, 0);
    if (s->format == FORMAT_CSV)
        csv_rows(s->line, buf, dets);
    else
        reel_meta_json_frame(s->line, buf, dets, reel_buffer_get_meta(buf, &reel_classifications_meta));
    reel_buffer_unref(&buf);
    // A write that fails midway (a full disk) is cut back to the last
    // whole line.
    int err = write_all(s->fd, s->line->str, s->line->len);
    if (err >= 0 && s->end >= 0)
        s->end += (off_t)s->line->len;
    if (err < 0) {
        if (s->end >= 0 && ftruncate(s->fd, s->end) != 0)
            reel_element_warning(e, "'%s' may end in part of a line: %s", s->location, g_strerror(errno));
        return reel_element_error(e, REEL_EIO, "cannot write to '%s': %s", s->location, g_strerror(-err));
    }
    return 0;
}

static void stop(reel_element *e)
{
    metasink_priv *s = reel_element_priv(e);
    if (s->fd >= 0 && !to_stdout(s) && close(s->fd) != 0)
        reel_element_warning(e, "error writing '%s': %s", s->location, g_strerror(errno));
    s->fd = -1;
    if (s->line)
        g_string_free(s->line, TRUE);
    s->line = NULL;
}

const reel_element_class reel_metasink_class = {
    .name = "metasink",
    .description = "Writes each frame's detections and classifications as JSON lines or CSV",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // reads metadata only, never the pixels
    .priv_size = sizeof(metasink_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 0,
    .input_caps = "video/raw|tensor",
    .init = init,
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

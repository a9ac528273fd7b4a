// One frame's metadata as a JSON line (the keys are described in metasink.c).
#include "elements/meta_json.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "base/json.h"

void reel_meta_add_number(GString *out, double v, const char *fmt, const char *none)
{
    // Room for every digit of the largest double: a smaller buffer would cut
    // a huge value short into a different, still valid, number.
    char buf[DBL_MAX_10_EXP + 32];
    g_string_append(out, isfinite(v) ? g_ascii_formatd(buf, sizeof buf, fmt, v) : none);
}

char *reel_meta_label_text(const char label[REEL_LABEL_MAX])
{
    return g_utf8_make_valid(label, (gssize)strnlen(label, REEL_LABEL_MAX));
}

double reel_meta_pts_seconds(const reel_buffer *b)
{
    if (b->pts == REEL_PTS_NONE || b->time_base.num <= 0 || b->time_base.den <= 0)
        return NAN;
    return (double)b->pts * b->time_base.num / b->time_base.den;
}

static void json_label(GString *out, const char label[REEL_LABEL_MAX])
{
    char *text = reel_meta_label_text(label);
    g_string_append(out, ", \"label\": ");
    reel_json_string(out, text);
    g_free(text);
}

// "mask": the rectangle and its runs (reel_mask).
static void json_mask(GString *out, const reel_masks *masks, const reel_mask *m)
{
    g_string_append_printf(out, ", \"mask\": {\"x\": %d, \"y\": %d, \"width\": %d, \"height\": %d, \"runs\": [",
                           m->x, m->y, m->width, m->height);
    for (int r = 0; r < m->n_runs; r++)
        g_string_append_printf(out, "%s%u", r ? ", " : "", masks->runs[m->first_run + r]);
    g_string_append(out, m->truncated ? "], \"truncated\": true}" : "]}");
}

// Pose keypoints: [x, y, score] each.
static void json_keypoints(GString *out, const reel_detection *d, int n)
{
    for (int l = 0; l < n; l++) {
        g_string_append(out, l ? ", [" : ", \"keypoints\": [[");
        reel_meta_add_number(out, d->landmarks[l][0], "%.3f", "null");
        g_string_append(out, ", ");
        reel_meta_add_number(out, d->landmarks[l][1], "%.3f", "null");
        g_string_append(out, ", ");
        reel_meta_add_number(out, d->landmark_scores[l], "%.4f", "null");
        g_string_append(out, l + 1 < n ? "]" : "]]");
    }
}

static void json_detection(GString *out, const reel_detection *d, const reel_masks *masks, int index)
{
    g_string_append(out, "{\"box\": [");
    const float box[4] = { d->x0, d->y0, d->x1, d->y1 };
    for (int i = 0; i < 4; i++) {
        g_string_append(out, i ? ", " : "");
        reel_meta_add_number(out, box[i], "%.3f", "null");
    }
    g_string_append(out, "], \"score\": ");
    reel_meta_add_number(out, d->score, "%.4f", "null");
    if (d->class_id >= 0)
        g_string_append_printf(out, ", \"class\": %d", d->class_id);
    if (d->label[0])
        json_label(out, d->label);
    if (d->track_id >= 0)
        g_string_append_printf(out, ", \"track\": %" G_GINT64_FORMAT, (gint64)d->track_id);
    if (d->text[0]) {
        char *text = g_utf8_make_valid(d->text, (gssize)strnlen(d->text, REEL_TEXT_MAX));
        g_string_append(out, ", \"text\": ");
        reel_json_string(out, text);
        g_free(text);
        g_string_append(out, ", \"text_score\": ");
        reel_meta_add_number(out, d->text_score, "%.4f", "null");
    }
    int nl = CLAMP(d->n_landmarks, 0, REEL_MAX_LANDMARKS);
    if (d->scored)
        json_keypoints(out, d, nl);
    for (int l = 0; !d->scored && l < nl; l++) {
        g_string_append(out, l ? ", [" : ", \"landmarks\": [[");
        reel_meta_add_number(out, d->landmarks[l][0], "%.3f", "null");
        g_string_append(out, ", ");
        reel_meta_add_number(out, d->landmarks[l][1], "%.3f", "null");
        g_string_append(out, l + 1 < nl ? "]" : "]]");
    }
    const reel_mask *m = reel_masks_find(masks, index);
    if (m)
        json_mask(out, masks, m);
    g_string_append_c(out, '}');
}

static void json_classification(GString *out, const reel_classification *c)
{
    g_string_append_printf(out, "{\"class\": %d", c->class_id);
    if (c->label[0])
        json_label(out, c->label);
    g_string_append(out, ", \"score\": ");
    reel_meta_add_number(out, c->score, "%.4f", "null");
    if (c->detection >= 0)
        g_string_append_printf(out, ", \"detection\": %d", c->detection);
    g_string_append_c(out, '}');
}

static void json_class_fields(GString *out, int class_id, const char label[REEL_LABEL_MAX])
{
    if (class_id >= 0)
        g_string_append_printf(out, "\"class\": %d, ", class_id);
    if (label[0]) {
        char *text = reel_meta_label_text(label);
        g_string_append(out, "\"label\": ");
        reel_json_string(out, text);
        g_string_append(out, ", ");
        g_free(text);
    }
}

static void json_counts(GString *out, const reel_region_count *c)
{
    if (c->line)
        g_string_append_printf(out, "\"in\": %" G_GINT64_FORMAT ", \"out\": %" G_GINT64_FORMAT, (gint64)c->in,
                               (gint64)c->out);
    else
        g_string_append_printf(out, "\"occupancy\": %d, \"entered\": %" G_GINT64_FORMAT ", \"left\": %" G_GINT64_FORMAT,
                               c->occupancy, (gint64)c->in, (gint64)c->out);
}

// "zones" or "lines": per region its total and "classes", one per class
// seen (the metadata lists each region's total first, then its classes).
static void json_regions(GString *out, const reel_analytics *a, bool line)
{
    g_string_append_printf(out, ", \"%s\": [", line ? "lines" : "zones");
    const char *region = NULL;
    for (int i = 0; i < a->n_counts; i++) {
        const reel_region_count *c = &a->counts[i];
        if (c->line != line)
            continue;
        if (!region || strncmp(region, c->region, REEL_LABEL_MAX) != 0) { // the next region's total
            g_string_append(out, region ? "]}, {\"name\": " : "{\"name\": ");
            char *name = reel_meta_label_text(c->region);
            reel_json_string(out, name);
            g_free(name);
            g_string_append(out, ", ");
            json_counts(out, c);
            g_string_append(out, ", \"classes\": [");
            region = c->region;
            continue;
        }
        g_string_append(out, out->str[out->len - 1] == '[' ? "{" : ", {");
        json_class_fields(out, c->class_id, c->label);
        json_counts(out, c);
        g_string_append_c(out, '}');
    }
    g_string_append(out, region ? "]}]" : "]");
}

void reel_meta_json_event(GString *out, const reel_region_event *ev)
{
    bool cross = ev->type == REEL_EVENT_CROSS;
    g_string_append_printf(out, "{\"type\": \"%s\", \"%s\": ", reel_region_event_name(ev->type),
                           cross ? "line" : "zone");
    char *name = reel_meta_label_text(ev->region);
    reel_json_string(out, name);
    g_free(name);
    g_string_append_printf(out, ", \"track\": %" G_GINT64_FORMAT ", ", (gint64)ev->track_id);
    json_class_fields(out, ev->class_id, ev->label);
    if (cross) {
        g_string_append_printf(out, "\"direction\": \"%s\"", ev->direction > 0 ? "in" : "out");
    } else if (ev->type != REEL_EVENT_ENTER) {
        g_string_append(out, "\"dwell\": ");
        reel_meta_add_number(out, ev->dwell_s, "%.3f", "null");
    }
    if (out->str[out->len - 2] == ',') // the class fields' separator, nothing after it
        g_string_truncate(out, out->len - 2);
    g_string_append_c(out, '}');
}

static void json_events(GString *out, const reel_analytics *a)
{
    g_string_append(out, ", \"events\": [");
    for (int i = 0; i < a->n_events; i++) {
        g_string_append(out, i ? ", " : "");
        reel_meta_json_event(out, &a->events[i]);
    }
    g_string_append_c(out, ']');
}

void reel_meta_json_frame(GString *out, const reel_buffer *b, const reel_detections *dets,
                          const reel_classifications *cls)
{
    g_string_append_printf(out, "{\"stream\": %d, \"frame\": %" G_GINT64_FORMAT ", \"pts\": ", b->stream_id,
                           (gint64)b->frame_number);
    reel_meta_add_number(out, reel_meta_pts_seconds(b), "%.6f", "null");
    if (b->format.media == REEL_MEDIA_TENSOR) {
        g_string_append(out, ", \"shape\": [");
        int rank = CLAMP(b->format.rank, 0, REEL_TENSOR_MAX_RANK);
        for (int i = 0; i < rank; i++)
            g_string_append_printf(out, "%s%" G_GINT64_FORMAT, i ? ", " : "", (gint64)b->format.shape[i]);
        g_string_append_c(out, ']');
    } else {
        g_string_append_printf(out, ", \"width\": %d, \"height\": %d", b->format.width, b->format.height);
    }
    g_string_append(out, ", \"detections\": [");
    const reel_masks *masks = reel_buffer_get_meta(b, &reel_masks_meta);
    for (int i = 0; dets && i < dets->n; i++) {
        g_string_append(out, i ? ", " : "");
        json_detection(out, &dets->items[i], masks, i);
    }
    g_string_append(out, "], \"classifications\": [");
    for (int i = 0; cls && i < cls->n; i++) {
        g_string_append(out, i ? ", " : "");
        json_classification(out, &cls->items[i]);
    }
    g_string_append_c(out, ']');
    const reel_analytics *an = reel_buffer_get_meta(b, &reel_analytics_meta);
    if (an) {
        json_regions(out, an, false);
        json_regions(out, an, true);
        json_events(out, an);
    }
    g_string_append(out, "}\n");
}

void reel_meta_message(GString *out, const reel_buffer *b)
{
    g_string_truncate(out, 0);
    reel_meta_json_frame(out, b, reel_buffer_get_meta(b, &reel_detections_meta),
                         reel_buffer_get_meta(b, &reel_classifications_meta));
    g_string_truncate(out, out->len - 1);
}

void reel_meta_destination(GString *out, const char *pattern, int stream_id)
{
    char id[16];
    g_snprintf(id, sizeof id, "%d", stream_id);
    char **parts = g_strsplit(pattern, "{stream}", -1);
    char *text = g_strjoinv(id, parts);
    g_strfreev(parts);
    g_string_assign(out, text);
    g_free(text);
}

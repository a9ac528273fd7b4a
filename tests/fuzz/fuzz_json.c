// Fuzz target: metasink's per-frame JSON line and reel_json_string. The input
// describes a frame and its metadata field by field (layout below; a short
// input reads as zeros past its end); what follows is a string for
// reel_json_string. Each line written must be exactly one line of strict JSON
// (read by pipeline/json_read.c) that reads back as what was written: the same numbers
// (finite, to the printed precision; null for NaN and infinities), the same
// labels made valid UTF-8, in the order metasink.c documents. The rest of
// the input also goes to the JSON reader as it is.
//
// Layout, little-endian: u8 flags (1: tensor, 2: no pts), i32 stream,
// i64 frame, i64 pts, i32 time base num, den, i32 width, height, u8 rank,
// i64 shape[8], u8 detections, u8 classifications; per detection: f32 x0 y0
// x1 y1 score, i32 class, label[32], i64 track, i32 landmarks, f32[8][2];
// per classification: i32 class, f32 score, label[32], i32 detection.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elements/meta_json.h"
#include "base/json.h"
#include "json_check.h"
#include "base/json_read.h"

typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static void take(reader *r, void *out, size_t n)
{
    size_t k = MIN(n, r->left);
    memcpy(out, r->p, k);
    memset((uint8_t *)out + k, 0, n - k);
    r->p += k;
    r->left -= k;
}

#define TAKE(r, lvalue) take((r), &(lvalue), sizeof(lvalue))

static void read_detection(reader *r, reel_detection *d)
{
    TAKE(r, d->x0);
    TAKE(r, d->y0);
    TAKE(r, d->x1);
    TAKE(r, d->y1);
    TAKE(r, d->score);
    TAKE(r, d->class_id);
    take(r, d->label, sizeof d->label);
    TAKE(r, d->track_id);
    TAKE(r, d->n_landmarks);
    take(r, d->landmarks, 8 * sizeof d->landmarks[0]); // the layout keeps 8 (REEL_MAX_LANDMARKS was 8)
}

static void read_classification(reader *r, reel_classification *c)
{
    TAKE(r, c->class_id);
    TAKE(r, c->score);
    take(r, c->label, sizeof c->label);
    TAKE(r, c->detection);
}

static void die(const char *what, const GString *line)
{
    fprintf(stderr, "fuzz_json: %s\nline: %s\n", what, line ? line->str : "");
    abort();
}

// The scalars the line must hold, in order (NaN: null; a string: label).
typedef struct expected {
    GArray *scalars; // json_scalar; number field: the value before printing
    GArray *tolerance; // double per scalar
} expected;

static void expect_number(expected *e, double v, double decimals_half_unit)
{
    json_scalar s = { .kind = isfinite(v) ? JSON_NUMBER : JSON_NULL, .number = v };
    g_array_append_val(e->scalars, s);
    double tol = decimals_half_unit * (1 + 1e-9) + fabs(v) * 4e-16;
    g_array_append_val(e->tolerance, tol);
}

static void expect_label(expected *e, const char label[REEL_LABEL_MAX])
{
    json_scalar s = { .kind = JSON_STRING, .string = g_utf8_make_valid(label, (gssize)strnlen(label, REEL_LABEL_MAX)) };
    g_array_append_val(e->scalars, s);
    double tol = 0;
    g_array_append_val(e->tolerance, tol);
}

static void expect_frame(expected *e, const reel_buffer *b, const reel_detections *dets,
                         const reel_classifications *cls)
{
    expect_number(e, b->stream_id, 0);
    expect_number(e, (double)b->frame_number, 0);
    expect_number(e, reel_meta_pts_seconds(b), 0.5e-6);
    if (b->format.media == REEL_MEDIA_TENSOR) {
        for (int i = 0; i < b->format.rank; i++)
            expect_number(e, (double)b->format.shape[i], 0);
    } else {
        expect_number(e, b->format.width, 0);
        expect_number(e, b->format.height, 0);
    }
    for (int i = 0; i < dets->n; i++) {
        const reel_detection *d = &dets->items[i];
        expect_number(e, d->x0, 0.5e-3);
        expect_number(e, d->y0, 0.5e-3);
        expect_number(e, d->x1, 0.5e-3);
        expect_number(e, d->y1, 0.5e-3);
        expect_number(e, d->score, 0.5e-4);
        if (d->class_id >= 0)
            expect_number(e, d->class_id, 0);
        if (d->label[0])
            expect_label(e, d->label);
        if (d->track_id >= 0)
            expect_number(e, (double)d->track_id, 0);
        for (int l = 0; l < CLAMP(d->n_landmarks, 0, REEL_MAX_LANDMARKS); l++) {
            expect_number(e, d->landmarks[l][0], 0.5e-3);
            expect_number(e, d->landmarks[l][1], 0.5e-3);
        }
    }
    for (int i = 0; i < cls->n; i++) {
        const reel_classification *c = &cls->items[i];
        expect_number(e, c->class_id, 0);
        if (c->label[0])
            expect_label(e, c->label);
        expect_number(e, c->score, 0.5e-4);
        if (c->detection >= 0)
            expect_number(e, c->detection, 0);
    }
}

// The text as one line of strict JSON holding `want` (may be NULL).
static void check_line(const GString *line, const expected *want)
{
    if (line->len == 0 || line->str[line->len - 1] != '\n')
        die("the line does not end in '\\n'", line);
    for (size_t i = 0; i + 1 < line->len; i++) {
        unsigned char c = (unsigned char)line->str[i];
        if (c < 0x20 || c == 0x7f)
            die("a raw control character in the line", line);
    }
    if (!g_utf8_validate(line->str, (gssize)line->len, NULL))
        die("the line is not valid UTF-8", line);
    GArray *got = g_array_new(FALSE, TRUE, sizeof(json_scalar));
    GError *err = NULL;
    if (!json_check(line->str, line->len - 1, got, &err)) {
        fprintf(stderr, "fuzz_json: %s\n", err->message);
        die("invalid JSON", line);
    }
    if (want) {
        if (got->len != want->scalars->len)
            die("the line holds a different number of values", line);
        for (guint i = 0; i < got->len; i++) {
            const json_scalar *g = &g_array_index(got, json_scalar, i);
            const json_scalar *w = &g_array_index(want->scalars, json_scalar, i);
            double tol = g_array_index(want->tolerance, double, i);
            if (g->kind != w->kind)
                die("a value of the wrong kind (number, null, string)", line);
            if (g->kind == JSON_NUMBER && !(isfinite(g->number) && fabs(g->number - w->number) <= tol)) {
                fprintf(stderr, "fuzz_json: value %u reads %.17g, was %.17g\n", i, g->number, w->number);
                die("a number reads back different", line);
            }
            if (g->kind == JSON_STRING && strcmp(g->string, w->string) != 0)
                die("a label reads back different", line);
        }
    }
    json_scalars_free(got);
}

static void check_string(const char *s)
{
    GString *line = g_string_new(NULL);
    reel_json_string(line, s);
    g_string_append_c(line, '\n');
    expected want = {
        .scalars = g_array_new(FALSE, TRUE, sizeof(json_scalar)),
        .tolerance = g_array_new(FALSE, TRUE, sizeof(double)),
    };
    json_scalar w = { .kind = JSON_STRING, .string = g_utf8_make_valid(s, -1) };
    double tol = 0;
    g_array_append_val(want.scalars, w);
    g_array_append_val(want.tolerance, tol);
    check_line(line, &want);
    json_scalars_free(want.scalars);
    g_array_free(want.tolerance, TRUE);
    g_string_free(line, TRUE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = { data, size };
    reel_buffer b = { 0 };
    uint8_t flags = 0, rank = 0, n_dets = 0, n_cls = 0;
    TAKE(&r, flags);
    TAKE(&r, b.stream_id);
    TAKE(&r, b.frame_number);
    TAKE(&r, b.pts);
    TAKE(&r, b.time_base.num);
    TAKE(&r, b.time_base.den);
    TAKE(&r, b.format.width);
    TAKE(&r, b.format.height);
    TAKE(&r, rank);
    take(&r, b.format.shape, sizeof b.format.shape);
    TAKE(&r, n_dets);
    TAKE(&r, n_cls);
    b.format.media = flags & 1 ? REEL_MEDIA_TENSOR : REEL_MEDIA_VIDEO_RAW;
    b.format.rank = rank % (REEL_TENSOR_MAX_RANK + 1);
    if (flags & 2)
        b.pts = REEL_PTS_NONE;

    reel_detections *dets = g_malloc0(sizeof *dets + n_dets * sizeof(reel_detection));
    dets->n = n_dets;
    for (int i = 0; i < n_dets; i++)
        read_detection(&r, &dets->items[i]);
    reel_classifications *cls = g_malloc0(sizeof *cls + n_cls * sizeof(reel_classification));
    cls->n = n_cls;
    for (int i = 0; i < n_cls; i++)
        read_classification(&r, &cls->items[i]);

    expected want = {
        .scalars = g_array_new(FALSE, TRUE, sizeof(json_scalar)),
        .tolerance = g_array_new(FALSE, TRUE, sizeof(double)),
    };
    expect_frame(&want, &b, dets, cls);
    GString *line = g_string_new(NULL);
    reel_meta_json_frame(line, &b, dets, cls);
    check_line(line, &want);
    g_string_free(line, TRUE);
    json_scalars_free(want.scalars);
    g_array_free(want.tolerance, TRUE);
    g_free(dets);
    g_free(cls);

    // The rest of the input as JSON text for the reader (jobs arrive from
    // the network), then, up to a NUL, as one string to write.
    reel_json_free(reel_json_parse((const char *)r.p, r.left, NULL));
    char *rest = g_strndup((const char *)r.p, r.left);
    check_string(rest);
    g_free(rest);
    return 0;
}

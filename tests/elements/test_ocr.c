// OCR: the DB post-processing on maps drawn here with known rectangles
// (minimum-area rectangles, scores, unclip, what is dropped), greedy CTC
// against a key list written here (blanks, repeats, the space, a key that
// does not fit whole), then the real PP-OCRv4 models (scripts/fetch-models
// ppocr-det ppocr-rec) on words ffmpeg draws with DejaVu Sans: the texts
// read exactly and every box around its word's ink; the JSON; words drawn
// upside down, read with the angle classifier (ppocr-cls) and misread
// without; the errors.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "elements/ctc.h"
#include "elements/db.h"
#include "reel/reel.h"
#include "tests/support/skip.h"

#define FONT "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

static GPtrArray *grabbed; // frames the grab sink received
static char *work;         // a temporary folder

static int grab_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)e;
    (void)pad;
    g_ptr_array_add(grabbed, buf);
    return 0;
}

static const reel_element_class grab_class = {
    .name = "grab", .description = "keeps frames for the test",
    .min_inputs = 1, .max_inputs = 1, .input_caps = "video/raw,memory=host",
    .process = grab_process,
};

static void unref_buffer(gpointer b)
{
    reel_buffer *buf = b;
    reel_buffer_unref(&buf);
}

static void assert_near(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol))
        fail_msg("%s: %.3f, want %.3f within %.3f", what, got, want, tol);
}

// ---- minimum-area rectangles and DB

// The corners of a rectangle with centre (cx, cy), half extents a along
// the direction at `deg` degrees (clockwise in image coordinates) and b
// across it, top left first clockwise.
static void rect_corners(float cx, float cy, float a, float b, float deg, float c[4][2])
{
    float ux = cosf(deg * (float)G_PI / 180), uy = sinf(deg * (float)G_PI / 180), vx = -uy, vy = ux;
    static const float sa[4] = { -1, 1, 1, -1 }, sb[4] = { -1, -1, 1, 1 };
    for (int k = 0; k < 4; k++) {
        c[k][0] = cx + sa[k] * a * ux + sb[k] * b * vx;
        c[k][1] = cy + sa[k] * a * uy + sb[k] * b * vy;
    }
}

static void assert_corners(const float got[4][2], const float want[4][2], float tol)
{
    for (int k = 0; k < 4; k++)
        if (!(fabsf(got[k][0] - want[k][0]) <= tol && fabsf(got[k][1] - want[k][1]) <= tol))
            fail_msg("corner %d: (%.2f, %.2f), want (%.2f, %.2f) within %.2f", k, got[k][0], got[k][1], want[k][0],
                     want[k][1], tol);
}

static void test_min_area_rect(void **state)
{
    (void)state;
    // A rectangle's corners and points inside it, turned 30 degrees: the
    // rectangle itself comes back, top left first.
    float want[4][2], got[4][2], pts[40][2];
    rect_corners(50, 40, 20, 8, 30, want);
    int n = 0;
    for (int k = 0; k < 4; k++, n++)
        memcpy(pts[n], want[k], sizeof pts[n]);
    for (int i = 0; i < 12; i++, n++) {
        float c[4][2];
        rect_corners(50, 40, 20 * (float)i / 13, 8 * (float)(12 - i) / 13, 30, c);
        memcpy(pts[n], c[i % 4], sizeof pts[n]);
    }
    assert_true(reel_min_area_rect(&pts[0][0], n, got));
    assert_corners(got, want, 1e-3f);
    // Turned -70 degrees: the side nearer horizontal (the short one now)
    // becomes the top; its left end first.
    rect_corners(50, 40, 20, 8, -70, want);
    assert_true(reel_min_area_rect(&want[0][0], 4, got));
    float top_left_first[4][2];
    rect_corners(50, 40, 8, 20, 20, top_left_first);
    assert_corners(got, top_left_first, 1e-3f);
    // Points on a line, and too few points, have no rectangle.
    const float line[4][2] = { { 0, 0 }, { 1, 1 }, { 2, 2 }, { 5, 5 } };
    assert_false(reel_min_area_rect(&line[0][0], 4, got));
    assert_false(reel_min_area_rect(&line[0][0], 2, got));
}

// Paints value v at every pixel whose centre lies in the rectangle.
static void paint(float *map, int w, int h, float cx, float cy, float a, float b, float deg, float v)
{
    float ux = cosf(deg * (float)G_PI / 180), uy = sinf(deg * (float)G_PI / 180);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float dx = (float)x + 0.5f - cx, dy = (float)y + 0.5f - cy;
            if (fabsf(dx * ux + dy * uy) <= a && fabsf(-dx * uy + dy * ux) <= b)
                map[y * w + x] = v;
        }
}

static void test_db_boxes(void **state)
{
    (void)state;
    enum { W = 240, H = 160 };
    float *map = g_new0(float, W * H);
    paint(map, W, H, 100, 50, 40, 10, 10, 0.9f); // text
    paint(map, W, H, 60, 120, 30, 8, 0, 0.45f);  // above binarize, below box_threshold: dropped
    paint(map, W, H, 200, 130, 1, 1, 0, 0.95f);  // 2x2: under min_size, dropped
    paint(map, W, H, 200, 100, 12, 6, -5, 0.7f); // a second, fainter word
    const reel_db_params p = { 0.3f, 0.6f, 1.5f, 3, 1000 };
    GArray *boxes = g_array_new(FALSE, FALSE, sizeof(reel_db_box));
    assert_int_equal(reel_db_boxes(map, W, H, &p, boxes), 2);
    // Rows first: the word at y 50 is found first. Its rectangle is fitted
    // to pixel centres (about half a pixel inside the painted edge), then
    // grown by area * 1.5 / perimeter: 80 x 20 -> 12 px each side.
    const reel_db_box *b = &g_array_index(boxes, reel_db_box, 0);
    float want[4][2];
    rect_corners(100, 50, 40 + 12, 10 + 12, 10, want);
    assert_corners(b->points, want, 1.2f);
    assert_true(b->score > 0.8f && b->score <= 0.9f);
    b = &g_array_index(boxes, reel_db_box, 1);
    rect_corners(200, 100, 12 + 6, 6 + 6, -5, want); // 24 x 12: d = 288 * 1.5 / 72 = 6
    assert_corners(b->points, want, 1.2f);
    assert_true(b->score > 0.6f && b->score <= 0.7f);

    // A stricter box threshold drops the fainter word; a lower binarize
    // threshold keeps the weak region too.
    g_array_set_size(boxes, 0);
    const reel_db_params strict = { 0.3f, 0.75f, 1.5f, 3, 1000 };
    assert_int_equal(reel_db_boxes(map, W, H, &strict, boxes), 1);
    g_array_set_size(boxes, 0);
    const reel_db_params loose = { 0.3f, 0.4f, 1.5f, 3, 1000 };
    assert_int_equal(reel_db_boxes(map, W, H, &loose, boxes), 3);
    // max_boxes bounds the regions looked at.
    g_array_set_size(boxes, 0);
    const reel_db_params one = { 0.3f, 0.6f, 1.5f, 3, 1 };
    assert_int_equal(reel_db_boxes(map, W, H, &one, boxes), 1);
    // An empty map has no text.
    g_array_set_size(boxes, 0);
    memset(map, 0, sizeof(float) * W * H);
    assert_int_equal(reel_db_boxes(map, W, H, &p, boxes), 0);
    g_array_free(boxes, TRUE);
    g_free(map);
}

// ---- CTC

static char *write_file(const char *name, const char *text)
{
    char *path = g_build_filename(work, name, NULL);
    assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

// Steps whose best class is ids[t] (probability p[t]), the rest shared out.
static float *steps_of(const int *ids, const float *p, int steps, int classes)
{
    float *v = g_new(float, steps * classes);
    for (int t = 0; t < steps; t++)
        for (int c = 0; c < classes; c++)
            v[t * classes + c] = c == ids[t] ? p[t] : (1 - p[t]) / (float)(classes - 1);
    return v;
}

static void test_ctc_greedy(void **state)
{
    (void)state;
    char *path = write_file("keys.txt", "a\r\nb\né\n");
    reel_ctc_keys keys;
    GError *err = NULL;
    assert_int_equal(reel_ctc_keys_load(path, true, &keys, &err), 0);
    assert_int_equal(keys.n, 5); // blank, a, b, é, space
    assert_string_equal(keys.keys[1], "a");
    assert_string_equal(keys.keys[2], "b");
    assert_string_equal(keys.keys[4], " ");
    // a a _ a b ' ' ' ' é _ _: repeats merge, a blank splits them.
    const int ids[] = { 1, 1, 0, 1, 2, 4, 4, 3, 0, 0 };
    const float p[] = { 0.9f, 0.5f, 0.99f, 0.7f, 0.8f, 0.6f, 0.9f, 0.5f, 0.9f, 0.9f };
    float *probs = steps_of(ids, p, 10, keys.n);
    char text[16];
    float score = reel_ctc_greedy(probs, 10, &keys, text, sizeof text);
    assert_string_equal(text, "aab é");
    assert_near(score, (0.9 + 0.7 + 0.8 + 0.6 + 0.5) / 5, 1e-6, "score"); // each kept step's first probability
    // Cut to fit, at a key's end: "aab " and no half of é.
    char small[6];
    reel_ctc_greedy(probs, 10, &keys, small, sizeof small);
    assert_string_equal(small, "aab ");
    // Only blanks: nothing, score 0.
    const int blanks[] = { 0, 0 };
    float *none = steps_of(blanks, p, 2, keys.n);
    assert_near(reel_ctc_greedy(none, 2, &keys, text, sizeof text), 0, 0, "score of nothing");
    assert_string_equal(text, "");
    g_free(none);
    g_free(probs);
    reel_ctc_keys_clear(&keys);
    // Without the space, one class fewer.
    assert_int_equal(reel_ctc_keys_load(path, false, &keys, &err), 0);
    assert_int_equal(keys.n, 4);
    reel_ctc_keys_clear(&keys);
    g_free(path);
    path = write_file("empty.txt", "");
    assert_int_equal(reel_ctc_keys_load(path, true, &keys, &err), REEL_EFORMAT);
    assert_non_null(strstr(err->message, "has no keys"));
    g_clear_error(&err);
    g_free(path);
}

// ---- the real models

static bool have_ffmpeg(void)
{
    char *path = g_find_program_in_path("ffmpeg");
    g_free(path);
    return path != NULL;
}

static bool have_models(void)
{
    const char *models = getenv("REEL_MODEL_DIR") ? getenv("REEL_MODEL_DIR") : REEL_TEST_MODEL_CACHE;
    const char *files[] = { "ppocr/ch_PP-OCRv4_det_infer.onnx", "ppocr/ch_PP-OCRv4_rec_infer.onnx",
                            "ppocr/ppocr_keys_v1.txt" };
    bool ok = true;
    for (size_t i = 0; i < G_N_ELEMENTS(files) && ok; i++) {
        char *path = g_build_filename(models, files[i], NULL);
        ok = g_file_test(path, G_FILE_TEST_EXISTS);
        g_free(path);
    }
    return ok;
}

static bool have_classifier(void)
{
    const char *models = getenv("REEL_MODEL_DIR") ? getenv("REEL_MODEL_DIR") : REEL_TEST_MODEL_CACHE;
    char *path = g_build_filename(models, "ppocr/ch_ppocr_mobile_v2.0_cls_infer.onnx", NULL);
    bool ok = g_file_test(path, G_FILE_TEST_EXISTS);
    g_free(path);
    return ok;
}

static void run_ffmpeg(char **argv)
{
    char *err = NULL;
    int status = 0;
    GError *gerr = NULL;
    if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                      &status, &gerr))
        fail_msg("cannot run ffmpeg: %s", gerr->message);
    if (!g_spawn_check_wait_status(status, NULL))
        fail_msg("ffmpeg failed: %s", err);
    g_free(err);
}

// A 640x360 clip of `frames` frames, white with black words drawn by
// `filter` (drawtext ...), and its first frame as grey bytes: the ink.
static char *render(const char *name, const char *filter, int frames, uint8_t **gray)
{
    char *clip = g_strdup_printf("%s/%s.mp4", work, name), *raw = g_strdup_printf("%s/%s.gray", work, name);
    char *n = g_strdup_printf("%d", frames);
    char *make[] = { "ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "color=c=white:s=640x360:r=10",
                     "-filter_complex", (char *)filter, "-frames:v", n, "-c:v", "libx264", "-crf", "16", "-pix_fmt", "yuv420p",
                     clip, NULL };
    run_ffmpeg(make);
    char *ink[] = { "ffmpeg", "-v", "error", "-nostdin", "-y", "-i", clip, "-frames:v", "1", "-f", "rawvideo",
                    "-pix_fmt", "gray", raw, NULL };
    run_ffmpeg(ink);
    gsize size = 0;
    assert_true(g_file_get_contents(raw, (char **)gray, &size, NULL));
    assert_int_equal(size, 640 * 360);
    g_free(n);
    g_free(raw);
    return clip;
}

static void run_ok(const char *text)
{
    GError *err = NULL;
    g_ptr_array_set_size(grabbed, 0);
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1), &err);
    if (!p)
        fail_msg("%s", err->message);
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
}

static char *run_fails(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1), &err);
    if (p && reel_pipeline_run(p, &err) == 0)
        fail_msg("%s ran", text);
    reel_pipeline_destroy(&p);
    char *msg = g_strdup(err->message);
    g_error_free(err);
    return msg;
}

// The detection whose text is `text`, or a failure listing what was read.
static const reel_detection *find_text(const reel_detections *d, const char *text)
{
    GString *seen = g_string_new(NULL);
    for (int i = 0; i < d->n; i++) {
        if (strcmp(d->items[i].text, text) == 0) {
            g_string_free(seen, TRUE);
            return &d->items[i];
        }
        g_string_append_printf(seen, "%s\"%s\"", i ? ", " : "", d->items[i].text);
    }
    fail_msg("no \"%s\" among the texts read: %s", text, seen->str);
    return NULL;
}

// How far (x, y) lies outside the quad c (convex, clockwise); <= 0 inside.
static float outside_quad(const float c[4][2], float x, float y)
{
    float worst = -INFINITY;
    for (int k = 0; k < 4; k++) {
        const float *p = c[k], *q = c[(k + 1) % 4];
        float ex = q[0] - p[0], ey = q[1] - p[1];
        worst = fmaxf(worst, -(ex * (y - p[1]) - ey * (x - p[0])) / hypotf(ex, ey));
    }
    return worst;
}

// Every ink pixel (darker than mid grey) within rows [y0, y1) lies in the
// detection's quad, its centre at most `outside` px out of it (DB's boxes
// are tight: regions the model shrinks, grown back by a rule; 1.3 and
// 1.75 px measured on upright words, so 2), and the box reaches no more than
// `margin` px beyond the ink.
static void assert_around_ink_by(const reel_detection *d, const uint8_t *gray, int y0, int y1, float outside,
                                 float margin)
{
    assert_int_equal(d->n_landmarks, 4);
    int ix0 = 640, ix1 = -1, iy0 = 360, iy1 = -1;
    float worst = -INFINITY;
    for (int y = y0; y < y1; y++)
        for (int x = 0; x < 640; x++) {
            if (gray[y * 640 + x] > 128)
                continue;
            worst = fmaxf(worst, outside_quad(d->landmarks, (float)x + 0.5f, (float)y + 0.5f));
            ix0 = MIN(ix0, x);
            ix1 = MAX(ix1, x + 1);
            iy0 = MIN(iy0, y);
            iy1 = MAX(iy1, y + 1);
        }
    assert_true(ix1 > ix0);
    printf("\"%s\": ink %d,%d..%d,%d, box %.1f,%.1f..%.1f,%.1f, ink at most %.2f px outside\n", d->text, ix0, iy0,
           ix1, iy1, d->x0, d->y0, d->x1, d->y1, worst);
    if (worst > outside)
        fail_msg("ink of \"%s\" %.2f px outside its box", d->text, worst);
    if (d->x0 < (float)ix0 - margin || d->x1 > (float)ix1 + margin || d->y0 < (float)iy0 - margin
        || d->y1 > (float)iy1 + margin)
        fail_msg("box of \"%s\" %.1f,%.1f..%.1f,%.1f reaches more than %.0f px beyond its ink %d,%d..%d,%d", d->text,
                 d->x0, d->y0, d->x1, d->y1, margin, ix0, iy0, ix1, iy1);
}

static void assert_around_ink(const reel_detection *d, const uint8_t *gray, int y0, int y1, float margin)
{
    assert_around_ink_by(d, gray, y0, y1, 2, margin);
}

static void test_reads_rendered_words(void **state)
{
    (void)state;
    if (!have_models() || !g_file_test(FONT, G_FILE_TEST_EXISTS) || !have_ffmpeg())
        reel_skip("no PP-OCRv4 models (scripts/fetch-models ppocr-det ppocr-rec), no " FONT
                  " (fonts-dejavu-core) or no ffmpeg");
    uint8_t *gray = NULL;
    char *clip = render("words", "drawtext=fontfile=" FONT ":text='REEL 2026':fontsize=56:fontcolor=black:x=60:y=60,"
                                 "drawtext=fontfile=" FONT ":text='hello world':fontsize=48:fontcolor=black:x=200:y=250",
                        3, &gray);
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=ppocr-det ! detect ! ocr ! "
                                 "grab", clip);
    run_ok(text);
    g_free(text);
    assert_int_equal(grabbed->len, 3);
    for (guint f = 0; f < grabbed->len; f++) {
        const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[f], &reel_detections_meta);
        assert_non_null(d);
        assert_int_equal(d->n, 2);
        const reel_detection *a = find_text(d, "REEL 2026"), *b = find_text(d, "hello world");
        assert_true(a->text_score > 0.9f && b->text_score > 0.9f);
        assert_true(a->score >= 0.6f && b->score >= 0.6f);
        // drawtext's words: rows 60..120 and 250..300 of the frame.
        assert_around_ink(a, gray, 0, 180, 12);
        assert_around_ink(b, gray, 180, 360, 12);
    }

    // With the angle classifier: the same texts, the boxes' corners as
    // they were (nothing turned).
    if (have_classifier()) {
        GPtrArray *without = grabbed;
        grabbed = g_ptr_array_new_with_free_func(unref_buffer);
        text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=ppocr-det ! detect ! "
                               "ocr classifier=ppocr-cls ! grab", clip);
        run_ok(text);
        g_free(text);
        assert_int_equal(grabbed->len, without->len);
        for (guint f = 0; f < grabbed->len; f++) {
            const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[f], &reel_detections_meta),
                                  *was = reel_buffer_get_meta(without->pdata[f], &reel_detections_meta);
            assert_int_equal(d->n, was->n);
            for (int i = 0; i < d->n; i++) {
                assert_string_equal(d->items[i].text, was->items[i].text);
                assert_near(d->items[i].text_score, was->items[i].text_score, 1e-6, "text score");
                assert_memory_equal(d->items[i].landmarks, was->items[i].landmarks, sizeof(float) * 8);
            }
        }
        g_ptr_array_free(without, TRUE);
    } else {
        printf("NOTE: no ppocr-cls (scripts/fetch-models ppocr-cls): the classifier on upright words not checked\n");
    }

    // The same through metasink: the text and its score in the JSON.
    char *jsonl = g_strdup_printf("%s/words.jsonl", work);
    text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=ppocr-det ! detect ! ocr ! "
                           "metasink location=%s", clip, jsonl);
    run_ok(text);
    g_free(text);
    char *json = NULL;
    assert_true(g_file_get_contents(jsonl, &json, NULL, NULL));
    assert_non_null(strstr(json, "\"class\": 0, \"text\": \"REEL 2026\", \"text_score\": 0.9"));
    assert_non_null(strstr(json, "\"text\": \"hello world\", \"text_score\": 0.9"));
    g_free(json);
    g_free(jsonl);
    g_free(gray);
    g_free(clip);
}

static void test_reads_turned_words(void **state)
{
    (void)state;
    if (!have_models() || !g_file_test(FONT, G_FILE_TEST_EXISTS) || !have_ffmpeg())
        reel_skip("no PP-OCRv4 models (scripts/fetch-models ppocr-det ppocr-rec), no " FONT
                  " (fonts-dejavu-core) or no ffmpeg");
    uint8_t *gray = NULL;
    // Turned 12 degrees clockwise about the frame's centre.
    char *clip = render("turned", "drawtext=fontfile=" FONT ":text='Tilted 42':fontsize=52:fontcolor=black:x=170:"
                                  "y=150,rotate=12*PI/180:fillcolor=white", 1, &gray);
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=ppocr-det ! detect ! ocr ! "
                                 "grab", clip);
    run_ok(text);
    g_free(text);
    assert_int_equal(grabbed->len, 1);
    const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[0], &reel_detections_meta);
    assert_non_null(d);
    assert_int_equal(d->n, 1);
    const reel_detection *t = find_text(d, "Tilted 42");
    assert_around_ink(t, gray, 0, 360, 12);
    const float *tl = t->landmarks[0], *tr = t->landmarks[1];
    double deg = atan2(tr[1] - tl[1], tr[0] - tl[0]) * 180 / G_PI;
    assert_near(deg, 12, 1.5, "the box's angle");
    g_free(gray);
    g_free(clip);
}

// Words drawn upside down (a text layer turned 180 degrees, below upright
// words): without the classifier the recognizer misreads them; with it they
// read exactly, the upright words as before, and the turned box's corners
// start at its bottom right, where the turned text reads from.
static void test_reads_upside_down_words(void **state)
{
    (void)state;
    if (!have_models() || !have_classifier() || !g_file_test(FONT, G_FILE_TEST_EXISTS) || !have_ffmpeg())
        reel_skip("no PP-OCRv4 models or classifier (scripts/fetch-models ppocr-det ppocr-rec ppocr-cls), no " FONT
                  " (fonts-dejavu-core) or no ffmpeg");
    uint8_t *gray = NULL;
    char *clip = render("upside-down", "color=c=white:s=640x180:r=10,drawtext=fontfile=" FONT ":text='Upside down':"
                                       "fontsize=52:fontcolor=black:x=150:y=60,vflip,hflip[turned];"
                                       "[0][turned]overlay=0:180,drawtext=fontfile=" FONT ":text='REEL 2026':"
                                       "fontsize=56:fontcolor=black:x=60:y=60",
                        1, &gray);
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=ppocr-det ! detect ! ocr "
                                 "threshold=0 ! grab", clip);
    run_ok(text);
    g_free(text);
    assert_int_equal(grabbed->len, 1);
    for (guint f = 0; f < grabbed->len; f++) {
        const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[f], &reel_detections_meta);
        assert_int_equal(d->n, 2); // threshold=0: whatever it read of the turned words stays
        find_text(d, "REEL 2026");
        for (int i = 0; i < d->n; i++)
            if (strcmp(d->items[i].text, "Upside down") == 0)
                fail_msg("read the turned words right without the classifier");
    }

    text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=ppocr-det ! detect ! ocr "
                           "classifier=ppocr-cls ! grab", clip);
    run_ok(text);
    g_free(text);
    assert_int_equal(grabbed->len, 1);
    for (guint f = 0; f < grabbed->len; f++) {
        const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[f], &reel_detections_meta);
        assert_int_equal(d->n, 2);
        const reel_detection *up = find_text(d, "REEL 2026"), *t = find_text(d, "Upside down");
        assert_true(up->text_score > 0.9f && t->text_score > 0.9f);
        assert_around_ink(up, gray, 0, 180, 12);
        // The detector fits upside-down glyphs less tightly (2.52 px measured).
        assert_around_ink_by(t, gray, 180, 360, 3, 12);
        // Top left (as it reads) at the bottom right of the frame's box, top
        // right to its left: the box's top edge points left, 180 degrees.
        const float *tl = t->landmarks[0], *tr = t->landmarks[1];
        assert_true(tl[0] > t->landmarks[2][0] && tl[1] > t->landmarks[2][1]);
        double deg = fabs(atan2(tr[1] - tl[1], tr[0] - tl[0]) * 180 / G_PI);
        assert_near(deg, 180, 3, "the turned box's angle");
        const float *utl = up->landmarks[0], *utr = up->landmarks[1];
        assert_near(atan2(utr[1] - utl[1], utr[0] - utl[0]) * 180 / G_PI, 0, 3, "the upright box's angle");
    }

    // No probability is above 1: nothing turns, the misreading again.
    text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=ppocr-det ! detect ! ocr "
                           "classifier=ppocr-cls cls-threshold=1 threshold=0 ! grab", clip);
    run_ok(text);
    g_free(text);
    const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[0], &reel_detections_meta);
    assert_int_equal(d->n, 2);
    for (int i = 0; i < d->n; i++)
        assert_string_not_equal(d->items[i].text, "Upside down");
    g_free(gray);
    g_free(clip);
}

static void assert_contains(char *msg, const char *part)
{
    if (!strstr(msg, part))
        fail_msg("\"%s\" not in \"%s\"", part, msg);
    g_free(msg);
}

static void test_clear_errors(void **state)
{
    (void)state;
    if (!have_models()) {
        assert_contains(run_fails("testsrc num-buffers=1 ! ocr ! grab"), "scripts/fetch-models ppocr-rec");
        reel_skip("no PP-OCRv4 models (scripts/fetch-models ppocr-det ppocr-rec)");
    }
    assert_contains(run_fails("testsrc num-buffers=1 ! ocr keys=/nonexistent ! grab"), "keys: ");
    assert_contains(run_fails("testsrc num-buffers=1 ! ocr ! grab"),
                    "frame carries no detections: put a text detector before ocr");
    // The recognizer's outputs to the DB decoder, the detector as a recognizer.
    assert_contains(run_fails("testsrc num-buffers=1 ! preprocess size=320x48 scale=0.00784313725490196 offset=-1 ! "
                              "infer model=ppocr-rec ! detect decoder=db ! grab"),
                    "decoder=db wants a probability map [1, 1, H, W], but model 'ppocr-rec' gave: "
                    "softmax_11.tmp_0 [1x40x6625]");
    assert_contains(run_fails("testsrc num-buffers=1 ! ocr model=ppocr-det ! grab"),
                    "is no text recognizer: ocr wants one float input [N,3,H,W] and an output [N,steps,classes], it "
                    "has 1 input(s) of rank 4 and output rank 4");
    char *keys = write_file("three.txt", "a\nb\nc\n");
    char *text = g_strdup_printf("testsrc num-buffers=1 ! ocr keys=%s ! grab", keys);
    assert_contains(run_fails(text), "gives 6625 classes, but its keys make 5 (blank, 3 keys, space): the keys are "
                                     "not this model's");
    g_free(text);
    g_free(keys);

    // Classifiers that are none: missing, the recognizer, a 3-class model.
    if (!have_classifier())
        return;
    assert_contains(run_fails("testsrc num-buffers=1 ! ocr classifier=no-such-classifier ! grab"),
                    "classifier: ");
    assert_contains(run_fails("testsrc num-buffers=1 ! ocr classifier=ppocr-rec ! grab"),
                    "classifier: model ");
    assert_contains(run_fails("testsrc num-buffers=1 ! ocr classifier=ppocr-rec ! grab"),
                    "ch_PP-OCRv4_rec_infer.onnx is no angle classifier: ocr wants one float input [N,3,H,W] and one "
                    "output [N,2], it has 1 input(s) of rank 4 and 1 output(s) of rank 3");
    const char *models = getenv("REEL_TEST_MODELS");
    char *colour = models ? g_build_filename(models, "colour.onnx", NULL) : NULL;
    if (colour && g_file_test(colour, G_FILE_TEST_EXISTS)) {
        text = g_strdup_printf("testsrc num-buffers=1 ! ocr classifier=%s ! grab", colour);
        char *want = g_strdup_printf("classifier: model %s gives 3 classes; an angle classifier gives 2 (0 and 180 "
                                     "degrees)", colour);
        assert_contains(run_fails(text), want);
        g_free(want);
        g_free(text);
    } else {
        printf("NOTE: no colour.onnx in $REEL_TEST_MODELS (tests/models/make_models.py): a 3-class classifier "
               "not checked\n");
    }
    g_free(colour);
}

int main(void)
{
    reel_init();
    reel_element_class_register(&grab_class);
    grabbed = g_ptr_array_new_with_free_func(unref_buffer);
    work = g_dir_make_tmp("test_ocr_XXXXXX", NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_area_rect),
        cmocka_unit_test(test_db_boxes),
        cmocka_unit_test(test_ctc_greedy),
        cmocka_unit_test(test_reads_rendered_words),
        cmocka_unit_test(test_reads_turned_words),
        cmocka_unit_test(test_reads_upside_down_words),
        cmocka_unit_test(test_clear_errors),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    g_ptr_array_free(grabbed, TRUE);
    char *rm[] = { "rm", "-rf", work, NULL };
    g_spawn_sync(NULL, rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL, NULL);
    g_free(work);
    return reel_test_verdict(failed);
}

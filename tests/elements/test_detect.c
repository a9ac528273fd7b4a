// detect and classify: each decoder run through a real pipeline on raw
// outputs a test element attaches by hand (no model, no clip), against a
// reference decoder written here in plain loops; boxes mapped back through a
// letterbox transform; NMS and BlazeFace anchors alone; classify's top-k;
// the error messages.
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

#include "elements/postprocess.h"
#include "reel/reel.h"
#include "tests/support/skip.h"

// ---- Test elements

// What `inject` attaches to each frame: up to four float32 outputs.
typedef struct fake_output {
    const char *name;
    int rank;
    int64_t shape[3];
    const float *data;
} fake_output;

static struct {
    int n;
    fake_output out[4];
    bool has_transform;
    reel_transform transform;
} fake;

static GPtrArray *grabbed; // frames the grab sink received

static reel_buffer *fake_tensor(const fake_output *o)
{
    GString *text = g_string_new("tensor,dtype=float32,memory=host,shape=");
    size_t n = 1;
    for (int d = 0; d < o->rank; d++) {
        g_string_append_printf(text, "%s%" G_GINT64_FORMAT, d ? "x" : "", o->shape[d]);
        n *= (size_t)o->shape[d];
    }
    reel_caps f;
    assert_true(reel_caps_parse(text->str, &f, NULL, NULL));
    g_string_free(text, TRUE);
    reel_buffer *t = reel_buffer_new_format(&f);
    memcpy(t->data, o->data, n * sizeof(float));
    return t;
}

static int inject_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    reel_inference *inf = reel_inference_new(fake.n);
    g_strlcpy(inf->model, "fake", sizeof inf->model);
    inf->has_transform = fake.has_transform;
    inf->transform = fake.transform;
    for (int i = 0; i < fake.n; i++) {
        inf->names[i] = g_strdup(fake.out[i].name);
        inf->outputs[i] = fake_tensor(&fake.out[i]);
    }
    reel_buffer_add_meta(buf, &reel_inference_meta, inf);
    return reel_element_push(e, 0, buf);
}

// Attaches `fake` as an infer would.
static const reel_element_class inject_class = {
    .name = "inject", .description = "attaches hand-made inference results", .flags = REEL_CLASS_PASSTHROUGH,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .process = inject_process,
};

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

// ---- Helpers

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

// Runs and returns the failure's message (g_free it).
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

// A W x H testsrc (2 frames) into inject, `chain`, grab; the detections of
// every frame must agree: those of the first come back.
static const reel_detections *detect_on(int w, int h, const char *chain)
{
    char *text = g_strdup_printf("testsrc num-buffers=2 ! video/raw,width=%d,height=%d ! inject ! %s ! grab", w, h,
                                 chain);
    run_ok(text);
    g_free(text);
    assert_int_equal(grabbed->len, 2);
    const reel_detections *a = reel_buffer_get_meta(grabbed->pdata[0], &reel_detections_meta);
    const reel_detections *b = reel_buffer_get_meta(grabbed->pdata[1], &reel_detections_meta);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->items, b->items, (size_t)a->n * sizeof *a->items);
    return a;
}

static char *write_labels(const char *text)
{
    char *path;
    int fd = g_file_open_tmp("reel-labels-XXXXXX.txt", &path, NULL);
    assert_true(fd >= 0);
    close(fd);
    assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static float *random_floats(GRand *r, size_t n, double lo, double hi)
{
    float *v = g_new(float, n);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)g_rand_double_range(r, lo, hi);
    return v;
}

// ---- The reference: plain loops, no NMS (the tests set iou=1, so that NMS
// keeps every box), results best first.

typedef struct ref_list {
    int n;
    reel_detection d[4096];
} ref_list;

static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

// A box in tensor pixels, mapped to the frame as the transform says.
static void ref_add(ref_list *l, const reel_transform *t, float x0, float y0, float x1, float y1, float score,
                    int class_id)
{
    reel_detection *d = &l->d[l->n++];
    memset(d, 0, sizeof *d);
    d->x0 = clampf((float)((x0 - t->bx) / t->ax), 0, (float)t->frame_width);
    d->y0 = clampf((float)((y0 - t->by) / t->ay), 0, (float)t->frame_height);
    d->x1 = clampf((float)((x1 - t->bx) / t->ax), 0, (float)t->frame_width);
    d->y1 = clampf((float)((y1 - t->by) / t->ay), 0, (float)t->frame_height);
    d->score = score;
    d->class_id = class_id;
    d->track_id = -1;
}

// Insertion sort, best score first, equal scores in order of decoding.
static void ref_sort(ref_list *l)
{
    for (int i = 1; i < l->n; i++)
        for (int j = i; j > 0 && l->d[j].score > l->d[j - 1].score; j--) {
            reel_detection t = l->d[j];
            l->d[j] = l->d[j - 1];
            l->d[j - 1] = t;
        }
}

static void assert_same(const reel_detections *got, const ref_list *want, bool landmarks)
{
    assert_int_equal(got->n, want->n);
    for (int i = 0; i < want->n; i++) {
        const reel_detection *g = &got->items[i], *w = &want->d[i];
        assert_float_equal(g->score, w->score, 1e-6);
        assert_int_equal(g->class_id, w->class_id);
        assert_float_equal(g->x0, w->x0, 1e-3);
        assert_float_equal(g->y0, w->y0, 1e-3);
        assert_float_equal(g->x1, w->x1, 1e-3);
        assert_float_equal(g->y1, w->y1, 1e-3);
        assert_int_equal(g->track_id, -1);
        if (!landmarks)
            continue;
        assert_int_equal(g->n_landmarks, w->n_landmarks);
        for (int k = 0; k < w->n_landmarks; k++) {
            assert_float_equal(g->landmarks[k][0], w->landmarks[k][0], 1e-3);
            assert_float_equal(g->landmarks[k][1], w->landmarks[k][1], 1e-3);
        }
    }
}

// 320x240 letterboxed into 128x128: scale 0.4, 96 rows from row 16.
static const reel_transform letterbox_128 = { 0.4, 0, 0.4, 16, 320, 240, 128, 128 };

// MediaPipe's front-model anchors written out: a 16x16 grid with 2 anchors
// a cell (stride 8), then an 8x8 grid with 6 (three stride-16 layers).
static int ref_front_anchors(float (*a)[2])
{
    int n = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            for (int k = 0; k < 2; k++, n++)
                a[n][0] = (x + 0.5f) / 16, a[n][1] = (y + 0.5f) / 16;
    for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++)
            for (int k = 0; k < 6; k++, n++)
                a[n][0] = (x + 0.5f) / 8, a[n][1] = (y + 0.5f) / 8;
    return n;
}

// TensorsToDetections as MediaPipe writes it, in 0..1 of the input with
// scale S = 128, then to tensor pixels and the frame.
static void ref_blazeface(const float *scores, const float *boxes, const reel_transform *t, float threshold,
                          ref_list *l)
{
    static float anchors[896][2];
    assert_int_equal(ref_front_anchors(anchors), 896);
    const float S = 128;
    l->n = 0;
    for (int i = 0; i < 896; i++) {
        float score = 1 / (1 + expf(-scores[i]));
        if (score < threshold)
            continue;
        const float *raw = boxes + i * 16;
        float xc = raw[0] / S + anchors[i][0], yc = raw[1] / S + anchors[i][1];
        float w = raw[2] / S, h = raw[3] / S;
        ref_add(l, t, (xc - w / 2) * S, (yc - h / 2) * S, (xc + w / 2) * S, (yc + h / 2) * S, score, 0);
        reel_detection *d = &l->d[l->n - 1];
        d->n_landmarks = 6;
        for (int k = 0; k < 6; k++) {
            float kx = (raw[4 + 2 * k] / S + anchors[i][0]) * S, ky = (raw[5 + 2 * k] / S + anchors[i][1]) * S;
            d->landmarks[k][0] = clampf((float)((kx - t->bx) / t->ax), 0, (float)t->frame_width);
            d->landmarks[k][1] = clampf((float)((ky - t->by) / t->ay), 0, (float)t->frame_height);
        }
    }
    ref_sort(l);
}

// The four outputs of the front model over 896 scores and 896 x 16 boxes.
static void fake_blazeface(float *scores, float *boxes)
{
    fake.n = 4;
    fake.out[0] = (fake_output){ "Identity:0", 3, { 1, 512, 1 }, scores };
    fake.out[1] = (fake_output){ "Identity_1:0", 3, { 1, 384, 1 }, scores + 512 };
    fake.out[2] = (fake_output){ "Identity_2:0", 3, { 1, 512, 16 }, boxes };
    fake.out[3] = (fake_output){ "Identity_3:0", 3, { 1, 384, 16 }, boxes + 512 * 16 };
}

// ---- Tests: decoders against the reference

static void test_blazeface_matches_reference(void **state)
{
    (void)state;
    GRand *r = g_rand_new_with_seed(1);
    float *scores = random_floats(r, 896, -6, 3), *boxes = random_floats(r, 896 * 16, -20, 20);
    for (int i = 0; i < 896; i++)
        for (int k = 2; k < 4; k++)
            boxes[i * 16 + k] = fabsf(boxes[i * 16 + k]) + 4; // width, height
    fake_blazeface(scores, boxes);
    fake.has_transform = true;
    fake.transform = letterbox_128;
    static ref_list want;
    ref_blazeface(scores, boxes, &letterbox_128, 0.6f, &want);
    assert_true(want.n > 20 && want.n < 400); // a fair share passes
    const reel_detections *got = detect_on(320, 240, "detect decoder=blazeface threshold=0.6 iou=1 max=1000");
    assert_same(got, &want, true);
    g_free(scores);
    g_free(boxes);
    g_rand_free(r);
}

// One known face, worked out by hand: anchor 37 (cell x 2, y 1 of the
// stride-8 grid: centre 20, 12 in the 128x128 input) with raw box
// (20, 24, 40, 40) is the tensor box (20, 16)-(60, 56), in the 320x240
// frame (x / 0.4, (y - 16) / 0.4): (50, 0)-(150, 100).
static void test_blazeface_known_box_through_letterbox(void **state)
{
    (void)state;
    static float scores[896], boxes[896 * 16];
    for (int i = 0; i < 896; i++)
        scores[i] = -10;
    scores[37] = 2;
    float raw[16] = { 20, 24, 40, 40, -10, -4 };
    memcpy(boxes + 37 * 16, raw, sizeof raw);
    fake_blazeface(scores, boxes);
    fake.has_transform = true;
    fake.transform = letterbox_128;
    const reel_detections *got = detect_on(320, 240, "detect decoder=blazeface");
    assert_int_equal(got->n, 1);
    const reel_detection *d = &got->items[0];
    assert_float_equal(d->x0, 50, 1e-4);
    assert_float_equal(d->y0, 0, 1e-4);
    assert_float_equal(d->x1, 150, 1e-4);
    assert_float_equal(d->y1, 100, 1e-4);
    assert_float_equal(d->score, 1 / (1 + expf(-2)), 1e-6);
    assert_int_equal(d->n_landmarks, 6);
    // Landmark 0: (20 - 10, 12 - 4) = (10, 8) -> (25, 0) after clamping y = -20.
    assert_float_equal(d->landmarks[0][0], 25, 1e-4);
    assert_float_equal(d->landmarks[0][1], 0, 1e-4);
    // Landmark 1 had raw (0, 0): the anchor centre, (20, 12) -> (50, 0).
    assert_float_equal(d->landmarks[1][0], 50, 1e-4);
}

static void ref_yolov8(const float *v, int classes, int n, const reel_transform *t, float threshold, ref_list *l)
{
    l->n = 0;
    for (int j = 0; j < n; j++) {
        int best = 0;
        for (int c = 1; c < classes; c++)
            if (v[(4 + c) * n + j] > v[(4 + best) * n + j])
                best = c;
        float score = v[(4 + best) * n + j];
        if (score < threshold)
            continue;
        float cx = v[j], cy = v[n + j], w = v[2 * n + j], h = v[3 * n + j];
        ref_add(l, t, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, score, best);
    }
    ref_sort(l);
}

// 640x480 letterboxed into 320x320: scale 0.5, rows from 40.
static const reel_transform letterbox_320 = { 0.5, 0, 0.5, 40, 640, 480, 320, 320 };

static void test_yolov8_matches_reference_with_labels(void **state)
{
    (void)state;
    enum { C = 5, N = 400 };
    GRand *r = g_rand_new_with_seed(2);
    float *v = random_floats(r, (4 + C) * N, 0, 1);
    for (int j = 0; j < N; j++) {
        v[j] = (float)g_rand_double_range(r, -10, 330);         // cx
        v[N + j] = (float)g_rand_double_range(r, 30, 290);      // cy
        v[2 * N + j] = (float)g_rand_double_range(r, 2, 80);    // w
        v[3 * N + j] = (float)g_rand_double_range(r, 2, 80);    // h
    }
    fake.n = 1;
    fake.out[0] = (fake_output){ "output0", 3, { 1, 4 + C, N }, v };
    fake.has_transform = true;
    fake.transform = letterbox_320;
    static ref_list want;
    ref_yolov8(v, C, N, &letterbox_320, 0.9f, &want);
    assert_true(want.n > 20);
    char *labels = write_labels("person\nbicycle\ncar\nmotorcycle\nairplane\n");
    char *chain = g_strdup_printf("detect decoder=yolov8 threshold=0.9 iou=1 max=1000 labels=%s", labels);
    const reel_detections *got = detect_on(640, 480, chain);
    assert_same(got, &want, false);
    static const char *names[] = { "person", "bicycle", "car", "motorcycle", "airplane" };
    for (int i = 0; i < got->n; i++)
        assert_string_equal(got->items[i].label, names[got->items[i].class_id]);
    g_free(chain);
    g_unlink(labels);
    g_free(labels);
    g_free(v);
    g_rand_free(r);
}

static void test_yolov5_matches_reference(void **state)
{
    (void)state;
    enum { C = 3, N = 300 };
    GRand *r = g_rand_new_with_seed(3);
    float *v = random_floats(r, N * (5 + C), 0, 1);
    for (int j = 0; j < N; j++) {
        float *row = v + j * (5 + C);
        row[0] = (float)g_rand_double_range(r, 0, 320);
        row[1] = (float)g_rand_double_range(r, 0, 320);
        row[2] = (float)g_rand_double_range(r, 2, 60);
        row[3] = (float)g_rand_double_range(r, 2, 60);
    }
    fake.n = 1;
    fake.out[0] = (fake_output){ "output", 3, { 1, N, 5 + C }, v };
    fake.has_transform = true;
    fake.transform = letterbox_320;
    static ref_list want;
    want.n = 0;
    for (int j = 0; j < N; j++) {
        const float *row = v + j * (5 + C);
        int best = 0;
        for (int c = 1; c < C; c++)
            if (row[5 + c] > row[5 + best])
                best = c;
        float score = row[4] * row[5 + best];
        if (score >= 0.5f)
            ref_add(&want, &letterbox_320, row[0] - row[2] / 2, row[1] - row[3] / 2, row[0] + row[2] / 2,
                    row[1] + row[3] / 2, score, best);
    }
    ref_sort(&want);
    assert_true(want.n > 10);
    assert_same(detect_on(640, 480, "detect decoder=yolov5 iou=1 max=1000"), &want, false);
    g_free(v);
    g_rand_free(r);
}

// No transform on the inference: the frame is taken as the input,
// stretched; SSD's normalized boxes scale by the input size.
static void test_ssd_matches_reference(void **state)
{
    (void)state;
    enum { C = 6, N = 100 }; // C = 4 would need boxes= (two [1, N, 4] outputs)
    GRand *r = g_rand_new_with_seed(4);
    float *scores = random_floats(r, N * C, 0, 1), *boxes = g_new(float, N * 4);
    for (int j = 0; j < N; j++) {
        float y0 = (float)g_rand_double_range(r, -0.1, 0.9), x0 = (float)g_rand_double_range(r, -0.1, 0.9);
        float *b = boxes + j * 4;
        b[0] = y0, b[1] = x0;
        b[2] = y0 + (float)g_rand_double_range(r, 0.01, 0.3), b[3] = x0 + (float)g_rand_double_range(r, 0.01, 0.3);
    }
    // Scores first: outputs are found by shape, not position.
    fake.n = 2;
    fake.out[0] = (fake_output){ "detection_scores", 3, { 1, N, C }, scores };
    fake.out[1] = (fake_output){ "detection_boxes", 3, { 1, N, 4 }, boxes };
    fake.has_transform = false;
    // input-size=300 over a 600x450 frame: tensor = frame * (0.5, 2/3).
    reel_transform stretch = { 0.5, 0, 300.0 / 450, 0, 600, 450, 300, 300 };
    static ref_list want;
    want.n = 0;
    for (int j = 0; j < N; j++) {
        int best = 0;
        for (int c = 1; c < C; c++)
            if (scores[j * C + c] > scores[j * C + best])
                best = c;
        const float *b = boxes + j * 4;
        if (scores[j * C + best] >= 0.7f)
            ref_add(&want, &stretch, b[1] * 300, b[0] * 300, b[3] * 300, b[2] * 300, scores[j * C + best], best);
    }
    ref_sort(&want);
    assert_true(want.n > 10);
    assert_same(detect_on(600, 450, "detect decoder=ssd input-size=300 threshold=0.7 iou=1 max=1000"), &want, false);
    // Named outputs give the same.
    assert_same(detect_on(600, 450, "detect decoder=ssd input-size=300 threshold=0.7 iou=1 max=1000 "
                                    "boxes=detection_boxes scores=detection_scores"),
                &want, false);
    g_free(scores);
    g_free(boxes);
    g_rand_free(r);
}

// ---- Tests: NMS

static reel_detection box(float x0, float y0, float x1, float y1, float score, int class_id)
{
    return (reel_detection){ .x0 = x0, .y0 = y0, .x1 = x1, .y1 = y1, .score = score, .class_id = class_id,
                             .track_id = -1 };
}

static void test_nms_edge_cases(void **state)
{
    (void)state;
    reel_detection d[8];
    // Zero boxes.
    assert_int_equal(reel_nms(d, 0, REEL_NMS_HARD, 0.5f, 10), 0);
    assert_int_equal(reel_nms(d, 0, REEL_NMS_WEIGHTED, 0.5f, 10), 0);

    // Ties: of two equal boxes of equal score the first stays; two apart both.
    d[0] = box(0, 0, 10, 10, 0.8f, 0), d[1] = box(50, 0, 60, 10, 0.8f, 0), d[2] = box(0, 0, 10, 10, 0.8f, 0);
    d[2].landmarks[0][0] = 99; // marks the third box
    assert_int_equal(reel_nms(d, 3, REEL_NMS_HARD, 0.5f, 10), 2);
    assert_float_equal(d[0].x0, 0, 0);
    assert_float_equal(d[0].landmarks[0][0], 0, 0);
    assert_float_equal(d[1].x0, 50, 0);

    // All overlapping: the best one only.
    for (int i = 0; i < 5; i++)
        d[i] = box((float)i, 0, 20 + (float)i, 20, 0.1f * (float)(i + 1), 0);
    assert_int_equal(reel_nms(d, 5, REEL_NMS_HARD, 0.5f, 10), 1);
    assert_float_equal(d[0].score, 0.5f, 0);
    assert_float_equal(d[0].x0, 4, 0);

    // IoU exactly at the threshold is not an overlap: 2 / (3 + 3 - 2) = 0.5.
    d[0] = box(0, 0, 3, 1, 0.9f, 0), d[1] = box(1, 0, 4, 1, 0.8f, 0);
    assert_float_equal(reel_box_iou(&d[0], &d[1]), 0.5, 0);
    assert_int_equal(reel_nms(d, 2, REEL_NMS_HARD, 0.5f, 10), 2);
    assert_int_equal(reel_nms(d, 2, REEL_NMS_HARD, 0.49f, 10), 1);

    // Other classes never suppress each other.
    d[0] = box(0, 0, 10, 10, 0.9f, 0), d[1] = box(0, 0, 10, 10, 0.8f, 1);
    assert_int_equal(reel_nms(d, 2, REEL_NMS_HARD, 0.5f, 10), 2);

    // max: the best ones, best first.
    for (int i = 0; i < 8; i++)
        d[i] = box(20 * (float)i, 0, 20 * (float)i + 10, 10, 0.1f * (float)i, 0);
    assert_int_equal(reel_nms(d, 8, REEL_NMS_HARD, 0.5f, 3), 3);
    assert_float_equal(d[0].x0, 140, 0);
    assert_float_equal(d[1].x0, 120, 0);
    assert_float_equal(d[2].x0, 100, 0);
    for (int i = 0; i < 8; i++)
        d[i] = box(20 * (float)i, 0, 20 * (float)i + 10, 10, 0.1f * (float)i, 0);
    assert_int_equal(reel_nms(d, 8, REEL_NMS_WEIGHTED, 0.5f, 3), 3);

    // An empty box is still a detection of its own.
    d[0] = box(5, 5, 5, 5, 0.9f, 0);
    assert_int_equal(reel_nms(d, 1, REEL_NMS_WEIGHTED, 0.3f, 10), 1);
    assert_int_equal(reel_nms(d, 1, REEL_NMS_HARD, 0.3f, 10), 1);
}

static void test_weighted_nms_averages_by_score(void **state)
{
    (void)state;
    reel_detection d[3] = {
        box(2, 2, 12, 12, 0.6f, 0),    // IoU with the next: 64 / 136
        box(0, 0, 10, 10, 0.9f, 0),
        box(100, 100, 110, 110, 0.7f, 0), // apart
    };
    d[0].n_landmarks = d[1].n_landmarks = 1;
    d[0].landmarks[0][0] = 7, d[1].landmarks[0][0] = 2;
    assert_int_equal(reel_nms(d, 3, REEL_NMS_WEIGHTED, 0.3f, 10), 2);
    // The best box's score; the boxes' average, weighted 0.9 and 0.6.
    assert_float_equal(d[0].score, 0.9f, 0);
    assert_float_equal(d[0].x0, (0 * 0.9 + 2 * 0.6) / 1.5, 1e-5);
    assert_float_equal(d[0].y0, (0 * 0.9 + 2 * 0.6) / 1.5, 1e-5);
    assert_float_equal(d[0].x1, (10 * 0.9 + 12 * 0.6) / 1.5, 1e-5);
    assert_float_equal(d[0].y1, (10 * 0.9 + 12 * 0.6) / 1.5, 1e-5);
    assert_float_equal(d[0].landmarks[0][0], (2 * 0.9 + 7 * 0.6) / 1.5, 1e-5);
    assert_float_equal(d[1].x0, 100, 0);
    assert_float_equal(d[1].score, 0.7f, 0);
}

// Through the element: blazeface blends by default, nms=hard does not.
// No transform and input-size 128 on a 128x128 frame: tensor = frame.
static void test_blazeface_blends_overlapping_boxes(void **state)
{
    (void)state;
    static float scores[896], boxes[896 * 16];
    for (int i = 0; i < 896; i++)
        scores[i] = -10;
    // Anchors 36 and 37 share the cell centred at (20, 12).
    scores[36] = 2, scores[37] = 1;
    float a[16] = { 0, 0, 20, 20, 1, 1 }, b[16] = { 4, 0, 20, 20, 5, 1 };
    memcpy(boxes + 36 * 16, a, sizeof a);
    memcpy(boxes + 37 * 16, b, sizeof b);
    fake_blazeface(scores, boxes);
    fake.has_transform = false;
    double pa = 1 / (1 + exp(-2.0)), pb = 1 / (1 + exp(-1.0));
    const reel_detections *got = detect_on(128, 128, "detect decoder=blazeface input-size=128 iou=0.3");
    assert_int_equal(got->n, 1);
    assert_float_equal(got->items[0].score, pa, 1e-6);
    assert_float_equal(got->items[0].x0, (10 * pa + 14 * pb) / (pa + pb), 1e-4);
    assert_float_equal(got->items[0].x1, (30 * pa + 34 * pb) / (pa + pb), 1e-4);
    assert_float_equal(got->items[0].y0, 2, 1e-4);
    assert_float_equal(got->items[0].landmarks[0][0], (21 * pa + 25 * pb) / (pa + pb), 1e-4);
    got = detect_on(128, 128, "detect decoder=blazeface input-size=128 iou=0.3 nms=hard");
    assert_int_equal(got->n, 1);
    assert_float_equal(got->items[0].x0, 10, 1e-4);
}

// A score exactly at the threshold stays; max= keeps the best; no box
// passing still attaches an empty list.
static void test_threshold_and_max_through_the_element(void **state)
{
    (void)state;
    enum { N = 4 };
    // Four boxes apart, one class; scores 0.5 (exactly), 0.25, 0.75, 0.4999.
    float v[5 * N] = {
        10, 60, 110, 160,  // cx
        10, 10, 10, 10,    // cy
        8, 8, 8, 8,        // w
        8, 8, 8, 8,        // h
        0.5f, 0.25f, 0.75f, 0.4999f,
    };
    fake.n = 1;
    fake.out[0] = (fake_output){ "output0", 3, { 1, 5, N }, v };
    fake.has_transform = false;
    const reel_detections *got = detect_on(200, 100, "detect decoder=yolov8 threshold=0.5");
    assert_int_equal(got->n, 2);
    assert_float_equal(got->items[0].score, 0.75f, 0);
    assert_float_equal(got->items[1].score, 0.5f, 0);
    assert_float_equal(got->items[1].x0, 6, 1e-5);
    got = detect_on(200, 100, "detect decoder=yolov8 threshold=0.2 max=1");
    assert_int_equal(got->n, 1);
    assert_float_equal(got->items[0].x0, 106, 1e-5);
    got = detect_on(200, 100, "detect decoder=yolov8 threshold=0.9");
    assert_int_equal(got->n, 0);
}

// ---- Tests: anchors

static void test_blazeface_anchors(void **state)
{
    (void)state;
    reel_anchor *a;
    int front[] = { 8, 16, 16, 16 }, back[] = { 16, 32, 32, 32 };
    assert_int_equal(reel_ssd_anchors(front, 4, 128, 128, &a), 896);
    assert_float_equal(a[0].x, 0.5 / 16, 1e-7);
    assert_float_equal(a[0].y, 0.5 / 16, 1e-7);
    assert_float_equal(a[1].x, 0.5 / 16, 1e-7); // two a cell
    assert_float_equal(a[2].x, 1.5 / 16, 1e-7);
    assert_float_equal(a[511].x, 15.5 / 16, 1e-7);
    assert_float_equal(a[512].x, 0.5 / 8, 1e-7); // the stride-16 layers
    assert_float_equal(a[517].x, 0.5 / 8, 1e-7);
    assert_float_equal(a[518].x, 1.5 / 8, 1e-7);
    assert_float_equal(a[895].x, 7.5 / 8, 1e-7);
    assert_float_equal(a[895].y, 7.5 / 8, 1e-7);
    static float ref[896][2];
    ref_front_anchors(ref);
    for (int i = 0; i < 896; i++) {
        assert_float_equal(a[i].x, ref[i][0], 1e-7);
        assert_float_equal(a[i].y, ref[i][1], 1e-7);
    }
    g_free(a);
    assert_int_equal(reel_ssd_anchors(back, 4, 256, 256, &a), 896);
    assert_float_equal(a[895].x, 7.5 / 8, 1e-7);
    g_free(a);
    // A size the strides do not divide: ceil(100 / 8) = 13 cells a row.
    assert_int_equal(reel_ssd_anchors(front, 1, 100, 100, &a), 13 * 13 * 2);
    assert_float_equal(a[2].x, 1.5 / 13, 1e-7);
    g_free(a);
}

// ---- Tests: classify

static void test_classify_top_k_with_labels(void **state)
{
    (void)state;
    float features[3] = { 9, 9, 9 }, logits[5] = { 1, 3, 2, 0.5f, 3 };
    fake.n = 2;
    fake.out[0] = (fake_output){ "features", 2, { 1, 3 }, features };
    fake.out[1] = (fake_output){ "logits", 2, { 1, 5 }, logits };
    fake.has_transform = false;
    char *labels = write_labels("cat\ndog\r\nbird\nfish\nfrog");
    double sum = 0, p[5];
    for (int i = 0; i < 5; i++)
        sum += exp(logits[i]);
    for (int i = 0; i < 5; i++)
        p[i] = exp(logits[i]) / sum;

    char *text = g_strdup_printf("testsrc num-buffers=1 ! inject ! classify output=logits top-k=3 labels=%s ! grab",
                                 labels);
    run_ok(text);
    g_free(text);
    const reel_classifications *c = reel_buffer_get_meta(grabbed->pdata[0], &reel_classifications_meta);
    assert_non_null(c);
    assert_int_equal(c->n, 3);
    // The tie between dog and frog goes to the lower class id.
    static const struct {
        int id;
        const char *label;
    } want[] = { { 1, "dog" }, { 4, "frog" }, { 2, "bird" } };
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c->items[i].class_id, want[i].id);
        assert_string_equal(c->items[i].label, want[i].label);
        assert_float_equal(c->items[i].score, p[want[i].id], 1e-6);
        assert_int_equal(c->items[i].detection, -1);
    }
    g_unlink(labels);
    g_free(labels);
}

static void test_classify_thresholds_and_raw_scores(void **state)
{
    (void)state;
    float logits[5] = { 1, 3, 2, 0.5f, 3 };
    fake.n = 1;
    fake.out[0] = (fake_output){ "logits", 2, { 1, 5 }, logits };
    fake.has_transform = false;
    // Probabilities 0.052, 0.387, 0.142, 0.032, 0.387: three reach 0.1.
    run_ok("testsrc num-buffers=1 ! inject ! classify top-k=5 threshold=0.1 ! grab");
    const reel_classifications *c = reel_buffer_get_meta(grabbed->pdata[0], &reel_classifications_meta);
    assert_int_equal(c->n, 3);
    assert_string_equal(c->items[0].label, "");
    run_ok("testsrc num-buffers=1 ! inject ! classify top-k=2 softmax=false ! grab");
    c = reel_buffer_get_meta(grabbed->pdata[0], &reel_classifications_meta);
    assert_int_equal(c->n, 2);
    assert_float_equal(c->items[0].score, 3, 0);
    assert_int_equal(c->items[0].class_id, 1);
    assert_int_equal(c->items[1].class_id, 4);
}

// ---- Tests: errors

static void assert_contains(char *msg, const char *part)
{
    if (!strstr(msg, part))
        fail_msg("\"%s\" not in \"%s\"", part, msg);
}

static void test_clear_errors(void **state)
{
    (void)state;
    char *m = run_fails("testsrc num-buffers=1 ! detect decoder=yolov8 ! grab");
    assert_contains(m, "detect0");
    assert_contains(m, "put an infer before detect");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! classify ! grab");
    assert_contains(m, "put an infer before classify");
    g_free(m);

    // BlazeFace's outputs given to a yolov8 decoder, and 896 scores to a
    // decoder expecting other anchors.
    static float scores[896], boxes[896 * 16];
    fake_blazeface(scores, boxes);
    fake.has_transform = true;
    fake.transform = letterbox_128;
    m = run_fails("testsrc num-buffers=1 ! inject ! detect decoder=yolov5 ! grab");
    assert_contains(m, "decoder=yolov5 wants one output [1, boxes, 5 + classes]");
    assert_contains(m, "model 'fake' gave: Identity:0 [1x512x1], Identity_1:0 [1x384x1], Identity_2:0 [1x512x16], "
                       "Identity_3:0 [1x384x16]");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! inject ! detect decoder=blazeface strides=8,16,16 ! grab");
    assert_contains(m, "decoder=blazeface wants score outputs [1,N,1] and box outputs [1,N,4+2K] pairing up to the "
                       "768 anchors of strides=8,16,16 at 128x128");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! inject ! detect decoder=blazeface scores=nope ! grab");
    assert_contains(m, "decoder=blazeface wants");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! inject ! detect decoder=ssd ! grab");
    assert_contains(m, "decoder=ssd wants boxes [1, N, 4]");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! inject ! classify output=nope ! grab");
    assert_contains(m, "classify wants the output called 'nope' of float32 class scores, but model 'fake' gave: "
                       "Identity:0");
    g_free(m);

    m = run_fails("testsrc num-buffers=1 ! inject ! detect ! grab");
    assert_contains(m, "no decoder: set decoder=blazeface|yolov8|yolov5|ssd");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! inject ! detect decoder=blazeface strides=8,x ! grab");
    assert_contains(m, "strides=\"8,x\": give up to 16 positive integers");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! inject ! detect decoder=yolov8 labels=/nonexistent/labels.txt ! grab");
    assert_contains(m, "labels=/nonexistent/labels.txt: ");
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! inject ! detect decoder=yolo ! grab");
    assert_contains(m, "blazeface, yolov8, yolov5, ssd");
    g_free(m);
}

// ---- Tests: the real model

// BlazeFace (scripts/fetch-models) on skimage's astronaut (python3-skimage),
// the detect defaults from the zoo manifest: one face, where her face is.
static void test_real_blazeface_finds_the_face(void **state)
{
    (void)state;
    const char *image = "/usr/lib/python3/dist-packages/skimage/data/astronaut.png";
    const char *models = getenv("REEL_MODEL_DIR") ? getenv("REEL_MODEL_DIR") : REEL_TEST_MODEL_CACHE;
    char *model = g_build_filename(models, "blazeface/face_detection_front_128x128_barracuda.onnx", NULL);
    bool present = g_file_test(image, G_FILE_TEST_EXISTS) && g_file_test(model, G_FILE_TEST_EXISTS);
    g_free(model);
    if (!present)
        reel_skip("no %s (python3-skimage) or BlazeFace model (scripts/fetch-models)", image);
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess ! infer model=blazeface-front ! "
                                 "detect ! grab", image);
    run_ok(text);
    g_free(text);
    assert_int_equal(grabbed->len, 1);
    const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[0], &reel_detections_meta);
    assert_non_null(d);
    assert_int_equal(d->n, 1);
    const reel_detection *f = &d->items[0];
    assert_true(f->score > 0.8f);
    assert_string_equal(f->label, "face"); // [model] labels of the manifest
    assert_int_equal(f->n_landmarks, 6);
    // Her face spans about x 175..275, y 75..180 of the 512x512 image.
    assert_true(f->x0 > 160 && f->x0 < 190 && f->x1 > 260 && f->x1 < 290);
    assert_true(f->y0 > 60 && f->y0 < 95 && f->y1 > 160 && f->y1 < 190);
    // The right eye (landmark 0) left of the left eye, both above the mouth.
    assert_true(f->landmarks[0][0] < f->landmarks[1][0]);
    assert_true(f->landmarks[0][1] < f->landmarks[3][1] && f->landmarks[1][1] < f->landmarks[3][1]);
}

int main(void)
{
    reel_init();
    reel_element_class_register(&inject_class);
    reel_element_class_register(&grab_class);
    grabbed = g_ptr_array_new_with_free_func(unref_buffer);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blazeface_matches_reference),
        cmocka_unit_test(test_blazeface_known_box_through_letterbox),
        cmocka_unit_test(test_yolov8_matches_reference_with_labels),
        cmocka_unit_test(test_yolov5_matches_reference),
        cmocka_unit_test(test_ssd_matches_reference),
        cmocka_unit_test(test_nms_edge_cases),
        cmocka_unit_test(test_weighted_nms_averages_by_score),
        cmocka_unit_test(test_blazeface_blends_overlapping_boxes),
        cmocka_unit_test(test_threshold_and_max_through_the_element),
        cmocka_unit_test(test_blazeface_anchors),
        cmocka_unit_test(test_classify_top_k_with_labels),
        cmocka_unit_test(test_classify_thresholds_and_raw_scores),
        cmocka_unit_test(test_clear_errors),
        cmocka_unit_test(test_real_blazeface_finds_the_face),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    g_ptr_array_free(grabbed, TRUE);
    return reel_test_verdict(failed);
}

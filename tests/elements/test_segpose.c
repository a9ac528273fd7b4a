// detect decoder=yolov8-seg and yolov8-pose, and overlay's masks and
// skeletons, through real pipelines on a real clip (320x240, letterboxed
// into 160x160: frame = (tensor x * 2, (tensor y - 20) * 2)) with models
// whose outputs are known (tests/models/make_segpose_models.py): boxes,
// mask pixels against the shapes the prototypes encode, keypoints, the
// JSON, the pixels overlay draws; YOLOv8n-seg and -pose shaped models at
// 640 (8400 anchors) with random weights; outputs that do not fit.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "elements/seg_mask.h"
#include "reel/reel.h"
#include "tests/support/skip.h"

static GPtrArray *grabbed; // frames the grab sink received
static GString *messages;  // the last run's messages, one a line
static char *models, *clip, *tmp;

static int grab_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)e;
    (void)pad;
    g_ptr_array_add(grabbed, buf);
    return 0;
}

static const reel_element_class grab_class = {
    .name = "grab", .description = "keeps frames for the test",
    .min_inputs = 1, .max_inputs = 1, .input_caps = "video/raw,format=rgb24,memory=host",
    .process = grab_process,
};

static void unref_buffer(gpointer b)
{
    reel_buffer *buf = b;
    reel_buffer_unref(&buf);
}

static void keep_message(const reel_message *msg, void *user)
{
    (void)user;
    if (msg->text)
        g_string_append_printf(messages, "%s\n", msg->text);
}

static void run_ok(const char *text)
{
    GError *err = NULL;
    g_ptr_array_set_size(grabbed, 0);
    g_string_truncate(messages, 0);
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1,
                                                                          .bus_handler = keep_message), &err);
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

static void assert_contains(const char *msg, const char *part)
{
    if (!strstr(msg, part))
        fail_msg("\"%s\" not in \"%s\"", part, msg);
}

#define NEED_ASSETS()                                                                                    \
    do {                                                                                                 \
        if (!models || !clip)                                                                            \
            reel_skip("REEL_SEGPOSE_MODELS or REEL_CLIPS unset (make_segpose_models.py needs python3-onnx, " \
                      "the clips the ffmpeg CLI)");                                                      \
    } while (0)

// The clip as rgb24 through `model` and `chain` into grab.
static void run_model(const char *model, const char *chain)
{
    char *text = g_strdup_printf("source location=%s ! decode ! convert ! video/raw,format=rgb24 ! preprocess "
                                 "fit=letterbox ! infer model=%s/%s ! %s ! grab", clip, models, model, chain);
    run_ok(text);
    g_free(text);
    assert_true(grabbed->len > 1);
}

static const reel_detections *detections_of(int frame)
{
    const reel_detections *d = reel_buffer_get_meta(grabbed->pdata[frame], &reel_detections_meta);
    assert_non_null(d);
    return d;
}

static void assert_box(const reel_detection *d, float x0, float y0, float x1, float y1)
{
    if (fabsf(d->x0 - x0) > 1e-3f || fabsf(d->y0 - y0) > 1e-3f || fabsf(d->x1 - x1) > 1e-3f ||
        fabsf(d->y1 - y1) > 1e-3f)
        fail_msg("box %g,%g,%g,%g, want %g,%g,%g,%g", d->x0, d->y0, d->x1, d->y1, x0, y0, x1, y1);
}

// The shapes seg-known's prototypes encode, in frame pixels (by pixel
// centre): A, a disc of radius 50 at (100, 80) in box (40, 20)-(160, 140);
// B, x < 240 in box (180, 40)-(300, 200).
static bool in_a(int x, int y)
{
    double dx = x + 0.5 - 100, dy = y + 0.5 - 80;
    return dx * dx + dy * dy < 50 * 50;
}

static bool in_b(int x, int y)
{
    return x >= 180 && x < 240 && y >= 40 && y < 200;
}

// A frame-sized 0/1 image of mask m.
static uint8_t *mask_image(const reel_masks *masks, const reel_mask *m, int w, int h)
{
    uint8_t *box = g_malloc((size_t)m->width * m->height + 1), *img = g_malloc0((size_t)w * h);
    reel_mask_decode(masks, m, box);
    for (int y = 0; y < m->height; y++)
        memcpy(img + (size_t)(m->y + y) * w + m->x, box + (size_t)y * m->width, (size_t)m->width);
    g_free(box);
    return img;
}

static double iou_with(const uint8_t *img, int w, int h, bool (*shape)(int, int))
{
    int inter = 0, uni = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            bool a = img[y * w + x], b = shape(x, y);
            inter += a && b;
            uni += a || b;
        }
    return uni ? (double)inter / uni : 0;
}

// ---- yolov8-seg

static void test_seg_boxes_and_masks(void **state)
{
    (void)state;
    NEED_ASSETS();
    char *labels = g_build_filename(tmp, "labels.txt", NULL);
    assert_true(g_file_set_contents(labels, "person\ncar\ndog\n", -1, NULL));
    char *chain = g_strdup_printf("detect decoder=yolov8-seg labels=%s", labels);
    run_model("seg-known.onnx", chain);
    g_free(chain), g_free(labels);
    for (guint f = 0; f < grabbed->len; f++) {
        const reel_detections *d = detections_of((int)f);
        const reel_masks *masks = reel_buffer_get_meta(grabbed->pdata[f], &reel_masks_meta);
        // A's weaker duplicate is gone (NMS), the others too low.
        assert_int_equal(d->n, 2);
        assert_non_null(masks);
        assert_int_equal(masks->n, 2);
        assert_box(&d->items[0], 40, 20, 160, 140);
        assert_string_equal(d->items[0].label, "person");
        assert_float_equal(d->items[0].score, 0.9, 1e-6);
        assert_box(&d->items[1], 180, 40, 300, 200);
        assert_int_equal(d->items[1].class_id, 2);
        assert_string_equal(d->items[1].label, "dog");
        assert_int_equal(d->items[0].track_id, -1);
        assert_int_equal(d->items[1].track_id, -1);

        const reel_mask *a = reel_masks_find(masks, 0), *b = reel_masks_find(masks, 1);
        assert_non_null(a), assert_non_null(b);
        assert_true(a->x == 40 && a->y == 20 && a->width == 120 && a->height == 120 && !a->truncated);
        assert_true(b->x == 180 && b->y == 40 && b->width == 120 && b->height == 160 && !b->truncated);
        uint8_t *img = mask_image(masks, a, 320, 240);
        double iou = iou_with(img, 320, 240, in_a);
        if (iou <= 0.95)
            fail_msg("disc mask IoU %.4f", iou);
        g_free(img);
        img = mask_image(masks, b, 320, 240);
        iou = iou_with(img, 320, 240, in_b);
        if (iou <= 0.95)
            fail_msg("half-box mask IoU %.4f", iou);
        g_free(img);
        // B: a run of 0 (its top left is on), then 60 on, 60 off per row.
        const uint32_t *runs = masks->runs + b->first_run;
        assert_int_equal(runs[0], 0);
        assert_int_equal(runs[1], 60);
        assert_int_equal(runs[2], 60);
    }
}

// A mask needing more than REEL_MASK_MAX_RUNS runs (prototypes alternating
// every pixel) stops there, truncated, its kept runs still right.
static void test_seg_mask_run_cap(void **state)
{
    (void)state;
    enum { W = 1024, H = 64 };
    float *protos = g_new(float, W * H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            protos[y * W + x] = x % 2 ? 1.f : -1.f;
    reel_protos p = { protos, 1, H, W };
    float coeff = 1;
    reel_transform t = { 1, 0, 1, 0, W, H, W, H };
    reel_detection d = { .x0 = 0, .y0 = 0, .x1 = W, .y1 = H };
    GArray *runs = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    reel_mask m;
    reel_seg_mask(&p, &coeff, 1, &d, &t, W, H, runs, &m);
    assert_true(m.truncated);
    assert_int_equal(m.n_runs, REEL_MASK_MAX_RUNS);
    assert_int_equal((int)runs->len, REEL_MASK_MAX_RUNS);
    reel_masks *masks = reel_masks_new(1, (int)runs->len);
    masks->items[0] = m;
    memcpy(masks->runs, runs->data, runs->len * sizeof(uint32_t));
    uint8_t *img = g_malloc((size_t)W * H);
    reel_mask_decode(masks, &masks->items[0], img);
    // 8192 runs of 1 cover the first 8192 pixels: odd columns on; then off.
    for (int i = 0; i < W * H; i++)
        if (img[i] != (i < REEL_MASK_MAX_RUNS && (i % W) % 2))
            fail_msg("pixel %d is %d", i, img[i]);
    g_free(img), g_free(masks), g_free(protos);
    g_array_free(runs, TRUE);
}

static char *read_first_line(const char *path)
{
    char *text = NULL;
    assert_true(g_file_get_contents(path, &text, NULL, NULL));
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    *nl = 0;
    return text;
}

static void test_seg_json(void **state)
{
    (void)state;
    NEED_ASSETS();
    run_model("seg-known.onnx", "detect decoder=yolov8-seg");
    const reel_masks *masks = reel_buffer_get_meta(grabbed->pdata[0], &reel_masks_meta);
    assert_non_null(masks);
    // The disc's runs, as the metadata has them.
    GString *want = g_string_new("{\"box\": [40.000, 20.000, 160.000, 140.000], \"score\": 0.9000, \"class\": 0, "
                                 "\"mask\": {\"x\": 40, \"y\": 20, \"width\": 120, \"height\": 120, \"runs\": [");
    const reel_mask *a = reel_masks_find(masks, 0);
    for (int r = 0; r < a->n_runs; r++)
        g_string_append_printf(want, "%s%u", r ? ", " : "", masks->runs[a->first_run + r]);
    g_string_append(want, "]}}, {\"box\": [180.000, 40.000, 300.000, 200.000], \"score\": 0.7000, \"class\": 2, "
                          "\"mask\": {\"x\": 180, \"y\": 40, \"width\": 120, \"height\": 160, \"runs\": [0, 60, 60, ");
    char *out = g_build_filename(tmp, "seg.jsonl", NULL);
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess fit=letterbox ! infer model=%s/seg-known.onnx "
                                 "! detect decoder=yolov8-seg ! metasink location=%s", clip, models, out);
    run_ok(text);
    char *line = read_first_line(out);
    assert_contains(line, "{\"stream\": 0, \"frame\": 0, ");
    assert_contains(line, want->str);
    // 160 rows of 60 on, 60 off: 320 runs, the last an on run.
    assert_contains(line, ", 60, 60]}}], \"classifications\": []}");
    g_free(line), g_free(text), g_free(out);
    g_string_free(want, TRUE);
}

// ---- yolov8-pose

// Person A's keypoints in model-input pixels (make_segpose_models.py).
static const float pose_a[17][2] = {
    { 50, 32 }, { 53, 29 }, { 47, 29 }, { 56, 31 }, { 44, 31 }, { 60, 42 }, { 40, 42 }, { 64, 55 }, { 36, 55 },
    { 66, 68 }, { 34, 68 }, { 56, 70 }, { 44, 70 }, { 57, 83 }, { 43, 83 }, { 58, 96 }, { 42, 96 },
};

// Keypoint k of person p (B is A moved by (70, 20)) in frame pixels.
static void keypoint(int p, int k, float *x, float *y)
{
    *x = (pose_a[k][0] + (p ? 70.f : 0.f)) * 2;
    *y = (pose_a[k][1] + (p ? 20.f : 0.f) - 20) * 2;
}

static void test_pose_keypoints(void **state)
{
    (void)state;
    NEED_ASSETS();
    run_model("pose-known.onnx", "detect decoder=yolov8-pose");
    for (guint f = 0; f < grabbed->len; f++) {
        const reel_detections *d = detections_of((int)f);
        assert_int_equal(d->n, 2);
        assert_null(reel_buffer_get_meta(grabbed->pdata[f], &reel_masks_meta));
        assert_box(&d->items[0], 60, 0, 140, 160);
        assert_box(&d->items[1], 200, 40, 280, 200);
        for (int p = 0; p < 2; p++) {
            const reel_detection *det = &d->items[p];
            assert_int_equal(det->class_id, 0);
            assert_int_equal(det->n_landmarks, 17);
            assert_true(det->scored);
            for (int k = 0; k < 17; k++) {
                float x, y;
                keypoint(p, k, &x, &y);
                if (fabsf(det->landmarks[k][0] - x) > 1 || fabsf(det->landmarks[k][1] - y) > 1)
                    fail_msg("person %d keypoint %d at %g,%g, want %g,%g", p, k, det->landmarks[k][0],
                             det->landmarks[k][1], x, y);
                bool low = p == 0 ? k == 3 || k == 4 : k == 0;
                assert_float_equal(det->landmark_scores[k], low ? 0.2 : 0.9, 1e-6);
            }
        }
    }
    char *out = g_build_filename(tmp, "pose.jsonl", NULL);
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess fit=letterbox ! infer "
                                 "model=%s/pose-known.onnx ! detect decoder=yolov8-pose ! metasink location=%s",
                                 clip, models, out);
    run_ok(text);
    char *line = read_first_line(out);
    assert_contains(line, "{\"box\": [60.000, 0.000, 140.000, 160.000], \"score\": 0.9000, \"class\": 0, "
                          "\"keypoints\": [[100.000, 24.000, 0.9000], [106.000, 18.000, 0.9000], [94.000, 18.000, "
                          "0.9000], [112.000, 22.000, 0.2000], ");
    assert_contains(line, "[224.000, 192.000, 0.9000]]}], \"classifications\"");
    assert_true(!strstr(line, "landmarks"));
    g_free(line), g_free(text), g_free(out);
}

// ---- overlay

// The frames without and with overlay: grabbed and `*plain` (unref each).
static reel_buffer *first_frame(void)
{
    return reel_buffer_ref(grabbed->pdata[0]);
}

static const uint8_t *px(const reel_buffer *b, int x, int y)
{
    return b->planes[0] + (size_t)y * b->strides[0] + (size_t)x * 3;
}

static uint8_t blend(uint8_t v, uint8_t c, int alpha)
{
    return (uint8_t)((v * (256 - alpha) + c * alpha + 128) >> 8);
}

static void test_overlay_fills_masks(void **state)
{
    (void)state;
    NEED_ASSETS();
    run_model("seg-known.onnx", "detect decoder=yolov8-seg");
    reel_buffer *plain = first_frame();
    run_model("seg-known.onnx", "detect decoder=yolov8-seg ! overlay alpha=0.5 labels=false thickness=1");
    reel_buffer *drawn = first_frame();
    // class 0's colour and class 2's (overlay's palette), half of each.
    static const uint8_t colour[2][3] = { { 255, 56, 56 }, { 56, 120, 255 } };
    const reel_masks *masks = reel_buffer_get_meta(drawn, &reel_masks_meta);
    uint8_t *img[2] = { mask_image(masks, reel_masks_find(masks, 0), 320, 240),
                        mask_image(masks, reel_masks_find(masks, 1), 320, 240) };
    const int boxes[2][4] = { { 40, 20, 160, 140 }, { 180, 40, 300, 200 } };
    int tinted = 0, kept = 0;
    for (int y = 0; y < 240; y++)
        for (int x = 0; x < 320; x++) {
            bool outline = false;
            for (int i = 0; i < 2; i++)
                outline |= x >= boxes[i][0] && x < boxes[i][2] && y >= boxes[i][1] && y < boxes[i][3] &&
                           (x == boxes[i][0] || x == boxes[i][2] - 1 || y == boxes[i][1] || y == boxes[i][3] - 1);
            if (outline)
                continue;
            const uint8_t *a = px(plain, x, y), *b = px(drawn, x, y);
            int m = img[0][y * 320 + x] ? 0 : img[1][y * 320 + x] ? 1 : -1;
            for (int c = 0; c < 3; c++) {
                uint8_t want = m < 0 ? a[c] : blend(a[c], colour[m][c], 128);
                if (b[c] != want)
                    fail_msg("pixel %d,%d channel %d: %d, want %d (mask %d, was %d)", x, y, c, b[c], want, m, a[c]);
            }
            tinted += m >= 0;
            kept += m < 0;
        }
    assert_true(tinted > 3.1 * 50 * 50 + 60 * 150); // the disc and B's half, less their outlines
    assert_true(kept > 320 * 240 / 2);
    // The outline itself is opaque.
    assert_memory_equal(px(drawn, 40, 80), colour[0], 3);
    g_free(img[0]), g_free(img[1]);
    reel_buffer_unref(&plain), reel_buffer_unref(&drawn);
}

static void test_overlay_draws_skeletons(void **state)
{
    (void)state;
    NEED_ASSETS();
    run_model("pose-known.onnx", "detect decoder=yolov8-pose");
    reel_buffer *plain = first_frame();
    run_model("pose-known.onnx", "detect decoder=yolov8-pose ! overlay labels=false thickness=1");
    reel_buffer *drawn = first_frame();
    static const uint8_t red[3] = { 255, 56, 56 }; // class 0
    // Limbs between shown keypoints, at their midpoints: A's shoulders
    // (5-6), left upper arm (5-7), hips (11-12), right shin (14-16); B's
    // shoulders and left eye to ear (1-3: B's ears are sure).
    const int limbs[][3] = { { 0, 5, 6 }, { 0, 5, 7 }, { 0, 11, 12 }, { 0, 14, 16 }, { 1, 5, 6 }, { 1, 1, 3 } };
    for (size_t i = 0; i < G_N_ELEMENTS(limbs); i++) {
        float ax, ay, bx, by;
        keypoint(limbs[i][0], limbs[i][1], &ax, &ay);
        keypoint(limbs[i][0], limbs[i][2], &bx, &by);
        int mx = (int)((ax + bx) / 2), my = (int)((ay + by) / 2);
        if (memcmp(px(drawn, mx, my), red, 3) != 0)
            fail_msg("limb %d-%d of person %d not drawn at %d,%d", limbs[i][1], limbs[i][2], limbs[i][0], mx, my);
    }
    // Keypoints under keypoint-threshold and their limbs are left out: A's
    // ears (3, 4) and eye-ear, ear-shoulder limbs; B's nose and nose-eye.
    const int skipped[][3] = { { 0, 3, 3 }, { 0, 4, 4 }, { 0, 1, 3 }, { 0, 3, 5 }, { 0, 4, 6 }, { 1, 0, 0 }, { 1, 0, 1 } };
    for (size_t i = 0; i < G_N_ELEMENTS(skipped); i++) {
        float ax, ay, bx, by;
        keypoint(skipped[i][0], skipped[i][1], &ax, &ay);
        keypoint(skipped[i][0], skipped[i][2], &bx, &by);
        int mx = (int)((ax + bx) / 2), my = (int)((ay + by) / 2);
        if (memcmp(px(drawn, mx, my), px(plain, mx, my), 3) != 0)
            fail_msg("%d,%d (person %d, %d-%d) changed", mx, my, skipped[i][0], skipped[i][1], skipped[i][2]);
    }
    // Far from any person the frame is as it was.
    assert_memory_equal(px(drawn, 10, 230), px(plain, 10, 230), 3);
    assert_memory_equal(px(drawn, 310, 10), px(plain, 310, 10), 3);
    reel_buffer_unref(&plain), reel_buffer_unref(&drawn);
}

static bool have_vulkan(void)
{
    reel_device_info *list;
    int n = reel_device_list(&list);
    bool found = false;
    for (int i = 0; i < n; i++)
        found |= list[i].backend == REEL_BACKEND_VULKAN;
    g_free(list);
    return found;
}

static bool same_pixels(const reel_buffer *a, const reel_buffer *b)
{
    for (int y = 0; y < 240; y++)
        if (memcmp(px(a, 0, y), px(b, 0, y), 320 * 3) != 0)
            return false;
    return true;
}

// On vulkan:0 the kernel draws skeletons and masks byte for byte as the
// cpu does (bound: 0), without a warning; masks=false leaves the masks out.
static void test_overlay_on_vulkan(void **state)
{
    (void)state;
    NEED_ASSETS();
    if (!have_vulkan())
        reel_skip("no Vulkan device");
    run_model("pose-known.onnx", "detect decoder=yolov8-pose ! overlay labels=false");
    reel_buffer *cpu = first_frame();
    run_model("pose-known.onnx", "detect decoder=yolov8-pose ! overlay device=vulkan:0 labels=false");
    reel_buffer *gpu = first_frame();
    assert_true(same_pixels(cpu, gpu));
    reel_buffer_unref(&cpu), reel_buffer_unref(&gpu);

    run_model("seg-known.onnx", "detect decoder=yolov8-seg ! overlay labels=false thickness=1 alpha=0.75");
    cpu = first_frame();
    run_model("seg-known.onnx", "detect decoder=yolov8-seg ! overlay device=vulkan:0 labels=false thickness=1 "
                                "alpha=0.75");
    gpu = first_frame();
    assert_true(same_pixels(cpu, gpu));
    reel_buffer_unref(&cpu), reel_buffer_unref(&gpu);
    // Every frame of the clip at the default opacity, and no warning.
    run_model("seg-known.onnx", "detect decoder=yolov8-seg ! overlay labels=false thickness=1");
    GPtrArray *cpu_frames = grabbed;
    grabbed = g_ptr_array_new_with_free_func(unref_buffer);
    run_model("seg-known.onnx", "detect decoder=yolov8-seg ! overlay device=vulkan:0 labels=false thickness=1");
    assert_null(strstr(messages->str, "mask"));
    assert_int_equal(grabbed->len, cpu_frames->len);
    for (guint i = 0; i < grabbed->len; i++)
        if (!same_pixels(cpu_frames->pdata[i], grabbed->pdata[i]))
            fail_msg("frame %u: vulkan:0's overlay differs from the cpu's", i);
    g_ptr_array_free(cpu_frames, TRUE);
    gpu = first_frame();
    run_model("seg-known.onnx", "detect decoder=yolov8-seg ! overlay device=vulkan:0 labels=false thickness=1 "
                                "masks=false");
    reel_buffer *boxes_only = first_frame();
    assert_false(same_pixels(boxes_only, gpu));
    reel_buffer_unref(&gpu), reel_buffer_unref(&boxes_only);
}

// Masks drawn on a frame a tee shares with metasink: overlay's own copy
// (once read from the shared frame, freed under it about one run in three).
static void test_overlay_after_a_tee(void **state)
{
    (void)state;
    NEED_ASSETS();
    char *out = g_build_filename(tmp, "seg.jsonl", NULL);
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess fit=letterbox ! infer model=%s/seg-known.onnx "
                                 "! detect decoder=yolov8-seg ! tee name=t t. ! queue ! overlay ! convert ! "
                                 "video/raw,format=rgb24 ! grab t. ! queue ! metasink location=%s", clip, models, out);
    for (int i = 0; i < 8; i++) {
        run_ok(text);
        assert_true(grabbed->len > 1);
    }
    g_free(text), g_free(out);
}

// ---- the real shapes, random weights

static void test_shaped_models_decode(void **state)
{
    (void)state;
    NEED_ASSETS();
    char *text = g_strdup_printf("testsrc num-buffers=1 pattern=noise ! video/raw,format=rgb24,width=320,height=240 "
                                 "! preprocess fit=letterbox ! infer model=%s/yolov8n-seg-640.onnx ! detect "
                                 "decoder=yolov8-seg threshold=0.5 ! overlay ! grab", models);
    run_ok(text);
    g_free(text);
    assert_int_equal(grabbed->len, 1);
    const reel_inference *inf = reel_buffer_last_inference(grabbed->pdata[0]);
    char *shapes = g_strdup_printf("%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                                   "x%" G_GINT64_FORMAT, inf->outputs[0]->format.shape[1],
                                   inf->outputs[0]->format.shape[2], inf->outputs[1]->format.shape[1],
                                   inf->outputs[1]->format.shape[2], inf->outputs[1]->format.shape[3]);
    assert_string_equal(shapes, "116x8400 32x160x160");
    g_free(shapes);
    const reel_detections *d = detections_of(0);
    const reel_masks *masks = reel_buffer_get_meta(grabbed->pdata[0], &reel_masks_meta);
    assert_true(d->n >= 1 && d->n <= 100);
    assert_int_equal(masks->n, d->n);
    for (int i = 0; i < d->n; i++) {
        const reel_mask *m = &masks->items[i];
        const reel_detection *b = &d->items[i];
        assert_int_equal(m->detection, i);
        assert_true(m->x >= 0 && m->y >= 0 && m->x + m->width <= 320 && m->y + m->height <= 240);
        assert_true(m->x <= b->x0 && m->x + m->width >= b->x1 && m->y <= b->y0 && m->y + m->height >= b->y1);
        assert_true(m->n_runs <= REEL_MASK_MAX_RUNS && m->first_run + m->n_runs <= masks->n_runs);
    }

    text = g_strdup_printf("testsrc num-buffers=1 pattern=noise ! video/raw,format=rgb24,width=320,height=240 ! "
                           "preprocess fit=letterbox ! infer model=%s/yolov8n-pose-640.onnx ! detect "
                           "decoder=yolov8-pose threshold=0.5 ! overlay ! grab", models);
    run_ok(text);
    g_free(text);
    inf = reel_buffer_last_inference(grabbed->pdata[0]);
    assert_int_equal(inf->outputs[0]->format.shape[1], 56);
    assert_int_equal(inf->outputs[0]->format.shape[2], 8400);
    d = detections_of(0);
    assert_true(d->n >= 1 && d->n <= 100);
    for (int i = 0; i < d->n; i++) {
        assert_int_equal(d->items[i].n_landmarks, 17);
        for (int k = 0; k < 17; k++) {
            float s = d->items[i].landmark_scores[k], x = d->items[i].landmarks[k][0], y = d->items[i].landmarks[k][1];
            assert_true(s >= 0 && s <= 1 && x >= 0 && x <= 320 && y >= 0 && y <= 240);
        }
    }
}

static void test_outputs_that_do_not_fit(void **state)
{
    (void)state;
    NEED_ASSETS();
    char *text = g_strdup_printf("source location=%s ! decode ! preprocess fit=letterbox ! infer "
                                 "model=%s/pose-known.onnx ! detect decoder=yolov8-seg ! fakesink", clip, models);
    char *m = run_fails(text);
    assert_contains(m, "decoder=yolov8-seg wants [1, 4 + classes + M, boxes] and prototypes [1, M, H/4, W/4] (M "
                       "mask coefficients, 32 for YOLOv8-seg), but model 'pose-known' gave: output0 [1x56x8]");
    g_free(m), g_free(text);
    text = g_strdup_printf("source location=%s ! decode ! preprocess fit=letterbox ! infer model=%s/seg-known.onnx "
                           "! detect decoder=yolov8-pose ! fakesink", clip, models);
    m = run_fails(text);
    assert_contains(m, "decoder=yolov8-pose wants one output [1, 4 + 1 + 3K, boxes] (K keypoints as x, y, score; K "
                       "at most 17, 17 for COCO), but model 'seg-known' gave: output0 [1x39x8], output1 [1x32x40x40]");
    g_free(m), g_free(text);
}

int main(void)
{
    reel_init();
    reel_element_class_register(&grab_class);
    grabbed = g_ptr_array_new_with_free_func(unref_buffer);
    messages = g_string_new(NULL);
    const char *dir = getenv("REEL_SEGPOSE_MODELS"), *clips = getenv("REEL_CLIPS");
    models = dir && *dir ? g_strdup(dir) : NULL;
    clip = clips && *clips ? g_build_filename(clips, "h264.mp4", NULL) : NULL;
    if (clip && !g_file_test(clip, G_FILE_TEST_EXISTS))
        g_clear_pointer(&clip, g_free);
    tmp = g_dir_make_tmp("segpose-XXXXXX", NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seg_mask_run_cap),
        cmocka_unit_test(test_seg_boxes_and_masks),
        cmocka_unit_test(test_seg_json),
        cmocka_unit_test(test_pose_keypoints),
        cmocka_unit_test(test_overlay_fills_masks),
        cmocka_unit_test(test_overlay_draws_skeletons),
        cmocka_unit_test(test_overlay_on_vulkan),
        cmocka_unit_test(test_overlay_after_a_tee),
        cmocka_unit_test(test_shaped_models_decode),
        cmocka_unit_test(test_outputs_that_do_not_fit),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    g_ptr_array_free(grabbed, TRUE);
    g_string_free(messages, TRUE);
    if (reel_device_validation_messages() > 0) {
        printf("validation layer messages: %" G_GINT64_FORMAT "\n", reel_device_validation_messages());
        failed++;
    }
    const char *names[] = { "labels.txt", "seg.jsonl", "pose.jsonl" };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        char *p = g_build_filename(tmp, names[i], NULL);
        g_unlink(p);
        g_free(p);
    }
    g_rmdir(tmp);
    g_free(tmp), g_free(models), g_free(clip);
    return reel_test_verdict(failed);
}

// Vision elements in pipelines: decode into device memory, preprocess on the
// cpu and on Vulkan (the same tensors, the transform and source frame
// attached, size and layout negotiated from downstream), overlay giving the
// same bytes on both devices. Vulkan runs on whatever driver is present
// (lavapipe without a GPU) with the validation layer on; without any Vulkan
// device the cpu cases still run and each Vulkan case skips visibly. Test
// clips come from tests/media/make-clips.sh ($REEL_CLIPS).
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "reel/reel.h"
#include "tests/support/skip.h"
#include "tests/support/pipeline.h"

static char *last_info;
static GPtrArray *collected; // buffers the collect sinks received

static GString *messages; // every message of the last runs, one a line

static void keep_info(const reel_message *msg, void *user)
{
    if (msg->type == REEL_MESSAGE_INFO && strstr(msg->text, " md5 ")) {
        g_free(*(char **)user);
        *(char **)user = g_strdup(msg->text);
    }
    if (msg->text)
        g_string_append_printf(messages, "%s\n", msg->text);
}

static void unref_buffer(gpointer b)
{
    reel_buffer *buf = b;
    reel_buffer_unref(&buf);
}

// ---- Test elements

static int collect_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)e;
    (void)pad;
    g_ptr_array_add(collected, buf);
    return 0;
}

// A host sink keeping every buffer; "collect_nhwc" asks for BlazeFace's input.
static const reel_element_class collect_class = {
    .name = "collect", .description = "keeps buffers for the test",
    .min_inputs = 1, .max_inputs = 1, .input_caps = "tensor,memory=host",
    .process = collect_process,
};
static const reel_element_class collect_nhwc_class = {
    .name = "collect_nhwc", .description = "keeps [1,128,128,3] tensors for the test",
    .min_inputs = 1, .max_inputs = 1, .input_caps = "tensor,dtype=float32,shape=1x128x128x3,memory=host",
    .process = collect_process,
};

// Attaches two fixed detections (one tracked, with landmarks) to each frame.
static int detector_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    reel_detections *d = reel_detections_new(2);
    d->items[0] = (reel_detection){ .x0 = 10, .y0 = 30, .x1 = 70, .y1 = 90, .score = 0.87f, .class_id = 1,
                                    .label = "face", .track_id = -1, .n_landmarks = 2,
                                    .landmarks = { { 30, 50 }, { 50, 50 } } };
    d->items[1] = (reel_detection){ .x0 = 90, .y0 = 5, .x1 = 150, .y1 = 40, .score = 0.5f, .class_id = 2,
                                    .track_id = 7 };
    reel_buffer_add_meta(buf, &reel_detections_meta, d);
    return reel_element_push(e, 0, buf);
}

static const reel_element_class detector_class = {
    .name = "fixed_detector", .description = "attaches fixed detections", .flags = REEL_CLASS_PASSTHROUGH,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .process = detector_process,
};

// Paints a red and a blue square into rgb24 frames and attaches a detection
// on each; every third frame has no detections.
static int painter_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    if (reel_buffer_make_writable(&buf) < 0)
        return REEL_ENOMEM;
    static const uint8_t colours[2][3] = { { 230, 20, 20 }, { 20, 20, 230 } };
    static const int boxes[2][4] = { { 10, 10, 50, 50 }, { 90, 40, 140, 100 } };
    for (int k = 0; k < 2; k++)
        for (int y = boxes[k][1]; y < boxes[k][3]; y++)
            for (int x = boxes[k][0]; x < boxes[k][2]; x++)
                memcpy(buf->planes[0] + (size_t)y * buf->strides[0] + 3 * x, colours[k], 3);
    reel_detections *d = reel_detections_new(buf->frame_number % 3 == 2 ? 0 : 2);
    for (int k = 0; k < d->n; k++)
        d->items[k] = (reel_detection){ .x0 = (float)boxes[k][0], .y0 = (float)boxes[k][1], .x1 = (float)boxes[k][2],
                                        .y1 = (float)boxes[k][3], .score = 1, .class_id = -1, .track_id = -1 };
    reel_buffer_add_meta(buf, &reel_detections_meta, d);
    return reel_element_push(e, 0, buf);
}

static const reel_element_class painter_class = {
    .name = "painter", .description = "paints two squares and detects them", .flags = REEL_CLASS_PASSTHROUGH,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,format=rgb24,memory=host", .output_caps = "video/raw,format=rgb24,memory=host",
    .process = painter_process,
};

static const reel_element_class collect_frames_class = {
    .name = "collect_frames", .description = "keeps frames for the test",
    .min_inputs = 1, .max_inputs = 1, .input_caps = "video/raw",
    .process = collect_process,
};

// ---- Helpers

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

static bool vulkan; // have_vulkan(), asked once

// Skips the running case, saying so, when there is no Vulkan device.
#define NEED_VULKAN()                                    \
    do {                                                 \
        if (!vulkan)                                     \
            reel_skip("%s: no Vulkan device", __func__); \
    } while (0)

static reel_pipeline *run_ok(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.stats_interval_ms = -1, .bus_handler = keep_info, .bus_user = &last_info),
        &err);
    if (!p)
        fail_msg("%s", err->message);
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    return p;
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

static char *clip(const char *name)
{
    const char *dir = getenv("REEL_CLIPS");
    return g_strdup_printf("%s/%s", dir ? dir : "clips", name);
}

// The checksum a run's fakesink posted.
static char *checksum_of(const char *text)
{
    reel_pipeline *p = run_ok(text);
    reel_pipeline_destroy(&p);
    assert_non_null(last_info);
    return g_steal_pointer(&last_info);
}

static void clear_collected(void)
{
    g_ptr_array_set_size(collected, 0);
}

// ---- Tests

static void test_decode_into_device_memory(void **state)
{
    (void)state;
    NEED_VULKAN();
    const char *clips[] = { "h264.mp4", "hevc.mkv" };
    for (size_t i = 0; i < G_N_ELEMENTS(clips); i++) {
        char *path = clip(clips[i]);
        char *cpu = g_strdup_printf("source location=%s ! decode ! fakesink checksum=true", path);
        char *gpu = g_strdup_printf("device=vulkan:0 source location=%s ! decode ! fakesink checksum=true", path);
        char *a = checksum_of(cpu), *b = checksum_of(gpu);
        // The decoder's padded rows in device memory read back intact.
        assert_string_equal(a, b);
        reel_pipeline *p = run_ok(gpu);
        reel_device *dev = reel_device_open("vulkan:0", NULL);
        if (reel_device_info_of(dev)->unified_memory)
            assert_int_equal(reel_test_report_of(p, "decode0").bytes_to_device, 0);
        assert_string_equal(reel_test_report_of(p, "decode0").device, "vulkan:0");
        reel_device_unref(&dev);
        reel_pipeline_destroy(&p);
        g_free(a), g_free(b), g_free(cpu), g_free(gpu), g_free(path);
    }
}

static void test_hardware_decoding_falls_back_with_a_reason(void **state)
{
    (void)state;
    NEED_VULKAN();
    char *path = clip("h264.mp4");
    char *sw = g_strdup_printf("source location=%s ! decode hw=none ! fakesink checksum=true", path);
    char *hw = g_strdup_printf("device=vulkan:0 source location=%s ! decode hw=vaapi ! fakesink checksum=true", path);
    char *a = checksum_of(sw);
    g_string_truncate(messages, 0);
    char *b = checksum_of(hw);
    // Either VA-API decodes (the same frames) or a warning says why not.
    assert_true(strstr(messages->str, "no hardware decoder (vaapi: ") ||
                strstr(messages->str, "decoding h264 with vaapi"));
    assert_string_equal(a, b);
    g_free(b), g_free(hw);
    // NVDEC: either it decodes, its frames going to the Vulkan device on the
    // GPU or, saying why, through the host, or a warning says why not.
    hw = g_strdup_printf("device=vulkan:0 source location=%s ! decode hw=cuda ! fakesink checksum=true", path);
    g_string_truncate(messages, 0);
    b = checksum_of(hw);
    if (strstr(messages->str, "decoding h264 with cuda"))
        assert_true(strstr(messages->str, "NVDEC frames copied into vulkan:0's memory") ||
                    strstr(messages->str, "NVDEC frames go through host memory: "));
    else
        assert_non_null(strstr(messages->str, "no hardware decoder (cuda: "));
    if (strstr(messages->str, "no hardware decoder"))
        assert_string_equal(a, b);
    g_free(a), g_free(b), g_free(sw), g_free(hw), g_free(path);
}

static void test_decode_to_preprocess_moves_only_the_tensor(void **state)
{
    (void)state;
    NEED_VULKAN();
    char *path = clip("h264.mp4");
    char *text = g_strdup_printf("device=vulkan:0 source location=%s ! decode ! preprocess size=64x48 ! collect",
                                 path);
    reel_pipeline *p = run_ok(text);
    reel_element_report r[32];
    int n = reel_pipeline_report(p, r, 32);
    int64_t frames = reel_test_report_of(p, "preprocess0").buffers_out, up = 0, down = 0;
    for (int i = 0; i < n; i++) {
        up += r[i].bytes_to_device;
        down += r[i].bytes_to_host;
    }
    assert_true(frames > 0);
    reel_device *dev = reel_device_open("vulkan:0", NULL);
    if (reel_device_info_of(dev)->unified_memory)
        assert_int_equal(up, 0);
    reel_device_unref(&dev);
    // Only the tensors come back.
    assert_int_equal(down, frames * 64 * 48 * 3 * 4);
    assert_int_equal(reel_test_report_of(p, "download0").bytes_to_host, down);
    reel_pipeline_destroy(&p);
    clear_collected();
    g_free(text);
    g_free(path);
}

// Decode, preprocess and the model all on vulkan:0: the tensor stays on the
// device; only the model's outputs come back for the cpu elements after it.
static void test_model_input_stays_on_the_device(void **state)
{
    (void)state;
    NEED_VULKAN();
    char *path = clip("h264.mp4");
    char *text = g_strdup_printf("device=vulkan:0 source location=%s ! decode ! preprocess "
                                 "! infer model=%s/colour.onnx ! collect_frames",
                                 path, getenv("REEL_TEST_MODELS") ? getenv("REEL_TEST_MODELS") : "models");
    reel_pipeline *p = run_ok(text);
    reel_element_report r = reel_test_report_of(p, "infer0");
    assert_true(r.buffers_out > 0);
    assert_int_equal(r.bytes_to_device, 0);
    assert_int_equal(r.bytes_to_host, r.buffers_out * 3 * 4); // the [1, 3] output of each frame
    assert_non_null(strstr(r.reason, "all 3 nodes on the device"));
    reel_pipeline_destroy(&p);
    clear_collected();
    g_free(text);
    g_free(path);
}

// Every collected tensor of two runs agrees within tol.
static void run_and_compare(const char *a, const char *b, float tol)
{
    reel_pipeline *p = run_ok(a);
    reel_pipeline_destroy(&p);
    GPtrArray *first = collected;
    collected = g_ptr_array_new_with_free_func(unref_buffer);
    p = run_ok(b);
    reel_pipeline_destroy(&p);
    assert_int_equal(first->len, collected->len);
    assert_true(first->len > 0);
    for (guint i = 0; i < first->len; i++) {
        const reel_buffer *x = first->pdata[i], *y = collected->pdata[i];
        assert_int_equal(x->size, y->size);
        const float *u = (const float *)x->data, *v = (const float *)y->data;
        for (size_t k = 0; k < x->size / 4; k++)
            if (fabsf(u[k] - v[k]) > tol)
                fail_msg("tensor %u element %zu: %g vs %g", i, k, u[k], v[k]);
    }
    g_ptr_array_free(first, TRUE);
    clear_collected();
}

static void test_preprocess_cpu_and_vulkan_agree(void **state)
{
    (void)state;
    NEED_VULKAN();
    const char *formats[] = { "yuv420p", "nv12", "rgb24", "bgr24", "rgba" };
    const char *options[] = { "size=96x64 fit=letterbox", "size=50x70 fit=crop layout=nhwc bgr=true",
                              "size=64x64 mean=0.485,0.456,0.406 std=0.229,0.224,0.225 roi=10,20,100,60" };
    for (size_t f = 0; f < G_N_ELEMENTS(formats); f++)
        for (size_t o = 0; o < G_N_ELEMENTS(options); o++) {
            char *cpu = g_strdup_printf("testsrc num-buffers=3 pattern=noise ! video/raw,format=%s,width=161,"
                                        "height=121 ! preprocess %s ! collect", formats[f], options[o]);
            char *gpu = g_strdup_printf("testsrc num-buffers=3 pattern=noise ! video/raw,format=%s,width=161,"
                                        "height=121 ! preprocess device=vulkan:0 %s ! collect", formats[f],
                                        options[o]);
            run_and_compare(cpu, gpu, 1e-4f);
            g_free(cpu);
            g_free(gpu);
        }
}

static void test_preprocess_takes_its_shape_from_downstream(void **state)
{
    (void)state;
    reel_pipeline *p = run_ok("testsrc num-buffers=2 ! video/raw,width=320,height=240 ! preprocess fit=letterbox "
                              "scale=0.00784313725490196 offset=-1 ! collect_nhwc");
    reel_pipeline_destroy(&p);
    assert_int_equal(collected->len, 2);
    reel_buffer *t = collected->pdata[0];
    assert_int_equal(t->format.rank, 4);
    assert_int_equal(t->format.shape[1], 128);
    assert_int_equal(t->format.shape[3], 3);
    // 320x240 letterboxed into 128x128: scale 0.4, 96 rows of content from
    // row 16; the source frame travels with the tensor.
    const reel_transform *tr = reel_buffer_get_meta(t, &reel_transform_meta);
    assert_non_null(tr);
    assert_float_equal(tr->ax, 0.4, 1e-9);
    assert_float_equal(tr->by, 16, 1e-9);
    double x = 64, y = 16;
    reel_transform_to_frame(tr, &x, &y);
    assert_float_equal(x, 160, 1e-9);
    assert_float_equal(y, 0, 1e-9);
    reel_buffer *frame = reel_buffer_source_frame(t);
    assert_non_null(frame);
    assert_int_equal(frame->format.width, 320);
    // Pad rows hold the pad value 114, normalized to [-1, 1].
    const float *d = (const float *)t->data;
    assert_float_equal(d[0], 114 * 0.00784313725490196 - 1, 1e-6);
    clear_collected();
}

static void test_overlay_is_the_same_on_both_devices(void **state)
{
    (void)state;
    NEED_VULKAN();
    const char *formats[] = { "yuv420p", "nv12", "rgb24", "rgba" };
    for (size_t f = 0; f < G_N_ELEMENTS(formats); f++) {
        char *src = g_strdup_printf("testsrc num-buffers=4 pattern=noise ! video/raw,format=%s,width=161,"
                                    "height=101 ! fixed_detector", formats[f]);
        char *plain = g_strdup_printf("%s ! fakesink checksum=true", src);
        char *cpu = g_strdup_printf("%s ! overlay ! fakesink checksum=true", src);
        char *gpu = g_strdup_printf("%s ! overlay device=vulkan:0 thickness=3 ! overlay device=vulkan:0 "
                                    "labels=false ! fakesink checksum=true", src);
        char *cpu_twice = g_strdup_printf("%s ! overlay thickness=3 ! overlay labels=false ! fakesink checksum=true",
                                         src);
        char *a = checksum_of(plain), *b = checksum_of(cpu), *c = checksum_of(gpu), *d = checksum_of(cpu_twice);
        assert_string_not_equal(a, b); // something was drawn
        assert_string_equal(c, d);     // byte for byte on both devices
        g_free(a), g_free(b), g_free(c), g_free(d);
        g_free(src), g_free(plain), g_free(cpu), g_free(gpu), g_free(cpu_twice);
    }
}

// A detector's boxes to a classifier: one crop per detection, each
// classified, the frame passed on once with a class per detection; frames
// without detections pass too. On the cpu, or with crops made on vulkan:0.
static void classify_crops_of_detections(bool device)
{
    const char *models = getenv("REEL_TEST_MODELS");
    char *labels = g_build_filename(g_get_tmp_dir(), "reel-colours.txt", NULL);
    g_file_set_contents(labels, "red\ngreen\nblue\n", -1, NULL);
    char *text = g_strdup_printf(
        "testsrc num-buffers=6 pattern=solid color=0x404040 ! video/raw,format=rgb24,width=160,height=120 "
        "! painter "
        "! preprocess roi=detections size=16x16 %s ! infer model=%s/colour.onnx ! classify labels=%s "
        "! collect_frames",
        device ? "device=vulkan:0" : "", models ? models : "models", labels);
    reel_pipeline *p = run_ok(text);
    reel_pipeline_destroy(&p);
    assert_int_equal(collected->len, 6);
    for (guint i = 0; i < collected->len; i++) {
        const reel_buffer *f = collected->pdata[i];
        const reel_classifications *c = reel_buffer_get_meta(f, &reel_classifications_meta);
        assert_non_null(c);
        assert_int_equal(f->frame_number, i);
        if (i % 3 == 2) {
            assert_int_equal(c->n, 0);
            continue;
        }
        assert_int_equal(c->n, 2);
        assert_int_equal(c->items[0].detection, 0);
        assert_string_equal(c->items[0].label, "red");
        assert_int_equal(c->items[1].detection, 1);
        assert_string_equal(c->items[1].label, "blue");
    }
    clear_collected();
    g_free(text);
    g_unlink(labels);
    g_free(labels);
}

static void test_classify_crops_of_detections_cpu(void **state)
{
    (void)state;
    classify_crops_of_detections(false);
}

static void test_classify_crops_of_detections_vulkan(void **state)
{
    (void)state;
    NEED_VULKAN();
    classify_crops_of_detections(true);
}

// Frames batched four at a time (the last batch partial, at end of stream)
// get the same results as one at a time, each on its own frame.
static void test_batches_give_the_same_results(void **state)
{
    (void)state;
    const char *models = getenv("REEL_TEST_MODELS");
    GPtrArray *runs[2];
    for (int batch = 1, r = 0; r < 2; batch = 4, r++) {
        char *text = g_strdup_printf("testsrc num-buffers=10 pattern=noise ! video/raw,width=40,height=30 "
                                     "! preprocess size=8x8 ! infer model=%s/conv_bn_relu.onnx batch=%d "
                                     "! collect_frames",
                                     models ? models : "models", batch);
        reel_pipeline *p = run_ok(text);
        reel_pipeline_destroy(&p);
        g_free(text);
        runs[r] = collected;
        collected = g_ptr_array_new_with_free_func(unref_buffer);
    }
    assert_int_equal(runs[0]->len, 10);
    assert_int_equal(runs[1]->len, 10);
    for (guint i = 0; i < 10; i++) {
        const reel_inference *a = reel_buffer_last_inference(runs[0]->pdata[i]);
        const reel_inference *b = reel_buffer_last_inference(runs[1]->pdata[i]);
        assert_int_equal(((reel_buffer *)runs[1]->pdata[i])->frame_number, i);
        const reel_buffer *x = reel_inference_output(a, NULL, 0), *y = reel_inference_output(b, NULL, 0);
        assert_int_equal(y->format.shape[0], 1);
        assert_int_equal(x->size, y->size);
        const float *u = (const float *)x->data, *v = (const float *)y->data;
        for (size_t k = 0; k < x->size / 4; k++)
            assert_float_equal(u[k], v[k], 1e-5);
    }
    g_ptr_array_free(runs[0], TRUE);
    g_ptr_array_free(runs[1], TRUE);
}

// A model whose batch dim is fixed at 1 under infer batch=4: four
// inferences of one frame each, the same results as batch=1, said once.
static void test_batch_on_a_model_of_batch_one(void **state)
{
    (void)state;
    const char *models = getenv("REEL_TEST_MODELS");
    GPtrArray *runs[2];
    for (int batch = 1, r = 0; r < 2; batch = 4, r++) {
        char *text = g_strdup_printf("testsrc num-buffers=10 pattern=noise ! video/raw,width=40,height=30 "
                                     "! preprocess size=8x8 ! infer model=%s/conv_silu.onnx batch=%d "
                                     "! collect_frames",
                                     models ? models : "models", batch);
        g_string_truncate(messages, 0);
        reel_pipeline *p = run_ok(text);
        reel_pipeline_destroy(&p);
        g_free(text);
        const char *note = "conv_silu takes a batch of 1: batch=4 runs one inference per frame (as batch=1 does)";
        const char *first = strstr(messages->str, note);
        if (r == 1 && (!first || strstr(first + 1, note)))
            fail_msg("expected the note once, got:\n%s", messages->str);
        if (r == 0)
            assert_null(strstr(messages->str, "takes a batch of 1"));
        runs[r] = collected;
        collected = g_ptr_array_new_with_free_func(unref_buffer);
    }
    assert_int_equal(runs[0]->len, 10);
    assert_int_equal(runs[1]->len, 10);
    for (guint i = 0; i < 10; i++) {
        assert_int_equal(((reel_buffer *)runs[1]->pdata[i])->frame_number, i);
        const reel_buffer *x = reel_inference_output(reel_buffer_last_inference(runs[0]->pdata[i]), NULL, 0);
        const reel_buffer *y = reel_inference_output(reel_buffer_last_inference(runs[1]->pdata[i]), NULL, 0);
        assert_int_equal(y->format.shape[0], 1);
        assert_int_equal(x->size, y->size);
        assert_memory_equal(x->data, y->data, x->size);
    }
    g_ptr_array_free(runs[0], TRUE);
    g_ptr_array_free(runs[1], TRUE);

    // A batch fixed at another size than batch= is still refused.
    char *text = g_strdup_printf("testsrc num-buffers=1 ! preprocess size=8x8 ! infer model=%s/shape_chain.onnx "
                                 "batch=3 ! collect_frames",
                                 models ? models : "models");
    char *m = run_fails(text);
    assert_non_null(strstr(m, "batch=3 but model"));
    assert_non_null(strstr(m, "takes a batch of 2"));
    g_free(m);
    g_free(text);
}

static void test_clear_errors(void **state)
{
    (void)state;
    char *m = run_fails("testsrc num-buffers=1 ! preprocess ! fakesink");
    assert_non_null(strstr(m, "preprocess0"));
    assert_non_null(strstr(m, "no tensor size: set size=WxH"));
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! preprocess size=8x8 mean=0.5,x ! fakesink");
    assert_non_null(strstr(m, "mean=\"0.5,x\": give one number or three"));
    g_free(m);
    m = run_fails("testsrc num-buffers=1 ! video/raw,width=64,height=48 ! preprocess size=8x8 roi=0,0,100,10 ! "
                  "fakesink");
    assert_non_null(strstr(m, "reaches outside the 64x48 frame"));
    g_free(m);
}

// A model node that would fall back to the cpu (here forced to, through
// the test switch) breaks a strict placement, naming the node.
static void test_strict_placement_names_the_node(void **state)
{
    (void)state;
    NEED_VULKAN();
    g_setenv("REEL_VULKAN_CPU_OPS", "Conv", TRUE);
    char *text = g_strdup_printf("placement=strict device=vulkan:0 testsrc device=cpu num-buffers=1 ! upload "
                                 "! preprocess size=8x8 ! infer model=%s/conv_bn_relu.onnx ! download "
                                 "! fakesink device=cpu",
                                 getenv("REEL_TEST_MODELS") ? getenv("REEL_TEST_MODELS") : "models");
    char *m = run_fails(text);
    g_unsetenv("REEL_VULKAN_CPU_OPS");
    g_free(text);
    assert_non_null(strstr(m, "placement=strict: 1 node would run on the cpu, not on vulkan:0"));
    assert_non_null(strstr(m, "(Conv): kept on the cpu by REEL_VULKAN_CPU_OPS"));
    g_free(m);
}

int main(void)
{
    reel_init();
    vulkan = have_vulkan();
    // Without a device, what the loader said while looking (no drivers) is
    // the reason for the skips, not a validation failure.
    int64_t probe_messages = vulkan ? 0 : reel_device_validation_messages();
    reel_element_class_register(&collect_class);
    reel_element_class_register(&collect_nhwc_class);
    reel_element_class_register(&detector_class);
    reel_element_class_register(&painter_class);
    reel_element_class_register(&collect_frames_class);
    collected = g_ptr_array_new_with_free_func(unref_buffer);
    messages = g_string_new(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_into_device_memory),
        cmocka_unit_test(test_hardware_decoding_falls_back_with_a_reason),
        cmocka_unit_test(test_decode_to_preprocess_moves_only_the_tensor),
        cmocka_unit_test(test_model_input_stays_on_the_device),
        cmocka_unit_test(test_preprocess_cpu_and_vulkan_agree),
        cmocka_unit_test(test_preprocess_takes_its_shape_from_downstream),
        cmocka_unit_test(test_overlay_is_the_same_on_both_devices),
        cmocka_unit_test(test_classify_crops_of_detections_cpu),
        cmocka_unit_test(test_classify_crops_of_detections_vulkan),
        cmocka_unit_test(test_batches_give_the_same_results),
        cmocka_unit_test(test_batch_on_a_model_of_batch_one),
        cmocka_unit_test(test_clear_errors),
        cmocka_unit_test(test_strict_placement_names_the_node),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    g_ptr_array_free(collected, TRUE);
    g_string_free(messages, TRUE);
    g_free(last_info);
    if (reel_device_validation_messages() != probe_messages) {
        printf("validation layer messages: %" G_GINT64_FORMAT "\n",
               reel_device_validation_messages() - probe_messages);
        failed++;
    }
    return reel_test_verdict(failed);
}

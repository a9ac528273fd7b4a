// Placement on real devices: transfers inserted and counted exactly, strict
// placement, memory budgets, unknown devices. Vulkan runs on whatever driver
// is present (lavapipe without a GPU) with the validation layer on; without
// a Vulkan device the suite is skipped.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"
#include "tests/support/pipeline.h"

enum { FRAMES = 12, FRAME_BYTES = 64 * 48 * 3 };

// Keeps the last INFO message (a fakesink's checksum).
static void keep_info(const reel_message *msg, void *user)
{
    if (msg->type == REEL_MESSAGE_INFO) {
        g_free(*(char **)user);
        *(char **)user = g_strdup(msg->text);
    }
}

static char *last_info;

static reel_pipeline *build(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.stats_interval_ms = -1, .bus_handler = keep_info, .bus_user = &last_info),
        &err);
    if (!p)
        fail_msg("%s", err->message);
    return p;
}

static int64_t total(reel_pipeline *p, bool to_device)
{
    reel_element_report r[32];
    int n = reel_pipeline_report(p, r, 32);
    int64_t sum = 0;
    for (int i = 0; i < n && i < 32; i++)
        sum += to_device ? r[i].bytes_to_device : r[i].bytes_to_host;
    return sum;
}

static reel_pipeline *run_ok(const char *text)
{
    reel_pipeline *p = build(text);
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    return p;
}

#define SRC "testsrc num-buffers=12 pattern=noise ! video/raw,format=rgb24,width=64,height=48"

static void test_one_crossing_each_way_is_counted_exactly(void **state)
{
    (void)state;
    reel_pipeline *p = run_ok(SRC " ! identity device=vulkan:0 ! fakesink");
    reel_element_report up = reel_test_report_of(p, "upload0"), down = reel_test_report_of(p, "download0");
    assert_int_equal(up.bytes_to_device, FRAMES * FRAME_BYTES);
    assert_int_equal(up.bytes_to_host, 0);
    assert_int_equal(down.bytes_to_host, FRAMES * FRAME_BYTES);
    assert_int_equal(total(p, true), FRAMES * FRAME_BYTES);
    assert_int_equal(total(p, false), FRAMES * FRAME_BYTES);
    assert_string_equal(reel_test_report_of(p, "identity0").device, "vulkan:0");
    assert_non_null(strstr(up.reason, "inserted: 'capsfilter0' on cpu feeds 'identity0' on vulkan:0"));
    reel_pipeline_destroy(&p);
}

static void test_frames_survive_the_round_trip(void **state)
{
    (void)state;
    // The same checksum through device memory as without it.
    const char *texts[] = { SRC " ! identity ! fakesink checksum=true",
                            SRC " ! identity device=vulkan:0 ! fakesink checksum=true" };
    char *sums[2];
    for (int i = 0; i < 2; i++) {
        reel_pipeline *p = run_ok(texts[i]);
        reel_pipeline_destroy(&p);
        assert_non_null(last_info);
        sums[i] = g_steal_pointer(&last_info);
    }
    assert_non_null(strstr(sums[0], "12 buffers, md5 "));
    assert_string_equal(sums[0], sums[1]);
    g_free(sums[0]);
    g_free(sums[1]);
}

static void test_one_device_moves_nothing(void **state)
{
    (void)state;
    reel_pipeline *p = run_ok(SRC " ! queue ! identity ! fakesink");
    assert_int_equal(total(p, true), 0);
    assert_int_equal(total(p, false), 0);
    reel_pipeline_destroy(&p);
    // Two neighbours on the device: one upload, one download, nothing between.
    p = run_ok(SRC " ! identity device=vulkan:0 ! queue device=vulkan:0 ! fakesink");
    assert_int_equal(total(p, true), FRAMES * FRAME_BYTES);
    assert_int_equal(reel_test_report_of(p, "queue0").bytes_to_device + reel_test_report_of(p, "queue0").bytes_to_host, 0);
    reel_pipeline_destroy(&p);
}

static void test_strict_refuses_an_implicit_transfer(void **state)
{
    (void)state;
    reel_pipeline *p = build("placement=strict " SRC " ! identity device=vulkan:0 ! fakesink");
    GError *err = NULL;
    assert_int_equal(reel_pipeline_prepare(p, &err), REEL_EUNSUPPORTED);
    assert_non_null(strstr(err->message, "'capsfilter0' (cpu) and 'identity0' (vulkan:0) are in different memory"));
    assert_non_null(strstr(err->message, "implicit upload"));
    g_error_free(err);
    reel_pipeline_destroy(&p);
}

static void test_budget_smaller_than_a_frame(void **state)
{
    (void)state;
    reel_pipeline *p = build("memory-budget=4096 " SRC " ! identity device=vulkan:0 ! fakesink");
    GError *err = NULL;
    assert_int_equal(reel_pipeline_run(p, &err), REEL_ENOMEM_DEVICE);
    assert_non_null(strstr(err->message, "upload0: "));
    assert_non_null(strstr(err->message, "budget"));
    g_error_free(err);
    reel_pipeline_destroy(&p);
}

static void test_unknown_device_lists_the_devices(void **state)
{
    (void)state;
    reel_pipeline *p = build("device=no-such-gpu testsrc ! fakesink");
    GError *err = NULL;
    assert_int_equal(reel_pipeline_prepare(p, &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "no-such-gpu"));
    assert_non_null(strstr(err->message, "vulkan:0"));
    assert_non_null(strstr(err->message, "cpu"));
    g_error_free(err);
    reel_pipeline_destroy(&p);
}

// A GPU element for this test: fills each frame's memory with zeros by a
// kernel, timed, and tells the trace.
typedef struct fill_priv {
    reel_kernel *kernel;
} fill_priv;

static int fill_start(reel_element *e)
{
    fill_priv *s = reel_element_priv(e);
    GError *err = NULL;
    s->kernel = reel_kernel_create(reel_element_device(e), reel_kernel_params(.name = "fill"), &err);
    if (!s->kernel) {
        reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
        return REEL_EUNSUPPORTED;
    }
    return 0;
}

static int fill_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    fill_priv *s = reel_element_priv(e);
    struct {
        float value;
        uint32_t n;
    } push = { 0.0f, (uint32_t)(reel_mem_size(buf->mem) / 4) };
    uint32_t local = reel_kernel_local_size(s->kernel);
    uint64_t point;
    int rc = reel_kernel_dispatch(s->kernel,
                                  reel_dispatch_params(.buffers = { buf->mem }, .push = &push, .push_size = sizeof push,
                                                       .groups = { (push.n + local - 1) / local }, .timestamp = true),
                                  &point);
    if (rc < 0) {
        reel_buffer_unref(&buf);
        return reel_element_error(e, rc, "dispatch failed");
    }
    reel_element_trace_dispatch(e, "fill", point);
    return reel_element_push(e, 0, buf);
}

static void fill_stop(reel_element *e)
{
    fill_priv *s = reel_element_priv(e);
    reel_kernel_destroy(&s->kernel);
}

static const reel_element_class fill_class = {
    .name = "test-fill",
    .description = "zeroes frames on the GPU (test only)",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_VULKAN,
    .priv_size = sizeof(fill_priv),
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw", .output_caps = "video/raw",
    .start = fill_start,
    .process = fill_process,
    .stop = fill_stop,
    .uninit = fill_stop,
};

static void test_trace_has_a_span_per_dispatch(void **state)
{
    (void)state;
    char *path = g_build_filename(g_get_tmp_dir(), "reel-test-gpu-trace.json", NULL);
    GError *err = NULL;
    char *frames = g_build_filename(g_get_tmp_dir(), "reel-test-gpu-frames.txt", NULL);
    char *desc = g_strdup_printf("device=vulkan:0 testsrc num-buffers=5 ! video/raw,format=rgba,width=64,height=48 "
                                 "! test-fill ! fakesink location=%s",
                                 frames);
    reel_pipeline *p = reel_parse_launch(desc,
                                         NULL, reel_pipeline_params(.stats_interval_ms = -1, .trace = true,
                                                                    .bus_handler = keep_info, .bus_user = &last_info),
                                         &err);
    assert_non_null(p);
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s", err->message);
    assert_string_equal(reel_test_report_of(p, "test-fill0").device, "vulkan:0");
    assert_int_equal(reel_pipeline_write_trace(p, path, &err), 0);
    char *text = NULL;
    assert_true(g_file_get_contents(path, &text, NULL, NULL));
    int spans = 0;
    for (const char *q = text; (q = strstr(q, "\"cat\": \"gpu\"")); q++)
        spans++;
    assert_int_equal(spans, 5);
    assert_non_null(strstr(text, "\"device vulkan:0\""));
    reel_pipeline_destroy(&p);

    // The frames came back zeroed: the kernel ran on the data itself.
    uint8_t *zero = g_malloc0(64 * 48 * 4);
    char *expected = g_compute_checksum_for_data(G_CHECKSUM_MD5, zero, 64 * 48 * 4);
    char *lines = NULL;
    assert_true(g_file_get_contents(frames, &lines, NULL, NULL));
    gchar **line = g_strsplit(lines, "\n", -1);
    int n = 0;
    for (gchar **l = line; *l && **l; l++, n++)
        assert_true(g_str_has_suffix(*l, expected));
    assert_int_equal(n, 5);
    g_strfreev(line);
    g_free(lines);
    g_free(expected);
    g_free(zero);
    g_free(text);
    remove(path);
    remove(frames);
    g_free(path);
    g_free(frames);
    g_free(desc);
}

static int no_validation_messages(void **state)
{
    (void)state;
    assert_int_equal(reel_device_validation_messages(), 0);
    return 0;
}

int main(void)
{
    reel_init();
    reel_element_class_register(&fill_class);
    setenv("REEL_VULKAN_VALIDATION", "1", 0);
    reel_device_info *devices = NULL;
    int n = reel_device_list(&devices), vulkan = 0;
    for (int i = 0; i < n; i++)
        vulkan += devices[i].backend == REEL_BACKEND_VULKAN;
    g_free(devices);
    if (!vulkan)
        return reel_skip_exit("no Vulkan device");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_one_crossing_each_way_is_counted_exactly, no_validation_messages),
        cmocka_unit_test_teardown(test_frames_survive_the_round_trip, no_validation_messages),
        cmocka_unit_test_teardown(test_one_device_moves_nothing, no_validation_messages),
        cmocka_unit_test_teardown(test_strict_refuses_an_implicit_transfer, no_validation_messages),
        cmocka_unit_test_teardown(test_budget_smaller_than_a_frame, no_validation_messages),
        cmocka_unit_test_teardown(test_unknown_device_lists_the_devices, no_validation_messages),
        cmocka_unit_test_teardown(test_trace_has_a_span_per_dispatch, no_validation_messages),
    };
    return reel_run_tests(tests, NULL, NULL);
}

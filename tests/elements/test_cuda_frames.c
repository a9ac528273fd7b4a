// NVDEC frames into Vulkan memory and Vulkan frames into NVENC's
// (elements/cuda_frames.c) where no GPU with CUDA is at hand: each reason
// it cannot be is said, naming what is missing, and the encoder takes
// device frames through the host instead, counted. The copies themselves
// run only on an NVIDIA GPU (scripts/gpu-check).
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <libavcodec/avcodec.h>

#include "elements/cuda_frames.h"
#include "tests/support/pipeline.h"
#include "tests/support/skip.h"

enum { FRAMES = 12, FRAME_BYTES = 64 * 48 * 3 / 2 };

// Frames in vulkan:0's memory (the capsfilter runs there, an upload before it).
#define DEVICE_FRAMES "device=vulkan:0 testsrc num-buffers=12 pattern=noise ! video/raw,format=yuv420p,width=64,height=48"

static bool have_libcuda(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib)
        dlclose(lib);
    return lib != NULL;
}

static void need_vulkan(void)
{
    reel_device *dev = reel_device_open("vulkan:0", NULL);
    if (!dev)
        reel_skip("no vulkan:0 device");
    reel_device_unref(&dev);
}

static void need_encoder(const char *name)
{
    if (!avcodec_find_encoder_by_name(name))
        reel_skip("this FFmpeg has no %s encoder", name);
}

static GString *messages; // every message of the last run, one a line

static void keep_messages(const reel_message *msg, void *user)
{
    (void)user;
    g_string_append_printf(messages, "%s\n", msg->text);
}

// Runs text; returns the pipeline, with *error set when the run failed.
static reel_pipeline *run(const char *text, GError **error)
{
    g_string_truncate(messages, 0);
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.stats_interval_ms = -1, .bus_handler = keep_messages), error);
    if (!p)
        fail_msg("%s", (*error)->message);
    reel_pipeline_run(p, error);
    return p;
}

static void expect_said(const char *what)
{
    if (!strstr(messages->str, what))
        fail_msg("no message says \"%s\"; they were:\n%s", what, messages->str);
}

static int64_t total(reel_pipeline *p, bool to_device)
{
    reel_element_report r[16];
    int n = reel_pipeline_report(p, r, 16);
    int64_t sum = 0;
    for (int i = 0; i < n && i < 16; i++) {
        sum += to_device ? r[i].bytes_to_device : r[i].bytes_to_host;
        assert_null(strstr(r[i].name, "download")); // encode downloads itself, or nothing does
    }
    return sum;
}

static void expect_refusal(const char *spec, const char *reason)
{
    reel_device *dev = reel_device_open(spec, NULL);
    if (!dev)
        reel_skip("no %s device", spec);
    char *why = NULL;
    assert_null(cuda_frames_open(dev, NULL, &why));
    assert_non_null(why);
    if (!strstr(why, reason))
        fail_msg("%s: \"%s\" does not say \"%s\"", spec, why, reason);
    g_free(why);
    reel_device_unref(&dev);
}

static void test_only_to_a_vulkan_device(void **state)
{
    (void)state;
    expect_refusal("cpu", "frames go to cpu, not a Vulkan device");
}

static void test_names_the_missing_driver_or_device(void **state)
{
    (void)state;
    if (have_libcuda()) // a machine with NVIDIA's driver: it is there, the CUDA device is not
        expect_refusal("vulkan:0", "no CUDA device to share frames with");
    else
        expect_refusal("vulkan:0", "no CUDA driver: libcuda.so.1");
}

// The check encode makes before it creates a CUDA device.
static void test_possible_says_why_not_before_any_cuda_device(void **state)
{
    (void)state;
    char *why = NULL;
    reel_device *cpu = reel_device_open("cpu", NULL);
    assert_false(cuda_frames_possible(cpu, &why));
    assert_non_null(strstr(why, "frames go to cpu, not a Vulkan device"));
    g_clear_pointer(&why, g_free);
    reel_device_unref(&cpu);
    need_vulkan();
    reel_device *dev = reel_device_open("vulkan:0", NULL);
    bool possible = cuda_frames_possible(dev, &why);
    if (!reel_device_info_of(dev)->external_memory) {
        assert_false(possible);
        assert_non_null(strstr(why, "cannot share memory with CUDA"));
    } else if (!have_libcuda()) {
        assert_false(possible);
        assert_non_null(strstr(why, "no CUDA driver: libcuda.so.1"));
    } else {
        assert_true(possible);
        assert_null(why);
    }
    g_free(why);
    reel_device_unref(&dev);
}

// Every byte a person reads is printable: no FFmpeg code left raw, no "(null)".
static void assert_readable(const char *text)
{
    for (const char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20)
            fail_msg("a control character in \"%s\"", text);
    assert_null(strstr(text, "(null)"));
}

// NVENC pinned to the Vulkan device without NVIDIA's driver: the log says
// why frames would go through the host, then the run fails naming the
// encoder that could not open and what it needs; no crash, no leak.
static void test_nvenc_without_a_driver_says_why_and_fails_clearly(void **state)
{
    (void)state;
    need_vulkan();
    need_encoder("h264_nvenc");
    GError *err = NULL;
    reel_pipeline *p = run(DEVICE_FRAMES " ! encode codec=h264_nvenc ! fakesink", &err);
    if (have_libcuda()) {
        // A machine with the driver: whichever path it took is said.
        if (!strstr(messages->str, "NVENC frames copied from vulkan:0's memory on the GPU"))
            expect_said("NVENC frames go through host memory");
        g_clear_error(&err);
        reel_pipeline_destroy(&p);
        return;
    }
    expect_said("NVENC frames go through host memory: no CUDA driver: libcuda.so.1");
    assert_non_null(err);
    if (!strstr(err->message, "cannot open the h264_nvenc encoder for 64x48 yuv420p: ")
        || !strstr(err->message, "NVENC needs an NVIDIA GPU with its driver"))
        fail_msg("unclear error: %s", err->message);
    assert_readable(err->message);
    char **lines = g_strsplit(messages->str, "\n", -1);
    for (char **l = lines; *l; l++)
        assert_readable(*l);
    g_strfreev(lines);
    // The report says where encode ran and why its frames took the host.
    reel_element_report r = reel_test_report_of(p, "encode0");
    assert_string_equal(r.device, "vulkan:0");
    assert_non_null(strstr(r.reason, "h264_nvenc takes frames through host memory: no CUDA driver"));
    g_error_free(err);
    reel_pipeline_destroy(&p);
}

// Any other encoder pinned to the Vulkan device: each frame is downloaded
// once, by encode itself (no download element before it), counted exactly.
static void test_x264_on_the_device_downloads_each_frame_once(void **state)
{
    (void)state;
    need_vulkan();
    need_encoder("libx264");
    GError *err = NULL;
    reel_pipeline *p = run(DEVICE_FRAMES " ! encode codec=h264 ! fakesink", &err);
    if (err)
        fail_msg("%s", err->message);
    expect_said("libx264 encodes from host memory: each frame is downloaded from vulkan:0 once");
    reel_element_report r = reel_test_report_of(p, "encode0");
    assert_int_equal(r.buffers_in, FRAMES);
    assert_true(r.buffers_out > 0);
    assert_int_equal(r.bytes_to_host, FRAMES * FRAME_BYTES);
    assert_int_equal(total(p, false), FRAMES * FRAME_BYTES);
    assert_non_null(strstr(r.reason, "libx264 encodes from host memory"));
    reel_pipeline_destroy(&p);
}

// Host frames reach encode on the Vulkan device as they are: no upload is
// put before it (a cpu convert feeding the encoder stays free).
static void test_host_frames_reach_encode_without_a_transfer(void **state)
{
    (void)state;
    need_vulkan();
    need_encoder("libx264");
    GError *err = NULL;
    reel_pipeline *p = run("device=vulkan:0 testsrc num-buffers=12 width=64 height=48 format=rgb24 "
                           "! convert ! encode codec=h264 ! fakesink", &err);
    if (err)
        fail_msg("%s", err->message);
    assert_string_equal(reel_test_report_of(p, "encode0").device, "vulkan:0");
    assert_int_equal(reel_test_report_of(p, "encode0").buffers_in, FRAMES);
    assert_null(strstr(messages->str, "downloaded")); // no device frame came
    assert_int_equal(total(p, true) + total(p, false), 0);
    reel_pipeline_destroy(&p);
}

// Strict placement allows no download the pipeline did not ask for.
static void test_strict_placement_refuses_the_download(void **state)
{
    (void)state;
    need_vulkan();
    need_encoder("libx264");
    GError *err = NULL;
    reel_pipeline *p = run("placement=strict device=vulkan:0 testsrc device=cpu num-buffers=12 width=64 height=48 "
                           "format=yuv420p ! upload ! encode codec=h264 ! fakesink device=cpu", &err);
    assert_non_null(err);
    if (!strstr(err->message, "placement=strict: libx264 encodes from host memory and the frames are in vulkan:0's"))
        fail_msg("unexpected error: %s", err->message);
    g_clear_error(&err);
    reel_pipeline_destroy(&p);
    // An explicit download is what it asks for.
    p = run("placement=strict device=vulkan:0 testsrc device=cpu num-buffers=12 width=64 height=48 "
            "format=yuv420p ! upload ! download ! encode codec=h264 ! fakesink device=cpu", &err);
    if (err)
        fail_msg("%s", err->message);
    assert_int_equal(reel_test_report_of(p, "download0").bytes_to_host, FRAMES * FRAME_BYTES);
    assert_int_equal(reel_test_report_of(p, "encode0").bytes_to_host, 0);
    reel_pipeline_destroy(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_to_a_vulkan_device),
        cmocka_unit_test(test_names_the_missing_driver_or_device),
        cmocka_unit_test(test_possible_says_why_not_before_any_cuda_device),
        cmocka_unit_test(test_nvenc_without_a_driver_says_why_and_fails_clearly),
        cmocka_unit_test(test_x264_on_the_device_downloads_each_frame_once),
        cmocka_unit_test(test_host_frames_reach_encode_without_a_transfer),
        cmocka_unit_test(test_strict_placement_refuses_the_download),
    };
    reel_init();
    messages = g_string_new(NULL);
    int rc = reel_run_tests(tests, NULL, NULL);
    g_string_free(messages, TRUE);
    return rc;
}

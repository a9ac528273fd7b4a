// Hard limits: frame and tensor checks at their edges, and the byte bound of
// links (a queue's max-bytes, the pipeline's queue-max-bytes, a description's
// queue-max-bytes= line, the 1 GiB default) holding back a fast source or,
// leaky, dropping. `test_limits queue-env` runs with REEL_MAX_QUEUE_BYTES
// set (ctest sets it) and checks that it becomes every link's bound.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"
#include "tests/support/pipeline.h"

static void expect_frame(int w, int h, int code, const char *text)
{
    GError *err = NULL;
    assert_int_equal(reel_limit_check_frame(w, h, &err), code);
    if (!text) {
        assert_null(err);
        return;
    }
    assert_non_null(err);
    if (!strstr(err->message, text))
        fail_msg("%dx%d: '%s' lacks '%s'", w, h, err->message, text);
    g_error_free(err);
}

static void test_frame_limits(void **state)
{
    (void)state;
    expect_frame(1920, 1080, 0, NULL);
    expect_frame(32768, 8192, 0, NULL); // 2^28 pixels exactly
    expect_frame(32769, 1, REEL_EUNSUPPORTED, "32769x1 exceeds the limit of 32768 pixels per side");
    expect_frame(1, 100000, REEL_EUNSUPPORTED, "per side (REEL_MAX_FRAME_SIDE)");
    expect_frame(20000, 20000, REEL_EUNSUPPORTED, "limit of 268435456 pixels per frame (REEL_MAX_FRAME_PIXELS)");
    expect_frame(-1, 10, REEL_EFORMAT, "negative");
}

static void expect_tensor(int rank, const int64_t *shape, size_t esize, int code, const char *text)
{
    GError *err = NULL;
    int64_t n = -1;
    assert_int_equal(reel_limit_check_tensor(rank, shape, esize, &n, &err), code);
    if (!text) {
        assert_null(err);
        return;
    }
    assert_non_null(err);
    if (!strstr(err->message, text))
        fail_msg("'%s' lacks '%s'", err->message, text);
    g_error_free(err);
}

static void test_tensor_limits(void **state)
{
    (void)state;
    int64_t n = 0;
    assert_int_equal(reel_limit_check_tensor(4, (int64_t[]){ 1, 3, 224, 224 }, 4, &n, NULL), 0);
    assert_int_equal(n, 602112);
    assert_int_equal(reel_limit_check_tensor(0, NULL, 8, &n, NULL), 0);
    assert_int_equal(n, 8);
    expect_tensor(9, (int64_t[]){ 1, 1, 1, 1, 1, 1, 1, 1, 1 }, 4, REEL_EUNSUPPORTED, "rank 9 exceeds the limit of 8");
    expect_tensor(2, (int64_t[]){ 4, -2 }, 4, REEL_EFORMAT, "negative dim -2 at axis 1");
    int64_t big = (int64_t)1 << 31;
    expect_tensor(3, (int64_t[]){ big, big, big }, 4, REEL_EUNSUPPORTED, "overflows at axis 2");
    // 2^61 elements fit in int64; their bytes do not.
    expect_tensor(2, (int64_t[]){ big, big / 2 }, 4, REEL_EUNSUPPORTED, "exceed the tensor limit");
    expect_tensor(1, (int64_t[]){ (int64_t)1 << 33 }, 4, REEL_EUNSUPPORTED,
                  "8589934592 elements of 4 bytes exceed the tensor limit of 17179869184 bytes");
}

static reel_pipeline *build(const char *text, const char *queue_bytes)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p)
        fail_msg("%s", err->message);
    if (queue_bytes && reel_pipeline_set(p, "queue-max-bytes", queue_bytes, &err) != 0)
        fail_msg("%s", err->message);
    return p;
}

static void run_ok(reel_pipeline *p)
{
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("run failed: %s", err->message);
}

// 64x64 rgb24 frames are 12352 bytes (rows of 192, tail padding): a bound of
// 30000 holds three, where max-size alone would let 64 pile up.
#define FRAMES "testsrc num-buffers=200 ! video/raw,format=rgb24,width=64,height=64 "

static void test_queue_max_bytes_backpressure(void **state)
{
    (void)state;
    reel_pipeline *p = build(FRAMES "! queue max-size=64 max-bytes=30000 ! fakesink delay-us=200", NULL);
    reel_buffer_reset_peak();
    long live0 = reel_buffer_get_stats().live;
    run_ok(p);
    long peak = reel_buffer_get_stats().peak_live - live0;
    // Links: testsrc→capsfilter (8), capsfilter→queue (3 by bytes),
    // queue→fakesink (8); one buffer in each of the four elements' hands and
    // one pushed past each full link.
    assert_true(peak > 0);
    assert_true(peak <= 8 + 3 + 8 + 4 + 3);
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 200);
    assert_int_equal(reel_test_report_of(p, "queue0").dropped, 0);
    reel_pipeline_destroy(&p);
}

static void test_queue_max_bytes_leaky(void **state)
{
    (void)state;
    reel_pipeline *p = build(FRAMES "! queue max-size=1000 max-bytes=30000 leaky=downstream ! fakesink delay-us=500",
                             NULL);
    run_ok(p);
    reel_element_report q = reel_test_report_of(p, "queue0"), sink = reel_test_report_of(p, "fakesink0");
    // 200 frames fit max-size=1000: every drop is the byte bound's.
    assert_true(q.dropped > 0);
    assert_int_equal(q.dropped + q.buffers_in, 200);
    assert_int_equal(sink.buffers_in, q.buffers_out);
    reel_pipeline_destroy(&p);
}

static void test_pipeline_queue_max_bytes(void **state)
{
    (void)state;
    // A bound below one buffer still passes buffers, one at a time.
    reel_pipeline *p = build(FRAMES "! identity ! fakesink", "1");
    run_ok(p);
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 200);
    GError *err = NULL;
    reel_pipeline *q = reel_pipeline_new(NULL);
    assert_int_equal(reel_pipeline_set(q, "queue-max-bytes", "0", &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "invalid queue-max-bytes '0'"));
    g_clear_error(&err);
    assert_int_equal(reel_pipeline_set(q, "queue-max-bytes", "lots", &err), REEL_EINVAL);
    g_clear_error(&err);
    assert_int_equal(reel_pipeline_set(q, "queue-max-bytes", "4096", &err), 0);
    reel_pipeline_destroy(&q);
    reel_pipeline_destroy(&p);
}

// Peak of live buffers while p runs.
static long run_peak(reel_pipeline *p)
{
    reel_buffer_reset_peak();
    long live0 = reel_buffer_get_stats().live;
    run_ok(p);
    return reel_buffer_get_stats().peak_live - live0;
}

// Three links, each bound to 30000 bytes (three 12352-byte frames): at most
// three queued on each, one in each of the four elements' hands and one
// pushed past each full link. Unbounded by bytes, the queue alone would hold
// up to 64.
#define BOUND_30000_PEAK (3 * 3 + 4 + 3)
#define SLOW_SINK "! queue max-size=64 ! fakesink delay-us=1000"

static void test_queue_bytes_default(void **state)
{
    (void)state;
    if (getenv("REEL_MAX_QUEUE_BYTES"))
        reel_skip("REEL_MAX_QUEUE_BYTES is set: the default is not in force");
    assert_int_equal(reel_limit_get(REEL_LIMIT_QUEUE_BYTES), (int64_t)1 << 30);
    assert_string_equal(reel_limit_env(REEL_LIMIT_QUEUE_BYTES), "REEL_MAX_QUEUE_BYTES");
    // What `reel inspect queue` tells the user about it.
    const reel_prop *prop = reel_element_class_find_prop(reel_element_class_find("queue"), "max-bytes");
    assert_non_null(prop);
    assert_non_null(strstr(prop->help, "default 1 GiB, REEL_MAX_QUEUE_BYTES"));
}

// A description's queue-max-bytes= line bounds every link.
static void test_description_queue_max_bytes(void **state)
{
    (void)state;
    reel_pipeline *p = build("queue-max-bytes=30000\n" FRAMES SLOW_SINK, NULL);
    long peak = run_peak(p);
    assert_true(peak > 0);
    if (peak > BOUND_30000_PEAK)
        fail_msg("peak of %ld live buffers with queue-max-bytes=30000, at most %d expected", peak, BOUND_30000_PEAK);
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 200);
    reel_pipeline_destroy(&p);
}

// Under REEL_MAX_QUEUE_BYTES=30000: the limit reads back, and a pipeline
// that sets no byte bound of its own holds no more than that per link.
static void test_queue_bytes_from_the_environment(void **state)
{
    (void)state;
    const char *env = getenv("REEL_MAX_QUEUE_BYTES");
    if (!env || strcmp(env, "30000") != 0)
        fail_msg("run as `test_limits queue-env` with REEL_MAX_QUEUE_BYTES=30000 (got %s)", env ? env : "none");
    assert_int_equal(reel_limit_get(REEL_LIMIT_QUEUE_BYTES), 30000);
    reel_pipeline *p = build(FRAMES SLOW_SINK, NULL);
    long peak = run_peak(p);
    assert_true(peak > 0);
    if (peak > BOUND_30000_PEAK)
        fail_msg("peak of %ld live buffers under REEL_MAX_QUEUE_BYTES=30000, at most %d expected", peak,
                 BOUND_30000_PEAK);
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 200);
    reel_pipeline_destroy(&p);
}

int main(int argc, char **argv)
{
    reel_init();
    if (argc > 1 && strcmp(argv[1], "queue-env") == 0) {
        const struct CMUnitTest env_tests[] = {
            cmocka_unit_test(test_queue_bytes_from_the_environment),
        };
        return reel_run_tests(env_tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_limits),
        cmocka_unit_test(test_tensor_limits),
        cmocka_unit_test(test_queue_max_bytes_backpressure),
        cmocka_unit_test(test_queue_max_bytes_leaky),
        cmocka_unit_test(test_pipeline_queue_max_bytes),
        cmocka_unit_test(test_queue_bytes_default),
        cmocka_unit_test(test_description_queue_max_bytes),
    };
    return reel_run_tests(tests, NULL, NULL);
}

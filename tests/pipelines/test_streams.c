// Live analytics: per-frame latency from capture to sink in the report,
// drops of a leaky queue before a slow element (latency bounded, memory
// flat), `rate` sampling a stream, and four streams through batch, one
// infer and unbatch into four per-stream metadata files.
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

static reel_pipeline *build_live(const char *text, int queue_size, int latency_ms)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.threads = 2, .queue_size = queue_size, .latency_ms = latency_ms), &err);
    if (!p)
        fail_msg("%s", err->message);
    return p;
}

static reel_pipeline *build(const char *text, int queue_size)
{
    return build_live(text, queue_size, 0);
}

static void run_ok(reel_pipeline *p)
{
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) < 0)
        fail_msg("run failed: %s", err->message);
}

static char *temp_path(const char *name)
{
    char *dir = g_dir_make_tmp("reel-streams-XXXXXX", NULL);
    assert_non_null(dir);
    char *path = g_build_filename(dir, name, NULL);
    g_free(dir);
    return path;
}

static void remove_with_dir(const char *path)
{
    g_unlink(path);
    char *dir = g_path_get_dirname(path);
    g_rmdir(dir);
    g_free(dir);
}

// The JSON report's latency object of element `name`: frames, p50, p95,
// p99, max. Returns whether the element has one.
static bool json_latency(const char *json, const char *name, int64_t *frames, double q[4])
{
    char *key = g_strdup_printf("{\"name\": \"%s\"", name);
    const char *at = strstr(json, key);
    g_free(key);
    assert_non_null(at);
    const char *end = strchr(at, '\n');
    const char *lat = strstr(at, "\"latency\": {");
    if (!lat || (end && lat > end))
        return false;
    long long f = 0;
    int got = sscanf(lat, "\"latency\": {\"frames\": %lld, \"p50_ms\": %lf, \"p95_ms\": %lf, \"p99_ms\": %lf, "
                          "\"max_ms\": %lf}", &f, &q[0], &q[1], &q[2], &q[3]);
    assert_int_equal(got, 5);
    *frames = f;
    return true;
}

// Latency per sink in the JSON report: present for sinks only, ordered,
// positive, counting every frame.
static void test_latency_in_report(void **state)
{
    (void)state;
    reel_pipeline *p = build("testsrc is-live=true framerate=100 num-buffers=40 ! video/raw,width=32,height=24 "
                             "! tee name=t ! queue ! fakesink name=fast  t. ! queue ! identity sleep-us=3000 "
                             "! fakesink name=slow",
                             0);
    run_ok(p);
    char *path = temp_path("report.json");
    GError *err = NULL;
    assert_int_equal(reel_pipeline_write_report_json(p, path, &err), 0);
    char *json = NULL;
    assert_true(g_file_get_contents(path, &json, NULL, NULL));

    const char *sinks[] = { "fast", "slow" };
    for (int i = 0; i < 2; i++) {
        int64_t frames;
        double q[4];
        assert_true(json_latency(json, sinks[i], &frames, q));
        assert_int_equal(frames, 40);
        assert_true(q[0] > 0);
        assert_true(q[0] <= q[1] && q[1] <= q[2] && q[2] <= q[3]);
        reel_element_report r = reel_test_report_of(p, sinks[i]);
        assert_true(r.has_latency);
        assert_int_equal(r.latency_frames, 40);
        assert_true(r.latency_max_ms == q[3] || (r.latency_max_ms - q[3]) < 0.001);
    }
    // Every frame of the slow branch waits 3 ms on top, however fast the
    // machine: even its median is 3 ms late (within the histogram's 3%).
    double qs[4];
    int64_t n;
    json_latency(json, "slow", &n, qs);
    assert_true(qs[0] >= 3.0 * 0.97);
    int64_t frames;
    double q[4];
    assert_false(json_latency(json, "t", &frames, q)); // not a sink
    assert_non_null(strstr(json, "\"dropped_per_input\": [0]"));
    g_free(json);
    remove_with_dir(path);
    g_free(path);
    reel_pipeline_destroy(&p);
}

// Waits (deadline 60 s) until element `name` has sent `n` buffers.
static void wait_sent(reel_pipeline *p, const char *name, int64_t n)
{
    for (int i = 0; i < 60000 && reel_test_report_of(p, name).buffers_out < n; i++)
        g_usleep(1000);
    if (reel_test_report_of(p, name).buffers_out < n)
        fail_msg("%s sent %" G_GINT64_FORMAT " buffers in 60 s, not %" G_GINT64_FORMAT, name,
                 reel_test_report_of(p, name).buffers_out, n);
}

// Pulls what the appsink `out` has until end of stream: their frame numbers.
static GArray *pull_frames(reel_pipeline *p)
{
    GArray *got = g_array_new(FALSE, FALSE, sizeof(int64_t));
    reel_element *out = reel_pipeline_find(p, "out");
    reel_buffer *b;
    while ((b = reel_appsink_pull(out, 60 * G_USEC_PER_SEC))) {
        g_array_append_val(got, b->frame_number);
        reel_buffer_unref(&b);
    }
    assert_true(reel_appsink_is_eos(out));
    return got;
}

// A source far faster than what follows its leaky queue: the application
// holds the appsink until the source has sent all 200 frames, so everything
// behind the queue is full and the queue has to drop. Every frame is either
// delivered or counted as dropped where it happened; the queue keeps the
// newest (leaky=downstream drops the oldest), so what arrives is the few
// frames already past the queue when it filled, then the last max-size
// frames of the stream, in order: latency bounded by what the queues hold.
// Buffers are recycled rather than piling up.
static void test_leaky_queue_bounds_latency(void **state)
{
    (void)state;
    const int frames = 200, max_size = 4, queue_size = 2;
    reel_buffer_stats before = reel_buffer_get_stats();
    reel_buffer_reset_peak();
    char *text = g_strdup_printf("testsrc num-buffers=%d ! video/raw,width=32,height=24 "
                                 "! queue name=q max-size=%d leaky=downstream ! appsink name=out max-buffers=1",
                                 frames, max_size);
    reel_pipeline *p = build(text, queue_size);
    g_free(text);
    GError *err = NULL;
    if (reel_pipeline_start(p, &err) < 0)
        fail_msg("start: %s", err->message);
    wait_sent(p, "testsrc0", frames);
    GArray *got = pull_frames(p);
    if (reel_pipeline_wait(p, &err) < 0)
        fail_msg("run: %s", err->message);

    reel_element_report q = reel_test_report_of(p, "q");
    assert_int_equal(reel_element_input_dropped(reel_pipeline_find(p, "q"), 0), q.dropped);
    assert_int_equal((int64_t)got->len + q.dropped, frames);
    // Past the queue: the appsink's buffer, the link after the queue, and
    // one in each element's hands.
    int past = 1 + queue_size + 2;
    if ((int)got->len > past + max_size)
        fail_msg("%u frames delivered, more than the %d the queues hold", got->len, past + max_size);
    for (guint i = 1; i < got->len; i++)
        assert_true(g_array_index(got, int64_t, i) > g_array_index(got, int64_t, i - 1));
    for (int i = 0; i < max_size; i++)
        assert_int_equal(g_array_index(got, int64_t, got->len - max_size + i), frames - max_size + i);
    g_array_free(got, TRUE);

    reel_buffer_stats during = reel_buffer_get_stats();
    assert_true(during.allocated - before.allocated < 32); // recycled, not one per frame
    assert_true(during.peak_live - before.live < 32);
    reel_pipeline_destroy(&p);
    assert_int_equal(reel_buffer_get_stats().live, before.live);
}

// A pipeline's latency bound: a leaky queue with room for every frame still
// passes none captured longer ago than the bound. A live source's frame k
// is captured when it is due, k * 5 ms after the first, so once the source
// has sent 100 frames (the application holding the appsink meanwhile) every
// frame older than 60 ms at that moment (k < 100 - 13) is stale when its
// turn comes: only those already past the queue may arrive; the stale ones
// count as the queue's drops.
static void test_latency_bound(void **state)
{
    (void)state;
    const int frames = 100, queue_size = 2, latency_ms = 60;
    reel_pipeline *p = build_live("testsrc is-live=true framerate=200 num-buffers=100 ! video/raw,width=32,height=24 "
                                  "! queue name=q max-size=256 leaky=downstream ! appsink name=out max-buffers=1",
                                  queue_size, latency_ms);
    GError *err = NULL;
    if (reel_pipeline_start(p, &err) < 0)
        fail_msg("start: %s", err->message);
    wait_sent(p, "testsrc0", frames);
    GArray *got = pull_frames(p);
    if (reel_pipeline_wait(p, &err) < 0)
        fail_msg("run: %s", err->message);

    reel_element_report q = reel_test_report_of(p, "q");
    assert_int_equal((int64_t)got->len + q.dropped, frames);
    int past = 1 + queue_size + 2, stale = frames - latency_ms / 5 - 1, early = 0;
    for (guint i = 0; i < got->len; i++)
        early += g_array_index(got, int64_t, i) < stale;
    if (early > past)
        fail_msg("%d frames captured over %d ms before they left the queue were delivered", early, latency_ms);
    assert_true(q.dropped >= stale - past);
    g_array_free(got, TRUE);
    reel_pipeline_destroy(&p);
}

// rate fps=5 on a 25 fps stream keeps every fifth frame, 200 ms apart.
static void test_rate_samples(void **state)
{
    (void)state;
    char *path = temp_path("frames.txt");
    char *text = g_strdup_printf("testsrc framerate=25 num-buffers=100 ! video/raw,width=16,height=16 "
                                 "! rate name=r fps=5 ! fakesink location=%s",
                                 path);
    reel_pipeline *p = build(text, 0);
    g_free(text);
    run_ok(p);
    const reel_caps *f = reel_element_output_format(reel_pipeline_find(p, "r"), 0);
    assert_int_equal(f->framerate.num, 5);
    assert_int_equal(f->framerate.den, 1);

    char *lines = NULL;
    assert_true(g_file_get_contents(path, &lines, NULL, NULL));
    gchar **rows = g_strsplit(lines, "\n", -1);
    int n = 0;
    for (; rows[n] && *rows[n]; n++) {
        long long frame, pts;
        assert_int_equal(sscanf(rows[n], "%lld %lld", &frame, &pts), 2);
        assert_int_equal(pts, 5 * n); // time base 1/25: 200 ms apart
        assert_int_equal(frame, 5 * n);
    }
    assert_int_equal(n, 20);
    reel_element_report r = reel_test_report_of(p, "r");
    assert_int_equal(r.buffers_in, 100);
    assert_int_equal(r.buffers_out, 20);
    g_strfreev(rows);
    g_free(lines);
    remove_with_dir(path);
    g_free(path);
    reel_pipeline_destroy(&p);
}

// Four testsrc streams of different lengths through one batch, one infer
// of batch 4 and unbatch: each metasink file holds its stream's frames
// only, in order, with its stream id.
static void four_streams_batched(bool live)
{
    const char *models = getenv("REEL_TEST_MODELS");
    char *model = g_build_filename(models ? models : "models", "conv_bn_relu.onnx", NULL);
    if (!g_file_test(model, G_FILE_TEST_EXISTS)) {
        g_free(model);
        reel_skip("no conv_bn_relu.onnx: the generated models need python3 with onnx");
    }
    const int counts[4] = { 12, 9, 7, 5 };
    char *dir = g_dir_make_tmp("reel-batch-XXXXXX", NULL);
    GString *t = g_string_new(NULL);
    g_string_append_printf(t, "batch name=b size=4 max-wait-ms=50 ! preprocess size=8x8 "
                              "! infer name=inf model=%s batch=4 max-wait-ms=50 ! unbatch name=u\n", model);
    for (int i = 0; i < 4; i++)
        g_string_append_printf(t, "testsrc num-buffers=%d pattern=noise %s ! video/raw,width=40,height=30 ! b.\n",
                               counts[i], live ? "is-live=true framerate=100" : "");
    for (int i = 0; i < 4; i++)
        g_string_append_printf(t, "u. ! metasink location=%s/s%d.jsonl\n", dir, i);
    reel_pipeline *p = build(t->str, 0);
    g_string_free(t, TRUE);
    run_ok(p);
    assert_int_equal(reel_test_report_of(p, "inf").buffers_out, 12 + 9 + 7 + 5);

    for (int i = 0; i < 4; i++) {
        char *path = g_strdup_printf("%s/s%d.jsonl", dir, i);
        char *lines = NULL;
        assert_true(g_file_get_contents(path, &lines, NULL, NULL));
        gchar **rows = g_strsplit(lines, "\n", -1);
        int n = 0;
        for (; rows[n] && *rows[n]; n++) {
            int stream = -1;
            long long frame = -1;
            assert_int_equal(sscanf(rows[n], "{\"stream\": %d, \"frame\": %lld", &stream, &frame), 2);
            assert_int_equal(stream, i);
            assert_int_equal(frame, n);
        }
        assert_int_equal(n, counts[i]);
        g_strfreev(rows);
        g_free(lines);
        g_unlink(path);
        g_free(path);
    }
    g_rmdir(dir);
    g_free(dir);
    g_free(model);
    reel_pipeline_destroy(&p);
}

static void test_four_streams_batched(void **state)
{
    (void)state;
    four_streams_batched(false);
}

// Live sources stamp their capture time themselves: stream ids still apply.
static void test_four_live_streams_batched(void **state)
{
    (void)state;
    four_streams_batched(true);
}

// Decoded frames keep their source's stream id and capture time: two
// sources of one clip, decoded, merged and split again.
static void test_decoded_streams(void **state)
{
    (void)state;
    const char *clips = getenv("REEL_CLIPS");
    char *clip = g_build_filename(clips ? clips : "clips", "h264.mp4", NULL);
    if (!g_file_test(clip, G_FILE_TEST_EXISTS)) {
        g_free(clip);
        reel_skip("no h264.mp4: the clips come from tests/media/make-clips.sh");
    }
    char *dir = g_dir_make_tmp("reel-decoded-XXXXXX", NULL);
    char *text = g_strdup_printf("batch name=b ! unbatch name=u  source location=%s ! decode ! b.  "
                                 "source location=%s ! decode ! b.  u. ! metasink name=m0 location=%s/a.jsonl  "
                                 "u. ! metasink name=m1 location=%s/b.jsonl",
                                 clip, clip, dir, dir);
    reel_pipeline *p = build(text, 0);
    g_free(text);
    run_ok(p);
    for (int i = 0; i < 2; i++) {
        char *path = g_strdup_printf("%s/%s.jsonl", dir, i ? "b" : "a");
        char *lines = NULL;
        assert_true(g_file_get_contents(path, &lines, NULL, NULL));
        gchar **rows = g_strsplit(lines, "\n", -1);
        int n = 0;
        for (; rows[n] && *rows[n]; n++) {
            int stream = -1;
            assert_int_equal(sscanf(rows[n], "{\"stream\": %d,", &stream), 1);
            assert_int_equal(stream, i);
        }
        reel_element_report r = reel_test_report_of(p, i ? "m1" : "m0");
        assert_true(n > 10);
        assert_int_equal(r.latency_frames, n);
        assert_true(r.latency_p50_ms > 0 && r.latency_p50_ms <= r.latency_max_ms);
        g_strfreev(rows);
        g_free(lines);
        g_unlink(path);
        g_free(path);
    }
    g_rmdir(dir);
    g_free(dir);
    g_free(clip);
    reel_pipeline_destroy(&p);
}

// A source's stream id can be set; a frame of a stream without an output
// is an error naming unbatch.
static void test_stream_id_property(void **state)
{
    (void)state;
    reel_pipeline *p = build("testsrc num-buffers=3 stream-id=5 ! video/raw,width=8,height=8 ! unbatch name=u "
                             "u. ! fakesink  u. ! fakesink",
                             0);
    char *v = reel_element_get(reel_pipeline_find(p, "testsrc0"), "stream-id");
    assert_string_equal(v, "5");
    g_free(v);
    GError *err = NULL;
    assert_true(reel_pipeline_run(p, &err) < 0);
    assert_non_null(strstr(err->message, "u: a frame of stream 5"));
    g_error_free(err);
    reel_pipeline_destroy(&p);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_latency_in_report),
        cmocka_unit_test(test_leaky_queue_bounds_latency),
        cmocka_unit_test(test_latency_bound),
        cmocka_unit_test(test_rate_samples),
        cmocka_unit_test(test_four_streams_batched),
        cmocka_unit_test(test_four_live_streams_batched),
        cmocka_unit_test(test_decoded_streams),
        cmocka_unit_test(test_stream_id_property),
    };
    return reel_run_tests(tests, NULL, NULL);
}

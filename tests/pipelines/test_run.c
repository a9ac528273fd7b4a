// Running pipelines end to end: EOS through fan-out and fan-in, errors,
// backpressure, leaky queues, interruption, live sources.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

// Messages seen during a run.
typedef struct seen {
    GMutex lock;
    int counts[REEL_MESSAGE_TYPE_COUNT];
    GPtrArray *infos;    // texts of INFO messages
    char *first_error_element;
} seen;

static void on_message(const reel_message *msg, void *user)
{
    seen *s = user;
    g_mutex_lock(&s->lock);
    s->counts[msg->type]++;
    if (msg->type == REEL_MESSAGE_INFO)
        g_ptr_array_add(s->infos, g_strdup_printf("%s: %s", msg->element, msg->text));
    if (msg->type == REEL_MESSAGE_ERROR && !s->first_error_element)
        s->first_error_element = g_strdup(msg->element);
    g_mutex_unlock(&s->lock);
}

static void seen_init(seen *s)
{
    memset(s, 0, sizeof *s);
    g_mutex_init(&s->lock);
    s->infos = g_ptr_array_new_with_free_func(g_free);
}

static void seen_clear(seen *s)
{
    g_ptr_array_free(s->infos, TRUE);
    g_free(s->first_error_element);
    g_mutex_clear(&s->lock);
}

static reel_pipeline *build(const char *text, seen *s, int threads)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.threads = threads, .bus_handler = on_message, .bus_user = s), &err);
    if (!p)
        fail_msg("%s", err->message);
    return p;
}

static reel_element_report report_of(reel_pipeline *p, const char *name)
{
    reel_element_report r[64];
    int n = reel_pipeline_report(p, r, 64);
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].name, name) == 0)
            return r[i];
    fail_msg("no element %s", name);
    return r[0];
}

static void run_ok(reel_pipeline *p)
{
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("run failed: %s", err->message);
}

static void test_runs_to_eos(void **state)
{
    (void)state;
    long live0 = reel_buffer_get_stats().live;
    seen s;
    seen_init(&s);
    reel_pipeline *p = build("testsrc num-buffers=50 ! video/raw,width=64,height=48 ! fakesink", &s, 2);
    run_ok(p);
    assert_int_equal(report_of(p, "fakesink0").buffers_in, 50);
    assert_int_equal(report_of(p, "testsrc0").buffers_out, 50);
    assert_int_equal(s.counts[REEL_MESSAGE_EOS], 1);
    assert_int_equal(s.counts[REEL_MESSAGE_ERROR], 0);
    // Running again starts from the beginning.
    run_ok(p);
    assert_int_equal(report_of(p, "fakesink0").buffers_in, 50);
    reel_pipeline_destroy(&p);
    assert_int_equal(reel_buffer_get_stats().live, live0);
    seen_clear(&s);
}

// The INFO line of a checksumming fakesink, "NAME: N buffers, md5 X".
static char *checksum_of(const char *text)
{
    seen s;
    seen_init(&s);
    reel_pipeline *p = build(text, &s, 2);
    run_ok(p);
    reel_pipeline_destroy(&p);
    assert_int_equal(s.infos->len, 1);
    char *line = g_strdup(s.infos->pdata[0]);
    seen_clear(&s);
    return line;
}

static void test_checksums_are_deterministic(void **state)
{
    (void)state;
    const char *formats[] = { "rgb24", "yuv420p", "nv12", "gray8", "bgra", "yuv444p" };
    for (size_t i = 0; i < G_N_ELEMENTS(formats); i++) {
        char *text = g_strdup_printf("testsrc num-buffers=20 pattern=noise ! video/raw,format=%s,width=33,height=17 "
                                     "! queue ! fakesink checksum=true",
                                     formats[i]);
        char *a = checksum_of(text), *b = checksum_of(text);
        assert_string_equal(a, b);
        assert_non_null(strstr(a, "20 buffers, md5 "));
        g_free(a);
        g_free(b);
        g_free(text);
    }
    char *bars = checksum_of("testsrc num-buffers=5 ! fakesink checksum=true");
    char *grad = checksum_of("testsrc num-buffers=5 pattern=gradient ! fakesink checksum=true");
    assert_string_not_equal(bars, grad);
    g_free(bars);
    g_free(grad);
}

static void test_eos_through_tee(void **state)
{
    (void)state;
    long live0 = reel_buffer_get_stats().live;
    seen s;
    seen_init(&s);
    reel_pipeline *p = build("testsrc num-buffers=100 ! video/raw,width=16,height=16 ! tee name=t "
                             "t. ! queue ! fakesink name=a  t. ! queue max-size=2 ! fakesink name=b "
                             "t. ! fakesink name=c delay-us=100",
                             &s, 2);
    run_ok(p);
    assert_int_equal(report_of(p, "a").buffers_in, 100);
    assert_int_equal(report_of(p, "b").buffers_in, 100);
    assert_int_equal(report_of(p, "c").buffers_in, 100);
    assert_int_equal(report_of(p, "t").buffers_out, 300);
    reel_pipeline_destroy(&p);
    assert_int_equal(reel_buffer_get_stats().live, live0);
    seen_clear(&s);
}

static void test_eos_through_fan_in(void **state)
{
    (void)state;
    seen s;
    seen_init(&s);
    // EOS reaches the sink only after both inputs have ended, so every
    // buffer of the longer branch arrives.
    reel_pipeline *p = build("funnel name=m ! fakesink "
                             "testsrc num-buffers=10 ! video/raw,width=8,height=8 ! m. "
                             "testsrc num-buffers=200 ! video/raw,width=8,height=8 ! identity sleep-us=50 ! m.",
                             &s, 2);
    run_ok(p);
    assert_int_equal(report_of(p, "fakesink0").buffers_in, 210);
    reel_pipeline_destroy(&p);
    seen_clear(&s);
}

static void test_first_error_stops_everything(void **state)
{
    (void)state;
    long live0 = reel_buffer_get_stats().live;
    seen s;
    seen_init(&s);
    reel_pipeline *p = build("testsrc ! tee name=t t. ! queue ! identity error-after=10 ! fakesink "
                             "t. ! queue ! fakesink",
                             &s, 2);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_run(p, &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "identity0: failing on buffer 10"));
    g_error_free(err);
    assert_int_equal(s.counts[REEL_MESSAGE_ERROR], 1);
    assert_string_equal(s.first_error_element, "identity0");
    assert_int_equal(s.counts[REEL_MESSAGE_EOS], 0);
    // The failing element saw exactly 11 buffers and passed on 10.
    assert_int_equal(report_of(p, "identity0").buffers_out, 10);
    reel_pipeline_destroy(&p);
    assert_int_equal(reel_buffer_get_stats().live, live0);
    seen_clear(&s);
}

static void test_backpressure_bounds_memory(void **state)
{
    (void)state;
    seen s;
    seen_init(&s);
    // The source is far faster than the sink; without backpressure all 300
    // frames would be alive at once.
    reel_pipeline *p = build("testsrc num-buffers=300 ! video/raw,width=32,height=32 ! queue max-size=4 "
                             "! fakesink delay-us=300",
                             &s, 2);
    reel_buffer_reset_peak();
    long live0 = reel_buffer_get_stats().live;
    run_ok(p);
    long peak = reel_buffer_get_stats().peak_live - live0;
    // Links: testsrc→capsfilter (8), capsfilter→queue (4, queue's max-size),
    // queue→fakesink (8); plus one buffer in the hands of each of the four
    // elements and one pushed past each full link.
    assert_true(peak > 0);
    assert_true(peak <= 8 + 4 + 8 + 4 + 3);
    assert_int_equal(report_of(p, "fakesink0").buffers_in, 300);
    reel_pipeline_destroy(&p);
    seen_clear(&s);
}

static void test_leaky_queue_drops_and_counts(void **state)
{
    (void)state;
    seen s;
    seen_init(&s);
    reel_pipeline *p = build("testsrc num-buffers=300 ! video/raw,width=32,height=32 "
                             "! queue max-size=2 leaky=downstream ! fakesink delay-us=500",
                             &s, 2);
    run_ok(p);
    reel_element_report q = report_of(p, "queue0"), sink = report_of(p, "fakesink0");
    assert_true(q.dropped > 0);
    assert_int_equal(q.dropped + q.buffers_in, 300);
    assert_int_equal(sink.buffers_in, q.buffers_out);
    reel_pipeline_destroy(&p);
    seen_clear(&s);
}

static int count_lines(const char *path, bool *whole)
{
    char *text = NULL;
    size_t len = 0;
    assert_true(g_file_get_contents(path, &text, &len, NULL));
    int n = 0;
    for (size_t i = 0; i < len; i++)
        n += text[i] == '\n';
    *whole = len == 0 || text[len - 1] == '\n';
    g_free(text);
    return n;
}

static void test_send_eos_drains_and_finalizes(void **state)
{
    (void)state;
    char *path = g_build_filename(g_get_tmp_dir(), "reel-test-eos.txt", NULL);
    char *text = g_strdup_printf("testsrc is-live=true framerate=500 ! video/raw,width=16,height=16 ! queue "
                                 "! fakesink location=%s",
                                 path);
    seen s;
    seen_init(&s);
    reel_pipeline *p = build(text, &s, 2);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_start(p, &err), 0);
    g_usleep(100000);
    reel_pipeline_send_eos(p);
    assert_int_equal(reel_pipeline_wait(p, &err), 0);
    int64_t frames = report_of(p, "fakesink0").buffers_in;
    assert_true(frames > 0);
    // Every frame that reached the sink is in the file, on a whole line.
    bool whole;
    assert_int_equal(count_lines(path, &whole), frames);
    assert_true(whole);
    assert_int_equal(s.counts[REEL_MESSAGE_EOS], 1);
    reel_pipeline_destroy(&p);
    unlink(path);
    g_free(path);
    g_free(text);
    seen_clear(&s);
}

static void test_abort_stops(void **state)
{
    (void)state;
    long live0 = reel_buffer_get_stats().live;
    seen s;
    seen_init(&s);
    reel_pipeline *p = build("testsrc ! video/raw,width=16,height=16 ! queue ! fakesink delay-us=100", &s, 2);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_start(p, &err), 0);
    g_usleep(20000);
    reel_pipeline_abort(p);
    assert_int_equal(reel_pipeline_wait(p, &err), REEL_ESTOPPED);
    g_error_free(err);
    reel_pipeline_destroy(&p);
    assert_int_equal(reel_buffer_get_stats().live, live0);
    seen_clear(&s);
}

static void test_many_branches_one_thread(void **state)
{
    (void)state;
    // 16 branches and 50 elements on a single worker: the pool, not a
    // thread per element, runs them.
    GString *text = g_string_new("testsrc num-buffers=200 ! video/raw,width=8,height=8 ! tee name=t ");
    for (int i = 0; i < 16; i++)
        g_string_append_printf(text, "t. ! queue ! identity ! fakesink name=s%d ", i);
    seen s;
    seen_init(&s);
    reel_pipeline *p = build(text->str, &s, 1);
    run_ok(p);
    for (int i = 0; i < 16; i++) {
        char name[8];
        snprintf(name, sizeof name, "s%d", i);
        assert_int_equal(report_of(p, name).buffers_in, 200);
    }
    reel_pipeline_destroy(&p);
    g_string_free(text, TRUE);
    seen_clear(&s);
}

static void test_start_failure_is_reported(void **state)
{
    (void)state;
    seen s;
    seen_init(&s);
    reel_pipeline *p = build("testsrc num-buffers=1 ! fakesink location=/nonexistent-dir/x.txt", &s, 1);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_run(p, &err), REEL_EIO);
    assert_non_null(strstr(err->message, "fakesink0: cannot write '/nonexistent-dir/x.txt'"));
    g_error_free(err);
    reel_pipeline_destroy(&p);
    seen_clear(&s);
}

static void test_stats_while_waiting(void **state)
{
    (void)state;
    seen s;
    seen_init(&s);
    GError *err = NULL;
    // Paced to 100 fps, 30 frames last at least 0.29 s: several 50 ms periods.
    reel_pipeline *p = reel_parse_launch("testsrc is-live=true framerate=100 num-buffers=30 ! fakesink", NULL,
                                         reel_pipeline_params(.stats_interval_ms = 50, .bus_handler = on_message,
                                                              .bus_user = &s),
                                         &err);
    assert_non_null(p);
    run_ok(p);
    assert_true(s.counts[REEL_MESSAGE_STATS] >= 1);
    assert_int_equal(report_of(p, "fakesink0").buffers_in, 30);
    reel_pipeline_destroy(&p);
    seen_clear(&s);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_to_eos),
        cmocka_unit_test(test_checksums_are_deterministic),
        cmocka_unit_test(test_eos_through_tee),
        cmocka_unit_test(test_eos_through_fan_in),
        cmocka_unit_test(test_first_error_stops_everything),
        cmocka_unit_test(test_backpressure_bounds_memory),
        cmocka_unit_test(test_leaky_queue_drops_and_counts),
        cmocka_unit_test(test_send_eos_drains_and_finalizes),
        cmocka_unit_test(test_abort_stops),
        cmocka_unit_test(test_many_branches_one_thread),
        cmocka_unit_test(test_start_failure_is_reported),
        cmocka_unit_test(test_stats_while_waiting),
    };
    return reel_run_tests(tests, NULL, NULL);
}

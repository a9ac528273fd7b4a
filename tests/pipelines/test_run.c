// Running pipelines end to end: EOS through fan-out and fan-in, errors,
// backpressure, leaky queues, interruption, live sources.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"
#include "tests/support/pipeline.h"

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

static void run_ok(reel_pipeline *p)
{
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("run failed: %s", err->message);
}

// Waits, up to a minute, until element `name` of a running pipeline has
// taken in at least n buffers.
static void wait_for_buffers(reel_pipeline *p, const char *name, int64_t n)
{
    int64_t deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (reel_test_report_of(p, name).buffers_in < n) {
        if (g_get_monotonic_time() > deadline)
            fail_msg("%s took in fewer than %lld buffers in 60 s", name, (long long)n);
        g_usleep(1000);
    }
}

static void test_runs_to_eos(void **state)
{
    (void)state;
    long live0 = reel_buffer_get_stats().live;
    seen s;
    seen_init(&s);
    reel_pipeline *p = build("testsrc num-buffers=50 ! video/raw,width=64,height=48 ! fakesink", &s, 2);
    run_ok(p);
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 50);
    assert_int_equal(reel_test_report_of(p, "testsrc0").buffers_out, 50);
    assert_int_equal(s.counts[REEL_MESSAGE_EOS], 1);
    assert_int_equal(s.counts[REEL_MESSAGE_ERROR], 0);
    // Running again starts from the beginning.
    run_ok(p);
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 50);
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

// ---- testsrc's patterns, drawn by the test itself
//
// Frame n, pixel (x, y) of a w x h frame, in RGB:
//   bars      eight bars of 235/16 levels (white, yellow, cyan, green,
//             magenta, red, blue, black) scrolling left a pixel a frame
//   gradient  R = 255x/(w-1), G = 255(y+n)/(h-1), B = 128+n (integer
//             division, each kept to its low 8 bits): moving down
//   checkers  8x8 squares of 235 and 16, moving left a pixel a frame
//   solid     colour 0xRRGGBB times k/255, k = 128 + n mod 128
// Converted as testsrc documents: BT.601 limited range for yuv (the
// textbook Y = 16 + 219 v/255 for grey v, chroma 128), gray8 = grey level.

static void pattern_rgb(const char *pattern, int n, int x, int y, int w, int h, uint8_t rgb[3])
{
    static const uint8_t bars[8][3] = { { 235, 235, 235 }, { 235, 235, 16 }, { 16, 235, 235 }, { 16, 235, 16 },
                                        { 235, 16, 235 },  { 235, 16, 16 },  { 16, 16, 235 },  { 16, 16, 16 } };
    if (strcmp(pattern, "bars") == 0) {
        memcpy(rgb, bars[(x + n) % w * 8 / w], 3);
    } else if (strcmp(pattern, "gradient") == 0) {
        rgb[0] = (uint8_t)(x * 255 / (w - 1));
        rgb[1] = (uint8_t)((y + n) * 255 / (h - 1));
        rgb[2] = (uint8_t)(128 + n);
    } else if (strcmp(pattern, "checkers") == 0) {
        rgb[0] = rgb[1] = rgb[2] = ((x + n) / 8 + y / 8) % 2 ? 235 : 16;
    } else {
        const uint32_t color = 0x3070c0; // testsrc's default
        int k = 128 + n % 128;
        rgb[0] = (uint8_t)((color >> 16) * k / 255);
        rgb[1] = (uint8_t)((color >> 8 & 0xff) * k / 255);
        rgb[2] = (uint8_t)((color & 0xff) * k / 255);
    }
}

// The md5 fakesink checksum=true reports for n frames: every frame's
// visible bytes, plane by plane, row by row. Formats: rgb24, bgr24, rgba,
// bgra (any pattern); gray8, yuv420p, nv12, yuv444p (grey patterns only).
static char *expected_md5(const char *pattern, const char *format, int frames, int w, int h)
{
    GChecksum *md5 = g_checksum_new(G_CHECKSUM_MD5);
    GByteArray *row = g_byte_array_new();
    bool packed = g_str_has_prefix(format, "rgb") || g_str_has_prefix(format, "bgr");
    bool yuv = !packed && strcmp(format, "gray8") != 0;
    int sub = strcmp(format, "yuv444p") == 0 ? 0 : 1; // log2 chroma subsampling, both ways
    for (int n = 0; n < frames; n++) {
        // Luma (or the packed pixels), then chroma.
        for (int y = 0; y < h; y++) {
            g_byte_array_set_size(row, 0);
            for (int x = 0; x < w; x++) {
                uint8_t p[4];
                pattern_rgb(pattern, n, x, y, w, h, p);
                if (packed) {
                    uint8_t px[4] = { p[0], p[1], p[2], 255 };
                    if (format[0] == 'b')
                        px[0] = p[2], px[2] = p[0];
                    g_byte_array_append(row, px, strlen(format) == 4 ? 4 : 3);
                } else {
                    assert_true(p[0] == p[1] && p[1] == p[2]); // grey
                    uint8_t v = yuv ? (uint8_t)lround(16 + 219.0 * p[0] / 255) : p[0];
                    g_byte_array_append(row, &v, 1);
                }
            }
            g_checksum_update(md5, row->data, row->len);
        }
        if (!yuv)
            continue;
        // Grey has no colour: every chroma sample is 128, as one
        // interleaved plane (nv12) or two.
        int cw = (w + (1 << sub) - 1) >> sub, ch = (h + (1 << sub) - 1) >> sub;
        bool nv12 = strcmp(format, "nv12") == 0;
        g_byte_array_set_size(row, (guint)(nv12 ? 2 * cw : cw));
        memset(row->data, 128, row->len);
        for (int plane = 0; plane < (nv12 ? 1 : 2); plane++)
            for (int y = 0; y < ch; y++)
                g_checksum_update(md5, row->data, row->len);
    }
    char *r = g_strdup(g_checksum_get_string(md5));
    g_checksum_free(md5);
    g_byte_array_free(row, TRUE);
    return r;
}

// fakesink's checksums match frames the test drew itself from the
// patterns' definitions, in every format, at an odd size (chroma rounds up).
static void test_checksums_match_the_patterns(void **state)
{
    (void)state;
    static const struct {
        const char *pattern, *format;
    } cases[] = {
        { "checkers", "rgb24" }, { "checkers", "gray8" }, { "checkers", "yuv420p" }, { "checkers", "nv12" },
        { "checkers", "yuv444p" }, { "bars", "rgb24" },   { "bars", "bgra" },        { "gradient", "rgb24" },
        { "gradient", "bgr24" },   { "solid", "rgba" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *text = g_strdup_printf("testsrc num-buffers=20 pattern=%s ! video/raw,format=%s,width=33,height=17 "
                                     "! queue ! fakesink checksum=true",
                                     cases[i].pattern, cases[i].format);
        char *got = checksum_of(text);
        char *md5 = expected_md5(cases[i].pattern, cases[i].format, 20, 33, 17);
        char *want = g_strdup_printf("fakesink0: 20 buffers, md5 %s", md5);
        if (strcmp(got, want) != 0)
            fail_msg("%s %s: got '%s', want '%s'", cases[i].pattern, cases[i].format, got, want);
        g_free(want);
        g_free(md5);
        g_free(got);
        g_free(text);
    }
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
    assert_int_equal(reel_test_report_of(p, "a").buffers_in, 100);
    assert_int_equal(reel_test_report_of(p, "b").buffers_in, 100);
    assert_int_equal(reel_test_report_of(p, "c").buffers_in, 100);
    assert_int_equal(reel_test_report_of(p, "t").buffers_out, 300);
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
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 210);
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
    assert_int_equal(reel_test_report_of(p, "identity0").buffers_out, 10);
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
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 300);
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
    reel_element_report q = reel_test_report_of(p, "queue0"), sink = reel_test_report_of(p, "fakesink0");
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
    wait_for_buffers(p, "fakesink0", 10);
    reel_pipeline_send_eos(p);
    assert_int_equal(reel_pipeline_wait(p, &err), 0);
    int64_t frames = reel_test_report_of(p, "fakesink0").buffers_in;
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
    wait_for_buffers(p, "fakesink0", 1); // running, mid-stream
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
        assert_int_equal(reel_test_report_of(p, name).buffers_in, 200);
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
    assert_int_equal(reel_test_report_of(p, "fakesink0").buffers_in, 30);
    reel_pipeline_destroy(&p);
    seen_clear(&s);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_to_eos),
        cmocka_unit_test(test_checksums_match_the_patterns),
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

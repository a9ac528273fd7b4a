// Dynamic graphs: branches added to and removed from a running pipeline
// (reel_pipeline_add_branch, reel_pipeline_remove_branch). Two live test
// sources run through batch ! identity ! unbatch into sinks that write a
// line per frame; cameras come and go beside them. The static streams must
// get every frame their source made, in order, exactly once; the added
// stream's frames reach its own sink and its sink finalizes when it goes.
// Errors leave the run going. A source whose input is not there at the
// start waits aside and joins once it is. Every wait is for an event, with
// a deadline.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "reel/reel.h"
#include "tests/support/pipeline.h"

#define DEADLINE_US (60 * G_USEC_PER_SEC)
#define FRAME "is-live=true framerate=400 width=32 height=24 format=rgb24"

static char *tmp_dir;

static char *path_of(const char *name)
{
    return g_build_filename(tmp_dir, name, NULL);
}

// Two streams through one batch; sinks k0 and k1 write a line per frame.
static reel_pipeline *start_two(void)
{
    char *k0 = path_of("k0.txt"), *k1 = path_of("k1.txt");
    char *text = g_strdup_printf("testsrc name=s0 " FRAME " ! b.\n"
                                 "testsrc name=s1 pattern=noise " FRAME " ! b.\n"
                                 "batch name=b ! identity ! unbatch name=u\n"
                                 "u. ! queue ! fakesink name=k0 location=%s\n"
                                 "u. ! queue ! fakesink name=k1 location=%s\n",
                                 k0, k1);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.threads = 2, .queue_size = 4, .stats_interval_ms = -1), &err);
    if (!p)
        fail_msg("%s", err->message);
    g_free(text);
    g_free(k0);
    g_free(k1);
    reel_test_start(p);
    return p;
}

// Buffers `name` has taken in (sources: made), or -1 when it is not there.
static int64_t count(reel_pipeline *p, const char *name, bool out)
{
    enum { MAX = 256 };
    reel_element_report r[MAX];
    int64_t n = -1;
    reel_pipeline_lock_graph(p);
    int len = reel_pipeline_report(p, r, MAX);
    for (int i = 0; i < len && i < MAX; i++)
        if (strcmp(r[i].name, name) == 0)
            n = out ? r[i].buffers_out : r[i].buffers_in;
    reel_pipeline_unlock_graph(p);
    return n;
}

static void wait_frames(reel_pipeline *p, const char *sink, int64_t n)
{
    int64_t until = g_get_monotonic_time() + DEADLINE_US;
    while (count(p, sink, false) < n) {
        if (g_get_monotonic_time() > until)
            fail_msg("'%s' got %" G_GINT64_FORMAT " frames, not %" G_GINT64_FORMAT " in time", sink,
                     count(p, sink, false), n);
        g_usleep(2000);
    }
}

static char **add_ok(reel_pipeline *p, const char *text, const char *const *values)
{
    GError *err = NULL;
    char **names = reel_pipeline_add_branch(p, text, values, &err);
    if (!names)
        fail_msg("adding '%s': %s", text, err->message);
    return names;
}

static void remove_ok(reel_pipeline *p, char **names)
{
    GError *err = NULL;
    if (reel_pipeline_remove_branch(p, (const char *const *)names, &err) != 0)
        fail_msg("removing: %s", err->message);
}

// The lines of a sink's file: frame numbers 0, 1, 2, ... each once, each
// line whole. Returns how many.
static int64_t check_frames_in_order(const char *name)
{
    char *path = path_of(name), *text = NULL;
    gsize len = 0;
    assert_true(g_file_get_contents(path, &text, &len, NULL));
    assert_true(len > 0);
    assert_int_equal(text[len - 1], '\n');
    char **lines = g_strsplit(text, "\n", -1);
    int64_t n = 0;
    for (char **l = lines; *l && **l; l++, n++) {
        long long frame = -1;
        if (sscanf(*l, "%lld", &frame) != 1 || frame != n)
            fail_msg("%s: line %" G_GINT64_FORMAT " is '%s', not frame %" G_GINT64_FORMAT, name, n + 1, *l, n);
    }
    g_strfreev(lines);
    g_free(text);
    g_free(path);
    return n;
}

// Ends the run and checks that each static stream lost no frame.
static void end_and_check(reel_pipeline *p)
{
    reel_pipeline_send_eos(p);
    reel_test_wait(p);
    for (int k = 0; k < 2; k++) {
        char src[8], sink[8], file[16];
        g_snprintf(src, sizeof src, "s%d", k);
        g_snprintf(sink, sizeof sink, "k%d", k);
        g_snprintf(file, sizeof file, "k%d.txt", k);
        int64_t made = count(p, src, true);
        assert_true(made > 0);
        assert_int_equal(count(p, sink, false), made);
        assert_int_equal(check_frames_in_order(file), made);
    }
}

// A camera joins: its frames reach its own sink (unbatch routes its new
// stream there); it leaves: its sink finalizes, the others lose nothing.
static void test_add_and_remove(void **state)
{
    (void)state;
    reel_pipeline *p = start_two();
    wait_frames(p, "k0", 20);
    char *k2 = path_of("k2.txt");
    const char *values[] = { "file", k2, NULL };
    char **names = add_ok(p, "testsrc name=s2 pattern=checkers " FRAME " ! b.\n"
                             "u. ! queue ! fakesink name=k2 location={file}",
                          values);
    assert_true(g_strv_length(names) >= 3); // s2, queue, k2
    assert_true(g_strv_contains((const char *const *)names, "s2"));
    assert_true(g_strv_contains((const char *const *)names, "k2"));
    wait_frames(p, "k2", 30);
    int64_t k0_before = count(p, "k0", false);
    remove_ok(p, names);
    assert_int_equal(count(p, "s2", true), -1); // gone from the graph
    assert_int_equal(count(p, "k2", false), -1);
    assert_true(check_frames_in_order("k2.txt") >= 30); // finalized: whole lines, in order
    wait_frames(p, "k0", k0_before + 20); // the others go on
    end_and_check(p);
    g_strfreev(names);
    g_free(k2);
    reel_pipeline_destroy(&p);
}

// Cameras come and go many times while the two run.
static void test_many_changes(void **state)
{
    (void)state;
    reel_pipeline *p = start_two();
    for (int round = 0; round < 8; round++) {
        char **a = add_ok(p, "testsrc " FRAME " ! b.  u. ! fakesink name=ka", NULL);
        char **b = add_ok(p, "testsrc pattern=gradient " FRAME " ! queue ! b.  u. ! queue ! fakesink name=kb", NULL);
        wait_frames(p, "ka", 3);
        wait_frames(p, "kb", 3);
        remove_ok(p, round % 2 ? a : b);
        remove_ok(p, round % 2 ? b : a);
        g_strfreev(a);
        g_strfreev(b);
    }
    end_and_check(p);
    reel_pipeline_destroy(&p);
}

static void add_fails(reel_pipeline *p, const char *text, const char *want)
{
    GError *err = NULL;
    char **names = reel_pipeline_add_branch(p, text, NULL, &err);
    assert_null(names);
    assert_non_null(err);
    if (!strstr(err->message, want))
        fail_msg("adding '%s' said '%s', not '%s'", text, err->message, want);
    g_error_free(err);
}

static void remove_fails(reel_pipeline *p, const char *const *names, const char *want)
{
    GError *err = NULL;
    assert_int_equal(reel_pipeline_remove_branch(p, names, &err), REEL_EINVAL);
    if (!strstr(err->message, want))
        fail_msg("removing said '%s', not '%s'", err->message, want);
    g_error_free(err);
}

// Bad branches are refused with what is wrong; the run goes on and a good
// branch joins afterwards.
static void test_errors(void **state)
{
    (void)state;
    reel_pipeline *p = start_two();
    add_fails(p, "testsrc ! fakesnk", "branch:1:11: error: unknown element 'fakesnk'");
    add_fails(p, "device=cpu testsrc ! b.", "a branch takes no pipeline settings");
    add_fails(p, "testsrc ! nobody.", "no element is named 'nobody'");
    add_fails(p, "testsrc name=k0 ! b.", "duplicate element name 'k0'");
    add_fails(p, "source location=/nonexistent/cam.mp4 ! decode ! b.", "/nonexistent/cam.mp4");
    add_fails(p, "testsrc ! identity0.", "identity0");  // its one input is taken
    const char *every_input[] = { "s0", "s1", NULL };
    remove_fails(p, every_input, "holds every input of 'b'");
    const char *unknown[] = { "s0", "nosuch", NULL };
    remove_fails(p, unknown, "cannot remove 'nosuch': no element of that name");
    wait_frames(p, "k1", count(p, "k1", false) + 10); // still running
    char **names = add_ok(p, "testsrc " FRAME " ! b.  u. ! fakesink name=late", NULL);
    wait_frames(p, "late", 5);
    remove_ok(p, names);
    g_strfreev(names);
    end_and_check(p);

    add_fails(p, "testsrc ! b.", "the pipeline has run and is stopped");
    reel_pipeline_destroy(&p);
}

// Before a start, a branch is added as if written in the description.
static void test_before_start(void **state)
{
    (void)state;
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch("testsrc num-buffers=5 ! funnel name=f ! fakesink name=all", NULL,
                                         reel_pipeline_params(.stats_interval_ms = -1), &err);
    assert_non_null(p);
    char **names = add_ok(p, "testsrc num-buffers=7 ! f.", NULL);
    assert_int_equal(g_strv_length(names), 1);
    add_fails(p, "testsrc ! nosuch", "unknown element 'nosuch'");
    assert_int_equal(reel_pipeline_run(p, &err), 0);
    assert_int_equal(count(p, "all", false), 12);
    g_strfreev(names);
    reel_pipeline_destroy(&p);

    // Into a batch: the branch's output of the unbatch takes its source's
    // stream, whatever its pad.
    p = reel_parse_launch("testsrc num-buffers=5 ! b.  batch name=b ! unbatch name=u ! fakesink name=k0", NULL,
                          reel_pipeline_params(.stats_interval_ms = -1), &err);
    assert_non_null(p);
    g_strfreev(add_ok(p, "testsrc num-buffers=7 stream-id=4 ! b.  u. ! fakesink name=k4", NULL));
    g_strfreev(add_ok(p, "testsrc num-buffers=3 ! b.  u. ! fakesink name=k5", NULL)); // the next free id: 5
    assert_int_equal(reel_pipeline_run(p, &err), 0);
    assert_int_equal(count(p, "k0", false), 5);
    assert_int_equal(count(p, "k4", false), 7);
    assert_int_equal(count(p, "k5", false), 3);
    reel_pipeline_destroy(&p);
}

static const reel_element_report *find(const reel_element_report *r, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].name, name) == 0)
            return &r[i];
    fail_msg("'%s' is not in the report", name);
    return NULL;
}

// Whether `name` is in the report waiting, in input state `state`.
static bool waits_in(reel_pipeline *p, const char *name, const char *state)
{
    reel_element_report r[64];
    reel_pipeline_lock_graph(p);
    int n = reel_pipeline_report(p, r, 64);
    const reel_element_report *e = find(r, MIN(n, 64), name);
    bool yes = e->waiting && strcmp(e->input_state, state) == 0;
    reel_pipeline_unlock_graph(p);
    return yes;
}

static void wait_state(reel_pipeline *p, const char *name, const char *state)
{
    int64_t until = g_get_monotonic_time() + DEADLINE_US;
    while (!waits_in(p, name, state)) {
        if (g_get_monotonic_time() > until)
            fail_msg("'%s' is not waiting in state '%s'", name, state);
        g_usleep(2000);
    }
}

// A live input not there at the start: the two static streams run, the
// source tries again and its branch joins once the file appears; another
// with on-failure=drop gives up and never joins. Both are in the report.
static void test_waiting_at_start(void **state)
{
    (void)state;
    char *part = path_of("late.part.mkv"), *late = path_of("late.mkv"), *k0 = path_of("k0.txt"),
         *k1 = path_of("k1.txt"), *k2 = path_of("k2.txt");
    GError *err = NULL;
    char *text = g_strdup_printf("testsrc num-buffers=30 width=32 height=24 ! encode ! sink location=%s", part);
    reel_pipeline *clip = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1), &err);
    assert_non_null(clip);
    assert_int_equal(reel_pipeline_run(clip, &err), 0);
    reel_pipeline_destroy(&clip);
    g_free(text);

    text = g_strdup_printf("testsrc name=s0 " FRAME " ! b.\n"
                           "testsrc name=s1 pattern=noise " FRAME " ! b.\n"
                           "source name=late live=true retry-delay=20 on-failure=drop retry-max=100000 "
                           "location=%s ! decode ! b.\n"
                           "source name=gone live=true retry-delay=1 on-failure=drop retry-max=2 "
                           "location=/nonexistent/gone.mkv ! decode ! b.\n"
                           "batch name=b ! identity ! unbatch name=u\n"
                           "u. ! queue ! fakesink name=k0 location=%s\n"
                           "u. ! queue ! fakesink name=k1 location=%s\n"
                           "u. ! queue ! fakesink name=k2 location=%s\n"
                           "u. ! fakesink name=k3\n",
                           late, k0, k1, k2);
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.threads = 2, .queue_size = 4, .stats_interval_ms = -1), &err);
    if (!p)
        fail_msg("%s", err->message);
    reel_test_start(p);
    wait_state(p, "late", "connecting");
    wait_state(p, "gone", "ended"); // gave up after two attempts
    wait_frames(p, "k0", 30);
    assert_int_equal(count(p, "k2", false), 0);
    assert_int_equal(g_rename(part, late), 0);
    wait_frames(p, "k2", 30); // the clip's frames, through the batch to its own sink
    assert_false(waits_in(p, "late", "live") || waits_in(p, "late", "connecting"));
    wait_frames(p, "k1", count(p, "k1", false) + 20);
    end_and_check(p);
    assert_int_equal(count(p, "k3", false), 0);
    assert_true(waits_in(p, "gone", "ended"));
    char *json = reel_pipeline_report_json(p);
    assert_non_null(strstr(json, "\"name\": \"gone\""));
    assert_non_null(strstr(json, "\"waiting\": true"));
    g_free(json);
    reel_pipeline_destroy(&p);
    g_unlink(late);
    g_free(text);
    g_free(part);
    g_free(late);
    g_free(k0);
    g_free(k1);
    g_free(k2);
}

static int setup(void **state)
{
    (void)state;
    tmp_dir = g_dir_make_tmp("reel-dynamic-XXXXXX", NULL);
    return tmp_dir ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    const char *files[] = { "k0.txt", "k1.txt", "k2.txt" };
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        char *path = path_of(files[i]);
        g_unlink(path);
        g_free(path);
    }
    g_rmdir(tmp_dir);
    g_free(tmp_dir);
    return 0;
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add_and_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_before_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiting_at_start, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

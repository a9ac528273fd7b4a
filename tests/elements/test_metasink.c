// metasink: a real pipeline (testsrc ! a test element attaching detections
// and classifications ! metasink) written as JSON lines and as CSV, each
// line compared with the text the schema in elements/metasink.c promises:
// omitted keys, precision, escaping, null pts, tensors, and errors that name
// the file. tests/cli/test_metasink.sh parses the output with a real JSON
// parser and kills a live run midway.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

static char *dir; // a temporary folder for the outputs

// Frame 1 gets nothing; the others two detections (one with every field,
// one with none of the optional ones) and two classifications. Frame 3 has
// no timestamp.
static int annotate_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    assert_int_equal(reel_buffer_make_writable(&buf), 0);
    if (buf->frame_number == 1)
        return reel_element_push(e, 0, buf);
    if (buf->frame_number == 3)
        buf->pts = REEL_PTS_NONE;
    reel_detections *d = reel_detections_new(2);
    d->items[0] = (reel_detection){ .x0 = 10.25f, .y0 = 30, .x1 = 70.5f, .y1 = 90.004f, .score = 0.8765f,
                                    .class_id = 1, .label = "fa\"ce\\,\tx", .track_id = 12, .n_landmarks = 2,
                                    .landmarks = { { 30, 50 }, { 50.126f, -1.5f } } };
    d->items[1] = (reel_detection){ .x0 = 90, .y0 = 5, .x1 = 150, .y1 = 40, .score = 0.5f, .class_id = -1,
                                    .track_id = -1 };
    reel_buffer_add_meta(buf, &reel_detections_meta, d);
    reel_classifications *c = reel_classifications_new(2);
    c->items[0] = (reel_classification){ .class_id = 3, .score = NAN, .label = "b\xff" "d", .detection = -1 };
    c->items[1] = (reel_classification){ .class_id = 4, .score = 0.75f, .detection = 0 };
    reel_buffer_add_meta(buf, &reel_classifications_meta, c);
    return reel_element_push(e, 0, buf);
}

static const reel_element_class annotate_class = {
    .name = "annotate", .description = "attaches fixed detections and classifications",
    .flags = REEL_CLASS_PASSTHROUGH,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .process = annotate_process,
};

// ---- helpers ----------------------------------------------------------------------

static void run_ok(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1), &err);
    if (!p)
        fail_msg("%s", err->message);
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
}

// Runs `text`, ending in a metasink, with location= a file; returns the
// file's lines.
static char **run_to_lines(const char *text, const char *file)
{
    char *path = g_build_filename(dir, file, NULL);
    char *t = g_strdup_printf("%s location=%s", text, path);
    run_ok(t);
    char *contents;
    assert_true(g_file_get_contents(path, &contents, NULL, NULL));
    // Whole lines only: the last one ends too.
    assert_true(*contents == 0 || g_str_has_suffix(contents, "\n"));
    contents[strlen(contents) - (*contents ? 1 : 0)] = 0;
    char **lines = g_strsplit(contents, "\n", -1);
    g_free(contents);
    g_free(t);
    g_free(path);
    return lines;
}

// The JSON line of a frame that annotate filled.
static char *annotated_json(int frame, const char *pts)
{
    return g_strdup_printf(
        "{\"stream\": 0, \"frame\": %d, \"pts\": %s, \"width\": 64, \"height\": 48, \"detections\": ["
        "{\"box\": [10.250, 30.000, 70.500, 90.004], \"score\": 0.8765, \"class\": 1, \"label\": \"fa\\\"ce\\\\,\\tx\", "
        "\"track\": 12, \"landmarks\": [[30.000, 50.000], [50.126, -1.500]]}, "
        "{\"box\": [90.000, 5.000, 150.000, 40.000], \"score\": 0.5000}], \"classifications\": ["
        "{\"class\": 3, \"label\": \"b\xef\xbf\xbd" "d\", \"score\": null}, "
        "{\"class\": 4, \"score\": 0.7500, \"detection\": 0}]}",
        frame, pts);
}

// ---- tests ------------------------------------------------------------------------

static void test_json_lines(void **state)
{
    (void)state;
    char **lines = run_to_lines("testsrc num-buffers=4 width=64 height=48 ! annotate ! metasink",
                                "out.jsonl");
    assert_int_equal(g_strv_length(lines), 4);
    char *want[4] = {
        annotated_json(0, "0.000000"),
        g_strdup("{\"stream\": 0, \"frame\": 1, \"pts\": 0.033333, \"width\": 64, \"height\": 48, "
                 "\"detections\": [], \"classifications\": []}"),
        annotated_json(2, "0.066667"),
        annotated_json(3, "null"),
    };
    for (int i = 0; i < 4; i++) {
        assert_string_equal(lines[i], want[i]);
        g_free(want[i]);
    }
    g_strfreev(lines);
}

static void test_csv_rows(void **state)
{
    (void)state;
    char **lines = run_to_lines(
        "testsrc num-buffers=4 width=64 height=48 ! annotate ! metasink format=csv", "out.csv");
    const char *want[] = {
        "stream,frame,pts,x0,y0,x1,y1,score,class,label,track",
        "0,0,0.000000,10.250,30.000,70.500,90.004,0.8765,1,\"fa\"\"ce\\,\tx\",12",
        "0,0,0.000000,90.000,5.000,150.000,40.000,0.5000,,,",
        "0,2,0.066667,10.250,30.000,70.500,90.004,0.8765,1,\"fa\"\"ce\\,\tx\",12",
        "0,2,0.066667,90.000,5.000,150.000,40.000,0.5000,,,",
        "0,3,,10.250,30.000,70.500,90.004,0.8765,1,\"fa\"\"ce\\,\tx\",12",
        "0,3,,90.000,5.000,150.000,40.000,0.5000,,,",
    };
    assert_int_equal(g_strv_length(lines), G_N_ELEMENTS(want));
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++)
        assert_string_equal(lines[i], want[i]);
    g_strfreev(lines);
}

static void test_tensors_and_tracks(void **state)
{
    (void)state;
    char **lines = run_to_lines("testsrc num-buffers=2 ! preprocess size=8x4 ! metasink", "t.jsonl");
    assert_int_equal(g_strv_length(lines), 2);
    assert_string_equal(lines[1], "{\"stream\": 0, \"frame\": 1, \"pts\": 0.033333, \"shape\": [1, 3, 4, 8], "
                                  "\"detections\": [], \"classifications\": []}");
    g_strfreev(lines);
    // Behind track: the same two objects in frames 0 and 2, confirmed in 2.
    lines = run_to_lines("testsrc num-buffers=3 width=64 height=48 ! annotate ! track min-hits=2 ! metasink "
                         "format=csv",
                         "tracked.csv");
    assert_int_equal(g_strv_length(lines), 5);
    assert_true(g_str_has_suffix(lines[1], ",1,\"fa\"\"ce\\,\tx\","));
    assert_true(g_str_has_suffix(lines[3], ",1,\"fa\"\"ce\\,\tx\",1"));
    assert_true(g_str_has_suffix(lines[4], ",2"));
    g_strfreev(lines);
}

static void test_unwritable_location_names_the_file(void **state)
{
    (void)state;
    const char *texts[] = { "testsrc num-buffers=1 ! metasink location=/nonexistent/dir/out.jsonl",
                            "testsrc num-buffers=1 ! metasink" };
    const char *want[] = { "metasink0: cannot write '/nonexistent/dir/out.jsonl': No such file or directory",
                           "metasink0: no location set" };
    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        GError *err = NULL;
        reel_pipeline *p = reel_parse_launch(texts[i], NULL, reel_pipeline_params(.stats_interval_ms = -1), &err);
        assert_non_null(p);
        assert_int_not_equal(reel_pipeline_run(p, &err), 0);
        if (!strstr(err->message, want[i]))
            fail_msg("'%s' lacks '%s'", err->message, want[i]);
        g_error_free(err);
        reel_pipeline_destroy(&p);
    }
}

int main(void)
{
    reel_init();
    reel_element_class_register(&annotate_class);
    dir = g_dir_make_tmp("reel-metasink-XXXXXX", NULL);
    assert_non_null(dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_lines),
        cmocka_unit_test(test_csv_rows),
        cmocka_unit_test(test_tensors_and_tracks),
        cmocka_unit_test(test_unwritable_location_names_the_file),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    const char *files[] = { "out.jsonl", "out.csv", "t.jsonl", "tracked.csv" };
    for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
        char *path = g_build_filename(dir, files[i], NULL);
        g_remove(path);
        g_free(path);
    }
    g_rmdir(dir);
    g_free(dir);
    return reel_test_verdict(failed);
}

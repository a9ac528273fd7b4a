// record: clips around events with pre-roll, checked with ffprobe. Frames
// with a tracked box on a known path (it crosses a line at frames 20 and
// 61, 25 fps) go through zones ! encode (a keyframe every 10 frames) !
// record pre=0.5 post=0.4 trigger=cross: each clip must start at the
// keyframe at or before its trigger - pre, on a keyframe, and end at its
// trigger + post, with its .json and, asked, the trigger's picture; `mark`
// records on demand; bad triggers are refused.
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

#define W 64
#define H 48
#define FRAMES 90
#define CAPS "video/raw,format=yuv420p,width=64,height=48,framerate=25/1"

static char *dir;

static reel_detections *walker(int i)
{
    reel_detections *d = reel_detections_new(1);
    double x = i <= 40 ? 7 + 1.0 * i : 47 - 1.0 * (i - 40); // crosses x=26.5 at 20 and at 61
    d->items[0] = (reel_detection){ .x0 = (float)(x - 3), .y0 = 10, .x1 = (float)(x + 3), .y1 = 30, .score = 0.9f,
                                    .class_id = 0, .track_id = 1 };
    return d;
}

// Pushes the frames (setting `mark` before frame `mark_at`, unless -1).
static void run(const char *record_props, int mark_at)
{
    char *text = g_strdup_printf("appsrc name=in caps=" CAPS " ! zones coordinates=pixels lines=\"gate: 26.5,40 "
                                 "26.5,0\" ! encode gop=10 options=tune=zerolatency ! record name=r %s", record_props);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p || reel_pipeline_start(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_element *in = reel_pipeline_find(p, "in");
    for (int i = 0; i < FRAMES; i++) {
        if (i == mark_at)
            assert_int_equal(reel_pipeline_set_property(p, "r", "mark", "door-bell", &err), 0);
        reel_buffer *b = reel_appsrc_alloc(in);
        assert_non_null(b);
        memset(b->data ? b->data : b->planes[0], 64, b->size);
        reel_buffer_add_meta(b, &reel_detections_meta, walker(i));
        assert_int_equal(reel_appsrc_push(in, b), 0);
    }
    reel_appsrc_end(in);
    if (reel_pipeline_wait(p, &err) != 0)
        fail_msg("%s", err->message);
    reel_pipeline_destroy(&p);
    g_free(text);
}

// ffprobe's frames of a clip: pts in seconds and whether each is a keyframe.
static int probe(const char *path, double *pts, bool *key, int max)
{
    char *out = NULL;
    const char *argv[] = { "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                           "frame=pts_time,key_frame", "-of", "csv=p=0", path, NULL };
    int status = 0;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, NULL, &status, NULL) ||
        status != 0)
        fail_msg("ffprobe %s failed", path);
    int n = 0;
    char **lines = g_strsplit(out, "\n", -1);
    for (char **l = lines; *l && n < max; l++) {
        int k = 0;
        double t = 0;
        if (sscanf(*l, "%d,%lf", &k, &t) == 2) {
            key[n] = k == 1;
            pts[n++] = t;
        }
    }
    g_strfreev(lines);
    g_free(out);
    return n;
}

static void check_clip(const char *name, double first, double last)
{
    char *path = g_build_filename(dir, name, NULL), *part = g_strconcat(path, ".part", NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS))
        fail_msg("no clip %s", path);
    assert_false(g_file_test(part, G_FILE_TEST_EXISTS)); // renamed once finished
    double pts[256];
    bool key[256];
    int n = probe(path, pts, key, 256);
    assert_true(n > 0);
    assert_true(key[0]);
    if (fabs(pts[0] - first) > 1e-3 || fabs(pts[n - 1] - last) > 1e-3)
        fail_msg("%s: frames from %.3f to %.3f s, wanted %.3f to %.3f", name, pts[0], pts[n - 1], first, last);
    assert_int_equal(n, (int)lround((last - first) * 25) + 1); // every frame between, once
    // Beside it, what it holds: its span, its trigger, the events in it.
    char *json = g_strconcat(path, ".json", NULL), *text = NULL;
    assert_true(g_file_get_contents(json, &text, NULL, NULL));
    char *span = g_strdup_printf("\"start\": %.6f, \"end\": %.6f", first, last);
    if (!strstr(text, span) || !strstr(text, "\"clip\": \"") || !strstr(text, "\"stream\": 0"))
        fail_msg("%s: %s, wanted %s", json, text, span);
    if (strstr(name, "cross-gate") && (!strstr(text, "\"trigger\": \"cross-gate\"") ||
                                       !strstr(text, "\"event\": {\"type\": \"cross\", \"line\": \"gate\", \"track\": 1")))
        fail_msg("%s: %s", json, text);
    g_free(span);
    g_free(text);
    g_unlink(json);
    g_free(json);
    // With snapshot=true, the trigger's picture: a 64x48 JPEG.
    char *jpg = g_strconcat(path, ".jpg", NULL);
    if (strstr(name, "clip-")) {
        char *out = NULL;
        const char *argv[] = { "ffprobe", "-v", "error", "-show_entries", "stream=codec_name,width,height", "-of",
                               "csv=p=0", jpg, NULL };
        assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, NULL, NULL, NULL));
        if (!g_str_has_prefix(out, "mjpeg,64,48"))
            fail_msg("%s: %s, wanted a 64x48 JPEG", jpg, out);
        g_free(out);
    }
    g_unlink(jpg);
    g_free(jpg);
    g_unlink(path);
    g_free(part);
    g_free(path);
}

static void test_clips_around_crossings(void **state)
{
    (void)state;
    char *props = g_strdup_printf("location=%s/clip-{n}-{event}.mkv pre=0.5 post=0.4 trigger=cross snapshot=true",
                                  dir);
    run(props, -1);
    g_free(props);
    // Crossing at frame 20 (0.80 s): from the keyframe at or before 0.30 s
    // (frame 0) to 1.20 s; at frame 61 (2.44 s): from frame 40 to 2.84 s.
    check_clip("clip-1-cross-gate.mkv", 0.0, 1.2);
    check_clip("clip-2-cross-gate.mkv", 1.6, 2.84);
}

// Triggers during a clip extend it; max-length caps it; mark records now.
static void test_extend_cap_and_mark(void **state)
{
    (void)state;
    char *props = g_strdup_printf("location=%s/long-{n}-{event}.mkv pre=0 post=2 max-length=2.5 trigger=cross", dir);
    run(props, -1);
    g_free(props);
    // From frame 20 (a keyframe) for 2 s, then the crossing at 2.44 s would
    // reach 4.44 s: capped at 0.80 + 2.5 = 3.30 s, the last frame before it 3.28 s.
    check_clip("long-1-cross-gate.mkv", 0.8, 3.28);
    // mark takes effect at record's next packet, wherever the stream is then:
    // one clip named for it, from a keyframe, pre + post long (and up to a
    // group of pictures more, for the keyframe before).
    props = g_strdup_printf("location=%s/mark-{n}-{event}.mkv pre=0.2 post=0.2 trigger=none", dir);
    run(props, 55);
    g_free(props);
    char *path = g_build_filename(dir, "mark-1-door-bell.mkv", NULL);
    double pts[256];
    bool key[256];
    int n = probe(path, pts, key, 256);
    assert_true(n > 0 && key[0]);
    assert_true(pts[n - 1] - pts[0] <= 0.2 + 0.2 + 0.4 + 1e-3);
    char *json = g_strconcat(path, ".json", NULL), *text = NULL;
    assert_true(g_file_get_contents(json, &text, NULL, NULL));
    assert_non_null(strstr(text, "\"trigger\": \"door-bell\""));
    g_free(text);
    g_unlink(json);
    g_free(json);
    g_unlink(path);
    g_free(path);
}

static void test_bad_trigger(void **state)
{
    (void)state;
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch("testsrc ! encode ! record trigger=\"cross,crossing\"", NULL, NULL, &err);
    assert_null(p);
    assert_non_null(strstr(err->message, "triggers, comma-separated"));
    assert_non_null(strstr(err->message, "'cross,crossing'"));
    g_error_free(err);
}

int main(void)
{
    reel_init();
    char *ffprobe = g_find_program_in_path("ffprobe");
    if (!ffprobe)
        reel_skip("no ffprobe (Debian package ffmpeg)");
    g_free(ffprobe);
    dir = g_dir_make_tmp("reel-record-XXXXXX", NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clips_around_crossings),
        cmocka_unit_test(test_extend_cap_and_mark),
        cmocka_unit_test(test_bad_trigger),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    g_rmdir(dir);
    g_free(dir);
    return rc;
}

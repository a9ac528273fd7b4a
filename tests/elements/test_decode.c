// source ! decode on real clips (made by tests/media/make-clips.sh): frames
// bit-exact with the ffmpeg CLI, timestamps kept, a mid-stream resolution
// change, damaged data, looping, reruns, and errors that name the element
// and the file. REEL_CLIPS names the clips folder.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

static const char *clips;

// ---- helpers ----------------------------------------------------------------

typedef struct seen {
    GMutex lock;
    int counts[REEL_MESSAGE_TYPE_COUNT];
    GString *warnings;   // "element: text\n" per WARNING
    GString *errors;     // the same per ERROR
} seen;

static void on_message(const reel_message *msg, void *user)
{
    seen *s = user;
    g_mutex_lock(&s->lock);
    s->counts[msg->type]++;
    GString *to = msg->type == REEL_MESSAGE_WARNING ? s->warnings : msg->type == REEL_MESSAGE_ERROR ? s->errors : NULL;
    if (to)
        g_string_append_printf(to, "%s: %s\n", msg->element ? msg->element : "", msg->text);
    g_mutex_unlock(&s->lock);
}

static void seen_init(seen *s)
{
    memset(s, 0, sizeof *s);
    g_mutex_init(&s->lock);
    s->warnings = g_string_new(NULL);
    s->errors = g_string_new(NULL);
}

static void seen_clear(seen *s)
{
    g_string_free(s->warnings, TRUE);
    g_string_free(s->errors, TRUE);
    g_mutex_clear(&s->lock);
}

// The clip's path; the test skips when make-clips.sh could not make it (its
// encoder is missing from this FFmpeg).
static char *clip(const char *name)
{
    char *path = g_build_filename(clips, name, NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_free(path);
        reel_skip("%s/%s missing: this FFmpeg lacks its encoder", clips, name);
    }
    return path;
}

static reel_pipeline *build(const char *text, seen *s)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL,
                                         reel_pipeline_params(.threads = 2, .stats_interval_ms = -1,
                                                              .bus_handler = on_message, .bus_user = s),
                                         &err);
    if (!p)
        fail_msg("%s: %s", text, err->message);
    return p;
}

static int64_t buffers_in(reel_pipeline *p, const char *name)
{
    reel_element_report r[16];
    int n = reel_pipeline_report(p, r, 16);
    for (int i = 0; i < n && i < 16; i++)
        if (strcmp(r[i].name, name) == 0)
            return r[i].buffers_in;
    fail_msg("no element %s", name);
    return -1;
}

// One decoded frame as fakesink or framemd5 lists it.
typedef struct frame_line {
    int64_t pts;
    char md5[33];
} frame_line;

typedef struct frames {
    GArray *lines;       // frame_line
    reel_fraction tb;    // framemd5's "#tb 0:"; {0, 0} for fakesink
} frames;

static void frames_clear(frames *f)
{
    g_array_free(f->lines, TRUE);
}

// fakesink location=: "frame_number pts md5" per line.
static frames read_fakesink(const char *path)
{
    frames f = { g_array_new(FALSE, TRUE, sizeof(frame_line)), { 0, 0 } };
    char *text = NULL;
    assert_true(g_file_get_contents(path, &text, NULL, NULL));
    char **lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
        frame_line fl = { 0 };
        long long n, pts;
        if (sscanf(*l, "%lld %lld %32s", &n, &pts, fl.md5) == 3) {
            fl.pts = pts;
            g_array_append_val(f.lines, fl);
        }
    }
    g_strfreev(lines);
    g_free(text);
    return f;
}

// ffmpeg's decode of the clip: every frame as it comes out of the decoder
// (no frame rate conversion, no scaling after a size change), timestamps in
// the demuxer's time base.
static frames run_framemd5(const char *path)
{
    char *argv[] = { "ffmpeg", "-v", "error", "-nostdin", "-i", (char *)path, "-fps_mode", "passthrough",
                     "-enc_time_base", "-1", "-autoscale", "0", "-f", "framemd5", "-", NULL };
    char *out = NULL, *err = NULL;
    int status = 0;
    GError *gerr = NULL;
    if (!g_spawn_sync(NULL, argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err, &status, &gerr))
        fail_msg("cannot run ffmpeg: %s", gerr->message);
    if (!g_spawn_check_wait_status(status, NULL))
        fail_msg("ffmpeg failed on %s: %s", path, err);
    frames f = { g_array_new(FALSE, TRUE, sizeof(frame_line)), { 0, 0 } };
    char **lines = g_strsplit(out, "\n", -1);
    for (char **l = lines; *l; l++) {
        if (sscanf(*l, "#tb 0: %d/%d", &f.tb.num, &f.tb.den) == 2 || **l == '#' || !**l)
            continue;
        // stream#, dts, pts, duration, size, hash: the hash is the last field.
        char **fields = g_strsplit(*l, ",", -1);
        guint n = g_strv_length(fields);
        assert_true(n >= 6);
        frame_line fl = { 0 };
        fl.pts = g_ascii_strtoll(fields[2], NULL, 10);
        g_strlcpy(fl.md5, g_strstrip(fields[n - 1]), sizeof fl.md5);
        g_array_append_val(f.lines, fl);
        g_strfreev(fields);
    }
    g_strfreev(lines);
    g_free(out);
    g_free(err);
    return f;
}

static char *tmp_path(const char *name)
{
    return g_build_filename(g_get_tmp_dir(), name, NULL);
}

// Runs `source location=PATH OPTS ! decode DOPTS ! fakesink location=OUT`
// and returns its frames. *s collects the messages.
static frames decode_clip(const char *path, const char *source_opts, const char *decode_opts, seen *s,
                          reel_pipeline **keep)
{
    char *out = tmp_path("reel-test-decode.txt");
    char *text = g_strdup_printf("source location=%s %s ! decode %s ! fakesink location=%s", path, source_opts,
                                 decode_opts, out);
    reel_pipeline *p = build(text, s);
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    assert_int_equal(s->counts[REEL_MESSAGE_ERROR], 0);
    frames f = read_fakesink(out);
    assert_int_equal(buffers_in(p, "fakesink0"), f.lines->len);
    if (keep)
        *keep = p;
    else
        reel_pipeline_destroy(&p);
    remove(out);
    g_free(text);
    g_free(out);
    return f;
}

// ---- tests ------------------------------------------------------------------

// Every frame, hash and timestamp as ffmpeg decodes them. Our timestamps are
// in the stream's time base, as are framemd5's with -enc_time_base -1.
static void check_against_ffmpeg(const char *name, const char *decode_opts)
{
    char *path = clip(name);
    long live0 = reel_buffer_get_stats().live;
    seen s;
    seen_init(&s);
    frames ours = decode_clip(path, "", decode_opts, &s, NULL);
    frames ref = run_framemd5(path);
    assert_true(ref.lines->len >= 20);
    assert_int_equal(ours.lines->len, ref.lines->len);
    for (guint i = 0; i < ref.lines->len; i++) {
        frame_line *a = &g_array_index(ours.lines, frame_line, i), *b = &g_array_index(ref.lines, frame_line, i);
        if (strcmp(a->md5, b->md5) != 0 || a->pts != b->pts)
            fail_msg("%s frame %u: ours pts %" G_GINT64_FORMAT " md5 %s, ffmpeg pts %" G_GINT64_FORMAT " md5 %s",
                     name, i, a->pts, a->md5, b->pts, b->md5);
    }
    assert_int_equal(s.counts[REEL_MESSAGE_WARNING], 0);
    assert_int_equal(reel_buffer_get_stats().live, live0);
    frames_clear(&ours);
    frames_clear(&ref);
    seen_clear(&s);
    g_free(path);
}

static void test_h264_bit_exact(void **state)
{
    (void)state;
    check_against_ffmpeg("h264.mp4", "");
    // The threading mode changes how, not what.
    check_against_ffmpeg("h264.mp4", "threads=1");
    check_against_ffmpeg("h264.mp4", "threads=3 thread-type=slice");
}

static void test_hevc_bit_exact(void **state)
{
    (void)state;
    check_against_ffmpeg("hevc.mkv", "");
}

static void test_vp9_bit_exact(void **state)
{
    (void)state;
    check_against_ffmpeg("vp9.webm", "");
}

// Variable frame rate: output pts are the input's, uneven gaps and all.
static void test_vfr_timestamps(void **state)
{
    (void)state;
    char *path = clip("vfr.mkv");
    frames ref = run_framemd5(path);
    // The clip is Matroska (1 ms) and framemd5 kept that time base, so the
    // numbers compare directly.
    assert_int_equal(ref.tb.num, 1);
    assert_int_equal(ref.tb.den, 1000);
    // Check the clip really is uneven: some neighbouring gaps differ.
    int uneven = 0;
    for (guint i = 2; i < ref.lines->len; i++) {
        int64_t g1 = g_array_index(ref.lines, frame_line, i).pts - g_array_index(ref.lines, frame_line, i - 1).pts;
        int64_t g0 = g_array_index(ref.lines, frame_line, i - 1).pts - g_array_index(ref.lines, frame_line, i - 2).pts;
        uneven += g1 != g0;
    }
    assert_true(uneven > 10);
    g_free(path);
    check_against_ffmpeg("vfr.mkv", "");
    frames_clear(&ref);
}

// The size changes from 320x240 to 176x144 midway: every frame comes out at
// its own size (ffmpeg -autoscale 0 hashes them unscaled too).
static void test_resolution_change(void **state)
{
    (void)state;
    char *path = clip("reschange.h264");
    seen s;
    seen_init(&s);
    frames ours = decode_clip(path, "", "", &s, NULL);
    frames ref = run_framemd5(path);
    assert_int_equal(ref.lines->len, 45);
    assert_int_equal(ours.lines->len, ref.lines->len);
    for (guint i = 0; i < ref.lines->len; i++)
        assert_string_equal(g_array_index(ours.lines, frame_line, i).md5, g_array_index(ref.lines, frame_line, i).md5);
    frames_clear(&ours);
    frames_clear(&ref);
    seen_clear(&s);
    g_free(path);
}

// Bytes zeroed in the middle: the run completes, with a warning for the
// first damage and a summary, and the frames that could be decoded.
static void test_corrupt_data(void **state)
{
    (void)state;
    char *path = clip("corrupt.mp4");
    long live0 = reel_buffer_get_stats().live;
    seen s;
    seen_init(&s);
    frames ours = decode_clip(path, "", "", &s, NULL);
    assert_true(ours.lines->len > 30);
    assert_int_equal(s.counts[REEL_MESSAGE_WARNING], 2);
    assert_non_null(strstr(s.warnings->str, "decode0: corrupt data in "));
    assert_non_null(strstr(s.warnings->str, "corrupt packets/frames"));
    assert_int_equal(reel_buffer_get_stats().live, live0);
    frames_clear(&ours);
    seen_clear(&s);
    g_free(path);
}

// The first part of a file whose index comes first: it ends early, with a
// warning, keeping what was there.
static void test_truncated_file_ends_early(void **state)
{
    (void)state;
    char *path = clip("truncated-faststart.mp4");
    seen s;
    seen_init(&s);
    frames ours = decode_clip(path, "", "", &s, NULL);
    assert_true(ours.lines->len > 10 && ours.lines->len < 45);
    assert_non_null(strstr(s.warnings->str, "source0: "));
    assert_non_null(strstr(s.warnings->str, "ended early"));
    frames_clear(&ours);
    seen_clear(&s);
    g_free(path);
}

// loop=3 plays the clip three times with increasing timestamps; the same
// pipeline run again reopens the file and gives the same frames.
static void test_loop_and_rerun(void **state)
{
    (void)state;
    char *path = clip("h264.mp4");
    seen s;
    seen_init(&s);
    reel_pipeline *p = NULL;
    frames once = decode_clip(path, "", "", &s, NULL);
    frames thrice = decode_clip(path, "loop=3", "", &s, &p);
    guint n = once.lines->len;
    assert_int_equal(thrice.lines->len, 3 * n);
    for (guint i = 0; i < thrice.lines->len; i++) {
        frame_line *f = &g_array_index(thrice.lines, frame_line, i);
        assert_string_equal(f->md5, g_array_index(once.lines, frame_line, i % n).md5);
        if (i > 0)
            assert_true(f->pts > g_array_index(thrice.lines, frame_line, i - 1).pts);
    }
    // The second run of the same pipeline.
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("rerun: %s", err->message);
    assert_int_equal(buffers_in(p, "fakesink0"), 3 * n);
    reel_pipeline_destroy(&p);
    frames_clear(&once);
    frames_clear(&thrice);
    seen_clear(&s);
    g_free(path);
}

// Runs a pipeline expected to fail while preparing with `code`; the error
// message on the bus names `element` and contains `text`.
// decode -> encode ffv1 -> decode: lossless, so the frames come back
// identical, bit for bit, in the same order.
static void test_lossless_round_trip(void **state)
{
    (void)state;
    char *path = clip("h264.mp4");
    char *ref = tmp_path("reel-test-roundtrip-ref.txt"), *mkv = tmp_path("reel-test-roundtrip.mkv");
    char *text = g_strdup_printf("source location=%s ! decode ! tee name=t t. ! queue ! fakesink location=%s "
                                 "t. ! queue ! encode codec=ffv1 ! sink location=%s",
                                 path, ref, mkv);
    seen s;
    seen_init(&s);
    reel_pipeline *p = build(text, &s);
    GError *err = NULL;
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
    frames first = read_fakesink(ref);
    frames again = decode_clip(mkv, "", "", &s, NULL);
    assert_true(first.lines->len >= 20);
    assert_int_equal(again.lines->len, first.lines->len);
    for (guint i = 0; i < first.lines->len; i++)
        assert_string_equal(g_array_index(again.lines, frame_line, i).md5,
                            g_array_index(first.lines, frame_line, i).md5);
    frames_clear(&first);
    frames_clear(&again);
    seen_clear(&s);
    remove(ref);
    remove(mkv);
    g_free(ref);
    g_free(mkv);
    g_free(text);
    g_free(path);
}

static void expect_failure(const char *pipeline, int code, const char *element, const char *text)
{
    seen s;
    seen_init(&s);
    reel_pipeline *p = build(pipeline, &s);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_run(p, &err), code);
    assert_non_null(err);
    g_error_free(err);
    assert_int_equal(s.counts[REEL_MESSAGE_ERROR], 1);
    char *want = g_strdup_printf("%s: ", element);
    if (!g_str_has_prefix(s.errors->str, want) || !strstr(s.errors->str, text))
        fail_msg("wanted an error from %s about '%s', got: %s", element, text, s.errors->str);
    g_free(want);
    reel_pipeline_destroy(&p);
    seen_clear(&s);
}

static void test_bad_input(void **state)
{
    (void)state;
    char *missing = g_build_filename(clips, "missing.mp4", NULL);
    char *text = g_strdup_printf("source location=%s ! decode ! fakesink", missing);
    char *msg = g_strdup_printf("cannot open '%s': No such file", missing);
    expect_failure(text, REEL_EIO, "source0", msg);
    g_free(missing);
    g_free(text);
    g_free(msg);

    static const char *const unreadable[] = { "empty.mp4", "random.mp4", "truncated.mp4", "audio.wav" };
    for (size_t i = 0; i < G_N_ELEMENTS(unreadable); i++) {
        char *path = clip(unreadable[i]);
        text = g_strdup_printf("source location=%s ! decode ! fakesink", path);
        msg = g_strdup_printf("'%s'", path);
        expect_failure(text, REEL_EIO, "source0", msg);
        g_free(path);
        g_free(text);
        g_free(msg);
    }
}

static void test_unsupported_pixel_format(void **state)
{
    (void)state;
    char *path = clip("hevc10.mkv");
    char *text = g_strdup_printf("source location=%s ! decode ! fakesink", path);
    expect_failure(text, REEL_EUNSUPPORTED, "decode0", "pixel format");
    g_free(text);
    g_free(path);
}

int main(void)
{
    reel_init();
    clips = g_getenv("REEL_CLIPS");
    if (!clips)
        return reel_skip_exit("REEL_CLIPS is not set (ctest sets it; or run tests/media/make-clips.sh DIR)");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h264_bit_exact),
        cmocka_unit_test(test_hevc_bit_exact),
        cmocka_unit_test(test_vp9_bit_exact),
        cmocka_unit_test(test_vfr_timestamps),
        cmocka_unit_test(test_resolution_change),
        cmocka_unit_test(test_corrupt_data),
        cmocka_unit_test(test_truncated_file_ends_early),
        cmocka_unit_test(test_loop_and_rerun),
        cmocka_unit_test(test_lossless_round_trip),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_unsupported_pixel_format),
    };
    return reel_run_tests(tests, NULL, NULL);
}

// convert, encode and sink: every codec writes a file ffprobe reads back with
// the right frame count and pixels close to its input (ffmpeg decodes them:
// lossy codecs above a PSNR floor, lossless ones bit for bit), convert
// converts and scales (and passes matching buffers through untouched), and
// the failures a user meets are clear. testsrc is the only input, so these
// tests need nothing from source or decode. FFmpeg's CLI checks the files.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

static const char *scratch(void)
{
    const char *d = g_getenv("REEL_CLIPS");
    return d ? d : g_get_tmp_dir();
}

// A path in the scratch directory (g_free it).
static char *out_path(const char *name)
{
    return g_build_filename(scratch(), name, NULL);
}

static reel_pipeline *build(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p)
        fail_msg("%s", err->message);
    return p;
}

// Runs a pipeline; returns its code and, when it fails, the message in *msg.
static int run(const char *text, char **msg)
{
    reel_pipeline *p = build(text);
    GError *err = NULL;
    int rc = reel_pipeline_run(p, &err);
    if (msg)
        *msg = err ? g_strdup(err->message) : NULL;
    else if (rc != 0)
        print_error("run failed: %s\n", err->message);
    g_clear_error(&err);
    reel_pipeline_destroy(&p);
    return rc;
}

// stdout of a command given as argv; fails the test when it does not run
// or exits non-zero.
static char *capture(const char *const *argv)
{
    char *out = NULL, *errout = NULL;
    int status = 0;
    GError *err = NULL;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &errout, &status, &err))
        fail_msg("cannot run %s: %s", argv[0], err->message);
    if (!g_spawn_check_wait_status(status, NULL))
        fail_msg("%s failed: %s", argv[0], errout);
    g_free(errout);
    return out;
}

static int probe_frames(const char *path)
{
    const char *argv[] = { "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                           "stream=nb_read_frames", "-of", "csv=p=0", path, NULL };
    char *out = capture(argv);
    int n = atoi(out);
    g_free(out);
    return n;
}

// "codec,width,height,pix_fmt" of the first video stream.
static char *probe_stream(const char *path)
{
    const char *argv[] = { "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                           "stream=codec_name,width,height,pix_fmt", "-of", "csv=p=0", path, NULL };
    char *out = g_strstrip(capture(argv));
    return out;
}

// The last field of each line of a file or text: fakesink's per-frame md5
// and framemd5's alike. Lines starting with '#' are framemd5's header.
static GPtrArray *md5_column(const char *text)
{
    GPtrArray *md5s = g_ptr_array_new_with_free_func(g_free);
    char **lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
        if (!**l || **l == '#')
            continue;
        const char *last = strrchr(*l, ' ');
        g_ptr_array_add(md5s, g_strdup(g_strstrip(last ? (char *)last + 1 : *l)));
    }
    g_strfreev(lines);
    return md5s;
}

static GPtrArray *md5_file(const char *path)
{
    char *text = NULL;
    assert_true(g_file_get_contents(path, &text, NULL, NULL));
    GPtrArray *r = md5_column(text);
    g_free(text);
    return r;
}

static void assert_same_md5s(GPtrArray *a, GPtrArray *b)
{
    assert_int_equal(a->len, b->len);
    for (guint i = 0; i < a->len; i++)
        if (strcmp(a->pdata[i], b->pdata[i]) != 0)
            fail_msg("frame %u differs: %s vs %s", i, (char *)a->pdata[i], (char *)b->pdata[i]);
}

static void test_ffv1_is_bit_exact(void **state)
{
    (void)state;
    char *ref = out_path("enc-ffv1-ref.txt"), *mkv = out_path("enc-ffv1.mkv");
    char *text = g_strdup_printf("testsrc num-buffers=30 pattern=noise ! video/raw,format=yuv420p,width=160,height=120 "
                                 "! tee name=t t. ! queue ! fakesink location=%s "
                                 "t. ! queue ! encode codec=ffv1 ! sink location=%s",
                                 ref, mkv);
    char *msg = NULL;
    int rc = run(text, &msg);
    if (rc == REEL_EUNSUPPORTED && strstr(msg, "this FFmpeg has no"))
        reel_skip("%s", msg);
    if (rc != 0)
        fail_msg("%s", msg);
    const char *argv[] = { "ffmpeg", "-v", "error", "-i", mkv, "-fps_mode", "passthrough",
                           "-f", "framemd5", "-", NULL };
    char *decoded = capture(argv);
    GPtrArray *want = md5_file(ref), *got = md5_column(decoded);
    assert_int_equal(want->len, 30);
    assert_same_md5s(want, got);
    g_ptr_array_free(want, TRUE);
    g_ptr_array_free(got, TRUE);
    g_free(decoded);
    g_unlink(ref);
    g_unlink(mkv);
    g_free(ref);
    g_free(mkv);
    g_free(text);
}

typedef struct codec_case {
    const char *codec, *file, *before; // before: what goes between testsrc and encode
    const char *want_stream;           // ffprobe's "codec,width,height,pix_fmt"
    // The worst frame's PSNR (dB, over every sample of every plane) may not
    // fall below this; 0: lossless, every decoded byte equal to the input.
    double min_psnr;
    const char *options; // encode's options=, or NULL
} codec_case;

// Floors sit well below what the encoders reach at their defaults on the
// moving checkerboard (libx264 55 dB, libx265 51, mjpeg 23, measured with
// FFmpeg 5.1), and well above a frame off by one (13 dB: the board moves a
// pixel a frame), a wrong plane or a wrong range.
static const codec_case cases[] = {
    { "h264", "enc-h264.mp4", "video/raw,format=yuv420p,width=160,height=120", "h264,160,120,yuv420p", 45, NULL },
    { "hevc", "enc-hevc.mkv", "video/raw,format=yuv420p,width=160,height=120", "hevc,160,120,yuv420p", 42, NULL },
    // mjpeg takes full-range yuv only: convert turns limited range into it.
    { "mjpeg", "enc-mjpeg.avi", "video/raw,format=yuv420p,width=160,height=120 ! convert", "mjpeg,160,120,yuvj420p",
      20, NULL },
    { "png", "enc-png-%05d.png", "video/raw,format=rgb24,width=160,height=120", "png,160,120,rgb24", 0, NULL },
    { "rawvideo", "enc-raw.nut", "video/raw,format=yuv420p,width=160,height=120", "rawvideo,160,120,yuv420p", 0, NULL },
    { "ffv1", "enc-ffv1.mkv", "video/raw,format=yuv420p,width=160,height=120", "ffv1,160,120,yuv420p", 0, NULL },
    // Encoders by FFmpeg's names, with their own options passed through
    // (measured: mpeg4 52.9 dB, vp9 at crf 20 54.5, libsvtav1 at crf 20 73.7).
    { "mpeg4", "enc-mpeg4.avi", "video/raw,format=yuv420p,width=160,height=120", "mpeg4,160,120,yuv420p", 40, NULL },
    { "vp9", "enc-vp9.webm", "video/raw,format=yuv420p,width=160,height=120", "vp9,160,120,yuv420p", 40,
      "deadline=realtime:cpu-used=8:crf=20:b=0" },
    { "libsvtav1", "enc-av1.mkv", "video/raw,format=yuv420p,width=160,height=120", "av1,160,120,yuv420p", 40,
      "preset=12:crf=20" },
};

static void remove_outputs(const char *path)
{
    if (!strchr(path, '%')) {
        g_unlink(path);
        return;
    }
    for (int i = 0; i < 100; i++) {
        char *name = g_strdup_printf(path, i);
        g_unlink(name);
        g_free(name);
    }
}

// Every frame of a video as ffmpeg decodes it, in pix_fmt, frame after frame
// in file order (g_free it); *size gets the bytes.
static uint8_t *decode_raw(const char *path, const char *pix_fmt, size_t *size)
{
    char *raw = out_path("enc-decoded.raw");
    const char *argv[] = { "ffmpeg", "-v", "error", "-y", "-i", path, "-fps_mode", "passthrough", "-f", "rawvideo",
                           "-pix_fmt", pix_fmt, raw, NULL };
    g_free(capture(argv));
    char *data = NULL;
    gsize len = 0;
    assert_true(g_file_get_contents(raw, &data, &len, NULL));
    g_unlink(raw);
    g_free(raw);
    *size = len;
    return (uint8_t *)data;
}

// Peak signal-to-noise ratio of n bytes against their reference, in dB;
// INFINITY when they are equal.
static double psnr(const uint8_t *got, const uint8_t *want, size_t n)
{
    double se = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        se += d * d;
    }
    return se == 0 ? INFINITY : 10 * log10(255.0 * 255.0 * (double)n / se);
}

// The decoded output against the frames that went into the encoder (written
// beside it as rawvideo): frame i against frame i, each at or above the
// case's floor, or equal for a lossless codec.
static void check_pixels(const codec_case *c, const char *path, const char *ref)
{
    const char *pix_fmt = strrchr(c->want_stream, ',') + 1;
    size_t frame = strcmp(pix_fmt, "rgb24") == 0 ? 160 * 120 * 3 : 160 * 120 * 3 / 2;
    size_t got_size, want_size;
    uint8_t *got = decode_raw(path, pix_fmt, &got_size), *want = decode_raw(ref, pix_fmt, &want_size);
    assert_int_equal(want_size, 30 * frame);
    assert_int_equal(got_size, want_size);
    double worst = INFINITY, sum = 0;
    int exact = 0;
    for (int i = 0; i < 30; i++) {
        double db = psnr(got + i * frame, want + i * frame, frame);
        if (c->min_psnr == 0 && db != INFINITY)
            fail_msg("%s is lossless, but decoded frame %d differs from its input (%.2f dB)", c->codec, i, db);
        if (db < c->min_psnr)
            fail_msg("%s: decoded frame %d is %.2f dB from its input, below the floor of %.0f dB", c->codec, i, db,
                     c->min_psnr);
        worst = MIN(worst, db);
        exact += isinf(db);
        sum += isinf(db) ? 0 : db;
    }
    // The mean is of the frames that differ at all.
    if (c->min_psnr > 0)
        printf("%s: PSNR worst frame %.2f dB, mean %.2f dB, %d of 30 frames exact (floor %.0f)\n", c->codec, worst,
               exact < 30 ? sum / (30 - exact) : INFINITY, exact, c->min_psnr);
    g_free(got);
    g_free(want);
}

static void test_codec(void **state)
{
    const codec_case *c = *state;
    char *path = out_path(c->file);
    char *ref = g_strdup_printf("%s/enc-%s-input.nut", scratch(), c->codec);
    remove_outputs(path);
    // A checkerboard moving a pixel a frame: sharp edges for the encoder,
    // and any frame decoded out of place is far from its own input.
    char *text = g_strdup_printf("testsrc num-buffers=30 pattern=checkers ! %s ! tee name=t "
                                 "t. ! queue ! encode codec=%s%s%s ! sink location=%s "
                                 "t. ! queue ! encode codec=rawvideo ! sink location=%s",
                                 c->before, c->codec, c->options ? " options=" : "", c->options ? c->options : "",
                                 path, ref);
    long live0 = reel_buffer_get_stats().live;
    char *msg = NULL;
    int rc = run(text, &msg);
    // Frames held by the encoder and packets by the muxer all came back.
    assert_int_equal(reel_buffer_get_stats().live, live0);
    if (rc == REEL_EUNSUPPORTED && strstr(msg, "this FFmpeg has no"))
        reel_skip("%s: %s", c->codec, msg);
    if (rc != 0)
        fail_msg("%s: %s", c->codec, msg);
    assert_int_equal(probe_frames(path), 30);
    char *stream = probe_stream(path);
    assert_string_equal(stream, c->want_stream);
    g_free(stream);
    check_pixels(c, path, ref);
    remove_outputs(path);
    g_unlink(ref);
    g_free(ref);
    g_free(path);
    g_free(text);
}

static reel_caps output_of(reel_pipeline *p, const char *name)
{
    reel_element *e = reel_pipeline_find(p, name);
    assert_non_null(e);
    return *reel_element_output_format(e, 0);
}

static void test_convert_format(void **state)
{
    (void)state;
    reel_pipeline *p = build("testsrc num-buffers=5 pattern=noise format=rgb24 width=64 height=48 "
                             "! convert ! video/raw,format=yuv420p ! fakesink checksum=true");
    GError *err = NULL;
    assert_int_equal(reel_pipeline_prepare(p, &err), 0);
    reel_caps f = output_of(p, "convert0");
    assert_int_equal(f.pixfmts, REEL_PIXFMT_BIT(REEL_PIXFMT_YUV420P));
    assert_int_equal(f.width, 64);
    assert_int_equal(f.height, 48);
    assert_int_equal(f.framerate.num, 30);
    reel_pipeline_destroy(&p);

    // The converted frames match ffmpeg's reading of the same rgb24 frames
    // converted by reel and written as rawvideo: sizes and count.
    char *nut = out_path("conv-yuv.nut");
    char *text = g_strdup_printf("testsrc num-buffers=5 pattern=noise format=rgb24 width=64 height=48 ! convert "
                                 "! video/raw,format=yuv420p ! encode codec=rawvideo ! sink location=%s",
                                 nut);
    assert_int_equal(run(text, NULL), 0);
    char *stream = probe_stream(nut);
    assert_string_equal(stream, "rawvideo,64,48,yuv420p");
    assert_int_equal(probe_frames(nut), 5);
    g_free(stream);
    g_unlink(nut);
    g_free(nut);
    g_free(text);
}

// Luma of the first pixel of a file, as ffmpeg decodes it.
static int first_luma(const char *path)
{
    const char *argv[] = { "ffmpeg", "-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-", NULL };
    char *out = capture(argv);
    int y = (uint8_t)out[0];
    g_free(out);
    return y;
}

static void test_convert_range(void **state)
{
    (void)state;
    // Grey 128 is luma 126 in limited range, 128 in full range (yuvj).
    static const struct {
        const char *from, *to;
        int y;
    } cases[] = {
        { "yuv420p", "yuvj420p", 128 }, { "yuvj420p", "yuv420p", 126 }, { "rgb24", "yuvj420p", 128 },
        { "rgb24", "yuv420p", 126 },    { "gray8", "yuv420p", 126 },
    };
    char *nut = out_path("conv-range.nut");
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *text = g_strdup_printf("testsrc num-buffers=1 pattern=solid color=0xffffff "
                                     "! video/raw,format=%s,width=32,height=32 ! convert ! video/raw,format=%s "
                                     "! encode codec=rawvideo ! sink location=%s",
                                     cases[i].from, cases[i].to, nut);
        assert_int_equal(run(text, NULL), 0);
        int y = first_luma(nut);
        if (y != cases[i].y)
            fail_msg("%s -> %s: luma %d, want %d", cases[i].from, cases[i].to, y, cases[i].y);
        g_free(text);
    }
    g_unlink(nut);
    g_free(nut);
}

static void test_convert_scales(void **state)
{
    (void)state;
    char *nut = out_path("conv-scale.nut");
    char *text = g_strdup_printf("testsrc num-buffers=10 ! video/raw,format=yuv420p,width=320,height=240 "
                                 "! convert method=area ! video/raw,width=160,height=120 "
                                 "! encode codec=rawvideo ! sink location=%s",
                                 nut);
    reel_pipeline *p = build(text);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_prepare(p, &err), 0);
    reel_caps f = output_of(p, "convert0");
    assert_int_equal(f.width, 160);
    assert_int_equal(f.height, 120);
    assert_int_equal(f.pixfmts, REEL_PIXFMT_BIT(REEL_PIXFMT_YUV420P)); // kept from the input
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s", err->message);
    reel_pipeline_destroy(&p);
    char *stream = probe_stream(nut);
    assert_string_equal(stream, "rawvideo,160,120,yuv420p");
    assert_int_equal(probe_frames(nut), 10);
    g_free(stream);

    // One side given: the other follows the input's aspect ratio.
    p = build("testsrc num-buffers=1 ! video/raw,format=rgb24,width=320,height=240 ! convert "
              "! video/raw,width=100 ! fakesink");
    assert_int_equal(reel_pipeline_prepare(p, &err), 0);
    f = output_of(p, "convert0");
    assert_int_equal(f.width, 100);
    assert_int_equal(f.height, 76); // 75, rounded up to even
    reel_pipeline_destroy(&p);

    // Scaling is deterministic.
    const char *det = "testsrc num-buffers=5 pattern=noise ! video/raw,format=rgb24,width=99,height=77 "
                      "! convert method=bicubic ! video/raw,format=bgra,width=50,height=40 ! fakesink location=%s";
    char *a = out_path("conv-a.txt"), *b = out_path("conv-b.txt");
    char *ta = g_strdup_printf(det, a), *tb = g_strdup_printf(det, b);
    assert_int_equal(run(ta, NULL), 0);
    assert_int_equal(run(tb, NULL), 0);
    GPtrArray *ma = md5_file(a), *mb = md5_file(b);
    assert_int_equal(ma->len, 5);
    assert_same_md5s(ma, mb);
    g_ptr_array_free(ma, TRUE);
    g_ptr_array_free(mb, TRUE);
    g_unlink(a);
    g_unlink(b);
    g_unlink(nut);
    g_free(a);
    g_free(b);
    g_free(ta);
    g_free(tb);
    g_free(nut);
    g_free(text);
}

// A probe for this test: records the data pointer of every buffer it sees.
static GPtrArray *seen_ptrs[2];

static int probe_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    const char *name = reel_element_name(e);
    g_ptr_array_add(seen_ptrs[strcmp(name, "before") == 0 ? 0 : 1], buf->data);
    return reel_element_push(e, 0, buf);
}

static const reel_element_class probe_class = {
    .name = "test-probe",
    .description = "records data pointers (test only)",
    .flags = REEL_CLASS_PASSTHROUGH,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "any", .output_caps = "any",
    .process = probe_process,
};

static void test_convert_passes_through(void **state)
{
    (void)state;
    reel_element_class_register(&probe_class);
    for (int i = 0; i < 2; i++)
        seen_ptrs[i] = g_ptr_array_new();
    char *ref = out_path("pass-ref.txt"), *out = out_path("pass-out.txt");
    char *text = g_strdup_printf("testsrc num-buffers=20 pattern=noise ! video/raw,format=nv12,width=64,height=48 "
                                 "! tee name=t t. ! queue ! fakesink location=%s "
                                 "t. ! queue ! test-probe name=before ! convert ! video/raw,format=nv12 "
                                 "! test-probe name=after ! fakesink location=%s",
                                 ref, out);
    assert_int_equal(run(text, NULL), 0);
    GPtrArray *a = md5_file(ref), *b = md5_file(out);
    assert_int_equal(a->len, 20);
    assert_same_md5s(a, b);
    // The very same memory came out: no copy.
    assert_int_equal(seen_ptrs[0]->len, 20);
    assert_int_equal(seen_ptrs[1]->len, 20);
    for (guint i = 0; i < 20; i++)
        assert_ptr_equal(seen_ptrs[0]->pdata[i], seen_ptrs[1]->pdata[i]);
    for (int i = 0; i < 2; i++)
        g_ptr_array_free(seen_ptrs[i], TRUE);
    g_ptr_array_free(a, TRUE);
    g_ptr_array_free(b, TRUE);
    g_unlink(ref);
    g_unlink(out);
    g_free(ref);
    g_free(out);
    g_free(text);
}

static void test_no_format_in_common(void **state)
{
    (void)state;
    reel_pipeline *p = build("testsrc num-buffers=1 format=rgb24 ! encode codec=h264 ! fakesink");
    GError *err = NULL;
    int rc = reel_pipeline_prepare(p, &err);
    if (rc == 0) {
        // Only an absent libx264 accepts anything here; start says so.
        assert_int_equal(reel_pipeline_run(p, &err), REEL_EUNSUPPORTED);
        reel_skip_note("%s", err->message);
        g_error_free(err);
        reel_pipeline_destroy(&p);
        skip();
    }
    assert_int_equal(rc, REEL_EFORMAT);
    assert_non_null(strstr(err->message, "cannot link 'testsrc0' to 'encode0': no format in common"));
    assert_non_null(strstr(err->message, "yuv420p"));
    g_error_free(err);
    reel_pipeline_destroy(&p);
}

// codec= takes FFmpeg's video encoders only, named in the parse error;
// options= reach the encoder (x264's profile shows in the file) and a
// malformed one is an error.
static void test_encoder_names_and_options(void **state)
{
    (void)state;
    const char *bad[] = { "nonesuch", "aac" };
    for (int i = 0; i < 2; i++) {
        char *text = g_strdup_printf("testsrc num-buffers=1 ! encode codec=%s ! fakesink", bad[i]);
        GError *err = NULL;
        reel_pipeline *p = reel_parse_launch(text, NULL, NULL, &err);
        assert_null(p);
        char *want = g_strdup_printf("invalid value '%s' for property 'codec' of 'encode': expected a video encoder",
                                     bad[i]);
        if (!strstr(err->message, want))
            fail_msg("'%s' lacks '%s'", err->message, want);
        g_free(want);
        g_error_free(err);
        g_free(text);
    }
    char *mp4 = out_path("enc-baseline.mp4");
    char *text = g_strdup_printf("testsrc num-buffers=5 ! video/raw,format=yuv420p,width=64,height=48 "
                                 "! encode codec=libx264 options=profile=baseline:preset=ultrafast ! sink location=%s",
                                 mp4);
    char *msg = NULL;
    if (run(text, &msg) != 0)
        fail_msg("%s: %s", text, msg);
    const char *argv[] = { "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=profile",
                           "-of", "csv=p=0", mp4, NULL };
    char *profile = g_strstrip(capture(argv));
    assert_string_equal(profile, "Constrained Baseline");
    g_free(profile);
    g_free(text);
    text = g_strdup_printf("testsrc num-buffers=1 ! video/raw,format=yuv420p ! encode codec=mpeg4 options=qscale "
                           "! sink location=%s", mp4);
    assert_int_equal(run(text, &msg), REEL_EINVAL);
    if (!strstr(msg, "encode0: options 'qscale' are not KEY=VALUE:KEY=VALUE"))
        fail_msg("unexpected message: %s", msg);
    g_free(msg);
    g_unlink(mp4);
    g_free(text);
    g_free(mp4);
}

static void test_unwritable_output(void **state)
{
    (void)state;
    const char *bad[] = { "/nonexistent-dir/x.mkv", "/nonexistent-dir/f-%05d.png" };
    const char *codec[] = { "ffv1", "png" };
    for (int i = 0; i < 2; i++) {
        char *text = g_strdup_printf("testsrc num-buffers=1 ! convert ! encode codec=%s ! sink location=%s",
                                     codec[i], bad[i]);
        char *msg = NULL;
        assert_int_equal(run(text, &msg), REEL_EIO);
        char *want = g_strdup_printf("sink0: cannot write '%s'", bad[i]);
        if (!strstr(msg, want))
            fail_msg("unexpected message: %s", msg);
        g_free(want);
        g_free(msg);
        g_free(text);
    }
    // An unknown extension is a clear error too, not a guess.
    char *msg = NULL;
    assert_int_equal(run("testsrc num-buffers=1 ! convert ! encode codec=ffv1 ! sink location=/tmp/x.unknownext", &msg),
                     REEL_EINVAL);
    assert_non_null(strstr(msg, "sink0: cannot tell the container"));
    g_free(msg);
    // So is a codec the container cannot hold, before anything is encoded.
    char *mp4 = out_path("enc-ffv1-in.mp4");
    char *text = g_strdup_printf("testsrc num-buffers=1 ! convert ! encode codec=ffv1 ! sink location=%s", mp4);
    assert_int_equal(run(text, &msg), REEL_EUNSUPPORTED);
    if (!strstr(msg, "sink0: the mp4 container cannot hold ffv1"))
        fail_msg("unexpected message: %s", msg);
    assert_false(g_file_test(mp4, G_FILE_TEST_EXISTS));
    g_free(msg);
    g_free(text);
    g_free(mp4);
}

static void test_size_change_fails_clearly(void **state)
{
    (void)state;
    // Two sizes into one encoder: a mid-stream change it cannot follow.
    char *msg = NULL;
    int rc = run("funnel name=m ! encode codec=ffv1 ! fakesink "
                 "testsrc num-buffers=20 ! video/raw,format=yuv420p,width=64,height=48 ! m. "
                 "testsrc num-buffers=20 ! video/raw,format=yuv420p,width=32,height=32 ! m.",
                 &msg);
    assert_int_equal(rc, REEL_EFORMAT);
    if (!strstr(msg, "encode0: the input changed from"))
        fail_msg("unexpected message: %s", msg);
    g_free(msg);

    // convert before it, with a fixed size, makes the same input work.
    assert_int_equal(run("funnel name=m ! convert ! video/raw,width=48,height=48 ! encode codec=ffv1 ! fakesink "
                         "testsrc num-buffers=20 ! video/raw,format=yuv420p,width=64,height=48 ! m. "
                         "testsrc num-buffers=20 ! video/raw,format=yuv420p,width=32,height=32 ! m.",
                         NULL),
                     0);
}

static int count_lines(const char *path)
{
    char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, NULL))
        return 0;
    int n = 0;
    for (gsize i = 0; i < len; i++)
        n += text[i] == '\n';
    g_free(text);
    return n;
}

// Ctrl-C on the CLI: exit 0, and the mp4 holds every frame the summary counts.
static void test_interrupt_keeps_a_playable_file(void **state)
{
    (void)state;
    const char *bin = g_getenv("REEL_BIN");
    if (!bin)
        reel_skip("REEL_BIN is not set (ctest sets it)");
    char *mp4 = out_path("enc-interrupt.mp4"), *log = out_path("enc-interrupt.log");
    char *lines = out_path("enc-interrupt.jsonl");
    g_unlink(mp4);
    g_unlink(lines);
    // metasink beside the encoder writes a whole line per frame as it goes:
    // what the test waits on before the signal.
    char *desc = g_strdup_printf("testsrc is-live=true framerate=100 ! video/raw,format=yuv420p,width=160,height=120 "
                                 "! tee name=t t. ! queue ! encode codec=h264 preset=ultrafast ! sink location=%s "
                                 "t. ! queue ! metasink location=%s",
                                 mp4, lines);
    // exec through sh only to send stderr to a file: the signal reaches reel.
    const char *argv[] = { "/bin/sh", "-c", "exec \"$0\" run \"$1\" 2>\"$2\"", bin, desc, log, NULL };
    GPid pid;
    GError *err = NULL;
    if (!g_spawn_async(NULL, (char **)argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &err))
        fail_msg("cannot run %s: %s", bin, err->message);
    // Lines exist once the pipeline runs, after reel handles SIGINT.
    int64_t deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (count_lines(lines) < 20) {
        if (g_get_monotonic_time() > deadline) {
            kill(pid, SIGKILL);
            fail_msg("fewer than 20 frames after 60 s");
        }
        g_usleep(10000);
    }
    kill(pid, SIGINT);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    g_spawn_close_pid(pid);
    char *text = NULL;
    assert_true(g_file_get_contents(log, &text, NULL, NULL));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("reel did not exit 0 (status %d): %s", status, text);
    const char *done = strstr(text, "done: ");
    if (!done)
        fail_msg("no summary line in: %s", text);
    int frames = atoi(done + strlen("done: "));
    assert_true(frames >= 20);
    assert_int_equal(probe_frames(mp4), frames);
    g_free(text);
    g_unlink(mp4);
    g_unlink(log);
    g_unlink(lines);
    g_free(mp4);
    g_free(log);
    g_free(lines);
    g_free(desc);
}

int main(void)
{
    reel_init();
    struct CMUnitTest tests[G_N_ELEMENTS(cases) + 12];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_ffv1_is_bit_exact);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_codec, (void *)&cases[i]);
        tests[n++].name = g_strdup_printf("test_codec_%s", cases[i].codec);
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_convert_format);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_convert_range);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_convert_scales);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_convert_passes_through);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_no_format_in_common);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_encoder_names_and_options);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_unwritable_output);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_size_change_fails_clearly);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_interrupt_keeps_a_playable_file);
    int failed = _cmocka_run_group_tests("test_encode", tests, n, NULL, NULL);
    for (size_t i = 1; i <= G_N_ELEMENTS(cases); i++)
        g_free((char *)tests[i].name);
    return reel_test_verdict(failed);
}

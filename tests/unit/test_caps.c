// Caps: text form, intersection, fixedness.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "pipeline/parse.h"
#include "reel/reel.h"
#include "tests/support/skip.h"

static reel_caps parse(const char *text)
{
    reel_caps c;
    GError *err = NULL;
    if (!reel_caps_parse(text, &c, NULL, &err))
        fail_msg("'%s': %s", text, err->message);
    return c;
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *texts[] = {
        "video/raw,format=rgb24,width=224,height=224,framerate=30/1,memory=host",
        "video/raw,format=yuv420p|nv12",
        "video/encoded,codec=h264",
        "tensor,dtype=float32,shape=1x3x?x?",
        "video/raw|tensor",
        "any",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        reel_caps c = parse(texts[i]);
        char *s = reel_caps_to_string(&c);
        assert_string_equal(s, texts[i]);
        g_free(s);
    }
}

static void test_errors_point_at_the_field(void **state)
{
    (void)state;
    struct {
        const char *text;
        size_t offset;
        const char *why;
    } cases[] = {
        { "video/rwa", 0, "media type" },
        { "video/raw,format=rgb42", 10, "pixel formats" },
        { "video/raw, width=-3", 11, "positive integer" },
        { "video/raw,width=3,colour=red", 18, "unknown field" },
        { "tensor,shape=1x0", 7, "dimensions" },
        { "video/raw,width", 10, "key=value" },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        reel_caps c;
        size_t off = 999;
        GError *err = NULL;
        assert_false(reel_caps_parse(cases[i].text, &c, &off, &err));
        assert_int_equal(off, cases[i].offset);
        assert_non_null(strstr(err->message, cases[i].why));
        g_error_free(err);
    }
}

static void assert_caps(const char *text, const char *canonical)
{
    reel_caps c = parse(text);
    char *s = reel_caps_to_string(&c);
    if (strcmp(s, canonical) != 0)
        fail_msg("'%s' reads as '%s', expected '%s'", text, s, canonical);
    g_free(s);
}

// GStreamer's spelling reads as reel's own.
static void test_gstreamer_spelling(void **state)
{
    (void)state;
    assert_caps("video/x-raw", "video/raw");
    assert_caps("video/x-raw,format=RGB,width=(int)320,height=(i)240,framerate=(fraction)30/1",
                "video/raw,format=rgb24,width=320,height=240,framerate=30/1");
    assert_caps("video/x-raw, format=(string)I420", "video/raw,format=yuv420p");
    assert_caps("video/x-raw,format=NV12|GRAY8|BGR|BGRA|RGBA|Y42B|Y444",
                "video/raw,format=gray8|bgr24|rgba|bgra|nv12|yuv422p|yuv444p");
    assert_caps("video/x-raw , width = 64 , height= (int) 48", "video/raw,width=64,height=48");
    assert_caps("video/x-raw|tensor", "video/raw|tensor");
    assert_caps("video/x-h264", "video/encoded,codec=h264");
    assert_caps("video/x-h265,width=(int)1920", "video/encoded,codec=hevc,width=1920");
    assert_caps("video/x-vp9", "video/encoded,codec=vp9");
    assert_caps("image/jpeg", "video/encoded,codec=mjpeg");
    // reel's own names are unchanged, lower case only.
    assert_caps("video/raw,format=rgb24", "video/raw,format=rgb24");
    reel_caps c;
    assert_false(reel_caps_parse("video/raw,format=Rgb24", &c, NULL, NULL));
}

// What reel cannot take from GStreamer's caps: the field at fault, and a
// hint in reel's spelling.
static void test_gstreamer_hints(void **state)
{
    (void)state;
    struct {
        const char *text;
        size_t offset;
        const char *hint; // a part of it; NULL: none
    } cases[] = {
        { "video/x-raw,format=YUY2", 12, "rgb24" },
        { "video/x-raw,format={RGB", 12, "format=rgb24|bgr24" },
        { "video/x-raw,width=(string)320", 12, "write width=320 (or width=(int)320)" },
        { "video/x-raw,framerate=(int)30", 12, "write framerate=30/1" },
        { "video/x-raw,width=[1", 12, "one width" },
        { "video/x-raw,pixel-aspect-ratio=1/1", 12, "no pixel-aspect-ratio" },
        { "video/x-h264,stream-format=byte-stream", 13, "no stream-format" },
        { "video/x-raw(memory:GLMemory)", 0, "memory=device" },
        { "video/x-h264|video/x-h265", 0, "one codec per caps" },
        { "vide/raw", 0, "did you mean 'video/raw'?" },
        { "video/raw,width=3,colour=red", 18, NULL },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        reel_caps c;
        size_t off = 999;
        char *hint = (char *)"unset";
        GError *err = NULL;
        assert_false(reel_caps_parse_hint(cases[i].text, &c, &off, &hint, &err));
        assert_non_null(err);
        if (off != cases[i].offset)
            fail_msg("'%s': offset %zu, expected %zu", cases[i].text, off, cases[i].offset);
        if (cases[i].hint ? !hint || !strstr(hint, cases[i].hint) : hint != NULL)
            fail_msg("'%s': hint '%s', expected '%s'", cases[i].text, hint ? hint : "(none)",
                     cases[i].hint ? cases[i].hint : "(none)");
        g_free(hint);
        g_error_free(err);
    }
}

static void test_intersect(void **state)
{
    (void)state;
    reel_caps a = parse("video/raw,format=rgb24|bgr24,width=640"), b = parse("video/raw,format=bgr24|gray8"), r;
    assert_true(reel_caps_intersect(&a, &b, &r));
    assert_int_equal(r.pixfmts, REEL_PIXFMT_BIT(REEL_PIXFMT_BGR24));
    assert_int_equal(r.width, 640);

    reel_caps c = parse("video/raw,width=320");
    assert_false(reel_caps_intersect(&a, &c, &r));
    assert_true(reel_caps_is_empty(&r));

    reel_caps t = parse("tensor");
    assert_false(reel_caps_intersect(&a, &t, &r));

    reel_caps any = reel_caps_any();
    assert_true(reel_caps_intersect(&any, &t, &r));
    assert_true(reel_caps_equal(&r, &t));
}

static void test_fixed_and_accepts(void **state)
{
    (void)state;
    reel_caps f = parse("video/raw,format=nv12,width=64,height=48,framerate=25/1,memory=host");
    assert_true(reel_caps_is_fixed(&f));
    reel_caps open = parse("video/raw,format=nv12|rgb24,width=64,height=48,framerate=25/1,memory=host");
    assert_false(reel_caps_is_fixed(&open));
    reel_caps sink = parse("video/raw");
    assert_true(reel_caps_accepts(&sink, &f));
    reel_caps narrow = parse("video/raw,width=32");
    assert_false(reel_caps_accepts(&narrow, &f));
    reel_caps t = parse("tensor,dtype=float32,shape=1x3x8x8,memory=host");
    assert_true(reel_caps_is_fixed(&t));
    reel_caps t_open = parse("tensor,dtype=float32,shape=1x3x?x?");
    assert_true(reel_caps_accepts(&t_open, &t));
}

static void test_pixfmt_geometry(void **state)
{
    (void)state;
    assert_int_equal(reel_pixfmt_from_name("nv12"), REEL_PIXFMT_NV12);
    assert_int_equal(reel_pixfmt_from_name("nope"), REEL_PIXFMT_NONE);
    assert_int_equal(reel_pixfmt_planes(REEL_PIXFMT_NV12), 2);
    assert_int_equal(reel_pixfmt_row_bytes(REEL_PIXFMT_NV12, 1, 5), 6);
    assert_int_equal(reel_pixfmt_plane_height(REEL_PIXFMT_YUV420P, 2, 5), 3);
    assert_int_equal(reel_pixfmt_plane_height(REEL_PIXFMT_YUV422P, 1, 5), 5);
    assert_int_equal(reel_pixfmt_row_bytes(REEL_PIXFMT_RGBA, 0, 10), 40);
    assert_int_equal(reel_dtype_size(REEL_DTYPE_FLOAT16), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_errors_point_at_the_field),
        cmocka_unit_test(test_gstreamer_spelling),
        cmocka_unit_test(test_gstreamer_hints),
        cmocka_unit_test(test_intersect),
        cmocka_unit_test(test_fixed_and_accepts),
        cmocka_unit_test(test_pixfmt_geometry),
    };
    return reel_run_tests(tests, NULL, NULL);
}

// Caps: text form, intersection, fixedness.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

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
        cmocka_unit_test(test_intersect),
        cmocka_unit_test(test_fixed_and_accepts),
        cmocka_unit_test(test_pixfmt_geometry),
    };
    return reel_run_tests(tests, NULL, NULL);
}

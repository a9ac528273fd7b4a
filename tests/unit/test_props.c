// Properties: parsing and validation of every type through the built-in
// elements' tables.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

static reel_element *make(const char *klass)
{
    GError *err = NULL;
    reel_element *e = reel_element_new(reel_element_class_find(klass), NULL, &err);
    assert_non_null(e);
    return e;
}

static void check_value(reel_element *e, const char *prop, const char *text, const char *stored)
{
    GError *err = NULL;
    if (reel_element_set(e, prop, text, &err) != 0)
        fail_msg("%s=%s: %s", prop, text, err->message);
    char *v = reel_element_get(e, prop);
    assert_string_equal(v, stored);
    g_free(v);
}

static void check_rejected(reel_element *e, const char *prop, const char *text, const char *says)
{
    GError *err = NULL;
    char *before = reel_element_get(e, prop);
    assert_int_equal(reel_element_set(e, prop, text, &err), REEL_EINVAL);
    assert_non_null(err);
    if (!strstr(err->message, says))
        fail_msg("%s=%s: message '%s' lacks '%s'", prop, text, err->message, says);
    g_error_free(err);
    // A rejected value leaves the property as it was.
    char *after = reel_element_get(e, prop);
    assert_string_equal(before, after);
    g_free(before);
    g_free(after);
}

static void test_defaults(void **state)
{
    (void)state;
    reel_element *e = make("testsrc");
    char *v = reel_element_get(e, "pattern");
    assert_string_equal(v, "bars");
    g_free(v);
    v = reel_element_get(e, "num-buffers");
    assert_string_equal(v, "-1");
    g_free(v);
    v = reel_element_get(e, "framerate");
    assert_string_equal(v, "30/1");
    g_free(v);
    assert_null(reel_element_get(e, "no-such"));
    reel_element_destroy(&e);
    assert_null(e);
}

static void test_each_type(void **state)
{
    (void)state;
    reel_element *e = make("testsrc");
    check_value(e, "width", "640", "640");
    check_value(e, "num-buffers", "2k", "2000");
    check_value(e, "color", "0xff0000", "16711680");
    check_value(e, "is-live", "yes", "true");
    check_value(e, "is-live", "off", "false");
    check_value(e, "pattern", "checkers", "checkers");
    check_value(e, "framerate", "60000/1001", "60000/1001");
    check_value(e, "framerate", "25", "25/1");
    check_value(e, "framerate", "29.97", "2997/100");
    check_value(e, "framerate", "50/2", "25/1");
    reel_element_destroy(&e);

    e = make("fakesink");
    check_value(e, "location", "/tmp/a b.txt", "/tmp/a b.txt");
    check_value(e, "location", "", "");
    reel_element_destroy(&e);
}

static void test_rejections(void **state)
{
    (void)state;
    reel_element *e = make("testsrc");
    check_rejected(e, "width", "abc", "an integer in 0..16384");
    check_rejected(e, "width", "16385", "0..16384");
    check_rejected(e, "width", "-1", "0..16384");
    check_rejected(e, "width", "12px", "an integer");
    check_rejected(e, "width", "99999999999999999999", "an integer");
    check_rejected(e, "pattern", "stripes", "one of: bars, gradient, checkers, solid, noise");
    check_rejected(e, "is-live", "maybe", "true or false");
    check_rejected(e, "framerate", "30/0", "fraction");
    check_rejected(e, "framerate", "-5", "fraction");
    GError *err = NULL;
    assert_int_equal(reel_element_set(e, "widht", "3", &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "has no property 'widht'"));
    g_error_free(err);
    reel_element_destroy(&e);

    e = make("queue");
    check_rejected(e, "max-size", "0", "1..1048576");
    check_rejected(e, "leaky", "sideways", "no, upstream, downstream");
    reel_element_destroy(&e);
}

static void test_element_names(void **state)
{
    (void)state;
    reel_pipeline *p = reel_pipeline_new(NULL);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_add(p, make("testsrc"), &err), 0);
    assert_int_equal(reel_pipeline_add(p, make("testsrc"), &err), 0);
    reel_element *named = reel_element_new(reel_element_class_find("fakesink"), "out", &err);
    assert_int_equal(reel_pipeline_add(p, named, &err), 0);
    assert_non_null(reel_pipeline_find(p, "testsrc0"));
    assert_non_null(reel_pipeline_find(p, "testsrc1"));
    assert_ptr_equal(reel_pipeline_find(p, "out"), named);

    // A second element of the same name is refused (and freed).
    reel_element *dup = reel_element_new(reel_element_class_find("fakesink"), "out", &err);
    assert_int_equal(reel_pipeline_add(p, dup, &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "'out' is already"));
    g_clear_error(&err);
    reel_pipeline_destroy(&p);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_each_type),
        cmocka_unit_test(test_rejections),
        cmocka_unit_test(test_element_names),
    };
    return reel_run_tests(tests, NULL, NULL);
}

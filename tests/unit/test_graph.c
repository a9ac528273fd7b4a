// Graph checks and negotiation, on pipelines built through the C API.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

// Builds a chain "a ! b ! c" of (class, property list) items; returns the
// pipeline with every element linked in order.
static reel_pipeline *chain(const char *const *items, int n)
{
    reel_pipeline *p = reel_pipeline_new(NULL);
    reel_element *prev = NULL;
    for (int i = 0; i < n; i++) {
        gchar **words = g_strsplit(items[i], " ", -1);
        GError *err = NULL;
        reel_element *e = reel_element_new(reel_element_class_find(words[0]), NULL, &err);
        assert_non_null(e);
        for (int w = 1; words[w]; w++) {
            gchar **kv = g_strsplit(words[w], "=", 2);
            assert_int_equal(reel_element_set(e, kv[0], kv[1], &err), 0);
            g_strfreev(kv);
        }
        g_strfreev(words);
        assert_int_equal(reel_pipeline_add(p, e, &err), 0);
        if (prev)
            assert_int_equal(reel_pipeline_link(p, prev, e, &err), 0);
        prev = e;
    }
    return p;
}

static void expect_prepare_error(reel_pipeline *p, const char *const *fragments)
{
    GError *err = NULL;
    assert_true(reel_pipeline_prepare(p, &err) < 0);
    assert_non_null(err);
    for (; *fragments; fragments++)
        if (!strstr(err->message, *fragments))
            fail_msg("message '%s' lacks '%s'", err->message, *fragments);
    g_error_free(err);
    reel_pipeline_destroy(&p);
}

static void test_unlinked_pads(void **state)
{
    (void)state;
    const char *lone_source[] = { "testsrc" };
    expect_prepare_error(chain(lone_source, 1),
                         (const char *[]){ "'testsrc0'", "0 linked outputs, needs at least 1", NULL });
    const char *dangling[] = { "testsrc", "queue" };
    expect_prepare_error(chain(dangling, 2), (const char *[]){ "'queue0'", "outputs", NULL });
    reel_pipeline *empty = reel_pipeline_new(NULL);
    expect_prepare_error(empty, (const char *[]){ "no elements", NULL });
}

static void test_link_errors_name_both(void **state)
{
    (void)state;
    reel_pipeline *p = reel_pipeline_new(NULL);
    GError *err = NULL;
    reel_element *a = reel_element_new(reel_element_class_find("fakesink"), "a", &err);
    reel_element *b = reel_element_new(reel_element_class_find("fakesink"), "b", &err);
    reel_element *s = reel_element_new(reel_element_class_find("testsrc"), "s", &err);
    reel_pipeline_add(p, a, &err);
    reel_pipeline_add(p, b, &err);
    reel_pipeline_add(p, s, &err);
    assert_int_equal(reel_pipeline_link(p, a, b, &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "cannot link 'a' to 'b': 'a' (fakesink) has no outputs"));
    g_clear_error(&err);
    assert_int_equal(reel_pipeline_link(p, s, a, &err), 0);
    assert_int_equal(reel_pipeline_link(p, s, b, &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "every output of 's' is already linked"));
    g_clear_error(&err);
    reel_pipeline_destroy(&p);
}

static void test_cycle(void **state)
{
    (void)state;
    reel_pipeline *p = reel_pipeline_new(NULL);
    GError *err = NULL;
    reel_element *x = reel_element_new(reel_element_class_find("identity"), "x", &err);
    reel_element *y = reel_element_new(reel_element_class_find("identity"), "y", &err);
    reel_pipeline_add(p, x, &err);
    reel_pipeline_add(p, y, &err);
    reel_pipeline_link(p, x, y, &err);
    reel_pipeline_link(p, y, x, &err);
    expect_prepare_error(p, (const char *[]){ "cycle", "'x'", "'y'", NULL });
}

static void test_incompatible_formats(void **state)
{
    (void)state;
    const char *tensor[] = { "testsrc", "capsfilter caps=tensor", "fakesink" };
    expect_prepare_error(chain(tensor, 3),
                         (const char *[]){ "cannot link 'testsrc0' to 'capsfilter0'", "no format in common",
                                           "tensor", NULL });
    const char *two_widths[] = { "testsrc", "capsfilter caps=video/raw,width=320",
                                 "capsfilter caps=video/raw,width=640", "fakesink" };
    expect_prepare_error(chain(two_widths, 4),
                         (const char *[]){ "'capsfilter0' to 'capsfilter1'", "width=320", "width=640", NULL });
    const char *fixed_width[] = { "testsrc width=100", "capsfilter caps=video/raw,width=320", "fakesink" };
    expect_prepare_error(chain(fixed_width, 3),
                         (const char *[]){ "'testsrc0' to 'capsfilter0'", "produces", "width=100", NULL });
}

static void test_negotiation_fixes_from_downstream(void **state)
{
    (void)state;
    const char *items[] = { "testsrc", "queue", "capsfilter caps=video/raw,format=nv12|gray8,width=64,height=48",
                            "fakesink" };
    reel_pipeline *p = chain(items, 4);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_prepare(p, &err), 0);
    reel_element *src = reel_pipeline_find(p, "testsrc0");
    char *f = reel_caps_to_string(reel_element_output_format(src, 0));
    // Of the two allowed, the more useful one (reel_pixfmt_pick) is chosen.
    assert_string_equal(f, "video/raw,format=nv12,width=64,height=48,framerate=30/1,memory=host");
    g_free(f);
    // Passthrough elements carry the same format on.
    reel_element *q = reel_pipeline_find(p, "queue0");
    assert_true(reel_caps_equal(reel_element_output_format(q, 0), reel_element_output_format(src, 0)));
    reel_pipeline_destroy(&p);
}

// Whether vulkan:0 opens here (a GPU, or a software driver such as lavapipe).
static bool vulkan_opens(char **why)
{
    GError *err = NULL;
    reel_device *dev = reel_device_open("vulkan:0", &err);
    if (!dev) {
        *why = g_strdup(err ? err->message : "no reason given");
        g_clear_error(&err);
        return false;
    }
    reel_device_unref(&dev);
    return true;
}

static void test_placement_fallback_and_strict(void **state)
{
    (void)state;
    char *why = NULL;
    if (!vulkan_opens(&why)) {
        reel_skip_note("placement on vulkan:0: no Vulkan device (%s)", why);
        g_free(why);
        skip();
    }
    const char *items[] = { "testsrc num-buffers=1", "identity device=cpu", "fakesink" };
    reel_pipeline *p = chain(items, 3);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_set(p, "device", "vulkan:0", &err), 0);
    assert_int_equal(reel_pipeline_prepare(p, &err), 0);
    reel_element_report r[3];
    assert_int_equal(reel_pipeline_report(p, r, 3), 3);
    // Asked for the GPU, runs on the cpu, and says why.
    assert_string_equal(r[0].device_requested, "vulkan:0");
    assert_string_equal(r[0].device, "cpu");
    assert_non_null(strstr(r[0].reason, "testsrc has no implementation for vulkan:0"));
    // An element's own device wins over the pipeline's.
    assert_string_equal(r[1].device_requested, "cpu");
    assert_string_equal(r[1].reason, "");
    // Settings are fixed once prepared.
    assert_int_equal(reel_pipeline_set(p, "device", "cpu", &err), REEL_EINVAL);
    g_clear_error(&err);
    reel_pipeline_destroy(&p);

    p = chain(items, 3);
    assert_int_equal(reel_pipeline_set(p, "placement", "strict", &err), 0);
    assert_int_equal(reel_pipeline_set(p, "device", "vulkan:0", &err), 0);
    expect_prepare_error(p, (const char *[]){ "placement=strict", "'testsrc0'", "vulkan:0", NULL });
}

// Needs no device: a setting that does not exist is refused by name.
static void test_unknown_pipeline_setting(void **state)
{
    (void)state;
    const char *items[] = { "testsrc num-buffers=1", "identity device=cpu", "fakesink" };
    reel_pipeline *p = chain(items, 3);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_set(p, "colour", "red", &err), REEL_EINVAL);
    assert_non_null(strstr(err->message, "unknown pipeline setting 'colour'"));
    g_clear_error(&err);
    reel_pipeline_destroy(&p);
}

// Objects the program shares with its elements: set, read, replaced,
// removed, never freed by the pipeline (an ASan build would report it).
static void test_shared_objects(void **state)
{
    (void)state;
    const char *items[] = { "testsrc num-buffers=1", "fakesink" };
    reel_pipeline *p = chain(items, 2);
    int first = 1, second = 2;
    assert_null(reel_pipeline_shared(p, "nats.connection"));
    reel_pipeline_set_shared(p, "nats.connection", &first);
    assert_ptr_equal(reel_pipeline_shared(p, "nats.connection"), &first);
    assert_ptr_equal(reel_pipeline_shared(reel_element_pipeline(reel_pipeline_find(p, "fakesink0")),
                                          "nats.connection"), &first);
    reel_pipeline_set_shared(p, "nats.connection", &second);
    assert_ptr_equal(reel_pipeline_shared(p, "nats.connection"), &second);
    assert_null(reel_pipeline_shared(p, "other"));
    reel_pipeline_set_shared(p, "nats.connection", NULL);
    assert_null(reel_pipeline_shared(p, "nats.connection"));
    assert_null(reel_pipeline_shared(NULL, "nats.connection"));
    reel_pipeline_set_shared(p, "kept", &first); // still set at destroy: not the pipeline's to free
    reel_pipeline_destroy(&p);
    assert_int_equal(first, 1);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unlinked_pads),
        cmocka_unit_test(test_link_errors_name_both),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_incompatible_formats),
        cmocka_unit_test(test_negotiation_fixes_from_downstream),
        cmocka_unit_test(test_placement_fallback_and_strict),
        cmocka_unit_test(test_unknown_pipeline_setting),
        cmocka_unit_test(test_shared_objects),
    };
    return reel_run_tests(tests, NULL, NULL);
}

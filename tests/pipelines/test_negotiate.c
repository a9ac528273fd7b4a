// Negotiation errors name the link where the formats fail to meet: an
// encoder's format refused after elements that only pass formats on (queue,
// identity, detect, overlay, a tee's branch) is reported between the last
// of them and the encoder, with a convert suggested there; inserting that
// convert makes the pipeline negotiate.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

// Prepares `text`: NULL when it negotiates, else the error's message.
static char *prepare(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1), &err);
    if (!p)
        fail_msg("%s", err->message);
    char *message = NULL;
    if (reel_pipeline_prepare(p, &err) != 0) {
        assert_int_equal(err->code, REEL_EFORMAT);
        message = g_strdup(err->message);
        g_error_free(err);
    }
    reel_pipeline_destroy(&p);
    return message;
}

static void assert_has(const char *message, const char *part)
{
    if (!strstr(message, part))
        fail_msg("'%s' not in:\n%s", part, message);
}

// `before` ! `after` fails with each of `parts` in the message; `before`
// ! convert ! `after` negotiates. Skips when this FFmpeg's MJPEG encoder
// takes the frames as they are.
static void check(const char *before, const char *after, const char *const *parts)
{
    char *text = g_strdup_printf("%s ! %s", before, after);
    char *m = prepare(text);
    g_free(text);
    if (!m)
        reel_skip("this FFmpeg's mjpeg encoder takes limited-range yuv420p: nothing to convert");
    for (const char *const *p = parts; *p; p++)
        assert_has(m, *p);
    g_free(m);
    text = g_strdup_printf("%s ! convert ! %s", before, after);
    m = prepare(text);
    if (m)
        fail_msg("%s: %s", text, m);
    g_free(text);
}

#define SRC "testsrc num-buffers=1 format=yuv420p width=64 height=48"
#define MJPEG "encode codec=mjpeg ! fakesink"

static void test_after_passthrough_elements(void **state)
{
    (void)state;
    check(SRC " ! queue ! identity", MJPEG,
          (const char *[]){ "cannot link 'identity0' to 'encode0': no format in common",
                            "'identity0' passes on video/raw,format=yuv420p,width=64,height=48",
                            "from 'testsrc0'", "'encode0' accepts video/raw,format=yuvj420p",
                            "\nhint: put a convert between them: identity0 ! convert ! encode0", NULL });
}

static void test_on_a_branch_of_a_tee(void **state)
{
    (void)state;
    check(SRC " ! tee name=t  t. ! queue ! fakesink  t. ! queue", MJPEG,
          (const char *[]){ "cannot link 'queue1' to 'encode0'", "from 'testsrc0'",
                            "hint: put a convert between them: queue1 ! convert ! encode0", NULL });
}

// The example from a detector's pipeline: the frames infer hands on pass
// through detect and overlay unchanged; the encoder after overlay is where
// they fail (was: reported between infer and detect).
static void test_after_detect_and_overlay(void **state)
{
    (void)state;
    const char *models = getenv("REEL_TEST_MODELS");
    char *model = g_strdup_printf("%s/conv_silu.onnx", models ? models : "models");
    if (!g_file_test(model, G_FILE_TEST_EXISTS)) {
        g_free(model);
        reel_skip("no %s (tests/models/make_models.py needs python3-onnx)", "conv_silu.onnx");
    }
    char *before = g_strdup_printf(SRC " ! preprocess size=8x8 ! infer model=%s ! detect ! overlay", model);
    check(before, MJPEG,
          (const char *[]){ "cannot link 'overlay0' to 'encode0'", "from 'infer0'",
                            "hint: put a convert between them: overlay0 ! convert ! encode0", NULL });
    g_free(before);
    g_free(model);
}

// A direct link keeps its message; the hint comes only where a convert
// can help (raw video on both sides).
static void test_direct_links(void **state)
{
    (void)state;
    char *m = prepare(SRC " ! " MJPEG);
    if (!m)
        reel_skip("this FFmpeg's mjpeg encoder takes limited-range yuv420p: nothing to convert");
    assert_has(m, "cannot link 'testsrc0' to 'encode0': no format in common ('testsrc0' produces");
    assert_has(m, "hint: put a convert between them: testsrc0 ! convert ! encode0");
    g_free(m);

    m = prepare("testsrc num-buffers=1 ! queue ! tensor ! fakesink");
    assert_non_null(m);
    assert_has(m, "cannot link 'queue0' to 'capsfilter0'");
    assert_null(strstr(m, "hint:"));
    g_free(m);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_after_passthrough_elements),
        cmocka_unit_test(test_on_a_branch_of_a_tee),
        cmocka_unit_test(test_after_detect_and_overlay),
        cmocka_unit_test(test_direct_links),
    };
    return reel_run_tests(tests, NULL, NULL);
}

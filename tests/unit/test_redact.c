// Secrets out of messages, control characters out of logs (base/redact.c).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/redact.h"
#include "tests/support/skip.h"

static void check_redact(const char *in, bool keep_width, const char *want)
{
    char *got = reel_redact(in, keep_width);
    if (strcmp(got, want) != 0)
        fail_msg("redact('%s'): '%s', wanted '%s'", in, got, want);
    if (keep_width)
        assert_int_equal(strlen(got), strlen(in));
    g_free(got);
}

static void urls(void **state)
{
    (void)state;
    check_redact("rtsp://admin:hunter2@cam1:554/live", false, "rtsp://admin:***@cam1:554/live");
    check_redact("nats://s3cr3t-token@10.0.0.1:4222", false, "nats://***@10.0.0.1:4222");
    check_redact("cannot open 'rtsp://u:p@h/x' (or 'mqtts://a:b@broker'): refused", false,
                 "cannot open 'rtsp://u:***@h/x' (or 'mqtts://a:***@broker'): refused");
    // '@' in the path is not userinfo; no '@' at all: unchanged.
    check_redact("http://host/a@b", false, "http://host/a@b");
    check_redact("rtsp://cam1/live", false, "rtsp://cam1/live");
    check_redact("no url here: a://", false, "no url here: a://");
    // A password with ':' and '@' in it hides whole (the last '@' ends it).
    check_redact("rtsp://u:p:w@d@h/x", false, "rtsp://u:***@h/x");
    // Columns kept: one '*' per hidden character.
    check_redact("source location=rtsp://u:pw@h ! x", true, "source location=rtsp://u:**@h ! x");
    check_redact("nats://tok@h", true, "nats://***@h");
    assert_null(reel_redact(NULL, false));
}

static void control(void **state)
{
    (void)state;
    GString *s = g_string_new(NULL);
    reel_escape_control(s, "a\x1b[2J\r\nb\tc\\d\x7f" "\xc3\xa9");
    assert_string_equal(s->str, "a\\x1b[2J\\r\\nb\\tc\\\\d\\x7f\xc3\xa9");
    g_string_free(s, TRUE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(urls),
        cmocka_unit_test(control),
    };
    return reel_run_tests(tests, NULL, NULL);
}

// identity: passes buffers through; can slow down or fail on purpose, to
// test what surrounds it.
#include "reel/reel.h"

typedef struct identity_priv {
    int sleep_us;
    int error_after;
    int64_t seen;
} identity_priv;

static const reel_prop props[] = {
    { "sleep-us", REEL_PROP_INT, offsetof(identity_priv, sleep_us), "0", 0, 10000000,
      .help = "microseconds to sleep per buffer", .flags = REEL_PROP_MUTABLE | REEL_PROP_TEST_HOOK },
    { "error-after", REEL_PROP_INT, offsetof(identity_priv, error_after), "-1", -1, INT32_MAX, .flags = REEL_PROP_TEST_HOOK,
      .help = "fail on this buffer (counted from 0); -1 never" },
    { NULL },
};

static int start(reel_element *e)
{
    identity_priv *s = reel_element_priv(e);
    s->seen = 0;
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    identity_priv *s = reel_element_priv(e);
    if (s->error_after >= 0 && s->seen++ == s->error_after) {
        reel_buffer_unref(&buf);
        return reel_element_error(e, REEL_EINVAL, "failing on buffer %d as asked (error-after)",
                                  s->error_after);
    }
    if (s->sleep_us)
        g_usleep(s->sleep_us);
    return reel_element_push(e, 0, buf);
}

const reel_element_class reel_identity_class = {
    .name = "identity",
    .description = "Passes buffers through unchanged; optionally sleeps or fails, for testing",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // buffers pass untouched, in any memory
    .priv_size = sizeof(identity_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "any", .output_caps = "any",
    .start = start,
    .process = process,
};

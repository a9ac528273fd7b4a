// rate: samples a stream down to at most `fps` frames per second of stream
// time (pts), dropping the rest: a live camera at 25 fps analysed at 5.
// fps may change while running; the output caps keep the rate negotiated
// at the start.
#include "reel/reel.h"

#include <math.h>

typedef struct rate_priv {
    reel_fraction fps;

    // Stream time of the slot the last passed frame took; INT64_MIN: the
    // first frame passes. The next slot is computed from it with the fps in
    // force, so a new rate applies from the next frame.
    int64_t slot_ns;
    int64_t passed, dropped;
} rate_priv;

static const char *fps_above_zero(const void *value)
{
    return ((const reel_fraction *)value)->num > 0 ? NULL : "a rate above 0, such as 5/1, 5 or 2.5";
}

static const reel_prop props[] = {
    { "fps", REEL_PROP_FRACTION, offsetof(rate_priv, fps), "5/1",
      .help = "most frames per second to pass, by timestamps", .flags = REEL_PROP_MUTABLE,
      .check = fps_above_zero },
    { NULL },
};

// Output caps say the new rate where the input's was higher. Frames keep
// the format they were made with (they may be shared, or pooled upstream).
static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    rate_priv *s = reel_element_priv(e);
    if (s->fps.num <= 0)
        return reel_element_error(e, REEL_EINVAL, "fps must be above 0");
    reel_fraction in = out->framerate;
    if (in.num > 0 && in.den > 0 && (int64_t)in.num * s->fps.den > (int64_t)s->fps.num * in.den)
        out->framerate = s->fps;
    return 0;
}

static int start(reel_element *e)
{
    rate_priv *s = reel_element_priv(e);
    s->slot_ns = INT64_MIN;
    s->passed = s->dropped = 0;
    return 0;
}

// The buffer's stream time in ns; its capture time when it has no pts.
static int64_t stream_ns(const reel_buffer *b)
{
    if (b->pts == REEL_PTS_NONE || b->time_base.den <= 0)
        return b->capture_ns;
    return (int64_t)llround((double)b->pts * b->time_base.num * 1e9 / b->time_base.den);
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    rate_priv *s = reel_element_priv(e);
    int64_t t = stream_ns(buf);
    int64_t interval = (int64_t)llround(1e9 * s->fps.den / s->fps.num);
    bool first = s->slot_ns == INT64_MIN;
    int64_t next = first ? INT64_MIN : s->slot_ns + interval;
    if (!first && t < next) {
        s->dropped++;
        reel_buffer_unref(&buf);
        return 0;
    }
    // Slots follow the first frame's grid, so that 25 fps to 5 keeps every
    // fifth frame; a gap (or a jump back) restarts the grid at this frame.
    bool on_grid = !first && t - next < interval;
    s->slot_ns = on_grid ? next : t;
    s->passed++;
    return reel_element_push(e, 0, buf);
}

static void stop(reel_element *e)
{
    rate_priv *s = reel_element_priv(e);
    if (s->passed || s->dropped)
        reel_element_info(e, "passed %" G_GINT64_FORMAT " frames, dropped %" G_GINT64_FORMAT, s->passed,
                          s->dropped);
    s->passed = s->dropped = 0;
}

const reel_element_class reel_rate_class = {
    .name = "rate",
    .description = "Passes at most fps frames per second (by timestamps), dropping the rest",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // frames pass untouched, in any memory
    .priv_size = sizeof(rate_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    // Raw frames only: dropping encoded packets would break their decoding.
    .input_caps = "video/raw", .output_caps = "video/raw",
    .configure = configure,
    .start = start,
    .process = process,
    .stop = stop,
};

// funnel: many inputs into one output, in arrival order (fan-in). Ends when
// every input has ended.
#include "reel/reel.h"

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    return reel_element_push(e, 0, buf);
}

const reel_element_class reel_funnel_class = {
    .name = "funnel",
    .description = "Merges any number of inputs into one output, in arrival order",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // buffers pass untouched, in any memory
    .min_inputs = 1, .max_inputs = REEL_PADS_ANY,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "any", .output_caps = "any",
    .process = process,
};

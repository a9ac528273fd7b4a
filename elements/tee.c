// tee: every input buffer goes to every output (shared, not copied).
#include "reel/reel.h"

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    int n = reel_element_n_outputs(e);
    for (int o = 0; o < n; o++) {
        int rc = reel_element_push(e, o, o + 1 < n ? reel_buffer_ref(buf) : buf);
        if (rc < 0) {
            if (o + 1 < n)
                reel_buffer_unref(&buf);
            return rc;
        }
    }
    return 0;
}

const reel_element_class reel_tee_class = {
    .name = "tee",
    .description = "Sends each buffer to every linked output (by reference, no copy)",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // buffers pass untouched, in any memory
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = REEL_PADS_ANY,
    .input_caps = "any", .output_caps = "any",
    .process = process,
};

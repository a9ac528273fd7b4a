// upload: host memory -> device memory. Pipelines insert one wherever a cpu
// element feeds a GPU element; the bytes it moves are in the report.
#include "reel/buffer.h"
#include "reel/element.h"

typedef struct upload_priv {
    uint8_t *packed;   // rows without their padding, when the source has some
    size_t packed_size;
} upload_priv;

// What downstream wants, in the memory on this side: the transfer changes
// where the bytes are, nothing else.
static int want(reel_element *e, int pad, reel_caps *want)
{
    (void)pad;
    reel_caps down = *reel_element_output_want(e, 0);
    down.memory = REEL_MEMORY_HOST;
    return reel_caps_intersect(want, &down, want) ? 0 : REEL_EFORMAT;
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    *out = *reel_element_input_format(e, 0);
    out->memory = REEL_MEMORY_DEVICE;
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    upload_priv *s = reel_element_priv(e);
    GError *err = NULL;
    reel_buffer *out = reel_buffer_to_device(in, reel_element_device(e), &s->packed, &s->packed_size,
                                             reel_element_xfer(e), &err);
    reel_buffer_unref(&in);
    if (!out) {
        int rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
        return rc;
    }
    return reel_element_push(e, 0, out);
}

static void stop(reel_element *e)
{
    upload_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->packed, g_free);
    s->packed_size = 0;
}

const reel_element_class reel_upload_class = {
    .name = "upload",
    .description = "Copies frames and tensors from host memory to the device's memory",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .priv_size = sizeof(upload_priv),
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw|tensor,memory=host", .output_caps = "video/raw|tensor,memory=device",
    .want = want,
    .configure = configure,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

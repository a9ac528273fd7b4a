// download: device memory -> host memory. Pipelines insert one wherever a
// GPU element feeds a cpu element; the bytes it moves are in the report.
#include "reel/buffer.h"
#include "reel/element.h"

typedef struct download_priv {
    uint8_t *packed;   // the device's packed rows, before they get our padding
    size_t packed_size;
} download_priv;

// What downstream wants, in the memory on this side: the transfer changes
// where the bytes are, nothing else.
static int want(reel_element *e, int pad, reel_caps *want)
{
    (void)pad;
    reel_caps down = *reel_element_output_want(e, 0);
    down.memory = REEL_MEMORY_DEVICE;
    return reel_caps_intersect(want, &down, want) ? 0 : REEL_EFORMAT;
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    *out = *reel_element_input_format(e, 0);
    out->memory = REEL_MEMORY_HOST;
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    download_priv *s = reel_element_priv(e);
    GError *err = NULL;
    reel_buffer *out = reel_buffer_to_host(in, &s->packed, &s->packed_size, reel_element_xfer(e), &err);
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
    download_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->packed, g_free);
    s->packed_size = 0;
}

const reel_element_class reel_download_class = {
    .name = "download",
    .description = "Copies frames and tensors from the device's memory to host memory",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .priv_size = sizeof(download_priv),
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw|tensor,memory=device", .output_caps = "video/raw|tensor,memory=host",
    .want = want,
    .configure = configure,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

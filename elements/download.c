// download: device memory -> host memory. Pipelines insert one wherever a
// GPU element feeds a cpu element; the bytes it moves are in the report.
#include <string.h>

#include "reel/reel.h"

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
    reel_caps f = in->format;
    f.memory = REEL_MEMORY_HOST;
    // A frame laid out by its producer (rows with padding) comes back whole.
    bool packed = reel_buffer_is_packed(in);
    size_t size = packed ? reel_buffer_packed_size(&f) : reel_mem_size(in->mem);
    reel_buffer *out = reel_buffer_new_format(&f);
    int rc = out ? 0 : REEL_ENOMEM;
    bool tensor = f.media == REEL_MEDIA_TENSOR;
    if (rc == 0 && !tensor && size > s->packed_size) {
        g_free(s->packed);
        s->packed = g_malloc(size);
        s->packed_size = size;
    }
    if (rc == 0)
        rc = reel_mem_download(in->mem, 0, tensor ? out->data : s->packed, size, reel_element_xfer(e));
    if (rc == 0 && !tensor && packed)
        reel_buffer_unpack(out, s->packed);
    else if (rc == 0 && !tensor)
        reel_buffer_unpack_layout(out, s->packed, in);
    if (rc == 0) {
        reel_buffer_copy_props(out, in);
    } else {
        reel_buffer_unref(&out);
        reel_element_error(e, rc, "download of %zu bytes failed: %s", size, reel_strerror(rc));
    }
    reel_buffer_unref(&in);
    return out ? reel_element_push(e, 0, out) : rc;
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

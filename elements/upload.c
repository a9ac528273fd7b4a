// upload: host memory -> device memory. Pipelines insert one wherever a cpu
// element feeds a GPU element; the bytes it moves are in the report.
#include <string.h>

#include "reel/reel.h"

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

// The frame's bytes with rows packed: the buffer's own storage when its rows
// have no padding, else a copy.
static const uint8_t *packed_bytes(upload_priv *s, const reel_buffer *b, size_t size)
{
    const reel_caps *f = &b->format;
    if (f->media == REEL_MEDIA_TENSOR)
        return b->data;
    if (size > s->packed_size) {
        g_free(s->packed);
        s->packed = g_malloc(size);
        s->packed_size = size;
    }
    reel_buffer_pack(b, s->packed);
    return s->packed;
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    upload_priv *s = reel_element_priv(e);
    reel_caps f = in->format;
    f.memory = REEL_MEMORY_DEVICE;
    size_t size = reel_buffer_packed_size(&in->format);
    GError *err = NULL;
    reel_mem *mem = reel_mem_new(reel_element_device(e), reel_mem_params(.size = size, .domain = REEL_MEM_DEVICE), &err);
    int rc = 0;
    if (!mem) {
        rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
    } else if ((rc = reel_mem_upload(mem, 0, packed_bytes(s, in, size), size, reel_element_xfer(e))) < 0) {
        reel_element_error(e, rc, "upload of %zu bytes failed: %s", size, reel_strerror(rc));
        reel_mem_unref(&mem);
    }
    reel_buffer *out = mem ? reel_buffer_new_device(&f, mem) : NULL;
    if (out)
        reel_buffer_copy_props(out, in);
    reel_buffer_unref(&in);
    return out ? reel_element_push(e, 0, out) : (rc < 0 ? rc : REEL_ENOMEM);
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

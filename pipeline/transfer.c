// Buffers copied between host and device memory (reel_buffer_to_host/_to_device).
#include <string.h>

#include "reel/buffer.h"
#include "reel/error.h"

// The reusable host buffer, at least `size` bytes.
static uint8_t *scratch_of(uint8_t **scratch, size_t *scratch_size, size_t size)
{
    if (size > *scratch_size) {
        g_free(*scratch);
        *scratch = g_malloc(size);
        *scratch_size = size;
    }
    return *scratch;
}

reel_buffer *reel_buffer_to_host(const reel_buffer *b, uint8_t **scratch, size_t *scratch_size, reel_xfer *acc,
                                 GError **error)
{
    reel_caps f = b->format;
    f.memory = REEL_MEMORY_HOST;
    reel_buffer *out = reel_buffer_new_format(&f);
    if (!out) {
        g_set_error(error, REEL_ERROR, REEL_ENOMEM, "out of memory for a host copy");
        return NULL;
    }
    bool tensor = f.media == REEL_MEDIA_TENSOR, packed = reel_buffer_is_packed(b);
    // A frame laid out by its producer (rows with padding) comes back whole.
    size_t size = tensor || packed ? reel_buffer_packed_size(&f) : reel_mem_size(b->mem);
    uint8_t *dst = tensor ? out->data : scratch_of(scratch, scratch_size, size);
    int rc = reel_mem_download(b->mem, 0, dst, size, acc);
    if (rc < 0) {
        g_set_error(error, REEL_ERROR, rc, "download of %zu bytes failed: %s", size, reel_strerror(rc));
        reel_buffer_unref(&out);
        return NULL;
    }
    if (!tensor && packed)
        reel_buffer_unpack(out, dst);
    else if (!tensor)
        reel_buffer_unpack_layout(out, dst, b);
    reel_buffer_copy_props(out, b);
    return out;
}

reel_buffer *reel_buffer_to_device(const reel_buffer *b, reel_device *dev, uint8_t **scratch, size_t *scratch_size,
                                   reel_xfer *acc, GError **error)
{
    reel_caps f = b->format;
    f.memory = REEL_MEMORY_DEVICE;
    size_t size = reel_buffer_packed_size(&b->format);
    reel_mem *mem = reel_mem_new(dev, reel_mem_params(.size = size, .domain = REEL_MEM_DEVICE), error);
    if (!mem)
        return NULL;
    // The frame's rows packed: a tensor's bytes are already.
    const uint8_t *src = b->data;
    if (f.media != REEL_MEDIA_TENSOR) {
        uint8_t *packed = scratch_of(scratch, scratch_size, size);
        reel_buffer_pack(b, packed);
        src = packed;
    }
    int rc = reel_mem_upload(mem, 0, src, size, acc);
    if (rc < 0) {
        g_set_error(error, REEL_ERROR, rc, "upload of %zu bytes failed: %s", size, reel_strerror(rc));
        reel_mem_unref(&mem);
        return NULL;
    }
    reel_buffer *out = reel_buffer_new_device(&f, mem);
    reel_buffer_copy_props(out, b);
    return out;
}

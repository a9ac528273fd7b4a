// Pixel formats and tensor element types: names and plane geometry.
#include <glib.h>

#include "reel/format.h"

#include <string.h>

typedef struct pixfmt_desc {
    const char *name;
    int planes;
    // Per plane: bytes per sample, horizontal and vertical subsampling (log2).
    // NV12's second plane holds U and V interleaved: 2 bytes per sample.
    int bytes[REEL_MAX_PLANES];
    int shift_x[REEL_MAX_PLANES], shift_y[REEL_MAX_PLANES];
} pixfmt_desc;

static const pixfmt_desc pixfmts[REEL_PIXFMT_COUNT] = {
    [REEL_PIXFMT_GRAY8] = { "gray8", 1, { 1 }, { 0 }, { 0 } },
    [REEL_PIXFMT_RGB24] = { "rgb24", 1, { 3 }, { 0 }, { 0 } },
    [REEL_PIXFMT_BGR24] = { "bgr24", 1, { 3 }, { 0 }, { 0 } },
    [REEL_PIXFMT_RGBA] = { "rgba", 1, { 4 }, { 0 }, { 0 } },
    [REEL_PIXFMT_BGRA] = { "bgra", 1, { 4 }, { 0 }, { 0 } },
    [REEL_PIXFMT_YUV420P] = { "yuv420p", 3, { 1, 1, 1 }, { 0, 1, 1 }, { 0, 1, 1 } },
    [REEL_PIXFMT_YUVJ420P] = { "yuvj420p", 3, { 1, 1, 1 }, { 0, 1, 1 }, { 0, 1, 1 } },
    [REEL_PIXFMT_NV12] = { "nv12", 2, { 1, 2 }, { 0, 1 }, { 0, 1 } },
    [REEL_PIXFMT_YUV422P] = { "yuv422p", 3, { 1, 1, 1 }, { 0, 1, 1 }, { 0, 0, 0 } },
    [REEL_PIXFMT_YUV444P] = { "yuv444p", 3, { 1, 1, 1 }, { 0, 0, 0 }, { 0, 0, 0 } },
};

static const pixfmt_desc *pixfmt_get(reel_pixfmt f)
{
    return f > REEL_PIXFMT_NONE && f < REEL_PIXFMT_COUNT ? &pixfmts[f] : NULL;
}

const char *reel_pixfmt_name(reel_pixfmt f)
{
    const pixfmt_desc *d = pixfmt_get(f);
    return d ? d->name : NULL;
}

reel_pixfmt reel_pixfmt_from_name(const char *name)
{
    for (int f = 1; f < REEL_PIXFMT_COUNT; f++)
        if (strcmp(pixfmts[f].name, name) == 0)
            return f;
    return REEL_PIXFMT_NONE;
}

reel_pixfmt reel_pixfmt_pick(uint64_t set)
{
    static const reel_pixfmt preference[] = {
        REEL_PIXFMT_YUV420P, REEL_PIXFMT_NV12,     REEL_PIXFMT_RGB24,   REEL_PIXFMT_BGR24,
        REEL_PIXFMT_RGBA,    REEL_PIXFMT_BGRA,     REEL_PIXFMT_YUVJ420P, REEL_PIXFMT_YUV422P,
        REEL_PIXFMT_YUV444P, REEL_PIXFMT_GRAY8,
    };
    G_STATIC_ASSERT(G_N_ELEMENTS(preference) == REEL_PIXFMT_COUNT - 1);
    for (size_t i = 0; i < G_N_ELEMENTS(preference); i++)
        if (set & REEL_PIXFMT_BIT(preference[i]))
            return preference[i];
    return REEL_PIXFMT_NONE;
}

int reel_pixfmt_planes(reel_pixfmt f)
{
    const pixfmt_desc *d = pixfmt_get(f);
    return d ? d->planes : 0;
}

// Subsampled sizes round up, as FFmpeg's do: a 5-pixel-wide yuv420p frame
// has 3 chroma samples per row.
static int subsampled(int n, int shift)
{
    return (n + (1 << shift) - 1) >> shift;
}

size_t reel_pixfmt_row_bytes(reel_pixfmt f, int plane, int width)
{
    const pixfmt_desc *d = pixfmt_get(f);
    if (!d || plane < 0 || plane >= d->planes)
        return 0;
    return (size_t)subsampled(width, d->shift_x[plane]) * (size_t)d->bytes[plane];
}

int reel_pixfmt_plane_height(reel_pixfmt f, int plane, int height)
{
    const pixfmt_desc *d = pixfmt_get(f);
    if (!d || plane < 0 || plane >= d->planes)
        return 0;
    return subsampled(height, d->shift_y[plane]);
}

static const struct {
    const char *name;
    size_t size;
} dtypes[REEL_DTYPE_COUNT] = {
    [REEL_DTYPE_FLOAT32] = { "float32", 4 },
    [REEL_DTYPE_FLOAT16] = { "float16", 2 },
    [REEL_DTYPE_UINT8] = { "uint8", 1 },
    [REEL_DTYPE_INT8] = { "int8", 1 },
    [REEL_DTYPE_INT32] = { "int32", 4 },
    [REEL_DTYPE_INT64] = { "int64", 8 },
    [REEL_DTYPE_INT16] = { "int16", 2 },
    [REEL_DTYPE_UINT16] = { "uint16", 2 },
    [REEL_DTYPE_BOOL] = { "bool", 1 },
    [REEL_DTYPE_FLOAT64] = { "float64", 8 },
};

const char *reel_dtype_name(reel_dtype t)
{
    return t > REEL_DTYPE_NONE && t < REEL_DTYPE_COUNT ? dtypes[t].name : NULL;
}

reel_dtype reel_dtype_from_name(const char *name)
{
    for (int t = 1; t < REEL_DTYPE_COUNT; t++)
        if (strcmp(dtypes[t].name, name) == 0)
            return t;
    return REEL_DTYPE_NONE;
}

size_t reel_dtype_size(reel_dtype t)
{
    return t > REEL_DTYPE_NONE && t < REEL_DTYPE_COUNT ? dtypes[t].size : 0;
}

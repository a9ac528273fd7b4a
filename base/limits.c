// Hard limits: defaults, their environment overrides, and the checks that
// every path sizing a frame or a tensor from untrusted input goes through.
#include <inttypes.h>
#include <stdlib.h>

#include "reel/error.h"
#include "reel/limits.h"

static const struct {
    const char *env;
    int64_t def;
} limits[REEL_LIMIT_COUNT] = {
    [REEL_LIMIT_MODEL_BYTES] = { "REEL_MAX_MODEL_BYTES", (int64_t)2 << 30 },
    [REEL_LIMIT_TENSOR_BYTES] = { "REEL_MAX_TENSOR_BYTES", (int64_t)16 << 30 },
    [REEL_LIMIT_FRAME_SIDE] = { "REEL_MAX_FRAME_SIDE", 32768 },
    [REEL_LIMIT_FRAME_PIXELS] = { "REEL_MAX_FRAME_PIXELS", (int64_t)1 << 28 },
    [REEL_LIMIT_QUEUE_BYTES] = { "REEL_MAX_QUEUE_BYTES", (int64_t)1 << 30 },
    [REEL_LIMIT_TEXT_BYTES] = { "REEL_MAX_TEXT_BYTES", (int64_t)16 << 20 },
};

static int64_t values[REEL_LIMIT_COUNT];

static void read_env(void)
{
    for (int i = 0; i < REEL_LIMIT_COUNT; i++) {
        values[i] = limits[i].def;
        const char *s = getenv(limits[i].env);
        char *end;
        gint64 v = s && *s ? g_ascii_strtoll(s, &end, 10) : 0;
        if (s && *s && !*end && v > 0)
            values[i] = v;
        else if (s && *s)
            g_warning("%s='%s' is not a positive integer; using %" PRId64, limits[i].env, s, limits[i].def);
    }
}

int64_t reel_limit_get(reel_limit which)
{
    static gsize once;
    if (g_once_init_enter(&once)) {
        read_env();
        g_once_init_leave(&once, 1);
    }
    return which >= 0 && which < REEL_LIMIT_COUNT ? values[which] : 0;
}

const char *reel_limit_env(reel_limit which)
{
    return which >= 0 && which < REEL_LIMIT_COUNT ? limits[which].env : "";
}

int reel_limit_check_frame(int width, int height, GError **error)
{
    int64_t side = reel_limit_get(REEL_LIMIT_FRAME_SIDE), pixels = reel_limit_get(REEL_LIMIT_FRAME_PIXELS);
    if (width < 0 || height < 0) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "frame size %dx%d is negative", width, height);
        return REEL_EFORMAT;
    }
    if (width > side || height > side) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                    "frame size %dx%d exceeds the limit of %" PRId64 " pixels per side (%s)", width, height, side,
                    limits[REEL_LIMIT_FRAME_SIDE].env);
        return REEL_EUNSUPPORTED;
    }
    if ((int64_t)width * height > pixels) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                    "frame size %dx%d exceeds the limit of %" PRId64 " pixels per frame (%s)", width, height,
                    pixels, limits[REEL_LIMIT_FRAME_PIXELS].env);
        return REEL_EUNSUPPORTED;
    }
    return 0;
}

int reel_limit_check_tensor(int rank, const int64_t *shape, size_t elem_size, int64_t *nbytes, GError **error)
{
    if (rank < 0 || rank > REEL_LIMIT_RANK) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "rank %d exceeds the limit of %d", rank, REEL_LIMIT_RANK);
        return REEL_EUNSUPPORTED;
    }
    int64_t count = 1, bytes;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "negative dim %" PRId64 " at axis %d", shape[i], i);
            return REEL_EFORMAT;
        }
        if (__builtin_mul_overflow(count, shape[i], &count)) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "the element count overflows at axis %d", i);
            return REEL_EUNSUPPORTED;
        }
    }
    int64_t max = reel_limit_get(REEL_LIMIT_TENSOR_BYTES);
    if (__builtin_mul_overflow(count, (int64_t)elem_size, &bytes) || bytes > max) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                    "%" PRId64 " elements of %zu bytes exceed the tensor limit of %" PRId64 " bytes (%s)", count,
                    elem_size, max, limits[REEL_LIMIT_TENSOR_BYTES].env);
        return REEL_EUNSUPPORTED;
    }
    if (nbytes)
        *nbytes = bytes;
    return 0;
}

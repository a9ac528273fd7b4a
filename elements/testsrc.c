// testsrc: synthetic video, for demos, tests and benchmarks. Each pattern
// changes with the frame number, so every frame differs and checksums catch
// dropped or repeated frames.
#include "reel/reel.h"

#include <string.h>

enum { PATTERN_BARS, PATTERN_GRADIENT, PATTERN_CHECKERS, PATTERN_SOLID, PATTERN_NOISE };

typedef struct testsrc_priv {
    int pattern;
    int width, height;
    reel_fraction framerate;
    int format;
    int num_buffers;
    bool is_live;
    int color;

    int64_t frame;
    int64_t start_us;
    uint8_t *rgb_row;   // one row of RGB before conversion to the output format
} testsrc_priv;

static const reel_enum_value patterns[] = {
    { "bars", PATTERN_BARS, "colour bars scrolling sideways" },
    { "gradient", PATTERN_GRADIENT, "a diagonal gradient moving down" },
    { "checkers", PATTERN_CHECKERS, "a checkerboard moving sideways" },
    { "solid", PATTERN_SOLID, "one colour (see color), brightness cycling" },
    { "noise", PATTERN_NOISE, "reproducible noise, new every frame" },
    { NULL },
};

static const reel_enum_value formats[] = {
    { "auto", REEL_PIXFMT_NONE, "what downstream prefers (rgb24 when it does not care)" },
    { "gray8", REEL_PIXFMT_GRAY8, NULL },
    { "rgb24", REEL_PIXFMT_RGB24, NULL },
    { "bgr24", REEL_PIXFMT_BGR24, NULL },
    { "rgba", REEL_PIXFMT_RGBA, NULL },
    { "bgra", REEL_PIXFMT_BGRA, NULL },
    { "yuv420p", REEL_PIXFMT_YUV420P, NULL },
    { "yuvj420p", REEL_PIXFMT_YUVJ420P, NULL },
    { "nv12", REEL_PIXFMT_NV12, NULL },
    { "yuv422p", REEL_PIXFMT_YUV422P, NULL },
    { "yuv444p", REEL_PIXFMT_YUV444P, NULL },
    { NULL },
};

static const reel_prop props[] = {
    { "pattern", REEL_PROP_ENUM, offsetof(testsrc_priv, pattern), "bars", .values = patterns,
      .help = "what to draw" },
    { "width", REEL_PROP_INT, offsetof(testsrc_priv, width), "0", 0, 16384,
      .help = "frame width; 0: from downstream, else 320" },
    { "height", REEL_PROP_INT, offsetof(testsrc_priv, height), "0", 0, 16384,
      .help = "frame height; 0: from downstream, else 240" },
    { "framerate", REEL_PROP_FRACTION, offsetof(testsrc_priv, framerate), "30/1",
      .help = "frames per second (sets timestamps; paces output when is-live)" },
    { "format", REEL_PROP_ENUM, offsetof(testsrc_priv, format), "auto", .values = formats,
      .help = "pixel format" },
    { "num-buffers", REEL_PROP_INT, offsetof(testsrc_priv, num_buffers), "-1", -1, INT32_MAX,
      .help = "frames to produce before end of stream; -1: no end" },
    { "is-live", REEL_PROP_BOOL, offsetof(testsrc_priv, is_live), "false",
      .help = "produce frames in real time, like a camera" },
    { "color", REEL_PROP_INT, offsetof(testsrc_priv, color), "0x3070c0", 0, 0xffffff,
      .help = "colour of the solid pattern, 0xRRGGBB" },
    { NULL },
};

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    testsrc_priv *s = reel_element_priv(e);
    const reel_caps *down = reel_element_output_want(e, 0);
    out->media = REEL_MEDIA_VIDEO_RAW;
    out->memory = REEL_MEMORY_HOST;
    out->framerate = s->framerate;
    out->width = s->width ? s->width : down->width ? down->width : 320;
    out->height = s->height ? s->height : down->height ? down->height : 240;
    if (s->format)
        out->pixfmts = REEL_PIXFMT_BIT(s->format);
    else if (down->pixfmts & REEL_PIXFMT_BIT(REEL_PIXFMT_RGB24))
        out->pixfmts = REEL_PIXFMT_BIT(REEL_PIXFMT_RGB24);
    else
        out->pixfmts = REEL_PIXFMT_BIT(reel_pixfmt_pick(down->pixfmts));
    return 0;
}

static int start(reel_element *e)
{
    testsrc_priv *s = reel_element_priv(e);
    const reel_caps *f = reel_element_output_format(e, 0);
    s->frame = 0;
    s->start_us = g_get_monotonic_time();
    g_free(s->rgb_row);
    s->rgb_row = g_malloc((size_t)f->width * 3);
    // Pacing to the clock sleeps: that must not hold a worker of the pool.
    reel_element_set_blocking(e, s->is_live);
    reel_element_set_live(e, s->is_live);
    return 0;
}

static void stop(reel_element *e)
{
    testsrc_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->rgb_row, g_free);
}

static const uint8_t bar_colors[8][3] = {
    { 235, 235, 235 }, { 235, 235, 16 }, { 16, 235, 235 }, { 16, 235, 16 },
    { 235, 16, 235 },  { 235, 16, 16 },  { 16, 16, 235 },  { 16, 16, 16 },
};

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352d;
    x ^= x >> 15;
    x *= 0x846ca68b;
    x ^= x >> 16;
    return x;
}

static void draw_row(const testsrc_priv *s, uint8_t *rgb, int y, int w, int h)
{
    int64_t n = s->frame;
    for (int x = 0; x < w; x++) {
        uint8_t *p = rgb + 3 * x;
        switch (s->pattern) {
        case PATTERN_BARS: {
            const uint8_t *c = bar_colors[(((x + n) % w) * 8 / w) & 7];
            memcpy(p, c, 3);
            break;
        }
        case PATTERN_GRADIENT:
            p[0] = (uint8_t)(x * 255 / MAX(w - 1, 1));
            p[1] = (uint8_t)((y + n) * 255 / MAX(h - 1, 1));
            p[2] = (uint8_t)(128 + n);
            break;
        case PATTERN_CHECKERS: {
            uint8_t v = (((x + n) >> 3) ^ (y >> 3)) & 1 ? 235 : 16;
            p[0] = p[1] = p[2] = v;
            break;
        }
        case PATTERN_SOLID: {
            int k = 128 + (int)(n % 128);
            p[0] = (uint8_t)(((s->color >> 16) & 0xff) * k / 255);
            p[1] = (uint8_t)(((s->color >> 8) & 0xff) * k / 255);
            p[2] = (uint8_t)((s->color & 0xff) * k / 255);
            break;
        }
        default: {
            uint32_t r = hash32((uint32_t)(n * 0x9e3779b9u) ^ hash32((uint32_t)(y * w + x)));
            p[0] = (uint8_t)r;
            p[1] = (uint8_t)(r >> 8);
            p[2] = (uint8_t)(r >> 16);
        }
        }
    }
}

// BT.601: limited range for yuv formats, full range for yuvj.
static void to_yuv(const uint8_t *p, bool full, uint8_t *y, uint8_t *u, uint8_t *v)
{
    int r = p[0], g = p[1], b = p[2];
    if (full) {
        *y = (uint8_t)((77 * r + 150 * g + 29 * b + 128) >> 8);
        *u = (uint8_t)(((-43 * r - 85 * g + 128 * b + 128) >> 8) + 128);
        *v = (uint8_t)(((128 * r - 107 * g - 21 * b + 128) >> 8) + 128);
    } else {
        *y = (uint8_t)(((66 * r + 129 * g + 25 * b + 128) >> 8) + 16);
        *u = (uint8_t)(((-38 * r - 74 * g + 112 * b + 128) >> 8) + 128);
        *v = (uint8_t)(((112 * r - 94 * g - 18 * b + 128) >> 8) + 128);
    }
}

static void write_row(reel_buffer *b, reel_pixfmt f, const uint8_t *rgb, int y, int w)
{
    uint8_t *row0 = b->planes[0] + (size_t)y * b->strides[0];
    switch (f) {
    case REEL_PIXFMT_RGB24:
        memcpy(row0, rgb, (size_t)w * 3);
        return;
    case REEL_PIXFMT_BGR24:
    case REEL_PIXFMT_RGBA:
    case REEL_PIXFMT_BGRA: {
        bool bgr = f != REEL_PIXFMT_RGBA, alpha = f != REEL_PIXFMT_BGR24;
        int px = alpha ? 4 : 3;
        for (int x = 0; x < w; x++) {
            uint8_t *d = row0 + px * x;
            const uint8_t *s = rgb + 3 * x;
            d[0] = bgr ? s[2] : s[0];
            d[1] = s[1];
            d[2] = bgr ? s[0] : s[2];
            if (alpha)
                d[3] = 255;
        }
        return;
    }
    case REEL_PIXFMT_GRAY8:
        for (int x = 0; x < w; x++) {
            const uint8_t *s = rgb + 3 * x;
            row0[x] = (uint8_t)((77 * s[0] + 150 * s[1] + 29 * s[2] + 128) >> 8);
        }
        return;
    default:
        break;
    }
    // Planar and semi-planar YUV: chroma from the top-left pixel of each
    // subsampled block.
    bool full = f == REEL_PIXFMT_YUVJ420P;
    int sx = f == REEL_PIXFMT_YUV444P ? 0 : 1;
    int sy = f == REEL_PIXFMT_YUV420P || f == REEL_PIXFMT_YUVJ420P || f == REEL_PIXFMT_NV12 ? 1 : 0;
    bool chroma_row = (y & ((1 << sy) - 1)) == 0;
    for (int x = 0; x < w; x++) {
        uint8_t yy, u, v;
        to_yuv(rgb + 3 * x, full, &yy, &u, &v);
        row0[x] = yy;
        if (!chroma_row || (x & ((1 << sx) - 1)))
            continue;
        int cy = y >> sy, cx = x >> sx;
        if (f == REEL_PIXFMT_NV12) {
            uint8_t *uv = b->planes[1] + (size_t)cy * b->strides[1] + 2 * cx;
            uv[0] = u;
            uv[1] = v;
        } else {
            b->planes[1][(size_t)cy * b->strides[1] + cx] = u;
            b->planes[2][(size_t)cy * b->strides[2] + cx] = v;
        }
    }
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    (void)in;
    testsrc_priv *s = reel_element_priv(e);
    if (s->num_buffers >= 0 && s->frame >= s->num_buffers)
        return REEL_EOS;
    int64_t due = 0;
    if (s->is_live && s->framerate.num > 0) {
        due = s->start_us + s->frame * G_USEC_PER_SEC * s->framerate.den / s->framerate.num;
        if (!reel_element_wait_until(e, due))
            return REEL_EOS;
    }
    reel_buffer *b = reel_element_alloc(e, 0);
    if (!b)
        return REEL_ENOMEM;
    // Like a camera, a live source captures on its clock: a frame produced
    // late (downstream held it up) counts as late from when it was due.
    b->capture_ns = due * 1000;
    const reel_caps *f = &b->format;
    reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
    // Bars are the same on every row: draw one, copy it down each plane.
    int drawn = s->pattern == PATTERN_BARS ? 1 : f->height;
    for (int y = 0; y < drawn; y++) {
        draw_row(s, s->rgb_row, y, f->width, f->height);
        write_row(b, pf, s->rgb_row, y, f->width);
    }
    for (int p = 0; drawn == 1 && p < reel_pixfmt_planes(pf); p++) {
        size_t row = reel_pixfmt_row_bytes(pf, p, f->width);
        for (int y = 1; y < reel_pixfmt_plane_height(pf, p, f->height); y++)
            memcpy(b->planes[p] + (size_t)y * b->strides[p], b->planes[p], row);
    }
    b->time_base = (reel_fraction){ f->framerate.den, f->framerate.num ? f->framerate.num : 1 };
    b->pts = s->frame;
    b->duration = 1;
    b->frame_number = s->frame++;
    return reel_element_push(e, 0, b);
}

static void uninit(reel_element *e)
{
    stop(e);
}

const reel_element_class reel_testsrc_class = {
    .name = "testsrc",
    .description = "Generates test video: patterns that change every frame, in any raw format",
    .priv_size = sizeof(testsrc_priv),
    .props = props,
    .min_inputs = 0, .max_inputs = 0,
    .min_outputs = 1, .max_outputs = 1,
    .output_caps = "video/raw",
    .uninit = uninit,
    .configure = configure,
    .start = start,
    .process = process,
    .stop = stop,
};

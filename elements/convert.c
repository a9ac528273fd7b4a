// convert: pixel format and size conversion on the CPU with libswscale.
// What downstream asks for decides the output; whatever it leaves open is
// kept from the input, and a buffer that already matches passes untouched.
#include "elements/av_common.h"

#include <libavutil/opt.h>
#include <libswscale/swscale.h>

typedef struct convert_priv {
    int method;

    bool follow_size, follow_rate; // downstream left these open: track the input
    reel_caps last_in;             // the input format the SwsContext was made for
    reel_caps last_out;
    struct SwsContext *sws;
    reel_pool *pool;               // buffers for a size other than the negotiated one
} convert_priv;

static const reel_enum_value methods[] = {
    { "bilinear", SWS_BILINEAR, "good for most scaling" },
    { "bicubic", SWS_BICUBIC, "sharper, slower" },
    { "area", SWS_AREA, "averaging, for large reductions" },
    { "point", SWS_POINT, "nearest neighbour: fastest, blocky" },
    { "lanczos", SWS_LANCZOS, "sharpest, slowest" },
    { NULL },
};

static const reel_prop props[] = {
    { "method", REEL_PROP_ENUM, offsetof(convert_priv, method), "bilinear", .values = methods,
      .help = "scaling algorithm" },
    { NULL },
};

static reel_pixfmt pixfmt_of(const reel_caps *c)
{
    return c->pixfmts ? (reel_pixfmt)__builtin_ctzll(c->pixfmts) : REEL_PIXFMT_NONE;
}

// One of `allowed` for input format `in`: the input's own when allowed (no
// conversion), else yuv420p, which every encoder and player takes, else the
// one FFmpeg rates as losing least.
static uint64_t pick_pixfmt(uint64_t allowed, reel_pixfmt in)
{
    if (allowed & REEL_PIXFMT_BIT(in))
        return REEL_PIXFMT_BIT(in);
    if (allowed & REEL_PIXFMT_BIT(REEL_PIXFMT_YUV420P))
        return REEL_PIXFMT_BIT(REEL_PIXFMT_YUV420P);
    enum AVPixelFormat list[REEL_PIXFMT_COUNT + 1];
    int n = 0;
    for (int f = 1; f < REEL_PIXFMT_COUNT; f++)
        if (allowed & REEL_PIXFMT_BIT(f))
            list[n++] = reel_av_pixfmt(f);
    list[n] = AV_PIX_FMT_NONE;
    enum AVPixelFormat best = avcodec_find_best_pix_fmt_of_list(list, reel_av_pixfmt(in), 0, NULL);
    reel_pixfmt r = reel_av_from_pixfmt(best);
    return r ? REEL_PIXFMT_BIT(r) : allowed & -allowed;
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    convert_priv *s = reel_element_priv(e);
    const reel_caps *in = reel_element_input_format(e, 0);
    const reel_caps *down = reel_element_output_want(e, 0);
    s->follow_size = !down->width && !down->height;
    s->follow_rate = !down->framerate.den;
    // *out holds only the template: what downstream wants comes first.
    if (!reel_caps_intersect(out, down, out))
        return REEL_EFORMAT;
    out->media = REEL_MEDIA_VIDEO_RAW;
    if (!out->width && !out->height) {
        out->width = in->width;
        out->height = in->height;
    } else if (!out->width || !out->height) {
        // One side given: keep the input's aspect ratio, rounded to even for
        // subsampled formats.
        if (!out->width)
            out->width = (int)((int64_t)out->height * in->width / in->height + 1) & ~1;
        else
            out->height = (int)((int64_t)out->width * in->height / in->width + 1) & ~1;
    }
    if (!out->framerate.den)
        out->framerate = in->framerate;
    if (!out->pixfmts)
        return REEL_EFORMAT;
    out->pixfmts = pick_pixfmt(out->pixfmts, pixfmt_of(in));
    if (out->memory & REEL_MEMORY_HOST)
        out->memory = REEL_MEMORY_HOST;
    return 0;
}

static int start(reel_element *e)
{
    convert_priv *s = reel_element_priv(e);
    s->last_in = (reel_caps){ 0 };
    s->last_out = (reel_caps){ 0 };
    return 0;
}

// swscale knows full range from the deprecated yuvj formats and warns about
// them: ask for the plain format and give the range as an option (gray is
// full range there too). Options, not sws_setColorspaceDetails(), because
// the range decides at init whether a plain copy may serve.
static enum AVPixelFormat sws_format(reel_pixfmt f, int *full_range)
{
    *full_range = f == REEL_PIXFMT_YUVJ420P || f == REEL_PIXFMT_GRAY8;
    return f == REEL_PIXFMT_YUVJ420P ? AV_PIX_FMT_YUV420P : reel_av_pixfmt(f);
}

static int setup_sws(reel_element *e, const reel_caps *in, const reel_caps *out)
{
    convert_priv *s = reel_element_priv(e);
    int in_full, out_full;
    enum AVPixelFormat src = sws_format(pixfmt_of(in), &in_full);
    enum AVPixelFormat dst = sws_format(pixfmt_of(out), &out_full);
    sws_freeContext(s->sws);
    s->sws = sws_alloc_context();
    int ret = s->sws ? 0 : AVERROR(ENOMEM);
    if (ret >= 0) {
        av_opt_set_int(s->sws, "srcw", in->width, 0);
        av_opt_set_int(s->sws, "srch", in->height, 0);
        av_opt_set_int(s->sws, "src_format", src, 0);
        av_opt_set_int(s->sws, "src_range", in_full, 0);
        av_opt_set_int(s->sws, "dstw", out->width, 0);
        av_opt_set_int(s->sws, "dsth", out->height, 0);
        av_opt_set_int(s->sws, "dst_format", dst, 0);
        av_opt_set_int(s->sws, "dst_range", out_full, 0);
        av_opt_set_int(s->sws, "sws_flags", s->method | SWS_ACCURATE_RND, 0);
        ret = sws_init_context(s->sws, NULL, NULL);
    }
    if (ret < 0) {
        g_clear_pointer(&s->sws, sws_freeContext);
        s->last_in = (reel_caps){ 0 };
        char *a = reel_caps_to_string(in), *b = reel_caps_to_string(out);
        int rc = reel_element_error(e, REEL_EUNSUPPORTED, "cannot convert %s to %s: %s", a, b, reel_av_err(ret));
        g_free(a);
        g_free(b);
        return rc;
    }
    s->last_in = *in;
    return 0;
}

// The output format for input format `in`: the negotiated one, following the
// input's size and rate where downstream left them open.
static reel_caps output_for(reel_element *e, const reel_caps *in)
{
    convert_priv *s = reel_element_priv(e);
    reel_caps out = *reel_element_output_format(e, 0);
    if (s->follow_size) {
        out.width = in->width;
        out.height = in->height;
    }
    if (s->follow_rate)
        out.framerate = in->framerate;
    return out;
}

static reel_buffer *alloc_output(reel_element *e, const reel_caps *f)
{
    convert_priv *s = reel_element_priv(e);
    if (reel_caps_equal(f, reel_element_output_format(e, 0)))
        return reel_element_alloc(e, 0);
    // A new input size after a mid-stream change: a pool of its own.
    if (!s->pool || !reel_caps_equal(f, &s->last_out)) {
        reel_pool_release(&s->pool);
        s->pool = reel_pool_new(f);
        s->last_out = *f;
    }
    reel_buffer *b = s->pool ? reel_pool_acquire(s->pool) : NULL;
    if (!b) {
        char *t = reel_caps_to_string(f);
        reel_element_error(e, REEL_ENOMEM, "cannot allocate a buffer of %s", t);
        g_free(t);
    }
    return b;
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    convert_priv *s = reel_element_priv(e);
    reel_caps f = output_for(e, &in->format);
    if (reel_caps_equal(&f, &in->format))
        return reel_element_push(e, 0, in);

    int rc;
    if (!reel_caps_equal(&in->format, &s->last_in) && (rc = setup_sws(e, &in->format, &f)) < 0)
        goto fail;
    reel_buffer *out = alloc_output(e, &f);
    if (!out) {
        rc = REEL_ENOMEM;
        goto fail;
    }
    sws_scale(s->sws, (const uint8_t *const *)in->planes, in->strides, 0, in->format.height, out->planes,
              out->strides);
    reel_buffer_copy_props(out, in);
    reel_buffer_unref(&in);
    return reel_element_push(e, 0, out);

fail:
    reel_buffer_unref(&in);
    return rc;
}

static void stop(reel_element *e)
{
    convert_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->sws, sws_freeContext);
    reel_pool_release(&s->pool);
    s->last_in = (reel_caps){ 0 };
}

const reel_element_class reel_convert_class = {
    .name = "convert",
    .description = "Converts pixel format and size (CPU, libswscale) to what downstream asks for",
    .priv_size = sizeof(convert_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .configure = configure,
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

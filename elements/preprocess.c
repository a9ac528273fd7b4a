// preprocess: a video frame to a model's input tensor in one fused pass
// (gpu/preprocess.h) on the element's device — reel_preprocess_rows() for
// host frames, the "preprocess" kernel for frames in device memory. The
// tensor carries the transform it applied and a reference to its frame.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elements/manifest.h"
#include "gpu/preprocess.h"
#include "reel/reel.h"

enum { LAYOUT_AUTO, LAYOUT_NCHW, LAYOUT_NHWC };

typedef struct preprocess_priv {
    reel_size size;
    int layout, fit;
    bool bgr;
    double pad, scale, offset;
    char *mean, *std, *roi;

    reel_preprocess_push push; // normalization and layout; geometry per frame size
    int roi_box[4];            // x, y, w, h; w = 0: the whole frame
    bool roi_detections;       // one tensor per detection of the frame
    int geometry_w, geometry_h; // the frame size push and map were made for
    reel_affine map;
    bool on_device;
    reel_kernel *kernel;
} preprocess_priv;

static const reel_enum_value layouts[] = {
    { "auto", LAYOUT_AUTO, "what downstream's shape says, else nchw" },
    { "nchw", LAYOUT_NCHW, "[1, 3, H, W]" },
    { "nhwc", LAYOUT_NHWC, "[1, H, W, 3]" },
    { NULL },
};

static const reel_enum_value fits[] = {
    { "stretch", REEL_FIT_STRETCH, "fill the tensor, aspect ratio not kept" },
    { "letterbox", REEL_FIT_LETTERBOX, "fit inside, centred, the rest padded" },
    { "crop", REEL_FIT_CROP, "cover the tensor, the centre kept" },
    { NULL },
};

static const reel_prop props[] = {
    { "size", REEL_PROP_SIZE, offsetof(preprocess_priv, size), NULL,
      .help = "tensor width x height; default: what downstream asks for" },
    { "layout", REEL_PROP_ENUM, offsetof(preprocess_priv, layout), "auto", .values = layouts,
      .help = "tensor layout" },
    { "fit", REEL_PROP_ENUM, offsetof(preprocess_priv, fit), "stretch", .values = fits,
      .help = "how the frame's aspect ratio meets the tensor's" },
    { "bgr", REEL_PROP_BOOL, offsetof(preprocess_priv, bgr), "false", .help = "channels in B, G, R order" },
    { "pad", REEL_PROP_DOUBLE, offsetof(preprocess_priv, pad), "114", 0, 255,
      .help = "letterbox pad value (0..255, before normalization)" },
    { "mean", REEL_PROP_STRING, offsetof(preprocess_priv, mean), NULL,
      .help = "per-channel mean on 0..1 values, \"0.485,0.456,0.406\" (with std: (v - mean) / std)" },
    { "std", REEL_PROP_STRING, offsetof(preprocess_priv, std), NULL,
      .help = "per-channel standard deviation on 0..1 values, \"0.229,0.224,0.225\"" },
    { "scale", REEL_PROP_DOUBLE, offsetof(preprocess_priv, scale), "0.00392156862745098",
      .help = "without mean/std: value 0..255 * scale + offset (default: 0..1)" },
    { "offset", REEL_PROP_DOUBLE, offsetof(preprocess_priv, offset), "0", .help = "added after scale" },
    { "roi", REEL_PROP_STRING, offsetof(preprocess_priv, roi), NULL,
      .help = "frame region \"x,y,w,h\" in pixels, or \"detections\": a tensor per detection (a detector's "
              "boxes to a classifier); default: the whole frame" },
    { NULL },
};

// "a" or "a,b,c" into v[3]; false on anything else.
static bool parse_numbers(const char *text, double *v, int n_max, int *n)
{
    *n = 0;
    const char *p = text;
    while (*n < n_max) {
        char *end;
        v[(*n)++] = g_ascii_strtod(p, &end);
        if (end == p)
            return false;
        p = end;
        while (*p == ' ')
            p++;
        if (!*p)
            return true;
        if (*p++ != ',')
            return false;
    }
    return false;
}

static int parse_channels(reel_element *e, const char *name, const char *text, double v[3])
{
    int n;
    if (!parse_numbers(text, v, 3, &n) || (n != 1 && n != 3))
        return reel_element_error(e, REEL_EINVAL, "%s=\"%s\": give one number or three, separated by commas",
                                  name, text);
    if (n == 1)
        v[1] = v[2] = v[0];
    return 0;
}

static int init_normalization(reel_element *e)
{
    preprocess_priv *s = reel_element_priv(e);
    double mean[3] = { 0, 0, 0 }, std[3] = { 1, 1, 1 };
    int rc;
    if (s->mean && (rc = parse_channels(e, "mean", s->mean, mean)) < 0)
        return rc;
    if (s->std && (rc = parse_channels(e, "std", s->std, std)) < 0)
        return rc;
    for (int c = 0; c < 3; c++) {
        if (std[c] == 0)
            return reel_element_error(e, REEL_EINVAL, "std=\"%s\": a standard deviation of 0", s->std);
        bool normalize = s->mean || s->std;
        s->push.mul[c] = (float)(normalize ? 1 / (255 * std[c]) : s->scale);
        s->push.add[c] = (float)(normalize ? -mean[c] / std[c] : s->offset);
    }
    s->push.pad = (float)s->pad;
    return 0;
}

static int init_roi(reel_element *e)
{
    preprocess_priv *s = reel_element_priv(e);
    memset(s->roi_box, 0, sizeof s->roi_box);
    s->roi_detections = s->roi && strcmp(s->roi, "detections") == 0;
    if (!s->roi || s->roi_detections)
        return 0;
    double v[4];
    int n;
    if (!parse_numbers(s->roi, v, 4, &n) || n != 4 || v[0] < 0 || v[1] < 0 || v[2] < 1 || v[3] < 1)
        return reel_element_error(e, REEL_EINVAL, "roi=\"%s\": give x,y,w,h in pixels (w and h at least 1)", s->roi);
    for (int i = 0; i < 4; i++)
        s->roi_box[i] = (int)v[i];
    return 0;
}

// Size and layout: the properties, else what downstream's shape says
// ([1, 3, H, W] or [1, H, W, 3]).
static int decide_shape(reel_element *e, int *w, int *h, bool *nhwc)
{
    preprocess_priv *s = reel_element_priv(e);
    const reel_caps *down = reel_element_output_want(e, 0);
    bool known = down->media == REEL_MEDIA_TENSOR && down->rank == 4;
    bool down_nhwc = known && down->shape[3] == 3 && down->shape[1] != 3;
    *nhwc = s->layout == LAYOUT_NHWC || (s->layout == LAYOUT_AUTO && down_nhwc);
    *w = s->size.width;
    *h = s->size.height;
    if (!*w && known) {
        *w = (int)down->shape[*nhwc ? 2 : 3];
        *h = (int)down->shape[*nhwc ? 1 : 2];
    }
    if (*w <= 0 || *h <= 0)
        return reel_element_error(e, REEL_EFORMAT,
                                  "no tensor size: set size=WxH, or link to an element that asks for one");
    return 0;
}

// Defaults from the manifest of the model the infer after this element
// runs ([preprocess] group); a model that cannot be found is infer's error.
static int apply_manifest(reel_element *e)
{
    reel_element *infer = reel_find_infer(e, true);
    char *spec = infer ? reel_element_get(infer, "model") : NULL;
    reel_model_file ref;
    GError *err = NULL;
    int rc = 0;
    if (spec && reel_model_resolve(spec, &ref, NULL) == 0) {
        if (ref.manifest && (rc = reel_manifest_apply(ref.manifest, "preprocess", e, &err)) < 0) {
            rc = reel_element_error(e, rc, "%s", err->message);
            g_error_free(err);
        }
        reel_model_file_clear(&ref);
    }
    g_free(spec);
    return rc;
}

static int configure(reel_element *e, int pad, reel_caps *out)
{
    (void)pad;
    preprocess_priv *s = reel_element_priv(e);
    int w, h, rc;
    bool nhwc;
    if ((rc = apply_manifest(e)) < 0 || (rc = decide_shape(e, &w, &h, &nhwc)) < 0)
        return rc;
    out->media = REEL_MEDIA_TENSOR;
    out->dtype = REEL_DTYPE_FLOAT32;
    out->rank = 4;
    int64_t shape[4] = { 1, 3, h, w }, shape_nhwc[4] = { 1, h, w, 3 };
    memcpy(out->shape, nhwc ? shape_nhwc : shape, sizeof shape);
    reel_device *dev = reel_element_device(e);
    s->on_device = dev && reel_device_info_of(dev)->backend != REEL_BACKEND_CPU;
    out->memory = s->on_device ? REEL_MEMORY_DEVICE : REEL_MEMORY_HOST;
    s->push.dst_w = (uint32_t)w;
    s->push.dst_h = (uint32_t)h;
    s->push.flags = (nhwc ? REEL_PRE_NHWC : 0) | (s->bgr ? REEL_PRE_BGR : 0);
    return 0;
}

static int start(reel_element *e)
{
    preprocess_priv *s = reel_element_priv(e);
    int rc;
    if ((rc = init_normalization(e)) < 0 || (rc = init_roi(e)) < 0)
        return rc;
    s->geometry_w = s->geometry_h = 0;
    if (!s->on_device)
        return 0;
    GError *err = NULL;
    s->kernel = reel_kernel_create(reel_element_device(e), reel_kernel_params(.name = "preprocess"), &err);
    if (!s->kernel) {
        rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
    }
    return rc;
}

// The push geometry and transform for frames of this size (once per size).
static void update_geometry(preprocess_priv *s, const reel_caps *f)
{
    if (f->width == s->geometry_w && f->height == s->geometry_h)
        return;
    reel_preprocess_geometry(f->width, f->height, s->roi_box[2] ? s->roi_box : NULL, (int)s->push.dst_w,
                             (int)s->push.dst_h, (reel_fit)s->fit, &s->push, &s->map);
    s->geometry_w = f->width;
    s->geometry_h = f->height;
}

static reel_buffer *run_on_device(reel_element *e, reel_buffer *in, const reel_preprocess_push *push, int *rc)
{
    preprocess_priv *s = reel_element_priv(e);
    const reel_caps *f = reel_element_output_format(e, 0);
    GError *err = NULL;
    reel_mem *mem = reel_mem_new(reel_element_device(e),
                                 reel_mem_params(.size = reel_buffer_packed_size(f), .domain = REEL_MEM_DEVICE), &err);
    if (!mem) {
        *rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
        return NULL;
    }
    if (!push) // a placeholder: nothing will read it
        return reel_buffer_new_device(f, mem);
    reel_preprocess_push p = *push;
    for (int i = 0; i < 3; i++) {
        p.offset[i] = (uint32_t)in->offsets[i];
        p.stride[i] = (uint32_t)in->strides[i];
    }
    uint32_t local = reel_kernel_local_size(s->kernel), pixels = p.dst_w * p.dst_h;
    uint64_t point;
    *rc = reel_kernel_dispatch(s->kernel,
                               reel_dispatch_params(.buffers = { in->mem, mem }, .push = &p, .push_size = sizeof p,
                                                    .groups = { (pixels + local - 1) / local }),
                               &point);
    if (*rc < 0) {
        reel_mem_unref(&mem);
        reel_element_error(e, *rc, "preprocess dispatch failed: %s", reel_strerror(*rc));
        return NULL;
    }
    reel_element_trace_dispatch(e, "preprocess", point);
    return reel_buffer_new_device(f, mem);
}

// One tensor from frame `in` (push NULL: an unfilled placeholder) carrying
// the transform it applied and a reference to the frame.
static reel_buffer *make_tensor(reel_element *e, reel_buffer *in, const reel_preprocess_push *push,
                                const reel_affine *map, int *rc)
{
    preprocess_priv *s = reel_element_priv(e);
    const reel_caps *f = &in->format;
    reel_buffer *out;
    *rc = REEL_ENOMEM;
    if (s->on_device) {
        out = run_on_device(e, in, push, rc);
    } else if ((out = reel_element_alloc(e, 0)) && push) {
        reel_preprocess_rows(push, (const uint8_t *const *)in->planes, in->strides, (float *)out->data, 0,
                             (int)push->dst_h);
    }
    if (!out)
        return NULL;
    out->pts = in->pts, out->dts = in->dts, out->duration = in->duration, out->time_base = in->time_base;
    out->stream_id = in->stream_id, out->frame_number = in->frame_number, out->flags = in->flags;
    reel_transform *t = g_new(reel_transform, 1);
    *t = (reel_transform){ map->ax, map->bx, map->ay, map->by, f->width, f->height, (int)s->push.dst_w,
                           (int)s->push.dst_h };
    reel_buffer_add_meta(out, &reel_transform_meta, t);
    reel_buffer_set_source_frame(out, in);
    return out;
}

// The frame's fields in the push constants (its size may change mid-stream).
static reel_preprocess_push frame_push(preprocess_priv *s, const reel_caps *f)
{
    reel_preprocess_push p = s->push;
    p.src_w = (uint32_t)f->width;
    p.src_h = (uint32_t)f->height;
    p.src_fmt = (uint32_t)__builtin_ctzll(f->pixfmts);
    return p;
}

// A tensor per detection of the frame (the box clamped to the frame), each
// marked with its index; one empty placeholder when there are none.
static int push_crops(reel_element *e, reel_buffer *in)
{
    preprocess_priv *s = reel_element_priv(e);
    const reel_caps *f = &in->format;
    const reel_detections *dets = reel_buffer_get_meta(in, &reel_detections_meta);
    int n = dets ? dets->n : 0, rc = 0;
    for (int i = 0; i < MAX(n, 1) && rc == 0; i++) {
        reel_preprocess_push p = frame_push(s, f);
        reel_affine map = { 1, 0, 1, 0 };
        if (n) {
            const reel_detection *d = &dets->items[i];
            int x0 = CLAMP((int)floorf(d->x0), 0, f->width - 1), y0 = CLAMP((int)floorf(d->y0), 0, f->height - 1);
            int x1 = CLAMP((int)ceilf(d->x1), x0 + 1, f->width), y1 = CLAMP((int)ceilf(d->y1), y0 + 1, f->height);
            int roi[4] = { x0, y0, x1 - x0, y1 - y0 };
            reel_preprocess_geometry(f->width, f->height, roi, (int)p.dst_w, (int)p.dst_h, (reel_fit)s->fit, &p,
                                     &map);
        }
        reel_buffer *out = make_tensor(e, in, n ? &p : NULL, &map, &rc);
        if (!out)
            break;
        reel_crop *c = g_new(reel_crop, 1);
        *c = (reel_crop){ n ? i : 0, n };
        reel_buffer_add_meta(out, &reel_crop_meta, c);
        rc = reel_element_push(e, 0, out);
    }
    reel_buffer_unref(&in);
    return rc;
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    preprocess_priv *s = reel_element_priv(e);
    const reel_caps *f = &in->format;
    if (s->roi_detections)
        return push_crops(e, in);
    if (s->roi_box[2] && (s->roi_box[0] + s->roi_box[2] > f->width || s->roi_box[1] + s->roi_box[3] > f->height)) {
        int rc = reel_element_error(e, REEL_EINVAL, "roi=\"%s\" reaches outside the %dx%d frame", s->roi, f->width,
                                    f->height);
        reel_buffer_unref(&in);
        return rc;
    }
    update_geometry(s, f);
    reel_preprocess_push p = frame_push(s, f);
    int rc;
    reel_buffer *out = make_tensor(e, in, &p, &s->map, &rc);
    reel_buffer_unref(&in);
    return out ? reel_element_push(e, 0, out) : rc;
}

static void stop(reel_element *e)
{
    preprocess_priv *s = reel_element_priv(e);
    reel_kernel_destroy(&s->kernel);
}

const reel_element_class reel_preprocess_class = {
    .name = "preprocess",
    .description = "Frame to model input in one pass: region, resize with fit, colour, normalize, layout",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .priv_size = sizeof(preprocess_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,format=yuv420p|yuvj420p|nv12|rgb24|bgr24|rgba",
    .output_caps = "tensor,dtype=float32",
    .configure = configure,
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

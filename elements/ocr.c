// ocr: reads the text in each detection of a frame, as PaddleOCR's
// recognition stage does: the region (the rotated box a text detector put
// in its 4 landmarks, else the box) cut upright from the frame and scaled to
// the recognizer's height keeping its aspect, the recognizer (PP-OCRv4's,
// from the zoo: ppocr-rec) run on it, its output decoded by greedy CTC
// against the key list. The text and its score go into the detection
// (reel_detection.text, .text_score); regions read below `threshold` are
// dropped, as PaddleOCR drops them. Runs on the cpu on host frames (frames
// in device memory are read through a host copy).
#include <math.h>
#include <string.h>

#include "elements/ctc.h"
#include "elements/manifest.h"
#include "reel/reel.h"

typedef struct ocr_priv {
    char *model_spec, *keys_path;
    int threads, height, min_width, max_width;
    double threshold;
    bool space;

    reel_model_file ref;
    reel_model *model;
    reel_session *session;
    reel_ctc_keys keys;
    uint8_t *scratch; // a host copy of device frames
    size_t scratch_size;
} ocr_priv;

static const reel_prop props[] = {
    { "model", REEL_PROP_STRING, offsetof(ocr_priv, model_spec), "ppocr-rec", .flags = REEL_PROP_READS_FILE,
      .help = "the recognizer: an .onnx file or a model zoo name; input [1,3,H,W], output [1,steps,classes]" },
    { "keys", REEL_PROP_STRING, offsetof(ocr_priv, keys_path), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "the recognizer's key list, one character a line (class i + 1); default: the zoo manifest's keys" },
    { "space", REEL_PROP_BOOL, offsetof(ocr_priv, space), "true",
      .help = "the class after the keys is a space (PaddleOCR's use_space_char)" },
    { "threshold", REEL_PROP_DOUBLE, offsetof(ocr_priv, threshold), "0.5", 0, 1,
      .help = "drop regions whose text scores below this (the mean probability of its characters)",
      .flags = REEL_PROP_MUTABLE },
    { "height", REEL_PROP_INT, offsetof(ocr_priv, height), "0", 0, 1024,
      .help = "rows of the recognizer's input; 0: the model's (48 for PP-OCRv4)" },
    { "min-width", REEL_PROP_INT, offsetof(ocr_priv, min_width), "320", 1, 8192,
      .help = "narrower crops are padded to this width (PaddleOCR's 320 at height 48)" },
    { "max-width", REEL_PROP_INT, offsetof(ocr_priv, max_width), "1920", 8, 8192,
      .help = "wider crops are squeezed to this width" },
    { "threads", REEL_PROP_INT, offsetof(ocr_priv, threads), "1", 0, 256,
      .help = "threads of the recognizer's kernels; 0: one per core" },
    { NULL },
};

static int fail(reel_element *e, int rc, GError *err, const char *what)
{
    rc = reel_element_error(e, rc, "%s: %s", what, err ? err->message : reel_strerror(rc));
    if (err)
        g_error_free(err);
    return rc;
}

// The key list: keys=, else the zoo manifest's [model] keys in the cache.
static int load_keys(reel_element *e)
{
    ocr_priv *s = reel_element_priv(e);
    GError *err = NULL;
    char *path = s->keys_path ? g_strdup(s->keys_path) : NULL;
    if (!path && !s->ref.manifest)
        return reel_element_error(e, REEL_EINVAL, "model %s has no manifest naming its keys: set keys=FILE",
                                  s->ref.path);
    if (!path && !(path = reel_manifest_cache_file(s->ref.manifest, "keys", "keys-sha256", &err)))
        return fail(e, REEL_EINVAL, err, "keys");
    int rc = reel_ctc_keys_load(path, s->space, &s->keys, &err);
    g_free(path);
    return rc < 0 ? fail(e, rc, err, "keys") : 0;
}

// The model's input and output must be a recognizer's: [N,3,H,W] in,
// [N, steps, classes] out.
static int check_model(reel_element *e)
{
    ocr_priv *s = reel_element_priv(e);
    const reel_model_io *in = reel_model_input(s->model, 0), *out = reel_model_output(s->model, 0);
    bool fits = reel_model_n_inputs(s->model) == 1 && in->rank == 4 && in->dtype == REEL_DTYPE_FLOAT32
                && (in->dims[1] == 3 || in->dims[1] < 0) && out->rank == 3 && out->dtype == REEL_DTYPE_FLOAT32;
    if (!fits)
        return reel_element_error(e, REEL_EFORMAT, "model %s is no text recognizer: ocr wants one float input "
                                  "[N,3,H,W] and an output [N,steps,classes], it has %d input(s) of rank %d and "
                                  "output rank %d", s->ref.path, reel_model_n_inputs(s->model), in->rank, out->rank);
    if (!s->height)
        s->height = in->dims[2] > 0 ? (int)in->dims[2] : 48;
    return 0;
}

// As many classes as the keys make (when the model says how many).
static int check_classes(reel_element *e)
{
    ocr_priv *s = reel_element_priv(e);
    const reel_model_io *out = reel_model_output(s->model, 0);
    if (out->dims[2] > 0 && out->dims[2] != s->keys.n)
        return reel_element_error(e, REEL_EFORMAT, "model %s gives %lld classes, but its keys make %d (blank, %d "
                                  "keys%s): the keys are not this model's", s->ref.path, (long long)out->dims[2],
                                  s->keys.n, s->keys.n - 1 - s->space, s->space ? ", space" : "");
    return 0;
}

static int start(reel_element *e)
{
    ocr_priv *s = reel_element_priv(e);
    GError *err = NULL;
    int rc = reel_model_resolve(s->model_spec, &s->ref, &err);
    if (rc < 0)
        return fail(e, rc, err, "model");
    if (!(s->model = reel_model_load(s->ref.path, &err)))
        return fail(e, REEL_EFORMAT, err, s->ref.path);
    if ((rc = check_model(e)) < 0 || (rc = load_keys(e)) < 0 || (rc = check_classes(e)) < 0)
        return rc;
    s->session = reel_session_new(s->model, reel_session_params(.threads = s->threads), &err);
    return s->session ? 0 : fail(e, REEL_EINTERNAL, err, "recognizer session");
}

// ---- reading the frame

typedef struct frame_view {
    const reel_buffer *b;
    reel_pixfmt fmt;
    int w, h;
} frame_view;

static int clampi(int v, int hi)
{
    return v < 0 ? 0 : v > hi ? hi : v;
}

// Pixel (x, y), clamped to the frame, as B, G, R in 0..255 (BT.601).
static void pixel(const frame_view *f, int x, int y, float bgr[3])
{
    x = clampi(x, f->w - 1);
    y = clampi(y, f->h - 1);
    const reel_buffer *b = f->b;
    const uint8_t *p;
    float r, g, bl;
    switch (f->fmt) {
    case REEL_PIXFMT_RGB24:
    case REEL_PIXFMT_BGR24:
    case REEL_PIXFMT_RGBA:
    case REEL_PIXFMT_BGRA: {
        int bpp = f->fmt == REEL_PIXFMT_RGB24 || f->fmt == REEL_PIXFMT_BGR24 ? 3 : 4;
        bool rgb = f->fmt == REEL_PIXFMT_RGB24 || f->fmt == REEL_PIXFMT_RGBA;
        p = b->planes[0] + (size_t)y * (size_t)b->strides[0] + (size_t)x * (size_t)bpp;
        r = p[rgb ? 0 : 2];
        g = p[1];
        bl = p[rgb ? 2 : 0];
        break;
    }
    case REEL_PIXFMT_GRAY8:
        r = g = bl = b->planes[0][(size_t)y * (size_t)b->strides[0] + (size_t)x];
        break;
    default: { // yuv420p, yuvj420p, nv12
        float Y = b->planes[0][(size_t)y * (size_t)b->strides[0] + (size_t)x], U, V;
        size_t cy = (size_t)(y / 2) * (size_t)b->strides[1];
        if (f->fmt == REEL_PIXFMT_NV12) {
            U = b->planes[1][cy + (size_t)(x / 2) * 2];
            V = b->planes[1][cy + (size_t)(x / 2) * 2 + 1];
        } else {
            U = b->planes[1][cy + (size_t)(x / 2)];
            V = b->planes[2][(size_t)(y / 2) * (size_t)b->strides[2] + (size_t)(x / 2)];
        }
        U -= 128;
        V -= 128;
        if (f->fmt != REEL_PIXFMT_YUVJ420P) {
            Y = (Y - 16) * 1.164f;
            U *= 1.138f; // 255 / 224: chroma to full range
            V *= 1.138f;
        }
        r = Y + 1.402f * V;
        g = Y - 0.344f * U - 0.714f * V;
        bl = Y + 1.772f * U;
    }
    }
    bgr[0] = CLAMP(bl, 0, 255);
    bgr[1] = CLAMP(g, 0, 255);
    bgr[2] = CLAMP(r, 0, 255);
}

// Bilinear between the four pixels around (x, y), continuous coordinates.
static void sample(const frame_view *f, float x, float y, float bgr[3])
{
    float fx = x - 0.5f, fy = y - 0.5f, x0 = floorf(fx), y0 = floorf(fy), ax = fx - x0, ay = fy - y0;
    float q[4][3];
    pixel(f, (int)x0, (int)y0, q[0]);
    pixel(f, (int)x0 + 1, (int)y0, q[1]);
    pixel(f, (int)x0, (int)y0 + 1, q[2]);
    pixel(f, (int)x0 + 1, (int)y0 + 1, q[3]);
    for (int c = 0; c < 3; c++)
        bgr[c] = (q[0][c] * (1 - ax) + q[1][c] * ax) * (1 - ay) + (q[2][c] * (1 - ax) + q[3][c] * ax) * ay;
}

static float dist(const float *p, const float *q)
{
    return hypotf(p[0] - q[0], p[1] - q[1]);
}

// The region's corners, top left first clockwise, as it reads: a box much
// taller than wide is taken as turned (PaddleOCR turns such crops a
// quarter, counter-clockwise).
static void region(const reel_detection *d, float c[4][2], float *w, float *h)
{
    const float box[4][2] = { { d->x0, d->y0 }, { d->x1, d->y0 }, { d->x1, d->y1 }, { d->x0, d->y1 } };
    memcpy(c, d->n_landmarks == 4 ? d->landmarks : box, sizeof box);
    *w = fmaxf(dist(c[0], c[1]), dist(c[3], c[2]));
    *h = fmaxf(dist(c[0], c[3]), dist(c[1], c[2]));
    if (*h >= 1.5f * *w) {
        float t[4][2];
        for (int k = 0; k < 4; k++)
            memcpy(t[k], c[(k + 1) % 4], sizeof t[k]);
        memcpy(c, t, sizeof t);
        float swap = *w;
        *w = *h;
        *h = swap;
    }
}

// The recognizer's input for one region: [1, 3, height, width], B, G, R
// scaled to -1..1, the crop `cw` wide at the left, zeros after it.
static reel_tensor *crop(const ocr_priv *s, const frame_view *f, const reel_detection *d)
{
    float c[4][2], w, h;
    region(d, c, &w, &h);
    if (!(w >= 1 && h >= 1))
        return NULL;
    int H = s->height, cw = (int)ceilf((float)H * w / h);
    cw = CLAMP(cw, 1, s->max_width);
    int W = MAX(cw, s->min_width);
    int64_t shape[4] = { 1, 3, H, W };
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, shape);
    if (!t)
        return NULL;
    float *v = t->data;
    size_t plane = (size_t)H * (size_t)W;
    memset(v, 0, plane * 3 * sizeof *v);
    for (int y = 0; y < H; y++) {
        float ty = ((float)y + 0.5f) / (float)H;
        for (int x = 0; x < cw; x++) {
            float tx = ((float)x + 0.5f) / (float)cw, px = 0, py = 0, bgr[3];
            // Bilinear in the quad's corners: exact for rectangles.
            const float wt[4] = { (1 - tx) * (1 - ty), tx * (1 - ty), tx * ty, (1 - tx) * ty };
            for (int k = 0; k < 4; k++) {
                px += wt[k] * c[k][0];
                py += wt[k] * c[k][1];
            }
            sample(f, px, py, bgr);
            for (int ch = 0; ch < 3; ch++)
                v[(size_t)ch * plane + (size_t)y * (size_t)W + (size_t)x] = bgr[ch] / 127.5f - 1;
        }
    }
    return t;
}

// Runs the recognizer on detection d and fills in its text.
static int read_text(reel_element *e, const frame_view *f, reel_detection *d)
{
    ocr_priv *s = reel_element_priv(e);
    d->text[0] = '\0';
    d->text_score = 0;
    reel_tensor *in = crop(s, f, d), *out = NULL;
    if (!in)
        return 0; // an empty region reads as nothing
    GError *err = NULL;
    int rc = reel_session_run(s->session, &in, &out, &err);
    reel_tensor_free(&in);
    if (rc < 0)
        return fail(e, rc, err, "recognizer");
    if (out->dtype != REEL_DTYPE_FLOAT32 || out->rank != 3 || out->shape[0] != 1 || out->shape[2] != s->keys.n
        || !out->data) {
        rc = reel_element_error(e, REEL_EFORMAT, "recognizer %s gave an output of rank %d, %lld classes; ocr wants "
                                "[1, steps, %d] in host memory", s->ref.path, out->rank,
                                out->rank == 3 ? (long long)out->shape[2] : -1LL, s->keys.n);
    } else {
        d->text_score = reel_ctc_greedy(out->data, (int)out->shape[1], &s->keys, d->text, sizeof d->text);
    }
    reel_tensor_free(&out);
    return rc;
}

static int read_all(reel_element *e, const reel_buffer *frame, reel_detections *dets)
{
    ocr_priv *s = reel_element_priv(e);
    frame_view f = { frame, (reel_pixfmt)__builtin_ctzll(frame->format.pixfmts), frame->format.width,
                     frame->format.height };
    int kept = 0;
    for (int i = 0; i < dets->n; i++) {
        int rc = read_text(e, &f, &dets->items[i]);
        if (rc < 0)
            return rc;
        if (dets->items[i].text[0] && dets->items[i].text_score >= (float)s->threshold)
            dets->items[kept++] = dets->items[i];
    }
    dets->n = kept;
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    ocr_priv *s = reel_element_priv(e);
    if (!reel_buffer_get_meta(buf, &reel_detections_meta)) {
        reel_buffer_unref(&buf);
        return reel_element_error(e, REEL_EINVAL, "frame carries no detections: put a text detector before ocr "
                                  "(infer model=ppocr-det ! detect)");
    }
    // Other branches may hold this frame: the texts go on a copy of our own.
    int rc = reel_buffer_make_writable(&buf);
    if (rc < 0) {
        reel_buffer_unref(&buf);
        return reel_element_error(e, rc, "cannot copy a shared frame to attach texts: %s", reel_strerror(rc));
    }
    reel_detections *dets = reel_buffer_get_meta(buf, &reel_detections_meta);
    reel_buffer *host = buf;
    GError *err = NULL;
    if (buf->mem && dets->n > 0 && !(host = reel_buffer_to_host(buf, &s->scratch, &s->scratch_size, NULL, &err))) {
        reel_buffer_unref(&buf);
        return fail(e, REEL_EIO, err, "reading a device frame");
    }
    rc = dets->n > 0 ? read_all(e, host, dets) : 0;
    if (host != buf)
        reel_buffer_unref(&host);
    if (rc < 0) {
        reel_buffer_unref(&buf);
        return rc;
    }
    return reel_element_push(e, 0, buf);
}

static void stop(reel_element *e)
{
    ocr_priv *s = reel_element_priv(e);
    reel_session_destroy(&s->session);
    reel_model_unref(&s->model);
    reel_model_file_clear(&s->ref);
    reel_ctc_keys_clear(&s->keys);
    g_clear_pointer(&s->scratch, g_free);
    s->scratch_size = 0;
}

const reel_element_class reel_ocr_class = {
    .name = "ocr",
    .description = "Reads the text in each detection (a text detector's rotated boxes) with a CTC recognizer",
    .flags = REEL_CLASS_PASSTHROUGH,
    .priv_size = sizeof(ocr_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,format=yuv420p|yuvj420p|nv12|rgb24|bgr24|rgba|bgra|gray8",
    .output_caps = "video/raw,format=yuv420p|yuvj420p|nv12|rgb24|bgr24|rgba|bgra|gray8",
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

// ocr: reads the text in each detection of a frame, as PaddleOCR's
// recognition stage does: the region (the rotated box a text detector put
// in its 4 landmarks, else the box) cut upright from the frame
// (ocr_crop.c), with `classifier` turned 180 degrees where the angle
// classifier finds it upside down (ocr_cls.c; its landmarks then start at
// the corner the text reads from), scaled to the recognizer's height keeping
// its aspect, the recognizer (PP-OCRv4's, from the zoo: ppocr-rec) run on
// it, its output decoded by greedy CTC against the key list. The text and
// its score go into the detection (reel_detection.text, .text_score);
// regions read below `threshold` are dropped, as PaddleOCR drops them. Runs
// on the cpu on host frames (frames in device memory are read through a host
// copy).
#include <string.h>

#include "elements/ctc.h"
#include "elements/manifest.h"
#include "elements/ocr_cls.h"
#include "elements/ocr_crop.h"
#include "reel/reel.h"

typedef struct ocr_priv {
    char *model_spec, *keys_path, *cls_spec;
    int threads, height, min_width, max_width;
    double threshold, cls_threshold;
    bool space;

    reel_model_file ref;
    reel_model *model;
    reel_session *session;
    reel_ctc_keys keys;
    reel_ocr_cls cls;
    bool has_cls;
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
    { "classifier", REEL_PROP_STRING, offsetof(ocr_priv, cls_spec), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "an angle classifier run first (an .onnx file or a zoo name: ppocr-cls); input [N,3,H,W], output "
              "[N,2]: 0 and 180 degrees; empty: none" },
    { "cls-threshold", REEL_PROP_DOUBLE, offsetof(ocr_priv, cls_threshold), "0.9", 0, 1,
      .help = "turn a region 180 degrees where the classifier says so with a probability above this (1: never)",
      .flags = REEL_PROP_MUTABLE },
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
    if (!(s->session = reel_session_new(s->model, reel_session_params(.threads = s->threads), &err)))
        return fail(e, REEL_EINTERNAL, err, "recognizer session");
    if (s->cls_spec && s->cls_spec[0]) {
        s->has_cls = true;
        if ((rc = reel_ocr_cls_open(&s->cls, s->cls_spec, s->threads, &err)) < 0)
            return fail(e, rc, err, "classifier");
    }
    return 0;
}

// The recognizer's input for one region: [1, 3, height, width], the crop
// at the left (at least min_width, at most max_width wide), zeros after it.
static reel_tensor *crop(const ocr_priv *s, const reel_ocr_frame *f, const reel_ocr_region *r)
{
    int cw = reel_ocr_crop_width(r, s->height, s->max_width), W = MAX(cw, s->min_width);
    int64_t shape[4] = { 1, 3, s->height, W };
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, shape);
    if (t)
        reel_ocr_crop(f, r, cw, s->height, W, t->data);
    return t;
}

// Runs the recognizer on region r of detection d and fills in its text.
static int read_text(reel_element *e, const reel_ocr_frame *f, const reel_ocr_region *r, reel_detection *d)
{
    ocr_priv *s = reel_element_priv(e);
    reel_tensor *in = crop(s, f, r), *out = NULL;
    if (!in)
        return reel_element_error(e, REEL_ENOMEM, "no memory for the recognizer's input");
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

// The regions of the detections; the classifier turns those upside down
// (and their landmarks with them, so that they start where the text reads
// from); the recognizer reads each. Empty regions read as nothing.
static int read_all(reel_element *e, const reel_buffer *frame, reel_detections *dets)
{
    ocr_priv *s = reel_element_priv(e);
    reel_ocr_frame f = { frame, (reel_pixfmt)__builtin_ctzll(frame->format.pixfmts), frame->format.width,
                         frame->format.height };
    reel_ocr_region *regions = g_new(reel_ocr_region, dets->n);
    int *of = g_new(int, dets->n), n = 0; // regions[k] is of detection of[k]
    for (int i = 0; i < dets->n; i++) {
        dets->items[i].text[0] = '\0';
        dets->items[i].text_score = 0;
        if (reel_ocr_region_of(&dets->items[i], &regions[n]))
            of[n++] = i;
    }
    int rc = 0;
    if (s->has_cls && n > 0) {
        bool *turned = g_new(bool, n);
        GError *err = NULL;
        rc = reel_ocr_cls_run(&s->cls, &f, regions, n, (float)s->cls_threshold, turned, &err);
        if (rc < 0)
            rc = fail(e, rc, err, "classifier");
        for (int k = 0; rc == 0 && k < n; k++)
            if (turned[k] && dets->items[of[k]].n_landmarks == 4)
                memcpy(dets->items[of[k]].landmarks, regions[k].c, sizeof regions[k].c);
        g_free(turned);
    }
    for (int k = 0; rc == 0 && k < n; k++)
        rc = read_text(e, &f, &regions[k], &dets->items[of[k]]);
    g_free(regions);
    g_free(of);
    if (rc < 0)
        return rc;
    int kept = 0;
    for (int i = 0; i < dets->n; i++)
        if (dets->items[i].text[0] && dets->items[i].text_score >= (float)s->threshold)
            dets->items[kept++] = dets->items[i];
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
    if (s->has_cls)
        reel_ocr_cls_close(&s->cls);
    s->has_cls = false;
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

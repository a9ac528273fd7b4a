// ocr's angle classifier (see ocr_cls.h).
#include "elements/ocr_cls.h"

#include <string.h>

enum { PADDLE_BATCH = 6, PADDLE_HEIGHT = 48, PADDLE_WIDTH = 192 };

static int check_model(reel_ocr_cls *c, GError **error)
{
    int n_in = reel_model_n_inputs(c->model), n_out = reel_model_n_outputs(c->model);
    const reel_model_io *in = n_in ? reel_model_input(c->model, 0) : NULL;
    const reel_model_io *out = n_out ? reel_model_output(c->model, 0) : NULL;
    if (n_in != 1 || n_out != 1 || in->rank != 4 || in->dtype != REEL_DTYPE_FLOAT32
        || !(in->dims[1] == 3 || in->dims[1] < 0) || out->rank != 2 || out->dtype != REEL_DTYPE_FLOAT32) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "model %s is no angle classifier: ocr wants one float input "
                    "[N,3,H,W] and one output [N,2], it has %d input(s) of rank %d and %d output(s) of rank %d",
                    c->ref.path, n_in, in ? in->rank : 0, n_out, out ? out->rank : 0);
        return REEL_EFORMAT;
    }
    if (out->dims[1] > 0 && out->dims[1] != 2) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "model %s gives %lld classes; an angle classifier gives 2 "
                    "(0 and 180 degrees)", c->ref.path, (long long)out->dims[1]);
        return REEL_EFORMAT;
    }
    c->height = in->dims[2] > 0 ? (int)in->dims[2] : PADDLE_HEIGHT;
    c->width = in->dims[3] > 0 ? (int)in->dims[3] : PADDLE_WIDTH;
    c->fixed_batch = in->dims[0] > 0;
    c->batch = c->fixed_batch ? (int)MIN(in->dims[0], 64) : PADDLE_BATCH;
    if (c->fixed_batch && c->batch != in->dims[0]) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "model %s wants batches of %lld; ocr runs at most 64",
                    c->ref.path, (long long)in->dims[0]);
        return REEL_EFORMAT;
    }
    return 0;
}

int reel_ocr_cls_open(reel_ocr_cls *c, const char *spec, int threads, GError **error)
{
    memset(c, 0, sizeof *c);
    int rc = reel_model_resolve(spec, &c->ref, error);
    if (rc < 0)
        return rc;
    if (!(c->model = reel_model_load(c->ref.path, error)))
        return REEL_EFORMAT;
    if ((rc = check_model(c, error)) < 0)
        return rc;
    c->session = reel_session_new(c->model, reel_session_params(.threads = threads), error);
    return c->session ? 0 : REEL_EINTERNAL;
}

void reel_ocr_cls_close(reel_ocr_cls *c)
{
    reel_session_destroy(&c->session);
    reel_model_unref(&c->model);
    reel_model_file_clear(&c->ref);
}

// One batch: regions[0..n), n <= c->batch.
static int run_batch(reel_ocr_cls *c, const reel_ocr_frame *f, reel_ocr_region *regions, int n, float threshold,
                     bool *turned, GError **error)
{
    int rows = c->fixed_batch ? c->batch : n; // a fixed batch's other rows stay zeros
    int64_t shape[4] = { rows, 3, c->height, c->width };
    reel_tensor *in = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, shape), *out = NULL;
    if (!in) {
        g_set_error(error, REEL_ERROR, REEL_ENOMEM, "no memory for the classifier's input");
        return REEL_ENOMEM;
    }
    size_t one = 3 * (size_t)c->height * (size_t)c->width;
    for (int i = 0; i < n; i++)
        reel_ocr_crop(f, &regions[i], reel_ocr_crop_width(&regions[i], c->height, c->width), c->height, c->width,
                      (float *)in->data + (size_t)i * one);
    int rc = reel_session_run(c->session, &in, &out, error);
    reel_tensor_free(&in);
    if (rc < 0)
        return rc;
    if (out->dtype != REEL_DTYPE_FLOAT32 || out->rank != 2 || out->shape[0] != rows || out->shape[1] != 2
        || !out->data) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "classifier %s gave an output of rank %d, %lld classes; ocr "
                    "wants [%d, 2] in host memory", c->ref.path, out->rank,
                    out->rank == 2 ? (long long)out->shape[1] : -1LL, rows);
        rc = REEL_EFORMAT;
    } else {
        const float *p = out->data;
        for (int i = 0; i < n; i++) {
            // PaddleOCR's ClsPostProcess and TextClassifier: the likelier label;
            // "180" above the threshold turns (1: never).
            turned[i] = p[2 * i + 1] > p[2 * i] && p[2 * i + 1] > threshold;
            if (turned[i])
                reel_ocr_region_turn(&regions[i]);
        }
    }
    reel_tensor_free(&out);
    return rc;
}

int reel_ocr_cls_run(reel_ocr_cls *c, const reel_ocr_frame *f, reel_ocr_region *regions, int n, float threshold,
                     bool *turned, GError **error)
{
    for (int i = 0; i < n; i += c->batch) {
        int rc = run_batch(c, f, regions + i, MIN(c->batch, n - i), threshold, turned + i, error);
        if (rc < 0)
            return rc;
    }
    return 0;
}

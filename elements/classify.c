// classify: reads a classifier's output an infer attached to a frame
// (reel_inference), turns it into probabilities (softmax) and attaches the
// best classes to the frame as reel_classifications: of the whole frame, or
// of each detection when the classifier ran on their crops (preprocess
// roi=detections).
// It reads only metadata, so frames pass in whatever memory they are in.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elements/postprocess.h"
#include "reel/reel.h"

typedef struct classify_priv {
    bool softmax;
    int top_k;
    double threshold;
    char *output, *labels_path;

    char **labels;
    int n_labels;
    GArray *probs; // float: this frame's class scores
} classify_priv;

static const reel_prop props[] = {
    { "softmax", REEL_PROP_BOOL, offsetof(classify_priv, softmax), "true",
      .help = "turn the output into probabilities (false: it already is, or raw scores will do)" },
    // Read afresh for each frame, so they may change while running.
    { "top-k", REEL_PROP_INT, offsetof(classify_priv, top_k), "1", 1, 1000, .help = "best classes to keep",
      .flags = REEL_PROP_MUTABLE },
    { "threshold", REEL_PROP_DOUBLE, offsetof(classify_priv, threshold), "0",
      .help = "keep classes scoring at least this (softmax=false: raw scores may be negative, lower it)",
      .flags = REEL_PROP_MUTABLE },
    { "output", REEL_PROP_STRING, offsetof(classify_priv, output), NULL,
      .help = "the output holding the class scores; default: the first" },
    { "labels", REEL_PROP_STRING, offsetof(classify_priv, labels_path), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "label file, one per line (class id = line index); default: the manifest's" },
    { NULL },
};

static int start(reel_element *e)
{
    classify_priv *s = reel_element_priv(e);
    int rc;
    if ((rc = reel_postprocess_apply_manifest(e, "classify", &s->labels_path)) < 0)
        return rc;
    GError *err = NULL;
    if (s->labels_path && !(s->labels = reel_labels_load(s->labels_path, &s->n_labels, &err))) {
        rc = reel_element_error(e, REEL_EIO, "labels=%s: %s", s->labels_path, err->message);
        g_error_free(err);
        return rc;
    }
    s->probs = g_array_new(FALSE, FALSE, sizeof(float));
    return 0;
}

// exp(v - max) / sum, in place; the max keeps expf from overflowing.
static void softmax(float *v, int n)
{
    float max = v[0], sum = 0;
    for (int i = 1; i < n; i++)
        max = fmaxf(max, v[i]);
    for (int i = 0; i < n; i++)
        sum += v[i] = expf(v[i] - max);
    for (int i = 0; i < n; i++)
        v[i] /= sum;
}

// The class scores of this frame into s->probs; false when the output is
// missing or not float32 in host memory (reported).
static bool read_scores(reel_element *e, const reel_inference *inf)
{
    classify_priv *s = reel_element_priv(e);
    const reel_buffer *t = reel_inference_output(inf, s->output, 0);
    const float *v = reel_output_floats(t);
    if (!v) {
        char *want = s->output ? g_strdup_printf("the output called '%s'", s->output) : g_strdup("a first output");
        char *got = reel_inference_describe(inf);
        reel_element_error(e, REEL_EFORMAT, "classify wants %s of float32 class scores, but model '%s' gave: %s",
                           want, inf->model, got);
        g_free(want);
        g_free(got);
        return false;
    }
    size_t n = 1;
    for (int d = 0; d < t->format.rank; d++)
        n *= (size_t)t->format.shape[d];
    g_array_set_size(s->probs, (guint)n);
    memcpy(s->probs->data, v, n * sizeof(float));
    if (s->softmax && n > 0)
        softmax((float *)s->probs->data, (int)n);
    return true;
}

// The k best classes at or above the threshold, best first (ties: the lower
// class id), by k passes of a max search (k is small), appended to out.
static void best_classes(classify_priv *s, int detection, reel_classifications *out)
{
    float *p = (float *)s->probs->data;
    int n = (int)s->probs->len;
    bool *taken = g_new0(bool, n + 1);
    for (int kept = 0; kept < s->top_k; kept++) {
        int best = -1;
        for (int c = 0; c < n; c++)
            if (!taken[c] && (best < 0 || p[c] > p[best]))
                best = c;
        if (best < 0 || p[best] < (float)s->threshold)
            break;
        taken[best] = true;
        reel_classification *item = &out->items[out->n++];
        *item = (reel_classification){ .class_id = best, .score = p[best], .detection = detection };
        reel_label_copy(item->label, s->labels, s->n_labels, best);
    }
    g_free(taken);
}

// The classifier's results on this frame: the last inference, or when it
// classified crops of detections (preprocess roi=detections), every crop's
// inference of that model.
static GPtrArray *classifier_results(const reel_buffer *buf)
{
    const reel_inference *last = reel_buffer_last_inference(buf);
    GPtrArray *list = g_ptr_array_new();
    if (!last)
        return list;
    if (last->detection < 0) {
        g_ptr_array_add(list, (gpointer)last);
        return list;
    }
    void *data;
    for (reel_meta *m = reel_buffer_next_meta(buf, NULL, &reel_inference_meta, &data); m;
         m = reel_buffer_next_meta(buf, m, &reel_inference_meta, &data)) {
        const reel_inference *inf = data;
        if (inf->detection >= 0 && strcmp(inf->model, last->model) == 0)
            g_ptr_array_add(list, data);
    }
    return list;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    classify_priv *s = reel_element_priv(e);
    // Read before the frame may be copied below: the metas are the frame's.
    GPtrArray *results = classifier_results(buf);
    reel_classifications *out = NULL;
    int rc = 0;
    if (results->len == 0 && reel_buffer_get_meta(buf, &reel_detections_meta)) {
        out = reel_classifications_new(0); // crops of detections, and there were none
    } else if (results->len == 0) {
        rc = reel_element_error(e, REEL_EINVAL, "frame %" G_GINT64_FORMAT " carries no inference results: put an "
                                "infer before classify", buf->frame_number);
    } else {
        out = reel_classifications_new((int)results->len * s->top_k);
        out->n = 0; // best_classes() fills it; the rest of the allocation goes unused
        for (guint i = 0; i < results->len && rc == 0; i++) {
            const reel_inference *inf = results->pdata[i];
            if (read_scores(e, inf))
                best_classes(s, inf->detection, out);
            else
                rc = REEL_EFORMAT;
        }
    }
    g_ptr_array_free(results, TRUE);
    // Other branches may hold this frame: metadata goes on a copy of our own.
    if (rc == 0 && (rc = reel_buffer_make_writable(&buf)) < 0)
        reel_element_error(e, rc, "cannot copy a shared frame to attach classes: %s", reel_strerror(rc));
    if (rc < 0) {
        g_free(out);
        reel_buffer_unref(&buf);
        return rc;
    }
    reel_buffer_add_meta(buf, &reel_classifications_meta, out);
    return reel_element_push(e, 0, buf);
}

static void stop(reel_element *e)
{
    classify_priv *s = reel_element_priv(e);
    g_strfreev(s->labels);
    s->labels = NULL;
    s->n_labels = 0;
    if (s->probs)
        g_array_free(s->probs, TRUE);
    s->probs = NULL;
}

const reel_element_class reel_classify_class = {
    .name = "classify",
    .description = "Turns a classifier's output into the frame's best classes (softmax, top-k, labels)",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // reads only metadata: frames stay where they are
    .priv_size = sizeof(classify_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw", .output_caps = "video/raw",
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

// Helpers of detect and classify (see postprocess.h).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/read_file.h"
#include "elements/manifest.h"
#include "elements/postprocess.h"

int reel_ssd_anchors(const int *strides, int n_strides, int width, int height, reel_anchor **anchors)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(reel_anchor));
    for (int layer = 0; layer < n_strides;) {
        int stride = strides[layer], per_cell = 0;
        for (; layer < n_strides && strides[layer] == stride; layer++)
            per_cell += 2;
        int gw = (width + stride - 1) / stride, gh = (height + stride - 1) / stride;
        for (int y = 0; y < gh; y++)
            for (int x = 0; x < gw; x++)
                for (int k = 0; k < per_cell; k++) {
                    reel_anchor c = { (x + 0.5f) / (float)gw, (y + 0.5f) / (float)gh };
                    g_array_append_val(a, c);
                }
    }
    int n = (int)a->len;
    *anchors = (reel_anchor *)g_array_free(a, FALSE);
    return n;
}

static float area(const reel_detection *d)
{
    return fmaxf(d->x1 - d->x0, 0) * fmaxf(d->y1 - d->y0, 0);
}

float reel_box_iou(const reel_detection *a, const reel_detection *b)
{
    reel_detection in = { .x0 = fmaxf(a->x0, b->x0), .y0 = fmaxf(a->y0, b->y0),
                          .x1 = fminf(a->x1, b->x1), .y1 = fminf(a->y1, b->y1) };
    float inter = area(&in), uni = area(a) + area(b) - inter;
    return uni > 0 ? inter / uni : 0;
}

typedef struct ranked {
    float score;
    int index;
} ranked;

// Best score first, then the earlier index, so that ties keep the decoder's
// order on every libc.
static int by_score(const void *pa, const void *pb)
{
    const ranked *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

// Indices of d[0..n) in the order NMS visits them (g_free it).
static int *rank(const reel_detection *d, int n)
{
    ranked *r = g_new(ranked, n + 1);
    for (int i = 0; i < n; i++)
        r[i] = (ranked){ d[i].score, i };
    qsort(r, (size_t)n, sizeof *r, by_score);
    int *order = g_new(int, n + 1);
    for (int i = 0; i < n; i++)
        order[i] = r[i].index;
    g_free(r);
    return order;
}

static bool same_object(const reel_detection *a, const reel_detection *b, float iou)
{
    return a->class_id == b->class_id && reel_box_iou(a, b) > iou;
}

// The score-weighted average of the boxes and landmarks of `top`'s object,
// taking them out of order[0..*n) (MediaPipe's WeightedNonMaxSuppression).
static reel_detection blend(const reel_detection *d, int *order, int *n, float iou)
{
    const reel_detection *top = &d[order[0]];
    reel_detection out = *top;
    double sum = 0, box[4] = { 0 }, marks[REEL_MAX_LANDMARKS][2] = { { 0 } };
    int left = 0;
    for (int i = 0; i < *n; i++) {
        const reel_detection *c = &d[order[i]];
        // The top box always joins, also when empty (its IoU with itself is 0).
        if (i > 0 && !same_object(top, c, iou)) {
            order[left++] = order[i];
            continue;
        }
        sum += c->score;
        box[0] += c->x0 * (double)c->score, box[1] += c->y0 * (double)c->score;
        box[2] += c->x1 * (double)c->score, box[3] += c->y1 * (double)c->score;
        for (int l = 0; l < top->n_landmarks; l++)
            for (int k = 0; k < 2; k++)
                marks[l][k] += c->landmarks[l][k] * (double)c->score;
    }
    *n = left;
    if (sum <= 0)
        return out; // all scores 0: nothing to weigh by
    out.x0 = (float)(box[0] / sum), out.y0 = (float)(box[1] / sum);
    out.x1 = (float)(box[2] / sum), out.y1 = (float)(box[3] / sum);
    for (int l = 0; l < top->n_landmarks; l++)
        for (int k = 0; k < 2; k++)
            out.landmarks[l][k] = (float)(marks[l][k] / sum);
    return out;
}

int reel_nms(reel_detection *d, int n, reel_nms_kind kind, float iou, int max)
{
    if (n == 0)
        return 0; // d may be NULL then (an empty GArray's data)
    int *order = rank(d, n);
    reel_detection *kept = g_new(reel_detection, n + 1);
    int n_kept = 0;
    if (kind == REEL_NMS_WEIGHTED) {
        for (int left = n; left > 0 && n_kept < max;)
            kept[n_kept++] = blend(d, order, &left, iou);
    } else {
        for (int i = 0; i < n && n_kept < max; i++) {
            bool suppressed = false;
            for (int k = 0; k < n_kept && !suppressed; k++)
                suppressed = same_object(&kept[k], &d[order[i]], iou);
            if (!suppressed)
                kept[n_kept++] = d[order[i]];
        }
    }
    memcpy(d, kept, (size_t)n_kept * sizeof *d);
    g_free(kept);
    g_free(order);
    return n_kept;
}

char **reel_labels_load(const char *path, int *n, GError **error)
{
    char *text;
    if (reel_read_text_file(path, "labels file", &text, error) != 0)
        return NULL;
    char **lines = g_strsplit(text, "\n", -1);
    g_free(text);
    int count = (int)g_strv_length(lines);
    // The newline that ends the last line starts no label.
    if (count > 0 && !lines[count - 1][0]) {
        g_free(lines[--count]);
        lines[count] = NULL;
    }
    for (int i = 0; i < count; i++)
        g_strchomp(lines[i]); // "\r" of files written on Windows
    *n = count;
    return lines;
}

void reel_label_copy(char dst[REEL_LABEL_MAX], char **labels, int n, int id)
{
    dst[0] = 0;
    if (id >= 0 && id < n)
        g_strlcpy(dst, labels[id], REEL_LABEL_MAX);
}

int reel_postprocess_apply_manifest(reel_element *e, const char *group, char **labels)
{
    reel_element *infer = reel_find_infer(e, false);
    char *spec = infer ? reel_element_get(infer, "model") : NULL;
    reel_model_file ref = { 0 };
    GError *err = NULL;
    int rc = spec && *spec ? reel_model_resolve(spec, &ref, &err) : 0;
    if (rc == 0 && ref.manifest)
        rc = reel_manifest_apply(ref.manifest, group, e, &err);
    if (rc == 0 && ref.manifest && !*labels && !(*labels = reel_manifest_model_key(ref.manifest, "labels", true, &err)))
        rc = err ? REEL_EINVAL : 0;
    if (rc < 0) {
        rc = reel_element_error(e, rc, "%s", err->message);
        g_error_free(err);
    }
    reel_model_file_clear(&ref);
    g_free(spec);
    return rc;
}

char *reel_inference_describe(const reel_inference *inf)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < inf->n; i++) {
        const reel_caps *f = &inf->outputs[i]->format;
        g_string_append_printf(s, "%s%s [", i ? ", " : "", inf->names[i] ? inf->names[i] : "?");
        for (int d = 0; d < f->rank; d++)
            g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? "x" : "", f->shape[d]);
        g_string_append_printf(s, "]%s", f->dtype == REEL_DTYPE_FLOAT32 ? "" : " not float32");
    }
    if (!inf->n)
        g_string_append(s, "no outputs");
    return g_string_free(s, FALSE);
}

const float *reel_output_floats(const reel_buffer *t)
{
    return t && t->format.dtype == REEL_DTYPE_FLOAT32 && t->data ? (const float *)t->data : NULL;
}

// What detect and classify share: MediaPipe's SSD anchors, non-maximum
// suppression, label files, and the defaults a model's manifest gives them.
// Plain functions on plain arrays, so that tests can call them directly.
#ifndef REEL_ELEMENTS_POSTPROCESS_H
#define REEL_ELEMENTS_POSTPROCESS_H

#include "reel/reel.h"

// An anchor centre, normalized to 0..1 of the model's input; its size is
// fixed at 1 (MediaPipe's fixed_anchor_size), so boxes are not scaled by it.
typedef struct reel_anchor {
    float x, y;
} reel_anchor;

// MediaPipe's SsdAnchorsCalculator for an input of width x height: strides
// in order, consecutive equal strides forming one layer with 2 anchors per
// stride entry per cell; cells row by row on a ceil(size / stride) grid,
// centres at (x + 0.5) / grid. Returns the number of anchors and sets
// *anchors (g_free it).
int reel_ssd_anchors(const int *strides, int n_strides, int width, int height, reel_anchor **anchors);

// Intersection over union of two boxes; 0 when the union is empty.
float reel_box_iou(const reel_detection *a, const reel_detection *b);

typedef enum reel_nms_kind {
    REEL_NMS_HARD,     // keep the best box, drop those overlapping it
    REEL_NMS_WEIGHTED, // MediaPipe: the best box's score, its overlappers' score-weighted average box
} reel_nms_kind;

// Non-maximum suppression in place over d[0..n): boxes of one class that
// overlap by more than `iou` are one object. Leaves the survivors first,
// best score first (ties: the earlier box first), and returns how many,
// at most `max`.
int reel_nms(reel_detection *d, int n, reel_nms_kind kind, float iou, int max);

// A label file: plain text, one label per line, the class id being the line
// index. Returns a NULL-terminated array (g_strfreev it) and sets *n, or
// NULL with *error set.
char **reel_labels_load(const char *path, int *n, GError **error);

// Sets the label of class `id` (from labels[0..n), "" when out of range).
void reel_label_copy(char dst[REEL_LABEL_MAX], char **labels, int n, int id);

// Applies the manifest of the model of the infer upstream of e (group
// `group`, properties the user set kept) and, when *labels (the element's
// labels property) is still unset, the manifest's [model] labels. Returns
// 0 when there is no infer or manifest, or an error already reported.
int reel_postprocess_apply_manifest(reel_element *e, const char *group, char **labels);

// "Identity:0 [1x512x1], Identity_1:0 [1x384x1]": the outputs of an
// inference, for error messages (g_free it).
char *reel_inference_describe(const reel_inference *inf);

// The output's floats when it is a float32 tensor in host memory, else NULL.
const float *reel_output_floats(const reel_buffer *t);

#endif

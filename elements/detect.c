// detect: turns the raw outputs an infer attached to a frame (reel_inference)
// into boxes, with the output layout of a common detector family, keeps one
// box per object (NMS) and attaches them to the frame as reel_detections in
// frame pixels, mapped back through the inference's transform. It reads
// only metadata, so frames pass in whatever memory they are in.
//
// Layouts (N boxes, C classes; coordinates in model-input pixels unless
// said otherwise):
//   blazeface  scores [1, N, 1] (logits) and boxes [1, N, 4 + 2K] (x, y, w,
//              h and K landmarks, relative to MediaPipe SSD anchors), one
//              pair per anchor group, in anchor order
//   yolov8     [1, 4 + C, N]: cx, cy, w, h rows, then C scores (sigmoid done)
//   yolov5     [1, N, 5 + C]: cx, cy, w, h, objectness, C class scores
//   ssd        boxes [1, N, 4] (y0, x0, y1, x1, normalized 0..1) and scores
//              [1, N, C] (probabilities; the class id is the column)
//   yolov8-seg [1, 4 + C + M, N] (yolov8's rows, then M mask coefficients)
//              and prototypes [1, M, H', W'] over the input (H/4, W/4):
//              each kept box gets a reel_mask (seg_mask.c)
//   yolov8-pose [1, 4 + 1 + 3K, N]: cx, cy, w, h, the person score, then
//              x, y, score (sigmoid done) of K keypoints, as scored landmarks
//   db         a text probability map [1, 1, H, W] (PaddleOCR's detectors):
//              rotated boxes of text regions (elements/db.h), their corners
//              as the 4 landmarks; no NMS (regions do not overlap)
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elements/db.h"
#include "elements/postprocess.h"
#include "elements/seg_mask.h"
#include "reel/reel.h"

enum { DEC_AUTO, DEC_BLAZEFACE, DEC_YOLOV8, DEC_YOLOV5, DEC_SSD, DEC_YOLOV8_SEG, DEC_YOLOV8_POSE, DEC_DB };
enum { NMS_AUTO, NMS_HARD, NMS_WEIGHTED };
#define MAX_STRIDES 16
#define MAX_PARTS 8

// A float32 host tensor [1, R, C]: one row per box. The decoders read
// such tensors (and yolov8-seg prototypes).
typedef struct matrix {
    const float *v;
    int64_t rows, cols;
} matrix;

typedef struct detect_priv {
    int decoder, nms, max, input_size;
    double threshold, iou, binarize, unclip, min_size;
    char *labels_path, *strides_text, *scores, *boxes;

    char **labels;
    int n_labels;
    int strides[MAX_STRIDES], n_strides;
    reel_anchor *anchors; // for an input of anchors_w x anchors_h
    int n_anchors, anchors_w, anchors_h;
    GArray *found; // reel_detection: this frame's boxes in tensor pixels, before NMS
    GArray *runs;  // uint32_t: this frame's mask runs (yolov8-seg)
    matrix seg;    // yolov8-seg: this frame's output0, for the kept boxes' coefficients
    reel_protos protos;
    GArray *db;    // reel_db_box: this frame's text boxes in map pixels
} detect_priv;

static const reel_enum_value decoders[] = {
    { "auto", DEC_AUTO, "what the model's manifest says" },
    { "blazeface", DEC_BLAZEFACE, "MediaPipe BlazeFace: anchor-relative boxes and landmarks, score logits" },
    { "yolov8", DEC_YOLOV8, "one output [1, 4 + classes, boxes], no objectness" },
    { "yolov5", DEC_YOLOV5, "one output [1, boxes, 5 + classes], score = objectness * class score" },
    { "ssd", DEC_SSD, "boxes [1, N, 4] as normalized y0, x0, y1, x1 and scores [1, N, classes]" },
    { "yolov8-seg", DEC_YOLOV8_SEG, "[1, 4 + classes + 32, boxes] and prototypes [1, 32, H/4, W/4]: boxes with masks" },
    { "yolov8-pose", DEC_YOLOV8_POSE, "[1, 4 + 1 + 3 keypoints, boxes]: person boxes with scored keypoints" },
    { "db", DEC_DB, "a text probability map [1, 1, H, W] (PaddleOCR): rotated text boxes, corners as landmarks" },
    { NULL },
};

static const reel_enum_value nms_kinds[] = {
    { "auto", NMS_AUTO, "weighted for blazeface, hard otherwise" },
    { "hard", NMS_HARD, "keep the best box of each object" },
    { "weighted", NMS_WEIGHTED, "MediaPipe's blend: the score-weighted average of an object's boxes" },
    { NULL },
};

static const reel_prop props[] = {
    { "decoder", REEL_PROP_ENUM, offsetof(detect_priv, decoder), "auto", .values = decoders,
      .help = "layout of the model's outputs" },
    // Read afresh for each frame, so they may change while running.
    { "threshold", REEL_PROP_DOUBLE, offsetof(detect_priv, threshold), "0.5", 0, 1,
      .help = "keep boxes scoring at least this (after sigmoid where the model gives logits)",
      .flags = REEL_PROP_MUTABLE },
    { "iou", REEL_PROP_DOUBLE, offsetof(detect_priv, iou), "0.45", 0, 1,
      .help = "boxes of one class overlapping more than this (intersection over union) are one object",
      .flags = REEL_PROP_MUTABLE },
    { "binarize", REEL_PROP_DOUBLE, offsetof(detect_priv, binarize), "0.3", 0, 1,
      .help = "db: map pixels above this are text; threshold= then keeps regions whose mean is at least that",
      .flags = REEL_PROP_MUTABLE },
    { "unclip", REEL_PROP_DOUBLE, offsetof(detect_priv, unclip), "1.5", 0, 100,
      .help = "db: grow each text box by area * unclip / perimeter on every side", .flags = REEL_PROP_MUTABLE },
    { "min-size", REEL_PROP_DOUBLE, offsetof(detect_priv, min_size), "3", 0, 65536,
      .help = "db: drop text boxes whose shorter side (map pixels, before growing) is under this",
      .flags = REEL_PROP_MUTABLE },
    { "max", REEL_PROP_INT, offsetof(detect_priv, max), "100", 1, 100000, .help = "most detections per frame",
      .flags = REEL_PROP_MUTABLE },
    { "nms", REEL_PROP_ENUM, offsetof(detect_priv, nms), "auto", .values = nms_kinds,
      .help = "how overlapping boxes become one", .flags = REEL_PROP_MUTABLE },
    { "labels", REEL_PROP_STRING, offsetof(detect_priv, labels_path), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "label file, one per line (class id = line index); default: the manifest's" },
    { "strides", REEL_PROP_STRING, offsetof(detect_priv, strides_text), "8,16,16,16",
      .help = "blazeface anchor strides; equal neighbours form one layer, 2 anchors per entry" },
    { "input-size", REEL_PROP_INT, offsetof(detect_priv, input_size), "0", 0, 65536,
      .help = "model input size the outputs refer to; 0: the tensor's size from the transform" },
    { "scores", REEL_PROP_STRING, offsetof(detect_priv, scores), NULL,
      .help = "score output names, comma-separated; default: found by shape" },
    { "boxes", REEL_PROP_STRING, offsetof(detect_priv, boxes), NULL,
      .help = "box output names, comma-separated (yolo: its one output); default: found by shape" },
    { NULL },
};

static const char *decoder_name(int decoder)
{
    return decoders[decoder].name;
}

static int parse_strides(reel_element *e)
{
    detect_priv *s = reel_element_priv(e);
    char **parts = g_strsplit(s->strides_text ? s->strides_text : "", ",", -1);
    int n = 0;
    bool ok = parts[0] != NULL;
    for (; ok && parts[n]; n++) {
        char *end;
        long v = strtol(parts[n], &end, 10);
        ok = n < MAX_STRIDES && end != parts[n] && !*end && v > 0 && v <= 65536;
        if (ok)
            s->strides[n] = (int)v;
    }
    g_strfreev(parts);
    if (!ok)
        return reel_element_error(e, REEL_EINVAL, "strides=\"%s\": give up to %d positive integers separated by "
                                  "commas", s->strides_text ? s->strides_text : "", MAX_STRIDES);
    s->n_strides = n;
    return 0;
}

static int start(reel_element *e)
{
    detect_priv *s = reel_element_priv(e);
    int rc;
    if ((rc = reel_postprocess_apply_manifest(e, "detect", &s->labels_path)) < 0)
        return rc;
    if (s->decoder == DEC_AUTO)
        return reel_element_error(e, REEL_EINVAL, "no decoder: set decoder=blazeface|yolov8|yolov5|ssd|yolov8-seg|"
                                  "yolov8-pose|db, or give the model a manifest saying [detect] decoder=...");
    if ((rc = parse_strides(e)) < 0)
        return rc;
    GError *err = NULL;
    if (s->labels_path && !(s->labels = reel_labels_load(s->labels_path, &s->n_labels, &err))) {
        rc = reel_element_error(e, REEL_EIO, "labels=%s: %s", s->labels_path, err->message);
        g_error_free(err);
        return rc;
    }
    s->found = g_array_new(FALSE, FALSE, sizeof(reel_detection));
    s->runs = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    s->db = g_array_new(FALSE, FALSE, sizeof(reel_db_box));
    return 0;
}

// Reports outputs that do not fit the decoder: what it wants, what came.
static int bad_outputs(reel_element *e, const reel_inference *inf, const char *want)
{
    detect_priv *s = reel_element_priv(e);
    char *got = reel_inference_describe(inf);
    int rc = reel_element_error(e, REEL_EFORMAT, "decoder=%s wants %s, but model '%s' gave: %s",
                                decoder_name(s->decoder), want, inf->model, got);
    g_free(got);
    return rc;
}

static void add_box(detect_priv *s, float cx, float cy, float w, float h, float score, int class_id)
{
    reel_detection d = { .x0 = cx - w / 2, .y0 = cy - h / 2, .x1 = cx + w / 2, .y1 = cy + h / 2,
                         .score = score, .class_id = class_id, .track_id = -1 };
    g_array_append_val(s->found, d);
}

static bool keeps(const detect_priv *s, float score)
{
    return score >= (float)s->threshold;
}

static bool as_matrix(const reel_buffer *t, matrix *m)
{
    const float *v = reel_output_floats(t);
    if (!v || t->format.rank != 3 || t->format.shape[0] != 1)
        return false;
    *m = (matrix){ v, t->format.shape[1], t->format.shape[2] };
    return true;
}

// The first output other than `skip` that is a matrix of `rows` x `cols`
// (-1: any) and, when name is given, called `name`: its index, or -1.
static int find_matrix(const reel_inference *inf, const char *name, int skip, int64_t rows, int64_t cols, matrix *m)
{
    for (int i = 0; i < inf->n; i++) {
        bool candidate = i != skip && (!name || (inf->names[i] && strcmp(inf->names[i], name) == 0));
        if (candidate && as_matrix(inf->outputs[i], m) && (rows < 0 || m->rows == rows)
            && (cols < 0 || m->cols == cols))
            return i;
    }
    return -1;
}

// ---- blazeface

static bool is_score_part(const matrix *m)
{
    return m->cols == 1;
}

static bool is_box_part(const matrix *m)
{
    return m->cols >= 4 && m->cols % 2 == 0;
}

// The score (or box) tensors in anchor order: those named in `names`
// (comma-separated), else every output of the right shape. Returns how
// many, or -1 when a named one is missing or no matrix.
static int pick_parts(const reel_inference *inf, const char *names, bool (*fits)(const matrix *), matrix *out)
{
    int n = 0;
    if (!names) {
        for (int i = 0; i < inf->n && n < MAX_PARTS; i++)
            if (as_matrix(inf->outputs[i], &out[n]) && fits(&out[n]))
                n++;
        return n;
    }
    char **list = g_strsplit(names, ",", -1);
    bool ok = true;
    for (; ok && list[n] && n < MAX_PARTS; n++)
        ok = as_matrix(reel_inference_output(inf, g_strstrip(list[n]), 0), &out[n]);
    g_strfreev(list);
    return ok ? n : -1;
}

// Anchors for a w x h input, made again only when the size changes.
static void update_anchors(detect_priv *s, int w, int h)
{
    if (s->anchors && s->anchors_w == w && s->anchors_h == h)
        return;
    g_free(s->anchors);
    s->n_anchors = reel_ssd_anchors(s->strides, s->n_strides, w, h, &s->anchors);
    s->anchors_w = w;
    s->anchors_h = h;
}

// MediaPipe's TensorsToDetections with x_scale = w: centre = raw / w *
// anchor_w + anchor_x, size = raw / w * anchor_w, with anchor_w = 1 (fixed
// anchor size) — in pixels the raw values just add to the anchor's centre.
static void add_blazeface_box(detect_priv *s, const float *raw, int64_t coords, const reel_anchor *a, float score)
{
    float ax = a->x * (float)s->anchors_w, ay = a->y * (float)s->anchors_h;
    add_box(s, raw[0] + ax, raw[1] + ay, raw[2], raw[3], score, 0);
    reel_detection *d = &g_array_index(s->found, reel_detection, s->found->len - 1);
    d->n_landmarks = (int)MIN((coords - 4) / 2, REEL_MAX_LANDMARKS);
    for (int k = 0; k < d->n_landmarks; k++) {
        d->landmarks[k][0] = raw[4 + 2 * k] + ax;
        d->landmarks[k][1] = raw[5 + 2 * k] + ay;
    }
}

static int decode_blazeface(reel_element *e, const reel_inference *inf, int tw, int th)
{
    detect_priv *s = reel_element_priv(e);
    matrix sc[MAX_PARTS], bx[MAX_PARTS];
    int ns = pick_parts(inf, s->scores, is_score_part, sc), nb = pick_parts(inf, s->boxes, is_box_part, bx);
    update_anchors(s, tw, th);
    bool fits = ns > 0 && ns == nb;
    int64_t total = 0;
    for (int i = 0; fits && i < ns; i++) {
        fits = sc[i].rows == bx[i].rows && is_score_part(&sc[i]) && is_box_part(&bx[i]);
        total += sc[i].rows;
    }
    if (!fits || total != s->n_anchors) {
        char *want = g_strdup_printf("score outputs [1,N,1] and box outputs [1,N,4+2K] pairing up to the %d "
                                     "anchors of strides=%s at %dx%d", s->n_anchors, s->strides_text, tw, th);
        int rc = bad_outputs(e, inf, want);
        g_free(want);
        return rc;
    }
    int a = 0;
    for (int i = 0; i < ns; i++)
        for (int64_t r = 0; r < sc[i].rows; r++, a++) {
            float score = 1 / (1 + expf(-sc[i].v[r]));
            if (keeps(s, score))
                add_blazeface_box(s, bx[i].v + r * bx[i].cols, bx[i].cols, &s->anchors[a], score);
        }
    return 0;
}

// ---- yolo

// The one output of a yolo model: named by boxes=, else the first [1, R, C].
static bool yolo_output(const detect_priv *s, const reel_inference *inf, matrix *m)
{
    return find_matrix(inf, s->boxes, -1, -1, -1, m) >= 0;
}

// The best of n scores at v[0], v[step], ...: its index, and *best.
static int argmax(const float *v, int64_t n, int64_t step, float *best)
{
    int id = 0;
    for (int64_t c = 1; c < n; c++)
        if (v[c * step] > v[id * step])
            id = (int)c;
    *best = v[id * step];
    return id;
}

static int decode_yolov8(reel_element *e, const reel_inference *inf)
{
    detect_priv *s = reel_element_priv(e);
    matrix m;
    if (!yolo_output(s, inf, &m) || m.rows < 5)
        return bad_outputs(e, inf, "one output [1, 4 + classes, boxes]");
    // Column j is box j: cx, cy, w, h, then one score per class.
    int64_t n = m.cols;
    for (int64_t j = 0; j < n; j++) {
        float score;
        int id = argmax(m.v + 4 * n + j, m.rows - 4, n, &score);
        if (keeps(s, score))
            add_box(s, m.v[j], m.v[n + j], m.v[2 * n + j], m.v[3 * n + j], score, id);
    }
    return 0;
}

static int decode_yolov5(reel_element *e, const reel_inference *inf)
{
    detect_priv *s = reel_element_priv(e);
    matrix m;
    if (!yolo_output(s, inf, &m) || m.cols < 6)
        return bad_outputs(e, inf, "one output [1, boxes, 5 + classes]");
    for (int64_t j = 0; j < m.rows; j++) {
        const float *r = m.v + j * m.cols;
        float best;
        int id = argmax(r + 5, m.cols - 5, 1, &best);
        float score = r[4] * best;
        if (keeps(s, score))
            add_box(s, r[0], r[1], r[2], r[3], score, id);
    }
    return 0;
}

// ---- yolov8-seg and yolov8-pose

// The prototypes: the first float32 host output [1, M, H', W'].
static bool find_protos(const reel_inference *inf, reel_protos *p)
{
    for (int i = 0; i < inf->n; i++) {
        const reel_buffer *t = inf->outputs[i];
        const float *v = reel_output_floats(t);
        const int64_t *d = t ? t->format.shape : NULL;
        if (v && t->format.rank == 4 && d[0] == 1 && d[1] > 0 && d[1] <= 1024 && d[2] > 0 && d[3] > 0 &&
            d[2] <= 65536 && d[3] <= 65536) {
            *p = (reel_protos){ v, (int)d[1], (int)d[2], (int)d[3] };
            return true;
        }
    }
    return false;
}

// Like yolov8, with M coefficient rows after the scores. NMS keeps whole
// reel_detections, so each candidate's column rides in track_id (detect
// tracks nothing) until add_masks() reads the coefficients; then it is -1.
static int decode_yolov8_seg(reel_element *e, const reel_inference *inf)
{
    detect_priv *s = reel_element_priv(e);
    matrix m;
    reel_protos p;
    bool fits = yolo_output(s, inf, &m) && find_protos(inf, &p) && m.rows >= 5 + p.channels;
    if (!fits)
        return bad_outputs(e, inf, "[1, 4 + classes + M, boxes] and prototypes [1, M, H/4, W/4] (M mask "
                           "coefficients, 32 for YOLOv8-seg)");
    int64_t n = m.cols, classes = m.rows - 4 - p.channels;
    for (int64_t j = 0; j < n; j++) {
        float score;
        int id = argmax(m.v + 4 * n + j, classes, n, &score);
        if (!keeps(s, score))
            continue;
        add_box(s, m.v[j], m.v[n + j], m.v[2 * n + j], m.v[3 * n + j], score, id);
        g_array_index(s->found, reel_detection, s->found->len - 1).track_id = j;
    }
    s->seg = m;
    s->protos = p;
    return 0;
}

static int decode_yolov8_pose(reel_element *e, const reel_inference *inf)
{
    detect_priv *s = reel_element_priv(e);
    matrix m;
    if (!yolo_output(s, inf, &m) || m.rows < 8 || (m.rows - 5) % 3 || (m.rows - 5) / 3 > REEL_MAX_LANDMARKS) {
        char *want = g_strdup_printf("one output [1, 4 + 1 + 3K, boxes] (K keypoints as x, y, score; K at most %d, "
                                     "17 for COCO)", REEL_MAX_LANDMARKS);
        int rc = bad_outputs(e, inf, want);
        g_free(want);
        return rc;
    }
    int64_t n = m.cols;
    int k = (int)(m.rows - 5) / 3;
    for (int64_t j = 0; j < n; j++) {
        float score = m.v[4 * n + j];
        if (!keeps(s, score))
            continue;
        add_box(s, m.v[j], m.v[n + j], m.v[2 * n + j], m.v[3 * n + j], score, 0);
        reel_detection *d = &g_array_index(s->found, reel_detection, s->found->len - 1);
        d->n_landmarks = k;
        d->scored = true;
        for (int l = 0; l < k; l++) {
            const float *row = m.v + (5 + 3 * l) * n + j;
            d->landmarks[l][0] = row[0];
            d->landmarks[l][1] = row[n];
            d->landmark_scores[l] = row[2 * n];
        }
    }
    return 0;
}

// The kept boxes' masks (frame pixels), as one reel_masks.
static reel_masks *add_masks(detect_priv *s, reel_detections *dets, const reel_transform *t, const reel_caps *f)
{
    g_array_set_size(s->runs, 0);
    reel_mask *masks = g_new0(reel_mask, dets->n + 1);
    int64_t n = s->seg.cols, first = (s->seg.rows - s->protos.channels) * n;
    for (int i = 0; i < dets->n; i++) {
        reel_detection *d = &dets->items[i];
        reel_seg_mask(&s->protos, s->seg.v + first + d->track_id, n, d, t, f->width, f->height, s->runs, &masks[i]);
        masks[i].detection = i;
        d->track_id = -1;
    }
    reel_masks *out = reel_masks_new(dets->n, (int)s->runs->len);
    memcpy(out->items, masks, (size_t)dets->n * sizeof *masks);
    memcpy(out->runs, s->runs->data, s->runs->len * sizeof(uint32_t));
    g_free(masks);
    return out;
}

// ---- ssd

// Boxes: named by boxes=, else the first [1, N, 4]; scores: named by
// scores=, else the first other output with as many rows.
static bool ssd_outputs(const detect_priv *s, const reel_inference *inf, matrix *boxes, matrix *scores)
{
    int b = find_matrix(inf, s->boxes, -1, -1, 4, boxes);
    return b >= 0 && find_matrix(inf, s->scores, b, boxes->rows, -1, scores) >= 0;
}

static int decode_ssd(reel_element *e, const reel_inference *inf, int tw, int th)
{
    detect_priv *s = reel_element_priv(e);
    matrix bx, sc;
    if (!ssd_outputs(s, inf, &bx, &sc))
        return bad_outputs(e, inf, "boxes [1, N, 4] (y0, x0, y1, x1 normalized) and scores [1, N, classes]");
    for (int64_t j = 0; j < bx.rows; j++) {
        const float *b = bx.v + j * 4;
        float score;
        int id = argmax(sc.v + j * sc.cols, sc.cols, 1, &score);
        if (keeps(s, score))
            add_box(s, (b[1] + b[3]) / 2 * (float)tw, (b[0] + b[2]) / 2 * (float)th, (b[3] - b[1]) * (float)tw,
                    (b[2] - b[0]) * (float)th, score, id);
    }
    return 0;
}

// ---- db

// The map: named by scores=, else the first float32 [1, 1, H, W].
static const reel_buffer *db_map(const detect_priv *s, const reel_inference *inf)
{
    for (int i = 0; i < inf->n; i++) {
        const reel_buffer *t = inf->outputs[i];
        bool named = !s->scores || (inf->names[i] && strcmp(inf->names[i], s->scores) == 0);
        if (named && reel_output_floats(t) && t->format.rank == 4 && t->format.shape[0] == 1
            && t->format.shape[1] == 1 && t->format.shape[2] > 0 && t->format.shape[3] > 0)
            return t;
    }
    return NULL;
}

static int decode_db(reel_element *e, const reel_inference *inf, int tw, int th)
{
    detect_priv *s = reel_element_priv(e);
    const reel_buffer *map = db_map(s, inf);
    if (!map)
        return bad_outputs(e, inf, "a probability map [1, 1, H, W]");
    int mw = (int)map->format.shape[3], mh = (int)map->format.shape[2];
    reel_db_params p = { (float)s->binarize, (float)s->threshold, (float)s->unclip, (float)s->min_size, 1000 };
    g_array_set_size(s->db, 0);
    reel_db_boxes(reel_output_floats(map), mw, mh, &p, s->db);
    // The map may be smaller than the model's input: its pixels scale to it.
    float sx = (float)tw / (float)mw, sy = (float)th / (float)mh;
    for (guint i = 0; i < s->db->len; i++) {
        const reel_db_box *b = &g_array_index(s->db, reel_db_box, i);
        reel_detection d = { .score = b->score, .class_id = 0, .track_id = -1, .n_landmarks = 4 };
        d.x0 = d.y0 = INFINITY;
        d.x1 = d.y1 = -INFINITY;
        for (int k = 0; k < 4; k++) {
            float x = b->points[k][0] * sx, y = b->points[k][1] * sy;
            d.landmarks[k][0] = x;
            d.landmarks[k][1] = y;
            d.x0 = fminf(d.x0, x);
            d.y0 = fminf(d.y0, y);
            d.x1 = fmaxf(d.x1, x);
            d.y1 = fmaxf(d.y1, y);
        }
        g_array_append_val(s->found, d);
    }
    return 0;
}

// ---- frame coordinates

// The map from frame to model input: the inference's transform, else the
// frame stretched to the input size (input-size=, or the frame's own).
static reel_transform input_map(const detect_priv *s, const reel_inference *inf, const reel_buffer *frame)
{
    if (inf->has_transform) {
        reel_transform t = inf->transform;
        if (s->input_size)
            t.tensor_width = t.tensor_height = s->input_size;
        return t;
    }
    int fw = frame->format.width, fh = frame->format.height;
    int tw = s->input_size ? s->input_size : fw, th = s->input_size ? s->input_size : fh;
    return (reel_transform){ (double)tw / fw, 0, (double)th / fh, 0, fw, fh, tw, th };
}

static void to_frame(const reel_transform *t, const reel_caps *f, float *x, float *y)
{
    double fx = *x, fy = *y;
    reel_transform_to_frame(t, &fx, &fy);
    *x = (float)CLAMP(fx, 0, f->width);
    *y = (float)CLAMP(fy, 0, f->height);
}

static reel_detections *to_detections(detect_priv *s, const reel_detection *found, int n, const reel_transform *t,
                                      const reel_caps *f)
{
    reel_detections *dets = reel_detections_new(n);
    for (int i = 0; i < n; i++) {
        reel_detection *d = &dets->items[i];
        *d = found[i];
        to_frame(t, f, &d->x0, &d->y0);
        to_frame(t, f, &d->x1, &d->y1);
        for (int k = 0; k < d->n_landmarks; k++)
            to_frame(t, f, &d->landmarks[k][0], &d->landmarks[k][1]);
        reel_label_copy(d->label, s->labels, s->n_labels, d->class_id);
    }
    return dets;
}

static int decode(reel_element *e, const reel_inference *inf, const reel_transform *map)
{
    detect_priv *s = reel_element_priv(e);
    g_array_set_size(s->found, 0);
    switch (s->decoder) {
    case DEC_BLAZEFACE:
        return decode_blazeface(e, inf, map->tensor_width, map->tensor_height);
    case DEC_YOLOV8:
        return decode_yolov8(e, inf);
    case DEC_YOLOV5:
        return decode_yolov5(e, inf);
    case DEC_YOLOV8_SEG:
        return decode_yolov8_seg(e, inf);
    case DEC_YOLOV8_POSE:
        return decode_yolov8_pose(e, inf);
    case DEC_DB:
        return decode_db(e, inf, map->tensor_width, map->tensor_height);
    default:
        return decode_ssd(e, inf, map->tensor_width, map->tensor_height);
    }
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    detect_priv *s = reel_element_priv(e);
    const reel_inference *inf = reel_buffer_last_inference(buf);
    int rc = inf ? 0 : reel_element_error(e, REEL_EINVAL, "frame %" G_GINT64_FORMAT " carries no inference "
                                          "results: put an infer before detect", buf->frame_number);
    reel_transform map = { 0 };
    if (rc == 0) {
        map = input_map(s, inf, buf);
        rc = decode(e, inf, &map);
    }
    // Other branches may hold this frame: metadata goes on a copy of our own.
    if (rc == 0 && (rc = reel_buffer_make_writable(&buf)) < 0)
        reel_element_error(e, rc, "cannot copy a shared frame to attach detections: %s", reel_strerror(rc));
    if (rc < 0) {
        reel_buffer_unref(&buf);
        return rc;
    }
    bool weighted = s->nms == NMS_WEIGHTED || (s->nms == NMS_AUTO && s->decoder == DEC_BLAZEFACE);
    reel_detection *found = (reel_detection *)s->found->data;
    int n = s->decoder == DEC_DB ? MIN((int)s->found->len, s->max)
                                 : reel_nms(found, (int)s->found->len, weighted ? REEL_NMS_WEIGHTED : REEL_NMS_HARD,
                                            (float)s->iou, s->max);
    reel_detections *dets = to_detections(s, found, n, &map, &buf->format);
    reel_masks *masks = s->decoder == DEC_YOLOV8_SEG ? add_masks(s, dets, &map, &buf->format) : NULL;
    reel_buffer_add_meta(buf, &reel_detections_meta, dets);
    if (masks)
        reel_buffer_add_meta(buf, &reel_masks_meta, masks);
    return reel_element_push(e, 0, buf);
}

static void stop(reel_element *e)
{
    detect_priv *s = reel_element_priv(e);
    g_strfreev(s->labels);
    s->labels = NULL;
    s->n_labels = 0;
    g_clear_pointer(&s->anchors, g_free);
    if (s->found)
        g_array_free(s->found, TRUE);
    s->found = NULL;
    if (s->runs)
        g_array_free(s->runs, TRUE);
    s->runs = NULL;
    if (s->db)
        g_array_free(s->db, TRUE);
    s->db = NULL;
}

const reel_element_class reel_detect_class = {
    .name = "detect",
    .description = "Decodes a detector's outputs (blazeface, yolov8, yolov5, ssd, yolov8-seg, yolov8-pose, db) "
                   "into boxes, masks, keypoints and text regions on the frame",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // reads only metadata: frames stay where they are
    .priv_size = sizeof(detect_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw", .output_caps = "video/raw",
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

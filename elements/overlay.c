// overlay: draws each frame's detections (boxes, labels with scores, track
// ids, landmarks, pose skeletons, instance masks) and its zones and lines
// with their counts (after `zones`) into the frame itself, on the element's
// device: the primitives and masks of gpu/overlay.h painted by
// reel_overlay_paint() for host frames, by the "overlay" kernel for frames
// in device memory. Both give the same bytes. Masks go to the kernel as
// their runs' running sums (4 bytes a run, as in reel_masks), so a frame
// never travels to the host to have them blended.
#include <stdio.h>
#include <string.h>

#include "gpu/overlay.h"
#include "reel/reel.h"

typedef struct overlay_priv {
    int thickness, font_scale;
    bool labels, landmarks, masks, skeleton;
    double alpha, keypoint_threshold;
    bool warned_masks; // a mask too large to draw was left out

    bool on_device;
    reel_kernel *kernel;
    reel_mem *font;
    GArray *prims; // reel_overlay_prim, rebuilt per frame
    GArray *mask_words, *ends; // the masks as gpu/overlay.h lays them out, rebuilt per frame
} overlay_priv;

// The primitives are built afresh for each frame from these, so they may
// change while running.
static const reel_prop props[] = {
    { "thickness", REEL_PROP_INT, offsetof(overlay_priv, thickness), "2", 1, 64, .help = "box outline in pixels",
      .flags = REEL_PROP_MUTABLE },
    { "font-scale", REEL_PROP_INT, offsetof(overlay_priv, font_scale), "2", 1, 16,
      .help = "label size: 5x7 glyphs times this", .flags = REEL_PROP_MUTABLE },
    { "labels", REEL_PROP_BOOL, offsetof(overlay_priv, labels), "true",
      .help = "write label, score and track id above each box", .flags = REEL_PROP_MUTABLE },
    { "landmarks", REEL_PROP_BOOL, offsetof(overlay_priv, landmarks), "true", .help = "mark each landmark",
      .flags = REEL_PROP_MUTABLE },
    { "masks", REEL_PROP_BOOL, offsetof(overlay_priv, masks), "true",
      .help = "fill instance masks (detect decoder=yolov8-seg) translucently in the box's colour",
      .flags = REEL_PROP_MUTABLE },
    { "alpha", REEL_PROP_DOUBLE, offsetof(overlay_priv, alpha), "0.4", 0, 1,
      .help = "opacity of the mask fill: 0 leaves the frame, 1 paints over it", .flags = REEL_PROP_MUTABLE },
    { "skeleton", REEL_PROP_BOOL, offsetof(overlay_priv, skeleton), "true",
      .help = "join a pose's 17 COCO keypoints by its limbs", .flags = REEL_PROP_MUTABLE },
    { "keypoint-threshold", REEL_PROP_DOUBLE, offsetof(overlay_priv, keypoint_threshold), "0.5", 0, 1,
      .help = "scored keypoints (pose) below this are not drawn, nor their limbs", .flags = REEL_PROP_MUTABLE },
    { NULL },
};

// Distinct, saturated colours; a track keeps its colour, else a class does.
static const uint8_t palette[][3] = {
    { 255, 56, 56 }, { 56, 200, 56 },  { 56, 120, 255 }, { 255, 200, 0 },  { 255, 56, 255 }, { 0, 220, 220 },
    { 255, 140, 0 }, { 150, 80, 255 }, { 140, 255, 60 }, { 255, 110, 170 }, { 0, 150, 140 }, { 200, 200, 200 },
};

static void add_prim(overlay_priv *s, int kind, int x0, int y0, int x1, int y1, uint32_t color, uint32_t glyph)
{
    reel_overlay_prim p = { kind, x0, y0, x1, y1, s->thickness, color, glyph };
    g_array_append_val(s->prims, p);
}

// Text on a filled bar with its top left at (x, y).
static void add_text(overlay_priv *s, int x, int y, const char *text, reel_pixfmt fmt, uint32_t color)
{
    int k = s->font_scale, gw = REEL_FONT_W * k, gh = REEL_FONT_H * k, adv = gw + k, pad = k;
    int len = (int)strlen(text);
    add_prim(s, REEL_PRIM_FILL, x, y, x + len * adv + pad, y + gh + 2 * pad, color, 0);
    uint32_t ink = reel_overlay_color(fmt, 0, 0, 0);
    for (int i = 0; i < len; i++) {
        int gx = x + pad + i * adv;
        add_prim(s, REEL_PRIM_GLYPH, gx, y + pad, gx + gw, y + pad + gh, ink, (uint8_t)text[i]);
    }
}

// "label 0.87 #12" (the parts there are) on a filled bar at the box's top
// left, above the box when there is room; the text ocr read instead of the
// label and score when there is one (characters beyond ASCII as '?').
static void add_label(overlay_priv *s, const reel_detection *d, reel_pixfmt fmt, uint32_t color)
{
    char text[REEL_TEXT_MAX + 48];
    int n = 0;
    if (d->text[0]) {
        for (const char *c = d->text; *c && n < REEL_TEXT_MAX; c = g_utf8_next_char(c))
            text[n++] = *c >= REEL_FONT_FIRST && *c <= REEL_FONT_LAST ? *c : '?';
        text[n] = '\0';
    } else if (d->label[0])
        n += snprintf(text + n, sizeof text - (size_t)n, "%s ", d->label);
    else if (d->class_id >= 0)
        n += snprintf(text + n, sizeof text - (size_t)n, "%d ", d->class_id);
    if (!d->text[0])
        n += snprintf(text + n, sizeof text - (size_t)n, "%.2f", d->score);
    if (d->track_id >= 0)
        snprintf(text + n, sizeof text - (size_t)n, " #%lld", (long long)d->track_id);
    int h = REEL_FONT_H * s->font_scale + 2 * s->font_scale;
    add_text(s, (int)d->x0, (int)d->y0 - h >= 0 ? (int)d->y0 - h : (int)d->y0, text, fmt, color);
}

static int clamp_coord(float v)
{
    return (int)CLAMP(v, -REEL_LINE_MAX_COORD, REEL_LINE_MAX_COORD);
}

// The zones' outlines and the lines, each with its name and counts (a
// zone's occupancy, a line's crossings in and out), under the detections.
static void add_regions(overlay_priv *s, const reel_analytics *a, reel_pixfmt fmt)
{
    for (int i = 0; i < a->n_shapes; i++) {
        const reel_region_shape *sh = &a->shapes[i];
        const uint8_t *rgb = palette[(i + 3) % (int)G_N_ELEMENTS(palette)];
        uint32_t color = reel_overlay_color(fmt, rgb[0], rgb[1], rgb[2]);
        int edges = sh->line ? 1 : sh->n;
        for (int k = 0; k < edges && sh->n >= 2; k++) {
            const float *p = sh->points[k], *q = sh->points[(k + 1) % sh->n];
            add_prim(s, REEL_PRIM_LINE, clamp_coord(p[0]), clamp_coord(p[1]), clamp_coord(q[0]), clamp_coord(q[1]),
                     color, 0);
        }
        const reel_region_count *total = NULL;
        for (int c = 0; c < a->n_counts && !total; c++)
            if (strncmp(a->counts[c].region, sh->region, REEL_LABEL_MAX) == 0)
                total = &a->counts[c]; // a region's first entry is its total
        if (!s->labels || !total || sh->n < 1)
            continue;
        char text[REEL_LABEL_MAX + 64], name[REEL_LABEL_MAX + 1];
        g_strlcpy(name, sh->region, sizeof name);
        if (sh->line)
            g_snprintf(text, sizeof text, "%s in %lld out %lld", name, (long long)total->in, (long long)total->out);
        else
            g_snprintf(text, sizeof text, "%s %d", name, total->occupancy);
        float x = sh->line ? (sh->points[0][0] + sh->points[1][0]) / 2 : sh->points[0][0];
        float y = sh->line ? (sh->points[0][1] + sh->points[1][1]) / 2 : sh->points[0][1];
        add_text(s, clamp_coord(x), clamp_coord(y), text, fmt, color);
    }
}

// COCO's limbs between its 17 keypoints (nose, eyes, ears, shoulders,
// elbows, wrists, hips, knees, ankles; left before right).
static const uint8_t coco_limbs[][2] = {
    { 15, 13 }, { 13, 11 }, { 16, 14 }, { 14, 12 }, { 11, 12 }, { 5, 11 }, { 6, 12 }, { 5, 6 }, { 5, 7 }, { 6, 8 },
    { 7, 9 },   { 8, 10 },  { 1, 2 },   { 0, 1 },   { 0, 2 },   { 1, 3 },  { 2, 4 },  { 3, 5 }, { 4, 6 },
};

static bool keypoint_shown(const overlay_priv *s, const reel_detection *d, int l)
{
    return !d->scored || d->landmark_scores[l] >= (float)s->keypoint_threshold;
}

static void add_skeleton(overlay_priv *s, const reel_detection *d, uint32_t color)
{
    for (size_t i = 0; i < G_N_ELEMENTS(coco_limbs); i++) {
        int a = coco_limbs[i][0], b = coco_limbs[i][1];
        if (keypoint_shown(s, d, a) && keypoint_shown(s, d, b))
            add_prim(s, REEL_PRIM_LINE, clamp_coord(d->landmarks[a][0]), clamp_coord(d->landmarks[a][1]),
                     clamp_coord(d->landmarks[b][0]), clamp_coord(d->landmarks[b][1]), color, 0);
    }
}

static uint32_t detection_color(const reel_detection *d, reel_pixfmt fmt)
{
    int64_t key = d->track_id >= 0 ? d->track_id : d->class_id >= 0 ? d->class_id : 0;
    const uint8_t *rgb = palette[key % (int64_t)G_N_ELEMENTS(palette)];
    return reel_overlay_color(fmt, rgb[0], rgb[1], rgb[2]);
}

static void build_prims(overlay_priv *s, const reel_detections *dets, const reel_analytics *regions, reel_pixfmt fmt)
{
    g_array_set_size(s->prims, 0);
    if (regions)
        add_regions(s, regions, fmt);
    for (int i = 0; dets && i < dets->n; i++) {
        const reel_detection *d = &dets->items[i];
        uint32_t color = detection_color(d, fmt);
        // A text region's outline is its rotated box (the 4 landmarks).
        bool quad = d->text[0] && d->n_landmarks == 4;
        for (int k = 0; quad && k < 4; k++) {
            const float *p = d->landmarks[k], *q = d->landmarks[(k + 1) % 4];
            add_prim(s, REEL_PRIM_LINE, clamp_coord(p[0]), clamp_coord(p[1]), clamp_coord(q[0]), clamp_coord(q[1]),
                     color, 0);
        }
        if (!quad)
            add_prim(s, REEL_PRIM_RECT, (int)d->x0, (int)d->y0, (int)d->x1, (int)d->y1, color, 0);
        if (s->skeleton && d->scored && d->n_landmarks == 17)
            add_skeleton(s, d, color);
        for (int l = 0; s->landmarks && !quad && l < d->n_landmarks && l < REEL_MAX_LANDMARKS; l++) {
            if (!keypoint_shown(s, d, l))
                continue;
            int r = s->thickness, lx = (int)d->landmarks[l][0], ly = (int)d->landmarks[l][1];
            add_prim(s, REEL_PRIM_FILL, lx - r, ly - r, lx + r + 1, ly + r + 1, color, 0);
        }
        if (s->labels)
            add_label(s, d, fmt, color);
    }
}

static int start(reel_element *e)
{
    overlay_priv *s = reel_element_priv(e);
    s->prims = g_array_new(FALSE, FALSE, sizeof(reel_overlay_prim));
    s->mask_words = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    s->ends = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    reel_device *dev = reel_element_device(e);
    s->on_device = dev && reel_device_info_of(dev)->backend != REEL_BACKEND_CPU;
    if (!s->on_device)
        return 0;
    GError *err = NULL;
    int rc = 0;
    // 256 words a group: a 4K rgba frame stays within the 65535 groups
    // every device can launch in one dimension.
    s->kernel = reel_kernel_create(dev, reel_kernel_params(.name = "overlay", .local_size = 256), &err);
    if (s->kernel)
        s->font = reel_mem_new(dev, reel_mem_params(.size = sizeof reel_font5x7, .domain = REEL_MEM_DEVICE), &err);
    if (!s->kernel || !s->font)
        rc = reel_element_error(e, err->code, "%s", err->message);
    else if ((rc = reel_mem_upload(s->font, 0, reel_font5x7, sizeof reel_font5x7, reel_element_xfer(e))) < 0)
        reel_element_error(e, rc, "font upload failed: %s", reel_strerror(rc));
    g_clear_error(&err);
    return rc;
}

// A host-visible buffer holding `bytes` of data, or NULL after an error.
static reel_mem *upload(reel_element *e, const void *data, size_t bytes, int *rc)
{
    GError *err = NULL;
    reel_mem *m = reel_mem_new(reel_element_device(e), reel_mem_params(.size = bytes, .domain = REEL_MEM_HOST), &err);
    if (!m) {
        *rc = reel_element_error(e, err->code, "%s", err->message);
        g_error_free(err);
        return NULL;
    }
    if ((*rc = reel_mem_upload(m, 0, data, bytes, reel_element_xfer(e))) < 0) {
        reel_element_error(e, *rc, "overlay upload failed: %s", reel_strerror(*rc));
        reel_mem_unref(&m);
    }
    return m;
}

static int draw_on_device(reel_element *e, reel_buffer *frame, reel_overlay_push *p)
{
    overlay_priv *s = reel_element_priv(e);
    int rc = 0;
    if (s->prims->len == 0) { // no primitives (p->n_prims 0), but the kernel's buffer is never empty
        reel_overlay_prim none = { 0 };
        g_array_append_val(s->prims, none);
    }
    reel_mem *prims = upload(e, s->prims->data, s->prims->len * sizeof(reel_overlay_prim), &rc);
    reel_mem *masks = prims ? upload(e, s->mask_words->data, s->mask_words->len * sizeof(uint32_t), &rc) : NULL;
    if (!masks) {
        reel_mem_unref(&prims);
        return rc;
    }
    for (int i = 0; i < 3; i++) {
        p->offset[i] = (uint32_t)frame->offsets[i];
        p->stride[i] = (uint32_t)frame->strides[i];
    }
    uint32_t local = reel_kernel_local_size(s->kernel);
    uint32_t words = (uint32_t)((reel_mem_size(frame->mem) + 3) / 4);
    uint64_t point = 0;
    rc = reel_kernel_dispatch(s->kernel,
                              reel_dispatch_params(.buffers = { frame->mem, prims, s->font, masks }, .push = p,
                                                   .push_size = sizeof *p, .groups = { (words + local - 1) / local }),
                              &point);
    reel_mem_unref(&prims);
    reel_mem_unref(&masks);
    if (rc < 0)
        return reel_element_error(e, rc, "overlay dispatch failed: %s", reel_strerror(rc));
    reel_element_trace_dispatch(e, "overlay", point);
    return 0;
}

// The frame's masks as gpu/overlay.h lays them out in s->mask_words:
// descriptors, then their runs' running sums. Each keeps only its rows
// inside the frame, so its pixels are numbered within 32 bits. Returns how
// many masks there are.
static uint32_t build_masks(reel_element *e, overlay_priv *s, const reel_masks *m, const reel_detections *dets,
                            reel_pixfmt fmt, int frame_height)
{
    g_array_set_size(s->mask_words, 0);
    g_array_set_size(s->ends, 0);
    uint32_t n = 0;
    for (int i = 0; m && dets && s->masks && s->alpha > 0 && i < m->n; i++) {
        const reel_mask *k = &m->items[i];
        if (k->detection < 0 || k->detection >= dets->n || k->width <= 0 || k->height <= 0 || k->n_runs < 0 ||
            k->first_run < 0 || (int64_t)k->first_run + k->n_runs > m->n_runs)
            continue;
        int64_t top = MAX(0, -(int64_t)k->y), bottom = MIN((int64_t)k->height, (int64_t)frame_height - k->y);
        if (bottom <= top)
            continue;
        int64_t skip = top * k->width, size = (bottom - top) * k->width;
        if (size > UINT32_MAX) {
            if (!s->warned_masks)
                reel_element_warning(e, "mask of detection %d is %dx%d pixels, too large to draw: left out",
                                     k->detection, k->width, k->height);
            s->warned_masks = true;
            continue;
        }
        reel_overlay_mask d = { k->x, (int32_t)(k->y + top), k->width, (int32_t)(bottom - top),
                                detection_color(&dets->items[k->detection], fmt), s->ends->len, 0, 0 };
        int64_t at = 0;
        for (int r = 0; r < k->n_runs && at - skip < size; r++) {
            at += m->runs[k->first_run + r];
            uint32_t end = (uint32_t)CLAMP(at - skip, 0, size);
            g_array_append_val(s->ends, end);
        }
        d.n_ends = s->ends->len - d.first;
        g_array_append_vals(s->mask_words, &d, sizeof d / 4);
        n++;
    }
    g_array_append_vals(s->mask_words, s->ends->data, s->ends->len);
    if (s->mask_words->len == 0) {
        uint32_t zero = 0; // the kernel's buffer is never empty
        g_array_append_val(s->mask_words, zero);
    }
    return n;
}

static int process(reel_element *e, int pad, reel_buffer *in)
{
    (void)pad;
    overlay_priv *s = reel_element_priv(e);
    const reel_detections *dets = reel_buffer_get_meta(in, &reel_detections_meta);
    const reel_analytics *regions = reel_buffer_get_meta(in, &reel_analytics_meta);
    if ((!dets || dets->n == 0) && (!regions || regions->n_shapes == 0))
        return reel_element_push(e, 0, in);
    // Other branches may hold the frame: draw on a copy of our own then.
    int rc = reel_buffer_make_writable(&in);
    if (rc < 0) {
        reel_buffer_unref(&in);
        return reel_element_error(e, rc, "cannot copy a frame other branches share to draw on it");
    }
    // The copy's own metadata: the frame read above may be gone by now.
    dets = reel_buffer_get_meta(in, &reel_detections_meta);
    regions = reel_buffer_get_meta(in, &reel_analytics_meta);
    const reel_caps *f = &in->format;
    reel_pixfmt fmt = (reel_pixfmt)__builtin_ctzll(f->pixfmts);
    build_prims(s, dets, regions, fmt);
    uint32_t n_masks = build_masks(e, s, reel_buffer_get_meta(in, &reel_masks_meta), dets, fmt, f->height);
    reel_overlay_push p = { (uint32_t)fmt, (uint32_t)f->width, (uint32_t)f->height, s->prims->len, { 0 }, { 0 },
                            n_masks, (uint32_t)(s->alpha * 256 + 0.5) };
    if (s->on_device)
        rc = draw_on_device(e, in, &p);
    else
        reel_overlay_paint(&p, in->planes, in->strides, (const reel_overlay_prim *)s->prims->data,
                           (const uint32_t *)s->mask_words->data);
    if (rc < 0) {
        reel_buffer_unref(&in);
        return rc;
    }
    return reel_element_push(e, 0, in);
}

static void stop(reel_element *e)
{
    overlay_priv *s = reel_element_priv(e);
    reel_kernel_destroy(&s->kernel);
    reel_mem_unref(&s->font);
    GArray **arrays[] = { &s->prims, &s->mask_words, &s->ends };
    for (size_t i = 0; i < G_N_ELEMENTS(arrays); i++)
        if (*arrays[i]) {
            g_array_free(*arrays[i], TRUE);
            *arrays[i] = NULL;
        }
}

const reel_element_class reel_overlay_class = {
    .name = "overlay",
    .description = "Draws detections (boxes, labels, scores, track ids, landmarks, pose skeletons, instance masks) "
                   "into the frames",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .priv_size = sizeof(overlay_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,format=yuv420p|yuvj420p|nv12|rgb24|bgr24|rgba",
    .output_caps = "video/raw,format=yuv420p|yuvj420p|nv12|rgb24|bgr24|rgba",
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

// reel.Frame: a buffer from a pipeline (an appsink's, or a Python element's
// input) with its pixels as read-only numpy views and its metadata as
// Python objects. The Frame holds a reference on the buffer, and every
// array it hands out holds the Frame: the memory stays valid as long as
// any of them lives, whatever becomes of the pipeline.
#include "pyreel.h"

#include <math.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    reel_buffer *buf;
    reel_buffer *host; // a device frame's host copy, made on first access
} frame_obj;

PyObject *pyreel_frame_new(reel_buffer *buf)
{
    frame_obj *f = PyObject_New(frame_obj, &pyreel_frame_type);
    if (!f)
        return NULL;
    f->buf = reel_buffer_ref(buf);
    f->host = NULL;
    return (PyObject *)f;
}

reel_buffer *pyreel_frame_buffer(PyObject *frame)
{
    return ((frame_obj *)frame)->buf;
}

static void frame_dealloc(PyObject *self)
{
    frame_obj *f = (frame_obj *)self;
    reel_buffer_unref(&f->buf);
    reel_buffer_unref(&f->host);
    PyObject_Free(self);
}

// The buffer in host memory: itself, or a copy read back once from its device.
static reel_buffer *host_buffer(frame_obj *f)
{
    if (!f->buf->mem || f->buf->data)
        return f->buf;
    if (!f->host) {
        uint8_t *scratch = NULL;
        size_t scratch_size = 0;
        GError *err = NULL;
        Py_BEGIN_ALLOW_THREADS
        f->host = reel_buffer_to_host(f->buf, &scratch, &scratch_size, NULL, &err);
        Py_END_ALLOW_THREADS
        g_free(scratch);
        if (!f->host) {
            pyreel_raise(err, false);
            return NULL;
        }
    }
    return f->host;
}

static reel_pixfmt pixfmt_of(const reel_buffer *b)
{
    if (b->format.media != REEL_MEDIA_VIDEO_RAW)
        return REEL_PIXFMT_NONE;
    for (int p = 1; p < REEL_PIXFMT_COUNT; p++)
        if (b->format.pixfmts == REEL_PIXFMT_BIT(p))
            return (reel_pixfmt)p;
    return REEL_PIXFMT_NONE;
}

static int channels_of(reel_pixfmt f)
{
    switch (f) {
    case REEL_PIXFMT_RGB24:
    case REEL_PIXFMT_BGR24:
        return 3;
    case REEL_PIXFMT_RGBA:
    case REEL_PIXFMT_BGRA:
        return 4;
    default:
        return 1;
    }
}

// A read-only view of `data` whose base is the frame.
static PyObject *view(frame_obj *f, int nd, npy_intp *dims, npy_intp *strides, int npy, void *data)
{
    PyObject *a = PyArray_New(&PyArray_Type, nd, dims, npy, strides, data, 0, 0, NULL);
    if (!a)
        return NULL;
    Py_INCREF(f);
    if (PyArray_SetBaseObject((PyArrayObject *)a, (PyObject *)f) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    PyArray_CLEARFLAGS((PyArrayObject *)a, NPY_ARRAY_WRITEABLE);
    return a;
}

// Plane p of a host video frame: (rows, row bytes), packed formats
// (rows, width, channels), nv12's chroma (rows, width / 2, 2).
static PyObject *plane_view(frame_obj *f, reel_buffer *b, reel_pixfmt fmt, int p)
{
    int w = b->format.width, rows = reel_pixfmt_plane_height(fmt, p, b->format.height);
    size_t row_bytes = reel_pixfmt_row_bytes(fmt, p, w);
    npy_intp stride = b->strides[p];
    int ch = channels_of(fmt);
    if (ch > 1) {
        npy_intp dims[3] = { rows, w, ch }, st[3] = { stride, ch, 1 };
        return view(f, 3, dims, st, NPY_UINT8, b->planes[p]);
    }
    if (fmt == REEL_PIXFMT_NV12 && p == 1) {
        npy_intp dims[3] = { rows, (npy_intp)row_bytes / 2, 2 }, st[3] = { stride, 2, 1 };
        return view(f, 3, dims, st, NPY_UINT8, b->planes[p]);
    }
    npy_intp dims[2] = { rows, (npy_intp)row_bytes }, st[2] = { stride, 1 };
    return view(f, 2, dims, st, NPY_UINT8, b->planes[p]);
}

static PyObject *tensor_view(frame_obj *f, const reel_buffer *b)
{
    int npy = pyreel_npy_type(b->format.dtype);
    if (npy < 0) {
        PyErr_Format(PyExc_ValueError, "tensor of dtype %s has no numpy form", reel_dtype_name(b->format.dtype));
        return NULL;
    }
    npy_intp dims[REEL_TENSOR_MAX_RANK];
    for (int i = 0; i < b->format.rank; i++)
        dims[i] = (npy_intp)b->format.shape[i];
    return view(f, b->format.rank, dims, NULL, npy, b->data);
}

static PyObject *get_planes(PyObject *self, void *unused)
{
    (void)unused;
    frame_obj *f = (frame_obj *)self;
    reel_pixfmt fmt = pixfmt_of(f->buf);
    if (fmt == REEL_PIXFMT_NONE) {
        PyErr_SetString(PyExc_ValueError, "planes: not a video frame (use .array)");
        return NULL;
    }
    reel_buffer *b = host_buffer(f);
    if (!b)
        return NULL;
    int n = reel_pixfmt_planes(fmt);
    PyObject *t = PyTuple_New(n);
    for (int p = 0; t && p < n; p++) {
        PyObject *a = plane_view(f, b, fmt, p);
        if (!a)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, p, a);
    }
    return t;
}

static PyObject *get_array(PyObject *self, void *unused)
{
    (void)unused;
    frame_obj *f = (frame_obj *)self;
    reel_buffer *b = host_buffer(f);
    if (!b)
        return NULL;
    switch (b->format.media) {
    case REEL_MEDIA_TENSOR:
        return tensor_view(f, b);
    case REEL_MEDIA_VIDEO_ENCODED: {
        npy_intp dims[1] = { (npy_intp)b->size };
        return view(f, 1, dims, NULL, NPY_UINT8, b->data);
    }
    default: {
        reel_pixfmt fmt = pixfmt_of(b);
        if (reel_pixfmt_planes(fmt) != 1) {
            PyErr_Format(PyExc_ValueError, "array: %s has %d planes; use .planes", reel_pixfmt_name(fmt),
                         reel_pixfmt_planes(fmt));
            return NULL;
        }
        return plane_view(f, b, fmt, 0);
    }
    }
}

static PyObject *seconds(int64_t t, reel_fraction tb)
{
    if (t == REEL_PTS_NONE || tb.den == 0)
        Py_RETURN_NONE;
    return PyFloat_FromDouble((double)t * tb.num / tb.den);
}

static PyObject *get_pts(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    return seconds(b->pts, b->time_base);
}

static PyObject *get_duration(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    return b->duration > 0 ? seconds(b->duration, b->time_base) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *get_int(PyObject *self, void *which)
{
    const reel_buffer *b = ((frame_obj *)self)->buf;
    switch ((intptr_t)which) {
    case 0: return PyLong_FromLong(b->stream_id);
    case 1: return PyLong_FromLongLong(b->frame_number);
    case 2: return PyLong_FromLong(b->format.width);
    case 3: return PyLong_FromLong(b->format.height);
    case 4: return PyLong_FromLongLong(b->capture_ns);
    default: return PyBool_FromLong(b->flags & REEL_BUFFER_FLAG_KEYFRAME);
    }
}

static PyObject *get_format(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    if (b->format.media == REEL_MEDIA_TENSOR)
        return PyUnicode_FromString(reel_dtype_name(b->format.dtype));
    if (b->format.media == REEL_MEDIA_VIDEO_ENCODED)
        return PyUnicode_FromString(b->format.codec);
    const char *name = reel_pixfmt_name(pixfmt_of(b));
    return PyUnicode_FromString(name ? name : "");
}

static PyObject *get_media(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    return PyUnicode_FromString(b->format.media == REEL_MEDIA_TENSOR          ? "tensor"
                                : b->format.media == REEL_MEDIA_VIDEO_ENCODED ? "video/encoded"
                                                                              : "video/raw");
}

static PyObject *label_text(const char *label)
{
    return PyUnicode_DecodeUTF8(label, (Py_ssize_t)strnlen(label, REEL_LABEL_MAX), "replace");
}

// Calls the Python class `name` (bound by reel/__init__.py) with `kwargs`
// (a new reference it consumes).
static PyObject *make(const char *name, PyObject *kwargs)
{
    if (!kwargs)
        return NULL;
    PyObject *cls = pyreel_class(name), *args = PyTuple_New(0);
    PyObject *o = cls && args ? PyObject_Call(cls, args, kwargs) : NULL;
    if (!cls)
        PyErr_Format(PyExc_RuntimeError, "reel: class %s is not bound (import reel, not reel._reel)", name);
    Py_XDECREF(args);
    Py_DECREF(kwargs);
    return o;
}

static PyObject *new_array(int nd, npy_intp *dims, int npy)
{
    return PyArray_ZEROS(nd, dims, npy, 0);
}

// Detection i's mask as a reel.Mask (its runs copied), or None.
static PyObject *mask_of(const reel_masks *masks, int i)
{
    const reel_mask *m = masks ? reel_masks_find(masks, i) : NULL;
    if (!m)
        Py_RETURN_NONE;
    npy_intp n = m->n_runs;
    PyObject *runs = PyArray_SimpleNew(1, &n, NPY_UINT32);
    if (!runs)
        return NULL;
    if (n)
        memcpy(PyArray_DATA((PyArrayObject *)runs), masks->runs + m->first_run, (size_t)n * sizeof(uint32_t));
    return make("Mask", Py_BuildValue("{s:i,s:i,s:i,s:i,s:N,s:O}", "x", m->x, "y", m->y, "width", m->width,
                                      "height", m->height, "runs", runs, "truncated",
                                      m->truncated ? Py_True : Py_False));
}

static PyObject *get_detections(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    const reel_detections *d = reel_buffer_get_meta(b, &reel_detections_meta);
    if (!d)
        Py_RETURN_NONE;
    const reel_masks *masks = reel_buffer_get_meta(b, &reel_masks_meta);
    int k = 0;
    for (int i = 0; i < d->n; i++)
        k = MAX(k, CLAMP(d->items[i].n_landmarks, 0, REEL_MAX_LANDMARKS));
    npy_intp n = d->n, d4[2] = { n, 4 }, dl[3] = { n, k, 2 }, dk[2] = { n, k };
    PyObject *boxes = new_array(2, d4, NPY_FLOAT32), *scores = new_array(1, &n, NPY_FLOAT32),
             *classes = new_array(1, &n, NPY_INT32), *tracks = new_array(1, &n, NPY_INT64),
             *marks = new_array(3, dl, NPY_FLOAT32), *labels = PyList_New(n),
             *kscores = new_array(2, dk, NPY_FLOAT32), *mask_list = PyList_New(n), *texts = PyList_New(n),
             *tscores = new_array(1, &n, NPY_FLOAT32);
    if (!boxes || !scores || !classes || !tracks || !marks || !labels || !kscores || !mask_list || !texts ||
        !tscores)
        goto fail;
    for (int i = 0; i < d->n; i++) {
        const reel_detection *it = &d->items[i];
        float *bx = (float *)PyArray_GETPTR2((PyArrayObject *)boxes, i, 0);
        bx[0] = it->x0, bx[1] = it->y0, bx[2] = it->x1, bx[3] = it->y1;
        *(float *)PyArray_GETPTR1((PyArrayObject *)scores, i) = it->score;
        *(int32_t *)PyArray_GETPTR1((PyArrayObject *)classes, i) = it->class_id;
        *(int64_t *)PyArray_GETPTR1((PyArrayObject *)tracks, i) = it->track_id;
        *(float *)PyArray_GETPTR1((PyArrayObject *)tscores, i) = it->text_score;
        for (int j = 0; j < k; j++) {
            float *m = (float *)PyArray_GETPTR3((PyArrayObject *)marks, i, j, 0);
            bool have = j < it->n_landmarks;
            m[0] = have ? it->landmarks[j][0] : NAN;
            m[1] = have ? it->landmarks[j][1] : NAN;
            // Scores only where the detector gave them (pose keypoints).
            *(float *)PyArray_GETPTR2((PyArrayObject *)kscores, i, j) =
                have && it->scored ? it->landmark_scores[j] : NAN;
        }
        PyObject *l = label_text(it->label);
        if (!l)
            goto fail;
        PyList_SET_ITEM(labels, i, l);
        // ocr's text is UTF-8 cut at a character boundary; anything else is replaced, as metasink does.
        PyObject *t = PyUnicode_DecodeUTF8(it->text, (Py_ssize_t)strnlen(it->text, REEL_TEXT_MAX), "replace");
        if (!t)
            goto fail;
        PyList_SET_ITEM(texts, i, t);
        PyObject *m = mask_of(masks, i);
        if (!m)
            goto fail;
        PyList_SET_ITEM(mask_list, i, m);
    }
    return make("Detections",
                Py_BuildValue("{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}", "boxes", boxes, "scores", scores,
                              "class_ids", classes, "labels", labels, "track_ids", tracks, "landmarks", marks,
                              "keypoint_scores", kscores, "masks", mask_list, "texts", texts, "text_scores",
                              tscores));
fail:
    Py_XDECREF(boxes);
    Py_XDECREF(scores);
    Py_XDECREF(classes);
    Py_XDECREF(tracks);
    Py_XDECREF(marks);
    Py_XDECREF(labels);
    Py_XDECREF(kscores);
    Py_XDECREF(mask_list);
    Py_XDECREF(texts);
    Py_XDECREF(tscores);
    return NULL;
}

// Appends `o` (a new reference, may be NULL after an error) to list; false on error.
static bool append(PyObject *list, PyObject *o)
{
    bool ok = o && PyList_Append(list, o) == 0;
    Py_XDECREF(o);
    return ok;
}

static PyObject *get_classifications(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    PyObject *list = PyList_New(0);
    void *data = NULL;
    for (reel_meta *m = NULL; list && (m = reel_buffer_next_meta(b, m, &reel_classifications_meta, &data));) {
        const reel_classifications *c = data;
        for (int i = 0; list && i < c->n; i++) {
            const reel_classification *it = &c->items[i];
            if (!append(list, make("Classification",
                                   Py_BuildValue("{s:i,s:d,s:N,s:i}", "class_id", it->class_id, "score",
                                                 (double)it->score, "label", label_text(it->label), "detection",
                                                 it->detection))))
                Py_CLEAR(list);
        }
    }
    return list;
}

static PyObject *get_events(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    if (!reel_buffer_get_meta(b, &reel_analytics_meta))
        Py_RETURN_NONE;
    PyObject *list = PyList_New(0);
    void *data = NULL;
    for (reel_meta *m = NULL; list && (m = reel_buffer_next_meta(b, m, &reel_analytics_meta, &data));) {
        const reel_analytics *a = data;
        for (int i = 0; list && i < a->n_events; i++) {
            const reel_region_event *ev = &a->events[i];
            if (!append(list, make("Event", Py_BuildValue("{s:s,s:N,s:L,s:i,s:N,s:i,s:d}", "type",
                                                          reel_region_event_name(ev->type), "region",
                                                          label_text(ev->region), "track_id",
                                                          (long long)ev->track_id, "class_id", ev->class_id,
                                                          "label", label_text(ev->label), "direction",
                                                          ev->direction, "dwell_s", ev->dwell_s))))
                Py_CLEAR(list);
        }
    }
    return list;
}

static PyObject *get_counts(PyObject *self, void *unused)
{
    (void)unused;
    const reel_buffer *b = ((frame_obj *)self)->buf;
    if (!reel_buffer_get_meta(b, &reel_analytics_meta))
        Py_RETURN_NONE;
    PyObject *list = PyList_New(0);
    void *data = NULL;
    for (reel_meta *m = NULL; list && (m = reel_buffer_next_meta(b, m, &reel_analytics_meta, &data));) {
        const reel_analytics *a = data;
        for (int i = 0; list && i < a->n_counts; i++) {
            const reel_region_count *c = &a->counts[i];
            if (!append(list, make("Count", Py_BuildValue("{s:N,s:O,s:i,s:N,s:i,s:L,s:L}", "region",
                                                          label_text(c->region), "line",
                                                          c->line ? Py_True : Py_False, "class_id", c->class_id,
                                                          "label", label_text(c->label), "occupancy",
                                                          c->occupancy, "count_in", (long long)c->in,
                                                          "count_out", (long long)c->out))))
                Py_CLEAR(list);
        }
    }
    return list;
}

// The last infer's outputs: {name: array}, views of its host tensors.
static PyObject *get_tensors(PyObject *self, void *unused)
{
    (void)unused;
    frame_obj *f = (frame_obj *)self;
    const reel_inference *inf = reel_buffer_last_inference(f->buf);
    PyObject *d = PyDict_New();
    for (int i = 0; d && inf && i < inf->n; i++) {
        const reel_buffer *t = inf->outputs[i];
        PyObject *a = t && t->data ? tensor_view(f, t) : NULL;
        if (!a || PyDict_SetItemString(d, inf->names[i], a) < 0)
            Py_CLEAR(d);
        Py_XDECREF(a);
    }
    return d;
}

static PyObject *frame_repr(PyObject *self)
{
    const reel_buffer *b = ((frame_obj *)self)->buf;
    char *caps = reel_caps_to_string(&b->format);
    PyObject *r = PyUnicode_FromFormat("<reel.Frame stream %d #%lld %s>", b->stream_id,
                                       (long long)b->frame_number, caps ? caps : "");
    g_free(caps);
    return r;
}

static PyGetSetDef frame_getset[] = {
    { "array", get_array, NULL,
      "The pixels as a read-only numpy view, no copy: (height, width, 3) for rgb24/bgr24, (height, width, 4)\n"
      "for rgba/bgra, (height, width) for gray8; a tensor's elements in its dtype and shape; an encoded\n"
      "packet's bytes. Rows may be padded (strides[0] >= width * channels). Planar formats: use .planes.\n"
      "A frame in device memory is read back to the host once, on first access.",
      NULL },
    { "planes", get_planes, NULL,
      "Every plane of a video frame as a read-only view: yuv420p gives (Y, U, V), nv12 (Y, UV) with UV\n"
      "shaped (height/2, width/2, 2).",
      NULL },
    { "pts", get_pts, NULL, "Presentation time in seconds, or None.", NULL },
    { "duration", get_duration, NULL, "Duration in seconds, or None.", NULL },
    { "stream", get_int, NULL, "The stream (source) id.", (void *)0 },
    { "frame_number", get_int, NULL, "The frame's number in its stream, from 0.", (void *)1 },
    { "width", get_int, NULL, "Width in pixels (0 for tensors).", (void *)2 },
    { "height", get_int, NULL, "Height in pixels (0 for tensors).", (void *)3 },
    { "capture_ns", get_int, NULL, "When its source captured or made it (CLOCK_MONOTONIC ns; 0 unknown).", (void *)4 },
    { "keyframe", get_int, NULL, "Whether it is a keyframe (encoded packets).", (void *)5 },
    { "format", get_format, NULL, "Pixel format ('rgb24', 'nv12', ...), a tensor's dtype, or a packet's codec.",
      NULL },
    { "media", get_media, NULL, "'video/raw', 'video/encoded' or 'tensor'.", NULL },
    { "detections", get_detections, NULL,
      "reel.Detections (boxes in frame pixels, scores, class ids, labels, track ids, landmarks or pose\n"
      "keypoints with their scores, instance masks, ocr's text), or None when no detector ran before.",
      NULL },
    { "classifications", get_classifications, NULL, "A list of reel.Classification (empty when none).", NULL },
    { "events", get_events, NULL,
      "The zones element's events this frame (a list of reel.Event), or None without analytics.", NULL },
    { "counts", get_counts, NULL, "The zones element's counts so far (a list of reel.Count), or None.", NULL },
    { "tensors", get_tensors, NULL, "The last infer's outputs on this frame: {name: read-only array}.", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pyreel_frame_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "reel.Frame",
    .tp_basicsize = sizeof(frame_obj),
    .tp_dealloc = frame_dealloc,
    .tp_repr = frame_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A frame from a pipeline: pixels as read-only numpy views (no copy) and its metadata.\n\n"
              "Frames come from Pipeline.pull() and a Python element's process(). The arrays keep the frame,\n"
              "and the frame keeps its memory: both stay valid after the pipeline is gone. A frame held keeps\n"
              "its buffer out of the pipeline's pool (the pool makes another), so drop frames you are done with.",
    .tp_getset = frame_getset,
};

// ---- numpy into frames -----------------------------------------------------------

static int expect(const char *what, reel_pixfmt fmt, int w, int h)
{
    PyErr_Format(PyExc_ValueError, "expected %s for a %dx%d %s frame", what, w, h, reel_pixfmt_name(fmt));
    return -1;
}

// One plane from array a: rows x row_bytes bytes, pixels contiguous.
static int copy_plane(PyArrayObject *a, reel_buffer *dst, reel_pixfmt fmt, int p, const char *shape_text)
{
    int w = dst->format.width, h = dst->format.height;
    int rows = reel_pixfmt_plane_height(fmt, p, h);
    size_t row_bytes = reel_pixfmt_row_bytes(fmt, p, w);
    if (PyArray_TYPE(a) != NPY_UINT8)
        return expect("a uint8 array", fmt, w, h);
    int nd = PyArray_NDIM(a);
    npy_intp *dims = PyArray_DIMS(a), *st = PyArray_STRIDES(a);
    npy_intp inner = 1;
    for (int i = 1; i < nd; i++)
        inner *= dims[i];
    bool packed = true;
    for (int i = nd - 1, want = 1; i >= 1; want *= (int)dims[i], i--)
        packed = packed && (dims[i] == 1 || st[i] == want);
    if (nd < 2 || nd > 3 || dims[0] != rows || (size_t)inner != row_bytes)
        return expect(shape_text, fmt, w, h);
    if (!packed || st[0] < (npy_intp)row_bytes) {
        PyErr_Format(PyExc_ValueError,
                     "expected rows of contiguous pixels (strides %s); np.ascontiguousarray() makes them",
                     nd == 3 ? "(row >= width*channels, channels, 1)" : "(row >= width, 1)");
        return -1;
    }
    const uint8_t *src = PyArray_DATA(a);
    for (int y = 0; y < rows; y++)
        memcpy(dst->planes[p] + (size_t)y * dst->strides[p], src + (size_t)y * st[0], row_bytes);
    return 0;
}

int pyreel_copy_into_frame(PyObject *obj, reel_buffer *dst)
{
    reel_pixfmt fmt = pixfmt_of(dst);
    int w = dst->format.width, h = dst->format.height;
    if (fmt == REEL_PIXFMT_NONE || !dst->planes[0]) {
        PyErr_SetString(PyExc_ValueError, "the source's format is not a host video frame (push expects video/raw)");
        return -1;
    }
    int n = reel_pixfmt_planes(fmt);
    char shape[96];
    int ch = channels_of(fmt);
    if (n == 1) {
        if (!PyArray_Check(obj))
            return expect("a numpy array", fmt, w, h);
        if (ch > 1)
            g_snprintf(shape, sizeof shape, "shape (%d, %d, %d)", h, w, ch);
        else
            g_snprintf(shape, sizeof shape, "shape (%d, %d)", h, w);
        return copy_plane((PyArrayObject *)obj, dst, fmt, 0, shape);
    }
    if (PyArray_Check(obj)) { // the planes one after another, as OpenCV's I420 and NV12 (H*3/2, W)
        PyArrayObject *a = (PyArrayObject *)obj;
        size_t need = reel_buffer_packed_size(&dst->format);
        if (PyArray_TYPE(a) != NPY_UINT8 || !PyArray_IS_C_CONTIGUOUS(a) || (size_t)PyArray_NBYTES(a) != need) {
            g_snprintf(shape, sizeof shape, "a C-contiguous uint8 array of %zu bytes (the planes in turn) or %d planes",
                       need, n);
            return expect(shape, fmt, w, h);
        }
        reel_buffer_unpack(dst, PyArray_DATA(a));
        return 0;
    }
    if (!PySequence_Check(obj) || PySequence_Size(obj) != n) {
        g_snprintf(shape, sizeof shape, "a sequence of %d planes (uint8 arrays)", n);
        return expect(shape, fmt, w, h);
    }
    for (int p = 0; p < n; p++) {
        PyObject *plane = PySequence_GetItem(obj, p);
        if (!plane)
            return -1;
        g_snprintf(shape, sizeof shape, "plane %d of shape (%d, %zu)", p, reel_pixfmt_plane_height(fmt, p, h),
                   reel_pixfmt_row_bytes(fmt, p, w));
        int rc = PyArray_Check(plane) ? copy_plane((PyArrayObject *)plane, dst, fmt, p, shape)
                                      : expect(shape, fmt, w, h);
        Py_DECREF(plane);
        if (rc < 0)
            return -1;
    }
    return 0;
}

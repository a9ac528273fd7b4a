// reel.Pipeline's C half (reel/__init__.py adds pull(), the context manager
// and report()): building from text, running with the GIL released, waits
// that Ctrl-C can interrupt, appsrc and appsink.
#include "pyreel.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    reel_pipeline *p;
    GMutex lock;      // guards the run state below, shared with the waiter thread
    GCond cond;
    bool started;     // start() succeeded and the waiter runs (or ran)
    bool done;        // the run ended; rc and error say how
    int rc;
    GError *error;
    GThread *waiter;  // calls reel_pipeline_wait()
} pipeline_obj;

// Started pipelines, for _shutdown() at interpreter exit: a pipeline's
// threads must not outlive the interpreter (a Python element would take
// the GIL of an interpreter that is gone).
static GMutex live_lock;
static GList *live;

static gpointer waiter_main(gpointer data)
{
    pipeline_obj *o = data;
    GError *err = NULL;
    int rc = reel_pipeline_wait(o->p, &err);
    g_mutex_lock(&o->lock);
    o->rc = rc;
    o->error = err;
    o->done = true;
    g_cond_broadcast(&o->cond);
    g_mutex_unlock(&o->lock);
    return NULL;
}

static bool is_done(pipeline_obj *o)
{
    g_mutex_lock(&o->lock);
    bool d = o->done;
    g_mutex_unlock(&o->lock);
    return d;
}

// Joins the waiter of a run that ended (or is ending); GIL released by the caller.
static void join_waiter(pipeline_obj *o)
{
    if (o->waiter)
        g_thread_join(o->waiter);
    o->waiter = NULL;
}

static int pipeline_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    pipeline_obj *o = (pipeline_obj *)self;
    static char *kw[] = { "description", "origin", "values", "device", "placement", "threads", "queue_size",
                          "latency_ms", "trace", NULL };
    const char *text, *origin = "pipeline", *device = NULL, *placement = NULL;
    PyObject *values = NULL;
    int threads = 0, queue_size = 0, latency_ms = 0, trace = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|s$Ozziiip", kw, &text, &origin, &values, &device, &placement,
                                     &threads, &queue_size, &latency_ms, &trace))
        return -1;
    if (o->p) {
        PyErr_SetString(PyExc_RuntimeError, "Pipeline.__init__ called twice");
        return -1;
    }
    if (threads < 0 || queue_size < 0 || latency_ms < 0) {
        PyErr_SetString(PyExc_ValueError, "threads, queue_size and latency_ms must be >= 0");
        return -1;
    }
    pyreel_ensure_init();
    // {NAME} in property values: NAME, VALUE, ..., NULL.
    GPtrArray *vals = g_ptr_array_new_with_free_func(g_free);
    if (values && values != Py_None) {
        if (!PyDict_Check(values)) {
            PyErr_SetString(PyExc_TypeError, "values must be a dict of str to str");
            g_ptr_array_free(vals, TRUE);
            return -1;
        }
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(values, &pos, &k, &v)) {
            PyObject *vs = PyObject_Str(v);
            const char *ks = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL, *vv = vs ? PyUnicode_AsUTF8(vs) : NULL;
            if (!ks || !vv) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "values must be a dict of str to str");
                Py_XDECREF(vs);
                g_ptr_array_free(vals, TRUE);
                return -1;
            }
            g_ptr_array_add(vals, g_strdup(ks));
            g_ptr_array_add(vals, g_strdup(vv));
            Py_DECREF(vs);
        }
    }
    g_ptr_array_add(vals, NULL);
    GError *err = NULL;
    reel_pipeline *p;
    Py_BEGIN_ALLOW_THREADS
    p = reel_parse_launch(text, origin,
                          reel_pipeline_params(.threads = threads, .queue_size = queue_size,
                                               .latency_ms = latency_ms, .trace = trace != 0,
                                               .values = (const char *const *)vals->pdata),
                          &err);
    if (p && device && reel_pipeline_set(p, "device", device, &err) < 0)
        reel_pipeline_destroy(&p);
    if (p && placement && reel_pipeline_set(p, "placement", placement, &err) < 0)
        reel_pipeline_destroy(&p);
    Py_END_ALLOW_THREADS
    g_ptr_array_free(vals, TRUE);
    if (!p) {
        pyreel_raise(err, true);
        return -1;
    }
    o->p = p;
    return 0;
}

static PyObject *pipeline_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    pipeline_obj *o = (pipeline_obj *)type->tp_alloc(type, 0);
    if (o) {
        g_mutex_init(&o->lock);
        g_cond_init(&o->cond);
    }
    return (PyObject *)o;
}

static bool check_open(pipeline_obj *o)
{
    if (!o->p)
        PyErr_SetString(pyreel_error, "the pipeline is closed");
    return o->p != NULL;
}

// Stops a run at once and waits for its end; GIL released by the caller.
static void abort_and_join(pipeline_obj *o)
{
    if (o->started && o->waiter) {
        reel_pipeline_abort(o->p);
        join_waiter(o);
    }
}

static void forget_live(pipeline_obj *o)
{
    g_mutex_lock(&live_lock);
    live = g_list_remove(live, o);
    g_mutex_unlock(&live_lock);
}

static PyObject *do_close(pipeline_obj *o)
{
    forget_live(o);
    Py_BEGIN_ALLOW_THREADS
    abort_and_join(o);
    reel_pipeline_destroy(&o->p);
    Py_END_ALLOW_THREADS
    if (o->error)
        g_clear_error(&o->error);
    Py_RETURN_NONE;
}

static void pipeline_dealloc(PyObject *self)
{
    pipeline_obj *o = (pipeline_obj *)self;
    PyObject *r = do_close(o);
    Py_XDECREF(r);
    g_mutex_clear(&o->lock);
    g_cond_clear(&o->cond);
    Py_TYPE(self)->tp_free(self);
}

void pyreel_pipelines_shutdown(void)
{
    g_mutex_lock(&live_lock);
    GList *all = g_list_copy(live);
    g_mutex_unlock(&live_lock);
    for (GList *l = all; l; l = l->next) {
        pipeline_obj *o = l->data;
        Py_BEGIN_ALLOW_THREADS
        abort_and_join(o);
        Py_END_ALLOW_THREADS
    }
    g_list_free(all);
}

static PyObject *pipeline_start(PyObject *self, PyObject *unused)
{
    (void)unused;
    pipeline_obj *o = (pipeline_obj *)self;
    if (!check_open(o))
        return NULL;
    if (o->started && !is_done(o)) {
        PyErr_SetString(pyreel_error, "the pipeline is already running");
        return NULL;
    }
    GError *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    join_waiter(o); // a run before this one
    rc = reel_pipeline_start(o->p, &err);
    Py_END_ALLOW_THREADS
    g_clear_error(&o->error);
    o->done = false;
    o->rc = 0;
    if (rc < 0) {
        o->started = false;
        return pyreel_raise(err, false);
    }
    o->started = true;
    o->waiter = g_thread_new("reel-py-wait", waiter_main, o);
    g_mutex_lock(&live_lock);
    if (!g_list_find(live, o))
        live = g_list_prepend(live, o);
    g_mutex_unlock(&live_lock);
    Py_RETURN_NONE;
}

// Pulls and drops whatever reached the pipeline's appsinks: a pipeline
// asked to finish must not wait for an application that stopped pulling.
static void drain_appsinks(pipeline_obj *o)
{
    reel_pipeline_lock_graph(o->p);
    for (reel_element *const *e = reel_pipeline_elements(o->p); *e; e++) {
        if (strcmp(reel_element_get_class(*e)->name, "appsink") != 0)
            continue;
        reel_buffer *b;
        while ((b = reel_appsink_pull(*e, 0)))
            reel_buffer_unref(&b);
    }
    reel_pipeline_unlock_graph(o->p);
}

// Waits for the run's end in slices with the GIL released, up to
// timeout_us (<0: no limit). Ctrl-C: the first ends the sources (what is in
// flight finishes, appsinks are drained), a second stops at once; the
// KeyboardInterrupt is raised once the run has ended. `draining`: drain
// from the start (stop()). Returns 1 when the run ended, 0 on timeout, -1
// with an exception set.
static int wait_end(pipeline_obj *o, int64_t timeout_us, bool draining)
{
    int64_t deadline = timeout_us < 0 ? -1 : g_get_monotonic_time() + timeout_us;
    PyObject *et = NULL, *ev = NULL, *tb = NULL;
    int interrupts = 0;
    bool ended = false;
    for (;;) {
        int64_t slice = draining ? 20000 : 100000;
        if (deadline >= 0)
            slice = MIN(slice, MAX(0, deadline - g_get_monotonic_time()));
        Py_BEGIN_ALLOW_THREADS
        if (draining)
            drain_appsinks(o);
        g_mutex_lock(&o->lock);
        int64_t until = g_get_monotonic_time() + slice;
        while (!o->done && g_cond_wait_until(&o->cond, &o->lock, until))
            ;
        ended = o->done;
        g_mutex_unlock(&o->lock);
        Py_END_ALLOW_THREADS
        if (ended)
            break;
        if (PyErr_CheckSignals() < 0) {
            if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) || interrupts) {
                Py_XDECREF(et);
                Py_XDECREF(ev);
                Py_XDECREF(tb);
                PyErr_Fetch(&et, &ev, &tb);
                reel_pipeline_abort(o->p);
            } else {
                PyErr_Fetch(&et, &ev, &tb);
                reel_pipeline_send_eos(o->p);
                draining = true;
            }
            interrupts++;
            deadline = -1; // an interrupted run is waited for to its end
            continue;
        }
        if (deadline >= 0 && g_get_monotonic_time() >= deadline)
            return 0;
    }
    Py_BEGIN_ALLOW_THREADS
    join_waiter(o);
    Py_END_ALLOW_THREADS
    if (et) {
        PyErr_Restore(et, ev, tb);
        return -1;
    }
    if (o->rc < 0 && o->rc != REEL_ESTOPPED) {
        pyreel_raise(o->error ? g_error_copy(o->error) : NULL, false);
        return -1;
    }
    return 1;
}

static int64_t timeout_us_of(PyObject *t, bool *ok)
{
    *ok = true;
    if (!t || t == Py_None)
        return -1;
    double s = PyFloat_AsDouble(t);
    if (s == -1 && PyErr_Occurred()) {
        *ok = false;
        return 0;
    }
    if (s < 0 || s > 1e9) {
        PyErr_SetString(PyExc_ValueError, "timeout: seconds >= 0, or None");
        *ok = false;
        return 0;
    }
    return (int64_t)(s * 1e6);
}

static PyObject *pipeline_wait(PyObject *self, PyObject *args, PyObject *kwargs)
{
    pipeline_obj *o = (pipeline_obj *)self;
    static char *kw[] = { "timeout", NULL };
    PyObject *t = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", kw, &t) || !check_open(o))
        return NULL;
    bool ok;
    int64_t us = timeout_us_of(t, &ok);
    if (!ok)
        return NULL;
    if (!o->started) {
        PyErr_SetString(pyreel_error, "the pipeline was not started");
        return NULL;
    }
    int r = wait_end(o, us, false);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *pipeline_run(PyObject *self, PyObject *unused)
{
    pipeline_obj *o = (pipeline_obj *)self;
    PyObject *s = pipeline_start(self, unused);
    if (!s)
        return NULL;
    Py_DECREF(s);
    return wait_end(o, -1, false) < 0 ? NULL : (Py_INCREF(Py_None), Py_None);
}

static PyObject *pipeline_stop(PyObject *self, PyObject *unused)
{
    (void)unused;
    pipeline_obj *o = (pipeline_obj *)self;
    if (!o->p || !o->started)
        Py_RETURN_NONE;
    reel_pipeline_send_eos(o->p);
    return wait_end(o, -1, true) < 0 ? NULL : (Py_INCREF(Py_None), Py_None);
}

static PyObject *pipeline_abort(PyObject *self, PyObject *unused)
{
    (void)unused;
    pipeline_obj *o = (pipeline_obj *)self;
    if (o->p) {
        Py_BEGIN_ALLOW_THREADS
        abort_and_join(o);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *pipeline_close(PyObject *self, PyObject *unused)
{
    (void)unused;
    return do_close((pipeline_obj *)self);
}

// The element called name, of class klass (NULL: any), or NULL with the exception set.
static reel_element *find(pipeline_obj *o, const char *name, const char *klass)
{
    if (!check_open(o))
        return NULL;
    reel_pipeline_lock_graph(o->p);
    reel_element *e = reel_pipeline_find(o->p, name);
    reel_pipeline_unlock_graph(o->p);
    if (!e) {
        PyErr_Format(PyExc_KeyError, "no element called '%s' in the pipeline", name);
        return NULL;
    }
    if (klass && strcmp(reel_element_get_class(e)->name, klass) != 0) {
        PyErr_Format(PyExc_ValueError, "'%s' is a %s, not an %s", name, reel_element_get_class(e)->name, klass);
        return NULL;
    }
    return e;
}

static PyObject *pipeline_pull_one(PyObject *self, PyObject *args, PyObject *kwargs)
{
    pipeline_obj *o = (pipeline_obj *)self;
    static char *kw[] = { "sink", "timeout", NULL };
    const char *name;
    PyObject *t = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|O", kw, &name, &t))
        return NULL;
    bool ok;
    int64_t us = timeout_us_of(t, &ok);
    reel_element *e = ok ? find(o, name, "appsink") : NULL;
    if (!e)
        return NULL;
    if (!o->started) {
        PyErr_SetString(pyreel_error, "the pipeline was not started");
        return NULL;
    }
    int64_t deadline = us < 0 ? -1 : g_get_monotonic_time() + us;
    for (;;) {
        int64_t slice = 100000;
        if (deadline >= 0)
            slice = MIN(slice, MAX(0, deadline - g_get_monotonic_time()));
        reel_buffer *b;
        Py_BEGIN_ALLOW_THREADS
        b = reel_appsink_pull(e, slice);
        Py_END_ALLOW_THREADS
        if (b) {
            PyObject *f = pyreel_frame_new(b);
            reel_buffer_unref(&b);
            return f;
        }
        if (reel_appsink_is_eos(e))
            Py_RETURN_NONE;
        if (is_done(o)) {
            if (wait_end(o, -1, false) < 0)
                return NULL;
            Py_RETURN_NONE;
        }
        if (PyErr_CheckSignals() < 0) { // Ctrl-C while pulling: stop at once, sinks finalize
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            Py_BEGIN_ALLOW_THREADS
            abort_and_join(o);
            Py_END_ALLOW_THREADS
            PyErr_Restore(et, ev, tb);
            return NULL;
        }
        if (deadline >= 0 && g_get_monotonic_time() >= deadline) {
            PyErr_Format(PyExc_TimeoutError, "no frame reached '%s' in time", name);
            return NULL;
        }
    }
}

static PyObject *pipeline_push(PyObject *self, PyObject *args, PyObject *kwargs)
{
    pipeline_obj *o = (pipeline_obj *)self;
    static char *kw[] = { "source", "frame", "pts", NULL };
    const char *name;
    PyObject *arr, *pts = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO|$O", kw, &name, &arr, &pts))
        return NULL;
    reel_element *e = find(o, name, "appsrc");
    if (!e)
        return NULL;
    double pts_s = 0;
    if (pts != Py_None && (pts_s = PyFloat_AsDouble(pts)) == -1 && PyErr_Occurred())
        return NULL;
    if (!o->started || is_done(o)) {
        PyErr_SetString(pyreel_error, "push: the pipeline is not running (start() it first)");
        return NULL;
    }
    reel_buffer *b = reel_appsrc_alloc(e);
    if (!b) {
        PyErr_Format(pyreel_error, "push: '%s' cannot make frames (a fixed video/raw format in its caps?)", name);
        return NULL;
    }
    if (pyreel_copy_into_frame(arr, b) < 0) {
        reel_buffer_unref(&b);
        return NULL;
    }
    if (pts != Py_None) {
        b->time_base = (reel_fraction){ 1, G_USEC_PER_SEC };
        b->pts = (int64_t)(pts_s * G_USEC_PER_SEC + (pts_s < 0 ? -0.5 : 0.5));
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = reel_appsrc_push(e, b);
    Py_END_ALLOW_THREADS
    if (rc == REEL_AGAIN)
        Py_RETURN_FALSE;
    if (rc < 0) {
        PyErr_Format(pyreel_error, "push into '%s': %s", name,
                     rc == REEL_ESTOPPED ? "the pipeline is not running" : reel_strerror(rc));
        return NULL;
    }
    Py_RETURN_TRUE;
}

static PyObject *pipeline_end(PyObject *self, PyObject *arg)
{
    const char *name = PyUnicode_AsUTF8(arg);
    reel_element *e = name ? find((pipeline_obj *)self, name, "appsrc") : NULL;
    if (!e)
        return NULL;
    reel_appsrc_end(e);
    Py_RETURN_NONE;
}

// A Python value as property text: True -> "true".
static PyObject *value_text(PyObject *v)
{
    if (PyBool_Check(v))
        return PyUnicode_FromString(v == Py_True ? "true" : "false");
    return PyObject_Str(v);
}

static PyObject *pipeline_set(PyObject *self, PyObject *args)
{
    pipeline_obj *o = (pipeline_obj *)self;
    const char *el, *prop;
    PyObject *v;
    if (!PyArg_ParseTuple(args, "ssO", &el, &prop, &v) || !check_open(o))
        return NULL;
    PyObject *text = value_text(v);
    const char *value = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!value) {
        Py_XDECREF(text);
        return NULL;
    }
    GError *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = reel_pipeline_set_property(o->p, el, prop, value, &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(text);
    return rc < 0 ? pyreel_raise(err, true) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *pipeline_get(PyObject *self, PyObject *args)
{
    const char *el, *prop;
    if (!PyArg_ParseTuple(args, "ss", &el, &prop))
        return NULL;
    reel_element *e = find((pipeline_obj *)self, el, NULL);
    if (!e)
        return NULL;
    char *v = reel_element_get(e, prop);
    if (!v) {
        PyErr_Format(PyExc_KeyError, "'%s' has no property '%s'", el, prop);
        return NULL;
    }
    PyObject *s = PyUnicode_FromString(v);
    g_free(v);
    return s;
}

static PyObject *pipeline_report_json(PyObject *self, PyObject *unused)
{
    (void)unused;
    pipeline_obj *o = (pipeline_obj *)self;
    if (!check_open(o))
        return NULL;
    char *json;
    Py_BEGIN_ALLOW_THREADS
    json = reel_pipeline_report_json(o->p);
    Py_END_ALLOW_THREADS
    PyObject *s = PyUnicode_FromString(json ? json : "{}");
    g_free(json);
    return s;
}

static PyObject *write_with(PyObject *self, PyObject *arg, int (*fn)(reel_pipeline *, const char *, GError **))
{
    pipeline_obj *o = (pipeline_obj *)self;
    PyObject *bytes = NULL;
    if (!check_open(o) || !PyUnicode_FSConverter(arg, &bytes))
        return NULL;
    GError *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fn(o->p, PyBytes_AS_STRING(bytes), &err);
    Py_END_ALLOW_THREADS
    Py_DECREF(bytes);
    return rc < 0 ? pyreel_raise(err, false) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *pipeline_write_trace(PyObject *self, PyObject *arg)
{
    return write_with(self, arg, reel_pipeline_write_trace);
}

static PyObject *pipeline_write_dot(PyObject *self, PyObject *arg)
{
    pipeline_obj *o = (pipeline_obj *)self;
    GError *err = NULL;
    if (o->p && !o->started && reel_pipeline_prepare(o->p, &err) < 0)
        return pyreel_raise(err, false);
    return write_with(self, arg, reel_pipeline_write_dot);
}

static PyObject *get_elements(PyObject *self, void *unused)
{
    (void)unused;
    pipeline_obj *o = (pipeline_obj *)self;
    if (!check_open(o))
        return NULL;
    PyObject *list = PyList_New(0);
    reel_pipeline_lock_graph(o->p);
    for (reel_element *const *e = reel_pipeline_elements(o->p); list && *e; e++) {
        PyObject *s = PyUnicode_FromString(reel_element_name(*e));
        if (!s || PyList_Append(list, s) < 0)
            Py_CLEAR(list);
        Py_XDECREF(s);
    }
    reel_pipeline_unlock_graph(o->p);
    return list;
}

static PyObject *get_running(PyObject *self, void *unused)
{
    (void)unused;
    pipeline_obj *o = (pipeline_obj *)self;
    return PyBool_FromLong(o->p && o->started && !is_done(o));
}

static PyObject *get_started(PyObject *self, void *unused)
{
    (void)unused;
    return PyBool_FromLong(((pipeline_obj *)self)->started);
}

static PyObject *get_frames_done(PyObject *self, void *unused)
{
    (void)unused;
    pipeline_obj *o = (pipeline_obj *)self;
    return check_open(o) ? PyLong_FromLongLong(reel_pipeline_frames_done(o->p)) : NULL;
}

static PyMethodDef pipeline_methods[] = {
    { "start", pipeline_start, METH_NOARGS,
      "start()\n--\n\nNegotiates and starts the run on reel's threads; returns at once." },
    { "wait", (PyCFunction)(void (*)(void))pipeline_wait, METH_VARARGS | METH_KEYWORDS,
      "wait(timeout=None)\n--\n\nWaits for the run's end (True), or timeout seconds (False). reel.Error when the\n"
      "run failed (the message names the element). Ctrl-C: the first ends the sources and lets what is in\n"
      "flight finish, a second stops at once; KeyboardInterrupt follows once the run has ended." },
    { "run", pipeline_run, METH_NOARGS, "run()\n--\n\nstart() and wait(): runs to the end." },
    { "stop", pipeline_stop, METH_NOARGS,
      "stop()\n--\n\nEnds the sources as at end of stream and waits: what is in flight finishes (frames that\n"
      "reach appsinks are dropped), sinks finalize their files." },
    { "abort", pipeline_abort, METH_NOARGS,
      "abort()\n--\n\nStops at once (frames in flight are dropped; sinks still finalize) and waits." },
    { "close", pipeline_close, METH_NOARGS,
      "close()\n--\n\nAborts a run in progress and frees the pipeline; frames pulled before stay valid." },
    { "pull_one", (PyCFunction)(void (*)(void))pipeline_pull_one, METH_VARARGS | METH_KEYWORDS,
      "pull_one(sink, timeout=None)\n--\n\nThe next reel.Frame from appsink `sink`, or None at end of stream.\n"
      "TimeoutError after timeout seconds without one. Ctrl-C aborts the run." },
    { "push", (PyCFunction)(void (*)(void))pipeline_push, METH_VARARGS | METH_KEYWORDS,
      "push(source, frame, *, pts=None)\n--\n\nCopies a numpy image into a frame of appsrc `source`'s format and\n"
      "sends it: uint8 (H, W, 3) for rgb24/bgr24, (H, W, 4) for rgba/bgra, (H, W) for gray8; yuv420p and\n"
      "nv12 as a sequence of planes or one C-contiguous array of the planes in turn (OpenCV's I420/NV12).\n"
      "pts in seconds (None: from the framerate). Waits while the appsrc's queue is full; False when it\n"
      "is full and block=false (the frame is dropped). ValueError names what was expected." },
    { "end", pipeline_end, METH_O, "end(source)\n--\n\nEnds appsrc `source`'s stream: frames pushed before go on." },
    { "set", pipeline_set, METH_VARARGS,
      "set(element, property, value)\n--\n\nSets a property, also while running (only those reel.inspect() marks\n"
      "mutable). ValueError names what was wrong." },
    { "get", pipeline_get, METH_VARARGS, "get(element, property)\n--\n\nA property's value, as text." },
    { "report_json", pipeline_report_json, METH_NOARGS,
      "report_json()\n--\n\nThe report as JSON text (report() parses it)." },
    { "write_trace", pipeline_write_trace, METH_O,
      "write_trace(path)\n--\n\nThe spans recorded with trace=True, as Chrome/Perfetto JSON." },
    { "write_dot", pipeline_write_dot, METH_O, "write_dot(path)\n--\n\nThe graph in Graphviz form." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef pipeline_getset[] = {
    { "elements", get_elements, NULL, "The elements' names, in the order they were added.", NULL },
    { "running", get_running, NULL, "Whether a run is in progress.", NULL },
    { "started", get_started, NULL, "Whether the last start() succeeded (the run may have ended since).", NULL },
    { "frames_done", get_frames_done, NULL, "The most buffers any sink took in the last (or current) run.", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pyreel_pipeline_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "reel._reel.Pipeline",
    .tp_basicsize = sizeof(pipeline_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Pipeline(description, origin='pipeline', *, values=None, device=None, placement=None,\n"
              "         threads=0, queue_size=0, latency_ms=0, trace=False)",
    .tp_new = pipeline_new,
    .tp_init = pipeline_init,
    .tp_dealloc = pipeline_dealloc,
    .tp_methods = pipeline_methods,
    .tp_getset = pipeline_getset,
};

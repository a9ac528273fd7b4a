// _reel: the C half of the reel Python module. Errors, initialization,
// devices and element classes; the types live in their own files.
#define PYREEL_MODULE_C
#include "pyreel.h"

#include <string.h>

PyObject *pyreel_error, *pyreel_parse_error;
static PyObject *bound_classes; // dict: name -> class, from _bind()

// ---- initialization ----------------------------------------------------------

static GOnce init_once = G_ONCE_INIT;
static bool initialized;
static char *init_ffmpeg_log;
static int init_blas_threads = 1;

static gpointer do_init(gpointer unused)
{
    (void)unused;
    // Like the reel program: reel reports failures itself, and its workers
    // call OpenBLAS one call each (its own threads on top oversubscribe).
    reel_init_with(reel_init_params(.ffmpeg_log = init_ffmpeg_log ? init_ffmpeg_log : "quiet",
                                    .blas_threads = init_blas_threads));
    initialized = true;
    return NULL;
}

void pyreel_ensure_init(void)
{
    g_once(&init_once, do_init, NULL);
}

static PyObject *configure(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kw[] = { "ffmpeg_log", "blas_threads", NULL };
    const char *log = NULL;
    int blas = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$zi", kw, &log, &blas))
        return NULL;
    if (initialized) {
        PyErr_SetString(PyExc_RuntimeError,
                        "reel.configure() must come before the first pipeline, model or device query");
        return NULL;
    }
    if (log) {
        static const char *levels[] = { "quiet", "error", "warning", "info", "debug" };
        bool ok = false;
        for (size_t i = 0; i < G_N_ELEMENTS(levels); i++)
            ok = ok || strcmp(log, levels[i]) == 0;
        if (!ok) {
            PyErr_Format(PyExc_ValueError, "ffmpeg_log: expected quiet, error, warning, info or debug, got '%s'", log);
            return NULL;
        }
        g_free(init_ffmpeg_log);
        init_ffmpeg_log = g_strdup(log);
    }
    if (blas >= 0)
        init_blas_threads = blas;
    Py_RETURN_NONE;
}

// ---- errors ------------------------------------------------------------------

// A parse error's message: "ORIGIN:LINE:COL: error: WHAT\n  LINE | text\n
// ... | ^~~\nhint: HINT" (reel/parse.h).
static bool raise_parse_error(const char *msg)
{
    const char *mark = strstr(msg, ": error: ");
    if (!mark)
        return false;
    const char *first_nl = strchr(msg, '\n');
    if (first_nl && first_nl < mark)
        return false;
    // Back from the mark over ":COL" and ":LINE".
    const char *p = mark;
    long nums[2] = { 0, 0 };
    for (int k = 1; k >= 0; k--) {
        const char *end = p;
        while (p > msg && g_ascii_isdigit(p[-1]))
            p--;
        if (p == end || p == msg || p[-1] != ':')
            return false;
        nums[k] = strtol(p, NULL, 10);
        p--;
    }
    char *origin = g_strndup(msg, (gsize)(p - msg));
    const char *what = mark + strlen(": error: ");
    char *message = g_strndup(what, first_nl ? (gsize)(first_nl - what) : strlen(what));
    const char *h = strstr(msg, "\nhint: ");
    char *hint = h ? g_strdup(h + strlen("\nhint: ")) : NULL;
    if (hint && strchr(hint, '\n'))
        *strchr(hint, '\n') = '\0';
    PyObject *exc = PyObject_CallFunction(pyreel_parse_error, "s", msg);
    if (exc) {
        PyObject *line = PyLong_FromLong(nums[0]), *col = PyLong_FromLong(nums[1]);
        PyObject_SetAttrString(exc, "line", line);
        PyObject_SetAttrString(exc, "column", col);
        Py_XDECREF(line);
        Py_XDECREF(col);
        PyObject *o = PyUnicode_FromString(origin), *m = PyUnicode_FromString(message);
        PyObject_SetAttrString(exc, "origin", o);
        PyObject_SetAttrString(exc, "message", m);
        Py_XDECREF(o);
        Py_XDECREF(m);
        if (hint) {
            PyObject *hs = PyUnicode_FromString(hint);
            PyObject_SetAttrString(exc, "hint", hs);
            Py_XDECREF(hs);
        } else {
            PyObject_SetAttrString(exc, "hint", Py_None);
        }
        PyErr_SetObject(pyreel_parse_error, exc);
        Py_DECREF(exc);
    }
    g_free(origin);
    g_free(message);
    g_free(hint);
    return true;
}

PyObject *pyreel_raise(GError *err, bool einval_is_value)
{
    const char *msg = err && err->message ? err->message : "unknown error";
    int code = err ? err->code : REEL_EINTERNAL;
    if (!raise_parse_error(msg)) {
        if (einval_is_value && code == REEL_EINVAL) {
            PyErr_SetString(PyExc_ValueError, msg);
        } else {
            PyObject *exc = PyObject_CallFunction(pyreel_error, "s", msg);
            if (exc) {
                PyObject *c = PyLong_FromLong(code);
                PyObject_SetAttrString(exc, "code", c);
                Py_XDECREF(c);
                PyErr_SetObject(pyreel_error, exc);
                Py_DECREF(exc);
            }
        }
    }
    if (err)
        g_error_free(err);
    return NULL;
}

// ---- bound Python classes ----------------------------------------------------

PyObject *pyreel_class(const char *name)
{
    return bound_classes ? PyDict_GetItemString(bound_classes, name) : NULL;
}

static PyObject *bind(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    (void)args;
    if (kwargs)
        PyDict_Update(bound_classes, kwargs);
    Py_RETURN_NONE;
}

// ---- dtypes ------------------------------------------------------------------

static const struct { reel_dtype reel; int npy; } dtypes[] = {
    { REEL_DTYPE_FLOAT32, NPY_FLOAT32 }, { REEL_DTYPE_FLOAT16, NPY_FLOAT16 }, { REEL_DTYPE_UINT8, NPY_UINT8 },
    { REEL_DTYPE_INT8, NPY_INT8 },       { REEL_DTYPE_INT16, NPY_INT16 },     { REEL_DTYPE_UINT16, NPY_UINT16 },
    { REEL_DTYPE_INT32, NPY_INT32 },     { REEL_DTYPE_INT64, NPY_INT64 },     { REEL_DTYPE_BOOL, NPY_BOOL },
    { REEL_DTYPE_FLOAT64, NPY_FLOAT64 },
};

int pyreel_npy_type(reel_dtype t)
{
    for (size_t i = 0; i < G_N_ELEMENTS(dtypes); i++)
        if (dtypes[i].reel == t)
            return dtypes[i].npy;
    return -1;
}

reel_dtype pyreel_dtype_of_npy(int npy)
{
    for (size_t i = 0; i < G_N_ELEMENTS(dtypes); i++)
        if (PyArray_EquivTypenums(dtypes[i].npy, npy))
            return dtypes[i].reel;
    return REEL_DTYPE_NONE;
}

// ---- devices and element classes -------------------------------------------------

static PyObject *devices(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    pyreel_ensure_init();
    reel_device_info *infos = NULL;
    int n;
    Py_BEGIN_ALLOW_THREADS
    n = reel_device_list(&infos);
    Py_END_ALLOW_THREADS
    PyObject *list = PyList_New(0);
    for (int i = 0; list && i < n; i++) {
        const reel_device_info *d = &infos[i];
        uint64_t local = 0;
        for (int h = 0; h < d->n_heaps; h++)
            local += d->heaps[h].device_local ? d->heaps[h].size : 0;
        PyObject *dict = Py_BuildValue(
            "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:K,s:O,s:O,s:O,s:I}", "spec", d->spec, "name", d->name, "backend",
            reel_backend_name(d->backend), "type", reel_device_type_name(d->type), "vendor", d->vendor, "driver",
            d->driver, "uuid", d->uuid_str, "device_memory", (unsigned long long)local, "fp16",
            d->fp16 ? Py_True : Py_False, "int8", d->int8 ? Py_True : Py_False, "unified_memory",
            d->unified_memory ? Py_True : Py_False, "subgroup_size", d->subgroup_size);
        if (!dict || PyList_Append(list, dict) < 0)
            Py_CLEAR(list);
        Py_XDECREF(dict);
    }
    g_free(infos);
    return list;
}

static PyObject *prop_dict(const reel_element_class *k, const reel_prop *p)
{
    (void)k;
    char *values = reel_prop_describe_values(p);
    PyObject *d = Py_BuildValue("{s:s,s:s,s:z,s:s,s:z,s:O}", "name", p->name, "type", reel_prop_type_name(p->type),
                                "default", p->def, "values", values, "help", p->help, "mutable",
                                (p->flags & REEL_PROP_MUTABLE) ? Py_True : Py_False);
    g_free(values);
    return d;
}

static PyObject *pads(int min, int max)
{
    if (max == REEL_PADS_ANY)
        return Py_BuildValue("(iO)", min, Py_None);
    return Py_BuildValue("(ii)", min, max);
}

static PyObject *inspect(PyObject *self, PyObject *arg)
{
    (void)self;
    pyreel_ensure_init();
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    const reel_element_class *k = reel_element_class_find(name);
    if (!k) {
        char *why = reel_element_class_why_missing(name);
        PyErr_Format(PyExc_KeyError, "%s", why ? why : "no element called that (reel.elements() lists them)");
        g_free(why);
        return NULL;
    }
    PyObject *props = PyList_New(0);
    for (const reel_prop *p = k->props; props && p && p->name; p++) {
        PyObject *d = prop_dict(k, p);
        if (!d || PyList_Append(props, d) < 0)
            Py_CLEAR(props);
        Py_XDECREF(d);
    }
    if (!props)
        return NULL;
    PyObject *in = pads(k->min_inputs, k->max_inputs), *out = pads(k->min_outputs, k->max_outputs);
    unsigned dev = k->devices ? k->devices : REEL_RUNS_ON_CPU;
    PyObject *runs = Py_BuildValue("[ss]", "cpu", "vulkan");
    if (runs && !(dev & REEL_RUNS_ON_VULKAN))
        PySequence_DelItem(runs, 1);
    PyObject *d = Py_BuildValue("{s:s,s:s,s:N,s:N,s:s,s:s,s:N,s:N}", "name", k->name, "description",
                                k->description ? k->description : "", "inputs", in, "outputs", out, "input_caps",
                                k->input_caps ? k->input_caps : "any", "output_caps",
                                k->output_caps ? k->output_caps : "any", "devices", runs, "properties", props);
    return d;
}

static PyObject *element_names(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    pyreel_ensure_init();
    PyObject *list = PyList_New(0);
    for (const reel_element_class *const *k = reel_element_class_list(); list && *k; k++) {
        PyObject *s = PyUnicode_FromString((*k)->name);
        if (!s || PyList_Append(list, s) < 0)
            Py_CLEAR(list);
        Py_XDECREF(s);
    }
    return list;
}

static PyObject *shutdown(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    pyreel_pipelines_shutdown();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    { "configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
      "configure(*, ffmpeg_log='quiet', blas_threads=1)\n--\n\n"
      "Process-wide settings, before the first pipeline, model or device query: FFmpeg's log level and\n"
      "OpenBLAS's thread count (reel's workers call OpenBLAS one call each; 0 leaves OpenBLAS as it is)." },
    { "devices", devices, METH_NOARGS,
      "devices()\n--\n\nThe devices reel can run on, the cpu first: a list of dicts (spec, name, backend, type, ...)." },
    { "inspect", inspect, METH_O,
      "inspect(name)\n--\n\nAn element class as `reel inspect` shows it: description, pads, caps, devices and\n"
      "properties (name, type, default, values, help, mutable). KeyError for an unknown name." },
    { "elements", element_names, METH_NOARGS, "elements()\n--\n\nThe names of every element class, sorted." },
    { "register_element", (PyCFunction)(void (*)(void))pyreel_register_element, METH_VARARGS | METH_KEYWORDS,
      "register_element(name, cls, properties, description)\n--\n\nRegisters a Python element class "
      "(use the reel.element decorator)." },
    { "_bind", (PyCFunction)(void (*)(void))bind, METH_VARARGS | METH_KEYWORDS, NULL },
    { "_shutdown", shutdown, METH_NOARGS, NULL },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_reel", "reel's C extension; use the reel package.", -1, methods, NULL, NULL, NULL, NULL,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
    if (PyType_Ready(t) < 0)
        return -1;
    Py_INCREF(t);
    if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__reel(void)
{
    import_array();
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    bound_classes = PyDict_New();
    pyreel_error = PyErr_NewExceptionWithDoc("reel.Error",
                                             "A failure reel reports: a run that failed (the message names the "
                                             "element), a model that cannot load. .code is reel's error code.",
                                             NULL, NULL);
    pyreel_parse_error = PyErr_NewExceptionWithDoc(
        "reel.ParseError",
        "A pipeline description that does not parse: .line and .column (from 1), .hint (or None), .origin, "
        ".message; str() has the caret picture.",
        pyreel_error, NULL);
    if (!bound_classes || !pyreel_error || !pyreel_parse_error)
        return NULL;
    Py_INCREF(pyreel_error);
    Py_INCREF(pyreel_parse_error);
    if (PyModule_AddObject(m, "Error", pyreel_error) < 0 || PyModule_AddObject(m, "ParseError", pyreel_parse_error) < 0 ||
        PyModule_AddStringConstant(m, "version", REEL_VERSION_STRING) < 0 ||
        add_type(m, &pyreel_frame_type, "Frame") < 0 || add_type(m, &pyreel_pipeline_type, "Pipeline") < 0 ||
        add_type(m, &pyreel_model_type, "Model") < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

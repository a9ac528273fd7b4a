// reel.Model: an ONNX model and one session of it, run on numpy arrays
// without a pipeline (what `reel model run` does). Inputs are passed to
// reel without a copy when C-contiguous; outputs become numpy arrays over
// reel's own tensors.
#include "pyreel.h"

#include <string.h>

typedef struct {
    PyObject_HEAD
    reel_model *model;
    reel_session *session;
    reel_device *device;
    GMutex lock;        // one run at a time (a session is used by one thread at a time)
    char *path;
    reel_precision precision;
} model_obj;

static PyObject *model_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    (void)args;
    (void)kwargs;
    model_obj *m = (model_obj *)type->tp_alloc(type, 0);
    if (m)
        g_mutex_init(&m->lock);
    return (PyObject *)m;
}

static int model_init(PyObject *self, PyObject *args, PyObject *kwargs)
{
    model_obj *m = (model_obj *)self;
    static char *kw[] = { "model", "device", "precision", "threads", "strict", NULL };
    const char *spec, *device = "cpu", *precision = "fp32";
    int threads = 0, strict = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|$ssip", kw, &spec, &device, &precision, &threads, &strict))
        return -1;
    if (m->model) {
        PyErr_SetString(PyExc_RuntimeError, "Model.__init__ called twice");
        return -1;
    }
    if (strcmp(precision, "fp32") == 0)
        m->precision = REEL_PRECISION_FP32;
    else if (strcmp(precision, "fp16") == 0)
        m->precision = REEL_PRECISION_FP16;
    else {
        PyErr_Format(PyExc_ValueError, "precision: expected 'fp32' or 'fp16', got '%s'", precision);
        return -1;
    }
    if (threads < 0) {
        PyErr_SetString(PyExc_ValueError, "threads must be >= 0 (0: one per core)");
        return -1;
    }
    pyreel_ensure_init();
    GError *err = NULL;
    bool bad_arg = false;
    Py_BEGIN_ALLOW_THREADS
    m->path = reel_model_find(spec, NULL, &err);
    if (m->path)
        m->model = reel_model_load(m->path, &err);
    if (m->model)
        m->device = reel_device_open(device, &err);
    bad_arg = bad_arg || (m->model && !m->device);
    if (m->device)
        m->session = reel_session_new(m->model,
                                      reel_session_params(.threads = threads, .device = m->device,
                                                          .strict = strict != 0, .precision = m->precision),
                                      &err);
    Py_END_ALLOW_THREADS
    if (!m->session) {
        pyreel_raise(err, bad_arg);
        return -1;
    }
    return 0;
}

static void model_dealloc(PyObject *self)
{
    model_obj *m = (model_obj *)self;
    Py_BEGIN_ALLOW_THREADS
    reel_session_destroy(&m->session);
    reel_model_unref(&m->model);
    reel_device_unref(&m->device);
    Py_END_ALLOW_THREADS
    g_free(m->path);
    g_mutex_clear(&m->lock);
    Py_TYPE(self)->tp_free(self);
}

static bool check_loaded(model_obj *m)
{
    if (!m->session)
        PyErr_SetString(pyreel_error, "the model is not loaded");
    return m->session != NULL;
}

static PyObject *io_info(const reel_model_io *io)
{
    PyObject *shape = PyTuple_New(io->rank);
    for (int i = 0; shape && i < io->rank; i++) {
        PyObject *d;
        if (io->dims[i] >= 0)
            d = PyLong_FromLongLong(io->dims[i]);
        else if (io->dim_names[i])
            d = PyUnicode_FromString(io->dim_names[i]);
        else
            d = (Py_INCREF(Py_None), Py_None);
        if (!d)
            Py_CLEAR(shape);
        else
            PyTuple_SET_ITEM(shape, i, d);
    }
    if (!shape)
        return NULL;
    PyObject *cls = pyreel_class("TensorInfo");
    if (!cls) {
        Py_DECREF(shape);
        PyErr_SetString(PyExc_RuntimeError, "reel: TensorInfo is not bound (import reel, not reel._reel)");
        return NULL;
    }
    return PyObject_CallFunction(cls, "ssN", io->name, reel_dtype_name(io->dtype), shape);
}

static PyObject *io_list(model_obj *m, bool inputs)
{
    if (!check_loaded(m))
        return NULL;
    int n = inputs ? reel_model_n_inputs(m->model) : reel_model_n_outputs(m->model);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *o = io_info(inputs ? reel_model_input(m->model, i) : reel_model_output(m->model, i));
        if (!o)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, o);
    }
    return list;
}

static PyObject *get_inputs(PyObject *self, void *unused)
{
    (void)unused;
    return io_list((model_obj *)self, true);
}

static PyObject *get_outputs(PyObject *self, void *unused)
{
    (void)unused;
    return io_list((model_obj *)self, false);
}

static PyObject *get_path(PyObject *self, void *unused)
{
    (void)unused;
    model_obj *m = (model_obj *)self;
    return m->path ? PyUnicode_DecodeFSDefault(m->path) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *get_device(PyObject *self, void *unused)
{
    (void)unused;
    model_obj *m = (model_obj *)self;
    return m->device ? PyUnicode_FromString(reel_device_info_of(m->device)->spec) : (Py_INCREF(Py_None), Py_None);
}

static PyObject *shape_text(int rank, const npy_intp *dims, const reel_model_io *io)
{
    GString *s = g_string_new("(");
    for (int i = 0; i < rank; i++) {
        if (io && io->dims[i] < 0)
            g_string_append_printf(s, "%s%s", i ? ", " : "", io->dim_names[i] ? io->dim_names[i] : "?");
        else
            g_string_append_printf(s, "%s%lld", i ? ", " : "", io ? (long long)io->dims[i] : (long long)dims[i]);
    }
    g_string_append(s, rank == 1 ? ",)" : ")");
    PyObject *o = PyUnicode_FromString(s->str);
    g_string_free(s, TRUE);
    return o;
}

// Input `io` from obj: its dtype exactly, its rank and static dims. A new
// reference to a C-contiguous, aligned array (obj itself when it is one),
// or NULL with ValueError saying what was expected.
static PyArrayObject *input_array(PyObject *obj, const reel_model_io *io)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_ValueError, "input '%s': expected a numpy array, got %s", io->name, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    int want = pyreel_npy_type(io->dtype);
    if (pyreel_dtype_of_npy(PyArray_TYPE(a)) != io->dtype || want < 0) {
        PyErr_Format(PyExc_ValueError, "input '%s': expected dtype %s, got %s (convert with .astype())", io->name,
                     reel_dtype_name(io->dtype), PyArray_DESCR(a)->typeobj->tp_name);
        return NULL;
    }
    bool shape_ok = PyArray_NDIM(a) == io->rank;
    for (int i = 0; shape_ok && i < io->rank; i++)
        shape_ok = io->dims[i] < 0 || PyArray_DIM(a, i) == io->dims[i];
    if (!shape_ok) {
        PyObject *w = shape_text(io->rank, NULL, io), *g = shape_text(PyArray_NDIM(a), PyArray_DIMS(a), NULL);
        PyErr_Format(PyExc_ValueError, "input '%s': expected shape %U, got %U", io->name, w, g);
        Py_XDECREF(w);
        Py_XDECREF(g);
        return NULL;
    }
    return (PyArrayObject *)PyArray_FromArray(a, NULL, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
}

static void free_tensor_capsule(PyObject *cap)
{
    reel_tensor *t = PyCapsule_GetPointer(cap, "reel.tensor");
    reel_tensor_free(&t);
}

// A numpy array over t's elements that frees t when it goes.
static PyObject *output_array(reel_tensor *t)
{
    int npy = pyreel_npy_type(t->dtype);
    if (npy < 0) {
        PyErr_Format(PyExc_ValueError, "output of dtype %s has no numpy form", reel_dtype_name(t->dtype));
        reel_tensor_free(&t);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(t, "reel.tensor", free_tensor_capsule);
    if (!cap) {
        reel_tensor_free(&t);
        return NULL;
    }
    npy_intp dims[REEL_TENSOR_MAX_RANK];
    for (int i = 0; i < t->rank; i++)
        dims[i] = (npy_intp)t->shape[i];
    PyObject *a = PyArray_New(&PyArray_Type, t->rank, dims, npy, NULL, t->data, 0, NPY_ARRAY_CARRAY, NULL);
    if (!a || PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) {
        Py_XDECREF(a);
        if (!a)
            Py_DECREF(cap);
        return NULL;
    }
    return a;
}

static PyObject *model_run(PyObject *self, PyObject *arg)
{
    model_obj *m = (model_obj *)self;
    if (!check_loaded(m))
        return NULL;
    int n_in = reel_model_n_inputs(m->model), n_out = reel_model_n_outputs(m->model);
    if (PyArray_Check(arg) && n_in == 1) { // one input: the array alone
        PyObject *d = Py_BuildValue("{sO}", reel_model_input(m->model, 0)->name, arg);
        if (!d)
            return NULL;
        PyObject *r = model_run(self, d);
        Py_DECREF(d);
        return r;
    }
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "run() takes a dict {input name: numpy array} (or the array of a one-input model)");
        return NULL;
    }
    GString *names = g_string_new(NULL);
    for (int i = 0; i < n_in; i++)
        g_string_append_printf(names, "%s'%s'", i ? ", " : "", reel_model_input(m->model, i)->name);
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(arg, &pos, &key, &val)) {
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
        bool known = false;
        for (int i = 0; k && i < n_in; i++)
            known = known || strcmp(reel_model_input(m->model, i)->name, k) == 0;
        if (!known) {
            PyErr_Format(PyExc_ValueError, "no input %R: the model's inputs are %s", key, names->str);
            g_string_free(names, TRUE);
            return NULL;
        }
    }
    PyArrayObject **arrays = g_new0(PyArrayObject *, n_in);
    reel_tensor **inputs = g_new0(reel_tensor *, n_in), **outputs = g_new0(reel_tensor *, n_out);
    PyObject *result = NULL;
    for (int i = 0; i < n_in; i++) {
        const reel_model_io *io = reel_model_input(m->model, i);
        PyObject *v = PyDict_GetItemString(arg, io->name);
        if (!v) {
            PyErr_Format(PyExc_ValueError, "input '%s' is missing: the model's inputs are %s", io->name, names->str);
            goto done;
        }
        if (!(arrays[i] = input_array(v, io)))
            goto done;
        int64_t shape[REEL_TENSOR_MAX_RANK];
        for (int d = 0; d < io->rank; d++)
            shape[d] = PyArray_DIM(arrays[i], d);
        inputs[i] = reel_tensor_wrap(io->dtype, io->rank, shape, PyArray_DATA(arrays[i]),
                                     (size_t)PyArray_NBYTES(arrays[i]), NULL, NULL);
        if (!inputs[i]) {
            PyErr_Format(PyExc_ValueError, "input '%s': shape out of range", io->name);
            goto done;
        }
    }
    GError *err = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    g_mutex_lock(&m->lock);
    rc = reel_session_run(m->session, inputs, outputs, &err);
    g_mutex_unlock(&m->lock);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        pyreel_raise(err, true);
        goto done;
    }
    result = PyDict_New();
    for (int i = 0; result && i < n_out; i++) {
        PyObject *a = output_array(outputs[i]);
        outputs[i] = NULL;
        if (!a || PyDict_SetItemString(result, reel_model_output(m->model, i)->name, a) < 0)
            Py_CLEAR(result);
        Py_XDECREF(a);
    }
done:
    for (int i = 0; i < n_in; i++) {
        reel_tensor_free(&inputs[i]);
        Py_XDECREF(arrays[i]);
    }
    for (int i = 0; i < n_out; i++)
        reel_tensor_free(&outputs[i]);
    g_free(arrays);
    g_free(inputs);
    g_free(outputs);
    g_string_free(names, TRUE);
    return result;
}

static PyObject *model_placement(PyObject *self, PyObject *unused)
{
    (void)unused;
    model_obj *m = (model_obj *)self;
    if (!check_loaded(m))
        return NULL;
    reel_session_placement p;
    g_mutex_lock(&m->lock);
    reel_session_placement_of(m->session, &p);
    PyObject *d = Py_BuildValue("{s:i,s:i,s:i,s:L,s:L,s:s}", "device_nodes", p.device_nodes, "cpu_nodes", p.cpu_nodes,
                                "partitions", p.partitions, "bytes_to_device", (long long)p.bytes_to_device,
                                "bytes_to_host", (long long)p.bytes_to_host, "cpu_reasons",
                                p.cpu_reasons ? p.cpu_reasons : "");
    g_mutex_unlock(&m->lock);
    return d;
}

static PyMethodDef model_methods[] = {
    { "run", model_run, METH_O,
      "run(inputs)\n--\n\nOne inference: inputs is {name: numpy array} (or the array of a one-input model),\n"
      "each of the input's dtype exactly and its shape (symbolic dims any size); C-contiguous arrays are\n"
      "read in place, others copied once. Returns {output name: numpy array}. ValueError names a wrong\n"
      "input; the GIL is released while the model runs." },
    { "placement", model_placement, METH_NOARGS,
      "placement()\n--\n\nWhere the last run put the nodes (device_nodes, cpu_nodes, cpu_reasons) and what crossed." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef model_getset[] = {
    { "inputs", get_inputs, NULL, "The inputs as reel.TensorInfo (name, dtype, shape; symbolic dims by name or None).",
      NULL },
    { "outputs", get_outputs, NULL, "The outputs as reel.TensorInfo.", NULL },
    { "path", get_path, NULL, "The ONNX file.", NULL },
    { "device", get_device, NULL, "The device it runs on ('cpu', 'vulkan:0').", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

PyTypeObject pyreel_model_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "reel.Model",
    .tp_basicsize = sizeof(model_obj),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Model(model, *, device='cpu', precision='fp32', threads=0, strict=False)\n\n"
              "An ONNX model (a path, or a model zoo name such as 'blazeface-front') with one session on a device\n"
              "('cpu', 'vulkan:0', 'auto', a device name). precision='fp16' keeps float tensors as 16-bit floats\n"
              "on a GPU that has them. strict=True makes a node that would fall back to the cpu an error.\n"
              "threads: the cpu kernels' workers (0: one per core). Runs are serialized per Model; use one\n"
              "Model per thread to run in parallel.",
    .tp_new = model_new,
    .tp_init = model_init,
    .tp_dealloc = model_dealloc,
    .tp_methods = model_methods,
    .tp_getset = model_getset,
};

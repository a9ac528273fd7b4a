// Elements written in Python: a class with process(frame), registered
// under a name (reel.element), usable in descriptions. Each runs on reel's
// threads holding the GIL for its calls: one element's Python code at a time
// in the whole process.
#include "pyreel.h"

#include <string.h>

#define MAX_PROPS 32

// The private struct of every Python element: the instance, and the
// property values (the framework parses text into the slots).
typedef union {
    int i;
    double d;
    bool b;
    char *s;
} slot;

typedef struct {
    PyObject *instance;
    slot slots[MAX_PROPS];
} py_priv;

// What a registered class needs beyond reel_element_class.
typedef struct {
    reel_element_class klass;
    PyObject *cls;          // the Python class (a reference kept for good)
    int n_props;
    reel_prop props[MAX_PROPS + 1];
    char *attrs[MAX_PROPS]; // attribute names: the property's with '-' as '_'
} py_class;

static const py_class *class_of(reel_element *e)
{
    return (const py_class *)reel_element_get_class(e); // klass is the first member
}

// Fails the run with the Python exception (its traceback) as the message.
static int fail_with_exception(reel_element *e, const char *where)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    char *text = NULL;
    PyObject *mod = PyImport_ImportModule("traceback");
    PyObject *lines = mod ? PyObject_CallMethod(mod, "format_exception", "OOO", t, v ? v : Py_None,
                                                tb ? tb : Py_None)
                          : NULL;
    PyObject *empty = PyUnicode_FromString("");
    PyObject *joined = lines && empty ? PyUnicode_Join(empty, lines) : NULL;
    const char *s = joined ? PyUnicode_AsUTF8(joined) : NULL;
    text = g_strdup(s ? s : "(the exception could not be formatted)");
    g_strchomp(text);
    PyErr_Clear();
    Py_XDECREF(joined);
    Py_XDECREF(empty);
    Py_XDECREF(lines);
    Py_XDECREF(mod);
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    int rc = reel_element_error(e, REEL_EINVAL, "%s() raised: %s", where, text);
    g_free(text);
    return rc;
}

static PyObject *slot_value(const reel_prop *p, const slot *s)
{
    switch (p->type) {
    case REEL_PROP_INT: return PyLong_FromLong(s->i);
    case REEL_PROP_DOUBLE: return PyFloat_FromDouble(s->d);
    case REEL_PROP_BOOL: return PyBool_FromLong(s->b);
    default: return s->s ? PyUnicode_FromString(s->s) : (Py_INCREF(Py_None), Py_None);
    }
}

static int set_attr(const py_class *pc, py_priv *s, int i)
{
    PyObject *v = slot_value(&pc->props[i], &s->slots[i]);
    int rc = v ? PyObject_SetAttrString(s->instance, pc->attrs[i], v) : -1;
    Py_XDECREF(v);
    return rc;
}

// Calls instance.NAME() when the class has it; 0, or -1 with the exception set.
static int call_optional(PyObject *instance, const char *name)
{
    if (!PyObject_HasAttrString(instance, name))
        return 0;
    PyObject *r = PyObject_CallMethod(instance, name, NULL);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static int el_start(reel_element *e)
{
    const py_class *pc = class_of(e);
    py_priv *s = reel_element_priv(e);
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = 0;
    s->instance = PyObject_CallNoArgs(pc->cls);
    for (int i = 0; s->instance && i < pc->n_props; i++)
        if (set_attr(pc, s, i) < 0)
            break;
    if (!s->instance || PyErr_Occurred() || call_optional(s->instance, "start") < 0)
        rc = fail_with_exception(e, "start");
    PyGILState_Release(g);
    return rc;
}

static int el_changed(reel_element *e, const reel_prop *prop)
{
    const py_class *pc = class_of(e);
    py_priv *s = reel_element_priv(e);
    int rc = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    for (int i = 0; s->instance && i < pc->n_props; i++)
        if (strcmp(pc->props[i].name, prop->name) == 0 && set_attr(pc, s, i) < 0)
            rc = fail_with_exception(e, "setting a property");
    PyGILState_Release(g);
    return rc;
}

static int el_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    py_priv *s = reel_element_priv(e);
    reel_buffer *out = NULL;
    int rc = 0;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *frame = pyreel_frame_new(buf);
    PyObject *r = frame ? PyObject_CallMethod(s->instance, "process", "O", frame) : NULL;
    if (!r) {
        rc = fail_with_exception(e, "process");
    } else if (r == Py_None || r == Py_True) {
        out = reel_buffer_ref(buf);
    } else if (r == Py_False) {
        // dropped
    } else if (PyArray_Check(r)) { // new pixels, in a frame of the same format
        out = reel_element_alloc(e, 0);
        if (!out) {
            rc = reel_element_error(e, REEL_ENOMEM, "no output frame for process()'s array");
        } else if (pyreel_copy_into_frame(r, out) < 0) {
            reel_buffer_unref(&out);
            rc = fail_with_exception(e, "process (its returned array)");
        } else {
            reel_buffer_copy_props(out, buf);
        }
    } else {
        rc = reel_element_error(e, REEL_EINVAL,
                                "process() returned %s: expected None or True (pass the frame on), False (drop "
                                "it) or a numpy array (new pixels)",
                                Py_TYPE(r)->tp_name);
    }
    Py_XDECREF(r);
    Py_XDECREF(frame);
    PyGILState_Release(g);
    reel_buffer_unref(&buf);
    if (out)
        rc = reel_element_push(e, 0, out);
    return rc;
}

static void el_stop(reel_element *e)
{
    py_priv *s = reel_element_priv(e);
    if (!s->instance)
        return;
    PyGILState_STATE g = PyGILState_Ensure();
    if (call_optional(s->instance, "stop") < 0)
        fail_with_exception(e, "stop");
    Py_CLEAR(s->instance);
    PyGILState_Release(g);
}

// ---- registration ------------------------------------------------------------------

static bool valid_name(const char *n)
{
    if (!*n || !g_ascii_isalpha(*n))
        return false;
    for (const char *p = n; *p; p++)
        if (!g_ascii_isalnum(*p) && *p != '-' && *p != '_')
            return false;
    return true;
}

// Property `i` of pc from a Python default: its type from the value's.
static int add_prop(py_class *pc, int i, PyObject *key, PyObject *def)
{
    const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
    if (!name || !valid_name(name) || strcmp(name, "name") == 0 || strcmp(name, "device") == 0 ||
        strcmp(name, "stream-id") == 0) {
        PyErr_Format(PyExc_ValueError, "property %R: a name of letters, digits, '-' and '_' (not name, device, stream-id)",
                     key);
        return -1;
    }
    reel_prop *p = &pc->props[i];
    p->name = g_strdup(name);
    p->offset = offsetof(py_priv, slots) + (size_t)i * sizeof(slot);
    p->flags = REEL_PROP_MUTABLE;
    p->help = "a property of a Python element";
    if (PyBool_Check(def)) {
        p->type = REEL_PROP_BOOL;
        p->def = g_strdup(def == Py_True ? "true" : "false");
    } else if (PyLong_Check(def)) {
        long v = PyLong_AsLong(def);
        if (v == -1 && PyErr_Occurred())
            return -1;
        p->type = REEL_PROP_INT;
        p->min = G_MININT, p->max = G_MAXINT;
        p->def = g_strdup_printf("%ld", v);
    } else if (PyFloat_Check(def)) {
        PyObject *text = PyObject_Repr(def); // the shortest text that reads back as the same number
        if (!text)
            return -1;
        p->type = REEL_PROP_DOUBLE;
        p->def = g_strdup(PyUnicode_AsUTF8(text));
        Py_DECREF(text);
    } else if (PyUnicode_Check(def)) {
        p->type = REEL_PROP_STRING;
        p->def = g_strdup(PyUnicode_AsUTF8(def));
    } else {
        PyErr_Format(PyExc_TypeError, "property '%s': the default must be an int, float, bool or str", name);
        return -1;
    }
    pc->attrs[i] = g_strdelimit(g_strdup(name), "-", '_');
    return 0;
}

PyObject *pyreel_register_element(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *kw[] = { "name", "cls", "properties", "description", NULL };
    const char *name, *description = "a Python element";
    PyObject *cls, *props = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO|Oz", kw, &name, &cls, &props, &description))
        return NULL;
    pyreel_ensure_init();
    if (!valid_name(name)) {
        PyErr_Format(PyExc_ValueError, "element name '%s': letters, digits, '-' and '_', starting with a letter", name);
        return NULL;
    }
    if (!PyCallable_Check(cls) || !PyObject_HasAttrString(cls, "process")) {
        PyErr_SetString(PyExc_TypeError, "an element class needs a process(self, frame) method");
        return NULL;
    }
    if (props && props != Py_None && (!PyDict_Check(props) || PyDict_Size(props) > MAX_PROPS)) {
        PyErr_Format(PyExc_TypeError, "properties: a dict of at most %d names to defaults", MAX_PROPS);
        return NULL;
    }
    if (reel_element_class_find(name)) {
        PyErr_Format(PyExc_ValueError, "an element called '%s' exists already", name);
        return NULL;
    }
    // Registered classes live as long as the process: the registry keeps them.
    py_class *pc = g_new0(py_class, 1);
    if (props && props != Py_None) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(props, &pos, &k, &v))
            if (add_prop(pc, pc->n_props++, k, v) < 0)
                return NULL; // pc is lost on purpose: a few bytes, once, on a programming error
    }
    Py_INCREF(cls);
    pc->cls = cls;
    pc->klass = (reel_element_class){
        .name = g_strdup(name),
        .description = g_strdup(description ? description : "a Python element"),
        .flags = REEL_CLASS_PASSTHROUGH,
        .devices = REEL_RUNS_ON_CPU,
        .priv_size = sizeof(py_priv),
        .props = pc->props,
        .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
        .input_caps = "video/raw,memory=host",
        .output_caps = "video/raw,memory=host",
        .start = el_start,
        .process = el_process,
        .changed = el_changed,
        .stop = el_stop,
    };
    if (reel_element_class_register(&pc->klass) < 0) {
        PyErr_Format(PyExc_ValueError, "an element called '%s' exists already", name);
        return NULL;
    }
    Py_RETURN_NONE;
}

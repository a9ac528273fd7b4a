// The reel Python module (_reel): what its files share.
#ifndef PYREEL_H
#define PYREEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL reel_py_ARRAY_API
#ifndef PYREEL_MODULE_C
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <reel/reel.h>

// Exceptions: reel.Error (run failures), reel.ParseError (a description
// that does not parse: .line, .column, .hint).
extern PyObject *pyreel_error, *pyreel_parse_error;

// Sets the Python exception for a reel GError (ParseError for a parse
// message, ValueError for REEL_EINVAL when `einval_is_value` and
// reel.Error otherwise) and frees it. Returns NULL.
PyObject *pyreel_raise(GError *err, bool einval_is_value);

// reel_init() with the module's settings, once (reel.configure() may set
// them before).
void pyreel_ensure_init(void);

// Python classes defined in reel/__init__.py that the C code builds
// (Detections, Classification, Event, Count, TensorInfo), bound at import
// by _reel._bind(); borrowed references, NULL before.
PyObject *pyreel_class(const char *name);

// numpy's dtype number for a reel dtype, or -1; and back (REEL_DTYPE_NONE).
int pyreel_npy_type(reel_dtype t);
reel_dtype pyreel_dtype_of_npy(int npy);

// ---- frames (frame.c) ------------------------------------------------------

extern PyTypeObject pyreel_frame_type;
// A Frame holding a new reference on buf.
PyObject *pyreel_frame_new(reel_buffer *buf);
reel_buffer *pyreel_frame_buffer(PyObject *frame);

// Copies a numpy image (HxWx3, HxWx4, HxW, or planes for yuv/nv12) into host
// frame dst of format dst->format, checking dtype, shape and strides
// (ValueError saying what was expected). Returns 0 or -1 with the exception set.
int pyreel_copy_into_frame(PyObject *obj, reel_buffer *dst);

// ---- types of the other files ------------------------------------------------

extern PyTypeObject pyreel_pipeline_type;
extern PyTypeObject pyreel_model_type;
// Aborts and stops every pipeline still running (at interpreter exit).
void pyreel_pipelines_shutdown(void);
PyObject *pyreel_register_element(PyObject *self, PyObject *args, PyObject *kwargs);

#endif

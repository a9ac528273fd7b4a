// ONNX files -> IR. Only models/ includes this.
#ifndef REEL_MODELS_ONNX_LOAD_H
#define REEL_MODELS_ONNX_LOAD_H

#include "models/ir.h"

// Parses an ONNX model file into a graph with its initializers as constant
// values (external data read from beside the file) and Constant nodes turned
// into constants. Checks structure: every input of every node is produced
// once, no cycles, initializer byte sizes match their shapes, dims are sane.
// Errors name the node or tensor: REEL_EIO, REEL_EFORMAT.
reel_ir_graph *reel_onnx_load(const char *path, GError **error);

// The same from a serialized ModelProto in memory. `name` stands for the
// model in messages; external data is read from `dir`, and refused with a
// clear error when `dir` is NULL.
reel_ir_graph *reel_onnx_load_data(const void *data, size_t size, const char *name, const char *dir,
                                   GError **error);

// Reads a serialized TensorProto (the test_data_set_N/input_K.pb files of the
// ONNX conformance tests). *name (may be NULL) receives its name (g_free).
reel_tensor *reel_onnx_read_tensor_file(const char *path, char **name, GError **error);

#endif

// BatchNormalization folded into the Conv before it, on an unpacked ONNX
// graph, before quantization: the Conv's output is then what the next op
// reads, so that its weights, bias and output quantize as one integer op.
#ifndef REEL_MODELS_ONNX_FOLD_BN_H
#define REEL_MODELS_ONNX_FOLD_BN_H

#include <glib.h>

#include "onnx.pb-c.h"

// Rewrites *g in place (a copy of an unpacked graph: its node and
// initializer arrays are replaced, the unpacked message is not changed);
// what it allocates goes to `mem` (g_free). Returns how many were folded.
int fold_batchnorm(Onnx__GraphProto *g, GPtrArray *mem);

#endif

// Slice's window, shared by the cpu op (models/cpu/shape.c) and the Vulkan
// one (models/vulkan/ops_basic.c), so both read and clamp it the same way.
// Only models/ includes this.
#ifndef REEL_MODELS_SLICE_H
#define REEL_MODELS_SLICE_H

#include "models/ir.h"

// Per dim of the input: the first element taken, the step and the count.
typedef struct reel_slice_window {
    int64_t start[REEL_TENSOR_MAX_RANK], step[REEL_TENSOR_MAX_RANK], len[REEL_TENSOR_MAX_RANK];
} reel_slice_window;

// The window of Slice node n over an input of these concrete dims: starts,
// ends, axes and steps from inputs 1-4 (opset 10+; their data, which must be
// there) or from attributes (before), clamped per ONNX. 0, or < 0 when they
// are missing, malformed, name an axis twice or out of range, or step by 0.
int reel_slice_window_of(const reel_ir_node *n, const reel_tensor *const *in, int rank, const int64_t *dims,
                         reel_slice_window *w);

#endif

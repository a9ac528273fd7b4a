// Graph passes run at load, in this order, each leaving the graph valid
// (every live node's inputs produced by an earlier live node, a constant or a
// graph input). Only models/ includes this.
#ifndef REEL_MODELS_PASSES_H
#define REEL_MODELS_PASSES_H

#include "models/ir.h"

// Shape inference of every node in topological order through its op's
// `infer`, folding as it goes: a node whose inputs are all constants and
// whose op has a kernel is run once and its outputs become constants (so
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains on static shapes
// collapse and the nodes after them see constant inputs); a Shape of a value
// with static dims is a constant. Nodes without an op, or whose `infer` says
// REEL_EUNSUPPORTED, are skipped with the nodes that depend on them; for the
// latter, `unsupported` (node name -> reason, g_free'd strings; may be NULL)
// receives the message. Other inference errors fail the pass.
int reel_pass_infer_fold(reel_ir_graph *g, GHashTable *unsupported, GError **error);

// BatchNormalization right after a Conv (constant float32 weights and BN
// parameters, the Conv output used by nothing else) folded into new Conv
// weights and bias. Returns the number of folds.
int reel_pass_fold_conv_bn(reel_ir_graph *g);

// Conv -> Add(other) with the Conv output used only by the Add, the other
// operand of the same static shape and no activation fused yet: the other
// operand becomes the Conv's residual input (inputs[3], see ir.h) and the
// Conv moves to the Add's place in the node order (so the residual is
// computed before it). Run before reel_pass_fuse_activations, which then
// folds a Relu after the Add. Returns the number of fusions.
int reel_pass_fuse_residual(reel_ir_graph *g);

// Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6), HardSwish written out (also with
// Mul by 1/6 at the end; every intermediate read by the next node alone),
// made one HardSwish node (models/fuse_hardswish.c). Run before
// reel_pass_fuse_activations, which folds it into a Conv before it.
// Returns the number of fusions.
int reel_pass_fuse_hardswish(reel_ir_graph *g);

// Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Sigmoid·Mul (SiLU) and
// HardSigmoid·Mul (HardSwish) after a Conv recorded in the Conv's
// fused/fused_a/fused_b. Returns the number of fusions.
int reel_pass_fuse_activations(reel_ir_graph *g);

// QDQ models (models/qdq.c): DequantizeLinear -> op -> QuantizeLinear
// chains become integer ops on the 8-bit tensors, as ONNX Runtime's QDQ
// transformer makes them: Conv (with a fused Relu/Clip, int32 or float
// bias) -> QLinearConv; MatMul, and Gemm without C -> QLinearMatMul; Gemm
// with C -> com.microsoft QGemm; Add, Mul, AveragePool, GlobalAveragePool,
// Concat, Sigmoid, LeakyRelu -> the com.microsoft QLinear ops; MaxPool,
// Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Pad, Resize (nearest)
// between the same scale and zero point -> the op on the 8-bit tensor; a
// Relu or Clip before a Q that clamps the same goes. Only where exact
// (constant parameters of the right shapes, the op's float output read by
// the Q alone, matching types); everything else stays float. Adds to
// g->qdq_folded and g->qdq_into; returns the number of rewritten nodes.
// Runs after the Conv fusions (a fused Relu/Clip is absorbed) while
// g->keep_const_dq has kept the weights' DequantizeLinear.
int reel_pass_fold_qdq(reel_ir_graph *g);
// Whether REEL_QDQ_FOLD (default on; "0": off) asks for the pass.
bool reel_qdq_fold_enabled(void);

// Helpers the passes share: the live consumers of value v (at most max in
// out; returns how many there are), whether v is a graph output, and a new
// constant value named base+suffix (made unique) holding t (taken).
int reel_pass_consumers(const reel_ir_graph *g, int v, reel_ir_node **out, int max);
bool reel_pass_is_graph_output(const reel_ir_graph *g, int v);
int reel_pass_add_constant(reel_ir_graph *g, const char *base, const char *suffix, reel_tensor *t);
// Clip's bounds (attributes before opset 11, constant inputs after; absent:
// -FLT_MAX, FLT_MAX); false when they are not constants.
bool reel_pass_clip_bounds(const reel_ir_graph *g, const reel_ir_node *n, float *lo, float *hi);

// Marks dead the nodes whose outputs reach no graph output. Returns how many.
int reel_pass_remove_dead(reel_ir_graph *g);

// Drops dead nodes from g->nodes (fixing producers) and frees constants no
// live node or graph output uses.
void reel_pass_compact(reel_ir_graph *g);

// All of the above, in order.
int reel_passes_run(reel_ir_graph *g, GHashTable *unsupported, GError **error);

#endif

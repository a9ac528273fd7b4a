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

// Relu, Clip, Sigmoid, HardSigmoid, HardSwish, Sigmoid·Mul (SiLU) and
// HardSigmoid·Mul (HardSwish) after a Conv recorded in the Conv's
// fused/fused_a/fused_b. Returns the number of fusions.
int reel_pass_fuse_activations(reel_ir_graph *g);

// Marks dead the nodes whose outputs reach no graph output. Returns how many.
int reel_pass_remove_dead(reel_ir_graph *g);

// Drops dead nodes from g->nodes (fixing producers) and frees constants no
// live node or graph output uses.
void reel_pass_compact(reel_ir_graph *g);

// All of the above, in order.
int reel_passes_run(reel_ir_graph *g, GHashTable *unsupported, GError **error);

#endif

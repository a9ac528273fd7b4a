// struct reel_model, for the session code. Only models/ includes this.
#ifndef REEL_MODELS_MODEL_INTERNAL_H
#define REEL_MODELS_MODEL_INTERNAL_H

#include <stdatomic.h>

#include "models/ir.h"
#include "reel/model.h"

// Immutable after reel_model_load returns: sessions read it from any thread
// without locks and must not modify the graph (copy what they rewrite).
struct reel_model {
    atomic_int refcount;
    char *path;                  // as given to reel_model_load
    // After loading, inference and the passes: nodes in topological order, no
    // dead nodes (compacted), constants folded; each value's dtype/rank/dims
    // as inferred from the declared input shapes (REEL_DIM_UNKNOWN where they
    // depend on symbolic input dims). Values no live node uses may remain;
    // graph outputs may be constants (no producer) or graph inputs.
    reel_ir_graph *graph;
    // The graph inputs (graph->inputs, in order) and outputs (graph->outputs):
    // names and dim_names point into the graph's values.
    reel_model_io *inputs;
    int n_inputs;
    reel_model_io *outputs;
    int n_outputs;
    reel_model_summary summary;  // op_histogram owned here, keys point into the graph
};

#endif

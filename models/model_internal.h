// struct reel_model and what its sessions share per device, for the
// session code. Only models/ includes this.
#ifndef REEL_MODELS_MODEL_INTERNAL_H
#define REEL_MODELS_MODEL_INTERNAL_H

#include <stdatomic.h>

#include "models/ir.h"
#include "reel/model.h"

struct vk_store;

// What every session of one model on one device shares, made once for all
// their plans (one per input shape): the state the cpu kernels derive from
// the model's constants (Winograd's transformed weights), and on a Vulkan
// device the weights in device memory per precision, the compiled kernels
// and each node's Vulkan op (models/vulkan/store.h).
//
// Lifetime: made by the first session on the device (reel_model_store_get)
// and freed when the last session on it is destroyed, after that session's
// plans (which borrow from it): a model without sessions holds no device
// memory and no device. Keyed by the device object (NULL: the cpu).
// Thread-safety: sessions on several threads use one store at once.
// states[] entries go from NULL to a value once, by compare-and-swap (a
// thread that loses frees its own copy); vk locks itself; the rest is set
// when the store is made.
typedef struct reel_model_store {
    reel_device *dev;            // the key (referenced by vk); NULL for the cpu
    int sessions;                // sessions holding it, under the model's lock
    void **states;               // per node: its reel_exec_ctx.state, g_free'd with the store
    atomic_int states_made;      // entries of states[] set so far
    struct vk_store *vk;         // a Vulkan device's weights and kernels, else NULL
} reel_model_store;

// Immutable after reel_model_load returns, but for the stores: sessions read
// it from any thread without locks and must not modify the graph (copy what
// they rewrite).
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
    // Per node: bit k set when input k is a constant of the model (the same
    // in every plan): reel_exec_ctx.const_inputs.
    uint32_t *const_inputs;
    GMutex stores_lock;          // stores and each one's session count
    GPtrArray *stores;           // reel_model_store *, one per device with sessions
};

// The store of m's sessions on dev (NULL or the cpu device: the cpu's),
// made when dev has none; the caller holds it until reel_model_store_put.
// NULL with *error set when the device refuses (its dummy buffer).
// Thread-safety: any thread.
reel_model_store *reel_model_store_get(reel_model *m, reel_device *dev, GError **error);
// Drops the caller's hold (sets *st to NULL; NULL-safe); the last one frees
// the store. Whatever borrows from it (plans) must be freed first.
void reel_model_store_put(reel_model *m, reel_model_store **st);

#endif

// What a model keeps on one Vulkan device for all its plans and sessions
// there: its weights in device memory (float32, and float16 for fp16
// plans: the precision is part of the key), the kernels (pipelines) the
// plans' ops compile, a zeroed buffer for absent optional inputs, and each
// node's Vulkan op, looked up once.
//
// Ownership: the model's per-device store (models/model_internal.h) owns
// it; plans hold references on the weights they bind and borrow the
// kernels and ops, so every plan on it is freed before it is.
// Thread-safety: any thread; weights and kernels are made under its lock,
// the first request uploads or compiles and later ones share the result.
// Only models/ includes this.
#ifndef REEL_MODELS_VULKAN_STORE_H
#define REEL_MODELS_VULKAN_STORE_H

#include "models/vulkan/vk_ops.h"

typedef struct vk_store vk_store;

// A store on dev for graph g (the model's, after the passes: its constants
// and nodes, borrowed; g must outlive the store). NULL with *error set when
// the device refuses the dummy buffer.
vk_store *vk_store_new(reel_device *dev, const reel_ir_graph *g, GError **error);
void vk_store_free(vk_store **s);

reel_device *vk_store_device(const vk_store *s);   // borrowed
reel_mem *vk_store_dummy(const vk_store *s);        // 16 zero bytes, borrowed
const vk_op *vk_store_op(const vk_store *s, int node); // the node's Vulkan op, or NULL

// Whether view (a plan's view of value v) holds model constant v itself,
// not a constant that plan folded: only those are the same in every plan.
bool vk_store_is_weight(const vk_store *s, int v, const reel_tensor *view);
// Model constant v in device memory, float32 values as float16 with half:
// uploaded at the first request, a new reference. NULL with *error set when
// the device refuses.
reel_mem *vk_store_weight(vk_store *s, int v, bool half, GError **error);

// The kernel `key` names (vk_ctx's keys: a name, or "name/local/c1,...")
// made from params at the first request; borrowed, valid while the store
// is. NULL with *error set when the device refuses it.
reel_kernel *vk_store_kernel(vk_store *s, const char *key, const reel_kernel_params *params, GError **error);

typedef struct vk_store_stats {
    int64_t weights;      // weight tensors uploaded (once per precision)
    int64_t weight_bytes; // their bytes in device memory
    int kernels;          // kernels compiled
} vk_store_stats;
void vk_store_get_stats(vk_store *s, vk_store_stats *out);

#endif

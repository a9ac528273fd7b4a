// Running a plan's nodes on a Vulkan device: which nodes go there (the
// partition), the device memory of the values they touch, and the copies at
// the partition's edges. The session (models/session.c) walks the nodes and
// asks, per node, to run it here or to have its inputs on the host.
//
// Memory: weights and the values that come from the host (graph inputs, cpu
// nodes' outputs) have device memory of their own, the model's weights
// shared with every plan on the device through its store
// (models/vulkan/store.h); the values the device makes share one arena,
// laid out by their lifetimes. Freeing a plan frees its own memory and
// recordings, never the store's weights or kernels. Submissions: the first
// run records each stretch of dispatches between two host waits into a
// command buffer; later runs with the same bound inputs upload what crosses
// and resubmit those. Only models/ includes this.
#ifndef REEL_MODELS_VULKAN_EXEC_H
#define REEL_MODELS_VULKAN_EXEC_H

#include "models/ir.h"
#include "reel/device.h"

struct vk_store;

typedef struct vk_exec vk_exec;

typedef struct vk_exec_params {
    // The model's store on the device the plan runs on (dev below): its
    // weights, kernels and ops (borrowed; it outlives the plan).
    struct vk_store *store;
    bool strict;            // a node that cannot run on dev is an error, naming every such node
    uint64_t memory_limit;  // device bytes for this plan's tensors; 0: no limit. Nodes past it run on the cpu
    // Per value: the node that makes it and the last that reads it (graph
    // outputs: the node count), as the session's arena uses them.
    const int *def, *last;
    // precision=fp16: float32 values are float16 on the device (converted on
    // the host where they cross, on the device where a bound input is
    // float32); nodes with no float16 kernel run on the cpu. dev must have
    // info.fp16.
    bool f16;
} vk_exec_params;

// Places the nodes of graph g (skip[i]: folded, not run) whose values have
// the concrete shapes in views[] (constants with their data). NULL with
// *error set on failure (strict placement, device errors).
vk_exec *vk_exec_new(const vk_exec_params *params, const reel_ir_graph *g, const reel_tensor *views,
                     const bool *skip, GError **error);
void vk_exec_free(vk_exec **x);

bool vk_exec_on_device(const vk_exec *x, int node);

// Before each run: values other than constants hold nothing on the device.
void vk_exec_begin(vk_exec *x);
// Whether every node that reads value v runs on the device (then a graph
// input already in device memory can be used where it is).
bool vk_exec_device_only(const vk_exec *x, const reel_ir_graph *g, const bool *skip, int v);
// For this run, value v is `m` (a graph input in this device's memory).
void vk_exec_bind(vk_exec *x, int v, reel_mem *m);
// Runs node i on the device; views[] are the host views (inputs' data there
// when they were made on the host; uploaded as needed).
int vk_exec_node(vk_exec *x, const reel_ir_graph *g, int i, reel_tensor *views, GError **error);
// Profiling: each dispatch timed on the device (and submitted alone, so a
// profiled run is never recorded); vk_exec_node_ns() is the device time of
// the last node run.
void vk_exec_set_profile(vk_exec *x, bool on);
int64_t vk_exec_node_ns(const vk_exec *x);
// Makes value v's host view current (a download when the device made it).
int vk_exec_to_host(vk_exec *x, int v, reel_tensor *view, GError **error);
// After a run: submits what the run left gathered.
int vk_exec_end(vk_exec *x, GError **error);
// A cpu node made value v: the device's copy, if any, is stale.
void vk_exec_host_made(vk_exec *x, int v);

// What the partition is and what crossed in the last run.
typedef struct vk_exec_stats {
    int device_nodes, cpu_nodes, partitions;
    int64_t bytes_to_device, bytes_to_host; // last run
    const char *cpu_reasons;                 // "Concat x11 (why), ..." (owned by x), "" when none
    int64_t arena_bytes;                     // the arena of the values made on the device
    int recordings;                          // runs recorded so far (a replayed run records nothing)
    int64_t device_bytes;                    // device memory of the plan's own: the arena and the rest
                                             // but the store's weights
} vk_exec_stats;
void vk_exec_get_stats(const vk_exec *x, vk_exec_stats *out);

#endif

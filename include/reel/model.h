// reel — models: ONNX models loaded once and run by sessions.
//
// A model is immutable after loading and may be shared by many sessions (one
// per thread or per pipeline element); a session holds what one inference
// needs (activations, scratch) and is used by one thread at a time.
//
// What does not depend on the input shape is made once per model and
// device and shared by all the model's sessions there, whatever their
// threads: the weights uploaded to a Vulkan device (once per precision),
// its compiled kernels, and the cpu kernels' data derived from weights.
// It is made by the first session on the device and freed when the last
// one is destroyed. A session plans once per input shape and keeps up to
// plan_cache plans (reel_session_stats_of says what was made and kept).
#ifndef REEL_MODEL_H
#define REEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "device.h"
#include "format.h"
#include "tensor.h"
#include "export.h"

typedef struct reel_model reel_model;
typedef struct reel_session reel_session;


// One input or output of a model as declared (dims -1 where symbolic).
typedef struct reel_model_io {
    const char *name;
    reel_dtype dtype;
    int rank;
    int64_t dims[REEL_TENSOR_MAX_RANK];
    const char *dim_names[REEL_TENSOR_MAX_RANK]; // symbolic names, or NULL
} reel_model_io;

// Loads an ONNX file (external data files are looked up beside it), builds
// the IR, infers shapes, runs the graph passes (constant folding, Conv+BN
// folding, activation fusion, dead-node removal). Fails with REEL_EIO (cannot
// read), REEL_EFORMAT (malformed: the message names the node or tensor) or
// REEL_EUNSUPPORTED (the message lists every unsupported node by name and op).
// Thread-safety: safe from any thread.
REEL_API reel_model *reel_model_load(const char *path, GError **error);
// The same from a serialized ONNX model in memory (the caller keeps `data`).
// `name` stands for it in messages (NULL: "(memory)"); a model with external
// data is refused with REEL_EFORMAT, as there is no directory to read it from.
REEL_API reel_model *reel_model_load_data(const void *data, size_t size, const char *name, GError **error);
REEL_API reel_model *reel_model_ref(reel_model *m);
REEL_API void reel_model_unref(reel_model **m);

REEL_API int reel_model_n_inputs(const reel_model *m);
REEL_API int reel_model_n_outputs(const reel_model *m);
REEL_API const reel_model_io *reel_model_input(const reel_model *m, int i);
REEL_API const reel_model_io *reel_model_output(const reel_model *m, int i);

// What `reel model info` prints.
typedef struct reel_model_summary {
    int opset;
    const char *producer;
    int nodes;                    // after passes
    int64_t parameters;           // elements of all constant tensors
    int64_t flops;                // multiply-adds x2 of Conv/Gemm/MatMul at the declared static shapes; -1 unknown
    GHashTable *op_histogram;     // op name -> GINT_TO_POINTER(count); owned by the model
    int qdq_folded, qdq_into;     // QuantizeLinear/DequantizeLinear chains folded: nodes replaced, integer nodes made
} reel_model_summary;
REEL_API void reel_model_summarize(const reel_model *m, reel_model_summary *out);

// How a session's float32 tensors are kept on a device.
typedef enum reel_precision {
    REEL_PRECISION_FP32, // as the model says
    // float16 in device memory (half the bytes) with float32 sums inside the
    // kernels; what crosses to the host and the outputs stay float32. Needs a
    // GPU with 16-bit float support (reel_device_info.fp16).
    REEL_PRECISION_FP16,
} reel_precision;

typedef struct reel_session_params {
    int threads;                  // 0: one per core
    // Where the model runs: NULL or the cpu device, all on the cpu; a Vulkan
    // device, every node with a kernel there (the rest on the cpu, data
    // crossing only where the two meet; reel_session_placement says which).
    struct reel_device *device;
    bool strict;                  // a node that would fall back to the cpu is an error
    uint64_t device_memory_limit; // bytes of the model's tensors on the device; 0: none (the rest runs on the cpu)
    reel_precision precision;     // REEL_PRECISION_FP16 needs a Vulkan device with fp16; nodes without a
                                  // float16 kernel run on the cpu (in float32)
    // Plans kept, one per input shape (with its activation arena, device
    // memory and recorded submissions); a new shape beyond them frees the
    // least recently run one, and that shape is planned again if it comes
    // back. 0: REEL_SESSION_PLAN_CACHE.
    int plan_cache;
} reel_session_params;
#define REEL_SESSION_PLAN_CACHE 16
#define reel_session_params(...) (&(reel_session_params){ __VA_ARGS__ })

// Fails with REEL_EINVAL (no model) or REEL_EUNSUPPORTED (precision=fp16 on
// the cpu or on a device without 16-bit floats: the message names it).
REEL_API reel_session *reel_session_new(reel_model *m, const reel_session_params *params, GError **error);
REEL_API void reel_session_destroy(reel_session **s);

// Runs one inference. inputs: one tensor per model input, in model order, in
// host memory or in the memory of the session's device (used there when only
// device nodes read it); the caller keeps them. outputs: filled with new host
// tensors the caller frees (reel_tensor_free). A new input shape plans memory
// once, then the plan is reused. Returns 0, or REEL_EINVAL (wrong dtype or
// shape, or another device's memory: the message names the input) / a
// kernel's error.
// Thread-safety: one thread at a time per session.
REEL_API int reel_session_run(reel_session *s, reel_tensor *const *inputs, reel_tensor **outputs, GError **error);

// Bytes of the activation arena of the last plan (the peak memory use).
REEL_API int64_t reel_session_arena_bytes(const reel_session *s);

// Where the last run's plan put the nodes and what crossed between host and
// device in that run (all zero for a cpu session).
typedef struct reel_session_placement {
    int device_nodes, cpu_nodes, partitions;
    int64_t bytes_to_device, bytes_to_host;
    const char *cpu_reasons; // "Concat x11 (why), ..." ("" when none), valid until the next run
    int64_t device_arena_bytes; // device memory of the tensors made there, shared by lifetimes
    int recordings;             // runs recorded for resubmission (one per set of bound inputs)
} reel_session_placement;
REEL_API void reel_session_placement_of(const reel_session *s, reel_session_placement *out);

// Time of one node in the last run (nodes folded while planning are absent).
typedef struct reel_session_node_time {
    const char *node, *op;       // point into the model
    double seconds;
} reel_session_node_time;

// Turns per-node timing on or off (off by default; `reel model bench --profile`).
REEL_API void reel_session_set_profile(reel_session *s, bool on);
// The per-node times of the last run with profiling on; count in *n. Valid
// until the next run.
REEL_API const reel_session_node_time *reel_session_node_times(const reel_session *s, int *n);
// Plans kept now (one per concrete input shape, at most plan_cache).
REEL_API int reel_session_n_plans(const reel_session *s);

// What a session planned and what its model's sessions on its device share.
typedef struct reel_session_stats {
    int plans;                     // plans kept now
    int plan_cache;                // the most kept (reel_session_params.plan_cache)
    int64_t plans_built;           // by this session, those built again after eviction included
    int64_t plans_evicted;         // freed as the least recently run beyond plan_cache
    int64_t arena_bytes_held;      // host memory of the activation arena now: at most the largest kept
                                   // plan's reel_session_arena_bytes (it shrinks when that one is evicted)
    int64_t device_bytes;          // device memory the kept plans hold of their own (arenas, inputs,
                                   // values crossing from the cpu; not the shared weights)
    // Shared with every session of the model on the device, counted since
    // the first of them (restarting when the last one goes): each weight is
    // uploaded once per precision and each kernel compiled once.
    int64_t weights_uploaded;      // weight tensors uploaded to the device (0 on the cpu)
    int64_t weight_bytes_uploaded; // their bytes in device memory
    int kernels_compiled;          // Vulkan kernels (pipelines) made
    int kernel_states;             // cpu kernels' data derived from weights (Winograd's), each made once
} reel_session_stats;
// Thread-safety: the session's thread (the shared counts may move meanwhile
// when other sessions run).
REEL_API void reel_session_stats_of(const reel_session *s, reel_session_stats *out);

// What the cpu kernels run on, for people reading a benchmark: "OpenBLAS
// SkylakeX kernels", and when reel chose other kernels than OpenBLAS picked
// itself, which ("; OpenBLAS chose Prescott kernels; switched to SkylakeX").
// A static string. Thread-safety: any thread.
REEL_API const char *reel_model_cpu_info(void);

// The OpenBLAS core type whose kernels use this CPU's AVX-512 or AVX2
// ("SkylakeX", "Haswell"), or NULL. OpenBLAS reads OPENBLAS_CORETYPE when it
// loads (at the first inference on the cpu); a program whose OpenBLAS does
// not know its CPU (Debian's 0.3.21 on recent ones falls back to SSE3
// kernels) sets it to this first. reel never sets it itself.
REEL_API const char *reel_model_blas_core_for_cpu(void);

#endif

// Operators: for each ONNX op reel supports, shape inference and a CPU kernel.
// One file per family under models/cpu/ registers its ops in a const table.
#ifndef REEL_MODELS_OP_H
#define REEL_MODELS_OP_H

#include "models/ir.h"
#include "reel/error.h"

// What a CPU kernel gets besides its tensors.
typedef struct reel_exec_ctx {
    int opset;                   // the graph's default-domain opset (forms that changed between opsets)
    int threads;                 // threads the kernel may use
    // reel's workers, `threads` in all (NULL: run on the calling thread); the
    // session keeps OpenBLAS single-threaded, so kernels split their work
    // themselves with nn_parallel (models/cpu/nn.h).
    struct reel_workers *workers;
    void *scratch;               // per-session scratch memory (im2col and the like)
    size_t scratch_size;
    // Data a kernel derives from its constant inputs (weights in another
    // layout), kept from run to run: *state starts NULL, a kernel may set it
    // to g_malloc'd memory. It is kept per model and device and shared by
    // every plan (input shape) and session there (models/model_internal.h),
    // so it may depend only on the node and the inputs whose bit is set in
    // const_inputs, never on the input shapes; g_free'd with that store.
    void **state;
    uint32_t const_inputs;       // bit k: input k is a constant of the model (the same in every plan and run)
} reel_exec_ctx;

typedef struct reel_op {
    const char *name;            // ONNX op_type
    // Checks the node's attributes and inputs and sets each output value's
    // dtype, rank and dims (REEL_DIM_UNKNOWN where they depend on data or on
    // unknown input dims; then the executor infers again with concrete input
    // shapes). Inputs may be constants (value->constant), which ops such as
    // Reshape, Slice, Expand, ConstantOfShape read. Fails with REEL_EINVAL or
    // REEL_EUNSUPPORTED and a message naming the node and what is wrong.
    int (*infer)(reel_ir_graph *g, reel_ir_node *n, GError **error);
    // Scratch bytes the kernel needs for these concrete input/output shapes
    // (may be NULL: none).
    size_t (*scratch)(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out);
    // Computes the outputs (allocated by the executor with the inferred
    // shapes) from the inputs. NULL entries stand for omitted optional
    // inputs/outputs. Returns 0 or a REEL_E* code.
    int (*run)(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx);
} reel_op;

// Helpers for `infer`: a node's input or output value (NULL when omitted or
// beyond the node's count), and a failure naming the node: sets *error to
// "node 'NAME' (OP): MESSAGE" and returns code.
static inline reel_ir_value *reel_op_input(const reel_ir_graph *g, const reel_ir_node *n, int i)
{
    return i < n->n_inputs ? reel_ir_value_at(g, n->inputs[i]) : NULL;
}
static inline reel_ir_value *reel_op_output(const reel_ir_graph *g, const reel_ir_node *n, int i)
{
    return i < n->n_outputs ? reel_ir_value_at(g, n->outputs[i]) : NULL;
}
int reel_op_fail(GError **error, const reel_ir_node *n, int code, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

// The op called `name` (default ONNX domain), or NULL.
const reel_op *reel_op_find(const char *name);

// Every registered op's table, NULL-terminated (models/cpu/ops.c).
extern const reel_op *const *const reel_op_tables[];

#endif

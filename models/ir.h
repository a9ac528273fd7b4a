// The model IR: values (tensors, constant or computed), nodes (ONNX ops with
// attributes) and the graph that holds them. Built by the ONNX loader,
// rewritten by passes, executed per backend. Only models/ includes this.
#ifndef REEL_MODELS_IR_H
#define REEL_MODELS_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "reel/format.h"
#include "reel/tensor.h"

// A dimension whose size is not known until run time (a symbolic dim such as
// "batch", or one inference could not fix).
#define REEL_DIM_UNKNOWN (-1)

// The values of an int64 or int32 tensor of rank 0 or 1 with at most max
// elements (shapes, axes, Slice's starts...) into out; -1 otherwise.
int reel_tensor_ints(const reel_tensor *t, int64_t *out, int max);

typedef struct reel_ir_value {
    char *name;
    reel_dtype dtype;            // REEL_DTYPE_NONE until inferred
    int rank;                    // -1 until inferred
    int64_t dims[REEL_TENSOR_MAX_RANK];     // REEL_DIM_UNKNOWN where not static
    char *dim_names[REEL_TENSOR_MAX_RANK];  // symbolic names from the model, or NULL
    reel_tensor *constant;       // initializer or folded constant, else NULL
    int producer;                // index of the node that writes it, -1 for inputs/constants
} reel_ir_value;

typedef enum reel_attr_type {
    REEL_ATTR_INT,
    REEL_ATTR_FLOAT,
    REEL_ATTR_STRING,
    REEL_ATTR_INTS,
    REEL_ATTR_FLOATS,
    REEL_ATTR_TENSOR,
    REEL_ATTR_STRINGS,
    REEL_ATTR_TYPE_COUNT,
} reel_attr_type;

typedef struct reel_ir_attr {
    char *name;
    reel_attr_type type;
    int64_t i;
    float f;
    char *s;
    int64_t *ints;
    float *floats;
    char **strings;              // STRINGS: n strings (NULL-terminated too)
    int n;                       // elements of ints/floats/strings
    reel_tensor *t;
} reel_ir_attr;

typedef struct reel_ir_node {
    char *name;                  // never NULL: "<op>_<index>" when the model gave none
    char *op;                    // ONNX op_type, e.g. "Conv"
    // The op's implementation (models/op.h), resolved once when the model
    // is loaded (after the passes); NULL before that. Executors use it
    // rather than looking the op up by name per node and run.
    const struct reel_op *impl;
    int *inputs;                 // value indices; -1 for an omitted optional input
    int n_inputs;
    int *outputs;                // value indices; -1 for an omitted optional output
    int n_outputs;
    reel_ir_attr *attrs;
    int n_attrs;
    // Conv only: a fourth input (inputs[3], n_inputs == 4) is a residual a
    // pass folded in from a following Add: same shape as the output, added
    // after bias and before the fused activation, y = act(conv(x) + b + r).
    // inputs[2] is -1 when such a Conv has no bias.
    // Fused activation a pass folded into this node (Conv): "Relu", "Clip",
    // "Sigmoid", "SiLU", "HardSigmoid", "HardSwish", or NULL; with its
    // parameters (Clip min/max, HardSigmoid alpha/beta).
    const char *fused;
    float fused_a, fused_b;
    bool dead;                   // removed by a pass; skipped everywhere
} reel_ir_node;

typedef struct reel_ir_graph {
    GPtrArray *values;           // reel_ir_value *
    GPtrArray *nodes;            // reel_ir_node *, in topological order
    GArray *inputs;              // int value indices (graph inputs that are not initializers)
    GArray *outputs;             // int value indices
    int opset;                   // of the default ("" / "ai.onnx") domain
    char *producer;              // producer_name, for `reel model info`
    // QDQ folding (models/qdq.c): while set, constant folding leaves
    // DequantizeLinear nodes of constants alone so the pass can see them.
    bool keep_const_dq;
    int qdq_folded, qdq_into;    // nodes the pass replaced, and the integer nodes they became
} reel_ir_graph;

reel_ir_graph *reel_ir_graph_new(void);
void reel_ir_graph_free(reel_ir_graph **g);

// Adds a value named `name` (unique) and returns its index.
int reel_ir_add_value(reel_ir_graph *g, const char *name);
int reel_ir_find_value(const reel_ir_graph *g, const char *name); // -1 if absent
static inline reel_ir_value *reel_ir_value_at(const reel_ir_graph *g, int i)
{
    return i < 0 ? NULL : g->values->pdata[i];
}
static inline reel_ir_node *reel_ir_node_at(const reel_ir_graph *g, int i)
{
    return g->nodes->pdata[i];
}

// Makes v a constant holding t (owned from now on; any previous constant is
// freed) with t's type and shape, produced by no node.
void reel_ir_value_set_constant(reel_ir_value *v, reel_tensor *t);

// Attribute lookups; the default when absent.
const reel_ir_attr *reel_ir_attr_find(const reel_ir_node *n, const char *name);
int64_t reel_ir_attr_int(const reel_ir_node *n, const char *name, int64_t def);
float reel_ir_attr_float(const reel_ir_node *n, const char *name, float def);
const char *reel_ir_attr_string(const reel_ir_node *n, const char *name, const char *def);
// The ints of an INTS attribute (count in *n), or NULL (*n = 0) when absent.
const int64_t *reel_ir_attr_ints(const reel_ir_node *n, const char *name, int *count);
// The strings of a STRINGS attribute (count in *n), or NULL (*n = 0) when absent.
char *const *reel_ir_attr_strings(const reel_ir_node *n, const char *name, int *count);


#endif

// The harness the cpu op tests share (test_normalize, test_logic, ...): one
// ONNX node in a one-node graph on constant inputs, inferred and run by its
// cpu op on the calling thread and, where the test asks, again over two
// workers with the results compared; the node's attributes; small tensors.
#ifndef REEL_TESTS_OP_HARNESS_H
#define REEL_TESTS_OP_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/op.h"

#define OP_MAX_IO 9
#define OP_MAX_ATTRS 10

// One node: its op, attributes and outputs.
typedef struct op_call {
    const char *op;
    int opset;                         // 0: op_harness_opts' opset
    int n_out;                         // 0: one output
    reel_ir_attr attrs[OP_MAX_ATTRS];
    int n_attrs;
    const bool *omit;                  // omit[k]: output k left out (NULL: none)
    // An activation a pass fused into the node (ir.h: reel_ir_node.fused),
    // with its parameters.
    const char *fused;
    float fused_a, fused_b;
    // Every input a constant of the model (reel_exec_ctx.const_inputs), and
    // one kernel state for the run on one thread and the run on two workers
    // after it, as a session shares it (false: no state, nothing constant).
    bool keep_state;
} op_call;

// How a test runs its nodes, for the whole program.
typedef struct op_harness_opts {
    int opset;          // the opset of a node that names none
    bool two_workers;   // every run again over two workers, to the same code and results
    double workers_tol; // 0: the same bytes; else float32 elements within this, relative
    bool keep_inputs;   // inputs kept to the end of the run (references read them after)
    const char *node;   // the node's name (NULL: "n")
} op_harness_opts;

// The harness set up as opts says (the workers) before the tests, and torn
// down after them (the workers and the kept inputs freed).
void op_harness_begin(const op_harness_opts *opts);
void op_harness_end(void);
// main's whole run: the group of tests between op_harness_begin and
// op_harness_end; cmocka's code.
int op_harness_run_group(const char *name, const struct CMUnitTest *tests, size_t n_tests,
                         const op_harness_opts *opts);
#define op_run_tests(tests, ...)                                                                          \
    op_harness_run_group(#tests, tests, sizeof(tests) / sizeof((tests)[0]), &(op_harness_opts){ __VA_ARGS__ })

void op_attr_int(op_call *c, const char *name, int64_t v);
void op_attr_float(op_call *c, const char *name, float v);
void op_attr_str(op_call *c, const char *name, const char *v);
void op_attr_ints(op_call *c, const char *name, const int64_t *v, int n);
void op_attr_floats(op_call *c, const char *name, const float *v, int n);
void op_attr_strs(op_call *c, const char *name, char **v, int n);

// Infers and runs c's node on the n_in inputs (NULL: omitted), which the
// call takes over (with keep_inputs, the same inputs may go to several
// calls), into out[0..n_out) (NULL where omitted or on failure).
// Returns infer's or run's code; infer's message is op_message().
int op_run(const op_call *c, int n_in, reel_tensor **in, reel_tensor **out);
// The latest op_run's infer message ("" when infer succeeded).
const char *op_message(void);
// The latest op_run's run time in ms on 1 thread or on 2 workers.
double op_run_ms(int threads);

// A tensor holding a copy of data (NULL: zeros).
reel_tensor *op_tensor(reel_dtype dt, int rank, const int64_t *shape, const void *data);
// A float32 tensor of values drawn from [lo, hi] by rand() seeded with seed.
reel_tensor *op_random(int rank, const int64_t *shape, unsigned seed, float lo, float hi);

#endif

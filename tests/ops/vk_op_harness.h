// The harness the Vulkan op tests share (vkt_: Vulkan test): vulkan:0 and
// its vk_ctx as the cmocka group fixture, seeded tensors, one ONNX node in a
// one-node graph inferred and run by the cpu op and by its vk_op with the
// outputs compared, and the session helpers of the model tests.
#ifndef REEL_TESTS_VK_OP_HARNESS_H
#define REEL_TESTS_VK_OP_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "models/op.h"
#include "models/session.h"
#include "models/vulkan/vk_ops.h"
#include "reel/reel.h"

#define VKT_MAX_IN 8
#define VKT_MAX_OUT 8
#define VKT_MAX_ATTRS 10

// ---- fixture ------------------------------------------------------------------

// vulkan:0 and the context the vk_ops run in, set up for each group.
extern reel_device *vkt_dev;
extern vk_ctx vkt_ctx;

// main's whole run: the group of tests with vulkan:0 and vkt_ctx (float16
// storage with f16) as its fixture, nodes whose opset is 0 at `opset`.
// Returns main's exit code: 77 without the device (or its 16-bit float
// support, with f16), 1 where a test failed or the validation layer spoke
// (from any call, teardown included), else 0.
int vkt_run_group(const struct CMUnitTest *tests, size_t n_tests, int opset, bool f16);

// Device memory of vulkan:0 (at least 16 bytes); fails the test if refused.
reel_mem *vkt_device_mem(size_t size);
// t's values in new device memory, stored as vkt_ctx stores them (float32
// as float16 in an fp16 context).
reel_mem *vkt_upload(const reel_tensor *t);

// ---- tensors ------------------------------------------------------------------

// Float32 values in [lo, hi] from seed.
reel_tensor *vkt_frand(int rank, const int64_t *shape, unsigned seed, float lo, float hi);
// Element i of t set to v, converted to t's dtype (bool: v != 0).
void vkt_set_int(reel_tensor *t, int64_t i, int64_t v);
// A vector of n integers of dtype dt.
reel_tensor *vkt_ints(reel_dtype dt, int n, const int64_t *v);
reel_tensor *vkt_scalar(float v);

// ---- one node -----------------------------------------------------------------

typedef struct vkt_call {
    const char *op;
    reel_ir_attr attrs[VKT_MAX_ATTRS];
    int n_attrs;
    int opset;          // 0: vkt_run_group's
    unsigned consts;    // bit i: input i is a constant (its data visible to supports)
    unsigned hide;      // bit i: constant for infer, but supports sees no data (made at run time)
    int n_out;          // 0: 1
    float tol;          // float32 outputs: relative, absolute below 1; 0: 1e-5 (fp16: see vkt_compare)
    bool exact;         // float32 outputs too compared bit for bit
    const char *fused;  // an activation fused into the node, with its parameters
    float fused_a, fused_b;
    // Ops the cpu does not have: the cpu op whose shape inference stands in,
    // and the reference that computes the output.
    const char *infer_as;
    void (*reference)(const char *op, reel_tensor **in, reel_tensor *out);
} vkt_call;

void vkt_attr_int(vkt_call *c, const char *name, int64_t v);
void vkt_attr_ints(vkt_call *c, const char *name, int n, const int64_t *v);
void vkt_attr_float(vkt_call *c, const char *name, float v);
void vkt_attr_floats(vkt_call *c, const char *name, int n, const float *v);
void vkt_attr_string(vkt_call *c, const char *name, const char *v);
void vkt_attr_tensor(vkt_call *c, const char *name, reel_tensor *t);

// c's node over the given graph values.
reel_ir_node vkt_node_of(const vkt_call *c, int *inputs, int n_in, int *outputs, int n_out);

// One node in a graph of its own, inferred by the cpu op, with its inputs
// and outputs as the executor hands them to the vk_op.
typedef struct vkt_case {
    const vkt_call *c;
    const char *what;
    const reel_op *op;
    const vk_op *vop;
    reel_ir_graph *g;
    reel_ir_node n;
    int inputs[VKT_MAX_IN], outputs[VKT_MAX_OUT];
    reel_tensor **in;                                   // owned: freed by vkt_case_clear
    reel_tensor iview[VKT_MAX_IN], oview[VKT_MAX_OUT];  // no data but for constants
    reel_tensor *iv[VKT_MAX_IN], *ov[VKT_MAX_OUT];      // iview/oview, NULL for omitted inputs
    reel_tensor *want[VKT_MAX_OUT], *got[VKT_MAX_OUT];  // the cpu's outputs, the device's
} vkt_case;

// Takes the inputs (NULL: omitted; float32 ones rounded to float16 in an
// fp16 context) into a graph and infers it; fails the test where infer does.
void vkt_case_init(vkt_case *k, const vkt_call *c, int n_in, reel_tensor **in, const char *what);
// The vk_op's supports() (supports_f16() in an fp16 context).
bool vkt_case_supported(const vkt_case *k);
// The cpu op (or c->reference) into k->want.
void vkt_case_run_cpu(vkt_case *k);
// The vk_op on device copies of the inputs into k->got (poisoned first, so
// an element the kernel does not write shows); with tiles, Conv's tiled
// kernel in those tiles.
void vkt_case_run_device(vkt_case *k, const vk_conv_tiles *tiles);
// Each output of the device against the cpu's (vkt_compare).
void vkt_case_compare(vkt_case *k);
void vkt_case_clear(vkt_case *k);

// Output k, got from vulkan and want from the cpu: float32 within c->tol
// (fp16 context: within 2e-3 relative plus 1e-4), NaN matching NaN; bit for
// bit with c->exact and for other dtypes (fp16 context: want rounded to
// float16 first).
void vkt_compare(const vkt_call *c, const reel_tensor *got, reel_tensor *want, int k, const char *what);

typedef enum vkt_expect { VKT_SUPPORTED, VKT_REFUSED, VKT_EITHER } vkt_expect;

// One node on the cpu and on vulkan:0, outputs compared: supports() must
// answer as `expect` says, and the node runs only where it says yes. Takes
// the inputs. Returns whether it ran.
bool vkt_run_case(const vkt_call *c, int n_in, reel_tensor **in, vkt_expect expect, const char *what);
void vkt_check(const vkt_call *c, int n_in, reel_tensor **in, const char *what);
void vkt_refuse(const vkt_call *c, int n_in, reel_tensor **in, const char *what);

// ---- sessions -----------------------------------------------------------------

// The model `name` of REEL_TEST_MODELS (make_models.py), or the test skipped.
char *vkt_test_model(const char *name);
// The model dir/file of the fetched model cache, or the test skipped.
char *vkt_cached_model(const char *dir, const char *file);
reel_model *vkt_load(const char *path);
reel_session *vkt_session_new(reel_model *m, const reel_session_params *p);
// A float32 tensor in host memory, values in [-1, 1) from seed.
reel_tensor *vkt_host_tensor(int rank, const int64_t *shape, unsigned seed);
// The same tensor in device memory m (host's contents uploaded there).
reel_tensor *vkt_device_tensor(reel_mem *m, const reel_tensor *host);
void vkt_session_run(reel_session *s, reel_tensor **in, reel_tensor **out);
void vkt_free_all(reel_tensor **b, int n);
// got within tol of want's largest magnitude, output by output; returns the
// worst error of all (relative to each one's largest magnitude).
double vkt_assert_close(reel_tensor *const *got, reel_tensor *const *want, int n, double tol);
// One output model: in_cpu run on cpu, in_gpu on gpu, within tol (as
// vkt_assert_close).
void vkt_compare_runs(reel_session *cpu, reel_tensor *in_cpu, reel_session *gpu, reel_tensor *in_gpu, double tol);
reel_session_placement vkt_placement(const reel_session *s);

// A model of make_models.py (or the test skipped) with a one-thread session
// on the cpu and one on vulkan:0 at `precision`.
typedef struct vkt_pair {
    char *path;
    reel_model *m;
    reel_session *cpu, *gpu;
} vkt_pair;

vkt_pair vkt_pair_open(const char *name, reel_precision precision);
void vkt_pair_close(vkt_pair *p);

#endif

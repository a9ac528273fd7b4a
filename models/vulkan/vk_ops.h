// Model ops on a Vulkan device: for each ONNX op with a GPU kernel, whether
// it can run a node at concrete shapes, and how (one or more dispatches of
// the model kernels in gpu/shaders/nn_*.comp). The executor
// (models/vulkan/exec.c) places nodes, keeps tensors in device memory and
// calls these. Only models/ includes this.
#ifndef REEL_MODELS_VULKAN_VK_OPS_H
#define REEL_MODELS_VULKAN_VK_OPS_H

#include "models/op.h"
#include "reel/device.h"

// A tensor on the device: its memory (the whole of it, from offset 0) and
// its shape. For constant inputs t->data also holds the values on the host
// (ops read attributes-as-inputs such as Slice's starts or Reshape's shape
// there); for others t->data is NULL.
typedef struct vk_tensor {
    reel_mem *mem;
    const reel_tensor *t;
} vk_tensor;

struct vk_store;

// What ops dispatch with: the device, its kernels (made on first use and
// kept), and a 16-byte buffer to bind where an optional input is absent
// (kernels have a fixed number of bindings). A plan's context takes its
// kernels and that buffer from its model's store on the device
// (models/vulkan/store.h), so that each kernel is compiled once for all the
// model's plans and sessions there; a context of its own makes them itself.
//
// In an fp16 context (precision=fp16) every float32 tensor on the device is
// stored as float16: ops dispatch the float kernels' _f16 forms
// (vk_ctx_float_kernel) and size raw words by vk_stored_bytes(). The
// tensors' dtypes (vk_tensor.t) stay float32, and constant data on the host
// too.
typedef struct vk_ctx {
    reel_device *dev;
    // key ("name", or "name/local/c1,..." with constants) -> reel_kernel *:
    // those this context used; owned, or borrowed from store. Looked up
    // here first, without the store's lock.
    GHashTable *kernels;
    struct vk_store *store; // borrowed, or NULL
    reel_mem *dummy;
    bool f16;            // float32 tensors are float16 on the device
    reel_batch *batch;   // when set, dispatches gather here for one submission
    bool profile;        // time each dispatch on the device (one submission each)
    int64_t profile_ns;  // device time of the dispatches since it was last zeroed
} vk_ctx;

// Sets up ctx on dev (a reference; no batch): the kernel table and the
// zeroed dummy buffer. 0, or an error code with *error set. vk_ctx_clear
// undoes it (and frees a batch the caller set).
int vk_ctx_init(vk_ctx *ctx, reel_device *dev, GError **error);
// The same on store's device with store's kernels and dummy buffer (store
// must outlive ctx). Never fails.
void vk_ctx_init_shared(vk_ctx *ctx, struct vk_store *store);
void vk_ctx_clear(vk_ctx *ctx);

// The kernel called `name` (gpu/kernel.c's table), created once per ctx
// (per store for a shared ctx); NULL with *error set when the device
// refuses it.
reel_kernel *vk_ctx_kernel(vk_ctx *ctx, const char *name, GError **error);
// The same for a kernel that takes specialization constants: one per
// (name, local_size, constants), created once per ctx (or store).
// local_size 0: the kernel's default.
reel_kernel *vk_ctx_kernel_spec(vk_ctx *ctx, const char *name, uint32_t local_size, const uint32_t *constants,
                               uint32_t n_constants, GError **error);

// The kernel to run on float tensors: `name`, or its float16-storage form
// "name_f16" in an fp16 context (a string that lives as long as the program).
const char *vk_ctx_float_kernel(const vk_ctx *ctx, const char *name);

// The bytes of a tensor of t's dtype and shape on the device: half its host
// bytes for a float32 in an fp16 context (f16), the same otherwise.
size_t vk_stored_bytes(bool f16, const reel_tensor *t);

// float32 <-> float16 (IEEE binary16) on the host, rounding to nearest even
// (overflow to +-inf, NaN kept a NaN), for values crossing to and from an
// fp16 device.
void vk_f32_to_f16(const float *src, uint16_t *dst, size_t n);
void vk_f16_to_f32(const uint16_t *src, float *dst, size_t n);

// Dispatches `kernel` over `invocations` threads (one dimension; groups
// computed from the kernel's local size; over 65535 groups spread into y).
int vk_ctx_dispatch(vk_ctx *ctx, reel_kernel *kernel, reel_mem *const *buffers, int n_buffers, const void *push,
                    size_t push_size, uint64_t invocations);

typedef struct vk_op {
    const char *name; // ONNX op_type
    // Whether this node, at these concrete input and output shapes (and
    // constant values), runs on the GPU; false sends it to the cpu. Must not
    // fail for any input the CPU op accepts.
    bool (*supports)(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out);
    // Records the node's work on ctx->dev (inputs NULL where omitted).
    // Returns 0 or a REEL_E* code.
    int (*run)(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out);
    // The same question for an fp16 context, asked of nodes that touch a
    // float32 tensor (stored as float16 there); NULL: the op has no float16
    // form, and such nodes run on the cpu.
    bool (*supports_f16)(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out);
} vk_op;

// The op table (NULL-terminated), by family; vk_op_find looks one up.
extern const vk_op *const vk_ops_nn[];    // models/vulkan/ops_nn.c: Conv, Gemm, MatMul, pools
extern const vk_op *const vk_ops_basic[]; // models/vulkan/ops_basic.c: elementwise, copies, Softmax
extern const vk_op *const vk_ops_resize[]; // models/vulkan/ops_resize.c: Resize, Upsample, Pad
// models/vulkan/ops_misc.c: Equal, Greater, Less, LessOrEqual, GreaterOrEqual, And, Or, Xor, Not, Where, Cast, Gather, Shape, Constant, ConstantOfShape
extern const vk_op *const vk_ops_misc[];
extern const vk_op *const vk_ops_reduce[]; // models/vulkan/ops_reduce.c: ReduceSum, ReduceMean, ReduceMax
extern const vk_op *const vk_ops_convt[];  // models/vulkan/ops_convt.c: ConvTranspose, BatchNormalization
extern const vk_op *const vk_ops_unary[];  // models/vulkan/ops_unary.c
extern const vk_op *const vk_ops_select[]; // models/vulkan/ops_select.c
extern const vk_op *const vk_ops_norm[];   // models/vulkan/ops_norm.c
extern const vk_op *const vk_ops_index[];  // models/vulkan/ops_index.c
const vk_op *vk_op_find(const char *name);

// count float32 values in src into float16 ones in dst, on the device
// (nn_cast: rounding as the cpu's Cast). 0 or a REEL_E* code.
int vk_convert_f32_to_f16(vk_ctx *ctx, reel_mem *src, reel_mem *dst, int64_t count);

// Conv's tiled kernel (gpu/shaders/nn_conv2d_tiled.comp): TM x TN output
// tiles (channels x pixels), TK-wide slices of the products, RM x RN per
// invocation. Conv picks its own; vk_conv_run_tiled runs a Conv node that
// Conv supports with the tiles given, so tests can compare tilings.
// REEL_EINVAL for tiles the kernel cannot run (TM % RM, TN % RN, too many
// invocations or too much shared memory).
typedef struct vk_conv_tiles {
    uint32_t tm, tn, tk, rm, rn;
} vk_conv_tiles;
int vk_conv_run_tiled(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out,
                      const vk_conv_tiles *tiles);

// Activation codes the nn kernels share with reel_ir_node.fused (see
// nn_activate in models/cpu/blas.c for their meaning).
enum { VK_ACT_NONE, VK_ACT_RELU, VK_ACT_CLIP, VK_ACT_SIGMOID, VK_ACT_SILU, VK_ACT_HARDSIGMOID, VK_ACT_HARDSWISH };
int vk_act_of(const reel_ir_node *n); // -1 for one the kernels do not know

#endif

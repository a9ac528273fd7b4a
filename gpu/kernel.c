// Kernels: the built-in table and the validate-once wrappers around the
// backends' create and dispatch.
#include <string.h>

#include "gpu/backend.h"
#include "gpu/preprocess.h"

// From the build tree: glslc's output for gpu/shaders/NAME.comp.
#define SHADER(name)                                                                               \
    extern const uint32_t reel_spv_##name[];                                                       \
    extern const size_t reel_spv_##name##_size;                                                    \
    void cpu_kernel_##name(void *const *buffers, const void *push, const uint32_t groups[3],      \
                           uint32_t local_size);
SHADER(saxpy)
SHADER(reduce_sum)
SHADER(fill)
SHADER(preprocess)
SHADER(overlay)
#undef SHADER
// Model kernels (gpu/shaders/nn_*.comp): Vulkan only; the cpu runs models
// with models/cpu/ instead.
#define NN_SHADER(name)                                                                            \
    extern const uint32_t reel_spv_##name[];                                                       \
    extern const size_t reel_spv_##name##_size;
NN_SHADER(nn_compare)
NN_SHADER(nn_where)
NN_SHADER(nn_cast)
NN_SHADER(nn_gather)
NN_SHADER(nn_fill)
NN_SHADER(nn_argmax)
NN_SHADER(nn_topk)
NN_SHADER(nn_gather_elements)
// Model kernels over floats, each with a float16-storage form NAME_f16
// (CMakeLists.txt's REEL_SHADERS_F16).
#define NN_SHADER2(name) NN_SHADER(name) NN_SHADER(name##_f16)
NN_SHADER2(nn_conv2d)
NN_SHADER2(nn_conv2d_tiled)
NN_SHADER2(nn_gemm)
NN_SHADER2(nn_pool2d)
NN_SHADER2(nn_copy)
NN_SHADER2(nn_binary)
NN_SHADER2(nn_unary)
NN_SHADER2(nn_softmax)
NN_SHADER2(nn_resize)
NN_SHADER2(nn_pad)
NN_SHADER2(nn_reduce)
NN_SHADER2(nn_convtranspose)
NN_SHADER2(nn_batchnorm)
NN_SHADER2(nn_norm)
#undef NN_SHADER2
#undef NN_SHADER

#define DESC(n, nbuf, w, push, local)                                                                 \
    { .name = #n, .n_buffers = nbuf, .writes = w, .push_size = push, .default_local_size = local,               \
      .spirv = reel_spv_##n, .spirv_size = &reel_spv_##n##_size, .cpu = cpu_kernel_##n }
#define NN_DESC(n, nbuf, w, push, local)                                                              \
    { .name = #n, .n_buffers = nbuf, .writes = w, .push_size = push, .default_local_size = local,               \
      .spirv = reel_spv_##n, .spirv_size = &reel_spv_##n##_size, .cpu = NULL }
// A kernel and its float16-storage form NAME_f16 (precision=fp16), alike
// in everything else.
#define NN_DESC2(n, nbuf, w, push, local) NN_DESC(n, nbuf, w, push, local), NN_DESC(n##_f16, nbuf, w, push, local)
// One that takes specialization constants 1..nconst (its tile sizes, say).
#define NN_DESC_SPEC(n, nbuf, w, push, local, nconst)                                                  \
    { .name = #n, .n_buffers = nbuf, .writes = w, .push_size = push, .default_local_size = local,     \
      .spirv = reel_spv_##n, .spirv_size = &reel_spv_##n##_size, .cpu = NULL, .n_constants = nconst }

const reel_kernel_desc reel_kernel_descs[] = {
    DESC(saxpy, 2, 1u << 1, 8, 64),
    DESC(reduce_sum, 2, 1u << 1, 8, 256),
    DESC(fill, 1, 1u << 0, 8, 64),
    DESC(preprocess, 2, 1u << 1, sizeof(reel_preprocess_push), 64),
    DESC(overlay, 4, 1u << 0, 48, 64),
    // Push sizes: models/vulkan/ops_nn.c's conv_push, gemm_push, pool_push.
    NN_DESC2(nn_conv2d, 5, 1u << 4, 84, 64),
    // Constants TM, TN, TK, RM, RN; local size (TM / RM) * (TN / RN): 16 x 16 for the defaults.
    NN_DESC_SPEC(nn_conv2d_tiled, 5, 1u << 4, 84, 256, 5),
    NN_DESC_SPEC(nn_conv2d_tiled_f16, 5, 1u << 4, 84, 256, 5),
    NN_DESC2(nn_gemm, 4, 1u << 3, 84, 64), // 64: its 8x8 tiles need it
    NN_DESC2(nn_pool2d, 2, 1u << 1, 64, 64),
    // models/vulkan/ops_basic.c's copy_push, binary_push, unary_push, softmax_push.
    NN_DESC2(nn_copy, 2, 1u << 1, 88, 256),
    NN_DESC2(nn_binary, 3, 1u << 2, 88, 256),
    NN_DESC2(nn_unary, 2, 1u << 1, 16, 256),
    NN_DESC2(nn_softmax, 2, 1u << 1, 16, 64),
    // models/vulkan/ops_resize.c's resize_push, pad_push.
    NN_DESC2(nn_resize, 2, 1u << 1, 72, 256),
    NN_DESC2(nn_pad, 2, 1u << 1, 88, 256),
    // models/vulkan/ops_misc.c's compare_push, where_push, cast_push, gather_push, fill_push.
    NN_DESC(nn_compare, 3, 1u << 2, 88, 256),
    NN_DESC(nn_where, 4, 1u << 3, 112, 256),
    NN_DESC(nn_cast, 2, 1u << 1, 16, 256),
    NN_DESC(nn_gather, 3, 1u << 2, 32, 256),
    NN_DESC(nn_fill, 1, 1u << 0, 128, 64),
    // models/vulkan/ops_select.c's arg_push (with a workgroup per output, a power of 2 <= 256).
    NN_DESC(nn_argmax, 2, 1u << 1, 16, 64),
    // models/vulkan/ops_select.c's topk_push.
    NN_DESC(nn_topk, 3, (1u << 1) | (1u << 2), 20, 64),
    // models/vulkan/ops_index.c's gel_push.
    NN_DESC(nn_gather_elements, 3, 1u << 2, 72, 256),
    // models/vulkan/ops_reduce.c's reduce_push (one workgroup per output; local size a power of 2 <= 256).
    NN_DESC2(nn_reduce, 2, 1u << 1, 120, 64),
    // models/vulkan/ops_convt.c's convt_push, bn_push.
    NN_DESC2(nn_convtranspose, 4, 1u << 3, 108, 64),
    NN_DESC2(nn_batchnorm, 6, 1u << 5, 16, 256),
    // models/vulkan/ops_norm.c's norm_push (a workgroup per row; local size a power of 2 <= 256).
    NN_DESC2(nn_norm, 6, (1u << 3) | (1u << 4) | (1u << 5), 24, 256),
};
const int reel_n_kernel_descs = G_N_ELEMENTS(reel_kernel_descs);

const reel_kernel_desc *reel_kernel_desc_find(const char *name)
{
    for (int i = 0; name && i < reel_n_kernel_descs; i++)
        if (strcmp(name, reel_kernel_descs[i].name) == 0)
            return &reel_kernel_descs[i];
    return NULL;
}

reel_kernel *reel_kernel_create(reel_device *dev, const reel_kernel_params *params, GError **error)
{
    const reel_kernel_desc *desc = params ? reel_kernel_desc_find(params->name) : NULL;
    if (!desc) {
        GString *s = g_string_new(NULL);
        for (int i = 0; i < reel_n_kernel_descs; i++)
            g_string_append_printf(s, "%s%s", i ? ", " : "", reel_kernel_descs[i].name);
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "no kernel '%s'; there are: %s",
                    params && params->name ? params->name : "(null)", s->str);
        g_string_free(s, TRUE);
        return NULL;
    }
    if (dev->info.backend == REEL_BACKEND_CPU && !desc->cpu) {
        // Model kernels: the cpu runs models with models/cpu/ instead.
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "kernel %s has no cpu version", desc->name);
        return NULL;
    }
    if (params->n_constants > (uint32_t)desc->n_constants || params->n_constants > REEL_KERNEL_MAX_CONSTANTS ||
        (params->n_constants && !params->constants)) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "kernel %s takes %d specialization constants, not %u",
                    desc->name, desc->n_constants, params->n_constants);
        return NULL;
    }
    uint32_t local = params->local_size ? params->local_size : desc->default_local_size;
    if (local > dev->info.max_workgroup_invocations) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "kernel %s: local_size %u exceeds %s's limit of %u",
                    desc->name, local, dev->info.name, dev->info.max_workgroup_invocations);
        return NULL;
    }
    reel_kernel *k = g_new0(reel_kernel, 1);
    k->dev = reel_device_ref(dev);
    k->desc = desc;
    k->local_size = local;
    k->n_constants = params->n_constants;
    if (params->n_constants)
        memcpy(k->constants, params->constants, params->n_constants * sizeof *params->constants);
    if (dev->fns->kernel_create(k, error) < 0) {
        reel_device_unref(&k->dev);
        g_free(k);
        return NULL;
    }
    return k;
}

void reel_kernel_destroy(reel_kernel **pk)
{
    reel_kernel *k = *pk;
    *pk = NULL;
    if (!k)
        return;
    uint64_t last = atomic_load(&k->last);
    if (last)
        reel_device_wait(k->dev, last);
    k->dev->fns->kernel_destroy(k);
    reel_device_unref(&k->dev);
    g_free(k);
}

uint32_t reel_kernel_local_size(const reel_kernel *k)
{
    return k->local_size;
}

// Checks a dispatch's arguments and fills in *q with groups of 0 made 1.
int reel_kernel_check_(reel_kernel *k, const reel_dispatch_params *p, reel_dispatch_params *q)
{
    if (!p || p->push_size != k->desc->push_size || (p->push_size && !p->push))
        return REEL_EINVAL;
    for (int i = 0; i < REEL_KERNEL_MAX_BUFFERS; i++) {
        reel_mem *m = p->buffers[i];
        if ((i < k->desc->n_buffers) != (m != NULL))
            return REEL_EINVAL;
        if (m && (m->dev != k->dev || m->size > k->dev->info.max_storage_buffer_range))
            return REEL_EINVAL;
    }
    *q = *p;
    for (int i = 0; i < 3; i++)
        q->groups[i] = q->groups[i] ? q->groups[i] : 1;
    return 0;
}

int reel_kernel_dispatch(reel_kernel *k, const reel_dispatch_params *p, uint64_t *point)
{
    reel_dispatch_params q;
    if (reel_kernel_check_(k, p, &q))
        return REEL_EINVAL;
    uint64_t pt = 0;
    int err = k->dev->fns->dispatch(k, &q, &pt);
    if (err)
        return err;
    atomic_store(&k->last, pt);
    atomic_fetch_add(&k->dev->stats.dispatches, 1);
    if (point)
        *point = pt;
    return 0;
}

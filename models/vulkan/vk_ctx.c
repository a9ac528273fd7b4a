// The Vulkan ops' shared context: kernels made once (their float16 forms in
// an fp16 context; once per model and device with a store), dispatch
// sizing, float16 conversions on the host, the op table and activation
// codes (models/vulkan/vk_ops.h).
#include <string.h>

#include "models/vulkan/store.h"
#include "models/vulkan/vk_ops.h"

static void kernel_destroy(gpointer k)
{
    reel_kernel *kernel = k;
    reel_kernel_destroy(&kernel);
}

int vk_ctx_init(vk_ctx *ctx, reel_device *dev, GError **error)
{
    *ctx = (vk_ctx){ .dev = reel_device_ref(dev) };
    ctx->kernels = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, kernel_destroy);
    ctx->dummy = reel_mem_new(dev, reel_mem_params(.size = 16, .domain = REEL_MEM_DEVICE), error);
    if (!ctx->dummy)
        return REEL_ENOMEM_DEVICE;
    static const float zero[4];
    int rc = reel_mem_upload(ctx->dummy, 0, zero, sizeof zero, NULL);
    if (rc < 0)
        g_set_error(error, REEL_ERROR, rc, "%s: %s", reel_device_info_of(dev)->spec, reel_strerror(rc));
    return rc;
}

void vk_ctx_init_shared(vk_ctx *ctx, vk_store *store)
{
    *ctx = (vk_ctx){ .dev = reel_device_ref(vk_store_device(store)), .store = store,
                     .dummy = reel_mem_ref(vk_store_dummy(store)) };
    ctx->kernels = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

void vk_ctx_clear(vk_ctx *ctx)
{
    reel_batch_free(&ctx->batch);
    reel_mem_unref(&ctx->dummy);
    if (ctx->kernels)
        g_hash_table_destroy(ctx->kernels);
    ctx->kernels = NULL;
    ctx->store = NULL;
    reel_device_unref(&ctx->dev);
}

// The kernel `key` names, made from params on a miss (by the store when
// ctx has one) and remembered here.
static reel_kernel *kernel_for(vk_ctx *ctx, const char *key, const reel_kernel_params *params, GError **error)
{
    reel_kernel *k = g_hash_table_lookup(ctx->kernels, key);
    if (k)
        return k;
    k = ctx->store ? vk_store_kernel(ctx->store, key, params, error) : reel_kernel_create(ctx->dev, params, error);
    if (k)
        g_hash_table_insert(ctx->kernels, g_strdup(key), k);
    return k;
}

reel_kernel *vk_ctx_kernel(vk_ctx *ctx, const char *name, GError **error)
{
    return kernel_for(ctx, name, reel_kernel_params(.name = name), error);
}

reel_kernel *vk_ctx_kernel_spec(vk_ctx *ctx, const char *name, uint32_t local_size, const uint32_t *constants,
                               uint32_t n_constants, GError **error)
{
    // "name/local/c1,c2,...": never a plain name, which has no '/'.
    GString *key = g_string_new(name);
    g_string_append_printf(key, "/%u/", local_size);
    for (uint32_t i = 0; i < n_constants; i++)
        g_string_append_printf(key, i ? ",%u" : "%u", constants[i]);
    reel_kernel *k = kernel_for(ctx, key->str, reel_kernel_params(.name = name, .local_size = local_size,
                                                                  .constants = constants,
                                                                  .n_constants = n_constants), error);
    g_string_free(key, TRUE);
    return k;
}

const char *vk_ctx_float_kernel(const vk_ctx *ctx, const char *name)
{
    if (!ctx->f16)
        return name;
    char *f16 = g_strconcat(name, "_f16", NULL);
    const char *interned = g_intern_string(f16); // a handful of names, kept for the program's life
    g_free(f16);
    return interned;
}

size_t vk_stored_bytes(bool f16, const reel_tensor *t)
{
    return f16 && t->dtype == REEL_DTYPE_FLOAT32 ? t->nbytes / 2 : t->nbytes;
}

// Rounds to nearest even: below 2^-14 into the subnormals (steps of 2^-24),
// from 65520 on to infinity; a NaN stays a quiet NaN with the top of its
// payload.
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
    if (ax >= 0x7f800000)
        return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
    if (ax >= 0x477ff000) // 65520
        return (uint16_t)(sign | 0x7c00);
    if (ax >= 0x38800000) { // 2^-14: normal; rebias and round away 13 bits
        uint32_t h = ax - 0x38000000;
        return (uint16_t)(sign | ((h + 0xfff + ((h >> 13) & 1)) >> 13));
    }
    if (ax < 0x33000000) // below 2^-25 (2^-25 itself ties to even: 0)
        return (uint16_t)sign;
    uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000, shift = 126 - e; // value / 2^-24 = m >> shift
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    r += rem > half || (rem == half && (r & 1));
    return (uint16_t)(sign | r); // r may round up to 0x400, the smallest normal
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
    if (exp == 0x1f)
        x = sign | 0x7f800000 | (man << 13);
    else if (exp)
        x = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man)
        x = sign;
    else { // subnormal: normalise
        int lead = 10 - g_bit_nth_msf(man, -1); // man's leading bit to bit 10
        x = sign | ((uint32_t)(113 - lead) << 23) | (((man << lead) & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

void vk_f32_to_f16(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = f32_to_f16(src[i]);
}

void vk_f16_to_f32(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}

int vk_ctx_dispatch(vk_ctx *ctx, reel_kernel *kernel, reel_mem *const *buffers, int n_buffers, const void *push,
                    size_t push_size, uint64_t invocations)
{
    reel_dispatch_params p = { .push = push, .push_size = push_size };
    for (int i = 0; i < n_buffers && i < REEL_KERNEL_MAX_BUFFERS; i++)
        p.buffers[i] = buffers[i];
    uint64_t local = reel_kernel_local_size(kernel), groups = (invocations + local - 1) / local;
    if (groups == 0)
        return 0;
    // Every device launches 65535 groups in x; beyond, rows of them in y
    // (kernels index gl_GlobalInvocationID.x + y * gl_NumWorkGroups.x * local).
    p.groups[0] = (uint32_t)MIN(groups, 65535);
    p.groups[1] = (uint32_t)((groups + 65534) / 65535);
    if (!ctx->profile)
        return ctx->batch ? reel_batch_dispatch(ctx->batch, kernel, &p) : reel_kernel_dispatch(kernel, &p, NULL);
    // Timed: from the device's timestamp queries, waiting for each.
    p.timestamp = true;
    uint64_t point = 0;
    int64_t ns = 0;
    int rc = reel_kernel_dispatch(kernel, &p, &point);
    if (rc == 0 && reel_device_dispatch_time(ctx->dev, point, &ns) == 0)
        ctx->profile_ns += ns;
    return rc;
}

const vk_op *vk_op_find(const char *name)
{
    const vk_op *const *tables[] = {
        vk_ops_nn, vk_ops_basic, vk_ops_resize, vk_ops_misc, vk_ops_reduce, vk_ops_convt,
        vk_ops_unary,
        vk_ops_select,
        vk_ops_norm,
        vk_ops_index,
    };
    for (size_t t = 0; t < G_N_ELEMENTS(tables); t++)
        for (const vk_op *const *op = tables[t]; *op; op++)
            if (strcmp((*op)->name, name) == 0)
                return *op;
    return NULL;
}

int vk_act_of(const reel_ir_node *n)
{
    static const char *const names[] = { NULL, "Relu", "Clip", "Sigmoid", "SiLU", "HardSigmoid", "HardSwish" };
    if (!n->fused)
        return VK_ACT_NONE;
    for (int i = 1; i < (int)G_N_ELEMENTS(names); i++)
        if (strcmp(n->fused, names[i]) == 0)
            return i;
    return -1;
}

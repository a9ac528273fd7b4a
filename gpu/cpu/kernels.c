// The cpu backend's kernels: the same semantics as gpu/shaders/*.comp, over
// whole workgroups, so one test compares the two.
#include <stdint.h>
#include <string.h>

typedef struct { float a; uint32_t n; } saxpy_push;
typedef struct { uint32_t n, chunk; } reduce_push;
typedef struct { float value; uint32_t n; } fill_push;

static uint64_t invocations(const uint32_t groups[3], uint32_t local_size)
{
    return (uint64_t)groups[0] * local_size;
}

void cpu_kernel_saxpy(void *const *buffers, const void *push, const uint32_t groups[3], uint32_t local_size)
{
    saxpy_push pc;
    memcpy(&pc, push, sizeof pc);
    const float *x = buffers[0];
    float *y = buffers[1];
    uint64_t end = invocations(groups, local_size);
    if (end > pc.n)
        end = pc.n;
    for (uint64_t i = 0; i < end; i++)
        y[i] = pc.a * x[i] + y[i];
}

void cpu_kernel_reduce_sum(void *const *buffers, const void *push, const uint32_t groups[3], uint32_t local_size)
{
    (void)local_size;
    reduce_push pc;
    memcpy(&pc, push, sizeof pc);
    const float *src = buffers[0];
    float *dst = buffers[1];
    for (uint64_t g = 0; g < groups[0]; g++) {
        uint64_t begin = g * pc.chunk, end = begin + pc.chunk;
        if (end > pc.n)
            end = pc.n;
        // Double accumulation: the reference the GPU's tree order is held to.
        double s = 0;
        for (uint64_t i = begin; i < end; i++)
            s += src[i];
        dst[g] = (float)s;
    }
}

void cpu_kernel_fill(void *const *buffers, const void *push, const uint32_t groups[3], uint32_t local_size)
{
    fill_push pc;
    memcpy(&pc, push, sizeof pc);
    float *dst = buffers[0];
    uint64_t end = invocations(groups, local_size);
    if (end > pc.n)
        end = pc.n;
    for (uint64_t i = 0; i < end; i++)
        dst[i] = pc.value;
}

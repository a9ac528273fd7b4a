// Softmax / LogSoftmax along one axis of a tensor seen as (outer, len,
// inner): one invocation per row (outer * inner of them), row elements
// `inner` apart. Subtracts the row's max first, as models/cpu/reduce.c does.
#version 450

// Storage: float32, or float16 when compiled with -DREEL_F16 (the _f16
// kernels); values are widened to float32 for the arithmetic.
#ifdef REEL_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define stored float16_t
#else
#define stored float
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { stored x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { stored o[]; };

layout(push_constant, std430) uniform Push {
    uint rows;      // outer * inner
    uint len;
    uint inner;
    uint log_;      // 1: LogSoftmax
} pc;

void main()
{
    uint r = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (r >= pc.rows)
        return;
    uint base = (r / pc.inner) * pc.len * pc.inner + r % pc.inner;
    float m = uintBitsToFloat(0xff800000u); // -inf
    for (uint i = 0; i < pc.len; i++) {
        float v = float(x[base + i * pc.inner]);
        m = v > m ? v : m;
    }
    float sum = 0.0;
    for (uint i = 0; i < pc.len; i++)
        sum += exp(float(x[base + i * pc.inner]) - m);
    if (pc.log_ != 0) {
        // (x - max) - log(sum), as the cpu computes it.
        float l = log(sum);
        for (uint i = 0; i < pc.len; i++)
            o[base + i * pc.inner] = stored((float(x[base + i * pc.inner]) - m) - l);
    } else {
        float inv = 1.0 / sum;
        for (uint i = 0; i < pc.len; i++)
            o[base + i * pc.inner] = stored(exp(float(x[base + i * pc.inner]) - m) * inv);
    }
}

// BatchNormalization, inference form, as models/cpu/norm.c:
// y = x * a + (B - mean * a) with a = scale / sqrt(var + eps), per channel of
// [N, C, spatial...]. One invocation per element.
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
layout(std430, set = 0, binding = 1) readonly buffer Scale { stored scale[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { stored bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer Mean { stored mean[]; };
layout(std430, set = 0, binding = 4) readonly buffer Var { stored var[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { stored y[]; };

// models/vulkan/ops_convt.c: bn_push.
layout(push_constant, std430) uniform Push {
    uint total;     // elements
    uint c;         // channels
    uint plane;     // elements per channel and batch item
    float eps;
} pc;

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.total)
        return;
    uint ch = (i / pc.plane) % pc.c;
    float a = float(scale[ch]) / sqrt(float(var[ch]) + pc.eps);
    y[i] = stored(float(x[i]) * a + (float(bias[ch]) - float(mean[ch]) * a));
}

// BatchNormalization, inference form, as models/cpu/norm.c:
// y = x * a + (B - mean * a) with a = scale / sqrt(var + eps), per channel of
// [N, C, spatial...]. One invocation per element.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Scale { float scale[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer Mean { float mean[]; };
layout(std430, set = 0, binding = 4) readonly buffer Var { float var[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { float y[]; };

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
    float a = scale[ch] / sqrt(var[ch] + pc.eps);
    y[i] = x[i] * a + (bias[ch] - mean[ch] * a);
}

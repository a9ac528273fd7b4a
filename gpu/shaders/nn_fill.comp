// Writes a repeating pattern of 32-bit words: out[first + i] =
// pattern[i % period] for i < n. Outputs known on the host when the node is
// planned (Shape, Constant, ConstantOfShape) are made on the device with it;
// a longer constant takes several dispatches at increasing `first`.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) writeonly buffer Out { uint o[]; };

// models/vulkan/ops_misc.c: fill_push.
layout(push_constant, std430) uniform Push {
    uint n;
    uint first;
    uint period;    // 1..28
    uint pad_;
    uint pattern[28];
} pc;

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i < pc.n)
        o[pc.first + i] = pc.pattern[i % pc.period];
}

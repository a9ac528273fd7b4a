// out[g] = sum of in[g*chunk .. min(n, (g+1)*chunk)) for workgroup g.
// Each invocation sums a strided slice of the chunk, then the workgroup
// folds its partial sums in shared memory. Repeat on the partials to reduce
// further.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer In { float src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { float dst[]; };

layout(push_constant) uniform Push {
    uint n;
    uint chunk;
} pc;

shared float partial[gl_WorkGroupSize.x];

void main()
{
    uint lid = gl_LocalInvocationID.x;
    uint begin = gl_WorkGroupID.x * pc.chunk;
    uint end = min(pc.n, begin + pc.chunk);
    float s = 0.0;
    for (uint i = begin + lid; i < end; i += gl_WorkGroupSize.x)
        s += src[i];
    partial[lid] = s;
    barrier();
    // Works for any workgroup size, power of two or not.
    for (uint width = gl_WorkGroupSize.x; width > 1; ) {
        uint half_ = (width + 1) / 2;
        if (lid < width - half_)
            partial[lid] += partial[lid + half_];
        width = half_;
        barrier();
    }
    if (lid == 0)
        dst[gl_WorkGroupID.x] = partial[0];
}

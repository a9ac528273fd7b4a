// Strided N-d copy (rank <= 6): for each index i over `shape`,
// dst[dst_off + sum i_d * dst_st[d]] = src[src_off + sum i_d * src_st[d]].
// Strides are in elements and signed (0 broadcasts, negative walks back), so
// one kernel serves Transpose, Slice, Concat, Split, Expand and plain copies.
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

layout(std430, set = 0, binding = 0) readonly buffer Src { stored src[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Dst { stored dst[]; };

layout(push_constant, std430) uniform Push {
    uint n;         // elements to copy (product of shape)
    uint rank;      // 1..6
    uint src_off;
    uint dst_off;
    uint shape[6];
    int src_st[6];
    int dst_st[6];
} pc;

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n)
        return;
    int s = int(pc.src_off), d = int(pc.dst_off);
    for (int k = int(pc.rank) - 1; k >= 0; k--) {
        uint c = i % pc.shape[k];
        i /= pc.shape[k];
        s += int(c) * pc.src_st[k];
        d += int(c) * pc.dst_st[k];
    }
    dst[d] = src[s];
}

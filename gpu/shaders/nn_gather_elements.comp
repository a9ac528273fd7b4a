// GatherElements along one axis (rank <= 6) of 4- or 8-byte elements:
// out[i] = x[i with its axis coordinate replaced by idx[i]], negative
// indices counted from the end; an index out of range (the cpu refuses it)
// gives zeros. Bound as 32-bit words (int64 indices a (low, high) pair);
// idx and out share a shape and are contiguous.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { uint o[]; };

// models/vulkan/ops_index.c: gel_push.
layout(push_constant, std430) uniform Push {
    uint n;     // output elements
    uint rank;  // 1..6
    uint axis;
    uint wpe;   // words per element: 1 or 2
    uint idx64; // 1: int64 indices, 0: int32
    uint dim;   // x's size along axis
    uint shape[6]; // the output's (and the indices')
    uint x_st[6];  // x's element strides
} pc;

// Index i made non-negative; -1 when out of range.
int index_at(uint i)
{
    int v = int(pc.idx64 != 0u ? idx[2u * i] : idx[i]);
    if (pc.idx64 != 0u && idx[2u * i + 1u] != (v < 0 ? 0xffffffffu : 0u))
        return -1; // beyond int32: out of range for any dim the kernel takes
    if (v < 0)
        v += int(pc.dim);
    return v >= 0 && v < int(pc.dim) ? v : -1;
}

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n)
        return;
    int v = index_at(i);
    if (v < 0) {
        for (uint w = 0u; w < pc.wpe; w++)
            o[i * pc.wpe + w] = 0u;
        return;
    }
    uint r = i, src = 0u;
    for (int k = int(pc.rank) - 1; k >= 0; k--) {
        uint c = r % pc.shape[k];
        r /= pc.shape[k];
        src += (uint(k) == pc.axis ? uint(v) : c) * pc.x_st[k];
    }
    for (uint w = 0u; w < pc.wpe; w++)
        o[i * pc.wpe + w] = x[src * pc.wpe + w];
}

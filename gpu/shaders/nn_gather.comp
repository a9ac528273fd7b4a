// Gather along one axis, any element type: the input seen as
// [outer, dim, chunk] (chunk: the bytes after the axis), the output as
// [outer, n_idx, chunk], out[j, i, :] = x[j, idx[i], :] with negative indices
// counted from the end; an index out of range (the cpu refuses it) gives
// zeros. Bound as 32-bit words (int64 indices a (low, high) pair): chunks
// that are whole words copy by word, others by byte, each invocation writing
// one whole output word.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { uint o[]; };

// models/vulkan/ops_misc.c: gather_push.
layout(push_constant, std430) uniform Push {
    uint words;     // output words to write
    uint bytes;     // output bytes
    uint chunk;     // bytes per gathered chunk
    uint by_word;   // 1: chunk is a multiple of 4
    uint dim;       // the axis' size in the input
    uint n_idx;
    uint idx64;     // 1: int64 indices, 0: int32
    uint pad_;
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

// The input byte (by_word 0) or word (by_word 1) position of output
// position p, in units of `unit` bytes; -1 for an out-of-range index.
int source(uint p, uint unit)
{
    uint per = pc.chunk / unit; // units per chunk
    uint blk = p / per, off = p % per;
    int v = index_at(blk % pc.n_idx);
    if (v < 0)
        return -1;
    return int(((blk / pc.n_idx) * pc.dim + uint(v)) * per + off);
}

void main()
{
    uint w = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (w >= pc.words)
        return;
    if (pc.by_word != 0u) {
        int s = source(w, 4u);
        o[w] = s < 0 ? 0u : x[s];
        return;
    }
    uint v = 0u;
    for (uint k = 0u; k < 4u && w * 4u + k < pc.bytes; k++) {
        int s = source(w * 4u + k, 1u);
        if (s >= 0)
            v |= bitfieldExtract(x[s >> 2], (s & 3) * 8, 8) << (8u * k);
    }
    o[w] = v;
}

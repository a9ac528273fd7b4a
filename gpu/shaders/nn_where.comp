// Where with numpy broadcasting (rank <= 6): out[i] = cond[ic] ? x[ix] : y[iy]
// for elements of 1, 2, 4 or 8 bytes (Where only moves them). Bound as 32-bit
// words: each invocation writes one whole output word, which holds 4/esize
// elements or a part of one 8-byte element.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer C { uint cond[]; };
layout(std430, set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Y { uint y[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Out { uint o[]; };

// models/vulkan/ops_misc.c: where_push.
layout(push_constant, std430) uniform Push {
    uint n;         // output elements
    uint rank;      // 1..6
    uint esize;     // bytes per element: 1, 2, 4 or 8
    uint pad_;
    uint shape[6];
    int c_st[6];
    int x_st[6];
    int y_st[6];
} pc;

// Element e's offsets in cond, x and y.
ivec3 offsets(uint e)
{
    ivec3 off = ivec3(0);
    for (int k = int(pc.rank) - 1; k >= 0; k--) {
        int c = int(e % pc.shape[k]);
        e /= pc.shape[k];
        off += c * ivec3(pc.c_st[k], pc.x_st[k], pc.y_st[k]);
    }
    return off;
}

bool picks_x(int ic)
{
    return bitfieldExtract(cond[ic >> 2], (ic & 3) * 8, 8) != 0u;
}

void main()
{
    uint w = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (pc.esize >= 4u) {
        uint wpe = pc.esize / 4u; // words per element
        uint e = w / wpe, part = w % wpe;
        if (e >= pc.n)
            return;
        ivec3 off = offsets(e);
        o[w] = picks_x(off.x) ? x[off.y * int(wpe) + int(part)] : y[off.z * int(wpe) + int(part)];
        return;
    }
    uint per = 4u / pc.esize, bits = pc.esize * 8u; // elements per word
    if (w * per >= pc.n)
        return;
    uint v = 0u;
    for (uint k = 0u; k < per && w * per + k < pc.n; k++) {
        ivec3 off = offsets(w * per + k);
        int i = picks_x(off.x) ? off.y : off.z;
        uint word = picks_x(off.x) ? x[i / int(per)] : y[i / int(per)];
        v |= bitfieldExtract(word, (i % int(per)) * int(bits), int(bits)) << (k * bits);
    }
    o[w] = v;
}

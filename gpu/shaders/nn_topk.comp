// TopK over float32 along one axis of an (outer, dim, inner) view, for a
// small k: an invocation per slice walks it once, keeping the k best so far
// in order, into values and int64 indices laid out (outer, k, inner). The
// order is models/cpu/select.c's: NaN above every number, then the larger
// (smallest: the smaller) value, ties to the lower index; elements come in
// index order, so a later one displaces only what it strictly beats.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer V { float vals[]; };
layout(std430, set = 0, binding = 2) writeonly buffer I { uint idx[]; }; // int64: low word, then high

// models/vulkan/ops_select.c: topk_push.
layout(push_constant, std430) uniform Push {
    uint slices; // outer * inner
    uint dim;
    uint inner;
    uint k;       // 1..MAX_K
    uint largest; // 1: the largest, 0: the smallest
} pc;

const uint MAX_K = 32;

// Whether value a is strictly ahead of value b.
bool ahead(float a, float b)
{
    bool na = isnan(a), nb = isnan(b);
    if (na != nb)
        return pc.largest != 0u ? na : nb;
    if (na)
        return false;
    return pc.largest != 0u ? a > b : a < b;
}

void main()
{
    uint s = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (s >= pc.slices)
        return;
    uint o = s / pc.inner, j = s % pc.inner, base = o * pc.dim * pc.inner + j;
    float bv[MAX_K];
    uint bi[MAX_K];
    uint n = 0u;
    for (uint e = 0u; e < pc.dim; e++) {
        float v = x[base + e * pc.inner];
        if (n == pc.k && !ahead(v, bv[n - 1u]))
            continue;
        // Insert after every kept value it does not beat (ties stay ahead).
        uint p = n < pc.k ? n : n - 1u;
        while (p > 0u && ahead(v, bv[p - 1u])) {
            bv[p] = bv[p - 1u];
            bi[p] = bi[p - 1u];
            p--;
        }
        bv[p] = v;
        bi[p] = e;
        if (n < pc.k)
            n++;
    }
    uint dst = o * pc.k * pc.inner + j;
    for (uint e = 0u; e < pc.k; e++) {
        vals[dst + e * pc.inner] = bv[e];
        idx[2u * (dst + e * pc.inner)] = bi[e];
        idx[2u * (dst + e * pc.inner) + 1u] = 0u;
    }
}

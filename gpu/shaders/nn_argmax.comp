// ArgMax and ArgMin over float32 along one axis of an (outer, dim, inner)
// view, into int64 indices. Short axes: an invocation per output walks its
// column. Long axes (flag 4): a workgroup per output, each invocation a
// strided share, the candidates then folded in shared memory. The order
// is total, so the fold gives what the cpu's sequential walk gives: NaN
// above every number, then the larger (ArgMin: smaller) value, then on ties
// the lower index (select_last_index: the higher).
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { uint y[]; }; // int64: low word, then high

// models/vulkan/ops_select.c: arg_push.
layout(push_constant, std430) uniform Push {
    uint n_out;
    uint dim;   // >= 1
    uint inner;
    uint flags; // 1: ArgMin, 2: the last index on ties, 4: a workgroup per output
} pc;

const uint NONE = 0xffffffffu; // an invocation that saw no element
const uint MAX_LOCAL = 256;
shared float sv[MAX_LOCAL];
shared uint si[MAX_LOCAL];

// Whether (a, ia) is picked over (b, ib).
bool beats(float a, uint ia, float b, uint ib)
{
    if (ia == NONE)
        return false;
    if (ib == NONE)
        return true;
    bool na = isnan(a), nb = isnan(b);
    if (na != nb)
        return na;
    if (!na && a != b)
        return (pc.flags & 1u) != 0u ? a < b : a > b;
    return (pc.flags & 2u) != 0u ? ia > ib : ia < ib;
}

uint base_of(uint i)
{
    return (i / pc.inner) * pc.dim * pc.inner + i % pc.inner;
}

void main()
{
    if ((pc.flags & 4u) == 0u) {
        uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
        if (i >= pc.n_out)
            return;
        uint base = base_of(i), bi = 0u;
        float bv = x[base];
        for (uint k = 1u; k < pc.dim; k++) {
            float v = x[base + k * pc.inner];
            if (beats(v, k, bv, bi)) {
                bv = v;
                bi = k;
            }
        }
        y[2u * i] = bi;
        y[2u * i + 1u] = 0u;
        return;
    }
    uint out_i = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (out_i >= pc.n_out) // the whole group leaves: the barriers stay uniform
        return;
    uint t = gl_LocalInvocationID.x, local = gl_WorkGroupSize.x, base = base_of(out_i), bi = NONE;
    float bv = 0.0;
    for (uint k = t; k < pc.dim; k += local) {
        float v = x[base + k * pc.inner];
        if (beats(v, k, bv, bi)) {
            bv = v;
            bi = k;
        }
    }
    sv[t] = bv;
    si[t] = bi;
    barrier();
    for (uint s = local / 2u; s > 0u; s >>= 1) {
        if (t < s && beats(sv[t + s], si[t + s], sv[t], si[t])) {
            sv[t] = sv[t + s];
            si[t] = si[t + s];
        }
        barrier();
    }
    if (t == 0u) {
        y[2u * out_i] = si[0];
        y[2u * out_i + 1u] = 0u;
    }
}

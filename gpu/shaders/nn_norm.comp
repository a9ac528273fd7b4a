// LayerNormalization, GroupNormalization and InstanceNormalization over
// float32: a workgroup per row (a contiguous run of `len` elements of X:
// the normalized dims, or a group's channels), the mean and then the
// variance about it folded in shared memory (two passes keep float sums
// accurate), then y written with the per-element or per-channel affine.
// Formulas as models/cpu/normalize.c's.
#version 450

#ifdef REEL_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define stored float16_t
#else
#define stored float
#endif

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { stored x[]; };
layout(std430, set = 0, binding = 1) readonly buffer S { stored scale[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { stored bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { stored y[]; };
layout(std430, set = 0, binding = 4) writeonly buffer M { stored mean_out[]; };
layout(std430, set = 0, binding = 5) writeonly buffer I { stored inv_out[]; };

// models/vulkan/ops_norm.c: norm_push.
layout(push_constant, std430) uniform Push {
    uint rows;
    uint len;    // elements per row, >= 1
    uint plane;  // groups: elements per channel
    uint groups; // groups: G (rows are N * G)
    uint flags;  // 1: per-channel affine (groups), 2: per-group affine, 4: bias, 8: Mean output, 16: InvStdDev output
    float eps;
} pc;

const uint MAX_LOCAL = 256;
shared float part[MAX_LOCAL];

// The sum of every invocation's v, for all of them.
float group_sum(float v)
{
    uint t = gl_LocalInvocationID.x;
    part[t] = v;
    barrier();
    for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
        if (t < s)
            part[t] += part[t + s];
        barrier();
    }
    float r = part[0];
    barrier(); // part is reused by the next fold
    return r;
}

void main()
{
    uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (row >= pc.rows) // the whole group leaves: the barriers stay uniform
        return;
    uint t = gl_LocalInvocationID.x, local = gl_WorkGroupSize.x, base = row * pc.len;
    float s = 0.0;
    for (uint i = t; i < pc.len; i += local)
        s += float(x[base + i]);
    float m = group_sum(s) / float(pc.len);
    float ss = 0.0;
    for (uint i = t; i < pc.len; i += local) {
        float d = float(x[base + i]) - m;
        ss += d * d;
    }
    float inv = inversesqrt(group_sum(ss) / float(pc.len) + pc.eps);
    bool has_bias = (pc.flags & 4u) != 0u;
    if ((pc.flags & 3u) == 0u) { // LayerNormalization: scale and bias per element of the row
        for (uint i = t; i < pc.len; i += local) {
            float v = (float(x[base + i]) - m) * inv * float(scale[i]);
            y[base + i] = stored(has_bias ? v + float(bias[i]) : v);
        }
    } else {
        uint g = row % pc.groups, cpg = pc.len / pc.plane;
        for (uint i = t; i < pc.len; i += local) {
            uint c = (pc.flags & 2u) != 0u ? g : g * cpg + i / pc.plane;
            float a = inv * float(scale[c]), off = float(bias[c]) - m * a;
            y[base + i] = stored(float(x[base + i]) * a + off);
        }
    }
    if (t == 0u && (pc.flags & 8u) != 0u)
        mean_out[row] = stored(m);
    if (t == 0u && (pc.flags & 16u) != 0u)
        inv_out[row] = stored(inv);
}

// ReduceSum, ReduceMean and ReduceMax over float32: one workgroup per output
// element. The kept dims (collapsed, rank <= 6) place the output's first
// input element, the reduced dims (collapsed, rank <= 6) walk the rest; each
// invocation folds a strided share, then the group folds the partials in
// shared memory. Max propagates NaN.
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

layout(std430, set = 0, binding = 0) readonly buffer X { stored x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { stored y[]; };

// models/vulkan/ops_reduce.c: reduce_push.
layout(push_constant, std430) uniform Push {
    uint n_out;
    uint n_red;     // elements folded into each output (0: the output is the start value)
    uint keep_rank; // 1..6
    uint red_rank;  // 1..6
    uint kind;      // 0: sum, 1: max
    float scale;    // applied to the result (ReduceMean: outputs / inputs)
    uint keep_shape[6];
    int keep_st[6];
    uint red_shape[6];
    int red_st[6];
} pc;

const uint MAX_LOCAL = 256;
shared float partial[MAX_LOCAL];

float fold(float acc, float v)
{
    if (pc.kind == 0u)
        return acc + v;
    return isnan(acc) || isnan(v) ? acc + v : (v > acc ? v : acc);
}

int offset_of(uint i, uint rank, bool kept)
{
    int off = 0;
    for (int k = int(rank) - 1; k >= 0; k--) {
        uint d = kept ? pc.keep_shape[k] : pc.red_shape[k];
        off += int(i % d) * (kept ? pc.keep_st[k] : pc.red_st[k]);
        i /= d;
    }
    return off;
}

void main()
{
    uint out_i = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (out_i >= pc.n_out) // the whole group leaves: the barriers stay uniform
        return;
    uint t = gl_LocalInvocationID.x, local = gl_WorkGroupSize.x;
    int base = offset_of(out_i, pc.keep_rank, true);
    float acc = pc.kind == 0u ? 0.0 : uintBitsToFloat(0xff800000u); // -inf
    for (uint r = t; r < pc.n_red; r += local)
        acc = fold(acc, float(x[base + offset_of(r, pc.red_rank, false)]));
    partial[t] = acc;
    barrier();
    for (uint s = local / 2u; s > 0u; s >>= 1) {
        if (t < s)
            partial[t] = fold(partial[t], partial[t + s]);
        barrier();
    }
    if (t == 0u)
        y[out_i] = stored(partial[0] * pc.scale);
}

// Pad (constant, reflect, edge) of a rank <= 6 tensor, as models/cpu/
// shape.c's run_pad: each output index maps back dim by dim; pads may be
// negative (crops).
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

layout(push_constant, std430) uniform Push {
    uint n;     // output elements
    uint rank;  // 1..6
    uint mode;  // ops_resize.c's PAD_*
    float value;
    uint in_[6];
    uint out_[6];
    int before[6];
} pc;

const uint CONSTANT = 0, REFLECT = 1, EDGE = 2;

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n)
        return;
    uint o = i, s = 0, st = 1;
    for (int k = int(pc.rank) - 1; k >= 0; k--) {
        int d = int(pc.in_[k]);
        int j = int(o % pc.out_[k]) - pc.before[k];
        o /= pc.out_[k];
        if (j < 0 || j >= d) {
            if (pc.mode == CONSTANT) {
                y[i] = stored(pc.value);
                return;
            }
            if (pc.mode == EDGE) {
                j = j < 0 ? 0 : d - 1;
            } else {
                // Reflect: period 2(d-1), with non-negative operands only.
                int p = 2 * (d - 1);
                j = j < 0 ? p - 1 - (-j - 1) % p : j % p;
                j = j < d ? j : p - j;
            }
        }
        s += uint(j) * st;
        st *= pc.in_[k];
    }
    y[i] = x[s];
}

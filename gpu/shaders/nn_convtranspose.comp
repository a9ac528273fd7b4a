// ConvTranspose, 1-D to 3-D (spatial dims padded to 3 with size-1 dims),
// NC[D]HW, any groups, strides, dilations, pads and output padding, with
// bias and fused activation. One invocation per output element gathers what
// the transposed convolution scatters there:
// Y[n,m,o] = act(B[m] + sum over the group's channels c and kernel taps k
// with o + pad - k*dil = i*stride, i inside X, of X[n,c,i] * W[c,m%Mg,k]).
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
layout(std430, set = 0, binding = 1) readonly buffer Wt { stored wt[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { stored bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { stored y[]; };

// models/vulkan/ops_convt.c: convt_push.
layout(push_constant, std430) uniform Push {
    int c, m, cg, mg;     // input and output channels, per group
    int in_[3], out_[3], k[3], s[3], d[3], p[3];
    int flags;            // 1: bias
    int act;              // VK_ACT_*
    float fa, fb;
    int total;            // output elements
} pc;

// models/cpu/blas.c's nn_activate.
float activate(float v)
{
    switch (pc.act) {
    case 1: return v > 0.0 ? v : 0.0;
    case 2: return v < pc.fa ? pc.fa : (v > pc.fb ? pc.fb : v);
    case 3: return 1.0 / (1.0 + exp(-v));
    case 4: return v / (1.0 + exp(-v));
    case 5: { float t = pc.fa * v + pc.fb; return t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t); }
    case 6: {
        float a = pc.fa, b = pc.fb;
        if (a == 0.0 && b == 0.0) { a = 1.0 / 6.0; b = 0.5; }
        float t = a * v + b;
        return v * (t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t));
    }
    }
    return v;
}

// The input position along dim `a` that tap `j` reaches from output `o`; -1
// when it falls between strides or outside the input.
int tap_source(int a, int o, int j)
{
    int t = o + pc.p[a] - j * pc.d[a];
    if (t < 0 || t % pc.s[a] != 0)
        return -1;
    t /= pc.s[a];
    return t < pc.in_[a] ? t : -1;
}

void main()
{
    uint gi = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (gi >= uint(pc.total))
        return;
    int i = int(gi);
    int ow = i % pc.out_[2], t = i / pc.out_[2];
    int oh = t % pc.out_[1];
    t /= pc.out_[1];
    int od = t % pc.out_[0];
    t /= pc.out_[0];
    int m = t % pc.m, n = t / pc.m;
    int g = m / pc.mg, ml = m % pc.mg;
    int plane = pc.in_[0] * pc.in_[1] * pc.in_[2], taps = pc.k[0] * pc.k[1] * pc.k[2];
    float acc = 0.0;
    for (int a = 0; a < pc.k[0]; a++) {
        int id = tap_source(0, od, a);
        if (id < 0)
            continue;
        for (int b = 0; b < pc.k[1]; b++) {
            int ih = tap_source(1, oh, b);
            if (ih < 0)
                continue;
            for (int e = 0; e < pc.k[2]; e++) {
                int iw = tap_source(2, ow, e);
                if (iw < 0)
                    continue;
                int xo = (id * pc.in_[1] + ih) * pc.in_[2] + iw, wo = (a * pc.k[1] + b) * pc.k[2] + e;
                for (int c = 0; c < pc.cg; c++) {
                    int ch = g * pc.cg + c;
                    acc += float(x[(n * pc.c + ch) * plane + xo]) * float(wt[(ch * pc.mg + ml) * taps + wo]);
                }
            }
        }
    }
    if ((pc.flags & 1) != 0)
        acc += float(bias[m]);
    y[i] = stored(activate(acc));
}

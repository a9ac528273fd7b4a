// Conv, 1-D (H = 1) or 2-D, NCHW, any groups, pads, strides and dilations,
// with bias, residual and fused activation:
// Y[n,m,oh,ow] = act(sum over the group's channels and the window of X*W
// + B[m] + R[n,m,oh,ow]). One invocation per output element; B and R are a
// dummy buffer unless flags say otherwise.
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
layout(std430, set = 0, binding = 3) readonly buffer R { stored res[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { stored y[]; };

// models/vulkan/ops_nn.c: conv_push.
layout(push_constant) uniform Push {
    int c, h, w;          // input channels and plane
    int m, oh, ow;        // output channels and plane
    int cg, mg;           // channels per group, in and out
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int flags;            // 1: bias, 2: residual
    int act;              // VK_ACT_*
    float fa, fb;
    int total;            // output elements
} pc;

// models/cpu/blas.c nn_activate.
float activate(float v)
{
    switch (pc.act) {
    case 1: return v > 0.0 ? v : 0.0;
    case 2: return v < pc.fa ? pc.fa : v > pc.fb ? pc.fb : v;
    case 3: return 1.0 / (1.0 + exp(-v));
    case 4: return v / (1.0 + exp(-v));
    case 5: { float t = pc.fa * v + pc.fb; return t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t; }
    case 6: {
        float a = pc.fa, b = pc.fb;
        if (a == 0.0 && b == 0.0) { a = 1.0 / 6.0; b = 0.5; }
        float t = a * v + b;
        return v * (t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t);
    }
    }
    return v;
}

void main()
{
    uint gi = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (gi >= uint(pc.total))
        return;
    int i = int(gi);
    int ox = i % pc.ow, t = i / pc.ow;
    int oy = t % pc.oh;
    t /= pc.oh;
    int m = t % pc.m, n = t / pc.m, g = m / pc.mg;
    int iy0 = oy * pc.sh - pc.ph, ix0 = ox * pc.sw - pc.pw;
    float acc = 0.0;
    for (int c = 0; c < pc.cg; c++) {
        int xplane = (n * pc.c + g * pc.cg + c) * pc.h;
        int wb = (m * pc.cg + c) * pc.kh * pc.kw;
        for (int a = 0; a < pc.kh; a++) {
            int iy = iy0 + a * pc.dh;
            if (iy < 0 || iy >= pc.h)
                continue;
            int xrow = (xplane + iy) * pc.w, wrow = wb + a * pc.kw;
            for (int e = 0; e < pc.kw; e++) {
                int ix = ix0 + e * pc.dw;
                if (ix >= 0 && ix < pc.w)
                    acc += float(x[xrow + ix]) * float(wt[wrow + e]);
            }
        }
    }
    if ((pc.flags & 1) != 0)
        acc += float(bias[m]);
    if ((pc.flags & 2) != 0)
        acc += float(res[i]);
    y[i] = stored(activate(acc));
}

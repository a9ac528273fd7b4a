// MaxPool and AveragePool over 1-D (H = 1) or 2-D planes: pads, strides,
// dilations; the output size (ceil_mode, auto_pad) comes from the caller.
// Global pools are one window over the whole plane. Mirrors
// models/cpu/pool.c: an empty max window gives -FLT_MAX; count_include_pad
// counts window positions inside input + pads, not the ceil_mode overhang.
// One invocation per output element.
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

// models/vulkan/ops_nn.c: pool_push.
layout(push_constant) uniform Push {
    int h, w, oh, ow;
    int kh, kw, sh, sw, ph, pw, dh, dw;
    int limh, limw;       // input + end pad, for count_include_pad
    int mode;             // 0: max, 1: average of the valid, 2: average counting pads
    int total;            // output elements
} pc;

void main()
{
    uint gi = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (gi >= uint(pc.total))
        return;
    int i = int(gi);
    int ox = i % pc.ow, t = i / pc.ow;
    int oy = t % pc.oh, p = t / pc.oh;
    int y0 = oy * pc.sh - pc.ph, x0 = ox * pc.sw - pc.pw;
    bool is_max = pc.mode == 0;
    float acc = is_max ? -3.402823466e+38 : 0.0;
    int count = 0;
    for (int a = 0; a < pc.kh; a++) {
        int iy = y0 + a * pc.dh;
        if (iy < 0 || iy >= pc.h)
            continue;
        int row = (p * pc.h + iy) * pc.w;
        for (int e = 0; e < pc.kw; e++) {
            int ix = x0 + e * pc.dw;
            if (ix < 0 || ix >= pc.w)
                continue;
            float v = float(x[row + ix]);
            if (is_max)
                acc = v > acc || count == 0 ? v : acc; // -inf inputs as the cpu
            else
                acc += v;
            count++;
        }
    }
    if (!is_max) {
        if (pc.mode == 2) {
            int ch = 0, cw = 0;
            for (int a = 0; a < pc.kh; a++)
                ch += y0 + a * pc.dh < pc.limh ? 1 : 0;
            for (int e = 0; e < pc.kw; e++)
                cw += x0 + e * pc.dw < pc.limw ? 1 : 0;
            count = ch * cw;
        }
        acc = count != 0 ? acc / float(count) : 0.0;
    }
    y[i] = stored(acc);
}

// Resize/Upsample of the last two dims (H, W) of an [outer, H, W] tensor,
// nearest or (bi)linear, as models/cpu/resize.c. Each axis's source
// coordinate is the exact rational (a*o + b) / d - k (models/vulkan/
// ops_resize.c derives a, b, d, k from the transform and scale), so floor,
// ceil and round ties come out as the cpu's, with no float division.
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
    uint n;       // output elements
    uint linear;  // 0: nearest, 1: linear
    uint nearest; // rounding: ops_resize.c's NEAREST_*
    uint pad_;
    uint in_[2];  // input H, W
    uint out_[2]; // output H, W
    uint a[2], b[2], d[2], k[2];
    uint ident[2]; // axis is not resized (the cpu skips it)
} pc;

const uint ROUND_PREFER_FLOOR = 0, ROUND_PREFER_CEIL = 1, FLOOR = 2, CEIL = 3;

// Taps (i0, i1) and weights (w0, w1) along axis `ax` for output index o.
void taps(uint ax, uint o, out int i0, out int i1, out float w0, out float w1)
{
    int last = int(pc.in_[ax]) - 1;
    if (pc.ident[ax] != 0) {
        i0 = i1 = int(o);
        w0 = 1.0;
        w1 = 0.0;
        return;
    }
    uint num = pc.a[ax] * o + pc.b[ax], den = pc.d[ax];
    int fl = int(num / den) - int(pc.k[ax]);
    uint rem = num % den;
    if (pc.linear != 0) {
        float t = float(rem) / float(den);
        i0 = clamp(fl, 0, last);
        i1 = clamp(fl + 1, 0, last);
        w0 = 1.0 - t;
        w1 = t;
        return;
    }
    int v = fl;
    if (pc.nearest == CEIL)
        v += rem != 0 ? 1 : 0;
    else if (pc.nearest == ROUND_PREFER_FLOOR)
        v += 2 * rem > den ? 1 : 0;
    else if (pc.nearest == ROUND_PREFER_CEIL)
        v += 2 * rem >= den ? 1 : 0;
    i0 = i1 = clamp(v, 0, last);
    w0 = 1.0;
    w1 = 0.0;
}

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n)
        return;
    uint ow = i % pc.out_[1], oh = (i / pc.out_[1]) % pc.out_[0], c = i / (pc.out_[1] * pc.out_[0]);
    int h0, h1, x0, x1;
    float hw0, hw1, ww0, ww1;
    taps(0, oh, h0, h1, hw0, hw1);
    taps(1, ow, x0, x1, ww0, ww1);
    uint iw = pc.in_[1], base = c * pc.in_[0] * iw;
    if (pc.linear == 0) {
        y[i] = x[base + uint(h0) * iw + uint(x0)];
        return;
    }
    // The cpu's order: along H first (rounded to float), then along W.
    float a = hw0 * float(x[base + uint(h0) * iw + uint(x0)]) + hw1 * float(x[base + uint(h1) * iw + uint(x0)]);
    float b = hw0 * float(x[base + uint(h0) * iw + uint(x1)]) + hw1 * float(x[base + uint(h1) * iw + uint(x1)]);
    y[i] = stored(ww0 * a + ww1 * b);
}

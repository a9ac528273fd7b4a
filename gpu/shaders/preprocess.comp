// Fused preprocess (gpu/preprocess.h): one invocation per tensor pixel
// samples the frame bilinearly, converts YUV to RGB (BT.601), normalizes and
// writes its 3 channels. The arithmetic follows reel_preprocess_rows() in
// gpu/preprocess.c step by step, so the two agree to float rounding.
#version 450

layout(local_size_x_id = 0) in;

// The frame's bytes, little-endian in words: planes may start at any byte.
layout(std430, set = 0, binding = 0) readonly buffer Frame { uint frame[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Tensor { float dst[]; };

// reel_preprocess_push, 108 bytes.
layout(push_constant, std430) uniform Push {
    uint src_w, src_h, src_fmt;
    uint offset[3], stride[3];
    uint dst_w, dst_h, flags;
    float sx, sy, ox, oy;
    int x0, y0, x1, y1;
    float mul[3], add[3];
    float pad;
} pc;

// reel_pixfmt and REEL_PRE_* (checked against the C enums in preprocess.c).
const uint RGB24 = 2u, BGR24 = 3u, RGBA = 4u, YUV420P = 6u, YUVJ420P = 7u, NV12 = 8u;
const uint NHWC = 1u, BGR = 2u;

float byte_at(uint a)
{
    return float((frame[a >> 2] >> ((a & 3u) * 8u)) & 0xffu);
}

// Frame position of tensor coordinate t on one axis, f = (t + 0.5) * s + o
// - 0.5, as integer part i and fraction w. Done plainly in float, f near
// 2000 would be off by 1e-4 pixel; with s split so that (t + 0.5) * s_hi is
// exact (t < 2048), every term that remains is below a few pixels and w
// agrees with the C version's double to about 1e-7.
void axis(int t, float s, float o, out int i, out float w)
{
    precise float tc = float(t) + 0.5;
    precise float s_hi = uintBitsToFloat(floatBitsToUint(s) & 0xfffff000u); // 12 significant bits
    precise float a = tc * s_hi;
    precise float fa = floor(a), fo = floor(o);
    precise float r = ((a - fa) + (o - fo)) + (tc * (s - s_hi) - 0.5);
    precise float fr = floor(r);
    i = int(fa) + int(fo) + int(fr);
    w = r - fr;
}

// The same position on a 4:2:0 chroma plane: ((f + 0.5) / 2 - 0.5).
void chroma_axis(int i, float w, out int ci, out float cw)
{
    precise float r = (float(i & 1) + w) * 0.5 - 0.25;
    ci = (i >> 1) + (r < 0.0 ? -1 : 0);
    cw = r < 0.0 ? r + 1.0 : r;
}

// Bilinear sample of one component: plane at byte `base`, `step` bytes per
// pixel, taps (xa, xb, wx) and (ya, yb, wy). Rows first, as the C version.
float sample_at(uint base, uint stride, uint step, ivec2 xs, float wx, ivec2 ys, float wy)
{
    uint ra = base + uint(ys.x) * stride, rb = base + uint(ys.y) * stride;
    float a0 = byte_at(ra + uint(xs.x) * step), a1 = byte_at(rb + uint(xs.x) * step);
    float b0 = byte_at(ra + uint(xs.y) * step), b1 = byte_at(rb + uint(xs.y) * step);
    float a = a0 + wy * (a1 - a0);
    float b = b0 + wy * (b1 - b0);
    return a + wx * (b - a);
}

ivec2 taps(int i, uint n)
{
    return clamp(ivec2(i, i + 1), ivec2(0), ivec2(int(n) - 1));
}

void main()
{
    uint id = gl_GlobalInvocationID.x;
    if (id >= pc.dst_w * pc.dst_h)
        return;
    uint f = pc.src_fmt;
    bool yuv = f == YUV420P || f == YUVJ420P || f == NV12;
    if (!yuv && f != RGB24 && f != BGR24 && f != RGBA)
        return; // unsupported formats write nothing, as in the C version
    int x = int(id % pc.dst_w), y = int(id / pc.dst_w);

    vec3 rgb = vec3(pc.pad);
    bool content = x >= pc.x0 && x < pc.x1 && y >= pc.y0 && y < pc.y1;
    if (content) {
        int ix, iy;
        float wx, wy;
        axis(x, pc.sx, pc.ox, ix, wx);
        axis(y, pc.sy, pc.oy, iy, wy);
        ivec2 xs = taps(ix, pc.src_w), ys = taps(iy, pc.src_h);
        if (yuv) {
            int cx, cy;
            float cwx, cwy;
            chroma_axis(ix, wx, cx, cwx);
            chroma_axis(iy, wy, cy, cwy);
            uint cw = (pc.src_w + 1u) / 2u, ch = (pc.src_h + 1u) / 2u;
            ivec2 cxs = taps(cx, cw), cys = taps(cy, ch);
            float Y = sample_at(pc.offset[0], pc.stride[0], 1u, xs, wx, ys, wy);
            float U, V;
            if (f == NV12) {
                U = sample_at(pc.offset[1], pc.stride[1], 2u, cxs, cwx, cys, cwy);
                V = sample_at(pc.offset[1] + 1u, pc.stride[1], 2u, cxs, cwx, cys, cwy);
            } else {
                U = sample_at(pc.offset[1], pc.stride[1], 1u, cxs, cwx, cys, cwy);
                V = sample_at(pc.offset[2], pc.stride[2], 1u, cxs, cwx, cys, cwy);
            }
            // BT.601: luma offset and scale, V->R, U->G, V->G, U->B (as bt601[] in C).
            float k[6] = f == YUVJ420P
                ? float[6](0.0, 1.0, 1.402, 0.344136286, 0.714136286, 1.772)
                : float[6](16.0, 1.16438356, 1.59602679, 0.39176229, 0.812967647, 2.01723214);
            Y = (Y - k[0]) * k[1];
            U -= 128.0;
            V -= 128.0;
            rgb = clamp(vec3(Y + k[2] * V, Y - k[3] * U - k[4] * V, Y + k[5] * U), 0.0, 255.0);
        } else {
            uint step = f == RGBA ? 4u : 3u;
            uint r = f == BGR24 ? 2u : 0u, b = 2u - r;
            rgb = vec3(sample_at(pc.offset[0] + r, pc.stride[0], step, xs, wx, ys, wy),
                       sample_at(pc.offset[0] + 1u, pc.stride[0], step, xs, wx, ys, wy),
                       sample_at(pc.offset[0] + b, pc.stride[0], step, xs, wx, ys, wy));
        }
    }
    if ((pc.flags & BGR) != 0u)
        rgb = rgb.bgr;
    uint plane = pc.dst_w * pc.dst_h;
    for (uint c = 0u; c < 3u; c++) {
        uint at = (pc.flags & NHWC) != 0u ? id * 3u + c : c * plane + id;
        dst[at] = rgb[c] * pc.mul[c] + pc.add[c];
    }
}

// Overlay drawing (gpu/overlay.h): instance masks blended in, boxes, filled
// boxes and 5x7 glyphs over them. One invocation per 32-bit word of the
// frame, so no two invocations write one word: each byte of the word that
// lies in a plane's pixels takes its channel's colour byte from the last
// primitive covering its pixel, or else blends in the colour of each mask
// its pixel is on in, in order. Bytes outside the planes (row padding, gaps,
// the tail) keep their value. The bytes equal reel_overlay_paint()'s
// (gpu/overlay.c).
#version 450

layout(local_size_x_id = 0) in;

struct Prim {
    int kind, x0, y0, x1, y1, thickness;
    uint color, glyph;
};

// Buffers are whole words (gpu/vulkan/mem.c rounds their size up), so the
// last bytes of any frame are reached; bytes past the planes stay as they are.
layout(std430, set = 0, binding = 0) buffer Frame { uint words[]; };
layout(std430, set = 0, binding = 1) readonly buffer Prims { Prim prims[]; };
layout(std430, set = 0, binding = 2) readonly buffer Font { uint font[]; }; // 7 rows per character from ' '
// n_masks reel_overlay_mask (8 words: x, y, width, height, color, first,
// n_ends, reserved), then the run ends they index.
layout(std430, set = 0, binding = 3) readonly buffer Masks { uint masks[]; };

layout(push_constant) uniform Push {
    uint fmt, width, height, n_prims;
    uint offset[3], stride[3];
    uint n_masks, alpha;
} pc;

const int FILL = 0, RECT = 1, GLYPH = 2, LINE = 3;
const int LINE_MAX_COORD = 8192;
// reel_pixfmt values (checked in gpu/overlay.c).
const uint RGB24 = 2, BGR24 = 3, RGBA = 4, YUV420P = 6, YUVJ420P = 7, NV12 = 8;

// Coverage exactly as gpu/overlay.h defines it; differences are taken as
// uint, which is exact for px inside [x0, x1) whatever the box.
bool line_covers(Prim q, int px, int py)
{
    if (q.thickness <= 0 || min(min(q.x0, q.y0), min(q.x1, q.y1)) < -LINE_MAX_COORD
        || max(max(q.x0, q.y0), max(q.x1, q.y1)) > LINE_MAX_COORD)
        return false;
    int x0 = q.x0, y0 = q.y0, x1 = q.x1, y1 = q.y1, dx = x1 - x0, dy = y1 - y0;
    bool x_major = abs(dx) >= abs(dy);
    if ((x_major && dx < 0) || (!x_major && dy < 0)) {
        x0 = q.x1; y0 = q.y1; x1 = q.x0; y1 = q.y0; dx = -dx; dy = -dy;
    }
    if (dx == 0 && dy == 0)
        return px == x0 && py == y0;
    if (x_major)
        return px >= x0 && px <= x1 && 2 * abs(py * dx - y0 * dx - (px - x0) * dy) <= q.thickness * dx;
    return py >= y0 && py <= y1 && 2 * abs(px * dy - x0 * dy - (py - y0) * dx) <= q.thickness * dy;
}

bool covers(Prim q, int px, int py)
{
    if (q.kind == LINE)
        return line_covers(q, px, py);
    if (px < q.x0 || px >= q.x1 || py < q.y0 || py >= q.y1)
        return false;
    if (q.kind == RECT) {
        if (q.thickness <= 0)
            return false;
        uint t = uint(q.thickness);
        return uint(px - q.x0) < t || uint(q.x1 - 1 - px) < t || uint(py - q.y0) < t || uint(q.y1 - 1 - py) < t;
    }
    if (q.kind == GLYPH) {
        uint ch = q.glyph >= 32u && q.glyph <= 126u ? q.glyph : 63u; // else '?'
        uint col = (uint(px) - uint(q.x0)) * 5u / (uint(q.x1) - uint(q.x0));
        uint row = (uint(py) - uint(q.y0)) * 7u / (uint(q.y1) - uint(q.y0));
        return ((font[(ch - 32u) * 7u + row] >> (4u - col)) & 1u) != 0u;
    }
    return true;
}

// Whether pixel (px, py) is on in mask m: its number in the rectangle, and
// how many of the mask's ends are <= it (a binary search over the
// non-decreasing ends): odd and below n_ends is an on run.
bool mask_covers(uint m, int px, int py)
{
    uint base = m * 8u;
    int x = int(masks[base]), y = int(masks[base + 1u]), w = int(masks[base + 2u]), h = int(masks[base + 3u]);
    // Differences as uint: exact once px >= x, whatever x is.
    if (w <= 0 || h <= 0 || px < x || py < y || uint(px) - uint(x) >= uint(w) || uint(py) - uint(y) >= uint(h))
        return false;
    uint i = (uint(py) - uint(y)) * uint(w) + (uint(px) - uint(x));
    uint ends = pc.n_masks * 8u + masks[base + 5u], n = masks[base + 6u];
    uint lo = 0u, hi = n; // the count of ends <= i lies in [lo, hi]
    while (lo < hi) {
        uint mid = (lo + hi) >> 1;
        if (masks[ends + mid] <= i)
            lo = mid + 1u;
        else
            hi = mid;
    }
    return (lo & 1u) != 0u && lo < n;
}

uint n_planes()
{
    return pc.fmt == YUV420P || pc.fmt == YUVJ420P ? 3u : pc.fmt == NV12 ? 2u
         : pc.fmt == RGB24 || pc.fmt == BGR24 || pc.fmt == RGBA ? 1u : 0u;
}

uint bytes_per_sample(uint p)
{
    return pc.fmt == RGB24 || pc.fmt == BGR24 ? 3u : pc.fmt == RGBA ? 4u : pc.fmt == NV12 && p == 1u ? 2u : 1u;
}

// Which colour byte byte b of a sample in plane p takes: yuv420p's planes
// are Y, U, V; nv12's second holds U then V; packed RGB is in order but bgr24.
uint channel(uint p, uint b)
{
    return pc.fmt == BGR24 ? 2u - b : p + b;
}

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i >= uint(words.length()))
        return;
    uint word = words[i], result = word;
    uint np = n_planes();
    for (uint k = 0u; k < 4u; k++) {
        uint a = i * 4u + k;
        for (uint p = 0u; p < np; p++) {
            uint sub = p > 0u ? 1u : 0u; // log2 subsampling: every format here is 4:2:0 or packed
            uint bpp = bytes_per_sample(p);
            uint rows = (pc.height + sub) >> sub;
            if (a < pc.offset[p] || a - pc.offset[p] >= pc.stride[p] * rows)
                continue;
            uint rel = a - pc.offset[p];
            uint c = rel % pc.stride[p];
            if (c >= ((pc.width + sub) >> sub) * bpp)
                break; // row padding
            // A subsampled sample takes the coverage of its top-left pixel.
            int px = int((c / bpp) << sub), py = int((rel / pc.stride[p]) << sub);
            uint shift = 8u * k, chan = 8u * channel(p, c % bpp);
            bool painted = false;
            for (uint n = pc.n_prims; n-- > 0u;) {
                Prim q = prims[n];
                if (covers(q, px, py)) {
                    uint byte_ = (q.color >> chan) & 0xffu;
                    result = (result & ~(0xffu << shift)) | (byte_ << shift);
                    painted = true;
                    break;
                }
            }
            uint alpha = min(pc.alpha, 256u);
            for (uint m = 0u; !painted && alpha > 0u && m < pc.n_masks; m++) {
                if (!mask_covers(m, px, py))
                    continue;
                uint v = (result >> shift) & 0xffu, color = (masks[m * 8u + 4u] >> chan) & 0xffu;
                v = (v * (256u - alpha) + color * alpha + 128u) >> 8;
                result = (result & ~(0xffu << shift)) | (v << shift);
            }
            break;
        }
    }
    if (result != word)
        words[i] = result;
}

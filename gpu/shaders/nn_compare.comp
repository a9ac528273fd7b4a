// Equal, Greater, Less, LessOrEqual, GreaterOrEqual, and the bool
// logic And, Or, Xor and Not (b bound to a there) with numpy broadcasting (rank <= 6): out[i] = a[ia] OP b[ib]
// as one bool byte per element. Tensors are bound as 32-bit words so no 8-bit
// or 64-bit shader features are needed: int64 and float64 are (low, high)
// word pairs (float64 compared through its bits), 8-bit types are bytes of a
// word. Each invocation writes one whole output
// word (four bools), so no two invocations share a word.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { uint o[]; };

// models/vulkan/ops_misc.c: compare_push.
layout(push_constant, std430) uniform Push {
    uint n;         // output elements
    uint rank;      // 1..6
    uint op;        // ops_misc.c's CMP_*
    uint kind;      // element kind, ops_misc.c's EK_*
    uint shape[6];
    int a_st[6];
    int b_st[6];
} pc;

// Op codes: models/vulkan/ops_misc.c's CMP_*.
const uint EQUAL = 0, GREATER = 1, LESS = 2, LESS_EQUAL = 3, GREATER_EQUAL = 4, AND = 5, OR = 6, XOR = 7, NOT = 8;

const uint EK_F32 = 0, EK_I32 = 1, EK_I64 = 2, EK_U8 = 3, EK_I8 = 4, EK_F16 = 8, EK_F64 = 9;

// -1, 0 or 1 as x is less than, equal to or greater than y; 2 when
// unordered (a NaN): neither equal nor greater.
int order(int x, int y) { return x < y ? -1 : (x > y ? 1 : 0); }
int order(uint x, uint y) { return x < y ? -1 : (x > y ? 1 : 0); }

// A float64's bits as an unsigned key that orders as the values do (-0
// below +0: the caller takes zeros first); NaN not handled.
uvec2 f64_key(uvec2 v)
{
    return (v.y >> 31) != 0u ? ~v : uvec2(v.x, v.y | 0x80000000u);
}

bool f64_nan(uvec2 v)
{
    return (v.y & 0x7ff00000u) == 0x7ff00000u && ((v.y & 0xfffffu) | v.x) != 0u;
}

int compare_f64(uvec2 x, uvec2 y)
{
    if (f64_nan(x) || f64_nan(y))
        return 2;
    if (((x.y | y.y) & 0x7fffffffu) == 0u && (x.x | y.x) == 0u)
        return 0; // +-0 and +-0
    uvec2 kx = f64_key(x), ky = f64_key(y);
    return kx.y != ky.y ? order(kx.y, ky.y) : order(kx.x, ky.x);
}

int compare_at(int ia, int ib)
{
    switch (pc.kind) {
    case EK_F32: {
        float x = uintBitsToFloat(a[ia]), y = uintBitsToFloat(b[ib]);
        if (isnan(x) || isnan(y))
            return 2;
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    case EK_F16: { // float32 tensors of an fp16 context: 16-bit halves of a word
        float x = unpackHalf2x16(a[ia >> 1] >> ((ia & 1) * 16)).x;
        float y = unpackHalf2x16(b[ib >> 1] >> ((ib & 1) * 16)).x;
        if (isnan(x) || isnan(y))
            return 2;
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    case EK_I32:
        return order(int(a[ia]), int(b[ib]));
    case EK_I64: {
        int hi = order(int(a[2 * ia + 1]), int(b[2 * ib + 1]));
        return hi != 0 ? hi : order(a[2 * ia], b[2 * ib]);
    }
    case EK_F64:
        return compare_f64(uvec2(a[2 * ia], a[2 * ia + 1]), uvec2(b[2 * ib], b[2 * ib + 1]));
    case EK_U8:
        return order(bitfieldExtract(a[ia >> 2], (ia & 3) * 8, 8), bitfieldExtract(b[ib >> 2], (ib & 3) * 8, 8));
    default: // EK_I8
        return order(bitfieldExtract(int(a[ia >> 2]), (ia & 3) * 8, 8),
                     bitfieldExtract(int(b[ib >> 2]), (ib & 3) * 8, 8));
    }
}

uint result(uint e)
{
    uint r = e;
    int ia = 0, ib = 0;
    for (int k = int(pc.rank) - 1; k >= 0; k--) {
        uint c = r % pc.shape[k];
        r /= pc.shape[k];
        ia += int(c) * pc.a_st[k];
        ib += int(c) * pc.b_st[k];
    }
    if (pc.op >= AND) { // bools: a byte each, any nonzero true
        bool x = bitfieldExtract(a[ia >> 2], (ia & 3) * 8, 8) != 0u;
        bool y = bitfieldExtract(b[ib >> 2], (ib & 3) * 8, 8) != 0u;
        bool v = pc.op == AND ? x && y : (pc.op == OR ? x || y : (pc.op == XOR ? x != y : !x));
        return v ? 1u : 0u;
    }
    int c = compare_at(ia, ib); // 2 (unordered) makes every comparison false
    bool v;
    switch (pc.op) {
    case EQUAL: v = c == 0; break;
    case GREATER: v = c == 1; break;
    case LESS: v = c == -1; break;
    case LESS_EQUAL: v = c == -1 || c == 0; break;
    default: v = c == 0 || c == 1; break; // GREATER_EQUAL
    }
    return v ? 1u : 0u;
}

void main()
{
    uint w = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (w * 4u >= pc.n)
        return;
    uint v = 0u;
    for (uint k = 0u; k < 4u && w * 4u + k < pc.n; k++)
        v |= result(w * 4u + k) << (8u * k);
    o[w] = v;
}

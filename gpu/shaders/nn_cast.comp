// Cast between float64, float32, float16, int64, int32, int16, uint16, int8,
// uint8 and bool as models/cpu/elementwise.c's run_cast does it on x86:
// integers wrap to the narrower type; float to integer truncates toward zero
// and saturates to int64 first (NaN gives 0); every conversion to a float
// rounds once, to nearest even (float16: +-inf from 65520 on); anything to
// bool is "not zero" (NaN included). Floats are taken apart into sign,
// 64-bit integer mantissa and exponent and put together with integer
// operations, so the results are exact whatever the device does with
// denormals, and no 8-, 16- or 64-bit shader feature is needed: tensors are
// bound as 32-bit words (8-byte types a (low, high) pair, narrow types
// packed). Each invocation writes one whole output word.
#version 450

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint o[]; };

// models/vulkan/ops_misc.c: cast_push.
layout(push_constant, std430) uniform Push {
    uint n;         // elements
    uint from;      // element kinds, ops_misc.c's EK_*
    uint to;
    uint pad_;
} pc;

const uint EK_F32 = 0, EK_I32 = 1, EK_I64 = 2, EK_U8 = 3, EK_I8 = 4, EK_U16 = 5, EK_I16 = 6, EK_BOOL = 7,
           EK_F16 = 8, EK_F64 = 9;

uint size_of(uint k)
{
    if (k == EK_I64 || k == EK_F64)
        return 8u;
    if (k == EK_F32 || k == EK_I32)
        return 4u;
    return k == EK_U16 || k == EK_I16 || k == EK_F16 ? 2u : 1u;
}

bool is_float(uint k)
{
    return k == EK_F32 || k == EK_F16 || k == EK_F64;
}

// ---- 64-bit integers as (low, high) pairs

uvec2 neg64(uvec2 v)
{
    uint lo = ~v.x + 1u;
    return uvec2(lo, ~v.y + (lo == 0u ? 1u : 0u));
}

uvec2 shl64(uvec2 v, int s) // s in 0..63
{
    if (s == 0)
        return v;
    if (s >= 32)
        return uvec2(0u, v.x << uint(s - 32));
    return uvec2(v.x << uint(s), (v.y << uint(s)) | (v.x >> uint(32 - s)));
}

uvec2 shr64(uvec2 v, int s) // s >= 0
{
    if (s == 0)
        return v;
    if (s >= 64)
        return uvec2(0u);
    if (s >= 32)
        return uvec2(v.y >> uint(s - 32), 0u);
    return uvec2((v.x >> uint(s)) | (v.y << uint(32 - s)), v.y >> uint(s));
}

uvec2 add64(uvec2 v, uint a)
{
    uint carry;
    uint lo = uaddCarry(v.x, a, carry);
    return uvec2(lo, v.y + carry);
}

int msb64(uvec2 v) // v != 0
{
    return v.y != 0u ? 32 + findMSB(v.y) : findMSB(v.x);
}

uint bit64(uvec2 v, int q) // q in 0..63
{
    return q >= 32 ? (v.y >> uint(q - 32)) & 1u : (v.x >> uint(q)) & 1u;
}

bool any_below64(uvec2 v, int q) // any of v's bits below q
{
    if (q <= 0)
        return false;
    return q >= 64 ? v != uvec2(0u) : shl64(v, 64 - q) != uvec2(0u);
}

// ---- numbers taken apart

const uint ZERO = 0u, FINITE = 1u, INF = 2u, NAN_ = 3u;

// value = (-1)^neg * m * 2^e; for a NaN, `payload` holds its fraction as
// float64 lays it out (52 bits).
struct num {
    uint cls;
    bool neg;
    uvec2 m;
    int e;
    uvec2 payload;
};

num from_int(uvec2 v)
{
    bool neg = int(v.y) < 0;
    uvec2 m = neg ? neg64(v) : v; // INT64_MIN stays 2^63 read unsigned
    return num(m == uvec2(0u) ? ZERO : FINITE, neg, m, 0, uvec2(0u));
}

// A float of `p` significant bits (the implicit one included), exponent
// field `ebits` wide and fraction `frac`.
num from_float(bool neg, uint ex, uvec2 frac, int p, int ebits)
{
    uint all_ones = (1u << uint(ebits)) - 1u;
    int bias = int(all_ones >> 1);
    if (ex == all_ones) {
        bool nan = frac != uvec2(0u);
        return num(nan ? NAN_ : INF, neg, uvec2(0u), 0, shl64(frac, 53 - p));
    }
    if (ex == 0u)
        return num(frac == uvec2(0u) ? ZERO : FINITE, neg, frac, 2 - bias - p, uvec2(0u));
    return num(FINITE, neg, frac | shl64(uvec2(1u, 0u), p - 1), int(ex) - bias - (p - 1), uvec2(0u));
}

num from_f32(uint b)
{
    return from_float((b >> 31) != 0u, (b >> 23) & 0xffu, uvec2(b & 0x7fffffu, 0u), 24, 8);
}

num from_f64(uvec2 b)
{
    return from_float((b.y >> 31) != 0u, (b.y >> 20) & 0x7ffu, uvec2(b.x, b.y & 0xfffffu), 53, 11);
}

// The cpu's half_to_float, on bits: exact, NaN payloads kept unquieted.
uint half_to_float_bits(uint h)
{
    uint sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1fu)
        return sign | 0x7f800000u | (man << 13);
    if (exp != 0u)
        return sign | ((exp + 112u) << 23) | (man << 13);
    if (man == 0u)
        return sign;
    uint shift = uint(10 - findMSB(man)); // normalise a subnormal half
    man <<= shift;
    return sign | ((113u - shift) << 23) | ((man & 0x3ffu) << 13);
}

// ---- numbers put together

// n rounded to nearest even into a float of `p` significant bits and an
// exponent field `ebits` wide, as bits (low `p + ebits` of them); NaN is
// left to the caller.
uvec2 to_float(num n, int p, int ebits)
{
    int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
    uvec2 sign = n.neg ? shl64(uvec2(1u, 0u), p - 1 + ebits) : uvec2(0u);
    uvec2 inf = sign | shl64(uvec2((1u << uint(ebits)) - 1u, 0u), p - 1);
    if (n.cls == ZERO)
        return sign;
    if (n.cls == INF)
        return inf;
    int top = msb64(n.m) + n.e;      // n is in [2^top, 2^(top+1))
    int q = max(top, emin) - (p - 1); // exponent of the result's last bit
    int drop = q - n.e;
    uvec2 mant;
    if (drop <= 0) {
        mant = shl64(n.m, -drop);
    } else {
        mant = shr64(n.m, drop);
        bool at_least_half = drop <= 64 && bit64(n.m, drop - 1) != 0u;
        if (at_least_half && (any_below64(n.m, drop - 1) || (mant.x & 1u) != 0u))
            mant = add64(mant, 1u);
    }
    if (mant != uvec2(0u) && msb64(mant) >= p) { // rounded up to 2^p
        mant = shr64(mant, 1);
        q++;
    }
    if (mant == uvec2(0u))
        return sign;
    uvec2 hidden = shl64(uvec2(1u, 0u), p - 1);
    if ((mant & hidden) == uvec2(0u)) // subnormal
        return sign | mant;
    int field = q + (p - 1) + bias;
    if (field >= (1 << ebits) - 1)
        return inf;
    return sign | shl64(uvec2(uint(field), 0u), p - 1) | (mant & ~hidden);
}

// The cpu's sat_i64: NaN is 0, beyond int64 saturates, else toward zero.
uvec2 to_int(num n)
{
    if (n.cls == NAN_ || n.cls == ZERO)
        return uvec2(0u);
    if (n.cls == INF || msb64(n.m) + n.e >= 63)
        return n.neg ? uvec2(0u, 0x80000000u) : uvec2(0xffffffffu, 0x7fffffffu);
    uvec2 mag = n.e >= 0 ? shl64(n.m, n.e) : shr64(n.m, -n.e);
    return n.neg ? neg64(mag) : mag;
}

// ---- elements

// Input element e's bits (8-byte types whole, others in .x).
uvec2 load_bits(uint e)
{
    switch (size_of(pc.from)) {
    case 8u: return uvec2(x[2u * e], x[2u * e + 1u]);
    case 4u: return uvec2(x[e], 0u);
    case 2u: return uvec2(bitfieldExtract(x[e >> 1], int(e & 1u) * 16, 16), 0u);
    default: return uvec2(bitfieldExtract(x[e >> 2], int(e & 3u) * 8, 8), 0u);
    }
}

uvec2 sign_extend(int v)
{
    return uvec2(uint(v), v < 0 ? 0xffffffffu : 0u);
}

// An integer element's value as an int64.
uvec2 as_int(uvec2 b)
{
    switch (pc.from) {
    case EK_I32: return sign_extend(int(b.x));
    case EK_I16: return sign_extend(bitfieldExtract(int(b.x), 0, 16));
    case EK_I8: return sign_extend(bitfieldExtract(int(b.x), 0, 8));
    default: return b; // EK_I64 and the unsigned kinds
    }
}

num as_num(uvec2 b)
{
    switch (pc.from) {
    case EK_F64: return from_f64(b);
    case EK_F32: return from_f32(b.x);
    case EK_F16: return from_f32(half_to_float_bits(b.x));
    default: return from_int(as_int(b));
    }
}

// NaN into each float type as the cpu's conversions make it: float16 a
// canonical quiet NaN; float32 from float16 keeps the bits, from float64 is
// quieted with the payload's top bits; float64 quieted, payload kept.
uvec2 nan_to(num n)
{
    uint sign = n.neg ? 1u : 0u;
    switch (pc.to) {
    case EK_F16: return uvec2((sign << 15) | 0x7e00u, 0u);
    case EK_F32: {
        uint quiet = pc.from == EK_F16 ? 0u : 0x400000u;
        return uvec2((sign << 31) | 0x7f800000u | quiet | shr64(n.payload, 29).x, 0u);
    }
    default: return n.payload | uvec2(0u, (sign << 31) | 0x7ff00000u | 0x80000u);
    }
}

// Output element e's bits (8-byte types whole, others in the low bits of .x).
uvec2 convert(uint e)
{
    uvec2 b = load_bits(e);
    if (pc.from == pc.to) // a copy of the bits, as the cpu's memmove
        return b;
    if (!is_float(pc.from) && !is_float(pc.to)) // integers wrap
        return pc.to == EK_BOOL ? uvec2((b.x | b.y) != 0u ? 1u : 0u, 0u) : as_int(b);
    num n = as_num(b);
    if (pc.to == EK_BOOL)
        return uvec2(n.cls != ZERO ? 1u : 0u, 0u);
    if (!is_float(pc.to))
        return to_int(n);
    if (n.cls == NAN_)
        return nan_to(n);
    if (pc.to == EK_F16)
        return to_float(n, 11, 5);
    return pc.to == EK_F32 ? to_float(n, 24, 8) : to_float(n, 53, 11);
}

void main()
{
    uint w = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint osz = size_of(pc.to);
    if (osz >= 4u) {
        uint wpe = osz / 4u;
        uint e = w / wpe;
        if (e < pc.n) {
            uvec2 v = convert(e);
            o[w] = w % wpe == 0u ? v.x : v.y;
        }
        return;
    }
    uint per = 4u / osz, bits = osz * 8u;
    if (w * per >= pc.n)
        return;
    uint v = 0u;
    for (uint k = 0u; k < per && w * per + k < pc.n; k++)
        v |= bitfieldExtract(convert(w * per + k).x, 0, int(bits)) << (k * bits);
    o[w] = v;
}

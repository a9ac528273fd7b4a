// out[i] = a[ia] OP b[ib] over the output's shape (rank <= 6), contiguous out;
// the inputs' element strides are 0 along broadcast dims (numpy broadcasting).
// The ops follow models/cpu/elementwise.c's float32 forms.
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

layout(std430, set = 0, binding = 0) readonly buffer A { stored a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { stored b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Out { stored o[]; };

layout(push_constant, std430) uniform Push {
    uint n;
    uint rank;      // 1..6
    uint op;
    uint pad_;
    uint shape[6];
    int a_st[6];
    int b_st[6];
} pc;

// Op codes: models/vulkan/ops_basic.c's BIN_*.
const uint ADD = 0, SUB = 1, MUL = 2, DIV = 3, POW = 4, MAX = 5, MIN = 6, PRELU = 7;

// powf's special cases: GLSL's pow is undefined for x < 0 and for x = 0 with
// y <= 0.
float pow_c(float x, float y)
{
    if (y == 0.0 || x == 1.0)
        return 1.0;
    if (isnan(x) || isnan(y))
        return x + y;
    float ay = abs(y);
    bool y_int = floor(y) == y && !isinf(y);
    bool y_odd = y_int && ay < 16777216.0 && mod(ay, 2.0) == 1.0;
    if (x == 0.0) {
        float r = y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
        return y_odd && floatBitsToUint(x) == 0x80000000u ? -r : r; // -0 to an odd power
    }
    float ax = abs(x);
    if (isinf(y))
        return ax == 1.0 ? 1.0 : ((ax > 1.0) == (y > 0.0) ? uintBitsToFloat(0x7f800000u) : 0.0);
    if (x < 0.0 && !y_int && !isinf(x))
        return uintBitsToFloat(0x7fc00000u);
    float r = exp2(y * log2(ax));
    return x < 0.0 && y_odd ? -r : r;
}

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n)
        return;
    uint r = i;
    int ia = 0, ib = 0;
    for (int k = int(pc.rank) - 1; k >= 0; k--) {
        uint c = r % pc.shape[k];
        r /= pc.shape[k];
        ia += int(c) * pc.a_st[k];
        ib += int(c) * pc.b_st[k];
    }
    float x = float(a[ia]), y = float(b[ib]), v;
    switch (pc.op) {
    case ADD: v = x + y; break;
    case SUB: v = x - y; break;
    case MUL: v = x * y; break;
    case DIV: v = x / y; break;
    case POW: v = pow_c(x, y); break;
    // NaN in either input gives NaN, as numpy's maximum/minimum do.
    case MAX: v = isnan(x) || isnan(y) ? x + y : (x > y ? x : y); break;
    case MIN: v = isnan(x) || isnan(y) ? x + y : (x < y ? x : y); break;
    default: v = x < 0.0 ? x * y : x; break; // PRELU
    }
    o[i] = stored(v);
}

// out[i] = f(x[i]) for the float32 activations and math of
// models/cpu/elementwise.c and models/cpu/unary.c; `a` and `b` are the op's
// parameters (alpha/beta, Clip's min/max, Selu's alpha/gamma).
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
layout(std430, set = 0, binding = 1) writeonly buffer Out { stored o[]; };

layout(push_constant, std430) uniform Push {
    uint n;
    uint op;
    float a;
    float b;
} pc;

// Op codes: models/vulkan/ops_basic.c's UN_*, then models/vulkan/ops_unary.c's.
const uint RELU = 0, LEAKYRELU = 1, CLIP = 2, SIGMOID = 3, HARDSIGMOID = 4, HARDSWISH = 5, TANH = 6, EXP = 7,
           LOG = 8, SQRT = 9, NEG = 10, ABS = 11, RECIPROCAL = 12;
const uint FLOOR = 32, CEIL = 33, ROUND = 34, SIGN = 35, SIN = 36, COS = 37, ERF = 38, ELU = 39, SELU = 40,
           CELU = 41, THRESHOLDEDRELU = 42, SOFTPLUS = 43, SOFTSIGN = 44, MISH = 45, GELU = 46, GELU_TANH = 47;

// C's fmaxf/fminf: a NaN operand yields the other one (GLSL's max/min leave
// that undefined).
float fmax_c(float p, float q) { return isnan(p) ? q : (isnan(q) ? p : (p > q ? p : q)); }
float fmin_c(float p, float q) { return isnan(p) ? q : (isnan(q) ? p : (p < q ? p : q)); }

// exp(v) - 1 without the cancellation near 0 (a Taylor series there).
float expm1_(float v)
{
    if (abs(v) >= 0.5)
        return exp(v) - 1.0;
    return v * (1.0 + v * (1.0 / 2.0 + v * (1.0 / 6.0 + v * (1.0 / 24.0 + v * (1.0 / 120.0 +
           v * (1.0 / 720.0 + v * (1.0 / 5040.0)))))));
}

// log(1 + e) for e >= 0, exact for small e (a series there).
float log1p_(float e)
{
    if (e >= 0.1)
        return log(1.0 + e);
    return e * (1.0 - e * (1.0 / 2.0 - e * (1.0 / 3.0 - e * (1.0 / 4.0 - e * (1.0 / 5.0 - e * (1.0 / 6.0))))));
}

float softplus_(float v) { return v > 0.0 ? v + log1p_(exp(-v)) : log1p_(exp(v)); }

// x tanh(softplus(x)) = x n / (n + 2) with n = e^x (e^x + 2) (one exp);
// x itself where that is 1 in float and n would overflow.
float mish_(float v)
{
    float e = exp(min(v, 20.0)), n = e * (e + 2.0);
    return v > 20.0 ? v : v * (n / (n + 2.0));
}

// 1 - erf(x) for x >= 1: Abramowitz and Stegun 7.1.26 (erf within 1.5e-7),
// as models/cpu/unary.c computes it.
float erfc_tail(float x)
{
    float t = 1.0 / (1.0 + 0.3275911 * x);
    float p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return p * exp(-x * x);
}

// erf(x) for |x| < 1: its Taylor series to x^21 (coefficients 1 / (n! (2n + 1))).
float erf_near0(float x)
{
    float x2 = x * x;
    float s = 1.0 - x2 * (1.0 / 3.0 - x2 * (1.0 / 10.0 - x2 * (1.0 / 42.0 - x2 * (1.0 / 216.0 - x2 * (1.0 / 1320.0 -
              x2 * (1.0 / 9360.0 - x2 * (1.0 / 75600.0 - x2 * (1.0 / 685440.0 - x2 * (1.0 / 6894720.0 -
              x2 * (1.0 / 76204800.0))))))))));
    return 1.1283791670955126 * x * s;
}

float erf_(float v)
{
    float x = abs(v), r = x < 1.0 ? erf_near0(x) : 1.0 - erfc_tail(x);
    return isnan(v) ? v : (v < 0.0 ? -r : r);
}

// x (1 + erf(x / sqrt 2)) / 2; below -sqrt 2, 1 + erf is erfc_tail itself.
float gelu_(float v)
{
    float y = v * 0.7071067811865476, ay = abs(y);
    float one_plus = y >= 0.0 ? 1.0 + erf_(y) : (ay < 1.0 ? 1.0 - erf_near0(ay) : erfc_tail(ay));
    return isnan(v) ? v : v * 0.5 * one_plus;
}

// x (1 + tanh(u)) / 2 = x sigmoid(2u), from e^-|2u|: no overflow, no cancellation.
float gelu_tanh_(float v)
{
    float w = 2.0 * 0.7978845608028654 * (v + 0.044715 * v * v * v), e = exp(-abs(w));
    return isnan(v) ? v : v * ((w > 0.0 ? 1.0 : e) / (1.0 + e));
}

// sin and cos after reducing v by whole turns (2 pi split in two parts so
// the product k * 2 pi loses nothing): the device's are accurate in
// [-pi, pi] only.
float turns_reduced(float v)
{
    float k = roundEven(v * 0.15915494309189535);
    return (v - k * 6.28125) - k * 0.001935307179586232;
}

#define NAN uintBitsToFloat(0x7fc00000u)

void main()
{
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (i >= pc.n)
        return;
    float v = float(x[i]), r;
    switch (pc.op) {
    case RELU: r = v > 0.0 ? v : 0.0; break;
    case LEAKYRELU: r = v < 0.0 ? v * pc.a : v; break;
    case CLIP: r = fmin_c(fmax_c(v, pc.a), pc.b); break;
    case SIGMOID: r = 1.0 / (1.0 + exp(-v)); break;
    case HARDSIGMOID: r = fmax_c(0.0, fmin_c(1.0, pc.a * v + pc.b)); break;
    case HARDSWISH: r = v * fmax_c(0.0, fmin_c(1.0, v * (1.0 / 6.0) + 0.5)); break;
    // tanh(+-15) is +-1 in float; clamping keeps exp-based forms from inf/inf.
    case TANH: r = isnan(v) ? v : tanh(clamp(v, -15.0, 15.0)); break;
    case EXP: r = exp(v); break;
    case LOG: r = log(v); break;
    case SQRT: r = sqrt(v); break;
    case NEG: r = -v; break;
    case ABS: r = abs(v); break;
    case FLOOR: r = floor(v); break;
    case CEIL: r = ceil(v); break;
    case ROUND: r = roundEven(v); break;
    // Keeps a zero's sign and a NaN, as the cpu does.
    case SIGN: r = v > 0.0 ? 1.0 : (v < 0.0 ? -1.0 : v); break;
    // sin and cos of an infinity or a NaN are NaN.
    case SIN: r = isinf(v) || isnan(v) ? NAN : sin(turns_reduced(v)); break;
    case COS: r = isinf(v) || isnan(v) ? NAN : cos(turns_reduced(v)); break;
    case ERF: r = erf_(v); break;
    case ELU: r = v < 0.0 ? pc.a * expm1_(v) : v; break;
    case SELU: r = v > 0.0 ? pc.b * v : pc.b * pc.a * expm1_(v); break;
    case CELU: r = v > 0.0 ? v : pc.a * expm1_(v / pc.a); break;
    case THRESHOLDEDRELU: r = v > pc.a ? v : 0.0; break;
    case SOFTPLUS: r = softplus_(v); break;
    case SOFTSIGN: r = v / (1.0 + abs(v)); break;
    case MISH: r = mish_(v); break;
    case GELU: r = gelu_(v); break;
    case GELU_TANH: r = gelu_tanh_(v); break;
    default: r = 1.0 / v; break; // RECIPROCAL
    }
    o[i] = stored(r);
}

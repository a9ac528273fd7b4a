// out[i] = f(x[i]) for the float32 activations and math of
// models/cpu/elementwise.c; `a` and `b` are the op's parameters (alpha/beta,
// Clip's min/max).
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

// Op codes: models/vulkan/ops_basic.c's UN_*.
const uint RELU = 0, LEAKYRELU = 1, CLIP = 2, SIGMOID = 3, HARDSIGMOID = 4, HARDSWISH = 5, TANH = 6, EXP = 7,
           LOG = 8, SQRT = 9, NEG = 10, ABS = 11, RECIPROCAL = 12;

// C's fmaxf/fminf: a NaN operand yields the other one (GLSL's max/min leave
// that undefined).
float fmax_c(float p, float q) { return isnan(p) ? q : (isnan(q) ? p : (p > q ? p : q)); }
float fmin_c(float p, float q) { return isnan(p) ? q : (isnan(q) ? p : (p < q ? p : q)); }

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
    default: r = 1.0 / v; break; // RECIPROCAL
    }
    o[i] = stored(r);
}

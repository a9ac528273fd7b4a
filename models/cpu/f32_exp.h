// e^x in float32 in a form the vectorizer takes: libm's expf is a call per
// element, which keeps a loop scalar. unary.c's activations and Softmax
// (reduce.c) use it. Only models/cpu/ includes this.
#ifndef REEL_MODELS_CPU_F32_EXP_H
#define REEL_MODELS_CPU_F32_EXP_H

#include <stdint.h>
#include <string.h>

static inline float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// e^x: x = k ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, the first
// short enough that k * it is exact), e^r by its Taylor series to r^7
// (relative error under 1e-8), 2^k put in the exponent in two halves so
// that results down to the subnormals come out. Overflows to inf above
// 88.72, underflows to 0 below -103.9, as expf does.
static inline float f32_exp(float x)
{
    float xc = x == x ? (x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x)) : 0.0f;
    const float round_magic = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
    float kf = (xc * 1.44269504088896341f + round_magic) - round_magic;
    float r = (xc - kf * 0.693145751953125f) - kf * 1.428606765330187e-06f;
    float p = 1.0f + r * (1.0f + r * (1.0f / 2 + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
              r * (1.0f / 720 + r * (1.0f / 5040)))))));
    int32_t k = (int32_t)kf, k1 = k / 2, k2 = k - k1;
    float y = p * float_of((uint32_t)(k1 + 127) << 23) * float_of((uint32_t)(k2 + 127) << 23);
    return x == x ? y : x;
}

#endif

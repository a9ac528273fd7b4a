// Cross-layer equalization (Nagel et al., "Data-Free Quantization") of a
// depthwise Conv followed by a pointwise one: the depthwise output's channel
// c scaled by k_c and the pointwise weights reading it by 1 / k_c leave the
// float model's output as it was, while the channels of small range get
// more of the uint8 steps that the largest one sets.
#ifndef REEL_MODELS_QUANT_EQUALIZE_H
#define REEL_MODELS_QUANT_EQUALIZE_H

#include <stdint.h>

// k_c = sqrt(R / r_c) for the channels with r_c above R / 16 (R the largest
// r_c of `absmax`), else 1: the square root shares the gain between the
// activation's steps and the pointwise weights' (which lose as much as the
// activation gains); the cap leaves near-dead channels alone. Measured on
// BlazeFace: the full ratio (k_c = R / r_c) made its boxes worse.
void equalize_factors(const double *absmax, int64_t channels, float *k);

#endif

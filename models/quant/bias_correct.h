// Bias correction (as in Nagel et al., "Data-Free Quantization"): rounding
// a conv's weights to int8 shifts each output channel's mean by
// sum((dequantized - float weight) x mean input); subtracting that shift
// from the bias takes it back out. The input means come from calibration.
#ifndef REEL_MODELS_QUANT_BIAS_CORRECT_H
#define REEL_MODELS_QUANT_BIAS_CORRECT_H

#include <stdbool.h>
#include <stdint.h>

// Per-channel sums and largest magnitudes of calibration tensors (axis 1
// of [N, C, ...]).
typedef struct chan_stats {
    int64_t channels; // 0 until the first tensor; -1 once shapes disagree
    int64_t count;    // values summed per channel
    double *sum;
    double *absmax;
} chan_stats;

void chan_stats_add(chan_stats *m, const float *v, int rank, const int64_t *shape);
void chan_stats_clear(chan_stats *m);

// The shift of each of a Conv's `out_channels` outputs: weights [out, in/group,
// k...] (`inner` = in/group x kernel elements per output), int8 `wq` at
// `scales` (one per output channel, or one), input channel means `mean` of
// `in_channels`. Writes delta[out_channels]; false when the shapes disagree.
bool conv_bias_shift(const float *w, const int8_t *wq, const float *scales, bool per_channel, int64_t out_channels,
                     int64_t inner, int64_t kernel, int64_t group, const chan_stats *mean, float *delta);

#endif

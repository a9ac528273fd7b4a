// 3x3 stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3): each
// 2x2 block of outputs from a 4x4 block of input with 16 multiplies per
// input channel instead of 36, as 16 GEMMs (one per point of the 4x4
// transform domain) between transforms of the weights, the input and the
// output. Errors stay at a few float roundings (the transforms add and
// halve; no large constants). Only conv.c uses it.
#ifndef REEL_MODELS_CPU_WINOGRAD_H
#define REEL_MODELS_CPU_WINOGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/cpu/nn.h"

typedef struct nn_wino_plan {
    int64_t C, M, H, W, OH, OW, pt, pl;
    int64_t TH, TW, T; // tiles of 2x2 outputs: rows, columns, all
} nn_wino_plan;

// Whether a conv with C input and M output channels (one group) over window
// w is worth doing this way; fills *p when it is. REEL_CONV_WINOGRAD=0 turns
// it off (to compare).
bool nn_wino_plan_init(int64_t C, int64_t M, const nn_window *w, nn_wino_plan *p);

// Floats of the transformed weights U, and of the scratch nn_wino_run needs
// besides them.
size_t nn_wino_weights_floats(const nn_wino_plan *p);
size_t nn_wino_scratch(const nn_wino_plan *p);

// U = the weights wt[M, C, 3, 3] transformed (spread over ctx's workers).
void nn_wino_weights(const nn_wino_plan *p, const float *wt, float *U, const reel_exec_ctx *ctx);

// y[M, OH, OW] = epilogue(x[C, H, W] conv the weights U) for one image;
// epilogue(arg, m, row, oh, len) finishes output row oh of channel m
// (bias, residual, activation) right after it is written. Work spreads
// over ctx's workers.
typedef void (*nn_wino_epilogue)(void *arg, int64_t m, float *row, int64_t oh, int64_t len);
void nn_wino_run(const nn_wino_plan *p, const float *x, const float *U, float *y, float *scratch,
                 const reel_exec_ctx *ctx, nn_wino_epilogue epilogue, void *arg);

#endif

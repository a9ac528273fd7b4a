// Depthwise convolution of one 2-D channel, the fast paths for the common
// windows (3x3 and 5x5, dilation 1): stride 1 with the output as large as
// the input ("same" pads), and stride 2 with any pads. Only conv.c uses it.
#ifndef REEL_MODELS_CPU_DEPTHWISE_H
#define REEL_MODELS_CPU_DEPTHWISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/cpu/microgemm.h"
#include "models/cpu/nn.h"

typedef struct nn_dw_plan {
    int k, s;                // window side, stride
    bool rows;               // row by row (3x3, AVX-512)
    int64_t H, W, OH, OW;
    int64_t pt, pl;          // pads before
    int64_t Hd, Wd, r0, c0;  // stride 2: phase planes of Hd x Wd, from row r0 / column c0 of each phase
    size_t scratch;          // floats one worker needs
} nn_dw_plan;

// Whether window w has a fast path; fills *p when it does.
bool nn_dw_plan_init(const nn_window *w, nn_dw_plan *p);

// The activation fused into the output: NN_ACT_NONE, _RELU or _CLIP
// (models/cpu/microgemm.h) with Clip's bounds.
typedef struct nn_dw_act {
    int act;
    float lo, hi;
} nn_dw_act;

// Readies a worker's scratch (p->scratch floats) before its first channel.
void nn_dw_prepare(const nn_dw_plan *p, float *scratch);

// y[OH * OW] = act(bias + the window wt[k * k] over x[H * W]) (pads read as 0).
void nn_dw_run(const nn_dw_plan *p, const float *x, const float *wt, float bias, const nn_dw_act *a, float *y,
               float *scratch);

#endif

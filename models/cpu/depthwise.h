// Depthwise convolution of one 2-D channel, the fast paths for the common
// windows (3x3 and 5x5, dilation 1): stride 1 with the output as large as
// the input ("same" pads), and stride 2 with any pads; and a full conv of
// few channels by the same rows (nn_stem_*). conv.c uses it, and qdepthwise.c
// for int8 depthwise convs (their integer sums are exact in float).
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

// A full conv (one group) of few input channels with a 3x3 window, stride
// 2, one column of padding on the left (a network's stem; AVX-512 only).
// REEL_CONV_STEM=0 turns it off.
enum { NN_STEM_C_MAX = 4 };
bool nn_stem_ok(const nn_window *w, int64_t C);

// Output rows [oh0, oh1) of one image: y[M][OH][OW] = act(bias + conv(x[C][H][W], wt[M][C][3][3]) + res),
// bias and res (y's layout) may be NULL.
void nn_stem_run(const nn_window *w, int64_t C, int64_t M, const float *x, const float *wt, const float *bias,
                 const float *res, const nn_dw_act *a, float *y, int64_t oh0, int64_t oh1);

#endif

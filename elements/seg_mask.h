// YOLOv8-seg instance masks: a detection's mask coefficients times the
// model's prototypes, in frame pixels, as the run lengths of reel_mask.
// A plain function on plain arrays, so that tests can call it directly.
#ifndef REEL_ELEMENTS_SEG_MASK_H
#define REEL_ELEMENTS_SEG_MASK_H

#include "reel/reel.h"

// Prototypes [channels, height, width] (float32, row-major), covering the
// whole model input at a lower resolution (YOLOv8: a quarter).
typedef struct reel_protos {
    const float *v;
    int channels, height, width;
} reel_protos;

// The mask of box d (frame pixels, d->x0.. in frame coordinates) whose
// coefficient k is coeffs[k * step]: a frame pixel is on when its centre is
// inside the box and sigmoid(coeffs . protos) > 0.5 there, the sum
// interpolated bilinearly between prototype pixel centres (edges held).
// `t` maps frame to model input. Appends the runs to `runs` (uint32_t)
// and fills *mask (detection left to the caller).
void reel_seg_mask(const reel_protos *p, const float *coeffs, int64_t step, const reel_detection *d,
                   const reel_transform *t, int frame_width, int frame_height, GArray *runs, reel_mask *mask);

#endif

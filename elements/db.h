// DB (Differentiable Binarization) post-processing, as PaddleOCR's text
// detectors need it: the probability map thresholded, each connected region
// of text pixels fitted with its minimum-area rectangle, scored by the mean
// probability inside, grown back ("unclipped") by the margin the model was
// trained to shrink text by. Plain functions on a plain array, for tests.
#ifndef REEL_ELEMENTS_DB_H
#define REEL_ELEMENTS_DB_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct reel_db_params {
    float binarize;      // a pixel is text when its probability exceeds this (PaddleOCR: 0.3)
    float box_threshold; // keep regions whose mean probability is at least this (0.6)
    float unclip_ratio;  // grow by area * ratio / perimeter on every side (1.5)
    float min_size;      // drop boxes whose shorter side is under this, before growing (3)
    int max_boxes;       // stop after this many regions (1000)
} reel_db_params;

// A text region's rotated rectangle in map pixels (pixel i spans [i, i+1)):
// corners clockwise from the top left, the top edge being the side nearer
// horizontal (top left, top right, bottom right, bottom left).
typedef struct reel_db_box {
    float points[4][2];
    float score;
} reel_db_box;

// Appends the boxes of the width x height map prob (row-major) to out
// (a GArray of reel_db_box), in the order their regions' first pixels come
// row by row. Returns how many.
int reel_db_boxes(const float *prob, int width, int height, const reel_db_params *p, GArray *out);

// The minimum-area rectangle around n points (xy pairs), ordered as
// reel_db_box's corners; false when the points are fewer than 3 or on a line.
bool reel_min_area_rect(const float *xy, int n, float corners[4][2]);

#endif

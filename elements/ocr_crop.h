// Cutting a text region upright out of a host frame for ocr's models (the
// recognizer and the angle classifier), as PaddleOCR's get_rotate_crop_image
// and resize_norm_img do: bilinear, B, G, R scaled to [-1, 1].
#ifndef REEL_ELEMENTS_OCR_CROP_H
#define REEL_ELEMENTS_OCR_CROP_H

#include <stdbool.h>

#include "reel/reel.h"

// A host frame: its first plane's format, its size.
typedef struct reel_ocr_frame {
    const reel_buffer *b;
    reel_pixfmt fmt;
    int w, h;
} reel_ocr_frame;

// A region as it reads: its corners, top left first clockwise, and its
// width and height along them.
typedef struct reel_ocr_region {
    float c[4][2];
    float w, h;
} reel_ocr_region;

// The region of a detection (its 4 landmarks, else its box). A region much
// taller than wide is taken as turned a quarter (PaddleOCR turns such crops
// counter-clockwise). False when it is empty (nothing to read).
bool reel_ocr_region_of(const reel_detection *d, reel_ocr_region *r);

// The region turned 180 degrees: the same quad, read from the other corner.
void reel_ocr_region_turn(reel_ocr_region *r);

// Columns the region takes at `height` rows keeping its aspect, 1..max_width.
int reel_ocr_crop_width(const reel_ocr_region *r, int height, int max_width);

// Writes the region, scaled to `cw` columns and `height` rows, into the
// left of a [3, height, width] plane set (B, G, R in [-1, 1]) and zeros in
// the rest of each row.
void reel_ocr_crop(const reel_ocr_frame *f, const reel_ocr_region *r, int cw, int height, int width, float *out);

#endif

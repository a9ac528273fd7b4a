// An activation's calibration range: the smallest and largest value seen and
// a histogram of every value, from which a percentile range is read.
#ifndef REEL_MODELS_QUANT_RANGE_H
#define REEL_MODELS_QUANT_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUANT_RANGE_BINS 4096

typedef struct quant_range {
    double min, max;
    // Bins over [-half, half): half is a power of two that doubles when a
    // value falls outside (bins merge pairwise), so one pass needs no
    // second look at the data and no stored frames.
    double half;
    int64_t count;
    int64_t bins[QUANT_RANGE_BINS];
} quant_range;

void quant_range_init(quant_range *r);
void quant_range_add(quant_range *r, const float *v, size_t n);

// [lo, hi] after the method: minmax, or each tail cut at (100 - percentile) / 2
// percent (never beyond min/max). Always includes 0 (uint8 needs an exact 0).
void quant_range_get(const quant_range *r, bool percentile, double keep_percent, double *lo, double *hi);

// uint8 asymmetric parameters for [lo, hi]. Not rounded to a few
// significant bits: scales of short mantissas make the sum of two quantized
// tensors land exactly on half steps of the next (ties), where runtimes
// that round differently part.
void quant_range_uint8(double lo, double hi, float *scale, uint8_t *zero_point);

#endif

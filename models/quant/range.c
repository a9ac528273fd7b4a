// Calibration ranges: min/max and a self-widening histogram per tensor.
#include <math.h>
#include <string.h>

#include "models/quant/range.h"

void quant_range_init(quant_range *r)
{
    memset(r, 0, sizeof *r);
    r->min = INFINITY;
    r->max = -INFINITY;
}

// Doubles the histogram's span: old bin j lands in new bin (j + B/2) / 2.
static void widen(quant_range *r)
{
    int64_t merged[QUANT_RANGE_BINS] = { 0 };
    for (int j = 0; j < QUANT_RANGE_BINS; j++)
        merged[(j + QUANT_RANGE_BINS / 2) / 2] += r->bins[j];
    memcpy(r->bins, merged, sizeof merged);
    r->half *= 2;
}

void quant_range_add(quant_range *r, const float *v, size_t n)
{
    double lo = INFINITY, hi = -INFINITY;
    size_t finite = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue; // an inf or NaN would make every scale useless
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
        finite++;
    }
    if (!finite)
        return;
    r->min = lo < r->min ? lo : r->min;
    r->max = hi > r->max ? hi : r->max;
    double mag = fmax(fabs(lo), fabs(hi));
    if (r->half == 0)
        r->half = mag > 0 ? exp2(ceil(log2(mag))) : 0x1p-20;
    while (mag >= r->half)
        widen(r);
    double per_bin = QUANT_RANGE_BINS / (2 * r->half);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i]))
            continue;
        long b = (long)((v[i] + r->half) * per_bin);
        r->bins[b < 0 ? 0 : b >= QUANT_RANGE_BINS ? QUANT_RANGE_BINS - 1 : b]++;
    }
    r->count += (int64_t)finite;
}

void quant_range_get(const quant_range *r, bool percentile, double keep_percent, double *lo, double *hi)
{
    *lo = r->count ? r->min : 0;
    *hi = r->count ? r->max : 0;
    if (percentile && r->count) {
        double cut = (100 - keep_percent) / 200 * (double)r->count, width = 2 * r->half / QUANT_RANGE_BINS;
        int64_t acc = 0;
        int a = 0, b = QUANT_RANGE_BINS - 1;
        while (a < QUANT_RANGE_BINS - 1 && (double)(acc + r->bins[a]) <= cut)
            acc += r->bins[a++];
        // The cut falls inside bin a: where, by its share of the bin's count
        // (values taken as spread evenly over the bin).
        double lo_cut = -r->half + (a + (cut - (double)acc) / (double)(r->bins[a] ? r->bins[a] : 1)) * width;
        acc = 0;
        while (b > 0 && (double)(acc + r->bins[b]) <= cut)
            acc += r->bins[b--];
        double hi_cut = -r->half + (b + 1 - (cut - (double)acc) / (double)(r->bins[b] ? r->bins[b] : 1)) * width;
        *lo = fmax(*lo, lo_cut);
        *hi = fmin(*hi, hi_cut);
        if (*lo > *hi)
            *lo = *hi = (*lo + *hi) / 2;
    }
    *lo = fmin(*lo, 0);
    *hi = fmax(*hi, 0);
}

void quant_range_uint8(double lo, double hi, float *scale, uint8_t *zero_point)
{
    if (hi - lo <= 0) {
        *scale = 1;
        *zero_point = 0;
        return;
    }
    *scale = (float)((hi - lo) / 255);
    double z = rint(-lo / (double)*scale);
    *zero_point = (uint8_t)(z < 0 ? 0 : z > 255 ? 255 : z);
}

// Factors of cross-layer equalization (see equalize.h).
#include <math.h>

#include "models/quant/equalize.h"

#define EQUALIZE_CAP 16.0

void equalize_factors(const double *absmax, int64_t channels, float *k)
{
    double top = 0;
    for (int64_t c = 0; c < channels; c++)
        top = absmax[c] > top ? absmax[c] : top;
    for (int64_t c = 0; c < channels; c++)
        k[c] = top > 0 && absmax[c] > top / EQUALIZE_CAP ? (float)sqrt(top / absmax[c]) : 1.0f;
}

// Collapsing a strided walk over a tensor to as few dims as possible, for
// kernels that walk one (strided copies, reductions). Only models/cpu/
// includes this.
#ifndef REEL_MODELS_CPU_COLLAPSE_H
#define REEL_MODELS_CPU_COLLAPSE_H

#include <stdint.h>

// Drops size-1 dims and merges neighbours whose strides make them one run:
// writes the merged dims and strides to cd/cs (room for rank entries, at
// least one) and returns how many. With nothing left, one dim of 1 with
// stride `unit`. Sizes must not be 0.
static inline int reel_collapse_dims(int rank, const int64_t *dims, const int64_t *strides, int64_t *cd,
                                     int64_t *cs, int64_t unit)
{
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (r > 0 && cs[r - 1] == strides[d] * dims[d]) {
            cd[r - 1] *= dims[d];
            cs[r - 1] = strides[d];
        } else {
            cd[r] = dims[d];
            cs[r] = strides[d];
            r++;
        }
    }
    if (r == 0) {
        cd[0] = 1;
        cs[0] = unit;
        r = 1;
    }
    return r;
}

#endif

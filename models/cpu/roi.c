// NonMaxSuppression, RoiAlign, GridSample, MaxUnpool.
#include "models/op.h"

const reel_op *const reel_ops_roi[] = {
    NULL,
};

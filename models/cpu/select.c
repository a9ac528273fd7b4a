// ArgMax, ArgMin, Hardmax, CumSum, TopK.
#include "models/op.h"

const reel_op *const reel_ops_select[] = {
    NULL,
};

// LayerNormalization, GroupNormalization, InstanceNormalization, MVN, LRN.
#include "models/op.h"

const reel_op *const reel_ops_normalize[] = {
    NULL,
};

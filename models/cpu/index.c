// GatherElements, GatherND, Scatter*, Compress, NonZero, OneHot, Unique.
#include "models/op.h"

const reel_op *const reel_ops_index[] = {
    NULL,
};

// Unary math and activations: Abs, Neg, Log, Erf, Gelu, trig, Elu, ....
#include "models/op.h"

const reel_op *const reel_ops_unary[] = {
    NULL,
};

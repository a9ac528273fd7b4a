// SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss.
#include "models/op.h"

const reel_op *const reel_ops_loss[] = {
    NULL,
};

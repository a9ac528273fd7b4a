// DFT, STFT, windows, MelWeightMatrix.
#include "models/op.h"

const reel_op *const reel_ops_signal[] = {
    NULL,
};

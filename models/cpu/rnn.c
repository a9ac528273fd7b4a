// RNN, GRU, LSTM.
#include "models/op.h"

const reel_op *const reel_ops_rnn[] = {
    NULL,
};

// Logic, bitwise, Mod, variadic Max/Min/Mean/Sum, CastLike.
#include "models/op.h"

const reel_op *const reel_ops_logic[] = {
    NULL,
};

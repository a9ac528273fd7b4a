// Trilu, EyeLike, Range, Size, Tile, DepthToSpace, SpaceToDepth, ....
#include "models/op.h"

const reel_op *const reel_ops_layout[] = {
    NULL,
};

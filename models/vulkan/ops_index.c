// Vulkan kernels: GatherElements, DepthToSpace, SpaceToDepth.
#include "models/vulkan/vk_ops.h"

const vk_op *const vk_ops_index[] = {
    NULL,
};

// Vulkan kernels: LayerNormalization, GroupNormalization, InstanceNormalization.
#include "models/vulkan/vk_ops.h"

const vk_op *const vk_ops_norm[] = {
    NULL,
};

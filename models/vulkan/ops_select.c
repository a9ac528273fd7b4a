// Vulkan kernels: ArgMax, ArgMin, TopK.
#include "models/vulkan/vk_ops.h"

const vk_op *const vk_ops_select[] = {
    NULL,
};

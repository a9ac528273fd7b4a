// Vulkan kernels: the unary ops of models/cpu/unary.c.
#include "models/vulkan/vk_ops.h"

const vk_op *const vk_ops_unary[] = {
    NULL,
};

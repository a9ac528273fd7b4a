// Vulkan kernels: a compute pipeline per (kernel, workgroup size) through the
// device's pipeline cache; dispatch with push descriptors, push constants and
// optional timestamps.
#include "gpu/vulkan/vk.h"

typedef struct vk_kernel {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    PFN_vkCmdPushDescriptorSetKHR push_descriptors;
} vk_kernel;

void vk_kernel_destroy(reel_kernel *k)
{
    vk_kernel *vkk = k->priv;
    VkDevice d = vk_of(k->dev)->dev;
    if (!vkk)
        return;
    vkDestroyPipeline(d, vkk->pipeline, NULL);
    vkDestroyPipelineLayout(d, vkk->layout, NULL);
    vkDestroyDescriptorSetLayout(d, vkk->set_layout, NULL);
    vkDestroyShaderModule(d, vkk->module, NULL);
    g_free(vkk);
    k->priv = NULL;
}

int vk_kernel_create(reel_kernel *k, GError **error)
{
    vk_priv *vk = vk_of(k->dev);
    const reel_kernel_desc *desc = k->desc;
    vk_kernel *vkk = g_new0(vk_kernel, 1);
    k->priv = vkk;
    vkk->push_descriptors = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(vk->dev, "vkCmdPushDescriptorSetKHR");

    VkDescriptorSetLayoutBinding bindings[REEL_KERNEL_MAX_BUFFERS];
    for (int i = 0; i < desc->n_buffers; i++)
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = (uint32_t)i,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    VkDescriptorSetLayoutCreateInfo dl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
        .bindingCount = (uint32_t)desc->n_buffers,
        .pBindings = bindings,
    };
    VkPushConstantRange range = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .size = (uint32_t)desc->push_size,
    };
    VkShaderModuleCreateInfo mi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = *desc->spirv_size,
        .pCode = desc->spirv,
    };
    VkResult r;
    if ((r = vkCreateShaderModule(vk->dev, &mi, NULL, &vkk->module)) != VK_SUCCESS ||
        (r = vkCreateDescriptorSetLayout(vk->dev, &dl, NULL, &vkk->set_layout)) != VK_SUCCESS)
        goto fail;
    VkPipelineLayoutCreateInfo li = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &vkk->set_layout,
        .pushConstantRangeCount = desc->push_size ? 1 : 0,
        .pPushConstantRanges = &range,
    };
    if ((r = vkCreatePipelineLayout(vk->dev, &li, NULL, &vkk->layout)) != VK_SUCCESS)
        goto fail;
    // Workgroup size is specialization constant 0 in every shader; the
    // kernel's own constants follow as 1..n.
    uint32_t values[1 + REEL_KERNEL_MAX_CONSTANTS] = { k->local_size };
    VkSpecializationMapEntry entries[1 + REEL_KERNEL_MAX_CONSTANTS];
    for (uint32_t i = 0; i <= k->n_constants; i++) {
        if (i)
            values[i] = k->constants[i - 1];
        entries[i] = (VkSpecializationMapEntry){ .constantID = i, .offset = i * sizeof(uint32_t),
                                                 .size = sizeof(uint32_t) };
    }
    VkComputePipelineCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = vkk->module,
            .pName = "main",
            .pSpecializationInfo = &(VkSpecializationInfo){
                .mapEntryCount = 1 + k->n_constants,
                .pMapEntries = entries,
                .dataSize = (1 + k->n_constants) * sizeof(uint32_t),
                .pData = values,
            },
        },
        .layout = vkk->layout,
    };
    // The cache is externally synchronized; kernel creation is rare.
    g_mutex_lock(&vk->submit_lock);
    r = vkCreateComputePipelines(vk->dev, vk->cache, 1, &pi, NULL, &vkk->pipeline);
    g_mutex_unlock(&vk->submit_lock);
    if (r != VK_SUCCESS)
        goto fail;
    return 0;
fail:
    vk_kernel_destroy(k);
    g_set_error(error, REEL_ERROR, vk_error_code(r), "%s: creating kernel %s: %s", k->dev->info.spec,
                desc->name, vk_result_name(r));
    return vk_error_code(r);
}

// The point a dispatch must wait for: its reads wait for the last write,
// its writes also for every pending use (a view's points are its parent's).
static uint64_t wait_of(reel_kernel *k, const reel_dispatch_params *p)
{
    uint64_t wait = 0;
    for (int i = 0; i < k->desc->n_buffers; i++) {
        reel_mem *m = reel_mem_root_(p->buffers[i]);
        uint64_t w = atomic_load(&m->ready);
        if (k->desc->writes & (1u << i))
            w = MAX(w, atomic_load(&m->busy));
        wait = MAX(wait, w);
    }
    return wait;
}

// Records one dispatch into cmd; returns the point it must wait for. A view
// binds its range of the parent's buffer (whole 32-bit words, as buffers are).
static uint64_t record(VkCommandBuffer cmd, reel_kernel *k, const reel_dispatch_params *p)
{
    vk_kernel *vkk = k->priv;
    const reel_kernel_desc *desc = k->desc;
    VkDescriptorBufferInfo infos[REEL_KERNEL_MAX_BUFFERS];
    VkWriteDescriptorSet writes[REEL_KERNEL_MAX_BUFFERS];
    for (int i = 0; i < desc->n_buffers; i++) {
        reel_mem *m = p->buffers[i];
        infos[i] = (VkDescriptorBufferInfo){
            .buffer = ((vk_buf *)m->priv)->buf,
            .offset = m->offset,
            .range = m->parent ? (m->size + 3) & ~(size_t)3 : VK_WHOLE_SIZE,
        };
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstBinding = (uint32_t)i,
            .descriptorCount = 1,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &infos[i],
        };
    }
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vkk->pipeline);
    vkk->push_descriptors(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vkk->layout, 0, (uint32_t)desc->n_buffers, writes);
    if (desc->push_size)
        vkCmdPushConstants(cmd, vkk->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)desc->push_size, p->push);
    vkCmdDispatch(cmd, p->groups[0], p->groups[1], p->groups[2]);
    return wait_of(k, p);
}

// After the submission at pt: written buffers are valid then, all are busy until.
static void mark(reel_kernel *k, const reel_dispatch_params *p, uint64_t pt)
{
    for (int i = 0; i < k->desc->n_buffers; i++) {
        reel_mem *m = reel_mem_root_(p->buffers[i]);
        if (k->desc->writes & (1u << i))
            atomic_store(&m->ready, pt);
        atomic_store(&m->busy, pt);
    }
}

int vk_dispatch(reel_kernel *k, const reel_dispatch_params *p, uint64_t *point)
{
    reel_device *dev = k->dev;
    vk_priv *vk = vk_of(dev);
    bool timed = p->timestamp && vk->queries;

    VkCommandBuffer cmd = vk_begin(dev);
    if (!cmd)
        return REEL_ENOMEM_DEVICE;
    // Under the submit lock from here: points read below are consistent.
    uint32_t q = vk_next_query(dev);
    if (timed) {
        vkCmdResetQueryPool(cmd, vk->queries, q, 2);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, vk->queries, q);
    }
    uint64_t wait = record(cmd, k, p);
    if (timed)
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->queries, q + 1);
    uint64_t pt = 0;
    int err = vk_submit_end(dev, cmd, wait, timed, &pt);
    if (!err)
        mark(k, p, pt);
    vk_unlock(dev);
    *point = pt;
    return err;
}

// Records n dispatches, each seeing what the ones before it wrote; returns
// the point they must wait for.
static uint64_t record_all(VkCommandBuffer cmd, reel_kernel *const *k, const reel_dispatch_params *p, int n)
{
    VkMemoryBarrier between = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT,
    };
    uint64_t wait = 0;
    for (int i = 0; i < n; i++) {
        if (i)
            vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                 &between, 0, NULL, 0, NULL);
        wait = MAX(wait, record(cmd, k[i], &p[i]));
    }
    return wait;
}

int vk_dispatch_batch(reel_device *dev, reel_kernel *const *k, const reel_dispatch_params *p, int n, uint64_t *point)
{
    VkCommandBuffer cmd = vk_begin(dev);
    if (!cmd)
        return REEL_ENOMEM_DEVICE;
    uint64_t wait = record_all(cmd, k, p, n);
    uint64_t pt = 0;
    int err = vk_submit_end(dev, cmd, wait, false, &pt);
    for (int i = 0; !err && i < n; i++)
        mark(k[i], &p[i], pt);
    vk_unlock(dev);
    *point = pt;
    return err;
}

// A recording: its command buffer and the point of its last submission.
typedef struct vk_recording {
    VkCommandBuffer cmd;
    uint64_t last;
} vk_recording;

int vk_record_batch(reel_device *dev, reel_kernel *const *k, const reel_dispatch_params *p, int n, void **rec)
{
    VkCommandBuffer cmd = vk_begin_kept(dev);
    if (!cmd)
        return REEL_ENOMEM_DEVICE;
    record_all(cmd, k, p, n);
    VkResult r = vk_end(cmd);
    vk_unlock(dev);
    if (r != VK_SUCCESS) {
        vk_free_kept(dev, cmd);
        return vk_error_code(r);
    }
    vk_recording *vr = g_new0(vk_recording, 1);
    vr->cmd = cmd;
    *rec = vr;
    return 0;
}

int vk_submit_recorded(reel_device *dev, void *rec, reel_kernel *const *k, const reel_dispatch_params *p, int n,
                       uint64_t *point)
{
    vk_recording *vr = rec;
    g_mutex_lock(&vk_of(dev)->submit_lock);
    vk_throttle(dev);
    // The buffers' points as they are now, not as they were when recorded.
    uint64_t wait = 0, pt = 0;
    for (int i = 0; i < n; i++)
        wait = MAX(wait, wait_of(k[i], &p[i]));
    int err = vk_submit_cmd(dev, vr->cmd, wait, false, true, &pt);
    for (int i = 0; !err && i < n; i++)
        mark(k[i], &p[i], pt);
    if (!err)
        vr->last = pt;
    vk_unlock(dev);
    *point = pt;
    return err;
}

void vk_free_recorded(reel_device *dev, void *rec)
{
    vk_recording *vr = rec;
    if (vr->last)
        vk_wait(dev, vr->last);
    vk_free_kept(dev, vr->cmd);
    g_free(vr);
}

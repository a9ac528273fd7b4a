// The queue and its timeline: command buffers, submission, reaping of
// finished submissions (their command buffers and timestamps), host waits.
//
// One queue per device behind one lock. Every submission signals the next
// value of one timeline semaphore; a value is a reel "point".
#include "gpu/vulkan/vk.h"

static void reap(reel_device *dev)
{
    vk_priv *vk = vk_of(dev);
    uint64_t done = 0;
    vkGetSemaphoreCounterValue(vk->dev, vk->timeline, &done);
    vk_submit *s;
    while ((s = g_queue_peek_head(&vk->in_flight)) && s->point <= done) {
        g_queue_pop_head(&vk->in_flight);
        if (s->timed) {
            uint64_t ts[2] = { 0, 0 };
            uint32_t q = (uint32_t)(s->point % VK_QUERY_SLOTS) * 2;
            if (vkGetQueryPoolResults(vk->dev, vk->queries, q, 2, sizeof ts, ts, sizeof ts[0],
                                      VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
                uint64_t ticks = (ts[1] - ts[0]) & vk->timestamp_mask;
                reel_device_record_time_(dev, s->point, (int64_t)((double)ticks * vk->timestamp_period));
            }
        }
        if (!s->kept)
            vkFreeCommandBuffers(vk->dev, vk->cmd_pool, 1, &s->cmd);
        g_free(s);
    }
}

void vk_throttle(reel_device *dev)
{
    vk_priv *vk = vk_of(dev);
    reap(dev);
    vk_submit *oldest = g_queue_peek_head(&vk->in_flight);
    if (g_queue_get_length(&vk->in_flight) >= VK_MAX_IN_FLIGHT) {
        // Backpressure: bounds command buffers, staging memory and query slots.
        VkSemaphoreWaitInfo wi = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
            .semaphoreCount = 1,
            .pSemaphores = &vk->timeline,
            .pValues = &oldest->point,
        };
        vkWaitSemaphores(vk->dev, &wi, UINT64_MAX);
        reap(dev);
    }
}

// Locks submit_lock and returns a command buffer begun with `flags`.
static VkCommandBuffer begin(reel_device *dev, VkCommandBufferUsageFlags flags)
{
    vk_priv *vk = vk_of(dev);
    g_mutex_lock(&vk->submit_lock);
    vk_throttle(dev);
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = vk->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VkCommandBufferBeginInfo bi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = flags,
    };
    if (vkAllocateCommandBuffers(vk->dev, &ai, &cmd) != VK_SUCCESS) {
        g_mutex_unlock(&vk->submit_lock);
        return VK_NULL_HANDLE;
    }
    vkBeginCommandBuffer(cmd, &bi);
    return cmd;
}

VkCommandBuffer vk_begin(reel_device *dev)
{
    return begin(dev, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
}

// Pending more than once: a later submission may be queued (waiting on the
// timeline) before the earlier one has run.
VkCommandBuffer vk_begin_kept(reel_device *dev)
{
    return begin(dev, VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT);
}

uint32_t vk_next_query(reel_device *dev)
{
    return (uint32_t)((vk_of(dev)->submitted + 1) % VK_QUERY_SLOTS) * 2;
}

VkResult vk_end(VkCommandBuffer cmd)
{
    // The semaphore orders device work; host reads after a wait also need
    // the writes made visible to the host domain.
    VkMemoryBarrier host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0, NULL, 0, NULL);
    return vkEndCommandBuffer(cmd);
}

int vk_submit_end(reel_device *dev, VkCommandBuffer cmd, uint64_t wait, bool timed, uint64_t *point)
{
    VkResult r = vk_end(cmd);
    if (r != VK_SUCCESS) {
        vkFreeCommandBuffers(vk_of(dev)->dev, vk_of(dev)->cmd_pool, 1, &cmd);
        return vk_error_code(r);
    }
    return vk_submit_cmd(dev, cmd, wait, timed, false, point);
}

int vk_submit_cmd(reel_device *dev, VkCommandBuffer cmd, uint64_t wait, bool timed, bool kept, uint64_t *point)
{
    vk_priv *vk = vk_of(dev);
    uint64_t signal = vk->submitted + 1;
    // Waits on the device only for work not yet finished.
    uint64_t done = 0;
    vkGetSemaphoreCounterValue(vk->dev, vk->timeline, &done);
    bool waits = wait > done;
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    VkTimelineSemaphoreSubmitInfo ti = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = waits ? 1 : 0,
        .pWaitSemaphoreValues = &wait,
        .signalSemaphoreValueCount = 1,
        .pSignalSemaphoreValues = &signal,
    };
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = &ti,
        .waitSemaphoreCount = waits ? 1 : 0,
        .pWaitSemaphores = &vk->timeline,
        .pWaitDstStageMask = &stage,
        .commandBufferCount = 1,
        .pCommandBuffers = &cmd,
        .signalSemaphoreCount = 1,
        .pSignalSemaphores = &vk->timeline,
    };
    VkResult r = vkQueueSubmit(vk->queue, 1, &si, VK_NULL_HANDLE);
    if (r != VK_SUCCESS) {
        if (!kept)
            vkFreeCommandBuffers(vk->dev, vk->cmd_pool, 1, &cmd);
        return vk_error_code(r);
    }
    vk->submitted = signal;
    vk_submit *s = g_new0(vk_submit, 1);
    s->point = signal;
    s->cmd = cmd;
    s->timed = timed;
    s->kept = kept;
    g_queue_push_tail(&vk->in_flight, s);
    *point = signal;
    return 0;
}

void vk_free_kept(reel_device *dev, VkCommandBuffer cmd)
{
    vk_priv *vk = vk_of(dev);
    g_mutex_lock(&vk->submit_lock);
    vkFreeCommandBuffers(vk->dev, vk->cmd_pool, 1, &cmd);
    g_mutex_unlock(&vk->submit_lock);
}

void vk_unlock(reel_device *dev)
{
    g_mutex_unlock(&vk_of(dev)->submit_lock);
}

uint64_t vk_completed(reel_device *dev)
{
    vk_priv *vk = vk_of(dev);
    uint64_t done = 0;
    if (vk->dev)
        vkGetSemaphoreCounterValue(vk->dev, vk->timeline, &done);
    return done;
}

int vk_wait(reel_device *dev, uint64_t point)
{
    vk_priv *vk = vk_of(dev);
    if (!vk->dev || !vk->timeline)
        return 0;
    if (!point) {
        g_mutex_lock(&vk->submit_lock);
        point = vk->submitted;
        g_mutex_unlock(&vk->submit_lock);
    }
    VkResult r = VK_SUCCESS;
    if (point) {
        VkSemaphoreWaitInfo wi = {
            .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
            .semaphoreCount = 1,
            .pSemaphores = &vk->timeline,
            .pValues = &point,
        };
        r = vkWaitSemaphores(vk->dev, &wi, UINT64_MAX);
    }
    g_mutex_lock(&vk->submit_lock);
    reap(dev);
    g_mutex_unlock(&vk->submit_lock);
    return vk_error_code(r);
}

void vk_queue_destroy(reel_device *dev)
{
    vk_priv *vk = vk_of(dev);
    if (vk->timeline) {
        vk_wait(dev, 0);
        // The timeline reaching its last value is not the queue being done
        // with it: a driver's queue thread (lavapipe's) may still be
        // finishing the signal. Only an idle device may lose its objects.
        vkDeviceWaitIdle(vk->dev);
        vkDestroySemaphore(vk->dev, vk->timeline, NULL);
    }
    if (vk->queries)
        vkDestroyQueryPool(vk->dev, vk->queries, NULL);
    if (vk->cmd_pool)
        vkDestroyCommandPool(vk->dev, vk->cmd_pool, NULL);
}

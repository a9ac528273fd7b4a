// The Vulkan backend's shared state. Internal to gpu/vulkan/.
#ifndef REEL_GPU_VULKAN_VK_H
#define REEL_GPU_VULKAN_VK_H

#include <vulkan/vulkan.h>

#include "gpu/backend.h"

// Submissions in flight are bounded (the oldest is waited for), which also
// bounds the timestamp slots: two per submission, point % VK_QUERY_SLOTS.
#define VK_MAX_IN_FLIGHT 64
#define VK_QUERY_SLOTS 128

// The process's instance, created on first use; NULL without a driver.
// Thread-safety: any thread.
VkInstance vk_instance_get(void);

// A buffer with its own memory: a reel_mem's backing (m->priv).
typedef struct vk_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;              // persistent mapping, or NULL
    VkDeviceSize alloc_size; // the allocation's bytes (an exporter's size)
} vk_buf;

// One queue submission, kept until the timeline passes its point.
typedef struct vk_submit {
    uint64_t point;
    VkCommandBuffer cmd;
    bool timed;
    bool kept;              // a recording's: freed by its owner, not when done
} vk_submit;

typedef struct vk_priv {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t family;
    VkPhysicalDeviceMemoryProperties memprops;
    bool force_staging;     // REEL_VULKAN_FORCE_STAGING=1: device-local memory is not mapped
    // Exportable memory (reel_mem_export_fd): VK_KHR_external_memory_fd is
    // enabled and buffers like reel's can be exported as opaque fds.
    PFN_vkGetMemoryFdKHR get_memory_fd;
    float timestamp_period; // ns per tick
    uint64_t timestamp_mask;

    VkPipelineCache cache;
    char *cache_path;

    // Guards the queue, the command pool, the query pool and the fields
    // below. Lock order: reel_device.lock, then this; never the reverse.
    GMutex submit_lock;
    VkCommandPool cmd_pool;
    VkQueryPool queries;
    VkSemaphore timeline;
    uint64_t submitted;     // the last point handed out
    GQueue in_flight;       // vk_submit *, oldest first
} vk_priv;

static inline vk_priv *vk_of(reel_device *dev)
{
    return dev->priv;
}

// gpu/vulkan/mem.c
int vk_mem_alloc(reel_device *dev, reel_mem *m, GError **error);
void vk_mem_free(reel_device *dev, reel_mem *m);
int vk_upload(reel_mem *m, size_t offset, const void *src, size_t size);
int vk_download(reel_mem *m, size_t offset, void *dst, size_t size);
int vk_export_fd(reel_mem *m, reel_mem_export *out, GError **error);
int vk_copy(reel_mem *dst, size_t dst_offset, reel_mem *src, size_t src_offset, size_t size);
// The usage every reel buffer has (storage, transfers both ways).
#define VK_BUF_USAGE \
    (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)

// gpu/vulkan/queue.c. vk_begin locks submit_lock and returns a recording
// command buffer (or unlocks and returns NULL); vk_submit_end ends it,
// submits it waiting on the GPU for `wait` (0: nothing), and returns the
// point it signals. The caller sets its mems' points, then calls vk_unlock,
// so that points and submissions stay in step.
VkCommandBuffer vk_begin(reel_device *dev);
int vk_submit_end(reel_device *dev, VkCommandBuffer cmd, uint64_t wait, bool timed, uint64_t *point);
void vk_unlock(reel_device *dev);
// Recordings: vk_begin_kept begins (under submit_lock, as vk_begin) a
// command buffer that may be submitted many times; vk_end ends it;
// vk_submit_cmd (under submit_lock, after vk_throttle) submits an ended one,
// kept or not; vk_free_kept frees a kept one whose submissions are done.
VkCommandBuffer vk_begin_kept(reel_device *dev);
VkResult vk_end(VkCommandBuffer cmd);
void vk_throttle(reel_device *dev);
int vk_submit_cmd(reel_device *dev, VkCommandBuffer cmd, uint64_t wait, bool timed, bool kept, uint64_t *point);
void vk_free_kept(reel_device *dev, VkCommandBuffer cmd);
// The timestamp query pair of the submission that will get the next point.
uint32_t vk_next_query(reel_device *dev);
int vk_wait(reel_device *dev, uint64_t point);
uint64_t vk_completed(reel_device *dev);
void vk_queue_destroy(reel_device *dev);

// gpu/vulkan/kernel.c
int vk_kernel_create(reel_kernel *k, GError **error);
void vk_kernel_destroy(reel_kernel *k);
int vk_dispatch(reel_kernel *k, const reel_dispatch_params *p, uint64_t *point);
int vk_dispatch_batch(reel_device *dev, reel_kernel *const *k, const reel_dispatch_params *p, int n, uint64_t *point);
int vk_record_batch(reel_device *dev, reel_kernel *const *k, const reel_dispatch_params *p, int n, void **rec);
int vk_submit_recorded(reel_device *dev, void *rec, reel_kernel *const *k, const reel_dispatch_params *p, int n,
                       uint64_t *point);
void vk_free_recorded(reel_device *dev, void *rec);

int vk_error_code(VkResult r); // the REEL_E* code for a VkResult
const char *vk_result_name(VkResult r);

#endif

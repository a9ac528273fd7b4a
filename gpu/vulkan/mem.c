// Vulkan memory: a buffer with its own allocation per reel_mem (the pool in
// gpu/mem.c makes allocations rare), memory-type choice per domain, and
// staged transfers for device-local memory the host cannot see.
#include <string.h>

#include "gpu/vulkan/vk.h"

#define DL VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
#define HV VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
#define HC VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
#define CACHED VK_MEMORY_PROPERTY_HOST_CACHED_BIT

// The best memory type for a domain among `allowed`, or -1. Required flags
// must all be there; preferred ones add to the score, avoided ones subtract.
static int pick_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t allowed, reel_mem_domain d)
{
    static const struct { VkMemoryPropertyFlags need, prefer, avoid; } rule[REEL_MEM_DOMAIN_COUNT] = {
        [REEL_MEM_HOST] = { HV | HC, CACHED, DL },
        [REEL_MEM_DEVICE] = { DL, 0, HV },
        [REEL_MEM_DEVICE_MAPPED] = { DL | HV | HC, 0, 0 },
    };
    int best = -1, best_score = -1;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
        if (!(allowed & (1u << i)) || (f & rule[d].need) != rule[d].need)
            continue;
        int score = 2 * (rule[d].prefer && (f & rule[d].prefer)) + !(f & rule[d].avoid);
        if (score > best_score) {
            best = (int)i;
            best_score = score;
        }
    }
    return best;
}

static void vk_buf_destroy(reel_device *dev, vk_buf *b);

static int vk_buf_create(reel_device *dev, vk_buf *b, size_t size, reel_mem_domain domain, bool map,
                         bool exportable, GError **error)
{
    vk_priv *vk = vk_of(dev);
    *b = (vk_buf){ 0 };
    if (exportable && !vk->get_memory_fd) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s (%s) cannot export memory (no %s for buffers)",
                    dev->info.spec, dev->info.name, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
        return REEL_EUNSUPPORTED;
    }
    VkExternalMemoryBufferCreateInfo external = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
    };
    VkBufferCreateInfo bi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .pNext = exportable ? &external : NULL,
        // Whole 32-bit words, so that kernels reading bytes as uint words
        // reach the last byte of any size.
        .size = (size + 3) & ~(size_t)3,
        .usage = VK_BUF_USAGE,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(vk->dev, &bi, NULL, &b->buf);
    if (r != VK_SUCCESS)
        goto fail;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(vk->dev, b->buf, &req);
    int type = pick_type(&vk->memprops, req.memoryTypeBits, domain);
    if (type < 0) {
        vk_buf_destroy(dev, b);
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s (%s) has no %s memory", dev->info.spec,
                    dev->info.name, reel_mem_domain_name(domain));
        return REEL_EUNSUPPORTED;
    }
    // Exported memory is dedicated to its buffer: what importers (CUDA)
    // handle best, and each mem has its own allocation anyway.
    VkMemoryDedicatedAllocateInfo dedicated = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO,
        .buffer = b->buf,
    };
    VkExportMemoryAllocateInfo export = {
        .sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
        .pNext = &dedicated,
        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
    };
    VkMemoryAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .pNext = exportable ? &export : NULL,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    b->alloc_size = req.size;
    if ((r = vkAllocateMemory(vk->dev, &ai, NULL, &b->mem)) != VK_SUCCESS ||
        (r = vkBindBufferMemory(vk->dev, b->buf, b->mem, 0)) != VK_SUCCESS)
        goto fail;
    if (map && (vk->memprops.memoryTypes[type].propertyFlags & HV) &&
        (r = vkMapMemory(vk->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map)) != VK_SUCCESS)
        goto fail;
    return 0;
fail:
    vk_buf_destroy(dev, b);
    g_set_error(error, REEL_ERROR, vk_error_code(r), "%s (%s): allocating %zu bytes of %s memory: %s",
                dev->info.spec, dev->info.name, size, reel_mem_domain_name(domain), vk_result_name(r));
    return vk_error_code(r);
}

static void vk_buf_destroy(reel_device *dev, vk_buf *b)
{
    vk_priv *vk = vk_of(dev);
    if (b->buf)
        vkDestroyBuffer(vk->dev, b->buf, NULL);
    if (b->mem)
        vkFreeMemory(vk->dev, b->mem, NULL); // unmaps too
    *b = (vk_buf){ 0 };
}

int vk_mem_alloc(reel_device *dev, reel_mem *m, GError **error)
{
    vk_priv *vk = vk_of(dev);
    vk_buf *b = g_new0(vk_buf, 1);
    bool map = !(vk->force_staging && m->domain == REEL_MEM_DEVICE);
    int err = vk_buf_create(dev, b, m->size, m->domain, map, m->exportable, error);
    if (err) {
        g_free(b);
        return err;
    }
    m->priv = b;
    m->host = b->map;
    return 0;
}

void vk_mem_free(reel_device *dev, reel_mem *m)
{
    vk_buf_destroy(dev, m->priv);
    g_free(m->priv);
}

int vk_export_fd(reel_mem *m, reel_mem_export *out, GError **error)
{
    reel_device *dev = m->dev;
    vk_buf *b = m->priv;
    VkMemoryGetFdInfoKHR gi = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
        .memory = b->mem,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
    };
    int fd = -1;
    VkResult r = vk_of(dev)->get_memory_fd(vk_of(dev)->dev, &gi, &fd);
    if (r != VK_SUCCESS) {
        g_set_error(error, REEL_ERROR, vk_error_code(r), "%s (%s): exporting %zu bytes: %s", dev->info.spec,
                    dev->info.name, m->size, vk_result_name(r));
        return vk_error_code(r);
    }
    *out = (reel_mem_export){ .fd = fd, .size = b->alloc_size, .dedicated = true };
    return 0;
}

// Copies between m and a staging buffer: host memory from the device's own
// pool, so repeated transfers reuse it and it counts against the budget.
// The staging mem goes back to the pool at once, marked busy until the copy
// is done; its next user waits for that. Download waits here for the copy.
static int staged_copy(reel_mem *m, size_t offset, void *host, size_t size, bool to_device)
{
    reel_device *dev = m->dev;
    GError *error = NULL;
    reel_mem *staging = reel_mem_new(dev, reel_mem_params(.size = size, .domain = REEL_MEM_HOST), &error);
    if (!staging) {
        int code = error->code;
        g_error_free(error);
        return code;
    }
    void *p;
    int err = reel_mem_map(staging, REEL_MAP_WRITE, &p);
    if (err)
        goto done;
    if (to_device)
        memcpy(p, host, size);
    VkCommandBuffer cmd = vk_begin(dev);
    if (!cmd) {
        err = REEL_ENOMEM_DEVICE;
        goto done;
    }
    // A view is copied within its parent, whose points it shares.
    reel_mem *root = reel_mem_root_(m);
    VkBuffer sbuf = ((vk_buf *)staging->priv)->buf, mbuf = ((vk_buf *)root->priv)->buf;
    VkBufferCopy region = {
        .srcOffset = to_device ? 0 : m->offset + offset,
        .dstOffset = to_device ? m->offset + offset : 0,
        .size = size,
    };
    vkCmdCopyBuffer(cmd, to_device ? sbuf : mbuf, to_device ? mbuf : sbuf, 1, &region);
    // A write waits for every use of m; a read only for its last write.
    uint64_t ready = atomic_load(&root->ready), busy = atomic_load(&root->busy), point = 0;
    err = vk_submit_end(dev, cmd, to_device ? MAX(ready, busy) : ready, false, &point);
    if (!err) {
        if (to_device)
            atomic_store(&root->ready, point);
        else
            atomic_store(&staging->ready, point);
        atomic_store(&root->busy, MAX(busy, point));
        atomic_store(&staging->busy, point);
    }
    vk_unlock(dev);
    if (!err && !to_device && !(err = reel_mem_map(staging, REEL_MAP_READ, &p)))
        memcpy(host, p, size);
done:
    reel_mem_unref(&staging);
    return err;
}

// One copy command between two mems (views within their parents), after
// src's last write and every use of dst; the host does not wait.
int vk_copy(reel_mem *dst, size_t dst_offset, reel_mem *src, size_t src_offset, size_t size)
{
    reel_device *dev = dst->dev;
    VkCommandBuffer cmd = vk_begin(dev);
    if (!cmd)
        return REEL_ENOMEM_DEVICE;
    reel_mem *from = reel_mem_root_(src), *to = reel_mem_root_(dst);
    VkBufferCopy region = {
        .srcOffset = src->offset + src_offset,
        .dstOffset = dst->offset + dst_offset,
        .size = size,
    };
    vkCmdCopyBuffer(cmd, ((vk_buf *)from->priv)->buf, ((vk_buf *)to->priv)->buf, 1, &region);
    uint64_t ready = atomic_load(&from->ready), from_busy = atomic_load(&from->busy);
    uint64_t to_ready = atomic_load(&to->ready), to_busy = atomic_load(&to->busy), point = 0;
    int err = vk_submit_end(dev, cmd, MAX(ready, MAX(to_ready, to_busy)), false, &point);
    if (!err) {
        atomic_store(&to->ready, point);
        atomic_store(&to->busy, MAX(to_busy, point));
        atomic_store(&from->busy, MAX(from_busy, point));
    }
    vk_unlock(dev);
    return err;
}

int vk_upload(reel_mem *m, size_t offset, const void *src, size_t size)
{
    return staged_copy(m, offset, (void *)src, size, true);
}

int vk_download(reel_mem *m, size_t offset, void *dst, size_t size)
{
    return staged_copy(m, offset, dst, size, false);
}

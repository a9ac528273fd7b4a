// Vulkan devices: logical device and queue creation, the on-disk pipeline
// cache, teardown.
#include <glib/gstdio.h>
#include <string.h>

#include "gpu/vulkan/vk.h"

static char *cache_dir(void)
{
    const char *dir = g_getenv("REEL_CACHE_DIR");
    if (dir && *dir)
        return g_strdup(dir);
    return g_build_filename(g_get_user_cache_dir(), "reel", NULL);
}

static void cache_load(reel_device *dev)
{
    vk_priv *vk = vk_of(dev);
    g_autofree char *dir = cache_dir();
    g_autofree char *file = g_strdup_printf("pipelines-%04x-%s.bin", dev->info.vendor_id, dev->info.uuid_str);
    vk->cache_path = g_build_filename(dir, file, NULL);
    g_autofree char *data = NULL;
    gsize size = 0;
    // A missing or stale file only costs a recompile: the driver checks the
    // header and ignores data it did not write.
    if (!g_file_get_contents(vk->cache_path, &data, &size, NULL))
        size = 0;
    VkPipelineCacheCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = size,
        .pInitialData = size ? data : NULL,
    };
    if (vkCreatePipelineCache(vk->dev, &ci, NULL, &vk->cache) != VK_SUCCESS) {
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        vkCreatePipelineCache(vk->dev, &ci, NULL, &vk->cache);
    }
}

static void cache_save(reel_device *dev)
{
    vk_priv *vk = vk_of(dev);
    size_t size = 0;
    if (!vk->cache || vkGetPipelineCacheData(vk->dev, vk->cache, &size, NULL) != VK_SUCCESS || !size)
        return;
    g_autofree char *data = g_malloc(size);
    if (vkGetPipelineCacheData(vk->dev, vk->cache, &size, data) != VK_SUCCESS)
        return;
    g_autofree char *dir = g_path_get_dirname(vk->cache_path);
    if (g_mkdir_with_parents(dir, 0700) != 0)
        return;
    // g_file_set_contents writes a temporary and renames: concurrent
    // processes never see half a file. A failure here is not an error.
    g_file_set_contents(vk->cache_path, data, (gssize)size, NULL);
}

static void vk_destroy(reel_device *dev)
{
    vk_priv *vk = vk_of(dev);
    if (vk->dev) {
        vk_queue_destroy(dev);
        cache_save(dev);
        if (vk->cache)
            vkDestroyPipelineCache(vk->dev, vk->cache, NULL);
        vkDestroyDevice(vk->dev, NULL);
    }
    g_free(vk->cache_path);
    g_mutex_clear(&vk->submit_lock);
    g_free(vk);
}

static const reel_device_fns vk_device_fns = {
    .destroy = vk_destroy,
    .mem_alloc = vk_mem_alloc,
    .mem_free = vk_mem_free,
    .upload = vk_upload,
    .download = vk_download,
    .wait = vk_wait,
    .completed = vk_completed,
    .kernel_create = vk_kernel_create,
    .kernel_destroy = vk_kernel_destroy,
    .dispatch = vk_dispatch,
    .dispatch_batch = vk_dispatch_batch,
    .record_batch = vk_record_batch,
    .submit_recorded = vk_submit_recorded,
    .free_recorded = vk_free_recorded,
    .export_fd = vk_export_fd,
    .copy = vk_copy,
};

static int fail(GError **error, int code, const reel_device_info *info, const char *what)
{
    g_set_error(error, REEL_ERROR, code, "%s (%s): %s", info->spec, info->name, what);
    return code;
}

static bool has_ext(VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL);
    g_autofree VkExtensionProperties *e = g_new0(VkExtensionProperties, n ? n : 1);
    vkEnumerateDeviceExtensionProperties(phys, NULL, &n, e);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(e[i].extensionName, name) == 0)
            return true;
    return false;
}

// Whether buffers with reel's usage can be exported as opaque fds.
static bool buffers_export(VkPhysicalDevice phys)
{
    VkPhysicalDeviceExternalBufferInfo bi = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO,
        .usage = VK_BUF_USAGE,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
    };
    VkExternalBufferProperties p = { .sType = VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES };
    vkGetPhysicalDeviceExternalBufferProperties(phys, &bi, &p);
    return p.externalMemoryProperties.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT;
}

static int create_device(reel_device *dev, GError **error)
{
    vk_priv *vk = vk_of(dev);
    const reel_device_info *info = &dev->info;
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(vk->instance, &n, NULL);
    g_autofree VkPhysicalDevice *phys = g_new0(VkPhysicalDevice, n ? n : 1);
    vkEnumeratePhysicalDevices(vk->instance, &n, phys);
    if ((uint32_t)info->index >= n)
        return fail(error, REEL_EDEVICE_LOST, info, "the device is gone");
    vk->phys = phys[info->index];

    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(vk->phys, &props);
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                             .pNext = &f12 };
    VkPhysicalDeviceFeatures2 feats = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11 };
    if (props.apiVersion >= VK_API_VERSION_1_2)
        vkGetPhysicalDeviceFeatures2(vk->phys, &feats);
    if (!f12.timelineSemaphore)
        return fail(error, REEL_EUNSUPPORTED, info, "needs Vulkan 1.2 with timeline semaphores");
    if (!has_ext(vk->phys, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME))
        return fail(error, REEL_EUNSUPPORTED, info, "needs " VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    vk->timestamp_period = props.limits.timestampPeriod;
    vkGetPhysicalDeviceMemoryProperties(vk->phys, &vk->memprops);

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, NULL);
    g_autofree VkQueueFamilyProperties *qf = g_new0(VkQueueFamilyProperties, nq ? nq : 1);
    vkGetPhysicalDeviceQueueFamilyProperties(vk->phys, &nq, qf);
    vk->family = UINT32_MAX;
    for (uint32_t i = 0; i < nq && vk->family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            vk->family = i;
    if (vk->family == UINT32_MAX)
        return fail(error, REEL_EUNSUPPORTED, info, "no compute queue");
    uint32_t bits = qf[vk->family].timestampValidBits;
    vk->timestamp_mask = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    if (!bits)
        dev->info.timestamps = false;

    const char *exts[3] = { VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME };
    uint32_t next = 1;
    // Keeps the heaps' budget and usage (reel devices) accurate for this device.
    if (has_ext(vk->phys, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME))
        exts[next++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    // Memory another API imports (NVDEC's frames copied in by CUDA).
    bool can_export = has_ext(vk->phys, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) && buffers_export(vk->phys);
    if (can_export)
        exts[next++] = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
    // 16-bit floats where present: the model kernels' float16 forms
    // (precision=fp16) need them, and info.fp16 says they are there.
    VkPhysicalDeviceVulkan12Features want12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .timelineSemaphore = VK_TRUE,
        .shaderFloat16 = f12.shaderFloat16,
    };
    VkPhysicalDeviceVulkan11Features want11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &want12,
        .storageBuffer16BitAccess = f11.storageBuffer16BitAccess,
    };
    float prio = 1.0f;
    VkDeviceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &want11,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &(VkDeviceQueueCreateInfo){
            .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            .queueFamilyIndex = vk->family,
            .queueCount = 1,
            .pQueuePriorities = &prio,
        },
        .enabledExtensionCount = next,
        .ppEnabledExtensionNames = exts,
    };
    VkResult r = vkCreateDevice(vk->phys, &ci, NULL, &vk->dev);
    if (r != VK_SUCCESS) {
        vk->dev = VK_NULL_HANDLE;
        return fail(error, vk_error_code(r), info, vk_result_name(r));
    }
    vkGetDeviceQueue(vk->dev, vk->family, 0, &vk->queue);
    if (can_export)
        vk->get_memory_fd = (PFN_vkGetMemoryFdKHR)vkGetDeviceProcAddr(vk->dev, "vkGetMemoryFdKHR");

    VkSemaphoreTypeCreateInfo type = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
    };
    VkSemaphoreCreateInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type };
    VkCommandPoolCreateInfo pi = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
        .queueFamilyIndex = vk->family,
    };
    VkQueryPoolCreateInfo qi = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = 2 * VK_QUERY_SLOTS,
    };
    if ((r = vkCreateSemaphore(vk->dev, &si, NULL, &vk->timeline)) != VK_SUCCESS ||
        (r = vkCreateCommandPool(vk->dev, &pi, NULL, &vk->cmd_pool)) != VK_SUCCESS ||
        (dev->info.timestamps && (r = vkCreateQueryPool(vk->dev, &qi, NULL, &vk->queries)) != VK_SUCCESS))
        return fail(error, vk_error_code(r), info, vk_result_name(r));
    cache_load(dev);
    return 0;
}

reel_device *vk_device_open(const reel_device_info *info, GError **error)
{
    reel_device *dev = reel_device_alloc_(info, &vk_device_fns);
    vk_priv *vk = g_new0(vk_priv, 1);
    dev->priv = vk;
    g_mutex_init(&vk->submit_lock);
    g_queue_init(&vk->in_flight);
    const char *force = g_getenv("REEL_VULKAN_FORCE_STAGING");
    vk->force_staging = force && strcmp(force, "1") == 0;
    if (vk->force_staging)
        dev->info.unified_memory = false;
    if (!(vk->instance = vk_instance_get())) {
        g_set_error(error, REEL_ERROR, REEL_EDEVICE_LOST, "%s: no Vulkan instance", info->spec);
        reel_device_unref(&dev);
        return NULL;
    }
    if (create_device(dev, error) < 0) {
        reel_device_unref(&dev);
        return NULL;
    }
    return dev;
}

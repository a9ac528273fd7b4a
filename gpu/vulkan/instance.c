// The Vulkan instance, validation, and enumeration of physical devices into
// reel_device_info.
#include <stdio.h>
#include <string.h>

#include "gpu/vulkan/vk.h"

static VkInstance instance;
static VkDebugUtilsMessengerEXT messenger;
static _Atomic int64_t validation_messages;

int64_t reel_device_validation_messages(void)
{
    return atomic_load(&validation_messages);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user)
{
    (void)types;
    (void)user;
    atomic_fetch_add(&validation_messages, 1);
    fprintf(stderr, "reel: vulkan %s: %s\n",
            severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
            data->pMessage);
    return VK_FALSE;
}

static bool has_layer(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    g_autofree VkLayerProperties *layers = g_new0(VkLayerProperties, n ? n : 1);
    vkEnumerateInstanceLayerProperties(&n, layers);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(layers[i].layerName, name) == 0)
            return true;
    return false;
}

static VkInstance create_instance(void)
{
    const char *env = g_getenv("REEL_VULKAN_VALIDATION");
    bool validate = env && strcmp(env, "1") == 0;
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    if (validate && !has_layer(layer)) {
        // Asked for, but absent: say so once rather than test without it.
        fprintf(stderr, "reel: REEL_VULKAN_VALIDATION=1 but %s is not installed\n", layer);
        atomic_fetch_add(&validation_messages, 1);
        validate = false;
    }
    VkDebugUtilsMessengerCreateInfoEXT dbg = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validate ? &dbg : NULL, // also catches messages from create/destroy
        .pApplicationInfo = &(VkApplicationInfo){
            .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
            .pApplicationName = "reel",
            .pEngineName = "reel",
            .apiVersion = VK_API_VERSION_1_2,
        },
        .enabledLayerCount = validate ? 1 : 0,
        .ppEnabledLayerNames = &layer,
        .enabledExtensionCount = validate ? 1 : 0,
        .ppEnabledExtensionNames = &ext,
    };
    VkInstance inst = VK_NULL_HANDLE;
    if (vkCreateInstance(&ci, NULL, &inst) != VK_SUCCESS)
        return VK_NULL_HANDLE;
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(inst, "vkCreateDebugUtilsMessengerEXT");
        if (create)
            create(inst, &dbg, NULL, &messenger);
    }
    return inst;
}

VkInstance vk_instance_get(void)
{
    // Kept for the life of the process: creating one scans every driver and
    // layer (tens of ms), and destroying it unloads drivers, of which
    // lavapipe then leaks a buffer LeakSanitizer cannot even name. Memory
    // reachable from this static is not a leak.
    static gsize once;
    if (g_once_init_enter(&once)) {
        instance = create_instance();
        g_once_init_leave(&once, 1);
    }
    return instance;
}

static const char *vendor_name(uint32_t id)
{
    switch (id) {
    case 0x10de: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13b5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x1010: return "Imagination";
    case 0x106b: return "Apple";
    case 0x10005: return "Mesa";
    default: return "unknown";
    }
}

static reel_device_type type_of(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return REEL_DEVICE_DISCRETE;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return REEL_DEVICE_INTEGRATED;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return REEL_DEVICE_VIRTUAL;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return REEL_DEVICE_CPU;
    default: return REEL_DEVICE_OTHER;
    }
}

static bool has_extension(VkPhysicalDevice phys, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(phys, NULL, &n, NULL);
    g_autofree VkExtensionProperties *exts = g_new0(VkExtensionProperties, n ? n : 1);
    vkEnumerateDeviceExtensionProperties(phys, NULL, &n, exts);
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(exts[i].extensionName, name) == 0)
            return true;
    return false;
}

static void describe(VkPhysicalDevice phys, int index, reel_device_info *info)
{
    VkPhysicalDeviceDriverProperties driver = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES };
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, .pNext = &driver };
    VkPhysicalDeviceIDProperties id = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES, .pNext = &subgroup };
    VkPhysicalDeviceProperties2 props = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &id };
    vkGetPhysicalDeviceProperties2(phys, &props);
    const VkPhysicalDeviceProperties *p = &props.properties;

    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES };
    VkPhysicalDeviceVulkan11Features f11 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, .pNext = &f12 };
    VkPhysicalDeviceFeatures2 feats = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11 };
    if (p->apiVersion >= VK_API_VERSION_1_2)
        vkGetPhysicalDeviceFeatures2(phys, &feats);

    bool budget = has_extension(phys, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    VkPhysicalDeviceMemoryBudgetPropertiesEXT mb = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT };
    VkPhysicalDeviceMemoryProperties2 mem = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                              .pNext = budget ? &mb : NULL };
    vkGetPhysicalDeviceMemoryProperties2(phys, &mem);

    memset(info, 0, sizeof *info);
    g_snprintf(info->spec, sizeof info->spec, "vulkan:%d", index);
    info->index = index;
    g_strlcpy(info->name, p->deviceName, sizeof info->name);
    info->backend = REEL_BACKEND_VULKAN;
    info->type = type_of(p->deviceType);
    info->vendor_id = p->vendorID;
    g_strlcpy(info->vendor, vendor_name(p->vendorID), sizeof info->vendor);
    g_snprintf(info->driver, sizeof info->driver, "%s %s (Vulkan %u.%u.%u)", driver.driverName,
               driver.driverInfo, VK_API_VERSION_MAJOR(p->apiVersion), VK_API_VERSION_MINOR(p->apiVersion),
               VK_API_VERSION_PATCH(p->apiVersion));
    memcpy(info->uuid, id.deviceUUID, 16);
    const uint8_t *u = info->uuid;
    g_snprintf(info->uuid_str, sizeof info->uuid_str,
               "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
               u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);

    const VkPhysicalDeviceMemoryProperties *mp = &mem.memoryProperties;
    info->n_heaps = (int)MIN(mp->memoryHeapCount, REEL_DEVICE_MAX_HEAPS);
    for (int i = 0; i < info->n_heaps; i++) {
        info->heaps[i].size = mp->memoryHeaps[i].size;
        info->heaps[i].device_local = mp->memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
        if (budget) {
            info->heaps[i].budget = mb.heapBudget[i];
            info->heaps[i].usage = mb.heapUsage[i];
        }
    }
    // Unified when every device-local type is also host-visible.
    bool unified = true;
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++) {
        VkMemoryPropertyFlags fl = mp->memoryTypes[i].propertyFlags;
        if ((fl & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && !(fl & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
            unified = false;
    }
    info->unified_memory = unified;
    info->fp16 = f12.shaderFloat16 && f11.storageBuffer16BitAccess;
    info->int8 = f12.shaderInt8 && f12.storageBuffer8BitAccess;
    info->external_memory = has_extension(phys, VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME) ||
                            has_extension(phys, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    info->timestamps = p->limits.timestampComputeAndGraphics && p->limits.timestampPeriod > 0;
    info->subgroup_size = subgroup.subgroupSize;
    info->max_workgroup_invocations = MIN(p->limits.maxComputeWorkGroupInvocations,
                                          p->limits.maxComputeWorkGroupSize[0]);
    info->max_storage_buffer_range = p->limits.maxStorageBufferRange;
}

void vk_device_list(GArray *infos)
{
    VkInstance inst = vk_instance_get();
    if (!inst)
        return;
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(inst, &n, NULL);
    g_autofree VkPhysicalDevice *phys = g_new0(VkPhysicalDevice, n ? n : 1);
    vkEnumeratePhysicalDevices(inst, &n, phys);
    for (uint32_t i = 0; i < n; i++) {
        reel_device_info info;
        describe(phys[i], (int)i, &info);
        g_array_append_val(infos, info);
    }
}

const char *vk_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    default: return "VkResult (other)";
    }
}

int vk_error_code(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return 0;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS: return REEL_ENOMEM_DEVICE;
    case VK_ERROR_DEVICE_LOST: return REEL_EDEVICE_LOST;
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT: return REEL_EUNSUPPORTED;
    default: return REEL_EINTERNAL;
    }
}

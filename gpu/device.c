// Devices: listing, opening by spec, refcounting, budget, waits, timings.
// The generic half of the vtable in gpu/backend.h; backends trust what
// arrives here.
#include <string.h>

#include "gpu/backend.h"

const char *reel_backend_name(reel_backend b)
{
    switch (b) {
    case REEL_BACKEND_CPU: return "cpu";
    case REEL_BACKEND_VULKAN: return "vulkan";
    default: return "?";
    }
}

const char *reel_device_type_name(reel_device_type t)
{
    static const char *const names[REEL_DEVICE_TYPE_COUNT] = {
        "discrete", "integrated", "virtual", "cpu", "other",
    };
    return (unsigned)t < REEL_DEVICE_TYPE_COUNT ? names[t] : "?";
}

int reel_device_list(reel_device_info **out)
{
    GArray *infos = g_array_new(FALSE, TRUE, sizeof(reel_device_info));
    cpu_device_list(infos);
    vk_device_list(infos);
    int n = (int)infos->len;
    *out = (reel_device_info *)(void *)g_array_free(infos, FALSE);
    return n;
}

static bool parse_uuid(const char *s, uint8_t out[16])
{
    int n = 0;
    for (; *s && n < 32; s++) {
        if (*s == '-')
            continue;
        int v = g_ascii_xdigit_value(*s);
        if (v < 0)
            return false;
        out[n / 2] = (uint8_t)(n % 2 ? out[n / 2] | v : v << 4);
        n++;
    }
    return n == 32 && !*s;
}

// The device `spec` names among `infos`, or -1.
static int match_spec(const char *spec, const reel_device_info *infos, int n)
{
    uint8_t uuid[16];
    if (strcmp(spec, "auto") == 0) {
        // Software Vulkan (lavapipe) is slower than the cpu backend for
        // reel's work, so auto never picks it.
        static const reel_device_type order[] = { REEL_DEVICE_DISCRETE, REEL_DEVICE_INTEGRATED };
        for (size_t o = 0; o < G_N_ELEMENTS(order); o++)
            for (int i = 0; i < n; i++)
                if (infos[i].backend == REEL_BACKEND_VULKAN && infos[i].type == order[o])
                    return i;
        spec = "cpu";
    }
    for (int i = 0; i < n; i++)
        if (g_ascii_strcasecmp(spec, infos[i].spec) == 0)
            return i;
    if (parse_uuid(spec, uuid))
        for (int i = 0; i < n; i++)
            if (infos[i].backend != REEL_BACKEND_CPU && memcmp(uuid, infos[i].uuid, 16) == 0)
                return i;
    g_autofree char *needle = g_ascii_strdown(spec, -1);
    for (int i = 0; i < n; i++) {
        g_autofree char *hay = g_ascii_strdown(infos[i].name, -1);
        if (*needle && strstr(hay, needle))
            return i;
    }
    return -1;
}

reel_device *reel_device_open(const char *spec, GError **error)
{
    if (!spec || !*spec)
        spec = "auto";
    // The cpu device needs no Vulkan instance: creating one costs tens of
    // milliseconds on every run that never touches a GPU.
    reel_device_info *infos;
    int n;
    if (strcmp(spec, "cpu") == 0) {
        GArray *cpu = g_array_new(FALSE, TRUE, sizeof(reel_device_info));
        cpu_device_list(cpu);
        n = (int)cpu->len;
        infos = (reel_device_info *)(void *)g_array_free(cpu, FALSE);
    } else {
        n = reel_device_list(&infos);
    }
    int i = match_spec(spec, infos, n);
    reel_device *dev = NULL;
    if (i < 0) {
        GString *s = g_string_new(NULL);
        g_string_printf(s, "no device matches '%s'; the devices here are:", spec);
        for (int j = 0; j < n; j++)
            g_string_append_printf(s, "\n  %-10s %s (%s, %s, uuid %s)", infos[j].spec, infos[j].name,
                                   reel_backend_name(infos[j].backend),
                                   reel_device_type_name(infos[j].type), infos[j].uuid_str);
        g_set_error_literal(error, REEL_ERROR, REEL_EINVAL, s->str);
        g_string_free(s, TRUE);
    } else if (infos[i].backend == REEL_BACKEND_CPU) {
        dev = cpu_device_open(&infos[i], error);
    } else {
        dev = vk_device_open(&infos[i], error);
    }
    g_free(infos);
    return dev;
}

static void pool_queue_free(gpointer q)
{
    g_queue_free((GQueue *)q);
}

reel_device *reel_device_alloc_(const reel_device_info *info, const reel_device_fns *fns)
{
    reel_device *dev = g_new0(reel_device, 1);
    dev->info = *info;
    dev->fns = fns;
    atomic_init(&dev->refs, 1);
    g_mutex_init(&dev->lock);
    g_mutex_init(&dev->time_lock);
    // Keys are "size:domain" strings: simple, and pools are few.
    dev->pool = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, pool_queue_free);
    return dev;
}

reel_device *reel_device_ref(reel_device *dev)
{
    atomic_fetch_add_explicit(&dev->refs, 1, memory_order_relaxed);
    return dev;
}

void reel_mem_pool_drain_(reel_device *dev); // gpu/mem.c

void reel_device_unref(reel_device **pdev)
{
    reel_device *dev = *pdev;
    *pdev = NULL;
    if (!dev || atomic_fetch_sub_explicit(&dev->refs, 1, memory_order_acq_rel) != 1)
        return;
    dev->fns->wait(dev, 0);
    reel_mem_pool_drain_(dev);
    g_hash_table_destroy(dev->pool);
    dev->fns->destroy(dev);
    g_mutex_clear(&dev->lock);
    g_mutex_clear(&dev->time_lock);
    g_free(dev);
}

const reel_device_info *reel_device_info_of(const reel_device *dev)
{
    return &dev->info;
}

void reel_device_set_budget(reel_device *dev, uint64_t bytes)
{
    g_mutex_lock(&dev->lock);
    dev->budget = bytes;
    g_mutex_unlock(&dev->lock);
}

int reel_device_wait(reel_device *dev, uint64_t point)
{
    if (point && dev->fns->completed(dev) >= point)
        return 0;
    return dev->fns->wait(dev, point);
}

void reel_device_get_stats(reel_device *dev, reel_device_stats *out)
{
    *out = (reel_device_stats){
        .allocations = atomic_load(&dev->stats.allocations),
        .frees = atomic_load(&dev->stats.frees),
        .pool_hits = atomic_load(&dev->stats.pool_hits),
        .bytes_held = atomic_load(&dev->stats.bytes_held),
        .bytes_to_device = atomic_load(&dev->stats.to_device),
        .bytes_to_host = atomic_load(&dev->stats.to_host),
        .dispatches = atomic_load(&dev->stats.dispatches),
    };
}

void reel_device_record_time_(reel_device *dev, uint64_t point, int64_t ns)
{
    g_mutex_lock(&dev->time_lock);
    size_t slot = dev->next_time++ % G_N_ELEMENTS(dev->times);
    dev->times[slot].point = point;
    dev->times[slot].ns = ns;
    g_mutex_unlock(&dev->time_lock);
}

int reel_device_dispatch_time(reel_device *dev, uint64_t point, int64_t *ns)
{
    // Backends record a time once its dispatch completed (Vulkan, on reaping).
    int err = reel_device_wait(dev, point);
    if (err)
        return err;
    int ret = REEL_EINVAL;
    g_mutex_lock(&dev->time_lock);
    for (size_t i = 0; i < G_N_ELEMENTS(dev->times); i++) {
        if (point && dev->times[i].point == point) {
            *ns = dev->times[i].ns;
            ret = 0;
            break;
        }
    }
    g_mutex_unlock(&dev->time_lock);
    return ret;
}

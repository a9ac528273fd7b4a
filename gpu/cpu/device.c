// The cpu backend: memory is plain host memory, kernels are C functions,
// and everything completes before the call returns, so the timeline is a
// counter.
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/backend.h"

typedef struct cpu_priv {
    _Atomic uint64_t point;
} cpu_priv;

static void cpuinfo_field(const char *field, char *out, size_t n)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL))
        return;
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *colon = strchr(line, ':');
        if (colon && g_str_has_prefix(line, field)) {
            g_strlcpy(out, g_strstrip(colon + 1), n);
            return;
        }
        line = next;
    }
}

void cpu_device_list(GArray *infos)
{
    reel_device_info info = {
        .spec = "cpu",
        .backend = REEL_BACKEND_CPU,
        .type = REEL_DEVICE_CPU,
        .vendor = "unknown",
        .driver = "reel cpu backend",
        .uuid_str = "00000000-0000-0000-0000-000000000000",
        .n_heaps = 1,
        .unified_memory = true,
        .timestamps = true,
        .subgroup_size = 1,
        .max_workgroup_invocations = 1024,
        .max_storage_buffer_range = SIZE_MAX,
    };
    char model[200] = "";
    cpuinfo_field("model name", model, sizeof model);
    cpuinfo_field("vendor_id", info.vendor, sizeof info.vendor);
    g_snprintf(info.name, sizeof info.name, "cpu (%s, %ld threads)", *model ? model : "unknown model",
               sysconf(_SC_NPROCESSORS_ONLN));
    info.heaps[0].size = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    info.heaps[0].device_local = true;
    g_array_append_val(infos, info);
}

static void cpu_destroy(reel_device *dev)
{
    g_free(dev->priv);
}

static int cpu_mem_alloc(reel_device *dev, reel_mem *m, GError **error)
{
    // 64-byte alignment: vector loads, and the layout a GPU would give.
    m->host = aligned_alloc(64, (m->size + 63) & ~(size_t)63);
    if (!m->host) {
        g_set_error(error, REEL_ERROR, REEL_ENOMEM_DEVICE, "%s: out of host memory allocating %zu bytes",
                    dev->info.spec, m->size);
        return REEL_ENOMEM_DEVICE;
    }
    return 0;
}

static void cpu_mem_free(reel_device *dev, reel_mem *m)
{
    (void)dev;
    free(m->host);
}

static int cpu_wait(reel_device *dev, uint64_t point)
{
    (void)dev;
    (void)point;
    return 0;
}

static uint64_t cpu_completed(reel_device *dev)
{
    return atomic_load(&((cpu_priv *)dev->priv)->point);
}

static int cpu_kernel_create(reel_kernel *k, GError **error)
{
    (void)k;
    (void)error;
    return 0;
}

static void cpu_kernel_destroy(reel_kernel *k)
{
    (void)k;
}

static int cpu_dispatch(reel_kernel *k, const reel_dispatch_params *p, uint64_t *point)
{
    void *bufs[REEL_KERNEL_MAX_BUFFERS] = { 0 };
    for (int i = 0; i < k->desc->n_buffers; i++)
        bufs[i] = p->buffers[i]->host;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    k->desc->cpu(bufs, p->push, p->groups, k->local_size);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    uint64_t pt = atomic_fetch_add(&((cpu_priv *)k->dev->priv)->point, 1) + 1;
    for (int i = 0; i < k->desc->n_buffers; i++) {
        reel_mem *m = reel_mem_root_(p->buffers[i]); // a view's points are its parent's
        if (k->desc->writes & (1u << i))
            atomic_store(&m->ready, pt);
        atomic_store(&m->busy, pt);
    }
    if (p->timestamp) {
        int64_t ns = (t1.tv_sec - t0.tv_sec) * INT64_C(1000000000) + (t1.tv_nsec - t0.tv_nsec);
        reel_device_record_time_(k->dev, pt, ns > 0 ? ns : 1);
    }
    *point = pt;
    return 0;
}

static const reel_device_fns cpu_fns = {
    .destroy = cpu_destroy,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .wait = cpu_wait,
    .completed = cpu_completed,
    .kernel_create = cpu_kernel_create,
    .kernel_destroy = cpu_kernel_destroy,
    .dispatch = cpu_dispatch,
};

reel_device *cpu_device_open(const reel_device_info *info, GError **error)
{
    (void)error;
    reel_device *dev = reel_device_alloc_(info, &cpu_fns);
    dev->priv = g_new0(cpu_priv, 1);
    return dev;
}

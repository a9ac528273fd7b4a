// The device interface each backend implements, and the objects the generic
// layer (gpu/device.c, gpu/mem.c, gpu/kernel.c) shares with backends.
// Internal: never included from elements/ or pipeline/.
#ifndef REEL_GPU_BACKEND_H
#define REEL_GPU_BACKEND_H

#include <stdatomic.h>

#include "reel/device.h"

// A built-in kernel as the generic layer knows it: the same on every backend.
typedef struct reel_kernel_desc {
    const char *name;
    int n_buffers;
    unsigned writes;        // bit i: the kernel writes buffer i
    size_t push_size;
    uint32_t default_local_size;
    const uint32_t *spirv;  // embedded by the build (gpu/shaders/*.comp)
    const size_t *spirv_size; // bytes
    int n_constants;        // specialization constants it takes beyond the workgroup size (ids 1..n)
    // The cpu backend's version: same semantics over whole workgroups.
    void (*cpu)(void *const *buffers, const void *push, const uint32_t groups[3], uint32_t local_size);
} reel_kernel_desc;

const reel_kernel_desc *reel_kernel_desc_find(const char *name);
extern const reel_kernel_desc reel_kernel_descs[];
extern const int reel_n_kernel_descs;

// Backends fill one const table. Every entry is required unless marked.
// The generic wrappers have validated every argument before calling.
typedef struct reel_device_fns {
    void (*destroy)(reel_device *dev); // after all work finished; frees dev->priv
    // Allocates m->size bytes for m->domain; sets m->priv and, when the host
    // can see the memory, m->host. Errors: REEL_ENOMEM_DEVICE, REEL_EUNSUPPORTED.
    int (*mem_alloc)(reel_device *dev, reel_mem *m, GError **error);
    void (*mem_free)(reel_device *dev, reel_mem *m); // m is idle
    // Transfers for memory the host cannot see (m->host == NULL); optional
    // for backends whose memory is always host-visible.
    int (*upload)(reel_mem *m, size_t offset, const void *src, size_t size);
    int (*download)(reel_mem *m, size_t offset, void *dst, size_t size);
    int (*wait)(reel_device *dev, uint64_t point); // 0: everything submitted
    uint64_t (*completed)(reel_device *dev);       // highest point reached
    int (*kernel_create)(reel_kernel *k, GError **error);
    void (*kernel_destroy)(reel_kernel *k);
    int (*dispatch)(reel_kernel *k, const reel_dispatch_params *p, uint64_t *point);
    // Optional: n checked dispatches in one submission, in order.
    int (*dispatch_batch)(reel_device *dev, reel_kernel *const *k, const reel_dispatch_params *p, int n,
                          uint64_t *point);
    // Optional, all three or none: n checked dispatches recorded once into
    // *rec; submit_recorded submits that recording again (the same k and p
    // arrays passed, for the buffers' points); free_recorded releases it
    // once its submissions are done. Without them a recording is replayed
    // through dispatch_batch.
    int (*record_batch)(reel_device *dev, reel_kernel *const *k, const reel_dispatch_params *p, int n, void **rec);
    int (*submit_recorded)(reel_device *dev, void *rec, reel_kernel *const *k, const reel_dispatch_params *p, int n,
                           uint64_t *point);
    void (*free_recorded)(reel_device *dev, void *rec);
    // Optional: a copy between two checked mems of the device on the device
    // (reel_mem_copy); without it both must be host-visible.
    int (*copy)(reel_mem *dst, size_t dst_offset, reel_mem *src, size_t src_offset, size_t size);
    // Optional: an exportable mem's allocation as an fd (reel_mem_export_fd).
    int (*export_fd)(reel_mem *m, reel_mem_export *out, GError **error);
} reel_device_fns;

struct reel_device {
    reel_device_info info;
    const reel_device_fns *fns;
    atomic_int refs;

    GMutex lock;            // pool, budget and bytes_held below
    GHashTable *pool;       // pool_key -> GQueue of idle reel_mem
    uint64_t budget;        // 0: none
    struct {
        _Atomic int64_t allocations, frees, pool_hits, bytes_held, to_device, to_host, dispatches;
    } stats;

    GMutex time_lock;       // the timing ring
    struct { uint64_t point; int64_t ns; } times[256];
    uint64_t next_time;

    void *priv;             // the backend's
};

struct reel_mem {
    reel_device *dev;       // referenced while m is live, not while pooled
    size_t size;
    reel_mem_domain domain;
    bool no_pool;
    bool exportable;        // allocated for export (reel_mem_params.exportable)
    atomic_int refs;
    // Timeline points: the last write (contents valid after) and the last
    // use of any kind (reuse or free only after). Set by the backends under
    // their submit lock; read by anyone.
    _Atomic uint64_t ready, busy;
    void *host;             // persistent mapping when host-visible, else NULL
    void *priv;             // the backend's
    // A view (reel_mem_new_view): bytes [offset, offset + size) of parent,
    // referenced. Its priv is the parent's; its points are the parent's.
    reel_mem *parent;
    size_t offset;
    void *attachment;       // reel_mem_set_attachment's, destroyed before the memory is freed
    void (*attachment_destroy)(void *data);
};

// The mem whose backing and timeline points m uses: itself, or a view's parent.
static inline reel_mem *reel_mem_root_(reel_mem *m)
{
    return m->parent ? m->parent : m;
}

struct reel_kernel {
    reel_device *dev;       // referenced
    const reel_kernel_desc *desc;
    uint32_t local_size;
    uint32_t constants[REEL_KERNEL_MAX_CONSTANTS]; // specialization constants 1..n_constants
    uint32_t n_constants;
    _Atomic uint64_t last;  // point of the last dispatch
    void *priv;
};

// Backend constructors. list appends every device the backend has (info
// only); open creates the device named by info.
void cpu_device_list(GArray *infos);
reel_device *cpu_device_open(const reel_device_info *info, GError **error);
void vk_device_list(GArray *infos);
reel_device *vk_device_open(const reel_device_info *info, GError **error);

// Called by backends to make dev: sets up the generic parts; refcount 1.
reel_device *reel_device_alloc_(const reel_device_info *info, const reel_device_fns *fns);
// Checks a dispatch's arguments; *q gets them with groups of 0 made 1.
int reel_kernel_check_(reel_kernel *k, const reel_dispatch_params *p, reel_dispatch_params *q);

// Records a dispatch's measured time for reel_device_dispatch_time().
void reel_device_record_time_(reel_device *dev, uint64_t point, int64_t ns);

#endif

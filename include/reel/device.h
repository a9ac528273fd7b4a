// reel — devices, their memory and their compute kernels.
//
// A device is where work runs: the `cpu` backend or a Vulkan physical device.
// Both implement one interface, so code written against this header runs on
// either. Elements test the capability fields of reel_device_info, never the
// backend.
#ifndef REEL_DEVICE_H
#define REEL_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "error.h"
#include "export.h"

typedef struct reel_device reel_device;
typedef struct reel_mem reel_mem;
typedef struct reel_kernel reel_kernel;

typedef enum reel_backend {
    REEL_BACKEND_CPU,
    REEL_BACKEND_VULKAN,
    REEL_BACKEND_COUNT,
} reel_backend;

typedef enum reel_device_type {
    REEL_DEVICE_DISCRETE,
    REEL_DEVICE_INTEGRATED,
    REEL_DEVICE_VIRTUAL,
    REEL_DEVICE_CPU,       // the cpu backend, or a software Vulkan driver (lavapipe)
    REEL_DEVICE_OTHER,
    REEL_DEVICE_TYPE_COUNT,
} reel_device_type;

// "cpu", "vulkan"; "discrete", "integrated", "virtual", "cpu", "other".
REEL_API const char *reel_backend_name(reel_backend b);
REEL_API const char *reel_device_type_name(reel_device_type t);

#define REEL_DEVICE_MAX_HEAPS 16

typedef struct reel_device_heap {
    uint64_t size;          // bytes
    bool device_local;
    uint64_t budget, usage; // from VK_EXT_memory_budget; 0 when unknown
} reel_device_heap;

// What a device is and can do. Read-only; filled once when listed or opened.
typedef struct reel_device_info {
    char spec[32];          // the spec that opens exactly this device: "cpu", "vulkan:0"
    int index;              // N of "vulkan:N"; 0 for the cpu device
    char name[256];
    reel_backend backend;
    reel_device_type type;
    uint32_t vendor_id;     // PCI vendor id; 0 for the cpu device
    char vendor[64];
    char driver[256];       // driver name and version
    uint8_t uuid[16];
    char uuid_str[37];      // 8-4-4-4-12 lower-case hex
    int n_heaps;
    reel_device_heap heaps[REEL_DEVICE_MAX_HEAPS];
    // Capabilities reel's kernels and elements test.
    bool fp16;              // 16-bit floats in shaders and storage
    bool int8;              // 8-bit integers in shaders and storage
    bool external_memory;   // memory can be imported/exported (fd or host pointer)
    bool unified_memory;    // device-local memory is also host-visible: no staging copies
    bool timestamps;        // per-dispatch GPU time is measured
    uint32_t subgroup_size; // 1 for the cpu backend
    uint32_t max_workgroup_invocations;
    uint64_t max_storage_buffer_range; // largest single buffer binding, bytes
} reel_device_info;

// Every device reel can run on: the cpu device first, then each Vulkan
// physical device in driver order. Returns the count and sets *out to an
// array the caller frees with g_free(); never fails (no Vulkan driver simply
// means only the cpu device). Thread-safety: safe from any thread.
REEL_API int reel_device_list(reel_device_info **out);

// Opens a device by spec:
//   "cpu"       the cpu backend
//   "auto"      a discrete GPU, else an integrated one, else the cpu backend;
//               a software Vulkan driver (lavapipe) only by name or index
//   "vulkan:N"  the Nth Vulkan physical device
//   a UUID      (8-4-4-4-12 hex) the device with that UUID
//   otherwise   the first device whose name contains the spec (any case)
// NULL or "" means "auto".
// Returns a new reference, or NULL with *error set (REEL_EINVAL for a spec no
// device matches: the message lists the devices there are; REEL_EDEVICE_LOST
// or REEL_EUNSUPPORTED when the driver refuses). With REEL_VULKAN_VALIDATION=1
// in the environment Vulkan devices run with the Khronos validation layer.
// Thread-safety: safe from any thread.
REEL_API reel_device *reel_device_open(const char *spec, GError **error);

// Thread-safety: ref and unref from any thread. Unref sets *dev to NULL and
// is NULL-safe; the last one waits for the device's work and frees it (memory
// still referenced keeps its device alive).
REEL_API reel_device *reel_device_ref(reel_device *dev);
REEL_API void reel_device_unref(reel_device **dev);

// Owned by dev, valid while dev is.
REEL_API const reel_device_info *reel_device_info_of(const reel_device *dev);

// Caps the bytes of memory this device may hold (live plus pooled); 0 lifts
// the cap. Pooled idle memory is freed first when a new allocation would
// exceed it. Devices start without a cap; a pipeline opens its own device and
// sets its budget there. Thread-safety: any thread.
REEL_API void reel_device_set_budget(reel_device *dev, uint64_t bytes);

// Blocks until the device's timeline reaches `point` (a ready point or a
// dispatch's point); 0 waits for everything submitted so far. Returns 0 or
// REEL_EDEVICE_LOST. Thread-safety: any thread.
REEL_API int reel_device_wait(reel_device *dev, uint64_t point);

// Counters since the device was opened. Thread-safety: any thread; each field
// is read atomically, the set is not a snapshot.
typedef struct reel_device_stats {
    int64_t allocations;     // backend allocations made (pool misses)
    int64_t frees;           // backend allocations released
    int64_t pool_hits;       // reel_mem_new served from the pool
    int64_t bytes_held;      // live plus pooled bytes (what the budget caps)
    int64_t bytes_to_device; // host memory -> device memory, by upload
    int64_t bytes_to_host;   // device memory -> host memory, by download
    int64_t dispatches;
} reel_device_stats;
REEL_API void reel_device_get_stats(reel_device *dev, reel_device_stats *out);

// Validation messages (warnings and errors) the Vulkan layer has reported in
// this process. Tests assert it stays 0. Thread-safety: any thread.
REEL_API int64_t reel_device_validation_messages(void);

// ---- memory ---------------------------------------------------------------

typedef enum reel_mem_domain {
    REEL_MEM_HOST,          // host memory the device can also read (on Vulkan: host-visible, cached)
    REEL_MEM_DEVICE,        // device-local; reached from the host by upload/download
    REEL_MEM_DEVICE_MAPPED, // device-local and host-visible (UMA, resizable BAR)
    REEL_MEM_DOMAIN_COUNT,
} reel_mem_domain;

REEL_API const char *reel_mem_domain_name(reel_mem_domain d); // "host", "device", "device-mapped"

typedef struct reel_mem_params {
    size_t size;            // bytes; > 0
    reel_mem_domain domain;
    bool no_pool;           // allocate afresh and free on last unref
    // Memory another API on the same GPU can import (reel_mem_export_fd):
    // a dedicated allocation each, pooled apart from the rest.
    bool exportable;
} reel_mem_params;

#define reel_mem_params(...) (&(reel_mem_params){ __VA_ARGS__ })

// Bytes in one domain of one device, from the device's pool (keyed by size
// and domain) when one is idle. Contents are undefined. On the cpu device
// every domain is host memory and reads back as REEL_MEM_HOST.
// Returns a new reference holding one on dev, or NULL with *error set:
// REEL_ENOMEM_DEVICE beyond the budget or the device's memory (the message
// names the device, the domain and the figures), REEL_EUNSUPPORTED for a
// domain the device lacks, REEL_EINVAL for size 0.
// Thread-safety: any thread.
REEL_API reel_mem *reel_mem_new(reel_device *dev, const reel_mem_params *params, GError **error);

// Thread-safety: any thread. The last unref returns the memory to its pool
// (or frees it); memory still used by submitted GPU work is only reused or
// freed after that work, so unref never waits.
REEL_API reel_mem *reel_mem_ref(reel_mem *m);
REEL_API void reel_mem_unref(reel_mem **m);

// Views start at multiples of this: every Vulkan device binds a storage
// buffer at such an offset (minStorageBufferOffsetAlignment is at most 256).
#define REEL_MEM_VIEW_ALIGN 256

// Bytes [offset, offset + size) of parent as a mem of their own: bound to
// kernels, mapped and transferred like any mem, for several tensors in one
// allocation. A view shares parent's ready and busy points, so work on any
// view of one parent is ordered as work on the parent itself. Returns a new
// reference that holds one on parent (a view of a view is a view of the
// first's parent), or NULL with *error set: REEL_EINVAL for size 0, a range
// outside parent or an offset that is not a multiple of REEL_MEM_VIEW_ALIGN.
// Thread-safety: any thread.
REEL_API reel_mem *reel_mem_new_view(reel_mem *parent, size_t offset, size_t size, GError **error);

REEL_API size_t reel_mem_size(const reel_mem *m);
REEL_API reel_mem_domain reel_mem_domain_of(const reel_mem *m);
REEL_API reel_device *reel_mem_device(const reel_mem *m); // borrowed

// The timeline point after which the contents are valid (the last write's).
// GPU work that reads m waits for it on the GPU; reel_device_wait() on it
// blocks the host. 0 means valid now.
REEL_API uint64_t reel_mem_ready_point(const reel_mem *m);

// Waits until no submitted device work uses m: before another API (CUDA)
// writes into it. Returns 0 or a REEL_E* code. Thread-safety: any thread.
REEL_API int reel_mem_wait_idle(reel_mem *m);

// An exportable mem's allocation as a file descriptor that another API on
// the same GPU imports (CUDA's cuImportExternalMemory, as an opaque fd).
typedef struct reel_mem_export {
    int fd;                 // new for each call, the caller's (an importer that succeeds takes it)
    uint64_t size;          // the allocation's bytes, at least reel_mem_size(): what an importer maps
    bool dedicated;         // one buffer's own allocation (CUDA: CUDA_EXTERNAL_MEMORY_DEDICATED)
} reel_mem_export;

// Whether m is one reel_mem_export_fd takes: made .exportable, not a view.
REEL_API bool reel_mem_exportable(const reel_mem *m);

// Errors: REEL_EINVAL for a view or a mem made without .exportable;
// REEL_EUNSUPPORTED where the device cannot export (the cpu device, a Vulkan
// driver without VK_KHR_external_memory_fd). Thread-safety: any thread.
REEL_API int reel_mem_export_fd(reel_mem *m, reel_mem_export *out, GError **error);

// What another API made of m's allocation (its import there), kept with the
// allocation while it is pooled and destroyed by destroy(data) just before
// the memory is freed: an import is made once per allocation, not per use.
// Setting another destroys the one before. m: not a view. Thread-safety: by
// whoever holds m.
REEL_API void reel_mem_set_attachment(reel_mem *m, void *data, void (*destroy)(void *data));
REEL_API void *reel_mem_attachment(const reel_mem *m);

enum { REEL_MAP_READ = 1 << 0, REEL_MAP_WRITE = 1 << 1 };

// Maps host-visible memory (REEL_MEM_HOST, REEL_MEM_DEVICE_MAPPED, or any
// domain on a unified-memory device) and returns the pointer in *ptr. Waits on
// the host first: for the last write (READ) and for every pending use (WRITE).
// REEL_EUNSUPPORTED for memory the host cannot see. Thread-safety: the caller
// must not map one mem from two threads that write.
REEL_API int reel_mem_map(reel_mem *m, unsigned flags, void **ptr);
REEL_API void reel_mem_unmap(reel_mem *m);

// Bytes moved host <-> device by one caller (an element), added to by the
// transfer calls below. Not atomic: one per caller.
typedef struct reel_xfer {
    int64_t to_device, to_host;
} reel_xfer;

// Copies `size` bytes from host pointer src into m at offset (upload), or from
// m at offset into dst (download). Device-local memory the host cannot see is
// staged through a transient buffer. upload returns once src may be reused and
// sets m's ready point; download waits for m's ready point and returns with
// dst filled. Bytes that cross between host and device memory (m not in
// REEL_MEM_HOST) are added to `acc` (may be NULL) and the device's stats.
// Returns 0, REEL_EINVAL for a range outside m, REEL_ENOMEM_DEVICE when no
// staging memory is left, REEL_EDEVICE_LOST. Thread-safety: any thread; two
// writers of one mem race as they would on any memory.
REEL_API int reel_mem_upload(reel_mem *m, size_t offset, const void *src, size_t size, reel_xfer *acc);
REEL_API int reel_mem_download(reel_mem *m, size_t offset, void *dst, size_t size, reel_xfer *acc);

// Copies `size` bytes of src at src_offset into dst at dst_offset on the
// device (a copy command on Vulkan, memcpy where the host sees both): for
// memory another API must read that was not allocated for it (encode's
// exportable staging for NVENC). On the GPU it waits for src's last write
// and every use of dst, sets dst's ready point and returns without the
// host waiting. Nothing crosses between host and device: no bytes are
// counted. Returns 0, REEL_EINVAL (a range outside either mem, mems of two
// devices, or two views of one allocation), REEL_ENOMEM_DEVICE,
// REEL_EDEVICE_LOST. Thread-safety: any thread.
REEL_API int reel_mem_copy(reel_mem *dst, size_t dst_offset, reel_mem *src, size_t src_offset, size_t size);

// ---- kernels --------------------------------------------------------------

#define REEL_KERNEL_MAX_BUFFERS 8
#define REEL_KERNEL_MAX_PUSH 128
#define REEL_KERNEL_MAX_CONSTANTS 8

typedef struct reel_kernel_params {
    const char *name;       // a built-in kernel: "saxpy", "reduce_sum", "fill", "preprocess", "overlay"
    uint32_t local_size;    // workgroup size (x); 0: the kernel's default
    // Optional: specialization constants, constants[i] for constant_id i + 1
    // (id 0 is the workgroup size); at most as many as the kernel takes (the
    // built-ins above take none). Copied; kernels with different values are
    // different pipelines.
    const uint32_t *constants;
    uint32_t n_constants;
} reel_kernel_params;

#define reel_kernel_params(...) (&(reel_kernel_params){ __VA_ARGS__ })

// Built-in kernels. Each exists for every backend with the same semantics:
//   saxpy       buffers {x, y}: y[i] = a * x[i] + y[i] for i < n.
//               push {float a; uint32_t n}. groups: ceil(n / local_size).
//   reduce_sum  buffers {in, out}: out[g] = sum of in[g*chunk .. min(n, (g+1)*chunk))
//               for each group g. push {uint32_t n; uint32_t chunk}.
//   fill        buffers {out}: out[i] = value for i < n. push {float value; uint32_t n}.
//   preprocess  buffers {frame, tensor}: a yuv420p/yuvj420p/nv12/rgb24/bgr24/rgba frame
//               (planes packed at any byte offset; buffer size a multiple of 4) to a
//               float32 tensor: ROI, bilinear resize, BT.601, normalization, NCHW/NHWC.
//               push reel_preprocess_push (108 bytes). groups: ceil(dst_w * dst_h /
//               local_size). The definition: gpu/preprocess.h.
//   overlay     buffers {frame, prims, font, masks}: blends instance masks (run
//               lengths) translucently, then paints boxes, filled boxes and 5x7 glyphs
//               into a yuv420p/yuvj420p/nv12/rgb24/bgr24/rgba frame in place, a later
//               primitive over an earlier one; padding bytes untouched. push
//               reel_overlay_push (48 bytes). groups: ceil(ceil(frame bytes / 4) / local_size).
//               Layouts, coverage, masks and font: gpu/overlay.h.
//
// Creates a kernel on dev (compiling through the device's on-disk pipeline
// cache: $REEL_CACHE_DIR, else $XDG_CACHE_HOME/reel, else ~/.cache/reel).
// Returns a kernel the caller destroys, or NULL with *error set (REEL_EINVAL
// for an unknown name, a local_size beyond the device's limit or more
// constants than the kernel takes).
// Thread-safety: any thread.
REEL_API reel_kernel *reel_kernel_create(reel_device *dev, const reel_kernel_params *params, GError **error);
// Waits for the kernel's pending dispatches, frees it, sets *k to NULL. NULL-safe.
REEL_API void reel_kernel_destroy(reel_kernel **k);
REEL_API uint32_t reel_kernel_local_size(const reel_kernel *k);

typedef struct reel_dispatch_params {
    reel_mem *buffers[REEL_KERNEL_MAX_BUFFERS]; // in binding order; as many as the kernel takes
    const void *push;       // per-dispatch scalars, push_size bytes
    size_t push_size;       // must equal the kernel's
    uint32_t groups[3];     // workgroups; 0 counts as 1
    bool timestamp;         // measure GPU time (reel_device_dispatch_time)
} reel_dispatch_params;

#define reel_dispatch_params(...) (&(reel_dispatch_params){ __VA_ARGS__ })

// Submits one dispatch. It waits on the GPU for each buffer's ready point and
// pending uses; every buffer's ready point becomes the dispatch's point,
// returned in *point (may be NULL). The host does not wait. Returns 0,
// REEL_EINVAL (wrong buffer count, push size, buffer from another device),
// REEL_EDEVICE_LOST. Thread-safety: any thread.
REEL_API int reel_kernel_dispatch(reel_kernel *k, const reel_dispatch_params *params, uint64_t *point);

// A batch: dispatches that go to the device together, in one submission
// (one command buffer, each dispatch seeing the writes of those before it),
// instead of one submission each: for the many small dispatches of a model's
// inference. Buffers are held until the batch is submitted. Backends
// without batching run each dispatch as it is added.
// Thread-safety: one thread at a time per batch.
typedef struct reel_batch reel_batch;
REEL_API reel_batch *reel_batch_new(reel_device *dev);
REEL_API void reel_batch_free(reel_batch **b); // submits what is left first
// Adds a dispatch (the arguments are checked as reel_kernel_dispatch checks
// them). Returns 0 or REEL_EINVAL / REEL_EDEVICE_LOST.
REEL_API int reel_batch_dispatch(reel_batch *b, reel_kernel *k, const reel_dispatch_params *params);
// Submits the dispatches added since the last submission; *point (may be
// NULL) gets the point after which all of them are done (0 when none).
REEL_API int reel_batch_submit(reel_batch *b, uint64_t *point);
// Dispatches added since the last submission.
REEL_API int reel_batch_size(const reel_batch *b);

// A recording: a batch's dispatches recorded once (one command buffer on
// Vulkan) and submitted again as often as wanted, for work whose buffers,
// push constants and sizes stay the same (a model's inference at one set of
// shapes). Each submission waits on the GPU for its buffers' points and sets
// them, as reel_batch_submit does. It holds its buffers and its device until
// freed. Backends that cannot record run the dispatches again at each
// submission. Thread-safety: one thread at a time per recording.
typedef struct reel_recording reel_recording;
// Takes the dispatches added to b since its last submission into a new
// recording (b is left empty; nothing is submitted). NULL with *error set
// when b holds none (REEL_EINVAL) or the device refuses (REEL_ENOMEM_DEVICE).
REEL_API reel_recording *reel_batch_record(reel_batch *b, GError **error);
// Submits r; *point (may be NULL) gets the point after which it is done.
// Returns 0 or REEL_ENOMEM_DEVICE / REEL_EDEVICE_LOST.
REEL_API int reel_recording_submit(reel_recording *r, uint64_t *point);
REEL_API int reel_recording_dispatches(const reel_recording *r);
// Waits for r's submissions, then frees it and its references; sets *r to
// NULL. NULL-safe.
REEL_API void reel_recording_free(reel_recording **r);

// Waits for the dispatch at `point` and returns its execution time in *ns:
// GPU timestamps on Vulkan, the function's wall time on the cpu backend.
// REEL_EINVAL when that dispatch was not timed or its time is no longer kept
// (the last 256 are). Thread-safety: any thread.
REEL_API int reel_device_dispatch_time(reel_device *dev, uint64_t point, int64_t *ns);

#endif

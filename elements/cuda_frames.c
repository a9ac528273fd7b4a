// NVDEC frames into Vulkan memory, and Vulkan frames into NVENC's, through
// CUDA external memory (elements/cuda_frames.h). The few driver API calls this needs are
// declared here as cuda.h lays them out (CUDA 10 on) and looked up in
// libcuda.so.1 when first used: no CUDA toolkit at build time.
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include <libavutil/hwcontext.h>

#include "elements/cuda_frames.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct CUextMemory_st *CUexternalMemory;

enum { CU_MEMORYTYPE_DEVICE = 2, CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 1, CUDA_EXTERNAL_MEMORY_DEDICATED = 1 };

typedef struct cu_external_memory_desc {
    int type;
    union {
        int fd;
        struct { void *handle; const void *name; } win32;
        const void *nvsci;
    } handle;
    unsigned long long size;
    unsigned int flags;
    unsigned int reserved[16];
} cu_external_memory_desc;

typedef struct cu_external_buffer_desc {
    unsigned long long offset, size;
    unsigned int flags;
    unsigned int reserved[16];
} cu_external_buffer_desc;

typedef struct cu_memcpy2d {
    size_t src_x_bytes, src_y;
    int src_memory_type;
    const void *src_host;
    CUdeviceptr src_device;
    void *src_array;
    size_t src_pitch;
    size_t dst_x_bytes, dst_y;
    int dst_memory_type;
    void *dst_host;
    CUdeviceptr dst_device;
    void *dst_array;
    size_t dst_pitch;
    size_t width_bytes, height;
} cu_memcpy2d;

// FFmpeg's AVCUDADeviceContext begins with these two (hwcontext_cuda.h,
// which needs cuda.h itself).
typedef struct av_cuda_device {
    CUcontext ctx;
    CUstream stream;
} av_cuda_device;

static struct {
    CUresult (*ctx_push)(CUcontext ctx);
    CUresult (*ctx_pop)(CUcontext *ctx);
    CUresult (*ctx_get_device)(CUdevice *dev);
    CUresult (*device_get_uuid)(unsigned char uuid[16], CUdevice dev);
    CUresult (*import_memory)(CUexternalMemory *mem, const cu_external_memory_desc *desc);
    CUresult (*mapped_buffer)(CUdeviceptr *ptr, CUexternalMemory mem, const cu_external_buffer_desc *desc);
    CUresult (*destroy_memory)(CUexternalMemory mem);
    CUresult (*mem_free)(CUdeviceptr ptr);
    CUresult (*memcpy2d_async)(const cu_memcpy2d *copy, CUstream stream);
    CUresult (*stream_sync)(CUstream stream);
    CUresult (*error_name)(CUresult r, const char **name);
} cu;

// NULL once libcuda's functions are in `cu`, else why not (kept for the
// process, like the library).
static const char *load_cuda(void)
{
    static gsize once;
    static char *why;
    if (g_once_init_enter(&once)) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        const struct { void **fn; const char *name; } syms[] = {
            { (void **)&cu.ctx_push, "cuCtxPushCurrent_v2" },
            { (void **)&cu.ctx_pop, "cuCtxPopCurrent_v2" },
            { (void **)&cu.ctx_get_device, "cuCtxGetDevice" },
            { (void **)&cu.device_get_uuid, "cuDeviceGetUuid" },
            { (void **)&cu.import_memory, "cuImportExternalMemory" },
            { (void **)&cu.mapped_buffer, "cuExternalMemoryGetMappedBuffer" },
            { (void **)&cu.destroy_memory, "cuDestroyExternalMemory" },
            { (void **)&cu.mem_free, "cuMemFree_v2" },
            { (void **)&cu.memcpy2d_async, "cuMemcpy2DAsync_v2" },
            { (void **)&cu.stream_sync, "cuStreamSynchronize" },
            { (void **)&cu.error_name, "cuGetErrorName" },
        };
        if (!lib)
            why = g_strdup(dlerror());
        for (size_t i = 0; lib && !why && i < G_N_ELEMENTS(syms); i++)
            if (!(*syms[i].fn = dlsym(lib, syms[i].name)))
                why = g_strdup_printf("libcuda.so.1 has no %s (a driver older than CUDA 10)", syms[i].name);
        g_once_init_leave(&once, 1);
    }
    return why;
}

static char *cuda_failed(const char *what, CUresult r)
{
    const char *name = NULL;
    if (cu.error_name(r, &name) != 0 || !name)
        name = "unknown error";
    return g_strdup_printf("%s: %s (%d)", what, name, r);
}

struct cuda_frames {
    reel_device *dev;     // referenced
    AVBufferRef *hw;      // the CUDA device, referenced
    CUcontext ctx;
    CUstream stream;
};

// What CUDA made of one exportable allocation: attached to the reel_mem, so
// that it is imported once and released when the memory is freed. The
// context is the process's shared CUDA device's (reel_av_shared_hw_device),
// alive as long as the process; NVDEC and NVENC share the import.
typedef struct cuda_import {
    CUcontext ctx;
    CUexternalMemory mem;
    CUdeviceptr ptr;
} cuda_import;

static void import_destroy(void *data)
{
    cuda_import *im = data;
    CUcontext popped;
    if (cu.ctx_push(im->ctx) == 0) {
        cu.mem_free(im->ptr);
        cu.destroy_memory(im->mem);
        cu.ctx_pop(&popped);
    }
    g_free(im);
}

// Called with c->ctx current.
static cuda_import *import_mem(cuda_frames *c, reel_mem *m, char **why)
{
    GError *error = NULL;
    reel_mem_export ex;
    if (reel_mem_export_fd(m, &ex, &error) < 0) {
        *why = g_strdup(error->message);
        g_error_free(error);
        return NULL;
    }
    cu_external_memory_desc desc = {
        .type = CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD,
        .handle.fd = ex.fd,
        .size = ex.size,
        .flags = ex.dedicated ? CUDA_EXTERNAL_MEMORY_DEDICATED : 0,
    };
    cuda_import *im = g_new0(cuda_import, 1);
    im->ctx = c->ctx;
    CUresult r = cu.import_memory(&im->mem, &desc);
    if (r != 0) {
        close(ex.fd); // CUDA owns it only once imported
        *why = cuda_failed("cuImportExternalMemory", r);
        g_free(im);
        return NULL;
    }
    cu_external_buffer_desc buf = { .size = reel_mem_size(m) };
    if ((r = cu.mapped_buffer(&im->ptr, im->mem, &buf)) != 0) {
        *why = cuda_failed("cuExternalMemoryGetMappedBuffer", r);
        cu.destroy_memory(im->mem);
        g_free(im);
        return NULL;
    }
    return im;
}

bool cuda_frames_possible(reel_device *dev, char **why)
{
    const reel_device_info *info = reel_device_info_of(dev);
    const char *no_cuda = load_cuda();
    if (info->backend != REEL_BACKEND_VULKAN)
        *why = g_strdup_printf("frames go to %s, not a Vulkan device", info->spec);
    else if (!info->external_memory)
        *why = g_strdup_printf("%s (%s) cannot share memory with CUDA", info->spec, info->name);
    else if (no_cuda)
        *why = g_strdup_printf("no CUDA driver: %s", no_cuda);
    return !*why;
}

cuda_frames *cuda_frames_open(reel_device *dev, AVBufferRef *hw_device, char **why)
{
    const reel_device_info *info = reel_device_info_of(dev);
    AVHWDeviceContext *hw = hw_device ? (AVHWDeviceContext *)hw_device->data : NULL;
    if (!cuda_frames_possible(dev, why))
        return NULL;
    if (!hw || hw->type != AV_HWDEVICE_TYPE_CUDA) {
        *why = g_strdup("no CUDA device to share frames with");
        return NULL;
    }
    const av_cuda_device *cd = hw->hwctx;
    unsigned char uuid[16] = { 0 };
    CUdevice cdev;
    CUcontext popped;
    CUresult r = cu.ctx_push(cd->ctx);
    if (r == 0) {
        if ((r = cu.ctx_get_device(&cdev)) == 0)
            r = cu.device_get_uuid(uuid, cdev);
        cu.ctx_pop(&popped);
    }
    if (r != 0) {
        *why = cuda_failed("reading the CUDA device's UUID", r);
        return NULL;
    }
    if (memcmp(uuid, info->uuid, sizeof uuid) != 0) {
        *why = g_strdup_printf("the CUDA device is not the GPU of %s (%s)", info->spec, info->name);
        return NULL;
    }
    cuda_frames *c = g_new0(cuda_frames, 1);
    c->dev = reel_device_ref(dev);
    c->hw = av_buffer_ref(hw_device);
    c->ctx = cd->ctx;
    c->stream = cd->stream;
    return c;
}

// Copies a frame of format f plane by plane, src to dst, each row
// row-bytes long at its plane's pitch; returns once the copy is over, for
// the other API reads or reuses the memory next. Called with c->ctx current.
static char *copy_planes(cuda_frames *c, const reel_caps *f, const CUdeviceptr *src, const size_t *src_pitch,
                         const CUdeviceptr *dst, const size_t *dst_pitch)
{
    reel_pixfmt pf = (reel_pixfmt)__builtin_ctzll(f->pixfmts);
    for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
        cu_memcpy2d copy = {
            .src_memory_type = CU_MEMORYTYPE_DEVICE,
            .src_device = src[p],
            .src_pitch = src_pitch[p],
            .dst_memory_type = CU_MEMORYTYPE_DEVICE,
            .dst_device = dst[p],
            .dst_pitch = dst_pitch[p],
            .width_bytes = reel_pixfmt_row_bytes(pf, p, f->width),
            .height = (size_t)reel_pixfmt_plane_height(pf, p, f->height),
        };
        CUresult r = cu.memcpy2d_async(&copy, c->stream);
        if (r != 0)
            return cuda_failed("cuMemcpy2DAsync", r);
    }
    CUresult r = cu.stream_sync(c->stream);
    return r != 0 ? cuda_failed("cuStreamSynchronize", r) : NULL;
}

// m as CUDA sees it: imported once per allocation, kept with it. Called
// with c->ctx current.
static cuda_import *imported(cuda_frames *c, reel_mem *m, char **why)
{
    cuda_import *im = reel_mem_attachment(m);
    if (im && im->ctx == c->ctx)
        return im;
    if ((im = import_mem(c, m, why)))
        reel_mem_set_attachment(m, im, import_destroy);
    return im;
}

reel_buffer *cuda_frames_copy(cuda_frames *c, const reel_caps *f, const AVFrame *frame, char **why)
{
    GError *error = NULL;
    size_t size = reel_buffer_packed_size(f);
    reel_mem *m = size ? reel_mem_new(c->dev, reel_mem_params(.size = size, .domain = REEL_MEM_DEVICE,
                                                              .exportable = true), &error)
                       : NULL;
    if (!m) {
        *why = g_strdup(error ? error->message : "the frame's format has no packed size");
        g_clear_error(&error);
        return NULL;
    }
    // A pooled allocation may still be read by earlier work on the GPU.
    int rc = reel_mem_wait_idle(m);
    if (rc < 0) {
        *why = g_strdup_printf("waiting for the device: %s", reel_strerror(rc));
        reel_mem_unref(&m);
        return NULL;
    }
    CUcontext popped;
    CUresult r = cu.ctx_push(c->ctx);
    if (r != 0) {
        *why = cuda_failed("cuCtxPushCurrent", r);
        reel_mem_unref(&m);
        return NULL;
    }
    cuda_import *im = imported(c, m, why);
    if (im) {
        // Packed: plane after plane, rows of the row bytes.
        reel_pixfmt pf = (reel_pixfmt)__builtin_ctzll(f->pixfmts);
        CUdeviceptr src[REEL_MAX_PLANES], dst[REEL_MAX_PLANES];
        size_t src_pitch[REEL_MAX_PLANES], dst_pitch[REEL_MAX_PLANES], offset = 0;
        for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
            src[p] = (CUdeviceptr)(uintptr_t)frame->data[p];
            src_pitch[p] = (size_t)frame->linesize[p];
            dst[p] = im->ptr + offset;
            dst_pitch[p] = reel_pixfmt_row_bytes(pf, p, f->width);
            offset += dst_pitch[p] * (size_t)reel_pixfmt_plane_height(pf, p, f->height);
        }
        // Vulkan reads the frame next: the copy is over on return.
        *why = copy_planes(c, f, src, src_pitch, dst, dst_pitch);
    }
    cu.ctx_pop(&popped);
    if (*why) {
        reel_mem_unref(&m);
        return NULL;
    }
    return reel_buffer_new_device(f, m);
}

// Frames in memory CUDA cannot import (any element's allocation but
// NVDEC's, a view): first copied whole on the GPU into an exportable
// allocation of the same size (pooled, so imported once), their offsets
// and strides unchanged. One more copy on the device, none to the host.
// NULL with *why set.
static reel_mem *exportable_copy(cuda_frames *c, reel_mem *m, char **why)
{
    GError *error = NULL;
    reel_mem *copy = reel_mem_new(
        c->dev, reel_mem_params(.size = reel_mem_size(m), .domain = REEL_MEM_DEVICE, .exportable = true), &error);
    if (!copy) {
        *why = g_strdup_printf("no exportable memory to copy the frame into: %s", error->message);
        g_error_free(error);
        return NULL;
    }
    int rc = reel_mem_copy(copy, 0, m, 0, reel_mem_size(m));
    if (rc < 0) {
        *why = g_strdup_printf("copying the frame into exportable memory: %s", reel_strerror(rc));
        reel_mem_unref(&copy);
    }
    return copy;
}

int cuda_frames_to_cuda(cuda_frames *c, const reel_buffer *b, AVFrame *dst, char **why)
{
    reel_mem *m = b->mem, *staged = NULL;
    if (!m || reel_mem_device(m) != c->dev) {
        *why = g_strdup("the frame is not in the memory of the device CUDA shares");
        return -1;
    }
    if (!reel_mem_exportable(m) && !(m = staged = exportable_copy(c, m, why)))
        return -1;
    // The device work that wrote the frame (overlay's boxes, the copy
    // above) is over before CUDA reads it.
    int rc = reel_device_wait(c->dev, reel_mem_ready_point(m));
    CUcontext popped;
    CUresult r = 0;
    if (rc < 0)
        *why = g_strdup_printf("waiting for the device: %s", reel_strerror(rc));
    else if ((r = cu.ctx_push(c->ctx)) != 0)
        *why = cuda_failed("cuCtxPushCurrent", r);
    cuda_import *im = *why ? NULL : imported(c, m, why);
    if (im) {
        reel_pixfmt pf = (reel_pixfmt)__builtin_ctzll(b->format.pixfmts);
        CUdeviceptr src[REEL_MAX_PLANES], to[REEL_MAX_PLANES];
        size_t src_pitch[REEL_MAX_PLANES], to_pitch[REEL_MAX_PLANES];
        for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
            src[p] = im->ptr + b->offsets[p];
            src_pitch[p] = (size_t)b->strides[p];
            to[p] = (CUdeviceptr)(uintptr_t)dst->data[p];
            to_pitch[p] = (size_t)dst->linesize[p];
        }
        // b (or the staging copy) goes back to its pool after this: the
        // copy is over on return.
        *why = copy_planes(c, &b->format, src, src_pitch, to, to_pitch);
    }
    if (rc >= 0 && r == 0)
        cu.ctx_pop(&popped);
    reel_mem_unref(&staged);
    return *why ? -1 : 0;
}

void cuda_frames_close(cuda_frames **pc)
{
    cuda_frames *c = *pc;
    *pc = NULL;
    if (!c)
        return;
    av_buffer_unref(&c->hw);
    reel_device_unref(&c->dev);
    g_free(c);
}

// Tensors: host memory of our own, borrowed host memory, or device memory.
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "reel/tensor.h"

// Tensor data is 64-byte aligned so SIMD kernels may use aligned loads.
#define TENSOR_ALIGN 64

int64_t reel_tensor_count(int rank, const int64_t *shape)
{
    if (rank < 0 || rank > REEL_TENSOR_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0 || __builtin_mul_overflow(n, shape[i], &n))
            return -1;
    }
    return n;
}

// The bytes of a shape's elements; false when the shape is invalid.
static bool shape_bytes(reel_dtype dtype, int rank, const int64_t *shape, size_t *nbytes)
{
    size_t esize = reel_dtype_size(dtype);
    int64_t count = reel_tensor_count(rank, shape);
    return esize > 0 && count >= 0 && !__builtin_mul_overflow((size_t)count, esize, nbytes);
}

static reel_tensor *header(reel_dtype dtype, int rank, const int64_t *shape, size_t nbytes)
{
    reel_tensor *t = g_new0(reel_tensor, 1);
    t->dtype = dtype;
    t->rank = rank;
    if (rank > 0)
        memcpy(t->shape, shape, sizeof *shape * (size_t)rank);
    t->nbytes = nbytes;
    return t;
}

reel_tensor *reel_tensor_new(reel_dtype dtype, int rank, const int64_t *shape)
{
    size_t nbytes;
    if (!shape_bytes(dtype, rank, shape, &nbytes) || nbytes > SIZE_MAX - TENSOR_ALIGN)
        return NULL;
    size_t alloc = MAX((nbytes + TENSOR_ALIGN - 1) / TENSOR_ALIGN * TENSOR_ALIGN, TENSOR_ALIGN);
    void *data = aligned_alloc(TENSOR_ALIGN, alloc);
    if (!data)
        return NULL;
    memset(data, 0, alloc);
    reel_tensor *t = header(dtype, rank, shape, nbytes);
    t->data = data;
    return t;
}

static void keep_data(void *opaque)
{
    (void)opaque;
}

reel_tensor *reel_tensor_wrap(reel_dtype dtype, int rank, const int64_t *shape, void *data, size_t nbytes,
                              void (*release)(void *opaque), void *opaque)
{
    size_t need;
    if (!shape_bytes(dtype, rank, shape, &need) || nbytes < need || (need > 0 && !data)) {
        if (release)
            release(opaque);
        return NULL;
    }
    reel_tensor *t = header(dtype, rank, shape, need);
    t->data = data;
    t->release_ = release ? release : keep_data; // the caller's: never free()d here
    t->opaque_ = opaque;
    return t;
}

reel_tensor *reel_tensor_new_device(reel_dtype dtype, int rank, const int64_t *shape, reel_mem *mem)
{
    size_t need;
    if (!mem || !shape_bytes(dtype, rank, shape, &need) || reel_mem_size(mem) < need)
        return NULL;
    reel_tensor *t = header(dtype, rank, shape, need);
    t->mem = reel_mem_ref(mem);
    return t;
}

reel_tensor *reel_tensor_dup(const reel_tensor *t)
{
    if (!t)
        return NULL;
    reel_tensor *d = reel_tensor_new(t->dtype, t->rank, t->shape);
    if (!d || !t->nbytes)
        return d;
    if (!t->mem)
        memcpy(d->data, t->data, t->nbytes);
    else if (reel_mem_download(t->mem, 0, d->data, t->nbytes, NULL) < 0)
        reel_tensor_free(&d);
    return d;
}

void reel_tensor_free(reel_tensor **pt)
{
    reel_tensor *t = pt ? *pt : NULL;
    if (!t)
        return;
    if (t->mem)
        reel_mem_unref(&t->mem);
    else if (t->release_)
        t->release_(t->opaque_);
    else
        free(t->data);
    g_free(t);
    *pt = NULL;
}

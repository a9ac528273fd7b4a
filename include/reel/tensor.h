// reel — tensors: what the model runtime takes and returns. A tensor is a
// dtype, a shape and its elements, either in host memory (row-major,
// contiguous, `data`) or in a device's memory (`mem`, packed from offset 0).
//
// Ownership: a tensor from reel_tensor_new() owns its elements; one from
// reel_tensor_wrap() borrows them and calls `release` when freed; one from
// reel_tensor_new_device() holds a reference on its memory. reel_tensor_free()
// frees any of them. Fields are read-only but for the elements themselves.
#ifndef REEL_TENSOR_H
#define REEL_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "format.h"
#include "export.h"

typedef struct reel_tensor {
    reel_dtype dtype;
    int rank;
    int64_t shape[REEL_TENSOR_MAX_RANK];
    void *data;        // host memory; NULL when the tensor lives in device memory
    size_t nbytes;     // bytes of the elements
    reel_mem *mem;     // device memory holding the elements, or NULL

    // private to reel
    void (*release_)(void *opaque);
    void *opaque_;
} reel_tensor;

// Elements of a shape (1 for rank 0); -1 when a dim is negative, the rank is
// out of range or the count overflows.
REEL_API int64_t reel_tensor_count(int rank, const int64_t *shape);

// A zeroed host tensor (64-byte aligned elements). NULL when the shape is
// invalid or too large.
REEL_API reel_tensor *reel_tensor_new(reel_dtype dtype, int rank, const int64_t *shape);

// A host tensor over `data` (nbytes, at least what the shape needs), which
// the caller owns: release(opaque) is called when the tensor is freed
// (release may be NULL). NULL (after calling release) when the shape is
// invalid or nbytes too small.
REEL_API reel_tensor *reel_tensor_wrap(reel_dtype dtype, int rank, const int64_t *shape, void *data, size_t nbytes,
                              void (*release)(void *opaque), void *opaque);

// A tensor in device memory `mem` (packed, from offset 0); takes a new
// reference on mem. NULL when the shape is invalid or mem too small.
REEL_API reel_tensor *reel_tensor_new_device(reel_dtype dtype, int rank, const int64_t *shape, reel_mem *mem);

// A host copy of t's shape and elements (read back from the device for a
// device tensor). NULL on failure.
REEL_API reel_tensor *reel_tensor_dup(const reel_tensor *t);

// Frees t (see Ownership) and sets *t to NULL. NULL-safe.
REEL_API void reel_tensor_free(reel_tensor **t);

#endif

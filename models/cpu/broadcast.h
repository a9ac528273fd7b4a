// Numpy (multidirectional) broadcasting for the elementwise kernels, shared
// by elementwise.c and logic.c, and Cast's conversions (elementwise.c) for
// CastLike and float16 kernels. Only models/cpu/ includes this.
#ifndef REEL_MODELS_CPU_BROADCAST_H
#define REEL_MODELS_CPU_BROADCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "models/op.h"

// Inputs one broadcast walk follows at once.
#define BCAST_MAX_IN 3

// o gets dtype and x's rank and dims.
static inline void bcast_set_like(reel_ir_value *o, reel_dtype dtype, const reel_ir_value *x)
{
    o->dtype = dtype;
    o->rank = x->rank;
    for (int i = 0; i < x->rank && i < REEL_TENSOR_MAX_RANK; i++)
        o->dims[i] = x->dims[i];
}

static inline int64_t bcast_count(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

// Sets output 0 to the numpy broadcast of inputs 0..nin-1 (any number) with
// type out_dtype; fails when an input is missing or the dims cannot broadcast.
int bcast_infer(reel_ir_graph *g, reel_ir_node *n, int nin, reel_dtype out_dtype, GError **error);

// Broadcast iteration: dims collapsed where every input is contiguous (or
// broadcast) across them, so the innermost loop is as long as possible and
// has stride 0 or 1 for each input.
typedef struct bcast {
    int rank;
    int nin;
    int64_t dim[REEL_TENSOR_MAX_RANK];
    int64_t st[BCAST_MAX_IN][REEL_TENSOR_MAX_RANK];
} bcast;

// The walk of nin (<= BCAST_MAX_IN) inputs broadcast to out's shape.
void bcast_init(bcast *b, const reel_tensor *out, reel_tensor *const *in, int nin);

// One row: n output elements at o; in[k] advances by st[k] (0 or 1) per element.
typedef void (*row_fn)(void *o, const void *const *in, const int64_t *st, int64_t n);

// Calls f on every row of the walk; out holds elements of osz bytes.
void bcast_run(const bcast *b, void *out, size_t osz, reel_tensor *const *in, row_fn f);

// out[0] = f(in[0], in[1]) broadcast, with fast paths for equal shapes and
// a single-element side, those split over ctx's workers (elem_parallel).
// REEL_EUNSUPPORTED when f is NULL.
int bcast_binary(const reel_exec_ctx *ctx, reel_tensor *const *in, reel_tensor *const *out, row_fn f);

// fn(arg, start, end) over [0, n) in pieces, one per thread of ctx's workers
// where n is large enough to be worth it (an elementwise pass over a large
// tensor is bound by one core's memory bandwidth), else once over all of it.
typedef void (*elem_range_fn)(void *arg, int64_t start, int64_t end);
void elem_parallel(const reel_exec_ctx *ctx, int64_t n, elem_range_fn fn, void *arg);

// Rows of a binary op with inputs of types TA, TB and output TO; four loops
// so that each stride pattern vectorizes.
#define BIN_ROW(name, TA, TB, TO, expr)                                              \
    static void name(void *o_, const void *const *in, const int64_t *st, int64_t n) \
    {                                                                                \
        TO *restrict o = o_;                                                         \
        const TA *restrict a = in[0];                                                \
        const TB *restrict b = in[1];                                                \
        if (st[0] && st[1]) {                                                        \
            for (int64_t i = 0; i < n; i++) {                                        \
                TA x = a[i];                                                         \
                TB y = b[i];                                                         \
                o[i] = (TO)(expr);                                                   \
            }                                                                        \
        } else if (st[0]) {                                                          \
            TB y = b[0];                                                             \
            for (int64_t i = 0; i < n; i++) {                                        \
                TA x = a[i];                                                         \
                o[i] = (TO)(expr);                                                   \
            }                                                                        \
        } else if (st[1]) {                                                          \
            TA x = a[0];                                                             \
            for (int64_t i = 0; i < n; i++) {                                        \
                TB y = b[i];                                                         \
                o[i] = (TO)(expr);                                                   \
            }                                                                        \
        } else {                                                                     \
            TA x = a[0];                                                             \
            TB y = b[0];                                                             \
            TO r = (TO)(expr);                                                       \
            for (int64_t i = 0; i < n; i++)                                          \
                o[i] = r;                                                            \
        }                                                                            \
    }

// Per-dtype rows of one op (NULL: dtype not supported by it).
typedef struct bin_rows {
    row_fn f[REEL_DTYPE_COUNT];
} bin_rows;

// ---- Cast's conversions (elementwise.c) -----------------------------------

float elem_half_to_float(uint16_t h);
// Rounds to nearest even, as numpy's astype(float16) does.
uint16_t elem_double_to_half(double d);
// Whether Cast converts from and to t.
bool elem_cast_supported(reel_dtype t);
// out = in converted to out's dtype (same element count; both supported).
void elem_cast(const reel_tensor *in, reel_tensor *out);

#endif

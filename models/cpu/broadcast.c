// Numpy broadcasting shared by the elementwise kernels (broadcast.h).
#include <string.h>

#include "models/cpu/broadcast.h"
#include "models/cpu/nn.h"

#define R REEL_TENSOR_MAX_RANK

int bcast_infer(reel_ir_graph *g, reel_ir_node *n, int nin, reel_dtype out_dtype, GError **error)
{
    reel_ir_value *o = reel_op_output(g, n, 0);
    if (!o)
        return reel_op_fail(error, n, REEL_EINVAL, "has no output");
    int rank = 0;
    for (int k = 0; k < nin; k++) {
        reel_ir_value *v = reel_op_input(g, n, k);
        if (!v)
            return reel_op_fail(error, n, REEL_EINVAL, "input %d is missing", k);
        if (v->rank < 0) {
            o->dtype = out_dtype;
            o->rank = -1;
            return 0;
        }
        if (v->rank > rank)
            rank = v->rank;
    }
    int64_t dims[R];
    for (int d = 0; d < rank; d++) {
        int64_t r = 1;
        bool unknown = false;
        for (int k = 0; k < nin; k++) {
            reel_ir_value *v = reel_op_input(g, n, k);
            int id = d - (rank - v->rank);
            int64_t x = id >= 0 ? v->dims[id] : 1;
            if (x == REEL_DIM_UNKNOWN)
                unknown = true;
            else if (x != 1) {
                if (r != 1 && r != x)
                    return reel_op_fail(error, n, REEL_EINVAL, "inputs cannot broadcast: dim %d is %" G_GINT64_FORMAT
                                " and %" G_GINT64_FORMAT, d, r, x);
                r = x;
            }
        }
        dims[d] = r == 1 && unknown ? REEL_DIM_UNKNOWN : r;
    }
    o->dtype = out_dtype;
    o->rank = rank;
    memcpy(o->dims, dims, sizeof(int64_t) * rank);
    return 0;
}

void bcast_init(bcast *b, const reel_tensor *out, reel_tensor *const *in, int nin)
{
    int64_t st[BCAST_MAX_IN][R];
    int r = out->rank;
    b->nin = nin;
    for (int k = 0; k < nin; k++) {
        int64_t s = 1;
        for (int d = r - 1; d >= 0; d--) {
            int id = d - (r - in[k]->rank);
            int64_t x = id >= 0 ? in[k]->shape[id] : 1;
            st[k][d] = x == 1 ? 0 : s;
            s *= x;
        }
    }
    b->rank = 0;
    for (int d = 0; d < r; d++) {
        if (out->shape[d] == 1)
            continue;
        int l = b->rank - 1;
        bool merge = l >= 0;
        for (int k = 0; k < nin && merge; k++)
            merge = b->st[k][l] == st[k][d] * out->shape[d];
        if (merge) {
            b->dim[l] *= out->shape[d];
            for (int k = 0; k < nin; k++)
                b->st[k][l] = st[k][d];
        } else {
            b->dim[b->rank] = out->shape[d];
            for (int k = 0; k < nin; k++)
                b->st[k][b->rank] = st[k][d];
            b->rank++;
        }
    }
    if (b->rank == 0) {
        b->rank = 1;
        b->dim[0] = 1;
        for (int k = 0; k < nin; k++)
            b->st[k][0] = 0;
    }
}

void bcast_run(const bcast *b, void *out, size_t osz, reel_tensor *const *in, row_fn f)
{
    int last = b->rank - 1;
    int64_t idx[R] = { 0 };
    int64_t off[BCAST_MAX_IN] = { 0 };
    int64_t st[BCAST_MAX_IN];
    size_t isz[BCAST_MAX_IN];
    for (int k = 0; k < b->nin; k++) {
        st[k] = b->st[k][last];
        isz[k] = reel_dtype_size(in[k]->dtype);
    }
    int64_t inner = b->dim[last];
    for (int64_t d = 0; d < last; d++)
        if (b->dim[d] == 0)
            return;
    if (inner == 0)
        return;
    char *o = out;
    for (;;) {
        const void *p[BCAST_MAX_IN];
        for (int k = 0; k < b->nin; k++)
            p[k] = (const char *)in[k]->data + off[k] * isz[k];
        f(o, p, st, inner);
        o += inner * osz;
        int d = last - 1;
        for (; d >= 0; d--) {
            for (int k = 0; k < b->nin; k++)
                off[k] += b->st[k][d];
            if (++idx[d] < b->dim[d])
                break;
            for (int k = 0; k < b->nin; k++)
                off[k] -= b->st[k][d] * b->dim[d];
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
}

// Elements below which one thread does the whole pass: a hand-off to the
// workers costs a few microseconds.
enum { ELEM_PER_THREAD_MIN = 1 << 15 };

typedef struct elem_split {
    int64_t n, chunk;
    elem_range_fn fn;
    void *arg;
} elem_split;

static void elem_task(void *arg, int task, int worker)
{
    (void)worker;
    const elem_split *s = arg;
    int64_t start = task * s->chunk, end = start + s->chunk < s->n ? start + s->chunk : s->n;
    if (start < end)
        s->fn(s->arg, start, end);
}

void elem_parallel(const reel_exec_ctx *ctx, int64_t n, elem_range_fn fn, void *arg)
{
    int64_t tasks = ctx && ctx->workers ? n / ELEM_PER_THREAD_MIN : 1;
    if (ctx && tasks > ctx->threads)
        tasks = ctx->threads;
    if (tasks <= 1) {
        fn(arg, 0, n);
        return;
    }
    // Pieces of whole cache lines (16 floats), so no two threads write one.
    elem_split s = { n, ((n + tasks - 1) / tasks + 15) / 16 * 16, fn, arg };
    nn_parallel(ctx, (int)tasks, elem_task, &s);
}

// One of bcast_binary's fast paths: f over elements [start, end), each
// input advancing by st[k] (0 or 1).
typedef struct bin_flat {
    row_fn f;
    char *o;
    const char *in[2];
    int64_t st[2];
    size_t osz, isz[2];
} bin_flat;

static void bin_flat_range(void *arg, int64_t start, int64_t end)
{
    const bin_flat *b = arg;
    const void *p[2] = { b->in[0] + start * b->st[0] * (int64_t)b->isz[0],
                         b->in[1] + start * b->st[1] * (int64_t)b->isz[1] };
    b->f(b->o + start * (int64_t)b->osz, p, b->st, end - start);
}

int bcast_binary(const reel_exec_ctx *ctx, reel_tensor *const *in, reel_tensor *const *out, row_fn f)
{
    if (!f)
        return REEL_EUNSUPPORTED;
    int64_t na = bcast_count(in[0]), nb = bcast_count(in[1]), no = bcast_count(out[0]);
    size_t osz = reel_dtype_size(out[0]->dtype);
    // Fast paths: same shape, or one side a single element.
    bool same = na == no && nb == no && in[0]->rank == in[1]->rank;
    if (same || (na == no && nb == 1) || (nb == no && na == 1)) {
        bin_flat b = { f, out[0]->data, { in[0]->data, in[1]->data }, { na == no, nb == no }, osz,
                       { reel_dtype_size(in[0]->dtype), reel_dtype_size(in[1]->dtype) } };
        if (same)
            b.st[0] = b.st[1] = 1;
        elem_parallel(ctx, no, bin_flat_range, &b);
        return 0;
    }
    bcast b;
    bcast_init(&b, out[0], in, 2);
    bcast_run(&b, out[0]->data, osz, in, f);
    return 0;
}

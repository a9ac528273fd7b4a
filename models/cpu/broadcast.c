// Numpy broadcasting shared by the elementwise kernels (broadcast.h).
#include <string.h>

#include "models/cpu/broadcast.h"

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

int bcast_binary(reel_tensor *const *in, reel_tensor *const *out, row_fn f)
{
    if (!f)
        return REEL_EUNSUPPORTED;
    int64_t na = bcast_count(in[0]), nb = bcast_count(in[1]), no = bcast_count(out[0]);
    size_t osz = reel_dtype_size(out[0]->dtype);
    int64_t st[2] = { 1, 1 };
    // Fast paths: same shape, or one side a single element.
    if (na == no && nb == no && in[0]->rank == in[1]->rank) {
        f(out[0]->data, (const void *[]){ in[0]->data, in[1]->data }, st, no);
        return 0;
    }
    if (na == no && nb == 1) {
        st[1] = 0;
        f(out[0]->data, (const void *[]){ in[0]->data, in[1]->data }, st, no);
        return 0;
    }
    if (nb == no && na == 1) {
        st[0] = 0;
        f(out[0]->data, (const void *[]){ in[0]->data, in[1]->data }, st, no);
        return 0;
    }
    bcast b;
    bcast_init(&b, out[0], in, 2);
    bcast_run(&b, out[0]->data, osz, in, f);
    return 0;
}

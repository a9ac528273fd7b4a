// Reductions (ReduceMean/Max/Sum) and Softmax/LogSoftmax, float32.
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "models/cpu/collapse.h"
#include "models/op.h"

#define R REEL_TENSOR_MAX_RANK

static int need_f32(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x || !reel_op_output(g, n, 0))
        return reel_op_fail(error, n, REEL_EINVAL, "needs an input and an output");
    if (x->dtype != REEL_DTYPE_FLOAT32)
        return reel_op_fail(error, n, REEL_EINVAL, "input type %s is not supported (float32 only)",
                    reel_dtype_name(x->dtype) ? reel_dtype_name(x->dtype) : "unknown");
    return 0;
}

// ---- reductions -------------------------------------------------------------

enum { RED_SUM, RED_MEAN, RED_MAX };

// The axes as a mask over `rank` dims. Returns 0; 1 when they come from a
// non-constant input; -1 on a bad axis; -2 on a malformed axes input.
// *noop is set when the op is an identity (empty axes, noop_with_empty_axes).
static int axes_from(const reel_ir_node *n, const reel_tensor *t, const int64_t *attr, int na,
                     int rank, bool *mask, bool *noop)
{
    int64_t buf[R * 2];
    const int64_t *axes = attr;
    int c = na;
    if (t) {
        int64_t cnt = reel_tensor_count(t->rank, t->shape);
        if (t->dtype != REEL_DTYPE_INT64 || t->rank > 1 || cnt < 0 || cnt > R * 2)
            return -2;
        memcpy(buf, t->data, sizeof(int64_t) * cnt);
        axes = buf;
        c = (int)cnt;
    }
    *noop = false;
    if (c == 0) {
        if (reel_ir_attr_int(n, "noop_with_empty_axes", 0))
            *noop = true;
        for (int d = 0; d < rank; d++)
            mask[d] = !*noop;
        return 0;
    }
    for (int d = 0; d < rank; d++)
        mask[d] = false;
    for (int i = 0; i < c; i++) {
        int64_t a = axes[i];
        if (a < -rank || a >= rank)
            return -1;
        mask[a < 0 ? a + rank : a] = true;
    }
    return 0;
}

static int infer_reduce(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_f32(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    bool keep = reel_ir_attr_int(n, "keepdims", 1) != 0;
    reel_ir_value *av = reel_op_input(g, n, 1);
    int na = 0;
    const int64_t *attr = reel_ir_attr_ints(n, "axes", &na);
    if (av && attr)
        return reel_op_fail(error, n, REEL_EINVAL, "axes given both as attribute and input");
    o->dtype = x->dtype;
    if (x->rank < 0 || (av && !av->constant)) {
        o->rank = keep && x->rank >= 0 ? x->rank : -1;
        for (int d = 0; d < o->rank; d++)
            o->dims[d] = REEL_DIM_UNKNOWN;
        return 0;
    }
    bool mask[R], noop;
    int r = axes_from(n, av ? av->constant : NULL, attr, na, x->rank, mask, &noop);
    if (r == -1)
        return reel_op_fail(error, n, REEL_EINVAL, "an axis is out of range for rank %d", x->rank);
    if (r == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "axes must be a 1-D int64 tensor");
    int k = 0;
    for (int d = 0; d < x->rank; d++) {
        if (!mask[d])
            o->dims[k++] = x->dims[d];
        else if (keep)
            o->dims[k++] = 1;
    }
    o->rank = k;
    return 0;
}

static int run_reduce(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, int kind)
{
    const reel_tensor *x = in[0];
    int na = 0;
    const int64_t *attr = reel_ir_attr_ints(n, "axes", &na);
    bool mask[R], noop;
    if (axes_from(n, n->n_inputs > 1 ? in[1] : NULL, attr, na, x->rank, mask, &noop))
        return REEL_EINVAL;
    int64_t total = reel_tensor_count(x->rank, x->shape), no = reel_tensor_count(out[0]->rank, out[0]->shape);
    const float *xp = x->data;
    float *o = out[0]->data;
    if (noop) {
        memmove(o, xp, sizeof(float) * total);
        return 0;
    }
    float init = kind == RED_MAX ? -INFINITY : 0.0f;
    for (int64_t i = 0; i < no; i++)
        o[i] = init;
    if (total == 0)
        return 0;
    // Output strides per input dim (0 where reduced), then dims collapsed.
    int64_t ost[R], s = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        ost[d] = mask[d] ? 0 : s;
        if (!mask[d])
            s *= x->shape[d];
    }
    int64_t cd[R], cs[R];
    int r = reel_collapse_dims(x->rank, x->shape, ost, cd, cs, 0);
    int last = r - 1;
    int64_t inner = cd[last], idx[R] = { 0 }, off = 0;
    const float *p = xp;
    for (;;) {
        if (cs[last] == 0) {
            float acc = init;
            if (kind == RED_MAX)
                for (int64_t i = 0; i < inner; i++)
                    acc = p[i] > acc || isnan(p[i]) ? p[i] : acc;
            else
                for (int64_t i = 0; i < inner; i++)
                    acc += p[i];
            o[off] = kind == RED_MAX ? (acc > o[off] || isnan(acc) ? acc : o[off]) : o[off] + acc;
        } else {
            float *restrict q = o + off;
            const float *restrict a = p;
            if (kind == RED_MAX)
                for (int64_t i = 0; i < inner; i++)
                    q[i] = a[i] > q[i] ? a[i] : q[i];
            else
                for (int64_t i = 0; i < inner; i++)
                    q[i] += a[i];
        }
        p += inner;
        int d = last - 1;
        for (; d >= 0; d--) {
            off += cs[d];
            if (++idx[d] < cd[d])
                break;
            off -= cs[d] * cd[d];
            idx[d] = 0;
        }
        if (d < 0)
            break;
    }
    if (kind == RED_MEAN && no > 0) {
        float inv = (float)no / (float)total;
        for (int64_t i = 0; i < no; i++)
            o[i] *= inv;
    }
    return 0;
}

#define REDUCE_OP(Name, fn, kind)                                                                \
    static int run_##fn(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, \
                        const reel_exec_ctx *ctx)                                               \
    {                                                                                           \
        (void)ctx;                                                                              \
        return run_reduce(n, in, out, kind);                                                    \
    }                                                                                           \
    static const reel_op op_##fn = { .name = Name, .infer = infer_reduce, .run = run_##fn };

REDUCE_OP("ReduceSum", reduce_sum, RED_SUM)
REDUCE_OP("ReduceMean", reduce_mean, RED_MEAN)
REDUCE_OP("ReduceMax", reduce_max, RED_MAX)

// ---- Softmax / LogSoftmax ---------------------------------------------------

// Opset < 13 coerces the input to 2-D at `axis` (default 1) and normalises
// each row; 13+ normalises along `axis` alone (default -1).
static int infer_softmax(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_f32(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    o->dtype = x->dtype;
    o->rank = x->rank;
    memcpy(o->dims, x->dims, sizeof(int64_t) * (x->rank > 0 ? x->rank : 0));
    if (x->rank < 0)
        return 0;
    int rank = x->rank > 0 ? x->rank : 1;
    int64_t a = reel_ir_attr_int(n, "axis", g->opset >= 13 ? -1 : 1);
    if (a < -rank || a >= rank)
        return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for rank %d", a, x->rank);
    return 0;
}

// rows of n elements, `inner` apart (inner = 1: contiguous).
static void softmax_rows(const float *x, float *o, int64_t outer, int64_t n, int64_t inner, bool log_)
{
    for (int64_t b = 0; b < outer; b++) {
        for (int64_t j = 0; j < inner; j++) {
            const float *p = x + b * n * inner + j;
            float *q = o + b * n * inner + j;
            float m = -INFINITY;
            for (int64_t i = 0; i < n; i++)
                m = p[i * inner] > m ? p[i * inner] : m;
            float sum = 0.0f;
            if (log_) {
                for (int64_t i = 0; i < n; i++)
                    sum += expf(p[i * inner] - m);
                // (x - max) - log(sum), not x - (max + log(sum)): the latter
                // loses the small differences of large inputs.
                float l = logf(sum);
                for (int64_t i = 0; i < n; i++)
                    q[i * inner] = (p[i * inner] - m) - l;
            } else {
                for (int64_t i = 0; i < n; i++) {
                    float e = expf(p[i * inner] - m);
                    q[i * inner] = e;
                    sum += e;
                }
                float inv = 1.0f / sum;
                for (int64_t i = 0; i < n; i++)
                    q[i * inner] *= inv;
            }
        }
    }
}

static int run_softmax_form(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                            const reel_exec_ctx *ctx, bool log_)
{
    const reel_tensor *x = in[0];
    int rank = x->rank > 0 ? x->rank : 1;
    bool coerce_2d = ctx->opset < 13;
    int64_t a = reel_ir_attr_int(n, "axis", coerce_2d ? 1 : -1);
    if (a < -rank || a >= rank)
        return REEL_EINVAL;
    if (a < 0)
        a += rank;
    int64_t outer = 1, mid = 1, inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < a)
            outer *= x->shape[d];
        else if (d == a || coerce_2d)
            mid *= x->shape[d];
        else
            inner *= x->shape[d];
    }
    softmax_rows(x->data, out[0]->data, outer, mid, inner, log_);
    return 0;
}

static int run_softmax(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                       const reel_exec_ctx *ctx)
{
    return run_softmax_form(n, in, out, ctx, false);
}

static int run_log_softmax(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                           const reel_exec_ctx *ctx)
{
    return run_softmax_form(n, in, out, ctx, true);
}

static const reel_op op_softmax = { .name = "Softmax", .infer = infer_softmax, .run = run_softmax };
static const reel_op op_log_softmax = { .name = "LogSoftmax", .infer = infer_softmax, .run = run_log_softmax };

const reel_op *const reel_ops_reduce[] = {
    &op_reduce_mean, &op_reduce_max, &op_reduce_sum, &op_softmax, &op_log_softmax, NULL,
};

// Shape ops: they move elements without arithmetic, so the kernels work per
// element size. Ops whose output shape depends on an input's data (Reshape,
// Slice, Expand, ConstantOfShape, ...) compute exact shapes in infer when
// that input is constant, and leave REEL_DIM_UNKNOWN otherwise.
#include <stdarg.h>
#include <string.h>

#include "models/cpu/collapse.h"
#include "models/op.h"
#include "models/slice.h"

#define R REEL_TENSOR_MAX_RANK
#define MAX_INTS 64

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static size_t esize(const reel_tensor *t)
{
    return reel_dtype_size(t->dtype);
}

// The elements of an int64/int32 tensor (at most MAX_INTS); -1 otherwise.
static int tensor_ints(const reel_tensor *t, int64_t *out)
{
    return reel_tensor_ints(t, out, MAX_INTS);
}

// Ints from input i when it is a constant: count, -1 when not constant,
// -2 when present but malformed (wrong type or too many).
static int const_ints(const reel_ir_graph *g, const reel_ir_node *n, int i, int64_t *out)
{
    reel_ir_value *v = reel_op_input(g, n, i);
    if (!v || !v->constant)
        return -1;
    int c = tensor_ints(v->constant, out);
    return c < 0 ? -2 : c;
}

static int set_out(reel_ir_value *o, reel_dtype dtype, int rank, const int64_t *dims)
{
    o->dtype = dtype;
    o->rank = rank;
    for (int i = 0; i < rank; i++)
        o->dims[i] = dims ? dims[i] : REEL_DIM_UNKNOWN;
    return 0;
}

static int need_io(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x || n->n_outputs < 1 || !reel_op_output(g, n, 0))
        return reel_op_fail(error, n, REEL_EINVAL, "needs an input and an output");
    if (reel_dtype_size(x->dtype) == 0)
        return reel_op_fail(error, n, REEL_EINVAL, "input has no supported type");
    return 0;
}

static bool norm_axis(int64_t *axis, int rank)
{
    if (*axis < -rank || *axis >= rank)
        return false;
    if (*axis < 0)
        *axis += rank;
    return true;
}

// Copies a strided view (element strides `st`, possibly 0 or negative) of
// `src` into the contiguous `dst`.
static void copy_strided(void *dst, const void *src, int rank, const int64_t *dims,
                         const int64_t *st, size_t es)
{
    for (int d = 0; d < rank; d++)
        if (dims[d] == 0)
            return;
    int64_t cd[R + 1], cs[R + 1];
    int r = reel_collapse_dims(rank, dims, st, cd, cs, 1);
    int last = r - 1;
    int64_t inner = cd[last], is = cs[last], idx[R] = { 0 }, off = 0;
    char *o = dst;
    const char *s = src;
    for (;;) {
        const char *p = s + off * (int64_t)es;
        if (is == 1)
            memcpy(o, p, inner * es);
        else if (es == 4)
            for (int64_t i = 0; i < inner; i++)
                ((uint32_t *)o)[i] = *(const uint32_t *)(p + i * is * 4);
        else if (es == 8)
            for (int64_t i = 0; i < inner; i++)
                ((uint64_t *)o)[i] = *(const uint64_t *)(p + i * is * 8);
        else if (es == 2)
            for (int64_t i = 0; i < inner; i++)
                ((uint16_t *)o)[i] = *(const uint16_t *)(p + i * is * 2);
        else
            for (int64_t i = 0; i < inner; i++)
                o[i] = p[i * is];
        o += inner * es;
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
}

static int run_copy(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                    const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    size_t bytes = (size_t)count_of(out[0]) * esize(out[0]);
    if (bytes && out[0]->data != in[0]->data) // empty tensors may have no data at all
        memmove(out[0]->data, in[0]->data, bytes);
    return 0;
}

// ---- Reshape ----------------------------------------------------------------

static int infer_reshape(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    int64_t shape[MAX_INTS];
    int c;
    if (g->opset >= 5) {
        reel_ir_value *s = reel_op_input(g, n, 1);
        if (!s)
            return reel_op_fail(error, n, REEL_EINVAL, "shape input is missing");
        if (s->dtype != REEL_DTYPE_INT64)
            return reel_op_fail(error, n, REEL_EINVAL, "shape must be int64");
        c = const_ints(g, n, 1, shape);
        if (c == -1) {
            if (s->rank != 1 || s->dims[0] < 0)
                return set_out(o, x->dtype, -1, NULL);
            if (s->dims[0] > R)
                return reel_op_fail(error, n, REEL_EINVAL, "shape has %" G_GINT64_FORMAT " entries, more than %d",
                            s->dims[0], R);
            return set_out(o, x->dtype, (int)s->dims[0], NULL);
        }
    } else {
        const int64_t *a = reel_ir_attr_ints(n, "shape", &c);
        if (!a)
            return reel_op_fail(error, n, REEL_EINVAL, "attribute 'shape' is missing");
        if (c <= MAX_INTS)
            memcpy(shape, a, sizeof(int64_t) * c);
    }
    if (c < 0 || c > R)
        return reel_op_fail(error, n, REEL_EINVAL, "shape has more than %d entries", R);
    bool allowzero = reel_ir_attr_int(n, "allowzero", 0) != 0;
    int64_t dims[R];
    int neg = -1;
    bool unknown = x->rank < 0;
    int64_t known = 1;
    for (int i = 0; i < c; i++) {
        int64_t s = shape[i];
        if (s == -1) {
            if (neg >= 0)
                return reel_op_fail(error, n, REEL_EINVAL, "shape has more than one -1");
            neg = i;
            continue;
        }
        if (s < -1)
            return reel_op_fail(error, n, REEL_EINVAL, "shape entry %d is %" G_GINT64_FORMAT, i, s);
        if (s == 0 && !allowzero) {
            if (x->rank >= 0 && i >= x->rank)
                return reel_op_fail(error, n, REEL_EINVAL, "shape entry %d is 0 but the input has rank %d", i, x->rank);
            s = x->rank >= 0 ? x->dims[i] : REEL_DIM_UNKNOWN;
        }
        dims[i] = s;
        if (s == REEL_DIM_UNKNOWN)
            unknown = true;
        else if (s && known > INT64_MAX / s)
            return reel_op_fail(error, n, REEL_EINVAL, "shape overflows");
        else
            known *= s;
    }
    int64_t total = x->rank >= 0 ? reel_tensor_count(x->rank, x->dims) : -1;
    if (neg >= 0) {
        if (allowzero && known == 0)
            return reel_op_fail(error, n, REEL_EINVAL, "shape has both 0 (allowzero) and -1");
        if (total < 0 || unknown)
            dims[neg] = REEL_DIM_UNKNOWN;
        else if (known == 0 || total % known)
            return reel_op_fail(error, n, REEL_EINVAL, "cannot reshape %" G_GINT64_FORMAT " elements: -1 has no integer size",
                        total);
        else
            dims[neg] = total / known;
    } else if (total >= 0 && !unknown && total != known) {
        return reel_op_fail(error, n, REEL_EINVAL, "cannot reshape %" G_GINT64_FORMAT " elements into %" G_GINT64_FORMAT,
                    total, known);
    }
    return set_out(o, x->dtype, c, dims);
}
static const reel_op op_reshape = { .name = "Reshape", .infer = infer_reshape, .run = run_copy };

// ---- Flatten ----------------------------------------------------------------

static int64_t dims_prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        if (d[i] == REEL_DIM_UNKNOWN)
            return REEL_DIM_UNKNOWN;
        if (d[i] && p > INT64_MAX / d[i])
            return REEL_DIM_UNKNOWN;
        p *= d[i];
    }
    return p;
}

static int infer_flatten(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (x->rank < 0)
        return set_out(o, x->dtype, 2, NULL);
    int64_t axis = reel_ir_attr_int(n, "axis", 1);
    if (axis < -x->rank || axis > x->rank)
        return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    if (axis < 0)
        axis += x->rank;
    int64_t dims[2] = { dims_prod(x->dims, 0, (int)axis), dims_prod(x->dims, (int)axis, x->rank) };
    return set_out(o, x->dtype, 2, dims);
}
static const reel_op op_flatten = { .name = "Flatten", .infer = infer_flatten, .run = run_copy };

// ---- Transpose --------------------------------------------------------------

static int get_perm(const reel_ir_node *n, int rank, int64_t *perm)
{
    int c;
    const int64_t *p = reel_ir_attr_ints(n, "perm", &c);
    if (!p) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        return 0;
    }
    if (c != rank)
        return -1;
    bool seen[R] = { false };
    for (int i = 0; i < rank; i++) {
        if (p[i] < 0 || p[i] >= rank || seen[p[i]])
            return -2;
        seen[p[i]] = true;
        perm[i] = p[i];
    }
    return 0;
}

static int infer_transpose(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (x->rank < 0)
        return set_out(o, x->dtype, -1, NULL);
    int64_t perm[R], dims[R];
    int r = get_perm(n, x->rank, perm);
    if (r == -1) {
        int c;
        reel_ir_attr_ints(n, "perm", &c);
        return reel_op_fail(error, n, REEL_EINVAL, "perm has %d entries for a rank-%d input", c, x->rank);
    }
    if (r == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "perm is not a permutation of 0..%d", x->rank - 1);
    for (int i = 0; i < x->rank; i++)
        dims[i] = x->dims[perm[i]];
    return set_out(o, x->dtype, x->rank, dims);
}

static int run_transpose(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                         const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0];
    int64_t perm[R], st[R], xst[R], s = 1;
    if (get_perm(n, x->rank, perm))
        return REEL_EINVAL;
    for (int d = x->rank - 1; d >= 0; d--) {
        xst[d] = s;
        s *= x->shape[d];
    }
    for (int d = 0; d < x->rank; d++)
        st[d] = xst[perm[d]];
    copy_strided(out[0]->data, x->data, out[0]->rank, out[0]->shape, st, esize(x));
    return 0;
}
static const reel_op op_transpose = { .name = "Transpose", .infer = infer_transpose, .run = run_transpose };

// ---- Squeeze / Unsqueeze ----------------------------------------------------

// Axes from the attribute (opset < 13) or input 1 (13+). Count; -1 when the
// input is not constant; -2 on a malformed input; 0 with *absent when none.
static int get_axes(reel_ir_graph *g, const reel_ir_node *n, int64_t *axes, bool *absent)
{
    *absent = false;
    if (g->opset >= 13 || n->n_inputs > 1) {
        if (!reel_op_input(g, n, 1)) {
            *absent = true;
            return 0;
        }
        return const_ints(g, n, 1, axes);
    }
    int c;
    const int64_t *a = reel_ir_attr_ints(n, "axes", &c);
    if (!a) {
        *absent = true;
        return 0;
    }
    if (c > MAX_INTS)
        return -2;
    memcpy(axes, a, sizeof(int64_t) * c);
    return c;
}

static int infer_squeeze(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    int64_t axes[MAX_INTS], dims[R];
    bool absent, drop[R] = { false };
    int c = get_axes(g, n, axes, &absent);
    if (c == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "axes must be a 1-D int64 tensor");
    if (x->rank < 0 || c == -1)
        return set_out(o, x->dtype, -1, NULL);
    if (absent) {
        for (int i = 0; i < x->rank; i++) {
            if (x->dims[i] == REEL_DIM_UNKNOWN)
                return set_out(o, x->dtype, -1, NULL);
            drop[i] = x->dims[i] == 1;
        }
    }
    for (int i = 0; i < c; i++) {
        int64_t a = axes[i];
        if (!norm_axis(&a, x->rank))
            return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axes[i], x->rank);
        if (x->dims[a] != 1 && x->dims[a] != REEL_DIM_UNKNOWN)
            return reel_op_fail(error, n, REEL_EINVAL, "cannot squeeze axis %" G_GINT64_FORMAT " of size %" G_GINT64_FORMAT,
                        axes[i], x->dims[a]);
        drop[a] = true;
    }
    int r = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            dims[r++] = x->dims[i];
    return set_out(o, x->dtype, r, dims);
}
static const reel_op op_squeeze = { .name = "Squeeze", .infer = infer_squeeze, .run = run_copy };

static int infer_unsqueeze(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    int64_t axes[MAX_INTS], dims[R];
    bool absent, ins[R] = { false };
    int c = get_axes(g, n, axes, &absent);
    if (absent)
        return reel_op_fail(error, n, REEL_EINVAL, "axes are required");
    if (c == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "axes must be a 1-D int64 tensor");
    if (x->rank < 0)
        return set_out(o, x->dtype, -1, NULL);
    if (c == -1) {
        reel_ir_value *a = reel_op_input(g, n, 1);
        if (a->rank == 1 && a->dims[0] >= 0 && x->rank + a->dims[0] <= R)
            return set_out(o, x->dtype, x->rank + (int)a->dims[0], NULL);
        return set_out(o, x->dtype, -1, NULL);
    }
    int r = x->rank + c;
    if (r > R)
        return reel_op_fail(error, n, REEL_EINVAL, "output rank %d exceeds %d", r, R);
    for (int i = 0; i < c; i++) {
        int64_t a = axes[i];
        if (!norm_axis(&a, r))
            return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for output rank %d", axes[i], r);
        if (ins[a])
            return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is repeated", axes[i]);
        ins[a] = true;
    }
    for (int i = 0, j = 0; i < r; i++)
        dims[i] = ins[i] ? 1 : x->dims[j++];
    return set_out(o, x->dtype, r, dims);
}
static const reel_op op_unsqueeze = { .name = "Unsqueeze", .infer = infer_unsqueeze, .run = run_copy };

// ---- Concat / Split ---------------------------------------------------------

static int infer_concat(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *o = reel_op_output(g, n, 0), *x0 = reel_op_input(g, n, 0);
    if (!o || !x0 || n->n_inputs < 1)
        return reel_op_fail(error, n, REEL_EINVAL, "needs inputs and an output");
    const reel_ir_attr *aa = reel_ir_attr_find(n, "axis");
    if (!aa)
        return reel_op_fail(error, n, REEL_EINVAL, "attribute 'axis' is missing");
    int rank = -1;
    for (int i = 0; i < n->n_inputs; i++) {
        reel_ir_value *x = reel_op_input(g, n, i);
        if (!x)
            return reel_op_fail(error, n, REEL_EINVAL, "input %d is missing", i);
        if (x->dtype != x0->dtype)
            return reel_op_fail(error, n, REEL_EINVAL, "input %d has type %s, input 0 has %s", i,
                        reel_dtype_name(x->dtype) ? reel_dtype_name(x->dtype) : "unknown",
                        reel_dtype_name(x0->dtype) ? reel_dtype_name(x0->dtype) : "unknown");
        if (x->rank >= 0) {
            if (rank >= 0 && x->rank != rank)
                return reel_op_fail(error, n, REEL_EINVAL, "input %d has rank %d, others %d", i, x->rank, rank);
            rank = x->rank;
        }
    }
    if (reel_dtype_size(x0->dtype) == 0)
        return reel_op_fail(error, n, REEL_EINVAL, "input has no supported type");
    if (rank < 0)
        return set_out(o, x0->dtype, -1, NULL);
    int64_t axis = aa->i;
    if (!norm_axis(&axis, rank))
        return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for rank %d", aa->i, rank);
    int64_t dims[R];
    for (int d = 0; d < rank; d++)
        dims[d] = d == axis ? 0 : REEL_DIM_UNKNOWN;
    for (int i = 0; i < n->n_inputs; i++) {
        reel_ir_value *x = reel_op_input(g, n, i);
        if (x->rank < 0) {
            dims[axis] = REEL_DIM_UNKNOWN;
            continue;
        }
        for (int d = 0; d < rank; d++) {
            int64_t v = x->dims[d];
            if (d == axis) {
                if (v == REEL_DIM_UNKNOWN || dims[d] == REEL_DIM_UNKNOWN)
                    dims[d] = REEL_DIM_UNKNOWN;
                else
                    dims[d] += v;
            } else if (v != REEL_DIM_UNKNOWN) {
                if (dims[d] != REEL_DIM_UNKNOWN && dims[d] != v)
                    return reel_op_fail(error, n, REEL_EINVAL, "input %d has dim %d = %" G_GINT64_FORMAT ", others %" G_GINT64_FORMAT,
                                i, d, v, dims[d]);
                dims[d] = v;
            }
        }
    }
    return set_out(o, x0->dtype, rank, dims);
}

static int run_concat(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    (void)ctx;
    reel_tensor *o = out[0];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (!norm_axis(&axis, o->rank))
        return REEL_EINVAL;
    int64_t outer = dims_prod(o->shape, 0, (int)axis);
    int64_t inner = dims_prod(o->shape, (int)axis + 1, o->rank) * (int64_t)esize(o);
    int64_t orow = o->shape[axis] * inner;
    int64_t at = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int64_t row = in[i]->shape[axis] * inner;
        const char *s = in[i]->data;
        char *d = (char *)o->data + at;
        // row 0 (an empty input): nothing to copy, however large outer is.
        for (int64_t j = 0; row && j < outer; j++)
            memcpy(d + j * orow, s + j * row, row);
        at += row;
    }
    return 0;
}
static const reel_op op_concat = { .name = "Concat", .infer = infer_concat, .run = run_concat };

// Split sizes along the axis: count of outputs; -1 when they depend on a
// non-constant input; < -1 on errors.
static int split_sizes(reel_ir_graph *g, const reel_ir_node *n, int64_t dim, int64_t *sizes)
{
    int c;
    if (g->opset >= 13 || n->n_inputs > 1) {
        reel_ir_value *s = reel_op_input(g, n, 1);
        if (s) {
            c = const_ints(g, n, 1, sizes);
            if (c == -1)
                return -1;
            if (c < 0)
                return -2;
            goto check;
        }
    } else {
        const int64_t *a = reel_ir_attr_ints(n, "split", &c);
        if (a) {
            if (c > MAX_INTS)
                return -2;
            memcpy(sizes, a, sizeof(int64_t) * c);
            goto check;
        }
    }
    c = n->n_outputs;
    if (dim == REEL_DIM_UNKNOWN)
        return -1;
    if (c <= 0 || c > MAX_INTS || dim % c)
        return -3;
    for (int i = 0; i < c; i++)
        sizes[i] = dim / c;
    return c;
check:
    if (c != n->n_outputs)
        return -4;
    int64_t sum = 0;
    for (int i = 0; i < c; i++) {
        if (sizes[i] < 0)
            return -5;
        sum += sizes[i];
    }
    if (dim != REEL_DIM_UNKNOWN && sum != dim)
        return -5;
    return c;
}

static int infer_split(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0);
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    int64_t sizes[MAX_INTS];
    if (x->rank < 0) {
        for (int i = 0; i < n->n_outputs; i++)
            if (reel_op_output(g, n, i))
                set_out(reel_op_output(g, n, i), x->dtype, -1, NULL);
        return 0;
    }
    int64_t ax = axis;
    if (!norm_axis(&ax, x->rank))
        return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    int c = split_sizes(g, n, x->dims[ax], sizes);
    if (c == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "split must be a 1-D int64 tensor");
    if (c == -3)
        return reel_op_fail(error, n, REEL_EINVAL, "dim %" G_GINT64_FORMAT " does not divide into %d equal outputs",
                    x->dims[ax], n->n_outputs);
    if (c == -4)
        return reel_op_fail(error, n, REEL_EINVAL, "split has a different count than the %d outputs", n->n_outputs);
    if (c == -5)
        return reel_op_fail(error, n, REEL_EINVAL, "split sizes are negative or do not add up to %" G_GINT64_FORMAT, x->dims[ax]);
    for (int i = 0; i < n->n_outputs; i++) {
        reel_ir_value *o = reel_op_output(g, n, i);
        if (!o)
            continue;
        set_out(o, x->dtype, x->rank, x->dims);
        o->dims[ax] = c < 0 ? REEL_DIM_UNKNOWN : sizes[i];
    }
    return 0;
}

static int run_split(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (!norm_axis(&axis, x->rank))
        return REEL_EINVAL;
    int64_t outer = dims_prod(x->shape, 0, (int)axis);
    int64_t inner = dims_prod(x->shape, (int)axis + 1, x->rank) * (int64_t)esize(x);
    int64_t xrow = x->shape[axis] * inner;
    int64_t at = 0;
    // The executor allocates every output with its inferred shape, so an
    // omitted output's size is unknown here; sizes come from the outputs.
    for (int i = 0; i < n->n_outputs; i++) {
        if (!out[i])
            return REEL_EUNSUPPORTED;
        int64_t row = out[i]->shape[axis] * inner;
        char *d = out[i]->data;
        const char *s = (const char *)x->data + at;
        for (int64_t j = 0; j < outer; j++)
            memcpy(d + j * row, s + j * xrow, row);
        at += row;
    }
    return 0;
}
static const reel_op op_split = { .name = "Split", .infer = infer_split, .run = run_split };

// ---- Slice ------------------------------------------------------------------

typedef reel_slice_window slice_args;

// Raw starts/ends/axes/steps, from inputs (opset 10+) or attributes (< 10).
typedef struct slice_raw {
    int64_t starts[MAX_INTS], ends[MAX_INTS], axes[MAX_INTS], steps[MAX_INTS];
    int n;
} slice_raw;

// Clamps per ONNX; dims may be REEL_DIM_UNKNOWN (length unknown then).
static int slice_resolve(const slice_raw *raw, int rank, const int64_t *dims, slice_args *a)
{
    bool seen[R] = { false };
    for (int d = 0; d < rank; d++) {
        a->start[d] = 0;
        a->step[d] = 1;
        a->len[d] = dims[d];
    }
    for (int i = 0; i < raw->n; i++) {
        int64_t ax = raw->axes[i];
        if (!norm_axis(&ax, rank))
            return -1;
        if (seen[ax])
            return -2;
        seen[ax] = true;
        int64_t s = raw->steps[i], d = dims[ax], b = raw->starts[i], e = raw->ends[i];
        if (s == 0)
            return -3;
        a->step[ax] = s;
        if (d == REEL_DIM_UNKNOWN) {
            a->len[ax] = REEL_DIM_UNKNOWN;
            continue;
        }
        if (b < 0)
            b += d;
        if (e < 0)
            e += d;
        if (s > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
            a->len[ax] = e > b ? (e - b + s - 1) / s : 0;
        } else {
            b = b < 0 ? 0 : b > d - 1 ? d - 1 : b;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            a->len[ax] = b > e ? (b - e + (-s) - 1) / (-s) : 0;
        }
        a->start[ax] = b;
    }
    return 0;
}

static void slice_defaults(slice_raw *raw, bool axes, bool steps)
{
    for (int i = 0; i < raw->n; i++) {
        if (!axes)
            raw->axes[i] = i;
        if (!steps)
            raw->steps[i] = 1;
    }
}

// From constant inputs or attributes; -1 when inputs are not constant; < -1
// on malformed ones.
static int slice_raw_infer(reel_ir_graph *g, const reel_ir_node *n, slice_raw *raw)
{
    if (g->opset < 10) {
        int cs, ce, ca;
        const int64_t *s = reel_ir_attr_ints(n, "starts", &cs);
        const int64_t *e = reel_ir_attr_ints(n, "ends", &ce);
        const int64_t *a = reel_ir_attr_ints(n, "axes", &ca);
        if (!s || !e || cs != ce || (a && ca != cs) || cs > MAX_INTS)
            return -2;
        raw->n = cs;
        memcpy(raw->starts, s, sizeof(int64_t) * cs);
        memcpy(raw->ends, e, sizeof(int64_t) * cs);
        if (a)
            memcpy(raw->axes, a, sizeof(int64_t) * cs);
        slice_defaults(raw, a != NULL, false);
        return 0;
    }
    int cs = const_ints(g, n, 1, raw->starts), ce = const_ints(g, n, 2, raw->ends);
    int ca = reel_op_input(g, n, 3) ? const_ints(g, n, 3, raw->axes) : -3;
    int cp = reel_op_input(g, n, 4) ? const_ints(g, n, 4, raw->steps) : -3;
    if (cs == -2 || ce == -2 || ca == -2 || cp == -2)
        return -2;
    if (cs == -1 || ce == -1 || ca == -1 || cp == -1)
        return -1;
    if (cs != ce || (ca >= 0 && ca != cs) || (cp >= 0 && cp != cs))
        return -2;
    raw->n = cs;
    slice_defaults(raw, ca >= 0, cp >= 0);
    return 0;
}

static int infer_slice(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (g->opset >= 10 && (!reel_op_input(g, n, 1) || !reel_op_input(g, n, 2)))
        return reel_op_fail(error, n, REEL_EINVAL, "starts and ends inputs are required");
    if (x->rank < 0)
        return set_out(o, x->dtype, -1, NULL);
    slice_raw raw;
    int r = slice_raw_infer(g, n, &raw);
    if (r == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "starts/ends/axes/steps must be int64 lists of one length");
    if (r == -1)
        return set_out(o, x->dtype, x->rank, NULL);
    slice_args a;
    r = slice_resolve(&raw, x->rank, x->dims, &a);
    if (r == -1)
        return reel_op_fail(error, n, REEL_EINVAL, "an axis is out of range for rank %d", x->rank);
    if (r == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "an axis is repeated");
    if (r == -3)
        return reel_op_fail(error, n, REEL_EINVAL, "a step is 0");
    return set_out(o, x->dtype, x->rank, a.len);
}

// The ints of input t when it has data (an int64/int32 tensor of rank <= 1).
static int data_ints(const reel_tensor *t, int64_t *out)
{
    return t && t->data ? tensor_ints(t, out) : -1;
}

int reel_slice_window_of(const reel_ir_node *n, const reel_tensor *const *in, int rank, const int64_t *dims,
                         reel_slice_window *w)
{
    slice_raw raw;
    if (n->n_inputs >= 3) {
        int cs = data_ints(in[1], raw.starts), ce = data_ints(in[2], raw.ends);
        int ca = n->n_inputs > 3 && in[3] ? data_ints(in[3], raw.axes) : -3;
        int cp = n->n_inputs > 4 && in[4] ? data_ints(in[4], raw.steps) : -3;
        if (cs < 0 || cs != ce || ca == -1 || cp == -1 || (ca >= 0 && ca != cs) || (cp >= 0 && cp != cs))
            return -1;
        raw.n = cs;
        slice_defaults(&raw, ca >= 0, cp >= 0);
    } else {
        int cs, ce, ca;
        const int64_t *s = reel_ir_attr_ints(n, "starts", &cs);
        const int64_t *e = reel_ir_attr_ints(n, "ends", &ce);
        const int64_t *a = reel_ir_attr_ints(n, "axes", &ca);
        if (!s || !e || cs != ce || cs > MAX_INTS || (a && ca != cs))
            return -1;
        raw.n = cs;
        memcpy(raw.starts, s, sizeof(int64_t) * cs);
        memcpy(raw.ends, e, sizeof(int64_t) * cs);
        if (a)
            memcpy(raw.axes, a, sizeof(int64_t) * cs);
        slice_defaults(&raw, a != NULL, false);
    }
    return slice_resolve(&raw, rank, dims, w);
}

static int run_slice(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0];
    slice_args a;
    if (reel_slice_window_of(n, (const reel_tensor *const *)in, x->rank, x->shape, &a))
        return REEL_EINVAL;
    int64_t st[R], s = 1, off = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        if (a.len[d] != out[0]->shape[d])
            return REEL_EINVAL;
        st[d] = s * a.step[d];
        off += s * a.start[d];
        s *= x->shape[d];
    }
    copy_strided(out[0]->data, (const char *)x->data + off * (int64_t)esize(x), x->rank,
                 out[0]->shape, st, esize(x));
    return 0;
}
static const reel_op op_slice = { .name = "Slice", .infer = infer_slice, .run = run_slice };

// ---- Gather -----------------------------------------------------------------

static int infer_gather(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *idx = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (!idx)
        return reel_op_fail(error, n, REEL_EINVAL, "indices input is missing");
    if (idx->dtype != REEL_DTYPE_INT64 && idx->dtype != REEL_DTYPE_INT32)
        return reel_op_fail(error, n, REEL_EINVAL, "indices must be int32 or int64");
    if (x->rank < 0 || idx->rank < 0)
        return set_out(o, x->dtype, -1, NULL);
    int64_t axis = reel_ir_attr_int(n, "axis", 0), ax = axis;
    if (!norm_axis(&ax, x->rank))
        return reel_op_fail(error, n, REEL_EINVAL, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, x->rank);
    int r = x->rank - 1 + idx->rank;
    if (r > R)
        return reel_op_fail(error, n, REEL_EINVAL, "output rank %d exceeds %d", r, R);
    int64_t dims[R];
    int k = 0;
    for (int d = 0; d < ax; d++)
        dims[k++] = x->dims[d];
    for (int d = 0; d < idx->rank; d++)
        dims[k++] = idx->dims[d];
    for (int d = (int)ax + 1; d < x->rank; d++)
        dims[k++] = x->dims[d];
    // Constant indices are checked once here.
    if (idx->constant && x->dims[ax] != REEL_DIM_UNKNOWN) {
        int64_t c = count_of(idx->constant);
        for (int64_t i = 0; i < c; i++) {
            int64_t v = idx->dtype == REEL_DTYPE_INT64 ? ((const int64_t *)idx->constant->data)[i]
                                                        : ((const int32_t *)idx->constant->data)[i];
            if (v < -x->dims[ax] || v >= x->dims[ax])
                return reel_op_fail(error, n, REEL_EINVAL, "index %" G_GINT64_FORMAT " is out of range for dim %" G_GINT64_FORMAT,
                            v, x->dims[ax]);
        }
    }
    return set_out(o, x->dtype, r, dims);
}

static int run_gather(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0], *idx = in[1];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (!norm_axis(&axis, x->rank))
        return REEL_EINVAL;
    int64_t outer = dims_prod(x->shape, 0, (int)axis), dim = x->shape[axis];
    int64_t inner = dims_prod(x->shape, (int)axis + 1, x->rank) * (int64_t)esize(x);
    int64_t ni = count_of(idx);
    char *o = out[0]->data;
    const char *s = x->data;
    // inner 0 (rows of no bytes): an empty output, however many rows and indices.
    for (int64_t j = 0; inner && j < outer; j++) {
        for (int64_t i = 0; i < ni; i++) {
            int64_t v = idx->dtype == REEL_DTYPE_INT64 ? ((const int64_t *)idx->data)[i]
                                                        : ((const int32_t *)idx->data)[i];
            if (v < 0)
                v += dim;
            if (v < 0 || v >= dim)
                return REEL_EINVAL;
            memcpy(o, s + (j * dim + v) * inner, inner);
            o += inner;
        }
    }
    return 0;
}
static const reel_op op_gather = { .name = "Gather", .infer = infer_gather, .run = run_gather };

// ---- Shape ------------------------------------------------------------------

static void shape_range(const reel_ir_node *n, int rank, int64_t *start, int64_t *end)
{
    int64_t s = reel_ir_attr_int(n, "start", 0), e = reel_ir_attr_int(n, "end", rank);
    if (s < 0)
        s += rank;
    if (e < 0)
        e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *start = s;
    *end = e < s ? s : e;
}

static int infer_shape(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (x->rank < 0)
        return set_out(o, REEL_DTYPE_INT64, 1, NULL);
    int64_t s, e;
    shape_range(n, x->rank, &s, &e);
    int64_t d = e - s;
    return set_out(o, REEL_DTYPE_INT64, 1, &d);
}

static int run_shape(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    (void)ctx;
    int64_t s, e;
    shape_range(n, in[0]->rank, &s, &e);
    memcpy(out[0]->data, in[0]->shape + s, sizeof(int64_t) * (e - s));
    return 0;
}
static const reel_op op_shape = { .name = "Shape", .infer = infer_shape, .run = run_shape };

// ---- ConstantOfShape, Constant ----------------------------------------------

static int infer_constant_of_shape(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *s = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    if (!s || !o)
        return reel_op_fail(error, n, REEL_EINVAL, "needs an input and an output");
    if (s->dtype != REEL_DTYPE_INT64)
        return reel_op_fail(error, n, REEL_EINVAL, "shape must be int64");
    const reel_ir_attr *v = reel_ir_attr_find(n, "value");
    reel_dtype dt = REEL_DTYPE_FLOAT32;
    if (v) {
        if (v->type != REEL_ATTR_TENSOR || !v->t || count_of(v->t) != 1)
            return reel_op_fail(error, n, REEL_EINVAL, "value must be a one-element tensor");
        dt = v->t->dtype;
    }
    int64_t dims[MAX_INTS];
    int c = const_ints(g, n, 0, dims);
    if (c == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "shape must be a 1-D int64 tensor");
    if (c == -1) {
        if (s->rank == 1 && s->dims[0] >= 0 && s->dims[0] <= R)
            return set_out(o, dt, (int)s->dims[0], NULL);
        return set_out(o, dt, -1, NULL);
    }
    if (c > R)
        return reel_op_fail(error, n, REEL_EINVAL, "rank %d exceeds %d", c, R);
    for (int i = 0; i < c; i++)
        if (dims[i] < 0)
            return reel_op_fail(error, n, REEL_EINVAL, "dim %d is negative", i);
    if (reel_tensor_count(c, dims) < 0)
        return reel_op_fail(error, n, REEL_EINVAL, "shape overflows");
    return set_out(o, dt, c, dims);
}

static int run_constant_of_shape(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                                 const reel_exec_ctx *ctx)
{
    (void)in;
    (void)ctx;
    const reel_ir_attr *v = reel_ir_attr_find(n, "value");
    int64_t c = count_of(out[0]);
    size_t es = esize(out[0]);
    if (!v || !v->t) {
        memset(out[0]->data, 0, c * es);
        return 0;
    }
    char *o = out[0]->data;
    for (int64_t i = 0; i < c; i++)
        memcpy(o + i * es, v->t->data, es);
    return 0;
}
static const reel_op op_constant_of_shape = {
    .name = "ConstantOfShape", .infer = infer_constant_of_shape, .run = run_constant_of_shape
};

static int infer_constant(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *o = reel_op_output(g, n, 0);
    if (!o)
        return reel_op_fail(error, n, REEL_EINVAL, "has no output");
    const reel_ir_attr *a = reel_ir_attr_find(n, "value");
    if (a && a->type == REEL_ATTR_TENSOR && a->t)
        return set_out(o, a->t->dtype, a->t->rank, a->t->shape);
    if ((a = reel_ir_attr_find(n, "value_float")))
        return set_out(o, REEL_DTYPE_FLOAT32, 0, NULL);
    if ((a = reel_ir_attr_find(n, "value_int")))
        return set_out(o, REEL_DTYPE_INT64, 0, NULL);
    if ((a = reel_ir_attr_find(n, "value_floats")) || (a = reel_ir_attr_find(n, "value_ints"))) {
        int64_t d = a->n;
        return set_out(o, a->type == REEL_ATTR_FLOATS ? REEL_DTYPE_FLOAT32 : REEL_DTYPE_INT64, 1, &d);
    }
    return reel_op_fail(error, n, REEL_EINVAL, "no supported value attribute (value, value_float(s), value_int(s))");
}

static int run_constant(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    (void)in;
    (void)ctx;
    const reel_ir_attr *a;
    size_t bytes = count_of(out[0]) * esize(out[0]);
    if ((a = reel_ir_attr_find(n, "value")) && a->t)
        memcpy(out[0]->data, a->t->data, bytes);
    else if ((a = reel_ir_attr_find(n, "value_float")))
        *(float *)out[0]->data = a->f;
    else if ((a = reel_ir_attr_find(n, "value_int")))
        *(int64_t *)out[0]->data = a->i;
    else if ((a = reel_ir_attr_find(n, "value_floats")))
        memcpy(out[0]->data, a->floats, bytes);
    else if ((a = reel_ir_attr_find(n, "value_ints")))
        memcpy(out[0]->data, a->ints, bytes);
    else
        return REEL_EINVAL;
    return 0;
}
static const reel_op op_constant = { .name = "Constant", .infer = infer_constant, .run = run_constant };

// ---- Pad --------------------------------------------------------------------

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };

static int pad_mode(const reel_ir_node *n)
{
    const char *m = reel_ir_attr_string(n, "mode", "constant");
    return !strcmp(m, "constant") ? PAD_CONSTANT : !strcmp(m, "reflect") ? PAD_REFLECT
         : !strcmp(m, "edge") ? PAD_EDGE : -1;
}

static int infer_pad(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *o = reel_op_output(g, n, 0);
    int mode = pad_mode(n);
    if (mode < 0)
        return reel_op_fail(error, n, REEL_EINVAL, "mode '%s' is not supported", reel_ir_attr_string(n, "mode", ""));
    if (reel_op_input(g, n, 3))
        return reel_op_fail(error, n, REEL_EINVAL, "the axes input (opset 18) is not supported");
    int64_t pads[MAX_INTS];
    int c;
    if (g->opset >= 11) {
        reel_ir_value *p = reel_op_input(g, n, 1);
        if (!p || p->dtype != REEL_DTYPE_INT64)
            return reel_op_fail(error, n, REEL_EINVAL, "pads input (int64) is required");
        reel_ir_value *cv = reel_op_input(g, n, 2);
        if (cv && cv->dtype != x->dtype)
            return reel_op_fail(error, n, REEL_EINVAL, "constant_value has another type than the input");
        c = const_ints(g, n, 1, pads);
        if (c == -2)
            return reel_op_fail(error, n, REEL_EINVAL, "pads must be a 1-D int64 tensor");
        if (c == -1)
            return set_out(o, x->dtype, x->rank, NULL);
    } else {
        const int64_t *a = reel_ir_attr_ints(n, "pads", &c);
        if (!a)
            return reel_op_fail(error, n, REEL_EINVAL, "attribute 'pads' is missing");
        if (c > MAX_INTS)
            return reel_op_fail(error, n, REEL_EINVAL, "too many pads");
        memcpy(pads, a, sizeof(int64_t) * c);
    }
    if (x->rank < 0)
        return set_out(o, x->dtype, -1, NULL);
    if (c != 2 * x->rank)
        return reel_op_fail(error, n, REEL_EINVAL, "pads has %d entries for a rank-%d input", c, x->rank);
    int64_t dims[R];
    for (int d = 0; d < x->rank; d++) {
        int64_t v = x->dims[d];
        if (v == REEL_DIM_UNKNOWN) {
            dims[d] = v;
            continue;
        }
        dims[d] = v + pads[d] + pads[d + x->rank];
        if (dims[d] < 0)
            return reel_op_fail(error, n, REEL_EINVAL, "pads make dim %d negative", d);
        if (mode == PAD_REFLECT && (pads[d] > 0 || pads[d + x->rank] > 0) && v < 2)
            return reel_op_fail(error, n, REEL_EINVAL, "reflect needs dim %d to have at least 2 elements", d);
        if (mode == PAD_EDGE && (pads[d] > 0 || pads[d + x->rank] > 0) && v < 1)
            return reel_op_fail(error, n, REEL_EINVAL, "edge padding of an empty dim %d", d);
    }
    return set_out(o, x->dtype, x->rank, dims);
}

// Input index for output index i along a dim of size d with `b` leading pads;
// -1 means "pad value" (constant mode).
static int64_t pad_map(int mode, int64_t i, int64_t b, int64_t d)
{
    int64_t j = i - b;
    if (j >= 0 && j < d)
        return j;
    if (mode == PAD_CONSTANT)
        return -1;
    if (mode == PAD_EDGE)
        return j < 0 ? 0 : d - 1;
    int64_t p = 2 * (d - 1); // reflect: period 2(d-1)
    j %= p;
    if (j < 0)
        j += p;
    return j < d ? j : p - j;
}

static int run_pad(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                   const reel_exec_ctx *ctx)
{
    (void)ctx;
    const reel_tensor *x = in[0];
    reel_tensor *o = out[0];
    int mode = pad_mode(n), r = x->rank;
    int64_t pads[MAX_INTS];
    int c;
    if (n->n_inputs > 1 && in[1]) {
        c = tensor_ints(in[1], pads);
    } else {
        const int64_t *a = reel_ir_attr_ints(n, "pads", &c);
        if (a && c <= MAX_INTS)
            memcpy(pads, a, sizeof(int64_t) * c);
    }
    if (mode < 0 || c != 2 * r)
        return REEL_EINVAL;
    size_t es = esize(x);
    // The pad value as bytes of the element type.
    char val[8] = { 0 };
    if (n->n_inputs > 2 && in[2] && count_of(in[2]) == 1)
        memcpy(val, in[2]->data, es);
    else if (x->dtype == REEL_DTYPE_FLOAT32) {
        float f = reel_ir_attr_float(n, "value", 0.0f);
        memcpy(val, &f, 4);
    }
    int64_t xst[R], s = 1;
    for (int d = r - 1; d >= 0; d--) {
        xst[d] = s;
        s *= x->shape[d];
    }
    if (count_of(o) == 0)
        return 0;
    if (r == 0) {
        memcpy(o->data, x->data, es);
        return 0;
    }
    int last = r - 1;
    int64_t inner = o->shape[last], idx[R] = { 0 };
    int64_t b = pads[last], d = x->shape[last];
    char *op = o->data;
    for (;;) {
        // Map the outer index; an outer index in the padding is a pad row.
        int64_t off = 0;
        bool pad_row = false;
        for (int k = 0; k < last; k++) {
            int64_t j = pad_map(mode, idx[k], pads[k], x->shape[k]);
            if (j < 0)
                pad_row = true;
            else
                off += j * xst[k];
        }
        const char *row = (const char *)x->data + off * (int64_t)es;
        if (pad_row) {
            for (int64_t i = 0; i < inner; i++)
                memcpy(op + i * es, val, es);
        } else {
            // The middle is one copy; the sides map element by element.
            int64_t lo = b > 0 ? b : 0, hi = b + d < inner ? b + d : inner;
            if (hi > lo)
                memcpy(op + lo * es, row + (lo - b) * (int64_t)es, (hi - lo) * es);
            for (int64_t i = 0; i < inner; i++) {
                if (i == lo && hi > lo)
                    i = hi;
                if (i >= inner)
                    break;
                int64_t j = pad_map(mode, i, b, d);
                memcpy(op + i * es, j < 0 ? val : row + j * (int64_t)es, es);
            }
        }
        op += inner * es;
        int k = last - 1;
        for (; k >= 0; k--) {
            if (++idx[k] < o->shape[k])
                break;
            idx[k] = 0;
        }
        if (k < 0)
            break;
    }
    return 0;
}
static const reel_op op_pad = { .name = "Pad", .infer = infer_pad, .run = run_pad };

// ---- Expand -----------------------------------------------------------------

static int infer_expand(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    int err = need_io(g, n, error);
    if (err)
        return err;
    reel_ir_value *x = reel_op_input(g, n, 0), *s = reel_op_input(g, n, 1), *o = reel_op_output(g, n, 0);
    if (!s || s->dtype != REEL_DTYPE_INT64)
        return reel_op_fail(error, n, REEL_EINVAL, "shape input (int64) is required");
    int64_t shape[MAX_INTS];
    int c = const_ints(g, n, 1, shape);
    if (c == -2)
        return reel_op_fail(error, n, REEL_EINVAL, "shape must be a 1-D int64 tensor");
    if (x->rank < 0)
        return set_out(o, x->dtype, -1, NULL);
    if (c == -1) {
        if (s->rank == 1 && s->dims[0] >= 0) {
            int r = s->dims[0] > x->rank ? (int)s->dims[0] : x->rank;
            if (r <= R)
                return set_out(o, x->dtype, r, NULL);
        }
        return set_out(o, x->dtype, -1, NULL);
    }
    int r = c > x->rank ? c : x->rank;
    if (r > R)
        return reel_op_fail(error, n, REEL_EINVAL, "output rank %d exceeds %d", r, R);
    int64_t dims[R];
    for (int d = 0; d < r; d++) {
        int ia = d - (r - x->rank), ib = d - (r - c);
        int64_t a = ia >= 0 ? x->dims[ia] : 1, b = ib >= 0 ? shape[ib] : 1;
        if (b < 0)
            return reel_op_fail(error, n, REEL_EINVAL, "shape entry %d is negative", ib);
        if (a == REEL_DIM_UNKNOWN)
            dims[d] = b == 1 ? REEL_DIM_UNKNOWN : b;
        else if (a == b || b == 1)
            dims[d] = a;
        else if (a == 1)
            dims[d] = b;
        else
            return reel_op_fail(error, n, REEL_EINVAL, "cannot expand dim %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT, a, b);
    }
    return set_out(o, x->dtype, r, dims);
}

static int run_expand(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    (void)n;
    (void)ctx;
    const reel_tensor *x = in[0];
    reel_tensor *o = out[0];
    int64_t st[R], s = 1;
    for (int d = o->rank - 1; d >= 0; d--) {
        int id = d - (o->rank - x->rank);
        int64_t v = id >= 0 ? x->shape[id] : 1;
        st[d] = v == 1 ? 0 : s;
        s *= v;
    }
    copy_strided(o->data, x->data, o->rank, o->shape, st, esize(x));
    return 0;
}
static const reel_op op_expand = { .name = "Expand", .infer = infer_expand, .run = run_expand };

const reel_op *const reel_ops_shape[] = {
    &op_reshape, &op_flatten, &op_transpose, &op_squeeze, &op_unsqueeze, &op_concat,
    &op_split, &op_slice, &op_gather, &op_shape, &op_constant_of_shape, &op_constant,
    &op_pad, &op_expand, NULL,
};

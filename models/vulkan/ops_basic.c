// Vulkan ops that move or map elements: copies (Transpose, Concat, Split,
// Slice, Expand, Reshape and its kin) through nn_copy, broadcasting
// arithmetic through nn_binary, activations through nn_unary, and
// Softmax/LogSoftmax through nn_softmax. Semantics follow models/cpu/
// (elementwise.c, shape.c, reduce.c) exactly; supports() says no to anything
// the kernels cannot reproduce, so such nodes run on the cpu instead.
#include <math.h>
#include <string.h>

#include "models/slice.h"
#include "models/vulkan/vk_ops.h"

#define R REEL_TENSOR_MAX_RANK
#define VK_RANK 6     // the kernels' push constants hold 6 dims
#define MAX_JOBS 64   // copies one node may need (Concat inputs, Split outputs)

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static bool is_f32(const reel_tensor *t)
{
    return t && t->dtype == REEL_DTYPE_FLOAT32 && t->rank >= 0 && t->rank <= R && count_of(t) >= 0 &&
           count_of(t) <= INT32_MAX;
}

static bool norm_axis(int64_t *axis, int rank)
{
    if (*axis < -rank || *axis >= rank)
        return false;
    if (*axis < 0)
        *axis += rank;
    return true;
}

static void contiguous(int rank, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= dims[d];
    }
}

static int64_t dims_prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

static int kernel_error(GError *error)
{
    int code = error && error->domain == REEL_ERROR ? error->code : REEL_EUNSUPPORTED;
    g_clear_error(&error);
    return code;
}

// ---- strided walks ----------------------------------------------------------

// An index space with up to 3 stride sets walked together (copy: src, dst;
// binary: a, b, out), collapsed so the kernels loop over as few dims as
// possible: size-1 dims dropped, neighbours merged where every stride set
// runs on across them.
typedef struct walk {
    int rank, ns;
    int64_t dim[R];
    int64_t st[3][R];
    int64_t off[3];
} walk;

static void walk_collapse(walk *w)
{
    int r = 0;
    for (int d = 0; d < w->rank; d++) {
        if (w->dim[d] == 1)
            continue;
        bool merge = r > 0;
        for (int k = 0; k < w->ns && merge; k++)
            merge = w->st[k][r - 1] == w->st[k][d] * w->dim[d];
        if (merge) {
            w->dim[r - 1] *= w->dim[d];
            for (int k = 0; k < w->ns; k++)
                w->st[k][r - 1] = w->st[k][d];
        } else {
            w->dim[r] = w->dim[d];
            for (int k = 0; k < w->ns; k++)
                w->st[k][r] = w->st[k][d];
            r++;
        }
    }
    if (r == 0) {
        r = 1;
        w->dim[0] = 1;
        for (int k = 0; k < w->ns; k++)
            w->st[k][0] = 0;
    }
    w->rank = r;
}

// Whether the kernels can walk w: at most VK_RANK dims after collapsing, and
// every index it reaches within int32 (the shaders' index type).
static bool walk_fits(walk *w)
{
    walk_collapse(w);
    if (w->rank > VK_RANK)
        return false;
    int64_t n = 1;
    for (int d = 0; d < w->rank; d++)
        n *= w->dim[d];
    if (n > INT32_MAX)
        return false;
    for (int k = 0; k < w->ns; k++) {
        int64_t lo = w->off[k], hi = w->off[k];
        for (int d = 0; d < w->rank; d++) {
            int64_t span = (w->dim[d] - 1) * w->st[k][d];
            if (w->st[k][d] < INT32_MIN || w->st[k][d] > INT32_MAX)
                return false;
            if (span < 0)
                lo += span;
            else
                hi += span;
        }
        if (lo < 0 || hi > INT32_MAX)
            return false;
    }
    return true;
}

static int64_t walk_count(const walk *w)
{
    return dims_prod(w->dim, 0, w->rank);
}

// ---- copies -----------------------------------------------------------------

// One nn_copy dispatch: input `in` to output `out`, walk st[0] = source,
// st[1] = destination.
typedef struct copy_job {
    int in, out;
    walk w;
} copy_job;

typedef struct copy_plan {
    int n;
    copy_job job[MAX_JOBS];
} copy_plan;

typedef struct copy_push {
    uint32_t n, rank, src_off, dst_off;
    uint32_t shape[VK_RANK];
    int32_t src_st[VK_RANK], dst_st[VK_RANK];
} copy_push;
_Static_assert(sizeof(copy_push) == 88, "gpu/kernel.c's nn_copy push size");

// Adds a job over `dims` (rank r) with the given strides and offsets; none
// when the walk is empty. False when the plan is full.
static bool plan_add(copy_plan *p, int in, int out, int r, const int64_t *dims, const int64_t *src_st,
                          int64_t src_off, const int64_t *dst_st, int64_t dst_off)
{
    if (dims_prod(dims, 0, r) == 0)
        return true;
    if (p->n == MAX_JOBS)
        return false;
    copy_job *j = &p->job[p->n++];
    j->in = in;
    j->out = out;
    j->w = (walk){ .rank = r, .ns = 2, .off = { src_off, dst_off } };
    for (int d = 0; d < r; d++) {
        j->w.dim[d] = dims[d];
        j->w.st[0][d] = src_st[d];
        j->w.st[1][d] = dst_st[d];
    }
    return true;
}

// A whole-tensor copy of `count` elements.
static bool plan_flat(copy_plan *p, int64_t count)
{
    int64_t one = 1;
    return plan_add(p, 0, 0, 1, &count, &one, 0, &one, 0);
}

// Each op's plan: false when the node is outside what the cpu op accepts or
// the kernel walks. Inputs and outputs are concrete tensors (data only for
// constants).
typedef bool (*plan_fn)(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p);

static bool plan_plain(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p)
{
    (void)n;
    return count_of(in[0]) == count_of(out[0]) && plan_flat(p, count_of(out[0]));
}

static bool plan_dropout(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p)
{
    // The mask output (all true) is not float data; the cpu writes it.
    if (n->n_outputs > 1 && out[1])
        return false;
    return plan_plain(n, in, out, p);
}

static bool plan_transpose(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p)
{
    const reel_tensor *x = in[0];
    int rank = x->rank, c;
    int64_t perm[R], xst[R], st[R], ost[R];
    const int64_t *pa = reel_ir_attr_ints(n, "perm", &c);
    if (!pa) {
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
    } else {
        bool seen[R] = { false };
        if (c != rank)
            return false;
        for (int i = 0; i < rank; i++) {
            if (pa[i] < 0 || pa[i] >= rank || seen[pa[i]])
                return false;
            seen[pa[i]] = true;
            perm[i] = pa[i];
        }
    }
    if (out[0]->rank != rank)
        return false;
    contiguous(rank, x->shape, xst);
    for (int d = 0; d < rank; d++) {
        if (out[0]->shape[d] != x->shape[perm[d]])
            return false;
        st[d] = xst[perm[d]];
    }
    contiguous(rank, out[0]->shape, ost);
    return plan_add(p, 0, 0, rank, out[0]->shape, st, 0, ost, 0);
}

static bool plan_concat(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p)
{
    const reel_tensor *o = out[0];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (!norm_axis(&axis, o->rank))
        return false;
    int64_t outer = dims_prod(o->shape, 0, (int)axis), inner = dims_prod(o->shape, (int)axis + 1, o->rank);
    int64_t orow = o->shape[axis] * inner, at = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        if (!is_f32(in[i]) || in[i]->rank != o->rank)
            return false;
        for (int d = 0; d < o->rank; d++)
            if (d != axis && in[i]->shape[d] != o->shape[d])
                return false;
        int64_t row = in[i]->shape[axis] * inner;
        if (at + row > orow)
            return false;
        int64_t dims[2] = { outer, row }, sst[2] = { row, 1 }, dst[2] = { orow, 1 };
        if (!plan_add(p, i, 0, 2, dims, sst, 0, dst, at))
            return false;
        at += row;
    }
    return at == orow;
}

static bool plan_split(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p)
{
    const reel_tensor *x = in[0];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (!norm_axis(&axis, x->rank))
        return false;
    int64_t outer = dims_prod(x->shape, 0, (int)axis), inner = dims_prod(x->shape, (int)axis + 1, x->rank);
    int64_t xrow = x->shape[axis] * inner, at = 0;
    for (int i = 0; i < n->n_outputs; i++) {
        // The cpu op needs every output (it takes the sizes from them).
        if (!is_f32(out[i]) || out[i]->rank != x->rank)
            return false;
        for (int d = 0; d < x->rank; d++)
            if (d != axis && out[i]->shape[d] != x->shape[d])
                return false;
        int64_t row = out[i]->shape[axis] * inner;
        if (at + row > xrow)
            return false;
        int64_t dims[2] = { outer, row }, sst[2] = { xrow, 1 }, dst[2] = { row, 1 };
        if (!plan_add(p, 0, i, 2, dims, sst, at, dst, 0))
            return false;
        at += row;
    }
    return true;
}

// Slice as a strided copy; its window read and clamped as the cpu op does
// (models/slice.h): inputs without data (not constants) keep it on the cpu.
static bool plan_slice(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p)
{
    const reel_tensor *x = in[0];
    reel_slice_window w;
    if (reel_slice_window_of(n, (const reel_tensor *const *)in, x->rank, x->shape, &w))
        return false;
    const int64_t *start = w.start, *step = w.step, *len = w.len;
    int64_t st[R], ost[R], s = 1, off = 0;
    if (out[0]->rank != x->rank)
        return false;
    for (int d = x->rank - 1; d >= 0; d--) {
        if (len[d] != out[0]->shape[d])
            return false;
        st[d] = s * step[d];
        off += s * start[d];
        s *= x->shape[d];
    }
    contiguous(x->rank, out[0]->shape, ost);
    return plan_add(p, 0, 0, x->rank, out[0]->shape, st, off, ost, 0);
}

static bool plan_expand(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, copy_plan *p)
{
    (void)n;
    const reel_tensor *x = in[0], *o = out[0];
    int64_t st[R], ost[R], s = 1;
    if (o->rank < x->rank)
        return false;
    for (int d = o->rank - 1; d >= 0; d--) {
        int id = d - (o->rank - x->rank);
        int64_t v = id >= 0 ? x->shape[id] : 1;
        if (v != 1 && v != o->shape[d])
            return false;
        st[d] = v == 1 ? 0 : s;
        s *= v;
    }
    contiguous(o->rank, o->shape, ost);
    return plan_add(p, 0, 0, o->rank, o->shape, st, 0, ost, 0);
}

typedef struct copy_op {
    vk_op op;
    plan_fn plan;
} copy_op;

// Plans the node's copies and checks each fits the kernel.
static bool copy_plan_of(const copy_op *c, const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                         copy_plan *p)
{
    if (n->n_inputs < 1 || n->n_outputs < 1 || !is_f32(in[0]) || !is_f32(out[0]))
        return false;
    p->n = 0;
    if (!c->plan(n, in, out, p))
        return false;
    for (int i = 0; i < p->n; i++)
        if (!walk_fits(&p->job[i].w))
            return false;
    return true;
}

static bool copy_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out);
static int copy_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out);

#define COPY_OP(var, Name, fn) \
    static const copy_op var = { { .name = Name, .supports = copy_supports, .run = copy_run, \
                                    .supports_f16 = copy_supports }, fn }

COPY_OP(op_identity, "Identity", plan_plain);
COPY_OP(op_dropout, "Dropout", plan_dropout);
COPY_OP(op_reshape, "Reshape", plan_plain);
COPY_OP(op_flatten, "Flatten", plan_plain);
COPY_OP(op_squeeze, "Squeeze", plan_plain);
COPY_OP(op_unsqueeze, "Unsqueeze", plan_plain);
COPY_OP(op_transpose, "Transpose", plan_transpose);
COPY_OP(op_concat, "Concat", plan_concat);
COPY_OP(op_split, "Split", plan_split);
COPY_OP(op_slice, "Slice", plan_slice);
COPY_OP(op_expand, "Expand", plan_expand);

static const copy_op *const copy_ops[] = {
    &op_identity, &op_dropout, &op_reshape, &op_flatten, &op_squeeze, &op_unsqueeze,
    &op_transpose, &op_concat, &op_split, &op_slice, &op_expand,
};

static const copy_op *copy_op_of(const reel_ir_node *n)
{
    for (size_t i = 0; i < G_N_ELEMENTS(copy_ops); i++)
        if (strcmp(copy_ops[i]->op.name, n->op) == 0)
            return copy_ops[i];
    return NULL;
}

static bool copy_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    const copy_op *c = copy_op_of(n);
    copy_plan *p = g_new(copy_plan, 1);
    bool ok = c && copy_plan_of(c, n, in, out, p);
    g_free(p);
    return ok;
}

static int copy_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    const copy_op *c = copy_op_of(n);
    reel_tensor *tin[MAX_JOBS] = { NULL }, *tout[MAX_JOBS] = { NULL };
    if (!c || n->n_inputs > MAX_JOBS || n->n_outputs > MAX_JOBS)
        return REEL_EINVAL;
    for (int i = 0; i < n->n_inputs; i++)
        tin[i] = in[i] ? (reel_tensor *)in[i]->t : NULL;
    for (int i = 0; i < n->n_outputs; i++)
        tout[i] = out[i] ? (reel_tensor *)out[i]->t : NULL;
    copy_plan *p = g_new(copy_plan, 1);
    GError *error = NULL;
    reel_kernel *k = NULL;
    int err = 0;
    if (!copy_plan_of(c, n, tin, tout, p))
        err = REEL_EINVAL;
    else if (p->n && !(k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_copy"), &error)))
        err = kernel_error(error);
    for (int i = 0; i < p->n && !err; i++) {
        const walk *w = &p->job[i].w;
        copy_push push = { .n = (uint32_t)walk_count(w), .rank = (uint32_t)w->rank,
                           .src_off = (uint32_t)w->off[0], .dst_off = (uint32_t)w->off[1] };
        for (int d = 0; d < w->rank; d++) {
            push.shape[d] = (uint32_t)w->dim[d];
            push.src_st[d] = (int32_t)w->st[0][d];
            push.dst_st[d] = (int32_t)w->st[1][d];
        }
        reel_mem *bufs[2] = { in[p->job[i].in]->mem, out[p->job[i].out]->mem };
        err = vk_ctx_dispatch(ctx, k, bufs, 2, &push, sizeof push, push.n);
    }
    g_free(p);
    return err;
}

// ---- binary arithmetic --------------------------------------------------------

enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_POW, BIN_MAX, BIN_MIN, BIN_PRELU };

typedef struct binary_push {
    uint32_t n, rank, op, pad_;
    uint32_t shape[VK_RANK];
    int32_t a_st[VK_RANK], b_st[VK_RANK];
} binary_push;
_Static_assert(sizeof(binary_push) == 88, "gpu/kernel.c's nn_binary push size");

// The walk over the output: st[0] = a, st[1] = b, st[2] = out (contiguous),
// numpy broadcasting as models/cpu/elementwise.c's bcast_init.
static bool binary_walk(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, walk *w)
{
    if (n->n_inputs != 2 || n->n_outputs < 1 || !is_f32(in[0]) || !is_f32(in[1]) || !is_f32(out[0]))
        return false;
    const reel_tensor *o = out[0];
    if (o->rank < in[0]->rank || o->rank < in[1]->rank)
        return false;
    *w = (walk){ .rank = o->rank, .ns = 3 };
    for (int k = 0; k < 2; k++) {
        int64_t s = 1;
        for (int d = o->rank - 1; d >= 0; d--) {
            int id = d - (o->rank - in[k]->rank);
            int64_t x = id >= 0 ? in[k]->shape[id] : 1;
            if (x != 1 && x != o->shape[d])
                return false;
            w->st[k][d] = x == 1 ? 0 : s;
            s *= x;
        }
    }
    memcpy(w->dim, o->shape, sizeof(int64_t) * o->rank);
    contiguous(o->rank, o->shape, w->st[2]);
    return count_of(o) == 0 || walk_fits(w);
}

static int binary_code(const char *op)
{
    static const char *const names[] = { "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu" };
    for (int i = 0; i < (int)G_N_ELEMENTS(names); i++)
        if (strcmp(op, names[i]) == 0)
            return i;
    return -1;
}

static bool binary_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    walk w;
    return binary_code(n->op) >= 0 && binary_walk(n, in, out, &w);
}

static int binary_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[2] = { (reel_tensor *)in[0]->t, (reel_tensor *)in[1]->t }, *tout[1] = { (reel_tensor *)out[0]->t };
    walk w;
    int code = binary_code(n->op);
    if (code < 0 || !binary_walk(n, tin, tout, &w))
        return REEL_EINVAL;
    if (count_of(tout[0]) == 0)
        return 0;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_binary"), &error);
    if (!k)
        return kernel_error(error);
    binary_push push = { .n = (uint32_t)walk_count(&w), .rank = (uint32_t)w.rank, .op = (uint32_t)code };
    for (int d = 0; d < w.rank; d++) {
        push.shape[d] = (uint32_t)w.dim[d];
        push.a_st[d] = (int32_t)w.st[0][d];
        push.b_st[d] = (int32_t)w.st[1][d];
    }
    reel_mem *bufs[3] = { in[0]->mem, in[1]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 3, &push, sizeof push, push.n);
}

#define BINARY_OP(var, Name) \
    static const vk_op var = { .name = Name, .supports = binary_supports, .run = binary_run, \
                               .supports_f16 = binary_supports }
BINARY_OP(op_add, "Add");
BINARY_OP(op_sub, "Sub");
BINARY_OP(op_mul, "Mul");
BINARY_OP(op_div, "Div");
BINARY_OP(op_pow, "Pow");
BINARY_OP(op_max, "Max"); // two inputs only (ONNX allows any number)
BINARY_OP(op_min, "Min");
BINARY_OP(op_prelu, "PRelu");

// ---- unary ------------------------------------------------------------------

enum { UN_RELU, UN_LEAKYRELU, UN_CLIP, UN_SIGMOID, UN_HARDSIGMOID, UN_HARDSWISH, UN_TANH, UN_EXP, UN_LOG,
       UN_SQRT, UN_NEG, UN_ABS, UN_RECIPROCAL };

typedef struct unary_push {
    uint32_t n, op;
    float a, b;
} unary_push;
_Static_assert(sizeof(unary_push) == 16, "gpu/kernel.c's nn_unary push size");

// The op's code and parameters (the cpu's attribute defaults); false when
// they cannot be had on the host.
static bool unary_params(const reel_ir_node *n, reel_tensor *const *in, unary_push *p)
{
    static const struct {
        const char *name;
        int code;
        float a, b;
    } ops[] = {
        { "Relu", UN_RELU, 0, 0 },
        { "LeakyRelu", UN_LEAKYRELU, 0.01f, 0 },
        { "Clip", UN_CLIP, 0, 0 },
        { "Sigmoid", UN_SIGMOID, 0, 0 },
        { "HardSigmoid", UN_HARDSIGMOID, 0.2f, 0.5f },
        { "HardSwish", UN_HARDSWISH, 0, 0 },
        { "Tanh", UN_TANH, 0, 0 },
        { "Exp", UN_EXP, 0, 0 },
        { "Log", UN_LOG, 0, 0 },
        { "Sqrt", UN_SQRT, 0, 0 },
        { "Neg", UN_NEG, 0, 0 },
        { "Abs", UN_ABS, 0, 0 },
        { "Reciprocal", UN_RECIPROCAL, 0, 0 },
    };
    int i = 0;
    while (i < (int)G_N_ELEMENTS(ops) && strcmp(ops[i].name, n->op) != 0)
        i++;
    if (i == (int)G_N_ELEMENTS(ops))
        return false;
    p->op = (uint32_t)ops[i].code;
    if (ops[i].code != UN_CLIP) {
        p->a = reel_ir_attr_float(n, "alpha", ops[i].a);
        p->b = reel_ir_attr_float(n, "beta", ops[i].b);
        return true;
    }
    // Clip: min/max inputs (opset 11+, constants here) or attributes, as
    // models/cpu/elementwise.c's run_clip chooses.
    const reel_tensor *mn = n->n_inputs > 1 ? in[1] : NULL, *mx = n->n_inputs > 2 ? in[2] : NULL;
    for (int k = 0; k < 2; k++) {
        const reel_tensor *b = k ? mx : mn;
        if (b && (b->dtype != REEL_DTYPE_FLOAT32 || !b->data || count_of(b) < 1))
            return false;
    }
    if (mn || mx || n->n_inputs > 1) {
        p->a = mn ? *(const float *)mn->data : -INFINITY;
        p->b = mx ? *(const float *)mx->data : INFINITY;
    } else {
        p->a = reel_ir_attr_float(n, "min", -INFINITY);
        p->b = reel_ir_attr_float(n, "max", INFINITY);
    }
    return true;
}

static bool unary_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    unary_push p;
    return n->n_inputs >= 1 && n->n_outputs >= 1 && is_f32(in[0]) && is_f32(out[0]) &&
           count_of(in[0]) == count_of(out[0]) && unary_params(n, in, &p);
}

static int unary_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[3] = { NULL };
    for (int i = 0; i < n->n_inputs && i < 3; i++)
        tin[i] = in[i] ? (reel_tensor *)in[i]->t : NULL;
    unary_push push;
    if (!unary_params(n, tin, &push))
        return REEL_EINVAL;
    push.n = (uint32_t)count_of(out[0]->t);
    if (push.n == 0)
        return 0;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_unary"), &error);
    if (!k)
        return kernel_error(error);
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &push, sizeof push, push.n);
}

#define UNARY_OP(var, Name) \
    static const vk_op var = { .name = Name, .supports = unary_supports, .run = unary_run, \
                               .supports_f16 = unary_supports }
UNARY_OP(op_relu, "Relu");
UNARY_OP(op_leakyrelu, "LeakyRelu");
UNARY_OP(op_clip, "Clip");
UNARY_OP(op_sigmoid, "Sigmoid");
UNARY_OP(op_hardsigmoid, "HardSigmoid");
UNARY_OP(op_hardswish, "HardSwish");
UNARY_OP(op_tanh, "Tanh");
UNARY_OP(op_exp, "Exp");
UNARY_OP(op_log, "Log");
UNARY_OP(op_sqrt, "Sqrt");
UNARY_OP(op_neg, "Neg");
UNARY_OP(op_abs, "Abs");
UNARY_OP(op_reciprocal, "Reciprocal");

// ---- Softmax, LogSoftmax ------------------------------------------------------

typedef struct softmax_push {
    uint32_t rows, len, inner, log_;
} softmax_push;
_Static_assert(sizeof(softmax_push) == 16, "gpu/kernel.c's nn_softmax push size");

// Rows (outer, len, inner) as models/cpu/reduce.c's run_softmax_form lays
// them out in one opset form: before 13 the input is coerced to 2-D at axis
// (default 1), from 13 on the axis is normalised alone (default -1).
static bool softmax_rows(const reel_ir_node *n, const reel_tensor *x, bool coerce_2d, int64_t *outer, int64_t *len,
                         int64_t *inner)
{
    int rank = x->rank > 0 ? x->rank : 1;
    int64_t a = reel_ir_attr_int(n, "axis", coerce_2d ? 1 : -1);
    if (a < -rank || a >= rank)
        return false;
    if (a < 0)
        a += rank;
    *outer = *len = *inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < a)
            *outer *= x->shape[d];
        else if (d == a || coerce_2d)
            *len *= x->shape[d];
        else
            *inner *= x->shape[d];
    }
    return true;
}

// The ops are not told the graph's opset, so a node runs here only when both
// opset forms normalise the same rows (the axis is the last dim that is not
// 1, as for Softmax over the last axis or of 2-D inputs; or rows of one
// element), or when the axis is in range for one form only (the cpu's infer
// accepted the node, so that is the graph's).
static bool softmax_shape(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                          softmax_push *p)
{
    if (n->n_inputs < 1 || n->n_outputs < 1 || !is_f32(in[0]) || !is_f32(out[0]) ||
        count_of(in[0]) != count_of(out[0]))
        return false;
    int64_t o1, l1, i1, o2, l2, i2;
    bool before13 = softmax_rows(n, in[0], true, &o1, &l1, &i1), from13 = softmax_rows(n, in[0], false, &o2, &l2, &i2);
    if (!before13 && !from13)
        return false;
    if (!from13) {
        o2 = o1;
        l2 = l1;
        i2 = i1;
    } else if (before13 && !(l1 == l2 && i2 == 1) && !(l1 == 1 && l2 == 1)) {
        return false;
    }
    *p = (softmax_push){ .rows = (uint32_t)(o2 * i2), .len = (uint32_t)l2, .inner = (uint32_t)i2,
                         .log_ = strcmp(n->op, "LogSoftmax") == 0 };
    return true;
}

static bool softmax_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    softmax_push p;
    return softmax_shape(n, in, out, &p);
}

static int softmax_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[1] = { (reel_tensor *)in[0]->t }, *tout[1] = { (reel_tensor *)out[0]->t };
    softmax_push push;
    if (!softmax_shape(n, tin, tout, &push))
        return REEL_EINVAL;
    if (count_of(tout[0]) == 0)
        return 0;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_softmax"), &error);
    if (!k)
        return kernel_error(error);
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &push, sizeof push, push.rows);
}

static const vk_op op_softmax = { .name = "Softmax", .supports = softmax_supports, .run = softmax_run,
                                  .supports_f16 = softmax_supports };
static const vk_op op_log_softmax = { .name = "LogSoftmax", .supports = softmax_supports, .run = softmax_run,
                                      .supports_f16 = softmax_supports };

const vk_op *const vk_ops_basic[] = {
    &op_identity.op, &op_dropout.op, &op_reshape.op, &op_flatten.op, &op_squeeze.op, &op_unsqueeze.op,
    &op_transpose.op, &op_concat.op, &op_split.op, &op_slice.op, &op_expand.op,
    &op_add, &op_sub, &op_mul, &op_div, &op_pow, &op_max, &op_min, &op_prelu,
    &op_relu, &op_leakyrelu, &op_clip, &op_sigmoid, &op_hardsigmoid, &op_hardswish, &op_tanh,
    &op_exp, &op_log, &op_sqrt, &op_neg, &op_abs, &op_reciprocal,
    &op_softmax, &op_log_softmax, NULL,
};

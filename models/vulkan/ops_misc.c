// Vulkan ops on tensors of any type: Equal, Greater, Less, LessOrEqual,
// GreaterOrEqual and the bool And, Or, Xor, Not (nn_compare), Where
// (nn_where), Cast (nn_cast), Gather (nn_gather), and Shape, Constant and
// ConstantOfShape, whose values are known on the host when the node is
// planned, written by nn_fill. Semantics follow models/cpu/elementwise.c and
// models/cpu/shape.c. The kernels bind every tensor as 32-bit words (int64 as
// word pairs, narrow types packed), so they need no 8-, 16- or 64-bit shader
// features, and compute through integers where floats could differ (casts,
// float64). supports() refuses what they do not cover (float16 comparisons,
// which the cpu lacks too; sizes beyond int32 indexing), and those nodes run
// on the cpu. In an fp16 context float32 tensors are float16 words on the
// device: the kernels see them as float16 (stored_views), and the host values
// that nn_fill writes are converted.
#include <string.h>

#include "models/vulkan/vk_ops.h"

#define R REEL_TENSOR_MAX_RANK
#define VK_RANK 6          // dims the kernels' push constants hold
#define FILL_WORDS 28      // nn_fill's pattern
#define FILL_DISPATCHES 64 // a Constant beyond 64 * 28 words stays on the cpu

// Element kinds as the kernels know them (nn_compare, nn_cast).
enum { EK_F32, EK_I32, EK_I64, EK_U8, EK_I8, EK_U16, EK_I16, EK_BOOL, EK_F16, EK_F64 };

static int kind_of(reel_dtype t)
{
    switch (t) {
    case REEL_DTYPE_FLOAT32: return EK_F32;
    case REEL_DTYPE_INT32: return EK_I32;
    case REEL_DTYPE_INT64: return EK_I64;
    case REEL_DTYPE_UINT8: return EK_U8;
    case REEL_DTYPE_INT8: return EK_I8;
    case REEL_DTYPE_UINT16: return EK_U16;
    case REEL_DTYPE_INT16: return EK_I16;
    case REEL_DTYPE_BOOL: return EK_BOOL;
    case REEL_DTYPE_FLOAT16: return EK_F16;
    case REEL_DTYPE_FLOAT64: return EK_F64;
    default: return -1;
    }
}

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

// A tensor whose bytes the kernels can index with int32: a known shape of
// elements of 1, 2, 4 or 8 bytes, at most INT32_MAX bytes in all.
static bool indexable(const reel_tensor *t)
{
    size_t es = t ? reel_dtype_size(t->dtype) : 0;
    if (!t || t->rank < 0 || t->rank > R || (es != 1 && es != 2 && es != 4 && es != 8))
        return false;
    int64_t n = count_of(t);
    return n >= 0 && n <= INT32_MAX / (int64_t)es;
}

static uint64_t words_of(const reel_tensor *t)
{
    return ((uint64_t)count_of(t) * reel_dtype_size(t->dtype) + 3) / 4;
}

// A node's tensors as the device holds them: in an fp16 context float32
// ones are float16 (their float32 host data left out: the kernels here never
// read float data on the host). The rest are the node's own.
#define MAX_IO 4
typedef struct stored_views {
    reel_tensor copy[2 * MAX_IO];
    reel_tensor *in[MAX_IO], *out[MAX_IO];
} stored_views;

static reel_tensor *stored(reel_tensor *t, bool f16, reel_tensor *copy)
{
    if (!t || !f16 || t->dtype != REEL_DTYPE_FLOAT32)
        return t;
    *copy = *t;
    copy->dtype = REEL_DTYPE_FLOAT16;
    copy->nbytes = t->nbytes / 2;
    copy->data = NULL;
    return copy;
}

// False for a node of more inputs or outputs than the ops here take.
static bool stored_views_init(stored_views *sv, const reel_ir_node *n, reel_tensor *const *in,
                              reel_tensor *const *out, bool f16)
{
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return false;
    memset(sv->in, 0, sizeof sv->in);
    memset(sv->out, 0, sizeof sv->out);
    for (int k = 0; k < n->n_inputs; k++)
        sv->in[k] = stored(in[k], f16, &sv->copy[k]);
    for (int k = 0; k < n->n_outputs; k++)
        sv->out[k] = stored(out[k], f16, &sv->copy[MAX_IO + k]);
    return true;
}

// The same from the tensors a run gets.
static bool stored_views_of(stored_views *sv, const vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in,
                            vk_tensor *const *out)
{
    reel_tensor *tin[MAX_IO] = { NULL }, *tout[MAX_IO] = { NULL };
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return false;
    for (int k = 0; k < n->n_inputs; k++)
        tin[k] = in[k] ? (reel_tensor *)in[k]->t : NULL;
    for (int k = 0; k < n->n_outputs; k++)
        tout[k] = out[k] ? (reel_tensor *)out[k]->t : NULL;
    return stored_views_init(sv, n, tin, tout, ctx->f16);
}

static bool same_shape(const reel_tensor *a, const reel_tensor *b)
{
    return a->rank == b->rank && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->rank) == 0;
}

// One dispatch of `name`; a REEL_E* code when the device refuses the kernel
// (the message goes to the log: run() has no GError).
static int dispatch(vk_ctx *ctx, const reel_ir_node *n, const char *name, reel_mem *const *bufs, int n_bufs,
                    const void *push, size_t push_size, uint64_t invocations)
{
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, name, &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("node %s (%s): %s", n->name, n->op, error ? error->message : name);
        g_clear_error(&error);
        return code;
    }
    return vk_ctx_dispatch(ctx, k, bufs, n_bufs, push, push_size, invocations);
}

// ---- broadcasting walks -------------------------------------------------------

// The output's index space with each input's element strides (0 along
// broadcast dims), size-1 dims dropped and neighbours merged where every
// input runs on across them.
typedef struct bcast_walk {
    int rank, nin;
    int64_t dim[R];
    int64_t st[3][R];
} bcast_walk;

static void walk_merge(bcast_walk *w, const int64_t *dims, int64_t st[3][R], int rank)
{
    w->rank = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        int l = w->rank - 1;
        bool merge = l >= 0;
        for (int k = 0; k < w->nin && merge; k++)
            merge = w->st[k][l] == st[k][d] * dims[d];
        if (merge) {
            w->dim[l] *= dims[d];
            for (int k = 0; k < w->nin; k++)
                w->st[k][l] = st[k][d];
            continue;
        }
        w->dim[w->rank] = dims[d];
        for (int k = 0; k < w->nin; k++)
            w->st[k][w->rank] = st[k][d];
        w->rank++;
    }
    if (w->rank == 0) {
        w->rank = 1;
        w->dim[0] = 1;
        for (int k = 0; k < w->nin; k++)
            w->st[k][0] = 0;
    }
}

// numpy broadcasting of in[0..nin) to out's shape, as the cpu's bcast_init;
// false when an input does not broadcast or the walk needs over VK_RANK dims.
static bool bcast_walk_init(bcast_walk *w, const reel_tensor *out, reel_tensor *const *in, int nin)
{
    int64_t st[3][R];
    int r = out->rank;
    w->nin = nin;
    for (int k = 0; k < nin; k++) {
        if (in[k]->rank > r)
            return false;
        int64_t s = 1;
        for (int d = r - 1; d >= 0; d--) {
            int id = d - (r - in[k]->rank);
            int64_t x = id >= 0 ? in[k]->shape[id] : 1;
            if (x != 1 && x != out->shape[d])
                return false;
            st[k][d] = x == 1 ? 0 : s;
            s *= x;
        }
    }
    walk_merge(w, out->shape, st, r);
    return w->rank <= VK_RANK;
}

static void walk_to_push(const bcast_walk *w, uint32_t *shape, int32_t *const *st)
{
    for (int d = 0; d < w->rank; d++) {
        shape[d] = (uint32_t)w->dim[d];
        for (int k = 0; k < w->nin; k++)
            st[k][d] = (int32_t)w->st[k][d];
    }
}

// ---- Equal, Greater, Less, ..., And, Or, Xor, Not ------------------------------

// nn_compare's op codes, by op name: the comparisons, then the bool logic.
static const char *const compare_ops[] = { "Equal", "Greater", "Less", "LessOrEqual", "GreaterOrEqual",
                                           "And", "Or", "Xor", "Not" };
enum { CMP_AND = 5, CMP_NOT = 8 };

static int compare_op_of(const char *op)
{
    for (int i = 0; i < (int)G_N_ELEMENTS(compare_ops); i++)
        if (strcmp(op, compare_ops[i]) == 0)
            return i;
    return -1;
}

typedef struct compare_push {
    uint32_t n, rank, op, kind;
    uint32_t shape[VK_RANK];
    int32_t a_st[VK_RANK], b_st[VK_RANK];
} compare_push;
_Static_assert(sizeof(compare_push) == 88, "gpu/kernel.c's nn_compare push size");

// half: float16 inputs are float32 tensors of an fp16 context (the cpu
// compares those; it has no float16 comparisons of its own).
static bool compare_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, bool half,
                         compare_push *p)
{
    int op = compare_op_of(n->op);
    // Not is a logic op of one input: b is a again.
    int n_in = op == CMP_NOT ? 1 : 2;
    if (op < 0 || n->n_inputs != n_in || n->n_outputs < 1 || !in[0] || !in[n_in - 1] || !out[0])
        return false;
    reel_tensor *ab[2] = { in[0], in[n_in - 1] };
    const reel_tensor *a = ab[0], *b = ab[1], *o = out[0];
    if (op >= CMP_AND && a->dtype != REEL_DTYPE_BOOL)
        return false;
    int kind = kind_of(a->dtype);
    if (kind == EK_BOOL)
        kind = EK_U8;
    // The cpu compares no 16-bit types.
    bool sixteen = kind == EK_U16 || kind == EK_I16 || (kind == EK_F16 && !half);
    if (kind < 0 || sixteen || b->dtype != a->dtype || o->dtype != REEL_DTYPE_BOOL || !indexable(a) || !indexable(b) ||
        !indexable(o))
        return false;
    bcast_walk w;
    if (!bcast_walk_init(&w, o, ab, 2))
        return false;
    *p = (compare_push){ .n = (uint32_t)count_of(o), .rank = (uint32_t)w.rank, .op = (uint32_t)op,
                         .kind = (uint32_t)kind };
    walk_to_push(&w, p->shape, (int32_t *[]){ p->a_st, p->b_st });
    return true;
}

static bool compare_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    compare_push p;
    return compare_plan(n, in, out, false, &p);
}

static bool compare_supports_f16(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    compare_push p;
    stored_views sv;
    return stored_views_init(&sv, n, in, out, true) && compare_plan(n, sv.in, sv.out, true, &p);
}

static int compare_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    compare_push p;
    stored_views sv;
    if (!stored_views_of(&sv, ctx, n, in, out) || !compare_plan(n, sv.in, sv.out, ctx->f16, &p))
        return REEL_EINVAL;
    reel_mem *bufs[3] = { in[0]->mem, in[n->n_inputs - 1]->mem, out[0]->mem };
    return dispatch(ctx, n, "nn_compare", bufs, 3, &p, sizeof p, words_of(sv.out[0]));
}

static const vk_op op_equal = { .name = "Equal", .supports = compare_supports, .run = compare_run,
                                .supports_f16 = compare_supports_f16 };
static const vk_op op_greater = { .name = "Greater", .supports = compare_supports, .run = compare_run,
                                  .supports_f16 = compare_supports_f16 };
// In fp16 sessions these stay on the cpu: float16 rounding would make ties
// (and so answers) the float32 comparisons do not give.
static const vk_op op_less = { .name = "Less", .supports = compare_supports, .run = compare_run };
static const vk_op op_less_equal = { .name = "LessOrEqual", .supports = compare_supports, .run = compare_run };
static const vk_op op_greater_equal = { .name = "GreaterOrEqual", .supports = compare_supports, .run = compare_run };
// On bools only: no float32 tensor, so fp16 sessions never ask.
static const vk_op op_and = { .name = "And", .supports = compare_supports, .run = compare_run };
static const vk_op op_or = { .name = "Or", .supports = compare_supports, .run = compare_run };
static const vk_op op_xor = { .name = "Xor", .supports = compare_supports, .run = compare_run };
static const vk_op op_not = { .name = "Not", .supports = compare_supports, .run = compare_run };

// ---- Where --------------------------------------------------------------------

typedef struct where_push {
    uint32_t n, rank, esize, pad_;
    uint32_t shape[VK_RANK];
    int32_t c_st[VK_RANK], x_st[VK_RANK], y_st[VK_RANK];
} where_push;
_Static_assert(sizeof(where_push) == 112, "gpu/kernel.c's nn_where push size");

static bool where_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, where_push *p)
{
    if (n->n_inputs != 3 || n->n_outputs < 1 || !in[0] || !in[1] || !in[2] || !out[0])
        return false;
    const reel_tensor *o = out[0];
    if (in[0]->dtype != REEL_DTYPE_BOOL || in[1]->dtype != o->dtype || in[2]->dtype != o->dtype)
        return false;
    for (int k = 0; k < 3; k++)
        if (!indexable(in[k]))
            return false;
    bcast_walk w;
    if (!indexable(o) || !bcast_walk_init(&w, o, in, 3))
        return false;
    *p = (where_push){ .n = (uint32_t)count_of(o), .rank = (uint32_t)w.rank,
                       .esize = (uint32_t)reel_dtype_size(o->dtype) };
    walk_to_push(&w, p->shape, (int32_t *[]){ p->c_st, p->x_st, p->y_st });
    return true;
}

static bool where_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    where_push p;
    return where_plan(n, in, out, &p);
}

static bool where_supports_f16(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    where_push p;
    stored_views sv;
    return stored_views_init(&sv, n, in, out, true) && where_plan(n, sv.in, sv.out, &p);
}

static int where_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    where_push p;
    stored_views sv;
    if (!stored_views_of(&sv, ctx, n, in, out) || !where_plan(n, sv.in, sv.out, &p))
        return REEL_EINVAL;
    reel_mem *bufs[4] = { in[0]->mem, in[1]->mem, in[2]->mem, out[0]->mem };
    return dispatch(ctx, n, "nn_where", bufs, 4, &p, sizeof p, words_of(sv.out[0]));
}

static const vk_op op_where = { .name = "Where", .supports = where_supports, .run = where_run,
                                .supports_f16 = where_supports_f16 };

// ---- Cast ---------------------------------------------------------------------

typedef struct cast_push {
    uint32_t n, from, to, pad_;
} cast_push;
_Static_assert(sizeof(cast_push) == 16, "gpu/kernel.c's nn_cast push size");

static bool cast_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, cast_push *p)
{
    if (n->n_inputs < 1 || n->n_outputs < 1 || !in[0] || !out[0])
        return false;
    int from = kind_of(in[0]->dtype), to = kind_of(out[0]->dtype);
    if (from < 0 || to < 0 || !indexable(in[0]) || !indexable(out[0]) || count_of(in[0]) != count_of(out[0]))
        return false;
    *p = (cast_push){ .n = (uint32_t)count_of(out[0]), .from = (uint32_t)from, .to = (uint32_t)to };
    return true;
}

static bool cast_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    cast_push p;
    return cast_plan(n, in, out, &p);
}

// In an fp16 context a Cast between float32 and float16 copies the bits.
static bool cast_supports_f16(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    cast_push p;
    stored_views sv;
    return stored_views_init(&sv, n, in, out, true) && cast_plan(n, sv.in, sv.out, &p);
}

static int cast_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    cast_push p;
    stored_views sv;
    if (!stored_views_of(&sv, ctx, n, in, out) || !cast_plan(n, sv.in, sv.out, &p))
        return REEL_EINVAL;
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return dispatch(ctx, n, "nn_cast", bufs, 2, &p, sizeof p, words_of(sv.out[0]));
}

static const vk_op op_cast = { .name = "Cast", .supports = cast_supports, .run = cast_run,
                               .supports_f16 = cast_supports_f16 };

int vk_convert_f32_to_f16(vk_ctx *ctx, reel_mem *src, reel_mem *dst, int64_t count)
{
    if (count < 0 || count > INT32_MAX / 4)
        return REEL_EINVAL;
    cast_push p = { .n = (uint32_t)count, .from = EK_F32, .to = EK_F16 };
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, "nn_cast", &error);
    if (!k) {
        int code = error && error->domain == REEL_ERROR && error->code < 0 ? error->code : REEL_EUNSUPPORTED;
        g_warning("%s", error ? error->message : "nn_cast");
        g_clear_error(&error);
        return code;
    }
    reel_mem *bufs[2] = { src, dst };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &p, sizeof p, ((uint64_t)count + 1) / 2);
}

// ---- Gather -------------------------------------------------------------------

typedef struct gather_push {
    uint32_t words, bytes, chunk, by_word, dim, n_idx, idx64, pad_;
} gather_push;
_Static_assert(sizeof(gather_push) == 32, "gpu/kernel.c's nn_gather push size");

// An index value of a constant indices tensor.
static int64_t index_value(const reel_tensor *idx, int64_t i)
{
    return idx->dtype == REEL_DTYPE_INT64 ? ((const int64_t *)idx->data)[i] : ((const int32_t *)idx->data)[i];
}

// As the cpu's run_gather. Indices computed at run time that fall out of
// range (where the cpu fails the run) give zeros here.
static bool gather_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, gather_push *p)
{
    if (n->n_inputs != 2 || n->n_outputs < 1 || !in[0] || !in[1] || !out[0])
        return false;
    const reel_tensor *x = in[0], *idx = in[1], *o = out[0];
    if ((idx->dtype != REEL_DTYPE_INT64 && idx->dtype != REEL_DTYPE_INT32) || o->dtype != x->dtype ||
        !indexable(x) || !indexable(idx) || !indexable(o))
        return false;
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (axis < -x->rank || axis >= x->rank)
        return false;
    if (axis < 0)
        axis += x->rank;
    if (o->rank != x->rank - 1 + idx->rank)
        return false;
    int64_t want[R], inner = 1;
    int k = 0;
    for (int d = 0; d < x->rank; d++) {
        if (d == axis)
            for (int j = 0; j < idx->rank; j++)
                want[k++] = idx->shape[j];
        else
            want[k++] = x->shape[d];
        if (d > axis)
            inner *= x->shape[d];
    }
    if (memcmp(want, o->shape, sizeof(int64_t) * (size_t)o->rank) != 0)
        return false;
    int64_t dim = x->shape[axis], n_idx = count_of(idx);
    if (idx->data)
        for (int64_t i = 0; i < n_idx; i++)
            if (index_value(idx, i) < -dim || index_value(idx, i) >= dim)
                return false;
    int64_t chunk = inner * (int64_t)reel_dtype_size(x->dtype);
    *p = (gather_push){ .words = (uint32_t)words_of(o), .bytes = (uint32_t)(count_of(o) * reel_dtype_size(o->dtype)),
                        .chunk = (uint32_t)chunk, .by_word = chunk % 4 == 0, .dim = (uint32_t)dim,
                        .n_idx = (uint32_t)n_idx, .idx64 = idx->dtype == REEL_DTYPE_INT64 };
    return true;
}

static bool gather_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    gather_push p;
    return gather_plan(n, in, out, &p);
}

static bool gather_supports_f16(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    gather_push p;
    stored_views sv;
    return stored_views_init(&sv, n, in, out, true) && gather_plan(n, sv.in, sv.out, &p);
}

static int gather_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    gather_push p;
    stored_views sv;
    if (!stored_views_of(&sv, ctx, n, in, out) || !gather_plan(n, sv.in, sv.out, &p))
        return REEL_EINVAL;
    reel_mem *bufs[3] = { in[0]->mem, in[1]->mem, out[0]->mem };
    return dispatch(ctx, n, "nn_gather", bufs, 3, &p, sizeof p, p.words);
}

static const vk_op op_gather = { .name = "Gather", .supports = gather_supports, .run = gather_run,
                                 .supports_f16 = gather_supports_f16 };

// ---- Shape, Constant, ConstantOfShape: host-known values ----------------------

typedef struct fill_push {
    uint32_t n, first, period, pad_;
    uint32_t pattern[FILL_WORDS];
} fill_push;
_Static_assert(sizeof(fill_push) == 128, "gpu/kernel.c's nn_fill push size");

// The bytes a node writes: `pattern` (`len` bytes) once, or repeated over the
// whole output when `repeat` (ConstantOfShape's one element).
typedef struct host_value {
    const void *pattern;
    size_t len;
    bool repeat;
    int64_t shape[R]; // Shape's values live here
    float f;          // value_float
} host_value;

// The cpu's shape_range.
static void shape_range(const reel_ir_node *n, int rank, int64_t *start, int64_t *end)
{
    int64_t s = reel_ir_attr_int(n, "start", 0), e = reel_ir_attr_int(n, "end", rank);
    s = s < 0 ? s + rank : s;
    e = e < 0 ? e + rank : e;
    s = CLAMP(s, 0, rank);
    e = CLAMP(e, 0, rank);
    *start = s;
    *end = MAX(e, s);
}

static bool shape_value(const reel_ir_node *n, reel_tensor *const *in, const reel_tensor *o, host_value *v)
{
    if (n->n_inputs < 1 || !in[0] || in[0]->rank < 0 || o->dtype != REEL_DTYPE_INT64 || o->rank != 1)
        return false;
    int64_t s, e;
    shape_range(n, in[0]->rank, &s, &e);
    if (o->shape[0] != e - s)
        return false;
    *v = (host_value){ .pattern = v->shape, .len = sizeof(int64_t) * (size_t)(e - s) };
    memcpy(v->shape, in[0]->shape + s, v->len);
    return true;
}

// ConstantOfShape: the value attribute's one element (float32 0 without it).
static bool constant_of_shape_value(const reel_ir_node *n, const reel_tensor *o, host_value *v)
{
    static const uint64_t zero;
    const reel_ir_attr *a = reel_ir_attr_find(n, "value");
    size_t es = reel_dtype_size(o->dtype);
    *v = (host_value){ .pattern = &zero, .len = es, .repeat = true };
    if (!a)
        return o->dtype == REEL_DTYPE_FLOAT32;
    if (a->type != REEL_ATTR_TENSOR || !a->t || !a->t->data || a->t->dtype != o->dtype ||
        reel_tensor_count(a->t->rank, a->t->shape) != 1)
        return false;
    v->pattern = a->t->data;
    return true;
}

// Constant: the value the cpu's run_constant copies.
static bool constant_value(const reel_ir_node *n, const reel_tensor *o, host_value *v)
{
    const reel_ir_attr *a;
    *v = (host_value){ .len = (size_t)count_of(o) * reel_dtype_size(o->dtype) };
    if ((a = reel_ir_attr_find(n, "value")) && a->t) {
        v->pattern = a->t->data;
        return a->t->dtype == o->dtype && same_shape(a->t, o) && a->t->nbytes == v->len;
    }
    if ((a = reel_ir_attr_find(n, "value_float"))) {
        v->f = a->f;
        v->pattern = &v->f;
        return o->dtype == REEL_DTYPE_FLOAT32 && v->len == sizeof(float);
    }
    if ((a = reel_ir_attr_find(n, "value_int"))) {
        v->pattern = &a->i;
        return o->dtype == REEL_DTYPE_INT64 && v->len == sizeof(int64_t);
    }
    if ((a = reel_ir_attr_find(n, "value_floats"))) {
        v->pattern = a->floats;
        return o->dtype == REEL_DTYPE_FLOAT32 && v->len == sizeof(float) * (size_t)a->n;
    }
    if ((a = reel_ir_attr_find(n, "value_ints"))) {
        v->pattern = a->ints;
        return o->dtype == REEL_DTYPE_INT64 && v->len == sizeof(int64_t) * (size_t)a->n;
    }
    return false;
}

static bool host_value_of(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, host_value *v)
{
    if (n->n_outputs < 1 || !out[0] || !indexable(out[0]))
        return false;
    bool ok;
    if (strcmp(n->op, "Shape") == 0)
        ok = shape_value(n, in, out[0], v);
    else if (strcmp(n->op, "ConstantOfShape") == 0)
        ok = constant_of_shape_value(n, out[0], v);
    else
        ok = constant_value(n, out[0], v);
    // A one-off value is written FILL_WORDS words per dispatch.
    return ok && (v->len == 0 || v->pattern) &&
           (v->repeat || v->len <= (size_t)FILL_WORDS * 4 * FILL_DISPATCHES);
}

static bool fill_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    host_value v;
    return host_value_of(n, in, out, &v);
}

static int fill_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[1] = { n->n_inputs > 0 && in[0] ? (reel_tensor *)in[0]->t : NULL };
    host_value v;
    if (!host_value_of(n, tin, (reel_tensor *[]){ (reel_tensor *)out[0]->t }, &v))
        return REEL_EINVAL;
    // An fp16 context stores a float32 value as float16.
    g_autofree uint16_t *halves = NULL;
    if (ctx->f16 && out[0]->t->dtype == REEL_DTYPE_FLOAT32) {
        halves = g_new(uint16_t, v.len / sizeof(float) + 1);
        vk_f32_to_f16(v.pattern, halves, v.len / sizeof(float));
        v.pattern = halves;
        v.len /= 2;
    }
    uint32_t words = (uint32_t)((vk_stored_bytes(ctx->f16, out[0]->t) + 3) / 4);
    fill_push p = { .period = 1 };
    if (v.repeat) {
        // One element repeated: a word holds a whole number of them, or an
        // 8-byte one takes two.
        uint8_t *bytes = (uint8_t *)p.pattern;
        for (size_t b = 0; b < 8; b++)
            bytes[b] = ((const uint8_t *)v.pattern)[b % v.len];
        p.n = words;
        p.period = v.len == 8 ? 2 : 1;
        return dispatch(ctx, n, "nn_fill", &out[0]->mem, 1, &p, sizeof p, p.n);
    }
    int rc = 0;
    for (uint32_t first = 0; first < words && rc == 0; first += FILL_WORDS) {
        size_t at = (size_t)first * 4, len = MIN(v.len - at, sizeof p.pattern);
        memset(p.pattern, 0, sizeof p.pattern);
        memcpy(p.pattern, (const uint8_t *)v.pattern + at, len);
        p.first = first;
        p.n = p.period = (uint32_t)((len + 3) / 4);
        rc = dispatch(ctx, n, "nn_fill", &out[0]->mem, 1, &p, sizeof p, p.n);
    }
    return rc;
}

// The values are had on the host in any context; fill_run converts them.
static const vk_op op_shape = { .name = "Shape", .supports = fill_supports, .run = fill_run,
                                .supports_f16 = fill_supports };
static const vk_op op_constant = { .name = "Constant", .supports = fill_supports, .run = fill_run,
                                   .supports_f16 = fill_supports };
static const vk_op op_constant_of_shape = { .name = "ConstantOfShape", .supports = fill_supports, .run = fill_run,
                                            .supports_f16 = fill_supports };

const vk_op *const vk_ops_misc[] = {
    &op_equal, &op_greater, &op_less, &op_less_equal, &op_greater_equal, &op_and, &op_or, &op_xor, &op_not, &op_where, &op_cast, &op_gather, &op_shape, &op_constant, &op_constant_of_shape, NULL,
};

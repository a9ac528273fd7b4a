// Vulkan Resize, Upsample (nn_resize) and Pad (nn_pad), mirroring
// models/cpu/resize.c and models/cpu/shape.c's Pad. Resize runs here when
// only the last two dims change, in nearest or linear mode, with scales that
// are exact small rationals (2, 0.5, 1.5, sizes/in): then each source
// coordinate is an exact fraction the kernel evaluates in integers, and
// supports() checks its taps against the cpu's double arithmetic for every
// output index, so rounding ties fall the same way. Everything else
// (cubic, antialias, axes, tf_crop_and_resize, aspect-ratio policies, scales
// such as 1.7) stays on the cpu.
#include <math.h>
#include <string.h>

#include "models/vulkan/vk_ops.h"

#define R REEL_TENSOR_MAX_RANK
#define MAX_INTS 64      // as models/cpu/shape.c
#define MAX_DENOM 65536  // largest scale denominator tried

enum { NEAREST_ROUND_PREFER_FLOOR, NEAREST_ROUND_PREFER_CEIL, NEAREST_FLOOR, NEAREST_CEIL }; // nn_resize.comp
enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE };                                                 // nn_pad.comp

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

static bool is_f32(const reel_tensor *t)
{
    return t && t->dtype == REEL_DTYPE_FLOAT32 && t->rank >= 0 && t->rank <= R && count_of(t) >= 0 &&
           count_of(t) <= INT32_MAX;
}

static int kernel_error(GError *error)
{
    int code = error && error->domain == REEL_ERROR ? error->code : REEL_EUNSUPPORTED;
    g_clear_error(&error);
    return code;
}

static int index_of(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

// ---- Resize, Upsample ---------------------------------------------------------

enum { CTM_HALF_PIXEL, CTM_HALF_PIXEL_SYMMETRIC, CTM_PYTORCH_HALF_PIXEL, CTM_ALIGN_CORNERS, CTM_ASYMMETRIC,
       CTM_TF_HALF_PIXEL_FOR_NN };

typedef struct resize_push {
    uint32_t n, linear, nearest, pad_;
    uint32_t in[2], out[2];
    uint32_t a[2], b[2], d[2], k[2];
    uint32_t ident[2];
} resize_push;
_Static_assert(sizeof(resize_push) == 72, "gpu/kernel.c's nn_resize push size");

// The node's geometry as models/cpu/resize.c's rgeom_init computes it, for
// the forms supported here; false otherwise.
typedef struct rgeom {
    int rank, ctm, nearest;
    bool linear;
    int64_t in[R], out[R];
    double scale[R];
} rgeom;

static double as_double(const reel_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case REEL_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case REEL_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    default: return NAN;
    }
}

static bool resize_geom(const reel_ir_node *n, reel_tensor *const *in, rgeom *r)
{
    static const char *const ctms[] = { "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                        "align_corners", "asymmetric", "tf_half_pixel_for_nn" };
    static const char *const nearests[] = { "round_prefer_floor", "round_prefer_ceil", "floor", "ceil" };
    bool upsample = strcmp(n->op, "Upsample") == 0;
    // The opset as models/cpu/resize.c's run_geom tells it from the inputs.
    int opset = upsample ? (n->n_inputs > 1 ? 9 : 7) : (n->n_inputs == 2 ? 10 : 11);
    bool v11 = !upsample && opset >= 11;
    const reel_tensor *x = in[0];
    if (!is_f32(x) || x->rank < 1)
        return false;
    const char *mode = reel_ir_attr_string(n, "mode", "nearest");
    if (strcmp(mode, "nearest") == 0)
        r->linear = false;
    else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
        r->linear = true;
    else
        return false; // cubic
    r->ctm = v11 ? index_of(reel_ir_attr_string(n, "coordinate_transformation_mode", "half_pixel"), ctms,
                            G_N_ELEMENTS(ctms))
                 : CTM_ASYMMETRIC;
    r->nearest = v11 ? index_of(reel_ir_attr_string(n, "nearest_mode", "round_prefer_floor"), nearests,
                                G_N_ELEMENTS(nearests))
                     : NEAREST_FLOOR;
    if (r->ctm < 0 || r->nearest < 0 || reel_ir_attr_int(n, "antialias", 0) || reel_ir_attr_find(n, "axes"))
        return false;
    int rank = r->rank = x->rank;
    for (int d = 0; d < rank; d++) {
        r->in[d] = x->shape[d];
        r->scale[d] = 1;
    }
    // Scales: Upsample-7's attribute, else the scales input (count > 0).
    const reel_tensor *ts = NULL, *tz = NULL;
    const reel_ir_attr *as = NULL;
    if (upsample && opset < 9) {
        if (!(as = reel_ir_attr_find(n, "scales")) || as->type != REEL_ATTR_FLOATS)
            return false;
    } else {
        int is = upsample || opset < 11 ? 1 : 2;
        ts = is < n->n_inputs ? in[is] : NULL;
        tz = v11 && n->n_inputs > 3 ? in[3] : NULL;
    }
    int64_t ns = as ? as->n : ts ? count_of(ts) : 0, nz = tz ? count_of(tz) : 0;
    if (ns > 0) {
        if (ns != rank || (ts && !ts->data))
            return false;
        for (int d = 0; d < rank; d++) {
            double s = as ? as->floats[d] : as_double(ts, d);
            if (!(s > 0))
                return false;
            r->scale[d] = (float)s;
            r->out[d] = (int64_t)floor((double)r->in[d] * r->scale[d]);
        }
    } else if (nz > 0) {
        if (nz != rank || !tz->data || tz->dtype != REEL_DTYPE_INT64 ||
            strcmp(reel_ir_attr_string(n, "keep_aspect_ratio_policy", "stretch"), "stretch") != 0)
            return false;
        const int64_t *sz = tz->data;
        for (int d = 0; d < rank; d++) {
            if (sz[d] < 0)
                return false;
            r->out[d] = sz[d];
            r->scale[d] = r->in[d] > 0 ? (double)sz[d] / (double)r->in[d] : 1;
        }
    } else {
        return false;
    }
    return true;
}

static bool axis_identity(const rgeom *r, int a)
{
    return r->in[a] == r->out[a] && r->scale[a] == 1;
}

// models/cpu/resize.c's source_coord, for the transforms supported here.
static double cpu_coord(const rgeom *r, int a, int64_t o)
{
    double s = r->scale[a], in = (double)r->in[a], out = in * s;
    switch (r->ctm) {
    case CTM_HALF_PIXEL: return (o + 0.5) / s - 0.5;
    case CTM_HALF_PIXEL_SYMMETRIC: {
        double adj = (double)r->out[a] / (s * in), center = in / 2;
        return center * (1 - adj) + (o + 0.5) / s - 0.5;
    }
    case CTM_PYTORCH_HALF_PIXEL: return out > 1 ? (o + 0.5) / s - 0.5 : 0;
    case CTM_ALIGN_CORNERS: return out == 1 ? 0 : o * (in - 1) / (out - 1);
    case CTM_TF_HALF_PIXEL_FOR_NN: return (o + 0.5) / s;
    default: return o / s;
    }
}

static int64_t clampi(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

// s as p/q in lowest terms with q <= MAX_DENOM, exactly (as doubles).
static bool rational(double s, int64_t *p, int64_t *q)
{
    for (int64_t d = 1; d <= MAX_DENOM; d++) {
        double v = nearbyint(s * (double)d);
        if (v >= 1 && v <= INT32_MAX && v / (double)d == s) {
            *p = (int64_t)v;
            *q = d;
            return true;
        }
    }
    return false;
}

// Axis a's coordinate as (a*o + b) / d - k for nn_resize.comp, checked
// against the cpu's taps at every output index.
static bool axis_push(const rgeom *r, int a, resize_push *p, int slot)
{
    int64_t I = r->in[a], O = r->out[a];
    p->in[slot] = (uint32_t)I;
    p->out[slot] = (uint32_t)O;
    p->d[slot] = 1;
    if (axis_identity(r, a)) {
        p->ident[slot] = 1;
        return true;
    }
    if (O == 0)
        return true;
    if (I == 0)
        return false;
    int64_t sp, sq, A, B, D;
    if (!rational(r->scale[a], &sp, &sq))
        return false;
    double len = (double)I * r->scale[a];
    switch (r->ctm) {
    case CTM_HALF_PIXEL: A = 2 * sq, B = sq - sp, D = 2 * sp; break;
    case CTM_HALF_PIXEL_SYMMETRIC: A = 2 * sq, B = I * sp - O * sq + sq - sp, D = 2 * sp; break;
    case CTM_PYTORCH_HALF_PIXEL:
        if (len > 1)
            A = 2 * sq, B = sq - sp, D = 2 * sp;
        else
            A = 0, B = 0, D = 1;
        break;
    case CTM_ALIGN_CORNERS:
        if (len == 1)
            A = 0, B = 0, D = 1;
        else
            A = (I - 1) * sq, B = 0, D = I * sp - sq;
        break;
    case CTM_TF_HALF_PIXEL_FOR_NN: A = 2 * sq, B = sq, D = 2 * sp; break;
    default: A = sq, B = 0, D = sp; break;
    }
    if (D <= 0 || D > INT32_MAX)
        return false;
    int64_t K = B < 0 ? (-B + D - 1) / D : 0;
    B += K * D;
    if (A * (O - 1) + B > INT32_MAX)
        return false;
    for (int64_t o = 0; o < O; o++) {
        int64_t num = A * o + B, fl = num / D - K, rem = num % D;
        double x = cpu_coord(r, a, o), f = floor(x), t = x - f;
        if (r->linear) {
            if (clampi(fl, I) != clampi((int64_t)f, I) || clampi(fl + 1, I) != clampi((int64_t)f + 1, I) ||
                fabs((double)rem / (double)D - t) > 1e-6)
                return false;
            continue;
        }
        int64_t want, got = fl;
        if (r->nearest == NEAREST_FLOOR)
            want = (int64_t)f;
        else if (r->nearest == NEAREST_CEIL)
            want = (int64_t)ceil(x);
        else if (t == 0.5)
            want = (int64_t)f + (r->nearest == NEAREST_ROUND_PREFER_CEIL);
        else
            want = (int64_t)floor(x + 0.5);
        if (r->nearest == NEAREST_CEIL)
            got += rem != 0;
        else if (r->nearest == NEAREST_ROUND_PREFER_FLOOR)
            got += 2 * rem > D;
        else if (r->nearest == NEAREST_ROUND_PREFER_CEIL)
            got += 2 * rem >= D;
        if (clampi(want, I) != clampi(got, I))
            return false;
    }
    p->a[slot] = (uint32_t)A;
    p->b[slot] = (uint32_t)B;
    p->d[slot] = (uint32_t)D;
    p->k[slot] = (uint32_t)K;
    return true;
}

static bool resize_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, resize_push *p)
{
    rgeom r;
    if (n->n_inputs < 1 || n->n_outputs < 1 || !is_f32(out[0]) || !resize_geom(n, in, &r) ||
        out[0]->rank != r.rank)
        return false;
    for (int d = 0; d < r.rank; d++)
        if (out[0]->shape[d] != r.out[d] || (d < r.rank - 2 && !axis_identity(&r, d)))
            return false;
    *p = (resize_push){ .n = (uint32_t)count_of(out[0]), .linear = r.linear, .nearest = (uint32_t)r.nearest };
    if (r.rank == 1) {
        // One axis: H is a dim of 1 left alone.
        p->in[0] = p->out[0] = p->d[0] = p->ident[0] = 1;
        return axis_push(&r, 0, p, 1);
    }
    return axis_push(&r, r.rank - 2, p, 0) && axis_push(&r, r.rank - 1, p, 1);
}

static bool resize_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    resize_push p;
    return resize_plan(n, in, out, &p);
}

static int resize_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[4] = { NULL }, *tout[1] = { (reel_tensor *)out[0]->t };
    for (int i = 0; i < n->n_inputs && i < 4; i++)
        tin[i] = in[i] ? (reel_tensor *)in[i]->t : NULL;
    resize_push push;
    if (n->n_inputs > 4 || !resize_plan(n, tin, tout, &push))
        return REEL_EINVAL;
    if (push.n == 0)
        return 0;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_resize"), &error);
    if (!k)
        return kernel_error(error);
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &push, sizeof push, push.n);
}

static const vk_op op_resize = { .name = "Resize", .supports = resize_supports, .run = resize_run,
                                 .supports_f16 = resize_supports };
static const vk_op op_upsample = { .name = "Upsample", .supports = resize_supports, .run = resize_run,
                                   .supports_f16 = resize_supports };

// ---- Pad ----------------------------------------------------------------------

#define PAD_RANK 6 // nn_pad.comp's push constants hold 6 dims

typedef struct pad_push {
    uint32_t n, rank, mode;
    float value;
    uint32_t in[PAD_RANK], out[PAD_RANK];
    int32_t before[PAD_RANK];
} pad_push;
_Static_assert(sizeof(pad_push) == 88, "gpu/kernel.c's nn_pad push size");

// The node's pads, mode and value as models/cpu/shape.c's run_pad reads
// them (pads and value from constant inputs, or attributes).
static bool pad_plan(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, pad_push *p)
{
    static const char *const modes[] = { "constant", "reflect", "edge" };
    if (n->n_inputs < 1 || n->n_outputs < 1 || !is_f32(in[0]) || !is_f32(out[0]) || (n->n_inputs > 3 && in[3]))
        return false;
    const reel_tensor *x = in[0], *o = out[0];
    int r = x->rank, mode = index_of(reel_ir_attr_string(n, "mode", "constant"), modes, G_N_ELEMENTS(modes));
    int64_t pads[MAX_INTS];
    int c = -1;
    if (n->n_inputs > 1 && in[1]) {
        if (!in[1]->data)
            return false;
        c = reel_tensor_ints(in[1], pads, MAX_INTS);
    } else {
        const int64_t *a = reel_ir_attr_ints(n, "pads", &c);
        if (!a || c > MAX_INTS)
            return false;
        memcpy(pads, a, sizeof(int64_t) * c);
    }
    if (mode < 0 || c != 2 * r || r > PAD_RANK || o->rank != r)
        return false;
    *p = (pad_push){ .n = (uint32_t)count_of(o), .rank = (uint32_t)(r ? r : 1), .mode = (uint32_t)mode };
    if (n->n_inputs > 2 && in[2] && count_of(in[2]) == 1) {
        if (!in[2]->data || in[2]->dtype != REEL_DTYPE_FLOAT32)
            return false;
        p->value = *(const float *)in[2]->data;
    } else {
        p->value = reel_ir_attr_float(n, "value", 0.0f);
    }
    p->in[0] = p->out[0] = 1; // rank 0: one element, as rank 1
    for (int d = 0; d < r; d++) {
        int64_t v = x->shape[d], b = pads[d], e = pads[d + r];
        if (o->shape[d] != v + b + e || b < INT32_MIN || b > INT32_MAX)
            return false;
        // Where the output reaches outside the input, reflect needs 2
        // elements and edge 1 (the cpu's infer checks; run trusts it).
        bool outside = o->shape[d] > 0 && (b > 0 || e > 0);
        if (outside && ((mode == PAD_REFLECT && v < 2) || (mode == PAD_EDGE && v < 1)))
            return false;
        p->in[d] = (uint32_t)v;
        p->out[d] = (uint32_t)o->shape[d];
        p->before[d] = (int32_t)b;
    }
    return true;
}

static bool pad_supports(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    pad_push p;
    return pad_plan(n, in, out, &p);
}

static int pad_run(vk_ctx *ctx, const reel_ir_node *n, vk_tensor *const *in, vk_tensor *const *out)
{
    reel_tensor *tin[4] = { NULL }, *tout[1] = { (reel_tensor *)out[0]->t };
    for (int i = 0; i < n->n_inputs && i < 4; i++)
        tin[i] = in[i] ? (reel_tensor *)in[i]->t : NULL;
    pad_push push;
    if (n->n_inputs > 4 || !pad_plan(n, tin, tout, &push))
        return REEL_EINVAL;
    if (push.n == 0)
        return 0;
    GError *error = NULL;
    reel_kernel *k = vk_ctx_kernel(ctx, vk_ctx_float_kernel(ctx, "nn_pad"), &error);
    if (!k)
        return kernel_error(error);
    reel_mem *bufs[2] = { in[0]->mem, out[0]->mem };
    return vk_ctx_dispatch(ctx, k, bufs, 2, &push, sizeof push, push.n);
}

static const vk_op op_pad = { .name = "Pad", .supports = pad_supports, .run = pad_run, .supports_f16 = pad_supports };

const vk_op *const vk_ops_resize[] = { &op_resize, &op_upsample, &op_pad, NULL };

// ONNX Runtime's QOperator contrib ops (domain com.microsoft) on 8-bit
// tensors: QLinearAdd, QLinearMul, QLinearAveragePool,
// QLinearGlobalAveragePool, QLinearConcat, QLinearSigmoid,
// QLinearLeakyRelu and QGemm. uint8 or int8, per-tensor float32 scales and zero points
// (an omitted zero point is 0). Each computes in float what dequantizing,
// the float op and quantizing again would, rounding half to even and
// saturating, as ORT's kernels do.
#include "models/cpu/nn.h"

#define TARGETS __attribute__((target_clones("avx512f", "avx2", "default")))

static bool is_q8(reel_dtype dt)
{
    return dt == REEL_DTYPE_UINT8 || dt == REEL_DTYPE_INT8;
}

static int64_t count_of(const reel_tensor *t)
{
    return reel_tensor_count(t->rank, t->shape);
}

// ---- Parameters: one scale and zero point per tensor

typedef struct qparam {
    float scale;
    float zp;
} qparam;

// The scale at in[si] and zero point at in[zi] (omitted: 0).
static int qparam_of(const reel_ir_node *n, reel_tensor *const *in, int si, int zi, qparam *p)
{
    const reel_tensor *s = si < n->n_inputs ? in[si] : NULL, *z = zi < n->n_inputs ? in[zi] : NULL;
    if (!s || count_of(s) != 1 || (z && count_of(z) != 1))
        return REEL_EINVAL;
    p->scale = *(const float *)s->data;
    p->zp = !z ? 0.0f : z->dtype == REEL_DTYPE_UINT8 ? *(const uint8_t *)z->data : *(const int8_t *)z->data;
    return 0;
}

// Checks the scale (input si: float32, one value) and zero point (zi,
// optional unless zp_required: of type dt, one value).
static int check_param(reel_ir_graph *g, reel_ir_node *n, int si, int zi, reel_dtype dt, bool zp_required,
                       GError **error)
{
    reel_ir_value *s = reel_op_input(g, n, si), *z = reel_op_input(g, n, zi);
    if (!s)
        NN_FAIL(error, REEL_EINVAL, n, "needs a scale as input %d", si);
    if (s->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %d: only float32 scales are supported", si);
    if (s->rank >= 0 && reel_tensor_count(s->rank, s->dims) > 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %d: only per-tensor scales (one value) are supported", si);
    if (!z && zp_required)
        NN_FAIL(error, REEL_EINVAL, n, "needs a zero point as input %d", zi);
    if (z && z->dtype != dt)
        NN_FAIL(error, REEL_EINVAL, n, "input %d: the zero point's type differs from its tensor's", zi);
    if (z && z->rank >= 0 && reel_tensor_count(z->rank, z->dims) > 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %d: only per-tensor zero points (one value) are supported", zi);
    return 0;
}

static int check_q8(reel_ir_node *n, const reel_ir_value *x, const char *what, GError **error)
{
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input %s", what);
    if (!is_q8(x->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %s: only uint8 and int8 tensors are supported", what);
    return 0;
}

// The layout of the one-input ops: X, x_scale, x_zero_point, y_scale,
// y_zero_point, the output of X's type.
static int check_x_y_params(reel_ir_graph *g, reel_ir_node *n, const reel_ir_value *x, GError **error)
{
    int r = check_q8(n, x, "X", error);
    if (!r)
        r = check_param(g, n, 1, 2, x->dtype, false, error);
    if (!r)
        r = check_param(g, n, 3, 4, x->dtype, false, error);
    return r;
}

static inline float sat(float v, float lo, float hi)
{
    v = v >= lo ? v : lo;
    return v <= hi ? v : hi;
}

static void qrange(reel_dtype dt, float *lo, float *hi)
{
    *lo = dt == REEL_DTYPE_INT8 ? -128.0f : 0.0f;
    *hi = dt == REEL_DTYPE_INT8 ? 127.0f : 255.0f;
}

// Element i of an 8-bit tensor's data as float.
static inline float q8_at(const void *d, bool s8, int64_t i)
{
    return s8 ? (float)((const int8_t *)d)[i] : (float)((const uint8_t *)d)[i];
}

// A table of 256 outputs, indexed by the input's byte, for unary maps.
static void table_apply(const uint8_t table[256], const void *x, void *y, int64_t len)
{
    const uint8_t *restrict s = x;
    uint8_t *restrict d = y;
    for (int64_t i = 0; i < len; i++)
        d[i] = table[s[i]];
}

// y = sat(rint((x - zx) * sx / sy) + zy): an input of QLinearConcat
// requantized to the output's parameters, in the float operations of the
// table the unary ops use, so the two agree; this form vectorizes.
typedef struct requant8 {
    float zx, sx, sy, zy, lo, hi;
} requant8;

#define REQUANT_ROW(name, T)                                                                                     \
    TARGETS static void name(const requant8 *q, const T *restrict x, T *restrict y, int64_t n)                     \
    {                                                                                                              \
        float zx = q->zx, sx = q->sx, sy = q->sy, zy = q->zy, lo = q->lo, hi = q->hi;                              \
        for (int64_t i = 0; i < n; i++)                                                                            \
            y[i] = (T)sat(rintf((((float)x[i] - zx) * sx) / sy) + zy, lo, hi);                                     \
    }
REQUANT_ROW(requant_row_u8, uint8_t)
REQUANT_ROW(requant_row_s8, int8_t)

// Rows of row_len bytes (x and y rows x_stride and y_stride apart) through
// a table (table_apply) or a requantization (rq: s8 says the type), the
// rows split over the workers.
typedef struct map_job {
    const uint8_t *table, *X;
    const requant8 *rq;
    bool s8;
    uint8_t *Y;
    int64_t rows, row_len, x_stride, y_stride, rows_per_task;
} map_job;

static void map_row(const map_job *j, const uint8_t *x, uint8_t *y, int64_t len)
{
    if (j->table)
        table_apply(j->table, x, y, len);
    else if (j->s8)
        requant_row_s8(j->rq, (const int8_t *)x, (int8_t *)y, len);
    else
        requant_row_u8(j->rq, x, y, len);
}

static void map_task(void *arg, int task, int worker)
{
    (void)worker;
    const map_job *j = arg;
    int64_t r0 = task * j->rows_per_task, r1 = MIN(j->rows, r0 + j->rows_per_task);
    for (int64_t r = r0; r < r1; r++)
        map_row(j, j->X + r * j->x_stride, j->Y + r * j->y_stride, j->row_len);
}

static void map_rows(const reel_exec_ctx *ctx, map_job j)
{
    if (j.rows <= 0)
        return;
    if (j.rows == 1 && j.row_len > 65536) {
        // One long row: rows of 16K, and what is left.
        int64_t full = j.row_len / 16384, done = full * 16384;
        map_row(&j, j.X + done, j.Y + done, j.row_len - done);
        j.rows = full;
        j.row_len = j.x_stride = j.y_stride = 16384;
    }
    int threads = ctx->workers ? ctx->threads : 1;
    j.rows_per_task = MIN(j.rows, MAX(MAX(1, j.rows / (4 * threads)), 16384 / MAX(1, j.row_len)));
    nn_parallel(ctx, (int)((j.rows + j.rows_per_task - 1) / j.rows_per_task), map_task, &j);
}

// ---- QLinearAdd, QLinearMul: A, A_scale, A_zero_point, B, B_scale,
// B_zero_point, C_scale, C_zero_point (zero points optional), broadcast.

static int binary_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *a = reel_op_input(g, n, 0), *b = reel_op_input(g, n, 3);
    int r = check_q8(n, a, "A", error);
    if (!r)
        r = check_q8(n, b, "B", error);
    if (r)
        return r;
    if (a->dtype != b->dtype)
        NN_FAIL(error, REEL_EINVAL, n, "A and B have different types");
    if ((r = check_param(g, n, 1, 2, a->dtype, false, error)) || (r = check_param(g, n, 4, 5, a->dtype, false, error))
        || (r = check_param(g, n, 6, 7, a->dtype, false, error)))
        return r;
    reel_ir_value *y = reel_op_output(g, n, 0);
    if (a->rank < 0 || b->rank < 0) {
        nn_set(y, a->dtype, -1, NULL);
        return 0;
    }
    int rank = MAX(a->rank, b->rank);
    int64_t od[REEL_TENSOR_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        int ia = i - (rank - a->rank), ib = i - (rank - b->rank);
        int64_t x = ia >= 0 ? a->dims[ia] : 1, z = ib >= 0 ? b->dims[ib] : 1;
        if (x >= 0 && z >= 0 && x != z && x != 1 && z != 1)
            NN_FAIL(error, REEL_EINVAL, n, "dims %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " do not broadcast", x,
                    z);
        od[i] = x == 1 ? z : z == 1 ? x : (x < 0 ? z : x);
    }
    nn_set(y, a->dtype, rank, od);
    return 0;
}

typedef struct qbin {
    bool mul, s8;
    float ra, rb, za, zb, zc, lo, hi; // Add: ra = sa/sc, rb = sb/sc; Mul: ra = sa*sb/sc
} qbin;

// n outputs from a (stride sa: 0 or 1) and b (sb); a loop per stride
// pattern so that each vectorizes.
#define QBIN_LOOP(T, EA, EB)                                                                                   \
    do {                                                                                                       \
        if (q->mul)                                                                                            \
            for (int64_t i = 0; i < n; i++)                                                                    \
                y[i] = (T)sat(rintf(((float)(EA) - za) * ((float)(EB) - zb) * ra) + zc, lo, hi);               \
        else                                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                                    \
                y[i] = (T)sat(rintf(ra * ((float)(EA) - za) + rb * ((float)(EB) - zb)) + zc, lo, hi);          \
    } while (0)
#define QBIN_ROW(name, T)                                                                                        \
    TARGETS static void name(const qbin *q, const T *restrict a, int64_t sa, const T *restrict b, int64_t sb,     \
                             T *restrict y, int64_t n)                                                             \
    {                                                                                                              \
        float ra = q->ra, rb = q->rb, za = q->za, zb = q->zb, zc = q->zc, lo = q->lo, hi = q->hi;                  \
        if (sa && sb)                                                                                              \
            QBIN_LOOP(T, a[i], b[i]);                                                                              \
        else if (sa)                                                                                               \
            QBIN_LOOP(T, a[i], b[0]);                                                                              \
        else if (sb)                                                                                               \
            QBIN_LOOP(T, a[0], b[i]);                                                                              \
        else                                                                                                       \
            QBIN_LOOP(T, a[0], b[0]);                                                                              \
    }
QBIN_ROW(qbin_row_u8, uint8_t)
QBIN_ROW(qbin_row_s8, int8_t)

typedef struct qbin_job {
    const qbin *q;
    const uint8_t *A, *B;
    uint8_t *Y;
    int rank;                               // of the output (at least 1)
    int64_t dims[REEL_TENSOR_MAX_RANK];
    int64_t sta[REEL_TENSOR_MAX_RANK], stb[REEL_TENSOR_MAX_RANK]; // element strides, 0 where broadcast
    int64_t rows, row_len, rows_per_task;
} qbin_job;

static void qbin_task(void *arg, int task, int worker)
{
    (void)worker;
    const qbin_job *j = arg;
    int64_t r0 = task * j->rows_per_task, r1 = MIN(j->rows, r0 + j->rows_per_task), last = j->rank - 1;
    for (int64_t r = r0; r < r1; r++) {
        int64_t oa = 0, ob = 0, rest = r;
        for (int d = last - 1; d >= 0; d--) {
            int64_t i = rest % j->dims[d];
            rest /= j->dims[d];
            oa += i * j->sta[d];
            ob += i * j->stb[d];
        }
        int64_t yo = r * j->row_len;
        if (j->q->s8)
            qbin_row_s8(j->q, (const int8_t *)j->A + oa, j->sta[last], (const int8_t *)j->B + ob, j->stb[last],
                        (int8_t *)j->Y + yo, j->row_len);
        else
            qbin_row_u8(j->q, j->A + oa, j->sta[last], j->B + ob, j->stb[last], j->Y + yo, j->row_len);
    }
}

// Strides of t (aligned to the right of rank dims), 0 where t has 1.
static void bstrides(const reel_tensor *t, int rank, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        int k = d - (rank - t->rank);
        int64_t dim = k >= 0 ? t->shape[k] : 1;
        st[d] = dim == 1 ? 0 : s;
        s *= dim;
    }
}

static int binary_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    qparam pa, pb, pc;
    if (qparam_of(n, in, 1, 2, &pa) || qparam_of(n, in, 4, 5, &pb) || qparam_of(n, in, 6, 7, &pc))
        return REEL_EINVAL;
    const reel_tensor *y = out[0];
    qbin q = { .mul = strstr(n->op, "QLinearMul") != NULL, .s8 = y->dtype == REEL_DTYPE_INT8, .za = pa.zp,
               .zb = pb.zp, .zc = pc.zp };
    qrange(y->dtype, &q.lo, &q.hi);
    q.ra = q.mul ? pa.scale * pb.scale / pc.scale : pa.scale / pc.scale;
    q.rb = pb.scale / pc.scale;
    int64_t total = count_of(y);
    if (total == 0)
        return 0;
    qbin_job j = { .q = &q, .A = in[0]->data, .B = in[3]->data, .Y = y->data, .rank = MAX(1, y->rank) };
    for (int d = 0; d < j.rank; d++)
        j.dims[d] = y->rank ? y->shape[d] : 1;
    bstrides(in[0], j.rank, j.sta);
    bstrides(in[3], j.rank, j.stb);
    // Equal shapes, or one side a single value: one flat row split in chunks.
    bool flat_a = count_of(in[0]) == total || count_of(in[0]) == 1;
    bool flat_b = count_of(in[3]) == total || count_of(in[3]) == 1;
    if (flat_a && flat_b) {
        j.rank = 1;
        j.dims[0] = total;
        j.sta[0] = count_of(in[0]) == 1 ? 0 : 1;
        j.stb[0] = count_of(in[3]) == 1 ? 0 : 1;
    }
    j.row_len = j.dims[j.rank - 1];
    j.rows = total / j.row_len;
    if (j.rank == 1) {
        // One long row: rows of 4096 elements with the same strides.
        int64_t chunk = 4096;
        j.rank = 2;
        j.rows = total / chunk;
        j.dims[0] = j.rows, j.dims[1] = j.row_len = chunk;
        j.sta[1] = j.sta[0], j.stb[1] = j.stb[0];
        j.sta[0] *= chunk, j.stb[0] *= chunk;
        int64_t done = j.rows * chunk;
        if (done < total) {
            if (q.s8)
                qbin_row_s8(&q, (const int8_t *)j.A + done * j.sta[1], j.sta[1], (const int8_t *)j.B + done * j.stb[1],
                            j.stb[1], (int8_t *)j.Y + done, total - done);
            else
                qbin_row_u8(&q, j.A + done * j.sta[1], j.sta[1], j.B + done * j.stb[1], j.stb[1], j.Y + done,
                            total - done);
        }
        if (j.rows == 0)
            return 0;
    }
    int threads = ctx->workers ? ctx->threads : 1;
    j.rows_per_task = MAX(MAX(1, j.rows / (4 * threads)), 16384 / MAX(1, j.row_len));
    j.rows_per_task = MIN(j.rows_per_task, j.rows);
    nn_parallel(ctx, (int)((j.rows + j.rows_per_task - 1) / j.rows_per_task), qbin_task, &j);
    return 0;
}

static const reel_op op_qlinear_add = { "com.microsoft:QLinearAdd", binary_infer, NULL, binary_run };
static const reel_op op_qlinear_mul = { "com.microsoft:QLinearMul", binary_infer, NULL, binary_run };

// ---- QLinearSigmoid, QLinearLeakyRelu: X, X_scale, X_zero_point, Y_scale,
// Y_zero_point; a table of the 256 inputs' outputs.

static int unary_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    int r = check_x_y_params(g, n, x, error);
    if (r)
        return r;
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank, x->dims);
    return 0;
}

static int unary_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    qparam px, py;
    if (qparam_of(n, in, 1, 2, &px) || qparam_of(n, in, 3, 4, &py))
        return REEL_EINVAL;
    bool s8 = in[0]->dtype == REEL_DTYPE_INT8, sigmoid = strstr(n->op, "QLinearSigmoid") != NULL;
    float alpha = reel_ir_attr_float(n, "alpha", 0.01f), lo, hi;
    qrange(in[0]->dtype, &lo, &hi);
    uint8_t table[256];
    for (int b = 0; b < 256; b++) {
        float v = ((s8 ? (float)(int8_t)b : (float)b) - px.zp) * px.scale;
        v = sigmoid ? 1.0f / (1.0f + expf(-v)) : v >= 0 ? v : v * alpha;
        float q = sat(rintf(v / py.scale) + py.zp, lo, hi);
        table[b] = s8 ? (uint8_t)(int8_t)q : (uint8_t)q;
    }
    map_rows(ctx, (map_job){ .table = table, .X = in[0]->data, .Y = out[0]->data, .rows = 1,
                             .row_len = count_of(in[0]) });
    return 0;
}

static const reel_op op_qlinear_sigmoid = { "com.microsoft:QLinearSigmoid", unary_infer, NULL, unary_run };
static const reel_op op_qlinear_leaky_relu = { "com.microsoft:QLinearLeakyRelu", unary_infer, NULL, unary_run };

// ---- QLinearGlobalAveragePool: X, x_scale, x_zero_point, y_scale,
// y_zero_point; channels_last 0 (NCHW...) or 1 (NHWC...).

static int gap_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    int r = check_x_y_params(g, n, x, error);
    if (r)
        return r;
    int64_t cl = reel_ir_attr_int(n, "channels_last", 0);
    if (cl != 0 && cl != 1)
        NN_FAIL(error, REEL_EINVAL, n, "channels_last must be 0 or 1");
    if (x->rank >= 0 && x->rank < 3)
        NN_FAIL(error, REEL_EINVAL, n, "input rank must be at least 3 (has %d)", x->rank);
    reel_ir_value *y = reel_op_output(g, n, 0);
    nn_set(y, x->dtype, x->rank, x->dims);
    for (int i = 1; i < x->rank; i++)
        if (cl ? i < x->rank - 1 : i > 1)
            y->dims[i] = 1;
    return 0;
}

typedef struct gap_job {
    const void *X;
    void *Y;
    bool s8, channels_last;
    int64_t C, P, per_task, items; // items: images (channels_last) or planes
    float mult, zx, zy, lo, hi;    // mult = x_scale / (y_scale * P)
} gap_job;

TARGETS static int32_t sum_u8(const uint8_t *x, int64_t n)
{
    int32_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

TARGETS static int32_t sum_s8(const int8_t *x, int64_t n)
{
    int32_t s = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

static void gap_task(void *arg, int task, int worker)
{
    (void)worker;
    const gap_job *j = arg;
    int64_t i0 = task * j->per_task, i1 = MIN(j->items, i0 + j->per_task);
    for (int64_t it = i0; it < i1; it++) {
        if (!j->channels_last) {
            int64_t off = it * j->P;
            int32_t s = j->s8 ? sum_s8((const int8_t *)j->X + off, j->P) : sum_u8((const uint8_t *)j->X + off, j->P);
            float v = sat(rintf(((float)s - j->zx * (float)j->P) * j->mult) + j->zy, j->lo, j->hi);
            if (j->s8)
                ((int8_t *)j->Y)[it] = (int8_t)v;
            else
                ((uint8_t *)j->Y)[it] = (uint8_t)v;
            continue;
        }
        // One image [P, C]: sums per channel, the rows added in turn.
        int32_t *acc = g_new0(int32_t, j->C);
        for (int64_t p = 0; p < j->P; p++) {
            int64_t off = (it * j->P + p) * j->C;
            for (int64_t c = 0; c < j->C; c++)
                acc[c] += (int32_t)q8_at(j->X, j->s8, off + c);
        }
        for (int64_t c = 0; c < j->C; c++) {
            float v = sat(rintf(((float)acc[c] - j->zx * (float)j->P) * j->mult) + j->zy, j->lo, j->hi);
            if (j->s8)
                ((int8_t *)j->Y)[it * j->C + c] = (int8_t)v;
            else
                ((uint8_t *)j->Y)[it * j->C + c] = (uint8_t)v;
        }
        g_free(acc);
    }
}

static int gap_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    qparam px, py;
    const reel_tensor *x = in[0];
    if (qparam_of(n, in, 1, 2, &px) || qparam_of(n, in, 3, 4, &py) || x->rank < 3)
        return REEL_EINVAL;
    gap_job j = { .X = x->data, .Y = out[0]->data, .s8 = x->dtype == REEL_DTYPE_INT8,
                  .channels_last = reel_ir_attr_int(n, "channels_last", 0) == 1, .zx = px.zp, .zy = py.zp };
    qrange(x->dtype, &j.lo, &j.hi);
    j.C = j.channels_last ? x->shape[x->rank - 1] : x->shape[1];
    j.P = count_of(x) / MAX(1, x->shape[0] * j.C);
    j.items = j.channels_last ? x->shape[0] : x->shape[0] * j.C;
    if (count_of(out[0]) == 0)
        return 0;
    // Integer sums of a plane stay exact while P * 255 < 2^31.
    if (j.P > (INT32_MAX / 256))
        return REEL_EINVAL;
    j.mult = px.scale / (py.scale * (float)MAX(1, j.P));
    if (j.P == 0) {
        memset(out[0]->data, 0, (size_t)count_of(out[0]));
        return 0;
    }
    int threads = ctx->workers ? ctx->threads : 1;
    j.per_task = MAX(MAX(1, j.items / (4 * threads)), 16384 / MAX(1, j.P * (j.channels_last ? j.C : 1)));
    j.per_task = MIN(j.per_task, j.items);
    nn_parallel(ctx, (int)((j.items + j.per_task - 1) / j.per_task), gap_task, &j);
    return 0;
}

static const reel_op op_qlinear_gap = { "com.microsoft:QLinearGlobalAveragePool", gap_infer, NULL, gap_run };

// ---- QLinearAveragePool: X, x_scale, x_zero_point, y_scale, y_zero_point;
// AveragePool's attributes, and channels_last (X is N, spatial..., C).

// The dims of x in N, C, spatial... order.
static void ap_nchw(bool cl, int rank, const int64_t *x, int64_t *d)
{
    d[0] = x[0];
    d[1] = cl ? x[rank - 1] : x[1];
    for (int i = 2; i < rank; i++)
        d[i] = cl ? x[i - 1] : x[i];
}

static int ap_window(const reel_ir_node *n, int rank, const int64_t *x, nn_window *w, GError **error)
{
    if (rank < 3 || rank > 5)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input rank %d (3 to 5 supported)", rank);
    int64_t d[5];
    ap_nchw(reel_ir_attr_int(n, "channels_last", 0) != 0, rank, x, d);
    return nn_window_init(n, rank - 2, d + 2, NULL, true, w, error);
}

static int ap_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    int r = check_x_y_params(g, n, x, error);
    if (r)
        return r;
    int64_t cl = reel_ir_attr_int(n, "channels_last", 0);
    if (cl != 0 && cl != 1)
        NN_FAIL(error, REEL_EINVAL, n, "channels_last must be 0 or 1");
    if (x->rank < 0) {
        nn_set(reel_op_output(g, n, 0), x->dtype, -1, NULL);
        return 0;
    }
    nn_window w;
    if ((r = ap_window(n, x->rank, x->dims, &w, error)))
        return r;
    int64_t od[5];
    od[0] = x->dims[0];
    od[cl ? x->rank - 1 : 1] = cl ? x->dims[x->rank - 1] : x->dims[1];
    for (int i = 0; i < w.sp; i++)
        od[(cl ? 1 : 2) + i] = w.out[3 - w.sp + i];
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank, od);
    return 0;
}

typedef struct ap_job {
    const nn_window *w;
    const void *X;
    void *Y;
    bool s8, include_pad, cl;
    int64_t C, planes, per_task;
    float mult, zx, zy, lo, hi; // mult = x_scale / y_scale
} ap_job;

static void ap_task(void *arg, int task, int worker)
{
    (void)worker;
    const ap_job *j = arg;
    const nn_window *w = j->w;
    int64_t D = w->in[0], H = w->in[1], W = w->in[2], Pin = D * H * W, P = w->out[0] * w->out[1] * w->out[2];
    int64_t p0 = task * j->per_task, p1 = MIN(j->planes, p0 + j->per_task);
    for (int64_t p = p0; p < p1; p++) {
        // Plane p (image, channel): its first element and the step between pixels.
        int64_t img = p / j->C, ch = p % j->C, st = j->cl ? j->C : 1;
        int64_t xbase = j->cl ? img * Pin * j->C + ch : p * Pin, ybase = j->cl ? img * P * j->C + ch : p * P;
        for (int64_t od = 0; od < w->out[0]; od++)
            for (int64_t oh = 0; oh < w->out[1]; oh++)
                for (int64_t ow = 0; ow < w->out[2]; ow++) {
                    int64_t s0[3] = { od * w->s[0] - w->pb[0], oh * w->s[1] - w->pb[1], ow * w->s[2] - w->pb[2] };
                    int64_t count = 0, padded = 1;
                    int32_t acc = 0;
                    if (j->include_pad)
                        for (int i = 0; i < 3; i++) {
                            int64_t lim = w->in[i] + w->pe[i], c = 0;
                            for (int64_t k = 0; k < w->k[i]; k++)
                                c += s0[i] + k * w->d[i] < lim;
                            padded *= c;
                        }
                    for (int64_t a = 0; a < w->k[0]; a++) {
                        int64_t id = s0[0] + a * w->d[0];
                        if (id < 0 || id >= D)
                            continue;
                        for (int64_t b = 0; b < w->k[1]; b++) {
                            int64_t ih = s0[1] + b * w->d[1];
                            if (ih < 0 || ih >= H)
                                continue;
                            for (int64_t e = 0; e < w->k[2]; e++) {
                                int64_t iw = s0[2] + e * w->d[2];
                                if (iw < 0 || iw >= W)
                                    continue;
                                acc += (int32_t)q8_at(j->X, j->s8, xbase + ((id * H + ih) * W + iw) * st);
                                count++;
                            }
                        }
                    }
                    // Padding taps hold the zero point (a real 0).
                    int64_t div = j->include_pad ? padded : count;
                    float sum = (float)acc - j->zx * (float)count;
                    float v = div ? sat(rintf(sum * j->mult / (float)div) + j->zy, j->lo, j->hi) : j->zy;
                    int64_t o = ybase + ((od * w->out[1] + oh) * w->out[2] + ow) * st;
                    if (j->s8)
                        ((int8_t *)j->Y)[o] = (int8_t)v;
                    else
                        ((uint8_t *)j->Y)[o] = (uint8_t)v;
                }
    }
}

static int ap_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    qparam px, py;
    nn_window w;
    const reel_tensor *x = in[0];
    if (qparam_of(n, in, 1, 2, &px) || qparam_of(n, in, 3, 4, &py) || ap_window(n, x->rank, x->shape, &w, NULL))
        return REEL_EINVAL;
    bool cl = reel_ir_attr_int(n, "channels_last", 0) != 0;
    int64_t C = cl ? x->shape[x->rank - 1] : x->shape[1];
    ap_job j = { .w = &w, .X = x->data, .Y = out[0]->data, .s8 = x->dtype == REEL_DTYPE_INT8,
                 .include_pad = reel_ir_attr_int(n, "count_include_pad", 0) != 0, .cl = cl, .C = MAX(1, C),
                 .planes = x->shape[0] * C, .mult = px.scale / py.scale, .zx = px.zp, .zy = py.zp };
    qrange(x->dtype, &j.lo, &j.hi);
    if (count_of(out[0]) == 0)
        return 0;
    int threads = ctx->workers ? ctx->threads : 1;
    j.per_task = MAX(1, j.planes / (4 * threads));
    nn_parallel(ctx, (int)((j.planes + j.per_task - 1) / j.per_task), ap_task, &j);
    return 0;
}

static const reel_op op_qlinear_ap = { "com.microsoft:QLinearAveragePool", ap_infer, NULL, ap_run };

// ---- QLinearConcat: Y_scale, Y_zero_point, then (X, X_scale,
// X_zero_point) for each input; attribute axis. An input with Y's scale
// and zero point is copied, others are requantized.

static int concat_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    if (n->n_inputs < 5 || (n->n_inputs - 2) % 3)
        NN_FAIL(error, REEL_EINVAL, n, "needs Y_scale, Y_zero_point and triples of (X, X_scale, X_zero_point)");
    if (!reel_ir_attr_find(n, "axis"))
        NN_FAIL(error, REEL_EINVAL, n, "needs attribute 'axis'");
    reel_ir_value *yz = reel_op_input(g, n, 1), *x0 = reel_op_input(g, n, 2);
    int r = check_q8(n, x0, "X 0", error);
    if (r)
        return r;
    reel_dtype dt = yz ? yz->dtype : x0->dtype;
    if ((r = check_param(g, n, 0, 1, dt, false, error)))
        return r;
    int64_t od[REEL_TENSOR_MAX_RANK];
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    int xr = -1;
    bool known = true;
    for (int i = 2; i < n->n_inputs; i += 3) {
        reel_ir_value *x = reel_op_input(g, n, i);
        if (!x || x->dtype != dt)
            NN_FAIL(error, REEL_EINVAL, n, "input %d: must be %s like Y_zero_point", i,
                    dt == REEL_DTYPE_INT8 ? "int8" : "uint8");
        if ((r = check_param(g, n, i + 1, i + 2, dt, false, error)))
            return r;
        if (x->rank < 0) {
            known = false;
            continue;
        }
        if (xr < 0) {
            xr = x->rank;
            if (axis < -xr || axis >= xr)
                NN_FAIL(error, REEL_EINVAL, n, "axis %" G_GINT64_FORMAT " is out of range for rank %d", axis, xr);
            if (axis < 0)
                axis += xr;
            memcpy(od, x->dims, sizeof(int64_t) * (size_t)xr);
            continue;
        }
        if (x->rank != xr)
            NN_FAIL(error, REEL_EINVAL, n, "inputs have ranks %d and %d", xr, x->rank);
        for (int d = 0; d < xr; d++) {
            if (d == axis)
                od[d] = od[d] < 0 || x->dims[d] < 0 ? REEL_DIM_UNKNOWN : od[d] + x->dims[d];
            else if (od[d] >= 0 && x->dims[d] >= 0 && od[d] != x->dims[d])
                NN_FAIL(error, REEL_EINVAL, n, "inputs differ in dim %d (%" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
                        ")", d, od[d], x->dims[d]);
            else if (od[d] < 0)
                od[d] = x->dims[d];
        }
    }
    if (!known || xr < 0)
        nn_set(reel_op_output(g, n, 0), dt, -1, NULL);
    else
        nn_set(reel_op_output(g, n, 0), dt, xr, od);
    return 0;
}

static int concat_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    qparam py;
    const reel_tensor *y = out[0];
    if (qparam_of(n, in, 0, 1, &py) || y->rank < 1)
        return REEL_EINVAL;
    int64_t axis = reel_ir_attr_int(n, "axis", 0);
    if (axis < 0)
        axis += y->rank;
    if (axis < 0 || axis >= y->rank)
        return REEL_EINVAL;
    bool s8 = y->dtype == REEL_DTYPE_INT8;
    float lo, hi;
    qrange(y->dtype, &lo, &hi);
    int64_t outer = reel_tensor_count((int)axis, y->shape);
    int64_t inner = reel_tensor_count(y->rank - (int)axis - 1, y->shape + axis + 1);
    int64_t yrow = y->shape[axis] * inner, at = 0;
    uint8_t *Y = y->data;
    for (int i = 2; i < n->n_inputs; i += 3) {
        const reel_tensor *x = in[i];
        qparam px;
        if (qparam_of(n, in, i + 1, i + 2, &px) || x->rank != y->rank)
            return REEL_EINVAL;
        int64_t xrow = x->shape[axis] * inner;
        if (at + xrow > yrow || count_of(x) != outer * xrow)
            return REEL_EINVAL;
        bool same = px.scale == py.scale && px.zp == py.zp;
        requant8 rq = { px.zp, px.scale, py.scale, py.zp, lo, hi };
        const uint8_t *X = x->data;
        if (same)
            for (int64_t o = 0; o < outer; o++)
                memcpy(Y + o * yrow + at, X + o * xrow, (size_t)xrow);
        else
            map_rows(ctx, (map_job){ .rq = &rq, .s8 = s8, .X = X, .Y = Y + at, .rows = outer, .row_len = xrow,
                                     .x_stride = xrow, .y_stride = yrow });
        at += xrow;
    }
    return at == yrow ? 0 : REEL_EINVAL;
}

static const reel_op op_qlinear_concat = { "com.microsoft:QLinearConcat", concat_infer, NULL, concat_run };

// ---- QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point (scalar or
// one per column), C (int32 at a_scale * b_scale, optional), y_scale,
// y_zero_point (both, or neither: then Y is float32); alpha, transA,
// transB. Y = (A'B' + C) * alpha * a_scale * b_scale / y_scale + y_zp, with
// A' = A - a_zp, B' = B - b_zp; the sums are exact int32.

// |a - za| * |b - zb| <= 65025: K terms stay below 2^31 up to 2^15.
#define QGEMM_MAX_K 32768

typedef struct qgemm_geom {
    int64_t M, N, K;
    bool ta, tb;
} qgemm_geom;

static bool qgemm_geom_of(const reel_ir_node *n, int ar, const int64_t *ad, int br, const int64_t *bd, qgemm_geom *m)
{
    if (ar != 2 || br != 2)
        return false;
    m->ta = reel_ir_attr_int(n, "transA", 0) != 0;
    m->tb = reel_ir_attr_int(n, "transB", 0) != 0;
    m->M = m->ta ? ad[1] : ad[0];
    m->K = m->ta ? ad[0] : ad[1];
    m->N = m->tb ? bd[0] : bd[1];
    int64_t k2 = m->tb ? bd[1] : bd[0];
    return m->K < 0 || k2 < 0 || m->K == k2;
}

static int qgemm_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *a = reel_op_input(g, n, 0), *b = reel_op_input(g, n, 3), *c = reel_op_input(g, n, 6);
    reel_ir_value *ys = reel_op_input(g, n, 7), *yz = reel_op_input(g, n, 8);
    int r = check_q8(n, a, "A", error);
    if (!r)
        r = check_q8(n, b, "B", error);
    if (!r)
        r = check_param(g, n, 1, 2, a->dtype, false, error);
    if (r)
        return r;
    reel_ir_value *bs = reel_op_input(g, n, 4), *bz = reel_op_input(g, n, 5);
    if (!bs || bs->dtype != REEL_DTYPE_FLOAT32 || (bs->rank >= 0 && bs->rank > 1))
        NN_FAIL(error, REEL_EINVAL, n, "b_scale must be a float32 scalar or vector");
    if (bz && (bz->dtype != b->dtype || (bz->rank >= 0 && bz->rank > 1)))
        NN_FAIL(error, REEL_EINVAL, n, "b_zero_point must be a scalar or vector of B's type");
    if (!ys != !yz)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "y_scale and y_zero_point come together (quantized Y) or not at all "
                "(float Y)");
    if (ys && (r = check_param(g, n, 7, 8, yz->dtype, true, error)))
        return r;
    if (c && c->dtype != REEL_DTYPE_INT32)
        NN_FAIL(error, REEL_EINVAL, n, "C must be int32");
    reel_ir_value *y = reel_op_output(g, n, 0);
    reel_dtype dt = yz ? yz->dtype : REEL_DTYPE_FLOAT32;
    if (a->rank < 0 || b->rank < 0) {
        nn_set(y, dt, -1, NULL);
        return 0;
    }
    qgemm_geom m;
    if (!qgemm_geom_of(n, a->rank, a->dims, b->rank, b->dims, &m))
        NN_FAIL(error, REEL_EINVAL, n, "A and B must be matrices with matching inner dims");
    if (m.K > QGEMM_MAX_K)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a reduction of %" G_GINT64_FORMAT " terms could overflow int32", m.K);
    int64_t nb = bs->rank >= 0 ? reel_tensor_count(bs->rank, bs->dims) : -1;
    if (nb > 1 && m.N >= 0 && nb != m.N)
        NN_FAIL(error, REEL_EINVAL, n, "%" G_GINT64_FORMAT " b scales for %" G_GINT64_FORMAT " columns", nb, m.N);
    if (c && c->rank > 2)
        NN_FAIL(error, REEL_EINVAL, n, "C must have rank 0 to 2");
    int64_t od[2] = { m.M, m.N };
    nn_set(y, dt, 2, od);
    return 0;
}

static size_t qgemm_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    qgemm_geom m;
    if (!qgemm_geom_of(n, in[0]->rank, in[0]->shape, in[3]->rank, in[3]->shape, &m))
        return 0;
    return 2 * (size_t)(m.M * m.K + m.N * m.K) + 64;
}

typedef struct qgemm_job {
    const qgemm_geom *m;
    const int16_t *A, *B;       // A' [M, K], B' transposed [N, K]
    const reel_tensor *C;       // int32, broadcast to [M, N], or NULL
    const float *mult;          // per column, or one
    int64_t n_mult, cols_per_task;
    float zp, lo, hi;
    reel_dtype dt;              // uint8, int8, or float32
    void *Y;
} qgemm_job;

TARGETS static int32_t dot16(const int16_t *restrict a, const int16_t *restrict b, int64_t K)
{
    int32_t s = 0;
    for (int64_t k = 0; k < K; k++)
        s += (int32_t)a[k] * b[k];
    return s;
}

static int32_t bias_at(const reel_tensor *c, int64_t i, int64_t j, int64_t N)
{
    if (!c)
        return 0;
    const int32_t *d = c->data;
    int64_t cnt = count_of(c);
    if (cnt == 1)
        return d[0];
    if (c->rank == 1 || c->shape[0] == 1)
        return d[j];
    if (c->shape[1] == 1)
        return d[i];
    return d[i * N + j];
}

static void qgemm_task(void *arg, int task, int worker)
{
    (void)worker;
    const qgemm_job *j = arg;
    const qgemm_geom *m = j->m;
    int64_t c0 = task * j->cols_per_task, c1 = MIN(m->N, c0 + j->cols_per_task);
    for (int64_t i = 0; i < m->M; i++)
        for (int64_t c = c0; c < c1; c++) {
            int32_t acc = dot16(j->A + i * m->K, j->B + c * m->K, m->K) + bias_at(j->C, i, c, m->N);
            float v = (float)acc * j->mult[j->n_mult == 1 ? 0 : c];
            int64_t o = i * m->N + c;
            if (j->dt == REEL_DTYPE_FLOAT32)
                ((float *)j->Y)[o] = v;
            else if (j->dt == REEL_DTYPE_INT8)
                ((int8_t *)j->Y)[o] = (int8_t)sat(rintf(v) + j->zp, j->lo, j->hi);
            else
                ((uint8_t *)j->Y)[o] = (uint8_t)sat(rintf(v) + j->zp, j->lo, j->hi);
        }
}

static int qgemm_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                     const reel_exec_ctx *ctx)
{
    const reel_tensor *a = in[0], *b = in[3], *bs = in[4], *bz = n->n_inputs > 5 ? in[5] : NULL;
    const reel_tensor *c = n->n_inputs > 6 ? in[6] : NULL, *ys = n->n_inputs > 7 ? in[7] : NULL;
    qgemm_geom m;
    qparam pa;
    if (!qgemm_geom_of(n, a->rank, a->shape, b->rank, b->shape, &m) || m.K > QGEMM_MAX_K || qparam_of(n, in, 1, 2, &pa))
        return REEL_EINVAL;
    int64_t nb = count_of(bs), nz = bz ? count_of(bz) : 1;
    if ((nb != 1 && nb != m.N) || (nz != 1 && nz != m.N) || (ys && count_of(ys) != 1))
        return REEL_EINVAL;
    if (c) {
        int64_t cnt = count_of(c);
        // C: one value, (N), (1, N), (M, 1) or (M, N).
        int64_t c0 = c->rank == 2 ? c->shape[0] : 1, c1 = c->rank == 2 ? c->shape[1] : cnt;
        bool ok = cnt == 1 || (c->rank <= 2 && (c0 == 1 || c0 == m.M) && (c1 == 1 || c1 == m.N)
                               && (c->rank == 2 || c1 == m.N));
        if (!ok)
            return REEL_EINVAL;
    }
    if (m.M * m.N == 0)
        return 0;
    if (ctx->scratch_size < 2 * (size_t)(m.M * m.K + m.N * m.K))
        return REEL_EINVAL;
    int16_t *A = ctx->scratch, *B = A + m.M * m.K;
    bool as8 = a->dtype == REEL_DTYPE_INT8, bs8 = b->dtype == REEL_DTYPE_INT8;
    for (int64_t i = 0; i < m.M; i++)
        for (int64_t k = 0; k < m.K; k++)
            A[i * m.K + k] = (int16_t)(q8_at(a->data, as8, m.ta ? k * m.M + i : i * m.K + k) - pa.zp);
    for (int64_t j = 0; j < m.N; j++) {
        float zb = !bz ? 0.0f : q8_at(bz->data, bz->dtype == REEL_DTYPE_INT8, nz == 1 ? 0 : j);
        for (int64_t k = 0; k < m.K; k++)
            B[j * m.K + k] = (int16_t)(q8_at(b->data, bs8, m.tb ? j * m.K + k : k * m.N + j) - zb);
    }
    float alpha = reel_ir_attr_float(n, "alpha", 1.0f), y_scale = ys ? *(const float *)ys->data : 1.0f;
    float *mult = g_new(float, nb);
    for (int64_t j = 0; j < nb; j++)
        mult[j] = alpha * pa.scale * ((const float *)bs->data)[j] / y_scale;
    qgemm_job j = { .m = &m, .A = A, .B = B, .C = c, .mult = mult, .n_mult = nb, .dt = out[0]->dtype,
                    .Y = out[0]->data };
    if (ys) {
        qparam py;
        if (qparam_of(n, in, 7, 8, &py)) {
            g_free(mult);
            return REEL_EINVAL;
        }
        j.zp = py.zp;
        qrange(out[0]->dtype, &j.lo, &j.hi);
    }
    int threads = ctx->workers ? ctx->threads : 1;
    j.cols_per_task = MAX(MAX(1, m.N / (4 * threads)), 16384 / MAX(1, m.M * m.K));
    j.cols_per_task = MIN(j.cols_per_task, m.N);
    nn_parallel(ctx, (int)((m.N + j.cols_per_task - 1) / j.cols_per_task), qgemm_task, &j);
    g_free(mult);
    return 0;
}

static const reel_op op_qgemm = { "com.microsoft:QGemm", qgemm_infer, qgemm_scratch, qgemm_run };

const reel_op *const reel_ops_qlinear[] = {
    &op_qgemm,
    &op_qlinear_add, &op_qlinear_mul, &op_qlinear_sigmoid, &op_qlinear_leaky_relu, &op_qlinear_gap,
    &op_qlinear_ap, &op_qlinear_concat, NULL,
};

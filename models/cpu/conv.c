// Conv and ConvTranspose, 1 to 3 spatial dims. Conv: pointwise (1x1, stride
// 1, no pads) is GEMM; depthwise (one input channel per group, 1-D/2-D) has
// its own direct kernel; everything else is im2col + sgemm. Work is split in
// tiles of output columns (pointwise, im2col: each tile's im2col, GEMM and
// epilogue run back to back while the tile is in cache) or of channels
// (depthwise, weight-heavy GEMMs), spread over the session's threads. The
// epilogue adds bias and the residual (ir.h) and applies the fused
// activation in one pass over each tile.
#include "models/cpu/depthwise.h"
#include "models/cpu/microgemm.h"
#include "models/cpu/winograd.h"
#include "models/cpu/nn.h"

extern const reel_op nn_op_gemm, nn_op_matmul, nn_op_batchnorm, nn_op_maxpool, nn_op_averagepool,
    nn_op_globalaveragepool, nn_op_globalmaxpool, nn_op_resize, nn_op_upsample;
static const reel_op op_conv, op_convtranspose;

const reel_op *const reel_ops_nn[] = {
    &op_conv, &op_convtranspose, &nn_op_gemm, &nn_op_matmul, &nn_op_batchnorm, &nn_op_maxpool,
    &nn_op_averagepool, &nn_op_globalaveragepool, &nn_op_globalmaxpool, &nn_op_resize, &nn_op_upsample,
    NULL,
};

static void bias_act(const reel_ir_node *n, const reel_tensor *b, int64_t m0, int64_t rows, float *y, int64_t P)
{
    for (int64_t m = 0; m < rows; m++) {
        float *r = y + m * P;
        if (b) {
            float bv = ((const float *)b->data)[m0 + m];
            for (int64_t i = 0; i < P; i++)
                r[i] += bv;
        }
        nn_activate(n, r, (size_t)P);
    }
}

// Output columns [lo, hi) whose input column ow*s + off lies in [0, W).
static void col_range(int64_t W, int64_t OW, int64_t s, int64_t off, int64_t *lo, int64_t *hi)
{
    *lo = off >= 0 ? 0 : (-off + s - 1) / s;
    *hi = W - 1 - off >= 0 ? (W - 1 - off) / s + 1 : 0;
    if (*hi > OW)
        *hi = OW;
    if (*lo > *hi)
        *lo = *hi;
}

// ---- Conv

typedef struct conv_geom {
    int64_t N, C, M, G, Cg, Mg, K, P, Pin;
    nn_window w;
} conv_geom;

static int conv_geom_init(const reel_ir_node *n, int rank, const int64_t *x, const int64_t *wd, conv_geom *c,
                          GError **error)
{
    c->G = reel_ir_attr_int(n, "group", 1);
    if (c->G < 1)
        NN_FAIL(error, REEL_EINVAL, n, "group must be positive");
    c->N = x[0];
    c->C = x[1];
    c->M = wd[0];
    int64_t kernel[3];
    bool known = true;
    for (int i = 0; i < rank - 2; i++) {
        kernel[i] = wd[2 + i];
        known &= kernel[i] > 0;
    }
    int r = nn_window_init(n, rank - 2, x + 2, known ? kernel : NULL, false, &c->w, error);
    if (r)
        return r;
    if (c->M >= 0 && c->M % c->G)
        NN_FAIL(error, REEL_EINVAL, n, "%" G_GINT64_FORMAT " output channels do not split into %" G_GINT64_FORMAT " groups",
                c->M, c->G);
    if (c->C >= 0 && wd[1] >= 0 && wd[1] * c->G != c->C)
        NN_FAIL(error, REEL_EINVAL, n, "input has %" G_GINT64_FORMAT " channels, weights expect %" G_GINT64_FORMAT " x %" G_GINT64_FORMAT " groups",
                c->C, wd[1], c->G);
    c->Cg = wd[1];
    c->Mg = c->M / c->G;
    c->K = c->Cg * c->w.k[0] * c->w.k[1] * c->w.k[2];
    c->P = c->w.out[0] * c->w.out[1] * c->w.out[2];
    c->Pin = c->w.in[0] * c->w.in[1] * c->w.in[2];
    return 0;
}

static int conv_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *w = reel_op_input(g, n, 1), *b = reel_op_input(g, n, 2);
    if (!x || !w)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X and W");
    int r = nn_check_fused(n, error);
    if (r)
        return r;
    if (x->dtype != REEL_DTYPE_FLOAT32 || w->dtype != REEL_DTYPE_FLOAT32 || (b && b->dtype != REEL_DTYPE_FLOAT32))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
    int rank = x->rank >= 0 ? x->rank : w->rank;
    if (rank < 0) {
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, 0, NULL);
        reel_op_output(g, n, 0)->rank = -1;
        return 0;
    }
    if (rank < 3 || rank > 5 || (x->rank >= 0 && w->rank >= 0 && x->rank != w->rank))
        NN_FAIL(error, REEL_EINVAL, n, "X and W must both have rank 3 to 5 (have %d and %d)", x->rank, w->rank);
    if (b && b->rank != 1 && b->rank >= 0)
        NN_FAIL(error, REEL_EINVAL, n, "bias must have rank 1");
    reel_ir_value *res = reel_op_input(g, n, 3);
    if (n->n_inputs > 4 || (res && res->dtype != REEL_DTYPE_FLOAT32))
        NN_FAIL(error, REEL_EINVAL, n, "at most a float32 residual after X, W and B");
    int64_t xd[5], wd[5];
    for (int i = 0; i < rank; i++) {
        xd[i] = x->rank >= 0 ? x->dims[i] : REEL_DIM_UNKNOWN;
        wd[i] = w->rank >= 0 ? w->dims[i] : REEL_DIM_UNKNOWN;
    }
    conv_geom c;
    if ((r = conv_geom_init(n, rank, xd, wd, &c, error)))
        return r;
    if (b && b->rank == 1 && b->dims[0] >= 0 && c.M >= 0 && b->dims[0] != c.M)
        NN_FAIL(error, REEL_EINVAL, n, "bias has %" G_GINT64_FORMAT " values for %" G_GINT64_FORMAT " output channels",
                b->dims[0], c.M);
    int64_t od[5] = { c.N, c.M };
    for (int i = 0; i < rank - 2; i++)
        od[2 + i] = c.w.out[3 - (rank - 2) + i];
    if (res && res->rank >= 0) {
        bool same = res->rank == rank;
        for (int i = 0; i < rank && same; i++)
            same = res->dims[i] < 0 || od[i] < 0 || res->dims[i] == od[i];
        if (!same)
            NN_FAIL(error, REEL_EINVAL, n, "the residual's shape differs from the output's");
    }
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, rank, od);
    return 0;
}

static bool conv_pointwise(const conv_geom *c)
{
    for (int i = 0; i < 3; i++)
        if (c->w.k[i] != 1 || c->w.s[i] != 1 || c->w.pb[i] || c->w.pe[i])
            return false;
    return true;
}

static bool conv_depthwise(const conv_geom *c)
{
    return c->Cg == 1 && c->G > 1 && c->w.in[0] == 1 && c->w.k[0] == 1 && c->w.pb[0] == 0 && c->w.pe[0] == 0;
}

// A stem (models/cpu/depthwise.h) with an activation its stores apply.
static bool conv_stem(const reel_ir_node *n, const conv_geom *c)
{
    bool act = !n->fused || strcmp(n->fused, "Relu") == 0 || strcmp(n->fused, "Clip") == 0;
    return c->G == 1 && act && nn_stem_ok(&c->w, c->C);
}

static size_t conv_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    conv_geom c;
    if (conv_geom_init(n, in[0]->rank, in[0]->shape, in[1]->shape, &c, NULL))
        return 0;
    if (conv_pointwise(&c) || conv_depthwise(&c) || conv_stem(n, &c))
        return 0;
    nn_wino_plan wp;
    if (c.G == 1 && nn_wino_plan_init(c.C, c.M, &c.w, &wp)) // with room for weights that are not constants
        return (nn_wino_weights_floats(&wp) + nn_wino_scratch(&wp)) * sizeof(float);
    return (size_t)(c.K * c.P) * sizeof(float);
}

// o[0..n) = 0 and o[0..n) = xr[0..n): libc for long runs, a loop for the
// short rows (7 or 14 columns) where the call costs more than the copy.
static inline void zero_run(float *o, int64_t n)
{
    if (n >= 16)
        memset(o, 0, (size_t)n * sizeof(float));
    else
        for (int64_t i = 0; i < n; i++)
            o[i] = 0;
}

static inline void copy_run(float *o, const float *xr, int64_t n)
{
    if (n >= 16)
        memcpy(o, xr, (size_t)n * sizeof(float));
    else
        for (int64_t i = 0; i < n; i++)
            o[i] = xr[i];
}

// col[K, p1 - p0] from one group's input x[Cg, D, H, W], for the output
// positions p0 <= (od*OH + oh)*OW + ow < p1: a tile may start and end inside
// an output row, so tiles can be whole vectors of the GEMM kernel wide.
// Built for AVX-512, AVX2 and the baseline: strided rows vectorize.
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) static void im2col(
    const float *x, float *col, const conv_geom *c, int64_t p0, int64_t p1)
{
    const nn_window *w = &c->w;
    int64_t D = w->in[0], H = w->in[1], W = w->in[2], OH = w->out[1], OW = w->out[2], sw = w->s[2];
    int64_t r0 = p0 / OW, ow00 = p0 % OW, od0 = r0 / OH, oh0 = r0 % OH;
    float *dst = col;
    for (int64_t ch = 0; ch < c->Cg; ch++)
        for (int64_t a = 0; a < w->k[0]; a++)
            for (int64_t b = 0; b < w->k[1]; b++)
                for (int64_t e = 0; e < w->k[2]; e++, dst += p1 - p0) {
                    int64_t off = e * w->d[2] - w->pb[2], lo, hi;
                    col_range(W, OW, sw, off, &lo, &hi);
                    // Output rows one after another, the first and last maybe in part.
                    float *o = dst - ow00; // o[ow]: output column ow of this row
                    for (int64_t p = p0, od = od0, oh = oh0, ow0 = ow00; p < p1; o += OW, ow0 = 0) {
                        int64_t ow1 = MIN(OW, ow0 + p1 - p);
                        p += ow1 - ow0;
                        int64_t id = od * w->s[0] - w->pb[0] + a * w->d[0];
                        int64_t ih = oh * w->s[1] - w->pb[1] + b * w->d[1];
                        if (++oh == OH)
                            oh = 0, od++;
                        int64_t l = MAX(ow0, MIN(lo, ow1)), h = MAX(l, MIN(hi, ow1));
                        if (id < 0 || id >= D || ih < 0 || ih >= H)
                            l = h = ow1;
                        zero_run(o + ow0, l - ow0);
                        const float *xr = l < h ? x + ((ch * D + id) * H + ih) * W + off : x;
                        if (sw == 1)
                            copy_run(o + l, xr + l, h - l);
                        else if (sw == 2)
                            for (int64_t ow = l; ow < h; ow++)
                                o[ow] = xr[2 * ow];
                        else
                            for (int64_t ow = l; ow < h; ow++)
                                o[ow] = xr[ow * sw];
                        zero_run(o + h, ow1 - h);
                    }
                }
}

// ---- Epilogue: y = act(y + bias + residual), one pass.

enum { ACT_NONE, ACT_RELU, ACT_CLIP, ACT_OTHER };

typedef struct conv_epi {
    const reel_ir_node *n;
    int act;
    float lo, hi; // Clip
    bool stream;  // GEMM outputs by non-temporal stores (conv_stream)
} conv_epi;

static void epi_init(const reel_ir_node *n, conv_epi *e)
{
    e->n = n;
    e->act = !n->fused ? ACT_NONE : strcmp(n->fused, "Relu") == 0 ? ACT_RELU
        : strcmp(n->fused, "Clip") == 0 ? ACT_CLIP : ACT_OTHER;
    e->lo = n->fused_a;
    e->hi = n->fused_b;
}

// One row r[0..len) with its bias and (NULL: none) residual row. Built for
// AVX-512, AVX2 and the baseline like the depthwise loops it follows.
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) static void epi_row(const conv_epi *e, float bias, const float *restrict res, float *restrict r, int64_t len)
{
    float lo = e->lo, hi = e->hi;
    switch (e->act) {
    case ACT_RELU:
        if (res)
            for (int64_t i = 0; i < len; i++) {
                float v = r[i] + bias + res[i];
                r[i] = v > 0 ? v : 0;
            }
        else
            for (int64_t i = 0; i < len; i++) {
                float v = r[i] + bias;
                r[i] = v > 0 ? v : 0;
            }
        return;
    case ACT_CLIP:
        if (res)
            for (int64_t i = 0; i < len; i++) {
                float v = r[i] + bias + res[i];
                r[i] = v < lo ? lo : v > hi ? hi : v;
            }
        else
            for (int64_t i = 0; i < len; i++) {
                float v = r[i] + bias;
                r[i] = v < lo ? lo : v > hi ? hi : v;
            }
        return;
    default:
        if (res)
            for (int64_t i = 0; i < len; i++)
                r[i] += bias + res[i];
        else if (bias != 0)
            for (int64_t i = 0; i < len; i++)
                r[i] += bias;
        if (e->act == ACT_OTHER)
            nn_activate(e->n, r, (size_t)len);
    }
}

// y[rows, len] (row stride ld) = w[rows, K] x B[K, len] (row stride ldb)
// with the epilogue fused into the product (bias[0..rows) and residual with
// y's layout may be NULL); activations the kernel does not know follow in a
// pass over the rows while they are in cache.
static void gemm_block(const conv_epi *e, const float *w, int64_t K, const float *B, int64_t ldb,
                       const float *bias, const float *res, float *y, int64_t rows, int64_t len, int64_t ld)
{
    nn_epilogue ep = { bias, res, ld, NN_ACT_NONE, e->lo, e->hi, e->stream && e->act != ACT_OTHER };
    ep.act = e->act == ACT_RELU ? NN_ACT_RELU : e->act == ACT_CLIP ? NN_ACT_CLIP : NN_ACT_NONE;
    nn_gemm_epi((int)rows, (int)len, (int)K, w, (int)K, B, (int)ldb, y, (int)ld, &ep);
    if (e->act == ACT_OTHER)
        for (int64_t m = 0; m < rows; m++)
            nn_activate(e->n, y + m * ld, (size_t)len);
}

// One output channel of a depthwise conv: y[OH, OW] from x[H, W] and the
// filter wt[kh, kw], plus bias. Columns whose window lies inside the input
// take the fast path: every tap in one pass over the output row (3x3 and 5x5
// unrolled at compile time), rows outside the input read a zero row.
// Interior columns [lo, hi) of one output row with a KxK filter and column
// stride S (0: any, given as sw): taps unrolled, columns innermost, so the
// loop vectorizes; built for AVX-512, AVX2 and the baseline, picked at load.
#define DW_INTERIOR(K, S)                                                                               \
    __attribute__((target_clones("avx512f", "avx2,fma", "default"))) static void dw_interior_##K##_##S(   \
        const float *const *rows, const float *wt, float *restrict yr, int64_t lo, int64_t hi, int64_t sw, \
        int64_t off, float bias)                                                                       \
    {                                                                                                  \
        const int64_t s = S ? S : sw;                                                                  \
        const float *r[K];                                                                             \
        float w[K * K];                                                                                \
        for (int i = 0; i < K; i++)                                                                    \
            r[i] = rows[i] + off;                                                                      \
        memcpy(w, wt, sizeof w);                                                                       \
        for (int64_t ow = lo; ow < hi; ow++) {                                                         \
            float acc = bias;                                                                          \
            for (int i = 0; i < K; i++)                                                                \
                for (int j = 0; j < K; j++)                                                            \
                    acc += w[i * K + j] * r[i][ow * s + j];                                            \
            yr[ow] = acc;                                                                              \
        }                                                                                              \
    }
DW_INTERIOR(3, 1)
DW_INTERIOR(3, 2)
DW_INTERIOR(3, 0)
DW_INTERIOR(5, 1)
DW_INTERIOR(5, 2)
DW_INTERIOR(5, 0)

typedef void (*dw_interior_fn)(const float *const *, const float *, float *restrict, int64_t, int64_t, int64_t,
                               int64_t, float);

static dw_interior_fn dw_interior_pick(int64_t k, int64_t s)
{
    if (k == 3)
        return s == 1 ? dw_interior_3_1 : s == 2 ? dw_interior_3_2 : dw_interior_3_0;
    return s == 1 ? dw_interior_5_1 : s == 2 ? dw_interior_5_2 : dw_interior_5_0;
}

static void depthwise(const float *x, const float *wt, float *y, const nn_window *w, float bias, const float *zero,
                      const conv_epi *e, const float *res)
{
    int64_t H = w->in[1], W = w->in[2], OH = w->out[1], OW = w->out[2];
    int64_t kh = w->k[1], kw = w->k[2], sh = w->s[1], sw = w->s[2], dh = w->d[1], dw = w->d[2];
    int64_t pl = w->pb[2];
    // Interior columns: the whole window row inside [0, W).
    int64_t lo = pl > 0 ? (pl + sw - 1) / sw : 0;
    int64_t last = W - 1 - (kw - 1) * dw + pl; // largest ow*sw allowed
    int64_t hi = last >= 0 ? last / sw + 1 : 0;
    if (hi > OW)
        hi = OW;
    if (lo > hi)
        lo = hi;
    bool fast = zero && dw == 1 && dh == 1 && kh == kw && (kw == 3 || kw == 5);
    dw_interior_fn interior = fast ? dw_interior_pick(kw, sw) : NULL;
    for (int64_t oh = 0; oh < OH; oh++) {
        float *yr = y + oh * OW;
        int64_t ih0 = oh * sh - w->pb[1];
        int64_t a = fast ? lo : 0, b = fast ? hi : 0;
        if (fast) {
            const float *rows[5];
            for (int i = 0; i < kh; i++) {
                int64_t ih = ih0 + i;
                rows[i] = ih >= 0 && ih < H ? x + ih * W : zero;
            }
            interior(rows, wt, yr, a, b, sw, -pl, bias);
        }
        // The other columns (all of them off the fast path), bounds checked.
        for (int64_t ow = 0; ow < OW; ow++) {
            if (ow == a && b > a) {
                ow = b - 1;
                continue;
            }
            float acc = bias;
            for (int64_t i = 0; i < kh; i++) {
                int64_t ih = ih0 + i * dh;
                if (ih < 0 || ih >= H)
                    continue;
                for (int64_t j = 0; j < kw; j++) {
                    int64_t iw = ow * sw - pl + j * dw;
                    if (iw >= 0 && iw < W)
                        acc += wt[i * kw + j] * x[ih * W + iw];
                }
            }
            yr[ow] = acc;
        }
    }
    // Bias is in; residual and activation over the plane in one pass.
    epi_row(e, 0, res, y, OH * OW);
}

// Columns per GEMM tile: the tile's im2col panel (K rows) and output (M
// rows) stay in L2 (~256 KiB of floats).
#define TILE_FLOATS (64 * 1024)

enum { CONV_PW, CONV_DW, CONV_COL, CONV_COL_M, CONV_STEM };

typedef struct conv_job {
    const conv_geom *c;
    conv_epi e;
    int kind;
    const float *X, *Wt, *bias, *R, *zero;
    float *Y, *scratch;
    nn_dw_plan dw;      // DW: the fast path's plan, when dw_fast
    bool dw_fast;
    int64_t tiles;      // tasks per (image, group)
    int64_t per_tile;   // PW, COL: columns; COL_M: output channels; DW: groups per task; STEM: output rows
} conv_job;

static void conv_task(void *arg, int task, int worker)
{
    const conv_job *j = arg;
    const conv_geom *c = j->c;
    if (j->kind == CONV_DW) {
        // Tasks over (image, run of groups); each group one input channel.
        int64_t groups = (c->G + j->per_tile - 1) / j->per_tile;
        int64_t b = task / groups, g0 = task % groups * j->per_tile, g1 = MIN(c->G, g0 + j->per_tile);
        float *buf = j->dw_fast ? g_new(float, j->dw.scratch) : NULL;
        if (buf)
            nn_dw_prepare(&j->dw, buf);
        for (int64_t g = g0; g < g1; g++) {
            const float *x = j->X + (b * c->C + g) * c->Pin;
            for (int64_t m = g * c->Mg; m < (g + 1) * c->Mg; m++) {
                int64_t o = (b * c->M + m) * c->P;
                float bias = j->bias ? j->bias[m] : 0;
                const float *res = j->R ? j->R + o : NULL;
                if (buf) {
                    // Relu and Clip go into the kernel's stores; a residual
                    // or another activation takes a pass after it.
                    bool fuse = !res && (j->e.act == ACT_RELU || j->e.act == ACT_CLIP);
                    nn_dw_act a = { !fuse ? NN_ACT_NONE : j->e.act == ACT_RELU ? NN_ACT_RELU : NN_ACT_CLIP,
                                    j->e.lo, j->e.hi };
                    nn_dw_run(&j->dw, x, j->Wt + m * c->K, bias, &a, j->Y + o, buf);
                    if (!fuse)
                        epi_row(&j->e, 0, res, j->Y + o, c->P);
                } else {
                    depthwise(x, j->Wt + m * c->K, j->Y + o, &c->w, bias, j->zero, &j->e, res);
                }
            }
        }
        g_free(buf);
        return;
    }
    if (j->kind == CONV_STEM) {
        // Tasks over (image, run of output rows).
        int64_t b = task / j->tiles, oh0 = task % j->tiles * j->per_tile;
        int64_t oh1 = MIN(c->w.out[1], oh0 + j->per_tile), o = b * c->M * c->P;
        nn_dw_act a = { j->e.act == ACT_RELU ? NN_ACT_RELU : j->e.act == ACT_CLIP ? NN_ACT_CLIP : NN_ACT_NONE,
                        j->e.lo, j->e.hi };
        nn_stem_run(&c->w, c->C, c->M, j->X + b * c->C * c->Pin, j->Wt, j->bias, j->R ? j->R + o : NULL, &a,
                    j->Y + o, oh0, oh1);
        return;
    }
    int64_t bg = task / j->tiles, t = task % j->tiles, b = bg / c->G, g = bg % c->G;
    const float *x = j->X + (b * c->C + g * c->Cg) * c->Pin;
    const float *w = j->Wt + g * c->Mg * c->K;
    int64_t o = (b * c->M + g * c->Mg) * c->P;
    float *y = j->Y + o;
    const float *res = j->R ? j->R + o : NULL, *bias = j->bias ? j->bias + g * c->Mg : NULL;
    if (j->kind == CONV_COL_M) {
        // im2col of the whole image done; this task: a run of output channels.
        int64_t m0 = t * j->per_tile, mn = MIN(c->Mg, m0 + j->per_tile) - m0;
        gemm_block(&j->e, w + m0 * c->K, c->K, j->scratch, c->P, bias ? bias + m0 : NULL,
                   res ? res + m0 * c->P : NULL, y + m0 * c->P, mn, c->P, c->P);
        return;
    }
    int64_t p0 = t * j->per_tile, pn = MIN(c->P, p0 + j->per_tile) - p0;
    const float *B = x + p0;
    int ldb = (int)c->P;
    if (j->kind == CONV_COL) {
        // Each worker its own slice of the scratch (conv_plan keeps
        // threads x slice within K x P).
        float *col = j->scratch + (size_t)worker * (size_t)(c->K * j->per_tile);
        im2col(x, col, c, p0, p0 + pn);
        B = col;
        ldb = (int)pn;
    }
    gemm_block(&j->e, w, c->K, B, ldb, bias, res ? res + p0 : NULL, y + p0, c->Mg, pn, c->P);
}

static void im2col_task(void *arg, int task, int worker)
{
    (void)worker;
    const conv_job *j = arg;
    const conv_geom *c = j->c;
    // Task: one input channel of the (single) image and group being prepared.
    conv_geom one = *c;
    one.Cg = 1;
    int64_t kk = c->K / c->Cg;
    im2col(j->X + task * c->Pin, j->scratch + task * kk * c->P, &one, 0, c->P);
}

// Columns per tile: about `want`, in whole register tiles of the GEMM
// kernel (48 floats; narrower tiles and dot products run slower) but at the
// image's end, and a tile count that splits evenly over the threads. With
// more than one thread the tiles round down, so the few columns left over
// make a small tile of their own rather than one thread's tile a large one.
static int64_t tile_cols(int64_t P, int64_t want, int threads)
{
    int64_t n = (P + want - 1) / want;
    n = (n + threads - 1) / threads * threads;
    int64_t cols = (P + n - 1) / n;
    if (cols < 48)
        return MIN(P, (cols + 15) / 16 * 16);
    return MIN(P, threads > 1 ? cols / 48 * 48 : (cols + 47) / 48 * 48);
}

// How a Conv splits: kind and tiles for these shapes and `threads`.
static void conv_plan(const conv_geom *c, int threads, conv_job *j)
{
    if (conv_stem(j->e.n, c)) {
        j->kind = CONV_STEM;
        // About 4 tasks per thread, so a slow thread does not hold the rest.
        int64_t OH = c->w.out[1];
        j->per_tile = threads > 1 ? MAX(1, OH / (4 * threads)) : OH;
        j->tiles = (OH + j->per_tile - 1) / j->per_tile;
        return;
    }
    if (conv_depthwise(c)) {
        j->kind = CONV_DW;
        j->dw_fast = nn_dw_plan_init(&c->w, &j->dw);
        // About 4 tasks per thread, so a slow thread does not hold the rest.
        j->per_tile = MAX(1, c->G / (4 * threads));
        j->tiles = 1;
        return;
    }
    j->kind = conv_pointwise(c) ? CONV_PW : CONV_COL;
    // Weights bigger than the image's columns (late, small layers): split
    // the output channels so each thread reads only its part of them.
    if (j->kind == CONV_COL && threads > 1 && c->Mg * c->K > c->K * c->P && c->Mg >= 2 * threads &&
        c->N * c->G == 1) {
        j->kind = CONV_COL_M;
        j->per_tile = (c->Mg + threads - 1) / threads;
        j->tiles = (c->Mg + j->per_tile - 1) / j->per_tile;
        return;
    }
    j->per_tile = tile_cols(c->P, MAX(64, TILE_FLOATS / MAX(c->K, c->Mg)), threads);
    if (j->kind == CONV_COL && threads * j->per_tile > c->P) // each worker a slice of the scratch
        j->per_tile = MAX(1, c->P / threads);
    j->tiles = (c->P + j->per_tile - 1) / j->per_tile;
}

// Winograd's output rows: bias, residual and activation (conv_epi) as
// they are written.
typedef struct wino_epi {
    const conv_epi *e;
    const float *bias, *res; // res: this image's residual
    int64_t OH, OW;
} wino_epi;

static void wino_row(void *arg, int64_t m, float *row, int64_t oh, int64_t len)
{
    const wino_epi *w = arg;
    epi_row(w->e, w->bias ? w->bias[m] : 0, w->res ? w->res + (m * w->OH + oh) * w->OW : NULL, row, len);
}

// 3x3 stride-1 convs of one group by Winograd, image by image.
static int conv_winograd(const conv_geom *c, const nn_wino_plan *wp, const reel_ir_node *n,
                         reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    size_t uf = nn_wino_weights_floats(wp);
    if (ctx->scratch_size < (uf + nn_wino_scratch(wp)) * sizeof(float))
        return REEL_EINTERNAL;
    // Weights that are constants are transformed once and kept with the plan.
    bool keep = ctx->state && ctx->const_inputs & 2;
    float *U = keep ? *ctx->state : NULL, *scratch = ctx->scratch;
    if (!U) {
        U = keep ? (*ctx->state = g_new(float, uf)) : scratch;
        nn_wino_weights(wp, in[1]->data, U, ctx);
    }
    if (!keep)
        scratch += uf;
    conv_epi e;
    epi_init(n, &e);
    const float *R = n->n_inputs > 3 && in[3] ? in[3]->data : NULL;
    wino_epi we = { &e, n->n_inputs > 2 && in[2] ? in[2]->data : NULL, NULL, wp->OH, wp->OW };
    for (int64_t b = 0; b < c->N; b++) {
        we.res = R ? R + b * c->M * c->P : NULL;
        nn_wino_run(wp, (const float *)in[0]->data + b * c->C * c->Pin, U, (float *)out[0]->data + b * c->M * c->P,
                    scratch, ctx, wino_row, &we);
    }
    return 0;
}

// GEMM outputs go out by non-temporal stores when the conv's input and
// output together are at least this big (about L2 of one core): the lines
// written are then mostly gone from the caches, and a plain store would
// first read each one back from memory. Smaller outputs stay in cache for
// the next node. REEL_CONV_STREAM=0 turns streaming off; another number
// sets the size in KiB.
#define STREAM_MIN_KIB 1024

static int64_t stream_min_bytes(void)
{
    static gsize min_plus_one; // 0 until read from the environment
    if (g_once_init_enter(&min_plus_one)) {
        const char *v = getenv("REEL_CONV_STREAM");
        int64_t kib = v ? g_ascii_strtoll(v, NULL, 10) : STREAM_MIN_KIB;
        int64_t min = kib > 0 && kib < (INT64_C(1) << 40) ? kib << 10 : INT64_MAX;
        g_once_init_leave(&min_plus_one, (gsize)min + 1);
    }
    return (int64_t)(min_plus_one - 1);
}

static bool conv_stream(const conv_geom *c)
{
    int64_t floats = c->N * (c->C * c->Pin + c->M * c->P);
    return floats * (int64_t)sizeof(float) >= stream_min_bytes();
}

static int conv_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    conv_geom c;
    if (conv_geom_init(n, in[0]->rank, in[0]->shape, in[1]->shape, &c, NULL))
        return REEL_EINVAL;
    nn_wino_plan wp;
    if (c.G == 1 && nn_wino_plan_init(c.C, c.M, &c.w, &wp))
        return conv_winograd(&c, &wp, n, in, out, ctx);
    bool pw = conv_pointwise(&c), dw = conv_depthwise(&c);
    if (!pw && !dw && !conv_stem(n, &c) && ctx->scratch_size < (size_t)(c.K * c.P) * sizeof(float))
        return REEL_EINTERNAL;
    conv_job j = {
        .c = &c, .X = in[0]->data, .Wt = in[1]->data, .Y = out[0]->data, .scratch = ctx->scratch,
        .bias = n->n_inputs > 2 && in[2] ? in[2]->data : NULL,
        .R = n->n_inputs > 3 && in[3] ? in[3]->data : NULL,
    };
    epi_init(n, &j.e);
    j.e.stream = conv_stream(&c);
    int threads = ctx->workers ? ctx->threads : 1;
    conv_plan(&c, threads, &j);
    reel_exec_ctx serial = *ctx;
    if (j.kind == CONV_COL && threads * j.per_tile > c.P) {
        // Too few columns to give each worker its own scratch slice.
        serial.workers = NULL;
        serial.threads = 1;
    }
    // Small convs are not worth waking the other threads for.
    if ((double)c.M * (double)c.K * (double)c.P < 2e5) {
        serial.workers = NULL;
        serial.threads = 1;
    }
    // A row of zeros standing for padding rows in the depthwise fast path
    // (plus room for the widest window's overhang).
    float *zero = dw ? g_new0(float, c.w.in[2] + 8) : NULL;
    j.zero = zero;
    if (j.kind == CONV_STEM) {
        nn_parallel(&serial, (int)(c.N * j.tiles), conv_task, &j);
    } else if (j.kind == CONV_DW) {
        nn_parallel(&serial, (int)(c.N * ((c.G + j.per_tile - 1) / j.per_tile)), conv_task, &j);
    } else if (j.kind == CONV_COL_M) {
        nn_parallel(&serial, (int)c.Cg, im2col_task, &j);
        nn_parallel(&serial, (int)j.tiles, conv_task, &j);
    } else {
        nn_parallel(&serial, (int)(c.N * c.G * j.tiles), conv_task, &j);
    }
    g_free(zero);
    return 0;
}

static const reel_op op_conv = { "Conv", conv_infer, conv_scratch, conv_run };

// ---- ConvTranspose

typedef struct convt_geom {
    int64_t N, C, M, G, Cg, Mg, K, P, Pin;
    int sp;
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
} convt_geom;

static int convt_geom_init(const reel_ir_node *n, int rank, const int64_t *x, const int64_t *wd, convt_geom *c,
                           GError **error)
{
    int sp = rank - 2, nk, ns, nd, np, nop, nos;
    const int64_t *k = reel_ir_attr_ints(n, "kernel_shape", &nk);
    const int64_t *s = reel_ir_attr_ints(n, "strides", &ns);
    const int64_t *d = reel_ir_attr_ints(n, "dilations", &nd);
    const int64_t *p = reel_ir_attr_ints(n, "pads", &np);
    const int64_t *op = reel_ir_attr_ints(n, "output_padding", &nop);
    const int64_t *os = reel_ir_attr_ints(n, "output_shape", &nos);
    const char *auto_pad = reel_ir_attr_string(n, "auto_pad", "NOTSET");
    if (sp < 1 || sp > 3)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%d spatial dims (1 to 3 supported)", sp);
    if ((k && nk != sp) || (s && ns != sp) || (d && nd != sp) || (p && np != 2 * sp) || (op && nop != sp) ||
        (os && nos != sp && nos != rank))
        NN_FAIL(error, REEL_EINVAL, n, "attribute lengths do not match %d spatial dims", sp);
    bool same = strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0;
    if (!same && strcmp(auto_pad, "VALID") != 0 && strcmp(auto_pad, "NOTSET") != 0)
        NN_FAIL(error, REEL_EINVAL, n, "auto_pad %s is not valid", auto_pad);
    c->G = reel_ir_attr_int(n, "group", 1);
    if (c->G < 1)
        NN_FAIL(error, REEL_EINVAL, n, "group must be positive");
    c->sp = sp;
    c->N = x[0];
    c->C = x[1];
    c->Cg = c->C >= 0 ? c->C / c->G : -1;
    c->Mg = wd[1];
    c->M = wd[1] >= 0 ? wd[1] * c->G : -1;
    if (c->C >= 0 && wd[0] >= 0 && wd[0] != c->C)
        NN_FAIL(error, REEL_EINVAL, n, "weights are for %" G_GINT64_FORMAT " input channels, input has %" G_GINT64_FORMAT,
                wd[0], c->C);
    if (c->C >= 0 && c->C % c->G)
        NN_FAIL(error, REEL_EINVAL, n, "channels do not split into groups");
    int off = 3 - sp;
    for (int i = 0; i < 3; i++)
        c->in[i] = c->out[i] = c->k[i] = c->s[i] = c->d[i] = 1, c->pb[i] = 0;
    c->K = c->Mg;
    for (int i = 0; i < sp; i++) {
        int j = off + i;
        c->in[j] = x[2 + i];
        c->k[j] = k ? k[i] : wd[2 + i];
        c->s[j] = s ? s[i] : 1;
        c->d[j] = d ? d[i] : 1;
        int64_t pb = p ? p[i] : 0, pe = p ? p[sp + i] : 0, opad = op ? op[i] : 0;
        if (c->k[j] < 1 || c->s[j] < 1 || c->d[j] < 1 || opad < 0)
            NN_FAIL(error, REEL_EINVAL, n, "bad kernel, strides, dilations or output_padding");
        c->K *= c->k[j];
        int64_t ek = (c->k[j] - 1) * c->d[j] + 1;
        if (c->in[j] < 0) {
            c->out[j] = REEL_DIM_UNKNOWN;
            continue;
        }
        int64_t natural = c->s[j] * (c->in[j] - 1) + opad + ek;
        if (os || same) {
            int64_t want = os ? os[nos - sp + i] : c->in[j] * c->s[j];
            int64_t total = natural - want;
            bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
            // Floor division, as ONNX's reference: a negative total (output
            // larger than natural) pads at the end.
            int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            c->pb[j] = upper ? half : total - half;
            c->out[j] = want;
        } else {
            if (strcmp(auto_pad, "VALID") == 0)
                pb = pe = 0;
            c->pb[j] = pb;
            c->out[j] = natural - pb - pe;
        }
        if (c->out[j] < 1)
            NN_FAIL(error, REEL_EINVAL, n, "output would be empty");
    }
    c->P = c->out[0] * c->out[1] * c->out[2];
    c->Pin = c->in[0] * c->in[1] * c->in[2];
    return 0;
}

static int convt_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *w = reel_op_input(g, n, 1);
    if (!x || !w)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X and W");
    int r = nn_check_fused(n, error);
    if (r)
        return r;
    if (x->dtype != REEL_DTYPE_FLOAT32 || w->dtype != REEL_DTYPE_FLOAT32)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "only float32 tensors are supported");
    if (x->rank < 0 || w->rank < 0) {
        reel_op_output(g, n, 0)->dtype = REEL_DTYPE_FLOAT32;
        reel_op_output(g, n, 0)->rank = -1;
        return 0;
    }
    if (x->rank != w->rank || x->rank < 3)
        NN_FAIL(error, REEL_EINVAL, n, "X and W must have the same rank, at least 3");
    convt_geom c;
    if ((r = convt_geom_init(n, x->rank, x->dims, w->dims, &c, error)))
        return r;
    int64_t od[5] = { c.N, c.M };
    for (int i = 0; i < c.sp; i++)
        od[2 + i] = c.out[3 - c.sp + i];
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, od);
    return 0;
}

static size_t convt_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    convt_geom c;
    if (convt_geom_init(n, in[0]->rank, in[0]->shape, in[1]->shape, &c, NULL))
        return 0;
    return (size_t)(c.K * c.Pin) * sizeof(float);
}

// The col2im of one group: col's rows scattered into y, those of output
// channels [m0, m1) (each writes its own channel alone).
typedef struct convt_scatter {
    const convt_geom *c;
    const float *col;
    float *y;
    int64_t per_task;
} convt_scatter;

static void convt_scatter_task(void *arg, int task, int worker)
{
    (void)worker;
    const convt_scatter *t = arg;
    const convt_geom *c = t->c;
    int64_t kk = c->K / c->Mg, m1 = MIN(c->Mg, (task + 1) * t->per_task);
    for (int64_t row = task * t->per_task * kk; row < m1 * kk; row++) {
        int64_t m = row / kk, r = row % kk;
        int64_t e = r % c->k[2], bb = (r / c->k[2]) % c->k[1], a = r / (c->k[2] * c->k[1]);
        const float *src = t->col + row * c->Pin;
        float *ym = t->y + m * c->P;
        for (int64_t id = 0; id < c->in[0]; id++) {
            int64_t od = id * c->s[0] + a * c->d[0] - c->pb[0];
            if (od < 0 || od >= c->out[0])
                continue;
            for (int64_t ih = 0; ih < c->in[1]; ih++) {
                int64_t oh = ih * c->s[1] + bb * c->d[1] - c->pb[1];
                if (oh < 0 || oh >= c->out[1])
                    continue;
                const float *sr = src + (id * c->in[1] + ih) * c->in[2];
                float *yr = ym + (od * c->out[1] + oh) * c->out[2];
                for (int64_t iw = 0; iw < c->in[2]; iw++) {
                    int64_t ow = iw * c->s[2] + e * c->d[2] - c->pb[2];
                    if (ow >= 0 && ow < c->out[2])
                        yr[ow] += sr[iw];
                }
            }
        }
    }
}

static int convt_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    convt_geom c;
    if (convt_geom_init(n, in[0]->rank, in[0]->shape, in[1]->shape, &c, NULL))
        return REEL_EINVAL;
    if (ctx->scratch_size < (size_t)(c.K * c.Pin) * sizeof(float))
        return REEL_EINTERNAL;
    const float *X = in[0]->data, *Wt = in[1]->data;
    const reel_tensor *B = n->n_inputs > 2 ? in[2] : NULL;
    float *Y = out[0]->data, *col = ctx->scratch;
    int tasks = (int)MIN(c.Mg, ctx->threads > 1 ? ctx->threads : 1);
    memset(Y, 0, out[0]->nbytes);
    for (int64_t b = 0; b < c.N; b++)
        for (int64_t g = 0; g < c.G; g++) {
            const float *x = X + (b * c.C + g * c.Cg) * c.Pin;
            const float *w = Wt + g * c.Cg * c.K;
            float *y = Y + (b * c.M + g * c.Mg) * c.P;
            // col[Mg*k, Pin] = W_g^T x_g, then scattered (col2im) into y;
            // both split over the workers.
            nn_sgemm_parallel(ctx, true, false, (int)c.K, (int)c.Pin, (int)c.Cg, 1, w, (int)c.K, x, (int)c.Pin, 0,
                              col, (int)c.Pin);
            convt_scatter t = { &c, col, y, (c.Mg + tasks - 1) / tasks };
            nn_parallel(ctx, tasks, convt_scatter_task, &t);
            bias_act(n, B, g * c.Mg, c.Mg, y, c.P);
        }
    return 0;
}

static const reel_op op_convtranspose = { "ConvTranspose", convt_infer, convt_scratch, convt_run };

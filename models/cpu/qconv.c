// ConvInteger and QLinearConv through the int8 GEMM (qgemm.h); depthwise
// convs go to qdepthwise.c.
//
// The layout stays NCHW: the neighbouring ops and the model's inputs and
// outputs are NCHW, and in NCHW a conv is Y[M, P] = W[M, K] X[K, P] with the
// weights as the GEMM's rows (packed once, kept in ctx->state) and the
// image's columns (pointwise: the input itself; else im2col) packed into
// vpdpbusd panels per run, which costs O(K P) against the product's
// O(M K P) and needs no transpose on either side.
#include "models/cpu/qfast.h"

// Weights as GEMM rows: M rows of Kp int8 bytes (uint8 weights shifted by
// 128), each row's zero point (shifted alike) and rowsum - K * zero point.
// One allocation (ctx->state is g_free'd whole).
typedef struct wpack {
    int64_t M, K, Kp;
    int32_t *zp, *rr;
    uint8_t *rows;
} wpack;

static size_t wpack_bytes(int64_t M, int64_t K)
{
    return sizeof(wpack) + 8 * (size_t)M + (size_t)(M * qgemm_kp(K)) + 64;
}

// Lays a wpack out in mem (wpack_bytes of it) and fills it.
static wpack *wpack_make(void *mem, const reel_tensor *w, const reel_tensor *zw, int64_t M, int64_t K)
{
    wpack *p = mem;
    p->M = M, p->K = K, p->Kp = qgemm_kp(K);
    p->zp = (int32_t *)(p + 1);
    p->rr = p->zp + M;
    p->rows = (uint8_t *)(p->rr + M);
    bool u8 = w->dtype == REEL_DTYPE_UINT8;
    int64_t nz = zw ? reel_tensor_count(zw->rank, zw->shape) : 0;
    for (int64_t m = 0; m < M; m++) {
        const uint8_t *src = (const uint8_t *)w->data + m * K;
        uint8_t *dst = p->rows + m * p->Kp;
        int32_t sum = 0;
        for (int64_t k = 0; k < K; k++) {
            uint8_t b = u8 ? (uint8_t)(src[k] ^ 0x80) : src[k];
            dst[k] = b;
            sum += (int8_t)b;
        }
        memset(dst + K, 0, (size_t)(p->Kp - K));
        // The zero point (0 when omitted), shifted as the weights are.
        int32_t z = u8 ? -128 : 0;
        if (nz)
            z = u8 ? (int32_t)((const uint8_t *)zw->data)[nz == 1 ? 0 : m] - 128
                   : (int32_t)((const int8_t *)zw->data)[nz == 1 ? 0 : m];
        p->zp[m] = z;
        p->rr[m] = (int32_t)((uint32_t)sum - (uint32_t)K * (uint32_t)z);
    }
    return p;
}

static int64_t pin_of(const qconv_geom *c)
{
    return c->w.in[0] * c->w.in[1] * c->w.in[2];
}

// 2-D convs with equal strides s run over a padded copy of the image split
// into s x s phases (rows r s + ph, columns c s + pw of the padded image in
// phase (ph, pw)): with the output's columns as oh * wp + ow over a phase's
// width (ow >= OW computed and then dropped), each im2col row is one
// contiguous slice of one phase.
typedef struct flat_geom {
    bool on;
    int64_t s;           // stride: s * s phases per channel
    int64_t hp, wp, P;   // a phase's rows and columns; the GEMM's columns, OH * wp
} flat_geom;

static flat_geom flat_of(const qconv_geom *c)
{
    const nn_window *w = &c->w;
    flat_geom f = { 0 };
    if (w->k[0] != 1 || w->in[0] != 1 || w->s[1] != w->s[2] || w->s[1] > 4 || w->k[1] * w->k[2] == 1)
        return f;
    f.s = w->s[1];
    f.hp = w->out[1] + (w->k[1] - 1) * w->d[1] / f.s;
    f.wp = w->out[2] + (w->k[2] - 1) * w->d[2] / f.s;
    f.P = w->out[1] * f.wp;
    f.on = f.wp <= 2 * w->out[2];
    return f;
}

static int64_t flat_bytes(const qconv_geom *c, const flat_geom *f)
{
    return c->Cg * f->s * f->s * f->hp * f->wp + 2 * f->wp + 64;
}

size_t qconv_fast_scratch(const qconv_geom *c)
{
    if (qconv_is_depthwise(c))
        return qconv_depthwise_scratch(c);
    flat_geom f = flat_of(c);
    int64_t np = qgemm_np(MAX(c->P, f.P), 32), kp = qgemm_kp(c->K);
    // Panels, column sums and zero points, the weights when they are not
    // constants, and the multipliers; flat: the padded image (and a row past
    // it) and the output before its extra columns are dropped.
    size_t flat = f.on ? (size_t)flat_bytes(c, &f) + 4 * (size_t)(c->Mg * f.P) + 128 : 0;
    return (size_t)(kp * np) + 8 * (size_t)np + wpack_bytes(c->M, c->K) + 8 * (size_t)c->M + 256 + flat;
}

// ---- im2col rows

typedef struct col_src {
    const qconv_geom *c;
    const uint8_t *x;    // this image's group of channels [Cg, Pin]
    uint8_t flip;        // 0x80: int8 input shifted to uint8
    uint8_t pad;         // the (shifted) zero point
    bool direct;         // pointwise, stride 1, no pads: row k is channel k
    const uint8_t *padded; // flat (flat_geom): the group's padded channels, shifted
    const int64_t *koff;   // flat: row k's offset in padded (flat_offsets)
    flat_geom f;
} col_src;

// Flat: each im2col row's start in the padded image, the tap's phase and
// offset, computed once per conv rather than per row read (the divisions
// cost more than the read).
static int64_t *flat_offsets(const qconv_geom *c, const flat_geom *f)
{
    const nn_window *w = &c->w;
    int64_t *off = g_new(int64_t, MAX(1, c->K)), st = f->s, taps = w->k[1] * w->k[2];
    for (int64_t kh = 0; kh < w->k[1]; kh++)
        for (int64_t kw = 0; kw < w->k[2]; kw++) {
            int64_t oh = kh * w->d[1], ow = kw * w->d[2]; // the tap's offset in the padded image
            off[kh * w->k[2] + kw] = ((oh % st) * st + ow % st) * f->hp * f->wp + oh / st * f->wp + ow / st;
        }
    // Channel ch: its st x st phases further on.
    for (int64_t ch = 1; ch < c->Cg; ch++)
        for (int64_t t = 0; t < taps; t++)
            off[ch * taps + t] = off[t] + ch * st * st * f->hp * f->wp;
    return off;
}

// Row k (channel, kd, kh, kw) of the im2col matrix, columns [n, n + len).
static const uint8_t *col_row(void *arg, int64_t k, int64_t n, int64_t len, uint8_t *buf)
{
    const col_src *s = arg;
    const qconv_geom *c = s->c;
    const nn_window *w = &c->w;
    int64_t Pin = pin_of(c);
    if (s->padded) {
        (void)len, (void)buf;
        return s->padded + s->koff[k] + n;
    }
    if (s->direct) {
        const uint8_t *src = s->x + k * Pin + n;
        if (!s->flip)
            return src;
        for (int64_t j = 0; j < len; j++)
            buf[j] = src[j] ^ 0x80;
        return buf;
    }
    int64_t kw = k % w->k[2], kh = k / w->k[2] % w->k[1], kd = k / (w->k[2] * w->k[1]) % w->k[0];
    int64_t ch = k / (w->k[2] * w->k[1] * w->k[0]);
    const uint8_t *plane = s->x + ch * Pin;
    int64_t OW = w->out[2], OH = w->out[1];
    for (int64_t j = 0; j < len;) {
        int64_t p = n + j, ow = p % OW, oh = p / OW % OH, od = p / (OW * OH);
        int64_t run = MIN(OW - ow, len - j);
        int64_t id = od * w->s[0] - w->pb[0] + kd * w->d[0], ih = oh * w->s[1] - w->pb[1] + kh * w->d[1];
        uint8_t *restrict d = buf + j;
        if (id < 0 || id >= w->in[0] || ih < 0 || ih >= w->in[1]) {
            memset(d, s->pad, (size_t)run);
        } else {
            // Columns [lo, hi) of the run read the image; the rest is padding.
            const uint8_t *restrict src = plane + (id * w->in[1] + ih) * w->in[2];
            int64_t sw = w->s[2], off = kw * w->d[2] - w->pb[2];
            int64_t lo = off + ow * sw >= 0 ? 0 : MIN(run, (-(off + ow * sw) + sw - 1) / sw);
            int64_t last = w->in[2] - 1 - off - ow * sw; // the run's columns i with (ow + i) sw + off < W
            int64_t hi = last < 0 ? lo : MAX(lo, MIN(run, last / sw + 1));
            memset(d, s->pad, (size_t)lo);
            const uint8_t *restrict from = src + ow * sw + off;
            if (sw == 1 && !s->flip)
                memcpy(d + lo, from + lo, (size_t)(hi - lo));
            else if (sw == 1)
                for (int64_t i = lo; i < hi; i++)
                    d[i] = from[i] ^ s->flip;
            else
                for (int64_t i = lo; i < hi; i++)
                    d[i] = from[i * sw] ^ s->flip;
            memset(d + hi, s->pad, (size_t)(run - hi));
        }
        j += run;
    }
    return buf;
}

// ---- The GEMM path

typedef struct gemm_job {
    const qconv_geom *c;
    qgemm_isa isa;
    col_src src;
    qgemm_problem p;
    uint8_t *panels;
    int32_t *colsum;
    int nr;
    int64_t P;           // the GEMM's columns (c->P, or flat's)
    int64_t tile, tiles, m_per, m_tasks;
    // flat: the output with wp columns per row, copied into Y without the extra ones
    void *wide;
    size_t es;
    void *y;
} gemm_job;

static void pack_task(void *arg, int task, int worker)
{
    (void)worker;
    gemm_job *j = arg;
    int64_t n0 = task * j->tile, len = MIN(j->tile, j->P - n0);
    qgemm_pack_panels(j->nr, j->c->K, n0, len, false, col_row, &j->src, j->panels, j->colsum);
}

static void gemm_task(void *arg, int task, int worker)
{
    (void)worker;
    const gemm_job *j = arg;
    int64_t t = task % j->tiles, mt = task / j->tiles;
    int64_t n0 = t * j->tile, n1 = MIN(j->P, n0 + j->tile);
    int64_t m0 = mt * j->m_per, m1 = MIN(j->c->Mg, m0 + j->m_per);
    qgemm_compute(j->isa, &j->p, m0, m1, n0, n1);
}

// Rows [m0, m1) of a flat output into Y, OW of each wp columns.
static void compact_task(void *arg, int task, int worker)
{
    (void)worker;
    const gemm_job *j = arg;
    const nn_window *w = &j->c->w;
    int64_t m0 = task * j->m_per, m1 = MIN(j->c->Mg, m0 + j->m_per), OW = w->out[2], OH = w->out[1];
    for (int64_t m = m0; m < m1; m++)
        for (int64_t oh = 0; oh < OH; oh++)
            memcpy((char *)j->y + (size_t)(m * j->c->P + oh * OW) * j->es,
                   (const char *)j->wide + (size_t)(m * j->P + oh * j->src.f.wp) * j->es, (size_t)OW * j->es);
}

// The group's channels, padded with the zero point, shifted to uint8 and
// split into phases.
static void pad_image(const col_src *s, const uint8_t *x, uint8_t *padded)
{
    const qconv_geom *c = s->c;
    const nn_window *w = &c->w;
    int64_t H = w->in[1], W = w->in[2], hp = s->f.hp, wp = s->f.wp, st = s->f.s;
    for (int64_t ch = 0; ch < c->Cg; ch++)
        for (int64_t ph = 0; ph < st; ph++)
            for (int64_t pw = 0; pw < st; pw++) {
                uint8_t *plane = padded + ((ch * st + ph) * st + pw) * hp * wp;
                // Columns c of this phase read input column c st + pw - pl: inside for [lo, hi).
                int64_t off = pw - w->pb[2];
                int64_t lo = off >= 0 ? 0 : MIN(wp, (-off + st - 1) / st);
                int64_t hi = W - 1 - off < 0 ? lo : MAX(lo, MIN(wp, (W - 1 - off) / st + 1));
                for (int64_t r = 0; r < hp; r++) {
                    uint8_t *restrict d = plane + r * wp;
                    int64_t ih = r * st + ph - w->pb[1];
                    if (ih < 0 || ih >= H) {
                        memset(d, s->pad, (size_t)wp);
                        continue;
                    }
                    const uint8_t *restrict src = x + (ch * H + ih) * W + off;
                    memset(d, s->pad, (size_t)lo);
                    if (st == 1 && !s->flip)
                        memcpy(d + lo, src + lo, (size_t)(hi - lo));
                    else
                        for (int64_t i = lo; i < hi; i++)
                            d[i] = src[i * st] ^ s->flip;
                    memset(d + hi, s->pad, (size_t)(wp - hi));
                }
            }
    memset(padded + c->Cg * st * st * hp * wp, s->pad, (size_t)(2 * wp + 64)); // read by the last rows' dropped columns
}

// Multipliers, one per output channel.
float *qconv_channel_mults(const requant *q, int64_t M, float *dst)
{
    for (int64_t m = 0; m < M; m++)
        dst[m] = q->mult[q->n_mult == 1 ? 0 : m];
    return dst;
}

static int64_t threads_of(const reel_exec_ctx *ctx)
{
    return ctx->workers ? ctx->threads : 1;
}

int qconv_fast(const qconv_geom *c, const reel_tensor *x, const reel_tensor *zx, const reel_tensor *w,
               const reel_tensor *zw, const reel_tensor *bias, int32_t *Y32, const requant *q, void *Y,
               bool w_const, const reel_exec_ctx *ctx)
{
    qgemm_isa isa = qgemm_isa_current();
    if (ctx->scratch_size < qconv_fast_scratch(c))
        return REEL_EINVAL;
    if (qconv_is_depthwise(c))
        return qconv_depthwise(c, isa, x, zx, w, zw, bias, Y32, q, Y, ctx);
    int nr = qgemm_panel_cols(isa);
    flat_geom f = flat_of(c);
    int64_t P = f.on ? f.P : c->P;
    int64_t np = qgemm_np(P, nr), kp = qgemm_kp(c->K), Pin = pin_of(c);
    uint8_t *panels = ctx->scratch;
    int32_t *colsum = (int32_t *)(panels + ((kp * np + 63) & ~(int64_t)63)), *bzp = colsum + np;
    char *rest = (char *)(bzp + np);
    // The weights: packed once when they are constants.
    wpack *wp;
    if (w_const && ctx->state && *ctx->state) {
        wp = *ctx->state;
    } else if (w_const && ctx->state) {
        wp = wpack_make(g_malloc(wpack_bytes(c->M, c->K)), w, zw, c->M, c->K);
        *ctx->state = wp;
    } else {
        wp = wpack_make((void *)(((uintptr_t)rest + 63) & ~(uintptr_t)63), w, zw, c->M, c->K);
        rest += wpack_bytes(c->M, c->K) + 64;
    }
    float *mult = q ? qconv_channel_mults(q, c->M, (float *)(((uintptr_t)rest + 7) & ~(uintptr_t)7)) : NULL;
    rest = (char *)(((uintptr_t)rest + 8 * (size_t)c->M + 63) & ~(uintptr_t)63);
    uint8_t *padded = f.on ? (uint8_t *)rest : NULL;
    void *wide = f.on ? (void *)(((uintptr_t)rest + (size_t)flat_bytes(c, &f) + 63) & ~(uintptr_t)63) : NULL;
    bool xs = x->dtype == REEL_DTYPE_INT8;
    int32_t z = zx ? (xs ? *(const int8_t *)zx->data + 128 : *(const uint8_t *)zx->data) : (xs ? 128 : 0);
    for (int64_t i = 0; i < np; i++)
        bzp[i] = z;
    bool direct = c->w.k[0] * c->w.k[1] * c->w.k[2] == 1 && c->w.s[0] * c->w.s[1] * c->w.s[2] == 1 &&
                  c->w.pb[0] + c->w.pb[1] + c->w.pb[2] == 0 && c->P == Pin;
    int64_t threads = threads_of(ctx);
    // Column tiles whose panels stay in L2 while the rows of W stream by
    // (each tile reads all of W once): 384 KiB of panels on one worker; with
    // several, 192 KiB and enough tiles for the workers, or rows split among
    // them (larger tiles measured slower there: fewer tiles to balance).
    int64_t tile = MAX(nr, MIN(np, ((threads > 1 ? 192 : 384) * 1024 / MAX(kp, 1)) / nr * nr));
    if (threads > 1 && (np + tile - 1) / tile < 2 * threads)
        tile = MAX(nr, (np / (2 * threads) + nr - 1) / nr * nr);
    gemm_job j = { .c = c, .isa = isa, .nr = nr, .P = P, .panels = panels, .colsum = colsum, .tile = tile,
                   .tiles = (P + tile - 1) / tile, .wide = wide, .es = q ? 1 : 4 };
    int64_t *koff = padded ? flat_offsets(c, &f) : NULL;
    j.src = (col_src){ .c = c, .flip = xs ? 0x80 : 0, .pad = (uint8_t)z, .direct = direct, .padded = padded,
                       .koff = koff, .f = f };
    j.m_tasks = MAX(1, MIN((c->Mg + 7) / 8, (2 * threads + j.tiles - 1) / j.tiles));
    j.m_per = ((c->Mg + j.m_tasks - 1) / j.m_tasks + 7) / 8 * 8;
    j.m_tasks = (c->Mg + j.m_per - 1) / j.m_per;
    for (int64_t img = 0; img < c->N; img++)
        for (int64_t g = 0; g < c->G; g++) {
            j.src.x = (const uint8_t *)x->data + (img * c->C + g * c->Cg) * Pin;
            if (padded)
                pad_image(&j.src, j.src.x, padded);
            nn_parallel(ctx, (int)j.tiles, pack_task, &j);
            int64_t m0 = g * c->Mg, y0 = (img * c->M + m0) * c->P;
            j.p = (qgemm_problem){ .a = wp->rows + m0 * wp->Kp, .lda = (size_t)wp->Kp, .a_unsigned = false,
                                   .a_zp = wp->zp + m0, .a_rr = wp->rr + m0, .b = panels, .kq = kp / 4, .nr = nr,
                                   .b_sum = colsum, .b_zp = bzp, .b_zp_one = true };
            j.p.out = (qgemm_out){ .ldc = P, .bias = bias ? (const int32_t *)bias->data + m0 : NULL };
            j.y = q ? (void *)((uint8_t *)Y + y0) : (void *)(Y32 + y0);
            if (q) {
                j.p.out.y = wide ? wide : j.y;
                j.p.out.y_signed = q->dt == REEL_DTYPE_INT8;
                j.p.out.mult = mult + m0;
                j.p.out.zp = q->zp, j.p.out.lo = q->lo, j.p.out.hi = q->hi;
            } else {
                j.p.out.c32 = wide ? wide : j.y;
            }
            nn_parallel(ctx, (int)(j.tiles * j.m_tasks), gemm_task, &j);
            if (wide)
                nn_parallel(ctx, (int)j.m_tasks, compact_task, &j);
        }
    g_free(koff);
    return 0;
}

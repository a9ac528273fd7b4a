// The int8 GEMM (models/cpu/qgemm.c) against reel's fp32 microgemm on the
// same shapes, and QLinearConv against the fp32 Conv on MobileNetV2's and
// ResNet-18's layers, single-threaded. Built by CMake (bench-qgemm-kernel),
// run by bench/qgemm-kernel.
//
//   bench-qgemm-kernel [REPEAT [gemm|conv|dw|all [THREADS]]]   (only those rows; the ops on THREADS workers)
//
// GEMM rows: C[M,N] = W[M,K] X[K,N] as a conv runs it (X packed in panels
// beforehand; int8: zero-point corrections, bias, requantization and a
// clamp in the store; fp32: nn_gemm_epi with bias and Relu). Conv rows: the
// ops as a session runs them (weights prepared once and kept, the image's
// packing or im2col in the time). GOP/s counts 2 M N K; each figure is the
// median of REPEAT batches, int8 and fp32 taking turns, a batch being as
// many calls as take about 10 ms.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "models/cpu/microgemm.h"
#include "models/cpu/qgemm.h"
#include "models/cpu/workers.h"
#include "models/op.h"
#include "clock.h"

static void *rnd_bytes(size_t n)
{
    uint8_t *p = aligned_alloc(64, (n + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench-qgemm-kernel: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)rand();
    return p;
}

static float *rnd_floats(size_t n)
{
    float *p = aligned_alloc(64, (n * 4 + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "bench-qgemm-kernel: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((double)rand() / RAND_MAX * 2 - 1);
    return p;
}

// fn(arg) batches alternating; median seconds per call of each.
static void time_pair(void (*f0)(void *), void *a0, void (*f1)(void *), void *a1, int repeat, double *t0, double *t1)
{
    f0(a0), f1(a1);
    double s = now();
    f0(a0);
    double one = now() - s;
    int calls = (int)(0.01 / (one > 1e-9 ? one : 1e-9)) + 1;
    double *v0 = malloc(sizeof(double) * (size_t)repeat), *v1 = malloc(sizeof(double) * (size_t)repeat);
    for (int r = 0; r < repeat; r++) {
        s = now();
        for (int i = 0; i < calls; i++)
            f0(a0);
        v0[r] = (now() - s) / calls;
        s = now();
        for (int i = 0; i < calls; i++)
            f1(a1);
        v1[r] = (now() - s) / calls;
    }
    *t0 = median(v0, repeat);
    *t1 = median(v1, repeat);
    free(v0);
    free(v1);
}

// ---- GEMM

typedef struct shape {
    int M, K, N;
} shape;

typedef struct qjob {
    qgemm_problem p;
    int M, N;
} qjob;

static void run_q(void *arg)
{
    qjob *j = arg;
    qgemm_compute(qgemm_isa_current(), &j->p, 0, j->M, 0, j->N);
}

typedef struct fjob {
    shape s;
    const float *A, *B, *bias;
    float *C;
} fjob;

static void run_f(void *arg)
{
    fjob *j = arg;
    nn_epilogue e = { .bias = j->bias, .act = NN_ACT_RELU };
    nn_gemm_epi(j->s.M, j->s.N, j->s.K, j->A, j->s.K, j->B, j->s.N, j->C, j->s.N, &e);
}

typedef struct xrows {
    const uint8_t *x;
    int64_t N;
} xrows;

static const uint8_t *x_row(void *arg, int64_t k, int64_t n, int64_t len, uint8_t *buf)
{
    (void)len, (void)buf;
    const xrows *r = arg;
    return r->x + k * r->N + n;
}

static void bench_gemm(shape s, int repeat)
{
    qgemm_isa isa = qgemm_isa_current();
    int nr = qgemm_panel_cols(isa);
    int64_t kp = qgemm_kp(s.K), np = qgemm_np(s.N, nr);
    uint8_t *W = rnd_bytes((size_t)(s.M * kp)), *X = rnd_bytes((size_t)s.K * s.N), *P = rnd_bytes((size_t)(kp * np));
    uint8_t *Y = rnd_bytes((size_t)s.M * s.N);
    int32_t *zp = calloc((size_t)s.M, 4), *rr = calloc((size_t)s.M, 4), *sum = calloc((size_t)np, 4),
            *xz = calloc((size_t)np, 4), *bias = calloc((size_t)s.M, 4);
    float *mult = malloc(sizeof(float) * (size_t)s.M);
    for (int m = 0; m < s.M; m++)
        mult[m] = 1e-4, bias[m] = rand() % 1000;
    xrows xr = { X, s.N };
    qgemm_pack_panels(nr, s.K, 0, s.N, false, x_row, &xr, P, sum);
    qjob q = { .M = s.M, .N = s.N };
    q.p = (qgemm_problem){ .a = W, .lda = (size_t)kp, .a_zp = zp, .a_rr = rr, .b = P, .kq = kp / 4, .nr = nr,
                           .b_sum = sum, .b_zp = xz, .b_zp_one = true };
    q.p.out = (qgemm_out){ .y = Y, .ldc = s.N, .bias = bias, .mult = mult, .zp = 3, .lo = 3, .hi = 255 };
    fjob f = { .s = s, .A = rnd_floats((size_t)s.M * s.K), .B = rnd_floats((size_t)s.K * s.N),
               .bias = rnd_floats((size_t)s.M), .C = rnd_floats((size_t)s.M * s.N) };
    double tq, tf;
    time_pair(run_q, &q, run_f, &f, repeat, &tq, &tf);
    double op = 2.0 * s.M * s.N * s.K * 1e-9;
    printf("gemm  %5d %5d %6d | %8.1f %8.1f | %5.2f\n", s.M, s.K, s.N, op / tq, op / tf, tf / tq);
    free(W), free(X), free(P), free(Y), free(zp), free(rr), free(sum), free(xz), free(bias), free(mult);
    free((void *)f.A), free((void *)f.B), free((void *)f.bias), free(f.C);
}

// ---- Ops: QLinearConv against Conv

typedef struct opjob {
    const reel_op *op;
    reel_ir_graph *g;
    reel_ir_node n;
    int inputs[9], outputs[1];
    reel_tensor *in[9], *out[1];
    reel_exec_ctx ctx;
    void *state;
} opjob;

static reel_tensor *tensor(reel_dtype dt, int rank, const int64_t *shape, double lo, double hi)
{
    reel_tensor *t = reel_tensor_new(dt, rank, shape);
    int64_t n = reel_tensor_count(rank, shape);
    for (int64_t i = 0; i < n; i++) {
        double v = lo + (hi - lo) * (double)rand() / RAND_MAX;
        switch (dt) {
        case REEL_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v; break;
        case REEL_DTYPE_UINT8: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
        case REEL_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
        case REEL_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
        default: break;
        }
    }
    return t;
}

static reel_workers *workers; // the ops' (bench_threads of them), NULL: one thread
static int bench_threads = 1;

static void op_setup(opjob *j, const char *op, int n_in, reel_ir_attr *attrs, int n_attrs)
{
    j->op = reel_op_find(op);
    j->g = reel_ir_graph_new();
    j->g->opset = 19;
    for (int i = 0; i < n_in; i++) {
        char name[8] = { 'x', (char)('0' + i) };
        j->inputs[i] = reel_ir_add_value(j->g, name);
        reel_ir_value *v = reel_ir_value_at(j->g, j->inputs[i]);
        v->dtype = j->in[i]->dtype;
        v->rank = j->in[i]->rank;
        memcpy(v->dims, j->in[i]->shape, sizeof v->dims);
        v->constant = j->in[i];
    }
    j->outputs[0] = reel_ir_add_value(j->g, "y");
    j->n = (reel_ir_node){ .name = "n", .op = (char *)op, .inputs = j->inputs, .n_inputs = n_in,
                           .outputs = j->outputs, .n_outputs = 1, .attrs = attrs, .n_attrs = n_attrs };
    GError *error = NULL;
    if (j->op->infer(j->g, &j->n, &error)) {
        fprintf(stderr, "bench-qgemm-kernel: %s\n", error->message);
        exit(1);
    }
    reel_ir_value *y = reel_ir_value_at(j->g, j->outputs[0]);
    j->out[0] = reel_tensor_new(y->dtype, y->rank, y->dims);
    j->ctx = (reel_exec_ctx){ .opset = 19, .threads = bench_threads, .workers = workers, .state = &j->state,
                              .const_inputs = ~1u };
    j->ctx.scratch_size = j->op->scratch ? j->op->scratch(&j->n, j->in, j->out) : 0;
    j->ctx.scratch = aligned_alloc(64, (j->ctx.scratch_size + 64) / 64 * 64);
}

static void op_free(opjob *j, int n_in)
{
    for (int i = 0; i < n_in; i++) {
        reel_ir_value_at(j->g, j->inputs[i])->constant = NULL;
        reel_tensor_free(&j->in[i]);
    }
    reel_tensor_free(&j->out[0]);
    reel_ir_graph_free(&j->g);
    free(j->ctx.scratch);
    g_free(j->state);
}

static void run_op(void *arg)
{
    opjob *j = arg;
    if (j->op->run(&j->n, j->in, j->out, &j->ctx)) {
        fprintf(stderr, "bench-qgemm-kernel: %s failed\n", j->n.op);
        exit(1);
    }
}

typedef struct layer {
    const char *net;
    int C, H, M, k, s, G;
} layer;

static void bench_conv(layer l, int repeat)
{
    int64_t xs[] = { 1, l.C, l.H, l.H }, ws[] = { l.M, l.C / l.G, l.k, l.k }, M = l.M;
    int64_t ks[] = { l.k, l.k }, st[] = { l.s, l.s }, pads[] = { l.k / 2, l.k / 2, l.k / 2, l.k / 2 };
    reel_ir_attr attrs[] = {
        { .name = "kernel_shape", .type = REEL_ATTR_INTS, .ints = ks, .n = 2 },
        { .name = "strides", .type = REEL_ATTR_INTS, .ints = st, .n = 2 },
        { .name = "pads", .type = REEL_ATTR_INTS, .ints = pads, .n = 4 },
        { .name = "group", .type = REEL_ATTR_INT, .i = l.G },
    };
    opjob q = { 0 }, f = { 0 };
    reel_tensor *in[9] = { tensor(REEL_DTYPE_UINT8, 4, xs, 0, 255), tensor(REEL_DTYPE_FLOAT32, 0, NULL, 0.02, 0.02),
                           tensor(REEL_DTYPE_UINT8, 0, NULL, 3, 3), tensor(REEL_DTYPE_INT8, 4, ws, -127, 127),
                           tensor(REEL_DTYPE_FLOAT32, 1, &M, 0.001, 0.01), tensor(REEL_DTYPE_INT8, 1, &M, 0, 0),
                           tensor(REEL_DTYPE_FLOAT32, 0, NULL, 0.05, 0.05), tensor(REEL_DTYPE_UINT8, 0, NULL, 0, 0),
                           tensor(REEL_DTYPE_INT32, 1, &M, -1000, 1000) };
    memcpy(q.in, in, sizeof in);
    op_setup(&q, "QLinearConv", 9, attrs, 4);
    q.n.fused = "Clip", q.n.fused_a = 0, q.n.fused_b = 6;
    f.in[0] = tensor(REEL_DTYPE_FLOAT32, 4, xs, -1, 1);
    f.in[1] = tensor(REEL_DTYPE_FLOAT32, 4, ws, -1, 1);
    f.in[2] = tensor(REEL_DTYPE_FLOAT32, 1, &M, -1, 1);
    op_setup(&f, "Conv", 3, attrs, 4);
    f.n.fused = "Clip", f.n.fused_a = 0, f.n.fused_b = 6;
    double tq, tf;
    time_pair(run_op, &q, run_op, &f, repeat, &tq, &tf);
    int OH = (l.H + 2 * (l.k / 2) - l.k) / l.s + 1;
    double op = 2.0 * l.M * (l.C / l.G) * l.k * l.k * OH * OH * 1e-9;
    printf("conv  %-9s %4d->%-4d %dx%d/%d at %3d%s | %8.1f %8.1f | %5.2f  (%.3f vs %.3f ms)\n", l.net, l.C, l.M, l.k,
           l.k, l.s, l.H, l.G > 1 ? " dw" : "   ", op / tq, op / tf, tf / tq, tq * 1e3, tf * 1e3);
    op_free(&q, 9);
    op_free(&f, 3);
}

int main(int argc, char **argv)
{
    int repeat = argc > 1 ? atoi(argv[1]) : 9;
    if (repeat < 1 || repeat > 1000)
        repeat = 9;
    srand(1);
    printf("single-threaded, GOP/s (2 M N K), median of %d; int8 kernels: %s\n", repeat,
           qgemm_isa_name(qgemm_isa_current()));
    printf("                 M     K      N |     int8     fp32 | int8/fp32\n");
    static const shape gemms[] = {
        { 96, 16, 12544 }, { 24, 144, 3136 }, { 144, 24, 3136 }, { 192, 32, 784 }, { 64, 384, 196 },
        { 384, 64, 196 },  { 160, 960, 49 },  { 960, 160, 49 },  { 1280, 320, 49 }, { 64, 576, 3136 },
        { 128, 1152, 784 }, { 256, 2304, 196 }, { 512, 4608, 49 },
    };
    const char *only = argc > 2 && strcmp(argv[2], "all") ? argv[2] : "";
    bench_threads = argc > 3 ? atoi(argv[3]) : 1;
    if (bench_threads > 1)
        workers = reel_workers_create(bench_threads);
    else
        bench_threads = 1;
    for (size_t i = 0; i < sizeof gemms / sizeof *gemms && (!*only || !strcmp(only, "gemm")); i++)
        bench_gemm(gemms[i], repeat);
    static const layer convs[] = {
        { "mobilenet", 3, 224, 32, 3, 2, 1 },   { "mobilenet", 32, 112, 32, 3, 1, 32 },
        { "mobilenet", 16, 112, 96, 1, 1, 1 },  { "mobilenet", 96, 112, 96, 3, 2, 96 },
        { "mobilenet", 144, 56, 144, 3, 1, 144 }, { "mobilenet", 144, 56, 24, 1, 1, 1 },
        { "mobilenet", 576, 14, 576, 3, 1, 576 }, { "mobilenet", 576, 14, 576, 3, 2, 576 },
        { "mobilenet", 960, 7, 960, 3, 1, 960 },  { "mobilenet", 960, 7, 160, 1, 1, 1 },
        { "resnet18", 3, 224, 64, 7, 2, 1 },    { "resnet18", 64, 56, 64, 3, 1, 1 },
        { "resnet18", 128, 28, 128, 3, 1, 1 },  { "resnet18", 256, 14, 256, 3, 1, 1 },
        { "resnet18", 512, 7, 512, 3, 1, 1 },   { "resnet18", 256, 14, 512, 1, 2, 1 },
    };
    printf("ops (QLinearConv / Conv with bias and Relu6), %d thread%s |     int8     fp32 | int8/fp32\n",
           bench_threads, bench_threads > 1 ? "s" : "");
    for (size_t i = 0; i < sizeof convs / sizeof *convs; i++)
        if (!*only || !strcmp(only, "conv") || (!strcmp(only, "dw") && convs[i].G > 1))
            bench_conv(convs[i], repeat);
    reel_workers_destroy(&workers);
    return 0;
}

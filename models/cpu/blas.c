// OpenBLAS: loaded when the first session needs it, and the sgemm wrapper
// every nn kernel uses.
//
// Loading it on demand keeps its 35 MB (and libgfortran) out of programs
// that never run a model on the cpu. The library changes nothing of
// OpenBLAS's process-wide settings unless reel_init_params asks:
// blas_threads sets its thread count once, when it loads.
//
// Threads: kernels get reel's own workers (models/cpu/workers.c); Conv
// splits its im2col, GEMM and depthwise work over them, each piece calling
// sgemm, which should then be single-threaded (blas_threads=1, as the reel
// program sets) so that the two never oversubscribe the cores.
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include <glib.h>

#include "models/cpu/blas.h"
#include "models/cpu/nn.h"
#include "reel/model.h"

#define OPENBLAS_SONAME "libopenblas.so.0"

static struct {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(openblas_get_corename) *corename;
    __typeof__(openblas_set_num_threads) *set_threads;
    int (*thread_shutdown)(void); // pthreads builds: stops OpenBLAS's own pool
    char error[256];             // why it did not load
} blas;

static int configured_threads;

void reel_blas_configure(int threads)
{
    configured_threads = threads;
}

static gpointer load_once(gpointer unused)
{
    (void)unused;
    void *h = dlopen(OPENBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        g_strlcpy(blas.error, dlerror(), sizeof blas.error);
        return NULL;
    }
    blas.sgemm = (__typeof__(blas.sgemm))dlsym(h, "cblas_sgemm");
    blas.corename = (__typeof__(blas.corename))dlsym(h, "openblas_get_corename");
    blas.set_threads = (__typeof__(blas.set_threads))dlsym(h, "openblas_set_num_threads");
    blas.thread_shutdown = (int (*)(void))dlsym(h, "blas_thread_shutdown_");
    if (!blas.sgemm) {
        g_snprintf(blas.error, sizeof blas.error, "%s has no cblas_sgemm", OPENBLAS_SONAME);
        return NULL;
    }
    if (configured_threads > 0 && blas.set_threads)
        blas.set_threads(configured_threads);
    // One thread: its idle pool would only spin beside reel's workers.
    if (configured_threads == 1 && blas.thread_shutdown)
        blas.thread_shutdown();
    return NULL;
}

void reel_blas_setup(void)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, load_once, NULL);
}

const char *reel_blas_corename(void)
{
    reel_blas_setup();
    return blas.corename ? blas.corename() : "none";
}

// Cores whose kernels use AVX-512, and AVX2.
static bool in_list(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (g_ascii_strcasecmp(name, *list) == 0)
            return true;
    return false;
}

const char *reel_model_blas_core_for_cpu(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
    return NULL;
}

static gpointer describe_once(gpointer info)
{
    static const char *const avx512_cores[] = { "SkylakeX", "Cooperlake", "SapphireRapids", NULL };
    static const char *const avx2_cores[] = { "Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids",
                                              "Excavator", NULL };
    reel_blas_setup();
    if (!blas.sgemm) {
        g_snprintf(info, 256, "no OpenBLAS (%s): plain C GEMM, slow", blas.error);
        return NULL;
    }
    const char *core = reel_blas_corename(), *best = reel_model_blas_core_for_cpu();
    // Debian's 0.3.21 does not know recent CPUs and falls back to SSE3 kernels.
    bool behind = best && !in_list(core, strcmp(best, "SkylakeX") == 0 ? avx512_cores : avx2_cores);
    g_snprintf(info, 256, "OpenBLAS %s kernels%s%s%s", core, behind ? "; this CPU runs faster ones: "
                                                                     "OPENBLAS_CORETYPE=" : "",
               behind ? best : "", behind ? " before the process starts" : "");
    return NULL;
}

const char *reel_model_cpu_info(void)
{
    static char info[256];
    static GOnce once = G_ONCE_INIT;
    g_once(&once, describe_once, info);
    return info;
}

void nn_sgemm(bool ta, bool tb, int M, int N, int K, float alpha, const float *A, int lda,
              const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) { // OpenBLAS leaves C alone then; ONNX wants beta*C
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0 ? 0 : beta * C[(size_t)i * ldc + j];
        return;
    }
    if (!blas.sgemm) { // no OpenBLAS: correct, not fast
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double sum = 0;
                for (int k = 0; k < K; k++)
                    sum += (double)A[ta ? (size_t)k * lda + i : (size_t)i * lda + k] *
                           B[tb ? (size_t)j * ldb + k : (size_t)k * ldb + j];
                float *c = &C[(size_t)i * ldc + j];
                *c = (float)(alpha * sum + (beta == 0 ? 0 : beta * *c));
            }
        return;
    }
    blas.sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
               lda, B, ldb, beta, C, ldc);
}

typedef struct gemm_split {
    bool ta, tb, by_rows;
    int M, N, K, lda, ldb, ldc, per_task;
    float alpha, beta;
    const float *A, *B;
    float *C;
} gemm_split;

static void gemm_split_task(void *arg, int task, int worker)
{
    (void)worker;
    const gemm_split *g = arg;
    int i0 = task * g->per_task, n = MIN(g->per_task, (g->by_rows ? g->M : g->N) - i0);
    if (g->by_rows) // rows of op(A): row i0 of A, or its column i0 when transposed
        nn_sgemm(g->ta, g->tb, n, g->N, g->K, g->alpha, g->A + (g->ta ? (size_t)i0 : (size_t)i0 * g->lda), g->lda, g->B,
                 g->ldb, g->beta, g->C + (size_t)i0 * g->ldc, g->ldc);
    else // columns of op(B)
        nn_sgemm(g->ta, g->tb, g->M, n, g->K, g->alpha, g->A, g->lda, g->B + (g->tb ? (size_t)i0 * g->ldb : (size_t)i0),
                 g->ldb, g->beta, g->C + i0, g->ldc);
}

void nn_sgemm_parallel(const reel_exec_ctx *ctx, bool ta, bool tb, int M, int N, int K, float alpha,
                       const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    int threads = ctx->workers ? ctx->threads : 1;
    // Below ~0.2 MFLOP waking the other threads costs more than it saves.
    if (threads < 2 || (double)M * N * K < 1e5) {
        nn_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    gemm_split g = { ta, tb, M >= N, M, N, K, lda, ldb, ldc, 0, alpha, beta, A, B, C };
    int len = g.by_rows ? M : N;
    // Column slices in whole cache lines, so threads never share one of C's.
    int unit = g.by_rows ? 1 : 16;
    g.per_task = ((len + threads - 1) / threads + unit - 1) / unit * unit;
    nn_parallel(ctx, (len + g.per_task - 1) / g.per_task, gemm_split_task, &g);
}

int nn_check_fused(const reel_ir_node *n, GError **error)
{
    static const char *const known[] = { "Relu", "Clip", "Sigmoid", "SiLU", "HardSigmoid", "HardSwish", NULL };
    if (n->fused && !in_list(n->fused, known))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "fused activation %s is not supported", n->fused);
    return 0;
}

void nn_activate(const reel_ir_node *n, float *y, size_t len)
{
    const char *f = n->fused;
    if (!f)
        return;
    if (strcmp(f, "Relu") == 0) {
        for (size_t i = 0; i < len; i++)
            y[i] = y[i] > 0 ? y[i] : 0;
    } else if (strcmp(f, "Clip") == 0) {
        float lo = n->fused_a, hi = n->fused_b;
        for (size_t i = 0; i < len; i++)
            y[i] = y[i] < lo ? lo : y[i] > hi ? hi : y[i];
    } else if (strcmp(f, "Sigmoid") == 0) {
        for (size_t i = 0; i < len; i++)
            y[i] = 1.0f / (1.0f + expf(-y[i]));
    } else if (strcmp(f, "SiLU") == 0) {
        for (size_t i = 0; i < len; i++)
            y[i] = y[i] / (1.0f + expf(-y[i]));
    } else if (strcmp(f, "HardSigmoid") == 0) {
        float a = n->fused_a, b = n->fused_b;
        for (size_t i = 0; i < len; i++) {
            float v = a * y[i] + b;
            y[i] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
    } else if (strcmp(f, "HardSwish") == 0) {
        // From HardSigmoid(alpha, beta)·Mul when the pass kept the
        // parameters; ONNX HardSwish's own 1/6 and 1/2 otherwise.
        float a = n->fused_a, b = n->fused_b;
        if (a == 0 && b == 0)
            a = 1.0f / 6, b = 0.5f;
        for (size_t i = 0; i < len; i++) {
            float v = a * y[i] + b;
            y[i] *= v < 0 ? 0 : v > 1 ? 1 : v;
        }
    }
}

int nn_window_init(const reel_ir_node *n, int sp, const int64_t *in, const int64_t *kernel,
                   bool ceil_allowed, nn_window *w, GError **error)
{
    if (sp < 1 || sp > 3)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%d spatial dims (1 to 3 supported)", sp);
    int nk, ns, nd, np;
    const int64_t *k = reel_ir_attr_ints(n, "kernel_shape", &nk);
    const int64_t *s = reel_ir_attr_ints(n, "strides", &ns);
    const int64_t *d = reel_ir_attr_ints(n, "dilations", &nd);
    const int64_t *p = reel_ir_attr_ints(n, "pads", &np);
    const char *auto_pad = reel_ir_attr_string(n, "auto_pad", "NOTSET");
    int64_t ceil_mode = reel_ir_attr_int(n, "ceil_mode", 0);
    if (!k && !kernel)
        NN_FAIL(error, REEL_EINVAL, n, "kernel_shape is required");
    if ((k && nk != sp) || (s && ns != sp) || (d && nd != sp) || (p && np != 2 * sp))
        NN_FAIL(error, REEL_EINVAL, n, "kernel_shape/strides/dilations/pads do not match %d spatial dims", sp);
    if (ceil_mode && !ceil_allowed)
        NN_FAIL(error, REEL_EINVAL, n, "ceil_mode is not an attribute of this op");
    memset(w, 0, sizeof *w);
    w->sp = sp;
    int off = 3 - sp;
    for (int i = 0; i < 3; i++) {
        w->in[i] = w->out[i] = w->k[i] = w->s[i] = w->d[i] = 1;
    }
    for (int i = 0; i < sp; i++) {
        int j = off + i;
        w->in[j] = in[i];
        w->k[j] = k ? k[i] : kernel[i];
        if (kernel && k && k[i] != kernel[i])
            NN_FAIL(error, REEL_EINVAL, n, "kernel_shape[%d] = %" G_GINT64_FORMAT " but the weights say %" G_GINT64_FORMAT,
                    i, k[i], kernel[i]);
        w->s[j] = s ? s[i] : 1;
        w->d[j] = d ? d[i] : 1;
        w->pb[j] = p ? p[i] : 0;
        w->pe[j] = p ? p[sp + i] : 0;
        if (w->k[j] < 1 || w->s[j] < 1 || w->d[j] < 1 || w->pb[j] < 0 || w->pe[j] < 0)
            NN_FAIL(error, REEL_EINVAL, n, "kernel, strides and dilations must be positive, pads not negative");
    }
    bool same = strcmp(auto_pad, "SAME_UPPER") == 0 || strcmp(auto_pad, "SAME_LOWER") == 0;
    if (!same && strcmp(auto_pad, "VALID") != 0 && strcmp(auto_pad, "NOTSET") != 0)
        NN_FAIL(error, REEL_EINVAL, n, "auto_pad %s is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", auto_pad);
    for (int i = 0; i < sp; i++) {
        int j = off + i;
        int64_t ek = (w->k[j] - 1) * w->d[j] + 1;
        if (w->in[j] < 0) {
            w->out[j] = REEL_DIM_UNKNOWN;
            continue;
        }
        if (same) {
            w->out[j] = (w->in[j] + w->s[j] - 1) / w->s[j];
            int64_t total = (w->out[j] - 1) * w->s[j] + ek - w->in[j];
            if (total < 0)
                total = 0;
            bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
            w->pb[j] = upper ? total / 2 : total - total / 2;
            w->pe[j] = total - w->pb[j];
            continue;
        }
        if (strcmp(auto_pad, "VALID") == 0)
            w->pb[j] = w->pe[j] = 0;
        int64_t span = w->in[j] + w->pb[j] + w->pe[j] - ek;
        if (span < 0)
            NN_FAIL(error, REEL_EINVAL, n, "window (%" G_GINT64_FORMAT ") larger than the padded input", ek);
        if (ceil_mode) {
            w->out[j] = (span + w->s[j] - 1) / w->s[j] + 1;
            // The last window must start inside the input or its begin pad.
            if ((w->out[j] - 1) * w->s[j] >= w->in[j] + w->pb[j])
                w->out[j]--;
        } else {
            w->out[j] = span / w->s[j] + 1;
        }
    }
    return 0;
}

// ---- Thread pool
//

// OpenBLAS: core-type check and the sgemm wrapper every nn kernel uses;
// reel's thread pool for the kernels that split their work.
//
// Threads: a session keeps OpenBLAS single-threaded and gives kernels its own
// pool (reel_pool); Conv splits its im2col, GEMM and depthwise work over it,
// each piece calling single-threaded sgemm, so the two pools never run at
// once and never oversubscribe the cores.
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include <glib.h>

#include "models/cpu/blas.h"
#include "models/cpu/nn.h"

// OpenBLAS (DYNAMIC_ARCH builds) exports these: quit forgets the selected
// core table, init selects again, reading OPENBLAS_CORETYPE.
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

static char setup_note[128];

// Cores whose kernels use AVX2 (and, for the first group, AVX-512).
static bool in_list(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (g_ascii_strcasecmp(name, *list) == 0)
            return true;
    return false;
}

static gpointer setup_once(gpointer unused)
{
    (void)unused;
    static const char *const avx512_cores[] = { "SkylakeX", "Cooperlake", "SapphireRapids", NULL };
    static const char *const avx2_cores[] = { "Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids",
                                              "Excavator", NULL };
    if (getenv("OPENBLAS_CORETYPE"))
        return NULL; // the user's choice always wins
    const char *core = openblas_get_corename();
    const char *want = NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        if (!in_list(core, avx512_cores))
            want = "SkylakeX";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        if (!in_list(core, avx2_cores))
            want = "Haswell";
    }
    if (!want || !gotoblas_dynamic_init || !gotoblas_dynamic_quit)
        return NULL;
    char old[64];
    g_strlcpy(old, core, sizeof old);
    // setenv is not thread-safe: this runs once, under g_once, at the first
    // session; the variable is removed again so child processes see the
    // environment they were given.
    setenv("OPENBLAS_CORETYPE", want, 1);
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
    g_snprintf(setup_note, sizeof setup_note, "OpenBLAS chose %s kernels; switched to %s", old,
               openblas_get_corename());
    return NULL;
}

void reel_blas_setup(void)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, setup_once, NULL);
}

const char *reel_blas_setup_note(void)
{
    reel_blas_setup();
    return setup_note[0] ? setup_note : NULL;
}

const char *reel_blas_corename(void)
{
    reel_blas_setup();
    return openblas_get_corename();
}

void reel_blas_set_threads(int threads)
{
    if (threads > 0 && openblas_get_num_threads() != threads)
        openblas_set_num_threads(threads);
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
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha,
                A, lda, B, ldb, beta, C, ldc);
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
// One job at a time: `state` packs the job's generation (high 32 bits) and
// its next unclaimed task (low 32 bits). A thread claims a task by CAS on the
// exact state it read, so it can never run a task of a job other than the
// one whose fields it read: publishing first closes the state (task index
// CLOSED, claimable by nobody), then writes the fields, then opens it.

#define CLOSED 0xffffffffu
#define SPIN_US 300 // idle workers spin this long before sleeping

struct reel_pool {
    int threads;
    GThread **workers;
    _Atomic uint64_t state;
    _Atomic(nn_task_fn) fn;
    _Atomic(void *) arg;
    atomic_int n_tasks, done, sleeping;
    atomic_bool quit;
    GMutex lock;
    GCond wake;
};

typedef struct worker_start {
    reel_pool *p;
    int id;
} worker_start;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// Claims and runs tasks of the current job until none is left; true when it
// ran at least one.
static bool pool_work(reel_pool *p, int id)
{
    bool ran = false;
    for (;;) {
        uint64_t st = atomic_load(&p->state);
        uint32_t idx = (uint32_t)st;
        nn_task_fn fn = atomic_load(&p->fn);
        void *arg = atomic_load(&p->arg);
        int n = atomic_load(&p->n_tasks);
        if (idx == CLOSED || idx >= (uint32_t)n)
            return ran;
        if (!atomic_compare_exchange_weak(&p->state, &st, st + 1))
            continue;
        fn(arg, (int)idx, id);
        atomic_fetch_add(&p->done, 1);
        ran = true;
    }
}

static gpointer worker_main(gpointer data)
{
    worker_start *ws = data;
    reel_pool *p = ws->p;
    int id = ws->id;
    g_free(ws);
    uint32_t seen = (uint32_t)(atomic_load(&p->state) >> 32);
    while (!atomic_load(&p->quit)) {
        gint64 until = 0;
        for (int spins = 0;; spins++) {
            uint64_t st = atomic_load(&p->state);
            if ((uint32_t)(st >> 32) != seen && (uint32_t)st != CLOSED) {
                seen = (uint32_t)(st >> 32);
                break;
            }
            if (atomic_load(&p->quit))
                return NULL;
            cpu_relax();
            if ((spins & 255) != 255)
                continue;
            gint64 now = g_get_monotonic_time();
            if (!until) {
                until = now + SPIN_US;
                continue;
            }
            if (now < until)
                continue;
            // Sleep until the generation moves (see reel_pool_run for why
            // `sleeping` then the state, both sequentially consistent).
            g_mutex_lock(&p->lock);
            atomic_fetch_add(&p->sleeping, 1);
            while (!atomic_load(&p->quit) && (uint32_t)(atomic_load(&p->state) >> 32) == seen)
                g_cond_wait(&p->wake, &p->lock);
            atomic_fetch_sub(&p->sleeping, 1);
            g_mutex_unlock(&p->lock);
            until = 0;
        }
        pool_work(p, id);
    }
    return NULL;
}

reel_pool *reel_pool_create(int threads)
{
    if (threads < 2)
        return NULL;
    reel_pool *p = g_new0(reel_pool, 1);
    p->threads = threads;
    g_mutex_init(&p->lock);
    g_cond_init(&p->wake);
    atomic_store(&p->state, (uint64_t)CLOSED);
    p->workers = g_new0(GThread *, threads);
    for (int i = 1; i < threads; i++) {
        worker_start *ws = g_new(worker_start, 1);
        *ws = (worker_start){ p, i };
        p->workers[i] = g_thread_new("reel-pool", worker_main, ws);
    }
    return p;
}

void reel_pool_destroy(reel_pool **pp)
{
    reel_pool *p = pp ? *pp : NULL;
    if (!p)
        return;
    g_mutex_lock(&p->lock);
    atomic_store(&p->quit, true);
    g_cond_broadcast(&p->wake);
    g_mutex_unlock(&p->lock);
    for (int i = 1; i < p->threads; i++)
        g_thread_join(p->workers[i]);
    g_free(p->workers);
    g_mutex_clear(&p->lock);
    g_cond_clear(&p->wake);
    g_free(p);
    *pp = NULL;
}

static void pool_run(reel_pool *p, int n_tasks, nn_task_fn fn, void *arg)
{
    uint32_t gen = (uint32_t)(atomic_load(&p->state) >> 32) + 1;
    atomic_store(&p->state, (uint64_t)gen << 32 | CLOSED);
    atomic_store(&p->fn, fn);
    atomic_store(&p->arg, arg);
    atomic_store(&p->n_tasks, n_tasks);
    atomic_store(&p->done, 0);
    atomic_store(&p->state, (uint64_t)gen << 32);
    // A worker about to sleep counts itself, then reads the state; we wrote
    // the state, then read the count: one of the two sees the other.
    if (atomic_load(&p->sleeping) > 0) {
        g_mutex_lock(&p->lock);
        g_cond_broadcast(&p->wake);
        g_mutex_unlock(&p->lock);
    }
    pool_work(p, 0);
    for (int spins = 0; atomic_load(&p->done) < n_tasks; spins++) {
        cpu_relax();
        if ((spins & 1023) == 1023)
            g_thread_yield(); // a worker descheduled mid-task on a busy machine
    }
}

void nn_parallel(const reel_exec_ctx *ctx, int n_tasks, nn_task_fn fn, void *arg)
{
    if (n_tasks <= 0)
        return;
    if (!ctx->pool || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++)
            fn(arg, t, 0);
        return;
    }
    pool_run(ctx->pool, n_tasks, fn, arg);
}

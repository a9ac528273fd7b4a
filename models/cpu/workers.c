// reel's worker threads for kernels that split their work (nn_parallel).
#include <stdatomic.h>
#include <stdint.h>
#include <glib.h>

#include "models/cpu/nn.h"
#include "models/cpu/workers.h"

// One job at a time: `state` packs the job's generation (high 32 bits) and
// its next unclaimed task (low 32 bits). A thread claims a task by CAS on the
// exact state it read, so it can never run a task of a job other than the
// one whose fields it read: publishing first closes the state (task index
// CLOSED, claimable by nobody), then writes the fields, then opens it.

#define CLOSED 0xffffffffu
#define SPIN_US 300 // idle workers spin this long before sleeping

struct reel_workers {
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
    reel_workers *p;
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
static bool pool_work(reel_workers *p, int id)
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
    reel_workers *p = ws->p;
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
            // Sleep until the generation moves (see reel_workers_run for why
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

reel_workers *reel_workers_create(int threads)
{
    if (threads < 2)
        return NULL;
    reel_workers *p = g_new0(reel_workers, 1);
    p->threads = threads;
    g_mutex_init(&p->lock);
    g_cond_init(&p->wake);
    atomic_store(&p->state, (uint64_t)CLOSED);
    p->workers = g_new0(GThread *, threads);
    for (int i = 1; i < threads; i++) {
        worker_start *ws = g_new(worker_start, 1);
        *ws = (worker_start){ p, i };
        p->workers[i] = g_thread_new("reel-kernels", worker_main, ws);
    }
    return p;
}

void reel_workers_destroy(reel_workers **pp)
{
    reel_workers *p = pp ? *pp : NULL;
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

static void pool_run(reel_workers *p, int n_tasks, nn_task_fn fn, void *arg)
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
    if (!ctx->workers || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++)
            fn(arg, t, 0);
        return;
    }
    pool_run(ctx->workers, n_tasks, fn, arg);
}

// reel's own threads for kernels that split their work (nn_parallel in
// models/cpu/nn.h): threads - 1 workers plus the calling thread. Workers spin
// briefly between jobs (kernels come back to back within a run), then sleep.
// Only models/ includes this.
#ifndef REEL_MODELS_CPU_WORKERS_H
#define REEL_MODELS_CPU_WORKERS_H

// NULL when threads < 2. Thread-safety: one job at a time; a session uses its
// workers from the thread that runs it.
typedef struct reel_workers reel_workers;
reel_workers *reel_workers_create(int threads);
void reel_workers_destroy(reel_workers **w);

#endif

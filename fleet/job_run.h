// One job running in a worker: its pipeline on a thread of its own, the
// delivery it came in, what the worker reports about it.
#ifndef REEL_FLEET_JOB_RUN_H
#define REEL_FLEET_JOB_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include <nats/nats.h>

#include "fleet/jobs.h"

struct fleet_policy;

// Where and under which rules a worker runs its jobs; outlives every run.
typedef struct fleet_run_env {
    const char *device;               // "cpu", "auto", "vulkan:N", or NULL: as the job says
    const struct fleet_policy *policy; // NULL: none (every job is trusted)
    natsConnection *nc;               // the worker's, shared with each job's natssinks; may be NULL
} fleet_run_env;

typedef struct fleet_job_run {
    fleet_job *job;
    natsMsg *msg;            // the delivery; the worker acknowledges it
    int attempt;             // 1 for the first delivery
    int64_t started_us;
    int64_t progress_us;     // when the server last heard the job is in progress
    int64_t stall_frames;    // frames when the worker last saw them change, and when
    int64_t stall_since_us;
    int64_t frames_seen;     // frames at the last health report, and when
    int64_t frames_seen_us;
    bool released;           // handed back (nak) before its end: not acknowledged again
    char *stopped_why;       // the worker ended it (ran too long, stalled): why, in place of its error
    bool stopped_permanent;  // ... and retrying cannot help

    // Set by the run's thread; read once `finished` is.
    int rc;                  // 0, or the REEL_E* code of the failure
    bool permanent;          // the description is wrong: retrying cannot help
    bool refused;            // by the policy, before anything ran (permanent too)
    char *error;
    int64_t frames;          // frames that reached the sinks, at the end

    GThread *thread;
    GMutex lock;
    struct reel_pipeline *pipeline; // while running, under lock
    bool stop_asked;         // under lock
    gint finished;           // atomic
} fleet_job_run;

// Starts the job's pipeline, checked against env->policy first. Takes
// ownership of job and msg.
fleet_job_run *fleet_job_run_start(fleet_job *job, natsMsg *msg, int attempt, const fleet_run_env *env);
bool fleet_job_run_finished(fleet_job_run *r);
// Ends the run now (sources stop, nothing drains); it then finishes with an error.
void fleet_job_run_abort(fleet_job_run *r);
// Frames that reached the sinks so far.
int64_t fleet_job_run_frames(fleet_job_run *r);
// Waits for the thread and frees the run (and its msg). NULL-safe.
void fleet_job_run_free(fleet_job_run **r);

#endif

// A worker's health report: what it runs and how fast, as JSON, published
// on reel.workers.NAME and kept under NAME in the REEL_WORKERS bucket.
#ifndef REEL_FLEET_WORKER_HEALTH_H
#define REEL_FLEET_WORKER_HEALTH_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "fleet/jobs.h"

typedef struct fleet_worker_info {
    const char *name;
    const char *device;   // where its pipelines run
    int max_jobs;
    int64_t jobs_done, jobs_failed;
    bool draining;        // stopping: takes no more jobs
} fleet_worker_info;

// {"name", "device", "draining", "max_jobs", "jobs_running", "jobs_done", "jobs_failed",
//  "jobs": [{"id", "kind", "attempt", "frames", "fps"}], "updated"}; fps since the
// last report (runs: fleet_job_run *, their frames_seen updated).
char *fleet_health_json(const fleet_worker_info *w, GPtrArray *runs);

// Publishes the report and keeps it in the bucket; a failure is reported
// on standard error and otherwise ignored (the next report may get through).
void fleet_health_publish(fleet *f, const char *name, const char *json);

#endif

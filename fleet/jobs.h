// The job queue on NATS JetStream, shared by `reel worker`, `reel submit`
// and `reel jobs`:
//
//   stream REEL_JOBS        work queue on reel.jobs.> (reel.jobs.file, reel.jobs.live):
//                           one message per job, removed once a worker acknowledges it
//   consumer reel-workers   durable pull consumer all workers share
//   KV REEL_JOB_STATE       per job id: {"id", "kind", "state", "worker", "error", "attempts", "updated"}
//                           state: queued, running, done or failed
//   KV REEL_WORKERS         per worker name: its last health report, gone once it stops reporting
//   subject reel.workers.N  worker N's health, every few seconds
#ifndef REEL_FLEET_JOBS_H
#define REEL_FLEET_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>
#include <nats/nats.h>

#include "elements/nats_connect.h"

#define FLEET_JOBS_STREAM "REEL_JOBS"
#define FLEET_JOBS_CONSUMER "reel-workers"
#define FLEET_STATE_BUCKET "REEL_JOB_STATE"
#define FLEET_WORKERS_BUCKET "REEL_WORKERS"
#define FLEET_WORKERS_SUBJECT "reel.workers"

typedef enum { FLEET_JOB_FILE, FLEET_JOB_LIVE } fleet_job_kind;

typedef struct fleet_job {
    char *id;
    fleet_job_kind kind;
    char *pipeline;   // description text, {NAME} placeholders unreplaced
    char **inputs;    // NULL-terminated NAME, VALUE, NAME, VALUE, ...; may be NULL
} fleet_job;

// What the queue's users hold: a connection, JetStream, the two buckets.
typedef struct fleet {
    natsConnection *nc;
    jsCtx *js;
    kvStore *states;
    kvStore *workers;
} fleet;

// Connects with `nats` (server, login, TLS) as `client` and makes the
// stream and the buckets when missing (worker_ttl_ms: how long a worker's
// health outlives its last report; 0: 6 s; the first to make the bucket sets
// it). Returns 0, or REEL_EIO (REEL_EINVAL: settings that cannot work) with
// *error set. fleet_close() in any case.
int fleet_open(fleet *f, const reel_nats_settings *nats, const char *client, int64_t worker_ttl_ms, GError **error);
void fleet_close(fleet *f);

// Binds `sub` to the shared pull consumer, created when missing with the
// given ack wait and deliveries at most.
int fleet_subscribe(fleet *f, int64_t ack_wait_ms, int max_deliver, natsSubscription **sub, GError **error);

// A new job id: "j-" and 16 hex digits.
char *fleet_job_new_id(void);
char *fleet_job_to_json(const fleet_job *job);
// Parses a job; REEL_EFORMAT with *error set when it is not one.
fleet_job *fleet_job_from_json(const char *data, int len, GError **error);
void fleet_job_free(fleet_job *job);
const char *fleet_job_kind_name(fleet_job_kind kind);
// What {NAME} stands for in the job's property values, for
// reel_pipeline_params.values: "job", the id, then each input (g_free the
// array only; the strings are the job's).
const char **fleet_job_values(const fleet_job *job);
// Whether `id` may name a job: 1 to 128 letters, digits, '-', '_' or '='
// (a key of the state bucket, safe in a log line).
bool fleet_job_id_valid(const char *id);

// Records the job as queued, then queues it (the id doubles as the message
// id: submitting the same job twice queues it once).
int fleet_submit(fleet *f, const fleet_job *job, GError **error);

// Writes a job's state; worker and reason may be NULL.
// The attempts the job's recorded state counts (0 when it has none).
int fleet_state_attempts(fleet *f, const char *id);
int fleet_state_put(fleet *f, const char *id, fleet_job_kind kind, const char *state, const char *worker,
                    const char *reason, int attempts, GError **error);

#endif

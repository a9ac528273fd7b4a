// reel worker: takes jobs from the NATS JetStream queue (fleet/jobs.h) and
// runs them, up to --max-jobs at a time, until SIGTERM or SIGINT.
//
// A file job is acknowledged once its pipeline ended and its outputs are
// finalized; a failed one is handed back with a delay to be retried (up to
// --max-deliver deliveries), unless its description is wrong, which no retry
// mends: it is terminated at once. Every running job tells the server it is
// in progress each third of the ack wait, so that a job outlives the ack
// wait only while its worker does: a worker that dies hands its jobs to the
// others once the ack wait passes.
//
// SIGTERM: take no more jobs, hand live jobs back at once (another worker
// picks them up), let file jobs finish. A second signal aborts them too.
//
// Every job is checked against the worker's policy (fleet/policy.h) before
// it runs: a job that breaks it is refused, recorded so, never retried. A
// file job running past the policy's max-run fails; a job none of whose
// frames reached a sink for the policy's stall time is handed back to be
// retried. Text from the queue (ids, errors) is printed with its control
// characters escaped.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/redact.h"
#include "elements/nats_connect.h"
#include "fleet/job_run.h"
#include "fleet/jobs.h"
#include "fleet/policy.h"
#include "fleet/worker_health.h"
#include "reel/reel.h"
#include "tools/cli.h"

enum { FETCH_WAIT_MS = 250, IDLE_WAIT_US = 100000 };

typedef struct worker_opts {
    const char *name, *device, *policy;
    reel_nats_settings nats;
    int max_jobs, max_deliver;
    int64_t ack_wait_ms, retry_delay_ms, health_ms;
} worker_opts;

typedef struct worker {
    worker_opts o;
    fleet f;
    fleet_policy *policy;
    natsSubscription *sub;
    GPtrArray *runs;       // fleet_job_run *
    fleet_worker_info info;
    int64_t last_health_us;
} worker;

static const char worker_usage[] =
    "usage: reel worker --nats URL [OPTIONS]\n"
    "\n"
    "  --name NAME          this worker's name (letters, digits, - and _; default HOST-PID)\n"
    "  --max-jobs K         jobs run at once (default 1)\n"
    "  --device SPEC        where the pipelines run: cpu, auto, vulkan:N (default: as each job says, else cpu)\n"
    "  --policy FILE        what a job may do: elements, the root its files are beneath, URL schemes\n"
    "                       and hosts, run and stall times (default: files beneath the working folder,\n"
    "                       no URLs, no test hooks; README, Security)\n"
    "  --ack-wait TIME      how long a job stays with a silent worker before another takes it\n"
    "                       (default 30s; used when the queue's consumer is created)\n"
    "  --max-deliver N      deliveries of a job at most (default 3; idem)\n"
    "  --retry-delay TIME   wait before a failed job is delivered again (default 2s)\n"
    "  --health-every TIME  period of health reports on reel.workers.NAME (default 2s)\n"
    "\n"
    REEL_NATS_USAGE
    "\n"
    "Jobs' natssinks without a url publish over the worker's connection, with its login and TLS.\n"
    "TIME: a number with ms, s, m or h (\"500ms\", \"5s\"); s when none.\n";

static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
    (void)sig;
    signals_seen++;
}

static bool parse_count(const char *text, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || end == text || v <= 0 || v > 1000)
        return false;
    *out = (int)v;
    return true;
}

static bool valid_name(const char *name)
{
    if (!*name || strlen(name) > 64)
        return false;
    for (const char *c = name; *c; c++)
        if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_')
            return false;
    return true;
}

static int parse_opts(int argc, char **argv, worker_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool ok = v != NULL;
        GError *err = NULL;
        int took = reel_nats_settings_option(&o->nats, a, v, &err);
        if (took < 0) {
            fprintf(stderr, "reel worker: %s\n\n%s", err->message, worker_usage);
            g_error_free(err);
            return -1;
        }
        if (took > 0) {
            i += took - 1;
            continue;
        }
        if (strcmp(a, "--name") == 0 && v)
            ok = valid_name(o->name = v);
        else if (strcmp(a, "--device") == 0 && v)
            o->device = v;
        else if (strcmp(a, "--policy") == 0 && v)
            o->policy = v;
        else if (strcmp(a, "--max-jobs") == 0 && v)
            ok = parse_count(v, &o->max_jobs);
        else if (strcmp(a, "--max-deliver") == 0 && v)
            ok = parse_count(v, &o->max_deliver);
        else if (strcmp(a, "--ack-wait") == 0 && v)
            ok = fleet_parse_time_ms(v, &o->ack_wait_ms);
        else if (strcmp(a, "--retry-delay") == 0 && v)
            ok = fleet_parse_time_ms(v, &o->retry_delay_ms);
        else if (strcmp(a, "--health-every") == 0 && v)
            ok = fleet_parse_time_ms(v, &o->health_ms);
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "reel worker: bad option '%s%s%s'\n\n%s", a, v ? " " : "", v ? v : "", worker_usage);
            return -1;
        }
        i++;
    }
    return 0;
}

static void log_job(const worker *w, const fleet_job_run *r, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void log_job(const worker *w, const fleet_job_run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    GString *line = g_string_new(NULL);
    g_string_append_printf(line, "reel worker %s: job ", w->o.name);
    reel_escape_control(line, r->job->id);
    g_string_append_printf(line, " (%s, attempt %d): ", fleet_job_kind_name(r->job->kind), r->attempt);
    reel_escape_control(line, text);
    fprintf(stderr, "%s\n", line->str);
    g_string_free(line, TRUE);
    g_free(text);
}

static void put_state(worker *w, const fleet_job_run *r, const char *state, const char *reason)
{
    GError *err = NULL;
    if (fleet_state_put(&w->f, r->job->id, r->job->kind, state, w->o.name, reason, r->attempt, &err) < 0) {
        fprintf(stderr, "reel worker %s: %s\n", w->o.name, err->message);
        g_error_free(err);
    }
}

static void ack_status(worker *w, const fleet_job_run *r, natsStatus s, const char *what)
{
    if (s != NATS_OK)
        log_job(w, r, "cannot %s the job: %s", what, natsStatus_GetText(s));
}

// A job whose pipeline ended: acknowledged, retried or given up.
static void finish(worker *w, fleet_job_run *r)
{
    if (r->released)
        return;
    double secs = (g_get_monotonic_time() - r->started_us) / 1e6;
    if (r->stopped_why) {
        // The worker ended it: that is why it failed, not the abort.
        r->rc = r->rc < 0 ? r->rc : REEL_ESTOPPED;
        r->permanent = r->stopped_permanent;
        g_free(r->error);
        r->error = g_strdup(r->stopped_why);
    }
    if (r->rc == 0) {
        // Synchronously: the job is off the queue before it is said to be done.
        jsErrCode jerr = 0;
        ack_status(w, r, natsMsg_AckSync(r->msg, NULL, &jerr), "acknowledge");
        put_state(w, r, "done", NULL);
        w->info.jobs_done++;
        log_job(w, r, "done: %" G_GINT64_FORMAT " frames in %.2f s", r->frames, secs);
        return;
    }
    w->info.jobs_failed++;
    if (r->refused) {
        ack_status(w, r, natsMsg_Term(r->msg, NULL), "terminate");
        put_state(w, r, "refused", r->error);
        log_job(w, r, "%s", r->error);
        return;
    }
    if (r->permanent || r->attempt >= w->o.max_deliver) {
        ack_status(w, r, natsMsg_Term(r->msg, NULL), "terminate");
        char *reason = r->permanent ? g_strdup(r->error)
                                    : g_strdup_printf("gave up after %d attempts: %s", r->attempt, r->error);
        put_state(w, r, "failed", reason);
        log_job(w, r, "failed: %s", reason);
        g_free(reason);
        return;
    }
    ack_status(w, r, natsMsg_NakWithDelay(r->msg, w->o.retry_delay_ms, NULL), "hand back");
    char *reason = g_strdup_printf("attempt %d failed: %s", r->attempt, r->error);
    put_state(w, r, "queued", reason);
    log_job(w, r, "failed, to be retried: %s", r->error);
    g_free(reason);
}

// Hands a live job back at once: this worker is stopping.
static void release(worker *w, fleet_job_run *r)
{
    if (r->released || fleet_job_run_finished(r))
        return;
    r->released = true;
    ack_status(w, r, natsMsg_Nak(r->msg, NULL), "hand back");
    put_state(w, r, "queued", "released by a stopping worker");
    fleet_job_run_abort(r);
    log_job(w, r, "released");
}

// Ends a run the policy's times say must end.
static void stop_run(worker *w, fleet_job_run *r, bool permanent, char *why)
{
    r->stopped_why = why;
    r->stopped_permanent = permanent;
    log_job(w, r, "stopping: %s", why);
    fleet_job_run_abort(r);
}

// A file job past max-run, or any job whose sinks saw no frame for the
// stall time (measured from its start until a first frame).
static void enforce_times(worker *w, fleet_job_run *r, int64_t now)
{
    if (r->stopped_why || r->released || !w->policy)
        return;
    int64_t frames = fleet_job_run_frames(r);
    if (frames != r->stall_frames) {
        r->stall_frames = frames;
        r->stall_since_us = now;
    }
    int64_t max_run = fleet_policy_max_run_ms(w->policy), stall = fleet_policy_stall_ms(w->policy);
    if (r->job->kind == FLEET_JOB_FILE && now - r->started_us > max_run * 1000)
        stop_run(w, r, true, g_strdup_printf("ran longer than the policy's max-run (%.0f s)", max_run / 1e3));
    else if (now - r->stall_since_us > stall * 1000)
        stop_run(w, r, false,
                 g_strdup_printf("stalled: no frame reached a sink for the policy's stall time (%.0f s)", stall / 1e3));
}

static void reap_and_keep_alive(worker *w)
{
    int64_t now = g_get_monotonic_time();
    for (guint i = 0; i < w->runs->len;) {
        fleet_job_run *r = g_ptr_array_index(w->runs, i);
        if (fleet_job_run_finished(r)) {
            finish(w, r);
            g_ptr_array_remove_index(w->runs, i);
            fleet_job_run_free(&r);
            continue;
        }
        enforce_times(w, r, now);
        if (!r->released && now - r->progress_us >= w->o.ack_wait_ms * 1000 / 3) {
            ack_status(w, r, natsMsg_InProgress(r->msg, NULL), "keep");
            r->progress_us = now;
        }
        i++;
    }
}

static void take_job(worker *w, natsMsg *msg)
{
    jsMsgMetaData *meta = NULL;
    int attempt = natsMsg_GetMetaData(&meta, msg) == NATS_OK ? (int)meta->NumDelivered : 1;
    jsMsgMetaData_Destroy(meta);
    GError *err = NULL;
    fleet_job *job = fleet_job_from_json(natsMsg_GetData(msg), natsMsg_GetDataLength(msg), &err);
    if (!job) {
        // Not a job at all: nobody can run it.
        GString *line = g_string_new(NULL);
        reel_escape_control(line, natsMsg_GetSubject(msg));
        g_string_append(line, "': ");
        reel_escape_control(line, err->message);
        fprintf(stderr, "reel worker %s: dropped a message on '%s\n", w->o.name, line->str);
        g_string_free(line, TRUE);
        g_error_free(err);
        natsMsg_Term(msg, NULL);
        natsMsg_Destroy(msg);
        return;
    }
    // The server's delivery count, never below what the job's state recorded:
    // on a loaded machine a redelivery has been seen to report a count of 1.
    attempt = MAX(attempt, fleet_state_attempts(&w->f, job->id) + 1);
    fleet_run_env env = { .device = w->o.device, .policy = w->policy, .nc = w->f.nc };
    fleet_job_run *r = fleet_job_run_start(job, msg, attempt, &env);
    put_state(w, r, "running", NULL);
    log_job(w, r, "running");
    g_ptr_array_add(w->runs, r);
}

static void fetch_job(worker *w)
{
    natsMsgList list = { 0 };
    jsErrCode jerr = 0;
    natsStatus s = natsSubscription_Fetch(&list, w->sub, 1, FETCH_WAIT_MS, &jerr);
    if (s == NATS_OK) {
        for (int i = 0; i < list.Count; i++) {
            take_job(w, list.Msgs[i]);
            list.Msgs[i] = NULL; // the run owns it now
        }
    } else if (s != NATS_TIMEOUT) {
        // The server may be away: the connection reconnects by itself.
        g_usleep(FETCH_WAIT_MS * 1000);
    }
    natsMsgList_Destroy(&list);
}

static void report_health(worker *w, bool now)
{
    int64_t t = g_get_monotonic_time();
    if (!now && t - w->last_health_us < w->o.health_ms * 1000)
        return;
    w->last_health_us = t;
    w->info.draining = signals_seen > 0;
    char *json = fleet_health_json(&w->info, w->runs);
    fleet_health_publish(&w->f, w->o.name, json);
    g_free(json);
}

static void serve(worker *w)
{
    int handled = 0;
    while (signals_seen == 0 || w->runs->len > 0) {
        if (signals_seen > handled) {
            handled = signals_seen;
            fprintf(stderr, "reel worker %s: stopping: %s\n", w->o.name,
                    handled == 1 ? "taking no more jobs, finishing file jobs" : "aborting every job");
            for (guint i = 0; i < w->runs->len; i++) {
                fleet_job_run *r = g_ptr_array_index(w->runs, i);
                if (r->job->kind == FLEET_JOB_LIVE || handled > 1)
                    release(w, r);
            }
            report_health(w, true);
        }
        reap_and_keep_alive(w);
        report_health(w, false);
        if (signals_seen == 0 && (int)w->runs->len < w->o.max_jobs)
            fetch_job(w);
        else
            g_usleep(IDLE_WAIT_US);
    }
}

int cmd_worker(int argc, char **argv)
{
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        fputs(worker_usage, stdout);
        return EXIT_OK;
    }
    worker w = { .o = { .max_jobs = 1, .max_deliver = 3, .ack_wait_ms = 30000, .retry_delay_ms = 2000,
                        .health_ms = 2000 } };
    if (parse_opts(argc, argv, &w.o) < 0)
        return EXIT_USAGE;
    GError *err = NULL;
    if (reel_nats_settings_check(&w.o.nats, &err) < 0) {
        fprintf(stderr, "reel worker: %s\n", err->message);
        g_error_free(err);
        return EXIT_USAGE;
    }
    if (!(w.policy = fleet_policy_load(w.o.policy, &err))) {
        fprintf(stderr, "reel worker: %s\n", err->message);
        g_error_free(err);
        return EXIT_USAGE;
    }
    char *default_name = g_strdup_printf("%s-%d", g_get_host_name(), (int)getpid());
    g_strcanon(default_name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", '-');
    if (!w.o.name)
        w.o.name = default_name;
    w.info = (fleet_worker_info){ .name = w.o.name, .device = w.o.device ? w.o.device : "cpu",
                                  .max_jobs = w.o.max_jobs };

    struct sigaction sa = { .sa_handler = on_signal };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    char *client = g_strdup_printf("reel-worker-%s", w.o.name);
    // Health outlives a report by a few periods: a dead worker's goes soon after.
    int rc = fleet_open(&w.f, &w.o.nats, client, 3 * w.o.health_ms, &err);
    g_free(client);
    if (rc == 0)
        rc = fleet_subscribe(&w.f, w.o.ack_wait_ms, w.o.max_deliver, &w.sub, &err);
    if (rc < 0) {
        fprintf(stderr, "reel worker: %s\n", err->message);
        g_error_free(err);
        fleet_close(&w.f);
        fleet_policy_free(&w.policy);
        g_free(default_name);
        return EXIT_RUNTIME;
    }
    char *policy = fleet_policy_describe(w.policy);
    fprintf(stderr, "reel worker %s: policy%s%s: %s\n", w.o.name, w.o.policy ? " " : " (default)",
            w.o.policy ? w.o.policy : "", policy);
    g_free(policy);
    char *shown = reel_nats_shown_url(&w.o.nats);
    fprintf(stderr, "reel worker %s: taking jobs from %s\n", w.o.name, shown);
    g_free(shown);
    w.runs = g_ptr_array_new();
    serve(&w);
    kvStore_Delete(w.f.workers, w.o.name);
    natsSubscription_Destroy(w.sub);
    g_ptr_array_free(w.runs, TRUE);
    fleet_close(&w.f);
    fleet_policy_free(&w.policy);
    fprintf(stderr, "reel worker %s: stopped (%" G_GINT64_FORMAT " done, %" G_GINT64_FORMAT " failed)\n",
            w.o.name, w.info.jobs_done, w.info.jobs_failed);
    g_free(default_name);
    return EXIT_OK;
}

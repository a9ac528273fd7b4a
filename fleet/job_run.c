// Running a job's pipeline through the library, as `reel run` does, on a
// thread of the worker's.
#include "fleet/job_run.h"

#include "elements/nats_connect.h"
#include "fleet/policy.h"
#include "reel/reel.h"

typedef struct run_args {
    fleet_job_run *run;
    fleet_run_env env;
    fleet_policy_hold *held; // what the policy opened for the pipeline
} run_args;

// Errors name files as the job wrote them, not as the policy opened them.
static void fail(run_args *a, GError *err, bool permanent)
{
    fleet_job_run *r = a->run;
    r->rc = err->code < 0 ? err->code : REEL_EIO;
    r->permanent = permanent;
    r->error = fleet_policy_hold_unmap(a->held, err->message);
    g_error_free(err);
}

static gpointer run_main(gpointer data)
{
    run_args *a = data;
    fleet_job_run *r = a->run;
    GError *err = NULL;
    const char **values = fleet_job_values(r->job);
    char *origin = g_strdup_printf("job %s", r->job->id);
    reel_pipeline *p = reel_parse_launch(r->job->pipeline, origin,
                                         reel_pipeline_params(.stats_interval_ms = -1, .values = values), &err);
    g_free(values);
    g_free(origin);
    // A natssink without a url publishes over the worker's connection (and its login).
    if (p && a->env.nc)
        reel_pipeline_set_shared(p, REEL_NATS_SHARED_CONNECTION, a->env.nc);
    if (!p) {
        fail(a, err, true); // the text is wrong: the same on every worker
    } else if (a->env.policy && fleet_policy_apply(a->env.policy, p, &a->held, &err) < 0) {
        fail(a, err, true);
        r->refused = true;
    } else if (a->env.device && reel_pipeline_set(p, "device", a->env.device, &err) < 0) {
        fail(a, err, false);
    } else {
        // Reachable by fleet_job_run_abort() from here on: opening a camera
        // in prepare may wait long.
        g_mutex_lock(&r->lock);
        r->pipeline = p;
        bool stop = r->stop_asked;
        g_mutex_unlock(&r->lock);
        if (stop)
            reel_pipeline_abort(p);
        if (reel_pipeline_prepare(p, &err) < 0) {
            // A description that cannot work (as `reel run` exits 2 for) is
            // wrong everywhere; an input that cannot be opened may be there later.
            fail(a, err, err->code == REEL_EINVAL);
        } else if (reel_pipeline_start(p, &err) < 0) {
            fail(a, err, false);
        } else if (reel_pipeline_wait(p, &err) < 0) {
            fail(a, err, false);
        }
        g_mutex_lock(&r->lock);
        r->pipeline = NULL;
        g_mutex_unlock(&r->lock);
        r->frames = reel_pipeline_frames_done(p);
    }
    // Outputs are finalized (renamed into place) once this returns.
    reel_pipeline_destroy(&p);
    fleet_policy_hold_free(&a->held);
    g_free(a);
    g_atomic_int_set(&r->finished, 1);
    return NULL;
}

fleet_job_run *fleet_job_run_start(fleet_job *job, natsMsg *msg, int attempt, const fleet_run_env *env)
{
    fleet_job_run *r = g_new0(fleet_job_run, 1);
    r->job = job;
    r->msg = msg;
    r->attempt = attempt;
    r->started_us = r->progress_us = r->frames_seen_us = r->stall_since_us = g_get_monotonic_time();
    g_mutex_init(&r->lock);
    run_args *a = g_new0(run_args, 1);
    a->run = r;
    a->env = *env;
    r->thread = g_thread_new("reel-job", run_main, a);
    return r;
}

bool fleet_job_run_finished(fleet_job_run *r)
{
    return g_atomic_int_get(&r->finished) != 0;
}

void fleet_job_run_abort(fleet_job_run *r)
{
    g_mutex_lock(&r->lock);
    r->stop_asked = true;
    if (r->pipeline)
        reel_pipeline_abort(r->pipeline);
    g_mutex_unlock(&r->lock);
}

int64_t fleet_job_run_frames(fleet_job_run *r)
{
    if (fleet_job_run_finished(r))
        return r->frames;
    g_mutex_lock(&r->lock);
    int64_t frames = r->pipeline ? reel_pipeline_frames_done(r->pipeline) : 0;
    g_mutex_unlock(&r->lock);
    return frames;
}

void fleet_job_run_free(fleet_job_run **rp)
{
    fleet_job_run *r = *rp;
    if (!r)
        return;
    g_thread_join(r->thread);
    g_mutex_clear(&r->lock);
    natsMsg_Destroy(r->msg);
    fleet_job_free(r->job);
    g_free(r->error);
    g_free(r->stopped_why);
    g_free(r);
    *rp = NULL;
}

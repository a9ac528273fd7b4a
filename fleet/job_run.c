// Running a job's pipeline through the library, as `reel run` does, on a
// thread of the worker's.
#include "fleet/job_run.h"

#include "reel/reel.h"

static void fail(fleet_job_run *r, GError *err, bool permanent)
{
    r->rc = err->code < 0 ? err->code : REEL_EIO;
    r->permanent = permanent;
    r->error = g_strdup(err->message);
    g_error_free(err);
}

typedef struct run_args {
    fleet_job_run *run;
    char *device;
} run_args;

static gpointer run_main(gpointer data)
{
    run_args *a = data;
    fleet_job_run *r = a->run;
    GError *err = NULL;
    char *text = fleet_job_text(r->job);
    char *origin = g_strdup_printf("job %s", r->job->id);
    reel_pipeline *p = reel_parse_launch(text, origin, reel_pipeline_params(.stats_interval_ms = -1), &err);
    g_free(text);
    g_free(origin);
    if (!p) {
        fail(r, err, true); // the text is wrong: the same on every worker
    } else if (a->device && reel_pipeline_set(p, "device", a->device, &err) < 0) {
        fail(r, err, false);
    } else if (reel_pipeline_prepare(p, &err) < 0) {
        // A description that cannot work (as `reel run` exits 2 for) is
        // wrong everywhere; an input that cannot be opened may be there later.
        fail(r, err, err->code == REEL_EINVAL);
    } else if (reel_pipeline_start(p, &err) < 0) {
        fail(r, err, false);
    } else {
        g_mutex_lock(&r->lock);
        r->pipeline = p;
        bool stop = r->stop_asked;
        g_mutex_unlock(&r->lock);
        if (stop)
            reel_pipeline_abort(p);
        if (reel_pipeline_wait(p, &err) < 0)
            fail(r, err, false);
        g_mutex_lock(&r->lock);
        r->pipeline = NULL;
        g_mutex_unlock(&r->lock);
        r->frames = reel_pipeline_frames_done(p);
    }
    // Outputs are finalized (renamed into place) once this returns.
    reel_pipeline_destroy(&p);
    g_free(a->device);
    g_free(a);
    g_atomic_int_set(&r->finished, 1);
    return NULL;
}

fleet_job_run *fleet_job_run_start(fleet_job *job, natsMsg *msg, int attempt, const char *device)
{
    fleet_job_run *r = g_new0(fleet_job_run, 1);
    r->job = job;
    r->msg = msg;
    r->attempt = attempt;
    r->started_us = r->progress_us = r->frames_seen_us = g_get_monotonic_time();
    g_mutex_init(&r->lock);
    run_args *a = g_new0(run_args, 1);
    a->run = r;
    a->device = g_strdup(device);
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
    g_free(r);
    *rp = NULL;
}

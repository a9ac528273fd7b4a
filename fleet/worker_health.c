// Worker health reports.
#include "fleet/worker_health.h"

#include <stdio.h>
#include <string.h>

#include "fleet/job_run.h"
#include "base/json.h"

char *fleet_health_json(const fleet_worker_info *w, GPtrArray *runs)
{
    GString *s = g_string_new("{\"name\": ");
    reel_json_string(s, w->name);
    g_string_append(s, ", \"device\": ");
    reel_json_string(s, w->device);
    g_string_append_printf(s, ", \"draining\": %s, \"max_jobs\": %d, \"jobs_running\": %u, \"jobs_done\": %"
                           G_GINT64_FORMAT ", \"jobs_failed\": %" G_GINT64_FORMAT ", \"jobs\": [",
                           w->draining ? "true" : "false", w->max_jobs, runs->len, w->jobs_done, w->jobs_failed);
    int64_t now = g_get_monotonic_time();
    for (guint i = 0; i < runs->len; i++) {
        fleet_job_run *r = g_ptr_array_index(runs, i);
        int64_t frames = fleet_job_run_frames(r);
        double secs = (now - r->frames_seen_us) / 1e6;
        double fps = secs > 0 ? (frames - r->frames_seen) / secs : 0.0;
        r->frames_seen = frames;
        r->frames_seen_us = now;
        g_string_append(s, i ? ", {\"id\": " : "{\"id\": ");
        reel_json_string(s, r->job->id);
        g_string_append(s, ", \"kind\": ");
        reel_json_string(s, fleet_job_kind_name(r->job->kind));
        char fps_text[G_ASCII_DTOSTR_BUF_SIZE];
        g_ascii_formatd(fps_text, sizeof fps_text, "%.1f", MAX(fps, 0.0));
        g_string_append_printf(s, ", \"attempt\": %d, \"frames\": %" G_GINT64_FORMAT ", \"fps\": %s}", r->attempt,
                               frames, fps_text);
    }
    char when[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(when, sizeof when, "%.3f", g_get_real_time() / 1e6);
    g_string_append_printf(s, "], \"updated\": %s}", when);
    return g_string_free(s, FALSE);
}

void fleet_health_publish(fleet *f, const char *name, const char *json)
{
    char *subject = g_strdup_printf(FLEET_WORKERS_SUBJECT ".%s", name);
    int len = (int)strlen(json);
    natsStatus s = natsConnection_Publish(f->nc, subject, json, len);
    uint64_t rev = 0;
    if (s == NATS_OK)
        s = kvStore_Put(&rev, f->workers, name, json, len);
    if (s != NATS_OK)
        fprintf(stderr, "reel worker %s: cannot report health: %s\n", name, natsStatus_GetText(s));
    g_free(subject);
}

// The job queue's stream, consumer and buckets, jobs as JSON, job states.
#include "fleet/jobs.h"

#include <string.h>

#include "elements/nats_connect.h"
#include "base/json_read.h"
#include "base/json.h"
#include "base/redact.h"
#include "reel/reel.h"

enum { STATE_HISTORY = 8, WORKER_TTL_DEFAULT_MS = 6000 };

static int nats_fail(GError **error, natsStatus s, const char *what)
{
    reel_nats_set_error(error, s, what);
    return REEL_EIO;
}

static int ensure_stream(fleet *f, GError **error)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, f->js, FLEET_JOBS_STREAM, NULL, &jerr);
    if (s == NATS_NOT_FOUND) {
        const char *subjects[] = { "reel.jobs.>" };
        jsStreamConfig cfg;
        jsStreamConfig_Init(&cfg);
        cfg.Name = FLEET_JOBS_STREAM;
        cfg.Subjects = subjects;
        cfg.SubjectsLen = 1;
        cfg.Retention = js_WorkQueuePolicy;
        cfg.Storage = js_FileStorage;
        s = js_AddStream(&si, f->js, &cfg, NULL, &jerr);
        // Another worker made it meanwhile: fine.
        if (s != NATS_OK && jerr == JSStreamNameExistErr)
            s = NATS_OK;
    }
    jsStreamInfo_Destroy(si);
    if (s == NATS_NO_RESPONDERS)
        return nats_fail(error, s, "the server has no JetStream (start it with -js)");
    return s == NATS_OK ? 0 : nats_fail(error, s, "cannot make the job stream " FLEET_JOBS_STREAM);
}

static int ensure_bucket(fleet *f, kvStore **kv, const char *bucket, int history, int64_t ttl_ms, GError **error)
{
    natsStatus s = js_KeyValue(kv, f->js, bucket);
    if (s == NATS_NOT_FOUND) {
        kvConfig cfg;
        kvConfig_Init(&cfg);
        cfg.Bucket = bucket;
        cfg.History = (uint8_t)history;
        cfg.TTL = ttl_ms * 1000000; // nanoseconds, as the server takes it
        cfg.StorageType = js_FileStorage;
        s = js_CreateKeyValue(kv, f->js, &cfg);
    }
    if (s == NATS_OK)
        return 0;
    char *what = g_strdup_printf("cannot open the key-value bucket %s", bucket);
    nats_fail(error, s, what);
    g_free(what);
    return REEL_EIO;
}

int fleet_open(fleet *f, const reel_nats_settings *nats, const char *client, int64_t worker_ttl_ms, GError **error)
{
    memset(f, 0, sizeof *f);
    f->nc = reel_nats_connect(nats, client, error);
    if (!f->nc)
        return error && *error && (*error)->code == REEL_EINVAL ? REEL_EINVAL : REEL_EIO;
    natsStatus s = natsConnection_JetStream(&f->js, f->nc, NULL);
    if (s != NATS_OK)
        return nats_fail(error, s, "cannot use JetStream (is the server started with -js?)");
    int err = ensure_stream(f, error);
    if (!err)
        err = ensure_bucket(f, &f->states, FLEET_STATE_BUCKET, STATE_HISTORY, 0, error);
    if (!err)
        err = ensure_bucket(f, &f->workers, FLEET_WORKERS_BUCKET, 1,
                            worker_ttl_ms > 0 ? worker_ttl_ms : WORKER_TTL_DEFAULT_MS, error);
    return err;
}

void fleet_close(fleet *f)
{
    kvStore_Destroy(f->workers);
    kvStore_Destroy(f->states);
    jsCtx_Destroy(f->js);
    natsConnection_Destroy(f->nc);
    memset(f, 0, sizeof *f);
}

int fleet_subscribe(fleet *f, int64_t ack_wait_ms, int max_deliver, natsSubscription **sub, GError **error)
{
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetConsumerInfo(&ci, f->js, FLEET_JOBS_STREAM, FLEET_JOBS_CONSUMER, NULL, &jerr);
    if (s == NATS_NOT_FOUND) {
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = FLEET_JOBS_CONSUMER;
        cc.AckPolicy = js_AckExplicit;
        cc.AckWait = ack_wait_ms * 1000000;  // nanoseconds
        cc.MaxDeliver = max_deliver;
        cc.FilterSubject = "reel.jobs.>";
        s = js_AddConsumer(&ci, f->js, FLEET_JOBS_STREAM, &cc, NULL, &jerr);
        if (s != NATS_OK && jerr == JSConsumerNameExistErr)
            s = NATS_OK;
    }
    jsConsumerInfo_Destroy(ci);
    if (s != NATS_OK)
        return nats_fail(error, s, "cannot make the workers' consumer " FLEET_JOBS_CONSUMER);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = FLEET_JOBS_STREAM;
    so.Consumer = FLEET_JOBS_CONSUMER;
    s = js_PullSubscribe(sub, f->js, "reel.jobs.>", FLEET_JOBS_CONSUMER, NULL, &so, &jerr);
    return s == NATS_OK ? 0 : nats_fail(error, s, "cannot take jobs from " FLEET_JOBS_STREAM);
}

char *fleet_job_new_id(void)
{
    return g_strdup_printf("j-%08x%08x", g_random_int(), g_random_int());
}

const char *fleet_job_kind_name(fleet_job_kind kind)
{
    return kind == FLEET_JOB_LIVE ? "live" : "file";
}

char *fleet_job_to_json(const fleet_job *job)
{
    GString *s = g_string_new("{\"id\": ");
    reel_json_string(s, job->id);
    g_string_append(s, ", \"kind\": ");
    reel_json_string(s, fleet_job_kind_name(job->kind));
    g_string_append(s, ", \"pipeline\": ");
    reel_json_string(s, job->pipeline);
    g_string_append(s, ", \"inputs\": {");
    for (int i = 0; job->inputs && job->inputs[i] && job->inputs[i + 1]; i += 2) {
        g_string_append(s, i ? ", " : "");
        reel_json_string(s, job->inputs[i]);
        g_string_append(s, ": ");
        reel_json_string(s, job->inputs[i + 1]);
    }
    g_string_append(s, "}}");
    return g_string_free(s, FALSE);
}

fleet_job *fleet_job_from_json(const char *data, int len, GError **error)
{
    reel_json_value *v = reel_json_parse(data, (size_t)len, error);
    if (!v)
        return NULL;
    const char *id = reel_json_member_string(v, "id", NULL), *text = reel_json_member_string(v, "pipeline", NULL);
    const char *kind = reel_json_member_string(v, "kind", "file");
    const reel_json_value *inputs = reel_json_member(v, "inputs");
    fleet_job *job = NULL;
    if (!id || !*id || !text || (strcmp(kind, "file") != 0 && strcmp(kind, "live") != 0)) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "not a job: wanted \"id\", \"pipeline\" and kind file or live");
    } else if (!fleet_job_id_valid(id)) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "not a job: its id is not 1 to 128 letters, digits, -, _ or =");
    } else if (inputs && inputs->kind != REEL_JSON_OBJECT) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "not a job: \"inputs\" is not an object");
    } else {
        job = g_new0(fleet_job, 1);
        job->id = g_strdup(id);
        job->pipeline = g_strdup(text);
        job->kind = strcmp(kind, "live") == 0 ? FLEET_JOB_LIVE : FLEET_JOB_FILE;
        guint n = inputs ? inputs->items->len : 0;
        job->inputs = g_new0(char *, 2 * n + 1);
        for (guint i = 0, k = 0; i < n; i++) {
            const reel_json_value *value = g_ptr_array_index(inputs->items, i);
            if (value->kind != REEL_JSON_STRING)
                continue;
            job->inputs[k++] = g_strdup(g_ptr_array_index(inputs->keys, i));
            job->inputs[k++] = g_strdup(value->string);
        }
    }
    reel_json_free(v);
    return job;
}

void fleet_job_free(fleet_job *job)
{
    if (!job)
        return;
    g_free(job->id);
    g_free(job->pipeline);
    g_strfreev(job->inputs);
    g_free(job);
}

const char **fleet_job_values(const fleet_job *job)
{
    guint n = job->inputs ? g_strv_length(job->inputs) : 0;
    const char **values = g_new0(const char *, n + 3);
    values[0] = "job";
    values[1] = job->id;
    for (guint i = 0; i + 1 < n; i += 2) {
        values[2 + i] = job->inputs[i];
        values[3 + i] = job->inputs[i + 1];
    }
    return values;
}

bool fleet_job_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 128)
        return false;
    for (const char *c = id; *c; c++)
        if (!g_ascii_isalnum(*c) && !strchr("-_=", *c))
            return false;
    return true;
}

int fleet_submit(fleet *f, const fleet_job *job, GError **error)
{
    if (fleet_state_put(f, job->id, job->kind, "queued", NULL, NULL, 0, error) < 0)
        return REEL_EIO;
    char *json = fleet_job_to_json(job);
    char *subject = g_strdup_printf("reel.jobs.%s", fleet_job_kind_name(job->kind));
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = job->id;
    jsPubAck *ack = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_Publish(&ack, f->js, subject, json, (int)strlen(json), &po, &jerr);
    jsPubAck_Destroy(ack);
    g_free(subject);
    g_free(json);
    return s == NATS_OK ? 0 : nats_fail(error, s, "cannot queue the job");
}

int fleet_state_attempts(fleet *f, const char *id)
{
    kvEntry *e = NULL;
    if (kvStore_Get(&e, f->states, id) != NATS_OK)
        return 0;
    reel_json_value *v = reel_json_parse(kvEntry_ValueString(e), (size_t)kvEntry_ValueLen(e), NULL);
    int attempts = v ? (int)reel_json_member_number(v, "attempts", 0) : 0;
    reel_json_free(v);
    kvEntry_Destroy(e);
    return MAX(attempts, 0);
}

int fleet_state_put(fleet *f, const char *id, fleet_job_kind kind, const char *state, const char *worker,
                    const char *reason, int attempts, GError **error)
{
    GString *s = g_string_new("{\"id\": ");
    reel_json_string(s, id);
    g_string_append(s, ", \"kind\": ");
    reel_json_string(s, fleet_job_kind_name(kind));
    g_string_append(s, ", \"state\": ");
    reel_json_string(s, state);
    g_string_append(s, ", \"worker\": ");
    reel_json_string(s, worker);
    g_string_append(s, ", \"error\": ");
    char *shown = reel_redact(reason, false); // a record others read holds no password
    reel_json_string(s, shown);
    g_free(shown);
    g_string_append_printf(s, ", \"attempts\": %d, \"updated\": %.3f}", attempts, g_get_real_time() / 1e6);
    uint64_t rev = 0;
    natsStatus st = kvStore_Put(&rev, f->states, id, s->str, (int)s->len);
    g_string_free(s, TRUE);
    return st == NATS_OK ? 0 : nats_fail(error, st, "cannot record the job's state");
}

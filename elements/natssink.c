// natssink: publishes each frame's metadata to NATS, one message per frame,
// for services that watch many cameras from elsewhere. The message is the
// JSON object metasink writes for the frame (elements/meta_json.c), without
// the newline, on `subject` with {stream} replaced by the buffer's stream id.
//
// jetstream=false: core NATS, at most once: nothing is stored for a
// subscriber that is not there. jetstream=true: each message goes to a
// JetStream stream (`stream`, created for the subject if missing) and is
// acknowledged by the server; a message it refused fails the run, and at the
// end of the stream every message still pending is waited for.
//
// A lost server: the library reconnects on its own and holds what is
// published meanwhile (8 MiB); once that is full, or the server is gone at
// the end, the run fails with a message naming the server.
//
// The connection: with `url` and every login and TLS property unset, the
// one the program shares with the pipeline (REEL_NATS_SHARED_CONNECTION: a
// worker's, with its login and TLS), borrowed, never closed here; else (or
// when none is shared) one of its own with those properties.
#include <string.h>

#include "elements/meta_json.h"
#include "elements/nats_connect.h"
#include "reel/reel.h"

enum { MAX_PENDING = 1024, FINISH_WAIT_MS = 10000 };

typedef struct natssink_priv {
    char *subject;
    bool jetstream;
    char *url;
    char *stream;
    char *user, *password_file, *token_file, *nkey_file, *creds, *tls_ca, *tls_cert, *tls_key;
    bool require_tls;

    natsConnection *nc;
    bool borrowed;        // nc is the pipeline's shared connection: not ours to close
    jsCtx *js;
    GString *line;
    GString *subject_now; // subject with {stream} replaced, reused
    GMutex lock;          // guards the two fields below (set from the library's thread)
    int64_t refused;      // messages JetStream did not store
    char *refused_text;   // why the first was refused
} natssink_priv;

// A subject one can publish on: dot-separated tokens, none empty, no
// spaces, no wildcards.
static const char *publishable(const void *value)
{
    const char *subject = *(char *const *)value;
    GString *probe = g_string_new(NULL);
    reel_meta_destination(probe, subject, 0);
    char **tokens = g_strsplit(probe->str, ".", -1);
    bool ok = probe->len > 0;
    for (int i = 0; ok && tokens[i]; i++) {
        ok = *tokens[i] && strcmp(tokens[i], "*") != 0 && strcmp(tokens[i], ">") != 0;
        for (const char *c = tokens[i]; ok && *c; c++)
            ok = !g_ascii_isspace(*c);
    }
    g_strfreev(tokens);
    g_string_free(probe, TRUE);
    return ok ? NULL : "a subject to publish on: dot-separated tokens without spaces or wildcards (* >)";
}

// subject is read for each frame, so it may change while running.
static const reel_prop props[] = {
    { "subject", REEL_PROP_STRING, offsetof(natssink_priv, subject), "reel.meta.{stream}",
      .help = "subject of each frame's message; {stream} is replaced by the stream id (jetstream=true: "
              "within the stream's subjects)",
      .flags = REEL_PROP_MUTABLE | REEL_PROP_NATS_SUBJECT, .check = publishable },
    { "jetstream", REEL_PROP_BOOL, offsetof(natssink_priv, jetstream), "false",
      .help = "store each message in a JetStream stream and wait for the server's acknowledgement" },
    { "url", REEL_PROP_STRING, offsetof(natssink_priv, url), NULL, .flags = REEL_PROP_WRITES_URL,
      .help = "server (default: a worker's own connection, when no login or TLS property is set either; else "
              "$REEL_NATS_URL, else nats://127.0.0.1:4222); tls://HOST:PORT for TLS" },
    { "user", REEL_PROP_STRING, offsetof(natssink_priv, user), NULL,
      .help = "log in as this user, with the password in password-file" },
    { "password-file", REEL_PROP_STRING, offsetof(natssink_priv, password_file), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "file holding user's password" },
    { "token-file", REEL_PROP_STRING, offsetof(natssink_priv, token_file), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "log in with the token in this file" },
    { "nkey-file", REEL_PROP_STRING, offsetof(natssink_priv, nkey_file), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "log in with the user nkey seed (SU...) in this file" },
    { "creds", REEL_PROP_STRING, offsetof(natssink_priv, creds), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "log in with the user JWT and seed in this .creds file" },
    { "tls-ca", REEL_PROP_STRING, offsetof(natssink_priv, tls_ca), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "trust the server's certificate when a CA in this PEM file signed it (default: the system's)" },
    { "tls-cert", REEL_PROP_STRING, offsetof(natssink_priv, tls_cert), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "client certificate (PEM) to present, with tls-key" },
    { "tls-key", REEL_PROP_STRING, offsetof(natssink_priv, tls_key), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "the client certificate's private key (PEM)" },
    { "require-tls", REEL_PROP_BOOL, offsetof(natssink_priv, require_tls), "false",
      .help = "fail unless the connection is TLS (a tls:// url implies it)" },
    { "stream", REEL_PROP_STRING, offsetof(natssink_priv, stream), "REEL_META",
      .help = "JetStream stream the messages go to; created for the subject if missing (jetstream=true)" },
    { NULL },
};

static void on_refused(jsCtx *js, jsPubAckErr *pae, void *closure)
{
    (void)js;
    natssink_priv *s = closure;
    g_mutex_lock(&s->lock);
    if (s->refused++ == 0)
        s->refused_text = g_strdup(pae->ErrText ? pae->ErrText : natsStatus_GetText(pae->Err));
    g_mutex_unlock(&s->lock);
}

static int init(reel_element *e)
{
    natssink_priv *s = reel_element_priv(e);
    g_mutex_init(&s->lock);
    return 0;
}

static int fail(reel_element *e, natsStatus st, const char *what)
{
    GError *err = NULL;
    reel_nats_set_error(&err, st, what);
    int code = reel_element_error(e, REEL_EIO, "%s", err->message);
    g_error_free(err);
    return code;
}

// The stream the subject's messages go to, created when missing: its
// subjects are the subject with {stream} as a wildcard.
static int ensure_stream(reel_element *e, natssink_priv *s)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus st = js_GetStreamInfo(&si, s->js, s->stream, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    if (st == NATS_OK)
        return 0;
    if (st == NATS_NO_RESPONDERS)
        return fail(e, st, "the server has no JetStream (start it with -js)");
    if (st != NATS_NOT_FOUND)
        return fail(e, st, "cannot look up the JetStream stream");
    char **parts = g_strsplit(s->subject, "{stream}", -1);
    char *pattern = g_strjoinv("*", parts);
    g_strfreev(parts);
    const char *subjects[] = { pattern };
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = s->stream;
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    st = js_AddStream(&si, s->js, &cfg, NULL, &jerr);
    jsStreamInfo_Destroy(si);
    g_free(pattern);
    return st == NATS_OK ? 0 : fail(e, st, "cannot create the JetStream stream");
}

static reel_nats_settings settings_of(const natssink_priv *s)
{
    return (reel_nats_settings){ .url = s->url, .user = s->user, .password_file = s->password_file,
                                 .token_file = s->token_file, .nkey_file = s->nkey_file, .creds = s->creds,
                                 .ca = s->tls_ca, .cert = s->tls_cert, .key = s->tls_key,
                                 .require_tls = s->require_tls, .element = true };
}

// Whether any property says how to connect: then natssink connects itself.
static bool own_connection(const natssink_priv *s)
{
    return s->url || s->user || s->password_file || s->token_file || s->nkey_file || s->creds || s->tls_ca ||
           s->tls_cert || s->tls_key || s->require_tls;
}

static int open_connection(reel_element *e, natssink_priv *s)
{
    if (!own_connection(s)) {
        s->nc = reel_pipeline_shared(reel_element_pipeline(e), REEL_NATS_SHARED_CONNECTION);
        s->borrowed = s->nc != NULL;
        if (s->nc)
            return 0;
    }
    GError *err = NULL;
    reel_nats_settings settings = settings_of(s);
    s->nc = reel_nats_connect(&settings, reel_element_name(e), &err);
    if (s->nc)
        return 0;
    int code = reel_element_error(e, err->code == REEL_EINVAL ? REEL_EINVAL : REEL_EIO, "%s", err->message);
    g_error_free(err);
    return code;
}

static int start(reel_element *e)
{
    natssink_priv *s = reel_element_priv(e);
    if (!s->subject || !*s->subject)
        return reel_element_error(e, REEL_EINVAL, "no subject set");
    int code = open_connection(e, s);
    if (code < 0)
        return code;
    s->line = g_string_new(NULL);
    s->subject_now = g_string_new(NULL);
    if (!s->jetstream)
        return 0;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = MAX_PENDING;
    jo.PublishAsync.ErrHandler = on_refused;
    jo.PublishAsync.ErrHandlerClosure = s;
    natsStatus st = natsConnection_JetStream(&s->js, s->nc, &jo);
    if (st != NATS_OK)
        return fail(e, st, "cannot use JetStream");
    return ensure_stream(e, s);
}

// A message JetStream refused fails the run: the stream was to hold them all.
static int check_refused(reel_element *e, natssink_priv *s)
{
    g_mutex_lock(&s->lock);
    int64_t refused = s->refused;
    char *why = g_strdup(s->refused_text);
    g_mutex_unlock(&s->lock);
    int code = 0;
    if (refused > 0)
        code = reel_element_error(e, REEL_EIO, "JetStream stream '%s' did not store %" G_GINT64_FORMAT
                                  " message%s: %s", s->stream, refused, refused == 1 ? "" : "s", why);
    g_free(why);
    return code;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    natssink_priv *s = reel_element_priv(e);
    reel_meta_message(s->line, buf);
    reel_meta_destination(s->subject_now, s->subject, buf->stream_id);
    reel_buffer_unref(&buf);
    natsStatus st = s->js ? js_PublishAsync(s->js, s->subject_now->str, s->line->str, (int)s->line->len, NULL)
                          : natsConnection_Publish(s->nc, s->subject_now->str, s->line->str, (int)s->line->len);
    if (st != NATS_OK) {
        char *what = g_strdup_printf("cannot publish on '%s'", s->subject_now->str);
        int code = fail(e, st, what);
        g_free(what);
        return code;
    }
    return s->js ? check_refused(e, s) : 0;
}

// At the end: every message reached the server (and, with JetStream, was stored).
static int flush(reel_element *e)
{
    natssink_priv *s = reel_element_priv(e);
    if (s->js) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = FINISH_WAIT_MS;
        natsStatus st = js_PublishAsyncComplete(s->js, &po);
        if (st != NATS_OK)
            return fail(e, st, "messages not acknowledged by JetStream at the end of the stream");
        return check_refused(e, s);
    }
    natsStatus st = natsConnection_FlushTimeout(s->nc, FINISH_WAIT_MS);
    return st == NATS_OK ? 0 : fail(e, st, "messages not delivered to the server at the end of the stream");
}

static void stop(reel_element *e)
{
    natssink_priv *s = reel_element_priv(e);
    jsCtx_Destroy(s->js);
    s->js = NULL;
    if (!s->borrowed)
        natsConnection_Destroy(s->nc);
    s->nc = NULL;
    s->borrowed = false;
    if (s->line)
        g_string_free(s->line, TRUE);
    if (s->subject_now)
        g_string_free(s->subject_now, TRUE);
    s->line = s->subject_now = NULL;
}

static void uninit(reel_element *e)
{
    natssink_priv *s = reel_element_priv(e);
    stop(e);
    g_clear_pointer(&s->refused_text, g_free);
    g_mutex_clear(&s->lock);
}

const reel_element_class reel_natssink_class = {
    .name = "natssink",
    .description = "Publishes each frame's detections and classifications to NATS (or JetStream) as JSON",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // reads metadata only, never the pixels
    .priv_size = sizeof(natssink_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 0,
    .input_caps = "video/raw|tensor",
    .init = init,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .uninit = uninit,
};

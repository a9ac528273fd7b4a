// The HTTP API (serve/http.h). Every request is bounded (a body over
// MAX_BODY is refused before it is read), authenticated when a token is
// set, and answered with JSON; nothing a client sends can stop the service.
#include "serve/http.h"

#include <libsoup/soup.h>
#include <string.h>

#include "base/json.h"
#include "base/json_read.h"
#include "reel/reel.h"
#include "serve/metrics.h"
#include "serve/page.h"
#include "serve/request.h"

enum { MAX_BODY = 1 << 20 };

struct serve_http {
    SoupServer *server;
    serve_service *service;
    char *token;
    int port;
};

// ---- answers ---------------------------------------------------------------

static void answer(SoupServerMessage *msg, int status, const char *type, GString *body)
{
    soup_server_message_set_status(msg, status, NULL);
    soup_server_message_set_response(msg, type, SOUP_MEMORY_TAKE, body->str, body->len);
    g_string_free(body, FALSE);
}

static void answer_json(SoupServerMessage *msg, int status, GString *body)
{
    answer(msg, status, "application/json", body);
}

static void answer_error(SoupServerMessage *msg, int status, const char *text)
{
    GString *s = g_string_new("{\"error\": ");
    reel_json_string(s, text);
    g_string_append(s, "}\n");
    answer_json(msg, status, s);
}

// A parse error as {"error", "line", "column", "hint"}: its message reads
// "ORIGIN:LINE:COL: error: WHAT\n  N | text\n    | ^\nhint: ...".
static void answer_parse_error(SoupServerMessage *msg, const GError *err)
{
    const char *m = err->message, *what = strstr(m, ": error: ");
    int line = 0, column = 0;
    const char *colon = what ? g_strrstr_len(m, what - m, ":") : NULL;
    if (colon) {
        column = atoi(colon + 1);
        const char *before = g_strrstr_len(m, colon - m, ":");
        line = before ? atoi(before + 1) : 0;
    }
    const char *hint = strstr(m, "\nhint: ");
    GString *s = g_string_new("{\"error\": ");
    reel_json_string(s, m);
    g_string_append_printf(s, ", \"line\": %d, \"column\": %d, \"hint\": ", line, column);
    if (hint)
        reel_json_string(s, hint + 7);
    else
        g_string_append(s, "null");
    g_string_append(s, "}\n");
    answer_json(msg, 400, s);
}

// ---- requests --------------------------------------------------------------

// The body as JSON; NULL after answering 400.
static reel_json_value *body_json(SoupServerMessage *msg)
{
    SoupMessageBody *body = soup_server_message_get_request_body(msg);
    GBytes *bytes = soup_message_body_flatten(body);
    gsize len = 0;
    const char *data = g_bytes_get_data(bytes, &len);
    GError *err = NULL;
    reel_json_value *v = reel_json_parse(data ? data : "", len, &err);
    g_bytes_unref(bytes);
    if (!v) {
        char *text = g_strdup_printf("the body is not JSON: %s", err->message);
        answer_error(msg, 400, text);
        g_free(text);
        g_error_free(err);
        return NULL;
    }
    if (v->kind != REEL_JSON_OBJECT) {
        answer_error(msg, 400, "the body must be a JSON object");
        reel_json_free(v);
        return NULL;
    }
    return v;
}

static void status_json(GString *s, serve_hosted *h)
{
    serve_status st;
    serve_hosted_status(h, &st);
    g_string_append(s, "{\"id\": ");
    reel_json_string(s, serve_hosted_id(h));
    g_string_append_printf(s, ", \"state\": \"%s\", \"uptime_s\": %.3f, \"restarts\": %" G_GINT64_FORMAT
                              ", \"error\": ",
                           serve_state_name(st.state), st.uptime_s, st.restarts);
    if (st.error)
        reel_json_string(s, st.error);
    else
        g_string_append(s, "null");
    g_free(st.error);
}

static void list_one(serve_hosted *h, void *data)
{
    GString *s = data;
    g_string_append(s, s->str[s->len - 1] == '[' ? "\n  " : ",\n  ");
    status_json(s, h);
    g_string_append_c(s, '}');
}

static void get_pipelines(serve_http *h, SoupServerMessage *msg)
{
    GString *s = g_string_new("{\"pipelines\": [");
    serve_service_each(h->service, list_one, s);
    g_string_append(s, "\n]}\n");
    answer_json(msg, 200, s);
}

static void post_pipeline(serve_http *h, SoupServerMessage *msg)
{
    reel_json_value *v = body_json(msg);
    if (!v)
        return;
    serve_pipeline_request req;
    GError *err = NULL;
    if (!serve_request_pipeline(v, &req, &err)) {
        answer_error(msg, 400, err->message);
        g_error_free(err);
        reel_json_free(v);
        return;
    }
    const char *id = serve_service_add(h->service, req.id, req.description, "pipeline", &err);
    if (!id && err->domain == SERVE_ERROR)
        answer_error(msg, 409, err->message);
    else if (!id && strstr(err->message, ": error: "))
        answer_parse_error(msg, err);
    else if (!id)
        answer_error(msg, 400, err->message);
    else {
        GString *s = g_string_new("{\"id\": ");
        reel_json_string(s, id);
        g_string_append(s, "}\n");
        answer_json(msg, 201, s);
    }
    g_clear_error(&err);
    reel_json_free(v);
}

typedef struct one_request {
    serve_http *http;
    SoupServerMessage *msg;
    const char *element;
    reel_json_value *body;
} one_request;

static void report_into(reel_pipeline *p, void *data)
{
    GString *s = data;
    char *report = p ? reel_pipeline_report_json(p) : NULL;
    g_string_append(s, ", \"report\": ");
    g_string_append(s, report ? g_strchomp(report) : "null");
    g_free(report);
}

static void get_one(serve_hosted *h, void *data)
{
    one_request *r = data;
    if (!h) {
        answer_error(r->msg, 404, "no such pipeline");
        return;
    }
    GString *s = g_string_new(NULL);
    status_json(s, h);
    g_string_append(s, ", \"description\": ");
    reel_json_string(s, serve_hosted_text(h));
    serve_hosted_with_pipeline(h, report_into, s);
    g_string_append(s, "}\n");
    answer_json(r->msg, 200, s);
}

typedef struct patch {
    one_request *r;
    int status;
    GString *error;
} patch;

static void patch_running(reel_pipeline *p, void *data)
{
    patch *pt = data;
    one_request *r = pt->r;
    if (!p) {
        pt->status = 409;
        g_string_assign(pt->error, "the pipeline is not running");
        return;
    }
    reel_pipeline_lock_graph(p);
    bool found = reel_pipeline_find(p, r->element) != NULL;
    reel_pipeline_unlock_graph(p);
    if (!found) {
        pt->status = 404;
        g_string_printf(pt->error, "no element '%s' in the pipeline", r->element);
        return;
    }
    GError *err = NULL;
    char **props = serve_request_properties(r->body, &err);
    for (char **kv = props; kv && kv[0] && !err; kv += 2)
        reel_pipeline_set_property(p, r->element, kv[0], kv[1], &err);
    if (err) {
        pt->status = 400;
        g_string_assign(pt->error, err->message);
        g_error_free(err);
    }
    g_strfreev(props);
}

static void patch_one(serve_hosted *h, void *data)
{
    one_request *r = data;
    if (!h) {
        answer_error(r->msg, 404, "no such pipeline");
        return;
    }
    patch pt = { .r = r, .status = 200, .error = g_string_new(NULL) };
    serve_hosted_with_pipeline(h, patch_running, &pt);
    if (pt.status != 200)
        answer_error(r->msg, pt.status, pt.error->str);
    else
        answer_json(r->msg, 200, g_string_new("{\"ok\": true}\n"));
    g_string_free(pt.error, TRUE);
}

// ---- pictures --------------------------------------------------------------

enum { DEFAULT_PREVIEW_WIDTH = 640, MAX_PREVIEW_WIDTH = 1920, DEFAULT_PREVIEW_FPS = 5, MAX_PREVIEW_FPS = 30 };

// An integer query parameter within [lo, hi], or `fallback`.
static int query_int(GHashTable *query, const char *key, int fallback, int lo, int hi)
{
    const char *v = query ? g_hash_table_lookup(query, key) : NULL;
    return v && *v ? CLAMP(atoi(v), lo, hi) : fallback;
}

typedef struct snap {
    const char *element;
    int width;
    int status;
    GBytes *jpeg;
    GError *error;
} snap;

static void snap_running(reel_pipeline *p, void *data)
{
    snap *sn = data;
    if (p) // the element may be in a branch leaving meanwhile
        reel_pipeline_lock_graph(p);
    reel_element *e = p ? reel_pipeline_find(p, sn->element) : NULL;
    if (!e) {
        sn->status = 404;
        g_set_error(&sn->error, REEL_ERROR, REEL_EINVAL, p ? "no element '%s' in the pipeline"
                                                           : "the pipeline is not running", sn->element);
    } else {
        int rc = reel_element_snapshot(e, sn->width, &sn->jpeg, &sn->error);
        sn->status = rc == 0 ? 200 : rc == REEL_EIO ? 503 : rc == REEL_EUNSUPPORTED ? 400 : 500;
    }
    if (p)
        reel_pipeline_unlock_graph(p);
}

static void snap_one(serve_hosted *h, void *data)
{
    snap *sn = data;
    if (!h) {
        sn->status = 404;
        g_set_error(&sn->error, REEL_ERROR, REEL_EINVAL, "no such pipeline");
        return;
    }
    serve_hosted_with_pipeline(h, snap_running, sn);
}

// A JPEG of element `element` of pipeline `id` now; status 200 with
// sn->jpeg, or another with sn->error.
static snap take_snapshot(serve_http *h, const char *id, const char *element, int width)
{
    snap sn = { .element = element, .width = width };
    serve_service_with(h->service, id, snap_one, &sn);
    return sn;
}

static void get_snapshot(serve_http *h, SoupServerMessage *msg, const char *id, const char *element,
                         GHashTable *query)
{
    snap sn = take_snapshot(h, id, element,
                            query_int(query, "width", DEFAULT_PREVIEW_WIDTH, 16, MAX_PREVIEW_WIDTH));
    if (sn.status != 200) {
        answer_error(msg, sn.status, sn.error->message);
        g_error_free(sn.error);
        return;
    }
    gsize len = 0;
    const void *data = g_bytes_get_data(sn.jpeg, &len);
    soup_server_message_set_status(msg, 200, NULL);
    soup_message_headers_replace(soup_server_message_get_response_headers(msg), "Cache-Control", "no-store");
    soup_server_message_set_response(msg, "image/jpeg", SOUP_MEMORY_COPY, data, len);
    g_bytes_unref(sn.jpeg);
}

// One client of an MJPEG preview: a part per tick while it keeps up; a
// viewer still reading the last part is skipped (its frames drop), so a
// slow one never slows anything else.
typedef struct viewer {
    serve_http *http;
    SoupServerMessage *msg;
    char *id, *element;
    int width;
    guint64 unsent; // bytes appended but not yet written
    guint tick;
} viewer;

static void viewer_gone(SoupServerMessage *msg, gpointer data)
{
    (void)msg;
    viewer *v = data;
    if (v->tick)
        g_source_remove(v->tick);
    g_free(v->id);
    g_free(v->element);
    g_free(v);
}

static void viewer_wrote(SoupServerMessage *msg, guint bytes, gpointer data)
{
    (void)msg;
    viewer *v = data;
    v->unsent -= MIN(v->unsent, bytes);
}

static gboolean viewer_tick(gpointer data)
{
    viewer *v = data;
    if (v->unsent > 0)
        return G_SOURCE_CONTINUE; // still writing the last one
    snap sn = take_snapshot(v->http, v->id, v->element, v->width);
    SoupMessageBody *body = soup_server_message_get_response_body(v->msg);
    if (sn.status == 404) {
        // The pipeline or the element went away: the stream ends.
        g_error_free(sn.error);
        v->tick = 0;
        soup_message_body_complete(body);
        soup_server_message_unpause(v->msg);
        return G_SOURCE_REMOVE;
    }
    if (sn.status != 200) {
        g_error_free(sn.error); // no frame yet: try at the next tick
        return G_SOURCE_CONTINUE;
    }
    gsize len = 0;
    const void *jpeg = g_bytes_get_data(sn.jpeg, &len);
    char *head = g_strdup_printf("--reelframe\r\nContent-Type: image/jpeg\r\nContent-Length: %" G_GSIZE_FORMAT
                                 "\r\n\r\n", len);
    v->unsent += strlen(head);
    soup_message_body_append(body, SOUP_MEMORY_TAKE, head, strlen(head));
    soup_message_body_append(body, SOUP_MEMORY_COPY, jpeg, len);
    soup_message_body_append(body, SOUP_MEMORY_STATIC, "\r\n", 2);
    v->unsent += len + 2;
    g_bytes_unref(sn.jpeg);
    soup_server_message_unpause(v->msg);
    return G_SOURCE_CONTINUE;
}

static void get_preview(serve_http *h, SoupServerMessage *msg, const char *id, const char *element,
                        GHashTable *query)
{
    // Refused at once when there is nothing to show at all.
    snap first = take_snapshot(h, id, element, 16);
    if (first.status == 404 || first.status == 400) {
        answer_error(msg, first.status, first.error->message);
        g_error_free(first.error);
        return;
    }
    g_clear_error(&first.error);
    if (first.jpeg)
        g_bytes_unref(first.jpeg);
    viewer *v = g_new0(viewer, 1);
    v->http = h;
    v->msg = msg;
    v->id = g_strdup(id);
    v->element = g_strdup(element);
    v->width = query_int(query, "width", DEFAULT_PREVIEW_WIDTH, 16, MAX_PREVIEW_WIDTH);
    int fps = query_int(query, "fps", DEFAULT_PREVIEW_FPS, 1, MAX_PREVIEW_FPS);
    SoupMessageHeaders *rh = soup_server_message_get_response_headers(msg);
    soup_server_message_set_status(msg, 200, NULL);
    soup_message_headers_set_content_type(rh, "multipart/x-mixed-replace; boundary=reelframe", NULL);
    soup_message_headers_set_encoding(rh, SOUP_ENCODING_EOF);
    soup_message_headers_replace(rh, "Cache-Control", "no-store");
    soup_message_body_set_accumulate(soup_server_message_get_response_body(msg), FALSE);
    g_signal_connect(msg, "wrote-body-data", G_CALLBACK(viewer_wrote), v);
    g_signal_connect(msg, "finished", G_CALLBACK(viewer_gone), v);
    v->tick = g_timeout_add(1000 / fps, viewer_tick, v);
    soup_server_message_pause(msg);
}

// The `preview` element on a stream's own branch (where the report says
// it carries that stream alone), for /pipelines/ID/streams/SID/...
typedef struct stream_view {
    int stream;
    char *element;
    const char *why; // when there is none
} stream_view;

static void view_running(reel_pipeline *p, void *data)
{
    stream_view *v = data;
    if (!p) {
        v->why = "the pipeline is not running";
        return;
    }
    reel_pipeline_lock_graph(p);
    int n = reel_pipeline_report(p, NULL, 0);
    reel_element_report *r = g_new0(reel_element_report, MAX(n, 1));
    reel_pipeline_report(p, r, n);
    for (int i = 0; i < n && !v->element; i++)
        if (r[i].stream == v->stream && strcmp(r[i].klass, "preview") == 0)
            v->element = g_strdup(r[i].name);
    reel_pipeline_unlock_graph(p);
    g_free(r);
    if (!v->element)
        v->why = "no preview element carries this stream alone (put one on its branch, as u. ! overlay ! preview)";
}

static void view_one(serve_hosted *h, void *data)
{
    stream_view *v = data;
    if (!h)
        v->why = "no such pipeline";
    else
        serve_hosted_with_pipeline(h, view_running, v);
}

static void get_stream_view(serve_http *h, SoupServerMessage *msg, const char *id, const char *sid, bool mjpeg,
                            GHashTable *query)
{
    char *end = NULL;
    gint64 stream = g_ascii_strtoll(sid, &end, 10);
    stream_view v = { .stream = (int)stream, .why = "no such stream" };
    if (*sid && !*end && stream >= 0 && stream <= G_MAXINT)
        serve_service_with(h->service, id, view_one, &v);
    if (!v.element)
        answer_error(msg, 404, v.why);
    else if (mjpeg)
        get_preview(h, msg, id, v.element, query);
    else
        get_snapshot(h, msg, id, v.element, query);
    g_free(v.element);
}

// A DELETE's pipeline has stopped, its outputs finalized.
static void deleted(gpointer data)
{
    SoupServerMessage *msg = data;
    answer_json(msg, 200, g_string_new("{\"ok\": true}\n"));
    soup_server_message_unpause(msg);
    g_object_unref(msg);
}

// ---- streams ---------------------------------------------------------------

// A stream added or removed on a thread of its own (its input opens, or
// its sinks finalize, meanwhile); the answer goes out on the server's.
typedef struct stream_change {
    serve_hosted *hosted; // held until done
    SoupServerMessage *msg;
    char **values;        // adding; NULL: removing `id`
    int id;
    int status;           // 404: no such pipeline
    GError *error;
} stream_change;

static void stream_change_run(GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
    (void)source;
    (void)cancel;
    stream_change *c = data;
    if (c->values)
        c->id = serve_hosted_add_stream(c->hosted, (const char *const *)c->values, &c->error);
    else
        serve_hosted_remove_stream(c->hosted, c->id, &c->error);
    serve_hosted_release(c->hosted);
    g_task_return_boolean(task, TRUE);
}

static void stream_change_done(GObject *source, GAsyncResult *result, gpointer data)
{
    (void)source;
    (void)result;
    stream_change *c = data;
    GError *err = c->error;
    if (!err && c->values) {
        GString *s = g_string_new(NULL);
        g_string_printf(s, "{\"id\": \"%d\"}\n", c->id);
        answer_json(c->msg, 201, s);
    } else if (!err) {
        answer_json(c->msg, 200, g_string_new("{\"ok\": true}\n"));
    } else if (strstr(err->message, ": error: ")) // the template does not parse: line and column
        answer_parse_error(c->msg, err);
    else
        answer_error(c->msg,
                     g_error_matches(err, SERVE_STREAM_ERROR, SERVE_STREAM_UNKNOWN) ? 404
                     : err->domain == SERVE_STREAM_ERROR                        ? 409
                                                                                : 400,
                     err->message);
    soup_server_message_unpause(c->msg);
    g_object_unref(c->msg);
    g_clear_error(&c->error);
    g_strfreev(c->values);
    g_free(c);
}

static void change_stream(serve_hosted *h, void *data)
{
    stream_change *c = data;
    if (!h) {
        c->status = 404;
        return;
    }
    serve_hosted_hold(h);
    c->hosted = h;
    c->msg = g_object_ref(c->msg);
    stream_change *mine = g_memdup2(c, sizeof *c);
    GTask *task = g_task_new(NULL, NULL, stream_change_done, mine);
    g_task_set_task_data(task, mine, NULL); // freed by stream_change_done
    g_task_run_in_thread(task, stream_change_run);
    g_object_unref(task);
    soup_server_message_pause(c->msg);
}

static void post_stream(serve_http *h, SoupServerMessage *msg, const char *id)
{
    reel_json_value *v = body_json(msg);
    if (!v)
        return;
    GError *err = NULL;
    stream_change c = { .msg = msg, .values = serve_request_stream_values(v, &err) };
    reel_json_free(v);
    if (!c.values) {
        answer_error(msg, 400, err->message);
        g_error_free(err);
        return;
    }
    serve_service_with(h->service, id, change_stream, &c);
    if (c.status == 404) {
        g_strfreev(c.values);
        answer_error(msg, 404, "no such pipeline");
    }
}

static void delete_stream(serve_http *h, SoupServerMessage *msg, const char *id, const char *sid)
{
    char *end = NULL;
    long n = strtol(sid, &end, 10);
    if (!*sid || *end || n < 0 || n > G_MAXINT) {
        answer_error(msg, 404, "no such stream: stream ids are numbers");
        return;
    }
    stream_change c = { .msg = msg, .id = (int)n };
    serve_service_with(h->service, id, change_stream, &c);
    if (c.status == 404)
        answer_error(msg, 404, "no such pipeline");
}

static void list_streams(serve_hosted *h, void *data)
{
    one_request *r = data;
    if (!h) {
        answer_error(r->msg, 404, "no such pipeline");
        return;
    }
    GString *s = g_string_new("{\"streams\": ");
    serve_hosted_streams_json(h, s);
    g_string_append(s, "}\n");
    answer_json(r->msg, 200, s);
}

// ---- routing ---------------------------------------------------------------

// Constant-time comparison: how much of a guess is right must not show in
// how long the answer takes.
static bool same_secret(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    unsigned char diff = na != nb;
    for (size_t i = 0; i < na; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
    return diff == 0;
}

static bool authorized(serve_http *h, SoupServerMessage *msg)
{
    if (!h->token)
        return true;
    const char *auth = soup_message_headers_get_one(soup_server_message_get_request_headers(msg), "Authorization");
    return auth && g_str_has_prefix(auth, "Bearer ") && same_secret(auth + 7, h->token);
}

static void route(SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query, gpointer data)
{
    (void)server;
    serve_http *h = data;
    const char *method = soup_server_message_get_method(msg);
    if (soup_server_message_get_status(msg) != 0)
        return; // answered already (a body too large)
    if (strcmp(path, "/") == 0 && strcmp(method, "GET") == 0) {
        // The page holds no data: its script asks the API, with the token.
        answer(msg, 200, "text/html; charset=utf-8", g_string_new(serve_page_html));
        return;
    }
    if (!authorized(h, msg)) {
        soup_message_headers_replace(soup_server_message_get_response_headers(msg), "WWW-Authenticate", "Bearer");
        answer_error(msg, 401, "this server wants a bearer token (Authorization: Bearer ...)");
        return;
    }
    char **parts = g_strsplit(path + 1, "/", 5);
    int n = (int)g_strv_length(parts);
    bool get = strcmp(method, "GET") == 0;
    one_request r = { .http = h, .msg = msg };
    if (n == 1 && strcmp(parts[0], "metrics") == 0 && get) {
        char *text = serve_metrics_text(h->service);
        soup_server_message_set_status(msg, 200, NULL);
        soup_server_message_set_response(msg, "text/plain; version=0.0.4; charset=utf-8", SOUP_MEMORY_TAKE, text,
                                         strlen(text));
    } else if (n == 1 && strcmp(parts[0], "pipelines") == 0 && get) {
        get_pipelines(h, msg);
    } else if (n == 1 && strcmp(parts[0], "pipelines") == 0 && strcmp(method, "POST") == 0) {
        post_pipeline(h, msg);
    } else if (n == 2 && strcmp(parts[0], "pipelines") == 0 && get) {
        serve_service_with(h->service, parts[1], get_one, &r);
    } else if (n == 2 && strcmp(parts[0], "pipelines") == 0 && strcmp(method, "DELETE") == 0) {
        if (serve_service_remove(h->service, parts[1], deleted, g_object_ref(msg)))
            soup_server_message_pause(msg); // answered once it has stopped
        else {
            g_object_unref(msg);
            answer_error(msg, 404, "no such pipeline");
        }
    } else if (n == 4 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "elements") == 0
               && strcmp(method, "PATCH") == 0) {
        if ((r.body = body_json(msg))) {
            r.element = parts[3];
            serve_service_with(h->service, parts[1], patch_one, &r);
            reel_json_free(r.body);
        }
    } else if (n == 5 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "elements") == 0 && get
               && strcmp(parts[4], "snapshot.jpg") == 0) {
        get_snapshot(h, msg, parts[1], parts[3], query);
    } else if (n == 5 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "elements") == 0 && get
               && strcmp(parts[4], "preview.mjpeg") == 0) {
        get_preview(h, msg, parts[1], parts[3], query);
    } else if (n == 5 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "streams") == 0 && get
               && (strcmp(parts[4], "preview.mjpeg") == 0 || strcmp(parts[4], "snapshot.jpg") == 0)) {
        get_stream_view(h, msg, parts[1], parts[3], strcmp(parts[4], "preview.mjpeg") == 0, query);
    } else if (n == 3 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "streams") == 0 && get) {
        serve_service_with(h->service, parts[1], list_streams, &r);
    } else if (n == 3 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "streams") == 0
               && strcmp(method, "POST") == 0) {
        post_stream(h, msg, parts[1]);
    } else if (n == 4 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "streams") == 0
               && strcmp(method, "DELETE") == 0) {
        delete_stream(h, msg, parts[1], parts[3]);
    } else if ((n == 1 && (strcmp(parts[0], "pipelines") == 0 || strcmp(parts[0], "metrics") == 0))
               || (n == 3 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "streams") == 0)
               || (n == 4 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "streams") == 0)
               || (n == 2 && strcmp(parts[0], "pipelines") == 0)
               || (n == 4 && strcmp(parts[0], "pipelines") == 0 && strcmp(parts[2], "elements") == 0)) {
        answer_error(msg, 405, "method not allowed here");
    } else {
        answer_error(msg, 404, "no such resource");
    }
    g_strfreev(parts);
}

// Before a body is read: one over MAX_BODY is refused, unread.
static void got_headers(SoupServerMessage *msg, gpointer data)
{
    (void)data;
    SoupMessageHeaders *hd = soup_server_message_get_request_headers(msg);
    goffset len = soup_message_headers_get_content_length(hd);
    if (len > MAX_BODY || soup_message_headers_get_encoding(hd) == SOUP_ENCODING_CHUNKED)
        answer_error(msg, len > MAX_BODY ? 413 : 411,
                     len > MAX_BODY ? "the body is larger than 1 MiB" : "a body needs a Content-Length");
}

static void request_started(SoupServer *server, SoupServerMessage *msg, gpointer data)
{
    (void)server;
    g_signal_connect(msg, "got-headers", G_CALLBACK(got_headers), data);
}

// ---- the server ------------------------------------------------------------

static bool is_loopback(GInetAddress *a)
{
    return g_inet_address_get_is_loopback(a);
}

serve_http *serve_http_start(serve_service *service, const serve_http_params *params, GError **error)
{
    const char *listen = params->listen ? params->listen : "127.0.0.1:8080";
    const char *colon = strrchr(listen, ':');
    char *host = colon ? g_strndup(listen, colon - listen) : NULL;
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (host && host[0] == '[' && host[strlen(host) - 1] == ']') { // [::1]:8080
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    GInetAddress *addr = host ? g_inet_address_new_from_string(host) : NULL;
    g_free(host);
    if (!addr || !end || *end || port < 0 || port > 65535) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "--listen '%s': ADDR:PORT with a numeric address "
                                                     "(127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080)", listen);
        g_clear_object(&addr);
        return NULL;
    }
    if (!is_loopback(addr) && !params->token) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "--listen %s reaches beyond this machine: give --token-file "
                                                     "(and --tls-cert/--tls-key) so that not anyone on the "
                                                     "network can run pipelines here", listen);
        g_object_unref(addr);
        return NULL;
    }
    GTlsCertificate *cert = NULL;
    if (params->tls_cert && !(cert = g_tls_certificate_new_from_files(params->tls_cert, params->tls_key, error))) {
        g_prefix_error(error, "--tls-cert %s, --tls-key %s: ", params->tls_cert, params->tls_key);
        g_object_unref(addr);
        return NULL;
    }
    serve_http *h = g_new0(serve_http, 1);
    h->service = service;
    h->token = g_strdup(params->token);
    h->server = soup_server_new("server-header", "reel-serve", "tls-certificate", cert, NULL);
    g_clear_object(&cert);
    soup_server_add_handler(h->server, NULL, route, h, NULL);
    g_signal_connect(h->server, "request-started", G_CALLBACK(request_started), h);
    GSocketAddress *sa = g_inet_socket_address_new(addr, (guint16)port);
    g_object_unref(addr);
    gboolean ok = soup_server_listen(h->server, sa, params->tls_cert ? SOUP_SERVER_LISTEN_HTTPS : 0, error);
    g_object_unref(sa);
    if (!ok) {
        g_prefix_error(error, "cannot listen on %s: ", listen);
        serve_http_stop(&h);
        return NULL;
    }
    GSList *uris = soup_server_get_uris(h->server);
    h->port = uris ? g_uri_get_port(uris->data) : (int)port;
    g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
    return h;
}

int serve_http_port(const serve_http *h)
{
    return h->port;
}

void serve_http_stop(serve_http **hp)
{
    serve_http *h = *hp;
    if (!h)
        return;
    soup_server_disconnect(h->server);
    g_object_unref(h->server);
    if (h->token)
        explicit_bzero(h->token, strlen(h->token));
    g_free(h->token);
    g_free(h);
    *hp = NULL;
}

// mqttsink: publishes each frame's metadata to an MQTT broker, one message
// per frame, for IoT systems that already speak MQTT. The message is exactly
// natssink's: the JSON object metasink writes for the frame, without the
// newline, on `topic` with {stream} replaced by the buffer's stream id.
//
// The connection is made in `open` (in parallel with the sources' set-up);
// libmosquitto's own thread does the network I/O and reconnects a lost
// broker on its own. qos=1|2 messages published meanwhile are held and sent
// again; qos=0 ones are dropped with a warning (at most once, as MQTT means
// it). At the end of the stream every qos>0 message is waited for until the
// broker has acknowledged it (bounded), then the client disconnects.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mosquitto.h>

#include "elements/meta_json.h"
#include "reel/reel.h"

enum {
    DEFAULT_PORT = 1883,
    KEEPALIVE_S = 30,
    RECONNECT_MIN_S = 1,
    RECONNECT_MAX_S = 8,
    CONNACK_WAIT_MS = 5000,
    FINISH_WAIT_MS = 10000,
    // Unacknowledged messages held before process waits for the broker: a
    // bound on memory while it is away.
    MAX_UNACKED = 4096,
};

typedef struct mqttsink_priv {
    char *url;
    char *topic;
    int qos;
    bool retain;
    char *client_id;
    char *username;
    char *password;

    const char *url_now; // url, or the default
    struct mosquitto *mosq;
    bool loop_running;
    GString *line;
    GString *topic_now; // topic with {stream} replaced, reused
    int64_t dropped;    // qos 0 messages the broker was away for

    GMutex lock; // guards the fields below (set from libmosquitto's thread)
    GCond changed;
    bool connack_seen;
    int connack_rc;
    bool connected;
    int64_t losses;          // connections lost since open
    int64_t losses_reported; // of which warned about (the element's thread only)
    int loss_rc;             // why the last one was lost
    int64_t published;       // qos > 0 messages handed to the library
    int64_t acknowledged;    // of which the broker acknowledged
} mqttsink_priv;

// A topic one can publish on (no + or #), once {stream} is replaced.
static const char *publishable(const void *value)
{
    const char *topic = *(char *const *)value;
    GString *probe = g_string_new(NULL);
    reel_meta_destination(probe, topic, 0);
    bool ok = probe->len > 0 && mosquitto_pub_topic_check(probe->str) == MOSQ_ERR_SUCCESS;
    g_string_free(probe, TRUE);
    return ok ? NULL : "a topic to publish on: not empty, no + or #";
}

// topic is read for each frame, so it may change while running.
static const reel_prop props[] = {
    { "url", REEL_PROP_STRING, offsetof(mqttsink_priv, url), NULL,
      .help = "broker, mqtt://HOST:PORT (default $REEL_MQTT_URL, else mqtt://127.0.0.1:1883)" },
    { "topic", REEL_PROP_STRING, offsetof(mqttsink_priv, topic), "reel/meta/{stream}",
      .help = "topic of each frame's message; {stream} is replaced by the stream id", .flags = REEL_PROP_MUTABLE,
      .check = publishable },
    { "qos", REEL_PROP_INT, offsetof(mqttsink_priv, qos), "1", 0, 2,
      .help = "MQTT quality of service: 0 at most once, 1 at least once, 2 exactly once" },
    { "retain", REEL_PROP_BOOL, offsetof(mqttsink_priv, retain), "false",
      .help = "ask the broker to keep the last message of each topic for new subscribers" },
    { "client-id", REEL_PROP_STRING, offsetof(mqttsink_priv, client_id), NULL,
      .help = "MQTT client id (default reel-HOST-PID)" },
    { "username", REEL_PROP_STRING, offsetof(mqttsink_priv, username), NULL,
      .help = "user name to log in to the broker with (optional)" },
    { "password", REEL_PROP_STRING, offsetof(mqttsink_priv, password), NULL,
      .help = "password to log in to the broker with (optional; needs username)" },
    { NULL },
};

static void lib_cleanup(void)
{
    mosquitto_lib_cleanup();
}

static gpointer lib_init(gpointer unused)
{
    (void)unused;
    mosquitto_lib_init();
    atexit(lib_cleanup);
    return NULL;
}

static const char *default_url(void)
{
    const char *env = getenv("REEL_MQTT_URL");
    return env && *env ? env : "mqtt://127.0.0.1:1883";
}

// reel-HOST-PID; a second sink in the process gets -2 and so on, since the
// broker drops the older of two clients with one id.
static char *default_client_id(void)
{
    static gint made;
    int n = g_atomic_int_add(&made, 1);
    if (n == 0)
        return g_strdup_printf("reel-%s-%d", g_get_host_name(), (int)getpid());
    return g_strdup_printf("reel-%s-%d-%d", g_get_host_name(), (int)getpid(), n + 1);
}

// rc's text; `saved_errno` is errno as the failing call left it.
static const char *mosq_reason(int rc, int saved_errno)
{
    return rc == MOSQ_ERR_ERRNO ? g_strerror(saved_errno) : mosquitto_strerror(rc);
}

static void on_connect(struct mosquitto *mosq, void *closure, int rc)
{
    (void)mosq;
    mqttsink_priv *s = closure;
    g_mutex_lock(&s->lock);
    s->connack_seen = true;
    s->connack_rc = rc;
    s->connected = rc == 0;
    g_cond_broadcast(&s->changed);
    g_mutex_unlock(&s->lock);
}

static void on_disconnect(struct mosquitto *mosq, void *closure, int rc)
{
    (void)mosq;
    mqttsink_priv *s = closure;
    g_mutex_lock(&s->lock);
    s->connected = false;
    if (rc != 0) { // 0: the disconnect asked for at the end
        s->losses++;
        s->loss_rc = rc;
    }
    g_cond_broadcast(&s->changed);
    g_mutex_unlock(&s->lock);
}

static void on_publish(struct mosquitto *mosq, void *closure, int mid)
{
    (void)mosq;
    (void)mid;
    mqttsink_priv *s = closure;
    if (s->qos == 0) // called once written out: nothing to wait for
        return;
    g_mutex_lock(&s->lock);
    s->acknowledged++;
    g_cond_broadcast(&s->changed);
    g_mutex_unlock(&s->lock);
}

static int init(reel_element *e)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, lib_init, NULL);
    mqttsink_priv *s = reel_element_priv(e);
    g_mutex_init(&s->lock);
    g_cond_init(&s->changed);
    return 0;
}

static void disconnect(mqttsink_priv *s)
{
    if (!s->mosq)
        return;
    mosquitto_disconnect(s->mosq);
    if (s->loop_running)
        mosquitto_loop_stop(s->mosq, false); // the thread ends once the disconnect is sent
    s->loop_running = false;
    mosquitto_destroy(s->mosq);
    s->mosq = NULL;
}

// Host and port of an mqtt:// url.
static int parse_url(reel_element *e, const char *url, char **host, int *port)
{
    GError *err = NULL;
    char *scheme = NULL;
    if (!g_uri_split_network(url, G_URI_FLAGS_NONE, &scheme, host, port, &err)) {
        int code = reel_element_error(e, REEL_EINVAL, "broker url '%s' is not mqtt://HOST:PORT: %s", url,
                                      err->message);
        g_error_free(err);
        return code;
    }
    bool mqtt = scheme && g_ascii_strcasecmp(scheme, "mqtt") == 0;
    g_free(scheme);
    if (!mqtt || !*host || !**host) {
        g_clear_pointer(host, g_free);
        return reel_element_error(e, REEL_EINVAL, "broker url '%s' is not mqtt://HOST:PORT (only mqtt:// is supported)",
                                  url);
    }
    if (*port <= 0)
        *port = DEFAULT_PORT;
    return 0;
}

// Waits for the broker's answer to the connection; an error when it refused
// or did not answer.
static int wait_connack(reel_element *e, mqttsink_priv *s)
{
    gint64 deadline = g_get_monotonic_time() + CONNACK_WAIT_MS * G_TIME_SPAN_MILLISECOND;
    g_mutex_lock(&s->lock);
    while (!s->connack_seen && g_cond_wait_until(&s->changed, &s->lock, deadline))
        ;
    bool seen = s->connack_seen;
    int rc = s->connack_rc;
    g_mutex_unlock(&s->lock);
    if (!seen)
        return reel_element_error(e, REEL_EIO, "MQTT broker at '%s' did not answer the connection within %d s",
                                  s->url_now, CONNACK_WAIT_MS / 1000);
    if (rc != 0)
        return reel_element_error(e, REEL_EIO, "MQTT broker at '%s' refused the connection: %s", s->url_now,
                                  mosquitto_connack_string(rc));
    return 0;
}

static int open_broker(reel_element *e)
{
    mqttsink_priv *s = reel_element_priv(e);
    disconnect(s); // a pipeline opened again
    s->connack_seen = s->connected = false;
    s->connack_rc = 0;
    s->losses = s->losses_reported = 0;
    s->published = s->acknowledged = 0;
    s->url_now = s->url && *s->url ? s->url : default_url();
    if (!s->topic || !*s->topic)
        return reel_element_error(e, REEL_EINVAL, "no topic set");
    GString *probe = g_string_new(NULL);
    reel_meta_destination(probe, s->topic, 0);
    bool topic_ok = mosquitto_pub_topic_check(probe->str) == MOSQ_ERR_SUCCESS;
    g_string_free(probe, TRUE);
    if (!topic_ok)
        return reel_element_error(e, REEL_EINVAL, "topic '%s' cannot be published to (no + or #)", s->topic);
    if (s->password && !s->username)
        return reel_element_error(e, REEL_EINVAL, "a password needs a username");

    char *host = NULL;
    int port = 0;
    int code = parse_url(e, s->url_now, &host, &port);
    if (code < 0)
        return code;
    char *id = s->client_id && *s->client_id ? g_strdup(s->client_id) : default_client_id();
    s->mosq = mosquitto_new(id, true, s);
    g_free(id);
    if (!s->mosq) {
        int saved_errno = errno;
        g_free(host);
        return reel_element_error(e, REEL_ENOMEM, "cannot make an MQTT client: %s", g_strerror(saved_errno));
    }
    mosquitto_connect_callback_set(s->mosq, on_connect);
    mosquitto_disconnect_callback_set(s->mosq, on_disconnect);
    mosquitto_publish_callback_set(s->mosq, on_publish);
    mosquitto_reconnect_delay_set(s->mosq, RECONNECT_MIN_S, RECONNECT_MAX_S, true);
    int rc = s->username ? mosquitto_username_pw_set(s->mosq, s->username, s->password) : MOSQ_ERR_SUCCESS;
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_connect(s->mosq, host, port, KEEPALIVE_S);
    int saved_errno = errno;
    g_free(host);
    if (rc != MOSQ_ERR_SUCCESS)
        return reel_element_error(e, REEL_EIO, "cannot connect to MQTT broker at '%s': %s", s->url_now,
                                  mosq_reason(rc, saved_errno));
    rc = mosquitto_loop_start(s->mosq);
    saved_errno = errno;
    if (rc != MOSQ_ERR_SUCCESS)
        return reel_element_error(e, REEL_EIO, "cannot start the MQTT network thread: %s",
                                  mosq_reason(rc, saved_errno));
    s->loop_running = true;
    return wait_connack(e, s);
}

static int start(reel_element *e)
{
    mqttsink_priv *s = reel_element_priv(e);
    s->line = g_string_new(NULL);
    s->topic_now = g_string_new(NULL);
    s->dropped = 0;
    return 0;
}

// Waits until at most `most` qos > 0 messages are unacknowledged, or
// `wait_ms` passes, or the pipeline is aborted. Returns how many still are.
static int64_t wait_acknowledged(reel_element *e, mqttsink_priv *s, int64_t most, int wait_ms)
{
    gint64 deadline = g_get_monotonic_time() + wait_ms * G_TIME_SPAN_MILLISECOND;
    g_mutex_lock(&s->lock);
    while (s->published - s->acknowledged > most && !reel_element_is_aborting(e) &&
           g_cond_wait_until(&s->changed, &s->lock, deadline))
        ;
    int64_t left = s->published - s->acknowledged;
    g_mutex_unlock(&s->lock);
    return left;
}

static int not_acknowledged(reel_element *e, mqttsink_priv *s, int64_t left, const char *when)
{
    g_mutex_lock(&s->lock);
    bool connected = s->connected;
    int loss_rc = s->loss_rc;
    g_mutex_unlock(&s->lock);
    return reel_element_error(e, REEL_EIO, "MQTT broker at '%s' did not acknowledge %" G_GINT64_FORMAT
                              " message%s %s (%s)", s->url_now, left, left == 1 ? "" : "s", when,
                              connected ? "connected" : mosquitto_strerror(loss_rc));
}

// A lost connection, once: libmosquitto reconnects on its own.
static void report_losses(reel_element *e, mqttsink_priv *s)
{
    g_mutex_lock(&s->lock);
    int64_t losses = s->losses;
    int loss_rc = s->loss_rc;
    g_mutex_unlock(&s->lock);
    if (losses == s->losses_reported)
        return;
    s->losses_reported = losses;
    reel_element_warning(e, "lost the MQTT broker at '%s' (%s); reconnecting", s->url_now,
                         mosquitto_strerror(loss_rc));
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    mqttsink_priv *s = reel_element_priv(e);
    reel_meta_message(s->line, buf);
    reel_meta_destination(s->topic_now, s->topic, buf->stream_id);
    reel_buffer_unref(&buf);
    report_losses(e, s);
    if (s->qos > 0) {
        int64_t left = wait_acknowledged(e, s, MAX_UNACKED - 1, FINISH_WAIT_MS);
        if (left >= MAX_UNACKED)
            return not_acknowledged(e, s, left, "for 10 s");
        g_mutex_lock(&s->lock); // counted first: the acknowledgement can come before publish returns
        s->published++;
        g_mutex_unlock(&s->lock);
    }
    int rc = mosquitto_publish(s->mosq, NULL, s->topic_now->str, (int)s->line->len, s->line->str, s->qos, s->retain);
    int saved_errno = errno;
    // Away from the broker, libmosquitto still queues a qos > 0 message (and
    // says NO_CONN): it goes out on reconnection, and flush waits for it.
    if (rc == MOSQ_ERR_NO_CONN && s->qos > 0)
        return 0;
    if (rc == MOSQ_ERR_NO_CONN) {
        if (s->dropped++ == 0)
            reel_element_warning(e, "MQTT broker at '%s' is away: qos=0 messages are dropped until it is back",
                                 s->url_now);
        return 0;
    }
    if (rc != MOSQ_ERR_SUCCESS) {
        if (s->qos > 0) {
            g_mutex_lock(&s->lock);
            s->published--;
            g_mutex_unlock(&s->lock);
        }
        return reel_element_error(e, REEL_EIO, "cannot publish on '%s' to MQTT broker at '%s': %s",
                                  s->topic_now->str, s->url_now, mosq_reason(rc, saved_errno));
    }
    return 0;
}

// At the end: every qos > 0 message acknowledged by the broker.
static int flush(reel_element *e)
{
    mqttsink_priv *s = reel_element_priv(e);
    if (s->dropped > 0)
        reel_element_warning(e, "%" G_GINT64_FORMAT " qos=0 message%s dropped while the broker was away",
                             s->dropped, s->dropped == 1 ? "" : "s");
    int64_t left = wait_acknowledged(e, s, 0, FINISH_WAIT_MS);
    return left > 0 ? not_acknowledged(e, s, left, "within 10 s of the end of the stream") : 0;
}

static void stop(reel_element *e)
{
    mqttsink_priv *s = reel_element_priv(e);
    disconnect(s);
    if (s->line)
        g_string_free(s->line, TRUE);
    if (s->topic_now)
        g_string_free(s->topic_now, TRUE);
    s->line = s->topic_now = NULL;
}

// Wakes a process or flush waiting for acknowledgements when the pipeline is aborted.
static void unblock(reel_element *e)
{
    mqttsink_priv *s = reel_element_priv(e);
    g_mutex_lock(&s->lock);
    g_cond_broadcast(&s->changed);
    g_mutex_unlock(&s->lock);
}

static void uninit(reel_element *e)
{
    mqttsink_priv *s = reel_element_priv(e);
    stop(e);
    g_cond_clear(&s->changed);
    g_mutex_clear(&s->lock);
}

const reel_element_class reel_mqttsink_class = {
    .name = "mqttsink",
    .description = "Publishes each frame's detections and classifications to an MQTT broker as JSON",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // reads metadata only, never the pixels
    .priv_size = sizeof(mqttsink_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 0,
    .input_caps = "video/raw|tensor",
    .init = init,
    .uninit = uninit,
    .open = open_broker,
    .start = start,
    .process = process,
    .flush = flush,
    .stop = stop,
    .unblock = unblock,
};

// mqttsink: publishes each frame's metadata to an MQTT broker, one message
// per frame, for IoT systems that already speak MQTT. The message is exactly
// natssink's: the JSON object metasink writes for the frame, without the
// newline, on `topic` with {stream} replaced by the buffer's stream id.
//
// The connection is made in `open` (in parallel with the sources' set-up),
// over TLS for an mqtts:// url; a network thread of ours drives libmosquitto
// and reconnects a lost broker. qos=1|2 messages published meanwhile are held
// and sent again; qos=0 ones are dropped with a warning (at most once, as MQTT
// means it). At the end of the stream every qos>0 message is waited for until
// the broker has acknowledged it (bounded), then the client disconnects.
//
// Secrets stay out of the pipeline's text: the password comes from a file or
// an environment variable, a url with credentials in it is refused, and no
// message shows a password.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mosquitto.h>

#include "base/redact.h"
#include "elements/meta_json.h"
#include "reel/reel.h"

enum {
    DEFAULT_PORT = 1883,
    DEFAULT_TLS_PORT = 8883,
    KEEPALIVE_S = 30,
    RECONNECT_MIN_S = 1,
    RECONNECT_MAX_S = 8,
    CONNACK_WAIT_MS = 5000,
    FINISH_WAIT_MS = 10000,
    // The network thread's longest wait in select: how late it may notice a
    // change nobody woke it for.
    LOOP_WAIT_MS = 1000,
    // At the end, how long the DISCONNECT may take to go out.
    DISCONNECT_WAIT_MS = 2000,
    // Unacknowledged messages held before process waits for the broker: a
    // bound on memory while it is away.
    MAX_UNACKED = 4096,
    MAX_PASSWORD = 65535, // MQTT's bound on a password
    LAST_ERROR_BYTES = 512,
};

typedef struct mqttsink_priv {
    char *url;
    char *topic;
    int qos;
    bool retain;
    char *client_id;
    char *username;
    char *password; // refused: set only to say so
    char *password_file;
    char *password_env;
    char *tls_ca;
    char *tls_cert;
    char *tls_key;

    const char *url_now; // url, or the default
    char *url_shown;     // url_now as messages show it: no credentials
    bool tls;            // mqtts://
    struct mosquitto *mosq;
    GThread *network; // runs network_loop
    GString *line;
    GString *topic_now; // topic with {stream} replaced, reused
    int64_t dropped;    // qos 0 messages the broker was away for

    // Held by whoever calls libmosquitto to connect or disconnect (the network
    // thread's reconnection, stop's disconnect): the two never overlap. Taken
    // before `lock`, never while holding it.
    GMutex run_lock;
    GMutex lock; // guards the fields below (set from the network thread)
    GCond changed;
    bool stopping;        // the network thread is to end
    gint64 stop_deadline; // by then, even if the DISCONNECT did not go out
    int reconnect_s;      // the next reconnection's delay
    bool connack_seen;
    int connack_rc;
    bool connected;
    bool failed;       // the first connection ended before its CONNACK
    int failed_rc;     // how (a MOSQ_ERR_*)
    int failed_errno;  // errno, for MOSQ_ERR_ERRNO
    GString *last_error; // libmosquitto's first error since the last attempt (OpenSSL's reason)
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

// topic is read for each frame, so it may change while running. No property
// holds a secret: `reel inspect`, errors and reports may show any of them.
static const reel_prop props[] = {
    { "url", REEL_PROP_STRING, offsetof(mqttsink_priv, url), NULL, .flags = REEL_PROP_WRITES_URL,
      .help = "broker, mqtt://HOST[:PORT] (port 1883) or mqtts://HOST[:PORT] (TLS, port 8883); no credentials "
              "in it, see username (default $REEL_MQTT_URL, else mqtt://127.0.0.1:1883)" },
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
      .help = "user name to log in to the broker with (optional); its password comes from password-file or "
              "password-env, never from the pipeline's text" },
    { "password", REEL_PROP_STRING, offsetof(mqttsink_priv, password), NULL,
      .help = "refused: a password in the pipeline's text is seen by whoever sees the pipeline; use "
              "password-file or password-env" },
    { "password-file", REEL_PROP_STRING, offsetof(mqttsink_priv, password_file), NULL,
      .flags = REEL_PROP_READS_FILE,
      .help = "file whose first line is the password (needs username; not with password-env)" },
    { "password-env", REEL_PROP_STRING, offsetof(mqttsink_priv, password_env), NULL,
      .flags = REEL_PROP_READS_ENV,
      .help = "name of the environment variable that holds the password (needs username; not with "
              "password-file)" },
    { "tls-ca", REEL_PROP_STRING, offsetof(mqttsink_priv, tls_ca), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "CA certificates (PEM file) the broker's certificate must be signed by (mqtts:// only; default "
              "the system's CAs). The certificate must also name the url's host" },
    { "tls-cert", REEL_PROP_STRING, offsetof(mqttsink_priv, tls_cert), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "client certificate (PEM file), for a broker that requires one (mqtts:// only; needs tls-key "
              "and tls-ca)" },
    { "tls-key", REEL_PROP_STRING, offsetof(mqttsink_priv, tls_key), NULL, .flags = REEL_PROP_READS_FILE,
      .help = "the client certificate's private key (PEM file, not encrypted; needs tls-cert)" },
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

// The url as messages show it. reel_redact hides "user:password@"; a url
// whose password holds a character that ends a url's host part
// ("mqtt://u:p/w@host") it cannot read, so there everything from "://" to the
// last '@' goes.
static char *shown_url(const char *url)
{
    const char *start = strstr(url, "://");
    const char *at = strrchr(url, '@');
    if (!start || !at || at < start)
        return reel_redact(url, false);
    return g_strdup_printf("%.*s://***%s", (int)(start - url), url, at);
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

// The same, without libmosquitto's full stop, for text that goes on after it.
static char *reason_text(const char *reason)
{
    size_t n = strlen(reason);
    return g_strndup(reason, n > 0 && reason[n - 1] == '.' ? n - 1 : n);
}

// ---- libmosquitto's callbacks (on the network thread) ----------------------

static void on_connect(struct mosquitto *mosq, void *closure, int rc)
{
    (void)mosq;
    mqttsink_priv *s = closure;
    g_mutex_lock(&s->lock);
    s->connack_seen = true;
    s->connack_rc = rc;
    s->connected = rc == 0;
    if (rc == 0)
        s->reconnect_s = RECONNECT_MIN_S;
    g_cond_broadcast(&s->changed);
    g_mutex_unlock(&s->lock);
}

static void on_disconnect(struct mosquitto *mosq, void *closure, int rc)
{
    (void)mosq;
    mqttsink_priv *s = closure;
    g_mutex_lock(&s->lock);
    // 0: the disconnect asked for at the end. A connection that never got
    // its CONNACK is a failed attempt, not a loss.
    if (rc != 0 && s->connected) {
        s->losses++;
        s->loss_rc = rc;
    }
    s->connected = false;
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

// Keeps libmosquitto's first error since the last attempt: where TLS fails,
// it is the only place that says why ("certificate verify failed"). Its
// other lines are not ours to print.
static void on_log(struct mosquitto *mosq, void *closure, int level, const char *text)
{
    (void)mosq;
    if (level != MOSQ_LOG_ERR || !text)
        return;
    mqttsink_priv *s = closure;
    const char *openssl = "OpenSSL Error[";
    if (g_str_has_prefix(text, openssl) && strstr(text, "]: "))
        text = strstr(text, "]: ") + 3;
    g_mutex_lock(&s->lock);
    if (s->last_error->len == 0) {
        char *shown = reel_redact(text, false);
        reel_escape_control(s->last_error, shown);
        g_free(shown);
        if (s->last_error->len > LAST_ERROR_BYTES)
            g_string_truncate(s->last_error, LAST_ERROR_BYTES);
    }
    g_mutex_unlock(&s->lock);
}

// ---- the network thread -------------------------------------------------------

// Whether the network thread is done: told to stop, and the connection gone
// (the DISCONNECT written) or out of time.
static bool loop_done(mqttsink_priv *s, int rc)
{
    g_mutex_lock(&s->lock);
    bool done = s->stopping && (rc != MOSQ_ERR_SUCCESS || g_get_monotonic_time() >= s->stop_deadline);
    g_mutex_unlock(&s->lock);
    return done;
}

// A connection ended or an attempt failed: the first one's end is what open
// waits for. Returns the delay before the next attempt.
static int attempt_failed(mqttsink_priv *s, int rc, int saved_errno)
{
    g_mutex_lock(&s->lock);
    if (!s->connack_seen && !s->failed) {
        s->failed = true;
        s->failed_rc = rc;
        s->failed_errno = saved_errno;
        g_cond_broadcast(&s->changed);
    }
    int delay_s = s->reconnect_s;
    s->reconnect_s = MIN(delay_s * 2, RECONNECT_MAX_S);
    g_mutex_unlock(&s->lock);
    return delay_s;
}

// Sleeps `delay_s`; false when told to stop meanwhile.
static bool sleep_unless_stopped(mqttsink_priv *s, int delay_s)
{
    gint64 deadline = g_get_monotonic_time() + delay_s * G_TIME_SPAN_SECOND;
    g_mutex_lock(&s->lock);
    while (!s->stopping && g_cond_wait_until(&s->changed, &s->lock, deadline))
        ;
    bool go_on = !s->stopping;
    g_mutex_unlock(&s->lock);
    return go_on;
}

// A new attempt; one that fails at once shows as the next loop's NO_CONN.
static void reconnect(mqttsink_priv *s)
{
    g_mutex_lock(&s->run_lock);
    g_mutex_lock(&s->lock);
    bool stopping = s->stopping;
    g_string_truncate(s->last_error, 0);
    g_mutex_unlock(&s->lock);
    if (!stopping)
        mosquitto_reconnect(s->mosq);
    g_mutex_unlock(&s->run_lock);
}

// libmosquitto's network loop, ours rather than mosquitto_loop_start's: that
// one ends for good, without a word, on a TLS error (a failed handshake, and
// some broker restarts), and reel must both say why a first connection failed
// and keep reconnecting after any loss, 1 s after it, doubling up to 8 s.
static gpointer network_loop(gpointer closure)
{
    mqttsink_priv *s = closure;
    for (;;) {
        int rc = mosquitto_loop(s->mosq, LOOP_WAIT_MS, 1);
        int saved_errno = errno;
        if (loop_done(s, rc))
            break;
        if (rc == MOSQ_ERR_SUCCESS)
            continue;
        if (!sleep_unless_stopped(s, attempt_failed(s, rc, saved_errno)))
            continue; // to send the DISCONNECT if still connected, or end
        reconnect(s);
    }
    return NULL;
}

// ---- set-up -----------------------------------------------------------------

static int init(reel_element *e)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, lib_init, NULL);
    mqttsink_priv *s = reel_element_priv(e);
    g_mutex_init(&s->run_lock);
    g_mutex_init(&s->lock);
    g_cond_init(&s->changed);
    s->last_error = g_string_new(NULL);
    return 0;
}

// Ends the network thread (after the DISCONNECT, bounded) and the client.
static void disconnect(mqttsink_priv *s)
{
    if (!s->mosq)
        return;
    if (s->network) {
        g_mutex_lock(&s->run_lock);
        g_mutex_lock(&s->lock);
        s->stopping = true;
        s->stop_deadline = g_get_monotonic_time() + DISCONNECT_WAIT_MS * G_TIME_SPAN_MILLISECOND;
        g_cond_broadcast(&s->changed);
        g_mutex_unlock(&s->lock);
        mosquitto_disconnect(s->mosq); // queued: the network thread writes it
        g_mutex_unlock(&s->run_lock);
        g_thread_join(s->network);
        s->network = NULL;
    }
    mosquitto_destroy(s->mosq);
    s->mosq = NULL;
}

// Host, port and TLS of an mqtt:// or mqtts:// url. Credentials in it are
// refused: they would be in the pipeline's text (or $REEL_MQTT_URL) for
// anyone who sees it.
static int parse_url(reel_element *e, mqttsink_priv *s, char **host, int *port)
{
    GError *err = NULL;
    GUri *uri = g_uri_parse(s->url_now, G_URI_FLAGS_NONE, &err);
    if (!uri) {
        // GLib's reason quotes the url's parts: part of a password, when it
        // holds a '/' ("mqtt://u:p/w@host").
        bool userinfo = strchr(s->url_now, '@') != NULL;
        int code = reel_element_error(e, REEL_EINVAL, "broker url '%s' is not mqtt://HOST[:PORT] or "
                                      "mqtts://HOST[:PORT]%s%s", s->url_shown, userinfo ? "" : ": ",
                                      userinfo ? "" : err->message);
        g_error_free(err);
        return code;
    }
    const char *scheme = g_uri_get_scheme(uri);
    bool plain = g_ascii_strcasecmp(scheme, "mqtt") == 0;
    s->tls = g_ascii_strcasecmp(scheme, "mqtts") == 0;
    const char *h = g_uri_get_host(uri);
    bool has_host = h && *h;
    bool credentials = g_uri_get_userinfo(uri) != NULL;
    *host = g_strdup(h);
    *port = g_uri_get_port(uri);
    g_uri_unref(uri);
    int code = 0;
    if ((!plain && !s->tls) || !has_host)
        code = reel_element_error(e, REEL_EINVAL, "broker url '%s' is not mqtt://HOST[:PORT] or mqtts://HOST[:PORT]",
                                  s->url_shown);
    else if (credentials)
        code = reel_element_error(e, REEL_EINVAL, "broker url '%s' has credentials in it: set username, and the "
                                  "password in password-file or password-env, so that it stays out of the "
                                  "pipeline's text", s->url_shown);
    if (code < 0) {
        g_clear_pointer(host, g_free);
        return code;
    }
    if (*port <= 0)
        *port = s->tls ? DEFAULT_TLS_PORT : DEFAULT_PORT;
    return 0;
}

// A file reel is to read, named by property `prop`: readable now, for a
// message that names the property rather than libmosquitto's "Invalid
// function arguments".
static int check_readable(reel_element *e, const char *prop, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return reel_element_error(e, REEL_EINVAL, "cannot read %s '%s': %s", prop, path, g_strerror(errno));
    fclose(f);
    return 0;
}

static bool given(const char *value)
{
    return value && *value;
}

// The TLS properties, checked against the url and each other.
static int check_tls(reel_element *e, mqttsink_priv *s)
{
    bool any = given(s->tls_ca) || given(s->tls_cert) || given(s->tls_key);
    if (!s->tls && any)
        return reel_element_error(e, REEL_EINVAL, "tls-ca, tls-cert and tls-key are for TLS, but broker url '%s' is "
                                  "plain MQTT: use mqtts://", s->url_shown);
    if (given(s->tls_cert) != given(s->tls_key))
        return reel_element_error(e, REEL_EINVAL, "tls-cert and tls-key go together: set both or neither");
    // libmosquitto takes a client certificate only with a CA file.
    if (given(s->tls_cert) && !given(s->tls_ca))
        return reel_element_error(e, REEL_EINVAL, "tls-cert and tls-key need tls-ca too (the CA file that signed "
                                  "the broker's certificate)");
    int code = given(s->tls_ca) ? check_readable(e, "tls-ca", s->tls_ca) : 0;
    if (code == 0 && given(s->tls_cert))
        code = check_readable(e, "tls-cert", s->tls_cert);
    if (code == 0 && given(s->tls_key))
        code = check_readable(e, "tls-key", s->tls_key);
    return code;
}

// Wipes and frees a password.
static void drop_password(char *password)
{
    if (!password)
        return;
    explicit_bzero(password, strlen(password));
    g_free(password);
}

// The first line of password-file, without its line ending. No message says
// anything of what the file holds.
static int read_password_file(reel_element *e, const char *path, char **password)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return reel_element_error(e, REEL_EINVAL, "cannot read password-file '%s': %s", path, g_strerror(errno));
    char *buf = g_malloc(MAX_PASSWORD + 2);
    size_t n = fread(buf, 1, MAX_PASSWORD + 1, f);
    int saved_errno = errno;
    bool failed = ferror(f);
    fclose(f);
    buf[n] = '\0';
    size_t len = strcspn(buf, "\n");
    bool whole_line = len < n || n <= MAX_PASSWORD; // a newline, or the end of the file, within the bound
    if (len > 0 && buf[len - 1] == '\r')
        len--;
    explicit_bzero(buf + len, n - len); // the rest of the file is none of our business
    buf[len] = '\0';
    const char *why = failed ? g_strerror(saved_errno)
                    : !whole_line ? "its first line is longer than MQTT's 65535 bytes"
                    : len == 0 ? "its first line, the password, is empty"
                    : NULL;
    if (why) {
        drop_password(buf);
        return reel_element_error(e, REEL_EINVAL, "cannot use password-file '%s': %s", path, why);
    }
    *password = buf;
    return 0;
}

// The password of password-env's variable.
static int read_password_env(reel_element *e, const char *name, char **password)
{
    const char *value = getenv(name);
    if (!value || !*value)
        return reel_element_error(e, REEL_EINVAL, "password-env: environment variable '%s' is %s", name,
                                  value ? "empty" : "not set");
    if (strlen(value) > MAX_PASSWORD)
        return reel_element_error(e, REEL_EINVAL, "password-env: environment variable '%s' is longer than MQTT's "
                                  "65535 bytes", name);
    *password = g_strdup(value);
    return 0;
}

// The password, from password-file or password-env; NULL for none.
static int get_password(reel_element *e, mqttsink_priv *s, char **password)
{
    *password = NULL;
    if (s->password) // the value is not shown: it is the secret
        return reel_element_error(e, REEL_EINVAL, "password= is refused: the pipeline's text is seen by whoever "
                                  "sees the pipeline (ps, logs, job records); put the password in a file "
                                  "(password-file=PATH) or an environment variable (password-env=NAME)");
    bool file = given(s->password_file), env = given(s->password_env);
    if (file && env)
        return reel_element_error(e, REEL_EINVAL, "set one of password-file and password-env, not both");
    if ((file || env) && !given(s->username))
        return reel_element_error(e, REEL_EINVAL, "a password (%s) needs a username", file ? "password-file"
                                  : "password-env");
    if (file)
        return read_password_file(e, s->password_file, password);
    return env ? read_password_env(e, s->password_env, password) : 0;
}

// Refuses to prompt on the terminal for an encrypted key's passphrase: the
// key fails to load instead, with a message.
static int no_passphrase(char *buf, int size, int rwflag, void *closure)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)closure;
    return 0;
}

// TLS for an mqtts:// url: the broker's certificate verified against tls-ca
// (or the system's CAs) and its host name checked, always.
static int set_up_tls(reel_element *e, mqttsink_priv *s)
{
    if (!s->tls)
        return 0;
    int rc = MOSQ_ERR_SUCCESS;
    if (given(s->tls_ca))
        rc = mosquitto_tls_set(s->mosq, s->tls_ca, NULL, given(s->tls_cert) ? s->tls_cert : NULL,
                               given(s->tls_key) ? s->tls_key : NULL, no_passphrase);
    else
        rc = mosquitto_int_option(s->mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_tls_opts_set(s->mosq, 1, NULL, NULL); // 1: SSL_VERIFY_PEER
    if (rc == MOSQ_ERR_SUCCESS)
        rc = mosquitto_tls_insecure_set(s->mosq, false);
    if (rc != MOSQ_ERR_SUCCESS)
        return reel_element_error(e, REEL_EIO, "cannot set up TLS for MQTT broker at '%s': %s", s->url_shown,
                                  mosquitto_strerror(rc));
    return 0;
}

static int log_in(reel_element *e, mqttsink_priv *s)
{
    char *password = NULL;
    int code = get_password(e, s, &password);
    if (code < 0 || !given(s->username))
        return code;
    int rc = mosquitto_username_pw_set(s->mosq, s->username, password); // copies both
    drop_password(password);
    if (rc != MOSQ_ERR_SUCCESS)
        return reel_element_error(e, REEL_EINVAL, "cannot use username '%s': %s", s->username,
                                  mosquitto_strerror(rc));
    return 0;
}

// libmosquitto's first error since the last attempt, as " (WHY)", or "".
static char *last_error(mqttsink_priv *s)
{
    g_mutex_lock(&s->lock);
    char *why = s->last_error->len ? g_strdup_printf(" (%s)", s->last_error->str) : g_strdup("");
    g_mutex_unlock(&s->lock);
    return why;
}

// What to try when TLS failed, from OpenSSL's reason.
static const char *tls_hint(mqttsink_priv *s, const char *why)
{
    if (strstr(why, "certificate verify failed"))
        return given(s->tls_ca) ? "; is the broker's certificate signed by tls-ca, and for the url's host?"
                              : "; is the broker's certificate signed by one of the system's CAs, and for the url's "
                                "host? Else set tls-ca";
    if (strstr(why, "host name verification failed"))
        return "; the broker's certificate is not for the url's host: use a name (or address) it is for";
    if (strstr(why, "certificate required") && !given(s->tls_cert))
        return "; the broker wants a client certificate: set tls-cert and tls-key";
    if (strstr(why, "client key") || strstr(why, "client certificate") || strstr(why, "inconsistent"))
        return "; are tls-cert and tls-key a certificate and its key, PEM files, the key without a passphrase?";
    if (strstr(why, "wrong version number") || strstr(why, "unexpected eof"))
        return "; does the broker speak TLS on that port?";
    // With TLS 1.3 a broker asks for the certificate after the handshake and
    // may close before its alert is read: only "protocol error" is left.
    if (!*why && !given(s->tls_cert))
        return "; the broker may want a client certificate: set tls-cert and tls-key";
    return "";
}

// Whether a connection or attempt that ended with `rc` failed for TLS: a
// TLS error, or OpenSSL's reason logged (a broker's alert, "certificate
// required", ends the connection as if lost).
static bool tls_failed(mqttsink_priv *s, int rc, int saved_errno, const char *why)
{
    return s->tls && (rc == MOSQ_ERR_TLS || (rc == MOSQ_ERR_ERRNO && saved_errno == EPROTO) || *why);
}

// A first connection that failed, in connecting or before the broker
// answered it: libmosquitto's reason, OpenSSL's (`why`) and what to try.
static int connection_error(reel_element *e, mqttsink_priv *s, bool connecting, int rc, int saved_errno)
{
    char *why = last_error(s), *reason = reason_text(mosq_reason(rc, saved_errno));
    const char *hint = s->tls || rc != MOSQ_ERR_CONN_LOST ? "" : "; if it wants TLS, use mqtts://";
    int code;
    if (tls_failed(s, rc, saved_errno, why))
        code = reel_element_error(e, REEL_EIO, "TLS with MQTT broker at '%s' failed: %s%s%s", s->url_shown, reason,
                                  why, tls_hint(s, why));
    else if (connecting)
        code = reel_element_error(e, REEL_EIO, "cannot connect to MQTT broker at '%s': %s%s%s", s->url_shown, reason,
                                  why, hint);
    else
        code = reel_element_error(e, REEL_EIO, "MQTT broker at '%s' closed the connection before answering it: "
                                  "%s%s%s", s->url_shown, reason, why, hint);
    g_free(why);
    g_free(reason);
    return code;
}

// Waits for the broker's answer to the connection; an error when it refused,
// the connection ended first, or no answer came.
static int wait_connack(reel_element *e, mqttsink_priv *s)
{
    gint64 deadline = g_get_monotonic_time() + CONNACK_WAIT_MS * G_TIME_SPAN_MILLISECOND;
    g_mutex_lock(&s->lock);
    while (!s->connack_seen && !s->failed && g_cond_wait_until(&s->changed, &s->lock, deadline))
        ;
    bool seen = s->connack_seen, failed = s->failed;
    int rc = s->connack_rc, failed_rc = s->failed_rc, failed_errno = s->failed_errno;
    g_mutex_unlock(&s->lock);
    if (seen && rc != 0) {
        bool login = rc == 4 || rc == 5; // bad user name or password; not authorised
        char *reason = reason_text(mosquitto_connack_string(rc));
        int code = reel_element_error(e, REEL_EIO, "MQTT broker at '%s' refused the connection: %s%s", s->url_shown,
                                      reason, login ? " (check username, and the password in password-file or "
                                                      "password-env)" : "");
        g_free(reason);
        return code;
    }
    if (seen)
        return 0;
    if (failed)
        return connection_error(e, s, false, failed_rc, failed_errno);
    return reel_element_error(e, REEL_EIO, "MQTT broker at '%s' did not answer the connection within %d s",
                              s->url_shown, CONNACK_WAIT_MS / 1000);
}

static void reset(mqttsink_priv *s)
{
    s->stopping = s->connack_seen = s->connected = s->failed = false;
    s->connack_rc = s->failed_rc = s->failed_errno = s->loss_rc = 0;
    s->reconnect_s = RECONNECT_MIN_S;
    s->losses = s->losses_reported = 0;
    s->published = s->acknowledged = 0;
    g_string_truncate(s->last_error, 0);
    s->url_now = s->url && *s->url ? s->url : default_url();
    g_free(s->url_shown);
    s->url_shown = shown_url(s->url_now);
}

static int check_topic(reel_element *e, mqttsink_priv *s)
{
    if (!s->topic || !*s->topic)
        return reel_element_error(e, REEL_EINVAL, "no topic set");
    GString *probe = g_string_new(NULL);
    reel_meta_destination(probe, s->topic, 0);
    bool topic_ok = mosquitto_pub_topic_check(probe->str) == MOSQ_ERR_SUCCESS;
    g_string_free(probe, TRUE);
    if (!topic_ok)
        return reel_element_error(e, REEL_EINVAL, "topic '%s' cannot be published to (no + or #)", s->topic);
    return 0;
}

// A client with its callbacks, TLS and login; the caller destroys it on error.
static int make_client(reel_element *e, mqttsink_priv *s)
{
    char *id = s->client_id && *s->client_id ? g_strdup(s->client_id) : default_client_id();
    s->mosq = mosquitto_new(id, true, s);
    g_free(id);
    if (!s->mosq)
        return reel_element_error(e, REEL_ENOMEM, "cannot make an MQTT client: %s", g_strerror(errno));
    // Publishes come from the element's thread, the network I/O from ours.
    mosquitto_threaded_set(s->mosq, true);
    mosquitto_connect_callback_set(s->mosq, on_connect);
    mosquitto_disconnect_callback_set(s->mosq, on_disconnect);
    mosquitto_publish_callback_set(s->mosq, on_publish);
    mosquitto_log_callback_set(s->mosq, on_log);
    int code = set_up_tls(e, s);
    return code < 0 ? code : log_in(e, s);
}

static int open_broker(reel_element *e)
{
    mqttsink_priv *s = reel_element_priv(e);
    disconnect(s); // a pipeline opened again
    reset(s);
    char *host = NULL;
    int port = 0;
    int code = check_topic(e, s);
    if (code == 0)
        code = parse_url(e, s, &host, &port);
    if (code == 0)
        code = check_tls(e, s);
    if (code == 0)
        code = make_client(e, s);
    if (code < 0) {
        g_free(host);
        return code;
    }
    // Blocking: a broker that is not there fails here, at once.
    int rc = mosquitto_connect(s->mosq, host, port, KEEPALIVE_S);
    int saved_errno = errno;
    g_free(host);
    if (rc != MOSQ_ERR_SUCCESS)
        return connection_error(e, s, true, rc, saved_errno);
    GError *err = NULL;
    s->network = g_thread_try_new("mqttsink", network_loop, s, &err);
    if (!s->network) {
        code = reel_element_error(e, REEL_EIO, "cannot start the MQTT network thread: %s", err->message);
        g_error_free(err);
        return code;
    }
    return wait_connack(e, s);
}

// ---- running ----------------------------------------------------------------

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
                              " message%s %s (%s)", s->url_shown, left, left == 1 ? "" : "s", when,
                              connected ? "connected" : mosquitto_strerror(loss_rc));
}

// A lost connection, once: the network thread reconnects.
static void report_losses(reel_element *e, mqttsink_priv *s)
{
    g_mutex_lock(&s->lock);
    int64_t losses = s->losses;
    int loss_rc = s->loss_rc;
    g_mutex_unlock(&s->lock);
    if (losses == s->losses_reported)
        return;
    s->losses_reported = losses;
    reel_element_warning(e, "lost the MQTT broker at '%s' (%s); reconnecting", s->url_shown,
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
                                 s->url_shown);
        return 0;
    }
    if (rc != MOSQ_ERR_SUCCESS) {
        if (s->qos > 0) {
            g_mutex_lock(&s->lock);
            s->published--;
            g_mutex_unlock(&s->lock);
        }
        return reel_element_error(e, REEL_EIO, "cannot publish on '%s' to MQTT broker at '%s': %s",
                                  s->topic_now->str, s->url_shown, mosq_reason(rc, saved_errno));
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
    g_free(s->url_shown);
    s->url_shown = NULL;
    if (s->last_error)
        g_string_free(s->last_error, TRUE);
    s->last_error = NULL;
    g_cond_clear(&s->changed);
    g_mutex_clear(&s->lock);
    g_mutex_clear(&s->run_lock);
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

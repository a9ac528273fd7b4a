// Connecting to NATS with the settings every part of the fleet wants: the
// server, how to log in, TLS. Secrets are read from their files here, handed
// to libnats and wiped; no message says more than the file's name.
#include "elements/nats_connect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "base/redact.h"
#include "reel/error.h"

enum {
    RECONNECT_BUFFER_BYTES = 8 << 20, CONNECT_TIMEOUT_MS = 2000, RECONNECT_WAIT_MS = 250,
    SECRET_MAX_BYTES = 64 << 10,
};

// Each setting's name, as a command-line option and as a natssink property.
typedef enum { N_URL, N_USER, N_PASSWORD, N_TOKEN, N_NKEY, N_CREDS, N_CA, N_CERT, N_KEY, N_REQUIRE_TLS, N_COUNT } name_id;
static const char *const option_names[N_COUNT] = {
    "--nats", "--nats-user", "--nats-password-file", "--nats-token-file", "--nats-nkey-file", "--nats-creds",
    "--nats-ca", "--nats-cert", "--nats-key", "--nats-require-tls",
};
static const char *const prop_names[N_COUNT] = {
    "url", "user", "password-file", "token-file", "nkey-file", "creds", "tls-ca", "tls-cert", "tls-key", "require-tls",
};

static const char *named(const reel_nats_settings *s, name_id id)
{
    return (s->element ? prop_names : option_names)[id];
}

const char *reel_nats_default_url(void)
{
    const char *env = getenv("REEL_NATS_URL");
    return env && *env ? env : "nats://127.0.0.1:4222";
}

static const char *url_of(const reel_nats_settings *s)
{
    return s && s->url && *s->url ? s->url : reel_nats_default_url();
}

char *reel_nats_shown_url(const reel_nats_settings *s)
{
    return reel_redact(url_of(s), false);
}

// The library's last error detail without the source positions it adds
// ("(conn.c:733): "), URL credentials hidden. NULL when none. Caller frees.
static char *last_detail(void)
{
    char *detail = reel_redact(nats_GetLastError(NULL), false);
    for (char *p = detail ? strchr(detail, '(') : NULL; p; p = strchr(p, '(')) {
        size_t name = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_"), digits = 0;
        bool at = name > 0 && strncmp(p + 1 + name, ".c:", 3) == 0;
        if (at)
            digits = strspn(p + 4 + name, "0123456789");
        const char *end = p + 4 + name + digits;
        if (at && digits > 0 && strncmp(end, "): ", 3) == 0)
            memmove(p, end + 3, strlen(end + 3) + 1);
        else
            p++;
    }
    return detail;
}

void reel_nats_set_error(GError **error, natsStatus s, const char *what)
{
    char *detail = last_detail();
    const char *text = natsStatus_GetText(s);
    if (detail && *detail && !strstr(detail, text))
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: %s (%s)", what, text, detail);
    else
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: %s", what, text);
    g_free(detail);
}

// A secret as a command-line value would show in `ps` and shell history:
// refused, and never echoed.
static bool secret_value_option(const char *opt)
{
    bool secret = g_str_has_prefix(opt, "--nats-password") || g_str_has_prefix(opt, "--nats-token");
    return secret && strcmp(opt, option_names[N_PASSWORD]) != 0 && strcmp(opt, option_names[N_TOKEN]) != 0;
}

int reel_nats_settings_option(reel_nats_settings *s, const char *opt, const char *value, GError **error)
{
    const char **fields[N_COUNT] = {
        &s->url, &s->user, &s->password_file, &s->token_file, &s->nkey_file, &s->creds, &s->ca, &s->cert, &s->key,
    };
    if (strcmp(opt, option_names[N_REQUIRE_TLS]) == 0) {
        s->require_tls = true;
        return 1;
    }
    if (secret_value_option(opt)) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "no secret on the command line: put it in a file and give %s "
                    "FILE", g_str_has_prefix(opt, "--nats-token") ? option_names[N_TOKEN] : option_names[N_PASSWORD]);
        return REEL_EINVAL;
    }
    for (int i = 0; i < N_COUNT; i++) {
        if (fields[i] && strcmp(opt, option_names[i]) == 0) {
            if (!value) {
                g_set_error(error, REEL_ERROR, REEL_EINVAL, "%s wants a value", opt);
                return REEL_EINVAL;
            }
            *fields[i] = value;
            return 2;
        }
    }
    return 0;
}

static int invalid(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static int invalid(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, REEL_ERROR, REEL_EINVAL, "NATS settings: %s", text);
    g_free(text);
    return REEL_EINVAL;
}

int reel_nats_settings_check(const reel_nats_settings *s, GError **error)
{
    if (!s)
        return 0;
    if (!s->user != !s->password_file)
        return invalid(error, "%s and %s go together", named(s, N_USER), named(s, N_PASSWORD));
    if (!s->cert != !s->key)
        return invalid(error, "%s and %s go together", named(s, N_CERT), named(s, N_KEY));
    if (!!s->user + !!s->token_file + !!s->nkey_file + !!s->creds > 1)
        return invalid(error, "give one way to log in: %s, %s, %s or %s", named(s, N_USER), named(s, N_TOKEN),
                       named(s, N_NKEY), named(s, N_CREDS));
    return 0;
}

static const char *file_kind(name_id id)
{
    switch (id) {
    case N_PASSWORD: return "password file";
    case N_TOKEN: return "token file";
    case N_NKEY: return "nkey seed file";
    case N_CREDS: return "credentials file";
    case N_CA: return "CA file";
    case N_CERT: return "client certificate";
    case N_KEY: return "client key";
    default: return "file";
    }
}

static int file_error(GError **error, const reel_nats_settings *s, name_id id, const char *path, const char *why)
{
    g_set_error(error, REEL_ERROR, REEL_EIO, "cannot read the NATS %s '%s' (%s): %s", file_kind(id), path,
                named(s, id), why);
    return REEL_EIO;
}

// Opens a settings file for reading; -1 with *error set (missing, not
// readable, a folder).
static int open_file(const reel_nats_settings *s, name_id id, const char *path, GError **error)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        file_error(error, s, id, path, g_strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        file_error(error, s, id, path, "it is a folder");
        return -1;
    }
    return fd;
}

// A file libnats reads itself (a CA, a certificate, credentials): checked
// here first, for an error that names the setting.
static int check_readable(const reel_nats_settings *s, name_id id, const char *path, GError **error)
{
    int fd = open_file(s, id, path, error);
    if (fd < 0)
        return REEL_EIO;
    char probe;
    ssize_t n = read(fd, &probe, 1);
    int saved = errno;
    close(fd);
    if (n < 0)
        return file_error(error, s, id, path, g_strerror(saved));
    if (n == 0)
        return file_error(error, s, id, path, "it is empty");
    return 0;
}

// Frees a secret, overwriting it first.
static void wipe(char *secret)
{
    if (secret) {
        OPENSSL_cleanse(secret, strlen(secret));
        g_free(secret);
    }
}

// The secret in `path` without the blanks and newline that end it; NULL
// with *error set.
static char *read_secret(const reel_nats_settings *s, name_id id, const char *path, GError **error)
{
    int fd = open_file(s, id, path, error);
    if (fd < 0)
        return NULL;
    char *buf = g_malloc0(SECRET_MAX_BYTES + 1);
    size_t len = 0;
    ssize_t n = 0;
    while (len < SECRET_MAX_BYTES && (n = read(fd, buf + len, SECRET_MAX_BYTES - len)) > 0)
        len += (size_t)n;
    int saved = errno;
    char extra;
    bool more = len == SECRET_MAX_BYTES && read(fd, &extra, 1) == 1;
    close(fd);
    while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
        buf[--len] = '\0';
    const char *why = n < 0 ? g_strerror(saved) : more ? "it is larger than 64 KiB" : len == 0 ? "it is empty"
                      : strlen(buf) != len ? "it holds a zero byte" : NULL;
    if (why) {
        OPENSSL_cleanse(buf, SECRET_MAX_BYTES);
        g_free(buf);
        file_error(error, s, id, path, why);
        return NULL;
    }
    return buf;
}

// nkeys: base32 (RFC 4648, no padding) of a prefix, the raw key and a CRC-16
// (XMODEM, little-endian). A user's public key starts with 'U' (20 << 3);
// its seed with 'S' (18 << 3) and the type packed into the next 5 bits.
enum { NKEY_PREFIX_SEED = 18 << 3, NKEY_PREFIX_USER = 20 << 3, NKEY_RAW = 32 };
static const char base32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static size_t base32_decode(const char *in, uint8_t *out, size_t cap)
{
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t k = 0;
    for (const char *c = in; *c; c++) {
        const char *at = strchr(base32, *c);
        if (!at || k == cap)
            return 0;
        acc = (acc << 5) | (uint32_t)(at - base32);
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            out[k++] = (uint8_t)(acc >> bits);
        }
    }
    return k;
}

static void base32_encode(GString *out, const uint8_t *in, size_t n)
{
    uint32_t acc = 0;
    unsigned bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | in[i];
        for (bits += 8; bits >= 5; bits -= 5)
            g_string_append_c(out, base32[(acc >> (bits - 5)) & 31]);
    }
    if (bits)
        g_string_append_c(out, base32[(acc << (5 - bits)) & 31]);
}

static uint16_t crc16(const uint8_t *data, size_t n)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)(data[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

// The public key ("U...") of a user nkey seed ("SU..."), which the server
// knows the user by; NULL when `seed` is not one.
static char *nkey_public(const char *seed)
{
    uint8_t raw[2 + NKEY_RAW + 2], pub[1 + NKEY_RAW + 2];
    char *out = NULL;
    size_t n = base32_decode(seed, raw, sizeof raw), publen = NKEY_RAW;
    unsigned type = ((raw[0] & 7u) << 5) | ((raw[1] & 0xf8u) >> 3);
    if (n == sizeof raw && (raw[0] & 0xf8) == NKEY_PREFIX_SEED && type == NKEY_PREFIX_USER &&
        crc16(raw, n - 2) == (raw[n - 2] | raw[n - 1] << 8)) {
        EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, raw + 2, NKEY_RAW);
        pub[0] = NKEY_PREFIX_USER;
        if (key && EVP_PKEY_get_raw_public_key(key, pub + 1, &publen) == 1 && publen == NKEY_RAW) {
            uint16_t crc = crc16(pub, 1 + NKEY_RAW);
            pub[1 + NKEY_RAW] = (uint8_t)(crc & 0xff);
            pub[2 + NKEY_RAW] = (uint8_t)(crc >> 8);
            GString *text = g_string_new(NULL);
            base32_encode(text, pub, sizeof pub);
            out = g_string_free(text, FALSE);
        }
        EVP_PKEY_free(key);
    }
    OPENSSL_cleanse(raw, sizeof raw);
    return out;
}

// The public key of the seed in `path`: its first word that starts "SU",
// where libnats looks for it too.
static char *nkey_file_public(const reel_nats_settings *s, const char *path, GError **error)
{
    char *text = read_secret(s, N_NKEY, path, error);
    if (!text)
        return NULL;
    char *pub = NULL;
    for (char *line = text, *end; line && !pub; line = end ? end + 1 : NULL) {
        end = strchr(line, '\n');
        line += strspn(line, " \t");
        if (strncmp(line, "SU", 2) != 0)
            continue;
        char *word = g_strndup(line, strcspn(line, " \t\r\n"));
        pub = nkey_public(word);
        wipe(word);
        break;
    }
    wipe(text);
    if (!pub)
        file_error(error, s, N_NKEY, path, "it holds no user nkey seed (a line \"SU...\" of 58 characters)");
    return pub;
}

static bool has_tls_url(const char *url)
{
    char **urls = g_strsplit(url, ",", -1);
    bool tls = false;
    for (int i = 0; urls[i] && !tls; i++)
        tls = g_ascii_strncasecmp(g_strstrip(urls[i]), "tls://", 6) == 0;
    g_strfreev(urls);
    return tls;
}

static bool url_has_credentials(const char *url)
{
    char *shown = reel_redact(url, false);
    bool has = strcmp(shown, url) != 0;
    g_free(shown);
    return has;
}

static int option_fail(GError **error, natsStatus st, const char *what, const char *path)
{
    char *text = g_strdup_printf("cannot use %s '%s'", what, path);
    reel_nats_set_error(error, st, text);
    g_free(text);
    return REEL_EIO;
}

static int apply_tls(natsOptions *o, const reel_nats_settings *s, bool tls, GError **error)
{
    natsStatus st = tls ? natsOptions_SetSecure(o, true) : NATS_OK;
    if (st != NATS_OK) {
        reel_nats_set_error(error, st, "cannot set up TLS");
        return REEL_EIO;
    }
    if (s->ca && check_readable(s, N_CA, s->ca, error) < 0)
        return REEL_EIO;
    if (s->ca && (st = natsOptions_LoadCATrustedCertificates(o, s->ca)) != NATS_OK)
        return option_fail(error, st, "the NATS CA file", s->ca);
    if (s->cert && (check_readable(s, N_CERT, s->cert, error) < 0 || check_readable(s, N_KEY, s->key, error) < 0))
        return REEL_EIO;
    if (s->cert && (st = natsOptions_LoadCertificatesChain(o, s->cert, s->key)) != NATS_OK)
        return option_fail(error, st, "the NATS client certificate and key", s->cert);
    return 0;
}

static int apply_login(natsOptions *o, const reel_nats_settings *s, GError **error)
{
    natsStatus st = NATS_OK;
    if (s->user) {
        char *password = read_secret(s, N_PASSWORD, s->password_file, error);
        if (!password)
            return REEL_EIO;
        st = natsOptions_SetUserInfo(o, s->user, password);
        wipe(password);
    } else if (s->token_file) {
        char *token = read_secret(s, N_TOKEN, s->token_file, error);
        if (!token)
            return REEL_EIO;
        st = natsOptions_SetToken(o, token);
        wipe(token);
    } else if (s->nkey_file) {
        // libnats reads the seed again from the file to sign each connection's nonce.
        char *pub = nkey_file_public(s, s->nkey_file, error);
        if (!pub)
            return REEL_EIO;
        st = natsOptions_SetNKeyFromSeed(o, pub, s->nkey_file);
        g_free(pub);
    } else if (s->creds) {
        if (check_readable(s, N_CREDS, s->creds, error) < 0)
            return REEL_EIO;
        st = natsOptions_SetUserCredentialsFromFiles(o, s->creds, NULL);
    }
    if (st != NATS_OK) {
        reel_nats_set_error(error, st, "cannot set the NATS login");
        return REEL_EIO;
    }
    return 0;
}

static natsStatus apply_connection(natsOptions *o, const char *url, const char *name)
{
    natsStatus s = natsOptions_SetURL(o, url);
    if (s == NATS_OK && name)
        s = natsOptions_SetName(o, name);
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(o, CONNECT_TIMEOUT_MS);
    // A lost server is waited for without end: the element or command
    // decides when buffered data has waited too long.
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(o, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(o, RECONNECT_WAIT_MS);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectBufSize(o, RECONNECT_BUFFER_BYTES);
    return s;
}

// What the login was, for a server that refused it.
static char *refused_login(const reel_nats_settings *s, const char *url)
{
    if (s->creds)
        return g_strdup_printf("the server refused the credentials in '%s'", s->creds);
    if (s->nkey_file)
        return g_strdup_printf("the server refused the nkey in '%s'", s->nkey_file);
    if (s->token_file)
        return g_strdup_printf("the server refused the token in '%s'", s->token_file);
    if (s->user)
        return g_strdup_printf("the server refused user '%s' with the password in '%s'", s->user, s->password_file);
    if (url_has_credentials(url))
        return g_strdup("the server refused the credentials in the URL");
    return g_strdup_printf("the server wants a login and none was given (%s with %s, %s, %s or %s)", named(s, N_USER),
                           named(s, N_PASSWORD), named(s, N_TOKEN), named(s, N_NKEY), named(s, N_CREDS));
}

// Why a TLS handshake failed, from OpenSSL's words in the library's detail.
static char *tls_failure(const reel_nats_settings *s, bool asked, const char *detail)
{
    const char *cert = asked ? "the server's certificate" : "the server requires TLS, and its certificate";
    bool verify = strstr(detail, "verify failed") || strstr(detail, "local issuer") || strstr(detail, "self-signed") ||
                  strstr(detail, "self signed") || strstr(detail, "ismatch");
    if (verify && (strstr(detail, "ostname mismatch") || strstr(detail, "IP address mismatch")))
        return g_strdup_printf("%s does not name the host in the URL", cert);
    if (verify && s->ca)
        return g_strdup_printf("%s is not signed by a CA in '%s' (%s)", cert, s->ca, named(s, N_CA));
    if (verify)
        return g_strdup_printf("%s is not trusted: give the CA that signed it (%s FILE)", cert, named(s, N_CA));
    const char *server = asked ? "" : "the server requires TLS, and ";
    if (!s->cert)
        return g_strdup_printf("%sthe TLS handshake failed; does the server want a client certificate (%s, %s)?",
                               server, named(s, N_CERT), named(s, N_KEY));
    return g_strdup_printf("%sthe TLS handshake failed", server);
}

static void connect_error(GError **error, const reel_nats_settings *s, const char *url, bool tls, natsStatus st)
{
    char *detail = last_detail();
    const char *d = detail ? detail : "";
    char *why = NULL;
    if (st == NATS_CONNECTION_AUTH_FAILED || strstr(d, "uthorization"))
        why = refused_login(s, url);
    else if (st == NATS_SECURE_CONNECTION_WANTED)
        why = g_strdup_printf("TLS is required (%s) but the server does not offer it",
                              s->require_tls ? named(s, N_REQUIRE_TLS) : "a tls:// URL");
    else if (st == NATS_SSL_ERROR || strstr(d, "SSL"))
        why = tls_failure(s, tls, d);
    else if ((tls || s->ca) && !s->cert && (st == NATS_PROTOCOL_ERROR || st == NATS_CONNECTION_CLOSED))
        // TLS 1.3: the server checks the client's certificate after the handshake.
        why = g_strdup_printf("the server closed the connection after the TLS handshake; does it want a client "
                              "certificate (%s, %s)?", named(s, N_CERT), named(s, N_KEY));
    char *shown = reel_redact(url, false), *what = g_strdup_printf("cannot connect to NATS at '%s'", shown);
    const char *text = natsStatus_GetText(st);
    if (strstr(text, d))
        d = ""; // says no more than the status
    if (why)
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: %s (%s%s%s)", what, why, text, *d ? ": " : "", d);
    else
        reel_nats_set_error(error, st, what);
    g_free(what);
    g_free(shown);
    g_free(why);
    g_free(detail);
}

natsConnection *reel_nats_connect(const reel_nats_settings *settings, const char *name, GError **error)
{
    reel_nats_settings none = { 0 };
    const reel_nats_settings *s = settings ? settings : &none;
    if (reel_nats_settings_check(s, error) < 0)
        return NULL;
    const char *url = url_of(s);
    bool tls = s->require_tls || has_tls_url(url);
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    natsStatus st = natsOptions_Create(&opts);
    if (st == NATS_OK)
        st = apply_connection(opts, url, name);
    if (st != NATS_OK) {
        reel_nats_set_error(error, st, "cannot set up the NATS connection");
    } else if (apply_tls(opts, s, tls, error) == 0 && apply_login(opts, s, error) == 0) {
        st = natsConnection_Connect(&nc, opts);
        if (st != NATS_OK)
            connect_error(error, s, url, tls, st);
    }
    natsOptions_Destroy(opts);
    return nc;
}

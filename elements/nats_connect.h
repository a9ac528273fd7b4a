// Connections to a NATS server, for natssink and the fleet commands (worker,
// submit, jobs). Internal: only elements/, fleet/ and tools/ include this.
#ifndef REEL_ELEMENTS_NATS_CONNECT_H
#define REEL_ELEMENTS_NATS_CONNECT_H

#include <stdbool.h>
#include <glib.h>
#include <nats/nats.h>

// The key under which a program shares its natsConnection * with a
// pipeline (reel_pipeline_set_shared): a worker's, for its jobs' natssinks.
#define REEL_NATS_SHARED_CONNECTION "nats.connection"

// How to reach a server and log in. Strings are borrowed (command-line
// words, element properties). Secrets are never values here, only the
// files that hold them (or the URL's own user:password@).
typedef struct reel_nats_settings {
    const char *url;           // NULL: reel_nats_default_url(); may be a comma-separated list
    const char *user;          // with password_file
    const char *password_file;
    const char *token_file;
    const char *nkey_file;     // a user nkey seed ("SU...")
    const char *creds;         // a .creds file: a user JWT and its nkey seed
    const char *ca;            // PEM: the CAs the server's certificate must chain to (default: the system's)
    const char *cert, *key;    // PEM: a client certificate (chain) and its private key
    bool require_tls;          // fail unless the connection is TLS (a tls:// URL says so too)
    bool element;              // name natssink's properties, not the options, in errors
} reel_nats_settings;

// The options reel_nats_settings_option() takes, for the commands' --help.
#define REEL_NATS_USAGE \
    "NATS (secrets only from files, or in the URL; never printed):\n" \
    "  --nats URL                 the server (default $REEL_NATS_URL, else nats://127.0.0.1:4222);\n" \
    "                             tls://HOST:PORT for TLS; nats://USER:PASSWORD@HOST works too\n" \
    "  --nats-user NAME --nats-password-file FILE\n" \
    "                             log in as NAME with the password in FILE\n" \
    "  --nats-token-file FILE     log in with the token in FILE\n" \
    "  --nats-nkey-file FILE      log in with the user nkey seed (SU...) in FILE\n" \
    "  --nats-creds FILE          log in with the user JWT and nkey seed in FILE (a .creds file)\n" \
    "  --nats-ca FILE             trust the server's certificate when a CA in FILE (PEM) signed it\n" \
    "                             (default: the system's CAs)\n" \
    "  --nats-cert FILE --nats-key FILE\n" \
    "                             present this client certificate (PEM) and its private key\n" \
    "  --nats-require-tls         fail unless the connection is TLS (a tls:// URL implies it)\n"

// The server used when none is named: $REEL_NATS_URL, else nats://127.0.0.1:4222.
const char *reel_nats_default_url(void);

// Takes the command-line option `opt` (value: the next word, or NULL) into
// *s. Returns the words it used (2, or 1 for --nats-require-tls), 0 when
// opt is not a NATS option, or REEL_EINVAL with *error set: a missing
// value, or a secret given as one (--nats-password: never echoed).
int reel_nats_settings_option(reel_nats_settings *s, const char *opt, const char *value, GError **error);

// REEL_EINVAL with *error set when the settings cannot work together (a
// user without a password file, two ways to log in, a cert without a key).
int reel_nats_settings_check(const reel_nats_settings *s, GError **error);

// The server's URL as it may be printed: the default when none, credentials hidden. Caller frees.
char *reel_nats_shown_url(const reel_nats_settings *s);

// Connects with settings `s` (NULL: the default server, no login) as client
// `name`. The connection reconnects on its own for as long as it lives,
// holding what is published meanwhile in an 8 MiB buffer. Returns NULL with
// *error set (REEL_EINVAL: settings that cannot work; REEL_EIO: the server
// cannot be reached now, refused the login, or TLS failed), saying what is
// wrong without a secret. Destroy with natsConnection_Destroy().
natsConnection *reel_nats_connect(const reel_nats_settings *s, const char *name, GError **error);

// "what: status text (detail)" as a REEL_EIO error, with the library's last
// error detail where it has one (URL credentials hidden).
void reel_nats_set_error(GError **error, natsStatus s, const char *what);

#endif

// Connections to a NATS server, for natssink and the fleet commands (worker,
// submit, jobs). Internal: only elements/, fleet/ and tools/ include this.
#ifndef REEL_ELEMENTS_NATS_CONNECT_H
#define REEL_ELEMENTS_NATS_CONNECT_H

#include <glib.h>
#include <nats/nats.h>

// The server used when none is named: $REEL_NATS_URL, else nats://127.0.0.1:4222.
const char *reel_nats_default_url(void);

// Connects to `url` (NULL: the default) as client `name`. The connection
// reconnects on its own for as long as it lives, holding what is published
// meanwhile in an 8 MiB buffer. Returns NULL with *error set (REEL_EIO) when
// the server cannot be reached now. Destroy with natsConnection_Destroy().
natsConnection *reel_nats_connect(const char *url, const char *name, GError **error);

// "what: status text (detail)" as a REEL_EIO error, with the library's last
// error detail where it has one.
void reel_nats_set_error(GError **error, natsStatus s, const char *what);

#endif

// Connecting to NATS with the settings every part of the fleet wants.
#include "elements/nats_connect.h"

#include <stdlib.h>
#include <string.h>

#include "reel/error.h"

enum { RECONNECT_BUFFER_BYTES = 8 << 20, CONNECT_TIMEOUT_MS = 2000, RECONNECT_WAIT_MS = 250 };

const char *reel_nats_default_url(void)
{
    const char *env = getenv("REEL_NATS_URL");
    return env && *env ? env : "nats://127.0.0.1:4222";
}

void reel_nats_set_error(GError **error, natsStatus s, const char *what)
{
    const char *detail = nats_GetLastError(NULL);
    const char *text = natsStatus_GetText(s);
    if (detail && *detail && !strstr(detail, text))
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: %s (%s)", what, text, detail);
    else
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: %s", what, text);
}

natsConnection *reel_nats_connect(const char *url, const char *name, GError **error)
{
    if (!url || !*url)
        url = reel_nats_default_url();
    natsOptions *opts = NULL;
    natsConnection *nc = NULL;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK)
        s = natsOptions_SetURL(opts, url);
    if (s == NATS_OK && name)
        s = natsOptions_SetName(opts, name);
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(opts, CONNECT_TIMEOUT_MS);
    // A lost server is waited for without end: the element or command
    // decides when buffered data has waited too long.
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(opts, RECONNECT_WAIT_MS);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectBufSize(opts, RECONNECT_BUFFER_BYTES);
    if (s == NATS_OK)
        s = natsConnection_Connect(&nc, opts);
    natsOptions_Destroy(opts);
    if (s != NATS_OK) {
        char *what = g_strdup_printf("cannot connect to NATS at '%s'", url);
        reel_nats_set_error(error, s, what);
        g_free(what);
        return NULL;
    }
    return nc;
}

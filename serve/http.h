// reel serve's HTTP API (JSON) on libsoup 3: pipelines, their elements'
// mutable properties, Prometheus metrics and a status page.
#ifndef REEL_SERVE_HTTP_H
#define REEL_SERVE_HTTP_H

#include <glib.h>

#include "serve/service.h"

typedef struct serve_http serve_http;

typedef struct serve_http_params {
    const char *listen;    // "ADDR:PORT"
    const char *token;     // bearer token every request must carry; NULL: none (loopback only)
    const char *tls_cert;  // PEM files for HTTPS; NULL: plain HTTP
    const char *tls_key;
} serve_http_params;

// Listens on params->listen, serving `service` from the thread-default main
// context. A non-loopback address without a token is refused.
serve_http *serve_http_start(serve_service *service, const serve_http_params *params, GError **error);
// The port listened on (useful after ADDR:0).
int serve_http_port(const serve_http *h);
void serve_http_stop(serve_http **h);

#endif

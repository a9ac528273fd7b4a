// GET /metrics: every hosted pipeline in Prometheus's text format (0.0.4).
#ifndef REEL_SERVE_METRICS_H
#define REEL_SERVE_METRICS_H

#include <glib.h>

#include "serve/service.h"

// The exposition text (g_free it).
char *serve_metrics_text(serve_service *s);

#endif

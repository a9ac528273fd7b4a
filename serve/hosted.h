// One pipeline hosted by `reel serve`: its description, and a thread that
// runs it, restarts it with backoff when it fails, and stops it cleanly.
// What the HTTP side reads (state, report, metrics) is taken under the
// hosted pipeline's lock, so the running pipeline is never destroyed under
// a reader.
#ifndef REEL_SERVE_HOSTED_H
#define REEL_SERVE_HOSTED_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "reel/pipeline.h"

typedef struct serve_hosted serve_hosted;

// What a pipeline is doing: starting (parsed, starting up), running,
// restarting (failed, waiting out its backoff), finished (reached its end),
// failed (cannot run: the description is wrong), stopped (asked to).
typedef enum {
    SERVE_STARTING,
    SERVE_RUNNING,
    SERVE_RESTARTING,
    SERVE_FINISHED,
    SERVE_FAILED,
    SERVE_STOPPED,
} serve_state;

const char *serve_state_name(serve_state s);

typedef struct serve_status {
    serve_state state;
    double uptime_s;    // of the current run; 0 when not running
    int64_t restarts;   // runs started again after a failure
    char *error;        // the last failure, redacted; NULL when none (g_free)
} serve_status;

// Starts hosting `text` (a description or a .reel file's text) under `id`;
// `origin` names it in parse errors. The first parse has been checked by
// the caller.
serve_hosted *serve_hosted_start(const char *id, const char *text, const char *origin);
// Asks it to stop (sources stop, sinks finalize, as Ctrl-C in `reel run`)
// without waiting.
void serve_hosted_ask_stop(serve_hosted *h);
// Asks it to stop, waits for that, and frees it.
void serve_hosted_stop(serve_hosted **h);

const char *serve_hosted_id(const serve_hosted *h);
const char *serve_hosted_text(const serve_hosted *h);
void serve_hosted_status(serve_hosted *h, serve_status *out);

// Calls fn with the running pipeline (NULL when none runs now), under the
// hosted pipeline's lock: fn may read reports and set mutable properties.
void serve_hosted_with_pipeline(serve_hosted *h, void (*fn)(reel_pipeline *p, void *data), void *data);

#endif

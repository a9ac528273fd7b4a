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

// Keeps h from being freed while a caller outside the service's lock uses
// it (a stream being added on a thread of its own); stop waits for holds.
void serve_hosted_hold(serve_hosted *h);
void serve_hosted_release(serve_hosted *h);

// Cameras: a stream is the pipeline's `stream-template` with {NAME}
// replaced by `values` (NAME, VALUE, ..., NULL: the request's "url" and
// the others) and {stream} by its id, added to the running pipeline as a
// branch (reel_pipeline_add_branch), and again whenever it restarts.
// Blocking (the branch's input opens first); one change at a time. Returns
// the new stream's id, or -1 with *error set: SERVE_STREAM_NOT_RUNNING,
// SERVE_STREAM_NO_TEMPLATE, or the pipeline's error (a URL that cannot be
// opened, a template that does not fit).
int serve_hosted_add_stream(serve_hosted *h, const char *const *values, GError **error);
// Removes stream `id` (its branch leaves the running pipeline, its sinks
// finalize, the other streams go on). Blocking. False with *error set when
// there is no such stream or the removal was refused.
bool serve_hosted_remove_stream(serve_hosted *h, int id, GError **error);
// The streams added, as a JSON array of {"id", "values" (URLs without
// their passwords), "elements"}.
void serve_hosted_streams_json(serve_hosted *h, GString *out);

#define SERVE_STREAM_ERROR serve_stream_error_quark()
GQuark serve_stream_error_quark(void);
enum { SERVE_STREAM_NOT_RUNNING = 1, SERVE_STREAM_NO_TEMPLATE, SERVE_STREAM_UNKNOWN };

#endif

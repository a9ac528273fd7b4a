// reel — pipelines: a graph of linked elements, negotiated and run by a pool
// of worker threads.
#ifndef REEL_PIPELINE_H
#define REEL_PIPELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <glib.h>

#include "bus.h"
#include "element.h"
#include "export.h"

typedef struct reel_pipeline reel_pipeline;

typedef struct reel_pipeline_params {
    int threads;        // workers in the pool; 0: one per core
    int queue_size;     // default capacity (buffers) of every link; 0: 8
    // Default byte bound of every link: full (leaky: dropping) once its
    // buffers hold this many bytes; 0: REEL_LIMIT_QUEUE_BYTES (reel/limits.h).
    int64_t queue_bytes;
    int stats_interval_ms; // period of STATS messages while run/wait waits; 0: 1000; <0: none
    bool trace;         // record a span per buffer processed, for reel_pipeline_write_trace()
    // Live latency bound, ms: a leaky link (a leaky queue) drops a buffer
    // captured longer ago than this instead of passing it on, counted with
    // its other drops; 0: none.
    int latency_ms;
    reel_bus_handler bus_handler; // may be NULL
    void *bus_user;
    // reel_parse_launch(): NAME, VALUE, ..., NULL. "{NAME}" in a property
    // value becomes VALUE once the text is parsed, so a value holding "!",
    // quotes or "name=" stays that one property's value. May be NULL.
    const char *const *values;
} reel_pipeline_params;

#define reel_pipeline_params(...) (&(reel_pipeline_params){ __VA_ARGS__ })

// An empty pipeline; `params` may be NULL for the defaults. Caller destroys
// it with reel_pipeline_destroy().
REEL_API reel_pipeline *reel_pipeline_new(const reel_pipeline_params *params);
// Stops it if running and frees it with its elements. NULL-safe.
REEL_API void reel_pipeline_destroy(reel_pipeline **p);

// Pipeline-wide settings, from text: "device" (where every element runs
// unless it says otherwise: "cpu", "auto", "vulkan:N", a device name; the
// default is "cpu") and "placement" ("prefer": an element that cannot run
// there falls back to the cpu and the report says why; "strict": that is an
// error naming the element and the reason) and "memory-budget" (bytes of
// memory the pipeline may hold on each of its devices) and "queue-max-bytes"
// (the default byte bound of every link, as params.queue_bytes). A `.reel` file may
// set them on its first lines (`device=vulkan:0`). Fails with REEL_EINVAL for
// an unknown key or value, or once the pipeline is prepared.
REEL_API int reel_pipeline_set(reel_pipeline *p, const char *key, const char *value, GError **error);

// Objects the program shares with the pipeline's elements, by key (as
// GStreamer's GstContext): a worker sets "nats.connection" to its
// natsConnection *, and a natssink without a url publishes over it. The
// pipeline does not own `ptr` (NULL removes the key): the caller keeps it
// alive until the pipeline is destroyed. Set before reel_pipeline_prepare();
// thread-safety: any thread.
REEL_API void reel_pipeline_set_shared(reel_pipeline *p, const char *key, void *ptr);
// The pointer set for `key`, or NULL (also for a NULL pipeline).
REEL_API void *reel_pipeline_shared(reel_pipeline *p, const char *key);

// Adds an element; the pipeline takes ownership, also on failure. Fails
// (REEL_EINVAL) when the name is already used in this pipeline.
REEL_API int reel_pipeline_add(reel_pipeline *p, reel_element *e, GError **error);
// The element called `name`, or NULL.
REEL_API reel_element *reel_pipeline_find(reel_pipeline *p, const char *name);
// Elements in the order they were added; NULL-terminated, owned by p.
REEL_API reel_element *const *reel_pipeline_elements(reel_pipeline *p);

// Sets property `prop` of the element called `element` from its text form,
// also while the pipeline runs: reel_element_set() on that element, whose
// rules apply (on a running pipeline only properties `reel inspect` marks
// mutable may change; each takes effect at the element's next buffer).
// Returns 0, or REEL_EINVAL with *error set to a message naming what was
// wrong: no such element (with a close name when there is one), no such
// property, a bad value, or a property that cannot change while the
// pipeline runs.
// Thread-safety: any thread, also while the pipeline runs (as
// reel_element_set()); `value` is copied.
REEL_API int reel_pipeline_set_property(reel_pipeline *p, const char *element, const char *prop, const char *value,
                                        GError **error);

// Links the next free output of `src` to the next free input of `dst`.
// Fails when either has no free pad left; the message names both.
REEL_API int reel_pipeline_link(reel_pipeline *p, reel_element *src, reel_element *dst, GError **error);

// Checks the graph (every element's pad counts, no cycles) and negotiates
// formats. Errors name the elements involved. Called by start when needed.
REEL_API int reel_pipeline_prepare(reel_pipeline *p, GError **error);

// Runs to the end: returns 0 after EOS, or the first error's code with
// *error set to its message (which names the element).
REEL_API int reel_pipeline_run(reel_pipeline *p, GError **error);

// Asynchronous form: start returns once the workers run; wait blocks until
// the end and returns what run would.
REEL_API int reel_pipeline_start(reel_pipeline *p, GError **error);
REEL_API int reel_pipeline_wait(reel_pipeline *p, GError **error);

// Asks every source to finish as if its input had ended: data in flight
// drains, sinks finalize, run returns 0. Thread-safety: any thread; also safe
// from a GLib signal source, not from a raw signal handler.
REEL_API void reel_pipeline_send_eos(reel_pipeline *p);
// Stops at once: buffers in flight are dropped, sinks still finalize, run
// returns REEL_ESTOPPED. Thread-safety: any thread.
REEL_API void reel_pipeline_abort(reel_pipeline *p);

// Dynamic graphs: a branch leaves a pipeline, also while it runs.
// `names` (NULL-terminated) are its elements; the uploads and downloads the
// pipeline put beside them go with them. While running, the branch's
// sources end as at EOS, its sinks finalize, and the elements it links to
// must pass frames on unchanged (batch, unbatch, tee, funnel); every other
// element keeps its frames. Returns once the branch is gone and freed, or
// REEL_EINVAL with *error set (an unknown name, a branch holding every
// input or output of an element it leaves). Thread-safety: any thread
// but an element's; one change of the graph at a time.
REEL_API int reel_pipeline_remove_branch(reel_pipeline *p, const char *const *names, GError **error);
// The lowest stream id no source of the pipeline has, for a source added.
REEL_API int reel_pipeline_free_stream_id(reel_pipeline *p);
// The pipeline's `stream-template` setting (the text a stream added with
// reel serve's API becomes), or NULL.
REEL_API const char *reel_pipeline_stream_template(reel_pipeline *p);
// Readers on other threads (reports, metrics, finding an element) hold this
// while a running graph may change: around reel_pipeline_report(),
// reel_pipeline_elements() and reel_pipeline_find() and while using what
// they return. The report's JSON and dot forms, frames_done and
// set_property take it themselves. Never held across a graph change.
REEL_API void reel_pipeline_lock_graph(reel_pipeline *p);
REEL_API void reel_pipeline_unlock_graph(reel_pipeline *p);

// Per-element figures of the last (or current) run.
typedef struct reel_element_report {
    const char *name;      // owned by the pipeline, as are the strings below
    const char *klass;
    const char *device_requested; // what the description or the API asked for
    const char *device;    // where it ran ("cpu")
    const char *reason;    // why device differs from device_requested; "" when it does not
    int64_t buffers_in, buffers_out;
    int64_t busy_ns;       // time inside the element's callbacks
    int64_t dropped;       // buffers a leaky link dropped on its way in
    int64_t bytes_to_device, bytes_to_host;
    // Sinks (elements without outputs): frames that arrived with a capture
    // time, and how long after it they arrived, in ms; all 0 elsewhere.
    bool has_latency;
    int64_t latency_frames;
    double latency_p50_ms, latency_p95_ms, latency_p99_ms, latency_max_ms;
    // Sources that say where their input stands (reel_element_set_input_state):
    // "connecting", "live", "lost", "ended"; "" for the others.
    const char *input_state;
    double input_state_s;   // seconds in that state
    int64_t reconnects;     // reconnect attempts this run
    reel_element *element;
    // The stream whose frames alone pass through the element (its source's
    // stream id, or an unbatch output's), -1 where streams mix (batch,
    // funnel and what follows them) or before the first run.
    int stream;
    // A source whose input was not there at the start, waiting out of the
    // graph (its branch joins the run once the input opens).
    bool waiting;
} reel_element_report;

// Fills up to n entries in element order, then one per source waiting to
// join; returns the number there are.
// While branches may be added or removed, hold reel_pipeline_lock_graph()
// across both calls and the use of the entries (their names are the
// elements').
REEL_API int reel_pipeline_report(reel_pipeline *p, reel_element_report *out, int n);
// A sink's frames of this run that arrived at most le_ns after capture (to
// the histogram's 3% resolution), for cumulative histograms such as
// Prometheus's; *sum_ns (may be NULL) gets the sum of all their latencies.
// 0 for an element that is not a sink. Any thread.
REEL_API int64_t reel_element_latency_at_most(const reel_element *e, int64_t le_ns, int64_t *sum_ns);
// Frames done: the most buffers any sink (an element without outputs) took
// in the last (or current) run.
REEL_API int64_t reel_pipeline_frames_done(reel_pipeline *p);
// Buffers a leaky link dropped on their way into input `pad` of e in the
// last (or current) run; 0 for a pad that does not exist.
REEL_API int64_t reel_element_input_dropped(const reel_element *e, int pad);
// Wall time of the last run, in microseconds.
REEL_API int64_t reel_pipeline_wall_us(reel_pipeline *p);

// The report as JSON: {"wall_s": ..., "elements": [{"name", "class",
// "device_requested", "device", "reason", "buffers_in", "buffers_out",
// "busy_ms", "dropped", "dropped_per_input": [n, ...], "bytes_to_device",
// "bytes_to_host", for sinks "latency": {"frames", "p50_ms", "p95_ms",
// "p99_ms", "max_ms"}, for sources that say "input": {"state", "for_s",
// "reconnects"}, "stream" where it carries one stream alone, for waiting
// sources "waiting": true}, ...], "memory": {"rss_bytes", "rss_peak_bytes",
// "buffers_live", "pools_open", "pool_buffers_allocated",
// "pool_buffers_outstanding"}} (process-wide, when the report is written).
// Written whole or not at all. Returns 0 or REEL_EIO.
REEL_API int reel_pipeline_write_report_json(reel_pipeline *p, const char *path, GError **error);
// The same JSON as a string (g_free it), for a running pipeline too.
REEL_API char *reel_pipeline_report_json(reel_pipeline *p);

// The graph in Graphviz form: elements coloured by the device they run on,
// links labelled with their negotiated formats. Call after prepare.
REEL_API int reel_pipeline_write_dot(reel_pipeline *p, const char *path, GError **error);

// The spans recorded with params.trace, in Chrome/Perfetto trace-event JSON:
// one track per element, one span per buffer processed.
REEL_API int reel_pipeline_write_trace(reel_pipeline *p, const char *path, GError **error);

#endif

// reel — elements: the classes that make up a pipeline, and the API an
// element implementation uses at run time.
#ifndef REEL_ELEMENT_H
#define REEL_ELEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "buffer.h"
#include "caps.h"
#include "export.h"

typedef struct reel_element reel_element;
typedef struct reel_pipeline reel_pipeline;

// ---- properties ------------------------------------------------------------
//
// A property table is data: the framework parses text into the element's
// private struct at `offset`, checks ranges and enum names, and `reel inspect`
// prints it. Strings are g_strdup'ed into a `char *` field and freed by the
// framework.
//
// A property is fixed once the pipeline starts unless its table entry says
// REEL_PROP_MUTABLE. A mutable one may be set while the pipeline runs
// (reel_pipeline_set_property()): the framework stores the new value in the
// private struct on the element's own thread, between two buffers, so the
// element reads it without a lock and sees one value for a whole buffer.
// An element that derives state from it in `start` recomputes that in the
// class's `changed` hook.

typedef enum reel_prop_type {
    REEL_PROP_INT,      // int
    REEL_PROP_DOUBLE,   // double
    REEL_PROP_BOOL,     // bool
    REEL_PROP_STRING,   // char *
    REEL_PROP_ENUM,     // int, one of `values`
    REEL_PROP_FRACTION, // reel_fraction, "30/1", "30" or "29.97"
    REEL_PROP_SIZE,     // reel_size, "640x360"
    REEL_PROP_TYPE_COUNT,
} reel_prop_type;

typedef struct reel_enum_value {
    const char *name;
    int value;
    const char *help;
} reel_enum_value;

// Property flags.
enum {
    // May change while the pipeline runs; it takes effect at the element's
    // next buffer.
    REEL_PROP_MUTABLE = 1 << 0,
    // What a string names, for whoever lets others write descriptions (a
    // worker's job policy checks each against its root and its URL rules;
    // `reel inspect` shows it). At most one of these four per property.
    REEL_PROP_READS_FILE = 1 << 1,  // a file read (labels, a model, a CA)
    REEL_PROP_WRITES_FILE = 1 << 2, // a file written ("-": standard output)
    REEL_PROP_READS_URL = 1 << 3,   // a file read, or a URL ("rtsp://...") opened
    REEL_PROP_WRITES_URL = 1 << 4,  // a file written, or a URL sent to (a server)
    // For tests only (injected failures, sleeps): a job policy refuses it
    // unless asked to allow test hooks.
    REEL_PROP_TEST_HOOK = 1 << 5,
    // A NATS subject published on (a worker's policy bounds them: a job
    // publishes with the worker's credentials).
    REEL_PROP_NATS_SUBJECT = 1 << 6,
    // The name of an environment variable read (a password): a job may
    // name only those its worker's policy lists.
    REEL_PROP_READS_ENV = 1 << 7,
};

typedef struct reel_prop {
    const char *name;
    reel_prop_type type;
    size_t offset;
    // Default, as the text a user would write; NULL: zero/NULL.
    const char *def;
    // Inclusive range for INT and DOUBLE; min == max == 0 means unbounded.
    double min, max;
    const reel_enum_value *values; // ENUM: terminated by {NULL}
    const char *help;
    unsigned flags;                // REEL_PROP_* bits
    // Optional: a rule the type and range cannot say (a topic without
    // wildcards). Gets the parsed value, of the field's C type (int *,
    // char **...); returns NULL when it is fine, else what a valid value is
    // ("a topic without + or #"; static), for the error message. Called on
    // the setter's thread: it may look at nothing but the value.
    const char *(*check)(const void *value);
} reel_prop;

// "int", "enum", ...
REEL_API const char *reel_prop_type_name(reel_prop_type t);
// What a valid value looks like ("an integer in 1..100", "one of: a, b").
// Caller frees (g_free).
REEL_API char *reel_prop_describe_values(const reel_prop *prop);

// ---- classes ---------------------------------------------------------------

#define REEL_PADS_ANY (-1)

enum {
    // Sources that block on I/O (or pace to a clock) get a thread of their
    // own instead of a worker of the pool.
    REEL_CLASS_BLOCKING = 1 << 0,
    // Caps pass through unchanged: what downstream wants is what this element
    // wants upstream, and its outputs carry its input format.
    REEL_CLASS_PASSTHROUGH = 1 << 1,
    // Each output carries one stream, chosen by the frames' stream ids
    // (unbatch): reports attribute what follows it to that stream.
    REEL_CLASS_ROUTES_STREAMS = 1 << 2,
};

// Kinds of device an element class can run on.
enum {
    REEL_RUNS_ON_CPU = 1 << 0,
    REEL_RUNS_ON_VULKAN = 1 << 1,
};

typedef struct reel_element_class {
    const char *name;
    const char *description;
    unsigned flags;
    unsigned devices;      // REEL_RUNS_ON_* bits; 0 means the cpu only
    size_t priv_size;
    const reel_prop *props; // terminated by {NULL}; may be NULL

    // Pad contract: how many inputs and outputs (max REEL_PADS_ANY: any
    // number, requested by linking) and which formats each side accepts, as
    // caps text ("video/raw", "any").
    int min_inputs, max_inputs;
    int min_outputs, max_outputs;
    const char *input_caps, *output_caps;

    // All optional. `e`'s private struct is allocated zeroed and holds the
    // property defaults before init. uninit is called even after a failed init.
    int (*init)(reel_element *e);
    void (*uninit)(reel_element *e);

    // Negotiation, pass 1 (sinks to sources): narrow *want, pre-filled with
    // the input template, to what this element would like on input `pad`
    // (reel_element_output_want() tells what downstream asked for). The
    // framework then intersects it with downstream's wishes for
    // PASSTHROUGH elements.
    int (*want)(reel_element *e, int pad, reel_caps *want);
    // Negotiation, pass 2 (sources to sinks): with every input format fixed
    // (reel_element_input_format()), fix each output format. *out is
    // pre-filled with the output template (PASSTHROUGH elements: the input
    // format); reel_element_output_want() tells what downstream wants.
    // Fields left open are then filled from downstream's wish when it can
    // (several pixel formats: reel_pixfmt_pick()), else negotiation fails.
    int (*configure)(reel_element *e, int pad, reel_caps *out);

    // Optional: blocking set-up of the element's I/O (opening a network
    // stream or a camera), before negotiation, on a thread of its own while
    // the other elements do theirs: N cameras take as long to open as the
    // slowest, not their sum, and none buffers while the next opens.
    // reel_element_set() from here counts as another thread's: it waits for
    // the element's first buffer, and fixed properties are refused.
    // Returns 0 or a REEL_E* code (after reel_element_error). A source whose
    // input is not there yet may return REEL_AGAIN where
    // reel_element_may_wait_to_join() allows: the pipeline then runs without
    // its branch and calls open again, on a thread of its own, until it
    // returns 0 (the branch joins the run) or anything else (it never does).
    int (*open)(reel_element *e);

    // Run: start after negotiation; process gets one input buffer (ownership
    // passes to the callee, also on failure) or, for sources, pad -1 and NULL
    // each time one output buffer is wanted: return REEL_EOS when done.
    // flush is called once when every input has ended, before EOS goes
    // downstream. stop is called once after the run, on success, error or
    // interruption alike: sinks finalize their outputs there.
    int (*start)(reel_element *e);
    int (*process)(reel_element *e, int pad, reel_buffer *buf);
    int (*flush)(reel_element *e);
    void (*stop)(reel_element *e);
    // Optional. Called (from any thread, with a pipeline lock held: it must
    // only signal, never block or call into the pipeline) when the pipeline
    // is asked to end or stops, so that an element waiting for something
    // outside the pipeline (an application, a device) looks at
    // reel_element_should_stop() at once instead of polling it.
    void (*unblock)(reel_element *e);
    // Optional. Called on a worker, never beside process, once the time set
    // with reel_element_wake_at() has come (and the outputs have room): an
    // element holding frames for a deadline (a partial batch) releases them
    // there even when no further frame arrives. Returns 0 or a REEL_E* code.
    int (*timeout)(reel_element *e);
    // Optional. Called on the element's own thread, between two buffers
    // (never beside process or timeout), once per REEL_PROP_MUTABLE property
    // set while the pipeline runs, after every change that came together is
    // in the private struct: recompute what `start` derived from `prop`
    // (reel_element_configure_input() for a queue's bound). Runs with the
    // element's property lock held, so reel_element_get() on another thread
    // shows the value once this is done: keep it short, never wait for
    // another thread. Returns 0 or a REEL_E* code (after
    // reel_element_error), which fails the run.
    int (*changed)(reel_element *e, const reel_prop *prop);
    // Optional: the last frame the element saw, as a JPEG at most max_width
    // pixels wide (0: as it came), for previews (`preview`). Called from any
    // thread while the pipeline runs; must not wait for the pipeline.
    // Returns 0 with *jpeg set, or a REEL_E* code with *error set.
    int (*snapshot)(reel_element *e, int max_width, GBytes **jpeg, GError **error);
} reel_element_class;

// ---- the registry ----------------------------------------------------------

// Registers a class (static storage; names are unique). Returns REEL_EINVAL
// when the name is taken. Thread-safety: call before building pipelines.
REEL_API int reel_element_class_register(const reel_element_class *klass);
// The class called `name`, or NULL.
REEL_API const reel_element_class *reel_element_class_find(const char *name);
// Every registered class, sorted by name; NULL-terminated, owned by reel.
REEL_API const reel_element_class *const *reel_element_class_list(void);
// The property called `name` of a class, or NULL.
REEL_API const reel_prop *reel_element_class_find_prop(const reel_element_class *k, const char *name);
// Whether elements of the class accept property `name`: one of its table, or
// one every element has: `name`, `device` (where it runs; default: the
// pipeline's device) and `stream-id` (the id a source stamps on the buffers
// it makes; default: its index among the pipeline's sources, in the order
// they were added).
REEL_API bool reel_element_class_has_property(const reel_element_class *k, const char *name);

// ---- element instances -----------------------------------------------------

// A new element of class `klass` named `name`. With name NULL it is called
// after its class until reel_pipeline_add() numbers it (testsrc0, testsrc1,
// ...). Returns NULL and sets *error when init fails.
REEL_API reel_element *reel_element_new(const reel_element_class *klass, const char *name, GError **error);
// Frees an element not added to a pipeline. NULL-safe; sets *e to NULL.
REEL_API void reel_element_destroy(reel_element **e);

REEL_API const char *reel_element_name(const reel_element *e);
// The device the element was asked to run on (its `device` property), or
// NULL for the pipeline's.
REEL_API const char *reel_element_device_request(const reel_element *e);
REEL_API const reel_element_class *reel_element_get_class(const reel_element *e);
REEL_API void *reel_element_priv(reel_element *e);
REEL_API reel_pipeline *reel_element_pipeline(reel_element *e);

// Sets a property from its text form, checked against the table. On failure
// returns REEL_EINVAL and sets *error with a message that names the element,
// the property and the accepted values (and a close name when unknown).
//
// Before the pipeline starts the value is stored at once. From the start of
// reel_pipeline_start() until reel_pipeline_wait() has returned only
// REEL_PROP_MUTABLE properties may change (`reel inspect` marks them); any
// other fails with REEL_EINVAL and a message naming the element and the
// property and saying it cannot change while the pipeline runs. A mutable
// value is checked here, then queued: the element takes it before it
// processes its next buffer (a later change of the same property before
// then replaces it), so every buffer that reaches the element after this
// returned sees it, and one the element is processing goes on with the old
// value. No buffer is lost or repeated because of a change. A change still
// queued when the run ends is stored then. The element's own callbacks on
// the thread that starts the pipeline (a model's manifest applied in
// `start`) store at once, fixed properties too.
// Thread-safety: any thread, also while the pipeline runs; not concurrently
// with reel_pipeline_prepare() called on its own.
REEL_API int reel_element_set(reel_element *e, const char *prop, const char *value, GError **error);
// The property's value as text (g_free it), or NULL if unknown. While the
// pipeline runs it is the value in force: a change set but not yet taken
// (the element has not had its next buffer) shows once the element took it
// and its `changed` hook has run.
// Thread-safety: any thread, also while the pipeline runs.
REEL_API char *reel_element_get(reel_element *e, const char *prop);

// The device the element runs on, decided when the pipeline is prepared
// (borrowed; valid until the pipeline is destroyed).
REEL_API reel_device *reel_element_device(reel_element *e);
// The element's own count of bytes moved between host and device memory:
// pass it to reel_mem_upload()/reel_mem_download(); the report shows it.
REEL_API reel_xfer *reel_element_xfer(reel_element *e);

// Records, when the pipeline traces, a GPU dispatch the element submitted
// (timed: reel_dispatch_params.timestamp) at timeline `point`, shown as a
// span named `what` on the device's track of the trace. Cheap otherwise.
REEL_API void reel_element_trace_dispatch(reel_element *e, const char *what, uint64_t point);

// Number of linked inputs/outputs.
REEL_API int reel_element_n_inputs(const reel_element *e);
REEL_API int reel_element_n_outputs(const reel_element *e);

// The output whose link carries stream `stream` (an unbatch's routing:
// output k takes stream k, and a branch added while running takes its
// source's), or -1.
REEL_API int reel_element_output_for_stream(const reel_element *e, int stream);
// Whether `stream`'s branch was removed while running: frames of it still
// in flight are dropped, not an error.
REEL_API bool reel_element_stream_removed(const reel_element *e, int stream);

// The element linked to input or output `pad` (NULL when none): for an
// element that takes its defaults from a neighbour (preprocess from the
// model of the infer after it).
REEL_API reel_element *reel_element_upstream(const reel_element *e, int pad);
REEL_API reel_element *reel_element_downstream(const reel_element *e, int pad);

// Whether the pipeline runs with placement=strict: work an element cannot
// do on its device is then an error, not a fallback.
REEL_API bool reel_element_placement_strict(const reel_element *e);

// Adds to what the report says about where the element ran: for work it
// could not do on its device (a model that ran on the cpu). Call from the
// element's own callbacks.
REEL_API void reel_element_note_placement(reel_element *e, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

// Whether property `name` was set (by text, a file or the API) rather than
// left at its default: defaults from a model's manifest apply only then.
REEL_API bool reel_element_prop_is_set(const reel_element *e, const char *name);

// Negotiated formats, valid from `configure` (inputs) and `start` (all).
// These are the formats the run starts with: after a mid-stream change (a
// new resolution) each buffer's own `format` is the truth.
REEL_API const reel_caps *reel_element_input_format(const reel_element *e, int pad);
REEL_API const reel_caps *reel_element_output_format(const reel_element *e, int pad);
// What the element linked to output `pad` asked for in pass 1.
REEL_API const reel_caps *reel_element_output_want(const reel_element *e, int pad);

// A buffer of output `pad`'s negotiated format from the pad's pool.
// Returns NULL (and reports REEL_ENOMEM) on failure.
REEL_API reel_buffer *reel_element_alloc(reel_element *e, int pad);

// Hands `buf` to the element linked to output `pad` (ownership passes, also
// on failure). Returns 0, REEL_ESTOPPED when the pipeline is stopping, or
// REEL_EFORMAT (reported, naming both ends) when buf's format differs from
// the last one sent and the receiver does not accept it: a format change
// mid-stream is renegotiated this way, buffer by buffer.
// Thread-safety: only from the element's own callbacks.
REEL_API int reel_element_push(reel_element *e, int pad, reel_buffer *buf);

// Reports a failure: posts an error naming the element on the bus and returns
// `code`, so that `return reel_element_error(e, REEL_EIO, "...", ...)` reads well.
REEL_API int reel_element_error(reel_element *e, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
REEL_API void reel_element_warning(reel_element *e, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
// Posts an informational message (for example a checksum at end of stream).
REEL_API void reel_element_info(reel_element *e, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

// Whether the pipeline asked its sources to stop (EOS or abort). Blocking
// sources check this to end a wait early.
REEL_API bool reel_element_should_stop(const reel_element *e);

// Whether the pipeline is being aborted or failed (not a requested end of
// stream): elements waiting to hand data on give up only then.
REEL_API bool reel_element_is_aborting(const reel_element *e);

// Sleeps until the monotonic time `deadline_us` (g_get_monotonic_time())
// or until the pipeline stops, whichever is first. Returns false when woken
// by a stop. For blocking sources that pace themselves.
REEL_API bool reel_element_wait_until(reel_element *e, int64_t deadline_us);

// Asks for the class's `timeout` hook to run once the monotonic time
// `deadline_us` (g_get_monotonic_time()) has come, replacing an earlier
// request that has not fired; 0 cancels. Call from the element's own hooks
// (start, process, timeout). Nothing fires after the element has finished.
REEL_API void reel_element_wake_at(reel_element *e, int64_t deadline_us);

// A source that knows how many frames it will produce (a file's frame count)
// says so; progress messages then show done/total and an ETA. -1: unknown.
REEL_API void reel_element_set_expected_frames(reel_element *e, int64_t frames);

// Whether this source runs on a thread of its own instead of the pool's
// workers: for sources that block on I/O or pace themselves. Defaults to the
// class's REEL_CLASS_BLOCKING flag; call from `start`.
REEL_API void reel_element_set_blocking(reel_element *e, bool blocking);

// A source says it runs live (a camera, a network stream, a paced test
// source) once it knows, from `start` or later; `reel run` then shows a live
// status line. Off at the start of each run.
REEL_API void reel_element_set_live(reel_element *e, bool live);
REEL_API bool reel_element_is_live(const reel_element *e);

// Where a source's input stands, for reports, `reel run`'s status line and
// whoever watches a camera: opening it, receiving, lost (reconnecting) or
// ended for good. REEL_INPUT_NONE: the element says nothing.
typedef enum reel_input_state {
    REEL_INPUT_NONE,
    REEL_INPUT_CONNECTING,
    REEL_INPUT_LIVE,
    REEL_INPUT_LOST,
    REEL_INPUT_ENDED,
} reel_input_state;

// "connecting", "live", "lost", "ended"; "" for REEL_INPUT_NONE.
REEL_API const char *reel_input_state_name(reel_input_state state);
// Says where the input stands now; `reconnects` is the number of reconnect
// attempts this run so far. The core notes when the state last changed.
// Any thread.
REEL_API void reel_element_set_input_state(reel_element *e, reel_input_state state, int64_t reconnects);

// Whether this source, its input not there at the start, may answer
// REEL_AGAIN from `open`: another source can run without its branch (the
// elements it alone feeds), and that branch joins the rest only through
// elements that take new inputs while running (batch, funnel). True while
// it waits.
REEL_API bool reel_element_may_wait_to_join(const reel_element *e);

// The last frame a `preview` element saw, as a JPEG (g_bytes_unref it), at
// most max_width wide (0: its own size): what `reel serve` shows. Returns 0,
// REEL_EUNSUPPORTED for an element that gives none, or REEL_EIO before its
// first frame. Any thread, while the pipeline runs.
REEL_API int reel_element_snapshot(reel_element *e, int max_width, GBytes **jpeg, GError **error);

// What happens when a link is full: wait (no), drop the newest buffer
// (upstream) or the oldest queued one (downstream).
typedef enum reel_leaky {
    REEL_LEAKY_NO,
    REEL_LEAKY_UPSTREAM,
    REEL_LEAKY_DOWNSTREAM,
} reel_leaky;

// Sets the capacity (buffers) and drop policy of the link into input `pad`.
// Call from `start`, or while running from the element's own callbacks (its
// `changed` hook): the new bound then applies to the next buffer upstream
// pushes, buffers already queued stay (a lower capacity makes upstream wait
// until the link drains below it, or, leaky, drops as buffers come), and an
// upstream waiting for room is woken.
REEL_API void reel_element_configure_input(reel_element *e, int pad, int capacity, reel_leaky leaky);
// Sets the byte bound of the link into input `pad` (0: the pipeline's
// queue-max-bytes); it applies from the next start.
REEL_API void reel_element_configure_input_bytes(reel_element *e, int pad, int64_t max_bytes);

#endif

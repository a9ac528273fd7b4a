// Pipeline internals: the structs behind reel_element and reel_pipeline.
// Only pipeline/ includes this.
#ifndef REEL_PIPELINE_INTERNAL_H
#define REEL_PIPELINE_INTERNAL_H

#include <stdatomic.h>

#include "reel/pipeline.h"

// A link is a bounded queue of buffers from one output pad to one input pad,
// followed by an EOS mark once the upstream element has finished.
//
// One element runs at a time, so each link has one producer and one
// consumer: buffers pass through a lock-free ring. Bursts that overflow the
// ring, and every leaky link (whose producer drops from the consumer's end),
// use a queue under a mutex instead.
typedef struct reel_link {
    reel_element *src, *dst;
    int src_pad, dst_pad;

    reel_buffer **ring;
    unsigned ring_size;            // a power of two
    atomic_uint head, tail;        // free-running; head: consumer, tail: producer
    GMutex lock;
    GQueue overflow;
    atomic_int n_overflow;
    atomic_bool src_waiting;       // upstream found the link full and waits for room
    atomic_bool eos;               // upstream finished; delivered after the last buffer
    bool eos_taken;
    // Soft bound: upstream is not scheduled while full. It and `leaky` may
    // change while the link runs (the consumer's `changed` hook), hence atomic.
    atomic_int capacity;
    int64_t max_bytes_request;     // the consumer's byte bound (a queue's max-bytes); 0: the pipeline's
    int64_t max_bytes;             // in force this run: full (or, leaky, dropping) at this many bytes
    atomic_llong bytes;            // of the buffers queued
    atomic_int leaky;              // reel_leaky
    atomic_long dropped;
    int64_t max_age_ns;            // leaky links: older buffers (since capture) are dropped at pop; 0: none
    reel_caps sent_format;         // producer only: the format of the last buffer sent
    // Negotiated (negotiate.c): what the consumer accepts on this input and
    // the format the producer sends. Kept here, not per element, so that a
    // pad added to an element while it runs never moves what others read.
    reel_caps want, format;
    bool negotiated;               // `format` is set
    int stream;                    // the stream id an unbatch routes here (-1 until a run numbers it)
    bool detach;                   // its producer is being removed: its EOS releases the consumer's pad
} reel_link;

// Scheduling states of an element; the transitions guarantee that one
// element is never run by two threads at once.
enum {
    STATE_IDLE,     // nothing to do, or blocked on a full output
    STATE_QUEUED,   // in the ready queue
    STATE_RUNNING,
    STATE_DIRTY,    // running, and something changed since it started
};

struct reel_element {
    const reel_element_class *klass;
    char *name;
    bool auto_name;
    char *device_request;          // the element's `device` property, or NULL
    char *device;                  // where it runs, decided at prepare
    char *placement_reason;        // why `device` differs from the request, or NULL
    reel_device *dev;              // borrowed from the pipeline's open devices
    bool inserted;                 // an upload/download the pipeline added
    reel_xfer xfer;                // bytes this element moved host <-> device
    void *priv;
    uint64_t props_set;            // bit i: the class's property i was set
    reel_pipeline *pipeline;

    // Properties set while the pipeline runs (property.c). prop_lock guards
    // the private struct's property fields against reel_element_get() and
    // reel_element_set() on other threads, and the fields below; the
    // element's runner writes the fields only under it.
    GRecMutex prop_lock;
    bool props_live;               // a run is being set up or runs: changes wait in `pending`
    GArray *pending;               // reel_prop_change, at most one per property, in the order set
    atomic_bool has_pending;       // `pending` is not empty: the runner looks before each buffer

    GPtrArray *inputs, *outputs;   // reel_link *, indexed by pad
    reel_pool **out_pool;          // per output, created lazily
    bool *in_eos;
    int n_in_eos;
    int next_input;                // round-robin start

    atomic_int sched;
    atomic_llong wake_us;          // when its timeout hook is due (monotonic µs); 0: none
    atomic_bool timeout_due;       // the timer thread found wake_us passed: run the hook next turn
    bool blocking;                 // runs on a thread of its own
    atomic_bool live;              // a source that said it runs live
    atomic_int input_state;        // reel_input_state, a source's word on its input
    atomic_llong input_since_us;   // monotonic time input_state last changed
    atomic_llong reconnects;       // reconnect attempts this run, as the source counts them
    GCond wake;                    // blocking elements wait here, under pipeline->lock
    bool started, finished;
    GThread *thread;

    // Dynamic graphs (dynamic.c). Pads of a running element change only on
    // its runner, between two buffers, from `pad_ops` (under pipeline->lock).
    GArray *pad_ops;               // reel_pad_op
    atomic_bool has_pad_ops;
    atomic_bool eos_requested;     // a source being removed: end as at EOS
    bool removing;                 // in a branch being removed
    bool staged;                   // in a branch being added, not yet running
    bool waiting;                  // a source waiting aside for its input to open (waiting.c)

    int64_t expected_frames;       // sources: frames they will produce, -1 unknown
    GArray *trace;                 // reel_trace_span, when the pipeline traces
    GArray *gpu_trace;             // reel_trace_dispatch, when the pipeline traces
    guint gpu_resolved;            // gpu_trace entries whose GPU time is known

    // figures for the report; written by the element's runner only
    atomic_llong buffers_in, buffers_out, busy_ns;

    // Stream ids and latency (latency.c).
    int stream_id_request;         // the `stream-id` property; -1: a source's index among sources
    int stream_id;                 // sources: the id stamped on their buffers in this run
    int64_t last_capture_ns;       // of the latest input buffer, for new buffers made from it
    int last_stream_id;
    struct reel_latency *latency;  // sinks: capture-to-arrival times of this run
};

struct reel_pipeline {
    reel_pipeline_params params;
    char *device;                  // the pipeline's device ("cpu" by default)
    bool strict_placement;
    uint64_t memory_budget;        // per device, bytes; 0: none
    GHashTable *devices;           // spec -> reel_device *, opened at prepare
    GPtrArray *elements;           // reel_element *, NULL-terminated
    GPtrArray *links;
    GHashTable *auto_next;         // class name -> the number its next auto name tries first
    bool prepared;
    GHashTable *shared;            // key -> borrowed pointer (reel_pipeline_set_shared), under shared_lock
    GMutex shared_lock;

    // run state
    GMutex lock;                   // guards the fields below and `ready`
    GCond cond;                    // ready queue non-empty, or quit
    GCond state_cond;              // run finished or stop/EOS requested
    reel_element **ready;          // ring of runnable elements (each at most once)
    int ready_head, ready_count;
    int idle_workers;              // workers waiting on `cond`
    bool running, quit;
    int remaining;                 // elements not finished
    int error_code;
    GError *error;
    GThread **workers;
    int n_workers;
    GThread *timer;                // fires elements' wake_at deadlines; only when a class has a timeout hook
    GCond timer_cond;              // a new deadline, or quit
    atomic_bool stopping;          // abort or error: drop everything
    atomic_bool eos_requested;     // sources end at their next turn
    // The thread inside reel_pipeline_start() while it prepares and starts
    // the elements: its property sets (manifests applied in `start`) store at
    // once; every other thread's wait for the element's next buffer.
    _Atomic(GThread *) setup_thread;
    int64_t start_us, end_us;

    // Dynamic graphs (dynamic.c). graph_lock guards `elements`, `links` and
    // every element's pad arrays against readers on other threads (reports,
    // metrics): writers take it, then `lock`. change_lock lets one branch be
    // added or removed at a time.
    GRWLock graph_lock;
    GMutex change_lock;
    GPtrArray *staged, *staged_links; // a branch being built: not yet run
    GThread *staging_thread;
    int ready_size;                // slots in `ready`, at least the elements there are
    int pad_ops_left;              // pad changes queued and not yet made, under `lock`
    int next_stream_id;            // for a source added without stream-id
    GHashTable *removed_streams;   // stream ids whose branch was removed (unbatch drops their frames)
    char *stream_template;         // the `stream-template` setting, or NULL
    GError *staged_error;          // the first error of a staged element: the run goes on (under `lock`)
    GPtrArray *waiting;            // reel_waiting: branches out of the graph until their source opens
};

// A pad change for an element's runner to make (dynamic.c).
typedef enum { PAD_ATTACH_INPUT, PAD_ATTACH_OUTPUT, PAD_DETACH_OUTPUT } reel_pad_op_kind;
typedef struct reel_pad_op {
    reel_pad_op_kind kind;
    reel_link *link;
} reel_pad_op;

// The element classes the core itself inserts: a caps filter for each
// caps in a description, upload and download between memories; always in
// the registry (registry.c).
extern const reel_element_class reel_capsfilter_class;
extern const reel_element_class reel_upload_class;
extern const reel_element_class reel_download_class;

// link.c
reel_link *reel_link_new(reel_element *src, reel_element *dst, int capacity);
void reel_link_free(reel_link *l);
void reel_link_set_capacity(reel_link *l, int capacity, reel_leaky leaky);
// The same on a running link, by its consumer: the ring keeps its size (the
// producer may be writing to it), buffers beyond it go to the overflow, and
// an upstream waiting for room is woken.
void reel_link_change_bounds(reel_link *l, int capacity, reel_leaky leaky);
// The byte bound the scheduler applies from the next start; 0: the pipeline's.
void reel_link_set_max_bytes(reel_link *l, int64_t max_bytes);
// Queues buf for dst (ownership passes); leaky links drop instead of growing.
void reel_link_push(reel_link *l, reel_buffer *buf);
void reel_link_push_eos(reel_link *l);
// 0 with *buf set, REEL_AGAIN when empty, REEL_EOS once after the last buffer.
int reel_link_pop(reel_link *l, reel_buffer **buf);
// Whether upstream may push; when not, marks upstream as waiting so that the
// consumer wakes it once the link has drained to half.
bool reel_link_has_space(reel_link *l);
bool reel_link_has_data(reel_link *l);
// Drops whatever is queued and clears EOS (its drop count stays, for the report).
void reel_link_reset(reel_link *l);

// graph.c
// Elements in an order where every element comes after its upstream ones.
// Fails naming the elements of a cycle.
int reel_graph_sort(reel_pipeline *p, reel_element ***order, GError **error);
int reel_graph_validate(reel_pipeline *p, GError **error);

// placement.c
// Decides where each element runs and inserts uploads and downloads between
// memories; fails (strict placement) naming the elements and the reason.
int reel_place(reel_pipeline *p, GError **error);
// The memory (REEL_MEMORY_*) an element reads (output false) or writes.
unsigned reel_element_memory(const reel_element *e, bool output);
// reel_device_unref() for a GDestroyNotify.
void reel_device_unref_(reel_device *dev);

// negotiate.c
// Every element's blocking set-up (open), at once; sources whose input is
// not there yet wait aside (waiting.c) where the rest can run without them.
int reel_open_elements(reel_pipeline *p, reel_element **order, GError **error);
// Formats for every link, after reel_open_elements().
int reel_negotiate(reel_pipeline *p, reel_element **order, GError **error);

// bus.c
void reel_pipeline_post(reel_pipeline *p, reel_message_type type, int code, const reel_element *e,
                        const char *text);

// scheduler.c
// Records the first error and stops the run.
void reel_pipeline_fail(reel_pipeline *p, const reel_element *e, int code, const char *text);
// Something changed for e (input arrived, output drained): run it when it can.
void reel_sched_notify(reel_element *e);
// The same from any thread, only while the pipeline runs: a turn for e to
// take property changes set on it.
void reel_sched_poke(reel_element *e);

// dynamic.c
// On e's runner between two buffers: makes the pad changes queued for it.
void reel_dynamic_apply_pad_ops(reel_element *e);
// Adding a branch: begin (takes change_lock; on a running pipeline, new
// elements and links are staged from here on), build it with the usual
// calls, then commit (built: whether the build succeeded), which joins it
// to the run or undoes it and returns the new elements' names (NULL on
// failure, *error set). `first_element`: p->elements->len - 1 at begin.
int reel_dynamic_begin(reel_pipeline *p, GError **error);
char **reel_dynamic_commit(reel_pipeline *p, guint first_element, bool built, GError **error);
// On e's runner: the EOS of input `pad`, whose producer was removed, frees
// that pad instead of counting towards e's end.
void reel_dynamic_release_input(reel_element *e, int pad);
// While a branch is staged by this thread, new elements and links go to it.
bool reel_dynamic_staging(const reel_pipeline *p);
// Joins the staged branch (of elements placed already when `placed`) to the
// run, frees what did not join and lets go of change_lock.
int reel_dynamic_commit_staged(reel_pipeline *p, bool placed, GError **error);
// Takes link `pad` out of an element's inputs or outputs, renumbering the rest.
void reel_dynamic_drop_pad(GPtrArray *pads, int pad, bool output);

// waiting.c: sources whose input is not there at the start.
// After every element opened: the branches of the sources whose open said
// REEL_AGAIN leave the graph to wait; an error when the rest cannot run
// without them.
int reel_waiting_defer(reel_pipeline *p, reel_element *const *sources, guint n, GError **error);
// Once the run started: each waiting branch tries its source again on a
// thread of its own and joins the run when it opens.
void reel_waiting_start(reel_pipeline *p);
// The run is over (p->quit): the waiting threads end; what has not joined
// waits on, to try again in the next run.
void reel_waiting_end(reel_pipeline *p);
void reel_waiting_free(reel_pipeline *p);
// Sources still waiting, for reports (under the graph lock).
guint reel_waiting_sources(reel_pipeline *p, reel_element **out, guint n);
// scheduler.c helpers dynamic.c runs for a branch joining a running graph.
void reel_sched_reset_element(reel_element *e);
// Starts e's thread or schedules it (a source); `locked`: p->lock is held.
void reel_sched_launch(reel_element *e, bool locked);
void reel_sched_grow_ready_locked(reel_pipeline *p, int size);
// reel_place() for some elements and links (a staged branch).
int reel_place_some(reel_pipeline *p, reel_element *const *els, guint n, GPtrArray *links, GError **error);
// reel_negotiate() for a staged branch in `order`: links into and out of
// elements already running get their formats from those elements' pads.
int reel_negotiate_some(reel_pipeline *p, reel_element **order, guint n, GPtrArray *links, GError **error);

// property.c
int reel_props_set_defaults(reel_element *e, GError **error);
// Frees the string fields and what is still queued.
void reel_props_free(reel_element *e);
// A run begins (before prepare and start) or ended (after stop): from then
// on, sets from threads other than the setup thread are queued; at the end
// what is still queued is stored.
void reel_props_run_begin(reel_element *e);
void reel_props_run_end(reel_element *e);
// On the element's runner between two buffers: stores the queued changes
// and runs the class's `changed` hook for each. Returns 0 or the hook's code.
int reel_props_apply(reel_element *e);

// trace.c
typedef struct reel_trace_span {
    int64_t start_ns, dur_ns;
    int64_t frame;                 // the buffer's frame number; -1 for a source's turn
} reel_trace_span;
void reel_trace_record(reel_element *e, int64_t start_ns, int64_t end_ns, int64_t frame);

typedef struct reel_trace_dispatch {
    const char *what;              // static
    uint64_t point;
    int64_t submit_ns, dur_ns;     // dur_ns -1 until resolved (or unknown)
} reel_trace_dispatch;
void reel_trace_clear(reel_element *e);

// Monotonic clock in nanoseconds.
int64_t reel_now_ns(void);

// latency.c: a fixed histogram of latencies, filled by one thread (the sink's
// runner) and read by any; no allocation per frame. Buckets are 1/32 of a
// power of two wide (about 3% resolution) over microseconds.
#define REEL_LATENCY_SUB 32
#define REEL_LATENCY_BUCKETS (34 * REEL_LATENCY_SUB)
typedef struct reel_latency {
    atomic_llong count[REEL_LATENCY_BUCKETS];
    atomic_llong frames, max_ns, sum_ns;
} reel_latency;
void reel_latency_record(reel_latency *h, int64_t ns);
// The latency at or below which a fraction q of the frames arrived, in ns
// (a bucket's midpoint, never above the maximum); 0 without frames.
int64_t reel_latency_quantile(const reel_latency *h, double q);
// A new buffer pushed by e: stamps its capture time and stream id.
void reel_latency_stamp(reel_element *e, reel_buffer *buf);
// Called when e takes an input buffer: remembers its capture time and, at
// a sink, records its latency.
void reel_latency_arrive(reel_element *e, const reel_buffer *buf);
// Before a run: numbers the sources and clears the sinks' histograms.
void reel_latency_reset(reel_pipeline *p);

#endif

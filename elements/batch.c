// batch and unbatch: many camera streams through one inference.
//
//   batch name=b ! preprocess ! infer model=m.onnx batch=4 ! unbatch name=u
//   testsrc ! b.   testsrc ! b.   ...   u. ! metasink   u. ! metasink ...
//
// Why batch only interleaves: infer already gathers `batch` tensors (and
// runs a partial batch after max-wait-ms) and hands each frame back with
// its own results. A second copy of that logic here, building batch
// tensors itself, would split preprocessing from its frames and duplicate
// the model's batch rules. So batch merges its N inputs into one stream of
// frames that keep their stream id (each source stamps its own: its index
// among sources, or its `stream-id`), releasing them in groups of `size`
// so that one infer batch holds frames of several streams taken together;
// unbatch then routes each frame to output pad `stream id`.
#include "reel/reel.h"

typedef struct batch_priv {
    int size;
    int max_wait_ms;

    GPtrArray *group;      // frames held until the group is full
    int64_t group_since;   // monotonic µs of the group's first frame
} batch_priv;

static const reel_prop batch_props[] = {
    { "size", REEL_PROP_INT, offsetof(batch_priv, size), "0", 0, 64,
      .help = "frames released together (set infer's batch to the same); 0: one per input" },
    { "max-wait-ms", REEL_PROP_INT, offsetof(batch_priv, max_wait_ms), "0", 0, 60000,
      .help = "release a partial group once its first frame has waited this long (0: wait for a full group)" },
    { NULL },
};

static void drop_group(batch_priv *s)
{
    for (guint i = 0; s->group && i < s->group->len; i++) {
        reel_buffer *b = s->group->pdata[i];
        reel_buffer_unref(&b);
    }
    if (s->group)
        g_ptr_array_set_size(s->group, 0);
}

static int batch_start(reel_element *e)
{
    batch_priv *s = reel_element_priv(e);
    if (!s->group)
        s->group = g_ptr_array_new();
    drop_group(s);
    return 0;
}

// Pushes the held frames in arrival order; the first failure stops it, the
// rest are dropped (the pipeline is stopping).
static int release(reel_element *e)
{
    batch_priv *s = reel_element_priv(e);
    int rc = 0;
    for (guint i = 0; i < s->group->len; i++) {
        reel_buffer *b = s->group->pdata[i];
        if (rc == 0)
            rc = reel_element_push(e, 0, b);
        else
            reel_buffer_unref(&b);
    }
    g_ptr_array_set_size(s->group, 0);
    reel_element_wake_at(e, 0);
    return rc;
}

// When the held group must go on (monotonic µs).
static int64_t group_deadline(const batch_priv *s)
{
    return s->group_since + (int64_t)s->max_wait_ms * 1000;
}

// Whether the held group has a frame of `stream` already.
static bool holds_stream(const batch_priv *s, int stream)
{
    for (guint i = 0; i < s->group->len; i++)
        if (((const reel_buffer *)s->group->pdata[i])->stream_id == stream)
            return true;
    return false;
}

static int batch_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    batch_priv *s = reel_element_priv(e);
    int size = s->size ? s->size : reel_element_n_inputs(e);
    // One frame per stream per group (size 0): a stream's next frame means
    // its turn came round, and the group goes on without waiting for the
    // rest. Without this a group once straddling two turns (a camera
    // joined at another phase, or stalled) would keep every later group a
    // turn late.
    if (!s->size && holds_stream(s, buf->stream_id)) {
        int rc = release(e);
        if (rc < 0) {
            reel_buffer_unref(&buf);
            return rc;
        }
    }
    int64_t now = g_get_monotonic_time();
    if (s->group->len == 0) {
        s->group_since = now;
        // A partial group goes on in time even when no further frame comes.
        if (s->max_wait_ms > 0)
            reel_element_wake_at(e, group_deadline(s));
    }
    g_ptr_array_add(s->group, buf);
    bool waited = s->max_wait_ms > 0 && now >= group_deadline(s);
    return (int)s->group->len >= size || waited ? release(e) : 0;
}

static int batch_timeout(reel_element *e)
{
    batch_priv *s = reel_element_priv(e);
    if (s->group->len == 0)
        return 0;
    if (g_get_monotonic_time() < group_deadline(s)) { // a later group's deadline
        reel_element_wake_at(e, group_deadline(s));
        return 0;
    }
    return release(e);
}

static int batch_flush(reel_element *e)
{
    return release(e);
}

static void batch_stop(reel_element *e)
{
    drop_group(reel_element_priv(e));
}

static void batch_uninit(reel_element *e)
{
    batch_priv *s = reel_element_priv(e);
    drop_group(s);
    if (s->group)
        g_ptr_array_free(s->group, TRUE);
    s->group = NULL;
}

const reel_element_class reel_batch_class = {
    .name = "batch",
    .description = "Merges N streams into one for a shared infer, frames keeping their stream ids",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // frames pass untouched, in any memory
    .priv_size = sizeof(batch_priv),
    .props = batch_props,
    .min_inputs = 1, .max_inputs = REEL_PADS_ANY,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "any", .output_caps = "any",
    .start = batch_start,
    .process = batch_process,
    .flush = batch_flush,
    .stop = batch_stop,
    .uninit = batch_uninit,
    .timeout = batch_timeout,
};

// ---- unbatch ----------------------------------------------------------------

static int unbatch_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    int stream = buf->stream_id, out = reel_element_output_for_stream(e, stream);
    if (out < 0) {
        reel_buffer_unref(&buf);
        if (reel_element_stream_removed(e, stream)) // in flight when its branch went
            return 0;
        return reel_element_error(e, REEL_EINVAL, "a frame of stream %d came, but no output takes it "
                                  "(output k takes stream k; %d are linked)", stream, reel_element_n_outputs(e));
    }
    return reel_element_push(e, out, buf);
}

const reel_element_class reel_unbatch_class = {
    .name = "unbatch",
    .description = "Routes frames to output k by their stream id k: one branch per stream after batch",
    .flags = REEL_CLASS_PASSTHROUGH | REEL_CLASS_ROUTES_STREAMS,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // frames pass untouched, in any memory
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = REEL_PADS_ANY,
    .input_caps = "any", .output_caps = "any",
    .process = unbatch_process,
};

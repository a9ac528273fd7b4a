// queue: a link with room for more buffers and a drop policy. The element
// only forwards; the capacity, byte bound and leak policy are set on its
// input link, where the scheduler applies them. max-size and leaky may
// change while running: the link takes the new bounds in place.
#include <string.h>

#include "reel/reel.h"

typedef struct queue_priv {
    int max_size;
    int max_bytes;
    int leaky;
} queue_priv;

static const reel_enum_value leaky_values[] = {
    { "no", REEL_LEAKY_NO, "when full, upstream waits" },
    { "upstream", REEL_LEAKY_UPSTREAM, "when full, drop the incoming buffer" },
    { "downstream", REEL_LEAKY_DOWNSTREAM, "when full, drop the oldest queued buffer" },
    { NULL },
};

static const reel_prop props[] = {
    { "max-size", REEL_PROP_INT, offsetof(queue_priv, max_size), "64", 1, 1 << 20,
      .help = "buffers held before upstream waits (or, when leaky, drops)", .flags = REEL_PROP_MUTABLE },
    { "max-bytes", REEL_PROP_INT, offsetof(queue_priv, max_bytes), "0", 0, G_MAXINT,
      .help = "bytes held before upstream waits (or, when leaky, drops); 0: the pipeline's queue-max-bytes "
              "(default 1 GiB, REEL_MAX_QUEUE_BYTES)" },
    { "leaky", REEL_PROP_ENUM, offsetof(queue_priv, leaky), "no", .values = leaky_values,
      .help = "what to do when full", .flags = REEL_PROP_MUTABLE },
    { NULL },
};

static int start(reel_element *e)
{
    queue_priv *q = reel_element_priv(e);
    reel_element_configure_input(e, 0, q->max_size, q->leaky);
    reel_element_configure_input_bytes(e, 0, q->max_bytes);
    return 0;
}

// A bound changed while running: the input link takes it for the next push.
static int changed(reel_element *e, const reel_prop *prop)
{
    queue_priv *q = reel_element_priv(e);
    if (strcmp(prop->name, "max-size") == 0 || strcmp(prop->name, "leaky") == 0)
        reel_element_configure_input(e, 0, q->max_size, q->leaky);
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    return reel_element_push(e, 0, buf);
}

const reel_element_class reel_queue_class = {
    .name = "queue",
    .description = "Holds up to max-size buffers (and max-bytes) between two elements; optionally drops when full",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // buffers pass untouched, in any memory
    .priv_size = sizeof(queue_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "any", .output_caps = "any",
    .start = start,
    .process = process,
    .changed = changed,
};

// Traces: a span per buffer each element processed, written in the Chrome
// trace-event format that chrome://tracing and Perfetto read.
#include <unistd.h>

#include "pipeline/internal.h"
#include "base/json.h"
#include "reel/error.h"

// A bound per element, so that tracing a long run cannot exhaust memory.
#define MAX_SPANS_PER_ELEMENT (1 << 20)

void reel_trace_record(reel_element *e, int64_t start_ns, int64_t end_ns, int64_t frame)
{
    if (!e->trace)
        e->trace = g_array_new(FALSE, FALSE, sizeof(reel_trace_span));
    if (e->trace->len >= MAX_SPANS_PER_ELEMENT)
        return;
    reel_trace_span span = { start_ns, end_ns - start_ns, frame };
    g_array_append_val(e->trace, span);
}

// GPU times are looked up once the dispatch is surely done: the device keeps
// only its latest few, so entries further back than this are resolved as
// new ones arrive.
#define UNRESOLVED_MAX 64

static void resolve(reel_element *e, reel_trace_dispatch *d)
{
    if (reel_device_dispatch_time(e->dev, d->point, &d->dur_ns) < 0)
        d->dur_ns = -1;
}

void reel_element_trace_dispatch(reel_element *e, const char *what, uint64_t point)
{
    if (!e->pipeline->params.trace || !e->dev)
        return;
    if (!e->gpu_trace)
        e->gpu_trace = g_array_new(FALSE, FALSE, sizeof(reel_trace_dispatch));
    if (e->gpu_trace->len >= MAX_SPANS_PER_ELEMENT)
        return;
    reel_trace_dispatch d = { what, point, reel_now_ns(), -1 };
    g_array_append_val(e->gpu_trace, d);
    while (e->gpu_trace->len - e->gpu_resolved > UNRESOLVED_MAX)
        resolve(e, &g_array_index(e->gpu_trace, reel_trace_dispatch, e->gpu_resolved++));
}

void reel_trace_clear(reel_element *e)
{
    if (e->trace)
        g_array_set_size(e->trace, 0);
    if (e->gpu_trace)
        g_array_set_size(e->gpu_trace, 0);
    e->gpu_resolved = 0;
}

// One track per device that ran traced dispatches, after the elements'.
static void write_dispatches(reel_pipeline *p, GString *s, int64_t origin)
{
    GPtrArray *tracks = g_ptr_array_new(); // reel_device *, index + 1001 is the tid
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        for (guint k = 0; e->gpu_trace && k < e->gpu_trace->len; k++) {
            reel_trace_dispatch *d = &g_array_index(e->gpu_trace, reel_trace_dispatch, k);
            if (k >= e->gpu_resolved)
                resolve(e, d);
            guint track;
            if (!g_ptr_array_find(tracks, e->dev, &track)) {
                track = tracks->len;
                g_ptr_array_add(tracks, e->dev);
                char *name = g_strdup_printf("device %s", reel_device_info_of(e->dev)->spec);
                g_string_append_printf(s, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %u, "
                                          "\"args\": {\"name\": ",
                                       1001 + track);
                reel_json_string(s, name);
                g_string_append(s, "}}");
                g_free(name);
            }
            // Placed at submission on the host clock, as long as the GPU ran it.
            g_string_append_printf(s, ",\n{\"name\": ");
            reel_json_string(s, d->what);
            g_string_append_printf(s, ", \"cat\": \"gpu\", \"ph\": \"X\", \"pid\": 1, \"tid\": %u, \"ts\": %.3f, "
                                      "\"dur\": %.3f, \"args\": {\"element\": ",
                                   1001 + track, (d->submit_ns - origin) / 1e3, MAX(d->dur_ns, 0) / 1e3);
            reel_json_string(s, e->name);
            g_string_append(s, "}}");
        }
        e->gpu_resolved = e->gpu_trace ? e->gpu_trace->len : 0;
    }
    g_ptr_array_free(tracks, TRUE);
}

int reel_pipeline_write_trace(reel_pipeline *p, const char *path, GError **error)
{
    GString *s = g_string_new("{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
    int64_t origin = p->start_us * 1000;
    bool first = true;
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        // One track (thread) per element, named after it.
        g_string_append_printf(s, "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %u, "
                                  "\"args\": {\"name\": ",
                               first ? "" : ",\n", i + 1);
        reel_json_string(s, e->name);
        g_string_append(s, "}}");
        first = false;
        for (guint k = 0; e->trace && k < e->trace->len; k++) {
            const reel_trace_span *t = &g_array_index(e->trace, reel_trace_span, k);
            g_string_append_printf(s, ",\n{\"name\": \"%s\", \"cat\": \"element\", \"ph\": \"X\", \"pid\": 1, "
                                      "\"tid\": %u, \"ts\": %.3f, \"dur\": %.3f",
                                   e->klass->name, i + 1, (t->start_ns - origin) / 1e3, t->dur_ns / 1e3);
            if (t->frame >= 0)
                g_string_append_printf(s, ", \"args\": {\"frame\": %" G_GINT64_FORMAT "}", t->frame);
            g_string_append(s, "}");
        }
    }
    write_dispatches(p, s, origin);
    g_string_append(s, "\n]}\n");
    int rc = reel_write_file_atomically(path, s, error);
    g_string_free(s, TRUE);
    return rc;
}

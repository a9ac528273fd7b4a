// Traces: a span per buffer each element processed, written in the Chrome
// trace-event format that chrome://tracing and Perfetto read.
#include <unistd.h>

#include "pipeline/internal.h"
#include "pipeline/json.h"
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
    g_string_append(s, "\n]}\n");
    int rc = reel_write_file_atomically(path, s, error);
    g_string_free(s, TRUE);
    return rc;
}

// What a run did, per element: as structs, JSON, and a Graphviz graph.
#include <string.h>

#include "pipeline/internal.h"
#include "base/json.h"
#include "base/process.h"
#include "reel/error.h"

int64_t reel_element_input_dropped(const reel_element *e, int pad)
{
    if (pad < 0 || pad >= (int)e->inputs->len)
        return 0;
    return atomic_load(&((reel_link *)e->inputs->pdata[pad])->dropped);
}

static void fill_latency(const reel_element *e, reel_element_report *r)
{
    const reel_latency *h = e->latency;
    if (!h || e->outputs->len > 0)
        return;
    r->has_latency = true;
    r->latency_frames = atomic_load(&h->frames);
    r->latency_p50_ms = reel_latency_quantile(h, 0.50) / 1e6;
    r->latency_p95_ms = reel_latency_quantile(h, 0.95) / 1e6;
    r->latency_p99_ms = reel_latency_quantile(h, 0.99) / 1e6;
    r->latency_max_ms = atomic_load(&h->max_ns) / 1e6;
}

// See reel_element_report.stream; `memo` (element -> stream + 2) keeps
// the walk up a graph of diamonds linear.
static int stream_of(const reel_element *e, GHashTable *memo)
{
    gpointer known = g_hash_table_lookup(memo, e);
    if (known)
        return GPOINTER_TO_INT(known) - 2;
    int stream = -2;
    if (e->inputs->len == 0)
        stream = e->waiting ? e->stream_id_request : e->pipeline->start_us ? e->stream_id : -1;
    for (guint k = 0; k < e->inputs->len && stream != -1; k++) {
        const reel_link *l = e->inputs->pdata[k];
        int s = l->src->klass->flags & REEL_CLASS_ROUTES_STREAMS ? l->stream : stream_of(l->src, memo);
        stream = s < 0 || (stream != -2 && s != stream) ? -1 : s;
    }
    g_hash_table_insert(memo, (gpointer)e, GINT_TO_POINTER(stream + 2));
    return stream;
}

static reel_element_report report_of(reel_pipeline *p, reel_element *e, GHashTable *memo)
{
    int64_t dropped = 0;
    for (guint k = 0; k < e->inputs->len; k++)
        dropped += atomic_load(&((reel_link *)e->inputs->pdata[k])->dropped);
    reel_element_report r = {
        .name = e->name,
        .klass = e->klass->name,
        .device_requested = e->device_request ? e->device_request : p->device,
        .device = e->device ? e->device : "",
        .reason = e->placement_reason ? e->placement_reason : "",
        .buffers_in = atomic_load(&e->buffers_in),
        .buffers_out = atomic_load(&e->buffers_out),
        .busy_ns = atomic_load(&e->busy_ns),
        .dropped = dropped,
        .bytes_to_device = e->xfer.to_device,
        .bytes_to_host = e->xfer.to_host,
        .element = e,
        .stream = stream_of(e, memo),
        .waiting = e->waiting,
    };
    fill_latency(e, &r);
    reel_input_state state = (reel_input_state)atomic_load(&e->input_state);
    r.input_state = reel_input_state_name(state);
    r.input_state_s = state ? (g_get_monotonic_time() - atomic_load(&e->input_since_us)) / 1e6 : 0;
    r.reconnects = atomic_load(&e->reconnects);
    return r;
}

int reel_pipeline_report(reel_pipeline *p, reel_element_report *out, int n)
{
    int count = (int)p->elements->len - 1;
    GHashTable *memo = g_hash_table_new(NULL, NULL);
    for (int i = 0; i < count && i < n; i++)
        out[i] = report_of(p, p->elements->pdata[i], memo);
    guint w = reel_waiting_sources(p, NULL, 0);
    reel_element **waiting = g_new(reel_element *, MAX(w, 1));
    reel_waiting_sources(p, waiting, w);
    for (guint i = 0; i < w; i++, count++)
        if (count < n)
            out[count] = report_of(p, waiting[i], memo);
    g_free(waiting);
    g_hash_table_destroy(memo);
    return count;
}

int64_t reel_pipeline_frames_done(reel_pipeline *p)
{
    int64_t frames = 0;
    reel_pipeline_lock_graph(p);
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->klass->max_outputs == 0)
            frames = MAX(frames, atomic_load(&e->buffers_in));
    }
    reel_pipeline_unlock_graph(p);
    return frames;
}

// Drops per input, a sink's latency, a source's input; closes the element's object.
static void append_inputs_and_latency(GString *s, const reel_element *e, const reel_element_report *r)
{
    g_string_append(s, ", \"dropped_per_input\": [");
    for (guint k = 0; k < e->inputs->len; k++)
        g_string_append_printf(s, "%s%" G_GINT64_FORMAT, k ? ", " : "", reel_element_input_dropped(e, (int)k));
    g_string_append_c(s, ']');
    if (r->has_latency)
        g_string_append_printf(s,
                               ", \"latency\": {\"frames\": %" G_GINT64_FORMAT ", \"p50_ms\": %.3f, \"p95_ms\": %.3f, "
                               "\"p99_ms\": %.3f, \"max_ms\": %.3f}",
                               r->latency_frames, r->latency_p50_ms, r->latency_p95_ms, r->latency_p99_ms,
                               r->latency_max_ms);
    if (*r->input_state)
        g_string_append_printf(s, ", \"input\": {\"state\": \"%s\", \"for_s\": %.3f, \"reconnects\": %" G_GINT64_FORMAT
                               "}", r->input_state, r->input_state_s, r->reconnects);
    if (r->stream >= 0)
        g_string_append_printf(s, ", \"stream\": %d", r->stream);
    if (r->waiting)
        g_string_append(s, ", \"waiting\": true");
    g_string_append_c(s, '}');
}

// Process-wide memory figures at the time of writing: resident memory, and
// the buffer pools' counts (after a finished run, outstanding buffers and
// open pools are leaks).
static void append_memory(GString *s)
{
    int64_t rss, peak;
    reel_process_rss(&rss, &peak);
    reel_pool_stats pools = reel_pool_get_totals();
    reel_buffer_stats buffers = reel_buffer_get_stats();
    g_string_append_printf(s,
                           ",\n\"memory\": {\"rss_bytes\": %" G_GINT64_FORMAT ", \"rss_peak_bytes\": %" G_GINT64_FORMAT
                           ", \"buffers_live\": %ld, \"pools_open\": %ld, \"pool_buffers_allocated\": %ld"
                           ", \"pool_buffers_outstanding\": %ld}",
                           rss, peak, buffers.live, pools.pools_open, pools.allocated, pools.outstanding);
}

static GString *report_json(reel_pipeline *p)
{
    reel_pipeline_lock_graph(p);
    int n = reel_pipeline_report(p, NULL, 0);
    reel_element_report *r = g_new0(reel_element_report, MAX(n, 1));
    reel_pipeline_report(p, r, n);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "{\"wall_s\": %.6f, \"elements\": [", reel_pipeline_wall_us(p) / 1e6);
    for (int i = 0; i < n; i++) {
        const char *keys[] = { "name", "class", "device_requested", "device", "reason" };
        const char *values[] = { r[i].name, r[i].klass, r[i].device_requested, r[i].device, r[i].reason };
        g_string_append(s, i ? ",\n  {" : "\n  {");
        for (size_t k = 0; k < G_N_ELEMENTS(keys); k++) {
            g_string_append_printf(s, "\"%s\": ", keys[k]);
            reel_json_string(s, values[k]);
            g_string_append(s, ", ");
        }
        g_string_append_printf(s,
                               "\"buffers_in\": %" G_GINT64_FORMAT ", \"buffers_out\": %" G_GINT64_FORMAT
                               ", \"busy_ms\": %.3f, \"dropped\": %" G_GINT64_FORMAT
                               ", \"bytes_to_device\": %" G_GINT64_FORMAT ", \"bytes_to_host\": %" G_GINT64_FORMAT,
                               r[i].buffers_in, r[i].buffers_out, r[i].busy_ns / 1e6, r[i].dropped,
                               r[i].bytes_to_device, r[i].bytes_to_host);
        append_inputs_and_latency(s, r[i].element, &r[i]);
    }
    reel_pipeline_unlock_graph(p);
    g_string_append(s, "\n]");
    append_memory(s);
    g_string_append(s, "}\n");
    g_free(r);
    return s;
}

char *reel_pipeline_report_json(reel_pipeline *p)
{
    return g_string_free(report_json(p), FALSE);
}

int reel_pipeline_write_report_json(reel_pipeline *p, const char *path, GError **error)
{
    GString *s = report_json(p);
    int rc = reel_write_file_atomically(path, s, error);
    g_string_free(s, TRUE);
    return rc;
}

// Fill colours per device kind, so a glance shows what runs where.
static const char *device_colour(const char *device)
{
    return !*device ? "#ffffff" : strcmp(device, "cpu") == 0 ? "#dde4ee" : "#c8f0c8";
}

static void dot_id(GString *s, const char *name)
{
    reel_json_string(s, name); // JSON quoting is valid DOT quoting for these names
}

int reel_pipeline_write_dot(reel_pipeline *p, const char *path, GError **error)
{
    reel_pipeline_lock_graph(p);
    int n = reel_pipeline_report(p, NULL, 0);
    reel_element_report *r = g_new0(reel_element_report, MAX(n, 1));
    reel_pipeline_report(p, r, n);
    GString *s = g_string_new("digraph reel {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", "
                              "fontname=\"sans\"];\n  edge [fontname=\"sans\", fontsize=9];\n");
    for (int i = 0; i < n; i++) {
        const reel_element *e = r[i].element;
        g_string_append(s, "  ");
        dot_id(s, r[i].name);
        if (e->inserted) // a transfer: drawn apart, with the bytes it moved
            g_string_append_printf(s, " [shape=cds, style=\"dashed,filled\", fillcolor=\"#ffe0b0\", "
                                      "label=\"%s\\n%" G_GINT64_FORMAT " B to device\\n%" G_GINT64_FORMAT " B to host\"];\n",
                                   r[i].name, r[i].bytes_to_device, r[i].bytes_to_host);
        else
            g_string_append_printf(s, " [label=\"%s\\n%s\\non %s\", fillcolor=\"%s\"];\n", r[i].name,
                                   r[i].klass, r[i].device, device_colour(r[i].device));
    }
    for (guint i = 0; i < p->links->len; i++) {
        reel_link *l = p->links->pdata[i];
        g_string_append(s, "  ");
        dot_id(s, l->src->name);
        g_string_append(s, " -> ");
        dot_id(s, l->dst->name);
        if (l->negotiated && p->prepared) {
            char *f = reel_caps_to_string(&l->format);
            gchar **fields = g_strsplit(f, ",", -1);
            char *label = g_strjoinv("\\n", fields);
            g_string_append_printf(s, " [label=\"%s\"]", label);
            g_free(label);
            g_strfreev(fields);
            g_free(f);
        }
        g_string_append(s, ";\n");
    }
    reel_pipeline_unlock_graph(p);
    g_string_append(s, "}\n");
    int rc = reel_write_file_atomically(path, s, error);
    g_string_free(s, TRUE);
    g_free(r);
    return rc;
}

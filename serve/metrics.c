// Prometheus metrics of the hosted pipelines (serve/metrics.h). Each family
// gathers its samples from every pipeline, then is written after its HELP
// and TYPE lines, as the text format wants.
#include "serve/metrics.h"

#include <stdarg.h>
#include <string.h>

#include "base/process.h"
#include "reel/reel.h"

typedef enum {
    M_UP, M_RESTARTS, M_UPTIME, M_BUFFERS_IN, M_BUFFERS_OUT, M_DROPPED, M_BUSY, M_BYTES, M_FRAMES, M_LATENCY,
    M_INPUT_STATE, M_RECONNECTS, M_INFERENCE, M_DEVICE_MEMORY, M_COUNT
} family_id;

static const struct {
    const char *name, *type, *help;
} families[M_COUNT] = {
    [M_UP] = { "reel_pipeline_up", "gauge", "1 while the pipeline runs, else 0" },
    [M_RESTARTS] = { "reel_pipeline_restarts_total", "counter", "runs started again after a failure" },
    [M_UPTIME] = { "reel_pipeline_uptime_seconds", "gauge", "time since the current run started" },
    [M_BUFFERS_IN] = { "reel_element_buffers_in_total", "counter", "buffers the element took in this run" },
    [M_BUFFERS_OUT] = { "reel_element_buffers_out_total", "counter", "buffers the element sent on this run" },
    [M_DROPPED] = { "reel_element_dropped_total", "counter", "buffers a leaky link dropped on their way in" },
    [M_BUSY] = { "reel_element_busy_seconds_total", "counter",
                 "time inside the element's callbacks (for infer: inference time)" },
    [M_BYTES] = { "reel_bytes_moved_total", "counter", "bytes copied between host and device memory" },
    [M_FRAMES] = { "reel_frames_total", "counter", "frames that reached a sink (an element without outputs)" },
    [M_LATENCY] = { "reel_latency_seconds", "histogram", "time from capture to a sink, per frame" },
    [M_INPUT_STATE] = { "reel_input_state", "gauge", "1 for the state a source's input is in" },
    [M_RECONNECTS] = { "reel_input_reconnects_total", "counter", "reconnect attempts of a source this run" },
    [M_INFERENCE] = { "reel_inference_seconds_total", "counter", "time an infer element spent running its model" },
    [M_DEVICE_MEMORY] = { "reel_device_memory_bytes", "gauge",
                          "memory a device holds for reel (live and pooled), by device" },
};

// Histogram bounds, in seconds: 1 ms to 10 s, closer where live video's
// latencies are (a p95 from them, as histogram_quantile() takes it, is
// within a bucket's width).
static const double latency_bounds[] = { 0.001, 0.0015, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03,
                                         0.05, 0.075, 0.1, 0.2, 0.5, 1, 2, 5, 10 };

typedef struct collect {
    GString *out[M_COUNT];
    const char *pipeline;
    char stream[16];          // the element's stream, "" where streams mix
    GHashTable *device_bytes; // device spec -> bytes held (gint64 *), once per device
} collect;

// A label value, escaped as the format wants (\\, \", \n).
static void label_value(GString *s, const char *v)
{
    for (const char *c = v ? v : ""; *c; c++) {
        if (*c == '\\' || *c == '"')
            g_string_append_c(s, '\\');
        if (*c == '\n')
            g_string_append(s, "\\n");
        else
            g_string_append_c(s, *c);
    }
}

// NAME{pipeline="...",stream="N",KEY="VALUE"...} VALUE (stream where the
// element carries one): labels as key, value pairs, NULL-terminated.
static void sample(collect *c, family_id f, const char *suffix, double value, ...)
{
    GString *s = c->out[f];
    g_string_append_printf(s, "%s%s{pipeline=\"", families[f].name, suffix ? suffix : "");
    label_value(s, c->pipeline);
    g_string_append_c(s, '"');
    if (*c->stream)
        g_string_append_printf(s, ",stream=\"%s\"", c->stream);
    va_list ap;
    va_start(ap, value);
    for (const char *k; (k = va_arg(ap, const char *));) {
        g_string_append_printf(s, ",%s=\"", k);
        label_value(s, va_arg(ap, const char *));
        g_string_append_c(s, '"');
    }
    va_end(ap);
    char num[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(s, "} %s\n", g_ascii_formatd(num, sizeof num, "%.9g", value));
}

static void latency_histogram(collect *c, const reel_element *e, const char *name)
{
    int64_t sum_ns = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(latency_bounds); i++) {
        char le[32];
        g_ascii_dtostr(le, sizeof le, latency_bounds[i]);
        int64_t n = reel_element_latency_at_most(e, (int64_t)(latency_bounds[i] * 1e9), NULL);
        sample(c, M_LATENCY, "_bucket", (double)n, "element", name, "le", le, NULL);
    }
    int64_t all = reel_element_latency_at_most(e, INT64_MAX, &sum_ns);
    sample(c, M_LATENCY, "_bucket", (double)all, "element", name, "le", "+Inf", NULL);
    sample(c, M_LATENCY, "_sum", sum_ns / 1e9, "element", name, NULL);
    sample(c, M_LATENCY, "_count", (double)all, "element", name, NULL);
}

static void elements(reel_pipeline *p, void *data)
{
    collect *c = data;
    if (!p)
        return;
    reel_pipeline_lock_graph(p); // branches may come and go meanwhile
    int n = reel_pipeline_report(p, NULL, 0);
    reel_element_report *r = g_new0(reel_element_report, MAX(n, 1));
    reel_pipeline_report(p, r, n);
    for (int i = 0; i < n; i++) {
        const char *name = r[i].name;
        if (r[i].stream >= 0)
            g_snprintf(c->stream, sizeof c->stream, "%d", r[i].stream);
        else
            *c->stream = '\0';
        sample(c, M_BUFFERS_IN, NULL, (double)r[i].buffers_in, "element", name, "class", r[i].klass, "device",
               r[i].device, NULL);
        sample(c, M_BUFFERS_OUT, NULL, (double)r[i].buffers_out, "element", name, "class", r[i].klass, "device",
               r[i].device, NULL);
        sample(c, M_DROPPED, NULL, (double)r[i].dropped, "element", name, NULL);
        sample(c, M_BUSY, NULL, r[i].busy_ns / 1e9, "element", name, "class", r[i].klass, "device", r[i].device,
               NULL);
        if (r[i].bytes_to_device || r[i].bytes_to_host) {
            sample(c, M_BYTES, NULL, (double)r[i].bytes_to_device, "element", name, "device", r[i].device,
                   "direction", "to_device", NULL);
            sample(c, M_BYTES, NULL, (double)r[i].bytes_to_host, "element", name, "device", r[i].device,
                   "direction", "to_host", NULL);
        }
        if (!r[i].waiting && reel_element_n_outputs(r[i].element) == 0) {
            sample(c, M_FRAMES, NULL, (double)r[i].buffers_in, "element", name, NULL);
            latency_histogram(c, r[i].element, name);
        }
        if (strcmp(r[i].klass, "infer") == 0) {
            char *model = reel_element_get(r[i].element, "model");
            sample(c, M_INFERENCE, NULL, r[i].busy_ns / 1e9, "element", name, "model", model ? model : "",
                   "device", r[i].device, NULL);
            g_free(model);
        }
        reel_device *dev = reel_element_device(r[i].element);
        const char *spec = dev ? reel_device_info_of(dev)->spec : NULL;
        if (spec && !g_hash_table_contains(c->device_bytes, spec)) {
            reel_device_stats st;
            reel_device_get_stats(dev, &st);
            gint64 *held = g_new(gint64, 1);
            *held = st.bytes_held;
            g_hash_table_insert(c->device_bytes, g_strdup(spec), held);
        }
        if (*r[i].input_state) {
            static const char *const states[] = { "connecting", "live", "lost", "ended" };
            for (size_t k = 0; k < G_N_ELEMENTS(states); k++)
                sample(c, M_INPUT_STATE, NULL, strcmp(r[i].input_state, states[k]) == 0, "element", name, "state",
                       states[k], NULL);
            sample(c, M_RECONNECTS, NULL, (double)r[i].reconnects, "element", name, NULL);
        }
    }
    *c->stream = '\0';
    reel_pipeline_unlock_graph(p);
    g_free(r);
}

static void pipeline_metrics(serve_hosted *h, void *data)
{
    collect *c = data;
    c->pipeline = serve_hosted_id(h);
    serve_status st;
    serve_hosted_status(h, &st);
    g_free(st.error);
    sample(c, M_UP, NULL, st.state == SERVE_RUNNING, NULL);
    sample(c, M_RESTARTS, NULL, (double)st.restarts, NULL);
    sample(c, M_UPTIME, NULL, st.uptime_s, NULL);
    serve_hosted_with_pipeline(h, elements, c);
}

char *serve_metrics_text(serve_service *s)
{
    collect c = { .device_bytes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free) };
    for (int f = 0; f < M_COUNT; f++)
        c.out[f] = g_string_new(NULL);
    serve_service_each(s, pipeline_metrics, &c);
    // Devices are the process's, not a pipeline's: one sample each.
    GHashTableIter it;
    gpointer spec, held;
    g_hash_table_iter_init(&it, c.device_bytes);
    char num[G_ASCII_DTOSTR_BUF_SIZE];
    while (g_hash_table_iter_next(&it, &spec, &held))
        g_string_append_printf(c.out[M_DEVICE_MEMORY], "%s{device=\"%s\"} %s\n", families[M_DEVICE_MEMORY].name,
                               (const char *)spec, g_ascii_formatd(num, sizeof num, "%.9g", (double)*(gint64 *)held));
    g_hash_table_destroy(c.device_bytes);
    GString *text = g_string_new(NULL);
    for (int f = 0; f < M_COUNT; f++) {
        if (c.out[f]->len)
            g_string_append_printf(text, "# HELP %s %s\n# TYPE %s %s\n%s", families[f].name, families[f].help,
                                   families[f].name, families[f].type, c.out[f]->str);
        g_string_free(c.out[f], TRUE);
    }
    int64_t rss;
    reel_process_rss(&rss, NULL);
    g_string_append_printf(text,
                           "# HELP reel_process_resident_memory_bytes resident memory of the reel serve process\n"
                           "# TYPE reel_process_resident_memory_bytes gauge\nreel_process_resident_memory_bytes %s\n",
                           g_ascii_formatd(num, sizeof num, "%.9g", (double)rss));
    return g_string_free(text, FALSE);
}

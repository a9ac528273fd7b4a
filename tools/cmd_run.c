// reel run: build a pipeline from text, run it, summarise it.
//
// The pipeline runs on its own threads; this thread sits in a GLib main
// loop so that Ctrl-C (SIGINT) and SIGTERM become a clean end of stream:
// sources stop, data in flight drains, sinks finalize. A second Ctrl-C
// aborts.
#include <glib-unix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reel/reel.h"
#include "tools/cli.h"

typedef struct run_opts {
    const char *file;
    const char *report_json, *dot, *trace;
    const char *device, *placement;
    bool report;
    bool quiet;
    int threads;
    int queue_size;
    int latency_ms;
} run_opts;

// The live status line: per sink (one per stream), frames per second since
// the last line, drops on its way and latency p95.
typedef struct live_status {
    reel_pipeline *pipeline;
    bool live;                     // some source runs in live mode
    int64_t *last_frames;          // per element, at the last line
    int n_last_frames;
    int64_t last_us;
} live_status;

typedef struct run_ui {
    const run_opts *opts;
    live_status status;
} run_ui;

typedef struct run_state {
    reel_pipeline *pipeline;
    GMainLoop *loop;
    int interrupts;
    int rc;
    GError *error;
} run_state;

static const char run_usage[] =
    "usage: reel run [OPTIONS] DESCRIPTION... [OPTIONS]\n"
    "       reel run [OPTIONS] -f FILE\n"
    "\n"
    "Options may come before or after the description; after '--' every word is\n"
    "the description's, even one that starts with '-'.\n"
    "\n"
    "  -f, --file FILE      read the description from FILE ('-' for standard input)\n"
    "  --device SPEC        where every element runs: cpu, auto, vulkan:N, a device name\n"
    "                       (overrides a device= line in the description)\n"
    "  --placement MODE     prefer (fall back to the cpu and say why) or strict (fail instead)\n"
    "  --report             per element: device, buffers, busy time, bytes moved\n"
    "  --report-json FILE   the same report as JSON\n"
    "  --dot FILE           the graph in Graphviz form, elements coloured by device\n"
    "  --trace FILE         a Chrome/Perfetto trace: a track per element, a span per buffer\n"
    "  --threads N          worker threads (default: one per core)\n"
    "  --queue-size N       default capacity of every link, in buffers (default 8)\n"
    "  --latency MS         live bound: leaky queues drop frames captured longer ago than MS\n"
    "  -q, --quiet          no summary line\n"
    "\n"
    "On a terminal, a live pipeline (a source with is-live or live on) shows a status line\n"
    "once a second: per sink, frames per second, buffers dropped on its way, latency p95.\n";

// Set when a progress line is on the terminal without its newline.
static bool progress_shown;

// Buffers dropped on the way to e: its inputs' drops and those of the
// elements before it, up to where streams merge (an element of several inputs).
static int64_t drops_upstream(const reel_element *e)
{
    int64_t dropped = 0;
    for (int steps = 0; e && steps < 64; steps++) {
        for (int k = 0; k < reel_element_n_inputs(e); k++)
            dropped += reel_element_input_dropped(e, k);
        e = reel_element_n_inputs(e) == 1 ? reel_element_upstream(e, 0) : NULL;
    }
    return dropped;
}

// One status line from the report: "name 25.0 fps 0 dropped p95 12.3 ms | ...".
static char *live_status_text(live_status *st)
{
    reel_pipeline_lock_graph(st->pipeline); // a camera waiting at the start may join meanwhile
    int n = reel_pipeline_report(st->pipeline, NULL, 0);
    reel_element_report *r = g_new0(reel_element_report, MAX(n, 1));
    reel_pipeline_report(st->pipeline, r, n);
    if (n > st->n_last_frames) { // elements joined: their count starts now
        st->last_frames = g_renew(int64_t, st->last_frames, n);
        for (int i = st->n_last_frames; i < n; i++)
            st->last_frames[i] = r[i].buffers_in;
        st->n_last_frames = n;
    }
    int64_t now = g_get_monotonic_time();
    double secs = st->last_us ? (now - st->last_us) / 1e6 : 0.0;
    GString *s = g_string_new(NULL);
    for (int i = 0; i < n; i++) {
        // An input not receiving is news: "cam2 lost 12 s".
        if (*r[i].input_state && strcmp(r[i].input_state, "live") != 0)
            g_string_append_printf(s, "%s%s %s %.0f s", s->len ? " | " : "", r[i].name, r[i].input_state,
                                   r[i].input_state_s);
        if (!r[i].has_latency)
            continue;
        double fps = secs > 0 ? (r[i].buffers_in - st->last_frames[i]) / secs : 0.0;
        g_string_append_printf(s, "%s%s %.1f fps %" G_GINT64_FORMAT " dropped p95 %.1f ms", s->len ? " | " : "",
                               r[i].name, fps, drops_upstream(r[i].element), r[i].latency_p95_ms);
        st->last_frames[i] = r[i].buffers_in;
    }
    reel_pipeline_unlock_graph(st->pipeline);
    st->last_us = now;
    g_free(r);
    return g_string_free(s, FALSE);
}

// Whether a source runs in live mode: it said so (reel_element_set_live),
// or its is-live or live property is on.
static bool pipeline_is_live(reel_pipeline *p)
{
    static const char *const keys[] = { "is-live", "live" };
    bool live = false;
    for (reel_element *const *e = reel_pipeline_elements(p); *e && !live; e++) {
        live |= reel_element_is_live(*e);
        for (size_t k = 0; k < G_N_ELEMENTS(keys) && reel_element_n_inputs(*e) == 0; k++) {
            char *v = reel_element_get(*e, keys[k]);
            live |= v && (strcmp(v, "true") == 0 || strcmp(v, "on") == 0);
            g_free(v);
        }
    }
    return live;
}

static void on_message(const reel_message *msg, void *user)
{
    run_ui *ui = user;
    const run_opts *o = ui->opts;
    if (msg->type == REEL_MESSAGE_STATS) {
        // Progress only where someone watches: a terminal.
        if (!o->quiet && isatty(STDERR_FILENO)) {
            // Sources say they are live once started: asked at each line.
            ui->status.live = ui->status.live || pipeline_is_live(ui->status.pipeline);
            char *live = ui->status.live ? live_status_text(&ui->status) : NULL;
            // \033[K clears what a longer line before left behind.
            fprintf(stderr, "\rreel: %s\033[K", live ? live : msg->text);
            g_free(live);
            progress_shown = true;
        }
        return;
    }
    // Errors are printed once, from the run's result.
    if (msg->type == REEL_MESSAGE_WARNING || msg->type == REEL_MESSAGE_INFO) {
        fprintf(stderr, "%sreel: %s: %s%s%s\n", progress_shown ? "\n" : "", reel_message_type_name(msg->type),
                msg->element ? msg->element : "", msg->element ? ": " : "", msg->text);
        progress_shown = false;
    }
}

static gboolean on_signal(gpointer data)
{
    run_state *s = data;
    if (s->interrupts++ == 0) {
        fprintf(stderr, "\nreel: interrupted: finishing (interrupt again to abort)\n");
        reel_pipeline_send_eos(s->pipeline);
    } else {
        reel_pipeline_abort(s->pipeline);
    }
    return G_SOURCE_CONTINUE;
}

static gboolean quit_loop(gpointer data)
{
    g_main_loop_quit(((run_state *)data)->loop);
    return G_SOURCE_REMOVE;
}

static gpointer wait_main(gpointer data)
{
    run_state *s = data;
    s->rc = reel_pipeline_wait(s->pipeline, &s->error);
    // Quit from inside the loop: a quit before the loop runs would be lost.
    g_idle_add(quit_loop, s);
    return NULL;
}

static bool parse_int_arg(const char *text, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*end || v <= 0 || v > 4096)
        return false;
    *out = (int)v;
    return true;
}

// Whether a word is the description's rather than an option: '-' alone
// (standard output) and negative numbers (a value after a spaced '=') are.
static bool is_word(const char *a)
{
    return a[0] != '-' || !a[1] || g_ascii_isdigit(a[1]);
}

// Options and description words in any order, as GNU tools take them; '--'
// ends the options. The description's words go into `words`. Returns 0, or
// -1 on bad usage.
static int parse_opts(int argc, char **argv, run_opts *o, GPtrArray *words)
{
    bool options = true;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has_next = i + 1 < argc;
        if (!options || is_word(a))
            g_ptr_array_add(words, argv[i]);
        else if (strcmp(a, "--") == 0)
            options = false;
        else if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && has_next)
            o->file = argv[++i];
        else if (strcmp(a, "--report") == 0)
            o->report = true;
        else if (strcmp(a, "--device") == 0 && has_next)
            o->device = argv[++i];
        else if (strcmp(a, "--placement") == 0 && has_next)
            o->placement = argv[++i];
        else if (strcmp(a, "--report-json") == 0 && has_next)
            o->report_json = argv[++i];
        else if (strcmp(a, "--dot") == 0 && has_next)
            o->dot = argv[++i];
        else if (strcmp(a, "--trace") == 0 && has_next)
            o->trace = argv[++i];
        else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0)
            o->quiet = true;
        else if (strcmp(a, "--threads") == 0 && has_next && parse_int_arg(argv[i + 1], &o->threads))
            i++;
        else if (strcmp(a, "--latency") == 0 && has_next && parse_int_arg(argv[i + 1], &o->latency_ms))
            i++;
        else if (strcmp(a, "--queue-size") == 0 && has_next && parse_int_arg(argv[i + 1], &o->queue_size))
            i++;
        else {
            fprintf(stderr, "reel run: bad option '%s'\n\n%s", a, run_usage);
            return -1;
        }
    }
    g_ptr_array_add(words, NULL);
    return 0;
}

static char *read_description(const run_opts *o, char **words, char **origin)
{
    if (!o->file) {
        *origin = g_strdup("pipeline");
        return g_strjoinv(" ", words);
    }
    GError *err = NULL;
    char *text = NULL;
    gsize len = 0;
    if (strcmp(o->file, "-") == 0) {
        GString *s = g_string_new(NULL);
        char chunk[4096];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
            g_string_append_len(s, chunk, (gssize)n);
        len = s->len;
        text = g_string_free(s, FALSE);
    } else if (!g_file_get_contents(o->file, &text, &len, &err)) {
        fprintf(stderr, "reel: %s\n", err->message);
        g_error_free(err);
        return NULL;
    }
    // The parser sees a C string: a NUL would silently end the description.
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        fprintf(stderr, "reel: %s: byte %zu is NUL; a description is text\n", o->file, (size_t)(nul - text));
        g_free(text);
        return NULL;
    }
    *origin = g_strdup(strcmp(o->file, "-") == 0 ? "stdin" : o->file);
    return text;
}

// Under an element's row: a sink's latency, and drops per input where
// several inputs dropped.
static void print_report_details(const reel_element_report *r)
{
    if (r->has_latency)
        fprintf(stderr, "%-16s   latency ms: p50 %.1f  p95 %.1f  p99 %.1f  max %.1f  (%" G_GINT64_FORMAT " frames)\n",
                "", r->latency_p50_ms, r->latency_p95_ms, r->latency_p99_ms, r->latency_max_ms, r->latency_frames);
    if (*r->input_state)
        fprintf(stderr, "%-16s   input: %s for %.1f s, %" G_GINT64_FORMAT " reconnect attempts%s\n", "", r->input_state,
                r->input_state_s, r->reconnects, r->waiting ? "; its input never opened, its branch did not run" : "");
    const reel_element *e = r->element;
    if (reel_element_n_inputs(e) < 2 || r->dropped == 0)
        return;
    fprintf(stderr, "%-16s   dropped per input:", "");
    for (int k = 0; k < reel_element_n_inputs(e); k++)
        fprintf(stderr, " %s %" G_GINT64_FORMAT, reel_element_name(reel_element_upstream(e, k)),
                reel_element_input_dropped(e, k));
    fputc('\n', stderr);
}

static void print_report(reel_pipeline *p)
{
    int n = reel_pipeline_report(p, NULL, 0);
    reel_element_report *r = g_new0(reel_element_report, n);
    reel_pipeline_report(p, r, n);
    fprintf(stderr, "%-16s %-10s %-10s %-10s %10s %10s %10s %8s %10s %10s\n", "element", "class", "requested",
            "device", "in", "out", "busy ms", "dropped", "to device", "to host");
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "%-16s %-10s %-10s %-10s %10" G_GINT64_FORMAT " %10" G_GINT64_FORMAT " %10.1f %8" G_GINT64_FORMAT
                " %10" G_GINT64_FORMAT " %10" G_GINT64_FORMAT "\n",
                r[i].name, r[i].klass, r[i].device_requested, r[i].device, r[i].buffers_in, r[i].buffers_out,
                r[i].busy_ns / 1e6, r[i].dropped, r[i].bytes_to_device, r[i].bytes_to_host);
        if (*r[i].reason)
            fprintf(stderr, "%-16s   %s\n", "", r[i].reason);
        print_report_details(&r[i]);
    }
    g_free(r);
}

// Writes one of the run's outputs (report, graph, trace); a failure to
// write is a failure of the run.
static void write_output(int (*write)(reel_pipeline *, const char *, GError **), reel_pipeline *p,
                         const char *path, int *exit_code)
{
    GError *err = NULL;
    if (write(p, path, &err) < 0) {
        fprintf(stderr, "reel: error: cannot write '%s': %s\n", path, err->message);
        g_error_free(err);
        *exit_code = EXIT_RUNTIME;
    }
}

int cmd_run(int argc, char **argv)
{
    run_opts o = { 0 };
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        fputs(run_usage, stdout);
        return EXIT_OK;
    }
    GPtrArray *words = g_ptr_array_new();
    if (parse_opts(argc, argv, &o, words) < 0) {
        g_ptr_array_free(words, TRUE);
        return EXIT_USAGE;
    }
    if ((o.file != NULL) == (words->len > 1)) {
        fprintf(stderr, "reel run: give a description or -f FILE (one of them)\n\n%s", run_usage);
        g_ptr_array_free(words, TRUE);
        return EXIT_USAGE;
    }
    char *origin = NULL;
    char *text = read_description(&o, (char **)words->pdata, &origin);
    g_ptr_array_free(words, TRUE);
    if (!text)
        return EXIT_USAGE;

    run_state s = { 0 };
    run_ui ui = { .opts = &o };
    GError *err = NULL;
    s.pipeline = reel_parse_launch(text, origin,
                                   reel_pipeline_params(.threads = o.threads, .queue_size = o.queue_size,
                                                        .latency_ms = o.latency_ms, .trace = o.trace != NULL,
                                                        .bus_handler = on_message, .bus_user = &ui),
                                   &err);
    g_free(text);
    g_free(origin);
    if (s.pipeline && ((o.device && reel_pipeline_set(s.pipeline, "device", o.device, &err) < 0)
                       || (o.placement && reel_pipeline_set(s.pipeline, "placement", o.placement, &err) < 0))) {
        fprintf(stderr, "reel run: %s\n", err->message);
        g_error_free(err);
        reel_pipeline_destroy(&s.pipeline);
        return EXIT_USAGE;
    }
    if (!s.pipeline || reel_pipeline_prepare(s.pipeline, &err) < 0) {
        fprintf(stderr, "%s%s\n", s.pipeline ? "reel: error: " : "", err->message);
        // A description that cannot work is bad usage; an input that cannot
        // be read or decoded while preparing is a failure at run time.
        int code = !s.pipeline || err->code == REEL_EINVAL || err->code == REEL_EFORMAT ? EXIT_USAGE
                                                                                       : EXIT_RUNTIME;
        g_error_free(err);
        reel_pipeline_destroy(&s.pipeline);
        return code;
    }

    int exit_code = EXIT_OK;
    ui.status.pipeline = s.pipeline;
    ui.status.last_us = g_get_monotonic_time();
    s.loop = g_main_loop_new(NULL, FALSE);
    guint sigint = g_unix_signal_add(SIGINT, on_signal, &s);
    guint sigterm = g_unix_signal_add(SIGTERM, on_signal, &s);
    if (reel_pipeline_start(s.pipeline, &err) < 0) {
        fprintf(stderr, "reel: error: %s\n", err->message);
        g_error_free(err);
        exit_code = EXIT_RUNTIME;
    } else {
        GThread *waiter = g_thread_new("reel-wait", wait_main, &s);
        g_main_loop_run(s.loop);
        g_thread_join(waiter);
        if (s.rc < 0) {
            fprintf(stderr, "reel: error: %s\n", s.error->message);
            g_error_free(s.error);
            exit_code = EXIT_RUNTIME;
        }
    }
    g_source_remove(sigint);
    g_source_remove(sigterm);
    g_main_loop_unref(s.loop);

    if (progress_shown)
        fputc('\n', stderr);
    if (o.report)
        print_report(s.pipeline);
    if (o.report_json)
        write_output(reel_pipeline_write_report_json, s.pipeline, o.report_json, &exit_code);
    if (o.dot)
        write_output(reel_pipeline_write_dot, s.pipeline, o.dot, &exit_code);
    if (o.trace)
        write_output(reel_pipeline_write_trace, s.pipeline, o.trace, &exit_code);
    if (!o.quiet) {
        double secs = reel_pipeline_wall_us(s.pipeline) / 1e6;
        int64_t frames = reel_pipeline_frames_done(s.pipeline);
        fprintf(stderr, "reel: %s: %" G_GINT64_FORMAT " frames in %.3f s (%.1f fps)\n",
                exit_code == EXIT_OK ? "done" : "stopped", frames, secs, secs > 0 ? frames / secs : 0.0);
    }
    reel_pipeline_destroy(&s.pipeline);
    g_free(ui.status.last_frames);
    return exit_code;
}

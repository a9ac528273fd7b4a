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
} run_opts;

typedef struct run_state {
    reel_pipeline *pipeline;
    GMainLoop *loop;
    int interrupts;
    int rc;
    GError *error;
} run_state;

static const char run_usage[] =
    "usage: reel run [OPTIONS] DESCRIPTION...\n"
    "       reel run [OPTIONS] -f FILE\n"
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
    "  -q, --quiet          no summary line\n";

// Set when a progress line is on the terminal without its newline.
static bool progress_shown;

static void on_message(const reel_message *msg, void *user)
{
    const run_opts *o = user;
    if (msg->type == REEL_MESSAGE_STATS) {
        // Progress only where someone watches: a terminal.
        if (!o->quiet && isatty(STDERR_FILENO)) {
            fprintf(stderr, "\rreel: %s   ", msg->text);
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

// Options come first; the rest is the description. Returns the index of the
// first description word, or -1 on bad usage.
static int parse_opts(int argc, char **argv, run_opts *o)
{
    int i = 0;
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        bool has_next = i + 1 < argc;
        if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && has_next)
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
        else if (strcmp(a, "--queue-size") == 0 && has_next && parse_int_arg(argv[i + 1], &o->queue_size))
            i++;
        else {
            fprintf(stderr, "reel run: bad option '%s'\n\n%s", a, run_usage);
            return -1;
        }
    }
    return i;
}

static char *read_description(const run_opts *o, int argc, char **argv, char **origin)
{
    if (!o->file) {
        *origin = g_strdup("pipeline");
        return g_strjoinv(" ", argv);
    }
    GError *err = NULL;
    char *text = NULL;
    if (strcmp(o->file, "-") == 0) {
        GString *s = g_string_new(NULL);
        char chunk[4096];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
            g_string_append_len(s, chunk, (gssize)n);
        text = g_string_free(s, FALSE);
    } else if (!g_file_get_contents(o->file, &text, NULL, &err)) {
        fprintf(stderr, "reel: %s\n", err->message);
        g_error_free(err);
        return NULL;
    }
    (void)argc;
    *origin = g_strdup(strcmp(o->file, "-") == 0 ? "stdin" : o->file);
    return text;
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

// Frames that reached the sinks: the most any sink received.
static int64_t frames_done(reel_pipeline *p)
{
    int n = reel_pipeline_report(p, NULL, 0);
    reel_element_report *r = g_new0(reel_element_report, n);
    reel_pipeline_report(p, r, n);
    reel_element *const *els = reel_pipeline_elements(p);
    int64_t frames = 0;
    for (int i = 0; i < n; i++)
        if (reel_element_get_class(els[i])->max_outputs == 0)
            frames = MAX(frames, r[i].buffers_in);
    g_free(r);
    return frames;
}

int cmd_run(int argc, char **argv)
{
    run_opts o = { 0 };
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        fputs(run_usage, stdout);
        return EXIT_OK;
    }
    int first = parse_opts(argc, argv, &o);
    if (first < 0)
        return EXIT_USAGE;
    if ((o.file != NULL) == (first < argc)) {
        fprintf(stderr, "reel run: give a description or -f FILE (one of them)\n\n%s", run_usage);
        return EXIT_USAGE;
    }
    char *origin = NULL;
    char *text = read_description(&o, argc - first, argv + first, &origin);
    if (!text)
        return EXIT_USAGE;

    run_state s = { 0 };
    GError *err = NULL;
    s.pipeline = reel_parse_launch(text, origin,
                                   reel_pipeline_params(.threads = o.threads, .queue_size = o.queue_size,
                                                        .trace = o.trace != NULL, .bus_handler = on_message,
                                                        .bus_user = &o),
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
        int64_t frames = frames_done(s.pipeline);
        fprintf(stderr, "reel: %s: %" G_GINT64_FORMAT " frames in %.3f s (%.1f fps)\n",
                exit_code == EXIT_OK ? "done" : "stopped", frames, secs, secs > 0 ? frames / secs : 0.0);
    }
    reel_pipeline_destroy(&s.pipeline);
    return exit_code;
}

// reel submit: queues a job for the workers (`reel worker`) and prints its id.
#include <stdio.h>
#include <string.h>

#include "fleet/jobs.h"
#include "reel/reel.h"
#include "tools/cli.h"

static const char submit_usage[] =
    "usage: reel submit [OPTIONS] DESCRIPTION... [OPTIONS]\n"
    "       reel submit [OPTIONS] -f FILE\n"
    "\n"
    "Options may come before or after the description; after '--' every word is\n"
    "the description's.\n"
    "\n"
    "  -f, --file FILE   read the description from FILE\n"
    "  --input NAME=VALUE\n"
    "                    replace {NAME} in the description (repeatable); {job} is the job's id\n"
    "  --live            a live job (a camera): kept running, moved to another worker when its own dies\n"
    "  --id ID           the job's id (default: a new one); the same id twice queues one job\n"
    "\n"
    REEL_NATS_USAGE
    "\n"
    "Prints the job's id. `reel jobs` shows its state.\n";

typedef struct submit_opts {
    const char *file, *id;
    reel_nats_settings nats;
    bool live;
    GPtrArray *inputs; // NAME, VALUE, ...
    GPtrArray *words;  // the description's, NULL-terminated
} submit_opts;

// Options may come before or after the description, as GNU tools take
// them; the other words are the description's, and so is every word after
// '--'. '-' alone and negative numbers (a value after a spaced '=') are
// words, not options.
static int parse_opts(int argc, char **argv, submit_opts *o)
{
    bool options = true;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char *eq = v ? strchr(v, '=') : NULL;
        if (!options || a[0] != '-' || !a[1] || g_ascii_isdigit(a[1])) {
            g_ptr_array_add(o->words, (char *)a);
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options = false;
            continue;
        }
        if (strcmp(a, "--live") == 0) {
            o->live = true;
            continue;
        }
        GError *err = NULL;
        int took = reel_nats_settings_option(&o->nats, a, v, &err);
        if (took < 0) {
            fprintf(stderr, "reel submit: %s\n\n%s", err->message, submit_usage);
            g_error_free(err);
            return -1;
        }
        if (took > 0) {
            i += took - 1;
            continue;
        }
        if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && v)
            o->file = v;
        else if (strcmp(a, "--id") == 0 && v && fleet_job_id_valid(v))
            o->id = v;
        else if (strcmp(a, "--input") == 0 && eq && eq > v) {
            g_ptr_array_add(o->inputs, g_strndup(v, (gsize)(eq - v)));
            g_ptr_array_add(o->inputs, g_strdup(eq + 1));
        } else {
            fprintf(stderr, "reel submit: bad option '%s%s%s'\n\n%s", a, v ? " " : "", v ? v : "", submit_usage);
            return -1;
        }
        i++;
    }
    g_ptr_array_add(o->words, NULL);
    return 0;
}

static int submit(const submit_opts *o, char *text)
{
    fleet_job job = { .kind = o->live ? FLEET_JOB_LIVE : FLEET_JOB_FILE, .pipeline = text };
    job.id = o->id ? g_strdup(o->id) : fleet_job_new_id();
    g_ptr_array_add(o->inputs, NULL);
    job.inputs = (char **)o->inputs->pdata;
    fleet f;
    GError *err = NULL;
    int rc = fleet_open(&f, &o->nats, "reel-submit", 0, &err);
    if (rc == 0)
        rc = fleet_submit(&f, &job, &err);
    fleet_close(&f);
    if (rc < 0) {
        fprintf(stderr, "reel submit: %s\n", err->message);
        g_error_free(err);
    } else {
        printf("%s\n", job.id);
    }
    g_free(job.id);
    return rc < 0 ? EXIT_RUNTIME : EXIT_OK;
}

int cmd_submit(int argc, char **argv)
{
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        fputs(submit_usage, stdout);
        return EXIT_OK;
    }
    submit_opts o = { .inputs = g_ptr_array_new_with_free_func(g_free), .words = g_ptr_array_new() };
    int parsed = parse_opts(argc, argv, &o);
    int code = EXIT_USAGE;
    char *text = NULL;
    GError *err = NULL;
    bool has_words = o.words->len > 1;
    if (parsed < 0) {
        // usage printed
    } else if ((o.file != NULL) == has_words) {
        fprintf(stderr, "reel submit: give a description or -f FILE (one of them)\n\n%s", submit_usage);
    } else if (reel_nats_settings_check(&o.nats, &err) < 0) {
        fprintf(stderr, "reel submit: %s\n", err->message);
        g_error_free(err);
    } else if (o.file && !g_file_get_contents(o.file, &text, NULL, &err)) {
        fprintf(stderr, "reel submit: %s\n", err->message);
        g_error_free(err);
    } else {
        if (!text)
            text = g_strjoinv(" ", (char **)o.words->pdata);
        code = submit(&o, text);
    }
    g_free(text);
    g_ptr_array_free(o.inputs, TRUE);
    g_ptr_array_free(o.words, TRUE);
    return code;
}

// reel jobs: the queue's jobs with their state, and the workers with their
// health (fleet/jobs.h), once or every second (--watch).
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/json_read.h"
#include "base/redact.h"
#include "fleet/jobs.h"
#include "base/json.h"
#include "reel/reel.h"
#include "tools/cli.h"

static const char jobs_usage[] =
    "usage: reel jobs [--nats URL] [--watch] [--json] [NATS OPTIONS]\n"
    "\n"
    "  --watch      show them again every second, until interrupted\n"
    "  --json       {\"jobs\": [...], \"workers\": [...]}: each job's state and each worker's\n"
    "               last health report as stored\n"
    "\n"
    REEL_NATS_USAGE;

// Every value of a bucket, parsed, oldest update first.
static GPtrArray *read_bucket(kvStore *kv)
{
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)reel_json_free);
    kvKeysList keys = { 0 };
    if (kvStore_Keys(&keys, kv, NULL) != NATS_OK)
        return out; // none yet
    for (int i = 0; i < keys.Count; i++) {
        kvEntry *e = NULL;
        if (kvStore_Get(&e, kv, keys.Keys[i]) != NATS_OK)
            continue; // deleted meanwhile
        reel_json_value *v = reel_json_parse(kvEntry_ValueString(e), (size_t)kvEntry_ValueLen(e), NULL);
        if (v)
            g_ptr_array_add(out, v);
        kvEntry_Destroy(e);
    }
    kvKeysList_Destroy(&keys);
    return out;
}

static gint by_update(gconstpointer a, gconstpointer b)
{
    double ta = reel_json_member_number(*(reel_json_value *const *)a, "updated", 0);
    double tb = reel_json_member_number(*(reel_json_value *const *)b, "updated", 0);
    return (ta > tb) - (ta < tb);
}

static void print_json(GString *out, const reel_json_value *v);

static void print_json(GString *out, const reel_json_value *v)
{
    switch (v->kind) {
    case REEL_JSON_NULL: g_string_append(out, "null"); break;
    case REEL_JSON_BOOL: g_string_append(out, v->boolean ? "true" : "false"); break;
    case REEL_JSON_NUMBER: {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        g_string_append(out, g_ascii_dtostr(buf, sizeof buf, v->number));
        break;
    }
    case REEL_JSON_STRING: reel_json_string(out, v->string); break;
    case REEL_JSON_ARRAY:
    case REEL_JSON_OBJECT:
        g_string_append_c(out, v->kind == REEL_JSON_ARRAY ? '[' : '{');
        for (guint i = 0; i < v->items->len; i++) {
            g_string_append(out, i ? ", " : "");
            if (v->keys) {
                reel_json_value key = { .kind = REEL_JSON_STRING, .string = g_ptr_array_index(v->keys, i) };
                print_json(out, &key);
                g_string_append(out, ": ");
            }
            print_json(out, g_ptr_array_index(v->items, i));
        }
        g_string_append_c(out, v->kind == REEL_JSON_ARRAY ? ']' : '}');
        break;
    }
}

static void print_list_json(GString *out, const char *name, GPtrArray *items)
{
    g_string_append_printf(out, "\"%s\": [", name);
    for (guint i = 0; i < items->len; i++) {
        g_string_append(out, i ? ", " : "");
        print_json(out, g_ptr_array_index(items, i));
    }
    g_string_append_c(out, ']');
}

// A string member as it may be shown on a terminal: control characters
// escaped, URL credentials hidden. Kept in `keep` until the table is out.
static const char *field(GPtrArray *keep, const reel_json_value *v, const char *key, const char *def)
{
    char *hidden = reel_redact(reel_json_member_string(v, key, def), false);
    GString *s = g_string_new(NULL);
    reel_escape_control(s, hidden);
    g_free(hidden);
    g_ptr_array_add(keep, s->str);
    return g_string_free(s, FALSE);
}

static void print_tables(GPtrArray *jobs, GPtrArray *workers)
{
    GPtrArray *keep = g_ptr_array_new_with_free_func(g_free);
    printf("%-20s %-5s %-8s %-20s %8s  %s\n", "JOB", "KIND", "STATE", "WORKER", "ATTEMPTS", "ERROR");
    for (guint i = 0; i < jobs->len; i++) {
        const reel_json_value *j = g_ptr_array_index(jobs, i);
        printf("%-20s %-5s %-8s %-20s %8.0f  %s\n", field(keep, j, "id", "?"), field(keep, j, "kind", "?"),
               field(keep, j, "state", "?"), field(keep, j, "worker", ""), reel_json_member_number(j, "attempts", 0),
               field(keep, j, "error", ""));
    }
    printf("\n%-20s %-10s %8s %6s %6s  %s\n", "WORKER", "DEVICE", "RUNNING", "DONE", "FAILED", "JOBS (frames/s)");
    for (guint i = 0; i < workers->len; i++) {
        const reel_json_value *w = g_ptr_array_index(workers, i);
        const reel_json_value *running = reel_json_member(w, "jobs");
        GString *list = g_string_new(NULL);
        for (guint k = 0; running && running->kind == REEL_JSON_ARRAY && k < running->items->len; k++) {
            const reel_json_value *r = g_ptr_array_index(running->items, k);
            g_string_append_printf(list, "%s%s %.1f", k ? ", " : "", field(keep, r, "id", "?"),
                                   reel_json_member_number(r, "fps", 0));
        }
        const reel_json_value *draining = reel_json_member(w, "draining");
        printf("%-20s %-10s %8.0f %6.0f %6.0f  %s%s\n", field(keep, w, "name", "?"), field(keep, w, "device", "?"),
               reel_json_member_number(w, "jobs_running", 0), reel_json_member_number(w, "jobs_done", 0),
               reel_json_member_number(w, "jobs_failed", 0), list->str,
               draining && draining->boolean ? " (stopping)" : "");
        g_string_free(list, TRUE);
    }
    g_ptr_array_free(keep, TRUE);
}

static void show(fleet *f, bool json)
{
    GPtrArray *jobs = read_bucket(f->states), *workers = read_bucket(f->workers);
    g_ptr_array_sort(jobs, by_update);
    if (json) {
        GString *out = g_string_new("{");
        print_list_json(out, "jobs", jobs);
        g_string_append(out, ", ");
        print_list_json(out, "workers", workers);
        g_string_append(out, "}");
        puts(out->str);
        g_string_free(out, TRUE);
    } else {
        print_tables(jobs, workers);
    }
    fflush(stdout);
    g_ptr_array_free(jobs, TRUE);
    g_ptr_array_free(workers, TRUE);
}

int cmd_jobs(int argc, char **argv)
{
    reel_nats_settings nats = { 0 };
    bool watch = false, json = false;
    GError *err = NULL;
    for (int i = 0; i < argc; i++) {
        int took = reel_nats_settings_option(&nats, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &err);
        if (took < 0) {
            fprintf(stderr, "reel jobs: %s\n\n%s", err->message, jobs_usage);
            g_error_free(err);
            return EXIT_USAGE;
        } else if (took > 0) {
            i += took - 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(jobs_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(argv[i], "--watch") == 0) {
            watch = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            fprintf(stderr, "reel jobs: bad option '%s'\n\n%s", argv[i], jobs_usage);
            return EXIT_USAGE;
        }
    }
    if (reel_nats_settings_check(&nats, &err) < 0) {
        fprintf(stderr, "reel jobs: %s\n", err->message);
        g_error_free(err);
        return EXIT_USAGE;
    }
    fleet f;
    if (fleet_open(&f, &nats, "reel-jobs", 0, &err) < 0) {
        fprintf(stderr, "reel jobs: %s\n", err->message);
        g_error_free(err);
        fleet_close(&f);
        return EXIT_RUNTIME;
    }
    do {
        if (watch && isatty(STDOUT_FILENO))
            fputs("\033[H\033[2J", stdout); // from the top of a cleared screen
        show(&f, json);
        if (watch)
            g_usleep(G_USEC_PER_SEC);
    } while (watch);
    fleet_close(&f);
    return EXIT_OK;
}

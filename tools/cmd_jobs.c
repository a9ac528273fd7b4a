// reel jobs: the queue's jobs with their state, and the workers with their
// health (fleet/jobs.h), once or every second (--watch).
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/json_read.h"
#include "fleet/jobs.h"
#include "base/json.h"
#include "reel/reel.h"
#include "tools/cli.h"

static const char jobs_usage[] =
    "usage: reel jobs [--nats URL] [--watch] [--json]\n"
    "\n"
    "  --nats URL   the NATS server (default $REEL_NATS_URL, else nats://127.0.0.1:4222)\n"
    "  --watch      show them again every second, until interrupted\n"
    "  --json       {\"jobs\": [...], \"workers\": [...]}: each job's state and each worker's\n"
    "               last health report as stored\n";

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

static void print_tables(GPtrArray *jobs, GPtrArray *workers)
{
    printf("%-20s %-5s %-8s %-20s %8s  %s\n", "JOB", "KIND", "STATE", "WORKER", "ATTEMPTS", "ERROR");
    for (guint i = 0; i < jobs->len; i++) {
        const reel_json_value *j = g_ptr_array_index(jobs, i);
        printf("%-20s %-5s %-8s %-20s %8.0f  %s\n", reel_json_member_string(j, "id", "?"),
               reel_json_member_string(j, "kind", "?"), reel_json_member_string(j, "state", "?"),
               reel_json_member_string(j, "worker", ""), reel_json_member_number(j, "attempts", 0),
               reel_json_member_string(j, "error", ""));
    }
    printf("\n%-20s %-10s %8s %6s %6s  %s\n", "WORKER", "DEVICE", "RUNNING", "DONE", "FAILED", "JOBS (frames/s)");
    for (guint i = 0; i < workers->len; i++) {
        const reel_json_value *w = g_ptr_array_index(workers, i);
        const reel_json_value *running = reel_json_member(w, "jobs");
        GString *list = g_string_new(NULL);
        for (guint k = 0; running && running->kind == REEL_JSON_ARRAY && k < running->items->len; k++) {
            const reel_json_value *r = g_ptr_array_index(running->items, k);
            g_string_append_printf(list, "%s%s %.1f", k ? ", " : "", reel_json_member_string(r, "id", "?"),
                                   reel_json_member_number(r, "fps", 0));
        }
        const reel_json_value *draining = reel_json_member(w, "draining");
        printf("%-20s %-10s %8.0f %6.0f %6.0f  %s%s\n", reel_json_member_string(w, "name", "?"),
               reel_json_member_string(w, "device", "?"), reel_json_member_number(w, "jobs_running", 0),
               reel_json_member_number(w, "jobs_done", 0), reel_json_member_number(w, "jobs_failed", 0), list->str,
               draining && draining->boolean ? " (stopping)" : "");
        g_string_free(list, TRUE);
    }
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
    const char *url = NULL;
    bool watch = false, json = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(jobs_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(argv[i], "--nats") == 0 && i + 1 < argc) {
            url = argv[++i];
        } else if (strcmp(argv[i], "--watch") == 0) {
            watch = true;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            fprintf(stderr, "reel jobs: bad option '%s'\n\n%s", argv[i], jobs_usage);
            return EXIT_USAGE;
        }
    }
    fleet f;
    GError *err = NULL;
    if (fleet_open(&f, url, "reel-jobs", 0, &err) < 0) {
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

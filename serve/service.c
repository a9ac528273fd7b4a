// The hosted pipelines by id (serve/service.h).
#include "serve/service.h"

#include <stdio.h>
#include <string.h>

#include <gio/gio.h>

#include "reel/reel.h"

G_DEFINE_QUARK(reel-serve-error-quark, serve_error)

struct serve_service {
    GMutex lock;
    GCond stopped;     // a removal finished
    GPtrArray *hosted; // serve_hosted *, in the order added
    int next_id;
    int removing;      // removals whose pipeline is still stopping
};

serve_service *serve_service_new(void)
{
    serve_service *s = g_new0(serve_service, 1);
    g_mutex_init(&s->lock);
    g_cond_init(&s->stopped);
    s->hosted = g_ptr_array_new();
    s->next_id = 1;
    return s;
}

void serve_service_free(serve_service **sp)
{
    serve_service *s = *sp;
    if (!s)
        return;
    // All are asked first, so that they wind down together: a slow sink
    // does not hold up the others' ends.
    for (guint i = 0; i < s->hosted->len; i++)
        serve_hosted_ask_stop(s->hosted->pdata[i]);
    for (guint i = 0; i < s->hosted->len; i++) {
        serve_hosted *h = s->hosted->pdata[i];
        serve_hosted_stop(&h);
    }
    g_mutex_lock(&s->lock);
    while (s->removing > 0)
        g_cond_wait(&s->stopped, &s->lock);
    g_mutex_unlock(&s->lock);
    g_ptr_array_free(s->hosted, TRUE);
    g_cond_clear(&s->stopped);
    g_mutex_clear(&s->lock);
    g_free(s);
    *sp = NULL;
}

bool serve_id_valid(const char *id)
{
    size_t n = id ? strlen(id) : 0;
    if (n < 1 || n > 64)
        return false;
    for (const char *c = id; *c; c++)
        if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_')
            return false;
    return true;
}

static serve_hosted *find_locked(serve_service *s, const char *id)
{
    for (guint i = 0; i < s->hosted->len; i++)
        if (strcmp(serve_hosted_id(s->hosted->pdata[i]), id) == 0)
            return s->hosted->pdata[i];
    return NULL;
}

const char *serve_service_add(serve_service *s, const char *id, const char *text, const char *origin,
                              GError **error)
{
    if (id && !serve_id_valid(id)) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "pipeline id '%s': 1 to 64 letters, digits, '-' and '_'", id);
        return NULL;
    }
    // Parsed here, so that a wrong description is the request's error; the
    // runner parses its own copy each time it (re)starts.
    reel_pipeline *check = reel_parse_launch(text, origin, NULL, error);
    if (!check)
        return NULL;
    reel_pipeline_destroy(&check);
    g_mutex_lock(&s->lock);
    char *made = NULL;
    while (!id && find_locked(s, made = g_strdup_printf("p%d", s->next_id++)))
        g_free(made);
    if (!id)
        id = made;
    const char *added = NULL;
    if (find_locked(s, id)) {
        g_set_error(error, SERVE_ERROR, SERVE_ERROR_EXISTS, "a pipeline '%s' exists already", id);
    } else {
        serve_hosted *h = serve_hosted_start(id, text, origin);
        g_ptr_array_add(s->hosted, h);
        added = serve_hosted_id(h);
    }
    g_mutex_unlock(&s->lock);
    g_free(made);
    return added;
}

typedef struct removal {
    serve_service *service;
    serve_hosted *hosted;
    void (*done)(gpointer data);
    gpointer data;
} removal;

static void removal_done(GObject *source, GAsyncResult *result, gpointer data)
{
    (void)source;
    (void)result;
    removal *r = data;
    r->done(r->data);
    g_free(r);
}

static void removal_run(GTask *task, gpointer source, gpointer data, GCancellable *cancel)
{
    (void)source;
    (void)cancel;
    removal *r = data;
    serve_hosted_stop(&r->hosted);
    g_mutex_lock(&r->service->lock);
    r->service->removing--;
    g_cond_broadcast(&r->service->stopped);
    g_mutex_unlock(&r->service->lock);
    g_task_return_boolean(task, TRUE);
}

bool serve_service_remove(serve_service *s, const char *id, void (*done)(gpointer data), gpointer data)
{
    g_mutex_lock(&s->lock);
    serve_hosted *h = find_locked(s, id);
    if (h) {
        g_ptr_array_remove(s->hosted, h);
        s->removing++;
    }
    g_mutex_unlock(&s->lock);
    if (!h)
        return false;
    // Stopped off the caller's thread: the server answers other requests
    // while the pipeline's sinks finalize.
    removal *r = g_new0(removal, 1);
    *r = (removal){ .service = s, .hosted = h, .done = done, .data = data };
    GTask *task = g_task_new(NULL, NULL, removal_done, r);
    g_task_set_task_data(task, r, NULL); // freed by removal_done, after the run
    g_task_run_in_thread(task, removal_run);
    g_object_unref(task);
    return true;
}

static int compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int serve_service_load_dir(serve_service *s, const char *dir, GError **error)
{
    GDir *d = g_dir_open(dir, 0, error);
    if (!d)
        return -1;
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (const char *n; (n = g_dir_read_name(d));)
        if (g_str_has_suffix(n, ".reel"))
            g_ptr_array_add(names, g_strdup(n));
    g_dir_close(d);
    g_ptr_array_sort(names, compare_names);
    int started = 0;
    for (guint i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        char *path = g_build_filename(dir, name, NULL), *text = NULL, *id = g_strndup(name, strlen(name) - 5);
        GError *err = NULL;
        if (!g_file_get_contents(path, &text, NULL, &err) || !serve_service_add(s, id, text, path, &err)) {
            fprintf(stderr, "reel serve: %s: %s\n", path, err->message);
            g_error_free(err);
        } else {
            fprintf(stderr, "reel serve: started %s (%s)\n", id, path);
            started++;
        }
        g_free(text);
        g_free(id);
        g_free(path);
    }
    g_ptr_array_free(names, TRUE);
    return started;
}

void serve_service_each(serve_service *s, void (*fn)(serve_hosted *h, void *data), void *data)
{
    g_mutex_lock(&s->lock);
    for (guint i = 0; i < s->hosted->len; i++)
        fn(s->hosted->pdata[i], data);
    g_mutex_unlock(&s->lock);
}

void serve_service_with(serve_service *s, const char *id, void (*fn)(serve_hosted *h, void *data), void *data)
{
    g_mutex_lock(&s->lock);
    fn(find_locked(s, id), data);
    g_mutex_unlock(&s->lock);
}

// reel serve: hosts pipelines for as long as it runs, behind an HTTP API
// (serve/http.h). SIGTERM or SIGINT stops every pipeline cleanly (sources
// stop, sinks finalize) and exits.
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>

#include "base/read_file.h"
#include "serve/http.h"
#include "serve/service.h"
#include "tools/cli.h"

static const char serve_usage[] =
    "usage: reel serve [OPTIONS]\n"
    "\n"
    "  --listen ADDR:PORT   where the HTTP API listens (default 127.0.0.1:8080; PORT 0: any free one)\n"
    "  --config DIR         start every DIR/NAME.reel as pipeline NAME at launch\n"
    "  --token-file FILE    every request must carry 'Authorization: Bearer TOKEN', TOKEN being the\n"
    "                       file's first line; needed to listen beyond loopback\n"
    "  --tls-cert FILE      serve HTTPS with this certificate (PEM) ...\n"
    "  --tls-key FILE       ... and its key\n"
    "\n"
    "API: GET /pipelines, POST /pipelines {\"description\": ...}, GET|DELETE /pipelines/ID,\n"
    "PATCH /pipelines/ID/elements/NAME {\"prop\": value}, GET /metrics (Prometheus), GET / (a page).\n";

static gboolean on_signal(gpointer loop)
{
    g_main_loop_quit(loop);
    return G_SOURCE_CONTINUE; // removed once the loop has ended
}

// The token: the file's first line, without its line ending.
static char *read_token(const char *path, GError **error)
{
    char *text = NULL;
    if (reel_read_text_file(path, "token file", &text, error) != 0)
        return NULL;
    text[strcspn(text, "\r\n")] = '\0';
    if (!*text) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "token file '%s': its first line is empty", path);
        g_free(text);
        return NULL;
    }
    return text;
}

int cmd_serve(int argc, char **argv)
{
    serve_http_params hp = { .listen = "127.0.0.1:8080" };
    const char *config = NULL, *token_file = NULL;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            fputs(serve_usage, stdout);
            return EXIT_OK;
        }
        const char **slot = strcmp(a, "--listen") == 0       ? &hp.listen
                            : strcmp(a, "--config") == 0     ? &config
                            : strcmp(a, "--token-file") == 0 ? &token_file
                            : strcmp(a, "--tls-cert") == 0   ? &hp.tls_cert
                            : strcmp(a, "--tls-key") == 0    ? &hp.tls_key
                                                             : NULL;
        if (!slot || !v) {
            fprintf(stderr, "reel serve: %s '%s'\n\n%s", slot ? "no value for" : "unknown option", a, serve_usage);
            return EXIT_USAGE;
        }
        *slot = v;
        i++;
    }
    if (!hp.tls_cert != !hp.tls_key) {
        fprintf(stderr, "reel serve: --tls-cert and --tls-key go together\n");
        return EXIT_USAGE;
    }
    GError *err = NULL;
    char *token = token_file ? read_token(token_file, &err) : NULL;
    if (token_file && !token) {
        fprintf(stderr, "reel serve: %s\n", err->message);
        g_error_free(err);
        return EXIT_USAGE;
    }
    hp.token = token;
    serve_service *service = serve_service_new();
    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
    serve_http *http = serve_http_start(service, &hp, &err);
    int status = EXIT_OK;
    if (!http) {
        fprintf(stderr, "reel serve: %s\n", err->message);
        g_clear_error(&err);
        status = EXIT_USAGE;
    } else if (config && serve_service_load_dir(service, config, &err) < 0) {
        fprintf(stderr, "reel serve: --config %s: %s\n", config, err->message);
        g_clear_error(&err);
        status = EXIT_USAGE;
    } else {
        fprintf(stderr, "reel serve: listening on %s://%s (port %d)\n", hp.tls_cert ? "https" : "http", hp.listen,
                serve_http_port(http));
        guint term = g_unix_signal_add(SIGTERM, on_signal, loop), intr = g_unix_signal_add(SIGINT, on_signal, loop);
        g_main_loop_run(loop);
        g_source_remove(term);
        g_source_remove(intr);
        fprintf(stderr, "reel serve: stopping\n");
    }
    serve_http_stop(&http);
    serve_service_free(&service);
    g_main_loop_unref(loop);
    if (token)
        explicit_bzero(token, strlen(token));
    g_free(token);
    if (status == EXIT_OK)
        fprintf(stderr, "reel serve: stopped\n");
    return status;
}

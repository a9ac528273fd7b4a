// Fuzz target: reel serve's request bodies (serve/request.c). The input is
// read as JSON (base/json_read.c); an object goes to each of the checks a
// handler makes. Whatever a check accepts must be what it promises: a
// description string; stream values in pairs, "url" first and not empty,
// names of the allowed form and never "stream", values bounded and without
// control characters, at most SERVE_MAX_VALUES; one property pair per
// member. Whatever it refuses comes with a message.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_read.h"
#include "serve/request.h"

static void require(bool ok)
{
    if (!ok)
        abort();
}

static bool name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len < 1 || len > 32 || strcmp(n, "stream") == 0)
        return false;
    for (; *n; n++)
        if (!g_ascii_isalnum(*n) && *n != '-' && *n != '_')
            return false;
    return true;
}

static bool value_ok(const char *v)
{
    if (strlen(v) > SERVE_MAX_VALUE_BYTES)
        return false;
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return false;
    return true;
}

static void check_object(const reel_json_value *v)
{
    GError *err = NULL;
    serve_pipeline_request req;
    if (serve_request_pipeline(v, &req, &err))
        require(req.description != NULL && (!req.id || reel_json_member(v, "id")));
    else
        require(err && *err->message);
    g_clear_error(&err);

    char **values = serve_request_stream_values(v, &err);
    if (values) {
        guint n = g_strv_length(values);
        require(!err && n % 2 == 0 && n >= 2 && n / 2 <= SERVE_MAX_VALUES);
        require(strcmp(values[0], "url") == 0 && *values[1]);
        for (guint i = 0; i < n; i += 2)
            require((i == 0 || name_ok(values[i])) && value_ok(values[i + 1]));
    } else {
        require(err && *err->message);
    }
    g_strfreev(values);
    g_clear_error(&err);

    char **props = serve_request_properties(v, &err);
    if (props)
        require(!err && g_strv_length(props) == 2 * v->items->len && v->items->len > 0);
    else
        require(err && *err->message);
    g_strfreev(props);
    g_clear_error(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reel_json_value *v = reel_json_parse((const char *)data, size, NULL);
    if (v && v->kind == REEL_JSON_OBJECT)
        check_object(v);
    if (v)
        reel_json_free(v);
    return 0;
}

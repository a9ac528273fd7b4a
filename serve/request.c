// Request bodies checked (serve/request.h).
#include "serve/request.h"

#include <string.h>

#include "reel/error.h"

static bool fail(GError **error, const char *what)
{
    g_set_error_literal(error, REEL_ERROR, REEL_EINVAL, what);
    return false;
}

bool serve_request_pipeline(const reel_json_value *body, serve_pipeline_request *out, GError **error)
{
    const reel_json_value *text = reel_json_member(body, "description"), *id = reel_json_member(body, "id");
    if (!text || text->kind != REEL_JSON_STRING || (id && id->kind != REEL_JSON_STRING))
        return fail(error, "the body is {\"description\": \"...\"} (a description or a .reel file's text), "
                           "with an \"id\" string if wanted");
    *out = (serve_pipeline_request){ .description = text->string, .id = id ? id->string : NULL };
    return true;
}

static bool name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > 32)
        return false;
    for (const char *c = name; *c; c++)
        if (!g_ascii_isalnum(*c) && *c != '-' && *c != '_')
            return false;
    return true;
}

static bool has_control(const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return true;
    return false;
}

char **serve_request_stream_values(const reel_json_value *body, GError **error)
{
    const reel_json_value *url = reel_json_member(body, "url");
    if (!url || url->kind != REEL_JSON_STRING || !*url->string) {
        fail(error, "the body is {\"url\": \"...\"}, with other strings the pipeline's stream-template uses "
                    "as {NAME} if wanted");
        return NULL;
    }
    if (body->items->len > SERVE_MAX_VALUES) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "at most %d values for a stream", SERVE_MAX_VALUES);
        return NULL;
    }
    GStrvBuilder *b = g_strv_builder_new();
    g_strv_builder_add_many(b, "url", url->string, NULL);
    bool ok = true;
    for (guint i = 0; i < body->items->len && ok; i++) {
        const char *key = body->keys->pdata[i];
        const reel_json_value *v = body->items->pdata[i];
        if (!name_valid(key) || strcmp(key, "stream") == 0) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL,
                        "value names are 1 to 32 letters, digits, '-' and '_', and not 'stream' (reel gives it)");
            ok = false;
        } else if (v->kind != REEL_JSON_STRING || has_control(v->string)
                   || strlen(v->string) > SERVE_MAX_VALUE_BYTES) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL,
                        "value '%s': a string of at most %d bytes without control characters", key,
                        SERVE_MAX_VALUE_BYTES);
            ok = false;
        } else if (strcmp(key, "url") != 0) {
            g_strv_builder_add_many(b, key, v->string, NULL);
        }
    }
    char **values = g_strv_builder_end(b);
    g_strv_builder_unref(b);
    if (!ok)
        g_clear_pointer(&values, g_strfreev);
    return values;
}

char **serve_request_properties(const reel_json_value *body, GError **error)
{
    if (body->items->len == 0) {
        fail(error, "the body is {\"PROPERTY\": VALUE, ...}: at least one property to set");
        return NULL;
    }
    GStrvBuilder *b = g_strv_builder_new();
    bool ok = true;
    for (guint i = 0; i < body->items->len && ok; i++) {
        const char *key = body->keys->pdata[i];
        const reel_json_value *v = body->items->pdata[i];
        char num[G_ASCII_DTOSTR_BUF_SIZE];
        const char *value = v->kind == REEL_JSON_STRING ? v->string
                            : v->kind == REEL_JSON_NUMBER ? g_ascii_dtostr(num, sizeof num, v->number)
                            : v->kind == REEL_JSON_BOOL   ? (v->boolean ? "true" : "false")
                                                          : NULL;
        if (!value) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "property '%s': a string, number or boolean", key);
            ok = false;
        } else {
            g_strv_builder_add_many(b, key, value, NULL);
        }
    }
    char **props = g_strv_builder_end(b);
    g_strv_builder_unref(b);
    if (!ok)
        g_clear_pointer(&props, g_strfreev);
    return props;
}

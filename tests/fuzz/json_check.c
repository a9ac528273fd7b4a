#include "json_check.h"

#include "base/json_read.h"

static void collect(const reel_json_value *v, GArray *scalars)
{
    json_scalar s = { 0 };
    switch (v->kind) {
    case REEL_JSON_ARRAY:
    case REEL_JSON_OBJECT:
        for (guint i = 0; i < v->items->len; i++)
            collect(g_ptr_array_index(v->items, i), scalars);
        return;
    case REEL_JSON_NUMBER: s = (json_scalar){ .kind = JSON_NUMBER, .number = v->number }; break;
    case REEL_JSON_STRING: s = (json_scalar){ .kind = JSON_STRING, .string = g_strdup(v->string) }; break;
    case REEL_JSON_NULL: s.kind = JSON_NULL; break;
    case REEL_JSON_BOOL: s.kind = JSON_BOOL; break;
    }
    g_array_append_val(scalars, s);
}

bool json_check(const char *text, size_t len, GArray *scalars, GError **error)
{
    reel_json_value *v = reel_json_parse(text, len, error);
    if (!v)
        return false;
    collect(v, scalars);
    reel_json_free(v);
    return true;
}

void json_scalars_free(GArray *scalars)
{
    for (guint i = 0; scalars && i < scalars->len; i++)
        g_free(g_array_index(scalars, json_scalar, i).string);
    if (scalars)
        g_array_free(scalars, TRUE);
}

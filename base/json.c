#include "base/json.h"
#include "reel/error.h"

void reel_json_string(GString *out, const char *s)
{
    // JSON text is UTF-8: bytes that are not (a file name, a label file in
    // another encoding) become U+FFFD rather than make the whole text invalid.
    char *valid = s && !g_utf8_validate(s, -1, NULL) ? g_utf8_make_valid(s, -1) : NULL;
    g_string_append_c(out, '"');
    for (const unsigned char *c = (const unsigned char *)(valid ? valid : s ? s : ""); *c; c++) {
        switch (*c) {
        case '"': g_string_append(out, "\\\""); break;
        case '\\': g_string_append(out, "\\\\"); break;
        case '\n': g_string_append(out, "\\n"); break;
        case '\t': g_string_append(out, "\\t"); break;
        case '\r': g_string_append(out, "\\r"); break;
        default:
            if (*c < 0x20 || *c == 0x7f)
                g_string_append_printf(out, "\\u%04x", *c);
            else
                g_string_append_c(out, (char)*c);
        }
    }
    g_string_append_c(out, '"');
    g_free(valid);
}

int reel_write_file_atomically(const char *path, const GString *text, GError **error)
{
    GError *err = NULL;
    if (!g_file_set_contents(path, text->str, (gssize)text->len, &err)) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s", err->message);
        g_error_free(err);
        return REEL_EIO;
    }
    return 0;
}

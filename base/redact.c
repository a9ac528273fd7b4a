// URL credentials out of messages, control characters out of logs.
#include "base/redact.h"

#include <string.h>

// Where a URL's authority ends: the first '/', '?', '#', space, quote or
// bracket after "://".
static size_t authority_length(const char *s)
{
    return strcspn(s, "/?#\"'<> \t\r\n()[]{},;");
}

static void hide(GString *out, size_t n, bool keep_width)
{
    if (keep_width)
        for (size_t i = 0; i < n; i++)
            g_string_append_c(out, '*');
    else if (n)
        g_string_append(out, "***");
}

char *reel_redact(const char *text, bool keep_width)
{
    if (!text)
        return NULL;
    GString *out = g_string_sized_new(strlen(text));
    const char *p = text;
    for (const char *mark; (mark = strstr(p, "://")) != NULL;) {
        const char *auth = mark + 3;
        size_t n = authority_length(auth);
        const char *at = g_strrstr_len(auth, (gssize)n, "@");
        g_string_append_len(out, p, auth - p);
        if (at) {
            const char *colon = memchr(auth, ':', (size_t)(at - auth));
            if (colon) {
                g_string_append_len(out, auth, colon + 1 - auth);
                hide(out, (size_t)(at - colon - 1), keep_width);
            } else {
                hide(out, (size_t)(at - auth), keep_width);
            }
            g_string_append_len(out, at, auth + n - at);
        } else {
            g_string_append_len(out, auth, n);
        }
        p = auth + n;
    }
    g_string_append(out, p);
    return g_string_free(out, FALSE);
}

void reel_escape_control(GString *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        if (*c == '\\')
            g_string_append(out, "\\\\");
        else if (*c == '\n')
            g_string_append(out, "\\n");
        else if (*c == '\t')
            g_string_append(out, "\\t");
        else if (*c == '\r')
            g_string_append(out, "\\r");
        else if (*c < 0x20 || *c == 0x7f)
            g_string_append_printf(out, "\\x%02x", *c);
        else
            g_string_append_c(out, (char)*c);
    }
}

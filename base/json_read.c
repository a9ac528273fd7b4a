// A recursive-descent JSON reader (RFC 8259), depth-limited.
#include "base/json_read.h"

#include <stdlib.h>
#include <string.h>

#include "reel/error.h"

enum { MAX_DEPTH = 32 };

typedef struct reader {
    const char *p, *start, *end;
    GError **error;
} reader;

static reel_json_value *parse_value(reader *r, int depth);

static void *bad(reader *r, const char *what)
{
    if (r->error && !*r->error)
        g_set_error(r->error, REEL_ERROR, REEL_EFORMAT, "not JSON: %s at byte %td", what, r->p - r->start);
    return NULL;
}

static void skip_space(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static bool take(reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return false;
    r->p += n;
    return true;
}

static reel_json_value *node(reel_json_kind kind)
{
    reel_json_value *v = g_new0(reel_json_value, 1);
    v->kind = kind;
    return v;
}

static int hex4(reader *r)
{
    if (r->end - r->p < 4)
        return -1;
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int d = g_ascii_xdigit_value(r->p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    r->p += 4;
    return v;
}

// A string after its opening quote; NULL on error.
static char *parse_string(reader *r)
{
    GString *s = g_string_new(NULL);
    while (r->p < r->end && *r->p != '"') {
        unsigned char c = (unsigned char)*r->p++;
        if (c < 0x20)
            return g_string_free(s, TRUE), bad(r, "a control character in a string");
        if (c != '\\') {
            g_string_append_c(s, (char)c);
            continue;
        }
        if (r->p >= r->end)
            break;
        char esc = *r->p++;
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *k = esc ? strchr(from, esc) : NULL;
        if (k) {
            g_string_append_c(s, to[k - from]);
            continue;
        }
        int u = esc == 'u' ? hex4(r) : -1;
        if (u >= 0xD800 && u < 0xDC00 && take(r, "\\u")) { // a surrogate pair
            int lo = hex4(r);
            u = lo >= 0xDC00 && lo < 0xE000 ? 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00) : -1;
        }
        if (u <= 0 || (u >= 0xD800 && u < 0xE000)) // a NUL would cut the text short
            return g_string_free(s, TRUE), bad(r, "a bad escape in a string");
        g_string_append_unichar(s, (gunichar)u);
    }
    if (r->p >= r->end)
        return g_string_free(s, TRUE), bad(r, "an unterminated string");
    r->p++;
    if (!g_utf8_validate(s->str, (gssize)s->len, NULL))
        return g_string_free(s, TRUE), bad(r, "a string that is not UTF-8");
    return g_string_free(s, FALSE);
}

static bool digits(reader *r)
{
    const char *from = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
        r->p++;
    return r->p > from;
}

// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, as RFC 8259 has it.
static reel_json_value *parse_number(reader *r)
{
    const char *from = r->p;
    take(r, "-");
    if (r->p < r->end && *r->p == '0')
        r->p++;
    else if (!digits(r))
        return bad(r, "a bad number");
    if (take(r, ".") && !digits(r))
        return bad(r, "a bad number");
    if (take(r, "e") || take(r, "E")) {
        if (!take(r, "+"))
            take(r, "-");
        if (!digits(r))
            return bad(r, "a bad number");
    }
    char *text = g_strndup(from, (gsize)(r->p - from));
    reel_json_value *n = node(REEL_JSON_NUMBER);
    n->number = g_ascii_strtod(text, NULL);
    g_free(text);
    return n;
}

// An array or object after its opening bracket.
static reel_json_value *parse_container(reader *r, int depth, bool object)
{
    reel_json_value *v = node(object ? REEL_JSON_OBJECT : REEL_JSON_ARRAY);
    v->items = g_ptr_array_new_with_free_func((GDestroyNotify)reel_json_free);
    if (object)
        v->keys = g_ptr_array_new_with_free_func(g_free);
    char close = object ? '}' : ']';
    skip_space(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return v;
    }
    for (;;) {
        skip_space(r);
        if (object) {
            char *key = r->p < r->end && *r->p == '"' ? (r->p++, parse_string(r)) : bad(r, "a missing key");
            if (!key)
                return reel_json_free(v), NULL;
            g_ptr_array_add(v->keys, key);
            skip_space(r);
            if (!take(r, ":"))
                return reel_json_free(v), bad(r, "a missing ':'");
        }
        reel_json_value *item = parse_value(r, depth + 1);
        if (!item) {
            if (object)
                g_ptr_array_remove_index(v->keys, v->keys->len - 1);
            return reel_json_free(v), NULL;
        }
        g_ptr_array_add(v->items, item);
        skip_space(r);
        if (take(r, ","))
            continue;
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return v;
        }
        return reel_json_free(v), bad(r, object ? "a missing ',' or '}'" : "a missing ',' or ']'");
    }
}

static reel_json_value *parse_value(reader *r, int depth)
{
    if (depth > MAX_DEPTH)
        return bad(r, "nesting too deep");
    skip_space(r);
    if (r->p >= r->end)
        return bad(r, "a missing value");
    if (take(r, "null"))
        return node(REEL_JSON_NULL);
    if (take(r, "true") || take(r, "false")) {
        reel_json_value *b = node(REEL_JSON_BOOL);
        b->boolean = r->p[-1] == 'e' && r->p[-2] == 'u';
        return b;
    }
    char c = *r->p;
    if (c == '"') {
        r->p++;
        char *s = parse_string(r);
        if (!s)
            return NULL;
        reel_json_value *v = node(REEL_JSON_STRING);
        v->string = s;
        return v;
    }
    if (c == '[' || c == '{') {
        r->p++;
        return parse_container(r, depth, c == '{');
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(r);
    return bad(r, "an unexpected character");
}

reel_json_value *reel_json_parse(const char *text, size_t len, GError **error)
{
    reader r = { .p = text, .start = text, .end = text + len, .error = error };
    reel_json_value *v = parse_value(&r, 0);
    skip_space(&r);
    if (v && r.p != r.end) {
        reel_json_free(v);
        return bad(&r, "text after the value");
    }
    return v;
}

void reel_json_free(reel_json_value *v)
{
    if (!v)
        return;
    g_free(v->string);
    if (v->items)
        g_ptr_array_free(v->items, TRUE);
    if (v->keys)
        g_ptr_array_free(v->keys, TRUE);
    g_free(v);
}

const reel_json_value *reel_json_member(const reel_json_value *v, const char *key)
{
    if (!v || v->kind != REEL_JSON_OBJECT)
        return NULL;
    for (guint i = v->keys->len; i-- > 0;) // the last of duplicate keys wins
        if (strcmp(g_ptr_array_index(v->keys, i), key) == 0)
            return g_ptr_array_index(v->items, i);
    return NULL;
}

const char *reel_json_member_string(const reel_json_value *v, const char *key, const char *fallback)
{
    const reel_json_value *m = reel_json_member(v, key);
    return m && m->kind == REEL_JSON_STRING ? m->string : fallback;
}

double reel_json_member_number(const reel_json_value *v, const char *key, double fallback)
{
    const reel_json_value *m = reel_json_member(v, key);
    return m && m->kind == REEL_JSON_NUMBER ? m->number : fallback;
}

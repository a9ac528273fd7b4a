// Text pipeline descriptions: a hand-written scanner and parser that turns
// text into a reel_parse_description, plus the positioned error messages
// shared with the builder. Nothing here looks up element classes.
#include "pipeline/parse.h"

#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "base/redact.h"
#include "reel/error.h"

// ---- errors ----------------------------------------------------------------

void reel_parse_position(const char *text, size_t pos, int *line, int *col)
{
    int l = 1;
    size_t start = 0;
    for (size_t i = 0; i < pos && text[i]; i++) {
        if (text[i] == '\n') {
            l++;
            start = i + 1;
        }
    }
    *line = l;
    *col = (int)(pos - start) + 1;
}

static bool is_utf8_continuation(char c)
{
    return ((unsigned char)c & 0xc0) == 0x80;
}

// The most bytes of a line an error shows.
enum { SHOWN_MAX = 100 };

static void errorv(GError **error, const reel_parse_description *d, reel_parse_span at,
                   const char *hint, const char *fmt, va_list ap)
{
    if (!error)
        return;
    // The line is shown with URL passwords as '*'s, one per character, so
    // that the caret still points where it should.
    char *shown = reel_redact(d->text, true);
    const char *s = shown;
    size_t n = strlen(s);
    size_t pos = MIN(at.pos, n);
    size_t ls = pos, le = pos;
    while (ls > 0 && s[ls - 1] != '\n')
        ls--;
    while (le < n && s[le] != '\n')
        le++;
    if (le > pos && s[le - 1] == '\r')
        le--;

    int line, col;
    reel_parse_position(s, pos, &line, &col);
    char num[16];
    int width = g_snprintf(num, sizeof num, "%d", line);

    GString *m = g_string_new(NULL);
    g_string_append_printf(m, "%s:%d:%d: error: ", d->origin, line, col);
    char *what = g_strdup_vprintf(fmt, ap), *what_shown = reel_redact(what, false);
    g_string_append(m, what_shown);
    g_free(what_shown);
    g_free(what);
    // A long line shows only a window around the error, marked with "...".
    size_t from = ls, to = le;
    if (le - ls > SHOWN_MAX) {
        from = pos - ls > SHOWN_MAX / 2 ? pos - SHOWN_MAX / 2 : ls;
        to = MIN(le, from + SHOWN_MAX);
        while (from < pos && is_utf8_continuation(s[from]))
            from++;
        while (to < le && is_utf8_continuation(s[to]))
            to++;
    }
    const char *before = from > ls ? "..." : "", *after = to < le ? "..." : "";
    g_string_append_printf(m, "\n  %s | %s%.*s%s\n  %*s | %*s", num, before, (int)(to - from), s + from, after,
                           width, "", (int)strlen(before), "");
    // The caret line mirrors the text: tabs stay tabs, a multi-byte UTF-8
    // character takes one column.
    for (size_t i = from; i < pos; i++) {
        if (s[i] == '\t')
            g_string_append_c(m, '\t');
        else if (!is_utf8_continuation(s[i]))
            g_string_append_c(m, ' ');
    }
    g_string_append_c(m, '^');
    size_t end = MIN(pos + at.len, to);
    for (size_t i = pos + 1; i < end; i++) {
        if (!is_utf8_continuation(s[i]))
            g_string_append_c(m, '~');
    }
    if (hint)
        g_string_append_printf(m, "\nhint: %s", hint);
    g_set_error_literal(error, REEL_ERROR, REEL_EINVAL, m->str);
    g_string_free(m, TRUE);
    g_free(shown);
}

void reel_parse_error(GError **error, const reel_parse_description *d, reel_parse_span at,
                      const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errorv(error, d, at, hint, fmt, ap);
    va_end(ap);
}

// ---- the description -------------------------------------------------------

static void prop_clear(void *p)
{
    reel_parse_prop *prop = p;
    g_free(prop->key);
    g_free(prop->value);
}

static void item_clear(void *p)
{
    reel_parse_item *it = p;
    g_free(it->text);
    for (size_t i = 0; i < it->n_props; i++)
        prop_clear(&it->props[i]);
    g_free(it->props);
    g_free(it->caps_pos);
}

static void chain_clear(void *p)
{
    reel_parse_chain *c = p;
    for (size_t i = 0; i < c->n_items; i++)
        item_clear(&c->items[i]);
    g_free(c->items);
}

void reel_parse_description_free(reel_parse_description **d)
{
    if (!d || !*d)
        return;
    for (size_t i = 0; i < (*d)->n_chains; i++)
        chain_clear(&(*d)->chains[i]);
    g_free((*d)->chains);
    for (size_t i = 0; i < (*d)->n_settings; i++)
        prop_clear(&(*d)->settings[i]);
    g_free((*d)->settings);
    g_free((*d)->text);
    g_free((*d)->origin);
    g_free(*d);
    *d = NULL;
}

const reel_parse_prop *reel_parse_item_prop(const reel_parse_item *item, const char *key)
{
    for (size_t i = 0; i < item->n_props; i++) {
        if (strcmp(item->props[i].key, key) == 0)
            return &item->props[i];
    }
    return NULL;
}

// ---- the scanner -----------------------------------------------------------

typedef struct parser {
    reel_parse_description *d;
    const char *s; // d->text
    size_t p;      // the next byte to read
    GError **error;
    bool after_caps; // the last item read was a caps filter (for a hint)
} parser;

static bool is_ident(char c)
{
    return g_ascii_isalnum(c) || c == '_' || c == '-';
}

// What ends a bare word: whitespace, a link or a comment.
static bool is_stop(char c)
{
    return c == '\0' || g_ascii_isspace(c) || c == '!' || c == '#';
}

static size_t word_end(const char *s, size_t p)
{
    while (!is_stop(s[p]))
        p++;
    return p;
}

// Whitespace, newlines and comments.
static void skip_blank(parser *ps)
{
    for (;;) {
        char c = ps->s[ps->p];
        if (g_ascii_isspace(c)) {
            ps->p++;
        } else if (c == '#') {
            while (ps->s[ps->p] && ps->s[ps->p] != '\n')
                ps->p++;
        } else {
            return;
        }
    }
}

G_GNUC_PRINTF(5, 6)
static bool fail(parser *ps, size_t pos, size_t len, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errorv(ps->error, ps->d, (reel_parse_span){ pos, len }, hint, fmt, ap);
    va_end(ap);
    return false;
}

// "unexpected character 'X'" with the whole UTF-8 character, or its byte
// value when it is not printable text.
static bool fail_char(parser *ps, size_t pos, const char *hint)
{
    const char *c = ps->s + pos;
    gunichar u = g_utf8_get_char_validated(c, -1);
    if ((unsigned char)*c < 0x80 && g_ascii_isprint(*c))
        return fail(ps, pos, 1, hint, "unexpected character '%c'", *c);
    if (u != (gunichar)-1 && u != (gunichar)-2 && g_unichar_isprint(u)) {
        int n = (int)(g_utf8_next_char(c) - c);
        return fail(ps, pos, (size_t)n, hint, "unexpected character '%.*s'", n, c);
    }
    return fail(ps, pos, 1, hint, "unexpected byte 0x%02x", (unsigned char)*c);
}

// ---- the parser ------------------------------------------------------------

#define ESCAPES "the escapes are \\\" \\' \\\\ \\n \\t"

// Reads the character at s[*i] inside quotes that opened at `open`,
// resolving an escape (then *i is at its last byte). False on an error.
static bool quoted_char(parser *ps, size_t open, size_t *i, char *out)
{
    const char *s = ps->s;
    size_t at = *i;
    if (s[at] == '\0' || (s[at] == '\\' && s[at + 1] == '\0'))
        return fail(ps, open, 1, NULL, "unterminated quoted value: no closing %c", s[open]);
    if (s[at] != '\\') {
        *out = s[at];
        return true;
    }
    *i = ++at;
    switch (s[at]) {
    case '"': case '\'': case '\\': *out = s[at]; return true;
    case 'n': *out = '\n'; return true;
    case 't': *out = '\t'; return true;
    default:
        if (!g_ascii_isprint(s[at]))
            return fail(ps, at - 1, 2, ESCAPES, "unknown escape");
        return fail(ps, at - 1, 2, ESCAPES, "unknown escape '\\%c'", s[at]);
    }
}

// A quoted value starting at the quote `open`; *end is past the closing one.
static bool parse_quoted(parser *ps, size_t open, char **out, size_t *end)
{
    const char *s = ps->s;
    GString *v = g_string_new(NULL);
    size_t i = open + 1;
    for (; s[i] != s[open]; i++) {
        char c;
        if (!quoted_char(ps, open, &i, &c)) {
            g_string_free(v, TRUE);
            return false;
        }
        g_string_append_c(v, c);
    }
    *out = g_string_free(v, FALSE);
    *end = i + 1;
    return true;
}

// Whitespace that may stand around a property's '=', as gst-launch-1.0
// allows it (key = value); comments may not.
static size_t skip_space(const char *s, size_t p)
{
    while (g_ascii_isspace(s[p]))
        p++;
    return p;
}

// Where the '=' of a property whose key starts at `k` is, or 0 when the
// word there is not a key followed by '=' (possibly after whitespace).
static size_t find_eq(const char *s, size_t k, size_t *key_end)
{
    size_t ke = k;
    while (is_ident(s[ke]))
        ke++;
    size_t eq = skip_space(s, ke);
    if (ke == k || s[eq] != '=')
        return 0;
    *key_end = ke;
    return eq;
}

// One key=value after an element's class name; ps->p is at the key, which
// ends at `ke`, and `eq` is at its '='.
static bool parse_prop(parser *ps, GArray *props, size_t ke, size_t eq)
{
    const char *s = ps->s;
    size_t k = ps->p, v = skip_space(s, eq + 1), vend = v;
    reel_parse_prop prop = {
        .key = g_strndup(s + k, ke - k),
        .key_span = { k, ke - k },
    };
    g_array_append_val(props, prop); // from now on freed with the array
    reel_parse_prop *pr = &g_array_index(props, reel_parse_prop, props->len - 1);

    for (guint i = 0; i + 1 < props->len; i++) {
        const reel_parse_prop *first = &g_array_index(props, reel_parse_prop, i);
        if (strcmp(first->key, pr->key) == 0) {
            int line, col;
            reel_parse_position(s, first->key_span.pos, &line, &col);
            char *hint = g_strdup_printf("first set at %d:%d", line, col);
            fail(ps, k, ke - k, hint, "property '%s' is set twice", pr->key);
            g_free(hint);
            return false;
        }
    }

    if (s[v] == '"' || s[v] == '\'') {
        if (!parse_quoted(ps, v, &pr->value, &vend))
            return false;
        if (!is_stop(s[vend]))
            return fail_char(ps, vend, "quote the whole value");
    } else {
        vend = word_end(s, v);
        if (vend == v)
            return fail(ps, k, eq + 1 - k, NULL, "missing value for property '%s'", pr->key);
        pr->value = g_strndup(s + v, vend - v);
    }
    pr->value_span = (reel_parse_span){ v, vend - v };
    ps->p = vend;
    return true;
}

// An element: the class name at ps->p (ending at `end`), then properties.
static bool parse_element(parser *ps, reel_parse_item *it, size_t end)
{
    const char *s = ps->s;
    size_t start = ps->p;
    for (size_t q = start; q < end; q++) {
        if (is_ident(s[q]))
            continue;
        if (s[q] == '=' && q == start)
            return fail(ps, q, 1, "a property is written key=value after its element's class name",
                        "unexpected '='");
        if (s[q] == '=') {
            // After a caps filter this is most likely a forgotten comma.
            const char *hint = ps->after_caps
                                   ? "join caps fields with ',', e.g. video/raw,width=320"
                                   : "properties follow the class name, e.g. queue max-size=8";
            return fail(ps, start, q - start + 1, hint, "property '%.*s' without an element",
                        (int)(q - start), s + start);
        }
        return fail_char(ps, q, NULL);
    }
    it->kind = REEL_PARSE_ELEMENT;
    it->text = g_strndup(s + start, end - start);
    it->span = (reel_parse_span){ start, end - start };
    ps->p = end;

    GArray *props = g_array_new(FALSE, TRUE, sizeof(reel_parse_prop));
    g_array_set_clear_func(props, prop_clear);
    bool ok = true;
    for (;;) {
        size_t save = ps->p;
        skip_blank(ps);
        size_t ke, eq = find_eq(s, ps->p, &ke);
        if (!eq) {
            ps->p = save; // not a property: the next item or chain starts here
            break;
        }
        if (!(ok = parse_prop(ps, props, ke, eq)))
            break;
    }
    it->n_props = props->len;
    it->props = (reel_parse_prop *)g_array_free(props, FALSE);
    return ok;
}

// A caps filter: words joined by ',' or '=' with whitespace allowed after a
// ',' and around a '=' (video/x-raw, width = 320); the text keeps none of it.
static bool parse_caps(parser *ps, reel_parse_item *it)
{
    const char *s = ps->s;
    size_t start = ps->p, p = start;
    GString *text = g_string_new(NULL);
    GArray *pos = g_array_new(FALSE, FALSE, sizeof(size_t));
    for (;;) {
        size_t end = word_end(s, p);
        g_string_append_len(text, s + p, (gssize)(end - p));
        for (size_t q = p; q < end; q++)
            g_array_append_val(pos, q);
        p = end;
        size_t next = skip_space(s, end);
        bool joined = s[end - 1] == ',' || s[end - 1] == '=' || s[next] == ',' || s[next] == '=';
        if (!joined || is_stop(s[next]))
            break;
        p = next;
    }
    g_array_append_val(pos, p);
    it->kind = REEL_PARSE_CAPS;
    it->text = g_string_free(text, FALSE);
    it->caps_pos = (size_t *)g_array_free(pos, FALSE);
    it->span = (reel_parse_span){ start, p - start };
    ps->p = p;
    return true;
}

static bool is_caps_word(const char *s, size_t start, size_t end)
{
    const char *comma = memchr(s + start, ',', end - start);
    size_t head = comma ? (size_t)(comma - s) - start : end - start;
    if (memchr(s + start, '/', end - start))
        return true;
    return (head == 3 && strncmp(s + start, "any", 3) == 0) ||
           (head == 6 && strncmp(s + start, "tensor", 6) == 0);
}

// Caps in quotes, as GStreamer users write them ('video/x-raw, width=320'):
// escapes resolved, whitespace after a ',' dropped; caps_pos maps back into
// the quotes.
static bool parse_quoted_caps(parser *ps, reel_parse_item *it)
{
    const char *s = ps->s;
    size_t open = ps->p, i = open + 1;
    GString *text = g_string_new(NULL);
    GArray *pos = g_array_new(FALSE, FALSE, sizeof(size_t));
    bool ok = true;
    for (; ok && s[i] != s[open]; i++) {
        size_t at = i;
        char c;
        if (!(ok = quoted_char(ps, open, &i, &c)))
            break;
        if (g_ascii_isspace(c) && text->len && text->str[text->len - 1] == ',')
            continue;
        g_string_append_c(text, c);
        g_array_append_val(pos, at);
    }
    g_array_append_val(pos, i);
    it->kind = REEL_PARSE_CAPS;
    it->text = g_string_free(text, FALSE);
    it->caps_pos = (size_t *)g_array_free(pos, FALSE);
    if (!ok)
        return false;
    it->span = (reel_parse_span){ open, i + 1 - open };
    ps->p = i + 1;
    if (!is_stop(s[ps->p]))
        return fail_char(ps, ps->p, "quote the whole caps");
    if (!is_caps_word(it->text, 0, strlen(it->text)))
        return fail(ps, open, it->span.len, "only caps stand quoted on their own, e.g. 'video/raw,width=320'; "
                    "a quoted value follows its property's '='", "quoted text is not caps");
    return true;
}

// One item; ps->p is at a byte that starts a word.
static bool parse_item(parser *ps, reel_parse_item *it)
{
    const char *s = ps->s;
    size_t start = ps->p, end = word_end(s, start);
    bool ok;

    if (s[start] == '"' || s[start] == '\'') {
        ok = parse_quoted_caps(ps, it);
    } else if (is_caps_word(s, start, end)) {
        ok = parse_caps(ps, it);
    } else if (end - start >= 2 && s[end - 1] == '.' && is_ident(s[end - 2])) {
        for (size_t q = start; q < end - 1; q++) {
            if (!is_ident(s[q]))
                return fail_char(ps, q, NULL);
        }
        it->kind = REEL_PARSE_REF;
        it->text = g_strndup(s + start, end - 1 - start);
        it->span = (reel_parse_span){ start, end - start };
        ps->p = end;
        ok = true;
    } else {
        ok = parse_element(ps, it, end);
    }
    ps->after_caps = ok && it->kind == REEL_PARSE_CAPS;
    return ok;
}

// item ( '!' item )*; ps->p is at the first byte of the chain.
static bool parse_chain(parser *ps, GArray *chains)
{
    const char *s = ps->s;
    if (s[ps->p] == '!')
        return fail(ps, ps->p, 1, "a chain starts with an element, e.g. testsrc ! fakesink",
                    "'!' with no element before it");

    GArray *items = g_array_new(FALSE, TRUE, sizeof(reel_parse_item));
    g_array_set_clear_func(items, item_clear);
    reel_parse_span link = { ps->p, 0 };
    for (;;) {
        reel_parse_item it = { .link = link };
        bool ok = parse_item(ps, &it);
        g_array_append_val(items, it); // freed with the array, even half-made
        if (!ok)
            goto fail;
        skip_blank(ps);
        if (s[ps->p] != '!')
            break;
        link = (reel_parse_span){ ps->p++, 1 };
        skip_blank(ps);
        if (s[ps->p] == '\0') {
            fail(ps, link.pos, 1, NULL, "missing element after '!'");
            goto fail;
        }
        if (s[ps->p] == '!') {
            fail(ps, ps->p, 1, "remove one of the two",
                 "'!' follows '!': missing element between them");
            goto fail;
        }
    }

    const reel_parse_item *only = &g_array_index(items, reel_parse_item, 0);
    if (items->len == 1 && only->kind == REEL_PARSE_REF) {
        fail(ps, only->span.pos, only->span.len, "link it with '!', e.g. t. ! fakesink",
             "reference '%s.' is not linked to anything", only->text);
        goto fail;
    }
    reel_parse_chain c = { .n_items = items->len };
    c.items = (reel_parse_item *)g_array_free(items, FALSE);
    g_array_append_val(chains, c);
    return true;

fail:
    g_array_free(items, TRUE);
    return false;
}

// Pipeline settings: `key=value` words before the first element.
static bool parse_settings(parser *ps, GArray *settings)
{
    const char *s = ps->s;
    for (;;) {
        size_t ke, eq = find_eq(s, ps->p, &ke);
        if (!eq)
            return true;
        if (!parse_prop(ps, settings, ke, eq))
            return false;
        skip_blank(ps);
    }
}

reel_parse_description *reel_parse_describe(const char *text, const char *origin, GError **error)
{
    reel_parse_description *d = g_new0(reel_parse_description, 1);
    d->text = g_strdup(text ? text : "");
    d->origin = g_strdup(origin ? origin : "pipeline");
    parser ps = { .d = d, .s = d->text, .error = error };
    GArray *chains = g_array_new(FALSE, TRUE, sizeof(reel_parse_chain));
    g_array_set_clear_func(chains, chain_clear);
    GArray *settings = g_array_new(FALSE, TRUE, sizeof(reel_parse_prop));
    g_array_set_clear_func(settings, prop_clear);

    // Positions, carets and names all assume UTF-8: other bytes stop here.
    const char *bad;
    if (!g_utf8_validate(d->text, -1, &bad)) {
        fail(&ps, (size_t)(bad - d->text), 1, "save the description as UTF-8", "invalid UTF-8 byte 0x%02x",
             (unsigned char)*bad);
        goto fail;
    }
    skip_blank(&ps);
    if (ps.s[ps.p] == '\0') {
        fail(&ps, 0, 0, "write elements linked with '!', e.g. testsrc ! fakesink",
             "empty pipeline description");
        goto fail;
    }
    if (!parse_settings(&ps, settings))
        goto fail;
    if (ps.s[ps.p] == '\0') {
        fail(&ps, ps.p, 0, "write elements linked with '!' after the settings, e.g. testsrc ! fakesink",
             "no elements after the pipeline settings");
        goto fail;
    }
    while (ps.s[ps.p]) {
        if (!parse_chain(&ps, chains))
            goto fail;
        skip_blank(&ps);
    }
    d->n_settings = settings->len;
    d->settings = (reel_parse_prop *)g_array_free(settings, FALSE);
    d->n_chains = chains->len;
    d->chains = (reel_parse_chain *)g_array_free(chains, FALSE);
    return d;

fail:
    g_array_free(settings, TRUE);
    g_array_free(chains, TRUE);
    reel_parse_description_free(&d);
    return NULL;
}

// Text pipelines, second half: a parsed description becomes a pipeline.
//
// Two passes over the description, both in written order: first every
// element and caps filter is created, named, configured and added; then the
// chains are linked, so that a reference `x.` may name an element written
// further down. Only the public API is used; errors point into the text.
#include "reel/parse.h"

#include <stdbool.h>
#include <string.h>

#include "pipeline/internal.h"
#include "pipeline/parse.h"
#include "pipeline/registry.h"
#include "base/suggest.h"
#include "reel/caps.h"
#include "reel/error.h"

typedef struct builder {
    const reel_parse_description *d;
    reel_pipeline *p;
    reel_element **els; // per item, in written order; NULL for references
    const char *const *values; // params.values: NAME, VALUE, ...; may be NULL
    GError **error;
} builder;

// The VALUE of b->values whose {NAME} starts at `c`, or NULL.
static const char *const *value_at(const builder *b, const char *c)
{
    for (const char *const *v = b->values; *c == '{' && v && v[0] && v[1]; v += 2) {
        size_t n = strlen(v[0]);
        if (strncmp(c + 1, v[0], n) == 0 && c[1 + n] == '}')
            return v;
    }
    return NULL;
}

// `value` with each {NAME} of b->values replaced, in one pass (a VALUE is
// not searched again), after the text was split into elements and
// properties: a value never becomes description text.
static char *substitute(const builder *b, const char *value)
{
    GString *out = g_string_new(NULL);
    for (const char *c = value; *c;) {
        const char *const *v = value_at(b, c);
        if (v) {
            g_string_append(out, v[1]);
            c += strlen(v[0]) + 2;
        } else {
            g_string_append_c(out, *c++);
        }
    }
    return g_string_free(out, FALSE);
}

// "did you mean 'x'?" (with `suffix` after x) when one of `names` is close.
static char *did_you_mean(const char *word, GPtrArray *names, const char *suffix)
{
    const char *near = reel_suggest(word, (const char *const *)names->pdata, names->len);
    return near ? g_strdup_printf("did you mean '%s%s'?", near, suffix) : NULL;
}

static const reel_element_class *find_class(builder *b, const reel_parse_item *it)
{
    const reel_element_class *k = reel_element_class_find(it->text);
    if (k)
        return k;
    GPtrArray *names = g_ptr_array_new();
    for (const reel_element_class *const *c = reel_element_class_list(); c && *c; c++)
        g_ptr_array_add(names, (gpointer)(*c)->name);
    char *why = reel_registry_why_missing(it->text);
    char *hint = why ? NULL : did_you_mean(it->text, names, "");
    reel_parse_error(b->error, b->d, it->span, why ? why : hint ? hint : "'reel inspect' lists the elements",
                     "unknown element '%s'", it->text);
    g_free(why);
    g_free(hint);
    g_ptr_array_free(names, TRUE);
    return NULL;
}

// Where `other` was written, for a duplicate name's hint.
static char *first_defined(builder *b, const reel_element *other, size_t n_done)
{
    size_t k = 0;
    for (size_t c = 0; c < b->d->n_chains; c++) {
        const reel_parse_chain *ch = &b->d->chains[c];
        for (size_t i = 0; i < ch->n_items && k < n_done; i++, k++) {
            if (b->els[k] != other)
                continue;
            const reel_parse_prop *name = reel_parse_item_prop(&ch->items[i], "name");
            size_t pos = name ? name->value_span.pos : ch->items[i].span.pos;
            int line, col;
            reel_parse_position(b->d->text, pos, &line, &col);
            return g_strdup_printf("'%s' already names the element at %d:%d",
                                   reel_element_name(other), line, col);
        }
    }
    return NULL;
}

static bool check_name(builder *b, const reel_parse_prop *name, size_t index)
{
    if (!name->value[0]) {
        reel_parse_error(b->error, b->d, name->value_span, NULL, "empty element name");
        return false;
    }
    reel_element *other = reel_pipeline_find(b->p, name->value);
    if (!other)
        return true;
    char *hint = first_defined(b, other, index);
    reel_parse_error(b->error, b->d, name->value_span, hint, "duplicate element name '%s'",
                     name->value);
    g_free(hint);
    return false;
}

static bool set_prop(builder *b, reel_element *e, const reel_element_class *k,
                     const reel_parse_prop *prop)
{
    if (!reel_element_class_has_property(k, prop->key)) {
        GPtrArray *names = g_ptr_array_new();
        g_ptr_array_add(names, "name");
        g_ptr_array_add(names, "device");
        g_ptr_array_add(names, "stream-id");
        for (const reel_prop *pr = k->props; pr && pr->name; pr++)
            g_ptr_array_add(names, (gpointer)pr->name);
        char *hint = did_you_mean(prop->key, names, "");
        char *inspect = hint ? NULL
                             : g_strdup_printf("'reel inspect %s' lists its properties", k->name);
        reel_parse_error(b->error, b->d, prop->key_span, hint ? hint : inspect,
                         "unknown property '%s' of element '%s'", prop->key, k->name);
        g_free(inspect);
        g_free(hint);
        g_ptr_array_free(names, TRUE);
        return false;
    }
    GError *err = NULL;
    char *value = substitute(b, prop->value);
    int rc = reel_element_set(e, prop->key, value, &err);
    g_free(value);
    if (rc < 0) {
        // The element's message already names the element, the property and
        // the accepted values.
        reel_parse_error(b->error, b->d, prop->value_span, NULL, "%s",
                         err ? err->message : "invalid value");
        g_clear_error(&err);
        return false;
    }
    return true;
}

// Hands `e` to the pipeline (which owns it from now on, also on failure).
static bool add(builder *b, reel_element *e, size_t index, const reel_parse_item *it)
{
    GError *err = NULL;
    if (reel_pipeline_add(b->p, e, &err) < 0) {
        reel_parse_error(b->error, b->d, it->span, NULL, "%s",
                         err ? err->message : "cannot add the element");
        g_clear_error(&err);
        return false;
    }
    b->els[index] = e;
    return true;
}

static bool build_element(builder *b, const reel_parse_item *it, size_t index)
{
    const reel_element_class *k = find_class(b, it);
    if (!k)
        return false;
    const reel_parse_prop *name = reel_parse_item_prop(it, "name");
    if (name && !check_name(b, name, index))
        return false;

    GError *err = NULL;
    reel_element *e = reel_element_new(k, name ? name->value : NULL, &err);
    if (!e) {
        reel_parse_error(b->error, b->d, it->span, NULL, "cannot create element '%s': %s",
                         it->text, err ? err->message : reel_strerror(REEL_EINVAL));
        g_clear_error(&err);
        return false;
    }
    for (size_t i = 0; i < it->n_props; i++) {
        if (strcmp(it->props[i].key, "name") != 0 && !set_prop(b, e, k, &it->props[i])) {
            reel_element_destroy(&e);
            return false;
        }
    }
    return add(b, e, index, it);
}

// A caps filter: the caps are checked here first, so that an error points at
// the offending field rather than at the whole filter.
static bool build_caps(builder *b, const reel_parse_item *it, size_t index)
{
    reel_caps caps;
    size_t off = 0;
    GError *err = NULL;
    char *hint = NULL;
    if (!reel_caps_parse_hint(it->text, &caps, &off, &hint, &err)) {
        size_t n = strlen(it->text);
        off = MIN(off, n);
        size_t end = off;
        while (end < n && it->text[end] != ',')
            end++;
        reel_parse_span at = { it->caps_pos[off], it->caps_pos[end] - it->caps_pos[off] };
        reel_parse_error(b->error, b->d, at, hint, "%s", err ? err->message : "invalid caps");
        g_clear_error(&err);
        g_free(hint);
        return false;
    }

    // In reel's own spelling, whatever GStreamer names were written.
    char *text = reel_caps_to_string(&caps);
    reel_element *e = reel_element_new(&reel_capsfilter_class, NULL, &err);
    if (e && reel_element_set(e, "caps", text, &err) < 0)
        reel_element_destroy(&e);
    g_free(text);
    if (!e) {
        reel_parse_error(b->error, b->d, it->span, NULL, "%s", err ? err->message : "bad caps");
        g_clear_error(&err);
        return false;
    }
    return add(b, e, index, it);
}

// The element an item stands for; references are looked up by name.
static reel_element *resolve(builder *b, const reel_parse_item *it, size_t index)
{
    if (it->kind != REEL_PARSE_REF)
        return b->els[index];
    reel_element *e = reel_pipeline_find(b->p, it->text);
    if (e)
        return e;
    GPtrArray *names = g_ptr_array_new();
    for (reel_element *const *el = reel_pipeline_elements(b->p); el && *el; el++)
        g_ptr_array_add(names, (gpointer)reel_element_name(*el));
    char *hint = did_you_mean(it->text, names, ".");
    char *give = hint ? NULL : g_strdup_printf("give an element name=%s to refer to it as %s.",
                                               it->text, it->text);
    reel_parse_error(b->error, b->d, it->span, hint ? hint : give, "no element is named '%s'",
                     it->text);
    g_free(give);
    g_free(hint);
    g_ptr_array_free(names, TRUE);
    return NULL;
}

static bool link_items(builder *b, reel_element *src, reel_element *dst, reel_parse_span at)
{
    GError *err = NULL;
    if (reel_pipeline_link(b->p, src, dst, &err) == 0)
        return true;
    // The usual cause: a second branch taken from an element with one output.
    const reel_element_class *k = reel_element_get_class(src);
    const char *hint = k->max_outputs == 1 && reel_element_n_outputs(src) == 1
                           ? "to feed several branches, insert a tee: ... ! tee name=t ! a  t. ! b"
                           : NULL;
    reel_parse_error(b->error, b->d, at, hint, "%s", err ? err->message : "cannot link");
    g_clear_error(&err);
    return false;
}

// The settings before the first element apply to the pipeline.
static bool apply_settings(builder *b)
{
    static const char *const keys[] = { "device", "placement", "memory-budget", "queue-max-bytes", "stream-template" };
    for (size_t i = 0; i < b->d->n_settings; i++) {
        const reel_parse_prop *set = &b->d->settings[i];
        GError *err = NULL;
        if (reel_pipeline_set(b->p, set->key, set->value, &err) == 0)
            continue;
        bool known = false;
        for (size_t k = 0; k < G_N_ELEMENTS(keys); k++)
            known |= strcmp(set->key, keys[k]) == 0;
        const char *near = reel_suggest(set->key, keys, G_N_ELEMENTS(keys));
        char *hint = !known && near ? g_strdup_printf("did you mean '%s'?", near) : NULL;
        reel_parse_error(b->error, b->d, known ? set->value_span : set->key_span, hint, "%s", err->message);
        g_free(hint);
        g_error_free(err);
        return false;
    }
    return true;
}

static bool build(builder *b)
{
    if (!apply_settings(b))
        return false;
    size_t index = 0;
    for (size_t c = 0; c < b->d->n_chains; c++) {
        const reel_parse_chain *ch = &b->d->chains[c];
        for (size_t i = 0; i < ch->n_items; i++, index++) {
            const reel_parse_item *it = &ch->items[i];
            bool ok = it->kind == REEL_PARSE_ELEMENT ? build_element(b, it, index)
                      : it->kind == REEL_PARSE_CAPS  ? build_caps(b, it, index)
                                                     : true;
            if (!ok)
                return false;
        }
    }

    index = 0;
    for (size_t c = 0; c < b->d->n_chains; c++) {
        const reel_parse_chain *ch = &b->d->chains[c];
        reel_element *prev = NULL;
        for (size_t i = 0; i < ch->n_items; i++, index++) {
            reel_element *e = resolve(b, &ch->items[i], index);
            if (!e || (prev && !link_items(b, prev, e, ch->items[i].link)))
                return false;
            prev = e;
        }
    }
    return true;
}

reel_pipeline *reel_parse_launch(const char *text, const char *origin,
                                 const reel_pipeline_params *params, GError **error)
{
    static const reel_pipeline_params defaults = { 0 };
    reel_parse_description *d = reel_parse_describe(text, origin, error);
    if (!d)
        return NULL;

    size_t n_items = 0;
    for (size_t c = 0; c < d->n_chains; c++)
        n_items += d->chains[c].n_items;
    builder b = {
        .d = d,
        .p = reel_pipeline_new(params ? params : &defaults),
        .els = g_new0(reel_element *, n_items),
        .values = params ? params->values : NULL,
        .error = error,
    };
    if (!build(&b))
        reel_pipeline_destroy(&b.p); // with every element added so far
    g_free(b.els);
    reel_parse_description_free(&d);
    return b.p;
}

char **reel_pipeline_add_branch(reel_pipeline *p, const char *text, const char *const *values, GError **error)
{
    reel_parse_description *d = reel_parse_describe(text, "branch", error);
    if (!d)
        return NULL;
    if (d->n_settings) {
        reel_parse_error(error, d, d->settings[0].key_span, "settings go before the pipeline's first element",
                         "a branch takes no pipeline settings");
        reel_parse_description_free(&d);
        return NULL;
    }
    if (reel_dynamic_begin(p, error) < 0) {
        reel_parse_description_free(&d);
        return NULL;
    }
    size_t n_items = 0;
    for (size_t c = 0; c < d->n_chains; c++)
        n_items += d->chains[c].n_items;
    builder b = { .d = d, .p = p, .els = g_new0(reel_element *, n_items ? n_items : 1), .values = values,
                  .error = error };
    guint first = p->elements->len - 1;
    bool built = build(&b);
    char **names = reel_dynamic_commit(p, first, built, error);
    g_free(b.els);
    reel_parse_description_free(&d);
    return names;
}

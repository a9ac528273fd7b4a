// Properties: text ↔ typed fields of an element's private struct, driven by
// the class's property table.
#include "pipeline/internal.h"
#include "base/suggest.h"
#include "reel/error.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *field(reel_element *e, const reel_prop *prop)
{
    return (char *)e->priv + prop->offset;
}

static bool has_range(const reel_prop *prop)
{
    return prop->min != 0 || prop->max != 0;
}

// "2M" and "500k" are accepted for ints (bitrates); SI multiples of 1000.
static bool parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s)
        return false;
    int64_t mult = 1;
    if (*end == 'k' || *end == 'K')
        mult = 1000, end++;
    else if (*end == 'M')
        mult = 1000000, end++;
    else if (*end == 'G')
        mult = 1000000000, end++;
    if (*end || __builtin_mul_overflow((int64_t)v, mult, out))
        return false;
    return true;
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static bool parse_bool(const char *s, bool *out)
{
    static const char *yes[] = { "true", "yes", "on", "1" }, *no[] = { "false", "no", "off", "0" };
    for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
        if (g_ascii_strcasecmp(s, yes[i]) == 0)
            return *out = true, true;
        if (g_ascii_strcasecmp(s, no[i]) == 0)
            return *out = false, true;
    }
    return false;
}

// "30/1", "30" or "29.97" (kept exact in hundredths, reduced).
static bool parse_fraction(const char *s, reel_fraction *out)
{
    int64_t num, den = 1;
    const char *slash = strchr(s, '/');
    if (slash) {
        char *n = g_strndup(s, slash - s);
        bool ok = parse_int(n, &num) && parse_int(slash + 1, &den);
        g_free(n);
        if (!ok)
            return false;
    } else if (!parse_int(s, &num)) {
        double d;
        if (!parse_double(s, &d) || d < 0 || d > 1e6)
            return false;
        num = llround(d * 100);
        den = 100;
    }
    if (num < 0 || den <= 0 || num > INT32_MAX || den > INT32_MAX)
        return false;
    int64_t g = num ? num : den, b = den;
    while (b) {
        int64_t t = g % b;
        g = b;
        b = t;
    }
    *out = (reel_fraction){ (int)(num / g), (int)(den / g) };
    return true;
}

static bool parse_size(const char *s, reel_size *out)
{
    const char *x = strchr(s, 'x');
    if (!x)
        return false;
    char *w = g_strndup(s, x - s);
    int64_t wi, hi;
    bool ok = parse_int(w, &wi) && parse_int(x + 1, &hi) && wi >= 0 && hi >= 0 && wi <= INT32_MAX
              && hi <= INT32_MAX;
    g_free(w);
    if (ok)
        *out = (reel_size){ (int)wi, (int)hi };
    return ok;
}

static char *enum_names(const reel_prop *prop)
{
    GString *s = g_string_new(NULL);
    for (const reel_enum_value *v = prop->values; v && v->name; v++)
        g_string_append_printf(s, "%s%s", v == prop->values ? "" : ", ", v->name);
    return g_string_free(s, FALSE);
}

static const char *type_names[REEL_PROP_TYPE_COUNT] = {
    [REEL_PROP_INT] = "int",
    [REEL_PROP_DOUBLE] = "double",
    [REEL_PROP_BOOL] = "bool",
    [REEL_PROP_STRING] = "string",
    [REEL_PROP_ENUM] = "enum",
    [REEL_PROP_FRACTION] = "fraction",
    [REEL_PROP_SIZE] = "size",
};

const char *reel_prop_type_name(reel_prop_type t)
{
    return t < REEL_PROP_TYPE_COUNT ? type_names[t] : "?";
}

char *reel_prop_describe_values(const reel_prop *prop)
{
    switch (prop->type) {
    case REEL_PROP_INT:
        return has_range(prop) ? g_strdup_printf("an integer in %.0f..%.0f", prop->min, prop->max)
                               : g_strdup("an integer");
    case REEL_PROP_DOUBLE:
        return has_range(prop) ? g_strdup_printf("a number in %g..%g", prop->min, prop->max)
                               : g_strdup("a number");
    case REEL_PROP_BOOL:
        return g_strdup("true or false");
    case REEL_PROP_STRING:
        return g_strdup("a string");
    case REEL_PROP_ENUM: {
        char *names = enum_names(prop);
        char *s = g_strdup_printf("one of: %s", names);
        g_free(names);
        return s;
    }
    case REEL_PROP_FRACTION:
        return g_strdup("a fraction such as 30/1, 30 or 29.97");
    case REEL_PROP_SIZE:
        return has_range(prop) ? g_strdup_printf("a size WIDTHxHEIGHT, each in %.0f..%.0f", prop->min, prop->max)
                               : g_strdup("a size WIDTHxHEIGHT such as 640x360");
    default:
        return g_strdup("?");
    }
}

static bool in_range(const reel_prop *prop, double v)
{
    return !has_range(prop) || (v >= prop->min && v <= prop->max);
}

// A parsed value, of the field's C type.
typedef union prop_value {
    int i; // INT and ENUM
    double d;
    bool b;
    char *s;
    reel_fraction fr;
    reel_size sz;
} prop_value;

// A change set while the pipeline runs, waiting for the element's next buffer.
typedef struct reel_prop_change {
    const reel_prop *prop;
    prop_value v;
} reel_prop_change;

// Parses into *out (a string is copied); false when the text is not a valid value.
static bool parse_value(const reel_prop *prop, const char *value, prop_value *out)
{
    int64_t i;
    double d;

    switch (prop->type) {
    case REEL_PROP_INT:
        if (!parse_int(value, &i) || i < INT_MIN || i > INT_MAX || !in_range(prop, (double)i))
            return false;
        out->i = (int)i;
        return true;
    case REEL_PROP_DOUBLE:
        if (!parse_double(value, &d) || !in_range(prop, d))
            return false;
        out->d = d;
        return true;
    case REEL_PROP_BOOL:
        return parse_bool(value, &out->b);
    case REEL_PROP_STRING:
        out->s = g_strdup(value);
        return true;
    case REEL_PROP_ENUM:
        for (const reel_enum_value *v = prop->values; v && v->name; v++) {
            if (strcmp(v->name, value) == 0) {
                out->i = v->value;
                return true;
            }
        }
        return false;
    case REEL_PROP_FRACTION:
        return parse_fraction(value, &out->fr);
    case REEL_PROP_SIZE:
        return parse_size(value, &out->sz) && in_range(prop, out->sz.width) && in_range(prop, out->sz.height);
    default:
        return false;
    }
}

static void value_clear(const reel_prop *prop, prop_value *v)
{
    if (prop->type == REEL_PROP_STRING)
        g_clear_pointer(&v->s, g_free);
}

// Moves *v into the element's field (a string field's old value is freed).
static void put(reel_element *e, const reel_prop *prop, prop_value *v)
{
    void *f = field(e, prop);
    switch (prop->type) {
    case REEL_PROP_INT:
    case REEL_PROP_ENUM:
        *(int *)f = v->i;
        break;
    case REEL_PROP_DOUBLE:
        *(double *)f = v->d;
        break;
    case REEL_PROP_BOOL:
        *(bool *)f = v->b;
        break;
    case REEL_PROP_STRING:
        g_free(*(char **)f);
        *(char **)f = g_steal_pointer(&v->s);
        break;
    case REEL_PROP_FRACTION:
        *(reel_fraction *)f = v->fr;
        break;
    case REEL_PROP_SIZE:
        *(reel_size *)f = v->sz;
        break;
    default:
        break;
    }
}

// Parses and stores; false when the text is not a valid value.
static bool store(reel_element *e, const reel_prop *prop, const char *value)
{
    prop_value v = { 0 };
    if (!parse_value(prop, value, &v))
        return false;
    put(e, prop, &v);
    return true;
}

static void mark_set(reel_element *e, const reel_prop *prop)
{
    ptrdiff_t i = prop - e->klass->props;
    if (i < 64)
        e->props_set |= (uint64_t)1 << i;
}

// Whether a set now waits for the element's next buffer: a run is being set
// up or runs, and this is not the thread setting it up. Under prop_lock.
static bool queues_changes(const reel_element *e)
{
    return e->props_live && atomic_load(&e->pipeline->setup_thread) != g_thread_self();
}

static int refuse_running(reel_element *e, const char *name, GError **error)
{
    g_set_error(error, REEL_ERROR, REEL_EINVAL,
                "cannot change property '%s' of '%s' while the pipeline runs: it is fixed once the pipeline starts "
                "('reel inspect %s' marks the properties that may change)",
                name, e->name, e->klass->name);
    return REEL_EINVAL;
}

// `stream-id`, which every element has: the id a source stamps on its
// buffers (by default its index among the pipeline's sources).
static int set_stream_id(reel_element *e, const char *value, GError **error)
{
    int64_t id;
    if (!parse_int(value, &id) || id < -1 || id > INT32_MAX) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL,
                    "invalid value '%s' for property 'stream-id' of '%s': expected an integer in -1..%d", value,
                    e->name, INT32_MAX);
        return REEL_EINVAL;
    }
    g_rec_mutex_lock(&e->prop_lock);
    int rc = queues_changes(e) ? refuse_running(e, "stream-id", error) : 0;
    if (rc == 0)
        e->stream_id_request = (int)id;
    g_rec_mutex_unlock(&e->prop_lock);
    return rc;
}

static int unknown_property(reel_element *e, const char *name, GError **error)
{
    GPtrArray *names = g_ptr_array_new();
    g_ptr_array_add(names, "name");
    g_ptr_array_add(names, "device");
    g_ptr_array_add(names, "stream-id");
    for (const reel_prop *p = e->klass->props; p && p->name; p++)
        g_ptr_array_add(names, (gpointer)p->name);
    const char *close = reel_suggest(name, (const char *const *)names->pdata, names->len);
    g_set_error(error, REEL_ERROR, REEL_EINVAL, "element '%s' (%s) has no property '%s'%s%s%s",
                reel_element_name(e), e->klass->name, name, close ? "; did you mean '" : "", close ? close : "",
                close ? "'?" : "");
    g_ptr_array_free(names, TRUE);
    return REEL_EINVAL;
}

// Queues a change for the element's runner (under prop_lock): one per
// property, the latest value winning, in the order first set.
static void queue_change(reel_element *e, const reel_prop *prop, prop_value *v)
{
    if (!e->pending)
        e->pending = g_array_new(FALSE, FALSE, sizeof(reel_prop_change));
    for (guint i = 0; i < e->pending->len; i++) {
        reel_prop_change *c = &g_array_index(e->pending, reel_prop_change, i);
        if (c->prop == prop) {
            value_clear(prop, &c->v);
            c->v = *v;
            return;
        }
    }
    reel_prop_change c = { prop, *v };
    g_array_append_val(e->pending, c);
    atomic_store_explicit(&e->has_pending, true, memory_order_release);
}

int reel_element_set(reel_element *e, const char *name, const char *value, GError **error)
{
    if (strcmp(name, "name") == 0) {
        if (e->pipeline) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "cannot rename '%s': it is in a pipeline", e->name);
            return REEL_EINVAL;
        }
        g_free(e->name);
        e->name = g_strdup(value);
        e->auto_name = false;
        return 0;
    }
    if (strcmp(name, "device") == 0) {
        g_rec_mutex_lock(&e->prop_lock);
        int rc = 0;
        if (queues_changes(e))
            rc = refuse_running(e, name, error);
        else if (e->pipeline && e->pipeline->prepared)
            g_set_error(error, REEL_ERROR, rc = REEL_EINVAL, "cannot move '%s': the pipeline is prepared", e->name);
        if (rc == 0) {
            g_free(e->device_request);
            e->device_request = *value ? g_strdup(value) : NULL;
        }
        g_rec_mutex_unlock(&e->prop_lock);
        return rc;
    }
    if (strcmp(name, "stream-id") == 0 && !reel_element_class_find_prop(e->klass, name))
        return set_stream_id(e, value, error);
    const reel_prop *prop = reel_element_class_find_prop(e->klass, name);
    if (!prop)
        return unknown_property(e, name, error);
    prop_value v = { 0 };
    const char *rule = NULL;
    if (!parse_value(prop, value, &v) || (prop->check && (rule = prop->check(&v)))) {
        value_clear(prop, &v);
        char *valid = rule ? g_strdup(rule) : reel_prop_describe_values(prop);
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "invalid value '%s' for property '%s' of '%s': expected %s",
                    value, name, reel_element_name(e), valid);
        g_free(valid);
        return REEL_EINVAL;
    }
    g_rec_mutex_lock(&e->prop_lock);
    bool queued = queues_changes(e);
    int rc = 0;
    if (queued && !(prop->flags & REEL_PROP_MUTABLE)) {
        value_clear(prop, &v);
        rc = refuse_running(e, name, error);
    } else if (queued) {
        queue_change(e, prop, &v);
    } else {
        put(e, prop, &v);
        mark_set(e, prop);
    }
    g_rec_mutex_unlock(&e->prop_lock);
    // Give the element a turn, so that the change applies even before a
    // buffer comes (a queue's new bound frees a waiting upstream).
    if (queued && rc == 0)
        reel_sched_poke(e);
    return rc;
}

int reel_pipeline_set_property(reel_pipeline *p, const char *element, const char *prop, const char *value,
                               GError **error)
{
    reel_pipeline_lock_graph(p); // a branch may leave meanwhile
    reel_element *e = reel_pipeline_find(p, element);
    if (e) {
        int rc = reel_element_set(e, prop, value, error);
        reel_pipeline_unlock_graph(p);
        return rc;
    }
    GPtrArray *names = g_ptr_array_new();
    for (reel_element *const *it = reel_pipeline_elements(p); *it; it++)
        g_ptr_array_add(names, (*it)->name);
    const char *close = reel_suggest(element, (const char *const *)names->pdata, names->len);
    g_set_error(error, REEL_ERROR, REEL_EINVAL, "no element called '%s' in the pipeline%s%s%s", element,
                close ? "; did you mean '" : "", close ? close : "", close ? "'?" : "");
    reel_pipeline_unlock_graph(p);
    g_ptr_array_free(names, TRUE);
    return REEL_EINVAL;
}

bool reel_element_prop_is_set(const reel_element *e, const char *name)
{
    if (strcmp(name, "device") == 0)
        return e->device_request != NULL;
    const reel_prop *prop = reel_element_class_find_prop(e->klass, name);
    ptrdiff_t i = prop ? prop - e->klass->props : 64;
    reel_element *m = (reel_element *)e; // the lock, not the element, changes
    g_rec_mutex_lock(&m->prop_lock);
    bool set = i < 64 && (e->props_set >> i & 1);
    g_rec_mutex_unlock(&m->prop_lock);
    return set;
}

static char *format_value(const reel_prop *prop, const void *f)
{
    switch (prop->type) {
    case REEL_PROP_INT:
        return g_strdup_printf("%d", *(const int *)f);
    case REEL_PROP_DOUBLE:
        return g_strdup_printf("%g", *(const double *)f);
    case REEL_PROP_BOOL:
        return g_strdup(*(const bool *)f ? "true" : "false");
    case REEL_PROP_STRING:
        return g_strdup(*(char *const *)f ? *(char *const *)f : "");
    case REEL_PROP_ENUM:
        for (const reel_enum_value *v = prop->values; v && v->name; v++)
            if (v->value == *(const int *)f)
                return g_strdup(v->name);
        return g_strdup_printf("%d", *(const int *)f);
    case REEL_PROP_FRACTION: {
        reel_fraction fr = *(const reel_fraction *)f;
        return g_strdup_printf("%d/%d", fr.num, fr.den);
    }
    case REEL_PROP_SIZE: {
        reel_size sz = *(const reel_size *)f;
        return g_strdup_printf("%dx%d", sz.width, sz.height);
    }
    default:
        return NULL;
    }
}

char *reel_element_get(reel_element *e, const char *name)
{
    if (strcmp(name, "name") == 0)
        return g_strdup(reel_element_name(e));
    g_rec_mutex_lock(&e->prop_lock);
    char *text = NULL;
    const reel_prop *prop = reel_element_class_find_prop(e->klass, name);
    if (strcmp(name, "device") == 0)
        text = g_strdup(e->device_request ? e->device_request : "");
    else if (strcmp(name, "stream-id") == 0 && !prop)
        text = g_strdup_printf("%d", e->stream_id_request);
    else if (prop)
        text = format_value(prop, field(e, prop));
    g_rec_mutex_unlock(&e->prop_lock);
    return text;
}

int reel_props_set_defaults(reel_element *e, GError **error)
{
    for (const reel_prop *prop = e->klass->props; prop && prop->name; prop++) {
        if (prop->def && !store(e, prop, prop->def)) {
            g_set_error(error, REEL_ERROR, REEL_EINTERNAL, "class '%s': bad default '%s' for '%s'",
                        e->klass->name, prop->def, prop->name);
            return REEL_EINTERNAL;
        }
    }
    return 0;
}

// Stores what is queued, without the hooks (under prop_lock).
static void drain_pending(reel_element *e)
{
    atomic_store(&e->has_pending, false);
    for (guint i = 0; e->pending && i < e->pending->len; i++) {
        reel_prop_change *c = &g_array_index(e->pending, reel_prop_change, i);
        put(e, c->prop, &c->v);
        mark_set(e, c->prop);
    }
    if (e->pending)
        g_array_set_size(e->pending, 0);
}

void reel_props_free(reel_element *e)
{
    for (guint i = 0; e->pending && i < e->pending->len; i++) {
        reel_prop_change *c = &g_array_index(e->pending, reel_prop_change, i);
        value_clear(c->prop, &c->v);
    }
    if (e->pending)
        g_array_free(g_steal_pointer(&e->pending), TRUE);
    for (const reel_prop *prop = e->klass->props; prop && prop->name; prop++) {
        if (prop->type == REEL_PROP_STRING) {
            g_free(*(char **)field(e, prop));
            *(char **)field(e, prop) = NULL;
        }
    }
}

void reel_props_run_begin(reel_element *e)
{
    g_rec_mutex_lock(&e->prop_lock);
    e->props_live = true;
    g_rec_mutex_unlock(&e->prop_lock);
}

void reel_props_run_end(reel_element *e)
{
    g_rec_mutex_lock(&e->prop_lock);
    drain_pending(e);
    e->props_live = false;
    g_rec_mutex_unlock(&e->prop_lock);
}

int reel_props_apply(reel_element *e)
{
    g_rec_mutex_lock(&e->prop_lock);
    atomic_store(&e->has_pending, false);
    GArray *batch = g_steal_pointer(&e->pending);
    int rc = 0;
    // Every change that came together is in place before any hook looks.
    for (guint i = 0; batch && i < batch->len; i++) {
        reel_prop_change *c = &g_array_index(batch, reel_prop_change, i);
        put(e, c->prop, &c->v);
        mark_set(e, c->prop);
    }
    for (guint i = 0; batch && i < batch->len && rc == 0 && e->klass->changed; i++)
        rc = e->klass->changed(e, g_array_index(batch, reel_prop_change, i).prop);
    g_rec_mutex_unlock(&e->prop_lock);
    if (batch)
        g_array_free(batch, TRUE);
    return rc;
}

bool reel_element_class_has_property(const reel_element_class *k, const char *name)
{
    return strcmp(name, "name") == 0 || strcmp(name, "device") == 0 || strcmp(name, "stream-id") == 0
           || reel_element_class_find_prop(k, name);
}

const reel_prop *reel_element_class_find_prop(const reel_element_class *k, const char *name)
{
    for (const reel_prop *prop = k->props; prop && prop->name; prop++)
        if (strcmp(prop->name, name) == 0)
            return prop;
    return NULL;
}

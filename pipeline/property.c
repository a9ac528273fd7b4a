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

// Parses and stores; false when the text is not a valid value.
static bool store(reel_element *e, const reel_prop *prop, const char *value)
{
    void *f = field(e, prop);
    int64_t i;
    double d;
    bool b;
    reel_fraction fr;
    reel_size sz;

    switch (prop->type) {
    case REEL_PROP_INT:
        if (!parse_int(value, &i) || i < INT_MIN || i > INT_MAX || !in_range(prop, (double)i))
            return false;
        *(int *)f = (int)i;
        return true;
    case REEL_PROP_DOUBLE:
        if (!parse_double(value, &d) || !in_range(prop, d))
            return false;
        *(double *)f = d;
        return true;
    case REEL_PROP_BOOL:
        if (!parse_bool(value, &b))
            return false;
        *(bool *)f = b;
        return true;
    case REEL_PROP_STRING:
        g_free(*(char **)f);
        *(char **)f = g_strdup(value);
        return true;
    case REEL_PROP_ENUM:
        for (const reel_enum_value *v = prop->values; v && v->name; v++) {
            if (strcmp(v->name, value) == 0) {
                *(int *)f = v->value;
                return true;
            }
        }
        return false;
    case REEL_PROP_FRACTION:
        if (!parse_fraction(value, &fr))
            return false;
        *(reel_fraction *)f = fr;
        return true;
    case REEL_PROP_SIZE:
        if (!parse_size(value, &sz) || !in_range(prop, sz.width) || !in_range(prop, sz.height))
            return false;
        *(reel_size *)f = sz;
        return true;
    default:
        return false;
    }
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
    e->stream_id_request = (int)id;
    return 0;
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
        if (e->pipeline && e->pipeline->prepared) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "cannot move '%s': the pipeline is prepared", e->name);
            return REEL_EINVAL;
        }
        g_free(e->device_request);
        e->device_request = *value ? g_strdup(value) : NULL;
        return 0;
    }
    if (strcmp(name, "stream-id") == 0 && !reel_element_class_find_prop(e->klass, name))
        return set_stream_id(e, value, error);
    const reel_prop *prop = reel_element_class_find_prop(e->klass, name);
    if (!prop) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "element '%s' (%s) has no property '%s'",
                    reel_element_name(e), e->klass->name, name);
        return REEL_EINVAL;
    }
    if (store(e, prop, value)) {
        ptrdiff_t i = prop - e->klass->props;
        if (i < 64)
            e->props_set |= (uint64_t)1 << i;
    } else {
        char *valid = reel_prop_describe_values(prop);
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "invalid value '%s' for property '%s' of '%s': expected %s",
                    value, name, reel_element_name(e), valid);
        g_free(valid);
        return REEL_EINVAL;
    }
    return 0;
}

bool reel_element_prop_is_set(const reel_element *e, const char *name)
{
    if (strcmp(name, "device") == 0)
        return e->device_request != NULL;
    const reel_prop *prop = reel_element_class_find_prop(e->klass, name);
    ptrdiff_t i = prop ? prop - e->klass->props : 64;
    return i < 64 && (e->props_set >> i & 1);
}

char *reel_element_get(reel_element *e, const char *name)
{
    if (strcmp(name, "name") == 0)
        return g_strdup(reel_element_name(e));
    if (strcmp(name, "device") == 0)
        return g_strdup(e->device_request ? e->device_request : "");
    if (strcmp(name, "stream-id") == 0 && !reel_element_class_find_prop(e->klass, name))
        return g_strdup_printf("%d", e->stream_id_request);
    const reel_prop *prop = reel_element_class_find_prop(e->klass, name);
    if (!prop)
        return NULL;
    void *f = field(e, prop);
    switch (prop->type) {
    case REEL_PROP_INT:
        return g_strdup_printf("%d", *(int *)f);
    case REEL_PROP_DOUBLE:
        return g_strdup_printf("%g", *(double *)f);
    case REEL_PROP_BOOL:
        return g_strdup(*(bool *)f ? "true" : "false");
    case REEL_PROP_STRING:
        return g_strdup(*(char **)f ? *(char **)f : "");
    case REEL_PROP_ENUM:
        for (const reel_enum_value *v = prop->values; v && v->name; v++)
            if (v->value == *(int *)f)
                return g_strdup(v->name);
        return g_strdup_printf("%d", *(int *)f);
    case REEL_PROP_FRACTION: {
        reel_fraction fr = *(reel_fraction *)f;
        return g_strdup_printf("%d/%d", fr.num, fr.den);
    }
    case REEL_PROP_SIZE: {
        reel_size sz = *(reel_size *)f;
        return g_strdup_printf("%dx%d", sz.width, sz.height);
    }
    default:
        return NULL;
    }
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

void reel_props_free(reel_element *e)
{
    for (const reel_prop *prop = e->klass->props; prop && prop->name; prop++) {
        if (prop->type == REEL_PROP_STRING) {
            g_free(*(char **)field(e, prop));
            *(char **)field(e, prop) = NULL;
        }
    }
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

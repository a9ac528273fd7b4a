// Zones and lines: parsing, checks and geometry (zones_config.h).
#include "elements/zones_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json_read.h"

static int fail(GError **error, const zones_region *r, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static int fail(GError **error, const zones_region *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (r)
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "%s '%s': %s", r->line ? "line" : "zone", r->name, why);
    else
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "%s", why);
    g_free(why);
    return REEL_EINVAL;
}

static double cross(zones_point o, zones_point a, zones_point b)
{
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

static bool on_segment(zones_point a, zones_point b, zones_point p)
{
    return MIN(a.x, b.x) <= p.x && p.x <= MAX(a.x, b.x) && MIN(a.y, b.y) <= p.y && p.y <= MAX(a.y, b.y);
}

// Whether segments ab and cd meet, touching included.
static bool segments_meet(zones_point a, zones_point b, zones_point c, zones_point d)
{
    double d1 = cross(c, d, a), d2 = cross(c, d, b), d3 = cross(a, b, c), d4 = cross(a, b, d);
    if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)))
        return true;
    return (d1 == 0 && on_segment(c, d, a)) || (d2 == 0 && on_segment(c, d, b)) ||
           (d3 == 0 && on_segment(a, b, c)) || (d4 == 0 && on_segment(a, b, d));
}

static int check_region(const zones_region *r, bool normalized, GError **error)
{
    for (int i = 0; i < r->n; i++) {
        zones_point p = r->points[i];
        if (!isfinite(p.x) || !isfinite(p.y) || p.x < 0 || p.y < 0 || (normalized && (p.x > 1 || p.y > 1)))
            return fail(error, r, "point %d (%g, %g) is outside the frame (%s)", i + 1, p.x, p.y,
                        normalized ? "normalized coordinates run from 0 to 1" : "pixels are at least 0");
    }
    if (r->line) {
        if (r->n != 2)
            return fail(error, r, "a line has 2 points, not %d", r->n);
        if (r->points[0].x == r->points[1].x && r->points[0].y == r->points[1].y)
            return fail(error, r, "its two points are the same: a line of zero length");
        return 0;
    }
    if (r->n < 3 || r->n > ZONES_MAX_POINTS)
        return fail(error, r, "a zone has 3 to %d points, not %d", ZONES_MAX_POINTS, r->n);
    double area = 0;
    for (int i = 0; i < r->n; i++)
        area += cross((zones_point){ 0, 0 }, r->points[i], r->points[(i + 1) % r->n]);
    if (fabs(area) < 1e-12)
        return fail(error, r, "its points enclose no area (all on one line?)");
    for (int i = 0; i < r->n; i++)
        for (int j = i + 2; j < r->n; j++) {
            if (i == 0 && j == r->n - 1) // neighbours through the closing edge
                continue;
            if (segments_meet(r->points[i], r->points[(i + 1) % r->n], r->points[j], r->points[(j + 1) % r->n]))
                return fail(error, r, "it crosses itself: edge %d meets edge %d (a polygon's edges may meet only "
                            "their neighbours, at their ends)", i + 1, j + 1);
        }
    return 0;
}

// Names: 1 to 31 bytes of letters, digits, '-', '_' and '.'.
static int check_name(const zones_config *c, const zones_region *r, const char *name, GError **error)
{
    size_t n = strlen(name);
    bool ok = n > 0 && n < REEL_LABEL_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = g_ascii_isalnum(name[i]) || name[i] == '-' || name[i] == '_' || name[i] == '.';
    if (!ok)
        return fail(error, NULL, "%s name '%s': 1 to %d letters, digits, '-', '_' or '.'", r->line ? "line" : "zone",
                    name, REEL_LABEL_MAX - 1);
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->regions[i].name, name) == 0)
            return fail(error, NULL, "two zones or lines are named '%s'", name);
    return 0;
}

static zones_region *add_region(zones_config *c, bool line, const char *name, GError **error)
{
    zones_region probe = { .line = line };
    if (c->n >= ZONES_MAX_REGIONS) {
        fail(error, NULL, "more than %d zones and lines", ZONES_MAX_REGIONS);
        return NULL;
    }
    if (check_name(c, &probe, name, error) < 0)
        return NULL;
    c->regions = g_renew(zones_region, c->regions, c->n + 1);
    zones_region *r = &c->regions[c->n++];
    *r = (zones_region){ .line = line, .stream = -1 };
    g_strlcpy(r->name, name, sizeof r->name);
    return r;
}

// "NAME: x,y x,y ...; NAME: ..."
static int parse_text(zones_config *c, const char *text, bool line, GError **error)
{
    char **items = g_strsplit(text, ";", -1);
    int rc = 0;
    for (char **it = items; *it && rc == 0; it++) {
        char *item = g_strstrip(*it);
        if (!*item)
            continue;
        char *colon = strchr(item, ':');
        if (!colon) {
            rc = fail(error, NULL, "'%s': a %s is NAME: x,y x,y%s", item, line ? "line" : "zone",
                      line ? "" : " x,y ...");
            break;
        }
        *colon = '\0';
        zones_region *r = add_region(c, line, g_strstrip(item), error);
        if (!r) {
            rc = REEL_EINVAL;
            break;
        }
        char **pts = g_strsplit_set(g_strstrip(colon + 1), " \t", -1);
        for (char **p = pts; *p && rc == 0; p++) {
            if (!**p)
                continue;
            char *end = NULL;
            double x = g_ascii_strtod(*p, &end), y = NAN;
            if (end && *end == ',')
                y = g_ascii_strtod(end + 1, &end);
            if (!end || *end || isnan(y) || r->n >= ZONES_MAX_POINTS + 1) {
                rc = r->n > ZONES_MAX_POINTS ? fail(error, r, "more than %d points", ZONES_MAX_POINTS)
                                             : fail(error, r, "'%s' is not a point x,y", *p);
                break;
            }
            r->points = g_renew(zones_point, r->points, r->n + 1);
            r->points[r->n++] = (zones_point){ x, y };
        }
        g_strfreev(pts);
    }
    g_strfreev(items);
    return rc;
}

static int parse_json_region(zones_config *c, const reel_json_value *v, bool line, GError **error)
{
    const char *name = reel_json_member_string(v, "name", NULL);
    if (!name)
        return fail(error, NULL, "every %s has a \"name\"", line ? "line" : "zone");
    zones_region *r = add_region(c, line, name, error);
    if (!r)
        return REEL_EINVAL;
    const reel_json_value *pts = reel_json_member(v, "points");
    if (!pts || pts->kind != REEL_JSON_ARRAY || pts->items->len > ZONES_MAX_POINTS)
        return fail(error, r, "\"points\" is a list of up to %d [x, y] pairs", ZONES_MAX_POINTS);
    r->points = g_new0(zones_point, MAX(pts->items->len, 1));
    for (guint i = 0; i < pts->items->len; i++) {
        const reel_json_value *p = pts->items->pdata[i];
        const reel_json_value *x = p->kind == REEL_JSON_ARRAY && p->items->len == 2 ? p->items->pdata[0] : NULL;
        const reel_json_value *y = x ? p->items->pdata[1] : NULL;
        if (!x || x->kind != REEL_JSON_NUMBER || y->kind != REEL_JSON_NUMBER)
            return fail(error, r, "point %u is not [x, y]", i + 1);
        r->points[r->n++] = (zones_point){ x->number, y->number };
    }
    const reel_json_value *stream = reel_json_member(v, "stream");
    if (stream && (stream->kind != REEL_JSON_NUMBER || stream->number < 0 || stream->number > G_MAXINT ||
                   stream->number != floor(stream->number)))
        return fail(error, r, "\"stream\" is a stream id, 0 or more");
    r->stream = stream ? (int)stream->number : -1;
    const reel_json_value *classes = reel_json_member(v, "classes");
    if (classes) {
        if (classes->kind != REEL_JSON_ARRAY || classes->items->len == 0 || classes->items->len > 256)
            return fail(error, r, "\"classes\" is a list of labels or class ids");
        r->classes = g_new0(char *, classes->items->len + 1);
        for (guint i = 0; i < classes->items->len; i++) {
            const reel_json_value *k = classes->items->pdata[i];
            if (k->kind == REEL_JSON_STRING && *k->string && strlen(k->string) < REEL_LABEL_MAX)
                r->classes[i] = g_strdup(k->string);
            else if (k->kind == REEL_JSON_NUMBER && k->number >= 0 && k->number < 1e9 && k->number == floor(k->number))
                r->classes[i] = g_strdup_printf("%d", (int)k->number);
            else
                return fail(error, r, "class %u is neither a label nor a class id", i + 1);
        }
    }
    return 0;
}

static int parse_json(zones_config *c, const char *text, const char *what, GError **error)
{
    GError *err = NULL;
    reel_json_value *root = reel_json_parse(text, strlen(text), &err);
    if (!root) {
        fail(error, NULL, "%s", err->message);
        g_error_free(err);
        return REEL_EINVAL;
    }
    int rc = root->kind == REEL_JSON_OBJECT ? 0 : fail(error, NULL, "not a JSON object");
    for (int line = 0; line < 2 && rc == 0; line++) {
        const reel_json_value *list = reel_json_member(root, line ? "lines" : "zones");
        if (list && list->kind != REEL_JSON_ARRAY)
            rc = fail(error, NULL, "\"%s\" is a list", line ? "lines" : "zones");
        for (guint i = 0; list && rc == 0 && i < list->items->len; i++)
            rc = parse_json_region(c, list->items->pdata[i], line, error);
    }
    for (guint i = 0; rc == 0 && i < root->keys->len; i++) {
        const char *k = root->keys->pdata[i];
        if (strcmp(k, "zones") != 0 && strcmp(k, "lines") != 0)
            rc = fail(error, NULL, "unknown key \"%s\" (\"zones\" and \"lines\" are known)", k);
    }
    if (rc < 0 && error && *error)
        g_prefix_error(error, "%s: ", what);
    reel_json_free(root);
    return rc;
}

zones_config *zones_config_parse(const char *zones, const char *lines, const char *json, const char *json_name,
                                 bool normalized, GError **error)
{
    zones_config *c = g_new0(zones_config, 1);
    int rc = 0;
    if (zones && *zones)
        rc = parse_text(c, zones, false, error);
    if (rc == 0 && lines && *lines)
        rc = parse_text(c, lines, true, error);
    if (rc == 0 && json)
        rc = parse_json(c, json, json_name ? json_name : "config", error);
    for (int i = 0; rc == 0 && i < c->n; i++)
        rc = check_region(&c->regions[i], normalized, error);
    if (rc < 0)
        g_clear_pointer(&c, zones_config_free);
    return c;
}

void zones_config_free(zones_config *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++) {
        g_free(c->regions[i].points);
        g_strfreev(c->regions[i].classes);
    }
    g_free(c->regions);
    g_free(c);
}

int zones_config_check_frame(const zones_config *c, int width, int height, GError **error)
{
    for (int i = 0; i < c->n; i++)
        for (int k = 0; k < c->regions[i].n; k++) {
            zones_point p = c->regions[i].points[k];
            if (p.x > width || p.y > height)
                return fail(error, &c->regions[i], "point %d (%g, %g) is outside the %dx%d frame", k + 1, p.x, p.y,
                            width, height);
        }
    return 0;
}

bool zones_region_holds(const zones_region *r, zones_point p)
{
    bool in = false;
    for (int i = 0, j = r->n - 1; i < r->n; j = i++) {
        zones_point a = r->points[i], b = r->points[j];
        if ((a.y > p.y) != (b.y > p.y) && p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x)
            in = !in;
    }
    return in;
}

bool zones_region_counts(const zones_region *r, int class_id, const char *label)
{
    if (!r->classes)
        return true;
    char id[16];
    g_snprintf(id, sizeof id, "%d", class_id);
    for (char **k = r->classes; *k; k++)
        if ((label && *label && strcmp(*k, label) == 0) || (class_id >= 0 && strcmp(*k, id) == 0))
            return true;
    return false;
}

double zones_line_side(const zones_region *r, zones_point p)
{
    return cross(r->points[0], r->points[1], p);
}

bool zones_line_crossed(const zones_region *r, zones_point a, zones_point b)
{
    double sa = zones_line_side(r, a), sb = zones_line_side(r, b);
    return ((sa < 0 && sb > 0) || (sa > 0 && sb < 0)) && segments_meet(a, b, r->points[0], r->points[1]);
}

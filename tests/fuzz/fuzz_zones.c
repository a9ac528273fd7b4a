// Fuzz target: the zones and lines of `zones` (elements/zones_config.c),
// which reach reel serve from the network (PATCH .../elements/NAME). The
// first byte picks what the rest is: the zones property, the lines
// property or a JSON file, normalized or in pixels. Whatever is accepted
// must hold what the checks promise (names, point counts, coordinates);
// the geometry then runs on it. Whatever is refused comes with a message.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elements/zones_config.h"

static void require(bool ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 3;
    bool normalized = data[0] & 4;
    char *text = g_strndup((const char *)data + 1, size - 1);
    GError *err = NULL;
    zones_config *c = zones_config_parse(mode == 0 ? text : NULL, mode == 1 ? text : NULL, mode == 2 ? text : NULL,
                                         "fuzz.json", normalized, &err);
    require((c == NULL) == (err != NULL));
    if (!c) {
        require(err->message && *err->message);
        g_error_free(err);
        g_free(text);
        return 0;
    }
    require(c->n <= ZONES_MAX_REGIONS);
    for (int i = 0; i < c->n; i++) {
        const zones_region *r = &c->regions[i];
        size_t len = strlen(r->name);
        require(len > 0 && len < REEL_LABEL_MAX);
        for (int j = 0; j < i; j++)
            require(strcmp(c->regions[j].name, r->name) != 0);
        require(r->line ? r->n == 2 : r->n >= 3 && r->n <= ZONES_MAX_POINTS);
        for (int k = 0; k < r->n; k++) {
            zones_point p = r->points[k];
            require(isfinite(p.x) && isfinite(p.y) && p.x >= 0 && p.y >= 0);
            require(!normalized || (p.x <= 1 && p.y <= 1));
        }
        zones_point a = r->points[0], b = r->points[r->n - 1], mid = { (a.x + b.x) / 2, (a.y + b.y) / 2 };
        if (r->line)
            (void)zones_line_crossed(r, (zones_point){ mid.x - 1, mid.y - 1 }, (zones_point){ mid.x + 1, mid.y + 1 });
        else
            (void)zones_region_holds(r, mid);
        (void)zones_region_counts(r, 0, "person");
    }
    if (zones_config_check_frame(c, 640, 360, &err) < 0) {
        require(err && strstr(err->message, "outside"));
        g_error_free(err);
    }
    zones_config_free(c);
    g_free(text);
    return 0;
}

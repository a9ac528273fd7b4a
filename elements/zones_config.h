// The zones and lines of the `zones` element: parsed from its properties or
// a JSON file, checked, and the geometry they need. Only elements/ and tests
// include this.
#ifndef REEL_ELEMENTS_ZONES_CONFIG_H
#define REEL_ELEMENTS_ZONES_CONFIG_H

#include <glib.h>

#include "reel/reel.h"

#define ZONES_MAX_REGIONS 256
#define ZONES_MAX_POINTS REEL_REGION_MAX_POINTS

typedef struct zones_point {
    double x, y;
} zones_point;

typedef struct zones_region {
    char name[REEL_LABEL_MAX];
    bool line;            // a directed segment, points[0] to points[1]; else a polygon
    int n;
    zones_point *points;  // in the configuration's units (normalized or pixels)
    int stream;           // -1: every stream
    char **classes;       // labels or class ids that count; NULL: every class
} zones_region;

typedef struct zones_config {
    int n;
    zones_region *regions;
} zones_config;

// `zones` ("NAME: x,y x,y x,y ...; NAME: ...") and `lines` ("NAME: x,y x,y;
// ...") texts and the text of a JSON file ({"zones": [{"name", "points":
// [[x, y], ...], "classes": ["person", 2], "stream": 0}], "lines": [...]}),
// any of them NULL. Checked: names (unique, at most 31 bytes), polygons (3
// to 64 points, an area, no edge crossing another), lines (two distinct
// points), coordinates within [0, 1] when normalized. NULL with *error
// naming the zone or line at fault.
zones_config *zones_config_parse(const char *zones, const char *lines, const char *json, const char *json_name,
                                 bool normalized, GError **error);
void zones_config_free(zones_config *c);
// Pixel coordinates against a frame's size: an error naming the first
// region with a point outside it.
int zones_config_check_frame(const zones_config *c, int width, int height, GError **error);

// Whether region r (a zone) holds point p; and whether it counts objects of
// this class.
bool zones_region_holds(const zones_region *r, zones_point p);
bool zones_region_counts(const zones_region *r, int class_id, const char *label);
// Which side of line r point p is on: > 0 right (walking points[0] to
// points[1], y down), < 0 left, 0 on it.
double zones_line_side(const zones_region *r, zones_point p);
// Whether the move a -> b crosses line r: a and b strictly on different
// sides, and the move meets the segment between its points.
bool zones_line_crossed(const zones_region *r, zones_point a, zones_point b);

#endif

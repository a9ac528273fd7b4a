// Reading a line back for the fuzz targets: the library's strict JSON reader
// (pipeline/json_read.h), then the scalars it holds in document order.
#ifndef REEL_TESTS_FUZZ_JSON_CHECK_H
#define REEL_TESTS_FUZZ_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

typedef enum json_scalar_kind { JSON_NUMBER, JSON_STRING, JSON_NULL, JSON_BOOL } json_scalar_kind;

// A scalar value met on the way (object keys excluded).
typedef struct json_scalar {
    json_scalar_kind kind;
    double number;  // JSON_NUMBER
    char *string;   // JSON_STRING: decoded UTF-8 (g_free'd by json_scalars_free)
} json_scalar;

// Checks that text[0..len) is exactly one JSON value. On success appends its
// scalars in document order to `scalars` (a GArray of json_scalar) and
// returns true; otherwise returns false with *error saying what and where.
bool json_check(const char *text, size_t len, GArray *scalars, GError **error);

void json_scalars_free(GArray *scalars);

#endif

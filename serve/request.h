// What the JSON body of a request asks, checked: every type and bound is
// here, so that a handler sees only values it can use, and a client gets
// one clear message for what is wrong. Pure functions of the parsed body
// (fuzzed by tests/fuzz/fuzz_request.c).
#ifndef REEL_SERVE_REQUEST_H
#define REEL_SERVE_REQUEST_H

#include <stdbool.h>
#include <glib.h>

#include "base/json_read.h"

enum {
    SERVE_MAX_VALUES = 16,        // a stream's values
    SERVE_MAX_VALUE_BYTES = 4096, // one value: a URL with its query
};

// POST /pipelines: {"description": TEXT, "id"?: ID}. Borrows from body.
typedef struct serve_pipeline_request {
    const char *description;
    const char *id; // NULL: the service picks one
} serve_pipeline_request;
bool serve_request_pipeline(const reel_json_value *body, serve_pipeline_request *out, GError **error);

// POST /pipelines/ID/streams: {"url": URL, NAME: VALUE, ...}: the values
// that fill the pipeline's stream-template, NAME, VALUE, ..., NULL (url
// first; g_strfreev). Names are 1 to 32 letters, digits, '-' and '_', not
// "stream" (the id reel gives); values strings without control characters,
// at most SERVE_MAX_VALUE_BYTES; at most SERVE_MAX_VALUES of them.
char **serve_request_stream_values(const reel_json_value *body, GError **error);

// PATCH /pipelines/ID/elements/NAME: {PROPERTY: VALUE, ...} with strings,
// numbers and booleans, as PROPERTY, TEXT, ..., NULL (g_strfreev); at
// least one.
char **serve_request_properties(const reel_json_value *body, GError **error);

#endif

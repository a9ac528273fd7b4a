// Reading JSON text (RFC 8259, strictly): the jobs, job states and worker
// health the fleet passes around as messages, and metadata lines read back
// in tests. Nesting is limited to 32 levels.
#ifndef REEL_BASE_JSON_READ_H
#define REEL_BASE_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <glib.h>

typedef enum { REEL_JSON_NULL, REEL_JSON_BOOL, REEL_JSON_NUMBER, REEL_JSON_STRING, REEL_JSON_ARRAY,
               REEL_JSON_OBJECT } reel_json_kind;

typedef struct reel_json_value reel_json_value;
struct reel_json_value {
    reel_json_kind kind;
    bool boolean;
    double number;
    char *string;        // REEL_JSON_STRING: valid UTF-8
    GPtrArray *items;    // REEL_JSON_ARRAY and REEL_JSON_OBJECT: reel_json_value *
    GPtrArray *keys;     // REEL_JSON_OBJECT: char *, one per item
};

// Parses `len` bytes of text (no NUL needed). Returns NULL with *error set
// (REEL_EFORMAT, naming the byte offset) when it is not one JSON value.
// Free with reel_json_free().
reel_json_value *reel_json_parse(const char *text, size_t len, GError **error);
void reel_json_free(reel_json_value *v);

// The member `key` of an object, or NULL (also when v is not an object).
const reel_json_value *reel_json_member(const reel_json_value *v, const char *key);
// Member `key` as a string / number, or `fallback` when missing or of another kind.
const char *reel_json_member_string(const reel_json_value *v, const char *key, const char *fallback);
double reel_json_member_number(const reel_json_value *v, const char *key, double fallback);

#endif

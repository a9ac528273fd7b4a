// The text pipeline parser, internal half: text -> plain description
// (parse.c), description -> pipeline (parse_build.c, reel_parse_launch()).
// Not to be confused with the public include/reel/parse.h.
//
// The description is plain data: no element lookups, no pipeline. Every
// piece remembers where it was written (byte offsets into `text`) so that the
// builder can point errors at it.
#ifndef REEL_PIPELINE_PARSE_H
#define REEL_PIPELINE_PARSE_H

#include <stddef.h>
#include <glib.h>

#include "reel/caps.h"

typedef enum reel_parse_kind {
    REEL_PARSE_ELEMENT, // a class name with key=value properties
    REEL_PARSE_REF,     // `x.`: the element named x, defined anywhere
    REEL_PARSE_CAPS,    // a caps filter: becomes a capsfilter element
    REEL_PARSE_KIND_COUNT,
} reel_parse_kind;

// Bytes [pos, pos + len) of the description's text.
typedef struct reel_parse_span {
    size_t pos, len;
} reel_parse_span;

typedef struct reel_parse_prop {
    char *key;
    char *value;                // quotes removed, escapes resolved
    reel_parse_span key_span;
    reel_parse_span value_span; // as written, quotes included
} reel_parse_prop;

typedef struct reel_parse_item {
    reel_parse_kind kind;
    // ELEMENT: the class name; REF: the name referred to (without the '.');
    // CAPS: the caps text without the whitespace written after commas (and,
    // unquoted, around '='), quotes and escapes resolved.
    char *text;
    reel_parse_span span;   // the class name, `x.`, or the caps as written (quotes included)
    reel_parse_span link;   // the '!' before this item; len 0 for a chain's first
    reel_parse_prop *props; // ELEMENT only, in written order; `name` included
    size_t n_props;
    // CAPS only: caps_pos[i] is the offset in the source of text[i], for
    // i <= strlen(text) (the last one is the end of the caps as written, or
    // the closing quote).
    size_t *caps_pos;
} reel_parse_item;

// item ( '!' item )*
typedef struct reel_parse_chain {
    reel_parse_item *items;
    size_t n_items;
} reel_parse_chain;

typedef struct reel_parse_description {
    char *text;   // a copy of the source; spans point into it
    char *origin; // names the source in messages ("pipeline", a file name)
    // key=value settings before the first chain (device=vulkan:0), for the
    // pipeline itself
    reel_parse_prop *settings;
    size_t n_settings;
    reel_parse_chain *chains;
    size_t n_chains;
} reel_parse_description;

// Parses `text` (origin NULL: "pipeline"). Returns a description the caller
// frees with reel_parse_description_free(), or NULL with *error set
// (REEL_ERROR/REEL_EINVAL, formatted by reel_parse_error()) on a syntax
// error or an empty description. The first error wins.
reel_parse_description *reel_parse_describe(const char *text, const char *origin, GError **error);

// NULL-safe; sets *d to NULL.
void reel_parse_description_free(reel_parse_description **d);

// The property `key` of an ELEMENT item, or NULL. (A key set twice is a
// syntax error, so there is at most one.)
const reel_parse_prop *reel_parse_item_prop(const reel_parse_item *item, const char *key);

// 1-based line and byte column of offset `pos` in `text`.
void reel_parse_position(const char *text, size_t pos, int *line, int *col);

// Sets *error (REEL_ERROR/REEL_EINVAL, when error is not NULL) to
//
//   origin:LINE:COL: error: MESSAGE
//     LINE | the line holding at.pos
//          |        ^~~~            (under `at`, clipped to that line)
//   hint: HINT                      (only when hint is not NULL)
//
// without a trailing newline. Tabs in the line are copied into the caret
// line so the caret stays aligned.
void reel_parse_error(GError **error, const reel_parse_description *d, reel_parse_span at,
                      const char *hint, const char *fmt, ...) G_GNUC_PRINTF(5, 6);

// reel_caps_parse() that also says, on failure, how reel writes what was
// written when it has a spelling for it (GStreamer's video/x-raw(...)
// features, format lists, fields reel lacks): *hint, g_free it; NULL when
// there is none. In caps.c.
bool reel_caps_parse_hint(const char *text, reel_caps *out, size_t *err_offset, char **hint, GError **error);

#endif

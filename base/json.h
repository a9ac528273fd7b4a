// Writing JSON text: just what the report and the trace need.
#ifndef REEL_BASE_JSON_H
#define REEL_BASE_JSON_H

#include <glib.h>

// Appends s as a JSON string, quoted and escaped (control characters as
// \u00XX), invalid UTF-8 replaced by U+FFFD. NULL is the empty string.
void reel_json_string(GString *out, const char *s);

// Writes text to path via a temporary file renamed into place, so that a
// reader never sees half a file. Returns 0 or REEL_EIO with *error set.
int reel_write_file_atomically(const char *path, const GString *text, GError **error);

#endif

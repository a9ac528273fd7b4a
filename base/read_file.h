// reel — reading a whole file, bounded.
//
// g_file_get_contents() reads until the end: /dev/zero, a FIFO or a file
// that grows while read would take all memory. Files that come from users
// (labels, manifests, policies, models) are read through this instead.
#ifndef REEL_BASE_READ_FILE_H
#define REEL_BASE_READ_FILE_H

#include <glib.h>

// Reads `path` into *data (NUL-terminated, g_free it; *len without the NUL,
// len may be NULL). `what` names the file in messages ("labels file").
// More than max_bytes is an error naming the limit and `limit_env` (the
// variable that raises it; may be NULL). Returns 0, REEL_EIO (cannot open or
// read) or REEL_EFORMAT (too large), with *error set.
int reel_read_file(const char *path, const char *what, gsize max_bytes, const char *limit_env, char **data,
                   gsize *len, GError **error);

// reel_read_file() bounded by REEL_LIMIT_TEXT_BYTES.
int reel_read_text_file(const char *path, const char *what, char **data, GError **error);

#endif

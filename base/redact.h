// Keeping secrets and hostile bytes out of what reel prints.
#ifndef REEL_BASE_REDACT_H
#define REEL_BASE_REDACT_H

#include <stdbool.h>
#include <glib.h>

// `text` with the credentials of every URL in it hidden: in
// "scheme://user:password@host" the password becomes "***", and a userinfo
// without a colon ("nats://TOKEN@host", a token) becomes "***" whole.
// keep_width: each hidden character becomes one '*' instead, so that columns
// after it stay where they were (a parse error's caret). Caller frees.
char *reel_redact(const char *text, bool keep_width);

// Appends `text` with control characters (and DEL) as \n, \t, \r or \xNN and
// backslashes doubled, so that a name or message from the network cannot
// move the cursor, end a log line or pass for another line.
void reel_escape_control(GString *out, const char *text);

#endif

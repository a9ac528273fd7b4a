// The text metasink writes for one frame, apart from the element so that it
// can be driven directly (tests, fuzzing). Only elements/ and tests include this.
#ifndef REEL_ELEMENTS_META_JSON_H
#define REEL_ELEMENTS_META_JSON_H

#include <glib.h>

#include "reel/reel.h"

// Appends v formatted with `fmt` ("%.3f") in the C locale whatever the
// program's, whole however large; `none` when v is not finite.
void reel_meta_add_number(GString *out, double v, const char *fmt, const char *none);

// A label field as a C string of valid UTF-8 (g_free it): the field need not
// end in a NUL, and models' label files need not be UTF-8.
char *reel_meta_label_text(const char label[REEL_LABEL_MAX]);

// The buffer's pts in seconds; NAN when unknown.
double reel_meta_pts_seconds(const reel_buffer *b);

// Appends one frame's JSON line (metasink.c describes the keys) ending in
// '\n'. dets and cls may be NULL.
void reel_meta_json_frame(GString *out, const reel_buffer *b, const reel_detections *dets,
                          const reel_classifications *cls);

// One zones event as JSON (the "events" items metasink.c describes).
void reel_meta_json_event(GString *out, const reel_region_event *ev);

// The message sinks' (natssink, mqttsink) view: the buffer's frame object
// without the newline, which ends a line in a file, not a message; `out`
// is overwritten.
void reel_meta_message(GString *out, const reel_buffer *b);
// A message's subject or topic: `pattern` with every {stream} replaced by
// the stream id; `out` is overwritten.
void reel_meta_destination(GString *out, const char *pattern, int stream_id);

#endif

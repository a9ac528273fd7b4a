// The pipelines `reel serve` hosts, by id: added from its config folder at
// launch and through the HTTP API, removed through it, all stopped at exit.
#ifndef REEL_SERVE_SERVICE_H
#define REEL_SERVE_SERVICE_H

#include <glib.h>

#include "serve/hosted.h"

typedef struct serve_service serve_service;

// Errors of the service itself: an id that is taken.
#define SERVE_ERROR serve_error_quark()
GQuark serve_error_quark(void);
enum { SERVE_ERROR_EXISTS = 1 };

serve_service *serve_service_new(void);
// Stops every pipeline (sinks finalize), waits for those being removed, and
// frees the service.
void serve_service_free(serve_service **s);

// Checks that `text` parses (the error, with line, column and caret, comes
// back in *error, REEL_EINVAL), then hosts it under `id` (NULL: the next
// free "pN"). Returns the id (owned by the service), or NULL with *error set:
// a bad description or id (REEL_EINVAL), an id taken (SERVE_ERROR_EXISTS).
const char *serve_service_add(serve_service *s, const char *id, const char *text, const char *origin,
                              GError **error);
// Removes a pipeline and stops it on a thread of its own (its sinks may take
// a while to finalize), then calls done(data) on the calling thread's
// default main context. False, and no call, when there is none of that id.
bool serve_service_remove(serve_service *s, const char *id, void (*done)(gpointer data), gpointer data);
// Every .reel file of `dir`, as a pipeline named after the file. A file
// that does not parse is reported to stderr and left out; the others run.
// Returns how many started, or -1 with *error set when dir cannot be read.
int serve_service_load_dir(serve_service *s, const char *dir, GError **error);

// Calls fn for each hosted pipeline, in the order they were added, under
// the service's lock (fn must not add or remove).
void serve_service_each(serve_service *s, void (*fn)(serve_hosted *h, void *data), void *data);
// Calls fn with the pipeline of that id (NULL when none), under the lock.
void serve_service_with(serve_service *s, const char *id, void (*fn)(serve_hosted *h, void *data), void *data);

// Ids are 1 to 64 letters, digits, '-' and '_'.
bool serve_id_valid(const char *id);

#endif

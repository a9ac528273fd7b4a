// reel — the bus: messages from a running pipeline to the application.
#ifndef REEL_BUS_H
#define REEL_BUS_H

#include <stdint.h>
#include "export.h"

typedef enum reel_message_type {
    REEL_MESSAGE_ERROR,   // the pipeline stops
    REEL_MESSAGE_WARNING, // something went wrong; the pipeline goes on
    REEL_MESSAGE_INFO,    // something worth telling (a checksum, a summary)
    REEL_MESSAGE_EOS,     // every sink has finished
    REEL_MESSAGE_STATS,   // periodic progress; reel_pipeline_report() has the details
    REEL_MESSAGE_TYPE_COUNT,
} reel_message_type;

typedef struct reel_message {
    reel_message_type type;
    int code;             // ERROR: a REEL_E* code
    const char *element;  // name of the element it is about, or NULL
    const char *text;     // human-readable, without trailing newline
    int64_t time_us;      // monotonic time it was posted
} reel_message;

// Called for every message, on the thread that posts it (a worker, a source
// thread or the caller of reel_pipeline_run()): keep it short and
// thread-safe. `msg` is valid during the call only.
typedef void (*reel_bus_handler)(const reel_message *msg, void *user);

REEL_API const char *reel_message_type_name(reel_message_type t);

#endif

// reel — error codes shared by every module.
#ifndef REEL_ERROR_H
#define REEL_ERROR_H

#include <glib.h>
#include "export.h"

// Functions return 0 on success or a negative code below. End of stream and
// "try again" are flow codes, not failures.
enum {
    REEL_OK = 0,
    REEL_EOS = 1,              // flow: no more data
    REEL_AGAIN = 2,            // flow: nothing now, call again later
    REEL_EINVAL = -1,          // invalid argument or description
    REEL_ENOMEM = -2,          // host memory or a configured memory limit
    REEL_ENOMEM_DEVICE = -3,   // device memory exhausted
    REEL_EDEVICE_LOST = -4,
    REEL_EUNSUPPORTED = -5,    // valid, but not supported here
    REEL_EFORMAT = -6,         // formats do not agree / malformed data
    REEL_EIO = -7,             // file, network or device I/O
    REEL_ESTOPPED = -8,        // the pipeline was stopped
    REEL_EINTERNAL = -9,       // a bug in reel
};

// A static, human-readable name for a code ("invalid argument"). Never NULL.
REEL_API const char *reel_strerror(int code);

// GError domain of every error reel reports through GError; the error's code
// is one of the REEL_E* values above.
#define REEL_ERROR (reel_error_quark())
REEL_API GQuark reel_error_quark(void);

#endif

// Modules: element classes built on a large library (FFmpeg, libnats,
// libmosquitto) live in shared objects of their own that libreel.so loads
// when a pipeline first names one of their elements, so that a program
// that never decodes a file never loads FFmpeg. libreel.a has them linked
// in. Only lib/ includes this.
#ifndef REEL_LIB_MODULES_H
#define REEL_LIB_MODULES_H

#include <stdbool.h>
#include <glib.h>

#include "reel/reel.h"

typedef struct reel_module_info {
    const char *name;              // "media": libreel-media.so, reel_module_media_register()
    const char *const *elements;   // the element classes it registers, NULL-terminated
    const char *needs;             // what it is built on, for messages: "FFmpeg"
    const char *option;            // the CMake option that leaves it out, or NULL
    bool built;                    // part of this build
} reel_module_info;

// Every module reel knows of, built or not; NULL-terminated.
extern const reel_module_info *const reel_modules[];

// The module whose elements include `element`, or NULL.
const reel_module_info *reel_module_of(const char *element);

// Signature of a module's entry point, reel_module_NAME_register: registers
// its element classes, applying what `params` asks of its library.
typedef int (*reel_module_register_fn)(const reel_init_params *params);

// Loads a built module and registers its classes (once; later calls return
// the first result). Returns 0, or REEL_EUNSUPPORTED / REEL_EIO with *error
// saying why (not built, its file missing or unloadable).
// Thread-safety: any thread.
int reel_module_load(const reel_module_info *m, const reel_init_params *params, GError **error);

// A built module's entry point, or NULL with *error set. Implemented twice:
// load_shared.c (dlopen from reel_module_dir(), for libreel.so) and
// load_static.c (linked in, for libreel.a).
reel_module_register_fn reel_module_entry(const reel_module_info *m, GError **error);

#endif

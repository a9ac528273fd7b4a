// reel — video inference pipelines. Include this one header.
#ifndef REEL_H
#define REEL_H

#include "app.h"
#include "buffer.h"
#include "bus.h"
#include "caps.h"
#include "device.h"
#include "element.h"
#include "error.h"
#include "limits.h"
#include "model.h"
#include "parse.h"
#include "pipeline.h"
#include "quantize.h"
#include "tensor.h"
#include "vision.h"
#include "zoo.h"
#include "export.h"
#include <reel/version.h>

// What reel may change in the process that embeds it. By default nothing:
// the library leaves the environment, FFmpeg's log level and OpenBLAS's
// thread count as the program has them. The reel program asks for both.
typedef struct reel_init_params {
    // FFmpeg's own log level (process-wide), set when reel first loads
    // FFmpeg: NULL leaves it; "quiet", "error", "warning", "info", "debug".
    // reel reports failures itself, so the reel program sets "quiet".
    const char *ffmpeg_log;
    // OpenBLAS's thread count (process-wide), set when reel first loads
    // OpenBLAS (at the first inference on the cpu): 0 leaves it. reel's
    // kernels call OpenBLAS from their own worker threads, one call each;
    // OpenBLAS's own threads on top of them oversubscribe the cores, so a
    // program that runs models only through reel sets 1.
    int blas_threads;
} reel_init_params;
#define reel_init_params(...) (&(reel_init_params){ __VA_ARGS__ })

// Registers the built-in elements and the modules that provide the rest
// (media on FFmpeg, natssink on libnats, mqttsink on libmosquitto: loaded
// when a pipeline first names one of their elements). Call once before
// building pipelines; later calls do nothing (the first call's params
// apply; NULL: the defaults above). Thread-safety: safe from any thread.
REEL_API void reel_init_with(const reel_init_params *params);
// reel_init_with(NULL).
REEL_API void reel_init(void);

// Why there is no element class called `name` although reel knows of one
// (its module was left out of this build, or cannot be loaded), as a
// sentence to show the user (g_free); NULL when the class exists or reel
// knows of no such class.
REEL_API char *reel_element_class_why_missing(const char *name);

// Where reel loads its modules from: $REEL_MODULE_DIR, else reel-modules/
// beside libreel.so. A static string.
REEL_API const char *reel_module_dir(void);

#endif

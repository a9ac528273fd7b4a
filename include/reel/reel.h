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
#include "tensor.h"
#include "vision.h"
#include <reel/version.h>
#include "export.h"

// Registers the built-in elements and quiets FFmpeg's own logging (reel
// reports errors itself; REEL_FFMPEG_LOG=error|warning|info|debug brings it
// back). Call once before building pipelines; later calls do nothing.
// Thread-safety: safe from any thread.
REEL_API void reel_init(void);

#endif

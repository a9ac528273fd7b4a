// reel — embedding reel in an application: `appsrc` takes frames the
// application made (its own camera code, a renderer) into a running
// pipeline; `appsink` hands the pipeline's output (frames with their
// metadata: detections, tensors) back to it.
//
//   reel_pipeline *p = reel_parse_launch("appsrc name=in caps=video/raw,format=rgb24,"
//                                        "width=640,height=480,framerate=30/1 ! ... ! appsink name=out", ...);
//   reel_pipeline_start(p, &err);
//   // one thread:                          // another:
//   reel_buffer *b = reel_appsrc_alloc(in);  while ((b = reel_appsink_pull(out, -1)))
//   ...fill b->planes...                         ...; reel_buffer_unref(&b);
//   reel_appsrc_push(in, b);
//   reel_appsrc_end(in);                     reel_pipeline_wait(p, &err);
//
// Find the elements with reel_pipeline_find(p, "in"). Push and pull from
// different threads: with backpressure, a push waits for the pull.
#ifndef REEL_APP_H
#define REEL_APP_H

#include <stdbool.h>
#include <stdint.h>

#include "buffer.h"
#include "element.h"
#include "export.h"

// ---- appsrc ----------------------------------------------------------------
//
// Properties: caps (the output format, e.g.
// "video/raw,format=rgb24,width=640,height=480,framerate=30/1"; framerate
// may be left out: variable), max-buffers (queue bound, default 8), block
// (when the queue is full: wait, default; or fail with REEL_AGAIN).

// A buffer of the appsrc's negotiated format (host memory, from a pool that
// recycles it), for the application to fill and push. Caller owns it. NULL
// when the pipeline is not running or the format has no fixed size.
// Thread-safety: any thread.
REEL_API reel_buffer *reel_appsrc_alloc(reel_element *appsrc);

// Queues `buf` to be sent downstream; the appsrc takes ownership, also on
// failure. Sets frame_number (0, 1, ...) and, when buf->pts is
// REEL_PTS_NONE, the timestamps (from the framerate, else the push time in
// microseconds). Waits while the queue holds max-buffers.
// Returns 0; REEL_AGAIN when the queue is full and block=false (the buffer
// is dropped: a live frame that finds no room is stale anyway);
// REEL_ESTOPPED when the pipeline is not running or is stopping (a waiting
// push returns it within milliseconds); REEL_EFORMAT when buf's format is
// not the negotiated one (also reported as the pipeline's error, naming both
// formats, which stops the run); REEL_EINVAL for an element that is not an
// appsrc or a push after reel_appsrc_end().
// Thread-safety: any thread; several pushers are served in turn.
REEL_API int reel_appsrc_push(reel_element *appsrc, reel_buffer *buf);

// Ends the stream: buffers queued before still go out, then EOS.
// Returns 0, or REEL_EINVAL for an element that is not an appsrc.
// Thread-safety: any thread.
REEL_API int reel_appsrc_end(reel_element *appsrc);

// ---- appsink ---------------------------------------------------------------
//
// Properties: caps (formats it accepts, default any), max-buffers (queue
// bound, default 8), drop (when the queue is full: drop the oldest queued
// buffer; default false: the pipeline waits for the application).

// The next buffer, oldest first; the caller owns it. Waits up to timeout_us
// microseconds (<0: without limit; 0: does not wait). Returns NULL at end of
// stream (reel_appsink_is_eos() is then true; after
// reel_pipeline_send_eos() too, once what was on its way has come), on
// timeout, when the pipeline is not running, or once it is aborted or fails.
// Buffers queued when the run ended are still returned first.
// Thread-safety: any thread; call after reel_pipeline_start().
REEL_API reel_buffer *reel_appsink_pull(reel_element *appsink, int64_t timeout_us);

// Whether end of stream has reached the appsink and every buffer before it
// was pulled. Thread-safety: any thread.
REEL_API bool reel_appsink_is_eos(reel_element *appsink);

// Called for each buffer instead of queueing it, on the pipeline's thread
// that runs the appsink; the callee owns `buf`. Keep it short: the pipeline
// waits for it (that is the backpressure). fn NULL: back to queueing.
typedef void (*reel_appsink_callback)(reel_buffer *buf, void *user);

// Thread-safety: any thread; a call in progress may still use the old
// callback. Set it before reel_pipeline_start() to see every buffer.
REEL_API void reel_appsink_set_callback(reel_element *appsink, reel_appsink_callback fn, void *user);

#endif

// reel — text pipelines.
//
//   testsrc num-buffers=100 ! video/raw,width=320 ! tee name=t
//   t. ! queue ! fakesink
//   t. ! queue leaky=downstream ! fakesink   # a comment
//
// `!` links, `name=x` names an element and `x.` refers to it again (a branch
// from it, or one more input into it), a caps filter restricts the format on a
// link, values may be quoted ("a b", 'a b') with \" \\ \n \t escapes.
#ifndef REEL_PARSE_H
#define REEL_PARSE_H

#include <glib.h>

#include "pipeline.h"
#include "export.h"

// Builds a pipeline from a description. `origin` names the text in messages
// ("pipeline", or a file name). On failure returns NULL and sets *error to a
// message of the form
//
//   origin:LINE:COL: error: what went wrong
//     LINE | the offending line
//          |        ^~~~
//   hint: did you mean 'fakesink'?
//
// `params` may be NULL.
REEL_API reel_pipeline *reel_parse_launch(const char *text, const char *origin,
                                 const reel_pipeline_params *params, GError **error);

#endif

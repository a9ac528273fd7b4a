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

// Adds the elements of a description fragment to `p`, also while it runs
// (GStreamer's dynamic pipelines): `x.` refers to an element already there,
// as in a description, so that `source location={url} ! b.  u. ! metasink`
// joins a running batch `b` and unbatch `u`. While running, the new branch
// is placed, negotiated against the pads it joins, opened and started aside,
// then joins the run in one step; the others lose no frame. The elements it
// links to must pass frames on unchanged (batch, unbatch, tee, funnel); a
// new source without stream-id takes reel_pipeline_free_stream_id(), and an
// output of a running unbatch into the branch takes that source's stream.
// {NAME} in property values is replaced by the VALUE of `values` (NAME,
// VALUE, ..., NULL; may be NULL). Returns the new elements' names
// (g_strfreev) for reel_pipeline_remove_branch(), or NULL with *error set
// (parse errors with line, column and caret); on failure nothing is added.
// Thread-safety: any thread but an element's; one change of the graph at a
// time.
REEL_API char **reel_pipeline_add_branch(reel_pipeline *p, const char *text, const char *const *values,
                                         GError **error);

#endif

// reel — finding models: a path to an .onnx file, or a name in the model
// zoo, resolved as `infer model=...` resolves it.
#ifndef REEL_ZOO_H
#define REEL_ZOO_H

#include <glib.h>

#include "export.h"

// The ONNX file `spec` names: a path to an .onnx file, or a zoo name looked
// up in $REEL_ZOO (folders separated by ':') and then reel's own zoo, its
// file under $REEL_MODEL_DIR or reel's model cache. *manifest (may be NULL)
// gets the model's manifest path, or NULL when it has none. Returns the path
// (g_free both), or NULL with *error set: REEL_EINVAL (no such model: the
// message says what was searched and how to fetch a zoo model) or REEL_EIO
// (a manifest that cannot be read). Thread-safety: any thread.
REEL_API char *reel_model_find(const char *spec, char **manifest, GError **error);

#endif

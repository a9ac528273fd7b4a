// Model manifests and the model zoo.
//
// A manifest is a small key file (GLib's GKeyFile, INI syntax) that says what
// a model expects and how to read it. Beside a model (face.onnx -> face.reel)
// or in the zoo (models/zoo/NAME.reel, fetched into the model cache by
// scripts/fetch-models). Its groups are element class names and their keys
// those elements' properties, so each element takes its defaults from the
// group of its own name:
//
//   [model]        file = blazeface/face.onnx   (zoo: under the model cache)
//                  labels = coco.txt            (beside the manifest)
//   [preprocess]   scale = 0.00784313725490196
//                  offset = -1
//   [detect]       decoder = blazeface
//
// A property the user set is never overridden.
#ifndef REEL_ELEMENTS_MANIFEST_H
#define REEL_ELEMENTS_MANIFEST_H

#include "reel/reel.h"

typedef struct reel_model_file {
    char *name;     // zoo name or the file's stem ("face" for face.onnx)
    char *path;     // the ONNX file
    char *manifest; // the manifest's path, NULL when the model has none
} reel_model_file;

// Resolves a model spec: a path to an .onnx file, or a zoo name looked up in
// $REEL_ZOO (folders separated by ':') and then reel's own models/zoo, its
// file under $REEL_MODEL_DIR or reel's cache/models. On failure sets *error
// with what was searched and how to fetch a zoo model, and returns
// REEL_EINVAL (no such model) or REEL_EIO (a manifest that cannot be read).
int reel_model_resolve(const char *spec, reel_model_file *ref, GError **error);
void reel_model_file_clear(reel_model_file *ref);

// Sets every key of group `group` of the manifest as a property of e, except
// those the user set. Errors name the manifest, the key and the element.
int reel_manifest_apply(const char *manifest, const char *group, reel_element *e, GError **error);

// A [model] key of the manifest (g_free it), or NULL when absent. Paths
// (labels) come back resolved against the manifest's folder; one that leads
// out of it (absolute, '..', a link pointing out) is NULL with *error set
// (REEL_EINVAL).
// Keys of the other groups that name files or URLs are refused by
// reel_manifest_apply().
char *reel_manifest_model_key(const char *manifest, const char *key, bool is_path, GError **error);

// A file a zoo manifest's [model] `key` names in the model cache (a
// recognizer's keys), checked against the manifest's `sum_key` sha256 as
// the model file is. The path (g_free it), or NULL with *error set: the key
// absent, a path leading out of the cache, the file missing or changed.
char *reel_manifest_cache_file(const char *manifest, const char *key, const char *sum_key, GError **error);

// The nearest `infer` element downstream of e's output 0 (or upstream of its
// input 0), looking through elements with one input and one output (queue,
// upload, download, tee's first branch...), or NULL.
reel_element *reel_find_infer(reel_element *e, bool downstream);

#endif

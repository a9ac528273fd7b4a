// Model manifests and the zoo (elements/manifest.h).
#include <string.h>

#include "elements/manifest.h"

#ifndef REEL_ZOO_DIR
#define REEL_ZOO_DIR "models/zoo"
#endif
#ifndef REEL_MODEL_CACHE_DIR
#define REEL_MODEL_CACHE_DIR "cache/models"
#endif

void reel_model_file_clear(reel_model_file *ref)
{
    g_clear_pointer(&ref->name, g_free);
    g_clear_pointer(&ref->path, g_free);
    g_clear_pointer(&ref->manifest, g_free);
}

static GKeyFile *load(const char *manifest, GError **error)
{
    GKeyFile *kf = g_key_file_new();
    GError *err = NULL;
    if (!g_key_file_load_from_file(kf, manifest, G_KEY_FILE_NONE, &err)) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "model manifest %s: %s", manifest, err->message);
        g_error_free(err);
        g_key_file_free(kf);
        return NULL;
    }
    return kf;
}

// The zoo manifest NAME.reel, searched in $REEL_ZOO then reel's own zoo.
static char *find_in_zoo(const char *name, GString *searched)
{
    const char *env = g_getenv("REEL_ZOO");
    char *dirs = g_strdup_printf("%s%s%s", env ? env : "", env ? ":" : "", REEL_ZOO_DIR);
    char **list = g_strsplit(dirs, ":", -1), *found = NULL;
    for (char **d = list; *d && !found; d++) {
        if (!**d)
            continue;
        char *path = g_strdup_printf("%s/%s.reel", *d, name);
        g_string_append_printf(searched, "%s%s", searched->len ? ", " : "", path);
        if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
            found = path;
        else
            g_free(path);
    }
    g_strfreev(list);
    g_free(dirs);
    return found;
}

static int resolve_zoo(const char *spec, reel_model_file *ref, GError **error)
{
    GString *searched = g_string_new(NULL);
    char *manifest = find_in_zoo(spec, searched);
    if (!manifest) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "no model '%s': not a file, and not in the model zoo (%s)", spec,
                    searched->str);
        g_string_free(searched, TRUE);
        return REEL_EINVAL;
    }
    g_string_free(searched, TRUE);
    GKeyFile *kf = load(manifest, error);
    char *file = kf ? g_key_file_get_string(kf, "model", "file", NULL) : NULL;
    if (kf && !file)
        g_set_error(error, REEL_ERROR, REEL_EIO, "model manifest %s: no 'file' key in [model]", manifest);
    if (kf)
        g_key_file_free(kf);
    if (!file) {
        g_free(manifest);
        return REEL_EIO;
    }
    const char *cache = g_getenv("REEL_MODEL_DIR");
    ref->path = g_build_filename(cache && *cache ? cache : REEL_MODEL_CACHE_DIR, file, NULL);
    g_free(file);
    if (!g_file_test(ref->path, G_FILE_TEST_IS_REGULAR)) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL,
                    "model '%s' is in the zoo but not in the model cache (%s): fetch it with "
                    "scripts/fetch-models %s",
                    spec, ref->path, spec);
        g_free(manifest);
        reel_model_file_clear(ref);
        return REEL_EINVAL;
    }
    ref->name = g_strdup(spec);
    ref->manifest = manifest;
    return 0;
}

int reel_model_resolve(const char *spec, reel_model_file *ref, GError **error)
{
    memset(ref, 0, sizeof *ref);
    if (!spec || !*spec) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "no model given (model=PATH.onnx or a model zoo name)");
        return REEL_EINVAL;
    }
    bool is_path = strchr(spec, '/') || g_str_has_suffix(spec, ".onnx");
    if (!is_path && !g_file_test(spec, G_FILE_TEST_IS_REGULAR))
        return resolve_zoo(spec, ref, error);
    if (!g_file_test(spec, G_FILE_TEST_IS_REGULAR)) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "no model file %s", spec);
        return REEL_EINVAL;
    }
    ref->path = g_strdup(spec);
    char *base = g_path_get_basename(spec);
    char *dot = strrchr(base, '.');
    if (dot && dot != base)
        *dot = '\0';
    ref->name = base;
    // face.onnx -> face.reel beside it
    const char *ext = strrchr(spec, '.');
    size_t stem = ext && !strchr(ext, '/') ? (size_t)(ext - spec) : strlen(spec);
    char *manifest = g_strdup_printf("%.*s.reel", (int)stem, spec);
    if (g_file_test(manifest, G_FILE_TEST_IS_REGULAR))
        ref->manifest = manifest;
    else
        g_free(manifest);
    return 0;
}

int reel_manifest_apply(const char *manifest, const char *group, reel_element *e, GError **error)
{
    GKeyFile *kf = load(manifest, error);
    if (!kf)
        return REEL_EIO;
    gsize n = 0;
    char **keys = g_key_file_get_keys(kf, group, &n, NULL);
    int rc = 0;
    for (gsize i = 0; keys && i < n && rc == 0; i++) {
        if (reel_element_prop_is_set(e, keys[i]))
            continue;
        char *value = g_key_file_get_string(kf, group, keys[i], NULL);
        GError *err = NULL;
        if (value && (rc = reel_element_set(e, keys[i], value, &err)) < 0) {
            g_set_error(error, REEL_ERROR, rc, "model manifest %s, [%s] %s: %s", manifest, group, keys[i],
                        err->message);
            g_error_free(err);
        }
        g_free(value);
    }
    g_strfreev(keys);
    g_key_file_free(kf);
    return rc;
}

char *reel_manifest_model_key(const char *manifest, const char *key, bool is_path)
{
    GKeyFile *kf = load(manifest, NULL);
    char *value = kf ? g_key_file_get_string(kf, "model", key, NULL) : NULL;
    if (kf)
        g_key_file_free(kf);
    if (value && is_path && !g_path_is_absolute(value)) {
        char *dir = g_path_get_dirname(manifest);
        char *path = g_build_filename(dir, value, NULL);
        g_free(dir);
        g_free(value);
        value = path;
    }
    return value;
}

reel_element *reel_find_infer(reel_element *e, bool downstream)
{
    reel_element *at = e;
    // A bounded walk: pipelines are DAGs, but a description may be long.
    for (int steps = 0; at && steps < 32; steps++) {
        at = downstream ? reel_element_downstream(at, 0) : reel_element_upstream(at, 0);
        if (at && strcmp(reel_element_get_class(at)->name, "infer") == 0)
            return at;
    }
    return NULL;
}

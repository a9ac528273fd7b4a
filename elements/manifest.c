// Model manifests and the zoo (elements/manifest.h).
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/read_file.h"
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
    char *text;
    if (reel_read_text_file(manifest, "model manifest", &text, error) != 0)
        return NULL;
    GKeyFile *kf = g_key_file_new();
    GError *err = NULL;
    if (!g_key_file_load_from_data(kf, text, (gsize)-1, G_KEY_FILE_NONE, &err)) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "model manifest %s: %s", manifest, err->message);
        g_error_free(err);
        g_key_file_free(kf);
        kf = NULL;
    }
    g_free(text);
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

// Files whose checksum was found right, by (path, device, inode, size,
// mtime): a zoo model is hashed once per process, and again when it changes.
static GMutex checked_lock;
static GHashTable *checked;

static char *file_identity(const char *path, const struct stat *st)
{
    return g_strdup_printf("%s|%ju|%ju|%jd|%jd.%09ld", path, (uintmax_t)st->st_dev, (uintmax_t)st->st_ino,
                           (intmax_t)st->st_size, (intmax_t)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
}

static int hash_file(int fd, char **hex)
{
    GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
    guint8 chunk[65536];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            g_checksum_free(sum);
            return -1;
        }
        g_checksum_update(sum, chunk, n);
    }
    *hex = g_strdup(g_checksum_get_string(sum));
    g_checksum_free(sum);
    return 0;
}

// The model file against the manifest's file-sha256: a cache that was
// tampered with or truncated is refused at load, not only when fetched.
static int check_sha256(const char *path, const char *expected, GError **error)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "cannot open %s: %s", path, g_strerror(errno));
        if (fd >= 0)
            close(fd);
        return REEL_EIO;
    }
    char *id = file_identity(path, &st);
    g_mutex_lock(&checked_lock);
    bool known = checked && g_hash_table_contains(checked, id);
    g_mutex_unlock(&checked_lock);
    char *hex = NULL;
    int rc = 0;
    if (!known && hash_file(fd, &hex) != 0) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "cannot read %s: %s", path, g_strerror(errno));
        rc = REEL_EIO;
    } else if (!known && g_ascii_strcasecmp(hex, expected) != 0) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                    "%s has sha256 %s, the manifest pins %s: the file in the model cache is not the one fetched "
                    "(remove it and run scripts/fetch-models again)",
                    path, hex, expected);
        rc = REEL_EFORMAT;
    } else if (!known) {
        g_mutex_lock(&checked_lock);
        if (!checked)
            checked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_hash_table_add(checked, id);
        id = NULL;
        g_mutex_unlock(&checked_lock);
    }
    g_free(hex);
    g_free(id);
    close(fd);
    return rc;
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
    char *sum = kf ? g_key_file_get_string(kf, "model", "file-sha256", NULL) : NULL;
    if (kf && (!file || !sum))
        g_set_error(error, REEL_ERROR, REEL_EIO, "model manifest %s: no '%s' key in [model]", manifest,
                    file ? "file-sha256" : "file");
    if (kf)
        g_key_file_free(kf);
    if (!file || !sum) {
        g_free(file);
        g_free(sum);
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
        g_free(sum);
        reel_model_file_clear(ref);
        return REEL_EINVAL;
    }
    int rc = check_sha256(ref->path, sum, error);
    g_free(sum);
    if (rc != 0) {
        g_prefix_error(error, "model '%s' (%s): ", spec, manifest);
        g_free(manifest);
        reel_model_file_clear(ref);
        return rc;
    }
    ref->name = g_strdup(spec);
    ref->manifest = manifest;
    return 0;
}

char *reel_manifest_cache_file(const char *manifest, const char *key, const char *sum_key, GError **error)
{
    GKeyFile *kf = load(manifest, error);
    if (!kf)
        return NULL;
    char *file = g_key_file_get_string(kf, "model", key, NULL);
    char *sum = g_key_file_get_string(kf, "model", sum_key, NULL);
    g_key_file_free(kf);
    char *path = NULL;
    if (!file || !sum)
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "model manifest %s: no '%s' key in [model]", manifest,
                    file ? sum_key : key);
    else if (g_path_is_absolute(file) || strstr(file, ".."))
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "model manifest %s, [model] %s: '%s' is not in the model cache",
                    manifest, key, file);
    else {
        const char *cache = g_getenv("REEL_MODEL_DIR");
        path = g_build_filename(cache && *cache ? cache : REEL_MODEL_CACHE_DIR, file, NULL);
        int rc = g_file_test(path, G_FILE_TEST_IS_REGULAR) ? check_sha256(path, sum, error) : REEL_EINVAL;
        if (rc == REEL_EINVAL)
            g_set_error(error, REEL_ERROR, rc, "%s (%s of %s) is not in the model cache: fetch it with "
                        "scripts/fetch-models", path, key, manifest);
        if (rc != 0)
            g_clear_pointer(&path, g_free);
    }
    g_free(file);
    g_free(sum);
    return path;
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

char *reel_model_find(const char *spec, char **manifest, GError **error)
{
    reel_model_file ref;
    if (manifest)
        *manifest = NULL;
    if (reel_model_resolve(spec, &ref, error) < 0)
        return NULL;
    char *path = g_steal_pointer(&ref.path);
    if (manifest)
        *manifest = g_steal_pointer(&ref.manifest);
    reel_model_file_clear(&ref);
    return path;
}

enum { MANIFEST_REFUSED = REEL_PROP_READS_FILE | REEL_PROP_WRITES_FILE | REEL_PROP_READS_URL | REEL_PROP_WRITES_URL |
                          REEL_PROP_TEST_HOOK | REEL_PROP_NATS_SUBJECT | REEL_PROP_READS_ENV };

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
        const reel_prop *prop = reel_element_class_find_prop(reel_element_get_class(e), keys[i]);
        if (prop && (prop->flags & MANIFEST_REFUSED)) {
            // A manifest says how to read a model; where files go, what is
            // read besides the model, and test hooks are for the description.
            g_set_error(error, REEL_ERROR, REEL_EINVAL,
                        "model manifest %s, [%s] %s: a manifest may not name files, URLs or test hooks "
                        "(set it in the description)",
                        manifest, group, keys[i]);
            rc = REEL_EINVAL;
            break;
        }
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

// Why a path a manifest names leaves the manifest's folder, or NULL when it
// stays in it: opened beneath the folder, so a link planted beside the
// manifest cannot lead out either.
static const char *leaves_folder(const char *manifest, const char *path)
{
    if (g_path_is_absolute(path))
        return "an absolute path";
    char *dir = g_path_get_dirname(manifest);
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    g_free(dir);
    if (dfd < 0)
        return NULL; // the manifest's own folder is gone: reading the file says so
    int fd = reel_open_beneath(dfd, path, O_PATH);
    int e = errno;
    close(dfd);
    if (fd >= 0)
        close(fd);
    return fd < 0 && (e == EXDEV || e == ELOOP) ? reel_beneath_strerror(e) : NULL;
}

char *reel_manifest_model_key(const char *manifest, const char *key, bool is_path, GError **error)
{
    GKeyFile *kf = load(manifest, NULL);
    char *value = kf ? g_key_file_get_string(kf, "model", key, NULL) : NULL;
    if (kf)
        g_key_file_free(kf);
    const char *why = value && is_path ? leaves_folder(manifest, value) : NULL;
    if (why) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "model manifest %s, [model] %s: '%s' is not beside the manifest: %s",
                    manifest, key, value, why);
        g_free(value);
        return NULL;
    }
    if (value && is_path) {
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

// Job policies (fleet/policy.h): loading one, checking a pipeline against it.
#include "fleet/policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/redact.h"

enum { DEFAULT_MAX_RUN_MS = 3600 * 1000, DEFAULT_STALL_MS = 60 * 1000 };

struct fleet_policy {
    char *root;       // absolute, links resolved
    int root_fd;
    char **elements;  // NULL: all
    bool test_hooks;
    char **schemes;   // empty: none
    char **hosts;     // "*": any
    char **subjects;  // NATS subject patterns
    char **env;       // environment variables a job may name
    bool zoo;
    int64_t max_run_ms, stall_ms;
};

struct fleet_policy_hold {
    GArray *fds;         // int: the opened folders
    GPtrArray *names;    // given name, as written, given name, as written, ...
};

bool fleet_parse_time_ms(const char *text, int64_t *out)
{
    char *end;
    double v = g_ascii_strtod(text, &end);
    double scale = strcmp(end, "ms") == 0             ? 1
                   : strcmp(end, "s") == 0 || !*end ? 1000
                   : strcmp(end, "m") == 0          ? 60000
                   : strcmp(end, "h") == 0          ? 3600000
                                                    : 0;
    if (end == text || scale == 0 || !(v > 0) || v * scale > 86400e3)
        return false;
    *out = (int64_t)(v * scale);
    return true;
}

// ---- loading ------------------------------------------------------------------

static const char *const known_keys[] = { "root", "elements", "test-hooks", "schemes", "hosts",
                                          "subjects", "env", "zoo", "max-run", "stall", NULL };

static int bad(GError **error, const char *path, const char *key, const char *why)
{
    g_set_error(error, REEL_ERROR, REEL_EINVAL, "policy %s: %s: %s", path, key, why);
    return REEL_EINVAL;
}

static char **list_or(GKeyFile *kf, const char *key, const char *def)
{
    char **v = kf ? g_key_file_get_string_list(kf, "policy", key, NULL, NULL) : NULL;
    if (!v)
        return g_strsplit(def, ";", -1);
    for (char **s = v; *s; s++)
        g_strstrip(*s);
    return v;
}

static int read_time(GKeyFile *kf, const char *key, int64_t def, int64_t *out)
{
    char *text = kf ? g_key_file_get_string(kf, "policy", key, NULL) : NULL;
    *out = def;
    bool ok = !text || fleet_parse_time_ms(g_strstrip(text), out);
    g_free(text);
    return ok ? 0 : REEL_EINVAL;
}

static int read_bool(GKeyFile *kf, const char *key, bool def, bool *out)
{
    GError *err = NULL;
    *out = def;
    if (!kf || !g_key_file_has_key(kf, "policy", key, NULL))
        return 0;
    *out = g_key_file_get_boolean(kf, "policy", key, &err);
    if (err) {
        g_error_free(err);
        return REEL_EINVAL;
    }
    return 0;
}

static int check_keys(GKeyFile *kf, const char *path, GError **error)
{
    gsize n = 0;
    char **groups = g_key_file_get_groups(kf, &n);
    int rc = 0;
    for (gsize i = 0; i < n && rc == 0; i++)
        if (strcmp(groups[i], "policy") != 0)
            rc = bad(error, path, groups[i], "unknown group (the keys go in [policy])");
    g_strfreev(groups);
    char **keys = rc == 0 ? g_key_file_get_keys(kf, "policy", &n, NULL) : NULL;
    for (gsize i = 0; keys && i < n && rc == 0; i++)
        if (!g_strv_contains(known_keys, keys[i]))
            rc = bad(error, path, keys[i], "unknown key (known: root, elements, test-hooks, schemes, hosts, "
                                           "subjects, env, zoo, max-run, stall)");
    g_strfreev(keys);
    return rc;
}

static int open_root(fleet_policy *pol, const char *path, char *root, GError **error)
{
    char *real = realpath(root && *root ? root : ".", NULL);
    int fd = real ? open(real, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd < 0) {
        int e = errno;
        char *why = g_strdup_printf("cannot open the folder '%s': %s", root ? root : ".", g_strerror(e));
        bad(error, path, "root", why);
        g_free(why);
        free(real);
        return REEL_EINVAL;
    }
    pol->root = g_strdup(real);
    pol->root_fd = fd;
    free(real);
    return 0;
}

fleet_policy *fleet_policy_load(const char *path, GError **error)
{
    GKeyFile *kf = NULL;
    if (path) {
        kf = g_key_file_new();
        GError *err = NULL;
        if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &err)) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "policy %s: %s", path, err->message);
            g_error_free(err);
            g_key_file_free(kf);
            return NULL;
        }
        if (check_keys(kf, path, error) < 0) {
            g_key_file_free(kf);
            return NULL;
        }
    }
    fleet_policy *pol = g_new0(fleet_policy, 1);
    pol->root_fd = -1;
    pol->elements = kf && g_key_file_has_key(kf, "policy", "elements", NULL) ? list_or(kf, "elements", "") : NULL;
    pol->schemes = list_or(kf, "schemes", "");
    pol->hosts = list_or(kf, "hosts", "*");
    pol->subjects = list_or(kf, "subjects", "reel.meta.>");
    pol->env = list_or(kf, "env", "");
    char *root = kf ? g_key_file_get_string(kf, "policy", "root", NULL) : NULL;
    const char *where = path ? path : "(default)";
    int rc = open_root(pol, where, root ? g_strstrip(root) : NULL, error);
    g_free(root);
    if (rc == 0 && read_bool(kf, "test-hooks", false, &pol->test_hooks) < 0)
        rc = bad(error, where, "test-hooks", "wanted true or false");
    if (rc == 0 && read_bool(kf, "zoo", true, &pol->zoo) < 0)
        rc = bad(error, where, "zoo", "wanted true or false");
    if (rc == 0 && read_time(kf, "max-run", DEFAULT_MAX_RUN_MS, &pol->max_run_ms) < 0)
        rc = bad(error, where, "max-run", "wanted a time (\"30m\", \"2h\"), at most a day");
    if (rc == 0 && read_time(kf, "stall", DEFAULT_STALL_MS, &pol->stall_ms) < 0)
        rc = bad(error, where, "stall", "wanted a time (\"30s\", \"5m\"), at most a day");
    for (char **e = pol->elements; rc == 0 && e && *e; e++)
        if (!reel_element_class_find(*e))
            rc = bad(error, where, "elements", "names an element reel does not have");
    if (kf)
        g_key_file_free(kf);
    if (rc < 0)
        fleet_policy_free(&pol);
    return pol;
}

void fleet_policy_free(fleet_policy **polp)
{
    fleet_policy *pol = *polp;
    if (!pol)
        return;
    if (pol->root_fd >= 0)
        close(pol->root_fd);
    g_free(pol->root);
    g_strfreev(pol->elements);
    g_strfreev(pol->schemes);
    g_strfreev(pol->hosts);
    g_strfreev(pol->subjects);
    g_strfreev(pol->env);
    g_free(pol);
    *polp = NULL;
}

int64_t fleet_policy_max_run_ms(const fleet_policy *pol)
{
    return pol->max_run_ms;
}

int64_t fleet_policy_stall_ms(const fleet_policy *pol)
{
    return pol->stall_ms;
}

static void append_list(GString *s, const char *name, char **list, const char *none)
{
    char *joined = list && *list ? g_strjoinv(",", list) : g_strdup(none);
    g_string_append_printf(s, " %s=%s", name, joined);
    g_free(joined);
}

char *fleet_policy_describe(const fleet_policy *pol)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "root=%s", pol->root);
    append_list(s, "elements", pol->elements, "all");
    append_list(s, "schemes", pol->schemes, "none");
    append_list(s, "hosts", pol->hosts, "none");
    append_list(s, "subjects", pol->subjects, "none");
    append_list(s, "env", pol->env, "none");
    g_string_append_printf(s, " test-hooks=%s zoo=%s max-run=%.0fs stall=%.0fs", pol->test_hooks ? "yes" : "no",
                           pol->zoo ? "yes" : "no", pol->max_run_ms / 1e3, pol->stall_ms / 1e3);
    return g_string_free(s, FALSE);
}

// ---- checking -----------------------------------------------------------------

typedef struct check {
    const fleet_policy *pol;
    fleet_policy_hold *held;
    reel_element *e;
    const reel_prop *prop;
    const char *value;
    GError **error;
} check;

static int refuse(check *c, const char *rule, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static int refuse(check *c, const char *rule, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    GString *s = g_string_new("refused by the worker's policy: ");
    g_string_append_printf(s, "element '%s' (%s)", reel_element_name(c->e), reel_element_get_class(c->e)->name);
    if (c->prop) {
        char *shown = reel_redact(c->value, false);
        g_string_append_printf(s, ", %s=%s", c->prop->name, shown);
        g_free(shown);
    }
    g_string_append_printf(s, ": %s (rule: %s)", why, rule);
    g_set_error_literal(c->error, REEL_ERROR, REEL_EINVAL, s->str);
    g_string_free(s, TRUE);
    g_free(why);
    return REEL_EINVAL;
}

// Why a path beneath the root could not be opened, in the policy's words.
static const char *beneath_error(int e)
{
    switch (e) {
    case EXDEV:
    case ELOOP:
        return "it leads out of the root (through '..', an absolute link or a mount)";
    case ENOENT:
        return "no such file or folder beneath the root";
    default:
        return reel_beneath_strerror(e);
    }
}

// The path relative to the root: a relative one as it is, an absolute one
// only when it starts with the root.
static const char *relative_to_root(const fleet_policy *pol, const char *path)
{
    if (!g_path_is_absolute(path))
        return path;
    size_t n = strlen(pol->root);
    if (strncmp(path, pol->root, n) == 0 && path[n] == '/')
        return path + n + 1;
    if (strcmp(pol->root, "/") == 0)
        return path + 1;
    return NULL;
}

static int hold_path(check *c, bool writes)
{
    const char *rel = relative_to_root(c->pol, c->value);
    if (!rel)
        return refuse(c, "root", "an absolute path outside the root %s", c->pol->root);
    char *dir = g_path_get_dirname(rel), *name = g_path_get_basename(rel);
    int rc = 0;
    int dfd = -1;
    if (!*rel || strcmp(name, "..") == 0 || strcmp(name, ".") == 0 || g_str_has_suffix(rel, "/")) {
        rc = refuse(c, "root", "not a file's path");
    } else if ((dfd = reel_open_beneath(c->pol->root_fd, dir, O_PATH | O_DIRECTORY)) < 0) {
        rc = refuse(c, "root", "its folder: %s", beneath_error(errno));
    } else if (!writes) {
        int fd = reel_open_beneath(c->pol->root_fd, rel, O_RDONLY | O_NONBLOCK);
        struct stat st;
        if (fd < 0)
            rc = refuse(c, "root", "%s", beneath_error(errno));
        else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            rc = refuse(c, "root", "not a regular file");
        if (fd >= 0)
            close(fd);
    } else {
        // An output replaces a file, never writes through a link or into a
        // device or pipe.
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
            rc = refuse(c, "root", S_ISLNK(st.st_mode) ? "a symbolic link: outputs are not written through links"
                                                       : "exists and is not a regular file");
    }
    if (rc == 0) {
        char *given = g_strdup_printf("/proc/self/fd/%d/%s", dfd, name);
        GError *err = NULL;
        rc = reel_element_set(c->e, c->prop->name, given, &err);
        if (rc < 0) {
            refuse(c, "root", "%s", err->message);
            g_error_free(err);
            g_free(given);
        } else {
            // The name, then its folder, for messages about either.
            g_array_append_val(c->held->fds, dfd);
            g_ptr_array_add(c->held->names, given);
            g_ptr_array_add(c->held->names, g_strdup(c->value));
            g_ptr_array_add(c->held->names, g_strdup_printf("/proc/self/fd/%d", dfd));
            g_ptr_array_add(c->held->names, g_path_get_dirname(c->value));
            dfd = -1;
        }
    }
    if (dfd >= 0)
        close(dfd);
    g_free(dir);
    g_free(name);
    return rc;
}

// "scheme:" at the start (a URL or one of FFmpeg's protocols), as its length.
static size_t scheme_length(const char *v)
{
    if (!g_ascii_isalpha(*v))
        return 0;
    size_t n = 1;
    while (g_ascii_isalnum(v[n]) || v[n] == '+' || v[n] == '-' || v[n] == '.')
        n++;
    return v[n] == ':' ? n : 0;
}

static bool in_list(char **list, const char *word, size_t n)
{
    for (char **s = list; s && *s; s++)
        if (strcmp(*s, "*") == 0 || (strlen(*s) == n && g_ascii_strncasecmp(*s, word, n) == 0))
            return true;
    return false;
}

static int check_url(check *c, size_t scheme_len)
{
    const char *v = c->value;
    if (!in_list(c->pol->schemes, v, scheme_len))
        return refuse(c, "schemes", "the scheme '%.*s' is not among the policy's schemes", (int)scheme_len, v);
    if (strncmp(v + scheme_len, "://", 3) != 0)
        return refuse(c, "schemes", "not a URL of the form scheme://host/...");
    const char *auth = v + scheme_len + 3;
    size_t n = strcspn(auth, "/?#");
    const char *at = g_strrstr_len(auth, (gssize)n, "@");
    const char *host = at ? at + 1 : auth;
    size_t host_len;
    if (*host == '[') {
        const char *close = memchr(host, ']', n - (size_t)(host - auth));
        host++;
        host_len = close ? (size_t)(close - host) : 0;
    } else {
        host_len = strcspn(host, ":/?#");
    }
    if (!host_len || !in_list(c->pol->hosts, host, host_len))
        return refuse(c, "hosts", "the host '%.*s' is not among the policy's hosts", (int)host_len, host);
    return 0;
}

// NATS subject matching: '*' one token, '>' the rest (one or more tokens).
static bool subject_matches(const char *pattern, const char *subject)
{
    char **p = g_strsplit(pattern, ".", -1), **s = g_strsplit(subject, ".", -1);
    bool ok = true;
    int i = 0;
    for (; p[i] && ok; i++) {
        if (strcmp(p[i], ">") == 0) {
            ok = s[i] != NULL && p[i + 1] == NULL;
            break;
        }
        ok = s[i] && (strcmp(p[i], "*") == 0 || strcmp(p[i], s[i]) == 0);
    }
    if (ok && p[i] == NULL)
        ok = s[i] == NULL;
    g_strfreev(p);
    g_strfreev(s);
    return ok;
}

static int check_subject(check *c)
{
    // {stream} stands for any one token.
    char **parts = g_strsplit(c->value, "{stream}", -1);
    char *subject = g_strjoinv("x", parts);
    g_strfreev(parts);
    bool ok = false;
    for (char **pat = c->pol->subjects; *pat && !ok; pat++)
        ok = subject_matches(*pat, subject);
    g_free(subject);
    return ok ? 0 : refuse(c, "subjects", "not a subject the policy lets jobs publish on");
}

// A zoo name rather than a path: what reel_model_resolve() would look up.
static bool is_zoo_name(const char *spec)
{
    return !strchr(spec, '/') && !g_str_has_suffix(spec, ".onnx") && !g_file_test(spec, G_FILE_TEST_EXISTS);
}

static int check_value(check *c)
{
    unsigned f = c->prop->flags;
    if ((f & REEL_PROP_TEST_HOOK) && !c->pol->test_hooks)
        return refuse(c, "test-hooks", "a property for tests");
    if (f & REEL_PROP_NATS_SUBJECT)
        return check_subject(c);
    if ((f & REEL_PROP_READS_ENV) && *c->value && !g_strv_contains((const char *const *)c->pol->env, c->value))
        return refuse(c, "env", "not an environment variable the policy lets jobs name");
    if (!(f & (REEL_PROP_READS_FILE | REEL_PROP_WRITES_FILE | REEL_PROP_READS_URL | REEL_PROP_WRITES_URL)))
        return 0;
    if (!*c->value)
        return 0;
    bool writes = f & (REEL_PROP_WRITES_FILE | REEL_PROP_WRITES_URL);
    if (writes && strcmp(c->value, "-") == 0)
        return 0; // standard output
    size_t scheme = scheme_length(c->value);
    if ((f & (REEL_PROP_READS_URL | REEL_PROP_WRITES_URL)) && scheme)
        return check_url(c, scheme);
    if (strcmp(c->prop->name, "model") == 0 && is_zoo_name(c->value))
        return c->pol->zoo ? 0 : refuse(c, "zoo", "the model zoo is off");
    return hold_path(c, writes);
}

int fleet_policy_apply(const fleet_policy *pol, reel_pipeline *p, fleet_policy_hold **held, GError **error)
{
    fleet_policy_hold *h = g_new0(fleet_policy_hold, 1);
    h->fds = g_array_new(FALSE, FALSE, sizeof(int));
    h->names = g_ptr_array_new_with_free_func(g_free);
    *held = h;
    int rc = 0;
    for (reel_element *const *e = reel_pipeline_elements(p); *e && rc == 0; e++) {
        const reel_element_class *k = reel_element_get_class(*e);
        check c = { .pol = pol, .held = h, .e = *e, .error = error };
        // A caps filter is written as caps, not as an element.
        if (pol->elements && strcmp(k->name, "capsfilter") != 0 &&
            !g_strv_contains((const char *const *)pol->elements, k->name)) {
            rc = refuse(&c, "elements", "not among the policy's elements");
            break;
        }
        for (const reel_prop *pr = k->props; pr && pr->name && rc == 0; pr++) {
            if (!reel_element_prop_is_set(*e, pr->name))
                continue;
            char *value = reel_element_get(*e, pr->name);
            c.prop = pr;
            c.value = value ? value : "";
            rc = check_value(&c);
            g_free(value);
        }
    }
    return rc;
}

char *fleet_policy_hold_unmap(const fleet_policy_hold *held, const char *text)
{
    char *out = g_strdup(text);
    for (guint i = 0; held && i + 1 < held->names->len; i += 2) {
        char **parts = g_strsplit(out, g_ptr_array_index(held->names, i), -1);
        g_free(out);
        out = g_strjoinv(g_ptr_array_index(held->names, i + 1), parts);
        g_strfreev(parts);
    }
    return out;
}

void fleet_policy_hold_free(fleet_policy_hold **heldp)
{
    fleet_policy_hold *h = *heldp;
    if (!h)
        return;
    for (guint i = 0; i < h->fds->len; i++)
        close(g_array_index(h->fds, int, i));
    g_array_free(h->fds, TRUE);
    g_ptr_array_free(h->names, TRUE);
    g_free(h);
    *heldp = NULL;
}

// The ONNX operator tests of Debian's libonnx-testdata: every case directory
// is loaded with reel_model_load, each test_data_set run with
// reel_session_run and compared with the expected outputs. The cases that
// pass are committed in conformance_passing.txt (REEL_CONFORMANCE_LIST), so
// an op that breaks fails instead of turning into a skip: a listed case must
// pass; a case that passes must be listed; with REEL_CONFORMANCE_DEVICE
// (vulkan:0) a case marked "device" must place nodes there and an unmarked
// one none. Unlisted cases of ops reel does not support (load fails with
// REEL_EUNSUPPORTED) are skipped; an unlisted case of a supported op that
// fails fails the test unless it is a known exclusion.
//
// usage: test_conformance [SUBSTRING]   (only the cases whose name has it)
//        test_conformance --update      (rewrites the list: the cases that
//                                        pass on the cpu and on vulkan:0)
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/ir.h"
#include "models/onnx/load.h"
#include "models/op.h"
#include "reel/error.h"
#include "reel/model.h"

// REEL_CONFORMANCE_DATA and REEL_CONFORMANCE_LIST_FILE name copies of the
// cases and the list elsewhere: a bundle run on a machine without the build.
static const char *env_or(const char *name, const char *fallback)
{
    const char *v = g_getenv(name);
    return v && *v ? v : fallback;
}
#define DATA_DIR env_or("REEL_CONFORMANCE_DATA", "/usr/share/libonnx-testdata/data/node")
#define LIST_PATH env_or("REEL_CONFORMANCE_LIST_FILE", REEL_CONFORMANCE_LIST)

// Supported ops whose cases cannot pass yet, with the reason.
#define RANDOM "the expected outputs are draws of numpy's random generator, which reel does not reproduce"

static const struct { const char *name, *reason; } exclusions[] = {
    { "test_bernoulli", RANDOM },
    { "test_bernoulli_double", RANDOM },
    { "test_bernoulli_double_expanded", RANDOM },
    { "test_bernoulli_expanded", RANDOM },
    { "test_bernoulli_seed", RANDOM },
    { "test_bernoulli_seed_expanded", RANDOM },
    { NULL, NULL },
};

// Cases whose float evaluation order differs enough from numpy's.
#define WINDOW_DATA "its expected values were computed with pi = 3.1415: up to 7.4e-5 from the window's formula"
static const struct { const char *name; double rtol, atol; const char *reason; } tolerances[] = {
    { "test_gridsample_bicubic", 1e-4, 1e-4, "its expected values are written to 4 decimals" },
    { "test_roialign_aligned_false", 1e-4, 1e-4, "its expected values are written to 4 decimals" },
    { "test_roialign_aligned_true", 1e-4, 1e-4, "its expected values are written to 4 decimals" },
    { "test_blackmanwindow", 1e-4, 2e-4, WINDOW_DATA },
    { "test_blackmanwindow_expanded", 1e-4, 2e-4, WINDOW_DATA },
    { "test_blackmanwindow_symmetric", 1e-4, 2e-4, WINDOW_DATA },
    { "test_blackmanwindow_symmetric_expanded", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hammingwindow", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hammingwindow_expanded", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hammingwindow_symmetric", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hammingwindow_symmetric_expanded", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hannwindow", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hannwindow_expanded", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hannwindow_symmetric", 1e-4, 2e-4, WINDOW_DATA },
    { "test_hannwindow_symmetric_expanded", 1e-4, 2e-4, WINDOW_DATA },
    { NULL, 0, 0, NULL },
};

static const char *excluded(const char *name)
{
    for (int i = 0; exclusions[i].name; i++)
        if (strcmp(exclusions[i].name, name) == 0)
            return exclusions[i].reason;
    return NULL;
}

static void tolerance(const char *name, double *rtol, double *atol)
{
    *rtol = 1e-4, *atol = 1e-5;
    for (int i = 0; tolerances[i].name; i++)
        if (strcmp(tolerances[i].name, name) == 0)
            *rtol = tolerances[i].rtol, *atol = tolerances[i].atol;
}

static double elem(const reel_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case REEL_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case REEL_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case REEL_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    case REEL_DTYPE_UINT16: return ((const uint16_t *)t->data)[i];
    case REEL_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case REEL_DTYPE_UINT8:
    case REEL_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    default: return NAN;
    }
}

// NULL when they match, else a static description of the first difference.
static const char *compare(const reel_tensor *got, const reel_tensor *want, double rtol, double atol, char *msg,
                           size_t len)
{
    if (got->dtype != want->dtype) {
        snprintf(msg, len, "dtype %s, expected %s", reel_dtype_name(got->dtype), reel_dtype_name(want->dtype));
        return msg;
    }
    if (got->rank != want->rank || memcmp(got->shape, want->shape, sizeof(int64_t) * (size_t)want->rank)) {
        GString *s = g_string_new("shape ");
        for (int i = 0; i < got->rank; i++)
            g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "x" : "", got->shape[i]);
        g_string_append(s, ", expected ");
        for (int i = 0; i < want->rank; i++)
            g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "x" : "", want->shape[i]);
        snprintf(msg, len, "%s", s->str);
        g_string_free(s, TRUE);
        return msg;
    }
    reel_tensor g = *want;
    g.data = got->data;
    if (want->dtype == REEL_DTYPE_FLOAT16) { // bit-exact
        if (memcmp(got->data, want->data, want->nbytes)) {
            snprintf(msg, len, "float16 bits differ");
            return msg;
        }
        return NULL;
    }
    int64_t n = reel_tensor_count(want->rank, want->shape);
    bool is_float = want->dtype == REEL_DTYPE_FLOAT32 || want->dtype == REEL_DTYPE_FLOAT64;
    for (int64_t i = 0; i < n; i++) {
        double a = elem(&g, i), b = elem(want, i);
        bool ok = is_float ? (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + rtol * fabs(b) : a == b;
        if (!ok) {
            snprintf(msg, len, "element %" G_GINT64_FORMAT ": %g, expected %g", i, a, b);
            return msg;
        }
    }
    return NULL;
}

typedef enum { R_PASS, R_FAIL, R_SKIP } result;

// One case on `device` (NULL: the cpu); *device_nodes: the nodes a passing
// case placed there.
static result run_case(const char *name, reel_device *device, int *device_nodes, char *why, size_t len)
{
    *device_nodes = 0;
    g_autofree char *dir = g_build_filename(DATA_DIR, name, NULL);
    g_autofree char *path = g_build_filename(dir, "model.onnx", NULL);
    GError *error = NULL;
    reel_model *m = reel_model_load(path, &error);
    if (!m) {
        result r = error->code == REEL_EUNSUPPORTED ? R_SKIP : R_FAIL;
        snprintf(why, len, "load: %s", error->message);
        g_error_free(error);
        return r;
    }
    result r = R_PASS;
    reel_session *s = reel_session_new(m, reel_session_params(.threads = 1, .device = device), &error);
    int n_in = reel_model_n_inputs(m), n_out = reel_model_n_outputs(m);
    reel_tensor **in = g_new0(reel_tensor *, n_in + 1), **out = g_new0(reel_tensor *, n_out + 1);
    double rtol, atol;
    tolerance(name, &rtol, &atol);
    for (int set = 0; s && r == R_PASS; set++) {
        g_autofree char *sd = g_strdup_printf("%s/test_data_set_%d", dir, set);
        if (!g_file_test(sd, G_FILE_TEST_IS_DIR))
            break;
        for (int k = 0; k < n_in && r == R_PASS; k++) {
            g_autofree char *f = g_strdup_printf("%s/input_%d.pb", sd, k);
            reel_tensor *t = reel_onnx_read_tensor_file(f, NULL, &error);
            if (!t) {
                snprintf(why, len, "input %d: %s", k, error->message);
                g_clear_error(&error);
                r = R_FAIL;
                break;
            }
            in[k] = t;
        }
        if (r == R_PASS && reel_session_run(s, in, out, &error)) {
            snprintf(why, len, "set %d: %s", set, error->message);
            g_clear_error(&error);
            r = R_FAIL;
        }
        for (int k = 0; k < n_out && r == R_PASS; k++) {
            g_autofree char *f = g_strdup_printf("%s/output_%d.pb", sd, k);
            reel_tensor *t = reel_onnx_read_tensor_file(f, NULL, &error);
            char msg[256];
            if (!t) {
                snprintf(why, len, "output %d: %s", k, error->message);
                g_clear_error(&error);
                r = R_FAIL;
            } else if (compare(out[k], t, rtol, atol, msg, sizeof msg)) {
                snprintf(why, len, "set %d output %d: %s", set, k, msg);
                r = R_FAIL;
            }
            reel_tensor_free(&t);
        }
        for (int k = 0; k < n_in; k++)
            reel_tensor_free(&in[k]);
        for (int k = 0; k < n_out; k++)
            reel_tensor_free(&out[k]);
    }
    if (!s) {
        snprintf(why, len, "session: %s", error->message);
        g_clear_error(&error);
        r = R_FAIL;
    }
    reel_session_placement p;
    if (s && r == R_PASS) {
        reel_session_placement_of(s, &p);
        *device_nodes = p.device_nodes;
    }
    g_free(in);
    g_free(out);
    reel_session_destroy(&s);
    reel_model_unref(&m);
    return r;
}


static gint by_name(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// Counts, per op reel lacks, the skipped cases that use it (op name -> count).
static void tally_unsupported(const char *name, GHashTable *ops)
{
    g_autofree char *path = g_build_filename(DATA_DIR, name, "model.onnx", NULL);
    reel_ir_graph *g = reel_onnx_load(path, NULL);
    if (!g)
        return;
    GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < g->nodes->len; i++) {
        const char *op = reel_ir_node_at(g, (int)i)->op;
        if (reel_op_find(op) || !g_hash_table_add(seen, (gpointer)op))
            continue;
        int count = GPOINTER_TO_INT(g_hash_table_lookup(ops, op));
        g_hash_table_insert(ops, g_strdup(op), GINT_TO_POINTER(count + 1));
    }
    g_hash_table_destroy(seen);
    reel_ir_graph_free(&g);
}

static GHashTable *tally_counts;
static gint by_count(gconstpointer a, gconstpointer b)
{
    int ca = GPOINTER_TO_INT(g_hash_table_lookup(tally_counts, a)), cb = GPOINTER_TO_INT(g_hash_table_lookup(tally_counts, b));
    return ca != cb ? cb - ca : strcmp(a, b);
}

// One line naming every op the skipped cases need, most used first.
static void print_unsupported(GHashTable *ops)
{
    if (!g_hash_table_size(ops))
        return;
    tally_counts = ops;
    GList *names = g_list_sort(g_hash_table_get_keys(ops), by_count);
    GString *s = g_string_new("ops the skipped cases need (cases):");
    for (GList *l = names; l; l = l->next)
        g_string_append_printf(s, " %s (%d)", (const char *)l->data, GPOINTER_TO_INT(g_hash_table_lookup(ops, l->data)));
    printf("%s\n", s->str);
    g_string_free(s, TRUE);
    g_list_free(names);
}

// ---- the committed list of passing cases ----------------------------------------

#define UPDATE_HOW "test_conformance --update rewrites the list"

// A listed case, and whether a Vulkan session places nodes of it on the device.
enum { LISTED = 1, LISTED_DEVICE = 2 };

static const char list_header[] =
    "# The ONNX conformance cases (libonnx-testdata) that pass today, one per line;\n"
    "# \"device\": with a Vulkan session, nodes of the case run on the device.\n"
    "# test_conformance fails when a listed case does not pass (on the cpu, or\n"
    "# with REEL_CONFORMANCE_DEVICE=vulkan:0), when a case passes unlisted, or\n"
    "# when a case's placement differs from its mark. After adding an op:\n"
    "#   build/tests/test_conformance --update   (needs a Vulkan device)\n";

// name -> LISTED or LISTED_DEVICE; NULL (with a message) when unreadable.
static GHashTable *read_list(const char *path)
{
    g_autofree char *text = NULL;
    GError *error = NULL;
    if (!g_file_get_contents(path, &text, NULL, &error)) {
        printf("FAIL: %s\n", error->message);
        g_error_free(error);
        return NULL;
    }
    GHashTable *list = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (int i = 0; lines[i]; i++) {
        char name[256], mark[16], extra[2];
        int n = sscanf(lines[i], "%255s %15s %1s", name, mark, extra);
        if (n < 1 || name[0] == '#')
            continue;
        if (n > 2 || (n == 2 && strcmp(mark, "device"))) {
            printf("FAIL: %s:%d: expected NAME or NAME device\n", path, i + 1);
            g_hash_table_destroy(list);
            return NULL;
        }
        g_hash_table_insert(list, g_strdup(name), GINT_TO_POINTER(n == 2 ? LISTED_DEVICE : LISTED));
    }
    return list;
}

// --update: every case on the cpu and on `spec`; the cases that pass on both
// are written to the list, marked where nodes ran on the device. Nothing is
// written when a case passes on the cpu but not on the device.
static int update(GPtrArray *names, const char *spec)
{
    GError *error = NULL;
    reel_device *dev = reel_device_open(spec, &error);
    if (!dev) {
        printf("FAIL: --update marks the cases that run on a Vulkan device: %s\n", error->message);
        g_error_free(error);
        return 1;
    }
    GString *out = g_string_new(list_header);
    int pass = 0, marked = 0, fail = 0;
    for (guint i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        char why[1024] = "";
        int nodes;
        if (run_case(name, NULL, &nodes, why, sizeof why) != R_PASS)
            continue;
        if (run_case(name, dev, &nodes, why, sizeof why) != R_PASS) {
            printf("FAIL %s: passes on the cpu, not on %s: %s\n", name, spec, why);
            fail++;
            continue;
        }
        pass++;
        marked += nodes > 0;
        g_string_append_printf(out, "%s%s\n", name, nodes > 0 ? " device" : "");
    }
    if (!fail && !g_file_set_contents(LIST_PATH, out->str, (gssize)out->len, &error)) {
        printf("FAIL: %s\n", error->message);
        g_clear_error(&error);
        fail++;
    }
    if (!fail)
        printf("%s: %d passing cases, %d of them with nodes on %s\n", LIST_PATH, pass, marked, spec);
    else
        printf("%s not written\n", LIST_PATH);
    g_string_free(out, TRUE);
    reel_device_unref(&dev);
    return fail ? 1 : 0;
}

int main(int argc, char **argv)
{
    bool updating = argc > 1 && strcmp(argv[1], "--update") == 0;
    const char *filter = argc > 1 && !updating ? argv[1] : NULL;
    const char *spec = g_getenv("REEL_CONFORMANCE_DEVICE");
    GError *error = NULL;
    reel_device *device = NULL;
    if (!updating && spec && !(device = reel_device_open(spec, &error))) {
        printf("SKIP: %s\n", error->message);
        g_error_free(error);
        return 77;
    }
    GDir *d = g_dir_open(DATA_DIR, 0, NULL);
    if (!d) {
        printf("SKIP: %s is missing (install libonnx-testdata)\n", DATA_DIR);
        reel_device_unref(&device);
        return 77;
    }
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (const char *e; (e = g_dir_read_name(d));)
        if (!filter || strstr(e, filter))
            g_ptr_array_add(names, g_strdup(e));
    g_dir_close(d);
    g_ptr_array_sort(names, by_name);
    if (updating) {
        int rc = update(names, spec ? spec : "vulkan:0");
        g_ptr_array_free(names, TRUE);
        return rc;
    }
    GHashTable *list = read_list(LIST_PATH);
    if (!list) {
        reel_device_unref(&device);
        g_ptr_array_free(names, TRUE);
        return 1;
    }
    int pass = 0, fail = 0, skip = 0, excl = 0, on_device = 0;
    GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTable *unsupported = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < names->len; i++) {
        const char *name = names->pdata[i];
        char why[1024] = "";
        int nodes;
        result r = run_case(name, device, &nodes, why, sizeof why);
        const char *reason = excluded(name);
        int listed = GPOINTER_TO_INT(g_hash_table_lookup(list, name));
        g_hash_table_add(seen, (gpointer)name);
        if (r == R_PASS) {
            on_device += nodes > 0;
            if (reason) {
                fail++;
                printf("FAIL %s: passes, but is a known exclusion: remove it from exclusions[]\n", name);
            } else if (!listed) {
                fail++;
                printf("FAIL %s: passes, but %s does not list it: add it (%s)\n", name, LIST_PATH,
                       UPDATE_HOW);
            } else if (device && (listed == LISTED_DEVICE) != (nodes > 0)) {
                fail++;
                printf("FAIL %s: %d node%s on %s, but %s %s (%s)\n", name, nodes, nodes == 1 ? "" : "s", spec,
                       LIST_PATH, nodes ? "does not mark it \"device\"" : "marks it \"device\"",
                       UPDATE_HOW);
            } else {
                pass++;
                printf("PASS %s\n", name);
            }
        } else if (listed) {
            fail++;
            printf("FAIL %s: %s (%s lists it as passing)\n", name, why, LIST_PATH);
        } else if (r == R_SKIP) {
            skip++;
            printf("SKIP %s: %s\n", name, why);
            tally_unsupported(name, unsupported);
        } else if (reason) {
            excl++;
            printf("EXCLUDED %s: %s (%s)\n", name, reason, why);
        } else {
            fail++;
            printf("FAIL %s: %s\n", name, why);
        }
    }
    // The floor: what the list holds (within the filter).
    int floor = 0, floor_device = 0;
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, list);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        if (filter && !strstr(key, filter))
            continue;
        floor++;
        floor_device += GPOINTER_TO_INT(value) == LISTED_DEVICE;
        if (!g_hash_table_contains(seen, key)) {
            fail++;
            printf("FAIL %s: listed in %s, but not in %s\n", (const char *)key, LIST_PATH, DATA_DIR);
        }
    }
    printf("%d passed, %d failed, %d skipped (%d known exclusions)\n", pass, fail, skip + excl, excl);
    printf("floor (%s): %d cases pass on the cpu and with a Vulkan session, %d of them with nodes on the device\n",
           LIST_PATH, floor, floor_device);
    print_unsupported(unsupported);
    g_hash_table_destroy(unsupported);
    if (!filter)
        printf("conformance: %d of the %u ONNX cases pass (%.1f%%)\n", pass, names->len,
               names->len ? 100.0 * pass / names->len : 0.0);
    if (device)
        printf("%s: %d of the passing cases ran nodes on it\n", spec, on_device);
    if (device && reel_device_validation_messages()) {
        printf("validation layer messages: %" G_GINT64_FORMAT "\n", reel_device_validation_messages());
        fail++;
    }
    g_hash_table_destroy(seen);
    g_hash_table_destroy(list);
    reel_device_unref(&device);
    g_ptr_array_free(names, TRUE);
    return fail ? 1 : 0;
}

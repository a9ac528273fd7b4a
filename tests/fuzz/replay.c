// Runs a fuzz target's LLVMFuzzerTestOneInput on files without libFuzzer, so
// that every build replays the committed corpus (and crash inputs kept there
// as regression cases). Usage: fuzz_replay_NAME FILE|DIR... A target that
// finds a bug aborts; otherwise prints how many inputs ran.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    gchar *data = NULL;
    gsize len = 0;
    GError *err = NULL;
    if (!g_file_get_contents(path, &data, &len, &err)) {
        fprintf(stderr, "replay: %s\n", err->message);
        g_error_free(err);
        return 1;
    }
    // An exact-size copy, so that ASan sees a read past the end.
    uint8_t *copy = g_memdup2(data, len);
    g_free(data);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, (size_t)len);
    LLVMFuzzerTestOneInput(copy, len);
    g_free(copy);
    return 0;
}

static gint compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    int inputs = 0, failures = 0;
    for (int i = 1; i < argc; i++) {
        if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            failures += run_file(argv[i]);
            inputs++;
            continue;
        }
        GError *err = NULL;
        GDir *dir = g_dir_open(argv[i], 0, &err);
        if (!dir) {
            fprintf(stderr, "replay: %s\n", err->message);
            g_error_free(err);
            return 1;
        }
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
        for (const char *n; (n = g_dir_read_name(dir));)
            g_ptr_array_add(names, g_build_filename(argv[i], n, NULL));
        g_dir_close(dir);
        g_ptr_array_sort(names, compare_names);
        for (guint k = 0; k < names->len; k++) {
            failures += run_file(g_ptr_array_index(names, k));
            inputs++;
        }
        g_ptr_array_free(names, TRUE);
    }
    if (inputs == 0) {
        fprintf(stderr, "replay: no inputs\n");
        return 1;
    }
    printf("replay: %d inputs run, %d unreadable\n", inputs, failures);
    return failures ? 1 : 0;
}

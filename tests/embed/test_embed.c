// A program that embeds libreel.so finds its process as it left it: its
// environment, FFmpeg's log level and OpenBLAS's thread count unchanged by
// reel_init and by running pipelines and models (which load the media module
// and OpenBLAS), from several threads at once. With reel_init_params asking
// for them, reel sets FFmpeg quiet and OpenBLAS to one thread, once.
//
// usage: test_embed [configured] MODEL.onnx (a model with one float input)
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cblas.h>
#include <glib/gstdio.h>
#include <libavutil/log.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

extern char **environ;

static bool configured;
static const char *model_path;

static gint by_text(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static GPtrArray *environment(void)
{
    GPtrArray *env = g_ptr_array_new_with_free_func(g_free);
    for (char **e = environ; *e; e++)
        g_ptr_array_add(env, g_strdup(*e));
    g_ptr_array_sort(env, by_text);
    return env;
}

static void run_text(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p || reel_pipeline_run(p, &err) < 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
}

// What each thread does: a pipeline that decodes and encodes (FFmpeg), and
// an inference on the cpu (OpenBLAS).
static gpointer work(gpointer data)
{
    const char *dir = data;
    reel_init_with(configured ? reel_init_params(.ffmpeg_log = "quiet", .blas_threads = 1) : NULL);
    char *mkv = g_strdup_printf("%s/t%p.mkv", dir, (void *)g_thread_self());
    char *text = g_strdup_printf("testsrc num-buffers=8 ! video/raw,format=yuv420p,width=64,height=48 "
                                 "! encode codec=ffv1 ! sink location=%s", mkv);
    run_text(text);
    g_free(text);
    text = g_strdup_printf("source location=%s ! decode ! fakesink", mkv);
    run_text(text);
    g_free(text);
    g_unlink(mkv);
    g_free(mkv);

    GError *err = NULL;
    reel_model *m = reel_model_load(model_path, &err);
    if (!m)
        fail_msg("%s", err->message);
    reel_session *s = reel_session_new(m, reel_session_params(.threads = 2), &err);
    const reel_model_io *io = reel_model_input(m, 0);
    int64_t shape[REEL_TENSOR_MAX_RANK];
    for (int d = 0; d < io->rank; d++)
        shape[d] = io->dims[d] > 0 ? io->dims[d] : 1;
    reel_tensor *in = reel_tensor_new(io->dtype, io->rank, shape);
    reel_tensor *out[8] = { NULL };
    if (!s || reel_session_run(s, &in, out, &err) < 0)
        fail_msg("%s", err->message);
    for (int i = 0; i < reel_model_n_outputs(m); i++)
        reel_tensor_free(&out[i]);
    reel_tensor_free(&in);
    reel_session_destroy(&s);
    reel_model_unref(&m);
    return NULL;
}

static void test_process_left_as_it_was(void **state)
{
    (void)state;
    // The program's own choices, before reel is asked for anything.
    g_setenv("REEL_EMBED_MARK", "mine", TRUE);
    av_log_set_level(AV_LOG_VERBOSE);
    openblas_set_num_threads(2);
    GPtrArray *before = environment();

    char *dir = g_dir_make_tmp("reel-embed-XXXXXX", NULL);
    GThread *threads[4];
    for (int i = 0; i < 4; i++)
        threads[i] = g_thread_new("embed", work, dir);
    for (int i = 0; i < 4; i++)
        g_thread_join(threads[i]);
    g_rmdir(dir);
    g_free(dir);

    GPtrArray *after = environment();
    assert_int_equal(after->len, before->len);
    for (guint i = 0; i < before->len; i++)
        assert_string_equal(after->pdata[i], before->pdata[i]);
    g_ptr_array_free(before, TRUE);
    g_ptr_array_free(after, TRUE);
    // Asked for (configured): set once, when the library loaded them.
    assert_int_equal(av_log_get_level(), configured ? AV_LOG_QUIET : AV_LOG_VERBOSE);
    assert_int_equal(openblas_get_num_threads(), configured ? 1 : 2);
}

int main(int argc, char **argv)
{
    configured = argc > 2 && strcmp(argv[1], "configured") == 0;
    model_path = argv[argc - 1];
    if (argc < 2 || !g_file_test(model_path, G_FILE_TEST_EXISTS))
        return reel_skip_exit("no model %s (tests/models/make_models.py writes it)", argc > 1 ? model_path : "");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_process_left_as_it_was),
    };
    return reel_run_tests(tests, NULL, NULL);
}

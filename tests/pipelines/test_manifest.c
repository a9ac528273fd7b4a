// A model's manifest beside its file (tint.onnx -> tint.reel): preprocess,
// classify and the labels take their defaults from it, and what the
// description sets wins, key by key. The model is make_models.py's
// colour.onnx ($REEL_TEST_MODELS), copied with a manifest the test writes:
// its output is 10 times the mean of each input channel, so every default
// shows in the numbers that come out.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

static GPtrArray *grabbed; // frames the grab sink received
static char *dir;          // the model's copy, its manifest and labels
static char *no_model;     // why there is none, when there is none

static int grab_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)e;
    (void)pad;
    g_ptr_array_add(grabbed, buf);
    return 0;
}

static const reel_element_class grab_class = {
    .name = "grab", .description = "keeps frames for the test", .min_inputs = 1, .max_inputs = 1,
    .input_caps = "video/raw", .process = grab_process,
};

static void unref_buffer(gpointer b)
{
    reel_buffer *buf = b;
    reel_buffer_unref(&buf);
}

static char *in_dir(const char *name)
{
    return g_build_filename(dir, name, NULL);
}

static void write_file(const char *name, const char *text)
{
    char *path = in_dir(name);
    assert_true(g_file_set_contents(path, text, -1, NULL));
    g_free(path);
}

// The model and its manifest: channels reversed, value * 0.5 + 1 (instead
// of value / 255), two raw scores kept (instead of one probability), labels
// from [model].
static const char manifest[] = "[model]\n"
                               "labels = tint.txt\n"
                               "[preprocess]\n"
                               "bgr = true\n"
                               "scale = 0.5\n"
                               "offset = 1\n"
                               "[classify]\n"
                               "top-k = 2\n"
                               "softmax = false\n";

static int setup(void **state)
{
    (void)state;
    const char *models = g_getenv("REEL_TEST_MODELS");
    char *model = models ? g_build_filename(models, "colour.onnx", NULL) : NULL;
    char *bytes = NULL;
    gsize len = 0;
    if (!model || !g_file_get_contents(model, &bytes, &len, NULL)) {
        no_model = g_strdup_printf("no colour.onnx in REEL_TEST_MODELS (%s): tests/models/make_models.py needs "
                                   "python3-onnx",
                                   models ? models : "unset");
        g_free(model);
        return 0;
    }
    g_free(model);
    dir = g_dir_make_tmp("reel-manifest-XXXXXX", NULL);
    assert_non_null(dir);
    char *copy = in_dir("tint.onnx");
    assert_true(g_file_set_contents(copy, bytes, (gssize)len, NULL));
    g_free(copy);
    g_free(bytes);
    write_file("tint.reel", manifest);
    write_file("tint.txt", "first\nsecond\nthird\n");
    write_file("mine.txt", "one\ntwo\nthree\n");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    const char *names[] = { "tint.onnx", "tint.reel", "tint.txt", "mine.txt", "bad.onnx", "bad.reel" };
    for (size_t i = 0; dir && i < G_N_ELEMENTS(names); i++) {
        char *path = in_dir(names[i]);
        g_unlink(path);
        g_free(path);
    }
    if (dir)
        g_rmdir(dir);
    g_free(dir);
    g_free(no_model);
    return 0;
}

#define NEED_MODEL()                                 \
    do {                                             \
        if (!dir)                                    \
            reel_skip("%s: %s", __func__, no_model); \
    } while (0)

// One solid frame of 0x4080c0 at testsrc's first brightness (128/255):
// R 32, G 64, B 96 on every pixel, so each channel's mean is that value.
#define FRAME "testsrc num-buffers=1 pattern=solid color=0x4080c0 ! video/raw,format=rgb24,width=32,height=32 "

// Runs preprocess PRE ! infer ! classify CLS on FRAME; the frame comes back.
static const reel_buffer *run_frame(const char *pre, const char *cls)
{
    g_ptr_array_set_size(grabbed, 0);
    char *model = in_dir("tint.onnx");
    char *text = g_strdup_printf(FRAME "! preprocess %s ! infer model=%s ! classify %s ! grab", pre, model, cls);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p || reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
    g_free(text);
    g_free(model);
    assert_int_equal(grabbed->len, 1);
    return grabbed->pdata[0];
}

static void expect_outputs(const reel_buffer *frame, float a, float b, float c)
{
    const reel_inference *inf = reel_buffer_last_inference(frame);
    assert_non_null(inf);
    const reel_buffer *out = reel_inference_output(inf, NULL, 0);
    assert_non_null(out);
    assert_int_equal(out->size, 3 * sizeof(float));
    const float *v = (const float *)out->data, want[3] = { a, b, c };
    for (int i = 0; i < 3; i++)
        if (fabsf(v[i] - want[i]) > 1e-3f * fmaxf(1, fabsf(want[i])))
            fail_msg("output %d is %g, want %g", i, v[i], want[i]);
}

static const reel_classifications *classes_of(const reel_buffer *frame)
{
    const reel_classifications *c = reel_buffer_get_meta(frame, &reel_classifications_meta);
    assert_non_null(c);
    return c;
}

// Nothing set in the description: every default is the manifest's.
static void test_manifest_beside_the_model(void **state)
{
    (void)state;
    NEED_MODEL();
    const reel_buffer *f = run_frame("", "");
    const reel_inference *inf = reel_buffer_last_inference(f);
    char *path = in_dir("tint.reel");
    assert_string_equal(inf->model, "tint");
    assert_non_null(inf->manifest);
    assert_string_equal(inf->manifest, path);
    g_free(path);
    // B, G, R = 96, 64, 32, each * 0.5 + 1, times 10.
    expect_outputs(f, 490, 330, 170);
    const reel_classifications *c = classes_of(f);
    assert_int_equal(c->n, 2);
    assert_int_equal(c->items[0].class_id, 0);
    assert_string_equal(c->items[0].label, "first");
    assert_float_equal(c->items[0].score, 490, 1e-2);
    assert_int_equal(c->items[1].class_id, 1);
    assert_string_equal(c->items[1].label, "second");
    assert_float_equal(c->items[1].score, 330, 1e-2);
    g_ptr_array_set_size(grabbed, 0);
}

// Keys the description sets win; the manifest still gives the others.
static void test_description_wins(void **state)
{
    (void)state;
    NEED_MODEL();
    char *mine = in_dir("mine.txt");
    char *cls = g_strdup_printf("top-k=1 labels=%s", mine);
    // offset and top-k and labels set here; bgr, scale and softmax=false from
    // the manifest: B, G, R * 0.5, times 10.
    const reel_buffer *f = run_frame("offset=0", cls);
    expect_outputs(f, 480, 320, 160);
    const reel_classifications *c = classes_of(f);
    assert_int_equal(c->n, 1);
    assert_int_equal(c->items[0].class_id, 0);
    assert_string_equal(c->items[0].label, "one");
    assert_float_equal(c->items[0].score, 480, 1e-2);

    // Everything the manifest sets, overridden: R, G, B / 255 * 10, as if
    // there were no manifest; the best class is blue's, a probability.
    char *all = g_strdup_printf("top-k=1 softmax=true labels=%s", mine);
    f = run_frame("bgr=false scale=0.00392156862745098 offset=0", all);
    g_free(all);
    expect_outputs(f, 320 / 255.0f, 640 / 255.0f, 960 / 255.0f);
    c = classes_of(f);
    assert_int_equal(c->n, 1);
    assert_int_equal(c->items[0].class_id, 2);
    assert_string_equal(c->items[0].label, "three");
    // Softmax of the three scores, for the largest.
    double e1 = exp(320 / 255.0 - 960 / 255.0), e2 = exp(640 / 255.0 - 960 / 255.0);
    assert_float_equal(c->items[0].score, 1 / (1 + e1 + e2), 1e-4);
    g_ptr_array_set_size(grabbed, 0);
    g_free(cls);
    g_free(mine);
}

// A manifest key no element property matches is an error naming the
// manifest, the group and the key.
static void test_bad_manifest_key(void **state)
{
    (void)state;
    NEED_MODEL();
    char *src = in_dir("tint.onnx"), *bad = in_dir("bad.onnx"), *bytes = NULL;
    gsize len = 0;
    assert_true(g_file_get_contents(src, &bytes, &len, NULL));
    assert_true(g_file_set_contents(bad, bytes, (gssize)len, NULL));
    write_file("bad.reel", "[preprocess]\ncolour = red\n");
    char *text = g_strdup_printf(FRAME "! preprocess ! infer model=%s ! grab", bad);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    assert_non_null(p);
    assert_true(reel_pipeline_run(p, &err) < 0);
    char *want = g_strdup_printf("model manifest %s" G_DIR_SEPARATOR_S "bad.reel, [preprocess] colour: ", dir);
    if (!strstr(err->message, want))
        fail_msg("'%s' lacks '%s'", err->message, want);
    g_error_free(err);
    reel_pipeline_destroy(&p);
    g_free(want);
    g_free(text);
    g_free(bytes);
    g_free(bad);
    g_free(src);
}

// Runs FRAME ! preprocess ! infer model=MODEL ! classify CLS; the error
// must hold `want`.
static void expect_run_error(const char *model, const char *cls, const char *want)
{
    char *text = g_strdup_printf(FRAME "! preprocess ! infer model=%s ! classify %s ! grab", model, cls);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (p && reel_pipeline_run(p, &err) == 0)
        fail_msg("%s ran; expected an error with '%s'", text, want);
    assert_non_null(err);
    if (!strstr(err->message, want))
        fail_msg("'%s' lacks '%s'", err->message, want);
    g_error_free(err);
    reel_pipeline_destroy(&p);
    g_ptr_array_set_size(grabbed, 0);
    g_free(text);
}

// A copy of tint.onnx as NAME.onnx with a manifest NAME.reel of `text`.
static char *model_with_manifest(const char *name, const char *text)
{
    char *src = in_dir("tint.onnx"), *bytes = NULL, *file = g_strdup_printf("%s.onnx", name);
    char *reel = g_strdup_printf("%s.reel", name), *copy = in_dir(file);
    gsize len = 0;
    assert_true(g_file_get_contents(src, &bytes, &len, NULL));
    assert_true(g_file_set_contents(copy, bytes, (gssize)len, NULL));
    write_file(reel, text);
    g_free(bytes);
    g_free(src);
    g_free(file);
    g_free(reel);
    return copy;
}

// Labels are read with a bound: /dev/zero is an error naming the limit,
// not all of memory.
static void test_labels_bounded(void **state)
{
    (void)state;
    NEED_MODEL();
    char *model = in_dir("tint.onnx");
    expect_run_error(model, "labels=/dev/zero",
                     "labels file '/dev/zero' is larger than the limit of 16777216 bytes (REEL_MAX_TEXT_BYTES)");
    g_free(model);
}

// A manifest names no file outside its folder, and no property that names
// files (those are for the description).
static void test_manifest_paths_stay_beside(void **state)
{
    (void)state;
    NEED_MODEL();
    char *model = model_with_manifest("bad", "[model]\nlabels = ../tint.txt\n");
    expect_run_error(model, "", "[model] labels: '../tint.txt' is not beside the manifest");
    g_free(model);
    model = model_with_manifest("bad", "[model]\nlabels = /etc/passwd\n");
    expect_run_error(model, "", "[model] labels: '/etc/passwd' is not beside the manifest");
    g_free(model);
    // A link beside the manifest that leads out of its folder.
    char *link = in_dir("link.txt");
    assert_int_equal(symlink("/etc/passwd", link), 0);
    model = model_with_manifest("bad", "[model]\nlabels = link.txt\n");
    expect_run_error(model, "", "[model] labels: 'link.txt' is not beside the manifest: it leads out");
    g_unlink(link);
    g_free(link);
    g_free(model);
    model = model_with_manifest("bad", "[classify]\nlabels = tint.txt\n");
    expect_run_error(model, "", "[classify] labels: a manifest may not name files");
    g_free(model);
}

// A zoo model is checked against its manifest's file-sha256 when loaded: a
// changed file in the model cache is refused, whatever it holds.
static void test_zoo_checksum_at_load(void **state)
{
    (void)state;
    NEED_MODEL();
    char *zoo = in_dir("zoo"), *model = model_with_manifest("zoo-model", "");
    assert_int_equal(g_mkdir_with_parents(zoo, 0700), 0);
    char *bytes = NULL;
    gsize len = 0;
    assert_true(g_file_get_contents(model, &bytes, &len, NULL));
    char *sum = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)bytes, len);
    char *good = g_strdup_printf("[model]\nfile = zoo-model.onnx\nfile-sha256 = %s\nlabels = ../tint.txt\n", sum);
    char *manifest = g_build_filename(zoo, "tintz.reel", NULL);
    assert_true(g_file_set_contents(manifest, good, -1, NULL));
    g_setenv("REEL_ZOO", zoo, TRUE);
    g_setenv("REEL_MODEL_DIR", dir, TRUE);

    // labels beside the zoo manifest would be ../tint.txt: refused; the
    // description's labels run.
    char *labels = g_strdup_printf("labels=%s/tint.txt", dir);
    char *text = g_strdup_printf(FRAME "! preprocess ! infer model=tintz ! classify %s ! grab", labels);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p || reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
    assert_int_equal(grabbed->len, 1);
    g_ptr_array_set_size(grabbed, 0);

    // One byte more: the same path, another file.
    char *longer = g_malloc(len + 1);
    memcpy(longer, bytes, len);
    longer[len] = 0;
    assert_true(g_file_set_contents(model, longer, (gssize)len + 1, NULL));
    char *want = g_strdup_printf("the manifest pins %s", sum);
    expect_run_error("tintz", labels, want);
    g_free(want);

    // A zoo manifest without the pin cannot be checked: refused.
    assert_true(g_file_set_contents(manifest, "[model]\nfile = zoo-model.onnx\n", -1, NULL));
    expect_run_error("tintz", labels, "no 'file-sha256' key in [model]");

    g_unsetenv("REEL_ZOO");
    g_unsetenv("REEL_MODEL_DIR");
    g_unlink(manifest);
    g_rmdir(zoo);
    g_unlink(model);
    char *zreel = in_dir("zoo-model.reel");
    g_unlink(zreel);
    g_free(zreel);
    g_free(longer);
    g_free(text);
    g_free(labels);
    g_free(manifest);
    g_free(good);
    g_free(sum);
    g_free(bytes);
    g_free(model);
    g_free(zoo);
}

int main(void)
{
    reel_init();
    reel_element_class_register(&grab_class);
    grabbed = g_ptr_array_new_with_free_func(unref_buffer);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_manifest_beside_the_model),
        cmocka_unit_test(test_description_wins),
        cmocka_unit_test(test_bad_manifest_key),
        cmocka_unit_test(test_labels_bounded),
        cmocka_unit_test(test_manifest_paths_stay_beside),
        cmocka_unit_test(test_zoo_checksum_at_load),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    g_ptr_array_free(grabbed, TRUE);
    return reel_test_verdict(failed);
}

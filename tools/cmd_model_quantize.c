// reel model quantize: calibrates a float model on frames of the user's own
// video (or images) and writes an int8 QDQ model (reel/quantize.h). The
// frames become model inputs through reel's own preprocess element, set from
// the model's manifest and the options, in a pipeline ending in an appsink.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reel/reel.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: reel model quantize MODEL --calibrate VIDEO|IMAGE_DIR --out MODEL.int8.onnx\n"
    "                           [--frames N] [--method minmax|percentile] [--percentile P]\n"
    "                           [--per-channel|--per-tensor] [--bias-correction|--no-bias-correction]\n"
    "                           [--keep-float heads|none|NODE[,NODE...]] [--equalize|--no-equalize]\n"
    "                           [--size WxH] [--layout nchw|nhwc] [--fit stretch|letterbox|crop]\n"
    "                           [--scale S] [--offset O] [--mean R,G,B] [--std R,G,B] [--bgr] [--pad V]\n"
    "  MODEL         an .onnx file or a zoo name; its manifest's [preprocess] gives the defaults\n"
    "  --calibrate   a video file, or a folder of images (.png, .jpg, .jpeg, .bmp, .ppm, .webp)\n"
    "  --frames      frames to calibrate on, evenly spread over the video (default 200)\n"
    "  --method      percentile (default): each activation's range cuts both tails of its\n"
    "                histogram, keeping --percentile (default 99.99) of the values; minmax: the\n"
    "                smallest and largest value seen\n"
    "  --per-tensor  one scale per weight tensor (default: one per output channel)\n"
    "  --bias-correction  each Conv's bias less the mean shift its int8 weights cause on the\n"
    "                calibration frames (default: off: on BlazeFace it did not help)\n"
    "  --equalize    scale each depthwise Conv's output channels and the next Conv's weights\n"
    "                so that the channels share the uint8 range better (the float model\n"
    "                computes the same); calibrates twice (default: on)\n"
    "  --keep-float  nodes that run in float (weights, bias and output): `heads`, the last\n"
    "                Conv/MatMul/Gemm before each model output; or node names (default: none)\n";

// The preprocess options the command passes on (the element's properties).
static const char *const pre_keys[] = { "size", "layout", "fit", "scale", "offset", "mean", "std", "bgr", "pad",
                                        NULL };

typedef struct calib {
    reel_quantizer *q;
    int64_t total, frames; // frames in the source; how many to take
    int64_t seen, taken;
    GError *error;         // the first failure (later frames are skipped)
} calib;

static bool take_frame(calib *c)
{
    // Frame i is taken when it is the next of floor((k + 0.5) * total / frames).
    if (c->total <= c->frames)
        return true;
    return c->seen == (int64_t)(((double)c->taken + 0.5) * (double)c->total / (double)c->frames);
}

static void on_tensor(reel_buffer *b, void *user)
{
    calib *c = user;
    if (!c->error && take_frame(c) && c->taken < c->frames) {
        if (b->format.media != REEL_MEDIA_TENSOR || !b->data || b->format.dtype != REEL_DTYPE_FLOAT32) {
            g_set_error(&c->error, REEL_ERROR, REEL_EFORMAT, "preprocess gave no host float32 tensor");
        } else {
            reel_tensor *t = reel_tensor_wrap(REEL_DTYPE_FLOAT32, b->format.rank, b->format.shape, b->data, b->size,
                                              NULL, NULL);
            if (t && reel_quantizer_observe(c->q, &t, &c->error) == 0)
                c->taken++;
            else if (!t)
                g_set_error(&c->error, REEL_ERROR, REEL_EFORMAT, "a preprocessed frame has an invalid shape");
            reel_tensor_free(&t);
        }
    }
    c->seen++;
    reel_buffer_unref(&b);
}

static void on_frame_count(reel_buffer *b, void *user)
{
    ((calib *)user)->total++;
    reel_buffer_unref(&b);
}

// "key=\"value\"" with the value's quotes and backslashes escaped.
static void append_prop(GString *s, const char *key, const char *value)
{
    g_string_append_printf(s, " %s=\"", key);
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_c(s, '\\');
        g_string_append_c(s, *p);
    }
    g_string_append_c(s, '"');
}

// Runs "source ! decode [! preprocess ...] ! appsink" on `location`, calling fn per buffer.
static int run_pipeline(const char *location, const char *preprocess, reel_appsink_callback fn, calib *c,
                        GError **error)
{
    GString *text = g_string_new("source");
    append_prop(text, "location", location);
    g_string_append(text, " ! decode");
    if (preprocess)
        g_string_append_printf(text, " ! preprocess%s", preprocess);
    g_string_append(text, " ! appsink name=calib max-buffers=2");
    reel_pipeline *p = reel_parse_launch(text->str, "calibration", reel_pipeline_params(.stats_interval_ms = -1),
                                         error);
    g_string_free(text, TRUE);
    if (!p)
        return REEL_EINVAL;
    reel_appsink_set_callback(reel_pipeline_find(p, "calib"), fn, c);
    int rc = reel_pipeline_run(p, error);
    reel_pipeline_destroy(&p);
    return rc;
}

static bool is_image(const char *name)
{
    static const char *const exts[] = { ".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".webp", NULL };
    char *lower = g_ascii_strdown(name, -1);
    bool yes = false;
    for (int i = 0; exts[i] && !yes; i++)
        yes = g_str_has_suffix(lower, exts[i]);
    g_free(lower);
    return yes;
}

static int by_name(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// Images of a folder, sorted by name, `frames` of them evenly spread.
static int calibrate_dir(const char *dir, const char *pre, calib *c, GError **error)
{
    GDir *d = g_dir_open(dir, 0, error);
    if (!d)
        return REEL_EIO;
    GPtrArray *files = g_ptr_array_new_with_free_func(g_free);
    for (const char *n; (n = g_dir_read_name(d));)
        if (is_image(n))
            g_ptr_array_add(files, g_build_filename(dir, n, NULL));
    g_dir_close(d);
    g_ptr_array_sort(files, by_name);
    int rc = 0;
    if (files->len == 0) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "--calibrate %s: no images (.png, .jpg, ...) in the folder", dir);
        rc = REEL_EINVAL;
    }
    c->total = files->len;
    for (guint i = 0; i < files->len && rc == 0 && !c->error; i++) {
        calib one = { .q = c->q, .total = 1, .frames = 1 };
        if (!take_frame(c)) {
            c->seen++;
            continue;
        }
        rc = run_pipeline(files->pdata[i], pre, on_tensor, &one, error);
        if (rc == 0 && one.error)
            g_propagate_error(error, one.error), rc = REEL_EINVAL;
        else if (rc < 0)
            g_clear_error(&one.error);
        if (rc < 0)
            g_prefix_error(error, "--calibrate %s: ", (char *)files->pdata[i]);
        c->taken += one.taken;
        c->seen++;
    }
    g_ptr_array_free(files, TRUE);
    return rc;
}

// A video: one pass counts its frames, the second takes `frames` of them.
static int calibrate_video(const char *path, const char *pre, calib *c, GError **error)
{
    int rc = run_pipeline(path, NULL, on_frame_count, c, error);
    if (rc == 0 && c->total == 0) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "no frames decoded");
        rc = REEL_EINVAL;
    }
    if (rc == 0)
        rc = run_pipeline(path, pre, on_tensor, c, error);
    if (rc == 0 && c->error) {
        g_propagate_error(error, c->error);
        c->error = NULL;
        rc = REEL_EINVAL;
    }
    if (rc < 0)
        g_prefix_error(error, "--calibrate %s: ", path);
    return rc;
}

// The preprocess properties: the manifest's [preprocess], then the options,
// and the size and layout from the model's input when neither gives them.
static char *preprocess_props(const char *manifest, GHashTable *opts, const reel_model_io *in, GError **error)
{
    GHashTable *props = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    if (manifest) {
        GKeyFile *kf = g_key_file_new();
        if (!g_key_file_load_from_file(kf, manifest, G_KEY_FILE_NONE, error)) {
            g_prefix_error(error, "%s: ", manifest);
            g_key_file_free(kf);
            g_hash_table_destroy(props);
            return NULL;
        }
        gchar **keys = g_key_file_get_keys(kf, "preprocess", NULL, NULL);
        for (int i = 0; keys && keys[i]; i++)
            g_hash_table_replace(props, g_strdup(keys[i]), g_key_file_get_string(kf, "preprocess", keys[i], NULL));
        g_strfreev(keys);
        g_key_file_free(kf);
    }
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, opts);
    while (g_hash_table_iter_next(&it, &k, &v))
        g_hash_table_replace(props, g_strdup(k), g_strdup(v));
    bool nhwc = in->rank == 4 && in->dims[3] == 3 && in->dims[1] != 3;
    if (!g_hash_table_contains(props, "layout") && in->rank == 4)
        g_hash_table_replace(props, g_strdup("layout"), g_strdup(nhwc ? "nhwc" : "nchw"));
    if (!g_hash_table_contains(props, "size")) {
        int64_t h = in->rank == 4 ? in->dims[nhwc ? 1 : 2] : -1, w = in->rank == 4 ? in->dims[nhwc ? 2 : 3] : -1;
        if (h <= 0 || w <= 0) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL,
                        "the model's input '%s' has no fixed height and width: give --size WxH", in->name);
            g_hash_table_destroy(props);
            return NULL;
        }
        g_hash_table_replace(props, g_strdup("size"), g_strdup_printf("%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, w, h));
    }
    GString *s = g_string_new(NULL);
    g_hash_table_iter_init(&it, props);
    while (g_hash_table_iter_next(&it, &k, &v))
        append_prop(s, k, v);
    g_hash_table_destroy(props);
    return g_string_free(s, FALSE);
}

static int fail(GError *error)
{
    fprintf(stderr, "reel: %s\n", error->message);
    g_error_free(error);
    return EXIT_RUNTIME;
}

int cmd_model_quantize(int argc, char **argv)
{
    const char *model = NULL, *source = NULL, *out = NULL;
    long frames = 200;
    reel_quant_params params = { .method = REEL_QUANT_PERCENTILE, .percentile = 99.99 };
    char **keep = NULL;
    bool equalize = true;
    GHashTable *opts = g_hash_table_new(g_str_hash, g_str_equal);
    int rc = EXIT_USAGE;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            g_hash_table_destroy(opts);
            return EXIT_OK;
        } else if (strcmp(a, "--per-channel") == 0) {
            params.per_tensor = false;
        } else if (strcmp(a, "--per-tensor") == 0) {
            params.per_tensor = true;
        } else if (strcmp(a, "--bias-correction") == 0) {
            params.bias_correction = true;
        } else if (strcmp(a, "--no-bias-correction") == 0) {
            params.bias_correction = false;
        } else if (strcmp(a, "--equalize") == 0) {
            equalize = true;
        } else if (strcmp(a, "--no-equalize") == 0) {
            equalize = false;
        } else if (strcmp(a, "--bgr") == 0) {
            g_hash_table_replace(opts, "bgr", "true");
        } else if (a[0] == '-' && !val) {
            fprintf(stderr, "reel: %s needs a value\n\n%s", a, usage);
            goto done;
        } else if (strcmp(a, "--calibrate") == 0) {
            source = argv[++i];
        } else if (strcmp(a, "--keep-float") == 0) {
            // `heads` and `none` are words, the rest node names.
            g_strfreev(keep);
            keep = g_strsplit(argv[++i], ",", -1);
            params.keep_heads_float = false;
            int n = 0;
            for (int k = 0; keep[k]; k++) {
                if (strcmp(keep[k], "heads") == 0)
                    params.keep_heads_float = true;
                if (strcmp(keep[k], "heads") == 0 || strcmp(keep[k], "none") == 0 || !*keep[k])
                    g_free(keep[k]);
                else
                    keep[n++] = keep[k];
            }
            keep[n] = NULL;
            params.keep_float = (const char *const *)keep;
        } else if (strcmp(a, "--out") == 0) {
            out = argv[++i];
        } else if (strcmp(a, "--frames") == 0) {
            frames = strtol(argv[++i], &end, 10);
            if (*end || frames < 1) {
                fprintf(stderr, "reel: --frames %s: give a count of at least 1\n", argv[i]);
                goto done;
            }
        } else if (strcmp(a, "--method") == 0) {
            i++;
            if (strcmp(argv[i], "minmax") == 0)
                params.method = REEL_QUANT_MINMAX;
            else if (strcmp(argv[i], "percentile") == 0)
                params.method = REEL_QUANT_PERCENTILE;
            else {
                fprintf(stderr, "reel: --method %s: use minmax or percentile\n", argv[i]);
                goto done;
            }
        } else if (strcmp(a, "--percentile") == 0) {
            params.percentile = strtod(argv[++i], &end);
            if (*end || !(params.percentile > 50 && params.percentile <= 100)) {
                fprintf(stderr, "reel: --percentile %s: give the share kept, above 50 and at most 100\n", argv[i]);
                goto done;
            }
        } else if (a[0] == '-' && a[1] == '-' && g_strv_contains(pre_keys, a + 2)) {
            g_hash_table_replace(opts, (gpointer)(a + 2), argv[++i]);
        } else if (a[0] != '-' && !model) {
            model = a;
        } else {
            fprintf(stderr, "reel: unknown argument '%s'\n\n%s", a, usage);
            goto done;
        }
    }
    if (!model || !source || !out) {
        fprintf(stderr, "reel: model quantize needs MODEL, --calibrate and --out\n\n%s", usage);
        goto done;
    }
    rc = EXIT_RUNTIME;
    GError *error = NULL;
    char *manifest = NULL, *pre = NULL;
    char *path = reel_model_find(model, &manifest, &error);
    reel_quantizer *q = NULL;
    calib c = { .frames = frames };
    if (!path)
        goto fail;
    if (access(source, R_OK) != 0) {
        g_set_error(&error, REEL_ERROR, REEL_EIO, "--calibrate %s: %s", source, g_strerror(errno));
        goto fail;
    }
    if (!(q = reel_quantizer_new(path, &error)))
        goto fail;
    reel_model *m = reel_quantizer_model(q);
    if (reel_model_n_inputs(m) != 1 || reel_model_input(m, 0)->dtype != REEL_DTYPE_FLOAT32) {
        g_set_error(&error, REEL_ERROR, REEL_EUNSUPPORTED,
                    "%s: calibration on frames needs a model with one float32 image input (it has %d inputs)", path,
                    reel_model_n_inputs(m));
        goto fail;
    }
    if (!(pre = preprocess_props(manifest, opts, reel_model_input(m, 0), &error)))
        goto fail;
    c.q = q;
    bool dir = g_file_test(source, G_FILE_TEST_IS_DIR);
    int crc = dir ? calibrate_dir(source, pre, &c, &error) : calibrate_video(source, pre, &c, &error);
    if (crc < 0)
        goto fail;
    int pairs = 0;
    if (equalize) { // the ranges seen say how to scale; then the scaled model is calibrated again
        if ((pairs = reel_quantizer_equalize(q, &error)) < 0)
            goto fail;
        if (pairs > 0) {
            c = (calib){ .q = q, .frames = frames };
            crc = dir ? calibrate_dir(source, pre, &c, &error) : calibrate_video(source, pre, &c, &error);
            if (crc < 0)
                goto fail;
        }
    }
    reel_quant_summary sum;
    if (reel_quantizer_write(q, &params, out, &sum, &error) < 0)
        goto fail;
    printf("%s: %d activations (uint8, %s), %d weights (int8, %s), %d biases (int32, %d bias-corrected), %d nodes "
           "kept float, %d depthwise Convs equalized; calibrated on %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
           " frames of %s\n",
           out, sum.activations, params.method == REEL_QUANT_MINMAX ? "minmax" : "percentile", sum.weights,
           params.per_tensor ? "per tensor" : "per channel", sum.biases, sum.bias_corrected, sum.float_nodes, pairs,
           c.taken, c.total, source);
    rc = EXIT_OK;
    goto cleanup;
fail:
    rc = fail(error);
cleanup:
    g_clear_error(&c.error);
    reel_quantizer_free(&q);
    g_free(pre);
    g_free(path);
    g_free(manifest);
done:
    g_strfreev(keep);
    g_hash_table_destroy(opts);
    return rc;
}

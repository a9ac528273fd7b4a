// The ONNX loader, IR and graph passes: every model of ONNX's conformance
// data loads or fails cleanly, every test tensor reads, a corpus of bad
// models fails with messages naming the culprit, and the passes rewrite
// small models made by make_models.py (REEL_TEST_MODELS names its output);
// sessions refuse precision=fp16 on the cpu, without any Vulkan device.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <glib/gstdio.h>

#include "models/cpu/blas.h"
#include "models/cpu/workers.h"
#include "models/model_internal.h"
#include "models/onnx/load.h"
#include "models/op.h"
#include "models/passes.h"
#include "reel/device.h"
#include "reel/error.h"
#include "reel/model.h"
#include "tests/support/skip.h"

#define TESTDATA "/usr/share/libonnx-testdata/data/node"

static const char *models_dir(void)
{
    const char *d = g_getenv("REEL_TEST_MODELS");
    if (!d || !g_file_test(d, G_FILE_TEST_IS_DIR))
        return NULL;
    return d;
}

#define NEED_MODELS(dir)                                                                 \
    const char *dir = models_dir();                                                      \
    if (!dir) {                                                                          \
        reel_skip("REEL_TEST_MODELS unset: the models need python3-onnx");               \
    }

static char *model_path(const char *dir, const char *name)
{
    return g_build_filename(dir, name, NULL);
}

static void test_testdata_models(void **state)
{
    (void)state;
    GDir *d = g_dir_open(TESTDATA, 0, NULL);
    if (!d)
        reel_skip("no %s (libonnx-testdata)", TESTDATA);
    int cases = 0, ir_ok = 0, model_ok = 0, unsupported = 0, format = 0;
    const char *name;
    while ((name = g_dir_read_name(d))) {
        char *path = g_build_filename(TESTDATA, name, "model.onnx", NULL);
        if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
            g_free(path);
            continue;
        }
        cases++;
        GError *e = NULL;
        reel_ir_graph *g = reel_onnx_load(path, &e);
        if (g) {
            ir_ok++;
            assert_null(e);
            assert_true(g->outputs->len > 0);
            // Topological order: every input is produced by an earlier node.
            for (guint i = 0; i < g->nodes->len; i++) {
                const reel_ir_node *n = reel_ir_node_at(g, (int)i);
                for (int k = 0; k < n->n_inputs; k++) {
                    const reel_ir_value *v = reel_ir_value_at(g, n->inputs[k]);
                    assert_true(!v || v->producer < (int)i);
                }
            }
            reel_ir_graph_free(&g);
        } else {
            assert_non_null(e);
            assert_true(e->code == REEL_EUNSUPPORTED || e->code == REEL_EFORMAT);
            assert_non_null(strstr(e->message, name));
            g_clear_error(&e);
        }
        reel_model *m = reel_model_load(path, &e);
        if (m) {
            model_ok++;
            reel_model_summary s;
            reel_model_summarize(m, &s);
            assert_true(s.nodes >= 0);
            reel_model_unref(&m);
            assert_null(m);
        } else {
            assert_non_null(e);
            assert_true(e->message[0] != '\0');
            if (e->code == REEL_EUNSUPPORTED)
                unsupported++;
            else
                format++;
            g_clear_error(&e);
        }
        g_free(path);
    }
    g_dir_close(d);
    print_message("testdata: %d models, %d parse into the IR, %d load fully, %d unsupported, %d other errors\n",
                  cases, ir_ok, model_ok, unsupported, format);
    assert_true(cases > 0);
    // Everything but sequences, optionals, strings, bfloat16/uint32/uint64 and
    // the training-domain cases parses.
    assert_true(ir_ok > cases * 9 / 10);
}

static void test_testdata_tensors(void **state)
{
    (void)state;
    GDir *d = g_dir_open(TESTDATA, 0, NULL);
    if (!d)
        reel_skip("no %s (libonnx-testdata)", TESTDATA);
    int files = 0, ok = 0;
    const char *name;
    while ((name = g_dir_read_name(d))) {
        for (int set = 0;; set++) {
            char *sd = g_strdup_printf("%s/%s/test_data_set_%d", TESTDATA, name, set);
            if (!g_file_test(sd, G_FILE_TEST_IS_DIR)) {
                g_free(sd);
                break;
            }
            for (int io = 0; io < 2; io++) {
                for (int k = 0;; k++) {
                    char *p = g_strdup_printf("%s/%s_%d.pb", sd, io ? "output" : "input", k);
                    if (!g_file_test(p, G_FILE_TEST_EXISTS)) {
                        g_free(p);
                        break;
                    }
                    files++;
                    GError *e = NULL;
                    char *tn = NULL;
                    reel_tensor *t = reel_onnx_read_tensor_file(p, &tn, &e);
                    if (t) {
                        ok++;
                        assert_non_null(tn);
                        assert_int_equal(t->nbytes, (size_t)reel_tensor_count(t->rank, t->shape)
                                                        * reel_dtype_size(t->dtype));
                        reel_tensor_free(&t);
                        g_free(tn);
                    } else {
                        // Sequences, optionals and strings/bfloat16/uint32/uint64 tensors.
                        assert_non_null(e);
                        assert_true(e->code == REEL_EUNSUPPORTED || e->code == REEL_EFORMAT);
                        g_clear_error(&e);
                    }
                    g_free(p);
                }
            }
            g_free(sd);
        }
    }
    g_dir_close(d);
    print_message("testdata: %d tensor files, %d read\n", files, ok);
    assert_true(files > 0);
    assert_true(ok > files * 9 / 10);
}

static void expect_error(const char *dir, const char *file, int code, const char *needle1,
                         const char *needle2)
{
    char *p = model_path(dir, file);
    GError *e = NULL;
    reel_model *m = reel_model_load(p, &e);
    assert_null(m);
    assert_non_null(e);
    print_message("%s -> %s\n", file, e->message);
    assert_int_equal(e->code, code);
    assert_non_null(strstr(e->message, needle1));
    if (needle2)
        assert_non_null(strstr(e->message, needle2));
    g_error_free(e);
    g_free(p);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    assert_true(g_file_set_contents(path, data, (gssize)n, NULL));
}

static void test_truncated_and_garbage(void **state)
{
    (void)state;
    char *tmp = g_dir_make_tmp("reel-loader-XXXXXX", NULL);
    assert_non_null(tmp);
    char *src = g_build_filename(TESTDATA, "test_conv_with_strides_padding", "model.onnx", NULL);
    char *data = NULL;
    gsize len = 0;
    char *p = g_build_filename(tmp, "m.onnx", NULL);
    if (g_file_get_contents(src, &data, &len, NULL)) {
        // Every cut but the tail's last fields must fail, never crash.
        for (gsize cut = 1; cut < len; cut += 7) {
            write_bytes(p, data, cut);
            GError *e = NULL;
            reel_model *m = reel_model_load(p, &e);
            assert_null(m);
            assert_non_null(e);
            g_clear_error(&e);
        }
        write_bytes(p, data, len / 2);
        expect_error(tmp, "m.onnx", REEL_EFORMAT, "not an ONNX model", NULL);
        g_free(data);
    }
    guint8 garbage[4096];
    GRand *r = g_rand_new_with_seed(5);
    for (size_t i = 0; i < sizeof garbage; i++)
        garbage[i] = (guint8)g_rand_int(r);
    g_rand_free(r);
    write_bytes(p, garbage, sizeof garbage);
    expect_error(tmp, "m.onnx", REEL_EFORMAT, "not an ONNX model", NULL);
    write_bytes(p, "", 0);
    expect_error(tmp, "m.onnx", REEL_EFORMAT, "not an ONNX model", NULL);
    expect_error(tmp, "absent.onnx", REEL_EIO, "absent.onnx", NULL);
    g_unlink(p);
    g_rmdir(tmp);
    g_free(p);
    g_free(src);
    g_free(tmp);
}

static void test_bad_models(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    expect_error(dir, "bad_cycle.onnx", REEL_EFORMAT, "cycle", "'n");
    expect_error(dir, "bad_dangling.onnx", REEL_EFORMAT, "'adder'", "'ghost'");
    expect_error(dir, "bad_twice.onnx", REEL_EFORMAT, "'a'", "twice");
    expect_error(dir, "bad_init_size.onnx", REEL_EFORMAT, "'Wbad'", "20 bytes");
    expect_error(dir, "bad_negative_dim.onnx", REEL_EFORMAT, "'Wneg'", "negative");
    expect_error(dir, "bad_negative_input_dim.onnx", REEL_EFORMAT, "'X'", "negative");
    expect_error(dir, "bad_huge_dim.onnx", REEL_EFORMAT, "'Whuge'", "too large");
    expect_error(dir, "bad_huge_input.onnx", REEL_EFORMAT, "'X'", "overflows");
    expect_error(dir, "bad_rank.onnx", REEL_EUNSUPPORTED, "'X'", "rank 9");
    expect_error(dir, "bad_external_escape.onnx", REEL_EFORMAT, "'E'", "inside the model's directory");
    expect_error(dir, "bad_external_length.onnx", REEL_EFORMAT, "'E'", "needs 48");
    expect_error(dir, "bad_external_short.onnx", REEL_EFORMAT, "'Big'", "holds 64 bytes at offset 0, the shape needs 1073741824");
    expect_error(dir, "bad_external_link.onnx", REEL_EFORMAT, "'L'", "leads out of the folder");
    expect_error(dir, "bad_external_dir.onnx", REEL_EIO, "'D'", "not a regular file");
    // Every unsupported node is listed, not just the first.
    expect_error(dir, "bad_unknown_ops.onnx", REEL_EUNSUPPORTED, "'frob_a' (FrobnicateA)",
                 "'frob_b' (FrobnicateB)");
}

static reel_ir_graph *load_ir(const char *dir, const char *file)
{
    char *p = model_path(dir, file);
    GError *e = NULL;
    reel_ir_graph *g = reel_onnx_load(p, &e);
    if (!g)
        print_message("%s: %s\n", file, e->message);
    assert_non_null(g);
    g_free(p);
    return g;
}

static const reel_tensor *constant_of(const reel_ir_graph *g, const char *name)
{
    const reel_ir_value *v = reel_ir_value_at(g, reel_ir_find_value(g, name));
    assert_non_null(v);
    assert_non_null(v->constant);
    return v->constant;
}

static void test_storage_forms(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    reel_ir_graph *g = load_ir(dir, "storage.onnx");
    const reel_tensor *t = constant_of(g, "raw");
    assert_int_equal(t->dtype, REEL_DTYPE_FLOAT32);
    assert_int_equal(t->rank, 2);
    assert_true(((float *)t->data)[5] == 5.0f);
    t = constant_of(g, "floats");
    assert_true(((float *)t->data)[2] == 3.5f);
    t = constant_of(g, "i8");
    assert_int_equal(t->dtype, REEL_DTYPE_INT8);
    assert_int_equal(((int8_t *)t->data)[2], -3);
    t = constant_of(g, "f16");
    assert_int_equal(((uint16_t *)t->data)[0], 0x3c00);
    assert_int_equal(((uint16_t *)t->data)[1], 0xc000);
    t = constant_of(g, "bools");
    assert_int_equal(((uint8_t *)t->data)[0], 1);
    assert_int_equal(((uint8_t *)t->data)[1], 0);
    t = constant_of(g, "i64");
    assert_true(((int64_t *)t->data)[0] == (int64_t)1 << 40);
    t = constant_of(g, "dbl");
    assert_true(((double *)t->data)[1] == -8.0);
    t = constant_of(g, "cv");
    assert_int_equal(t->dtype, REEL_DTYPE_INT32);
    assert_int_equal(((int32_t *)t->data)[1], 8);
    t = constant_of(g, "cf");
    assert_int_equal(t->rank, 0);
    assert_true(*(float *)t->data == 0.5f);
    t = constant_of(g, "cfs");
    assert_true(((float *)t->data)[1] == 2.0f);
    t = constant_of(g, "ci");
    assert_true(*(int64_t *)t->data == 3);
    t = constant_of(g, "cis");
    assert_int_equal(t->shape[0], 3);
    assert_true(((int64_t *)t->data)[2] == 6);
    // The Constant nodes are gone; the Identity nodes remain.
    for (guint i = 0; i < g->nodes->len; i++)
        assert_string_equal(reel_ir_node_at(g, (int)i)->op, "Identity");
    reel_ir_graph_free(&g);

    g = load_ir(dir, "external.onnx");
    t = constant_of(g, "E");
    assert_int_equal(t->shape[1], 4);
    for (int i = 0; i < 12; i++)
        assert_true(((float *)t->data)[i] == (float)i);
    assert_int_equal(g->opset, 13);
    reel_ir_graph_free(&g);

    // Three external tensors from one file, each at its offset.
    g = load_ir(dir, "external_three.onnx");
    for (int w = 0; w < 3; w++) {
        char name[4] = { 'W', (char)('0' + w), 0 };
        t = constant_of(g, name);
        assert_int_equal(t->nbytes, 400);
        assert_true(((float *)t->data)[99] == 1.0f);
    }
    reel_ir_graph_free(&g);

    g = load_ir(dir, "unsorted.onnx");
    assert_string_equal(reel_ir_node_at(g, 0)->name, "first");
    assert_string_equal(reel_ir_node_at(g, 1)->name, "second");
    reel_ir_graph_free(&g);
}

static void check_tensor_file(const reel_tensor *t, const char *dir, const char *file)
{
    char *p = model_path(dir, file);
    reel_tensor *want = reel_onnx_read_tensor_file(p, NULL, NULL);
    assert_non_null(want);
    assert_int_equal(t->nbytes, want->nbytes);
    for (size_t i = 0; i < t->nbytes / 4; i++)
        assert_float_equal(((float *)t->data)[i], ((float *)want->data)[i], 1e-5);
    reel_tensor_free(&want);
    g_free(p);
}

static void test_conv_bn_relu(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    reel_ir_graph *g = load_ir(dir, "conv_bn_relu.onnx");
    assert_int_equal(g->nodes->len, 3);
    assert_int_equal(reel_passes_run(g, NULL, NULL), 0);
    assert_int_equal(g->nodes->len, 1);
    const reel_ir_node *n = reel_ir_node_at(g, 0);
    assert_string_equal(n->op, "Conv");
    assert_string_equal(n->fused, "Relu");
    assert_int_equal(n->n_inputs, 3);
    assert_int_equal(n->outputs[0], g_array_index(g->outputs, int, 0));
    assert_int_equal(reel_ir_value_at(g, n->outputs[0])->producer, 0);
    check_tensor_file(reel_ir_value_at(g, n->inputs[1])->constant, dir, "conv_bn_relu_w.pb");
    check_tensor_file(reel_ir_value_at(g, n->inputs[2])->constant, dir, "conv_bn_relu_b.pb");
    // The unfolded weights are no longer used, so no longer held.
    assert_null(reel_ir_value_at(g, reel_ir_find_value(g, "W"))->constant);
    reel_ir_graph_free(&g);

    if (!reel_op_find("Conv")) {
        print_message("no Conv kernel linked: reel_model_load part skipped\n");
        return;
    }
    char *p = model_path(dir, "conv_bn_relu.onnx");
    GError *e = NULL;
    reel_model *m = reel_model_load(p, &e);
    if (!m)
        print_message("%s\n", e->message);
    assert_non_null(m);
    reel_model_summary s;
    reel_model_summarize(m, &s);
    assert_int_equal(s.nodes, 1);
    assert_int_equal(s.parameters, 4 * 3 * 3 * 3 + 4);
    assert_int_equal(GPOINTER_TO_INT(g_hash_table_lookup(s.op_histogram, "Conv")), 1);
    assert_int_equal(reel_model_n_inputs(m), 1);
    assert_string_equal(reel_model_input(m, 0)->dim_names[0], "batch");
    assert_int_equal(reel_model_input(m, 0)->dims[0], -1);
    reel_model_unref(&m);
    g_free(p);
}

static void test_conv_silu_hardswish(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    const char *files[] = { "conv_silu.onnx", "conv_hardswish.onnx" };
    const char *fused[] = { "SiLU", "HardSwish" };
    for (int i = 0; i < 2; i++) {
        reel_ir_graph *g = load_ir(dir, files[i]);
        assert_int_equal(reel_passes_run(g, NULL, NULL), 0);
        assert_int_equal(g->nodes->len, 1);
        const reel_ir_node *n = reel_ir_node_at(g, 0);
        assert_string_equal(n->fused, fused[i]);
        if (i == 1) {
            assert_float_equal(n->fused_a, 1.0 / 6, 1e-6);
            assert_float_equal(n->fused_b, 0.5, 1e-6);
        }
        assert_int_equal(n->outputs[0], g_array_index(g->outputs, int, 0));
        reel_ir_graph_free(&g);
    }
}

// HardSwish written out (make_models.py's written_hardswish): fused into
// the Conv before it; alone, one HardSwish node computing x * clamp(x + 3,
// 0, 6) / 6 on values across its bends; left as it is where a Div by 5 ends
// it or its sum is read again.
static void test_written_hardswish(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    reel_ir_graph *g = load_ir(dir, "conv_hardswish_written.onnx");
    assert_int_equal(reel_passes_run(g, NULL, NULL), 0);
    assert_int_equal(g->nodes->len, 1);
    assert_string_equal(reel_ir_node_at(g, 0)->fused, "HardSwish");
    reel_ir_graph_free(&g);
    g = load_ir(dir, "hardswish_not_written.onnx");
    assert_int_equal(reel_passes_run(g, NULL, NULL), 0);
    assert_int_equal(g->nodes->len, 9);
    for (guint i = 0; i < g->nodes->len; i++)
        assert_string_not_equal(reel_ir_node_at(g, (int)i)->op, "HardSwish");
    reel_ir_graph_free(&g);

    char *p = model_path(dir, "hardswish_written.onnx");
    GError *e = NULL;
    reel_model *m = reel_model_load(p, &e);
    assert_non_null(m);
    reel_model_summary sum;
    reel_model_summarize(m, &sum);
    assert_int_equal(sum.nodes, 1);
    assert_int_equal(GPOINTER_TO_INT(g_hash_table_lookup(sum.op_histogram, "HardSwish")), 1);
    reel_session *s = reel_session_new(m, reel_session_params(.threads = 1), &e);
    assert_non_null(s);
    int64_t shape[2] = { 2, 50 };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 2, shape), *y = NULL;
    float *xv = x->data;
    for (int i = 0; i < 100; i++)
        xv[i] = -5.0f + 0.1f * (float)i; // -5 .. 4.9: below -3, between, above 3
    assert_int_equal(reel_session_run(s, &x, &y, &e), 0);
    const float *yv = y->data;
    for (int i = 0; i < 100; i++) {
        double v = xv[i], want = v * fmin(fmax(v + 3, 0), 6) / 6;
        assert_float_equal(yv[i], want, 1e-6);
    }
    reel_tensor_free(&x);
    reel_tensor_free(&y);
    reel_session_destroy(&s);
    reel_model_unref(&m);
    g_free(p);
}

// A hand-built graph for the residual fusion (no python3-onnx needed).
static int const_value(reel_ir_graph *g, const char *name, int rank, const int64_t *shape, unsigned seed)
{
    int v = reel_ir_add_value(g, name);
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, shape);
    GRand *r = g_rand_new_with_seed(seed);
    for (size_t i = 0; i < t->nbytes / 4; i++)
        ((float *)t->data)[i] = (float)g_rand_double_range(r, -1, 1);
    g_rand_free(r);
    reel_ir_value *val = reel_ir_value_at(g, v);
    val->constant = t;
    val->dtype = REEL_DTYPE_FLOAT32;
    val->rank = rank;
    memcpy(val->dims, shape, sizeof(int64_t) * (size_t)rank);
    return v;
}

static reel_ir_node *add_node(reel_ir_graph *g, const char *op, const int *in, int n_in, int out)
{
    reel_ir_node *n = g_new0(reel_ir_node, 1);
    n->name = g_strdup_printf("%s_%u", op, g->nodes->len);
    n->op = g_strdup(op);
    n->inputs = g_memdup2(in, sizeof(int) * (size_t)n_in);
    n->n_inputs = n_in;
    n->outputs = g_new(int, 1);
    n->outputs[0] = out;
    n->n_outputs = 1;
    reel_ir_value_at(g, out)->producer = (int)g->nodes->len;
    g_ptr_array_add(g->nodes, n);
    return n;
}

static reel_tensor *run_node(const reel_ir_node *n, reel_tensor **in, const reel_tensor *like, reel_workers *pool)
{
    const reel_op *op = reel_op_find(n->op);
    reel_tensor *y = reel_tensor_new(REEL_DTYPE_FLOAT32, like->rank, like->shape);
    reel_tensor *out[1] = { y };
    reel_exec_ctx ctx = { .opset = 13, .threads = pool ? 2 : 1, .workers = pool };
    ctx.scratch_size = op->scratch ? op->scratch(n, in, out) : 0;
    ctx.scratch = g_malloc0(ctx.scratch_size + 1);
    assert_int_equal(op->run(n, in, out, &ctx), 0);
    g_free(ctx.scratch);
    return y;
}

// Conv -> Add(other) -> Relu folds into the Conv (residual input 3, Relu
// fused), the Conv moving after the node computing the residual, and the
// fused kernel matches Conv, then Add and Relu, on one and two threads.
static void test_conv_add_relu(void **state)
{
    (void)state;
    assert_non_null(reel_op_find("Conv"));
    reel_ir_graph *g = reel_ir_graph_new();
    g->opset = 13;
    int64_t xs[4] = { 1, 16, 32, 32 }, ws[4] = { 16, 16, 3, 3 }, bs[1] = { 16 }, w2s[4] = { 16, 16, 1, 1 };
    int X = reel_ir_add_value(g, "X");
    reel_ir_value *xv = reel_ir_value_at(g, X);
    xv->dtype = REEL_DTYPE_FLOAT32;
    xv->rank = 4;
    memcpy(xv->dims, xs, sizeof xs);
    g_array_append_val(g->inputs, X);
    int W = const_value(g, "W", 4, ws, 1), B = const_value(g, "B", 1, bs, 2), W2 = const_value(g, "W2", 4, w2s, 3);
    int c = reel_ir_add_value(g, "c"), r = reel_ir_add_value(g, "r"), a = reel_ir_add_value(g, "a"),
        Y = reel_ir_add_value(g, "Y");
    reel_ir_node *conv = add_node(g, "Conv", (int[]){ X, W, B }, 3, c);
    conv->attrs = g_new0(reel_ir_attr, 1);
    conv->attrs[0] = (reel_ir_attr){ .name = g_strdup("pads"), .type = REEL_ATTR_INTS,
                                     .ints = g_memdup2((int64_t[]){ 1, 1, 1, 1 }, 4 * sizeof(int64_t)), .n = 4 };
    conv->n_attrs = 1;
    add_node(g, "Conv", (int[]){ X, W2 }, 2, r); // the residual, computed after the Conv
    add_node(g, "Add", (int[]){ r, c }, 2, a);
    add_node(g, "Relu", (int[]){ a }, 1, Y);
    g_array_append_val(g->outputs, Y);

    assert_int_equal(reel_passes_run(g, NULL, NULL), 0);
    assert_int_equal(g->nodes->len, 2);
    const reel_ir_node *n0 = reel_ir_node_at(g, 0), *n1 = reel_ir_node_at(g, 1);
    assert_int_equal(n0->outputs[0], r);
    assert_string_equal(n1->op, "Conv");
    assert_string_equal(n1->fused, "Relu");
    assert_int_equal(n1->n_inputs, 4);
    assert_int_equal(n1->inputs[2], B);
    assert_int_equal(n1->inputs[3], r);
    assert_int_equal(n1->outputs[0], Y);
    assert_int_equal(reel_ir_value_at(g, Y)->producer, 1);

    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, xs);
    for (size_t i = 0; i < x->nbytes / 4; i++)
        ((float *)x->data)[i] = (float)((i * 7919) % 200) / 100.0f - 1.0f;
    reel_tensor *wt = reel_ir_value_at(g, W)->constant, *bt = reel_ir_value_at(g, B)->constant;
    reel_tensor *rt = run_node(n0, (reel_tensor *[]){ x, reel_ir_value_at(g, W2)->constant }, x, NULL);
    // Unfused: the same Conv without residual and activation, then Add, Relu.
    reel_ir_node plain = *n1;
    plain.n_inputs = 3;
    plain.fused = NULL;
    reel_tensor *ct = run_node(&plain, (reel_tensor *[]){ x, wt, bt }, x, NULL);
    float *want = ct->data;
    for (size_t i = 0; i < ct->nbytes / 4; i++) {
        float v = want[i] + ((float *)rt->data)[i];
        want[i] = v > 0 ? v : 0;
    }
    reel_workers *pool = reel_workers_create(2);
    for (int threads = 1; threads <= 2; threads++) {
        reel_tensor *yt = run_node(n1, (reel_tensor *[]){ x, wt, bt, rt }, x, threads == 2 ? pool : NULL);
        for (size_t i = 0; i < yt->nbytes / 4; i++)
            assert_float_equal(((float *)yt->data)[i], want[i], 1e-5);
        reel_tensor_free(&yt);
    }
    reel_workers_destroy(&pool);
    assert_null(pool);
    reel_tensor_free(&ct);
    reel_tensor_free(&rt);
    reel_tensor_free(&x);
    reel_ir_graph_free(&g);
}

static void test_shape_chain_folds(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    const char *ops[] = { "Shape", "Gather", "Unsqueeze", "Concat", "Reshape" };
    for (size_t i = 0; i < G_N_ELEMENTS(ops); i++)
        if (!reel_op_find(ops[i]))
            fail_msg("no %s kernel", ops[i]);
    char *p = model_path(dir, "shape_chain.onnx");
    GError *e = NULL;
    reel_model *m = reel_model_load(p, &e);
    if (!m)
        print_message("%s\n", e->message);
    assert_non_null(m);
    const reel_ir_graph *g = m->graph;
    assert_int_equal(g->nodes->len, 1);
    const reel_ir_node *n = reel_ir_node_at(g, 0);
    assert_string_equal(n->op, "Reshape");
    const reel_tensor *shape = reel_ir_value_at(g, n->inputs[1])->constant;
    assert_non_null(shape);
    assert_int_equal(shape->shape[0], 2);
    assert_true(((int64_t *)shape->data)[0] == 2 && ((int64_t *)shape->data)[1] == -1);
    const reel_ir_value *y = reel_ir_value_at(g, n->outputs[0]);
    assert_int_equal(y->rank, 2);
    assert_int_equal(y->dims[1], 12);
    reel_model_unref(&m);
    g_free(p);
}

// fp16 needs a GPU with 16-bit float support: no session on the cpu,
// whether it is named as the device or none is, and no fallback to fp32.
static void test_fp16_refused_on_the_cpu(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    char *p = model_path(dir, "chain.onnx");
    GError *e = NULL;
    reel_model *m = reel_model_load(p, &e);
    if (!m)
        fail_msg("%s", e->message);
    reel_device *cpu = reel_device_open("cpu", &e);
    if (!cpu)
        fail_msg("%s", e->message);
    reel_device *devices[] = { NULL, cpu };
    for (size_t i = 0; i < G_N_ELEMENTS(devices); i++) {
        reel_session *s =
            reel_session_new(m, reel_session_params(.device = devices[i], .precision = REEL_PRECISION_FP16), &e);
        assert_null(s);
        assert_non_null(e);
        assert_int_equal(e->code, REEL_EUNSUPPORTED);
        assert_string_equal(e->message, "precision=fp16 needs a GPU with 16-bit float support; cpu has none");
        g_clear_error(&e);
        // The same model and device at fp32 make a session: the refusal is the precision's.
        s = reel_session_new(m, reel_session_params(.device = devices[i]), &e);
        assert_non_null(s);
        reel_session_destroy(&s);
    }
    reel_device_unref(&cpu);
    reel_model_unref(&m);
    g_free(p);
}

static void test_tensor_count(void **state)
{
    (void)state;
    int64_t s[3] = { 2, 3, 4 };
    assert_int_equal(reel_tensor_count(0, s), 1);
    assert_int_equal(reel_tensor_count(3, s), 24);
    int64_t big[2] = { INT64_C(1) << 40, INT64_C(1) << 40 };
    assert_int_equal(reel_tensor_count(2, big), -1);
    int64_t unk[2] = { 2, REEL_DIM_UNKNOWN };
    assert_int_equal(reel_tensor_count(2, unk), -1);
    assert_null(reel_tensor_new(REEL_DTYPE_FLOAT32, 2, big));
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_INT64, 3, s);
    assert_int_equal(t->nbytes, 24 * 8);
    reel_tensor *d = reel_tensor_dup(t);
    assert_memory_equal(d->data, t->data, t->nbytes);
    reel_tensor_free(&t);
    reel_tensor_free(&d);
    reel_tensor_free(&d);
    assert_null(d);
}

// Under REEL_MAX_MODEL_BYTES=1000 (test_loader model-limit): the model file
// is small, but its three external tensors of 400 bytes are 1200 together.
static void test_tensors_bounded_by_the_model_limit(void **state)
{
    (void)state;
    NEED_MODELS(dir);
    const char *env = getenv("REEL_MAX_MODEL_BYTES");
    if (!env || strcmp(env, "1000") != 0)
        fail_msg("run as `test_loader model-limit` with REEL_MAX_MODEL_BYTES=1000 (got %s)", env ? env : "none");
    expect_error(dir, "external_three.onnx", REEL_EFORMAT, "'W2'",
                 "the model's tensors pass 1000 bytes together (REEL_MAX_MODEL_BYTES)");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "model-limit") == 0) {
        const struct CMUnitTest env_tests[] = {
            cmocka_unit_test(test_tensors_bounded_by_the_model_limit),
        };
        return reel_run_tests(env_tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_count),
        cmocka_unit_test(test_testdata_models),
        cmocka_unit_test(test_testdata_tensors),
        cmocka_unit_test(test_truncated_and_garbage),
        cmocka_unit_test(test_bad_models),
        cmocka_unit_test(test_storage_forms),
        cmocka_unit_test(test_conv_bn_relu),
        cmocka_unit_test(test_conv_silu_hardswish),
        cmocka_unit_test(test_written_hardswish),
        cmocka_unit_test(test_shape_chain_folds),
        cmocka_unit_test(test_conv_add_relu),
        cmocka_unit_test(test_fp16_refused_on_the_cpu),
    };
    return reel_run_tests(tests, NULL, NULL);
}

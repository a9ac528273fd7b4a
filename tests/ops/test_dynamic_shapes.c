// Nodes whose output shapes depend on values computed in the graph
// (models/session.c infers them again at run time): NonZero on a computed
// mask, a Range whose limit comes from a Shape and from values, NMS over
// computed boxes; each run twice with different output sizes from one
// cached plan, and a static model whose plan has no dynamic node. The
// models are written by tests/ops/dynamic/make_models.py.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "models/session.h"
#include "reel/model.h"

static reel_model *load(const char *name)
{
    char *path = g_strdup_printf("%s/%s.onnx", REEL_DYNAMIC_MODELS, name);
    GError *error = NULL;
    reel_model *m = reel_model_load(path, &error);
    if (!m)
        fail_msg("%s: %s", path, error->message);
    g_free(path);
    return m;
}

static reel_session *session(reel_model *m)
{
    GError *error = NULL;
    reel_session *s = reel_session_new(m, reel_session_params(.threads = 1), &error);
    if (!s)
        fail_msg("%s", error->message);
    return s;
}

static reel_tensor *floats(int rank, const int64_t *shape, const float *v)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, shape);
    memcpy(t->data, v, t->nbytes);
    return t;
}

static void run(reel_session *s, reel_tensor **in, reel_tensor **out)
{
    GError *error = NULL;
    if (reel_session_run(s, in, out, &error))
        fail_msg("%s", error->message);
}

// y = x[x > 0]: 3 elements, then 1 of the same shape (the plan cached), then
// none of another shape.
static void nonzero_gather(void **state)
{
    (void)state;
    reel_model *m = load("nonzero_gather");
    reel_session *s = session(m);
    const float a[5] = { 1, -2, 3, 0, 5 }, b[5] = { -1, -2, 4, 0, -5 }, c[2] = { -1, 0 };
    const float *want[3] = { (const float[]){ 1, 3, 5 }, (const float[]){ 4 }, NULL };
    const int64_t count[3] = { 3, 1, 0 }, n[3] = { 5, 5, 2 };
    const float *xs[3] = { a, b, c };
    for (int r = 0; r < 3; r++) {
        reel_tensor *x = floats(1, &n[r], xs[r]), *y = NULL;
        run(s, &x, &y);
        assert_int_equal(y->rank, 2);
        assert_int_equal(y->shape[0], 1);
        assert_int_equal(y->shape[1], count[r]);
        for (int64_t i = 0; i < count[r]; i++)
            assert_true(((float *)y->data)[i] == want[r][i]);
        assert_int_equal(reel_session_dynamic_nodes(s), 2); // NonZero and its Gather
        reel_tensor_free(&x);
        reel_tensor_free(&y);
    }
    assert_int_equal(reel_session_n_plans(s), 2);
    reel_session_destroy(&s);
    reel_model_unref(&m);
}

// Range(0, len(x) + max(x)) for one shape and two maxima.
static void range_from_shape(void **state)
{
    (void)state;
    reel_model *m = load("range_shape");
    reel_session *s = session(m);
    const int64_t n = 3;
    const float xs[2][3] = { { 0, 2, 1 }, { 5, 0, 1 } };
    const int64_t lim[2] = { 5, 8 };
    for (int r = 0; r < 2; r++) {
        reel_tensor *x = floats(1, &n, xs[r]), *y = NULL;
        run(s, &x, &y);
        assert_int_equal(y->dtype, REEL_DTYPE_INT64);
        assert_int_equal(y->rank, 1);
        assert_int_equal(y->shape[0], lim[r]);
        for (int64_t i = 0; i < lim[r]; i++)
            assert_int_equal(((int64_t *)y->data)[i], i);
        reel_tensor_free(&x);
        reel_tensor_free(&y);
    }
    assert_int_equal(reel_session_n_plans(s), 1);
    reel_session_destroy(&s);
    reel_model_unref(&m);
}

// Three boxes: two overlap (the better scored one kept), then all apart.
static void nms_gather(void **state)
{
    (void)state;
    reel_model *m = load("nms_gather");
    reel_session *s = session(m);
    const int64_t bs[3] = { 1, 3, 4 }, ss[3] = { 1, 1, 3 };
    const float boxes[2][12] = { { 0, 0, 1, 1, 0, 0.05f, 1, 1.05f, 3, 3, 4, 4 },
                                 { 0, 0, 1, 1, 2, 2, 3, 3, 5, 5, 6, 6 } };
    const float scores[3] = { 0.1f, 0.9f, 0.5f };
    const int64_t kept[2] = { 2, 3 };
    const int order[2][3] = { { 1, 2 }, { 1, 2, 0 } };
    for (int r = 0; r < 2; r++) {
        reel_tensor *in[2] = { floats(3, bs, boxes[r]), floats(3, ss, scores) }, *y = NULL;
        run(s, in, &y);
        assert_int_equal(y->rank, 2);
        assert_int_equal(y->shape[0], kept[r]);
        assert_int_equal(y->shape[1], 4);
        for (int64_t i = 0; i < kept[r]; i++)
            for (int d = 0; d < 4; d++)
                assert_true(((float *)y->data)[i * 4 + d] == 2 * boxes[r][order[r][i] * 4 + d]);
        reel_tensor_free(&in[0]);
        reel_tensor_free(&in[1]);
        reel_tensor_free(&y);
    }
    reel_session_destroy(&s);
    reel_model_unref(&m);
}

// A computed delta of 0: the run fails naming the node; the next one, with
// a delta of 2, runs.
static void range_delta_zero(void **state)
{
    (void)state;
    reel_model *m = load("range_delta");
    reel_session *s = session(m);
    const int64_t n = 2;
    reel_tensor *x = floats(1, &n, (const float[]){ 0, -1 }), *y = NULL;
    GError *error = NULL;
    assert_int_not_equal(reel_session_run(s, &x, &y, &error), 0);
    assert_non_null(strstr(error->message, "the_range"));
    assert_non_null(strstr(error->message, "delta is 0"));
    g_clear_error(&error);
    ((float *)x->data)[1] = 2;
    run(s, &x, &y);
    assert_int_equal(y->shape[0], 2);
    assert_int_equal(((int64_t *)y->data)[1], 2);
    reel_tensor_free(&x);
    reel_tensor_free(&y);
    reel_session_destroy(&s);
    reel_model_unref(&m);
}

static void static_plan(void **state)
{
    (void)state;
    reel_model *m = load("static");
    reel_session *s = session(m);
    const int64_t n = 3;
    reel_tensor *x = floats(1, &n, (const float[]){ -1, 2, 0 }), *y = NULL;
    run(s, &x, &y);
    assert_true(((float *)y->data)[0] == -1 && ((float *)y->data)[1] == 4);
    assert_int_equal(reel_session_dynamic_nodes(s), 0);
    reel_tensor_free(&x);
    reel_tensor_free(&y);
    reel_session_destroy(&s);
    reel_model_unref(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(nonzero_gather),
        cmocka_unit_test(range_from_shape),
        cmocka_unit_test(nms_gather),
        cmocka_unit_test(range_delta_zero),
        cmocka_unit_test(static_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

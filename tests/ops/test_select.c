// The selection and indexing kernels (models/cpu/select.c, index.c) where
// ONNX's cases do not reach: ties, NaN and other dtypes, both Hardmax forms,
// the scatter reductions ONNX has no case for, batch_dims, the ops whose
// output shape depends on data (NonZero, Compress, Unique,
// NonMaxSuppression: they run on constant inputs), empty tensors, and the
// failures, whose messages name the node.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/ops/op_harness.h"

static reel_tensor *f32(int rank, const int64_t *shape, const float *data)
{
    return op_tensor(REEL_DTYPE_FLOAT32, rank, shape, data);
}

static reel_tensor *i64(int rank, const int64_t *shape, const int64_t *data)
{
    return op_tensor(REEL_DTYPE_INT64, rank, shape, data);
}

// Infer must fail with a message that names the node and contains `what`.
static void expect_rejected(const op_call *c, int n_in, reel_tensor **in, const char *what)
{
    reel_tensor *out[OP_MAX_IO];
    assert_int_not_equal(op_run(c, n_in, in, out), 0);
    const char *msg = op_message();
    if (!strstr(msg, "node 'n'") || !strstr(msg, c->op) || !strstr(msg, what))
        fail_msg("message \"%s\" does not name the node or \"%s\"", msg, what);
}

static void expect_shape(const reel_tensor *t, int rank, const int64_t *shape)
{
    assert_int_equal(t->rank, rank);
    for (int d = 0; d < rank; d++)
        assert_int_equal(t->shape[d], shape[d]);
}

static void expect_i64(const reel_tensor *t, const int64_t *want, int64_t count)
{
    assert_int_equal(t->dtype, REEL_DTYPE_INT64);
    assert_int_equal(reel_tensor_count(t->rank, t->shape), count);
    const int64_t *got = t->data;
    for (int64_t i = 0; i < count; i++)
        if (got[i] != want[i])
            fail_msg("element %" G_GINT64_FORMAT ": %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT, i, got[i],
                     want[i]);
}

static void expect_f32(const reel_tensor *t, const float *want, int64_t count)
{
    assert_int_equal(t->dtype, REEL_DTYPE_FLOAT32);
    assert_int_equal(reel_tensor_count(t->rank, t->shape), count);
    const float *got = t->data;
    for (int64_t i = 0; i < count; i++)
        if (!(got[i] == want[i] || (isnan(got[i]) && isnan(want[i]))))
            fail_msg("element %" G_GINT64_FORMAT ": %g, expected %g", i, got[i], want[i]);
}

static void free_all(reel_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        reel_tensor_free(&t[i]);
}

// ---- select.c ---------------------------------------------------------------------

static void argmax_ties_nan_dtypes(void **state)
{
    (void)state;
    // int32 with ties along the last axis (-1): first or last of the largest.
    const int64_t s[] = { 2, 4 };
    const int32_t xi[] = { 3, 7, 7, 1, -5, -5, -9, -5 };
    for (int last = 0; last <= 1; last++) {
        op_call c = { .op = "ArgMax", .n_out = 1 };
        op_attr_int(&c, "axis", -1);
        op_attr_int(&c, "keepdims", 0);
        op_attr_int(&c, "select_last_index", last);
        reel_tensor *in[1] = { op_tensor(REEL_DTYPE_INT32, 2, s, xi) }, *out[1];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        const int64_t want[2][2] = { { 1, 0 }, { 2, 3 } };
        expect_shape(out[0], 1, (const int64_t[]){ 2 });
        expect_i64(out[0], want[last], 2);
        free_all(out, 1);
    }
    // float along axis 0 (columns): NaN wins for ArgMax and ArgMin alike.
    const float xf[] = { 1, NAN, 5, 2, 3, -1 };
    const int64_t s2[] = { 2, 3 };
    for (int op = 0; op < 2; op++) {
        op_call c = { .op = op ? "ArgMin" : "ArgMax", .n_out = 1 };
        reel_tensor *in[1] = { f32(2, s2, xf) }, *out[1];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        const int64_t want[2][3] = { { 1, 0, 0 }, { 0, 0, 1 } };
        expect_shape(out[0], 2, (const int64_t[]){ 1, 3 });
        expect_i64(out[0], want[op], 3);
        free_all(out, 1);
    }
    // An empty outer dim: an empty output of the right shape.
    {
        op_call c = { .op = "ArgMin", .n_out = 1 };
        op_attr_int(&c, "axis", 1);
        reel_tensor *in[1] = { f32(2, (const int64_t[]){ 0, 3 }, NULL) }, *out[1];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        expect_shape(out[0], 2, (const int64_t[]){ 0, 1 });
        free_all(out, 1);
    }
    // Rejections: a bool input, an axis out of range, an empty reduced axis.
    op_call c = { .op = "ArgMax", .n_out = 1 };
    reel_tensor *in[1] = { op_tensor(REEL_DTYPE_BOOL, 2, s, NULL) };
    expect_rejected(&c, 1, in, "input type bool is not supported");
    op_attr_int(&c, "axis", 2);
    in[0] = f32(2, s, NULL);
    expect_rejected(&c, 1, in, "axis 2 is out of range");
    op_call e = { .op = "ArgMax", .n_out = 1 };
    in[0] = f32(2, (const int64_t[]){ 0, 3 }, NULL);
    expect_rejected(&e, 1, in, "empty");
}

static void topk_ties_and_forms(void **state)
{
    (void)state;
    // Ties: the lower index first, for largest and smallest; int64 values.
    const int64_t s[] = { 6 }, x[] = { 4, 9, 4, 9, 1, 4 };
    const int64_t want_v[2][3] = { { 1, 4, 4 }, { 9, 9, 4 } }, want_i[2][3] = { { 4, 0, 2 }, { 1, 3, 0 } };
    for (int largest = 0; largest <= 1; largest++) {
        op_call c = { .op = "TopK", .n_out = 2 };
        op_attr_int(&c, "largest", largest);
        reel_tensor *in[2] = { i64(1, s, x), i64(1, (const int64_t[]){ 1 }, (const int64_t[]){ 3 }) }, *out[2];
        assert_int_equal(op_run(&c, 2, in, out), 0);
        expect_i64(out[0], want_v[largest], 3);
        expect_i64(out[1], want_i[largest], 3);
        free_all(out, 2);
    }
    // Opset 1: k is an attribute; along axis 0 of a (3, 2) input.
    {
        op_call c = { .op = "TopK", .opset = 1, .n_out = 2 };
        op_attr_int(&c, "k", 2);
        op_attr_int(&c, "axis", 0);
        const float xf[] = { 1, 6, 5, 2, 3, 6 };
        reel_tensor *in[1] = { f32(2, (const int64_t[]){ 3, 2 }, xf) }, *out[2];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        expect_shape(out[0], 2, (const int64_t[]){ 2, 2 });
        expect_f32(out[0], (const float[]){ 5, 6, 3, 6 }, 4);
        expect_i64(out[1], (const int64_t[]){ 1, 0, 2, 2 }, 4);
        free_all(out, 2);
    }
    // K larger than the axis; a uint8 input.
    op_call c = { .op = "TopK", .n_out = 2 };
    reel_tensor *in[2] = { i64(1, s, x), i64(1, (const int64_t[]){ 1 }, (const int64_t[]){ 7 }) };
    expect_rejected(&c, 2, in, "larger than the axis");
    in[0] = op_tensor(REEL_DTYPE_UINT8, 1, s, NULL);
    in[1] = i64(1, (const int64_t[]){ 1 }, (const int64_t[]){ 1 });
    expect_rejected(&c, 2, in, "input type uint8 is not supported");
}

// Whether a ranks before b in TopK's order: NaN above every number, then by
// value (descending when largest), ties by the lower index.
static bool ranks_before(float a, int64_t ia, float b, int64_t ib, bool largest)
{
    if (isnan(a) != isnan(b))
        return largest ? isnan(a) : isnan(b);
    if (!isnan(a) && a != b)
        return largest ? a > b : a < b;
    return ia < ib;
}

// A long slice and a small k (the heap), many ties and some NaN, against a
// naive selection: each position the best of what is left.
static void topk_heap_against_naive(void **state)
{
    (void)state;
    enum { DIM = 300, K = 7 };
    float x[DIM];
    unsigned seed = 11;
    for (int i = 0; i < DIM; i++)
        x[i] = i % 41 == 3 ? NAN : (float)(rand_r(&seed) % 9);
    for (int largest = 0; largest <= 1; largest++) {
        bool used[DIM] = { false };
        float want_v[K];
        int64_t want_i[K];
        for (int r = 0; r < K; r++) {
            int b = -1;
            for (int i = 0; i < DIM; i++)
                if (!used[i] && (b < 0 || ranks_before(x[i], i, x[b], b, largest)))
                    b = i;
            used[b] = true;
            want_v[r] = x[b];
            want_i[r] = b;
        }
        op_call c = { .op = "TopK", .n_out = 2 };
        op_attr_int(&c, "largest", largest);
        const int64_t k = K, s[] = { DIM };
        reel_tensor *in[2] = { f32(1, s, x), i64(1, (const int64_t[]){ 1 }, &k) }, *out[2];
        assert_int_equal(op_run(&c, 2, in, out), 0);
        expect_f32(out[0], want_v, K);
        expect_i64(out[1], want_i, K);
        free_all(out, 2);
    }
}

static void hardmax_both_forms(void **state)
{
    (void)state;
    // (2, 2, 2) at axis 1: opset 11 flattens dims 1.. into rows of 4, opset
    // 13 takes each column along axis 1.
    const int64_t s[] = { 2, 2, 2 };
    const float x[] = { 1, 5, 3, 2, 7, 7, 0, 9 };
    const float want11[] = { 0, 1, 0, 0, 0, 0, 0, 1 }, want13[] = { 0, 1, 1, 0, 1, 0, 0, 1 };
    for (int opset = 11; opset <= 13; opset += 2) {
        op_call c = { .op = "Hardmax", .opset = opset, .n_out = 1 };
        op_attr_int(&c, "axis", 1);
        reel_tensor *in[1] = { f32(3, s, x) }, *out[1];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        expect_f32(out[0], opset == 11 ? want11 : want13, 8);
        free_all(out, 1);
    }
    op_call c = { .op = "Hardmax", .n_out = 1 };
    reel_tensor *in[1] = { op_tensor(REEL_DTYPE_INT32, 3, s, NULL) };
    expect_rejected(&c, 1, in, "input type int32 is not supported");
}

static void cumsum_axis_and_errors(void **state)
{
    (void)state;
    // int32 along axis -2 of (3, 2), exclusive and reversed.
    const int32_t x[] = { 1, 2, 3, 4, 5, 6 };
    op_call c = { .op = "CumSum", .n_out = 1 };
    op_attr_int(&c, "exclusive", 1);
    op_attr_int(&c, "reverse", 1);
    reel_tensor *in[2] = { op_tensor(REEL_DTYPE_INT32, 2, (const int64_t[]){ 3, 2 }, x),
                           op_tensor(REEL_DTYPE_INT32, 0, NULL, (const int32_t[]){ -2 }) },
                *out[1];
    assert_int_equal(op_run(&c, 2, in, out), 0);
    const int32_t want[] = { 8, 10, 5, 6, 0, 0 };
    assert_memory_equal(out[0]->data, want, sizeof want);
    free_all(out, 1);
    in[0] = op_tensor(REEL_DTYPE_INT32, 2, (const int64_t[]){ 3, 2 }, x);
    in[1] = op_tensor(REEL_DTYPE_INT32, 0, NULL, (const int32_t[]){ 2 });
    expect_rejected(&c, 2, in, "axis is not one value in range");
}

static void nms_constant_inputs(void **state)
{
    (void)state;
    // Two classes over three boxes (center format): boxes 0 and 1 overlap
    // by IoU 3.5 / 4.5, box 2 is apart. Class 0 keeps 0 and 2 (1 overlaps
    // 0); class 1 keeps 1 (0 overlaps it, 2's score is under 0.25).
    const float boxes[] = { 0, 0, 2, 2, 0.25f, 0, 2, 2, 10, 10, 1, 1 };
    const float scores[] = { 0.9f, 0.8f, 0.7f, 0.3f, 0.95f, 0.2f };
    op_call c = { .op = "NonMaxSuppression", .n_out = 1 };
    op_attr_int(&c, "center_point_box", 1);
    reel_tensor *in[5] = { f32(3, (const int64_t[]){ 1, 3, 4 }, boxes), f32(3, (const int64_t[]){ 1, 2, 3 }, scores),
                           i64(1, (const int64_t[]){ 1 }, (const int64_t[]){ 5 }),
                           f32(1, (const int64_t[]){ 1 }, (const float[]){ 0.5f }),
                           f32(1, (const int64_t[]){ 1 }, (const float[]){ 0.25f }) },
                *out[1];
    assert_int_equal(op_run(&c, 5, in, out), 0);
    expect_shape(out[0], 2, (const int64_t[]){ 3, 3 });
    expect_i64(out[0], (const int64_t[]){ 0, 0, 0, 0, 0, 2, 0, 1, 1 }, 9);
    free_all(out, 1);
    // Without max_output_boxes_per_class nothing is selected.
    reel_tensor *in2[2] = { f32(3, (const int64_t[]){ 1, 3, 4 }, boxes), f32(3, (const int64_t[]){ 1, 2, 3 }, scores) };
    op_call d = { .op = "NonMaxSuppression", .n_out = 1 };
    assert_int_equal(op_run(&d, 2, in2, out), 0);
    expect_shape(out[0], 2, (const int64_t[]){ 0, 3 });
    free_all(out, 1);
    op_attr_int(&d, "center_point_box", 2);
    in2[0] = f32(3, (const int64_t[]){ 1, 3, 4 }, boxes);
    in2[1] = f32(3, (const int64_t[]){ 1, 2, 3 }, scores);
    expect_rejected(&d, 2, in2, "attribute 'center_point_box' = 2 is not supported");
}

// ---- index.c ----------------------------------------------------------------------

static void scatter_reductions_and_range(void **state)
{
    (void)state;
    // ScatterElements max and min on axis -1 with a duplicate index.
    const float data[] = { 1, 2, 3, 4 };
    const int64_t idx[] = { 1, 1, 0, 1 };
    const float upd[] = { 5, -1, 0, 9 };
    const float want[2][4] = { { 1, 5, 3, 9 }, { 1, -1, 0, 4 } };
    for (int k = 0; k < 2; k++) {
        op_call c = { .op = "ScatterElements", .n_out = 1 };
        op_attr_int(&c, "axis", -1);
        op_attr_str(&c, "reduction", k ? "min" : "max");
        const int64_t s[] = { 2, 2 };
        reel_tensor *in[3] = { f32(2, s, data), i64(2, s, idx), f32(2, s, upd) }, *out[1];
        assert_int_equal(op_run(&c, 3, in, out), 0);
        expect_f32(out[0], want[k], 4);
        free_all(out, 1);
    }
    // An index out of range fails the run and writes nothing out of bounds.
    {
        op_call c = { .op = "GatherElements", .n_out = 1 };
        const int64_t s[] = { 2, 2 };
        reel_tensor *in[2] = { f32(2, s, data), i64(2, s, (const int64_t[]){ 0, 1, -3, 0 }) }, *out[1];
        assert_int_equal(op_run(&c, 2, in, out), REEL_EINVAL);
    }
    {
        op_call c = { .op = "ScatterND", .n_out = 1 };
        reel_tensor *in[3] = { f32(1, (const int64_t[]){ 4 }, data), i64(2, (const int64_t[]){ 1, 1 }, (const int64_t[]){ 4 }),
                               f32(1, (const int64_t[]){ 1 }, upd) },
                    *out[1];
        assert_int_equal(op_run(&c, 3, in, out), REEL_EINVAL);
    }
    // Rejected: an unknown reduction, a reduction on bool data.
    op_call c = { .op = "ScatterND", .n_out = 1 };
    op_attr_str(&c, "reduction", "foo");
    reel_tensor *in[3] = { f32(1, (const int64_t[]){ 4 }, data), i64(2, (const int64_t[]){ 1, 1 }, (const int64_t[]){ 0 }),
                           f32(1, (const int64_t[]){ 1 }, upd) };
    expect_rejected(&c, 3, in, "attribute 'reduction' = 'foo' is not supported");
    op_call b = { .op = "ScatterElements", .n_out = 1 };
    op_attr_str(&b, "reduction", "add");
    in[0] = op_tensor(REEL_DTYPE_BOOL, 1, (const int64_t[]){ 4 }, NULL);
    in[1] = i64(1, (const int64_t[]){ 1 }, (const int64_t[]){ 0 });
    in[2] = op_tensor(REEL_DTYPE_BOOL, 1, (const int64_t[]){ 1 }, NULL);
    expect_rejected(&b, 3, in, "reduction 'add' on bool data is not supported");
}

static void gather_nd_batch_and_slices(void **state)
{
    (void)state;
    // data (2, 2, 3), batch_dims 1, indices (2, 1, 1): row r of batch b.
    float data[12];
    for (int i = 0; i < 12; i++)
        data[i] = (float)i;
    op_call c = { .op = "GatherND", .n_out = 1 };
    op_attr_int(&c, "batch_dims", 1);
    reel_tensor *in[2] = { f32(3, (const int64_t[]){ 2, 2, 3 }, data),
                           i64(3, (const int64_t[]){ 2, 1, 1 }, (const int64_t[]){ -1, 0 }) },
                *out[1];
    assert_int_equal(op_run(&c, 2, in, out), 0);
    expect_shape(out[0], 3, (const int64_t[]){ 2, 1, 3 });
    expect_f32(out[0], (const float[]){ 3, 4, 5, 6, 7, 8 }, 6);
    free_all(out, 1);
    op_call d = { .op = "GatherND", .n_out = 1 };
    in[0] = f32(3, (const int64_t[]){ 2, 2, 3 }, data);
    in[1] = op_tensor(REEL_DTYPE_FLOAT32, 2, (const int64_t[]){ 1, 1 }, NULL);
    expect_rejected(&d, 2, in, "indices type float32 is not supported");
}

static void onehot_out_of_range(void **state)
{
    (void)state;
    // Index 3 is outside [-3, 3): its column stays all off; -1 is the last.
    op_call c = { .op = "OneHot", .n_out = 1 };
    op_attr_int(&c, "axis", 0);
    reel_tensor *in[3] = { i64(1, (const int64_t[]){ 3 }, (const int64_t[]){ 0, 3, -1 }),
                           op_tensor(REEL_DTYPE_INT32, 0, NULL, (const int32_t[]){ 3 }),
                           f32(1, (const int64_t[]){ 2 }, (const float[]){ -1, 2 }) },
                *out[1];
    assert_int_equal(op_run(&c, 3, in, out), 0);
    expect_shape(out[0], 2, (const int64_t[]){ 3, 3 });
    expect_f32(out[0], (const float[]){ 2, -1, -1, -1, -1, -1, -1, -1, 2 }, 9);
    free_all(out, 1);
    // Before opset 11 a negative index is out of range too.
    c.opset = 10;
    in[0] = i64(1, (const int64_t[]){ 3 }, (const int64_t[]){ 0, 3, -1 });
    in[1] = op_tensor(REEL_DTYPE_INT32, 0, NULL, (const int32_t[]){ 3 });
    in[2] = f32(1, (const int64_t[]){ 2 }, (const float[]){ -1, 2 });
    assert_int_equal(op_run(&c, 3, in, out), 0);
    expect_f32(out[0], (const float[]){ 2, -1, -1, -1, -1, -1, -1, -1, -1 }, 9);
    free_all(out, 1);
    in[0] = i64(1, (const int64_t[]){ 3 }, (const int64_t[]){ 0, 1, 2 });
    in[1] = op_tensor(REEL_DTYPE_INT32, 0, NULL, (const int32_t[]){ 3 });
    in[2] = f32(1, (const int64_t[]){ 3 }, NULL);
    expect_rejected(&c, 3, in, "two elements");
}

static void data_shaped_ops(void **state)
{
    (void)state;
    // NonZero of an int32 (2, 3): coordinates in row-major order.
    {
        op_call c = { .op = "NonZero", .n_out = 1 };
        reel_tensor *in[1] = { op_tensor(REEL_DTYPE_INT32, 2, (const int64_t[]){ 2, 3 },
                                      (const int32_t[]){ 0, 4, 0, -2, 0, 1 }) },
                    *out[1];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        expect_shape(out[0], 2, (const int64_t[]){ 2, 3 });
        expect_i64(out[0], (const int64_t[]){ 0, 1, 1, 1, 0, 2 }, 6);
        free_all(out, 1);
    }
    // Compress along axis -1 with a shorter condition.
    {
        op_call c = { .op = "Compress", .n_out = 1 };
        op_attr_int(&c, "axis", -1);
        const uint8_t cond[] = { 1, 0 };
        reel_tensor *in[2] = { f32(2, (const int64_t[]){ 2, 3 }, (const float[]){ 1, 2, 3, 4, 5, 6 }),
                               op_tensor(REEL_DTYPE_BOOL, 1, (const int64_t[]){ 2 }, cond) },
                    *out[1];
        assert_int_equal(op_run(&c, 2, in, out), 0);
        expect_shape(out[0], 2, (const int64_t[]){ 2, 1 });
        expect_f32(out[0], (const float[]){ 1, 4 }, 2);
        free_all(out, 1);
    }
    // Unique, unsorted, along axis 1: columns in order of first occurrence.
    {
        op_call c = { .op = "Unique", .n_out = 4 };
        op_attr_int(&c, "axis", 1);
        op_attr_int(&c, "sorted", 0);
        reel_tensor *in[1] = { f32(2, (const int64_t[]){ 2, 4 }, (const float[]){ 3, 1, 3, 1, 0, 2, 0, 5 }) }, *out[4];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        expect_shape(out[0], 2, (const int64_t[]){ 2, 3 });
        expect_f32(out[0], (const float[]){ 3, 1, 1, 0, 2, 5 }, 6);
        expect_i64(out[1], (const int64_t[]){ 0, 1, 3 }, 3);
        expect_i64(out[2], (const int64_t[]){ 0, 1, 0, 2 }, 4);
        expect_i64(out[3], (const int64_t[]){ 2, 1, 1 }, 3);
        free_all(out, 4);
    }
    // An empty input: nothing unique.
    {
        op_call c = { .op = "Unique", .n_out = 1 };
        reel_tensor *in[1] = { f32(1, (const int64_t[]){ 0 }, NULL) }, *out[1];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        expect_shape(out[0], 1, (const int64_t[]){ 0 });
        free_all(out, 1);
    }
    op_call c = { .op = "Compress", .n_out = 1 };
    reel_tensor *in[2] = { f32(1, (const int64_t[]){ 2 }, NULL), op_tensor(REEL_DTYPE_BOOL, 1, (const int64_t[]){ 3 }, NULL) };
    expect_rejected(&c, 2, in, "longer than the axis");
}

// The per-frame forms: a segmentation head's ArgMax over 21 classes of a
// 512x512 map, TopK 5 of 1000 class scores and 100 of a detector's 25200
// boxes, on one thread.
static void timings(void **state)
{
    (void)state;
    const int64_t s[] = { 1, 21, 512, 512 };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, s);
    float *v = x->data;
    unsigned seed = 3;
    for (size_t i = 0; i < x->nbytes / 4; i++)
        v[i] = (float)rand_r(&seed) / (float)RAND_MAX;
    double best = INFINITY;
    for (int rep = 0; rep < 5; rep++) {
        op_call c = { .op = "ArgMax", .n_out = 1 };
        op_attr_int(&c, "axis", 1);
        reel_tensor *in[1] = { reel_tensor_dup(x) }, *out[1];
        assert_int_equal(op_run(&c, 1, in, out), 0);
        best = MIN(best, op_run_ms(1));
        free_all(out, 1);
    }
    printf("ArgMax 1x21x512x512 axis 1: %.3f ms (best of 5)\n", best);
    reel_tensor_free(&x);
    static const int64_t topk[][2] = { { 1000, 5 }, { 25200, 100 } };
    for (size_t t = 0; t < G_N_ELEMENTS(topk); t++) {
        const int64_t s2[] = { 1, topk[t][0] };
        x = reel_tensor_new(REEL_DTYPE_FLOAT32, 2, s2);
        v = x->data;
        for (int64_t i = 0; i < topk[t][0]; i++)
            v[i] = (float)rand_r(&seed) / (float)RAND_MAX;
        best = INFINITY;
        for (int rep = 0; rep < 5; rep++) {
            op_call c = { .op = "TopK", .n_out = 2 };
            reel_tensor *in[2] = { reel_tensor_dup(x), i64(1, (const int64_t[]){ 1 }, &topk[t][1]) }, *out[2];
            assert_int_equal(op_run(&c, 2, in, out), 0);
            best = MIN(best, op_run_ms(1));
            free_all(out, 2);
        }
        printf("TopK %" G_GINT64_FORMAT " of 1x%" G_GINT64_FORMAT ": %.3f ms (best of 5)\n", topk[t][1], topk[t][0],
               best);
        reel_tensor_free(&x);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(argmax_ties_nan_dtypes),      cmocka_unit_test(topk_ties_and_forms),
        cmocka_unit_test(topk_heap_against_naive),
        cmocka_unit_test(hardmax_both_forms),          cmocka_unit_test(cumsum_axis_and_errors),
        cmocka_unit_test(nms_constant_inputs),         cmocka_unit_test(scatter_reductions_and_range),
        cmocka_unit_test(gather_nd_batch_and_slices),  cmocka_unit_test(onehot_out_of_range),
        cmocka_unit_test(data_shaped_ops),             cmocka_unit_test(timings),
    };
    return op_run_tests(tests, .opset = 18);
}

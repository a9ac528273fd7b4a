// max-wait-ms on `batch` and on `infer batch=N`, and batch's one frame per
// stream in a group: a partial group (batch) or
// a partial batch (infer) goes on, before end of stream, once its first
// frame has waited max-wait-ms, even when no further frame comes (the
// element's deadline fires). The application pushes through appsrc and
// pulls from appsink, and never ends the stream before the frames are out.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"
#include "tests/support/pipeline.h"

#define W 64
#define H 48
#define CAPS "video/raw,format=rgb24,width=64,height=48,framerate=30/1"
#define MAX_WAIT_MS 100
#define DEADLINE_US (60 * G_USEC_PER_SEC)

static reel_pipeline *start(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p || reel_pipeline_start(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    return p;
}

// Frame i: every byte differs from frame to frame.
static void push(reel_element *in, int64_t i)
{
    reel_buffer *b = reel_appsrc_alloc(in);
    assert_non_null(b);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < 3 * W; x++)
            b->planes[0][(size_t)y * b->strides[0] + x] = (uint8_t)(i * 41 + x * 3 + y * 7);
    assert_int_equal(reel_appsrc_push(in, b), 0);
}

// The next frame from appsink, waiting up to the deadline; NULL fails.
static reel_buffer *pull(reel_element *out)
{
    reel_buffer *b = reel_appsink_pull(out, DEADLINE_US);
    if (!b)
        fail_msg("no frame within 60 s, and the stream has not ended");
    return b;
}

// Two frames in, fewer than a group, and nothing after them: both come out,
// in order, while the stream goes on, and (`held`: groups larger than one)
// not before max-wait-ms after the first went in.
static void partial_group_goes_on(reel_pipeline *p, GPtrArray *got, bool held)
{
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    int64_t pushed = g_get_monotonic_time();
    push(in, 0);
    push(in, 1);
    for (int i = 0; i < 2; i++) {
        reel_buffer *b = pull(out);
        assert_int_equal(b->frame_number, i);
        g_ptr_array_add(got, b);
    }
    // A lower bound only: the group cannot go on before its deadline.
    if (held)
        assert_true(g_get_monotonic_time() - pushed >= MAX_WAIT_MS * 1000);
    assert_false(reel_appsink_is_eos(out));
    reel_appsrc_end(in);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    assert_true(reel_appsink_is_eos(out));
    GError *err = NULL;
    if (reel_pipeline_wait(p, &err) != 0)
        fail_msg("%s", err->message);
}

static void unref_buffer(gpointer b)
{
    reel_buffer *buf = b;
    reel_buffer_unref(&buf);
}

// batch size=4: two frames of four, released by max-wait-ms.
static void test_batch_releases_a_partial_group(void **state)
{
    (void)state;
    char *text = g_strdup_printf("appsrc name=in caps=" CAPS " ! batch size=4 max-wait-ms=%d ! appsink name=out",
                                 MAX_WAIT_MS);
    reel_pipeline *p = start(text);
    GPtrArray *got = g_ptr_array_new_with_free_func(unref_buffer);
    partial_group_goes_on(p, got, true);
    assert_int_equal(reel_test_report_of(p, "batch0").buffers_out, 2);
    g_ptr_array_free(got, TRUE);
    reel_pipeline_destroy(&p);
    g_free(text);
}

// Without max-wait-ms, a full group of four goes on as the fourth comes.
static void test_batch_releases_a_full_group(void **state)
{
    (void)state;
    reel_pipeline *p = start("appsrc name=in caps=" CAPS " ! batch size=4 ! appsink name=out");
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    for (int i = 0; i < 4; i++)
        push(in, i);
    for (int i = 0; i < 4; i++) {
        reel_buffer *b = pull(out);
        assert_int_equal(b->frame_number, i);
        reel_buffer_unref(&b);
    }
    reel_appsrc_end(in);
    GError *err = NULL;
    if (reel_pipeline_wait(p, &err) != 0)
        fail_msg("%s", err->message);
    reel_pipeline_destroy(&p);
}

// A group (size 0: one per input) holds one frame per stream: a stream's
// next frame sends the group on without the others', so a camera that is
// late or gone never keeps the rest waiting longer than a turn.
static void test_batch_one_frame_per_stream(void **state)
{
    (void)state;
    reel_pipeline *p = start("appsrc name=a caps=" CAPS " ! b.  appsrc name=c caps=" CAPS " ! b.  "
                             "batch name=b ! appsink name=out");
    reel_element *a = reel_pipeline_find(p, "a"), *c = reel_pipeline_find(p, "c"), *out = reel_pipeline_find(p, "out");
    push(a, 0);
    push(a, 1); // stream 0's turn came round: frame 0 goes on alone
    reel_buffer *b = pull(out);
    assert_int_equal(b->stream_id, 0);
    assert_int_equal(b->frame_number, 0);
    reel_buffer_unref(&b);
    assert_null(reel_appsink_pull(out, 200 * 1000)); // frame 1 waits for stream 1
    push(c, 0);
    int streams[2];
    for (int i = 0; i < 2; i++) {
        b = pull(out);
        streams[i] = b->stream_id;
        reel_buffer_unref(&b);
    }
    assert_int_equal(streams[0], 0);
    assert_int_equal(streams[1], 1);
    reel_appsrc_end(a);
    reel_appsrc_end(c);
    GError *err = NULL;
    if (reel_pipeline_wait(p, &err) != 0)
        fail_msg("%s", err->message);
    reel_pipeline_destroy(&p);
}

// The output of the first (the only) inference of frame b.
static const reel_buffer *output_of(const reel_buffer *b)
{
    const reel_inference *inf = reel_buffer_last_inference(b);
    assert_non_null(inf);
    const reel_buffer *t = reel_inference_output(inf, NULL, 0);
    assert_non_null(t);
    return t;
}

// infer batch=4: a partial batch runs once the first frame has waited
// max-wait-ms, and each frame gets its own results: those a batch of one
// gives the same frames.
static void test_infer_runs_a_partial_batch(void **state)
{
    (void)state;
    const char *models = g_getenv("REEL_TEST_MODELS");
    char *model = models ? g_build_filename(models, "conv_bn_relu.onnx", NULL) : NULL;
    if (!model || !g_file_test(model, G_FILE_TEST_EXISTS)) {
        g_free(model);
        reel_skip("no conv_bn_relu.onnx in REEL_TEST_MODELS (%s): tests/models/make_models.py needs python3-onnx",
                  models ? models : "unset");
    }
    GPtrArray *runs[2];
    for (int r = 0; r < 2; r++) {
        char *text = g_strdup_printf("appsrc name=in caps=" CAPS " ! preprocess size=8x8 "
                                     "! infer model=%s batch=%d max-wait-ms=%d ! appsink name=out",
                                     model, r ? 1 : 4, MAX_WAIT_MS);
        reel_pipeline *p = start(text);
        runs[r] = g_ptr_array_new_with_free_func(unref_buffer);
        partial_group_goes_on(p, runs[r], r == 0);
        reel_pipeline_destroy(&p);
        g_free(text);
    }
    for (int i = 0; i < 2; i++) {
        const reel_buffer *a = output_of(runs[0]->pdata[i]), *b = output_of(runs[1]->pdata[i]);
        assert_int_equal(a->format.shape[0], 1);
        assert_int_equal(a->size, b->size);
        const float *u = (const float *)a->data, *v = (const float *)b->data;
        for (size_t k = 0; k < a->size / sizeof(float); k++)
            if (fabsf(u[k] - v[k]) > 1e-5f)
                fail_msg("frame %d, element %zu: %g in the batch of two, %g alone", i, k, u[k], v[k]);
    }
    g_ptr_array_free(runs[0], TRUE);
    g_ptr_array_free(runs[1], TRUE);
    g_free(model);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_releases_a_partial_group),
        cmocka_unit_test(test_batch_releases_a_full_group),
        cmocka_unit_test(test_batch_one_frame_per_stream),
        cmocka_unit_test(test_infer_runs_a_partial_batch),
    };
    return reel_run_tests(tests, NULL, NULL);
}

// Embedding: an application pushes frames into appsrc and pulls them from
// appsink — contents, order, EOS, the callback, format errors,
// backpressure, dropping, and stopping while the application waits.
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

static reel_pipeline *build(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p)
        fail_msg("%s", err->message);
    return p;
}

// The pixel frame i has at (x, y), channel c: every frame and position differs.
static uint8_t pixel(int64_t i, int x, int y, int c)
{
    return (uint8_t)(i * 7 + x * 3 + y * 5 + c);
}

static reel_buffer *make_frame(reel_element *src, int64_t i)
{
    reel_buffer *b = reel_appsrc_alloc(src);
    assert_non_null(b);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++)
                b->planes[0][(size_t)y * b->strides[0] + 3 * x + c] = pixel(i, x, y, c);
    return b;
}

static void check_frame(const reel_buffer *b, int64_t i)
{
    assert_int_equal(b->format.width, W);
    assert_int_equal(b->format.height, H);
    assert_int_equal(b->frame_number, i);
    assert_int_equal(b->pts, i);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++)
                if (b->planes[0][(size_t)y * b->strides[0] + 3 * x + c] != pixel(i, x, y, c))
                    fail_msg("frame %lld differs at %d,%d", (long long)i, x, y);
}

// Metadata the application attaches travels with the frame.
static const reel_meta_type tag_meta = { "test-tag", g_free, NULL };

// The application's producer: pushes n frames (tagged with their number),
// then ends the stream. Returns the first failing push's code, or 0.
typedef struct pusher {
    reel_element *src;
    int n;
    int rc;
    int pushed; // g_atomic_int_*: the main thread watches it
} pusher;

static gpointer push_main(gpointer data)
{
    pusher *ps = data;
    for (int i = 0; i < ps->n; i++) {
        reel_buffer *b = make_frame(ps->src, i);
        int *tag = g_new(int, 1);
        *tag = i;
        reel_buffer_add_meta(b, &tag_meta, tag);
        if ((ps->rc = reel_appsrc_push(ps->src, b)) != 0)
            return NULL;
        g_atomic_int_inc(&ps->pushed);
    }
    reel_appsrc_end(ps->src);
    return NULL;
}

// Pushes from a thread, pulls here, and checks every frame. Returns the
// peak of live buffers while it ran.
static long push_and_pull(const char *text, int n, unsigned pull_delay_us)
{
    long live0 = reel_buffer_get_stats().live;
    reel_pipeline *p = build(text);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    assert_non_null(in);
    assert_non_null(out);
    reel_test_start(p);
    reel_buffer_reset_peak();
    pusher ps = { .src = in, .n = n };
    GThread *t = g_thread_new("pusher", push_main, &ps);
    reel_buffer *b;
    int64_t got = 0;
    while ((b = reel_appsink_pull(out, -1))) {
        check_frame(b, got);
        int *tag = reel_buffer_get_meta(b, &tag_meta);
        assert_non_null(tag);
        assert_int_equal(*tag, got);
        reel_buffer_unref(&b);
        got++;
        if (pull_delay_us)
            g_usleep(pull_delay_us);
    }
    assert_true(reel_appsink_is_eos(out));
    g_thread_join(t);
    assert_int_equal(ps.rc, 0);
    assert_int_equal(got, n);
    reel_test_wait(p);
    long peak = reel_buffer_get_stats().peak_live - live0;
    reel_pipeline_destroy(&p);
    assert_int_equal(reel_buffer_get_stats().live, live0);
    return peak;
}

static void test_push_pull_in_order(void **state)
{
    (void)state;
    push_and_pull("appsrc name=in caps=" CAPS " ! queue ! appsink name=out", 100, 0);
}

// max-buffers=2 everywhere and a slow puller: the pipeline waits for the
// application; nothing is lost and memory stays bounded.
static void test_backpressure(void **state)
{
    (void)state;
    int n = 200;
    long peak = push_and_pull("appsrc name=in max-buffers=2 caps=" CAPS
                              " ! queue max-size=2 ! appsink name=out max-buffers=2",
                              n, 500);
    // appsrc 2 + two links of at most 8 (default queue size) + appsink 2,
    // plus a few in hand: far below n.
    assert_true(peak <= 24);
}

// The callback sees each frame on the pipeline's thread, in order.
typedef struct collected {
    GMutex lock;
    int64_t count;
    bool in_order;
} collected;

static void on_buffer(reel_buffer *buf, void *user)
{
    collected *c = user;
    g_mutex_lock(&c->lock);
    c->in_order = c->in_order && buf->frame_number == c->count;
    c->count++;
    g_mutex_unlock(&c->lock);
    reel_buffer_unref(&buf);
}

static void test_callback(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! queue ! appsink name=out max-buffers=1");
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    collected c = { .in_order = true };
    g_mutex_init(&c.lock);
    reel_appsink_set_callback(out, on_buffer, &c);
    reel_test_start(p);
    pusher ps = { .src = in, .n = 50 };
    push_main(&ps); // the callback never waits: one thread can push everything
    assert_int_equal(ps.rc, 0);
    reel_test_wait(p);
    assert_int_equal(c.count, 50);
    assert_true(c.in_order);
    assert_null(reel_appsink_pull(out, 0)); // nothing was queued
    reel_pipeline_destroy(&p);
    g_mutex_clear(&c.lock);
}

static void test_wrong_format_is_an_error(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! appsink name=out");
    reel_element *in = reel_pipeline_find(p, "in");
    reel_test_start(p);
    reel_caps f;
    const char *wrong = "video/raw,format=rgb24,width=32,height=32,framerate=30/1,memory=host";
    assert_true(reel_caps_parse(wrong, &f, NULL, NULL));
    assert_int_equal(reel_appsrc_push(in, reel_buffer_new_format(&f)), REEL_EFORMAT);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_wait(p, &err), REEL_EFORMAT);
    assert_non_null(strstr(err->message, "in: "));
    assert_non_null(strstr(err->message, "width=32"));
    assert_non_null(strstr(err->message, "width=64"));
    g_error_free(err);
    // Not an appsrc: refused, and the buffer is still taken.
    assert_int_equal(reel_appsrc_push(reel_pipeline_find(p, "out"), reel_buffer_new_format(&f)), REEL_EINVAL);
    reel_pipeline_destroy(&p);
}

// drop=true: the pipeline never waits; what is left is the newest frames.
static void test_drop_oldest(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! appsink name=out max-buffers=2 drop=true");
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    pusher ps = { .src = in, .n = 30 };
    push_main(&ps);
    assert_int_equal(ps.rc, 0);
    reel_test_wait(p);
    // The run is over; the last two frames still wait to be pulled.
    for (int64_t i = 28; i < 30; i++) {
        reel_buffer *b = reel_appsink_pull(out, 0);
        assert_non_null(b);
        check_frame(b, i);
        reel_buffer_unref(&b);
    }
    assert_null(reel_appsink_pull(out, -1));
    assert_true(reel_appsink_is_eos(out));
    reel_pipeline_destroy(&p);
}

// block=false: a full queue fails the push instead of waiting.
static void test_no_block(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in block=false max-buffers=1 caps=" CAPS " ! appsink name=out max-buffers=1");
    reel_element *in = reel_pipeline_find(p, "in");
    reel_test_start(p);
    int rc = 0;
    for (int i = 0; i < 1000 && rc == 0; i++)
        rc = reel_appsrc_push(in, make_frame(in, i));
    assert_int_equal(rc, REEL_AGAIN);
    reel_pipeline_abort(p);
    assert_int_equal(reel_pipeline_wait(p, NULL), REEL_ESTOPPED);
    reel_pipeline_destroy(&p);
}

static gpointer pull_main(gpointer data)
{
    return reel_appsink_pull(data, -1);
}

// Whether this process has a thread called `name` (GLib names its threads)
// that is asleep: state S in /proc, what a wait on a condition shows.
static bool thread_asleep(const char *name)
{
    GDir *dir = g_dir_open("/proc/self/task", 0, NULL);
    assert_non_null(dir);
    bool asleep = false;
    for (const char *tid; !asleep && (tid = g_dir_read_name(dir));) {
        char *path = g_strdup_printf("/proc/self/task/%s/comm", tid), *comm = NULL, *stat = NULL;
        if (g_file_get_contents(path, &comm, NULL, NULL) && strcmp(g_strchomp(comm), name) == 0) {
            g_free(path);
            path = g_strdup_printf("/proc/self/task/%s/stat", tid);
            // The state follows the name, which is in parentheses.
            const char *end = g_file_get_contents(path, &stat, NULL, NULL) ? strrchr(stat, ')') : NULL;
            asleep = end && end[1] == ' ' && end[2] == 'S';
        }
        g_free(comm);
        g_free(stat);
        g_free(path);
    }
    g_dir_close(dir);
    return asleep;
}

// Waits, up to a minute, until thread `name` sleeps and, when `sink` is
// given, that appsink has taken in at least `taken` buffers.
static void wait_until_asleep(const char *name, reel_pipeline *p, const char *sink, int64_t taken)
{
    int64_t deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (!(sink == NULL || reel_test_report_of(p, sink).buffers_in >= taken) || !thread_asleep(name)) {
        if (g_get_monotonic_time() > deadline)
            fail_msg("thread %s was not waiting after 60 s", name);
        g_usleep(1000);
    }
}

// Stopping while the application waits in push (nobody pulls) or in pull
// (nobody pushes) makes both return.
static void test_stop_wakes_the_application(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in max-buffers=1 caps=" CAPS " ! appsink name=out max-buffers=1");
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    pusher ps = { .src = in, .n = 1000 };
    GThread *t = g_thread_new("pusher", push_main, &ps);
    // The appsink holds one and waits with a second (max-buffers=1, nobody
    // pulls), so every queue fills; then the pusher's sleep is its wait in
    // a push that cannot go on.
    wait_until_asleep("pusher", p, "out", 2);
    reel_pipeline_abort(p);
    g_thread_join(t);
    assert_int_equal(ps.rc, REEL_ESTOPPED);
    assert_true(ps.pushed < 1000);
    assert_int_equal(reel_pipeline_wait(p, NULL), REEL_ESTOPPED);

    // Again, with the application waiting in pull.
    reel_test_start(p);
    t = g_thread_new("puller", pull_main, out);
    wait_until_asleep("puller", p, NULL, 0); // in its pull: nothing comes
    reel_pipeline_abort(p);
    assert_null(g_thread_join(t));
    assert_false(reel_appsink_is_eos(out));
    assert_int_equal(reel_pipeline_wait(p, NULL), REEL_ESTOPPED);
    reel_pipeline_destroy(&p);
}

// Without the application's help the appsrc waits; send_eos ends it.
static void test_send_eos_ends_appsrc(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! appsink name=out");
    reel_test_start(p);
    // appsrc runs on a thread of its own, named after the element: asleep,
    // it waits for the application.
    wait_until_asleep("in", p, NULL, 0);
    reel_pipeline_send_eos(p);
    reel_test_wait(p);
    assert_true(reel_appsink_is_eos(reel_pipeline_find(p, "out")));
    reel_pipeline_destroy(&p);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_pull_in_order),
        cmocka_unit_test(test_backpressure),
        cmocka_unit_test(test_callback),
        cmocka_unit_test(test_wrong_format_is_an_error),
        cmocka_unit_test(test_drop_oldest),
        cmocka_unit_test(test_no_block),
        cmocka_unit_test(test_stop_wakes_the_application),
        cmocka_unit_test(test_send_eos_ends_appsrc),
    };
    return reel_run_tests(tests, NULL, NULL);
}

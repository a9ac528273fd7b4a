// Properties changed while the pipeline runs (reel_pipeline_set_property):
// detect's threshold and max and classify's top-k from an exact frame on, a
// fixed property and bad names refused with their messages, a queue's bound
// and leaky mode, rate's fps, and a thread changing properties many times
// while frames flow with none lost, repeated or out of order. Frames come
// from appsrc and go to appsink; every wait is for an event, with a generous
// deadline.
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"
#include "tests/support/pipeline.h"

#define W 200
#define H 100
#define CAPS "video/raw,format=rgb24,width=200,height=100,framerate=100/1"
#define DEADLINE_US (60 * G_USEC_PER_SEC)

// ---- a fake detector's output on every frame

// yolov8 layout [1, 4 + 1, 4]: four boxes apart, one class, scoring 0.2,
// 0.4, 0.6 and 0.8. threshold=0.5 keeps two, 0.3 three; max=1 one.
static const float yolo[5 * 4] = {
    10, 60, 110, 160, // cx
    10, 10, 10, 10,   // cy
    8, 8, 8, 8,       // w
    8, 8, 8, 8,       // h
    0.2f, 0.4f, 0.6f, 0.8f,
};

static int inject_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    reel_caps f;
    assert_true(reel_caps_parse("tensor,dtype=float32,memory=host,shape=1x5x4", &f, NULL, NULL));
    reel_inference *inf = reel_inference_new(1);
    g_strlcpy(inf->model, "fake", sizeof inf->model);
    inf->names[0] = g_strdup("output0");
    inf->outputs[0] = reel_buffer_new_format(&f);
    memcpy(inf->outputs[0]->data, yolo, sizeof yolo);
    reel_buffer_add_meta(buf, &reel_inference_meta, inf);
    return reel_element_push(e, 0, buf);
}

// Attaches the fake output as an infer would.
static const reel_element_class inject_class = {
    .name = "inject", .description = "attaches a fake yolov8 output", .flags = REEL_CLASS_PASSTHROUGH,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,memory=host", .output_caps = "video/raw,memory=host",
    .process = inject_process,
};

// ---- helpers

static reel_pipeline *build(const char *text, int queue_size)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(
        text, NULL, reel_pipeline_params(.threads = 2, .queue_size = queue_size, .stats_interval_ms = -1), &err);
    if (!p)
        fail_msg("%s", err->message);
    return p;
}

static void set_ok(reel_pipeline *p, const char *element, const char *prop, const char *value)
{
    GError *err = NULL;
    if (reel_pipeline_set_property(p, element, prop, value, &err) != 0)
        fail_msg("%s %s=%s: %s", element, prop, value, err->message);
}

// Sets and checks the message names what it must.
static void set_fails(reel_pipeline *p, const char *element, const char *prop, const char *value,
                      const char *const *says)
{
    GError *err = NULL;
    assert_int_equal(reel_pipeline_set_property(p, element, prop, value, &err), REEL_EINVAL);
    assert_non_null(err);
    for (; *says; says++)
        if (!strstr(err->message, *says))
            fail_msg("%s %s=%s: message '%s' lacks '%s'", element, prop, value, err->message, *says);
    g_error_free(err);
}

static void push_frames(reel_element *src, int64_t from, int64_t to)
{
    for (int64_t i = from; i < to; i++) {
        reel_buffer *b = reel_appsrc_alloc(src);
        assert_non_null(b);
        memset(b->planes[0], (int)(i & 0xff), (size_t)b->strides[0] * H);
        assert_int_equal(reel_appsrc_push(src, b), 0);
    }
}

// The next frame out, which must be frame `want`; the caller owns it.
static reel_buffer *pull_frame(reel_element *sink, int64_t want)
{
    reel_buffer *b = reel_appsink_pull(sink, DEADLINE_US);
    if (!b)
        fail_msg("frame %lld did not come out within 60 s", (long long)want);
    assert_int_equal(b->frame_number, want);
    return b;
}

static int detections_of(const reel_buffer *b)
{
    const reel_detections *d = reel_buffer_get_meta(b, &reel_detections_meta);
    assert_non_null(d);
    return d->n;
}

// Waits until element `name` has pushed at least `n` buffers.
static void wait_pushed(reel_pipeline *p, const char *name, int64_t n)
{
    int64_t deadline = g_get_monotonic_time() + DEADLINE_US;
    while (reel_test_report_of(p, name).buffers_out < n) {
        if (g_get_monotonic_time() > deadline) {
            reel_element_report r[16];
            int k = reel_pipeline_report(p, r, 16);
            for (int i = 0; i < k && i < 16; i++)
                print_message("%s: in %lld, out %lld, dropped %lld\n", r[i].name, (long long)r[i].buffers_in,
                              (long long)r[i].buffers_out, (long long)r[i].dropped);
            fail_msg("%s pushed %lld of %lld buffers in 60 s", name, (long long)reel_test_report_of(p, name).buffers_out,
                     (long long)n);
        }
        g_usleep(1000);
    }
}

// Waits until at least n buffers were dropped on their way into e.
static void wait_dropped(reel_element *e, int64_t n)
{
    int64_t deadline = g_get_monotonic_time() + DEADLINE_US;
    while (reel_element_input_dropped(e, 0) < n) {
        if (g_get_monotonic_time() > deadline)
            fail_msg("%lld of %lld drops after 60 s", (long long)reel_element_input_dropped(e, 0), (long long)n);
        g_usleep(1000);
    }
}

// Waits until the property reads `want`: the element has taken the change
// (and its `changed` hook has run).
static void wait_value(reel_pipeline *p, const char *element, const char *prop, const char *want)
{
    reel_element *e = reel_pipeline_find(p, element);
    int64_t deadline = g_get_monotonic_time() + DEADLINE_US;
    for (;;) {
        char *v = reel_element_get(e, prop);
        bool same = strcmp(v, want) == 0;
        g_free(v);
        if (same)
            return;
        if (g_get_monotonic_time() > deadline)
            fail_msg("%s %s is not %s after 60 s", element, prop, want);
        g_usleep(1000);
    }
}

static char *get(reel_pipeline *p, const char *element, const char *prop)
{
    return reel_element_get(reel_pipeline_find(p, element), prop);
}

// ---- tests

// Frames that came out before the change saw the old threshold; every frame
// pushed after it, the new one; then the same for max.
static void test_detect_threshold_from_an_exact_frame(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in max-buffers=64 caps=" CAPS " ! inject ! detect decoder=yolov8 "
                             "threshold=0.5 ! appsink name=out max-buffers=64",
                             0);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    enum { N = 12 };
    static const struct {
        const char *prop, *value;
        int boxes; // on frames pushed after the change
    } phases[] = { { NULL, NULL, 2 }, { "threshold", "0.3", 3 }, { "max", "1", 1 }, { "threshold", "0.7", 1 },
                   { "max", "100", 1 } };
    for (size_t k = 0; k < G_N_ELEMENTS(phases); k++) {
        if (phases[k].prop) {
            set_ok(p, "detect0", phases[k].prop, phases[k].value);
            // The value the caller set, once the element has taken it.
            wait_value(p, "detect0", phases[k].prop, phases[k].value);
        }
        push_frames(in, (int64_t)k * N, (int64_t)(k + 1) * N);
        for (int64_t i = (int64_t)k * N; i < (int64_t)(k + 1) * N; i++) {
            reel_buffer *b = pull_frame(out, i);
            if (detections_of(b) != phases[k].boxes)
                fail_msg("frame %lld: %d boxes, %d expected after %s=%s", (long long)i, detections_of(b),
                         phases[k].boxes, phases[k].prop ? phases[k].prop : "-",
                         phases[k].value ? phases[k].value : "-");
            reel_buffer_unref(&b);
        }
    }
    assert_int_equal(reel_appsrc_end(in), 0);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    assert_true(reel_appsink_is_eos(out));
    reel_test_wait(p);
    char *v = get(p, "detect0", "threshold");
    assert_string_equal(v, "0.7");
    g_free(v);
    reel_pipeline_destroy(&p);
}

// A change set while the element waits for its next frame applies to that
// frame, without waiting for the element to take it first.
static void test_change_applies_to_the_next_frame(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! inject ! detect decoder=yolov8 threshold=0.5 "
                             "! appsink name=out max-buffers=64",
                             0);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    for (int64_t i = 0; i < 20; i++) {
        // Alternately 0.3 and 0.5, each set before the frame is pushed.
        set_ok(p, "detect0", "threshold", i % 2 ? "0.5" : "0.3");
        push_frames(in, i, i + 1);
        reel_buffer *b = pull_frame(out, i);
        assert_int_equal(detections_of(b), i % 2 ? 2 : 3);
        reel_buffer_unref(&b);
    }
    reel_appsrc_end(in);
    reel_test_wait(p);
    reel_pipeline_destroy(&p);
}

// classify top-k on the same fake output (20 scores): as many classes as
// top-k says, from the first frame pushed after the change.
static void test_classify_top_k_mid_run(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in max-buffers=64 caps=" CAPS " ! inject ! classify name=c top-k=1 "
                             "! appsink name=out max-buffers=64",
                             0);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    static const char *ks[] = { "1", "3", "2" };
    for (int k = 0; k < 3; k++) {
        if (k)
            set_ok(p, "c", "top-k", ks[k]);
        push_frames(in, k * 5, k * 5 + 5);
        for (int64_t i = k * 5; i < k * 5 + 5; i++) {
            reel_buffer *b = pull_frame(out, i);
            const reel_classifications *c = reel_buffer_get_meta(b, &reel_classifications_meta);
            assert_non_null(c);
            assert_int_equal(c->n, atoi(ks[k]));
            reel_buffer_unref(&b);
        }
    }
    reel_appsrc_end(in);
    reel_test_wait(p);
    reel_pipeline_destroy(&p);
}

// A fixed property, a property or element that does not exist, and a bad
// value are refused while running, each with its message; the run goes on
// unchanged. Once it ended, the fixed property may be set again.
static void test_refusals_while_running(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! inject ! detect decoder=yolov8 threshold=0.5 "
                             "! appsink name=out",
                             0);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    set_fails(p, "detect0", "decoder", "ssd",
              (const char *[]){ "cannot change property 'decoder' of 'detect0' while the pipeline runs",
                                "reel inspect detect", NULL });
    set_fails(p, "detect0", "labels", "x.txt", (const char *[]){ "'labels' of 'detect0'", "while", NULL });
    set_fails(p, "detect0", "device", "cpu", (const char *[]){ "'device' of 'detect0'", "while", NULL });
    set_fails(p, "in", "stream-id", "4", (const char *[]){ "'stream-id' of 'in'", "while", NULL });
    set_fails(p, "detect0", "name", "d", (const char *[]){ "cannot rename 'detect0'", NULL });
    set_fails(p, "detect9", "threshold", "0.3",
              (const char *[]){ "no element called 'detect9'", "did you mean 'detect0'", NULL });
    set_fails(p, "detect0", "treshold", "0.3",
              (const char *[]){ "'detect0' (detect) has no property 'treshold'", "did you mean 'threshold'",
                                NULL });
    set_fails(p, "detect0", "threshold", "2",
              (const char *[]){ "invalid value '2' for property 'threshold' of 'detect0'", "0..1", NULL });
    set_fails(p, "detect0", "max", "many", (const char *[]){ "'max' of 'detect0'", "an integer", NULL });
    char *v = get(p, "detect0", "decoder");
    assert_string_equal(v, "yolov8");
    g_free(v);
    v = get(p, "detect0", "threshold");
    assert_string_equal(v, "0.5");
    g_free(v);
    push_frames(in, 0, 3);
    for (int64_t i = 0; i < 3; i++) {
        reel_buffer *b = pull_frame(out, i);
        assert_int_equal(detections_of(b), 2);
        reel_buffer_unref(&b);
    }
    reel_appsrc_end(in);
    reel_test_wait(p);
    GError *err = NULL;
    assert_int_equal(reel_pipeline_set_property(p, "detect0", "decoder", "yolov5", &err), 0);
    v = get(p, "detect0", "decoder");
    assert_string_equal(v, "yolov5");
    g_free(v);
    reel_pipeline_destroy(&p);
}

// A leaky queue in front of a sink that holds its frames: it keeps exactly
// max-size of them and drops the rest, before and after max-size changes;
// back to leaky=no, nothing is dropped any more.
static void test_queue_bound_mid_run(void **state)
{
    (void)state;
    // Links the queue does not configure hold one buffer (queue_size 1).
    reel_pipeline *p = build("appsrc name=in max-buffers=64 caps=" CAPS " ! queue name=q max-size=2 "
                             "leaky=downstream ! appsink name=out max-buffers=1",
                             1);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out"),
                 *q = reel_pipeline_find(p, "q");
    reel_test_start(p);
    // Frame 0 waits in the appsink's queue, frame 1 in its process (the
    // queue is full), frame 2 on the link after the queue: from then on the
    // queue cannot run and its input link holds what comes.
    for (int64_t i = 0; i < 3; i++) { // one at a time: none is dropped
        push_frames(in, i, i + 1);
        wait_pushed(p, "q", i + 1);
    }
    int64_t deadline = g_get_monotonic_time() + DEADLINE_US;
    while (reel_test_report_of(p, "out").buffers_in < 2) {
        if (g_get_monotonic_time() > deadline)
            fail_msg("the appsink did not take two frames in 60 s");
        g_usleep(1000);
    }
    // Frames 3..9: the link keeps the newest 2. The fifth drop comes with
    // the last push; which frames were kept shows below.
    push_frames(in, 3, 10);
    wait_dropped(q, 5);

    set_ok(p, "q", "max-size", "5");
    wait_value(p, "q", "max-size", "5");
    // Frames 10..19 join 8 and 9: the newest 5 stay.
    push_frames(in, 10, 20);
    wait_dropped(q, 5 + 7);

    // What comes out: the three ahead of the queue, then the five it kept.
    static const int64_t kept[] = { 0, 1, 2, 15, 16, 17, 18, 19 };
    for (size_t i = 0; i < G_N_ELEMENTS(kept); i++) {
        reel_buffer *b = pull_frame(out, kept[i]);
        reel_buffer_unref(&b);
    }

    // Not leaky, and smaller: upstream waits instead; every frame comes.
    set_ok(p, "q", "leaky", "no");
    set_ok(p, "q", "max-size", "1");
    wait_value(p, "q", "leaky", "no");
    wait_value(p, "q", "max-size", "1");
    push_frames(in, 20, 60); // the appsrc holds those the links cannot, until the pulls make room
    for (int64_t i = 20; i < 60; i++) {
        reel_buffer *b = pull_frame(out, i);
        reel_buffer_unref(&b);
    }
    assert_int_equal(reel_element_input_dropped(q, 0), 12);
    reel_appsrc_end(in);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    reel_test_wait(p);
    reel_pipeline_destroy(&p);
}

// Pushes [from, to) from a thread of its own, so that the main thread can
// pull while a push waits for room.
typedef struct pusher {
    reel_element *src;
    int64_t from, to;
    atomic_int *rounds; // when set: frame i waits until the setter did i / 4 rounds
    int rc;
} pusher;

static gpointer push_main(gpointer data)
{
    pusher *ps = data;
    int64_t deadline = g_get_monotonic_time() + DEADLINE_US;
    for (int64_t i = ps->from; i < ps->to && ps->rc == 0; i++) {
        while (ps->rounds && atomic_load(ps->rounds) < i / 4 && g_get_monotonic_time() < deadline)
            g_usleep(50);
        reel_buffer *b = reel_appsrc_alloc(ps->src);
        ps->rc = b ? reel_appsrc_push(ps->src, b) : REEL_ESTOPPED;
    }
    return NULL;
}

// rate fps=50 on a 100 fps stream passes every second frame; at 10, every
// tenth, on the grid of the last frame passed; at 100, every frame. Each
// phase ends with a frame that passes, so that once it is out rate has
// taken every frame pushed before the change.
static void test_rate_fps_mid_run(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in max-buffers=64 caps=" CAPS " ! rate name=r fps=50 "
                             "! appsink name=out max-buffers=64",
                             0);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    static const struct {
        const char *fps;
        int64_t from, to;             // frames pushed
        int64_t first, step, count; // frames that pass
    } phases[] = {
        { NULL, 0, 19, 0, 2, 10 },   // 0, 2, ..., 18
        { "10", 19, 59, 28, 10, 4 }, // 100 ms after 18: 28, 38, 48, 58
        { "100/1", 59, 69, 59, 1, 10 },
    };
    for (size_t k = 0; k < G_N_ELEMENTS(phases); k++) {
        if (phases[k].fps)
            set_ok(p, "r", "fps", phases[k].fps);
        push_frames(in, phases[k].from, phases[k].to);
        for (int64_t i = 0; i < phases[k].count; i++) {
            reel_buffer *b = pull_frame(out, phases[k].first + i * phases[k].step);
            reel_buffer_unref(&b);
        }
    }
    reel_appsrc_end(in);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    assert_true(reel_appsink_is_eos(out));
    reel_test_wait(p);
    assert_int_equal(reel_test_report_of(p, "r").buffers_in, 69);
    assert_int_equal(reel_test_report_of(p, "out").buffers_in, 24);
    reel_pipeline_destroy(&p);
}

// rate refuses fps=0, which would pass nothing (its check runs before it
// is stored, running or not).
static void test_rate_fps_zero_refused(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! rate name=r ! appsink name=out", 0);
    set_fails(p, "r", "fps", "0", (const char *[]){ "'fps' of 'r'", "above 0", NULL });
    reel_test_start(p);
    set_fails(p, "r", "fps", "0/1", (const char *[]){ "'fps' of 'r'", "above 0", NULL });
    reel_appsrc_end(reel_pipeline_find(p, "in"));
    reel_test_wait(p);
    reel_pipeline_destroy(&p);
}

// The setter: changes properties of five elements round after round until
// told to stop.
typedef struct setter {
    reel_pipeline *p;
    atomic_int rounds;
    atomic_bool stop;
    int failed; // the first failing round's number, else -1
} setter;

static gpointer set_main(gpointer data)
{
    setter *s = data;
    static const char *sizes[] = { "1", "2", "3", "8" }, *thresholds[] = { "0.3", "0.5" },
                      *maxes[] = { "100", "1" }, *sleeps[] = { "0", "1", "0" },
                      *fps[] = { "100/1", "200", "1000/3" }, *thick[] = { "1", "2", "3" };
    for (int i = 0; !atomic_load(&s->stop); i++) {
        GError *err = NULL;
        bool ok = reel_pipeline_set_property(s->p, "q", "max-size", sizes[i % 4], &err) == 0
                  && reel_pipeline_set_property(s->p, "d", "threshold", thresholds[i % 2], &err) == 0
                  && reel_pipeline_set_property(s->p, "d", "max", maxes[i / 2 % 2], &err) == 0
                  && reel_pipeline_set_property(s->p, "id", "sleep-us", sleeps[i % 3], &err) == 0
                  && reel_pipeline_set_property(s->p, "r", "fps", fps[i % 3], &err) == 0
                  && reel_pipeline_set_property(s->p, "o", "thickness", thick[i % 3], &err) == 0;
        if (!ok && s->failed < 0) {
            s->failed = i;
            g_printerr("round %d: %s\n", i, err ? err->message : "?");
        }
        g_clear_error(&err);
        atomic_fetch_add(&s->rounds, 1);
    }
    // The last values set, which must be in force once the run is over.
    GError *err = NULL;
    reel_pipeline_set_property(s->p, "d", "threshold", "0.3", &err);
    reel_pipeline_set_property(s->p, "q", "max-size", "7", &err);
    return NULL;
}

// Frames flow through five elements whose properties another thread keeps
// changing: every frame comes out once, in order, each with a box count
// one of the thresholds and maxes gives (a value consistent for the frame).
static void test_changes_while_frames_flow(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! queue name=q max-size=4 ! identity name=id "
                             "! rate name=r fps=100/1 ! inject ! detect name=d decoder=yolov8 "
                             "! overlay name=o ! appsink name=out",
                             0);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    reel_test_start(p);
    enum { N = 3000 };
    setter s = { .p = p, .failed = -1 };
    atomic_init(&s.rounds, 0);
    atomic_init(&s.stop, false);
    GThread *st = g_thread_new("setter", set_main, &s);
    // Pushes keep pace with the setter: frame i waits for round i / 4.
    pusher ps = { .src = in, .from = 0, .to = N, .rounds = &s.rounds };
    GThread *pt = g_thread_new("pusher", push_main, &ps);
    int64_t got = 0;
    for (; got < N; got++) {
        reel_buffer *b = reel_appsink_pull(out, DEADLINE_US);
        if (!b)
            fail_msg("frame %lld did not come out within 60 s", (long long)got);
        if (b->frame_number != got)
            fail_msg("frame %lld came out where %lld was due", (long long)b->frame_number, (long long)got);
        int n = detections_of(b);
        if (n != 1 && n != 2 && n != 3)
            fail_msg("frame %lld: %d boxes", (long long)got, n);
        reel_buffer_unref(&b);
    }
    g_thread_join(pt);
    assert_int_equal(ps.rc, 0);
    atomic_store(&s.stop, true);
    g_thread_join(st);
    assert_int_equal(s.failed, -1);
    assert_true(atomic_load(&s.rounds) >= (N - 1) / 4);
    reel_appsrc_end(in);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    assert_true(reel_appsink_is_eos(out));
    reel_test_wait(p);
    assert_int_equal(reel_test_report_of(p, "out").buffers_in, N);
    assert_int_equal(reel_element_input_dropped(reel_pipeline_find(p, "q"), 0), 0);
    // Changes still queued when the run ended were stored then.
    char *v = get(p, "d", "threshold");
    assert_string_equal(v, "0.3");
    g_free(v);
    v = get(p, "q", "max-size");
    assert_string_equal(v, "7");
    g_free(v);
    reel_pipeline_destroy(&p);
}

// Before the pipeline starts every property may be set; reel_element_set()
// is the same call on an element in hand.
static void test_before_the_run(void **state)
{
    (void)state;
    reel_pipeline *p = build("appsrc name=in caps=" CAPS " ! inject ! detect decoder=yolov8 ! appsink name=out", 0);
    GError *err = NULL;
    assert_int_equal(reel_element_set(reel_pipeline_find(p, "detect0"), "decoder", "ssd", &err), 0);
    set_ok(p, "detect0", "decoder", "yolov8");
    set_ok(p, "detect0", "threshold", "0.7");
    char *v = get(p, "detect0", "threshold");
    assert_string_equal(v, "0.7");
    g_free(v);
    // The class table says which may change while running.
    const reel_element_class *k = reel_element_class_find("detect");
    assert_true(reel_element_class_find_prop(k, "threshold")->flags & REEL_PROP_MUTABLE);
    assert_false(reel_element_class_find_prop(k, "decoder")->flags & REEL_PROP_MUTABLE);
    reel_pipeline_destroy(&p);
}

int main(void)
{
    reel_init();
    reel_element_class_register(&inject_class);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_before_the_run),
        cmocka_unit_test(test_detect_threshold_from_an_exact_frame),
        cmocka_unit_test(test_change_applies_to_the_next_frame),
        cmocka_unit_test(test_classify_top_k_mid_run),
        cmocka_unit_test(test_refusals_while_running),
        cmocka_unit_test(test_queue_bound_mid_run),
        cmocka_unit_test(test_rate_fps_mid_run),
        cmocka_unit_test(test_rate_fps_zero_refused),
        cmocka_unit_test(test_changes_while_frames_flow),
    };
    return reel_run_tests(tests, NULL, NULL);
}

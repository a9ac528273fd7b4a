// track: objects moving on straight lines (boxes made here, one test
// element attaching them to testsrc's frames) keep their ids, also when
// their paths cross and when they vanish for up to max-age frames; min-hits,
// per-stream state, per-class matching, and frames shared with another
// branch (which must not see the ids), in host and in device memory.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

#define MAX_OBJECTS 4
#define NO_OBJECT (-2) // the object was not in the frame

// An object: its box at frame 0 and its motion per frame; it is seen in
// frames [0, last) except [gap_from, gap_to).
typedef struct object {
    double x, y, w, h, vx, vy;
    int last, gap_from, gap_to;
    int class_id, class_from, class_after; // class_after from frame class_from on (0: never)
    int stream; // -1: every stream
} object;

static object objects[MAX_OBJECTS];
static int n_objects;
static bool two_streams; // even frames are stream 0, odd ones stream 1

// What a collect sink saw of one frame: each object's track id.
typedef struct seen_frame {
    int stream;
    int64_t frame;
    int64_t ids[MAX_OBJECTS];
} seen_frame;

static GArray *seen_main, *seen_side; // seen_frame, per sink

// ---- test elements ----------------------------------------------------------------

static bool visible(const object *o, int64_t f, int stream)
{
    return f < o->last && !(f >= o->gap_from && f < o->gap_to) && (o->stream < 0 || o->stream == stream);
}

// Attaches the visible objects' boxes, in reverse order on odd frames so
// that ids cannot follow detection indices. Labels say which object.
static int boxes_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    assert_int_equal(reel_buffer_make_writable(&buf), 0);
    int64_t f = buf->frame_number;
    buf->stream_id = two_streams ? (int)(f % 2) : 0;
    reel_detections *d = reel_detections_new(n_objects);
    d->n = 0;
    for (int k = 0; k < n_objects; k++) {
        int i = f % 2 ? n_objects - 1 - k : k;
        const object *o = &objects[i];
        if (!visible(o, f, buf->stream_id))
            continue;
        reel_detection *det = &d->items[d->n++];
        *det = (reel_detection){ .x0 = (float)(o->x + o->vx * f), .y0 = (float)(o->y + o->vy * f), .score = 0.9f,
                                 .class_id = o->class_after && f >= o->class_from ? o->class_after : o->class_id,
                                 .track_id = -1 };
        det->x1 = det->x0 + (float)o->w;
        det->y1 = det->y0 + (float)o->h;
        snprintf(det->label, sizeof det->label, "obj%d", i);
    }
    reel_buffer_add_meta(buf, &reel_detections_meta, d);
    return reel_element_push(e, 0, buf);
}

static const reel_element_class boxes_class = {
    .name = "boxes", .description = "attaches the test's moving boxes", .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw", .output_caps = "video/raw",
    .process = boxes_process,
};

static void record(GArray *to, reel_buffer *buf)
{
    seen_frame s = { .stream = buf->stream_id, .frame = buf->frame_number };
    for (int i = 0; i < MAX_OBJECTS; i++)
        s.ids[i] = NO_OBJECT;
    const reel_detections *d = reel_buffer_get_meta(buf, &reel_detections_meta);
    for (int i = 0; d && i < d->n; i++) {
        int obj;
        assert_int_equal(sscanf(d->items[i].label, "obj%d", &obj), 1);
        s.ids[obj] = d->items[i].track_id;
    }
    g_array_append_val(to, s);
    reel_buffer_unref(&buf);
}

static int collect_main(reel_element *e, int pad, reel_buffer *buf)
{
    (void)e, (void)pad;
    record(seen_main, buf);
    return 0;
}

static int collect_side(reel_element *e, int pad, reel_buffer *buf)
{
    (void)e, (void)pad;
    record(seen_side, buf);
    return 0;
}

static const reel_element_class collect_class = {
    .name = "collect", .description = "records track ids", .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .min_inputs = 1, .max_inputs = 1, .input_caps = "video/raw", .process = collect_main,
};
static const reel_element_class collect_side_class = {
    .name = "collect_side", .description = "records track ids of another branch",
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN,
    .min_inputs = 1, .max_inputs = 1, .input_caps = "video/raw", .process = collect_side,
};

// ---- helpers ----------------------------------------------------------------------

static void run_ok(const char *text)
{
    g_array_set_size(seen_main, 0);
    g_array_set_size(seen_side, 0);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1), &err);
    if (!p)
        fail_msg("%s", err->message);
    if (reel_pipeline_run(p, &err) != 0)
        fail_msg("%s: %s", text, err->message);
    reel_pipeline_destroy(&p);
}

// Runs `frames` frames through "boxes ! track <options> ! collect".
static void track(int frames, const char *options)
{
    char *text = g_strdup_printf("testsrc num-buffers=%d width=16 height=16 ! boxes ! track %s ! collect", frames,
                                 options);
    run_ok(text);
    g_free(text);
    assert_int_equal(seen_main->len, frames);
}

static int64_t id_at(int64_t frame, int obj)
{
    for (guint i = 0; i < seen_main->len; i++) {
        const seen_frame *s = &g_array_index(seen_main, seen_frame, i);
        if (s->frame == frame)
            return s->ids[obj];
    }
    fail_msg("frame %" G_GINT64_FORMAT " not seen", frame);
    return 0;
}

// Object obj has id `id` in frames [from, to).
static void assert_ids(int obj, int64_t from, int64_t to, int64_t id)
{
    for (int64_t f = from; f < to; f++)
        if (id_at(f, obj) != id)
            fail_msg("object %d in frame %" G_GINT64_FORMAT ": track %" G_GINT64_FORMAT ", wanted %" G_GINT64_FORMAT,
                     obj, f, id_at(f, obj), id);
}

static object moving(double x, double y, double w, double h, double vx, double vy)
{
    return (object){ .x = x, .y = y, .w = w, .h = h, .vx = vx, .vy = vy, .last = 1 << 30, .class_id = 1,
                     .stream = -1 };
}

static bool have_vulkan(void)
{
    reel_device_info *list;
    int n = reel_device_list(&list);
    bool found = false;
    for (int i = 0; i < n; i++)
        found |= list[i].backend == REEL_BACKEND_VULKAN;
    g_free(list);
    return found;
}

static int reset(void **state)
{
    (void)state;
    n_objects = 0;
    two_streams = false;
    return 0;
}

// ---- tests ------------------------------------------------------------------------

static void test_two_moving_objects_keep_their_ids(void **state)
{
    (void)state;
    objects[0] = moving(10, 10, 40, 40, 3, 1);
    objects[1] = moving(250, 150, 30, 60, -2, 0.5);
    n_objects = 2;
    track(40, "");
    // Tentative for two frames (min-hits=3), then ids in order of detection.
    assert_ids(0, 0, 2, -1);
    assert_ids(1, 0, 2, -1);
    assert_ids(0, 2, 40, 1);
    assert_ids(1, 2, 40, 2);
}

static void test_crossing_paths_keep_ids(void **state)
{
    (void)state;
    // In frame 17 each object is exactly where the other was in frame 16:
    // matched to last positions they would swap ids; only the predicted
    // motion keeps them apart.
    objects[0] = moving(0, 40, 40, 40, 6, 0);
    objects[1] = moving(198, 44, 40, 40, -6, 0);
    n_objects = 2;
    track(40, "");
    assert_ids(0, 2, 40, 1);
    assert_ids(1, 2, 40, 2);
}

static void test_hidden_for_max_age_frames_keeps_its_id(void **state)
{
    (void)state;
    objects[0] = moving(10, 20, 40, 30, 3, 1);
    objects[0].gap_from = 15, objects[0].gap_to = 20; // 5 frames
    objects[1] = moving(300, 200, 30, 30, -1, -1);    // company that stays
    n_objects = 2;
    track(40, "max-age=5");
    assert_ids(0, 2, 15, 1);
    assert_ids(0, 15, 20, NO_OBJECT);
    assert_ids(0, 20, 40, 1);
    assert_ids(1, 2, 40, 2);
}

static void test_hidden_longer_gets_a_new_id(void **state)
{
    (void)state;
    objects[0] = moving(10, 20, 40, 30, 3, 1);
    objects[0].gap_from = 15, objects[0].gap_to = 21; // 6 frames
    objects[1] = moving(300, 200, 30, 30, -1, -1);
    n_objects = 2;
    track(40, "max-age=5");
    assert_ids(0, 2, 15, 1);
    // A new track, tentative again for min-hits - 1 frames; ids never repeat.
    assert_ids(0, 21, 23, -1);
    assert_ids(0, 23, 40, 3);
    assert_ids(1, 2, 40, 2);
}

static void test_min_hits(void **state)
{
    (void)state;
    objects[0] = moving(10, 20, 40, 30, 2, 0);
    n_objects = 1;
    track(10, "min-hits=1");
    assert_ids(0, 0, 10, 1);
    track(10, "min-hits=5");
    assert_ids(0, 0, 4, -1);
    assert_ids(0, 4, 10, 1);
    // A detection seen once, in frame 0 only, never gets an id.
    objects[1] = moving(200, 100, 20, 20, 0, 0);
    objects[1].last = 1;
    n_objects = 2;
    track(10, "min-hits=2");
    assert_ids(1, 0, 1, -1);
    assert_ids(0, 1, 10, 1);
}

static void test_state_per_stream(void **state)
{
    (void)state;
    // One object per stream, far apart: each stream counts its ids from 1.
    two_streams = true;
    objects[0] = moving(10, 20, 40, 30, 2, 0);
    objects[0].stream = 0;
    objects[1] = moving(300, 200, 30, 30, -2, 0);
    objects[1].stream = 1;
    n_objects = 2;
    track(40, "");
    for (guint i = 0; i < seen_main->len; i++) {
        const seen_frame *s = &g_array_index(seen_main, seen_frame, i);
        int obj = s->stream;
        assert_int_equal(s->ids[1 - obj], NO_OBJECT);
        // The third frame of each stream confirms its track.
        assert_int_equal(s->ids[obj], s->frame < 4 ? -1 : 1);
    }
}

static void test_per_class(void **state)
{
    (void)state;
    objects[0] = moving(10, 20, 40, 30, 2, 0);
    objects[0].class_from = 10, objects[0].class_after = 2;
    n_objects = 1;
    track(20, "");
    assert_ids(0, 2, 20, 1);
    track(20, "per-class=true");
    assert_ids(0, 2, 10, 1);
    assert_ids(0, 10, 12, -1);
    assert_ids(0, 12, 20, 2);
}

// The other branch of a tee holds the same frames: it must not see ids.
static void check_shared(const char *device)
{
    objects[0] = moving(10, 20, 40, 30, 2, 0);
    n_objects = 1;
    char *text = g_strdup_printf("device=%s testsrc num-buffers=20 width=16 height=16 %s ! boxes ! tee name=t "
                                 "t. ! queue ! track min-hits=1 ! collect t. ! queue ! collect_side",
                                 device, strcmp(device, "cpu") ? "! upload" : "");
    run_ok(text);
    g_free(text);
    assert_int_equal(seen_main->len, 20);
    assert_int_equal(seen_side->len, 20);
    assert_ids(0, 0, 20, 1);
    for (guint i = 0; i < seen_side->len; i++)
        assert_int_equal(g_array_index(seen_side, seen_frame, i).ids[0], -1);
}

static void test_shared_frames_are_copied(void **state)
{
    (void)state;
    check_shared("cpu");
}

static void test_device_frames(void **state)
{
    (void)state;
    if (!have_vulkan())
        reel_skip("no Vulkan device");
    objects[0] = moving(10, 20, 40, 30, 2, 0);
    n_objects = 1;
    run_ok("device=vulkan:0 testsrc num-buffers=10 width=16 height=16 ! upload ! boxes ! track ! collect");
    assert_ids(0, 2, 10, 1);
    // A shared frame is copied through the host's view of its memory
    // (reel_buffer_make_writable), which a discrete GPU may not offer.
    reel_device *dev = reel_device_open("vulkan:0", NULL);
    bool unified = reel_device_info_of(dev)->unified_memory;
    reel_device_unref(&dev);
    if (unified)
        check_shared("vulkan:0");
    else
        print_message("SKIP: shared frames on vulkan:0: its memory is not the host's\n");
    assert_int_equal(reel_device_validation_messages(), 0);
}

int main(void)
{
    reel_init();
    reel_element_class_register(&boxes_class);
    reel_element_class_register(&collect_class);
    reel_element_class_register(&collect_side_class);
    seen_main = g_array_new(FALSE, FALSE, sizeof(seen_frame));
    seen_side = g_array_new(FALSE, FALSE, sizeof(seen_frame));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_two_moving_objects_keep_their_ids, reset),
        cmocka_unit_test_setup(test_crossing_paths_keep_ids, reset),
        cmocka_unit_test_setup(test_hidden_for_max_age_frames_keeps_its_id, reset),
        cmocka_unit_test_setup(test_hidden_longer_gets_a_new_id, reset),
        cmocka_unit_test_setup(test_min_hits, reset),
        cmocka_unit_test_setup(test_state_per_stream, reset),
        cmocka_unit_test_setup(test_per_class, reset),
        cmocka_unit_test_setup(test_shared_frames_are_copied, reset),
        cmocka_unit_test_setup(test_device_frames, reset),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    g_array_free(seen_main, TRUE);
    g_array_free(seen_side, TRUE);
    return reel_test_verdict(failed);
}

// zones with known ground truth: tracked boxes move along paths fixed in
// advance (the application pushes them as detections through appsrc), so
// the frame of every crossing, entry, loiter and exit is known; each event
// must come at that frame, with its direction and dwell, and the counts must
// be exact. Then bad configurations, each refused naming the zone or line.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "elements/meta_json.h"
#include "reel/reel.h"
#include "tests/support/pipeline.h"

#define W 100
#define H 100
#define FPS 25
#define FRAMES 90
#define CAPS "video/raw,format=gray8,width=100,height=100,framerate=25/1"
#define DEADLINE_US (60 * G_USEC_PER_SEC)

// A 10x20 box whose bottom centre is at (x, y), in pixels.
static reel_detection box(int64_t track, int class_id, const char *label, double x, double y)
{
    reel_detection d = { .x0 = (float)(x - 5), .y0 = (float)(y - 20), .x1 = (float)(x + 5), .y1 = (float)y,
                         .score = 0.9f, .class_id = class_id, .track_id = track };
    g_strlcpy(d.label, label, sizeof d.label);
    return d;
}

// Frame i's objects. Track 1, a person, walks east from x=11 by 2 px a frame
// to x=91 (frame 40), then back west; its anchor passes x=50 between frames
// 19 and 20 and again between 60 and 61. Track 2, a car, stands in the
// left half until frame 70, then is gone. Track 3, a person, jitters across
// the edge of zone desk (y 69, 71, 69, ...) for the first 11 frames.
static reel_detections *objects(int i)
{
    reel_detection d[3];
    int n = 0;
    double x1 = i <= 40 ? 11 + 2 * i : 91 - 2 * (i - 40);
    d[n++] = box(1, 0, "person", x1, 50);
    if (i <= 70)
        d[n++] = box(2, 1, "car", 20, 40);
    if (i <= 10)
        d[n++] = box(3, 0, "person", 30, i % 2 ? 71 : 69);
    reel_detections *dets = reel_detections_new(n);
    memcpy(dets->items, d, (size_t)n * sizeof *d);
    return dets;
}

typedef struct want {
    int frame;
    const char *json; // the event, as metasink writes it
} want;

// Every event, in order, at its frame.
static const want wanted[] = {
    { 2, "{\"type\": \"enter\", \"zone\": \"lot\", \"track\": 2, \"class\": 1, \"label\": \"car\"}" },
    { 20, "{\"type\": \"cross\", \"line\": \"gate\", \"track\": 1, \"class\": 0, \"label\": \"person\", "
          "\"direction\": \"in\"}" },
    { 22, "{\"type\": \"enter\", \"zone\": \"room\", \"track\": 1, \"class\": 0, \"label\": \"person\"}" },
    // The car, in the lot since frame 0, has been there 0.98 s at frame 25 (1.00 s).
    { 25, "{\"type\": \"loiter\", \"zone\": \"lot\", \"track\": 2, \"class\": 1, \"label\": \"car\", "
          "\"dwell\": 1.000}" },
    // Inside since frame 20 (0.80 s): 0.98 s is reached at frame 45 (1.80 s).
    { 45, "{\"type\": \"loiter\", \"zone\": \"room\", \"track\": 1, \"class\": 0, \"label\": \"person\", "
          "\"dwell\": 1.000}" },
    { 61, "{\"type\": \"cross\", \"line\": \"gate\", \"track\": 1, \"class\": 0, \"label\": \"person\", "
          "\"direction\": \"out\"}" },
    // First outside at frame 61: 61 - 20 frames in the room.
    { 63, "{\"type\": \"leave\", \"zone\": \"room\", \"track\": 1, \"class\": 0, \"label\": \"person\", "
          "\"dwell\": 1.640}" },
    // Last seen at frame 70 (2.80 s), gone for lost=10 frames at frame 80.
    { 80, "{\"type\": \"leave\", \"zone\": \"lot\", \"track\": 2, \"class\": 1, \"label\": \"car\", \"dwell\": 2.800}" },
};

static char *config_file;
static void write_file(const char *path, const char *text);

static reel_pipeline *start(const char *zones_props)
{
    char *text = g_strdup_printf("appsrc name=in caps=" CAPS " ! zones name=z %s ! appsink name=out", zones_props);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    if (!p)
        fail_msg("%s: %s", text, err->message);
    g_free(text);
    reel_test_start(p);
    return p;
}

// The events part of a frame's JSON line: from "events" to the end.
static char *events_of(const reel_buffer *b)
{
    GString *line = g_string_new(NULL);
    reel_meta_json_frame(line, b, reel_buffer_get_meta(b, &reel_detections_meta), NULL);
    const char *at = strstr(line->str, "\"events\": [");
    assert_non_null(at);
    char *events = g_strndup(at + 11, strlen(at + 11) - 3); // without "]}\n"
    g_string_free(line, TRUE);
    return events;
}

static void test_known_paths(void **state)
{
    (void)state;
    char *props = g_strdup_printf("zones=\"room: 0.5,0 1,0 1,1 0.5,1; desk: 0.2,0.7 0.4,0.7 0.4,0.9 0.2,0.9\" "
                                  "lines=\"gate: 0.5,1 0.5,0\" config=%s inertia=3 loiter=0.98 lost=10",
                                  config_file);
    reel_pipeline *p = start(props);
    g_free(props);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    size_t next = 0;
    reel_buffer *last = NULL;
    for (int i = 0; i < FRAMES; i++) {
        reel_buffer *b = reel_appsrc_alloc(in);
        assert_non_null(b);
        memset(b->planes[0], 0, (size_t)b->strides[0] * H);
        reel_buffer_add_meta(b, &reel_detections_meta, objects(i));
        assert_int_equal(reel_appsrc_push(in, b), 0);
        reel_buffer *got = reel_appsink_pull(out, DEADLINE_US);
        assert_non_null(got);
        assert_int_equal(got->frame_number, i);
        char *events = events_of(got);
        if (next < G_N_ELEMENTS(wanted) && wanted[next].frame == i) {
            if (strcmp(events, wanted[next].json) != 0)
                fail_msg("frame %d: events %s, wanted %s", i, events, wanted[next].json);
            next++;
        } else if (*events) {
            fail_msg("frame %d: events %s, wanted none (next: frame %d)", i, events,
                     next < G_N_ELEMENTS(wanted) ? wanted[next].frame : -1);
        }
        g_free(events);
        reel_buffer_unref(&last);
        last = got;
    }
    assert_int_equal(next, G_N_ELEMENTS(wanted));
    // The counts after the last frame: in total and per class.
    GString *line = g_string_new(NULL);
    reel_meta_json_frame(line, last, NULL, NULL);
    const char *counts[] = {
        "\"zones\": [{\"name\": \"room\", \"occupancy\": 0, \"entered\": 1, \"left\": 1, \"classes\": [{\"class\": 0, "
        "\"label\": \"person\", \"occupancy\": 0, \"entered\": 1, \"left\": 1}]}, ",
        "{\"name\": \"desk\", \"occupancy\": 0, \"entered\": 0, \"left\": 0, \"classes\": []}, ",
        "{\"name\": \"lot\", \"occupancy\": 0, \"entered\": 1, \"left\": 1, \"classes\": [{\"class\": 1, "
        "\"label\": \"car\", \"occupancy\": 0, \"entered\": 1, \"left\": 1}]}]",
        "\"lines\": [{\"name\": \"gate\", \"in\": 1, \"out\": 1, \"classes\": [{\"class\": 0, \"label\": \"person\", "
        "\"in\": 1, \"out\": 1}]}]",
    };
    for (size_t k = 0; k < G_N_ELEMENTS(counts); k++)
        if (!strstr(line->str, counts[k]))
            fail_msg("no %s in %s", counts[k], line->str);
    g_string_free(line, TRUE);
    reel_buffer_unref(&last);
    reel_appsrc_end(in);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    reel_test_wait(p);
    reel_pipeline_destroy(&p);
}

// Zones change while running: the new ones count from the next frame.
static void test_change_while_running(void **state)
{
    (void)state;
    reel_pipeline *p = start("zones=\"all: 0,0 1,0 1,1 0,1\" inertia=1");
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    GError *err = NULL;
    for (int i = 0; i < 4; i++) {
        if (i == 2) {
            assert_int_equal(reel_pipeline_set_property(p, "z", "zones", "left: 0,0 0.5,0 0.5,1 0,1", &err), 0);
            // A zone that crosses itself is refused with the reason; the last stays.
            assert_int_equal(reel_pipeline_set_property(p, "z", "zones", "bad: 0,0 1,0 0,1 0.8,1", &err),
                             REEL_EINVAL);
            assert_non_null(strstr(err->message, "zone 'bad': it crosses itself"));
            g_clear_error(&err);
        }
        reel_buffer *b = reel_appsrc_alloc(in);
        memset(b->planes[0], 0, (size_t)b->strides[0] * H);
        reel_buffer_add_meta(b, &reel_detections_meta, objects(i));
        assert_int_equal(reel_appsrc_push(in, b), 0);
        reel_buffer *got = reel_appsink_pull(out, DEADLINE_US);
        assert_non_null(got);
        GString *line = g_string_new(NULL);
        reel_meta_json_frame(line, got, NULL, NULL);
        // Frames 0 and 1: zone "all" holds the three; from frame 2, "left" the three again (new state).
        const char *want = i < 2 ? "{\"name\": \"all\", \"occupancy\": 3" : "{\"name\": \"left\", \"occupancy\": 3";
        if (!strstr(line->str, want))
            fail_msg("frame %d: no %s in %s", i, want, line->str);
        g_string_free(line, TRUE);
        reel_buffer_unref(&got);
    }
    reel_appsrc_end(in);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    reel_test_wait(p);
    reel_pipeline_destroy(&p);
}

// Streams keep their own tracks and counts, and a zone may be one stream's:
// the same track id on two streams is two objects, each counted on its own.
static void test_streams_apart(void **state)
{
    (void)state;
    char *path = g_strdup_printf("%s.streams", config_file);
    write_file(path, "{\"zones\": [{\"name\": \"only1\", \"points\": [[0, 0], [1, 0], [1, 1], [0, 1]], "
                     "\"stream\": 1}]}");
    char *props = g_strdup_printf("zones=\"all: 0,0 1,0 1,1 0,1\" config=%s inertia=1", path);
    reel_pipeline *p = start(props);
    g_free(props);
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    for (int i = 0; i < 6; i++) {
        reel_buffer *b = reel_appsrc_alloc(in);
        memset(b->planes[0], 0, (size_t)b->strides[0] * H);
        b->stream_id = i % 2;
        reel_detections *d = reel_detections_new(1);
        d->items[0] = box(1, 0, "person", 50, 50);
        reel_buffer_add_meta(b, &reel_detections_meta, d);
        assert_int_equal(reel_appsrc_push(in, b), 0);
        reel_buffer *got = reel_appsink_pull(out, DEADLINE_US);
        assert_non_null(got);
        assert_int_equal(got->stream_id, i % 2);
        GString *line = g_string_new(NULL);
        reel_meta_json_frame(line, got, NULL, NULL);
        bool one = i % 2;
        if (!strstr(line->str, "{\"name\": \"all\", \"occupancy\": 1, \"entered\": 1, \"left\": 0") ||
            (strstr(line->str, "\"only1\"") != NULL) != one ||
            (one && !strstr(line->str, "{\"name\": \"only1\", \"occupancy\": 1, \"entered\": 1")))
            fail_msg("frame %d (stream %d): %s", i, i % 2, line->str);
        g_string_free(line, TRUE);
        reel_buffer_unref(&got);
    }
    reel_appsrc_end(in);
    assert_null(reel_appsink_pull(out, DEADLINE_US));
    reel_test_wait(p);
    reel_pipeline_destroy(&p);
    g_unlink(path);
    g_free(path);
}

static void refused(const char *props, const char *want)
{
    char *text = g_strdup_printf("appsrc name=in caps=" CAPS " ! zones %s ! appsink name=out", props);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 2), &err);
    int rc = p ? reel_pipeline_start(p, &err) : REEL_EINVAL;
    if (rc == 0) {
        // Pixel coordinates meet the frame size at the first frame.
        reel_element *in = reel_pipeline_find(p, "in");
        reel_buffer *b = reel_appsrc_alloc(in);
        memset(b->planes[0], 0, (size_t)b->strides[0] * H);
        reel_appsrc_push(in, b);
        reel_appsrc_end(in);
        rc = reel_pipeline_wait(p, &err);
    }
    if (rc == 0 || !err || !strstr(err->message, want))
        fail_msg("%s: %s, wanted an error saying \"%s\"", props, err ? err->message : "no error", want);
    g_error_free(err);
    reel_pipeline_destroy(&p);
    g_free(text);
}

static void write_file(const char *path, const char *text)
{
    assert_true(g_file_set_contents(path, text, -1, NULL));
}

static void test_bad_config(void **state)
{
    (void)state;
    refused("zones=\"bad: 0,0 1,0 0,1 0.8,1\"", "zone 'bad': it crosses itself: edge 2 meets edge 4");
    refused("zones=\"flat: 0,0 0.5,0.5 1,1\"", "zone 'flat': its points enclose no area");
    refused("zones=\"two: 0,0 1,1\"", "zone 'two': a zone has 3 to 64 points, not 2");
    refused("lines=\"dot: 0.5,0.5 0.5,0.5\"", "line 'dot': its two points are the same: a line of zero length");
    refused("zones=\"far: 0,0 1.5,0 1,1\"", "zone 'far': point 2 (1.5, 0) is outside the frame");
    refused("coordinates=pixels zones=\"big: 0,0 150,0 100,100\"",
            "zone 'big': point 2 (150, 0) is outside the 100x100 frame");
    refused("zones=\"a: 0,0 1,0 1,1\" lines=\"a: 0,0 1,1\"", "two zones or lines are named 'a'");
    refused("lines=\"x 0,0 1,1\"", "a line is NAME: x,y x,y");
    char *path = g_strdup_printf("%s.bad", config_file);
    write_file(path, "{\"zones\": [{\"name\": \"z\", \"points\": [[0, 0], [1, 0], [1, 1]]}], \"trigers\": []}");
    char *props = g_strdup_printf("config=%s", path);
    refused(props, "unknown key \"trigers\"");
    g_free(props);
    write_file(path, "{\"lines\": [{\"name\": \"l\", \"points\": [[0, 0], [1]]}]}");
    props = g_strdup_printf("config=%s", path);
    refused(props, "line 'l': point 2 is not [x, y]");
    g_free(props);
    g_unlink(path);
    g_free(path);
    refused("config=/nonexistent/zones.json", "/nonexistent/zones.json");
}

static int setup(void **state)
{
    (void)state;
    int fd = g_file_open_tmp("reel-zones-XXXXXX.json", &config_file, NULL);
    if (fd < 0)
        return -1;
    close(fd);
    // Only cars count in the lot.
    write_file(config_file, "{\"zones\": [{\"name\": \"lot\", \"points\": [[0, 0], [0.5, 0], [0.5, 1], [0, 1]], "
                            "\"classes\": [\"car\"]}]}");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    g_unlink(config_file);
    g_free(config_file);
    return 0;
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_paths),
        cmocka_unit_test(test_change_while_running),
        cmocka_unit_test(test_streams_apart),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

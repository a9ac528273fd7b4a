// Soak: a long run of decode, preprocess, infer (BlazeFace), detect,
// encode and two sinks, over a small clip looped many times. After a
// warm-up the process's resident memory must stay within a bound, the
// buffer pools must stop allocating, and once the run is over every pooled
// buffer must be back and no buffer alive.
//
// Resident memory is read in this process from /proc/self/statm, about every
// millisecond while the run goes on. The allocator hands memory back and
// takes it again all the time (a few MiB up and down), so each figure is the
// highest reading over a tenth of the run: "after warm-up" the tenth after
// the first tenth, "at end" the last tenth (the pipeline still running and
// holding what it holds in steady state: the test ends the run only then).
//
// Environment: REEL_SOAK_FRAMES (default 20000; the clip's 50 frames loop
// until then), REEL_SOAK_RSS_PERCENT (default 5; 0: no bound, for
// sanitizer builds whose quarantine grows resident memory on purpose),
// REEL_MODEL_DIR (the model cache holding BlazeFace, from
// scripts/fetch-models; without it the soak skips and says so).
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "reel/reel.h"
#include "tests/support/skip.h"
#include "tests/support/pipeline.h"

#define CLIP_FRAMES 50

typedef struct soak_run {
    reel_pipeline *pipeline;
    atomic_bool done;
    int rc;
    GError *error;
} soak_run;

static int64_t rss_bytes(void)
{
    long pages = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%*s %ld", &pages) != 1)
        pages = -1;
    if (f)
        fclose(f);
    return pages < 0 ? -1 : (int64_t)pages * sysconf(_SC_PAGESIZE);
}

static int env_int(const char *name, int fallback)
{
    const char *v = g_getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static void run_text(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, NULL, &err);
    if (!p || reel_pipeline_run(p, &err) < 0)
        fail_msg("'%s': %s", text, err->message);
    reel_pipeline_destroy(&p);
}

// BlazeFace front (128x128) in the model cache; the test skips without it.
static char *blazeface_path(void)
{
    const char *cache = g_getenv("REEL_MODEL_DIR");
    char *path = g_build_filename(cache ? cache : "cache/models", "blazeface",
                                  "face_detection_front_128x128_barracuda.onnx", NULL);
    if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        reel_skip_note("no %s: run scripts/fetch-models", path);
        g_free(path);
        skip();
    }
    return path;
}

static int64_t sink_frames(reel_pipeline *p)
{
    return reel_test_report_of(p, "meta").buffers_in;
}

static gpointer wait_main(gpointer data)
{
    soak_run *run = data;
    run->rc = reel_pipeline_wait(run->pipeline, &run->error);
    atomic_store(&run->done, true);
    return NULL;
}

// Waits (polling the report) until the sinks have `frames` frames or the run
// ended, raising *max_rss to the highest resident memory seen meanwhile
// (max_rss may be NULL); returns whether the run is still going.
static bool wait_for_frames(soak_run *run, int64_t frames, int64_t *max_rss)
{
    while (!atomic_load(&run->done) && sink_frames(run->pipeline) < frames) {
        if (max_rss)
            *max_rss = MAX(*max_rss, rss_bytes());
        g_usleep(1000);
    }
    return !atomic_load(&run->done);
}

static long json_number(const char *json, const char *key)
{
    char *quoted = g_strdup_printf("\"%s\": ", key);
    const char *at = strstr(json, quoted);
    if (!at)
        fail_msg("the report has no %s: %s", key, json);
    long v = strtol(at + strlen(quoted), NULL, 10);
    g_free(quoted);
    return v;
}

static void soak(void **state)
{
    (void)state;
    int frames = env_int("REEL_SOAK_FRAMES", 20000);
    int rss_percent = env_int("REEL_SOAK_RSS_PERCENT", 5);
    int64_t total = frames, warm_up = total / 10;
    g_free(blazeface_path()); // the zoo's blazeface-front, with its manifest
    char *dir = g_dir_make_tmp("reel-soak-XXXXXX", NULL);
    assert_non_null(dir);
    char *clip = g_build_filename(dir, "clip.mp4", NULL);
    char *report = g_build_filename(dir, "report.json", NULL);

    char *make = g_strdup_printf("testsrc num-buffers=%d width=160 height=120 framerate=25 ! encode codec=h264 gop=25 "
                                 "! sink location=%s", CLIP_FRAMES, clip);
    run_text(make);
    g_free(make);

    // Encoded to a muxer writing into /dev/null (no file grows), metadata
    // as JSON lines to /dev/null: the sinks do all their work, the disk none.
    // Short queues: what is in flight at the busiest moment stays resident
    // afterwards (the allocator keeps it), and a moment when the machine
    // stalls one branch must not raise that high-water mark by much.
    // The clip loops until the test has sampled the last tenth and ends the
    // run itself (end of stream from the source, as Ctrl-C does): the last
    // sample is taken while everything still runs, however slow the machine.
    char *text = g_strdup_printf("source location=%s loop=0 ! decode name=dec ! preprocess ! infer model=blazeface-front ! "
                                 "detect ! tee name=t t. ! queue max-size=4 ! encode codec=h264 gop=50 ! "
                                 "sink location=/dev/null format=mpegts t. ! queue max-size=4 ! metasink name=meta "
                                 "location=/dev/null",
                                 clip);
    GError *err = NULL;
    soak_run run = { .pipeline = reel_parse_launch(text, NULL, reel_pipeline_params(.stats_interval_ms = -1), &err) };
    if (!run.pipeline)
        fail_msg("%s", err->message);
    reel_buffer_stats before = reel_buffer_get_stats();
    reel_pool_stats pools_before = reel_pool_get_totals();
    if (reel_pipeline_start(run.pipeline, &err) < 0)
        fail_msg("cannot start: %s", err->message);
    GThread *waiter = g_thread_new("soak-wait", wait_main, &run);

    assert_true(wait_for_frames(&run, warm_up, NULL));
    reel_pool_stats pools_warm = reel_pool_get_totals();
    long live_warm = reel_buffer_get_stats().live;
    reel_buffer_reset_peak();
    // The highest resident memory of each further tenth, everything running.
    int64_t rss_tenth[10] = { 0 };
    bool running = true;
    for (int tenth = 2; tenth <= 10 && running; tenth++)
        running = wait_for_frames(&run, total * tenth / 10, &rss_tenth[tenth - 1]);
    int64_t rss_warm = rss_tenth[1], rss_end = rss_tenth[9];
    long peak_live = reel_buffer_get_stats().peak_live;
    GString *trail = g_string_new(NULL);
    for (int tenth = 1; tenth < 10; tenth++)
        g_string_append_printf(trail, " %.1f", rss_tenth[tenth] / 1048576.0);
    reel_pool_stats pools_end = reel_pool_get_totals();
    long live_end = reel_buffer_get_stats().live;
    reel_pipeline_send_eos(run.pipeline);
    g_thread_join(waiter);
    if (run.rc < 0)
        fail_msg("the run failed: %s", run.error->message);
    assert_true(running); // a looping source ends only when told to
    int64_t done = sink_frames(run.pipeline), decoded = reel_test_report_of(run.pipeline, "dec").buffers_out;
    reel_pool_stats pools_after = reel_pool_get_totals();
    if (reel_pipeline_write_report_json(run.pipeline, report, &err) < 0)
        fail_msg("%s", err->message);
    reel_pipeline_destroy(&run.pipeline);
    reel_buffer_stats after = reel_buffer_get_stats();

    char *json = NULL;
    assert_true(g_file_get_contents(report, &json, NULL, NULL));
    long report_outstanding = json_number(json, "pool_buffers_outstanding");
    long report_allocated = json_number(json, "pool_buffers_allocated");
    double delta = 100.0 * (double)(rss_end - rss_warm) / (double)rss_warm;
    long allocated = pools_after.allocated - pools_before.allocated;
    printf("soak: %" G_GINT64_FORMAT " frames, warm-up %" G_GINT64_FORMAT " frames\n", done, warm_up);
    printf("soak: RSS after warm-up %.1f MiB, at end %.1f MiB, delta %+.2f%% (bound %s%d%%)\n", rss_warm / 1048576.0,
           rss_end / 1048576.0, delta, rss_percent > 0 ? "" : "none, ", rss_percent);
    printf("soak: RSS (MiB), highest of each tenth after the first:%s\n", trail->str);
    printf("soak: pool buffers allocated %ld (%ld at warm-up), outstanding at end %ld, pools open %ld; "
           "live buffers during the run %ld then %ld (at most %ld), after it %ld\n",
           allocated, pools_warm.allocated - pools_before.allocated, pools_after.outstanding - pools_before.outstanding,
           pools_after.pools_open - pools_before.pools_open, live_warm, live_end, peak_live,
           after.live - before.live);
    printf("soak: report memory: %s", strstr(json, "\"memory\""));
    fflush(stdout);

    // Every decoded frame reached the metadata sink, the queued ones too.
    assert_true(done >= total);
    assert_int_equal(done, decoded);
    // Every pooled buffer came back, every pool was freed, no buffer lives on.
    assert_int_equal(pools_after.outstanding, pools_before.outstanding);
    assert_int_equal(pools_after.pools_open, pools_before.pools_open);
    assert_int_equal(report_outstanding, 0);
    assert_int_equal(report_allocated, pools_after.allocated);
    assert_int_equal(after.live, before.live);
    // The pools stopped allocating once warm: what a run holds in flight is
    // bounded by its queues, not by its length.
    assert_true(allocated > 0);
    assert_int_equal(pools_end.allocated, pools_warm.allocated);
    if (rss_percent > 0 && delta > rss_percent)
        fail_msg("resident memory grew by %.2f%% after warm-up (bound %d%%)", delta, rss_percent);

    g_string_free(trail, TRUE);
    g_free(json);
    g_unlink(report);
    g_unlink(clip);
    g_rmdir(dir);
    g_free(report);
    g_free(clip);
    g_free(dir);
    g_free(text);
}

// The counts the soak relies on, on a pool driven by hand: allocations only
// when no buffer is idle, outstanding back to 0 once all are returned, and
// the process totals following the pool's own figures.
static void pool_counts(void **state)
{
    (void)state;
    reel_caps f = { 0 };
    assert_true(reel_caps_parse("video/raw,format=gray8,width=8,height=4,framerate=30/1,memory=host", &f, NULL, NULL));
    reel_pool_stats total0 = reel_pool_get_totals();
    reel_pool *pool = reel_pool_new(&f);
    assert_non_null(pool);
    reel_buffer *b[3];
    for (int i = 0; i < 3; i++)
        b[i] = reel_pool_acquire(pool);
    reel_buffer_unref(&b[0]);
    reel_buffer_unref(&b[1]);
    reel_pool_stats one = reel_pool_get_stats(pool);
    assert_int_equal(one.allocated, 3);
    assert_int_equal(one.outstanding, 1);
    b[0] = reel_pool_acquire(pool); // recycled, not allocated
    one = reel_pool_get_stats(pool);
    assert_int_equal(one.allocated, 3);
    assert_int_equal(one.outstanding, 2);
    reel_pool_stats total = reel_pool_get_totals();
    assert_int_equal(total.allocated - total0.allocated, 3);
    assert_int_equal(total.outstanding - total0.outstanding, 2);
    assert_int_equal(total.pools_open - total0.pools_open, 1);
    reel_pool_release(&pool); // buffers still out keep the pool alive
    assert_int_equal(reel_pool_get_totals().pools_open - total0.pools_open, 1);
    reel_buffer_unref(&b[0]);
    reel_buffer_unref(&b[2]);
    total = reel_pool_get_totals();
    assert_int_equal(total.outstanding, total0.outstanding);
    assert_int_equal(total.pools_open, total0.pools_open);
}

int main(void)
{
    reel_init();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_counts),
        cmocka_unit_test(soak),
    };
    return reel_run_tests(tests, NULL, NULL);
}

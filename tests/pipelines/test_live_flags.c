// A live source's discontinuity flag, seen through appsink: the first buffer
// after a reconnect carries REEL_BUFFER_FLAG_DISCONT, and so does the first
// after the sender's clock jumps back without a reconnect; no other buffer
// does. The same holds for the decoded frames on a second branch: decode
// hands the flag on to the first frame of the new stretch. Real senders: ffmpeg -re sending MPEG-TS over UDP on 127.0.0.1.
// Each step waits for an event (buffers counted, a sender reporting frames
// sent, the source's warnings and infos on the bus), never for a time.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reel/app.h"
#include "reel/reel.h"
#include "tests/support/skip.h"

#define FPS 25
// Generous: every wait ends at an event, this only bounds a broken run.
#define DEADLINE_US (60 * G_USEC_PER_SEC)

typedef struct seen {
    double pts;    // seconds
    unsigned flags;
} seen;

// What the pipeline told: buffers (appsink's callback) and bus messages.
typedef struct observed {
    GMutex lock;
    GCond cond;
    GArray *buffers; // seen: the source's packets
    GArray *frames;  // seen: the decoded frames
    GString *log;    // "type: text\n" per warning or info
    int warnings;
} observed;

static void record(observed *o, GArray *into, reel_buffer *b)
{
    seen s = { (double)b->pts * b->time_base.num / b->time_base.den, b->flags };
    g_mutex_lock(&o->lock);
    g_array_append_val(into, s);
    g_cond_broadcast(&o->cond);
    g_mutex_unlock(&o->lock);
    reel_buffer_unref(&b);
}

static void on_buffer(reel_buffer *b, void *user)
{
    observed *o = user;
    record(o, o->buffers, b);
}

static void on_frame(reel_buffer *b, void *user)
{
    observed *o = user;
    record(o, o->frames, b);
}

static void on_message(const reel_message *msg, void *user)
{
    observed *o = user;
    if (msg->type != REEL_MESSAGE_WARNING && msg->type != REEL_MESSAGE_INFO)
        return;
    g_mutex_lock(&o->lock);
    g_string_append_printf(o->log, "%s: %s\n", reel_message_type_name(msg->type), msg->text);
    o->warnings += msg->type == REEL_MESSAGE_WARNING;
    g_cond_broadcast(&o->cond);
    g_mutex_unlock(&o->lock);
}

static int count_in(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

// Waits until `what` was posted `times` times; fails at the deadline.
static void wait_message(observed *o, const char *what, int times)
{
    int64_t end = g_get_monotonic_time() + DEADLINE_US;
    g_mutex_lock(&o->lock);
    while (count_in(o->log->str, what) < times)
        if (!g_cond_wait_until(&o->cond, &o->lock, end)) {
            g_mutex_unlock(&o->lock);
            fail_msg("no '%s' (x%d) on the bus: %s", what, times, o->log->str);
        }
    g_mutex_unlock(&o->lock);
}

// Index of the first buffer carrying `flag`, or -1.
static int first_with(GArray *a, unsigned flag)
{
    for (guint i = 0; i < a->len; i++)
        if (g_array_index(a, seen, i).flags & flag)
            return (int)i;
    return -1;
}

// Waits until at least n buffers came.
static void wait_buffers(observed *o, guint n)
{
    int64_t end = g_get_monotonic_time() + DEADLINE_US;
    g_mutex_lock(&o->lock);
    while (o->buffers->len < n)
        if (!g_cond_wait_until(&o->cond, &o->lock, end)) {
            g_mutex_unlock(&o->lock);
            fail_msg("%u buffers, wanted %u: %s", o->buffers->len, n, o->log->str);
        }
    g_mutex_unlock(&o->lock);
}

// Waits until at least n buffers came after the first discontinuous one.
static void wait_after_discont(observed *o, int n)
{
    int64_t end = g_get_monotonic_time() + DEADLINE_US;
    g_mutex_lock(&o->lock);
    for (;;) {
        int i = first_with(o->buffers, REEL_BUFFER_FLAG_DISCONT);
        if (i >= 0 && (int)o->buffers->len - i > n)
            break;
        if (!g_cond_wait_until(&o->cond, &o->lock, end)) {
            g_mutex_unlock(&o->lock);
            fail_msg("no %d buffers after a discontinuous one (%u buffers): %s", n, o->buffers->len, o->log->str);
        }
    }
    g_mutex_unlock(&o->lock);
}

static int free_udp_port(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

// ffmpeg -re sending a test pattern as H.264 in MPEG-TS, one keyframe a
// second, until stopped; each sender's clock starts anew, as a restarted
// camera's does. It reports its progress in `progress`.
typedef struct sender {
    GPid pid;
    char *progress;
} sender;

static sender send_udp(int port, const char *dir, int n)
{
    sender s = { 0, g_strdup_printf("%s/progress%d.txt", dir, n) };
    char *src = g_strdup_printf("testsrc=size=320x240:rate=%d", FPS);
    char *gop = g_strdup_printf("%d", FPS);
    char *url = g_strdup_printf("udp://127.0.0.1:%d?pkt_size=1316", port);
    char *argv[] = { "ffmpeg", "-hide_banner", "-loglevel", "error", "-progress", s.progress, "-re", "-f", "lavfi",
                     "-i", src, "-t", "60", "-c:v", "libx264", "-g", gop, "-bf", "0", "-pix_fmt", "yuv420p",
                     "-f", "mpegts", url, NULL };
    GError *err = NULL;
    if (!g_spawn_async(NULL, argv, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                       G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDIN_FROM_DEV_NULL, NULL, NULL, &s.pid, &err))
        fail_msg("cannot start ffmpeg: %s", err->message);
    g_free(src);
    g_free(gop);
    g_free(url);
    return s;
}

// Until the sender reports frames sent: a source opened after that finds
// data at once, however long ffmpeg took to start.
static void wait_sending(const sender *s)
{
    int64_t end = g_get_monotonic_time() + DEADLINE_US;
    for (;;) {
        char *text = NULL;
        bool sending = g_file_get_contents(s->progress, &text, NULL, NULL) && g_regex_match_simple(
                           "^frame=[1-9]", text, G_REGEX_MULTILINE, 0);
        g_free(text);
        if (sending)
            return;
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
            fail_msg("the ffmpeg sender ended before sending");
        if (g_get_monotonic_time() > end)
            fail_msg("the ffmpeg sender sent nothing");
        g_usleep(50000); // polling a file: nothing to wait on
    }
}

static void stop_sender(sender *s)
{
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    g_unlink(s->progress);
    g_free(s->progress);
}

static reel_pipeline *build_live(observed *o, const char *props, int port)
{
    g_mutex_init(&o->lock);
    g_cond_init(&o->cond);
    o->buffers = g_array_new(FALSE, FALSE, sizeof(seen));
    o->frames = g_array_new(FALSE, FALSE, sizeof(seen));
    o->log = g_string_new(NULL);
    char *text = g_strdup_printf("source location=udp://127.0.0.1:%d %s ! tee name=t t. ! queue ! appsink name=out "
                                 "t. ! queue ! decode ! appsink name=frames",
                                 port, props);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.bus_handler = on_message, .bus_user = o),
                                         &err);
    g_free(text);
    if (!p)
        fail_msg("%s", err->message);
    reel_appsink_set_callback(reel_pipeline_find(p, "out"), on_buffer, o);
    reel_appsink_set_callback(reel_pipeline_find(p, "frames"), on_frame, o);
    return p;
}

static void finish(reel_pipeline **p)
{
    reel_pipeline_send_eos(*p);
    GError *err = NULL;
    if (reel_pipeline_wait(*p, &err) != 0)
        fail_msg("run failed: %s", err->message);
    reel_pipeline_destroy(p);
}

static void observed_clear(observed *o)
{
    g_array_free(o->buffers, TRUE);
    g_array_free(o->frames, TRUE);
    g_string_free(o->log, TRUE);
    g_mutex_clear(&o->lock);
    g_cond_clear(&o->cond);
}

// Exactly one buffer of `a` is flagged, with buffers before it and at least
// `after` from it on; timestamps increase across it.
static int check_one_discont(GArray *a, int after)
{
    int at = first_with(a, REEL_BUFFER_FLAG_DISCONT);
    for (guint i = 0; i < a->len; i++)
        if ((int)i != at && (g_array_index(a, seen, i).flags & REEL_BUFFER_FLAG_DISCONT))
            fail_msg("buffers %d and %u are both discontinuous", at, i);
    if (at < 1 || (int)a->len - at < after)
        fail_msg("the discontinuous buffer is %d of %u, wanted some before it and %d from it on", at, a->len, after);
    for (guint i = 1; i < a->len; i++)
        if (g_array_index(a, seen, i).pts <= g_array_index(a, seen, i - 1).pts)
            fail_msg("pts not increasing at buffer %u: %.3f then %.3f", i, g_array_index(a, seen, i - 1).pts,
                     g_array_index(a, seen, i).pts);
    return at;
}

// The sender stops (the source notices the silence after `timeout` and
// reconnects) and another starts: the first buffer of the new stream, a
// keyframe, is the only one flagged, and it comes after the gap.
static void test_discont_after_reconnect(void **state)
{
    (void)state;
    char *dir = g_dir_make_tmp("live-flags-XXXXXX", NULL);
    assert_non_null(dir);
    int port = free_udp_port();
    observed o = { 0 };
    reel_pipeline *p = build_live(&o, "timeout=1000 retry-max=-1 retry-delay=100", port);
    sender first = send_udp(port, dir, 1);
    wait_sending(&first);
    GError *err = NULL;
    if (reel_pipeline_start(p, &err) != 0)
        fail_msg("start failed: %s", err->message);
    wait_buffers(&o, FPS);
    stop_sender(&first);
    wait_message(&o, "(attempt 1 of unlimited)", 1);
    // Attempts go on (retry-max=-1) until one finds this sender.
    sender second = send_udp(port, dir, 2);
    wait_message(&o, "info: reconnected to", 1);
    wait_after_discont(&o, FPS);
    stop_sender(&second);
    // The second loss: everything the second sender sent was sent on.
    wait_message(&o, "(attempt 1 of unlimited)", 2);
    finish(&p);

    int at = check_one_discont(o.buffers, FPS);
    assert_true(g_array_index(o.buffers, seen, at).flags & REEL_BUFFER_FLAG_KEYFRAME);
    double gap = g_array_index(o.buffers, seen, at).pts - g_array_index(o.buffers, seen, at - 1).pts;
    // The run's clock moved on by at least the timeout while the stream was gone.
    if (gap < 1.0)
        fail_msg("the discontinuous buffer is %.3f s after the one before it, wanted the gap (>= 1 s)", gap);
    // The decoded frame flagged is the keyframe's, at the same time.
    int frame_at = check_one_discont(o.frames, FPS / 2);
    assert_true(g_array_index(o.frames, seen, frame_at).pts == g_array_index(o.buffers, seen, at).pts);
    print_message("%u buffers, discontinuous at %d after a %.2f s gap\n", o.buffers->len, at, gap);
    observed_clear(&o);
    g_rmdir(dir);
    g_free(dir);
}

// A second sender takes over without a pause long enough to count as a
// loss (timeout=0: never): its timestamps start over, the source keeps them
// increasing and flags the first buffer after the jump; nothing is lost or
// reconnected.
static void test_discont_after_clock_jump(void **state)
{
    (void)state;
    char *dir = g_dir_make_tmp("live-flags-XXXXXX", NULL);
    assert_non_null(dir);
    int port = free_udp_port();
    observed o = { 0 };
    reel_pipeline *p = build_live(&o, "timeout=0 retry-max=0", port);
    sender first = send_udp(port, dir, 1);
    GError *err = NULL;
    // timeout=0: opening waits for the sender, however slow.
    if (reel_pipeline_start(p, &err) != 0)
        fail_msg("start failed: %s", err->message);
    wait_buffers(&o, FPS);
    stop_sender(&first);
    sender second = send_udp(port, dir, 2);
    wait_after_discont(&o, FPS);
    finish(&p);
    stop_sender(&second);

    int at = check_one_discont(o.buffers, FPS);
    check_one_discont(o.frames, FPS / 2);
    if (o.warnings)
        fail_msg("warnings posted: %s", o.log->str);
    print_message("%u buffers, discontinuous at %d\n", o.buffers->len, at);
    observed_clear(&o);
    g_rmdir(dir);
    g_free(dir);
}

int main(void)
{
    reel_init();
    char *ffmpeg = g_find_program_in_path("ffmpeg");
    if (!ffmpeg)
        return reel_skip_exit("no ffmpeg on PATH (the senders)");
    g_free(ffmpeg);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discont_after_reconnect),
        cmocka_unit_test(test_discont_after_clock_jump),
    };
    return reel_run_tests(tests, NULL, NULL);
}

// Sessions over many input shapes (models/session.c's plan cache, the
// model's per-device store in models/model.c and models/vulkan/store.c):
// free_dims.onnx (make_models.py: free batch, height and width) through 50
// shapes on one session that keeps 8 plans, twice over. Shown: the weights
// are uploaded once (and kernels compiled once, and the cpu's Winograd
// weights made once) for all the shapes, for plans built again after
// eviction and for a second session; no more than 8 plans are ever kept,
// and the memory they hold (the host arena, the device's) stays that of 8;
// a shape planned again after its plan was evicted gives the first results
// bit for bit; a store is freed with the last session on its device;
// sessions on two threads share one store.
//
// On the cpu by default; with REEL_PLAN_CACHE_DEVICE (vulkan:0) the same
// on that device (results also against the cpu's), exit 77 without it. Under
// REEL_VULKAN_VALIDATION=1 any validation message fails the test.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

#define SHAPES 50
#define BOUND 8
#define MAX_OUT 2
// free_dims.onnx's weights: conv1 8x3x3x3 + 8, conv2 8x8x3x3 + 8, head 4x8 + 4.
#define WEIGHTS 6
#define WEIGHT_FLOATS 844
// The cpu's kernel states: conv2's Winograd weights (conv1 has too few
// input channels for Winograd); every shape here has enough tiles for it.
#define WINOGRAD_CONVS 1

static reel_device *dev; // NULL: the cpu

// The 50 shapes: batch x h x w = 720 elements per channel, so that every
// plan holds the same bytes (memory that is not freed shows as growth).
static int64_t shapes[SHAPES][4];

static int make_shapes(void)
{
    int n = 0;
    for (int64_t b = 1; b <= 2; b++)
        for (int64_t h = 1; h <= 720 / b && n < SHAPES; h++)
            if ((720 / b) % h == 0) {
                int64_t *s = shapes[n++];
                s[0] = b, s[1] = 3, s[2] = h, s[3] = 720 / b / h;
            }
    return n;
}

static char *model_path(void)
{
    const char *dir = g_getenv("REEL_TEST_MODELS");
    char *path = dir ? g_build_filename(dir, "free_dims.onnx", NULL) : NULL;
    if (!path || !g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_free(path);
        reel_skip("no free_dims.onnx in REEL_TEST_MODELS (make_models.py writes it: needs python3-onnx)");
    }
    return path;
}

static reel_model *load(void)
{
    char *path = model_path();
    GError *error = NULL;
    reel_model *m = reel_model_load(path, &error);
    if (!m)
        fail_msg("%s", error->message);
    g_free(path);
    return m;
}

static reel_session *session_on(reel_model *m, reel_device *d, int plan_cache)
{
    GError *error = NULL;
    reel_session *s = reel_session_new(m, reel_session_params(.threads = 1, .device = d, .plan_cache = plan_cache),
                                       &error);
    if (!s)
        fail_msg("%s", error->message);
    return s;
}

// Shape i's input: values in [-1, 1) from a seed of its own.
static reel_tensor *input(int i)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, shapes[i]);
    float *f = t->data;
    uint32_t x = 2654435761u * (uint32_t)(i + 1);
    for (size_t k = 0; k < t->nbytes / sizeof(float); k++) {
        x = x * 1664525u + 1013904223u;
        f[k] = (float)(x >> 8) / (float)(1 << 23) - 1.0f;
    }
    return t;
}

// Runs s on shape i; returns 0 or the error's code (with the message
// printed), for threads, which cannot fail a cmocka test.
static int run_shape(reel_session *s, int i, reel_tensor **out)
{
    reel_tensor *in = input(i);
    GError *error = NULL;
    int rc = reel_session_run(s, &in, out, &error);
    if (rc)
        fprintf(stderr, "shape %d: %s\n", i, error ? error->message : "failed");
    g_clear_error(&error);
    reel_tensor_free(&in);
    return rc;
}

static void run(reel_session *s, int i, reel_tensor **out)
{
    assert_int_equal(run_shape(s, i, out), 0);
}

static bool same(reel_tensor *const *a, reel_tensor *const *b)
{
    for (int k = 0; k < MAX_OUT; k++)
        if (a[k]->nbytes != b[k]->nbytes || memcmp(a[k]->data, b[k]->data, a[k]->nbytes) != 0)
            return false;
    return true;
}

static void free_outputs(reel_tensor **out)
{
    for (int k = 0; k < MAX_OUT; k++)
        reel_tensor_free(&out[k]);
}

static reel_session_stats stats(const reel_session *s)
{
    reel_session_stats st;
    reel_session_stats_of(s, &st);
    return st;
}

static int64_t device_held(void)
{
    reel_device_stats d;
    reel_device_get_stats(dev, &d);
    return d.bytes_held;
}

// got within 1e-4 of want's largest magnitude (the device against the cpu).
static void assert_close(reel_tensor *const *got, reel_tensor *const *want)
{
    for (int k = 0; k < MAX_OUT; k++) {
        assert_int_equal(got[k]->nbytes, want[k]->nbytes);
        const float *g = got[k]->data, *w = want[k]->data;
        size_t n = want[k]->nbytes / sizeof(float);
        double big = 0, worst = 0;
        for (size_t i = 0; i < n; i++)
            big = MAX(big, fabs(w[i]));
        for (size_t i = 0; i < n; i++)
            worst = MAX(worst, fabs((double)g[i] - w[i]));
        if (worst > 1e-4 * MAX(big, 1.0))
            fail_msg("output %d differs from the cpu's by %g (largest %g)", k, worst, big);
    }
}

static bool winograd_on(void)
{
    return g_strcmp0(g_getenv("REEL_CONV_WINOGRAD"), "0") != 0;
}

// Whether the store holds float16 copies of the weights too (an fp16
// session ran since it was made).
static bool halves;

// What the store must hold once the model ran: every weight on a device
// (once per precision), conv2's Winograd weights on the cpu.
static void assert_store(const reel_session_stats *st)
{
    if (dev) {
        assert_int_equal(st->weights_uploaded, halves ? 2 * WEIGHTS : WEIGHTS);
        assert_int_equal(st->weight_bytes_uploaded,
                         WEIGHT_FLOATS * (int64_t)(halves ? sizeof(float) + sizeof(uint16_t) : sizeof(float)));
        assert_true(st->kernels_compiled > 0);
        assert_int_equal(st->kernel_states, 0); // no node on the cpu
    } else {
        assert_int_equal(st->weights_uploaded, 0);
        assert_int_equal(st->kernels_compiled, 0);
        assert_int_equal(st->kernel_states, winograd_on() ? WINOGRAD_CONVS : 0);
    }
}

static void test_fifty_shapes(void **state)
{
    (void)state;
    reel_model *m = load();
    reel_session *s = session_on(m, dev, BOUND);
    reel_session_stats st = stats(s);
    assert_int_equal(st.plan_cache, BOUND);
    assert_int_equal(st.weights_uploaded, 0); // nothing before the first plan
    reel_tensor *first[SHAPES][MAX_OUT];
    int kernels = 0;
    int64_t held_full = 0, plan_device_bytes = 0, arena = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < SHAPES; i++) {
            reel_tensor *out[MAX_OUT];
            run(s, i, pass ? out : first[i]);
            st = stats(s);
            // (a) uploaded, compiled and derived once: from the first run on
            // the counts never move.
            assert_store(&st);
            // New shapes may need kernels of other tile sizes; shapes seen
            // before, planned again, none.
            if (pass == 1)
                assert_int_equal(st.kernels_compiled, kernels);
            else
                assert_true(st.kernels_compiled >= kernels);
            kernels = st.kernels_compiled;
            // (b) at most BOUND plans, and the memory of at most BOUND.
            int kept = pass ? BOUND : MIN(i + 1, BOUND);
            assert_int_equal(st.plans, kept);
            assert_int_equal(reel_session_n_plans(s), kept);
            assert_int_equal(st.plans_built, pass * SHAPES + i + 1);
            assert_int_equal(st.plans_evicted, pass * SHAPES + i + 1 - kept);
            if (i == 0 && pass == 0)
                arena = reel_session_arena_bytes(s);
            assert_int_equal(reel_session_arena_bytes(s), arena); // every shape has the same bytes
            assert_true(st.arena_bytes_held <= MAX(arena, 64));
            if (dev) {
                reel_session_placement p;
                reel_session_placement_of(s, &p);
                assert_int_equal(p.cpu_nodes, 0);
                if (i == 0 && pass == 0)
                    plan_device_bytes = st.device_bytes;
                assert_true(plan_device_bytes > 0);
                assert_int_equal(st.device_bytes, kept * plan_device_bytes);
                // The device holds no more than when the cache first filled:
                // an evicted plan's memory is freed, the weights stay.
                if (pass == 0 && i == BOUND - 1)
                    held_full = device_held();
                else if (pass || i >= BOUND)
                    assert_true(device_held() <= held_full);
            } else {
                assert_int_equal(st.device_bytes, 0);
            }
            // (c) planned again after eviction: the first results, bit for bit.
            if (pass) {
                assert_true(same(out, first[i]));
                free_outputs(out);
            }
        }
    }
    print_message("%s: %d shapes twice, %d plans kept at most: %" G_GINT64_FORMAT " built, %" G_GINT64_FORMAT
                  " evicted; %" G_GINT64_FORMAT " weights uploaded (%" G_GINT64_FORMAT " bytes), %d kernels "
                  "compiled, %d kernel states; arena %" G_GINT64_FORMAT " bytes held, device %" G_GINT64_FORMAT
                  " bytes per plan, %" G_GINT64_FORMAT " held with the cache full\n",
                  dev ? reel_device_info_of(dev)->spec : "cpu", SHAPES, BOUND, st.plans_built, st.plans_evicted,
                  st.weights_uploaded, st.weight_bytes_uploaded, st.kernels_compiled, st.kernel_states,
                  st.arena_bytes_held, plan_device_bytes, held_full);
    // A second session at the same time (the default cache) shares the store.
    reel_session *s2 = session_on(m, dev, 0);
    assert_int_equal(stats(s2).plan_cache, REEL_SESSION_PLAN_CACHE);
    assert_int_equal(stats(s2).weights_uploaded, dev ? WEIGHTS : 0); // uploaded by the first session
    for (int i = 0; i < SHAPES; i++) {
        reel_tensor *out[MAX_OUT];
        run(s2, i, out);
        assert_true(same(out, first[i]));
        free_outputs(out);
        st = stats(s2);
        assert_store(&st);
        assert_int_equal(st.kernels_compiled, kernels);
        assert_true(st.plans <= REEL_SESSION_PLAN_CACHE);
    }
    assert_int_equal(stats(s2).plans_evicted, SHAPES - REEL_SESSION_PLAN_CACHE);
    if (dev) {
        // The device against the cpu, on a few shapes.
        reel_session *cpu = session_on(m, NULL, 2);
        for (int i = 0; i < SHAPES; i += 7) {
            reel_tensor *want[MAX_OUT];
            run(cpu, i, want);
            assert_close(first[i], want);
            free_outputs(want);
        }
        reel_session_destroy(&cpu);
    }
    if (dev && reel_device_info_of(dev)->fp16) {
        // Precision is part of the weights' key: float16 copies once more,
        // for every fp16 session; the float32 ones stay.
        for (int k = 0; k < 2; k++) {
            GError *error = NULL;
            reel_session *h = reel_session_new(m, reel_session_params(.threads = 1, .device = dev,
                                                                      .precision = REEL_PRECISION_FP16), &error);
            if (!h)
                fail_msg("%s", error->message);
            for (int i = 0; i < 3; i++) {
                reel_tensor *out[MAX_OUT];
                run(h, i, out);
                free_outputs(out);
            }
            halves = true;
            st = stats(h);
            assert_store(&st);
            assert_int_equal(st.weights_uploaded, 2 * WEIGHTS);
            reel_session_destroy(&h);
        }
    }
    reel_session_destroy(&s2);
    st = stats(s); // s still holds the store
    assert_store(&st);
    reel_session_destroy(&s);
    // The last session on the device took the store with it: a new one
    // starts from nothing and uploads again.
    halves = false;
    s = session_on(m, dev, BOUND);
    assert_int_equal(stats(s).weights_uploaded, 0);
    assert_int_equal(stats(s).kernel_states, 0);
    reel_tensor *out[MAX_OUT];
    run(s, 0, out);
    assert_true(same(out, first[0]));
    free_outputs(out);
    st = stats(s);
    assert_store(&st);
    reel_session_destroy(&s);
    for (int i = 0; i < SHAPES; i++)
        free_outputs(first[i]);
    reel_model_unref(&m);
}

// Large shapes, then small ones: once the large plans are evicted the
// session's arena and the device memory shrink to what the small need.
static void test_memory_shrinks_after_eviction(void **state)
{
    (void)state;
    static const int64_t large[2][4] = { { 1, 3, 64, 64 }, { 1, 3, 64, 60 } }, small[2][4] = { { 1, 3, 8, 8 },
                                                                                              { 1, 3, 8, 6 } };
    reel_model *m = load();
    reel_session *s = session_on(m, dev, 2);
    int64_t large_arena = 0, small_arena = 0, large_device = 0, large_held = 0;
    for (int phase = 0; phase < 2; phase++) {
        for (int i = 0; i < 2; i++) {
            reel_tensor *in = reel_tensor_new(REEL_DTYPE_FLOAT32, 4, phase ? small[i] : large[i]), *out[MAX_OUT];
            GError *error = NULL;
            if (reel_session_run(s, &in, out, &error))
                fail_msg("%s", error->message);
            reel_tensor_free(&in);
            free_outputs(out);
            int64_t *arena = phase ? &small_arena : &large_arena;
            *arena = MAX(*arena, reel_session_arena_bytes(s));
        }
        reel_session_stats st = stats(s);
        assert_int_equal(st.plans, 2);
        if (!phase) {
            assert_int_equal(st.arena_bytes_held, large_arena);
            large_device = st.device_bytes;
            large_held = dev ? device_held() : 0;
            continue;
        }
        assert_int_equal(st.plans_evicted, 2);
        assert_true(small_arena < large_arena);
        assert_true(st.arena_bytes_held <= MAX(small_arena, 64));
        if (dev) {
            assert_true(st.device_bytes < large_device);
            // What the large plans held is given back to the device.
            assert_true(device_held() <= large_held - (large_device - st.device_bytes));
        }
    }
    reel_session_destroy(&s);
    reel_model_unref(&m);
}

// Sessions on threads of their own, started together on one model: one
// store, each weight uploaded (and Winograd's made) once, the same results.
typedef struct worker {
    reel_session *s;
    reel_tensor *out[SHAPES / 5][MAX_OUT];
    int rc;
} worker;

static gpointer work(gpointer p)
{
    worker *w = p;
    for (int r = 0; r < 2 && !w->rc; r++)
        for (int i = 0; i < SHAPES / 5 && !w->rc; i++) {
            reel_tensor *out[MAX_OUT] = { 0 };
            if ((w->rc = run_shape(w->s, i * 5, out)))
                break;
            if (!r) {
                memcpy(w->out[i], out, sizeof out);
            } else {
                w->rc = same(out, w->out[i]) ? 0 : -1;
                free_outputs(out);
            }
        }
    return NULL;
}

static void test_sessions_on_threads(void **state)
{
    (void)state;
    reel_model *m = load();
    worker w[2] = { { .s = session_on(m, dev, 4) }, { .s = session_on(m, dev, 4) } };
    GThread *t[2];
    for (int k = 0; k < 2; k++)
        t[k] = g_thread_new("session", work, &w[k]);
    for (int k = 0; k < 2; k++)
        g_thread_join(t[k]);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(w[k].rc, 0);
        reel_session_stats st = stats(w[k].s);
        assert_store(&st);
        assert_true(st.plans <= 4);
    }
    for (int i = 0; i < SHAPES / 5; i++) {
        assert_true(same(w[0].out[i], w[1].out[i]));
        free_outputs(w[0].out[i]);
        free_outputs(w[1].out[i]);
    }
    for (int k = 0; k < 2; k++)
        reel_session_destroy(&w[k].s);
    reel_model_unref(&m);
}

int main(void)
{
    if (make_shapes() != SHAPES) {
        fprintf(stderr, "expected %d shapes\n", SHAPES);
        return 1;
    }
    const char *spec = g_getenv("REEL_PLAN_CACHE_DEVICE");
    GError *error = NULL;
    if (spec && !(dev = reel_device_open(spec, &error))) {
        int rc = reel_skip_exit("no Vulkan device %s (%s)", spec, error->message);
        g_error_free(error);
        return rc;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifty_shapes),
        cmocka_unit_test(test_memory_shrinks_after_eviction),
        cmocka_unit_test(test_sessions_on_threads),
    };
    int failed = cmocka_run_group_tests_name(spec ? spec : "cpu", tests, NULL, NULL);
    if (dev) {
        reel_device_wait(dev, 0);
        reel_device_unref(&dev);
    }
    int64_t messages = reel_device_validation_messages();
    if (messages)
        fprintf(stderr, "%" G_GINT64_FORMAT " Vulkan validation messages\n", messages);
    return reel_test_verdict(failed + (messages != 0));
}

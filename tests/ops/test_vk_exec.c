// The Vulkan executor (models/vulkan/exec.c) through reel_session: outputs
// against the cpu runtime's on the same inputs (BlazeFace and small models
// from make_models.py), the device arena sharing bytes between values whose
// lifetimes do not meet, runs recorded once and resubmitted (new data each
// run, read by the resubmitted command buffers), recorded again for a new
// bound memory or a new input shape, a memory limit counted with the arena.
// Exit 77 without a Vulkan device; under REEL_VULKAN_VALIDATION=1 any
// validation message fails the test.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/session.h"
#include "reel/reel.h"

#define MAX_IO 8

static reel_device *dev;

static char *test_model(const char *name)
{
    const char *dir = getenv("REEL_TEST_MODELS");
    char *path = dir ? g_build_filename(dir, name, NULL) : NULL;
    if (!path || !g_file_test(path, G_FILE_TEST_EXISTS)) {
        printf("no %s (make_models.py writes it): skipped\n", name);
        g_free(path);
        skip();
    }
    return path;
}

static reel_model *load(const char *path)
{
    GError *error = NULL;
    reel_model *m = reel_model_load(path, &error);
    if (!m)
        fail_msg("%s: %s", path, error->message);
    return m;
}

static reel_session *session_on(reel_model *m, reel_device *d, uint64_t limit)
{
    GError *error = NULL;
    reel_session *s = reel_session_new(m, reel_session_params(.threads = 1, .device = d,
                                                              .device_memory_limit = limit), &error);
    if (!s)
        fail_msg("%s", error->message);
    return s;
}

// A float32 tensor in host memory, values in [-1, 1) from seed.
static reel_buffer *host_tensor(int rank, const int64_t *shape, unsigned seed)
{
    int64_t count = 1;
    for (int i = 0; i < rank; i++)
        count *= shape[i];
    reel_buffer *b = reel_buffer_new((size_t)count * 4);
    b->format.media = REEL_MEDIA_TENSOR;
    b->format.memory = REEL_MEMORY_HOST;
    b->format.dtype = REEL_DTYPE_FLOAT32;
    b->format.rank = rank;
    memcpy(b->format.shape, shape, sizeof(int64_t) * (size_t)rank);
    float *f = (float *)b->data;
    for (int64_t i = 0; i < count; i++)
        f[i] = (float)rand_r(&seed) / ((float)RAND_MAX + 1) * 2 - 1;
    return b;
}

// The same tensor in device memory m (its contents uploaded there).
static reel_buffer *device_tensor(reel_mem *m, const reel_buffer *host)
{
    assert_int_equal(reel_mem_upload(m, 0, host->data, host->size, NULL), 0);
    reel_caps f = host->format;
    f.memory = REEL_MEMORY_DEVICE;
    reel_buffer *b = reel_buffer_new_device(&f, reel_mem_ref(m));
    assert_non_null(b);
    return b;
}

static reel_mem *device_mem(size_t size)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = size, .domain = REEL_MEM_DEVICE), &error);
    if (!m)
        fail_msg("%s", error->message);
    return m;
}

static void run(reel_session *s, reel_buffer **in, reel_buffer **out)
{
    GError *error = NULL;
    if (reel_session_run(s, in, out, &error) != 0)
        fail_msg("run: %s", error->message);
}

static void unref_all(reel_buffer **b, int n)
{
    for (int i = 0; i < n; i++)
        reel_buffer_unref(&b[i]);
}

// got and want agree within tol of want's largest magnitude.
static void assert_close(reel_buffer *const *got, reel_buffer *const *want, int n, double tol)
{
    for (int k = 0; k < n; k++) {
        assert_int_equal(got[k]->size, want[k]->size);
        const float *g = (const float *)got[k]->data, *w = (const float *)want[k]->data;
        size_t count = want[k]->size / 4;
        double top = 0, worst = 0;
        for (size_t i = 0; i < count; i++)
            top = fmax(top, fabs(w[i]));
        for (size_t i = 0; i < count; i++)
            worst = fmax(worst, fabs((double)g[i] - w[i]));
        if (!(worst <= tol * fmax(top, 1e-6)))
            fail_msg("output %d: max error %g of the largest magnitude %g", k, worst, top);
    }
}

static bool same_bytes(const reel_buffer *a, const reel_buffer *b)
{
    return a->size == b->size && memcmp(a->data, b->data, a->size) == 0;
}

static reel_session_placement placement(const reel_session *s)
{
    reel_session_placement p;
    reel_session_placement_of(s, &p);
    return p;
}

// Three runs with different data, each against the cpu: the recorded
// command buffers read each run's uploads, not the first run's.
static void test_blazeface_matches_the_cpu_over_runs(void **state)
{
    (void)state;
    char *path = g_build_filename(REEL_TEST_MODEL_CACHE, "blazeface/face_detection_front_128x128_barracuda.onnx",
                                  NULL);
    if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        printf("no %s (scripts/fetch-models): skipped\n", path);
        g_free(path);
        skip();
    }
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, 0), *gpu = session_on(m, dev, 0);
    int n_out = reel_model_n_outputs(m);
    assert_true(n_out <= MAX_IO);
    const int64_t shape[] = { 1, 128, 128, 3 };
    reel_buffer *prev[MAX_IO] = { 0 };
    for (unsigned r = 0; r < 3; r++) {
        reel_buffer *in = host_tensor(4, shape, 11 + r), *want[MAX_IO], *got[MAX_IO];
        run(cpu, &in, want);
        run(gpu, &in, got);
        assert_close(got, want, n_out, 1e-4);
        if (r)
            assert_false(same_bytes(got[0], prev[0])); // the data changed, so did the scores
        unref_all(prev, n_out);
        memcpy(prev, got, sizeof got);
        unref_all(want, n_out);
        reel_buffer_unref(&in);
    }
    unref_all(prev, n_out);
    reel_session_placement p = placement(gpu);
    assert_int_equal(p.cpu_nodes, 0);
    assert_true(p.device_nodes > 50);
    assert_int_equal(p.recordings, 1);
    // The same lifetimes as the cpu arena: no more than it, but for the alignment of views.
    assert_true(p.device_arena_bytes > 0);
    assert_true(p.device_arena_bytes <= reel_session_arena_bytes(cpu) + p.device_nodes * REEL_MEM_VIEW_ALIGN);
    reel_session_destroy(&gpu);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// chain.onnx: Relu -> Sigmoid -> Relu over 1 KiB tensors. The first Relu's
// output is dead once the Sigmoid ran: the last Relu's output takes its
// bytes, so the arena is 2 KiB, not the 3 KiB of the three values.
static void test_chain_shares_arena_bytes(void **state)
{
    (void)state;
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, 0), *gpu = session_on(m, dev, 0);
    const int64_t shape[] = { 1, 4, 8, 8 };
    for (unsigned r = 0; r < 3; r++) {
        reel_buffer *in = host_tensor(4, shape, 3 + r), *want[1], *got[1];
        run(cpu, &in, want);
        run(gpu, &in, got);
        assert_close(got, want, 1, 1e-6);
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
    }
    reel_session_placement p = placement(gpu);
    assert_int_equal(p.device_nodes, 3);
    assert_int_equal(p.device_arena_bytes, 2048);
    assert_true(p.device_arena_bytes < 3 * 1024);
    assert_int_equal(p.recordings, 1);
    reel_session_destroy(&gpu);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// The Sigmoid on the cpu: three partitions, two submissions per run, both
// replayed; the Sigmoid's output comes from the host, so it is not in the
// arena, where the first Relu's output and the last's share 1 KiB.
static void test_partitions_are_replayed(void **state)
{
    (void)state;
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    g_setenv("REEL_VULKAN_CPU_OPS", "Sigmoid", TRUE);
    reel_session *cpu = session_on(m, NULL, 0), *gpu = session_on(m, dev, 0);
    const int64_t shape[] = { 1, 4, 8, 8 };
    for (unsigned r = 0; r < 3; r++) {
        reel_buffer *in = host_tensor(4, shape, 30 + r), *want[1], *got[1];
        run(cpu, &in, want);
        run(gpu, &in, got);
        assert_close(got, want, 1, 1e-6);
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
        reel_session_placement p = placement(gpu);
        assert_int_equal(p.bytes_to_device, 2048);
        assert_int_equal(p.bytes_to_host, 2048);
    }
    g_unsetenv("REEL_VULKAN_CPU_OPS");
    reel_session_placement p = placement(gpu);
    assert_int_equal(p.partitions, 3);
    assert_int_equal(p.device_arena_bytes, 1024);
    assert_int_equal(p.recordings, 1);
    reel_session_destroy(&gpu);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// An input in device memory: one recording per memory bound (a pool's few
// buffers), each replayed with that memory's new contents; past the few
// kept, the least recently used is recorded again when it comes back.
static void test_bound_inputs_record_per_memory(void **state)
{
    (void)state;
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, 0), *gpu = session_on(m, dev, 0);
    const int64_t shape[] = { 1, 4, 8, 8 };
    reel_mem *mems[6];
    for (int i = 0; i < 6; i++)
        mems[i] = device_mem(1024);
    // Memory used in this order; the recordings expected after each run.
    const int order[] = { 0, 0, 1, 0, 1, 2, 3, 4, 5, 0 };
    const int recorded[] = { 1, 1, 2, 2, 2, 3, 4, 5, 6, 7 };
    for (unsigned r = 0; r < G_N_ELEMENTS(order); r++) {
        reel_buffer *host = host_tensor(4, shape, 50 + r), *want[1], *got[1];
        reel_buffer *in = device_tensor(mems[order[r]], host);
        run(cpu, &host, want);
        run(gpu, &in, got);
        assert_close(got, want, 1, 1e-6);
        reel_session_placement p = placement(gpu);
        assert_int_equal(p.bytes_to_device, 0); // the input was there already
        assert_int_equal(p.recordings, recorded[r]);
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
        reel_buffer_unref(&host);
    }
    // The same memory from the host again: a run of its own kind, recorded.
    reel_buffer *host = host_tensor(4, shape, 99), *want[1], *got[1];
    run(cpu, &host, want);
    run(gpu, &host, got);
    assert_close(got, want, 1, 1e-6);
    assert_int_equal(placement(gpu).recordings, 8);
    unref_all(want, 1);
    unref_all(got, 1);
    reel_buffer_unref(&host);
    for (int i = 0; i < 6; i++)
        reel_mem_unref(&mems[i]);
    reel_session_destroy(&gpu);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// conv_bn_relu.onnx has a symbolic batch: a new batch is a new plan, which
// records its own run; the first plan, used again, records nothing more.
static void test_new_shape_records_again(void **state)
{
    (void)state;
    char *path = test_model("conv_bn_relu.onnx");
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, 0), *gpu = session_on(m, dev, 0);
    const int64_t batch1[] = { 1, 3, 8, 8 }, batch2[] = { 2, 3, 8, 8 };
    const int64_t *shapes[] = { batch1, batch1, batch2, batch2, batch1 };
    const int plans[] = { 1, 1, 2, 2, 2 };
    for (unsigned r = 0; r < G_N_ELEMENTS(shapes); r++) {
        reel_buffer *in = host_tensor(4, shapes[r], 70 + r), *want[1], *got[1];
        run(cpu, &in, want);
        run(gpu, &in, got);
        assert_close(got, want, 1, 1e-4);
        assert_int_equal(reel_session_n_plans(gpu), plans[r]);
        assert_int_equal(placement(gpu).recordings, 1); // each plan's own count
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
    }
    reel_session_destroy(&gpu);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// Profiled runs time each dispatch and are never recorded; the run after
// profiling replays what was recorded before it.
static void test_profiled_runs_are_not_recorded(void **state)
{
    (void)state;
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, 0), *gpu = session_on(m, dev, 0);
    const int64_t shape[] = { 1, 4, 8, 8 };
    const bool profile[] = { true, false, true, false };
    const int recorded[] = { 0, 1, 1, 1 };
    for (unsigned r = 0; r < G_N_ELEMENTS(profile); r++) {
        reel_session_set_profile(gpu, profile[r]);
        reel_buffer *in = host_tensor(4, shape, 80 + r), *want[1], *got[1];
        run(cpu, &in, want);
        run(gpu, &in, got);
        assert_close(got, want, 1, 1e-6);
        assert_int_equal(placement(gpu).recordings, recorded[r]);
        int n = 0;
        reel_session_node_times(gpu, &n);
        assert_int_equal(n, profile[r] ? 3 : 0);
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
    }
    reel_session_destroy(&gpu);
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// The limit counts the arena with its reuse: 3 KiB holds the input (1 KiB
// of its own) and the 2 KiB arena of all three nodes; 2.5 KiB only the
// first node (input and its output), the rest on the cpu, same result.
static void test_memory_limit_counts_the_arena(void **state)
{
    (void)state;
    char *path = test_model("chain.onnx");
    reel_model *m = load(path);
    reel_session *cpu = session_on(m, NULL, 0);
    const int64_t shape[] = { 1, 4, 8, 8 };
    const uint64_t limits[] = { 3072, 2500 };
    const int device_nodes[] = { 3, 1 };
    for (unsigned l = 0; l < G_N_ELEMENTS(limits); l++) {
        reel_session *gpu = session_on(m, dev, limits[l]);
        reel_buffer *in = host_tensor(4, shape, 90 + l), *want[1], *got[1];
        run(cpu, &in, want);
        run(gpu, &in, got);
        assert_close(got, want, 1, 1e-6);
        reel_session_placement p = placement(gpu);
        assert_int_equal(p.device_nodes, device_nodes[l]);
        assert_int_equal(p.cpu_nodes, 3 - device_nodes[l]);
        assert_true(p.device_arena_bytes <= 2048);
        unref_all(want, 1);
        unref_all(got, 1);
        reel_buffer_unref(&in);
        reel_session_destroy(&gpu);
    }
    reel_session_destroy(&cpu);
    reel_model_unref(&m);
    g_free(path);
}

// ---- the device mechanisms the executor stands on ---------------------------

typedef struct {
    float value;
    uint32_t n;
} fill_push;

// Parent bytes 0..767 as floats 0..191; a view binds only its own range.
static void upload_counting(reel_mem *m)
{
    float data[192];
    for (int i = 0; i < 192; i++)
        data[i] = (float)i;
    assert_int_equal(reel_mem_upload(m, 0, data, sizeof data, NULL), 0);
}

static reel_mem *counting_parent(void)
{
    reel_mem *m = device_mem(192 * sizeof(float));
    upload_counting(m);
    return m;
}

static void assert_filled_middle(reel_mem *parent, float value)
{
    float got[192];
    assert_int_equal(reel_mem_download(parent, 0, got, sizeof got, NULL), 0);
    for (int i = 0; i < 192; i++)
        if (got[i] != (i >= 64 && i < 128 ? value : (float)i))
            fail_msg("float %d: %g", i, got[i]);
}

static void test_a_view_binds_its_range(void **state)
{
    (void)state;
    GError *error = NULL;
    reel_mem *parent = counting_parent();
    assert_null(reel_mem_new_view(parent, 100, 16, &error)); // not aligned
    assert_int_equal(error->code, REEL_EINVAL);
    g_clear_error(&error);
    assert_null(reel_mem_new_view(parent, 512, 512, &error)); // past the end
    assert_int_equal(error->code, REEL_EINVAL);
    g_clear_error(&error);
    reel_mem *view = reel_mem_new_view(parent, REEL_MEM_VIEW_ALIGN, 256, &error);
    assert_non_null(view);
    assert_int_equal(reel_mem_size(view), 256);
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "fill"), &error);
    assert_non_null(k);
    fill_push pc = { 7.0f, 64 };
    assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { view }, .push = &pc,
                                                                  .push_size = sizeof pc, .groups = { 1 }),
                                          NULL), 0);
    assert_filled_middle(parent, 7.0f);
    // Through the view: its own bytes, from its offset.
    float back[64];
    assert_int_equal(reel_mem_download(view, 0, back, sizeof back, NULL), 0);
    assert_true(back[0] == 7.0f && back[63] == 7.0f);
    reel_kernel_destroy(&k);
    reel_mem_unref(&view);
    reel_mem_unref(&parent);
}

// A recording runs again at each submission, after the writes made since.
static void test_a_recording_runs_at_each_submission(void **state)
{
    (void)state;
    GError *error = NULL;
    reel_mem *parent = counting_parent();
    reel_mem *view = reel_mem_new_view(parent, REEL_MEM_VIEW_ALIGN, 256, &error);
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "fill"), &error);
    reel_batch *b = reel_batch_new(dev);
    assert_null(reel_batch_record(b, &error)); // nothing to record
    assert_int_equal(error->code, REEL_EINVAL);
    g_clear_error(&error);
    fill_push pc = { 5.0f, 64 };
    assert_int_equal(reel_batch_dispatch(b, k, reel_dispatch_params(.buffers = { view }, .push = &pc,
                                                                     .push_size = sizeof pc, .groups = { 1 })), 0);
    assert_int_equal(reel_batch_size(b), 1);
    reel_recording *r = reel_batch_record(b, &error);
    assert_non_null(r);
    assert_int_equal(reel_batch_size(b), 0);
    assert_int_equal(reel_recording_dispatches(r), 1);
    reel_mem_unref(&view); // the recording holds it
    for (int round = 0; round < 3; round++) {
        upload_counting(parent); // waits for the last submission's use of the view
        float middle;
        assert_int_equal(reel_mem_download(parent, 100 * sizeof(float), &middle, sizeof middle, NULL), 0);
        assert_true(middle == 100.0f);
        uint64_t point = 0;
        assert_int_equal(reel_recording_submit(r, &point), 0);
        assert_true(point > 0);
        assert_filled_middle(parent, 5.0f);
    }
    reel_mem_unref(&parent);
    reel_recording_free(&r);
    reel_batch_free(&b);
    reel_kernel_destroy(&k);
}

static int setup(void **state)
{
    (void)state;
    GError *error = NULL;
    if (!(dev = reel_device_open("vulkan:0", &error))) {
        fprintf(stderr, "no Vulkan device: %s\n", error->message);
        g_error_free(error);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    reel_device_unref(&dev);
    return reel_device_validation_messages() == 0 ? 0 : -1;
}

int main(void)
{
    GError *error = NULL;
    reel_device *probe = reel_device_open("vulkan:0", &error);
    if (!probe) {
        printf("skipping: no Vulkan device (%s)\n", error->message);
        g_error_free(error);
        return 77;
    }
    reel_device_unref(&probe);
    g_unsetenv("REEL_VULKAN_BATCH"); // gathered dispatches are what gets recorded
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_view_binds_its_range),
        cmocka_unit_test(test_a_recording_runs_at_each_submission),
        cmocka_unit_test(test_blazeface_matches_the_cpu_over_runs),
        cmocka_unit_test(test_chain_shares_arena_bytes),
        cmocka_unit_test(test_partitions_are_replayed),
        cmocka_unit_test(test_bound_inputs_record_per_memory),
        cmocka_unit_test(test_new_shape_records_again),
        cmocka_unit_test(test_profiled_runs_are_not_recorded),
        cmocka_unit_test(test_memory_limit_counts_the_arena),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

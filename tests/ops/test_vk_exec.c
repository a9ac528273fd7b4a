// The Vulkan executor (models/vulkan/exec.c) through reel_session: outputs
// against the cpu runtime's on the same inputs (BlazeFace and small models
// from make_models.py), the device arena sharing bytes between values whose
// lifetimes do not meet, runs recorded once and resubmitted (new data each
// run, read by the resubmitted command buffers), recorded again for a new
// bound memory or a new input shape, a memory limit counted with the arena.
// Exit 77 without a Vulkan device; under REEL_VULKAN_VALIDATION=1 any
// validation message fails the test.
#include <stdio.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

static reel_session *session_on(reel_model *m, reel_device *d, uint64_t limit)
{
    return vkt_session_new(m, reel_session_params(.threads = 1, .device = d, .device_memory_limit = limit));
}

static bool same_bytes(const reel_tensor *a, const reel_tensor *b)
{
    return a->nbytes == b->nbytes && memcmp(a->data, b->data, a->nbytes) == 0;
}

// Three runs with different data, each against the cpu: the recorded
// command buffers read each run's uploads, not the first run's.
static void test_blazeface_matches_the_cpu_over_runs(void **state)
{
    (void)state;
    char *path = vkt_cached_model("blazeface", "face_detection_front_128x128_barracuda.onnx");
    reel_model *m = vkt_load(path);
    reel_session *cpu = session_on(m, NULL, 0), *gpu = session_on(m, vkt_dev, 0);
    int n_out = reel_model_n_outputs(m);
    assert_true(n_out <= VKT_MAX_OUT);
    const int64_t shape[] = { 1, 128, 128, 3 };
    reel_tensor *prev[VKT_MAX_OUT] = { 0 };
    for (unsigned r = 0; r < 3; r++) {
        reel_tensor *in = vkt_host_tensor(4, shape, 11 + r), *want[VKT_MAX_OUT], *got[VKT_MAX_OUT];
        vkt_session_run(cpu, &in, want);
        vkt_session_run(gpu, &in, got);
        vkt_assert_close(got, want, n_out, 1e-4);
        if (r)
            assert_false(same_bytes(got[0], prev[0])); // the data changed, so did the scores
        vkt_free_all(prev, n_out);
        memcpy(prev, got, sizeof got);
        vkt_free_all(want, n_out);
        reel_tensor_free(&in);
    }
    vkt_free_all(prev, n_out);
    reel_session_placement p = vkt_placement(gpu);
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

// chain.onnx's input: 1 KiB of float32.
static const int64_t chain_shape[] = { 1, 4, 8, 8 };

// chain.onnx: Relu -> Sigmoid -> Relu over 1 KiB tensors. The first Relu's
// output is dead once the Sigmoid ran: the last Relu's output takes its
// bytes, so the arena is 2 KiB, not the 3 KiB of the three values.
static void test_chain_shares_arena_bytes(void **state)
{
    (void)state;
    vkt_pair t = vkt_pair_open("chain.onnx", REEL_PRECISION_FP32);
    for (unsigned r = 0; r < 3; r++) {
        reel_tensor *in = vkt_host_tensor(4, chain_shape, 3 + r);
        vkt_compare_runs(t.cpu, in, t.gpu, in, 1e-6);
        reel_tensor_free(&in);
    }
    reel_session_placement p = vkt_placement(t.gpu);
    assert_int_equal(p.device_nodes, 3);
    assert_int_equal(p.device_arena_bytes, 2048);
    assert_true(p.device_arena_bytes < 3 * 1024);
    assert_int_equal(p.recordings, 1);
    vkt_pair_close(&t);
}

// The Sigmoid on the cpu: three partitions, two submissions per run, both
// replayed; the Sigmoid's output comes from the host, so it is not in the
// arena, where the first Relu's output and the last's share 1 KiB.
static void test_partitions_are_replayed(void **state)
{
    (void)state;
    g_setenv("REEL_VULKAN_CPU_OPS", "Sigmoid", TRUE);
    vkt_pair t = vkt_pair_open("chain.onnx", REEL_PRECISION_FP32);
    for (unsigned r = 0; r < 3; r++) {
        reel_tensor *in = vkt_host_tensor(4, chain_shape, 30 + r);
        vkt_compare_runs(t.cpu, in, t.gpu, in, 1e-6);
        reel_tensor_free(&in);
        reel_session_placement p = vkt_placement(t.gpu);
        assert_int_equal(p.bytes_to_device, 2048);
        assert_int_equal(p.bytes_to_host, 2048);
    }
    g_unsetenv("REEL_VULKAN_CPU_OPS");
    reel_session_placement p = vkt_placement(t.gpu);
    assert_int_equal(p.partitions, 3);
    assert_int_equal(p.device_arena_bytes, 1024);
    assert_int_equal(p.recordings, 1);
    vkt_pair_close(&t);
}

// An input in device memory: one recording per memory bound (a pool's few
// buffers), each replayed with that memory's new contents; past the few
// kept, the least recently used is recorded again when it comes back.
static void test_bound_inputs_record_per_memory(void **state)
{
    (void)state;
    vkt_pair t = vkt_pair_open("chain.onnx", REEL_PRECISION_FP32);
    reel_mem *mems[6];
    for (int i = 0; i < 6; i++)
        mems[i] = vkt_device_mem(1024);
    // Memory used in this order; the recordings expected after each run.
    const int order[] = { 0, 0, 1, 0, 1, 2, 3, 4, 5, 0 };
    const int recorded[] = { 1, 1, 2, 2, 2, 3, 4, 5, 6, 7 };
    for (unsigned r = 0; r < G_N_ELEMENTS(order); r++) {
        reel_tensor *host = vkt_host_tensor(4, chain_shape, 50 + r);
        reel_tensor *in = vkt_device_tensor(mems[order[r]], host);
        vkt_compare_runs(t.cpu, host, t.gpu, in, 1e-6);
        reel_session_placement p = vkt_placement(t.gpu);
        assert_int_equal(p.bytes_to_device, 0); // the input was there already
        assert_int_equal(p.recordings, recorded[r]);
        reel_tensor_free(&in);
        reel_tensor_free(&host);
    }
    // The same memory from the host again: a run of its own kind, recorded.
    reel_tensor *host = vkt_host_tensor(4, chain_shape, 99);
    vkt_compare_runs(t.cpu, host, t.gpu, host, 1e-6);
    assert_int_equal(vkt_placement(t.gpu).recordings, 8);
    reel_tensor_free(&host);
    for (int i = 0; i < 6; i++)
        reel_mem_unref(&mems[i]);
    vkt_pair_close(&t);
}

// conv_bn_relu.onnx has a symbolic batch: a new batch is a new plan, which
// records its own run; the first plan, used again, records nothing more.
static void test_new_shape_records_again(void **state)
{
    (void)state;
    vkt_pair t = vkt_pair_open("conv_bn_relu.onnx", REEL_PRECISION_FP32);
    const int64_t batch1[] = { 1, 3, 8, 8 }, batch2[] = { 2, 3, 8, 8 };
    const int64_t *shapes[] = { batch1, batch1, batch2, batch2, batch1 };
    const int plans[] = { 1, 1, 2, 2, 2 };
    for (unsigned r = 0; r < G_N_ELEMENTS(shapes); r++) {
        reel_tensor *in = vkt_host_tensor(4, shapes[r], 70 + r);
        vkt_compare_runs(t.cpu, in, t.gpu, in, 1e-4);
        assert_int_equal(reel_session_n_plans(t.gpu), plans[r]);
        assert_int_equal(vkt_placement(t.gpu).recordings, 1); // each plan's own count
        reel_tensor_free(&in);
    }
    vkt_pair_close(&t);
}

// Profiled runs time each dispatch and are never recorded; the run after
// profiling replays what was recorded before it.
static void test_profiled_runs_are_not_recorded(void **state)
{
    (void)state;
    vkt_pair t = vkt_pair_open("chain.onnx", REEL_PRECISION_FP32);
    const bool profile[] = { true, false, true, false };
    const int recorded[] = { 0, 1, 1, 1 };
    for (unsigned r = 0; r < G_N_ELEMENTS(profile); r++) {
        reel_session_set_profile(t.gpu, profile[r]);
        reel_tensor *in = vkt_host_tensor(4, chain_shape, 80 + r);
        vkt_compare_runs(t.cpu, in, t.gpu, in, 1e-6);
        assert_int_equal(vkt_placement(t.gpu).recordings, recorded[r]);
        int n = 0;
        reel_session_node_times(t.gpu, &n);
        assert_int_equal(n, profile[r] ? 3 : 0);
        reel_tensor_free(&in);
    }
    vkt_pair_close(&t);
}

// The limit counts the arena with its reuse: 3 KiB holds the input (1 KiB
// of its own) and the 2 KiB arena of all three nodes; 2.5 KiB only the
// first node (input and its output), the rest on the cpu, same result.
static void test_memory_limit_counts_the_arena(void **state)
{
    (void)state;
    vkt_pair t = vkt_pair_open("chain.onnx", REEL_PRECISION_FP32);
    const uint64_t limits[] = { 3072, 2500 };
    const int device_nodes[] = { 3, 1 };
    for (unsigned l = 0; l < G_N_ELEMENTS(limits); l++) {
        reel_session *gpu = session_on(t.m, vkt_dev, limits[l]);
        reel_tensor *in = vkt_host_tensor(4, chain_shape, 90 + l);
        vkt_compare_runs(t.cpu, in, gpu, in, 1e-6);
        reel_session_placement p = vkt_placement(gpu);
        assert_int_equal(p.device_nodes, device_nodes[l]);
        assert_int_equal(p.cpu_nodes, 3 - device_nodes[l]);
        assert_true(p.device_arena_bytes <= 2048);
        reel_tensor_free(&in);
        reel_session_destroy(&gpu);
    }
    vkt_pair_close(&t);
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
    reel_mem *m = vkt_device_mem(192 * sizeof(float));
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
    reel_kernel *k = reel_kernel_create(vkt_dev, reel_kernel_params(.name = "fill"), &error);
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
    reel_kernel *k = reel_kernel_create(vkt_dev, reel_kernel_params(.name = "fill"), &error);
    reel_batch *b = reel_batch_new(vkt_dev);
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

int main(void)
{
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
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 13, false);
}

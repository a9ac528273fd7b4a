// The device interface, one suite for every backend: `test_device cpu` runs
// it on the cpu backend, `test_device vulkan` on the first Vulkan device
// (exit 77 when there is none). With REEL_VULKAN_VALIDATION=1 any
// validation message fails the test it appeared in.
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "reel/device.h"
#include "tests/support/skip.h"

static const char *spec; // the device under test
static bool vulkan;

typedef struct { float a; uint32_t n; } saxpy_push;
typedef struct { uint32_t n, chunk; } reduce_push;
typedef struct { float value; uint32_t n; } fill_push;

static int setup(void **state)
{
    GError *error = NULL;
    reel_device *dev = reel_device_open(spec, &error);
    if (!dev) {
        fprintf(stderr, "open %s: %s\n", spec, error->message);
        g_error_free(error);
        return -1;
    }
    *state = dev;
    return 0;
}

static int teardown(void **state)
{
    reel_device *dev = *state;
    reel_device_unref(&dev);
    // Messages can come from any call, teardown included.
    return reel_device_validation_messages() == 0 ? 0 : -1;
}

static reel_mem *mem_new(reel_device *dev, size_t size, reel_mem_domain domain)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = size, .domain = domain), &error);
    if (!m)
        fail_msg("reel_mem_new: %s", error->message);
    return m;
}

static float *random_floats(GRand *r, size_t n, double lo, double hi)
{
    float *v = g_new(float, n);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)g_rand_double_range(r, lo, hi);
    return v;
}

static void test_select(void **state)
{
    (void)state;
    reel_device_info *infos;
    int n = reel_device_list(&infos);
    assert_true(n >= 1);
    assert_string_equal(infos[0].spec, "cpu");
    assert_int_equal(infos[0].backend, REEL_BACKEND_CPU);

    // auto: a discrete GPU, else an integrated one, else the cpu backend.
    int want = 0;
    for (int pass = 0; pass < 2 && !want; pass++)
        for (int i = 0; i < n && !want; i++)
            if (infos[i].type == (pass ? REEL_DEVICE_INTEGRATED : REEL_DEVICE_DISCRETE))
                want = i;
    reel_device *dev = reel_device_open("auto", NULL);
    assert_non_null(dev);
    assert_string_equal(reel_device_info_of(dev)->spec, infos[want].spec);
    reel_device_unref(&dev);
    assert_null(dev);

    for (int i = 1; vulkan && i < n; i++) {
        const reel_device_info *d = &infos[i];
        const char *by[] = { d->spec, d->uuid_str, d->name };
        for (size_t k = 0; k < G_N_ELEMENTS(by); k++) {
            GError *error = NULL;
            dev = reel_device_open(by[k], &error);
            assert_non_null(dev);
            assert_string_equal(reel_device_info_of(dev)->spec, d->spec);
            assert_memory_equal(reel_device_info_of(dev)->uuid, d->uuid, 16);
            reel_device_unref(&dev);
        }
        if (strstr(d->name, "llvmpipe")) {
            // lavapipe: software, so only by name or index, never by auto.
            assert_int_equal(d->type, REEL_DEVICE_CPU);
            dev = reel_device_open("LLVMpipe", NULL);
            assert_non_null(dev);
            assert_int_equal(reel_device_info_of(dev)->backend, REEL_BACKEND_VULKAN);
            reel_device_unref(&dev);
        }
    }

    GError *error = NULL;
    assert_null(reel_device_open("no-such-device", &error));
    assert_int_equal(error->code, REEL_EINVAL);
    assert_non_null(strstr(error->message, "no-such-device"));
    for (int i = 0; i < n; i++)
        assert_non_null(strstr(error->message, infos[i].spec));
    g_clear_error(&error);
    assert_null(reel_device_open("vulkan:99", &error));
    g_clear_error(&error);
    g_free(infos);
}

static void test_saxpy(void **state)
{
    reel_device *dev = *state;
    GRand *r = g_rand_new_with_seed(42);
    const uint32_t n = (1u << 20) + 7; // not a multiple of any workgroup
    const float a = 2.5f;
    float *x = random_floats(r, n, -10, 10), *y = random_floats(r, n, -10, 10), *out = g_new(float, n);
    reel_mem *mx = mem_new(dev, n * sizeof(float), REEL_MEM_DEVICE);
    reel_mem *my = mem_new(dev, n * sizeof(float), REEL_MEM_DEVICE);
    assert_int_equal(reel_mem_upload(mx, 0, x, n * sizeof(float), NULL), 0);
    assert_int_equal(reel_mem_upload(my, 0, y, n * sizeof(float), NULL), 0);

    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "saxpy"), NULL);
    assert_non_null(k);
    uint32_t ls = reel_kernel_local_size(k);
    saxpy_push pc = { a, n };
    uint64_t point = 0;
    assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { mx, my }, .push = &pc,
                                                                  .push_size = sizeof pc,
                                                                  .groups = { (n + ls - 1) / ls }),
                                          &point),
                     0);
    assert_true(point > 0);
    assert_int_equal(reel_mem_ready_point(my), point);
    assert_int_equal(reel_mem_download(my, 0, out, n * sizeof(float), NULL), 0);
    for (uint32_t i = 0; i < n; i++) {
        float ref = a * x[i] + y[i];
        // The GPU may fuse the multiply-add: one rounding fewer.
        double tol = 1e-6 * (fabsf(a * x[i]) + fabsf(y[i])) + 1e-30;
        if (fabs((double)out[i] - ref) > tol)
            fail_msg("saxpy[%u] = %.9g, expected %.9g", i, out[i], ref);
    }
    reel_kernel_destroy(&k);
    assert_null(k);
    reel_mem_unref(&mx);
    reel_mem_unref(&my);
    g_free(x), g_free(y), g_free(out);
    g_rand_free(r);
}

static void test_reduce(void **state)
{
    reel_device *dev = *state;
    GRand *r = g_rand_new_with_seed(7);
    const uint32_t n = 1000003, chunk = 4096;
    float *x = random_floats(r, n, 0, 1);
    double ref = 0;
    for (uint32_t i = 0; i < n; i++)
        ref += x[i];

    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "reduce_sum", .local_size = 128), NULL);
    assert_non_null(k);
    reel_mem *in = mem_new(dev, n * sizeof(float), REEL_MEM_DEVICE);
    assert_int_equal(reel_mem_upload(in, 0, x, n * sizeof(float), NULL), 0);
    // Passes until one value is left; each pass's output feeds the next on
    // the device, with no host wait in between.
    for (uint32_t len = n; len > 1;) {
        uint32_t groups = (len + chunk - 1) / chunk;
        reel_mem *out = mem_new(dev, groups * sizeof(float), REEL_MEM_DEVICE);
        reduce_push pc = { len, chunk };
        assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { in, out }, .push = &pc,
                                                                      .push_size = sizeof pc, .groups = { groups }),
                                              NULL),
                         0);
        reel_mem_unref(&in);
        in = out;
        len = groups;
    }
    float sum = 0;
    assert_int_equal(reel_mem_download(in, 0, &sum, sizeof sum, NULL), 0);
    // Summation order differs between backends: float rounding, not bugs.
    assert_true(fabs(sum - ref) <= 1e-5 * ref);
    reel_mem_unref(&in);
    reel_kernel_destroy(&k);
    g_free(x);
    g_rand_free(r);
}

static void test_map(void **state)
{
    reel_device *dev = *state;
    for (reel_mem_domain d = REEL_MEM_HOST; d < REEL_MEM_DOMAIN_COUNT; d++) {
        if (d == REEL_MEM_DEVICE && !reel_device_info_of(dev)->unified_memory)
            continue;
        GError *error = NULL;
        reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = 1024 * sizeof(float), .domain = d), &error);
        if (!m) { // a device without such memory says so
            assert_int_equal(error->code, REEL_EUNSUPPORTED);
            g_clear_error(&error);
            continue;
        }
        reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "fill"), NULL);
        float *p;
        assert_int_equal(reel_mem_map(m, REEL_MAP_WRITE, (void **)&p), 0);
        memset(p, 0, 1024 * sizeof(float));
        reel_mem_unmap(m);
        fill_push pc = { 3.0f, 1000 };
        assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { m }, .push = &pc,
                                                                      .push_size = sizeof pc, .groups = { 16 }),
                                              NULL),
                         0);
        // Map for reading waits for the fill on the host.
        assert_int_equal(reel_mem_map(m, REEL_MAP_READ, (void **)&p), 0);
        assert_true(p[0] == 3.0f && p[999] == 3.0f && p[1000] == 0.0f);
        reel_mem_unmap(m);
        reel_kernel_destroy(&k);
        reel_mem_unref(&m);
    }
}

static void test_pool(void **state)
{
    reel_device *dev = *state;
    reel_device_stats before, after;
    reel_mem *first = mem_new(dev, 12345, REEL_MEM_DEVICE);
    reel_mem_unref(&first);
    reel_device_get_stats(dev, &before);
    for (int i = 0; i < 50; i++) {
        reel_mem *m = mem_new(dev, 12345, REEL_MEM_DEVICE);
        reel_mem_unref(&m);
    }
    reel_device_get_stats(dev, &after);
    assert_int_equal(after.allocations, before.allocations);
    assert_int_equal(after.pool_hits, before.pool_hits + 50);
    // no_pool memory is freed on its last unref.
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = 777, .no_pool = true), NULL);
    reel_mem_unref(&m);
    reel_device_get_stats(dev, &after);
    assert_int_equal(after.allocations, before.allocations + 1);
    assert_int_equal(after.frees, before.frees + 1);
}

static int destroyed;
static void count_destroy(void *data)
{
    assert_string_equal(data, "import");
    destroyed++;
}

// Exportable memory: an fd per export on a Vulkan device with
// VK_KHR_external_memory_fd, a clear refusal elsewhere; its own pool; an
// attachment that lives with the allocation, pooled or not.
static void test_export(void **state)
{
    reel_device *dev = *state;
    GError *error = NULL;
    reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = 4096, .domain = REEL_MEM_DEVICE, .exportable = true),
                               &error);
    reel_mem_export ex = { .fd = -1 };
    if (!vulkan || !reel_device_info_of(dev)->external_memory) {
        if (!m) { // a driver without exportable buffers says so at allocation
            assert_int_equal(error->code, REEL_EUNSUPPORTED);
            g_clear_error(&error);
            return;
        }
        assert_int_equal(reel_mem_export_fd(m, &ex, &error), REEL_EUNSUPPORTED);
        assert_non_null(strstr(error->message, "cannot export memory"));
        g_clear_error(&error);
        reel_mem_unref(&m);
        return;
    }
    assert_non_null(m);
    assert_true(reel_mem_exportable(m));
    assert_int_equal(reel_mem_export_fd(m, &ex, &error), 0);
    struct stat st;
    assert_int_equal(fstat(ex.fd, &st), 0);
    assert_true(ex.size >= 4096 && ex.dedicated);
    reel_mem_export again;
    assert_int_equal(reel_mem_export_fd(m, &again, NULL), 0);
    assert_int_not_equal(again.fd, ex.fd);
    close(ex.fd);
    close(again.fd);

    // Still ordinary memory for reel: a round trip through it.
    uint8_t in[4096], out[4096];
    for (int i = 0; i < 4096; i++)
        in[i] = (uint8_t)(i * 7);
    assert_int_equal(reel_mem_upload(m, 0, in, sizeof in, NULL), 0);
    assert_int_equal(reel_mem_wait_idle(m), 0);
    assert_int_equal(reel_mem_download(m, 0, out, sizeof out, NULL), 0);
    assert_memory_equal(in, out, sizeof in);

    // Plain memory and views do not export.
    reel_mem *plain = mem_new(dev, 4096, REEL_MEM_DEVICE);
    assert_false(reel_mem_exportable(plain));
    assert_int_equal(reel_mem_export_fd(plain, &ex, &error), REEL_EINVAL);
    assert_non_null(strstr(error->message, "not made exportable"));
    g_clear_error(&error);
    reel_mem *view = reel_mem_new_view(m, REEL_MEM_VIEW_ALIGN, 256, NULL);
    assert_false(reel_mem_exportable(view));
    assert_int_equal(reel_mem_export_fd(view, &ex, &error), REEL_EINVAL);
    g_clear_error(&error);
    reel_mem_unref(&view);

    // The attachment stays with the allocation through the pool, which
    // keeps exportable memory apart from the rest.
    destroyed = 0;
    reel_mem_set_attachment(m, "import", count_destroy);
    reel_mem *seen = m;
    reel_mem_unref(&m);
    reel_mem_unref(&plain);
    reel_device_stats before, after;
    reel_device_get_stats(dev, &before);
    m = reel_mem_new(dev, reel_mem_params(.size = 4096, .domain = REEL_MEM_DEVICE, .exportable = true), NULL);
    reel_device_get_stats(dev, &after);
    assert_ptr_equal(m, seen);
    assert_int_equal(after.allocations, before.allocations);
    assert_string_equal(reel_mem_attachment(m), "import");
    assert_int_equal(destroyed, 0);
    // Replaced: the old one destroyed; freed: the new one too.
    reel_mem_set_attachment(m, "import", count_destroy);
    assert_int_equal(destroyed, 1);
    reel_mem_unref(&m);
    m = reel_mem_new(dev, reel_mem_params(.size = 8192, .no_pool = true, .exportable = true), NULL);
    reel_mem_set_attachment(m, "import", count_destroy);
    reel_mem_unref(&m);
    assert_int_equal(destroyed, 2);
    // The pooled one goes when the device does (teardown): counted there.
}

static void test_budget(void **state)
{
    reel_device *dev = *state;
    GError *error = NULL;
    reel_device_set_budget(dev, 1024);
    assert_null(reel_mem_new(dev, reel_mem_params(.size = 4096, .domain = REEL_MEM_DEVICE), &error));
    assert_int_equal(error->code, REEL_ENOMEM_DEVICE);
    assert_non_null(strstr(error->message, "budget"));
    assert_non_null(strstr(error->message, "4096 bytes"));
    g_clear_error(&error);

    // Two fit, a third does not; freeing one to the pool makes room for
    // another size, because idle pooled memory is trimmed first.
    reel_device_set_budget(dev, 8192);
    reel_mem *a = reel_mem_new(dev, reel_mem_params(.size = 4096), NULL);
    reel_mem *b = reel_mem_new(dev, reel_mem_params(.size = 4096), NULL);
    assert_true(a && b);
    assert_null(reel_mem_new(dev, reel_mem_params(.size = 4096), &error));
    assert_int_equal(error->code, REEL_ENOMEM_DEVICE);
    g_clear_error(&error);
    reel_mem_unref(&a);
    reel_mem *c = reel_mem_new(dev, reel_mem_params(.size = 2000), &error);
    assert_non_null(c);
    reel_mem_unref(&b);
    reel_mem_unref(&c);
    reel_device_set_budget(dev, 0);
}

static void test_transfer_counts(void **state)
{
    reel_device *dev = *state;
    static char data[100000];
    reel_device_stats before, after;
    reel_device_get_stats(dev, &before);
    reel_xfer acc = { 0 };
    reel_mem *d = mem_new(dev, sizeof data, REEL_MEM_DEVICE);
    reel_mem *h = mem_new(dev, sizeof data, REEL_MEM_HOST);
    assert_int_equal(reel_mem_upload(d, 0, data, sizeof data, &acc), 0);
    assert_int_equal(reel_mem_upload(d, 10, data, 1000, &acc), 0);
    assert_int_equal(reel_mem_download(d, 5, data, 333, &acc), 0);
    assert_int_equal(reel_mem_upload(h, 0, data, sizeof data, &acc), 0);
    assert_int_equal(reel_mem_download(h, 0, data, sizeof data, &acc), 0);
    assert_int_equal(reel_mem_upload(d, 1, data, sizeof data, &acc), REEL_EINVAL);
    reel_device_get_stats(dev, &after);
    // Host memory never crosses the bus; on the cpu device nothing does.
    int64_t up = vulkan ? 101000 : 0, down = vulkan ? 333 : 0;
    assert_int_equal(acc.to_device, up);
    assert_int_equal(acc.to_host, down);
    assert_int_equal(after.bytes_to_device - before.bytes_to_device, up);
    assert_int_equal(after.bytes_to_host - before.bytes_to_host, down);
    reel_mem_unref(&d);
    reel_mem_unref(&h);
}

// A copy on the device: the bytes land at the offset asked for, after the
// upload that wrote them (no host wait between), nothing around them
// touched, no bytes counted; a view copies within its parent; bad ranges
// and two views of one allocation are refused.
static void test_copy(void **state)
{
    reel_device *dev = *state;
    enum { N = 70000 };
    uint8_t *in = g_malloc(N), *out = g_malloc(N + 512), *fill = g_malloc(N + 512);
    for (int i = 0; i < N; i++)
        in[i] = (uint8_t)(i * 7 + i / 251);
    memset(fill, 0xA5, N + 512);
    reel_mem *src = mem_new(dev, N, REEL_MEM_DEVICE), *dst = mem_new(dev, N + 512, REEL_MEM_DEVICE);
    assert_int_equal(reel_mem_upload(dst, 0, fill, N + 512, NULL), 0);
    assert_int_equal(reel_mem_upload(src, 0, in, N, NULL), 0);
    reel_device_stats before, after;
    reel_device_get_stats(dev, &before);
    assert_int_equal(reel_mem_copy(dst, 300, src, 0, N), 0);
    reel_device_get_stats(dev, &after);
    assert_int_equal(after.bytes_to_device - before.bytes_to_device, 0);
    assert_int_equal(after.bytes_to_host - before.bytes_to_host, 0);
    assert_int_equal(reel_mem_download(dst, 0, out, N + 512, NULL), 0);
    assert_memory_equal(out + 300, in, N);
    assert_memory_equal(out, fill, 300);
    assert_memory_equal(out + 300 + N, fill, 212);
    // From a view (its offset within the parent) into a fresh mem.
    reel_mem *view = reel_mem_new_view(dst, REEL_MEM_VIEW_ALIGN, 4096, NULL);
    reel_mem *small = mem_new(dev, 1000, REEL_MEM_DEVICE);
    assert_non_null(view);
    assert_int_equal(reel_mem_copy(small, 0, view, 44, 1000), 0); // dst bytes 300 .. 1299: in[0 .. 999]
    assert_int_equal(reel_mem_download(small, 0, out, 1000, NULL), 0);
    assert_memory_equal(out, in, 1000);
    assert_int_equal(reel_mem_copy(small, 1, src, 0, 1000), REEL_EINVAL);
    assert_int_equal(reel_mem_copy(small, 0, src, N - 999, 1000), REEL_EINVAL);
    assert_int_equal(reel_mem_copy(view, 0, dst, 0, 16), REEL_EINVAL);
    assert_int_equal(reel_mem_copy(small, 0, src, 0, 0), 0);
    // Into exportable memory, as encode stages frames for CUDA.
    reel_mem *shared = vulkan && reel_device_info_of(dev)->external_memory
                           ? reel_mem_new(dev, reel_mem_params(.size = N, .domain = REEL_MEM_DEVICE, .exportable = true),
                                          NULL)
                           : NULL;
    if (shared) {
        assert_int_equal(reel_mem_copy(shared, 0, src, 0, N), 0);
        assert_int_equal(reel_mem_download(shared, 0, out, N, NULL), 0);
        assert_memory_equal(out, in, N);
        reel_mem_unref(&shared);
    }
    reel_mem_unref(&view);
    reel_mem_unref(&small);
    reel_mem_unref(&src);
    reel_mem_unref(&dst);
    g_free(in), g_free(out), g_free(fill);
}

static void test_timestamp(void **state)
{
    reel_device *dev = *state;
    const uint32_t n = 4u << 20;
    reel_mem *m = mem_new(dev, n * sizeof(float), REEL_MEM_DEVICE);
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "fill", .local_size = 256), NULL);
    fill_push pc = { 1.0f, n };
    uint64_t timed, untimed;
    assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { m }, .push = &pc, .push_size = sizeof pc,
                                                                  .groups = { n / 256 }, .timestamp = true),
                                          &timed),
                     0);
    assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { m }, .push = &pc, .push_size = sizeof pc,
                                                                  .groups = { n / 256 }),
                                          &untimed),
                     0);
    assert_true(untimed > timed);
    int64_t ns = 0;
    assert_int_equal(reel_device_dispatch_time(dev, timed, &ns), 0);
    assert_true(ns > 0);
    assert_int_equal(reel_device_dispatch_time(dev, untimed, &ns), REEL_EINVAL);
    assert_int_equal(reel_device_wait(dev, 0), 0);
    reel_kernel_destroy(&k);
    reel_mem_unref(&m);
}

static void test_kernel_errors(void **state)
{
    reel_device *dev = *state;
    GError *error = NULL;
    assert_null(reel_kernel_create(dev, reel_kernel_params(.name = "nope"), &error));
    assert_int_equal(error->code, REEL_EINVAL);
    assert_non_null(strstr(error->message, "saxpy"));
    g_clear_error(&error);
    assert_null(reel_kernel_create(dev, reel_kernel_params(.name = "fill", .local_size = 1u << 20), &error));
    g_clear_error(&error);
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "saxpy"), NULL);
    reel_mem *m = mem_new(dev, 64, REEL_MEM_DEVICE);
    saxpy_push pc = { 1, 16 };
    // One buffer short, then a wrong push size.
    assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { m }, .push = &pc, .push_size = sizeof pc), NULL),
                     REEL_EINVAL);
    assert_int_equal(reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { m, m }, .push = &pc, .push_size = 4), NULL),
                     REEL_EINVAL);
    reel_mem_unref(&m);
    reel_kernel_destroy(&k);
}

static void test_pipeline_cache(void **state)
{
    (void)state;
    const char *dir = g_getenv("REEL_CACHE_DIR");
    if (!dir)
        reel_skip("REEL_CACHE_DIR is not set (ctest sets it)");
    // Kernels were created by earlier tests; the file appears on close.
    reel_device *dev = reel_device_open(spec, NULL);
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "saxpy"), NULL);
    g_autofree char *file = g_strdup_printf("%s/pipelines-%04x-%s.bin", dir, reel_device_info_of(dev)->vendor_id,
                                            reel_device_info_of(dev)->uuid_str);
    reel_kernel_destroy(&k);
    reel_device_unref(&dev);
    assert_true(g_file_test(file, G_FILE_TEST_IS_REGULAR));
}

int main(int argc, char **argv)
{
    const char *backend = argc > 1 ? argv[1] : "cpu";
    vulkan = strcmp(backend, "vulkan") == 0;
    spec = "cpu";
    reel_device_info *infos;
    int n = reel_device_list(&infos);
    if (vulkan) {
        spec = n > 1 ? g_strdup(infos[1].spec) : NULL;
        if (!spec) {
            g_free(infos);
            return reel_skip_exit("no Vulkan device");
        }
        printf("device under test: %s (%s)\n", infos[1].spec, infos[1].name);
    }
    g_free(infos);

    // Each test gets a fresh device, so budgets and stats never leak across.
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_select),
        T(test_saxpy),
        T(test_reduce),
        T(test_map),
        T(test_pool),
        T(test_export),
        T(test_budget),
        T(test_transfer_counts),
        T(test_copy),
        T(test_timestamp),
        T(test_kernel_errors),
        T(test_pipeline_cache), // last: Vulkan only, the cpu compiles nothing
    };
    size_t n_tests = G_N_ELEMENTS(tests) - !vulkan;
    int failed = _cmocka_run_group_tests(backend, tests, n_tests, NULL, NULL);
    if (vulkan)
        g_free((char *)spec);
    if (reel_device_validation_messages()) {
        fprintf(stderr, "%" G_GINT64_FORMAT " Vulkan validation messages\n", reel_device_validation_messages());
        failed++;
    }
    return reel_test_verdict(failed);
}

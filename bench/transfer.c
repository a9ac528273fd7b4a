// Transfer bandwidth and dispatch overhead of one device, with plain memcpy
// of the same bytes as the reference. Built and run by bench/transfer.
//
//   transfer SPEC [REPEAT]
//
// Upload and download go between a host buffer and REEL_MEM_DEVICE memory.
// Every figure is the median of REPEAT runs; MB is 10^6 bytes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reel/device.h"
#include "clock.h"

static void die(const char *what, int err)
{
    fprintf(stderr, "transfer: %s: %s\n", what, reel_strerror(err));
    exit(1);
}

typedef struct { float value; uint32_t n; } fill_push;

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: transfer SPEC [REPEAT]\n");
        return 2;
    }
    int repeat = argc > 2 ? atoi(argv[2]) : 7;
    if (repeat < 1 || repeat > 1000)
        repeat = 7;
    GError *error = NULL;
    reel_device *dev = reel_device_open(argv[1], &error);
    if (!dev) {
        fprintf(stderr, "transfer: %s\n", error->message);
        g_error_free(error);
        return 1;
    }
    const reel_device_info *info = reel_device_info_of(dev);
    const char *label = g_getenv("REEL_VULKAN_FORCE_STAGING") && info->backend == REEL_BACKEND_VULKAN
                            ? " [staged]" : "";
    char name[96];
    g_snprintf(name, sizeof name, "%s%s", info->spec, label);
    double *t = g_new(double, (size_t)repeat);

    static const size_t sizes[] = { 1u << 20, 16u << 20, 64u << 20 };
    for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
        size_t n = sizes[s];
        char *src = g_malloc(n), *dst = g_malloc(n);
        memset(src, 1, n); // fault the pages in before timing
        memset(dst, 2, n);
        reel_mem *m = reel_mem_new(dev, reel_mem_params(.size = n, .domain = REEL_MEM_DEVICE), &error);
        if (!m) {
            fprintf(stderr, "transfer: %s\n", error->message);
            return 1;
        }
        double mb = (double)n / 1e6, up, down, ref;
        int err;
        for (int i = 0; i < repeat; i++) {
            double t0 = now();
            memcpy(dst, src, n);
            t[i] = now() - t0;
        }
        ref = mb / median(t, repeat);
        for (int i = 0; i < repeat; i++) {
            double t0 = now();
            if ((err = reel_mem_upload(m, 0, src, n, NULL)) || (err = reel_device_wait(dev, reel_mem_ready_point(m))))
                die("upload", err);
            t[i] = now() - t0;
        }
        up = mb / median(t, repeat);
        for (int i = 0; i < repeat; i++) {
            double t0 = now();
            if ((err = reel_mem_download(m, 0, dst, n, NULL)))
                die("download", err);
            t[i] = now() - t0;
        }
        down = mb / median(t, repeat);
        printf("%-22s %8zu MiB  upload %9.0f MB/s  download %9.0f MB/s  memcpy %9.0f MB/s  ratio up %.2f down %.2f\n",
               name, n >> 20, up, down, ref, up / ref, down / ref);
        reel_mem_unref(&m);
        g_free(src);
        g_free(dst);
    }

    // Per-dispatch overhead: a one-workgroup fill, waited for each time
    // (round trip), and 200 back to back with one wait (throughput).
    reel_kernel *k = reel_kernel_create(dev, reel_kernel_params(.name = "fill"), &error);
    reel_mem *m = k ? reel_mem_new(dev, reel_mem_params(.size = 256, .domain = REEL_MEM_DEVICE), &error) : NULL;
    if (!m) {
        fprintf(stderr, "transfer: %s\n", error->message);
        return 1;
    }
    fill_push pc = { 1.0f, 64 };
    double gpu[64];
    int n_gpu = 0, err;
    for (int i = 0; i < repeat * 10; i++) {
        uint64_t point;
        double t0 = now();
        if ((err = reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { m }, .push = &pc, .push_size = sizeof pc,
                                                                .timestamp = n_gpu < 64),
                                        &point)) ||
            (err = reel_device_wait(dev, point)))
            die("dispatch", err);
        t[i % repeat] = now() - t0;
        int64_t ns;
        if (n_gpu < 64 && reel_device_dispatch_time(dev, point, &ns) == 0)
            gpu[n_gpu++] = (double)ns;
    }
    double round_trip = median(t, repeat) * 1e6;
    for (int i = 0; i < repeat; i++) {
        double t0 = now();
        for (int j = 0; j < 200; j++)
            if ((err = reel_kernel_dispatch(k, reel_dispatch_params(.buffers = { m }, .push = &pc, .push_size = sizeof pc), NULL)))
                die("dispatch", err);
        if ((err = reel_device_wait(dev, 0)))
            die("wait", err);
        t[i] = (now() - t0) / 200;
    }
    printf("%-22s dispatch  round trip %8.1f us  back to back %8.1f us  device time %8.1f us\n", name, round_trip,
           median(t, repeat) * 1e6, n_gpu ? median(gpu, n_gpu) / 1e3 : 0.0);
    reel_mem_unref(&m);
    reel_kernel_destroy(&k);
    reel_device_unref(&dev);
    g_free(t);
    return 0;
}

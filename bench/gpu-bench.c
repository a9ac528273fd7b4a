// One model's inference time on one device, for bench/gpu: median ms of
// RUNS runs (after a warm-up that plans and uploads the weights), GFLOP/s
// from the model's multiply-adds, and where the nodes ran. A program of its
// own, linked only to the model runtime, so that it travels to machines
// without FFmpeg.
//   bench-gpu MODEL.onnx DEVICE [RUNS [fp32|fp16]]
//   bench-gpu --list          (the Vulkan devices' specs, one a line)
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/device.h"
#include "reel/error.h"
#include "reel/model.h"

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// Random inputs at the declared shapes (free dims as 1).
static reel_tensor *input_for(const reel_model_io *io)
{
    int64_t shape[REEL_TENSOR_MAX_RANK];
    for (int d = 0; d < io->rank; d++)
        shape[d] = io->dims[d] > 0 ? io->dims[d] : 1;
    reel_tensor *t = reel_tensor_new(io->dtype, io->rank, shape);
    for (size_t i = 0; t && io->dtype == REEL_DTYPE_FLOAT32 && i < t->nbytes / 4; i++)
        ((float *)t->data)[i] = (float)rand() / RAND_MAX;
    return t;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        reel_device_info *list;
        int n = reel_device_list(&list);
        for (int i = 0; i < n; i++)
            if (list[i].backend == REEL_BACKEND_VULKAN)
                printf("%s\n", list[i].spec);
        g_free(list);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.onnx DEVICE [RUNS [fp32|fp16]]\n", argv[0]);
        return 2;
    }
    int runs = argc > 3 ? atoi(argv[3]) : 20;
    bool fp16 = argc > 4 && strcmp(argv[4], "fp16") == 0;
    if (runs < 1 || (argc > 4 && !fp16 && strcmp(argv[4], "fp32") != 0)) {
        fprintf(stderr, "bench-gpu: RUNS must be 1 or more, the precision fp32 or fp16\n");
        return 2;
    }
    GError *err = NULL;
    reel_model *m = reel_model_load(argv[1], &err);
    reel_device *dev = m ? reel_device_open(argv[2], &err) : NULL;
    reel_session *s = dev ? reel_session_new(m, reel_session_params(.threads = 0, .device = dev,
                                                         .precision = fp16 ? REEL_PRECISION_FP16 : REEL_PRECISION_FP32), &err) : NULL;
    if (!s) {
        fprintf(stderr, "bench-gpu: %s\n", err->message);
        return 1;
    }
    int n_in = reel_model_n_inputs(m), n_out = reel_model_n_outputs(m);
    reel_tensor **in = g_new0(reel_tensor *, n_in + 1), **out = g_new0(reel_tensor *, n_out + 1);
    for (int i = 0; i < n_in; i++)
        in[i] = input_for(reel_model_input(m, i));
    double *ms = g_new(double, runs);
    int rc = 0;
    for (int r = -1; r < runs && rc == 0; r++) {
        gint64 t0 = g_get_monotonic_time();
        rc = reel_session_run(s, in, out, &err); // outputs come back to the host: the run is complete
        if (r >= 0)
            ms[r] = (g_get_monotonic_time() - t0) / 1e3;
        for (int i = 0; i < n_out; i++)
            reel_tensor_free(&out[i]);
    }
    if (rc) {
        fprintf(stderr, "bench-gpu: %s\n", err->message);
        return 1;
    }
    qsort(ms, (size_t)runs, sizeof *ms, by_value);
    reel_model_summary sum;
    reel_model_summarize(m, &sum);
    reel_session_placement p;
    reel_session_placement_of(s, &p);
    double median = ms[runs / 2];
    printf("%.3f ms  %.1f GFLOP/s  %d/%d nodes on the device\n", median,
           sum.flops > 0 ? sum.flops / (median * 1e6) : 0.0, p.device_nodes, p.device_nodes + p.cpu_nodes);
    for (int i = 0; i < n_in; i++)
        reel_tensor_free(&in[i]);
    g_free(in);
    g_free(out);
    g_free(ms);
    reel_session_destroy(&s);
    reel_device_unref(&dev);
    reel_model_unref(&m);
    return 0;
}

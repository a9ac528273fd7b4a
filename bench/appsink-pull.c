// The C side of bench/python: frames per second pulled from an appsink
// (each frame's first byte read, as the Python side reads its array).
//   bench-appsink-pull "DESCRIPTION ... ! appsink name=out"
#include <stdio.h>

#include <reel/reel.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench-appsink-pull DESCRIPTION (with an appsink name=out)\n");
        return 2;
    }
    reel_init_with(reel_init_params(.ffmpeg_log = "quiet", .blas_threads = 1));
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(argv[1], "pipeline", NULL, &err);
    if (!p || reel_pipeline_start(p, &err) < 0) {
        fprintf(stderr, "bench-appsink-pull: %s\n", err->message);
        return 1;
    }
    reel_element *out = reel_pipeline_find(p, "out");
    int64_t t0 = g_get_monotonic_time(), frames = 0;
    unsigned sum = 0;
    reel_buffer *b;
    while ((b = reel_appsink_pull(out, -1))) {
        sum += b->planes[0] ? b->planes[0][0] : 0;
        frames++;
        reel_buffer_unref(&b);
    }
    double s = (g_get_monotonic_time() - t0) / 1e6;
    int rc = reel_pipeline_wait(p, &err);
    if (rc < 0)
        fprintf(stderr, "bench-appsink-pull: %s\n", err->message);
    reel_pipeline_destroy(&p);
    printf("%.1f\n", frames / s);
    return rc < 0 || sum == 1u << 31;
}

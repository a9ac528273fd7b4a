// bench/analytics's first half: what `zones` costs per frame with 100
// tracked objects, 20 zones and 10 lines, on one core. Frames (1280x720
// gray, content unused) carry 100 tracked boxes on deterministic random
// walks; they go appsrc ! zones ! appsink, and, as the peer, appsrc !
// identity ! appsink on the same frames. Printed: zones' busy time per frame
// (the element's own callback time, from the report), and the two runs'
// frames per second as a ratio. Median of REPEAT runs.
//
//   bench-analytics [REPEAT [FRAMES]]     (default 5, 3000)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/reel.h"

#define OBJECTS 100
#define W 1280
#define H 720

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// 20 zones (hexagons on a 5x4 grid) and 10 lines (alternately across and
// down), normalized.
static char *zones_text(void)
{
    GString *s = g_string_new(NULL);
    for (int k = 0; k < 20; k++) {
        double cx = 0.1 + 0.2 * (k % 5), cy = 0.125 + 0.25 * (k / 5), r = 0.09;
        g_string_append_printf(s, "%sz%d:", k ? "; " : "", k);
        for (int v = 0; v < 6; v++)
            g_string_append_printf(s, " %.4f,%.4f", cx + r * cos(v * G_PI / 3), cy + 0.9 * r * sin(v * G_PI / 3));
    }
    return g_string_free(s, FALSE);
}

static char *lines_text(void)
{
    GString *s = g_string_new(NULL);
    for (int k = 0; k < 10; k++) {
        double t = 0.05 + 0.09 * k;
        if (k % 2)
            g_string_append_printf(s, "%sl%d: %.3f,0.02 %.3f,0.98", k ? "; " : "", k, t, t);
        else
            g_string_append_printf(s, "%sl%d: 0.02,%.3f 0.98,%.3f", k ? "; " : "", k, t, t);
    }
    return g_string_free(s, FALSE);
}

typedef struct walker {
    double x, y, vx, vy;
} walker;

static void step(walker *w, GRand *rng)
{
    w->vx = CLAMP(w->vx + g_rand_double_range(rng, -0.5, 0.5), -6, 6);
    w->vy = CLAMP(w->vy + g_rand_double_range(rng, -0.5, 0.5), -6, 6);
    w->x += w->vx;
    w->y += w->vy;
    if (w->x < 20 || w->x > W - 20)
        w->vx = -w->vx, w->x = CLAMP(w->x, 20, W - 20);
    if (w->y < 40 || w->y > H)
        w->vy = -w->vy, w->y = CLAMP(w->y, 40, H);
}

// One run; returns frames per second, and zones' busy ms per frame in *busy.
static double run(const char *middle, int frames, double *busy)
{
    char *text = g_strdup_printf("appsrc name=in caps=video/raw,format=gray8,width=%d,height=%d,framerate=30/1 "
                                 "! %s name=m ! appsink name=out", W, H, middle);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.threads = 1), &err);
    if (!p || reel_pipeline_start(p, &err) != 0) {
        fprintf(stderr, "bench-analytics: %s\n", err->message);
        exit(1);
    }
    reel_element *in = reel_pipeline_find(p, "in"), *out = reel_pipeline_find(p, "out");
    GRand *rng = g_rand_new_with_seed(7);
    walker w[OBJECTS];
    for (int i = 0; i < OBJECTS; i++)
        w[i] = (walker){ g_rand_double_range(rng, 20, W - 20), g_rand_double_range(rng, 40, H), 0, 0 };
    int64_t t0 = g_get_monotonic_time();
    for (int f = 0; f < frames; f++) {
        reel_buffer *b = reel_appsrc_alloc(in);
        reel_detections *d = reel_detections_new(OBJECTS);
        for (int i = 0; i < OBJECTS; i++) {
            step(&w[i], rng);
            d->items[i] = (reel_detection){ .x0 = (float)w[i].x - 15, .y0 = (float)w[i].y - 40, .x1 = (float)w[i].x + 15,
                                            .y1 = (float)w[i].y, .score = 0.9f, .class_id = i % 3, .track_id = i + 1 };
        }
        reel_buffer_add_meta(b, &reel_detections_meta, d);
        reel_appsrc_push(in, b);
        reel_buffer *got = reel_appsink_pull(out, -1);
        reel_buffer_unref(&got);
    }
    double secs = (g_get_monotonic_time() - t0) / 1e6;
    reel_appsrc_end(in);
    reel_pipeline_wait(p, NULL);
    reel_element_report r[8];
    int n = reel_pipeline_report(p, r, 8);
    for (int i = 0; i < n && i < 8; i++)
        if (strcmp(r[i].name, "m") == 0)
            *busy = r[i].busy_ns / 1e6 / frames;
    reel_pipeline_destroy(&p);
    g_rand_free(rng);
    g_free(text);
    return frames / secs;
}

int main(int argc, char **argv)
{
    int repeat = argc > 1 ? atoi(argv[1]) : 5, frames = argc > 2 ? atoi(argv[2]) : 3000;
    reel_init();
    char *zones = zones_text(), *lines = lines_text();
    char *middle = g_strdup_printf("zones zones=\"%s\" lines=\"%s\" loiter=10", zones, lines);
    double fz[64], fi[64], bz[64], bi[64];
    repeat = CLAMP(repeat, 1, 64);
    for (int k = 0; k < repeat; k++) {
        fz[k] = run(middle, frames, &bz[k]);
        fi[k] = run("identity", frames, &bi[k]);
    }
    qsort(fz, (size_t)repeat, sizeof *fz, cmp_double);
    qsort(fi, (size_t)repeat, sizeof *fi, cmp_double);
    qsort(bz, (size_t)repeat, sizeof *bz, cmp_double);
    qsort(bi, (size_t)repeat, sizeof *bi, cmp_double);
    int m = repeat / 2;
    printf("zones with %d tracked objects, 20 zones, 10 lines: %.4f ms a frame on one core (goal under 0.1), "
           "identity %.4f ms; %.0f frames/s through appsrc ! zones ! appsink vs %.0f through identity: x%.2f "
           "(median of %d runs of %d frames)\n",
           OBJECTS, bz[m], bi[m], fz[m], fi[m], fz[m] / fi[m], repeat, frames);
    g_free(middle);
    g_free(zones);
    g_free(lines);
    return 0;
}

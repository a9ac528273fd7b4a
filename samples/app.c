// Embeds a pipeline in an application: one thread makes frames in code (a
// white square moving over a dark background) and pushes them into an
// appsrc; the pipeline scales them down to gray; the main thread pulls the
// results from an appsink and finds the square again.
//
//   build/samples/sample_app
#include <stdio.h>

#include <reel/reel.h>

#define WIDTH 320
#define HEIGHT 240
#define FRAMES 30
#define SQUARE 40

static const char *pipeline_text =
    "appsrc name=in caps=video/raw,format=rgb24,width=320,height=240,framerate=30/1"
    " ! convert ! video/raw,format=gray8,width=160,height=120"
    " ! appsink name=out";

// Frame i: the square's top-left corner moves right and down.
static void draw(reel_buffer *b, int i)
{
    int x0 = i * (WIDTH - SQUARE) / FRAMES, y0 = i * (HEIGHT - SQUARE) / FRAMES;
    for (int y = 0; y < HEIGHT; y++) {
        uint8_t *row = b->planes[0] + (size_t)y * b->strides[0];
        for (int x = 0; x < WIDTH; x++) {
            bool in = x >= x0 && x < x0 + SQUARE && y >= y0 && y < y0 + SQUARE;
            row[3 * x] = row[3 * x + 1] = row[3 * x + 2] = in ? 255 : 20;
        }
    }
}

// The application's producer thread (its camera code, in real life).
static gpointer produce(gpointer data)
{
    reel_element *in = data;
    for (int i = 0; i < FRAMES; i++) {
        reel_buffer *b = reel_appsrc_alloc(in);
        if (!b)
            break; // the pipeline stopped
        draw(b, i);
        if (reel_appsrc_push(in, b) < 0)
            break;
    }
    reel_appsrc_end(in);
    return NULL;
}

// Centre of the bright pixels of a gray frame.
static void find_square(const reel_buffer *b, double *cx, double *cy)
{
    double sx = 0, sy = 0, n = 0;
    for (int y = 0; y < b->format.height; y++)
        for (int x = 0; x < b->format.width; x++)
            if (b->planes[0][(size_t)y * b->strides[0] + x] > 128) {
                sx += x;
                sy += y;
                n++;
            }
    *cx = n ? sx / n : -1;
    *cy = n ? sy / n : -1;
}

// Starts the pipeline, pulls every result, and waits for the end.
static int run(reel_pipeline *p, GError **err)
{
    int rc = reel_pipeline_start(p, err);
    if (rc < 0)
        return rc;
    GThread *producer = g_thread_new("producer", produce, reel_pipeline_find(p, "in"));
    reel_element *out = reel_pipeline_find(p, "out");
    reel_buffer *b;
    while ((b = reel_appsink_pull(out, -1))) {
        double cx, cy;
        find_square(b, &cx, &cy);
        printf("frame %2lld: %dx%d gray, square centred at (%.1f, %.1f)\n", (long long)b->frame_number,
               b->format.width, b->format.height, cx, cy);
        reel_buffer_unref(&b);
    }
    g_thread_join(producer);
    return reel_pipeline_wait(p, err);
}

int main(void)
{
    reel_init();
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(pipeline_text, NULL, NULL, &err);
    if (!p || run(p, &err) < 0) {
        fprintf(stderr, "%s\n", err->message);
        g_error_free(err);
        reel_pipeline_destroy(&p);
        return 1;
    }
    reel_pipeline_destroy(&p);
    return 0;
}

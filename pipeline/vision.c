// Metadata of vision elements: transforms, source frames, detections.
#include <string.h>

#include "reel/vision.h"

static void *transform_copy(const void *data)
{
    return g_memdup2(data, sizeof(reel_transform));
}

const reel_meta_type reel_transform_meta = { "transform", g_free, transform_copy };

void reel_transform_to_frame(const reel_transform *t, double *x, double *y)
{
    *x = (*x - t->bx) / t->ax;
    *y = (*y - t->by) / t->ay;
}

void reel_transform_to_tensor(const reel_transform *t, double *x, double *y)
{
    *x = *x * t->ax + t->bx;
    *y = *y * t->ay + t->by;
}

static void frame_free(void *data)
{
    reel_buffer *b = data;
    reel_buffer_unref(&b);
}

static void *frame_copy(const void *data)
{
    return reel_buffer_ref((reel_buffer *)data);
}

const reel_meta_type reel_source_frame_meta = { "source-frame", frame_free, frame_copy };

reel_buffer *reel_buffer_source_frame(const reel_buffer *tensor)
{
    return reel_buffer_get_meta(tensor, &reel_source_frame_meta);
}

void reel_buffer_set_source_frame(reel_buffer *tensor, reel_buffer *frame)
{
    reel_buffer_add_meta(tensor, &reel_source_frame_meta, reel_buffer_ref(frame));
}

static size_t detections_size(int n)
{
    return sizeof(reel_detections) + (size_t)n * sizeof(reel_detection);
}

static void *detections_copy(const void *data)
{
    const reel_detections *d = data;
    return g_memdup2(d, detections_size(d->n));
}

const reel_meta_type reel_detections_meta = { "detections", g_free, detections_copy };

reel_detections *reel_detections_new(int n)
{
    reel_detections *d = g_malloc0(detections_size(n));
    d->n = n;
    for (int i = 0; i < n; i++) {
        d->items[i].class_id = -1;
        d->items[i].track_id = -1;
    }
    return d;
}

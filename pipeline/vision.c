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

static void inference_free(void *data)
{
    reel_inference *inf = data;
    for (int i = 0; i < inf->n; i++) {
        g_free(inf->names[i]);
        reel_buffer_unref(&inf->outputs[i]);
    }
    g_free(inf->names);
    g_free(inf->outputs);
    g_free(inf->manifest);
    g_free(inf);
}

static void *inference_copy(const void *data)
{
    const reel_inference *src = data;
    reel_inference *inf = reel_inference_new(src->n);
    memcpy(inf->model, src->model, sizeof inf->model);
    inf->manifest = g_strdup(src->manifest);
    inf->transform = src->transform;
    inf->has_transform = src->has_transform;
    inf->detection = src->detection;
    for (int i = 0; i < src->n; i++) {
        inf->names[i] = g_strdup(src->names[i]);
        inf->outputs[i] = src->outputs[i] ? reel_buffer_ref(src->outputs[i]) : NULL;
    }
    return inf;
}

const reel_meta_type reel_inference_meta = { "inference", inference_free, inference_copy };

reel_inference *reel_inference_new(int n)
{
    reel_inference *inf = g_new0(reel_inference, 1);
    inf->n = n;
    inf->detection = -1;
    inf->names = g_new0(char *, n + 1);
    inf->outputs = g_new0(reel_buffer *, n + 1);
    return inf;
}

const reel_buffer *reel_inference_output(const reel_inference *inf, const char *name, int i)
{
    if (!name)
        return i >= 0 && i < inf->n ? inf->outputs[i] : NULL;
    for (int k = 0; k < inf->n; k++)
        if (inf->names[k] && strcmp(inf->names[k], name) == 0)
            return inf->outputs[k];
    return NULL;
}

const reel_inference *reel_buffer_last_inference(const reel_buffer *b)
{
    const reel_inference *last = NULL;
    void *data;
    for (reel_meta *m = reel_buffer_next_meta(b, NULL, &reel_inference_meta, &data); m;
         m = reel_buffer_next_meta(b, m, &reel_inference_meta, &data))
        last = data;
    return last;
}

static size_t classifications_size(int n)
{
    return sizeof(reel_classifications) + (size_t)n * sizeof(reel_classification);
}

static void *classifications_copy(const void *data)
{
    const reel_classifications *c = data;
    return g_memdup2(c, classifications_size(c->n));
}

const reel_meta_type reel_classifications_meta = { "classifications", g_free, classifications_copy };

reel_classifications *reel_classifications_new(int n)
{
    reel_classifications *c = g_malloc0(classifications_size(n));
    c->n = n;
    for (int i = 0; i < n; i++)
        c->items[i].detection = -1;
    return c;
}

static void *crop_copy(const void *data)
{
    return g_memdup2(data, sizeof(reel_crop));
}

const reel_meta_type reel_crop_meta = { "crop", g_free, crop_copy };

static size_t analytics_size(int n_counts, int n_events, int n_shapes)
{
    return sizeof(reel_analytics) + (size_t)n_counts * sizeof(reel_region_count) +
           (size_t)n_events * sizeof(reel_region_event) + (size_t)n_shapes * sizeof(reel_region_shape);
}

reel_analytics *reel_analytics_new(int n_counts, int n_events, int n_shapes)
{
    reel_analytics *a = g_malloc0(analytics_size(n_counts, n_events, n_shapes));
    a->n_counts = n_counts;
    a->n_events = n_events;
    a->n_shapes = n_shapes;
    a->counts = (reel_region_count *)(a + 1);
    a->events = (reel_region_event *)(a->counts + n_counts);
    a->shapes = (reel_region_shape *)(a->events + n_events);
    return a;
}

static void *analytics_copy(const void *data)
{
    const reel_analytics *a = data;
    reel_analytics *c = reel_analytics_new(a->n_counts, a->n_events, a->n_shapes);
    memcpy(c->counts, a->counts, (size_t)a->n_counts * sizeof *a->counts);
    memcpy(c->events, a->events, (size_t)a->n_events * sizeof *a->events);
    memcpy(c->shapes, a->shapes, (size_t)a->n_shapes * sizeof *a->shapes);
    return c;
}

const reel_meta_type reel_analytics_meta = { "analytics", g_free, analytics_copy };

const char *reel_region_event_name(reel_region_event_type type)
{
    static const char *const names[] = { "enter", "leave", "loiter", "cross" };
    return (unsigned)type < G_N_ELEMENTS(names) ? names[type] : "unknown";
}

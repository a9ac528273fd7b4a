// YOLOv8-seg masks (see seg_mask.h).
#include "elements/seg_mask.h"

#include <math.h>

// Where frame column (or row) i's centre falls on the prototype grid, in
// prototype pixels with centres at integers: u = a * i + b.
typedef struct axis {
    double a, b;
    int n; // prototype pixels along it
} axis;

static axis axis_of(double scale, double offset, int tensor_size, int protos)
{
    double k = (double)protos / tensor_size;
    return (axis){ scale * k, (0.5 * scale + offset) * k - 0.5, protos };
}

// The two neighbours of u on the grid and the weight of the second.
static void neighbours(const axis *ax, int i, int *lo, double *w)
{
    double u = CLAMP(ax->a * i + ax->b, 0, ax->n - 1);
    *lo = MIN((int)u, MAX(ax->n - 2, 0));
    *w = u - *lo;
}

typedef struct rle {
    GArray *runs;
    int n, first;
    bool on, full;
    uint32_t len;
} rle;

static void rle_flush(rle *r)
{
    if (r->n == REEL_MASK_MAX_RUNS) {
        r->full = true;
        return;
    }
    g_array_append_val(r->runs, r->len);
    r->n++;
    r->len = 0;
    r->on = !r->on;
}

static void rle_add(rle *r, bool on)
{
    if (on != r->on)
        rle_flush(r);
    r->len++;
}

void reel_seg_mask(const reel_protos *p, const float *coeffs, int64_t step, const reel_detection *d,
                   const reel_transform *t, int frame_width, int frame_height, GArray *runs, reel_mask *mask)
{
    int x = CLAMP((int)floorf(d->x0), 0, frame_width), y = CLAMP((int)floorf(d->y0), 0, frame_height);
    int xe = CLAMP((int)ceilf(d->x1), x, frame_width), ye = CLAMP((int)ceilf(d->y1), y, frame_height);
    *mask = (reel_mask){ .x = x, .y = y, .width = xe - x, .height = ye - y, .first_run = (int)runs->len };
    if (mask->width == 0 || mask->height == 0 || p->width < 1 || p->height < 1)
        return;
    axis ax = axis_of(t->ax, t->bx, t->tensor_width, p->width), ay = axis_of(t->ay, t->by, t->tensor_height, p->height);
    // The prototype window the box samples; its logits computed once.
    int u0, v0, u1, v1;
    double w;
    neighbours(&ax, x, &u0, &w), neighbours(&ax, xe - 1, &u1, &w);
    neighbours(&ay, y, &v0, &w), neighbours(&ay, ye - 1, &v1, &w);
    u1 = MIN(u1 + 1, p->width - 1), v1 = MIN(v1 + 1, p->height - 1);
    int ww = u1 - u0 + 1, wh = v1 - v0 + 1;
    float *logit = g_new0(float, (size_t)ww * wh);
    for (int k = 0; k < p->channels; k++) {
        float c = coeffs[k * step];
        const float *plane = p->v + (size_t)k * p->height * p->width;
        for (int v = 0; v < wh; v++)
            for (int u = 0; u < ww; u++)
                logit[v * ww + u] += c * plane[(size_t)(v + v0) * p->width + u + u0];
    }
    int *col = g_new(int, mask->width);
    double *col_w = g_new(double, mask->width);
    for (int i = 0; i < mask->width; i++) {
        neighbours(&ax, x + i, &col[i], &col_w[i]);
        col[i] -= u0;
    }
    int step_u = ww > 1 ? 1 : 0, step_v = wh > 1 ? ww : 0;
    rle r = { .runs = runs };
    for (int j = 0; j < mask->height && !r.full; j++) {
        int row;
        double fv;
        neighbours(&ay, y + j, &row, &fv);
        const float *l = logit + (size_t)(row - v0) * ww;
        float cy = (float)(y + j) + 0.5f;
        bool row_in = cy >= d->y0 && cy < d->y1;
        for (int i = 0; i < mask->width && !r.full; i++) {
            float cx = (float)(x + i) + 0.5f;
            bool on = false;
            if (row_in && cx >= d->x0 && cx < d->x1) {
                const float *q = l + col[i];
                double fu = col_w[i];
                double top = q[0] * (1 - fu) + q[step_u] * fu, bottom = q[step_v] * (1 - fu) + q[step_v + step_u] * fu;
                on = top * (1 - fv) + bottom * fv > 0; // sigmoid(s) > 0.5
            }
            rle_add(&r, on);
        }
    }
    if (!r.full && r.on)
        rle_flush(&r); // the last on run; trailing off pixels need none
    mask->n_runs = r.n;
    mask->truncated = r.full;
    g_free(col_w);
    g_free(col);
    g_free(logit);
}

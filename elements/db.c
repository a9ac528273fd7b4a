// DB post-processing (elements/db.h). Text regions are the 8-connected
// components of the thresholded map; a region's rectangle is fitted to the
// convex hull of its pixel centres (rotating the hull's edges: the
// minimum-area rectangle has a side on one of them).
#include "elements/db.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct vec {
    float x, y;
} vec;

// A rectangle as centre, unit axes u (nearer horizontal, pointing right)
// and v (u turned clockwise: pointing down), and half extents along them.
typedef struct rect {
    vec c, u, v;
    float a, b;
} rect;

static int by_x_then_y(const void *pa, const void *pb)
{
    const vec *p = pa, *q = pb;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return (p->y > q->y) - (p->y < q->y);
}

static float cross(vec o, vec a, vec b)
{
    return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x);
}

// Andrew's monotone chain over sorted points: the hull into h (room for
// n + 1), returns its size.
static int convex_hull(const vec *p, int n, vec *h)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k >= 2 && cross(h[k - 2], h[k - 1], p[i]) <= 0)
            k--;
        h[k++] = p[i];
    }
    for (int i = n - 2, lower = k + 1; i >= 0; i--) {
        while (k >= lower && cross(h[k - 2], h[k - 1], p[i]) <= 0)
            k--;
        h[k++] = p[i];
    }
    return k > 1 ? k - 1 : k;
}

static bool fit_rect(vec *pts, int n, rect *out)
{
    if (n < 3)
        return false;
    qsort(pts, (size_t)n, sizeof *pts, by_x_then_y);
    vec *h = malloc(sizeof *h * (size_t)(n + 1));
    if (!h)
        return false;
    int m = convex_hull(pts, n, h);
    double best = INFINITY;
    for (int i = 0; i < m && m >= 3; i++) {
        vec p = h[i], q = h[(i + 1) % m];
        double dx = q.x - p.x, dy = q.y - p.y, len = sqrt(dx * dx + dy * dy);
        if (len == 0)
            continue;
        dx /= len;
        dy /= len;
        double s0 = INFINITY, s1 = -INFINITY, t0 = INFINITY, t1 = -INFINITY;
        for (int j = 0; j < m; j++) {
            double s = h[j].x * dx + h[j].y * dy, t = -h[j].x * dy + h[j].y * dx;
            s0 = fmin(s0, s);
            s1 = fmax(s1, s);
            t0 = fmin(t0, t);
            t1 = fmax(t1, t);
        }
        double area = (s1 - s0) * (t1 - t0);
        if (area >= best)
            continue;
        best = area;
        double sc = (s0 + s1) / 2, tc = (t0 + t1) / 2;
        out->c = (vec){ (float)(sc * dx - tc * dy), (float)(sc * dy + tc * dx) };
        // The edge direction d = (dx, dy) or its normal (-dy, dx), whichever
        // is nearer horizontal, becomes u.
        bool along = fabs(dx) >= fabs(dy);
        double ux = along ? dx : -dy, uy = along ? dy : dx, sign = ux < 0 ? -1 : 1;
        out->u = (vec){ (float)(ux * sign), (float)(uy * sign) };
        out->v = (vec){ -out->u.y, out->u.x };
        out->a = (float)((along ? s1 - s0 : t1 - t0) / 2);
        out->b = (float)((along ? t1 - t0 : s1 - s0) / 2);
    }
    free(h);
    return best > 0 && isfinite(best);
}

static void corners(const rect *r, float out[4][2])
{
    static const float sa[4] = { -1, 1, 1, -1 }, sb[4] = { -1, -1, 1, 1 };
    for (int k = 0; k < 4; k++) {
        out[k][0] = r->c.x + sa[k] * r->a * r->u.x + sb[k] * r->b * r->v.x;
        out[k][1] = r->c.y + sa[k] * r->a * r->u.y + sb[k] * r->b * r->v.y;
    }
}

bool reel_min_area_rect(const float *xy, int n, float out[4][2])
{
    if (n < 3)
        return false;
    vec *p = malloc(sizeof *p * (size_t)n);
    if (!p)
        return false;
    memcpy(p, xy, sizeof *p * (size_t)n);
    rect r;
    bool ok = fit_rect(p, n, &r);
    free(p);
    if (ok)
        corners(&r, out);
    return ok;
}

// The mean probability of the pixels whose centres lie in the rectangle
// (its edges widened by half a pixel, so that the region's own border
// pixels count, as a filled polygon's do).
static float mean_inside(const float *prob, int w, int h, const rect *r)
{
    float c[4][2];
    corners(r, c);
    float x0 = c[0][0], x1 = c[0][0], y0 = c[0][1], y1 = c[0][1];
    for (int k = 1; k < 4; k++) {
        x0 = fminf(x0, c[k][0]);
        x1 = fmaxf(x1, c[k][0]);
        y0 = fminf(y0, c[k][1]);
        y1 = fmaxf(y1, c[k][1]);
    }
    int i0 = (int)fmaxf(floorf(x0 - 1), 0), i1 = (int)fminf(ceilf(x1 + 1), (float)w - 1);
    int j0 = (int)fmaxf(floorf(y0 - 1), 0), j1 = (int)fminf(ceilf(y1 + 1), (float)h - 1);
    double sum = 0;
    long count = 0;
    for (int y = j0; y <= j1; y++)
        for (int x = i0; x <= i1; x++) {
            float dx = (float)x + 0.5f - r->c.x, dy = (float)y + 0.5f - r->c.y;
            float pu = dx * r->u.x + dy * r->u.y, pv = dx * r->v.x + dy * r->v.y;
            if (fabsf(pu) <= r->a + 0.5f && fabsf(pv) <= r->b + 0.5f) {
                sum += prob[(size_t)y * (size_t)w + (size_t)x];
                count++;
            }
        }
    return count ? (float)(sum / (double)count) : 0;
}

typedef struct scan {
    const float *prob;
    int w, h;
    float binarize;
    uint8_t *seen;
    int *stack;      // pixel indices still to visit
    int *lo, *hi;    // this region's leftmost and rightmost x per row; hi < 0: none
    vec *pts;        // the extremes as pixel centres
} scan;

// Visits the region of pixel `start`, noting each row's extremes; returns
// its row span in *y0, *y1.
static void flood(scan *s, int start, int *y0, int *y1)
{
    int top = 0;
    s->stack[top++] = start;
    s->seen[start] = 1;
    *y0 = *y1 = start / s->w;
    while (top > 0) {
        int i = s->stack[--top], x = i % s->w, y = i / s->w;
        if (s->hi[y] < 0 || x < s->lo[y])
            s->lo[y] = x;
        if (x > s->hi[y])
            s->hi[y] = x;
        *y0 = y < *y0 ? y : *y0;
        *y1 = y > *y1 ? y : *y1;
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                int nx = x + dx, ny = y + dy;
                if (nx < 0 || ny < 0 || nx >= s->w || ny >= s->h)
                    continue;
                int j = ny * s->w + nx;
                if (!s->seen[j] && s->prob[j] > s->binarize) {
                    s->seen[j] = 1;
                    s->stack[top++] = j;
                }
            }
    }
}

// The region's rectangle, scored and grown; false when it is dropped.
static bool region_box(scan *s, const reel_db_params *p, int y0, int y1, reel_db_box *box)
{
    int n = 0;
    for (int y = y0; y <= y1; y++) {
        if (s->hi[y] < 0)
            continue;
        s->pts[n++] = (vec){ (float)s->lo[y] + 0.5f, (float)y + 0.5f };
        if (s->hi[y] != s->lo[y])
            s->pts[n++] = (vec){ (float)s->hi[y] + 0.5f, (float)y + 0.5f };
        s->hi[y] = -1;
    }
    rect r;
    if (!fit_rect(s->pts, n, &r) || 2 * fminf(r.a, r.b) < p->min_size)
        return false;
    box->score = mean_inside(s->prob, s->w, s->h, &r);
    if (box->score < p->box_threshold)
        return false;
    // Offsetting a rectangle outward by d (round joins) and fitting the
    // minimum-area rectangle again gives the rectangle d larger each side.
    float w = 2 * r.a, h = 2 * r.b, d = w * h * p->unclip_ratio / (2 * (w + h));
    r.a += d;
    r.b += d;
    if (2 * fminf(r.a, r.b) < p->min_size + 2)
        return false;
    corners(&r, box->points);
    return true;
}

int reel_db_boxes(const float *prob, int width, int height, const reel_db_params *p, GArray *out)
{
    if (width <= 0 || height <= 0)
        return 0;
    size_t n = (size_t)width * (size_t)height;
    scan s = { prob, width, height, p->binarize, g_malloc0(n), g_new(int, n), g_new(int, height),
               g_new(int, height), g_new(vec, 2 * (size_t)height + 1) };
    for (int y = 0; y < height; y++)
        s.hi[y] = -1;
    int found = 0, regions = 0;
    for (size_t i = 0; i < n && regions < p->max_boxes; i++) {
        if (s.seen[i] || prob[i] <= p->binarize)
            continue;
        int y0, y1;
        flood(&s, (int)i, &y0, &y1);
        regions++;
        reel_db_box box;
        if (region_box(&s, p, y0, y1, &box)) {
            g_array_append_val(out, box);
            found++;
        }
    }
    g_free(s.seen);
    g_free(s.stack);
    g_free(s.lo);
    g_free(s.hi);
    g_free(s.pts);
    return found;
}

// track: gives each detected object an id that stays with it from frame to
// frame, as SORT does (Bewley et al., "Simple Online and Realtime Tracking",
// 2016). Each track is a constant-velocity Kalman filter on (cx, cy, area,
// aspect); each frame, tracks are predicted, then matched to the frame's
// detections by an optimal (Hungarian) assignment on IoU, pairs under `iou`
// rejected. Where this differs from SORT, on purpose:
//  - ids are handed out when a track is confirmed (its min-hits-th match), so
//    the ids a user sees run 1, 2, 3, ... without gaps; until then its
//    detections keep track_id -1;
//  - once confirmed, a track stays confirmed: an object seen again after an
//    occlusion is reported at once under its old id (SORT waits for a new
//    streak of min-hits matches);
//  - ids count per stream, so they do not depend on how frames of several
//    streams interleave.
// Only metadata changes; pixels are never touched, so frames may be in any
// memory.
#include <math.h>
#include <string.h>

#include "reel/reel.h"

enum { DIM_X = 7, DIM_Z = 4 }; // state (cx, cy, s, r, vx, vy, vs); measurement (cx, cy, s, r)

typedef struct kalman {
    double x[DIM_X];
    double P[DIM_X][DIM_X];
} kalman;

typedef struct track {
    kalman kf;
    int64_t id;     // 0 while tentative
    int class_id;
    int hits;       // detections matched, counting the one that started it
    int misses;     // frames since the last match
    double box[4];  // this frame's prediction: x0, y0, x1, y1
} track;

typedef struct stream_state {
    GArray *tracks; // track
    int64_t next_id;
} stream_state;

typedef struct track_priv {
    double iou;
    int max_age, min_hits;
    bool per_class;

    GHashTable *streams; // stream id -> stream_state
} track_priv;

static const reel_prop props[] = {
    { "iou", REEL_PROP_DOUBLE, offsetof(track_priv, iou), "0.3", 0.01, 1,
      .help = "least IoU between a track's predicted box and a detection for them to match" },
    { "max-age", REEL_PROP_INT, offsetof(track_priv, max_age), "30", 0, 100000,
      .help = "frames a track survives without a matching detection" },
    { "min-hits", REEL_PROP_INT, offsetof(track_priv, min_hits), "3", 1, 1000,
      .help = "detections a track needs (its first included) to get an id; until then they keep track id -1" },
    { "per-class", REEL_PROP_BOOL, offsetof(track_priv, per_class), "false",
      .help = "match detections only to tracks of their own class" },
    { NULL },
};

// ---- Kalman filter (SORT's noise settings) ----------------------------------

static const double meas_noise[DIM_Z] = { 1, 1, 10, 10 };
static const double proc_noise[DIM_X] = { 1, 1, 1, 1, 0.01, 0.01, 0.0001 };
// Velocities start unknown: a large variance lets the first matches set them.
static const double init_var[DIM_X] = { 10, 10, 10, 10, 10000, 10000, 10000 };

static void box_to_z(const reel_detection *d, double z[DIM_Z])
{
    double w = d->x1 - d->x0, h = d->y1 - d->y0;
    z[0] = d->x0 + w / 2;
    z[1] = d->y0 + h / 2;
    z[2] = w * h;
    z[3] = w / h;
}

// The state's box; false when it has degenerated (area or aspect <= 0).
static bool state_to_box(const double x[DIM_X], double box[4])
{
    if (!(x[2] > 0 && x[3] > 0))
        return false;
    double w = sqrt(x[2] * x[3]), h = x[2] / w;
    box[0] = x[0] - w / 2;
    box[1] = x[1] - h / 2;
    box[2] = x[0] + w / 2;
    box[3] = x[1] + h / 2;
    return isfinite(box[0]) && isfinite(box[1]) && isfinite(box[2]) && isfinite(box[3]);
}

static void kf_init(kalman *k, const double z[DIM_Z])
{
    memset(k, 0, sizeof *k);
    memcpy(k->x, z, sizeof(double) * DIM_Z);
    for (int i = 0; i < DIM_X; i++)
        k->P[i][i] = init_var[i];
}

// x = F x, P = F P F' + Q, with F adding each velocity to its position.
static void kf_predict(kalman *k)
{
    if (k->x[2] + k->x[6] <= 0) // the area would vanish: stop shrinking
        k->x[6] = 0;
    for (int i = 0; i < 3; i++)
        k->x[i] += k->x[i + 4];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < DIM_X; j++)
            k->P[i][j] += k->P[i + 4][j];
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < DIM_X; i++)
            k->P[i][j] += k->P[i][j + 4];
    for (int i = 0; i < DIM_X; i++)
        k->P[i][i] += proc_noise[i];
}

// Inverts a (symmetric positive definite) 4x4 matrix by Gauss-Jordan.
static void invert4(double a[DIM_Z][DIM_Z], double inv[DIM_Z][DIM_Z])
{
    for (int i = 0; i < DIM_Z; i++)
        for (int j = 0; j < DIM_Z; j++)
            inv[i][j] = i == j;
    for (int c = 0; c < DIM_Z; c++) {
        int p = c;
        for (int r = c + 1; r < DIM_Z; r++)
            if (fabs(a[r][c]) > fabs(a[p][c]))
                p = r;
        for (int j = 0; j < DIM_Z; j++) {
            double t = a[c][j];
            a[c][j] = a[p][j], a[p][j] = t;
            t = inv[c][j];
            inv[c][j] = inv[p][j], inv[p][j] = t;
        }
        double d = a[c][c];
        for (int j = 0; j < DIM_Z; j++)
            a[c][j] /= d, inv[c][j] /= d;
        for (int r = 0; r < DIM_Z; r++) {
            double f = a[r][c];
            for (int j = 0; r != c && j < DIM_Z; j++)
                a[r][j] -= f * a[c][j], inv[r][j] -= f * inv[c][j];
        }
    }
}

// The measurement picks the first four state entries (H = [I 0]), so
// H P is P's top rows and P H' its left columns.
static void kf_update(kalman *k, const double z[DIM_Z])
{
    double S[DIM_Z][DIM_Z], Si[DIM_Z][DIM_Z], K[DIM_X][DIM_Z], HP[DIM_Z][DIM_X], y[DIM_Z];
    for (int i = 0; i < DIM_Z; i++)
        for (int j = 0; j < DIM_Z; j++)
            S[i][j] = k->P[i][j] + (i == j ? meas_noise[i] : 0);
    invert4(S, Si);
    for (int i = 0; i < DIM_X; i++)
        for (int j = 0; j < DIM_Z; j++) {
            K[i][j] = 0;
            for (int m = 0; m < DIM_Z; m++)
                K[i][j] += k->P[i][m] * Si[m][j];
        }
    for (int i = 0; i < DIM_Z; i++)
        y[i] = z[i] - k->x[i];
    memcpy(HP, k->P, sizeof HP);
    for (int i = 0; i < DIM_X; i++) {
        for (int j = 0; j < DIM_Z; j++)
            k->x[i] += K[i][j] * y[j];
        for (int j = 0; j < DIM_X; j++)
            for (int m = 0; m < DIM_Z; m++)
                k->P[i][j] -= K[i][m] * HP[m][j];
    }
}

// ---- association ------------------------------------------------------------

static double iou(const double a[4], const reel_detection *d)
{
    double w = fmin(a[2], d->x1) - fmax(a[0], d->x0), h = fmin(a[3], d->y1) - fmax(a[1], d->y0);
    if (w <= 0 || h <= 0)
        return 0;
    double inter = w * h, uni = (a[2] - a[0]) * (a[3] - a[1]) + (double)(d->x1 - d->x0) * (d->y1 - d->y0) - inter;
    return uni > 0 ? inter / uni : 0;
}

// Minimum-cost assignment of each of `rows` rows to a distinct column
// (rows <= cols) by the Hungarian method in its shortest-augmenting-path
// form, O(rows^2 cols). cost is rows x cols, row-major; sets col_of[row].
static void hungarian(const double *cost, int rows, int cols, int *col_of)
{
    // 1-based, column 0 a virtual start: u, v are the dual potentials, p[j]
    // the row on column j, way[j] the previous column on the path.
    double *u = g_new0(double, rows + 1), *v = g_new0(double, cols + 1), *minv = g_new(double, cols + 1);
    int *p = g_new0(int, cols + 1), *way = g_new0(int, cols + 1);
    bool *used = g_new(bool, cols + 1);
    for (int i = 1; i <= rows; i++) {
        p[0] = i;
        int j0 = 0;
        for (int j = 0; j <= cols; j++)
            minv[j] = INFINITY, used[j] = false;
        do {
            used[j0] = true;
            int i0 = p[j0], j1 = 0;
            double delta = INFINITY;
            for (int j = 1; j <= cols; j++) {
                if (used[j])
                    continue;
                double cur = cost[(size_t)(i0 - 1) * cols + (j - 1)] - u[i0] - v[j];
                if (cur < minv[j])
                    minv[j] = cur, way[j] = j0;
                if (minv[j] < delta)
                    delta = minv[j], j1 = j;
            }
            for (int j = 0; j <= cols; j++) {
                if (used[j])
                    u[p[j]] += delta, v[j] -= delta;
                else
                    minv[j] -= delta;
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            int j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0);
    }
    for (int j = 1; j <= cols; j++)
        if (p[j])
            col_of[p[j] - 1] = j - 1;
    g_free(u), g_free(v), g_free(minv), g_free(p), g_free(way), g_free(used);
}

// Matches tracks to the detections listed in idx: track_of[k] is the track
// index for detection idx[k], or -1. Pairs under the IoU threshold (or of
// different classes with per-class) cost as much as no overlap, so the
// assignment maximizes the summed IoU of the pairs allowed; those it
// made anyway are then dropped.
static void associate(const track_priv *s, const GArray *tracks, const reel_detections *dets, const int *idx,
                      int n, int *track_of)
{
    int nt = (int)tracks->len;
    for (int k = 0; k < n; k++)
        track_of[k] = -1;
    if (nt == 0 || n == 0)
        return;
    // Rows are the smaller side, as hungarian() wants.
    bool by_track = nt <= n;
    int rows = by_track ? nt : n, cols = by_track ? n : nt;
    double *cost = g_new(double, (size_t)rows * cols), *score = g_new(double, (size_t)nt * n);
    for (int t = 0; t < nt; t++)
        for (int k = 0; k < n; k++) {
            const track *tr = &g_array_index(tracks, track, t);
            const reel_detection *d = &dets->items[idx[k]];
            double o = s->per_class && tr->class_id != d->class_id ? 0 : iou(tr->box, d);
            score[(size_t)t * n + k] = o >= s->iou ? o : 0;
            cost[by_track ? (size_t)t * n + k : (size_t)k * nt + t] = 1 - score[(size_t)t * n + k];
        }
    int *col_of = g_new(int, rows);
    hungarian(cost, rows, cols, col_of);
    for (int r = 0; r < rows; r++) {
        int t = by_track ? r : col_of[r], k = by_track ? col_of[r] : r;
        if (score[(size_t)t * n + k] > 0)
            track_of[k] = t;
    }
    g_free(cost), g_free(score), g_free(col_of);
}

// ---- per frame --------------------------------------------------------------

static void stream_free(gpointer data)
{
    stream_state *st = data;
    g_array_free(st->tracks, TRUE);
    g_free(st);
}

static stream_state *stream_of(track_priv *s, int stream_id)
{
    stream_state *st = g_hash_table_lookup(s->streams, GINT_TO_POINTER(stream_id));
    if (!st) {
        st = g_new0(stream_state, 1);
        st->tracks = g_array_new(FALSE, FALSE, sizeof(track));
        st->next_id = 1;
        g_hash_table_insert(s->streams, GINT_TO_POINTER(stream_id), st);
    }
    return st;
}

// Moves every track one frame ahead; drops those whose box degenerated.
static void predict_all(GArray *tracks)
{
    for (guint t = tracks->len; t-- > 0;) {
        track *tr = &g_array_index(tracks, track, t);
        kf_predict(&tr->kf);
        tr->misses++;
        if (!state_to_box(tr->kf.x, tr->box))
            g_array_remove_index(tracks, t);
    }
}

// Counts a match, confirming the track at its min-hits-th.
static void hit(const track_priv *s, stream_state *st, track *tr)
{
    tr->hits++;
    tr->misses = 0;
    if (!tr->id && tr->hits >= s->min_hits)
        tr->id = st->next_id++;
}

// One tracker step on a frame's detections (NULL: none); ids[i] gets
// detection i's track id, -1 for tentative tracks and degenerate boxes.
static void step(track_priv *s, stream_state *st, const reel_detections *dets, int64_t *ids)
{
    predict_all(st->tracks);
    int n = 0, nd = dets ? dets->n : 0;
    int *idx = g_new(int, nd + 1), *track_of = g_new(int, nd + 1);
    for (int i = 0; i < nd; i++) {
        const reel_detection *d = &dets->items[i];
        ids[i] = -1;
        // A box without area has no aspect: nothing to track.
        if (d->x1 > d->x0 && d->y1 > d->y0 && isfinite(d->x0) && isfinite(d->y0) && isfinite(d->x1)
            && isfinite(d->y1))
            idx[n++] = i;
    }
    associate(s, st->tracks, dets, idx, n, track_of);
    guint old = st->tracks->len;
    for (int k = 0; k < n; k++) {
        const reel_detection *d = &dets->items[idx[k]];
        double z[DIM_Z];
        box_to_z(d, z);
        track *tr;
        if (track_of[k] >= 0) {
            tr = &g_array_index(st->tracks, track, track_of[k]);
            kf_update(&tr->kf, z);
        } else {
            track fresh = { .class_id = d->class_id };
            kf_init(&fresh.kf, z);
            g_array_append_val(st->tracks, fresh);
            tr = &g_array_index(st->tracks, track, st->tracks->len - 1);
        }
        hit(s, st, tr);
        ids[idx[k]] = tr->id ? tr->id : -1;
    }
    // Tracks unmatched for longer than max-age end; new ones are all matched.
    for (guint t = old; t-- > 0;)
        if (g_array_index(st->tracks, track, t).misses > s->max_age)
            g_array_remove_index(st->tracks, t);
    g_free(idx), g_free(track_of);
}

// ---- the element --------------------------------------------------------------

static int start(reel_element *e)
{
    track_priv *s = reel_element_priv(e);
    s->streams = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, stream_free);
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    track_priv *s = reel_element_priv(e);
    const reel_detections *dets = reel_buffer_get_meta(buf, &reel_detections_meta);
    int n = dets ? dets->n : 0;
    // Frames without detections still age the tracks.
    int64_t *ids = g_new(int64_t, n + 1);
    step(s, stream_of(s, buf->stream_id), dets, ids);
    bool changed = false;
    for (int i = 0; i < n; i++)
        changed |= dets->items[i].track_id != ids[i];
    // The frame may be shared (a tee): its metadata then changes on a copy.
    int rc = changed ? reel_buffer_make_writable(&buf) : 0;
    if (rc < 0) {
        g_free(ids);
        reel_buffer_unref(&buf);
        return reel_element_error(e, rc, "cannot copy a shared frame to set its track ids: %s", reel_strerror(rc));
    }
    reel_detections *mine = changed ? reel_buffer_get_meta(buf, &reel_detections_meta) : NULL;
    for (int i = 0; mine && i < n; i++)
        mine->items[i].track_id = ids[i];
    g_free(ids);
    return reel_element_push(e, 0, buf);
}

static void stop(reel_element *e)
{
    track_priv *s = reel_element_priv(e);
    g_clear_pointer(&s->streams, g_hash_table_destroy);
}

const reel_element_class reel_track_class = {
    .name = "track",
    .description = "Tracks detections across frames (SORT: Kalman filter, Hungarian matching on IoU); sets track ids",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // reads and writes metadata only
    .priv_size = sizeof(track_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw", .output_caps = "video/raw",
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

// Instance masks (reel_masks): one allocation holding the masks and their
// run lengths, copied whole.
#include <string.h>

#include "reel/vision.h"

static size_t masks_size(int n, int n_runs)
{
    return sizeof(reel_masks) + (size_t)n * sizeof(reel_mask) + (size_t)n_runs * sizeof(uint32_t);
}

reel_masks *reel_masks_new(int n, int n_runs)
{
    reel_masks *m = g_malloc0(masks_size(n, n_runs));
    m->n = n;
    m->n_runs = n_runs;
    m->items = (reel_mask *)(m + 1);
    m->runs = (uint32_t *)(m->items + n);
    return m;
}

static void *masks_copy(const void *data)
{
    const reel_masks *m = data;
    reel_masks *c = reel_masks_new(m->n, m->n_runs);
    memcpy(c->items, m->items, (size_t)m->n * sizeof *m->items);
    memcpy(c->runs, m->runs, (size_t)m->n_runs * sizeof *m->runs);
    return c;
}

const reel_meta_type reel_masks_meta = { "masks", g_free, masks_copy };

const reel_mask *reel_masks_find(const reel_masks *m, int detection)
{
    for (int i = 0; m && i < m->n; i++)
        if (m->items[i].detection == detection)
            return &m->items[i];
    return NULL;
}

void reel_mask_decode(const reel_masks *m, const reel_mask *mask, uint8_t *out)
{
    size_t total = (size_t)mask->width * (size_t)mask->height, at = 0;
    memset(out, 0, total);
    const uint32_t *runs = m->runs + mask->first_run;
    for (int r = 0; r < mask->n_runs && at < total; r++) {
        size_t len = MIN((size_t)runs[r], total - at);
        if (r % 2) // odd runs are on
            memset(out + at, 1, len);
        at += len;
    }
}

// Batches of dispatches (reel_batch in include/reel/device.h): kept here with
// their push constants and references to their buffers, then handed to the
// backend in one call that records them into one submission. A recording
// keeps them, and the backend's command buffer, for submitting again.
#include <string.h>

#include "gpu/backend.h"

typedef struct batch_item {
    reel_kernel *k;
    reel_dispatch_params p;
    uint8_t push[REEL_KERNEL_MAX_PUSH];
} batch_item;

struct reel_batch {
    reel_device *dev;
    GArray *items; // batch_item
};

reel_batch *reel_batch_new(reel_device *dev)
{
    reel_batch *b = g_new0(reel_batch, 1);
    b->dev = reel_device_ref(dev);
    b->items = g_array_new(FALSE, FALSE, sizeof(batch_item));
    return b;
}

static void clear(reel_batch *b)
{
    for (guint i = 0; i < b->items->len; i++) {
        batch_item *it = &g_array_index(b->items, batch_item, i);
        for (int k = 0; k < REEL_KERNEL_MAX_BUFFERS; k++)
            reel_mem_unref(&it->p.buffers[k]);
    }
    g_array_set_size(b->items, 0);
}

void reel_batch_free(reel_batch **pb)
{
    reel_batch *b = *pb;
    *pb = NULL;
    if (!b)
        return;
    reel_batch_submit(b, NULL);
    clear(b);
    g_array_free(b->items, TRUE);
    reel_device_unref(&b->dev);
    g_free(b);
}

int reel_batch_dispatch(reel_batch *b, reel_kernel *k, const reel_dispatch_params *params)
{
    if (!b->dev->fns->dispatch_batch)
        return reel_kernel_dispatch(k, params, NULL);
    batch_item it = { .k = k };
    if (k->dev != b->dev || params->push_size > sizeof it.push || reel_kernel_check_(k, params, &it.p))
        return REEL_EINVAL;
    if (params->push_size)
        memcpy(it.push, params->push, params->push_size);
    for (int i = 0; i < REEL_KERNEL_MAX_BUFFERS; i++)
        if (it.p.buffers[i])
            reel_mem_ref(it.p.buffers[i]);
    g_array_append_val(b->items, it);
    // The item's push points into the array, which may move: set at submit.
    return 0;
}

int reel_batch_submit(reel_batch *b, uint64_t *point)
{
    if (point)
        *point = 0;
    int n = (int)b->items->len;
    if (n == 0)
        return 0;
    reel_kernel **ks = g_new(reel_kernel *, n);
    reel_dispatch_params *ps = g_new(reel_dispatch_params, n);
    for (int i = 0; i < n; i++) {
        batch_item *it = &g_array_index(b->items, batch_item, i);
        ks[i] = it->k;
        ps[i] = it->p;
        ps[i].push = it->p.push_size ? it->push : NULL;
    }
    uint64_t pt = 0;
    int err = b->dev->fns->dispatch_batch(b->dev, ks, ps, n, &pt);
    if (!err) {
        for (int i = 0; i < n; i++)
            atomic_store(&ks[i]->last, pt);
        atomic_fetch_add(&b->dev->stats.dispatches, n);
    }
    g_free(ks);
    g_free(ps);
    clear(b);
    if (point)
        *point = pt;
    return err;
}

int reel_batch_size(const reel_batch *b)
{
    return (int)b->items->len;
}

struct reel_recording {
    reel_device *dev;
    int n;
    reel_kernel **k;
    reel_dispatch_params *p; // buffers referenced; push into the items below
    batch_item *items;
    void *rec;               // the backend's recording, or NULL: replayed by dispatch_batch
};

reel_recording *reel_batch_record(reel_batch *b, GError **error)
{
    int n = (int)b->items->len;
    if (n == 0) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "recording on %s: no dispatches to record", b->dev->info.spec);
        return NULL;
    }
    reel_recording *r = g_new0(reel_recording, 1);
    r->dev = reel_device_ref(b->dev);
    r->n = n;
    r->items = g_memdup2(b->items->data, sizeof(batch_item) * (size_t)n);
    g_array_set_size(b->items, 0); // their buffer references are the recording's now
    r->k = g_new(reel_kernel *, n);
    r->p = g_new(reel_dispatch_params, n);
    for (int i = 0; i < n; i++) {
        r->k[i] = r->items[i].k;
        r->p[i] = r->items[i].p;
        r->p[i].push = r->p[i].push_size ? r->items[i].push : NULL;
    }
    const reel_device_fns *fns = r->dev->fns;
    int err = fns->record_batch ? fns->record_batch(r->dev, r->k, r->p, n, &r->rec) : 0;
    if (err < 0) {
        g_set_error(error, REEL_ERROR, err, "recording %d dispatches on %s: %s", n, r->dev->info.spec,
                    reel_strerror(err));
        reel_recording_free(&r);
    }
    return r;
}

int reel_recording_submit(reel_recording *r, uint64_t *point)
{
    const reel_device_fns *fns = r->dev->fns;
    uint64_t pt = 0;
    int err = r->rec ? fns->submit_recorded(r->dev, r->rec, r->k, r->p, r->n, &pt)
                     : fns->dispatch_batch(r->dev, r->k, r->p, r->n, &pt);
    if (!err) {
        for (int i = 0; i < r->n; i++)
            atomic_store(&r->k[i]->last, pt);
        atomic_fetch_add(&r->dev->stats.dispatches, r->n);
    }
    if (point)
        *point = err ? 0 : pt;
    return err;
}

int reel_recording_dispatches(const reel_recording *r)
{
    return r->n;
}

void reel_recording_free(reel_recording **pr)
{
    reel_recording *r = *pr;
    *pr = NULL;
    if (!r)
        return;
    if (r->rec)
        r->dev->fns->free_recorded(r->dev, r->rec);
    for (int i = 0; i < r->n; i++)
        for (int k = 0; k < REEL_KERNEL_MAX_BUFFERS; k++)
            reel_mem_unref(&r->items[i].p.buffers[k]);
    g_free(r->items);
    g_free(r->k);
    g_free(r->p);
    reel_device_unref(&r->dev);
    g_free(r);
}

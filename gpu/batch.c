// Batches of dispatches (reel_batch in include/reel/device.h): kept here with
// their push constants and references to their buffers, then handed to the
// backend in one call that records them into one submission.
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

// Memory: pools keyed by size and domain, the budget, map, transfers and
// their byte counts. Backends only allocate, free and stage.
#include <string.h>

#include "gpu/backend.h"

const char *reel_mem_domain_name(reel_mem_domain d)
{
    static const char *const names[REEL_MEM_DOMAIN_COUNT] = { "host", "device", "device-mapped" };
    return (unsigned)d < REEL_MEM_DOMAIN_COUNT ? names[d] : "?";
}

static char *pool_key(size_t size, reel_mem_domain domain, bool exportable)
{
    return g_strdup_printf("%zu:%d%s", size, (int)domain, exportable ? ":export" : "");
}

static void mem_release(reel_device *dev, reel_mem *m)
{
    // Memory is freed only once its last use on the device is over.
    uint64_t busy = atomic_load(&m->busy);
    if (busy)
        dev->fns->wait(dev, busy);
    if (m->attachment_destroy)
        m->attachment_destroy(m->attachment);
    dev->fns->mem_free(dev, m);
    atomic_fetch_add(&dev->stats.frees, 1);
    atomic_fetch_sub(&dev->stats.bytes_held, (int64_t)m->size);
    g_free(m);
}

// Frees every idle pooled mem. Called with dev->lock held, or by the last
// unref of dev.
static void pool_trim(reel_device *dev)
{
    GHashTableIter it;
    gpointer q;
    g_hash_table_iter_init(&it, dev->pool);
    while (g_hash_table_iter_next(&it, NULL, &q)) {
        reel_mem *m;
        while ((m = g_queue_pop_head(q)))
            mem_release(dev, m);
    }
}

void reel_mem_pool_drain_(reel_device *dev)
{
    pool_trim(dev);
}

// Reserves size bytes under the budget, trimming the pool when that makes
// room. Called with dev->lock held.
static int reserve(reel_device *dev, size_t size, reel_mem_domain domain, GError **error)
{
    if (!dev->budget)
        goto ok;
    if ((uint64_t)atomic_load(&dev->stats.bytes_held) + size > dev->budget)
        pool_trim(dev);
    uint64_t held = (uint64_t)atomic_load(&dev->stats.bytes_held);
    if (held + size > dev->budget) {
        g_set_error(error, REEL_ERROR, REEL_ENOMEM_DEVICE,
                    "device memory budget exceeded on %s (%s): %zu bytes of %s memory requested, "
                    "%" G_GUINT64_FORMAT " of the budget's %" G_GUINT64_FORMAT " bytes already held",
                    dev->info.spec, dev->info.name, size, reel_mem_domain_name(domain), held,
                    dev->budget);
        return REEL_ENOMEM_DEVICE;
    }
ok:
    atomic_fetch_add(&dev->stats.bytes_held, (int64_t)size);
    return 0;
}

reel_mem *reel_mem_new(reel_device *dev, const reel_mem_params *params, GError **error)
{
    if (!params || params->size == 0 || (unsigned)params->domain >= REEL_MEM_DOMAIN_COUNT) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "memory: size must be > 0 and the domain valid");
        return NULL;
    }
    // The cpu device has one kind of memory; say so instead of pretending.
    reel_mem_domain domain = dev->info.backend == REEL_BACKEND_CPU ? REEL_MEM_HOST : params->domain;
    reel_mem *m = NULL;

    g_mutex_lock(&dev->lock);
    if (!params->no_pool) {
        g_autofree char *key = pool_key(params->size, domain, params->exportable);
        GQueue *q = g_hash_table_lookup(dev->pool, key);
        m = q ? g_queue_pop_head(q) : NULL;
    }
    if (m) {
        atomic_fetch_add(&dev->stats.pool_hits, 1);
        g_mutex_unlock(&dev->lock);
        goto done;
    }
    int err = reserve(dev, params->size, domain, error);
    g_mutex_unlock(&dev->lock);
    if (err)
        return NULL;

    m = g_new0(reel_mem, 1);
    m->dev = dev;
    m->size = params->size;
    m->domain = domain;
    m->no_pool = params->no_pool;
    m->exportable = params->exportable;
    if ((err = dev->fns->mem_alloc(dev, m, error)) < 0) {
        atomic_fetch_sub(&dev->stats.bytes_held, (int64_t)m->size);
        g_free(m);
        return NULL;
    }
    atomic_fetch_add(&dev->stats.allocations, 1);
done:
    atomic_init(&m->refs, 1);
    m->dev = reel_device_ref(dev);
    return m;
}

reel_mem *reel_mem_new_view(reel_mem *parent, size_t offset, size_t size, GError **error)
{
    if (!parent || size == 0 || offset % REEL_MEM_VIEW_ALIGN || offset > parent->size ||
        size > parent->size - offset) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "memory view: %zu bytes at %zu do not fit in %zu bytes, or the "
                    "offset is not a multiple of %d", size, offset, parent ? parent->size : 0, REEL_MEM_VIEW_ALIGN);
        return NULL;
    }
    reel_mem *root = reel_mem_root_(parent);
    reel_mem *m = g_new0(reel_mem, 1);
    m->dev = reel_device_ref(parent->dev);
    m->size = size;
    m->domain = parent->domain;
    m->no_pool = true;
    atomic_init(&m->refs, 1);
    m->offset = parent->offset + offset;
    m->parent = reel_mem_ref(root);
    m->priv = root->priv;
    m->host = root->host ? (char *)root->host + m->offset : NULL;
    return m;
}

reel_mem *reel_mem_ref(reel_mem *m)
{
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

void reel_mem_unref(reel_mem **pm)
{
    reel_mem *m = *pm;
    *pm = NULL;
    if (!m || atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1)
        return;
    reel_device *dev = m->dev;
    if (m->parent) { // a view: its bytes are the parent's
        reel_mem_unref(&m->parent);
        g_free(m);
        reel_device_unref(&dev);
        return;
    }
    g_mutex_lock(&dev->lock);
    bool pooled = !m->no_pool && (!dev->budget || (uint64_t)atomic_load(&dev->stats.bytes_held) <= dev->budget);
    if (pooled) {
        // Pooled even while the GPU still uses it: whoever takes it next
        // waits for its busy point before touching it.
        char *key = pool_key(m->size, m->domain, m->exportable);
        GQueue *q = g_hash_table_lookup(dev->pool, key);
        if (!q)
            g_hash_table_insert(dev->pool, key, q = g_queue_new());
        else
            g_free(key);
        g_queue_push_tail(q, m);
    }
    g_mutex_unlock(&dev->lock);
    if (!pooled)
        mem_release(dev, m);
    // Last: this may be the device's last reference, which drains the pool.
    reel_device_unref(&dev);
}

size_t reel_mem_size(const reel_mem *m)
{
    return m->size;
}

reel_mem_domain reel_mem_domain_of(const reel_mem *m)
{
    return m->domain;
}

reel_device *reel_mem_device(const reel_mem *m)
{
    return m->dev;
}

uint64_t reel_mem_ready_point(const reel_mem *m)
{
    return atomic_load(&(m->parent ? m->parent : m)->ready);
}

int reel_mem_wait_idle(reel_mem *m)
{
    uint64_t busy = atomic_load(&reel_mem_root_(m)->busy);
    return busy ? reel_device_wait(m->dev, busy) : 0;
}

bool reel_mem_exportable(const reel_mem *m)
{
    return !m->parent && m->exportable;
}

int reel_mem_export_fd(reel_mem *m, reel_mem_export *out, GError **error)
{
    if (m->parent || !m->exportable) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "memory export: %s",
                    m->parent ? "a view cannot be exported, only its parent" : "the memory was not made exportable");
        return REEL_EINVAL;
    }
    if (!m->dev->fns->export_fd) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s (%s) cannot export memory", m->dev->info.spec,
                    m->dev->info.name);
        return REEL_EUNSUPPORTED;
    }
    return m->dev->fns->export_fd(m, out, error);
}

void reel_mem_set_attachment(reel_mem *m, void *data, void (*destroy)(void *data))
{
    g_return_if_fail(!m->parent);
    if (m->attachment_destroy)
        m->attachment_destroy(m->attachment);
    m->attachment = data;
    m->attachment_destroy = destroy;
}

void *reel_mem_attachment(const reel_mem *m)
{
    return m->attachment;
}

int reel_mem_map(reel_mem *m, unsigned flags, void **ptr)
{
    if (!m->host || !(flags & (REEL_MAP_READ | REEL_MAP_WRITE)))
        return REEL_EUNSUPPORTED;
    // Reading needs the last write done; writing needs every use done.
    reel_mem *root = reel_mem_root_(m);
    uint64_t point = atomic_load(flags & REEL_MAP_WRITE ? &root->busy : &root->ready);
    int err = point ? reel_device_wait(m->dev, point) : 0;
    if (err)
        return err;
    *ptr = m->host;
    return 0;
}

void reel_mem_unmap(reel_mem *m)
{
    // Mappings are persistent and coherent; nothing to flush.
    (void)m;
}

static void count(reel_mem *m, size_t size, bool to_device, reel_xfer *acc)
{
    if (m->domain == REEL_MEM_HOST)
        return;
    atomic_fetch_add(to_device ? &m->dev->stats.to_device : &m->dev->stats.to_host, (int64_t)size);
    if (acc)
        *(to_device ? &acc->to_device : &acc->to_host) += (int64_t)size;
}

int reel_mem_upload(reel_mem *m, size_t offset, const void *src, size_t size, reel_xfer *acc)
{
    if (offset > m->size || size > m->size - offset || (size && !src))
        return REEL_EINVAL;
    if (!size)
        return 0;
    int err;
    if (m->host) {
        void *p;
        if ((err = reel_mem_map(m, REEL_MAP_WRITE, &p)))
            return err;
        memcpy((char *)p + offset, src, size);
        reel_mem_unmap(m);
    } else if ((err = m->dev->fns->upload(m, offset, src, size))) {
        return err;
    }
    count(m, size, true, acc);
    return 0;
}

int reel_mem_copy(reel_mem *dst, size_t dst_offset, reel_mem *src, size_t src_offset, size_t size)
{
    if (dst->dev != src->dev || reel_mem_root_(dst) == reel_mem_root_(src) || dst_offset > dst->size
        || size > dst->size - dst_offset || src_offset > src->size || size > src->size - src_offset)
        return REEL_EINVAL;
    if (!size)
        return 0;
    if (dst->dev->fns->copy)
        return dst->dev->fns->copy(dst, dst_offset, src, src_offset, size);
    // Memory the host sees (the cpu device); mapping waits as a reader and
    // a writer of them would.
    void *from, *to;
    int err = reel_mem_map(src, REEL_MAP_READ, &from);
    if (err)
        return err;
    if (!(err = reel_mem_map(dst, REEL_MAP_WRITE, &to))) {
        memcpy((char *)to + dst_offset, (const char *)from + src_offset, size);
        reel_mem_unmap(dst);
    }
    reel_mem_unmap(src);
    return err;
}

int reel_mem_download(reel_mem *m, size_t offset, void *dst, size_t size, reel_xfer *acc)
{
    if (offset > m->size || size > m->size - offset || (size && !dst))
        return REEL_EINVAL;
    if (!size)
        return 0;
    int err;
    if (m->host) {
        void *p;
        if ((err = reel_mem_map(m, REEL_MAP_READ, &p)))
            return err;
        memcpy(dst, (char *)p + offset, size);
        reel_mem_unmap(m);
    } else if ((err = m->dev->fns->download(m, offset, dst, size))) {
        return err;
    }
    count(m, size, false, acc);
    return 0;
}

// Placement: which device each element runs on, and the transfers between
// them. The request is a contract: an element runs where it was asked, or
// the report says why not -- and with strict placement that is an error,
// except for elements that handle only encoded packets (a demuxer, a
// muxer), which run on the host where the packets are.
// Where two linked elements sit in different memory, an upload or download
// is inserted and reported; strict placement refuses that too.
#include <string.h>

#include "pipeline/internal.h"
#include "reel/error.h"

// The pipeline's open devices, one per spec, so that every element on
// "vulkan:0" shares one device (and its memory budget).
static reel_device *open_device(reel_pipeline *p, const char *spec, GError **error)
{
    if (!p->devices)
        p->devices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)reel_device_unref_);
    reel_device *dev = g_hash_table_lookup(p->devices, spec);
    if (dev)
        return dev;
    if (!(dev = reel_device_open(spec, error)))
        return NULL;
    if (p->memory_budget)
        reel_device_set_budget(dev, p->memory_budget);
    g_hash_table_insert(p->devices, g_strdup(spec), dev);
    return dev;
}

static unsigned runs_on(const reel_element_class *k)
{
    return k->devices ? k->devices : REEL_RUNS_ON_CPU;
}

static bool is_cpu(const reel_device *dev)
{
    return reel_device_info_of(dev)->backend == REEL_BACKEND_CPU;
}

static bool template_is_packets(const char *text)
{
    reel_caps c;
    return text && reel_caps_parse(text, &c, NULL, NULL) && c.media == REEL_MEDIA_VIDEO_ENCODED;
}

// Whether the class handles only encoded packets (a demuxer, a muxer): every
// pad it has says video/encoded. Packets live in host memory whatever the
// device, so such an element on the host breaks no placement, strict or
// not: frames and tensors never pass through it.
static bool packets_only(const reel_element_class *k)
{
    bool in = k->max_inputs != 0, out = k->max_outputs != 0;
    return (in || out) && (!in || template_is_packets(k->input_caps)) && (!out || template_is_packets(k->output_caps));
}

static int place_element(reel_pipeline *p, reel_element *e, GError **error)
{
    const char *want = e->device_request ? e->device_request : p->device;
    reel_device *dev = open_device(p, want, error);
    if (!dev)
        return REEL_EINVAL;
    const reel_device_info *info = reel_device_info_of(dev);
    g_clear_pointer(&e->device, g_free);
    g_clear_pointer(&e->placement_reason, g_free);
    if (runs_on(e->klass) & (is_cpu(dev) ? REEL_RUNS_ON_CPU : REEL_RUNS_ON_VULKAN)) {
        e->dev = dev;
        e->device = g_strdup(info->spec);
        return 0;
    }
    bool packets = packets_only(e->klass);
    if (p->strict_placement && !packets) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                    "placement=strict: '%s' cannot run on %s (%s): %s has no implementation there", e->name, want,
                    info->name, e->klass->name);
        return REEL_EUNSUPPORTED;
    }
    if (!(e->dev = open_device(p, "cpu", error)))
        return REEL_EINVAL;
    e->device = g_strdup("cpu");
    e->placement_reason =
        packets ? g_strdup_printf("host (packets only): %s handles encoded packets, which stay in host memory; no "
                                  "frame or tensor passes through it", e->klass->name)
                : g_strdup_printf("%s has no implementation for %s; it runs on the cpu", e->klass->name, info->spec);
    return 0;
}

// The memory an element reads (input side) or writes: what its template
// says, else its device's. A template that names both (memory=host|device:
// encode, which reads device frames on the GPU or downloads them itself)
// takes either, so no transfer goes before it.
static unsigned side_memory(const reel_element *e, bool output)
{
    const char *text = output ? e->klass->output_caps : e->klass->input_caps;
    reel_caps c;
    if (text && reel_caps_parse(text, &c, NULL, NULL) && (c.memory != REEL_MEMORY_ANY || strstr(text, "memory=")))
        return c.memory;
    return e->dev && !is_cpu(e->dev) ? REEL_MEMORY_DEVICE : REEL_MEMORY_HOST;
}

unsigned reel_element_memory(const reel_element *e, bool output)
{
    return side_memory(e, output);
}

// Puts a new element of class `klass` on link l: src -> t -> dst; the new
// link joins `links`.
static int insert_on_link(reel_pipeline *p, GPtrArray *links, reel_link *l, const reel_element_class *k,
                          reel_device *dev, GError **error)
{
    reel_element *t = reel_element_new(k, NULL, error);
    if (!t)
        return REEL_EINTERNAL;
    int rc = reel_pipeline_add(p, t, error);
    if (rc < 0)
        return rc;
    t->inserted = true;
    t->dev = dev;
    t->device = g_strdup(reel_device_info_of(dev)->spec);
    t->device_request = g_strdup(t->device);
    t->placement_reason = g_strdup_printf("inserted: '%s' on %s feeds '%s' on %s", l->src->name, l->src->device,
                                          l->dst->name, l->dst->device);

    reel_link *out = reel_link_new(t, l->dst, p->params.queue_size);
    out->dst_pad = l->dst_pad;
    if (l->dst_pad >= 0) // else a new input of a running element, joined later (dynamic.c)
        l->dst->inputs->pdata[l->dst_pad] = out;
    l->dst = t;
    l->dst_pad = 0;
    g_ptr_array_add(t->inputs, l);
    g_ptr_array_add(t->outputs, out);
    g_ptr_array_add(links, out);
    return 0;
}

static int insert_transfers(reel_pipeline *p, GPtrArray *links, GError **error)
{
    guint n = links->len; // links added below need no transfer
    for (guint i = 0; i < n; i++) {
        reel_link *l = links->pdata[i];
        unsigned from = side_memory(l->src, true), to = side_memory(l->dst, false);
        if (from & to)
            continue;
        bool up = to == REEL_MEMORY_DEVICE;
        if (p->strict_placement) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                        "placement=strict: '%s' (%s) and '%s' (%s) are in different memory: linking them needs "
                        "an implicit %s",
                        l->src->name, l->src->device, l->dst->name, l->dst->device, up ? "upload" : "download");
            return REEL_EUNSUPPORTED;
        }
        int rc = insert_on_link(p, links, l, up ? &reel_upload_class : &reel_download_class,
                                up ? l->dst->dev : l->src->dev, error);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int reel_place_some(reel_pipeline *p, reel_element *const *els, guint n, GPtrArray *links, GError **error)
{
    for (guint i = 0; i < n; i++) {
        int rc = place_element(p, els[i], error);
        if (rc < 0)
            return rc;
    }
    return insert_transfers(p, links, error);
}

int reel_place(reel_pipeline *p, GError **error)
{
    // Inserted elements join p->elements: place what was there before.
    guint n = p->elements->len - 1;
    reel_element **els = g_memdup2(p->elements->pdata, n * sizeof *els);
    int rc = reel_place_some(p, els, n, p->links, error);
    g_free(els);
    return rc;
}

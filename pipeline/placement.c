// Placement: which device each element runs on. The request is a contract:
// an element runs where it was asked, or the report says why not -- and
// with strict placement that is an error instead.
#include <string.h>

#include "pipeline/internal.h"
#include "reel/error.h"

// What a device spec needs of an element class. Anything but "cpu" names a
// GPU device, which the Vulkan backend serves.
static unsigned needs(const char *spec)
{
    return strcmp(spec, "cpu") == 0 ? REEL_RUNS_ON_CPU : REEL_RUNS_ON_VULKAN;
}

static unsigned runs_on(const reel_element_class *k)
{
    return k->devices ? k->devices : REEL_RUNS_ON_CPU;
}

int reel_place(reel_pipeline *p, GError **error)
{
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        reel_element *e = p->elements->pdata[i];
        const char *want = e->device_request ? e->device_request : p->device;
        g_clear_pointer(&e->device, g_free);
        g_clear_pointer(&e->placement_reason, g_free);
        if (runs_on(e->klass) & needs(want)) {
            e->device = g_strdup(want);
            continue;
        }
        char *why = g_strdup_printf("%s has no implementation for %s; it runs on the cpu", e->klass->name, want);
        if (p->strict_placement) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                        "placement=strict: '%s' cannot run on %s: %s has no implementation there", e->name, want,
                        e->klass->name);
            g_free(why);
            return REEL_EUNSUPPORTED;
        }
        e->device = g_strdup("cpu");
        e->placement_reason = why;
    }
    return 0;
}

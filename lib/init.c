// reel_init: the built-in element classes, and the modules behind the
// registry (lib/modules.c).
#include <stdlib.h>
#include <string.h>

#include "lib/modules.h"
#include "models/cpu/blas.h"
#include "pipeline/registry.h"
#include "reel/reel.h"

extern const reel_element_class reel_appsink_class;
extern const reel_element_class reel_appsrc_class;
extern const reel_element_class reel_batch_class;
extern const reel_element_class reel_classify_class;
extern const reel_element_class reel_detect_class;
extern const reel_element_class reel_fakesink_class;
extern const reel_element_class reel_funnel_class;
extern const reel_element_class reel_identity_class;
extern const reel_element_class reel_infer_class;
extern const reel_element_class reel_metasink_class;
extern const reel_element_class reel_ocr_class;
extern const reel_element_class reel_overlay_class;
extern const reel_element_class reel_preprocess_class;
extern const reel_element_class reel_queue_class;
extern const reel_element_class reel_rate_class;
extern const reel_element_class reel_tee_class;
extern const reel_element_class reel_testsrc_class;
extern const reel_element_class reel_track_class;
extern const reel_element_class reel_zones_class;
extern const reel_element_class reel_unbatch_class;

static const reel_element_class *const builtin[] = {
    &reel_appsink_class, &reel_appsrc_class,  &reel_batch_class,   &reel_classify_class,   &reel_detect_class,
    &reel_fakesink_class, &reel_funnel_class, &reel_identity_class, &reel_infer_class,     &reel_metasink_class,
    &reel_ocr_class,     &reel_overlay_class, &reel_preprocess_class, &reel_queue_class,   &reel_rate_class,
    &reel_tee_class,     &reel_testsrc_class, &reel_track_class,   &reel_unbatch_class,    &reel_zones_class,
};

// The first reel_init_with()'s parameters, for the modules loaded later.
static reel_init_params params;

static void load(const char *name)
{
    const reel_module_info *m = reel_module_of(name);
    if (m && m->built)
        reel_module_load(m, &params, NULL);
}

static void load_all(void)
{
    for (int i = 0; reel_modules[i]; i++)
        if (reel_modules[i]->built)
            reel_module_load(reel_modules[i], &params, NULL);
}

static char *why_missing(const char *name)
{
    const reel_module_info *m = reel_module_of(name);
    if (!m)
        return NULL;
    if (!m->built)
        return g_strdup_printf("'%s' needs %s, which this build of reel leaves out (-D%s=OFF)", name, m->needs,
                               m->option);
    GError *error = NULL;
    if (reel_module_load(m, &params, &error) == 0)
        return NULL;
    char *why = g_strdup(error->message);
    g_error_free(error);
    return why;
}

static const reel_registry_loader loader = { load, load_all, why_missing };

static gpointer init_once(gpointer data)
{
    const reel_init_params *p = data;
    if (p) {
        params = *p;
        params.ffmpeg_log = g_strdup(p->ffmpeg_log);
    }
    reel_blas_configure(params.blas_threads);
    for (size_t i = 0; i < G_N_ELEMENTS(builtin); i++)
        reel_element_class_register(builtin[i]);
    reel_registry_set_loader(&loader);
    return NULL;
}

void reel_init_with(const reel_init_params *p)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, init_once, (gpointer)p);
}

void reel_init(void)
{
    reel_init_with(NULL);
}

char *reel_element_class_why_missing(const char *name)
{
    return reel_element_class_find(name) ? NULL : why_missing(name);
}

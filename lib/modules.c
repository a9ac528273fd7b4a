// Which elements live in which module.
#include "lib/modules.h"

#include <string.h>

static const char *const media_elements[] = { "convert", "decode", "encode", "preview", "record", "sink", "source",
                                                NULL };
static const char *const nats_elements[] = { "natssink", NULL };
static const char *const mqtt_elements[] = { "mqttsink", NULL };

#ifndef REEL_WITH_NATS
#define REEL_WITH_NATS 0
#endif
#ifndef REEL_WITH_MQTT
#define REEL_WITH_MQTT 0
#endif

static const reel_module_info media = { "media", media_elements, "FFmpeg", NULL, true };
static const reel_module_info nats = { "nats", nats_elements, "libnats", "REEL_WITH_NATS", REEL_WITH_NATS };
static const reel_module_info mqtt = { "mqtt", mqtt_elements, "libmosquitto", "REEL_WITH_MQTT", REEL_WITH_MQTT };

const reel_module_info *const reel_modules[] = { &media, &nats, &mqtt, NULL };

const reel_module_info *reel_module_of(const char *element)
{
    for (int i = 0; reel_modules[i]; i++)
        for (const char *const *e = reel_modules[i]->elements; *e; e++)
            if (strcmp(*e, element) == 0)
                return reel_modules[i];
    return NULL;
}

int reel_module_load(const reel_module_info *m, const reel_init_params *params, GError **error)
{
    static GMutex lock;
    static GHashTable *tried; // module name -> NULL (loaded) or the GError it failed with
    if (!m->built) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "reel was built without its %s module (-D%s=OFF)", m->name,
                    m->option);
        return REEL_EUNSUPPORTED;
    }
    g_mutex_lock(&lock);
    if (!tried)
        tried = g_hash_table_new(g_str_hash, g_str_equal);
    gpointer failure = NULL;
    if (!g_hash_table_lookup_extended(tried, m->name, NULL, &failure)) {
        GError *err = NULL;
        reel_module_register_fn fn = reel_module_entry(m, &err);
        int rc = fn ? fn(params) : REEL_EIO;
        if (fn && rc < 0)
            g_set_error(&err, REEL_ERROR, rc, "reel's %s module failed to register: %s", m->name, reel_strerror(rc));
        failure = err;
        g_hash_table_insert(tried, (gpointer)m->name, failure);
    }
    g_mutex_unlock(&lock);
    if (!failure)
        return 0;
    if (error)
        *error = g_error_copy(failure);
    return ((GError *)failure)->code;
}

// Modules for libreel.a: linked in, nothing to open.
#include <string.h>

#include "lib/modules.h"

int reel_module_media_register(const reel_init_params *params);
#if REEL_WITH_NATS
int reel_module_nats_register(const reel_init_params *params);
#endif
#if REEL_WITH_MQTT
int reel_module_mqtt_register(const reel_init_params *params);
#endif

const char *reel_module_dir(void)
{
    const char *env = g_getenv("REEL_MODULE_DIR");
    return env && *env ? env : REEL_MODULE_INSTALL_PATH;
}

reel_module_register_fn reel_module_entry(const reel_module_info *m, GError **error)
{
    if (strcmp(m->name, "media") == 0)
        return reel_module_media_register;
#if REEL_WITH_NATS
    if (strcmp(m->name, "nats") == 0)
        return reel_module_nats_register;
#endif
#if REEL_WITH_MQTT
    if (strcmp(m->name, "mqtt") == 0)
        return reel_module_mqtt_register;
#endif
    g_set_error(error, REEL_ERROR, REEL_EINTERNAL, "no %s module linked in", m->name);
    return NULL;
}

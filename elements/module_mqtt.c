// The mqtt module: mqttsink, on libmosquitto.
#include "reel/reel.h"

extern const reel_element_class reel_mqttsink_class;

REEL_API int reel_module_mqtt_register(const reel_init_params *params)
{
    (void)params;
    return reel_element_class_register(&reel_mqttsink_class);
}

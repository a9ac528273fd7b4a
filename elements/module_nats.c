// The nats module: natssink, on libnats.
#include "reel/reel.h"

extern const reel_element_class reel_natssink_class;

REEL_API int reel_module_nats_register(const reel_init_params *params)
{
    (void)params;
    return reel_element_class_register(&reel_natssink_class);
}

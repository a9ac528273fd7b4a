// The built-in element classes.
#include "reel/reel.h"

extern const reel_element_class reel_capsfilter_class;
extern const reel_element_class reel_fakesink_class;
extern const reel_element_class reel_identity_class;
extern const reel_element_class reel_queue_class;
extern const reel_element_class reel_tee_class;
extern const reel_element_class reel_testsrc_class;

static const reel_element_class *const builtin[] = {
    &reel_capsfilter_class, &reel_fakesink_class, &reel_identity_class,
    &reel_queue_class,      &reel_tee_class,      &reel_testsrc_class,
};

static gpointer register_all(gpointer unused)
{
    (void)unused;
    for (size_t i = 0; i < G_N_ELEMENTS(builtin); i++)
        reel_element_class_register(builtin[i]);
    return NULL;
}

void reel_init(void)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, register_all, NULL);
}

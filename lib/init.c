// The built-in element classes.
#include <libavutil/log.h>
#include <stdlib.h>
#include <string.h>

#include "reel/reel.h"

extern const reel_element_class reel_appsink_class;
extern const reel_element_class reel_appsrc_class;
extern const reel_element_class reel_batch_class;
extern const reel_element_class reel_classify_class;
extern const reel_element_class reel_convert_class;
extern const reel_element_class reel_decode_class;
extern const reel_element_class reel_detect_class;
extern const reel_element_class reel_encode_class;
extern const reel_element_class reel_fakesink_class;
extern const reel_element_class reel_funnel_class;
extern const reel_element_class reel_identity_class;
extern const reel_element_class reel_infer_class;
extern const reel_element_class reel_metasink_class;
extern const reel_element_class reel_mqttsink_class;
extern const reel_element_class reel_natssink_class;
extern const reel_element_class reel_overlay_class;
extern const reel_element_class reel_preprocess_class;
extern const reel_element_class reel_queue_class;
extern const reel_element_class reel_rate_class;
extern const reel_element_class reel_sink_class;
extern const reel_element_class reel_source_class;
extern const reel_element_class reel_tee_class;
extern const reel_element_class reel_testsrc_class;
extern const reel_element_class reel_track_class;
extern const reel_element_class reel_unbatch_class;

static const reel_element_class *const builtin[] = {
    &reel_appsink_class,    &reel_appsrc_class,
    &reel_convert_class, &reel_decode_class, &reel_encode_class,
    &reel_fakesink_class,   &reel_funnel_class,  &reel_identity_class, &reel_infer_class, &reel_overlay_class,
    &reel_metasink_class,   &reel_preprocess_class, &reel_queue_class,
    &reel_sink_class,       &reel_source_class,  &reel_tee_class,      &reel_testsrc_class, &reel_track_class,
        &reel_classify_class, &reel_detect_class,
    &reel_batch_class,      &reel_unbatch_class,  &reel_rate_class,
    &reel_natssink_class,   &reel_mqttsink_class,
};

// FFmpeg logs to stderr on its own; reel reports failures through its
// errors and warnings instead, so FFmpeg stays quiet unless asked:
// REEL_FFMPEG_LOG=error|warning|info|debug.
static void quiet_ffmpeg(void)
{
    static const struct {
        const char *name;
        int level;
    } levels[] = { { "error", AV_LOG_ERROR }, { "warning", AV_LOG_WARNING },
                   { "info", AV_LOG_INFO },   { "debug", AV_LOG_DEBUG } };
    const char *want = getenv("REEL_FFMPEG_LOG");
    int level = AV_LOG_FATAL;
    for (size_t i = 0; want && i < G_N_ELEMENTS(levels); i++)
        if (strcmp(want, levels[i].name) == 0)
            level = levels[i].level;
    av_log_set_level(level);
}

static gpointer register_all(gpointer unused)
{
    (void)unused;
    quiet_ffmpeg();
    for (size_t i = 0; i < G_N_ELEMENTS(builtin); i++)
        reel_element_class_register(builtin[i]);
    return NULL;
}

void reel_init(void)
{
    static GOnce once = G_ONCE_INIT;
    g_once(&once, register_all, NULL);
}

// The media module: the elements built on FFmpeg.
#include <libavutil/log.h>
#include <string.h>

#include "reel/reel.h"

extern const reel_element_class reel_convert_class;
extern const reel_element_class reel_decode_class;
extern const reel_element_class reel_encode_class;
extern const reel_element_class reel_preview_class;
extern const reel_element_class reel_record_class;
extern const reel_element_class reel_sink_class;
extern const reel_element_class reel_source_class;

// FFmpeg logs to stderr on its own; set its level only when asked
// (reel_init_params.ffmpeg_log), as the level is the whole process's.
static void set_ffmpeg_log(const char *want)
{
    static const struct {
        const char *name;
        int level;
    } levels[] = { { "quiet", AV_LOG_QUIET }, { "error", AV_LOG_ERROR }, { "warning", AV_LOG_WARNING },
                   { "info", AV_LOG_INFO },   { "debug", AV_LOG_DEBUG } };
    for (size_t i = 0; want && i < G_N_ELEMENTS(levels); i++)
        if (strcmp(want, levels[i].name) == 0)
            av_log_set_level(levels[i].level);
}

REEL_API int reel_module_media_register(const reel_init_params *params)
{
    set_ffmpeg_log(params ? params->ffmpeg_log : NULL);
    const reel_element_class *const classes[] = { &reel_convert_class, &reel_decode_class, &reel_encode_class,
                                                  &reel_preview_class, &reel_record_class, &reel_sink_class,
                                                  &reel_source_class };
    for (size_t i = 0; i < G_N_ELEMENTS(classes); i++)
        reel_element_class_register(classes[i]);
    return 0;
}

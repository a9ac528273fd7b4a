// The bus: messages to the application's handler.
#include "pipeline/internal.h"
#include "base/redact.h"

const char *reel_message_type_name(reel_message_type t)
{
    static const char *names[REEL_MESSAGE_TYPE_COUNT] = { "error", "warning", "info", "eos", "stats" };
    return t < REEL_MESSAGE_TYPE_COUNT ? names[t] : "?";
}

void reel_pipeline_post(reel_pipeline *p, reel_message_type type, int code, const reel_element *e,
                        const char *text)
{
    if (!p->params.bus_handler)
        return;
    char *shown = reel_redact(text, false);
    reel_message msg = {
        .type = type,
        .code = code,
        .element = e ? e->name : NULL,
        .text = shown,
        .time_us = g_get_monotonic_time(),
    };
    p->params.bus_handler(&msg, p->params.bus_user);
    g_free(shown);
}

// capsfilter: restricts the format on a link. Text pipelines create one for
// every caps filter such as `video/raw,width=320`.
#include "reel/buffer.h"
#include "reel/element.h"

typedef struct capsfilter_priv {
    char *caps;
} capsfilter_priv;

static const reel_prop props[] = {
    { "caps", REEL_PROP_STRING, offsetof(capsfilter_priv, caps), "any",
      .help = "formats allowed through, e.g. video/raw,format=rgb24,width=224" },
    { NULL },
};

static int want(reel_element *e, int pad, reel_caps *want)
{
    (void)pad;
    capsfilter_priv *c = reel_element_priv(e);
    reel_caps filter;
    if (!reel_caps_parse(c->caps, &filter, NULL, NULL))
        return REEL_EINVAL;
    reel_caps_intersect(want, &filter, want); // the template is "any": never empty
    return 0;
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    return reel_element_push(e, 0, buf);
}

const reel_element_class reel_capsfilter_class = {
    .name = "capsfilter",
    .description = "Lets only the given formats through; negotiation picks one of them",
    .flags = REEL_CLASS_PASSTHROUGH,
    .devices = REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN, // buffers pass untouched, in any memory
    .priv_size = sizeof(capsfilter_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "any", .output_caps = "any",
    .want = want,
    .process = process,
};

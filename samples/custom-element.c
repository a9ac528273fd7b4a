// Defines an element class of its own, registers it, and uses it in a text
// pipeline like a built-in one.
//
//   build/samples/sample_custom_element
//   build/samples/sample_custom_element 'testsrc num-buffers=30 ! invert mask=0x0f ! fakesink checksum=true'
#include <stdio.h>

#include <reel/reel.h>

// "invert": XORs every byte of an rgb24 frame with `mask` (255 inverts).
typedef struct invert_priv {
    int mask;         // property, filled in by the framework
    int64_t frames;   // run state
} invert_priv;

static const reel_prop invert_props[] = {
    { "mask", REEL_PROP_INT, offsetof(invert_priv, mask), "255", 0, 255,
      .help = "each byte is XORed with it: 255 inverts" },
    { NULL },
};

static int invert_start(reel_element *e)
{
    invert_priv *s = reel_element_priv(e);
    s->frames = 0;
    return 0;
}

// Called on a worker thread for each input buffer; it owns `buf` and passes
// it on (or drops it) — never both.
static int invert_process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    invert_priv *s = reel_element_priv(e);
    // Another element (a tee's other branch) may share the buffer.
    if (reel_buffer_make_writable(&buf) < 0) {
        reel_buffer_unref(&buf);
        return reel_element_error(e, REEL_ENOMEM, "cannot copy a frame to change it");
    }
    const reel_caps *f = &buf->format;
    for (int y = 0; y < f->height; y++) {
        uint8_t *row = buf->planes[0] + (size_t)y * buf->strides[0];
        for (int x = 0; x < f->width * 3; x++)
            row[x] ^= (uint8_t)s->mask;
    }
    s->frames++;
    return reel_element_push(e, 0, buf);
}

static void invert_stop(reel_element *e)
{
    invert_priv *s = reel_element_priv(e);
    reel_element_info(e, "%lld frames changed", (long long)s->frames);
}

// One const table says everything about the class: its pads, the formats
// they take (negotiation makes testsrc produce rgb24 for it), its
// properties, and its callbacks.
static const reel_element_class invert_class = {
    .name = "invert",
    .description = "XORs each byte of an rgb24 frame with a mask",
    .flags = REEL_CLASS_PASSTHROUGH, // output format = input format
    .priv_size = sizeof(invert_priv),
    .props = invert_props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 1, .max_outputs = 1,
    .input_caps = "video/raw,format=rgb24,memory=host",
    .output_caps = "video/raw,format=rgb24,memory=host",
    .start = invert_start,
    .process = invert_process,
    .stop = invert_stop,
};

static void on_message(const reel_message *msg, void *user)
{
    (void)user;
    if (msg->type == REEL_MESSAGE_INFO || msg->type == REEL_MESSAGE_WARNING)
        printf("[%s] %s: %s\n", reel_message_type_name(msg->type), msg->element ? msg->element : "", msg->text);
}

int main(int argc, char **argv)
{
    reel_init();
    if (reel_element_class_register(&invert_class) < 0) {
        fprintf(stderr, "an element called 'invert' is already registered\n");
        return 1;
    }
    const char *text = "testsrc num-buffers=60 width=320 height=240 ! invert ! queue ! fakesink checksum=true";
    if (argc > 1)
        text = argv[1];
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, reel_pipeline_params(.bus_handler = on_message), &err);
    if (!p || reel_pipeline_run(p, &err) < 0) {
        fprintf(stderr, "%s\n", err->message);
        g_error_free(err);
        reel_pipeline_destroy(&p);
        return 1;
    }
    reel_pipeline_destroy(&p);
    return 0;
}

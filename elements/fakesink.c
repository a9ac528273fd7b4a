// fakesink: consumes buffers; counts them and optionally checksums their
// contents (visible pixels only, so row padding never changes a checksum).
#include "reel/reel.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct fakesink_priv {
    bool checksum;
    int delay_us;
    char *location;

    GChecksum *total;
    FILE *out;
    int64_t count;
} fakesink_priv;

static const reel_prop props[] = {
    { "checksum", REEL_PROP_BOOL, offsetof(fakesink_priv, checksum), "false",
      .help = "MD5 of all contents, reported at the end" },
    { "location", REEL_PROP_STRING, offsetof(fakesink_priv, location), NULL, .flags = REEL_PROP_WRITES_FILE,
      .help = "write one line per buffer: frame number, pts, MD5 of its contents" },
    { "delay-us", REEL_PROP_INT, offsetof(fakesink_priv, delay_us), "0", 0, 10000000, .flags = REEL_PROP_TEST_HOOK,
      .help = "microseconds to spend on each buffer (a slow consumer, for tests)" },
    { NULL },
};

static int start(reel_element *e)
{
    fakesink_priv *s = reel_element_priv(e);
    s->count = 0;
    if (s->checksum)
        s->total = g_checksum_new(G_CHECKSUM_MD5);
    if (s->location && *s->location && !(s->out = fopen(s->location, "w")))
        return reel_element_error(e, REEL_EIO, "cannot write '%s': %s", s->location, strerror(errno));
    return 0;
}

// Feeds the visible bytes of b to each checksum given.
static void digest(const reel_buffer *b, GChecksum *a, GChecksum *c)
{
    const reel_caps *f = &b->format;
    if (f->media != REEL_MEDIA_VIDEO_RAW) {
        if (a)
            g_checksum_update(a, b->data, b->size);
        if (c)
            g_checksum_update(c, b->data, b->size);
        return;
    }
    reel_pixfmt pf = __builtin_ctzll(f->pixfmts);
    for (int p = 0; p < reel_pixfmt_planes(pf); p++) {
        size_t row = reel_pixfmt_row_bytes(pf, p, f->width);
        for (int y = 0; y < reel_pixfmt_plane_height(pf, p, f->height); y++) {
            const uint8_t *d = b->planes[p] + (size_t)y * b->strides[p];
            if (a)
                g_checksum_update(a, d, row);
            if (c)
                g_checksum_update(c, d, row);
        }
    }
}

static int process(reel_element *e, int pad, reel_buffer *buf)
{
    (void)pad;
    fakesink_priv *s = reel_element_priv(e);
    GChecksum *frame = s->out ? g_checksum_new(G_CHECKSUM_MD5) : NULL;
    if (s->total || frame)
        digest(buf, s->total, frame);
    if (frame) {
        fprintf(s->out, "%" G_GINT64_FORMAT " %" G_GINT64_FORMAT " %s\n", buf->frame_number,
                buf->pts, g_checksum_get_string(frame));
        g_checksum_free(frame);
    }
    if (s->delay_us)
        g_usleep(s->delay_us);
    s->count++;
    reel_buffer_unref(&buf);
    return 0;
}

static void stop(reel_element *e)
{
    fakesink_priv *s = reel_element_priv(e);
    if (s->total) {
        reel_element_info(e, "%" G_GINT64_FORMAT " buffers, md5 %s", s->count, g_checksum_get_string(s->total));
        g_clear_pointer(&s->total, g_checksum_free);
    }
    if (s->out && fclose(s->out) != 0)
        reel_element_warning(e, "error writing '%s': %s", s->location, strerror(errno));
    s->out = NULL;
}

const reel_element_class reel_fakesink_class = {
    .name = "fakesink",
    .description = "Consumes and counts buffers; optionally checksums them",
    .priv_size = sizeof(fakesink_priv),
    .props = props,
    .min_inputs = 1, .max_inputs = 1,
    .min_outputs = 0, .max_outputs = 0,
    .input_caps = "any",
    .start = start,
    .process = process,
    .stop = stop,
    .uninit = stop,
};

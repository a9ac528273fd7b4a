// Caps: sets of formats, their intersection, and their text form.
#include "reel/caps.h"
#include "base/suggest.h"
#include "pipeline/parse.h"
#include "reel/error.h"
#include "reel/limits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned media;
} media_names[] = {
    { "video/raw", REEL_MEDIA_VIDEO_RAW },
    { "video/encoded", REEL_MEDIA_VIDEO_ENCODED },
    { "video", REEL_MEDIA_VIDEO_RAW | REEL_MEDIA_VIDEO_ENCODED },
    { "tensor", REEL_MEDIA_TENSOR },
    { "any", REEL_MEDIA_ANY },
};

// GStreamer's names for what reel calls video/raw, and for video/encoded
// with a codec (FFmpeg's name for it): accepted as the same.
static const struct {
    const char *name;
    const char *codec; // NULL: video/raw
} gst_media[] = {
    { "video/x-raw", NULL },
    { "video/x-h264", "h264" },
    { "video/x-h265", "hevc" },
    { "video/x-vp8", "vp8" },
    { "video/x-vp9", "vp9" },
    { "video/x-av1", "av1" },
    { "video/x-theora", "theora" },
    { "image/jpeg", "mjpeg" },
    { "image/png", "png" },
};

// GStreamer's names of the pixel formats reel has (its yuvj420p is I420
// with a full-range colorimetry there: no name of its own).
static const struct {
    const char *name;
    reel_pixfmt format;
} gst_formats[] = {
    { "GRAY8", REEL_PIXFMT_GRAY8 }, { "RGB", REEL_PIXFMT_RGB24 },   { "BGR", REEL_PIXFMT_BGR24 },
    { "RGBA", REEL_PIXFMT_RGBA },   { "BGRA", REEL_PIXFMT_BGRA },   { "I420", REEL_PIXFMT_YUV420P },
    { "NV12", REEL_PIXFMT_NV12 },   { "Y42B", REEL_PIXFMT_YUV422P }, { "Y444", REEL_PIXFMT_YUV444P },
};

// Fields GStreamer's video caps have and reel's do not.
static const char *const gst_only_fields[] = {
    "pixel-aspect-ratio", "interlace-mode", "colorimetry", "chroma-site", "multiview-mode", "multiview-flags",
    "stream-format", "alignment", "profile", "level", "tier", "parsed", "codec_data", "views", "max-framerate",
};

reel_caps reel_caps_any(void)
{
    return (reel_caps){
        .media = REEL_MEDIA_ANY,
        .pixfmts = REEL_PIXFMT_MASK_ALL,
        .memory = REEL_MEMORY_ANY,
    };
}

bool reel_caps_is_empty(const reel_caps *c)
{
    return c->media == 0 || c->memory == 0;
}

static bool single_bit(uint64_t v)
{
    return v && !(v & (v - 1));
}

bool reel_caps_is_fixed(const reel_caps *c)
{
    if (!single_bit(c->media) || !single_bit(c->memory))
        return false;
    switch (c->media) {
    case REEL_MEDIA_VIDEO_RAW:
        return single_bit(c->pixfmts) && c->width > 0 && c->height > 0 && c->framerate.den > 0;
    case REEL_MEDIA_VIDEO_ENCODED:
        return c->codec[0] != '\0';
    case REEL_MEDIA_TENSOR:
        if (c->dtype == REEL_DTYPE_NONE || c->rank <= 0)
            return false;
        for (int i = 0; i < c->rank; i++)
            if (c->shape[i] <= 0)
                return false;
        return true;
    }
    return false;
}

// Merges one "0 means any" field; false on a conflict.
static bool merge_int(int a, int b, int *out)
{
    if (a && b && a != b)
        return false;
    *out = a ? a : b;
    return true;
}

bool reel_caps_intersect(const reel_caps *a, const reel_caps *b, reel_caps *out)
{
    reel_caps r = { 0 };
    r.media = a->media & b->media;
    r.memory = a->memory & b->memory;
    r.pixfmts = a->pixfmts & b->pixfmts;
    if (!r.pixfmts)
        r.media &= ~(unsigned)REEL_MEDIA_VIDEO_RAW;

    bool ok = merge_int(a->width, b->width, &r.width) && merge_int(a->height, b->height, &r.height)
              && merge_int(a->rank, b->rank, &r.rank);
    if (ok && a->framerate.den && b->framerate.den) {
        ok = (int64_t)a->framerate.num * b->framerate.den == (int64_t)b->framerate.num * a->framerate.den;
        r.framerate = a->framerate;
    } else if (ok) {
        r.framerate = a->framerate.den ? a->framerate : b->framerate;
    }
    if (ok && a->codec[0] && b->codec[0])
        ok = strcmp(a->codec, b->codec) == 0;
    memcpy(r.codec, a->codec[0] ? a->codec : b->codec, sizeof r.codec);
    if (ok && a->dtype && b->dtype)
        ok = a->dtype == b->dtype;
    r.dtype = a->dtype ? a->dtype : b->dtype;
    for (int i = 0; ok && i < r.rank; i++) {
        int64_t x = i < a->rank ? a->shape[i] : 0, y = i < b->rank ? b->shape[i] : 0;
        ok = !(x && y && x != y);
        r.shape[i] = x ? x : y;
    }
    if (!ok || reel_caps_is_empty(&r)) {
        *out = (reel_caps){ 0 };
        return false;
    }
    *out = r;
    return true;
}

bool reel_caps_equal(const reel_caps *a, const reel_caps *b)
{
    if (a->media != b->media || a->memory != b->memory || a->pixfmts != b->pixfmts
        || a->width != b->width || a->height != b->height || a->rank != b->rank
        || a->dtype != b->dtype || strcmp(a->codec, b->codec) != 0
        || a->framerate.num != b->framerate.num || a->framerate.den != b->framerate.den)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

bool reel_caps_accepts(const reel_caps *c, const reel_caps *f)
{
    reel_caps r;
    return reel_caps_intersect(c, f, &r) && reel_caps_equal(&r, f);
}

// ---- text form -------------------------------------------------------------

static bool parse_positive(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > (1 << 20))
        return false;
    *out = (int)v;
    return true;
}

static bool parse_framerate(const char *s, reel_fraction *out)
{
    char *end;
    errno = 0;
    long num = strtol(s, &end, 10), den = 1;
    if (errno || end == s || num < 0 || num > INT32_MAX)
        return false;
    if (*end == '/') {
        const char *d = end + 1;
        den = strtol(d, &end, 10);
        if (errno || end == d || den < 0 || den > INT32_MAX)
            return false;
    }
    if (*end)
        return false;
    *out = (reel_fraction){ (int)num, (int)den };
    return true;
}

static bool parse_shape(const char *s, reel_caps *c)
{
    gchar **dims = g_strsplit(s, "x", -1);
    int n = (int)g_strv_length(dims);
    bool ok = n > 0 && n <= REEL_TENSOR_MAX_RANK;
    for (int i = 0; ok && i < n; i++) {
        char *end;
        errno = 0;
        long long v = strcmp(dims[i], "?") == 0 ? 0 : strtoll(dims[i], &end, 10);
        if (strcmp(dims[i], "?") != 0)
            ok = !errno && end != dims[i] && !*end && v > 0 && v <= INT32_MAX;
        c->shape[i] = v;
    }
    c->rank = ok ? n : 0;
    g_strfreev(dims);
    return ok;
}

// Parses "a|b|c" with `one` mapping a name to a bit (0: unknown).
static bool parse_bits(const char *s, uint64_t (*one)(const char *), uint64_t *out)
{
    gchar **names = g_strsplit(s, "|", -1);
    uint64_t bits = 0;
    bool ok = names[0] != NULL;
    for (int i = 0; ok && names[i]; i++) {
        uint64_t b = one(names[i]);
        ok = b != 0;
        bits |= b;
    }
    g_strfreev(names);
    *out = bits;
    return ok;
}

static uint64_t pixfmt_bit(const char *name)
{
    reel_pixfmt f = reel_pixfmt_from_name(name);
    for (size_t i = 0; !f && i < G_N_ELEMENTS(gst_formats); i++)
        if (strcmp(gst_formats[i].name, name) == 0)
            f = gst_formats[i].format;
    return f ? REEL_PIXFMT_BIT(f) : 0;
}

static uint64_t media_bit(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(media_names); i++)
        if (strcmp(media_names[i].name, name) == 0)
            return media_names[i].media;
    return strcmp(name, gst_media[0].name) == 0 ? REEL_MEDIA_VIDEO_RAW : 0;
}

// The media type at the head of the caps: reel's names joined by '|', or
// one of GStreamer's (an encoded one also sets the codec).
static bool parse_media(const char *text, reel_caps *c, char **hint)
{
    for (size_t i = 0; i < G_N_ELEMENTS(gst_media); i++) {
        if (gst_media[i].codec && strcmp(text, gst_media[i].name) == 0) {
            c->media = REEL_MEDIA_VIDEO_ENCODED;
            g_strlcpy(c->codec, gst_media[i].codec, sizeof c->codec);
            return true;
        }
    }
    uint64_t media;
    if (parse_bits(text, media_bit, &media)) {
        c->media = (unsigned)media;
        return true;
    }
    if (!hint)
        return false;
    static const char *const names[] = { "video/raw", "video/encoded", "video", "tensor", "any" };
    const char *near = reel_suggest(text, names, G_N_ELEMENTS(names));
    if (strchr(text, '('))
        *hint = g_strdup("reel says where frames live with a field: video/raw,memory=device (or host)");
    else if (strstr(text, "video/x-") && strchr(text, '|'))
        *hint = g_strdup("one codec per caps: video/encoded,codec=h264");
    else if (near && !strchr(text, '|'))
        *hint = g_strdup_printf("did you mean '%s'?", near);
    else
        *hint = g_strdup("reel's media types: video/raw (or video/x-raw), video/encoded,codec=NAME (or video/x-h264, "
                         "video/x-h265, video/x-vp8, video/x-vp9, video/x-av1, video/x-theora, image/jpeg, "
                         "image/png), tensor and any");
    return false;
}

// GStreamer writes a value's type before it (width=(int)320): the type is
// checked against the field's and dropped. Returns the value after it.
static const char *strip_type(const char *key, const char *value, const char **why, char **hint, bool *ok)
{
    *ok = true;
    if (value[0] != '(')
        return value;
    const char *close = strchr(value, ')');
    if (!close)
        return value;
    char *type = g_strstrip(g_strndup(value + 1, (gsize)(close - value - 1)));
    bool is_int = strcmp(key, "width") == 0 || strcmp(key, "height") == 0;
    bool is_fraction = strcmp(key, "framerate") == 0;
    static const char *const ints[] = { "int", "i", "gint" };
    static const char *const fractions[] = { "fraction", "GstFraction" };
    static const char *const strings[] = { "string", "str", "s", "gchararray" };
    const char *const *names = is_int ? ints : is_fraction ? fractions : strings;
    size_t n = is_int ? G_N_ELEMENTS(ints) : is_fraction ? G_N_ELEMENTS(fractions) : G_N_ELEMENTS(strings);
    bool known = false;
    for (size_t i = 0; i < n; i++)
        known |= strcmp(type, names[i]) == 0;
    if (!known) {
        *ok = false;
        *why = is_int ? "the field is an int" : is_fraction ? "the field is a fraction" : "the field is a string";
        if (hint)
            *hint = g_strdup_printf("write %s=%s (or %s=(%s)%s)", key,
                                    is_int ? "320" : is_fraction ? "30/1" : "VALUE", key, names[0],
                                    is_int ? "320" : is_fraction ? "30/1" : "VALUE");
    }
    g_free(type);
    const char *v = close + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    return v;
}

// What reel writes for a value it cannot take, when it has a spelling.
static char *field_hint(const char *key, const char *value)
{
    bool open_set = value[0] == '{' || value[0] == '[';
    if (strcmp(key, "format") == 0)
        return g_strdup(open_set ? "write several formats as format=rgb24|bgr24"
                                 : "reel's pixel formats: gray8, rgb24, bgr24, rgba, bgra, yuv420p, yuvj420p, nv12, "
                                   "yuv422p, yuv444p (GStreamer's GRAY8, RGB, BGR, RGBA, BGRA, I420, NV12, Y42B, "
                                   "Y444 are accepted too)");
    if (open_set && (strcmp(key, "width") == 0 || strcmp(key, "height") == 0))
        return g_strdup_printf("reel's caps take one %s, e.g. %s=320 (leave it out for any)", key, key);
    if (open_set && strcmp(key, "framerate") == 0)
        return g_strdup("reel's caps take one rate, e.g. framerate=30/1 (leave it out for any)");
    for (size_t i = 0; i < G_N_ELEMENTS(gst_only_fields); i++)
        if (strcmp(key, gst_only_fields[i]) == 0)
            return g_strdup_printf("reel's caps have no %s: leave it out (the fields are format, width, height, "
                                   "framerate, codec, dtype, shape, memory)", key);
    return NULL;
}

static uint64_t memory_bit(const char *name)
{
    if (strcmp(name, "host") == 0)
        return REEL_MEMORY_HOST;
    if (strcmp(name, "device") == 0)
        return REEL_MEMORY_DEVICE;
    if (strcmp(name, "any") == 0)
        return REEL_MEMORY_ANY;
    return 0;
}

static bool parse_field(reel_caps *c, const char *key, const char *value, const char **why)
{
    uint64_t bits;
    if (strcmp(key, "format") == 0) {
        *why = "expected pixel formats such as rgb24 or yuv420p|nv12";
        if (!parse_bits(value, pixfmt_bit, &bits))
            return false;
        c->pixfmts = bits;
        return true;
    }
    if (strcmp(key, "width") == 0 || strcmp(key, "height") == 0) {
        *why = "expected a positive integer";
        return parse_positive(value, key[0] == 'w' ? &c->width : &c->height);
    }
    if (strcmp(key, "framerate") == 0) {
        *why = "expected a fraction such as 30/1";
        return parse_framerate(value, &c->framerate);
    }
    if (strcmp(key, "codec") == 0) {
        *why = "expected a codec name of at most 15 characters";
        if (!*value || strlen(value) >= sizeof c->codec)
            return false;
        g_strlcpy(c->codec, value, sizeof c->codec);
        return true;
    }
    if (strcmp(key, "dtype") == 0) {
        *why = "expected a type such as float32, float16, uint8, int8, int16, uint16, int32, int64, bool, float64";
        c->dtype = reel_dtype_from_name(value);
        return c->dtype != REEL_DTYPE_NONE;
    }
    if (strcmp(key, "shape") == 0) {
        *why = "expected dimensions such as 1x3x224x224 (? for any)";
        return parse_shape(value, c);
    }
    if (strcmp(key, "memory") == 0) {
        *why = "expected host, device or any";
        if (!parse_bits(value, memory_bit, &bits))
            return false;
        c->memory = (unsigned)bits;
        return true;
    }
    *why = "unknown field (known: format, width, height, framerate, codec, dtype, shape, memory)";
    return false;
}

bool reel_caps_parse(const char *text, reel_caps *out, size_t *err_offset, GError **error)
{
    return reel_caps_parse_hint(text, out, err_offset, NULL, error);
}

bool reel_caps_parse_hint(const char *text, reel_caps *out, size_t *err_offset, char **hint, GError **error)
{
    reel_caps c = reel_caps_any();
    gchar **fields = g_strsplit(text, ",", -1);
    size_t offset = 0;
    const char *why = NULL;
    bool ok = true;
    if (hint)
        *hint = NULL;

    for (int i = 0; ok && fields[i]; i++) {
        char *f = g_strstrip(g_strdup(fields[i]));
        size_t lead = strspn(fields[i], " \t\r\n");
        if (i == 0) {
            why = "expected a media type: video/raw, video/encoded, video, tensor or any, joined by |";
            ok = parse_media(f, &c, hint);
        } else {
            char *eq = strchr(f, '=');
            if (!eq) {
                why = "expected key=value";
                ok = false;
            } else {
                *eq = '\0';
                const char *key = g_strchomp(f);
                const char *value = strip_type(key, g_strchug(eq + 1), &why, hint, &ok);
                if (ok && !(ok = parse_field(&c, key, value, &why)) && hint)
                    *hint = field_hint(key, value);
            }
        }
        g_free(f);
        if (!ok)
            offset += lead;
        else
            offset += strlen(fields[i]) + 1;
    }
    if (ok && !(c.media & REEL_MEDIA_VIDEO_RAW))
        c.pixfmts = REEL_PIXFMT_MASK_ALL;
    g_strfreev(fields);

    if (!ok) {
        if (err_offset)
            *err_offset = offset;
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "invalid caps '%s': %s", text, why);
        return false;
    }
    *out = c;
    return true;
}

static void append_bits(GString *s, uint64_t bits, const char *(*name)(int), int count)
{
    bool first = true;
    for (int i = 1; i < count; i++) {
        if (!(bits & ((uint64_t)1 << i)))
            continue;
        g_string_append_printf(s, "%s%s", first ? "" : "|", name(i));
        first = false;
    }
}

static const char *pixfmt_name_i(int i)
{
    return reel_pixfmt_name(i);
}

char *reel_caps_to_string(const reel_caps *c)
{
    GString *s = g_string_new(NULL);
    if (c->media == REEL_MEDIA_ANY) {
        g_string_append(s, "any");
    } else {
        bool first = true;
        for (size_t i = 0; i < G_N_ELEMENTS(media_names); i++) {
            unsigned m = media_names[i].media;
            if (single_bit(m) && (c->media & m)) {
                g_string_append_printf(s, "%s%s", first ? "" : "|", media_names[i].name);
                first = false;
            }
        }
        if (first)
            g_string_append(s, "none");
    }
    if ((c->media & REEL_MEDIA_VIDEO_RAW) && c->pixfmts != REEL_PIXFMT_MASK_ALL) {
        g_string_append(s, ",format=");
        append_bits(s, c->pixfmts, pixfmt_name_i, REEL_PIXFMT_COUNT);
    }
    if (c->codec[0])
        g_string_append_printf(s, ",codec=%s", c->codec);
    if (c->width)
        g_string_append_printf(s, ",width=%d", c->width);
    if (c->height)
        g_string_append_printf(s, ",height=%d", c->height);
    if (c->framerate.den)
        g_string_append_printf(s, ",framerate=%d/%d", c->framerate.num, c->framerate.den);
    if (c->dtype)
        g_string_append_printf(s, ",dtype=%s", reel_dtype_name(c->dtype));
    if (c->rank) {
        g_string_append(s, ",shape=");
        for (int i = 0; i < c->rank; i++) {
            if (c->shape[i])
                g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "x" : "", c->shape[i]);
            else
                g_string_append_printf(s, "%s?", i ? "x" : "");
        }
    }
    if (c->memory != REEL_MEMORY_ANY)
        g_string_append_printf(s, ",memory=%s",
                               c->memory == REEL_MEMORY_HOST ? "host"
                               : c->memory == REEL_MEMORY_DEVICE ? "device" : "none");
    return g_string_free(s, FALSE);
}

int reel_caps_check_limits(const reel_caps *f, GError **error)
{
    if (f->media & (REEL_MEDIA_VIDEO_RAW | REEL_MEDIA_VIDEO_ENCODED))
        return reel_limit_check_frame(f->width, f->height, error);
    if (f->media == REEL_MEDIA_TENSOR && f->dtype != REEL_DTYPE_NONE)
        return reel_limit_check_tensor(f->rank, f->shape, reel_dtype_size(f->dtype), NULL, error);
    return 0;
}

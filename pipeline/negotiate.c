// Format negotiation in two passes over a topological order.
//
// Pass 1, sinks to sources: each element says what it wants on each input,
// from its template, what downstream wants (for passthrough elements) and its
// own `want` callback. Pass 2, sources to sinks: each element fixes its
// outputs from its now-fixed inputs, and every link checks that the format
// sent is one the receiver accepts. Errors name both ends of the link.
#include "pipeline/internal.h"
#include "reel/error.h"
#include "reel/limits.h"

// What e's input `pad` accepts, once pass 1 has reached it.
static const reel_caps *in_want(const reel_element *e, guint pad)
{
    return &((const reel_link *)e->inputs->pdata[pad])->want;
}

static int template_caps(const reel_element *e, const char *text, reel_caps *out, GError **error)
{
    if (!text) {
        *out = reel_caps_any();
        return 0;
    }
    GError *err = NULL;
    if (!reel_caps_parse(text, out, NULL, &err)) {
        g_set_error(error, REEL_ERROR, REEL_EINTERNAL, "class '%s': %s", e->klass->name, err->message);
        g_error_free(err);
        return REEL_EINTERNAL;
    }
    return 0;
}

// Whether a convert between formats a and b would make them meet: both raw
// video, in the same memory, differing only in what convert changes
// (pixel format and size).
static bool convert_fits(const reel_caps *a, const reel_caps *b)
{
    if (!(a->media & REEL_MEDIA_VIDEO_RAW) || !(b->media & REEL_MEDIA_VIDEO_RAW) || !(a->memory & b->memory))
        return false;
    reel_caps x = *a, y = *b, both;
    x.media = y.media = REEL_MEDIA_VIDEO_RAW;
    x.pixfmts = y.pixfmts = REEL_PIXFMT_MASK_ALL;
    x.width = y.width = x.height = y.height = 0;
    return reel_caps_intersect(&x, &y, &both);
}

// `via`: the element whose output format `up` passes on unchanged (NULL
// when up made it itself).
static int mismatch_via(GError **error, const reel_element *up, const reel_element *down, const reel_caps *a,
                        const char *a_what, const reel_element *via, const reel_caps *b, const char *b_what)
{
    char *sa = reel_caps_to_string(a), *sb = reel_caps_to_string(b);
    char *from = via ? g_strdup_printf(" from '%s'", via->name) : g_strdup("");
    char *hint = convert_fits(a, b) ? g_strdup_printf("\nhint: put a convert between them: %s ! convert ! %s",
                                                      up->name, down->name)
                                    : g_strdup("");
    g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                "cannot link '%s' to '%s': no format in common ('%s' %s %s%s; '%s' %s %s)%s", up->name, down->name,
                up->name, a_what, sa, from, down->name, b_what, sb, hint);
    g_free(sa);
    g_free(sb);
    g_free(from);
    g_free(hint);
    return REEL_EFORMAT;
}

static int mismatch(GError **error, const reel_element *up, const reel_element *down, const reel_caps *a,
                    const char *a_what, const reel_caps *b, const char *b_what)
{
    return mismatch_via(error, up, down, a, a_what, NULL, b, b_what);
}

// An element's want/configure failed: its own reel_element_error() message
// (recorded as the pipeline's error) says best what went wrong.
static int callback_failed(reel_element *e, int rc, const char *what, GError **error)
{
    reel_pipeline *p = e->pipeline;
    GError *said = e->staged ? p->staged_error : p->error;
    if (said)
        g_propagate_error(error, g_error_copy(said));
    else
        g_set_error(error, REEL_ERROR, rc, "%s: %s (%s)", e->name, what, reel_strerror(rc));
    return rc;
}

// What e itself accepts on input `pad`: its template, memory and `want`,
// before a passthrough element adds what downstream wants.
static int own_want(reel_element *e, guint pad, reel_caps *want, GError **error)
{
    int rc;
    if ((rc = template_caps(e, e->klass->input_caps, want, error)) < 0)
        return rc;
    want->memory &= reel_element_memory(e, false);
    if (e->klass->want && (rc = e->klass->want(e, (int)pad, want)) < 0)
        return callback_failed(e, rc, "rejected every format for its input", error);
    return 0;
}

// Whether formats `a` (one fixed format, or a set when !fixed) meet what
// `want` accepts.
static bool meets(const reel_caps *want, const reel_caps *a, bool fixed)
{
    reel_caps both;
    return fixed ? reel_caps_accepts(want, a) : reel_caps_intersect(want, a, &both);
}

// Formats `out` of e's output `l` (what e produces, fixed; or in pass 1
// what e allows) are not what the receiver accepts. Where the receiver
// only passes formats on (a queue, detect, overlay), what it accepts holds
// the wishes of those after it: the error names the link where `out`,
// passed on unchanged, actually meets an element that cannot take it (an
// encoder after overlay), which is where a convert belongs.
static int link_mismatch(reel_element *e, reel_link *l, const reel_caps *out, bool fixed, GError **error)
{
    const char *what = fixed ? "produces" : "allows";
    reel_element *up = e, *down = l->dst;
    guint pad = (guint)l->dst_pad;
    for (int steps = 0; steps < 1024 && (down->klass->flags & REEL_CLASS_PASSTHROUGH); steps++) {
        reel_caps own;
        GError *ignored = NULL;
        if (own_want(down, pad, &own, &ignored) < 0) {
            g_clear_error(&ignored);
            break;
        }
        if (!meets(&own, out, fixed))
            break; // down itself refuses it
        reel_link *next = NULL;
        for (guint o = 0; o < down->outputs->len && !next; o++) {
            reel_link *k = down->outputs->pdata[o];
            if (!meets(&k->want, out, fixed))
                next = k;
        }
        if (!next)
            break;
        up = down;
        down = next->dst;
        pad = (guint)next->dst_pad;
    }
    if (up == e)
        return mismatch(error, e, down, out, what, in_want(down, pad), "accepts");
    // Downstream's own wish, without what those after it added.
    reel_caps accepts = *in_want(down, pad);
    if (down->klass->flags & REEL_CLASS_PASSTHROUGH) {
        GError *ignored = NULL;
        if (own_want(down, pad, &accepts, &ignored) < 0) {
            g_clear_error(&ignored);
            accepts = *in_want(down, pad);
        }
    }
    return mismatch_via(error, up, down, out, fixed ? "passes on" : "would pass on", e, &accepts, "accepts");
}

static int want_inputs(reel_element *e, GError **error)
{
    int rc;
    for (guint i = 0; i < e->inputs->len; i++) {
        reel_caps want;
        if ((rc = own_want(e, i, &want, error)) < 0)
            return rc;
        if (e->klass->flags & REEL_CLASS_PASSTHROUGH) {
            for (guint o = 0; o < e->outputs->len; o++) {
                reel_link *l = e->outputs->pdata[o];
                const reel_caps *down = &l->want;
                reel_caps both;
                if (!reel_caps_intersect(&want, down, &both))
                    return link_mismatch(e, l, &want, false, error);
                want = both;
            }
        }
        ((reel_link *)e->inputs->pdata[i])->want = want;
    }
    return 0;
}

// Fills the open fields of *out from what downstream wants, then picks the
// first of several pixel formats or memories.
static void fixate(reel_caps *out, const reel_caps *down)
{
    reel_caps both;
    if (reel_caps_intersect(out, down, &both))
        *out = both;
    if ((out->media & REEL_MEDIA_VIDEO_RAW) && out->pixfmts)
        out->pixfmts = REEL_PIXFMT_BIT(reel_pixfmt_pick(out->pixfmts));
    if (out->memory == REEL_MEMORY_ANY)
        out->memory = REEL_MEMORY_HOST;
}

static int configure_outputs(reel_element *e, GError **error)
{
    int rc;
    for (guint o = 0; o < e->outputs->len; o++) {
        reel_link *l = e->outputs->pdata[o];
        const reel_caps *down = &l->want;
        reel_caps out;
        if ((rc = template_caps(e, e->klass->output_caps, &out, error)) < 0)
            return rc;
        out.memory &= reel_element_memory(e, true);
        if ((e->klass->flags & REEL_CLASS_PASSTHROUGH) && e->inputs->len)
            out = *reel_element_input_format(e, 0);
        if (e->klass->configure && (rc = e->klass->configure(e, (int)o, &out)) < 0)
            return callback_failed(e, rc, "could not settle its output format", error);
        fixate(&out, down);
        if (!reel_caps_is_fixed(&out)) {
            char *s = reel_caps_to_string(&out);
            g_set_error(error, REEL_ERROR, REEL_EFORMAT,
                        "element '%s' cannot settle its output format: '%s' leaves fields open "
                        "(set them with properties or a caps filter such as video/raw,width=640,height=480)",
                        e->name, s);
            g_free(s);
            return REEL_EFORMAT;
        }
        if (!reel_caps_accepts(down, &out))
            return link_mismatch(e, l, &out, true, error);
        if ((rc = reel_caps_check_limits(&out, error)) < 0) {
            g_prefix_error(error, "element '%s': ", e->name);
            return rc;
        }
        l->format = out;
        l->negotiated = true;
    }
    return 0;
}

// A new input of `x`, an element that runs already: what x accepts there
// (its template, in its memory; passing frames on, also what its outputs
// accept). No hook of a running element is called.
static int attach_want(reel_link *l, GError **error)
{
    reel_element *x = l->dst;
    reel_caps want;
    int rc = template_caps(x, x->klass->input_caps, &want, error);
    if (rc < 0)
        return rc;
    want.memory &= reel_element_memory(x, false);
    for (guint o = 0; o < x->outputs->len; o++) {
        reel_link *k = x->outputs->pdata[o];
        reel_caps both;
        if (!reel_caps_intersect(&want, &k->want, &both))
            return mismatch(error, x, k->dst, &want, "allows", &k->want, "accepts");
        want = both;
    }
    l->want = want;
    return 0;
}

// A new output of `x`, an element that runs already and passes frames on:
// the format of its input.
static int attach_format(reel_link *l, GError **error)
{
    reel_element *x = l->src;
    reel_caps out = x->inputs->len ? ((reel_link *)x->inputs->pdata[0])->format : reel_caps_any();
    fixate(&out, &l->want);
    if (!reel_caps_accepts(&l->want, &out))
        return mismatch(error, x, l->dst, &out, "produces", &l->want, "accepts");
    l->format = out;
    l->negotiated = true;
    return 0;
}

static gpointer open_main(gpointer data)
{
    reel_element *e = data;
    return GINT_TO_POINTER(e->klass->open(e));
}

// Every element's blocking set-up at once, a thread each. Sources that
// answer REEL_AGAIN (their input not there yet) go to `again`, where given.
static int open_all(reel_element **order, guint n, GPtrArray *again, GError **error)
{
    GThread **threads = g_new0(GThread *, n);
    for (guint i = 0; i < n; i++)
        if (order[i]->klass->open)
            threads[i] = g_thread_new(order[i]->name, open_main, order[i]);
    int rc = 0;
    for (guint i = 0; i < n; i++) {
        int r = threads[i] ? GPOINTER_TO_INT(g_thread_join(threads[i])) : 0;
        if (r == REEL_AGAIN && again)
            g_ptr_array_add(again, order[i]);
        else if (r != 0 && rc == 0)
            rc = callback_failed(order[i], r < 0 ? r : REEL_EIO, "could not open", error);
    }
    g_free(threads);
    return rc;
}

// Pass 1 and pass 2 over `order`, after every element opened.
static int negotiate_order(reel_element **order, guint n, GPtrArray *attach, GError **error)
{
    int rc = 0;
    for (guint i = n; i-- > 0 && rc == 0;)
        rc = want_inputs(order[i], error);
    for (guint i = 0; attach && i < attach->len && rc == 0; i++)
        rc = attach_format(attach->pdata[i], error);
    for (guint i = 0; i < n && rc == 0; i++)
        rc = configure_outputs(order[i], error);
    return rc;
}

int reel_open_elements(reel_pipeline *p, reel_element **order, GError **error)
{
    GPtrArray *again = g_ptr_array_new();
    int rc = open_all(order, p->elements->len - 1, again, error);
    if (rc == 0 && again->len)
        rc = reel_waiting_defer(p, (reel_element *const *)again->pdata, again->len, error);
    g_ptr_array_free(again, TRUE);
    return rc;
}

int reel_negotiate(reel_pipeline *p, reel_element **order, GError **error)
{
    return negotiate_order(order, p->elements->len - 1, NULL, error);
}

int reel_negotiate_some(reel_pipeline *p, reel_element **order, guint n, GPtrArray *links, GError **error)
{
    (void)p;
    GPtrArray *out_of_running = g_ptr_array_new();
    int rc = 0;
    for (guint i = 0; i < links->len && rc == 0; i++) {
        reel_link *l = links->pdata[i];
        if (!l->dst->staged)
            rc = attach_want(l, error);
        else if (!l->src->staged)
            g_ptr_array_add(out_of_running, l);
    }
    if (rc == 0)
        rc = open_all(order, n, NULL, error);
    if (rc == 0)
        rc = negotiate_order(order, n, out_of_running, error);
    g_ptr_array_free(out_of_running, TRUE);
    return rc;
}

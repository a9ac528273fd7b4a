// The text pipeline parser: the description layer (reel_parse_describe) and
// the builder (reel_parse_launch) on the built-in elements, with the exact
// position, caret and hint of every kind of error.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pipeline/parse.h"
#include "reel/reel.h"
#include "tests/support/skip.h"

// ---- helpers ---------------------------------------------------------------

static reel_parse_description *describe_ok(const char *text)
{
    GError *err = NULL;
    reel_parse_description *d = reel_parse_describe(text, NULL, &err);
    if (!d)
        fail_msg("unexpected error:\n%s", err->message);
    return d;
}

static const reel_parse_item *item(const reel_parse_description *d, size_t chain, size_t i)
{
    assert_true(chain < d->n_chains);
    assert_true(i < d->chains[chain].n_items);
    return &d->chains[chain].items[i];
}

static void assert_span(reel_parse_span s, size_t pos, size_t len)
{
    assert_int_equal(s.pos, pos);
    assert_int_equal(s.len, len);
}

// Checks a positioned error: the first line starts with `first` (the whole
// line where the parser writes all of it), the caret line is `caret`, and
// the last line is `hint` (or the caret line when hint is NULL). Messages
// from the core may span lines, so the caret is found from the end.
static void check_error(GError *err, const char *first, const char *caret, const char *hint)
{
    if (!err)
        fail_msg("expected an error starting with '%s'", first);
    char **l = g_strsplit(err->message, "\n", -1);
    guint n = g_strv_length(l);
    guint c = hint ? n - 2 : n - 1;
    bool ok = err->domain == REEL_ERROR && err->code == REEL_EINVAL;
    ok = ok && n >= (hint ? 4u : 3u) && g_str_has_prefix(l[0], first) && strcmp(l[c], caret) == 0;
    ok = ok && (hint ? strcmp(l[n - 1], hint) == 0 : !g_str_has_prefix(l[n - 1], "hint:"));
    if (!ok)
        print_error("got:\n%s\n", err->message);
    g_strfreev(l);
    g_error_free(err);
    assert_true(ok);
}

static reel_pipeline *launch_ok(const char *text)
{
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, NULL, NULL, &err);
    if (!p)
        fail_msg("unexpected error:\n%s", err->message);
    return p;
}

// `expected` holds exact names, or "class*" for a default name: the class
// name followed by digits.
static void assert_names(reel_pipeline *p, const char *const *expected, size_t n)
{
    reel_element *const *els = reel_pipeline_elements(p);
    size_t i = 0;
    for (; els[i]; i++) {
        assert_true(i < n);
        const char *name = reel_element_name(els[i]);
        size_t len = strlen(expected[i]);
        if (expected[i][len - 1] != '*') {
            assert_string_equal(name, expected[i]);
            continue;
        }
        bool ok = strncmp(name, expected[i], len - 1) == 0 && name[len - 1];
        for (const char *c = name + len - 1; ok && *c; c++)
            ok = g_ascii_isdigit(*c);
        if (!ok)
            fail_msg("element %zu is '%s', expected %s", i, name, expected[i]);
    }
    assert_int_equal(i, n);
}

static void assert_prop(reel_pipeline *p, const char *element, const char *prop, const char *value)
{
    reel_element *e = reel_pipeline_find(p, element);
    assert_non_null(e);
    char *v = reel_element_get(e, prop);
    assert_non_null(v);
    assert_string_equal(v, value);
    g_free(v);
}

// ---- the description -------------------------------------------------------

static void describe_single_chain(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d = describe_ok("testsrc ! identity ! fakesink");
    assert_string_equal(d->origin, "pipeline");
    assert_int_equal(d->n_chains, 1);
    assert_int_equal(d->chains[0].n_items, 3);
    const reel_parse_item *a = item(d, 0, 0), *b = item(d, 0, 1), *c = item(d, 0, 2);
    assert_int_equal(a->kind, REEL_PARSE_ELEMENT);
    assert_string_equal(a->text, "testsrc");
    assert_span(a->span, 0, 7);
    assert_int_equal(a->link.len, 0);
    assert_int_equal(a->n_props, 0);
    assert_string_equal(b->text, "identity");
    assert_span(b->link, 8, 1);
    assert_span(b->span, 10, 8);
    assert_string_equal(c->text, "fakesink");
    assert_span(c->link, 19, 1);
    reel_parse_description_free(&d);
    assert_null(d);
    reel_parse_description_free(&d); // NULL-safe
}

static void describe_props(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d = describe_ok(
        "testsrc framerate=30/1 num-buffers=5 name=src\n"
        "  ! fakesink location=/tmp/a.mp4 delay-us=0");
    const reel_parse_item *a = item(d, 0, 0), *b = item(d, 0, 1);
    assert_int_equal(a->n_props, 3);
    assert_string_equal(a->props[0].key, "framerate");
    assert_string_equal(a->props[0].value, "30/1");
    assert_span(a->props[0].key_span, 8, 9);
    assert_span(a->props[0].value_span, 18, 4);
    assert_string_equal(a->props[1].value, "5");
    assert_string_equal(reel_parse_item_prop(a, "name")->value, "src");
    assert_null(reel_parse_item_prop(a, "width"));
    assert_int_equal(b->n_props, 2);
    assert_string_equal(b->props[0].value, "/tmp/a.mp4");
    assert_string_equal(b->props[1].key, "delay-us");
    reel_parse_description_free(&d);
}

static void describe_quotes(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d = describe_ok("fakesink location=\"a b!#c\" ! fakesink");
    const reel_parse_item *a = item(d, 0, 0);
    assert_int_equal(d->chains[0].n_items, 2);
    assert_string_equal(a->props[0].value, "a b!#c"); // no link, no comment inside quotes
    assert_span(a->props[0].value_span, 18, 8);
    reel_parse_description_free(&d);

    d = describe_ok("fakesink x='it' y=\"q\\\"\\\\\\n\\t\\'\" z='\"' w=\"\"");
    a = item(d, 0, 0);
    assert_string_equal(a->props[0].value, "it");
    assert_string_equal(a->props[1].value, "q\"\\\n\t'");
    assert_string_equal(a->props[2].value, "\"");
    assert_string_equal(a->props[3].value, "");
    reel_parse_description_free(&d);
}

static void describe_comments_and_lines(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d = describe_ok(
        "# a pipeline in a file\n"
        "testsrc num-buffers=100 pattern=bars ! video/raw,format=rgb24,width=320 ! tee name=t\n"
        "t. ! queue max-size=8 ! fakesink\n"
        "t. ! queue leaky=downstream ! fakesink checksum=true   # to end of line\n"
        "testsrc\n"
        "  ! fakesink   # '!' may start the next line\n");
    assert_int_equal(d->n_chains, 4);
    assert_int_equal(d->chains[0].n_items, 3);
    assert_int_equal(d->chains[1].n_items, 3);
    assert_int_equal(d->chains[2].n_items, 3);
    assert_int_equal(d->chains[3].n_items, 2);
    assert_int_equal(item(d, 0, 1)->kind, REEL_PARSE_CAPS);
    assert_int_equal(item(d, 1, 0)->kind, REEL_PARSE_REF);
    assert_string_equal(item(d, 2, 2)->props[0].value, "true");
    assert_int_equal(item(d, 2, 2)->n_props, 1);
    int line, col;
    reel_parse_position(d->text, item(d, 2, 1)->span.pos, &line, &col);
    assert_int_equal(line, 4);
    assert_int_equal(col, 6);
    reel_parse_description_free(&d);

    // Properties may continue on the next line: newlines are whitespace.
    d = describe_ok("testsrc\n  num-buffers=5 # five\n  is-live=true\n! fakesink");
    assert_int_equal(item(d, 0, 0)->n_props, 2);
    assert_string_equal(item(d, 0, 0)->props[1].key, "is-live");
    reel_parse_description_free(&d);

    d = describe_ok("testsrc#comment\n!fakesink#x=1");
    assert_int_equal(d->n_chains, 1);
    assert_int_equal(item(d, 0, 1)->n_props, 0);
    reel_parse_description_free(&d);
}

// Whitespace around '=' as gst-launch-1.0 takes it; spans still point at
// the key and the value as written.
static void describe_spaces_around_equals(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d = describe_ok("testsrc num-buffers = 4 ! fakesink");
    const reel_parse_item *a = item(d, 0, 0);
    assert_int_equal(a->n_props, 1);
    assert_string_equal(a->props[0].key, "num-buffers");
    assert_string_equal(a->props[0].value, "4");
    assert_span(a->props[0].key_span, 8, 11);
    assert_span(a->props[0].value_span, 22, 1);
    assert_string_equal(item(d, 0, 1)->text, "fakesink");
    reel_parse_description_free(&d);

    d = describe_ok("testsrc num-buffers= 27 pattern =bars is-live\t=\n  true ! fakesink location = \"a b\"");
    a = item(d, 0, 0);
    assert_int_equal(a->n_props, 3);
    assert_string_equal(a->props[0].value, "27");
    assert_span(a->props[0].value_span, 21, 2);
    assert_string_equal(a->props[1].key, "pattern");
    assert_span(a->props[1].key_span, 24, 7);
    assert_string_equal(a->props[1].value, "bars");
    assert_span(a->props[1].value_span, 33, 4);
    assert_string_equal(a->props[2].key, "is-live");
    assert_string_equal(a->props[2].value, "true");
    assert_string_equal(item(d, 0, 1)->props[0].value, "a b");
    reel_parse_description_free(&d);

    // Settings before the first element too.
    d = describe_ok("device = cpu placement= prefer testsrc ! fakesink");
    assert_int_equal(d->n_settings, 2);
    assert_string_equal(d->settings[0].key, "device");
    assert_string_equal(d->settings[0].value, "cpu");
    assert_string_equal(d->settings[1].value, "prefer");
    assert_string_equal(item(d, 0, 0)->text, "testsrc");
    reel_parse_description_free(&d);
}

// GStreamer's caps: video/x-raw, typed values, upper-case formats, spaces
// after ',' and around '=', and caps in quotes.
static void describe_gstreamer_caps(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d = describe_ok("testsrc ! video/x-raw, width = 320,height= (int)240 ! fakesink");
    const reel_parse_item *c = item(d, 0, 1);
    assert_int_equal(c->kind, REEL_PARSE_CAPS);
    assert_string_equal(c->text, "video/x-raw,width=320,height=(int)240");
    assert_int_equal(c->caps_pos[12], 23);                 // 'w' of width
    assert_int_equal(c->caps_pos[18], 31);                 // '3' of 320
    assert_int_equal(c->caps_pos[strlen(c->text)], 51);    // the end, before " ! fakesink"
    assert_string_equal(item(d, 0, 2)->text, "fakesink");
    reel_parse_description_free(&d);

    d = describe_ok("testsrc ! 'video/x-raw, format=(string)RGB, width=(int)320' ! fakesink");
    c = item(d, 0, 1);
    assert_int_equal(c->kind, REEL_PARSE_CAPS);
    assert_string_equal(c->text, "video/x-raw,format=(string)RGB,width=(int)320");
    assert_span(c->span, 10, 49);
    assert_int_equal(c->caps_pos[0], 11);
    assert_int_equal(c->caps_pos[12], 24);                 // 'f' of format, past the space
    assert_int_equal(c->caps_pos[strlen(c->text)], 58);    // the closing quote
    reel_parse_description_free(&d);

    d = describe_ok("testsrc ! \"video/x-raw,format=I420\" ! fakesink");
    assert_string_equal(item(d, 0, 1)->text, "video/x-raw,format=I420");
    reel_parse_description_free(&d);
}

static void describe_references(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d =
        describe_ok("t. ! fakesink  testsrc ! mid. ! fakesink  identity ! t.");
    assert_int_equal(d->n_chains, 3);
    const reel_parse_item *r = item(d, 0, 0);
    assert_int_equal(r->kind, REEL_PARSE_REF);
    assert_string_equal(r->text, "t");
    assert_span(r->span, 0, 2);
    r = item(d, 1, 1);
    assert_int_equal(r->kind, REEL_PARSE_REF);
    assert_string_equal(r->text, "mid");
    assert_span(r->span, 25, 4);
    assert_int_equal(item(d, 2, 1)->kind, REEL_PARSE_REF);
    reel_parse_description_free(&d);
}

static void describe_caps(void **state)
{
    (void)state;
    reel_init();
    reel_parse_description *d = describe_ok(
        "testsrc ! video/raw, format=rgb24|bgr24,\n"
        "   width=320 ! tensor,dtype=float32,shape=1x3x224x224 ! any ! fakesink");
    const reel_parse_item *c = item(d, 0, 1);
    assert_int_equal(c->kind, REEL_PARSE_CAPS);
    assert_string_equal(c->text, "video/raw,format=rgb24|bgr24,width=320");
    assert_span(c->span, 10, 43);
    // Offsets map back to the text as written, past the whitespace.
    assert_int_equal(c->caps_pos[0], 10);
    assert_int_equal(c->caps_pos[10], 21);       // 'f' of format
    assert_int_equal(c->caps_pos[29], 44);       // 'w' of width, on line 2
    assert_int_equal(c->caps_pos[strlen(c->text)], 53);
    assert_string_equal(item(d, 0, 2)->text, "tensor,dtype=float32,shape=1x3x224x224");
    assert_int_equal(item(d, 0, 2)->kind, REEL_PARSE_CAPS);
    assert_string_equal(item(d, 0, 3)->text, "any");
    assert_int_equal(item(d, 0, 3)->kind, REEL_PARSE_CAPS);
    assert_int_equal(item(d, 0, 4)->kind, REEL_PARSE_ELEMENT);
    reel_parse_description_free(&d);
}

// ---- the message format ----------------------------------------------------

static void error_format(void **state)
{
    (void)state;
    reel_init();
    GError *err = NULL;
    assert_null(reel_parse_describe("testsrc ! fake$sink", "cam.reel", &err));
    assert_string_equal(err->message,
                        "cam.reel:1:15: error: unexpected character '$'\n"
                        "  1 | testsrc ! fake$sink\n"
                        "    |               ^");
    g_clear_error(&err);

    // Tabs are copied into the caret line; the gutter widens with the number.
    assert_null(reel_parse_describe("\n\n\n\n\n\n\n\n\n\ttestsrc\tx=\"abc", NULL, &err));
    assert_string_equal(err->message,
                        "pipeline:10:12: error: unterminated quoted value: no closing \"\n"
                        "  10 | \ttestsrc\tx=\"abc\n"
                        "     | \t       \t  ^");
    g_clear_error(&err);

    assert_null(reel_parse_describe("a ! h\xc3\xa9llo", NULL, &err)); // UTF-8: one column
    assert_string_equal(err->message,
                        "pipeline:1:6: error: unexpected character '\xc3\xa9'\n"
                        "  1 | a ! h\xc3\xa9llo\n"
                        "    |      ^");
    g_clear_error(&err);

    assert_null(reel_parse_describe("a ! b\r\n! !\r\n", NULL, &err)); // CRLF: no \r shown
    assert_string_equal(err->message,
                        "pipeline:2:3: error: '!' follows '!': missing element between them\n"
                        "  2 | ! !\n"
                        "    |   ^\n"
                        "hint: remove one of the two");
    g_clear_error(&err);
}

// ---- building --------------------------------------------------------------

static void launch_single_chain(void **state)
{
    (void)state;
    reel_init();
    reel_pipeline *p =
        launch_ok("testsrc num-buffers=10 pattern=bars ! identity ! fakesink name=out");
    static const char *const names[] = { "testsrc*", "identity*", "out" };
    assert_names(p, names, 3);
    reel_element *const *els = reel_pipeline_elements(p);
    assert_int_equal(reel_element_n_outputs(els[0]), 1);
    assert_int_equal(reel_element_n_inputs(els[1]), 1);
    assert_int_equal(reel_element_n_inputs(els[2]), 1);
    char *v = reel_element_get(els[0], "num-buffers");
    assert_string_equal(v, "10");
    g_free(v);
    reel_pipeline_destroy(&p);
    assert_null(p);
}

static void launch_branches(void **state)
{
    (void)state;
    reel_init();
    reel_pipeline *p = launch_ok(
        "testsrc num-buffers=100 pattern=bars ! video/raw,format=rgb24,width=320 ! tee name=t\n"
        "t. ! queue max-size=8 ! fakesink name=a\n"
        "t. ! queue leaky=downstream ! fakesink checksum=true\n"
        "     location=\"/tmp/out file.txt\"  # two\n");
    static const char *const names[] = { "testsrc*", "capsfilter*", "t", "queue*", "a", "queue*",
                                         "fakesink*" };
    assert_names(p, names, 7);
    reel_element *t = reel_pipeline_find(p, "t");
    assert_int_equal(reel_element_n_inputs(t), 1);
    assert_int_equal(reel_element_n_outputs(t), 2);
    reel_element *const *els = reel_pipeline_elements(p);
    assert_string_equal(reel_element_get_class(els[1])->name, "capsfilter");
    assert_int_equal(reel_element_n_outputs(els[1]), 1);
    assert_prop(p, reel_element_name(els[6]), "location", "/tmp/out file.txt");
    assert_prop(p, reel_element_name(els[5]), "leaky", "downstream");
    reel_pipeline_destroy(&p);
}

static void launch_forward_reference(void **state)
{
    (void)state;
    reel_init();
    // A reference may come before the element it names, and stand mid-chain.
    reel_pipeline *p = launch_ok("t. ! fakesink name=a\n"
                                 "testsrc ! identity name=mid ! tee name=t\n"
                                 "t. ! queue ! fakesink name=b");
    static const char *const names[] = { "a", "testsrc*", "mid", "t", "queue*", "b" };
    assert_names(p, names, 6);
    assert_int_equal(reel_element_n_outputs(reel_pipeline_find(p, "t")), 2);
    reel_pipeline_destroy(&p);

    p = launch_ok("testsrc ! identity name=mid\nmid. ! fakesink");
    assert_int_equal(reel_element_n_outputs(reel_pipeline_find(p, "mid")), 1);
    reel_pipeline_destroy(&p);

    p = launch_ok("testsrc ! tee name=t ! queue ! t2. t. ! fakesink  identity name=t2 ! fakesink");
    assert_int_equal(reel_element_n_inputs(reel_pipeline_find(p, "t2")), 1);
    reel_pipeline_destroy(&p);
}

static void launch_origin(void **state)
{
    (void)state;
    reel_init();
    GError *err = NULL;
    assert_null(reel_parse_launch("testsrc ! nosuchthing", "samples/x.reel", NULL, &err));
    assert_true(g_str_has_prefix(err->message, "samples/x.reel:1:11: error: "));
    g_clear_error(&err);
    assert_null(reel_parse_launch(NULL, NULL, NULL, &err));
    assert_true(g_str_has_prefix(err->message, "pipeline:1:1: error: empty pipeline description"));
    g_clear_error(&err);
    assert_null(reel_parse_launch("testsrc !", NULL, NULL, NULL)); // error may be NULL
}

// ---- error cases -----------------------------------------------------------
//
// Each case: the text, how the first line of the message starts (all of it
// where the parser writes the whole line; up to "error: " where the words
// come from the core), the caret line, and the hint line (NULL: none).

typedef struct error_case {
    const char *text, *first, *caret, *hint;
} error_case;

static void run_cases(const error_case *cases, size_t n, bool launch)
{
    for (size_t i = 0; i < n; i++) {
        const error_case *c = &cases[i];
        GError *err = NULL;
        if (launch) {
            reel_pipeline *p = reel_parse_launch(c->text, NULL, NULL, &err);
            assert_null(p);
        } else {
            reel_parse_description *d = reel_parse_describe(c->text, NULL, &err);
            assert_null(d);
        }
        check_error(err, c->first, c->caret, c->hint);
    }
}

static const error_case syntax_cases[] = {
    { "", "pipeline:1:1: error: empty pipeline description", "    | ^",
      "hint: write elements linked with '!', e.g. testsrc ! fakesink" },
    { "  # nothing\n\n", "pipeline:1:1: error: empty pipeline description", "    | ^",
      "hint: write elements linked with '!', e.g. testsrc ! fakesink" },
    { "! fakesink", "pipeline:1:1: error: '!' with no element before it", "    | ^",
      "hint: a chain starts with an element, e.g. testsrc ! fakesink" },
    { "testsrc ! ! fakesink", "pipeline:1:11: error: '!' follows '!': missing element between them",
      "    |           ^", "hint: remove one of the two" },
    { "testsrc !", "pipeline:1:9: error: missing element after '!'", "    |         ^", NULL },
    { "testsrc ! # trailing comment\n", "pipeline:1:9: error: missing element after '!'",
      "    |         ^", NULL },
    { "testsrc num-buffers=", "pipeline:1:9: error: missing value for property 'num-buffers'",
      "    |         ^~~~~~~~~~~~", NULL },
    { "testsrc num-buffers = ! fakesink",
      "pipeline:1:9: error: missing value for property 'num-buffers'", "    |         ^~~~~~~~~~~~~", NULL },
    { "testsrc ! =5", "pipeline:1:11: error: unexpected '='", "    |           ^",
      "hint: a property is written key=value after its element's class name" },
    { "fakesink location='a b ! identity",
      "pipeline:1:19: error: unterminated quoted value: no closing '", "    |                   ^",
      NULL },
    { "fakesink location=\"a\"b", "pipeline:1:22: error: unexpected character 'b'",
      "    |                      ^", "hint: quote the whole value" },
    { "fakesink location=\"a\\qb\"", "pipeline:1:21: error: unknown escape '\\q'",
      "    |                     ^~", "hint: the escapes are \\\" \\' \\\\ \\n \\t" },
    { "testsrc ! fake.sink", "pipeline:1:15: error: unexpected character '.'",
      "    |               ^", NULL },
    { "testsrc ! , ! fakesink", "pipeline:1:11: error: unexpected character ','",
      "    |           ^", NULL },
    { "testsrc ! video/raw width=320 ! fakesink",
      "pipeline:1:21: error: property 'width' without an element",
      "    |                     ^~~~~~",
      "hint: join caps fields with ',', e.g. video/raw,width=320" },
    { "testsrc ! max-size=3 ! fakesink",
      "pipeline:1:11: error: property 'max-size' without an element", "    |           ^~~~~~~~~",
      "hint: properties follow the class name, e.g. queue max-size=8" },
    { "testsrc ! tee name=t\n  t.", "pipeline:2:3: error: reference 't.' is not linked to anything",
      "    |   ^~", "hint: link it with '!', e.g. t. ! fakesink" },
    { "queue max-size=2 leaky=no max-size=3",
      "pipeline:1:27: error: property 'max-size' is set twice",
      "    |                           ^~~~~~~~", "hint: first set at 1:7" },
};

static void syntax_errors(void **state)
{
    (void)state;
    reel_init();
    run_cases(syntax_cases, G_N_ELEMENTS(syntax_cases), false);
    run_cases(syntax_cases, G_N_ELEMENTS(syntax_cases), true); // unchanged through launch
}

static const error_case unknown_element_cases[] = {
    { "testsrc ! fakesnk", "pipeline:1:11: error: unknown element 'fakesnk'",
      "    |           ^~~~~~~", "hint: did you mean 'fakesink'?" },
    { "testsrc ! queue\n  ! zzzzzzzzzz", "pipeline:2:5: error: unknown element 'zzzzzzzzzz'",
      "    |     ^~~~~~~~~~", "hint: 'reel inspect' lists the elements" },
};

static void launch_unknown_element(void **state)
{
    (void)state;
    reel_init();
    GError *err = NULL;
    assert_null(reel_parse_launch("testsrc ! fakesnk", NULL, NULL, &err));
    assert_string_equal(err->message,
                        "pipeline:1:11: error: unknown element 'fakesnk'\n"
                        "  1 | testsrc ! fakesnk\n"
                        "    |           ^~~~~~~\n"
                        "hint: did you mean 'fakesink'?");
    g_clear_error(&err);
    run_cases(unknown_element_cases, G_N_ELEMENTS(unknown_element_cases), true);
}

// A long line shows a window of 100 bytes around the error, the caret
// still under it.
static void launch_error_on_a_long_line(void **state)
{
    (void)state;
    reel_init();
    GString *text = g_string_new("testsrc");
    for (int i = 0; i < 30; i++)
        g_string_append(text, " ! identity");
    g_string_append(text, " ! fakesnk");
    for (int i = 0; i < 30; i++)
        g_string_append(text, " ! identity");
    GError *err = NULL;
    assert_null(reel_parse_launch(text->str, NULL, NULL, &err));
    assert_string_equal(err->message,
                        "pipeline:1:341: error: unknown element 'fakesnk'\n"
                        "  1 | ...ity ! identity ! identity ! identity ! identity ! fakesnk ! identity ! identity"
                        " ! identity ! identit...\n"
                        "    |                                                      ^~~~~~~\n"
                        "hint: did you mean 'fakesink'?");
    g_clear_error(&err);
    g_string_free(text, TRUE);
}

static const error_case unknown_property_cases[] = {
    { "testsrc num-bufers=3 ! fakesink",
      "pipeline:1:9: error: unknown property 'num-bufers' of element 'testsrc'",
      "    |         ^~~~~~~~~~", "hint: did you mean 'num-buffers'?" },
    { "testsrc ! queue nme=q ! fakesink",
      "pipeline:1:17: error: unknown property 'nme' of element 'queue'",
      "    |                 ^~~", "hint: did you mean 'name'?" },
    { "testsrc ! fakesink zzzzzzzz=1",
      "pipeline:1:20: error: unknown property 'zzzzzzzz' of element 'fakesink'",
      "    |                    ^~~~~~~~", "hint: 'reel inspect fakesink' lists its properties" },
};

static void launch_unknown_property(void **state)
{
    (void)state;
    reel_init();
    run_cases(unknown_property_cases, G_N_ELEMENTS(unknown_property_cases), true);
}

// The message is the element's own (it names the property and the accepted
// values); the caret is under the value, quotes included.
static const error_case bad_value_cases[] = {
    { "testsrc ! queue max-size=0 ! fakesink", "pipeline:1:26: error: ",
      "    |                          ^", NULL },
    { "testsrc is-live=\"perhaps\" ! fakesink", "pipeline:1:17: error: ",
      "    |                 ^~~~~~~~~", NULL },
    { "testsrc pattern=bars num-buffers=ten ! fakesink", "pipeline:1:34: error: ",
      "    |                                  ^~~", NULL },
};

static void launch_bad_value(void **state)
{
    (void)state;
    reel_init();
    GError *err = NULL;
    assert_null(reel_parse_launch("testsrc ! queue leaky=sideways ! fakesink", NULL, NULL, &err));
    assert_non_null(strstr(err->message, "leaky"));
    assert_non_null(strstr(err->message, "downstream"));
    check_error(err, "pipeline:1:23: error: ", "    |                       ^~~~~~~~", NULL);
    run_cases(bad_value_cases, G_N_ELEMENTS(bad_value_cases), true);
}

static const error_case reference_and_name_cases[] = {
    { "testsrc ! tee name=split\nsplt. ! fakesink",
      "pipeline:2:1: error: no element is named 'splt'", "    | ^~~~~",
      "hint: did you mean 'split.'?" },
    { "testsrc ! fakesink\nfakesink ! zzzzzz.",
      "pipeline:2:12: error: no element is named 'zzzzzz'", "    |            ^~~~~~~",
      "hint: give an element name=zzzzzz to refer to it as zzzzzz." },
    { "testsrc name=a ! fakesink name=a", "pipeline:1:32: error: duplicate element name 'a'",
      "    |                                ^", "hint: 'a' already names the element at 1:14" },
    { "testsrc name=src ! tee name=t\nt. ! fakesink name=\"src\"",
      "pipeline:2:20: error: duplicate element name 'src'", "    |                    ^~~~~",
      "hint: 'src' already names the element at 1:14" },
    { "testsrc ! fakesink name=\"\"", "pipeline:1:25: error: empty element name",
      "    |                         ^~", NULL },
};

static void launch_references_and_names(void **state)
{
    (void)state;
    reel_init();
    run_cases(reference_and_name_cases, G_N_ELEMENTS(reference_and_name_cases), true);
}

// The core's message names both ends; the caret is on the '!'.
static const error_case link_cases[] = {
    { "fakesink ! fakesink", "pipeline:1:10: error: ", "    |          ^", NULL },
    { "testsrc name=s ! fakesink\ns. ! fakesink", "pipeline:2:4: error: ", "    |    ^",
      "hint: to feed several branches, insert a tee: ... ! tee name=t ! a  t. ! b" },
    { "testsrc ! identity name=i\ntestsrc ! i.", "pipeline:2:9: error: ", "    |         ^", NULL },
};

static void launch_link_errors(void **state)
{
    (void)state;
    reel_init();
    run_cases(link_cases, G_N_ELEMENTS(link_cases), true);
}

// The caret is under the offending field, even past whitespace and lines.
static const error_case caps_cases[] = {
    { "testsrc ! video/raw,format=rgb25 ! fakesink", "pipeline:1:21: error: ",
      "    |                     ^~~~~~~~~~~~",
      "hint: reel's pixel formats: gray8, rgb24, bgr24, rgba, bgra, yuv420p, yuvj420p, nv12, yuv422p, yuv444p "
      "(GStreamer's GRAY8, RGB, BGR, RGBA, BGRA, I420, NV12, Y42B, Y444 are accepted too)" },
    { "testsrc ! video/raw, format=rgb24,\n    width=abc ! fakesink", "pipeline:2:5: error: ",
      "    |     ^~~~~~~~~", NULL },
    { "testsrc ! vidoe/raw ! fakesink", "pipeline:1:11: error: ", "    |           ^~~~~~~~~",
      "hint: did you mean 'video/raw'?" },
};

static void launch_bad_caps(void **state)
{
    (void)state;
    reel_init();
    run_cases(caps_cases, G_N_ELEMENTS(caps_cases), true);
}

// Mistakes in spaced properties point at the right column.
static const error_case spaced_cases[] = {
    { "testsrc num-bufers = 3 ! fakesink",
      "pipeline:1:9: error: unknown property 'num-bufers' of element 'testsrc'",
      "    |         ^~~~~~~~~~", "hint: did you mean 'num-buffers'?" },
    { "testsrc num-buffers = ten ! fakesink", "pipeline:1:23: error: ", "    |                       ^~~", NULL },
    { "testsrc num-buffers =", "pipeline:1:9: error: missing value for property 'num-buffers'",
      "    |         ^~~~~~~~~~~~~", NULL },
    { "queue max-size = 2 max-size= 3", "pipeline:1:20: error: property 'max-size' is set twice",
      "    |                    ^~~~~~~~", "hint: first set at 1:7" },
};

static void launch_spaces_around_equals(void **state)
{
    (void)state;
    reel_init();
    reel_pipeline *p = launch_ok("testsrc num-buffers = 4 ! queue max-size =3 ! fakesink name= out");
    assert_prop(p, "testsrc0", "num-buffers", "4");
    assert_prop(p, "queue0", "max-size", "3");
    assert_non_null(reel_pipeline_find(p, "out"));
    GError *err = NULL;
    assert_int_equal(reel_pipeline_run(p, &err), 0);
    reel_pipeline_destroy(&p);
    run_cases(spaced_cases, G_N_ELEMENTS(spaced_cases), true);
}

static const error_case gst_caps_cases[] = {
    { "testsrc ! 'video/x-raw, format=YUY2' ! fakesink", "pipeline:1:25: error: ",
      "    |                         ^~~~~~~~~~~",
      "hint: reel's pixel formats: gray8, rgb24, bgr24, rgba, bgra, yuv420p, yuvj420p, nv12, yuv422p, yuv444p "
      "(GStreamer's GRAY8, RGB, BGR, RGBA, BGRA, I420, NV12, Y42B, Y444 are accepted too)" },
    { "testsrc ! 'video/x-raw(memory:GLMemory)' ! fakesink", "pipeline:1:12: error: ",
      "    |            ^" "~~~~~~~~~~~~~~~~~~~~~~~~~~~",
      "hint: reel says where frames live with a field: video/raw,memory=device (or host)" },
    { "testsrc ! video/x-raw,width=(string)320 ! fakesink", "pipeline:1:23: error: ",
      "    |                       ^~~~~~~~~~~~~~~~~", "hint: write width=320 (or width=(int)320)" },
    { "testsrc ! video/x-raw,format={RGB,BGR} ! fakesink", "pipeline:1:23: error: ",
      "    |                       ^~~~~~~~~~~", "hint: write several formats as format=rgb24|bgr24" },
    { "testsrc ! video/x-raw,width=[16,320] ! fakesink", "pipeline:1:23: error: ",
      "    |                       ^~~~~~~~~", "hint: reel's caps take one width, e.g. width=320 (leave it out for any)" },
    { "source ! video/x-h264,stream-format=byte-stream ! fakesink", "pipeline:1:23: error: ",
      "    |                       ^~~~~~~~~~~~~~~~~~~~~~~~~",
      "hint: reel's caps have no stream-format: leave it out (the fields are format, width, height, framerate, "
      "codec, dtype, shape, memory)" },
    { "testsrc ! audio/x-raw ! fakesink", "pipeline:1:11: error: ", "    |           ^~~~~~~~~~~",
      "hint: reel's media types: video/raw (or video/x-raw), video/encoded,codec=NAME (or video/x-h264, "
      "video/x-h265, video/x-vp8, video/x-vp9, video/x-av1, video/x-theora, image/jpeg, image/png), tensor and any" },
};

static const error_case quoted_item_cases[] = {
    { "testsrc ! 'fakesink' ! fakesink", "pipeline:1:11: error: quoted text is not caps",
      "    |           ^~~~~~~~~~",
      "hint: only caps stand quoted on their own, e.g. 'video/raw,width=320'; a quoted value follows its "
      "property's '='" },
    { "testsrc ! 'video/raw'x ! fakesink", "pipeline:1:22: error: unexpected character 'x'",
      "    |                      ^", "hint: quote the whole caps" },
    { "testsrc ! 'video/raw ! fakesink", "pipeline:1:11: error: unterminated quoted value: no closing '",
      "    |           ^", NULL },
};

static void launch_gstreamer_caps(void **state)
{
    (void)state;
    reel_init();
    reel_pipeline *p = launch_ok("testsrc num-buffers=2 framerate=25 ! 'video/x-raw, format=(string)I420, "
                                 "width=(int)64, height=(int)48, framerate=(fraction)25/1' ! fakesink");
    // The caps filter holds reel's spelling.
    assert_prop(p, "capsfilter0", "caps", "video/raw,format=yuv420p,width=64,height=48,framerate=25/1");
    GError *err = NULL;
    if (reel_pipeline_prepare(p, &err) != 0)
        fail_msg("%s", err->message);
    char *f = reel_caps_to_string(reel_element_output_format(reel_pipeline_find(p, "testsrc0"), 0));
    assert_string_equal(f, "video/raw,format=yuv420p,width=64,height=48,framerate=25/1,memory=host");
    g_free(f);
    reel_pipeline_destroy(&p);

    p = launch_ok("testsrc num-buffers=2 ! video/x-raw,format=RGB|GRAY8 , width = 32,height=(int)24 ! fakesink");
    assert_prop(p, "capsfilter0", "caps", "video/raw,format=gray8|rgb24,width=32,height=24");
    reel_pipeline_destroy(&p);

    run_cases(gst_caps_cases, G_N_ELEMENTS(gst_caps_cases), true);
    run_cases(quoted_item_cases, G_N_ELEMENTS(quoted_item_cases), false);
}

// {NAME} in a value becomes its VALUE once the text is split: a value with
// '!', quotes or name= stays one value; a VALUE is not searched again; an
// unknown {NAME} stays as written.
static void launch_values(void **state)
{
    (void)state;
    reel_init();
    const char *values[] = { "out", "a.json ! fakesink name=\"x\" {n}", "n", "4", NULL };
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch("testsrc num-buffers={n} ! metasink location=/tmp/{out}{other}", NULL,
                                         reel_pipeline_params(.values = values), &err);
    if (!p)
        fail_msg("unexpected error:\n%s", err->message);
    assert_prop(p, "testsrc0", "num-buffers", "4");
    assert_prop(p, "metasink0", "location", "/tmp/a.json ! fakesink name=\"x\" {n}{other}");
    assert_null(reel_pipeline_find(p, "x"));
    assert_null(reel_pipeline_find(p, "fakesink0"));
    reel_pipeline_destroy(&p);
}

// A password in a URL never reaches a parse error; the caret stays put.
static void error_hides_passwords(void **state)
{
    (void)state;
    reel_init();
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch("source location=rtsp://cam:hunter2@h/x ! nosuchthing", NULL, NULL, &err);
    assert_null(p);
    assert_null(strstr(err->message, "hunter2"));
    assert_non_null(strstr(err->message, "rtsp://cam:*******@h/x ! nosuchthing"));
    assert_non_null(strstr(err->message, "\n    |                                          ^~~~~~~~~~~"));
    g_error_free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(describe_single_chain),
        cmocka_unit_test(describe_props),
        cmocka_unit_test(describe_quotes),
        cmocka_unit_test(describe_comments_and_lines),
        cmocka_unit_test(describe_spaces_around_equals),
        cmocka_unit_test(describe_gstreamer_caps),
        cmocka_unit_test(describe_references),
        cmocka_unit_test(describe_caps),
        cmocka_unit_test(error_format),
        cmocka_unit_test(syntax_errors),
        cmocka_unit_test(launch_single_chain),
        cmocka_unit_test(launch_branches),
        cmocka_unit_test(launch_forward_reference),
        cmocka_unit_test(launch_origin),
        cmocka_unit_test(launch_unknown_element),
        cmocka_unit_test(launch_unknown_property),
        cmocka_unit_test(launch_bad_value),
        cmocka_unit_test(launch_references_and_names),
        cmocka_unit_test(launch_link_errors),
        cmocka_unit_test(launch_error_on_a_long_line),
        cmocka_unit_test(launch_bad_caps),
        cmocka_unit_test(launch_spaces_around_equals),
        cmocka_unit_test(launch_gstreamer_caps),
        cmocka_unit_test(launch_values),
        cmocka_unit_test(error_hides_passwords),
    };
    return reel_run_tests(tests, NULL, NULL);
}

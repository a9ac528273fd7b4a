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
    { "testsrc num-buffers= 5 ! fakesink",
      "pipeline:1:9: error: missing value for property 'num-buffers'", "    |         ^~~~~~~~~~~~",
      "hint: no spaces are allowed after '='" },
    { "testsrc num-buffers =5", "pipeline:1:21: error: unexpected '='",
      "    |                     ^", "hint: write key=value with no spaces around '='" },
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
      "    |                     ^~~~~~~~~~~~", NULL },
    { "testsrc ! video/raw, format=rgb24,\n    width=abc ! fakesink", "pipeline:2:5: error: ",
      "    |     ^~~~~~~~~", NULL },
    { "testsrc ! vidoe/raw ! fakesink", "pipeline:1:11: error: ", "    |           ^~~~~~~~~",
      NULL },
};

static void launch_bad_caps(void **state)
{
    (void)state;
    reel_init();
    run_cases(caps_cases, G_N_ELEMENTS(caps_cases), true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(describe_single_chain),
        cmocka_unit_test(describe_props),
        cmocka_unit_test(describe_quotes),
        cmocka_unit_test(describe_comments_and_lines),
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
    };
    return reel_run_tests(tests, NULL, NULL);
}

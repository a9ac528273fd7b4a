// The JSON reader (pipeline/json_read.c): RFC 8259 accepted, everything
// else refused with the byte it stopped at; values and members read back.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/json_read.h"
#include "reel/error.h"
#include "tests/support/skip.h"

static void accepted(void **state)
{
    (void)state;
    const char *good[] = {
        "0", "-0", "12.5e-3", "1E+2", "true", "false", "null", "\"\"", "[]", "{}", " [1, [2, {}]] ",
        "\"\\u00e9\\ud83d\\ude00\\n\\/\"", "{\"a\": 1, \"a\": 2}",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
        GError *err = NULL;
        reel_json_value *v = reel_json_parse(good[i], strlen(good[i]), &err);
        if (!v)
            fail_msg("'%s' refused: %s", good[i], err->message);
        reel_json_free(v);
    }
}

static void refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "", "01", "1.", ".5", "+1", "-", "1e", "0x10", "nul", "[1,]", "{\"a\" 1}", "{1: 2}", "[1 2]", "\"\\x\"",
        "\"\\ud800\"", "\"\\u0000\"", "\"tab\there\"", "\"\xff\"", "1 2", "[", "\"open",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        GError *err = NULL;
        reel_json_value *v = reel_json_parse(bad[i], strlen(bad[i]), &err);
        if (v)
            fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(err->code, REEL_EFORMAT);
        assert_non_null(strstr(err->message, "at byte"));
        g_error_free(err);
    }
}

static void members(void **state)
{
    (void)state;
    const char *text = "{\"id\": \"job-1\", \"n\": 3, \"n\": 4, \"list\": [true, null]}";
    reel_json_value *v = reel_json_parse(text, strlen(text), NULL);
    assert_non_null(v);
    assert_string_equal(reel_json_member_string(v, "id", NULL), "job-1");
    assert_true(reel_json_member_number(v, "n", 0) == 4); // the last of duplicate keys
    assert_true(reel_json_member_number(v, "id", -1) == -1); // another kind: the fallback
    const reel_json_value *list = reel_json_member(v, "list");
    assert_int_equal(list->kind, REEL_JSON_ARRAY);
    assert_int_equal(list->items->len, 2);
    const reel_json_value *first = g_ptr_array_index(list->items, 0);
    assert_true(first->kind == REEL_JSON_BOOL && first->boolean);
    assert_null(reel_json_member(v, "missing"));
    reel_json_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepted),
        cmocka_unit_test(refused),
        cmocka_unit_test(members),
    };
    return reel_run_tests(tests, NULL, NULL);
}

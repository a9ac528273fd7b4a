// Fuzz target: the pipeline text parser and builder (reel_parse_launch), the
// input being the description up to its first NUL. A description either
// builds a pipeline, or fails with the positioned message parse.h promises:
//   fuzz:LINE:COL: error: what
//     LINE | the line
//          |     ^~~
// with LINE and COL inside the text.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/reel.h"

static void die(const char *what, const char *text, const char *message)
{
    fprintf(stderr, "fuzz_parse: %s\ntext: %s\nmessage: %s\n", what, text, message ? message : "(none)");
    abort();
}

// The message's position and layout against the text.
static void check_message(const char *text, const char *m)
{
    int line = 0, col = 0, used = 0;
    if (sscanf(m, "fuzz:%d:%d: error: %n", &line, &col, &used) != 2 || used == 0)
        die("the message does not start with fuzz:LINE:COL: error:", text, m);
    int lines = 1;
    size_t line_start = 0, line_len = strlen(text);
    for (size_t i = 0; text[i]; i++) {
        if (text[i] == '\n') {
            if (lines == line)
                line_len = i - line_start;
            lines++;
            if (lines == line)
                line_start = i + 1;
        }
    }
    if (line < 1 || line > lines)
        die("the message names a line outside the text", text, m);
    if (line == 1)
        line_start = 0;
    if (lines == line)
        line_len = strlen(text) - line_start;
    if (col < 1 || (size_t)col > line_len + 1)
        die("the message names a column outside its line", text, m);
    char *quote = g_strdup_printf("\n  %d | ", line);
    const char *q = strstr(m, quote);
    g_free(quote);
    if (!q)
        die("the message does not quote the line", text, m);
    const char *caret_line = strchr(q + 1, '\n');
    if (!caret_line || !strchr(caret_line, '^'))
        die("the message has no caret", text, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reel_init(); // the built-in elements (once)
    char *text = g_strndup((const char *)data, size);
    GError *err = NULL;
    reel_pipeline *p = reel_parse_launch(text, "fuzz", NULL, &err);
    if (p && err)
        die("a pipeline and an error both", text, err->message);
    if (!p && (!err || !err->message))
        die("no pipeline and no error", text, NULL);
    if (!p)
        check_message(text, err->message);
    reel_pipeline_destroy(&p);
    g_clear_error(&err);
    g_free(text);
    return 0;
}

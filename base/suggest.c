#include "base/suggest.h"

#include <glib.h>
#include <stdbool.h>
#include <string.h>

static bool same(char x, char y)
{
    return g_ascii_tolower(x) == g_ascii_tolower(y);
}

// Edit distance where swapping two neighbours counts as one edit, as typos
// do ("widht"). Three rows; names are short.
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    size_t *prev2 = g_new0(size_t, lb + 1), *prev = g_new(size_t, lb + 1), *row = g_new(size_t, lb + 1);
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = MIN(prev[j] + 1, row[j - 1] + 1);
            best = MIN(best, prev[j - 1] + !same(a[i - 1], b[j - 1]));
            if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
                best = MIN(best, prev2[j - 2] + 1);
            row[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = row;
        row = t;
    }
    size_t d = prev[lb];
    g_free(prev2);
    g_free(prev);
    g_free(row);
    return d;
}

const char *reel_suggest(const char *word, const char *const *candidates, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    size_t limit = MAX(strlen(word) / 3, 1);
    for (size_t i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c)
            continue;
        if (*word && g_str_has_prefix(c, word) && best_d > 0)
            return c;
        size_t d = edit_distance(word, c);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    return best_d <= limit ? best : NULL;
}

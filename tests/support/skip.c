#include "skip.h"

#include <stdio.h>

static int skips;

void reel_skip_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("SKIP: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    va_end(ap);
    skips++;
}

int reel_skips(void)
{
    return skips;
}

int reel_test_verdict(int failed)
{
    if (failed)
        return 1; // not the count: exit codes wrap at 256
    if (skips) {
        printf("%d check%s skipped: exit 77\n", skips, skips == 1 ? "" : "s");
        return 77;
    }
    return 0;
}

// reel — figures of the running process (see process.h).
#include "base/process.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

void reel_process_rss(int64_t *now, int64_t *peak)
{
    *now = -1;
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%*s %ld", &pages) == 1)
        *now = (int64_t)pages * sysconf(_SC_PAGESIZE);
    if (f)
        fclose(f);
    if (!peak)
        return;
    *peak = -1;
    char *status = NULL;
    if (g_file_get_contents("/proc/self/status", &status, NULL, NULL)) {
        const char *hwm = strstr(status, "\nVmHWM:");
        long kib;
        if (hwm && sscanf(hwm + 7, "%ld", &kib) == 1)
            *peak = (int64_t)kib * 1024;
        g_free(status);
    }
}

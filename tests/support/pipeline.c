// Pipeline steps the C tests share.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/pipeline.h"

void reel_test_start(reel_pipeline *p)
{
    GError *err = NULL;
    if (reel_pipeline_start(p, &err) != 0)
        fail_msg("start failed: %s", err->message);
}

void reel_test_wait(reel_pipeline *p)
{
    GError *err = NULL;
    if (reel_pipeline_wait(p, &err) != 0)
        fail_msg("run failed: %s", err->message);
}

reel_element_report reel_test_report_of(reel_pipeline *p, const char *name)
{
    enum { MAX = 256 };
    reel_element_report r[MAX];
    int n = reel_pipeline_report(p, r, MAX);
    for (int i = 0; i < n && i < MAX; i++)
        if (strcmp(r[i].name, name) == 0)
            return r[i];
    fail_msg("no element '%s' in the report", name);
    return r[0];
}

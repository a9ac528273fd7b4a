// The reel program's fleet module: worker, submit and jobs, on libnats.
#include <string.h>

#include "reel/export.h"
#include "tools/cli.h"

REEL_API int reel_fleet_command(const char *name, int argc, char **argv)
{
    if (strcmp(name, "worker") == 0)
        return cmd_worker(argc, argv);
    if (strcmp(name, "submit") == 0)
        return cmd_submit(argc, argv);
    if (strcmp(name, "jobs") == 0)
        return cmd_jobs(argc, argv);
    return EXIT_USAGE;
}

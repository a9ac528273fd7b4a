// The reel program's serve module: `reel serve`, on libsoup.
#include <string.h>

#include "reel/export.h"
#include "tools/cli.h"

REEL_API int reel_serve_command(const char *name, int argc, char **argv)
{
    return strcmp(name, "serve") == 0 ? cmd_serve(argc, argv) : EXIT_USAGE;
}

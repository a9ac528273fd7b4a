// reel devices: being written.
#include <stdio.h>

#include "tools/cli.h"

int cmd_devices(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("0  cpu\n");
    return EXIT_OK;
}

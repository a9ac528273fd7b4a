// reel — opening a file beneath a folder (see beneath.h).
#include "beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <glib.h>

int reel_open_beneath(int dir, const char *path, int flags)
{
    struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
                            .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
    return (int)syscall(SYS_openat2, dir, path, &how, sizeof how);
}

const char *reel_beneath_strerror(int e)
{
    switch (e) {
    case EXDEV:
    case ELOOP:
        return "it leads out of the folder (through '..', an absolute link or a mount)";
    case ENOENT:
        return "no such file or folder";
    case ENOSYS:
        return "this kernel cannot open files beneath a folder (openat2, Linux 5.6)";
    default:
        return g_strerror(e);
    }
}

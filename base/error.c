#include "reel/error.h"

G_DEFINE_QUARK(reel-error-quark, reel_error)

const char *reel_strerror(int code)
{
    switch (code) {
    case REEL_OK: return "success";
    case REEL_EOS: return "end of stream";
    case REEL_AGAIN: return "try again";
    case REEL_EINVAL: return "invalid argument";
    case REEL_ENOMEM: return "out of memory";
    case REEL_ENOMEM_DEVICE: return "out of device memory";
    case REEL_EDEVICE_LOST: return "device lost";
    case REEL_EUNSUPPORTED: return "not supported";
    case REEL_EFORMAT: return "format error";
    case REEL_EIO: return "input/output error";
    case REEL_ESTOPPED: return "stopped";
    case REEL_EINTERNAL: return "internal error";
    }
    return "unknown error";
}

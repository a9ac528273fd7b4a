// reel — reading a whole file, bounded (see read_file.h).
#include "base/read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reel/error.h"
#include "reel/limits.h"

int reel_read_file(const char *path, const char *what, gsize max_bytes, const char *limit_env, char **data,
                   gsize *len, GError **error)
{
    *data = NULL;
    // O_NONBLOCK: a FIFO with no writer must not hang the open.
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fcntl(fd, F_SETFL, 0) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        g_set_error(error, REEL_ERROR, REEL_EIO, "cannot open %s '%s': %s", what, path, g_strerror(e));
        return REEL_EIO;
    }
    struct stat st;
    gsize expect = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 ? (gsize)st.st_size : 0;
    GByteArray *buf = g_byte_array_sized_new((guint)MIN(expect, max_bytes) + 1);
    guint8 chunk[65536];
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            g_set_error(error, REEL_ERROR, REEL_EIO, "cannot read %s '%s': %s", what, path, g_strerror(errno));
            rc = REEL_EIO;
            break;
        }
        if (n == 0)
            break;
        if ((gsize)n > max_bytes - buf->len) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s '%s' is larger than the limit of %" G_GSIZE_FORMAT
                        " bytes%s%s%s", what, path, max_bytes, limit_env ? " (" : "", limit_env ? limit_env : "",
                        limit_env ? ")" : "");
            rc = REEL_EFORMAT;
            break;
        }
        g_byte_array_append(buf, chunk, (guint)n);
    }
    close(fd);
    if (rc != 0) {
        g_byte_array_free(buf, TRUE);
        return rc;
    }
    if (len)
        *len = buf->len;
    g_byte_array_append(buf, (const guint8 *)"", 1);
    *data = (char *)g_byte_array_free(buf, FALSE);
    return 0;
}

int reel_read_text_file(const char *path, const char *what, char **data, GError **error)
{
    return reel_read_file(path, what, (gsize)reel_limit_get(REEL_LIMIT_TEXT_BYTES),
                          reel_limit_env(REEL_LIMIT_TEXT_BYTES), data, NULL, error);
}

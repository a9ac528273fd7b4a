// reel — opening a file beneath a folder, whatever the path says.
//
// A path from outside (a job, a model's external data) may climb out with
// "..", an absolute symlink or a mount; checking the string does not stop a
// link planted inside. openat2(RESOLVE_BENEATH) makes the kernel refuse any
// step that leaves the folder.
#ifndef REEL_BASE_BENEATH_H
#define REEL_BASE_BENEATH_H

// openat2() of `path` beneath the folder `dir` (a descriptor) with `flags`
// (O_CLOEXEC added); magic links (/proc/self/fd/N) are refused too. Returns
// the descriptor, or -1 with errno (EXDEV or ELOOP: it leads out; ENOSYS:
// the kernel predates Linux 5.6).
int reel_open_beneath(int dir, const char *path, int flags);

// Why reel_open_beneath() failed with errno `e`, for a message ("it leads
// out of the folder ...").
const char *reel_beneath_strerror(int e);

#endif

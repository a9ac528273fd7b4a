// reel — figures of the running process.
#ifndef REEL_BASE_PROCESS_H
#define REEL_BASE_PROCESS_H

#include <stdint.h>

// Resident memory of the process now and at its peak, in bytes (Linux
// /proc); -1 where it cannot be read. peak may be NULL.
void reel_process_rss(int64_t *now, int64_t *peak);

#endif

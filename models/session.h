// Session internals the command-line tools use (bench --profile). Only
// models/ and tools/ include this.
#ifndef REEL_MODELS_SESSION_H
#define REEL_MODELS_SESSION_H

#include <stdbool.h>

#include "reel/model.h"

// Time of one node in the last run (nodes folded while planning are absent).
typedef struct reel_session_node_time {
    const char *node, *op;       // point into the model
    double seconds;
} reel_session_node_time;

// Turns per-node timing on or off (off by default).
void reel_session_set_profile(reel_session *s, bool on);
// The per-node times of the last run with profiling on; count in *n.
const reel_session_node_time *reel_session_node_times(const reel_session *s, int *n);
// Plans built so far (one per concrete input shape).
int reel_session_n_plans(const reel_session *s);

// The arena planner, shared by the cpu arena and a device's
// (models/vulkan/exec.c): value v, alive from node def to node last
// (inclusive), takes size bytes.
typedef struct reel_arena_value {
    int v, def, last;
    size_t size;
} reel_arena_value;
// Sets offset[lv[i].v] for each of the n values so that two alive at once
// never share a byte (greedy: largest first, lowest offset that fits);
// returns the arena's size. Reorders lv. Offsets are sums of sizes, so
// sizes that are multiples of an alignment give aligned offsets.
size_t reel_arena_place(reel_arena_value *lv, int n, size_t *offset);

#endif

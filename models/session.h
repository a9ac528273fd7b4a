// Session internals: the arena planner. Only models/ includes this.
#ifndef REEL_MODELS_SESSION_H
#define REEL_MODELS_SESSION_H

#include <stddef.h>

#include "reel/model.h"

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

// The nodes of the last run's plan inferred at run time (their output
// shapes depend on computed values); 0 for a plan that is all static.
int reel_session_dynamic_nodes(const reel_session *s);

#endif

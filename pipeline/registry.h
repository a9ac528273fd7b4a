// What the registry asks of the layer above when a class is not registered:
// lib/ loads the module that has it. Only pipeline/ and lib/ include this.
#ifndef REEL_PIPELINE_REGISTRY_H
#define REEL_PIPELINE_REGISTRY_H

typedef struct reel_registry_loader {
    // Registers class `name` if some module has it (a no-op otherwise).
    void (*load)(const char *name);
    // Registers every class any module has (for listings and suggestions).
    void (*load_all)(void);
    // Why class `name` cannot be had (g_free), or NULL when none is known.
    char *(*why_missing)(const char *name);
} reel_registry_loader;

// Sets the loader (static storage; NULL: none). Thread-safety: before
// building pipelines (reel_init does it).
void reel_registry_set_loader(const reel_registry_loader *loader);

// The loader's reason for a missing class, or NULL.
char *reel_registry_why_missing(const char *name);

#endif

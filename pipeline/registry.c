// The element registry: every class a pipeline can be built from.
#include "pipeline/internal.h"
#include "pipeline/registry.h"
#include "reel/error.h"

#include <string.h>

static GMutex registry_lock;
static GPtrArray *classes; // sorted by name, NULL-terminated
static const reel_registry_loader *loader;

void reel_registry_set_loader(const reel_registry_loader *l)
{
    loader = l;
}

char *reel_registry_why_missing(const char *name)
{
    return loader && loader->why_missing ? loader->why_missing(name) : NULL;
}

static gint by_name(gconstpointer a, gconstpointer b)
{
    const reel_element_class *x = *(const reel_element_class *const *)a;
    const reel_element_class *y = *(const reel_element_class *const *)b;
    return strcmp(x->name, y->name);
}

static bool add_locked(const reel_element_class *klass)
{
    for (guint i = 0; i + 1 < classes->len; i++)
        if (strcmp(((reel_element_class *)classes->pdata[i])->name, klass->name) == 0)
            return false;
    g_ptr_array_remove_index(classes, classes->len - 1);
    g_ptr_array_add(classes, (gpointer)klass);
    g_ptr_array_sort(classes, by_name);
    g_ptr_array_add(classes, NULL);
    return true;
}

// The registry starts with the classes the core inserts itself, so that a
// description's caps and memory crossings never depend on registration.
static void ensure_locked(void)
{
    if (classes)
        return;
    classes = g_ptr_array_new();
    g_ptr_array_add(classes, NULL);
    add_locked(&reel_capsfilter_class);
    add_locked(&reel_upload_class);
    add_locked(&reel_download_class);
}

int reel_element_class_register(const reel_element_class *klass)
{
    g_mutex_lock(&registry_lock);
    ensure_locked();
    bool added = add_locked(klass);
    g_mutex_unlock(&registry_lock);
    return added ? 0 : REEL_EINVAL;
}

static const reel_element_class *lookup(const char *name)
{
    const reel_element_class *found = NULL;
    g_mutex_lock(&registry_lock);
    ensure_locked();
    for (guint i = 0; classes && i + 1 < classes->len && !found; i++)
        if (strcmp(((reel_element_class *)classes->pdata[i])->name, name) == 0)
            found = classes->pdata[i];
    g_mutex_unlock(&registry_lock);
    return found;
}

const reel_element_class *reel_element_class_find(const char *name)
{
    const reel_element_class *found = lookup(name);
    // Not yet loaded: the loader registers it (the lock is not held, as
    // registering takes it).
    if (!found && loader && loader->load) {
        loader->load(name);
        found = lookup(name);
    }
    return found;
}

const reel_element_class *const *reel_element_class_list(void)
{
    if (loader && loader->load_all)
        loader->load_all();
    g_mutex_lock(&registry_lock);
    ensure_locked();
    g_mutex_unlock(&registry_lock);
    return (const reel_element_class *const *)classes->pdata;
}

// Modules for libreel.so: shared objects in the module directory, opened
// with dlopen when first needed.
#include <dlfcn.h>

#include "lib/modules.h"

const char *reel_module_dir(void)
{
    static gsize dir;
    if (g_once_init_enter(&dir)) {
        const char *env = g_getenv("REEL_MODULE_DIR");
        Dl_info info = { 0 };
        char *found;
        if (env && *env) {
            found = g_strdup(env);
        } else if (dladdr((void *)reel_module_dir, &info) && info.dli_fname) {
            // Beside the library: lib/libreel.so and lib/reel-modules/.
            char *lib = g_path_get_dirname(info.dli_fname);
            found = g_build_filename(lib, "reel-modules", NULL);
            g_free(lib);
        } else {
            found = g_strdup("reel-modules");
        }
        g_once_init_leave(&dir, (gsize)found);
    }
    return (const char *)dir;
}

reel_module_register_fn reel_module_entry(const reel_module_info *m, GError **error)
{
    char *file = g_strdup_printf("libreel-%s.so", m->name);
    char *path = g_build_filename(reel_module_dir(), file, NULL);
    g_free(file);
    // Never closed: the classes it registered are its static data. Lazy
    // binding, as a program's own libraries get: resolving every symbol of
    // FFmpeg's two hundred libraries up front costs more than its use.
    // (The module was linked --no-undefined against this libreel.so.)
    void *handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    reel_module_register_fn fn = NULL;
    if (!handle) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "cannot load reel's %s module (%s): %s", m->name, m->needs,
                    dlerror());
    } else {
        char *sym = g_strdup_printf("reel_module_%s_register", m->name);
        fn = (reel_module_register_fn)dlsym(handle, sym);
        if (!fn)
            g_set_error(error, REEL_ERROR, REEL_EIO, "%s has no %s", path, sym);
        g_free(sym);
    }
    g_free(path);
    return fn;
}

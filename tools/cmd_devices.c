// reel devices: every device reel can run on, or which one a spec opens.
#include <stdio.h>
#include <string.h>

#include "reel/device.h"
#include "reel/model.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: reel devices [SPEC]\n"
    "\n"
    "Lists every device with what reel uses of it. With SPEC (cpu, auto,\n"
    "vulkan:N, a name substring or a UUID), opens the device it names and\n"
    "describes that one.\n";

static const char *yes(bool b)
{
    return b ? "yes" : "no";
}

static void describe(const reel_device_info *d)
{
    printf("%-10s %s\n", d->spec, d->name);
    printf("  backend %s, type %s, vendor %s (0x%04x)\n", reel_backend_name(d->backend),
           reel_device_type_name(d->type), d->vendor, d->vendor_id);
    printf("  driver  %s\n", d->driver);
    printf("  uuid    %s\n", d->uuid_str);
    for (int i = 0; i < d->n_heaps; i++) {
        g_autofree char *size = g_format_size_full(d->heaps[i].size, G_FORMAT_SIZE_IEC_UNITS);
        printf("  heap %d  %s%s", i, size, d->heaps[i].device_local ? ", device-local" : ", host");
        if (d->heaps[i].budget) {
            g_autofree char *budget = g_format_size_full(d->heaps[i].budget, G_FORMAT_SIZE_IEC_UNITS);
            printf(", budget %s", budget);
        }
        printf("\n");
    }
    printf("  features fp16 %s, int8 %s, subgroup %u, external memory %s, unified memory %s, timestamps %s\n",
           yes(d->fp16), yes(d->int8), d->subgroup_size, yes(d->external_memory), yes(d->unified_memory),
           yes(d->timestamps));
    printf("  limits  workgroup %u invocations, storage buffer %" G_GUINT64_FORMAT " bytes\n",
           d->max_workgroup_invocations, d->max_storage_buffer_range);
    if (d->backend == REEL_BACKEND_CPU) {
        // The model runtime's GEMMs: which OpenBLAS kernels run them.
        printf("  blas    %s\n", reel_model_cpu_info());
    }
}

int cmd_devices(int argc, char **argv)
{
    if (argc > 0 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    if (argc > 1 || (argc == 1 && argv[0][0] == '-')) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    if (argc == 1) {
        GError *error = NULL;
        reel_device *dev = reel_device_open(argv[0], &error);
        if (!dev) {
            fprintf(stderr, "reel: %s\n", error->message);
            g_error_free(error);
            return EXIT_RUNTIME;
        }
        describe(reel_device_info_of(dev));
        reel_device_unref(&dev);
        return EXIT_OK;
    }
    reel_device_info *infos;
    int n = reel_device_list(&infos);
    for (int i = 0; i < n; i++)
        describe(&infos[i]);
    g_free(infos);
    return EXIT_OK;
}

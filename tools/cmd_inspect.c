// reel inspect: the element catalogue, written from the classes' own tables.
#include <stdio.h>
#include <string.h>

#include "base/suggest.h"
#include "reel/reel.h"
#include "tools/cli.h"

static void list_all(void)
{
    for (const reel_element_class *const *k = reel_element_class_list(); *k; k++)
        printf("%-14s %s\n", (*k)->name, (*k)->description);
}

static void print_pads(const char *what, int min, int max, const char *caps)
{
    if (max == 0) {
        printf("  %-8s none\n", what);
        return;
    }
    char *count = max == REEL_PADS_ANY ? g_strdup_printf("%d or more", min)
                  : min == max         ? g_strdup_printf("%d", min)
                                       : g_strdup_printf("%d to %d", min, max);
    printf("  %-8s %s, format %s\n", what, count, caps ? caps : "any");
    g_free(count);
}

static void describe(const reel_element_class *k)
{
    unsigned on = k->devices ? k->devices : REEL_RUNS_ON_CPU;
    printf("%s\n  %s\n\nruns on: %s%s%s\n\npads:\n", k->name, k->description, on & REEL_RUNS_ON_CPU ? "cpu" : "",
           on == (REEL_RUNS_ON_CPU | REEL_RUNS_ON_VULKAN) ? ", " : "", on & REEL_RUNS_ON_VULKAN ? "vulkan" : "");
    print_pads("inputs", k->min_inputs, k->max_inputs, k->input_caps);
    print_pads("outputs", k->min_outputs, k->max_outputs, k->output_caps);
    // Each property says whether it may change while the pipeline runs.
    printf("\nproperties (mutable: may change while the pipeline runs, from its next buffer on; "
           "fixed: only before it starts):\n");
    printf("  %-14s %-9s %-8s %s\n", "name", "string", "fixed", "element name (default: class name and a number)");
    printf("  %-14s %-9s %-8s %s\n", "device", "string", "fixed", "where it runs (default: the pipeline's device)");
    for (const reel_prop *p = k->props; p && p->name; p++) {
        char *valid = reel_prop_describe_values(p);
        const char *when = p->flags & REEL_PROP_MUTABLE ? "mutable" : "fixed";
        printf("  %-14s %-9s %-8s %s\n", p->name, reel_prop_type_name(p->type), when, p->help ? p->help : "");
        printf("  %-14s %-9s %-8s default: %s; %s\n", "", "", "", p->def ? p->def : "(none)", valid);
        // What a worker's job policy checks it against (README, Security).
        const char *names = p->flags & REEL_PROP_READS_FILE    ? "reads a file (policy: beneath the root)"
                            : p->flags & REEL_PROP_WRITES_FILE ? "writes a file (policy: beneath the root)"
                            : p->flags & REEL_PROP_READS_URL   ? "reads a file or a URL (policy: root, schemes, hosts)"
                            : p->flags & REEL_PROP_WRITES_URL  ? "writes a file or a URL (policy: root, schemes, hosts)"
                            : p->flags & REEL_PROP_NATS_SUBJECT ? "a NATS subject (policy: subjects)"
                            : p->flags & REEL_PROP_TEST_HOOK   ? "a test hook (policy: test-hooks)"
                            : p->flags & REEL_PROP_READS_ENV   ? "an environment variable's name (policy: env)"
                                                               : NULL;
        if (names)
            printf("  %-14s %-9s %-8s %s\n", "", "", "", names);
        for (const reel_enum_value *v = p->values; v && v->name; v++)
            if (v->help)
                printf("  %-14s %-9s %-8s   %-12s %s\n", "", "", "", v->name, v->help);
        g_free(valid);
    }
}

int cmd_inspect(int argc, char **argv)
{
    if (argc == 0) {
        list_all();
        return EXIT_OK;
    }
    if (argc > 1 || argv[0][0] == '-') {
        fprintf(stderr, "usage: reel inspect [ELEMENT]\n");
        return strcmp(argv[0], "--help") == 0 ? EXIT_OK : EXIT_USAGE;
    }
    const reel_element_class *k = reel_element_class_find(argv[0]);
    char *why = k ? NULL : reel_element_class_why_missing(argv[0]);
    if (why) { // an element of a part this build leaves out
        fprintf(stderr, "reel: %s\n", why);
        g_free(why);
        return EXIT_USAGE;
    }
    if (!k) {
        const reel_element_class *const *all = reel_element_class_list();
        GPtrArray *names = g_ptr_array_new();
        for (; *all; all++)
            g_ptr_array_add(names, (gpointer)(*all)->name);
        const char *close = reel_suggest(argv[0], (const char *const *)names->pdata, names->len);
        fprintf(stderr, "reel: no element called '%s'", argv[0]);
        if (close)
            fprintf(stderr, "; did you mean '%s'?", close);
        fprintf(stderr, " ('reel inspect' lists them all)\n");
        g_ptr_array_free(names, TRUE);
        return EXIT_USAGE;
    }
    describe(k);
    return EXIT_OK;
}

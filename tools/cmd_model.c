// reel model: describe an ONNX model; run and bench live in cmd_model_run.c.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/model.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: reel model info MODEL.onnx\n"
    "       reel model run MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR\n"
    "                      [--device SPEC] [--threads N]\n"
    "       reel model bench MODEL.onnx [--threads N] [--profile]\n"
    "       reel model quantize MODEL --calibrate VIDEO|IMAGE_DIR --out MODEL.int8.onnx [--frames N]\n"
    "                      [--method minmax|percentile] [--per-channel|--per-tensor] [preprocess options]\n"
    "\n"
    "info: inputs and outputs with their shapes (symbolic dims by name), the op\n"
    "histogram after the load-time passes, parameters and FLOPs.\n"
    "run: one inference on NumPy inputs; writes OUTPUT_NAME.npy per output.\n"
    "bench: latency median/p90 and per-op times.\n"
    "quantize: calibrates on frames of a video (or images) and writes an int8 QDQ model\n"
    "  (reel model quantize --help).\n";

static void print_io(const char *kind, const reel_model_io *io)
{
    printf("  %-6s %s: %s", kind, io->name, io->dtype ? reel_dtype_name(io->dtype) : "?");
    if (io->rank < 0) {
        printf(" [unknown rank]\n");
        return;
    }
    printf(" [");
    for (int d = 0; d < io->rank; d++) {
        if (d)
            printf("x");
        if (io->dims[d] >= 0)
            printf("%" PRId64, io->dims[d]);
        else
            printf("%s", io->dim_names[d] ? io->dim_names[d] : "?");
    }
    printf("]\n");
}

typedef struct op_count {
    const char *op;
    int n;
} op_count;

static int by_count(const void *a, const void *b)
{
    const op_count *x = a, *y = b;
    return x->n != y->n ? y->n - x->n : strcmp(x->op, y->op);
}

static int info(const char *path)
{
    GError *error = NULL;
    reel_model *m = reel_model_load(path, &error);
    if (!m) {
        fprintf(stderr, "reel: %s\n", error->message);
        g_error_free(error);
        return EXIT_RUNTIME;
    }
    reel_model_summary s;
    reel_model_summarize(m, &s);
    printf("%s\n", path);
    printf("  opset %d, producer %s\n", s.opset, s.producer && *s.producer ? s.producer : "(none)");
    for (int i = 0; i < reel_model_n_inputs(m); i++)
        print_io("input", reel_model_input(m, i));
    for (int i = 0; i < reel_model_n_outputs(m); i++)
        print_io("output", reel_model_output(m, i));
    printf("  nodes %d (after constant folding and fusion)\n", s.nodes);
    if (s.qdq_into)
        printf("  qdq: %d nodes folded into %d\n", s.qdq_folded, s.qdq_into);
    printf("  parameters %" PRId64 "\n", s.parameters);
    if (s.flops >= 0)
        printf("  flops %" PRId64 " (%.3f GFLOP)\n", s.flops, (double)s.flops / 1e9);
    else
        printf("  flops unknown (symbolic dims)\n");
    printf("  peak memory: see reel model run\n");
    guint n = g_hash_table_size(s.op_histogram);
    op_count *ops = g_new(op_count, n ? n : 1);
    GHashTableIter it;
    gpointer k, v;
    guint i = 0;
    g_hash_table_iter_init(&it, s.op_histogram);
    while (g_hash_table_iter_next(&it, &k, &v))
        ops[i++] = (op_count){ k, GPOINTER_TO_INT(v) };
    qsort(ops, n, sizeof *ops, by_count);
    printf("  ops:\n");
    for (i = 0; i < n; i++)
        printf("    %-24s %d\n", ops[i].op, ops[i].n);
    g_free(ops);
    reel_model_unref(&m);
    return EXIT_OK;
}

int cmd_model(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
        fputs(usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? EXIT_USAGE : EXIT_OK;
    }
    if (strcmp(argv[0], "info") == 0) {
        if (argc != 2 || argv[1][0] == '-') {
            fputs(usage, stderr);
            return EXIT_USAGE;
        }
        return info(argv[1]);
    }
    if (strcmp(argv[0], "run") == 0)
        return cmd_model_run(argc - 1, argv + 1);
    if (strcmp(argv[0], "bench") == 0)
        return cmd_model_bench(argc - 1, argv + 1);
    if (strcmp(argv[0], "quantize") == 0)
        return cmd_model_quantize(argc - 1, argv + 1);
    fprintf(stderr, "reel: unknown model command '%s'\n\n%s", argv[0], usage);
    return EXIT_USAGE;
}

// reel model run / reel model bench: one inference on NumPy inputs, and
// latency measurement with random inputs.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/device.h"
#include "reel/error.h"
#include "reel/limits.h"
#include "reel/model.h"
#include "tools/cli.h"

static const char run_usage[] =
    "usage: reel model run MODEL.onnx --input NAME=FILE.npy ... --output-dir DIR\n"
    "                      [--device SPEC] [--strict] [--device-memory-limit BYTES] [--threads N]\n"
    "                      [--precision fp32|fp16]\n"
    "  --precision  fp16 keeps float tensors on the device as 16-bit floats (a GPU with fp16 support)\n";
static const char bench_usage[] =
    "usage: reel model bench MODEL.onnx [--device SPEC] [--threads N] [--runs N] [--profile] [--slowest N]\n"
    "                        [--shape NAME=D1xD2x...]\n"
    "                        [--precision fp32|fp16]\n"
    "  --precision  fp16 keeps float tensors on the device as 16-bit floats (a GPU with fp16 support)\n"
    "  --profile    time per op type (the sum of its nodes' median times)\n"
    "  --slowest N  the N nodes that take longest, by name\n"
    "  --shape      an input's shape (symbolic dims are 1 otherwise), e.g. --shape x=1x3x48x320\n";

static const struct { reel_dtype dt; const char *descr; } npy_types[] = {
    { REEL_DTYPE_FLOAT32, "<f4" }, { REEL_DTYPE_INT64, "<i8" },   { REEL_DTYPE_UINT8, "|u1" },
    { REEL_DTYPE_INT32, "<i4" },   { REEL_DTYPE_FLOAT64, "<f8" }, { REEL_DTYPE_INT8, "|i1" },
    { REEL_DTYPE_BOOL, "|b1" },    { REEL_DTYPE_FLOAT16, "<f2" }, { REEL_DTYPE_INT16, "<i2" },
    { REEL_DTYPE_UINT16, "<u2" },
};

// NumPy .npy, versions 1 to 3, C order, float32/int64/uint8 (and the other
// dtypes reel has).
static reel_tensor *npy_read(const char *path, GError **error)
{
    gchar *data = NULL;
    gsize len = 0;
    reel_tensor *b = NULL;
    char *h = NULL;
    if (!g_file_get_contents(path, &data, &len, error))
        return NULL;
    if (len < 10 || memcmp(data, "\x93NUMPY", 6) != 0) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: not a .npy file", path);
        goto done;
    }
    int major = (unsigned char)data[6];
    size_t hlen, off;
    if (major == 1) {
        hlen = (unsigned char)data[8] | (size_t)(unsigned char)data[9] << 8;
        off = 10;
    } else if ((major == 2 || major == 3) && len >= 12) {
        hlen = (unsigned char)data[8] | (size_t)(unsigned char)data[9] << 8 | (size_t)(unsigned char)data[10] << 16 |
               (size_t)(unsigned char)data[11] << 24;
        off = 12;
    } else {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: .npy version %d is not supported", path, major);
        goto done;
    }
    if (off + hlen > len) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: truncated header", path);
        goto done;
    }
    h = g_strndup(data + off, hlen);
    const char *d = strstr(h, "'descr'"), *f = strstr(h, "'fortran_order'"), *s = strstr(h, "'shape'");
    reel_dtype dt = REEL_DTYPE_NONE;
    for (size_t i = 0; d && i < G_N_ELEMENTS(npy_types); i++)
        if (strchr(d + 7, '\'') && strstr(d, npy_types[i].descr) == strchr(d + 7, '\'') + 1)
            dt = npy_types[i].dt;
    if (!d || dt == REEL_DTYPE_NONE) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: dtype not supported (header %s)", path, h);
        goto done;
    }
    if (!f || !s) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: header lacks 'fortran_order' or 'shape' (header %s)",
                    path, h);
        goto done;
    }
    if (!strstr(f, "False")) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: Fortran order is not supported", path);
        goto done;
    }
    const char *p = s ? strchr(s, '(') : NULL;
    int64_t shape[REEL_TENSOR_MAX_RANK];
    int rank = 0;
    if (!p) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: no shape in header", path);
        goto done;
    }
    for (p++; *p && *p != ')';) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p) {
            p++;
            continue;
        }
        if (errno || v < 0 || rank == REEL_TENSOR_MAX_RANK) {
            g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: bad shape", path);
            goto done;
        }
        shape[rank++] = v;
        p = end;
    }
    if (reel_limit_check_tensor(rank, shape, reel_dtype_size(dt), NULL, error) < 0) {
        g_prefix_error(error, "%s: shape: ", path);
        goto done;
    }
    b = reel_tensor_new(dt, rank, shape);
    size_t need = b ? b->nbytes : 0;
    if (!b || off + hlen + need > len) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: data shorter than its shape", path);
        reel_tensor_free(&b);
        goto done;
    }
    if (need)
        memcpy(b->data, data + off + hlen, need);
done:
    g_free(h);
    g_free(data);
    return b;
}

static int npy_write(const char *path, const reel_tensor *b, GError **error)
{
    const char *descr = NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(npy_types); i++)
        if (npy_types[i].dt == b->dtype)
            descr = npy_types[i].descr;
    if (!descr) {
        g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED, "%s: dtype %s has no .npy form", path,
                    reel_dtype_name(b->dtype));
        return REEL_EUNSUPPORTED;
    }
    GString *h = g_string_new("");
    g_string_append_printf(h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < b->rank; i++)
        g_string_append_printf(h, "%" PRId64 "%s", b->shape[i], b->rank == 1 ? "," : i + 1 < b->rank ? ", " : "");
    g_string_append(h, "), }");
    while ((10 + h->len + 1) % 64)
        g_string_append_c(h, ' ');
    g_string_append_c(h, '\n');
    FILE *f = fopen(path, "wb");
    int rc = 0;
    if (!f) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: %s", path, g_strerror(errno));
        g_string_free(h, TRUE);
        return REEL_EIO;
    }
    unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(h->len & 0xff),
                              (unsigned char)(h->len >> 8) };
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(h->str, 1, h->len, f) != h->len ||
        (b->nbytes && fwrite(b->data, 1, b->nbytes, f) != b->nbytes))
        rc = REEL_EIO;
    if (fclose(f) || rc) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "%s: write failed", path);
        rc = REEL_EIO;
    }
    g_string_free(h, TRUE);
    return rc;
}

static bool parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > 100000)
        return false;
    *out = (int)v;
    return true;
}

// Frees the n tensors of an array (NULL entries allowed) and the array.
static void free_tensors(reel_tensor **t, int n)
{
    for (int i = 0; t && i < n; i++)
        reel_tensor_free(&t[i]);
    g_free(t);
}

// --precision's value; false for an unknown one.
static bool parse_precision(const char *s, reel_precision *out)
{
    if (strcmp(s, "fp32") == 0)
        *out = REEL_PRECISION_FP32;
    else if (strcmp(s, "fp16") == 0)
        *out = REEL_PRECISION_FP16;
    else
        return false;
    return true;
}

// Where a session on a device ran the model, at which precision, and what
// crossed per inference; QDQ chains folded into integer ops at load, on any device.
static void print_placement(const reel_model *m, const reel_session *s, const reel_device *dev,
                            reel_precision precision, FILE *f)
{
    reel_model_summary sum;
    reel_model_summarize(m, &sum);
    if (sum.qdq_into)
        fprintf(f, "  qdq: %d nodes folded into %d\n", sum.qdq_folded, sum.qdq_into);
    if (!dev || reel_device_info_of(dev)->backend == REEL_BACKEND_CPU)
        return;
    reel_session_placement p;
    reel_session_placement_of(s, &p);
    fprintf(f, "  %s (%s): %d nodes on the device, %d on the cpu, %d partition%s; per inference %" G_GINT64_FORMAT
               " bytes to the device, %" G_GINT64_FORMAT " back; device arena %" G_GINT64_FORMAT " bytes\n",
            reel_device_info_of(dev)->spec, precision == REEL_PRECISION_FP16 ? "fp16" : "fp32", p.device_nodes,
            p.cpu_nodes, p.partitions, p.partitions == 1 ? "" : "s", p.bytes_to_device, p.bytes_to_host,
            p.device_arena_bytes);
    if (*p.cpu_reasons)
        fprintf(f, "  on the cpu: %s\n", p.cpu_reasons);
}

int cmd_model_run(int argc, char **argv)
{
    const char *model_path = NULL, *out_dir = NULL, *device_spec = NULL;
    int threads = 0, rc = EXIT_RUNTIME;
    bool strict = false;
    uint64_t limit = 0;
    reel_precision precision = REEL_PRECISION_FP32;
    GPtrArray *specs = g_ptr_array_new();
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(run_usage, stdout);
            g_ptr_array_free(specs, TRUE);
            return EXIT_OK;
        } else if (strcmp(a, "--input") == 0 && i + 1 < argc) {
            g_ptr_array_add(specs, argv[++i]);
        } else if (strcmp(a, "--output-dir") == 0 && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (strcmp(a, "--threads") == 0 && i + 1 < argc && parse_int(argv[i + 1], &threads)) {
            i++;
        } else if (strcmp(a, "--device") == 0 && i + 1 < argc) {
            device_spec = argv[++i];
        } else if (strcmp(a, "--strict") == 0) {
            strict = true;
        } else if (strcmp(a, "--device-memory-limit") == 0 && i + 1 < argc) {
            limit = g_ascii_strtoull(argv[++i], NULL, 10);
        } else if (strcmp(a, "--precision") == 0 && i + 1 < argc && parse_precision(argv[i + 1], &precision)) {
            i++;
        } else if (a[0] != '-' && !model_path) {
            model_path = a;
        } else {
            fputs(run_usage, stderr);
            g_ptr_array_free(specs, TRUE);
            return EXIT_USAGE;
        }
    }
    if (!model_path || !out_dir) {
        fputs(run_usage, stderr);
        g_ptr_array_free(specs, TRUE);
        return EXIT_USAGE;
    }
    GError *error = NULL;
    reel_model *m = reel_model_load(model_path, &error);
    reel_session *s = NULL;
    reel_device *dev = NULL;
    int n_in = m ? reel_model_n_inputs(m) : 0, n_out = m ? reel_model_n_outputs(m) : 0;
    reel_tensor **in = g_new0(reel_tensor *, n_in + 1), **out = g_new0(reel_tensor *, n_out + 1);
    if (!m)
        goto fail;
    for (guint k = 0; k < specs->len; k++) {
        const char *spec = specs->pdata[k], *eq = strchr(spec, '=');
        int idx = -1;
        for (int i = 0; eq && i < n_in; i++)
            if (strlen(reel_model_input(m, i)->name) == (size_t)(eq - spec) &&
                strncmp(reel_model_input(m, i)->name, spec, (size_t)(eq - spec)) == 0)
                idx = i;
        if (idx < 0) {
            g_set_error(&error, REEL_ERROR, REEL_EINVAL, "--input %s: the model has no input of that name", spec);
            goto fail;
        }
        reel_tensor_free(&in[idx]);
        if (!(in[idx] = npy_read(eq + 1, &error)))
            goto fail;
    }
    for (int i = 0; i < n_in; i++)
        if (!in[i]) {
            g_set_error(&error, REEL_ERROR, REEL_EINVAL, "no --input for model input %s", reel_model_input(m, i)->name);
            goto fail;
        }
    if (device_spec && !(dev = reel_device_open(device_spec, &error)))
        goto fail;
    if (!(s = reel_session_new(m,
                               reel_session_params(.threads = threads, .device = dev, .strict = strict,
                                                   .device_memory_limit = limit, .precision = precision),
                               &error)))
        goto fail;
    if (reel_session_run(s, in, out, &error))
        goto fail;
    print_placement(m, s, dev, precision, stderr);
    if (g_mkdir_with_parents(out_dir, 0755)) {
        g_set_error(&error, REEL_ERROR, REEL_EIO, "%s: %s", out_dir, g_strerror(errno));
        goto fail;
    }
    for (int i = 0; i < n_out; i++) {
        char *name = g_strdup(reel_model_output(m, i)->name);
        g_strdelimit(name, ":/", '_');
        char *file = g_strdup_printf("%s.npy", name);
        char *path = g_build_filename(out_dir, file, NULL);
        int r = npy_write(path, out[i], &error);
        g_free(name);
        g_free(file);
        g_free(path);
        if (r)
            goto fail;
    }
    rc = EXIT_OK;
fail:
    if (error) {
        fprintf(stderr, "reel: model run: %s\n", error->message);
        g_error_free(error);
    }
    free_tensors(in, n_in);
    free_tensors(out, n_out);
    reel_session_destroy(&s);
    reel_model_unref(&m);
    reel_device_unref(&dev);
    g_ptr_array_free(specs, TRUE);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct op_time {
    const char *op;
    const char *name; // per-node rows
    double seconds;  // median per run x runs
    int nodes;
    double *samples; // per-node rows: each run's time
} op_time;

static int by_time(const void *a, const void *b)
{
    return cmp_double(&((const op_time *)b)->seconds, &((const op_time *)a)->seconds);
}

// The shape of input io: from a --shape NAME=D1xD2x... that names it (its
// rank and fixed dims must agree), else the declared one with symbolic dims
// as 1. false with *error set.
static bool bench_shape(const reel_model_io *io, char **shapes, int n_shapes, int64_t *shape, GError **error)
{
    for (int d = 0; d < io->rank; d++)
        shape[d] = io->dims[d] >= 0 ? io->dims[d] : 1;
    size_t len = strlen(io->name);
    for (int k = 0; k < n_shapes; k++) {
        if (!shapes[k] || strncmp(shapes[k], io->name, len) != 0 || shapes[k][len] != '=')
            continue;
        g_auto(GStrv) dims = g_strsplit(shapes[k] + len + 1, "x", -1);
        bool fits = (int)g_strv_length(dims) == io->rank;
        for (int d = 0; fits && d < io->rank; d++) {
            char *end;
            gint64 v = g_ascii_strtoll(dims[d], &end, 10);
            fits = end != dims[d] && !*end && v >= 1 && v <= (1 << 24) && (io->dims[d] < 0 || v == io->dims[d]);
            shape[d] = v;
        }
        if (!fits) {
            GString *declared = g_string_new(NULL);
            for (int d = 0; d < io->rank; d++) {
                if (d)
                    g_string_append_c(declared, 'x');
                if (io->dims[d] >= 0)
                    g_string_append_printf(declared, "%" PRId64, io->dims[d]);
                else
                    g_string_append_c(declared, '?');
            }
            g_set_error(error, REEL_ERROR, REEL_EINVAL,
                        "--shape %s does not fit input %s, declared %s (? any positive size)", shapes[k], io->name,
                        declared->str);
            g_string_free(declared, TRUE);
            return false;
        }
        shapes[k] = NULL; // taken
    }
    return true;
}

int cmd_model_bench(int argc, char **argv)
{
    const char *model_path = NULL;
    int threads = 0, runs = 20, slowest = 0;
    const char *device_spec = NULL;
    bool profile = false;
    reel_precision precision = REEL_PRECISION_FP32;
    char **shapes = g_new0(char *, argc + 1);
    int n_shapes = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            g_free(shapes);
            fputs(bench_usage, stdout);
            return EXIT_OK;
        } else if (strcmp(a, "--threads") == 0 && i + 1 < argc && parse_int(argv[i + 1], &threads)) {
            i++;
        } else if (strcmp(a, "--runs") == 0 && i + 1 < argc && parse_int(argv[i + 1], &runs) && runs > 0) {
            i++;
        } else if (strcmp(a, "--device") == 0 && i + 1 < argc) {
            device_spec = argv[++i];
        } else if (strcmp(a, "--profile") == 0) {
            profile = true;
        } else if (strcmp(a, "--precision") == 0 && i + 1 < argc && parse_precision(argv[i + 1], &precision)) {
            i++;
        } else if (strcmp(a, "--slowest") == 0 && i + 1 < argc && parse_int(argv[i + 1], &slowest) && slowest > 0) {
            i++;
        } else if (strcmp(a, "--shape") == 0 && i + 1 < argc && strchr(argv[i + 1], '=')) {
            shapes[n_shapes++] = argv[++i];
        } else if (a[0] != '-' && !model_path) {
            model_path = a;
        } else {
            model_path = NULL;
            break;
        }
    }
    if (!model_path) {
        g_free(shapes);
        fputs(bench_usage, stderr);
        return EXIT_USAGE;
    }
    GError *error = NULL;
    int rc = EXIT_RUNTIME;
    reel_model *m = reel_model_load(model_path, &error);
    reel_session *s = NULL;
    reel_device *dev = NULL;
    int n_in = m ? reel_model_n_inputs(m) : 0, n_out = m ? reel_model_n_outputs(m) : 0;
    reel_tensor **in = g_new0(reel_tensor *, n_in + 1), **out = g_new0(reel_tensor *, n_out + 1);
    double *lat = g_new0(double, runs);
    GHashTable *ops = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    GArray *nodes = g_array_new(FALSE, TRUE, sizeof(op_time)); // in run order
    if (!m)
        goto fail;
    // Random inputs at the declared shapes or those given.
    GRand *rand = g_rand_new_with_seed(1);
    for (int i = 0; i < n_in; i++) {
        const reel_model_io *io = reel_model_input(m, i);
        int64_t shape[REEL_TENSOR_MAX_RANK];
        if (!bench_shape(io, shapes, n_shapes, shape, &error)) {
            g_rand_free(rand);
            goto fail;
        }
        in[i] = reel_tensor_new(io->dtype, io->rank, shape);
        if (!in[i]) {
            g_set_error(&error, REEL_ERROR, REEL_ENOMEM, "input %s too large", io->name);
            g_rand_free(rand);
            goto fail;
        }
        if (io->dtype == REEL_DTYPE_FLOAT32)
            for (size_t k = 0; k < in[i]->nbytes / 4; k++)
                ((float *)in[i]->data)[k] = (float)g_rand_double_range(rand, -1, 1);
        else if (io->dtype == REEL_DTYPE_UINT8)
            for (size_t k = 0; k < in[i]->nbytes; k++)
                ((uint8_t *)in[i]->data)[k] = (uint8_t)g_rand_int_range(rand, 0, 256);
    }
    g_rand_free(rand);
    for (int k = 0; k < n_shapes; k++)
        if (shapes[k]) {
            g_set_error(&error, REEL_ERROR, REEL_EINVAL, "--shape %s: the model has no such input", shapes[k]);
            goto fail;
        }
    if (device_spec && !(dev = reel_device_open(device_spec, &error)))
        goto fail;
    if (!(s = reel_session_new(m, reel_session_params(.threads = threads, .device = dev, .precision = precision),
                               &error)))
        goto fail;
    reel_session_set_profile(s, profile || slowest);
    for (int r = -1; r < runs; r++) { // run -1 plans and warms up
        gint64 t0 = g_get_monotonic_time();
        if (reel_session_run(s, in, out, &error))
            goto fail;
        if (r >= 0)
            lat[r] = (g_get_monotonic_time() - t0) * 1e-3;
        for (int i = 0; i < n_out; i++)
            reel_tensor_free(&out[i]);
        if ((profile || slowest) && r >= 0) {
            int nt;
            const reel_session_node_time *t = reel_session_node_times(s, &nt);
            if (nodes->len < (guint)nt)
                g_array_set_size(nodes, (guint)nt);
            for (int k = 0; k < nt; k++) {
                op_time *nd = &g_array_index(nodes, op_time, k);
                nd->op = t[k].op;
                nd->name = t[k].node;
                if (!nd->samples)
                    nd->samples = g_new0(double, runs);
                nd->samples[r] = t[k].seconds;
            }
        }
    }
    // Each node's median over the runs (the machine may be shared), and per
    // op type the sum of its nodes' medians.
    for (guint k = 0; k < nodes->len; k++) {
        op_time *nd = &g_array_index(nodes, op_time, k);
        qsort(nd->samples, (size_t)runs, sizeof *nd->samples, cmp_double);
        nd->seconds = nd->samples[runs / 2] * runs;
        op_time *o = g_hash_table_lookup(ops, nd->op);
        if (!o) {
            o = g_new0(op_time, 1);
            o->op = nd->op;
            g_hash_table_insert(ops, (char *)nd->op, o);
        }
        o->seconds += nd->seconds;
        o->nodes++;
    }
    qsort(lat, (size_t)runs, sizeof *lat, cmp_double);
    printf("%s: %d runs, %d threads, %s\n", model_path, runs, threads ? threads : (int)g_get_num_processors(),
           reel_model_cpu_info());
    printf("  median %.3f ms, p90 %.3f ms, min %.3f ms, arena %.1f MiB\n", lat[runs / 2],
           lat[(int)(0.9 * (runs - 1) + 0.5)], lat[0], reel_session_arena_bytes(s) / 1048576.0);
    for (int i = 0; i < n_in; i++) {
        printf("  input %s: ", reel_model_input(m, i)->name);
        for (int d = 0; d < in[i]->rank; d++)
            printf("%s%" PRId64, d ? "x" : "", in[i]->shape[d]);
        putchar('\n');
    }
    print_placement(m, s, dev, precision, stdout);
    if (profile) {
        guint n = 0;
        GList *vals = g_hash_table_get_values(ops);
        op_time *arr = g_new(op_time, g_hash_table_size(ops) + 1);
        double total = 0;
        for (GList *l = vals; l; l = l->next) {
            arr[n++] = *(op_time *)l->data;
            total += ((op_time *)l->data)->seconds;
        }
        g_list_free(vals);
        qsort(arr, n, sizeof *arr, by_time);
        printf("  %-22s %6s %12s %7s\n", "op", "nodes", "ms/run", "share");
        for (guint k = 0; k < n; k++)
            printf("  %-22s %6d %12.3f %6.1f%%\n", arr[k].op, arr[k].nodes, arr[k].seconds * 1e3 / runs,
                   total > 0 ? 100 * arr[k].seconds / total : 0);
        g_free(arr);
    }
    if (slowest) {
        g_array_sort(nodes, by_time);
        printf("  %10s  %-18s %s\n", "ms/run", "op", "node");
        for (guint k = 0; k < nodes->len && k < (guint)slowest; k++) {
            const op_time *nd = &g_array_index(nodes, op_time, k);
            printf("  %10.3f  %-18s %s\n", nd->seconds * 1e3 / runs, nd->op, nd->name);
        }
    }
    rc = EXIT_OK;
fail:
    if (error) {
        fprintf(stderr, "reel: model bench: %s\n", error->message);
        g_error_free(error);
    }
    free_tensors(in, n_in);
    free_tensors(out, n_out);
    g_free(lat);
    g_free(shapes);
    g_hash_table_destroy(ops);
    for (guint k = 0; k < nodes->len; k++)
        g_free(g_array_index(nodes, op_time, k).samples);
    g_array_free(nodes, TRUE);
    reel_session_destroy(&s);
    reel_model_unref(&m);
    reel_device_unref(&dev);
    return rc;
}

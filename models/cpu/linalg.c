// Einsum, Det: float32 and float64 (Einsum int32 and int64 too).
#include <limits.h>

#include "models/cpu/nn.h"

#define R REEL_TENSOR_MAX_RANK

// ---- Einsum
//
// The equation's labels: letters a-z are 0..25, A-Z 26..51, and the dims an
// ellipsis stands for 52.. (right-aligned across the inputs, as numpy
// broadcasts them). Every output element is a sum, over the labels the
// output lacks, of the product of the inputs' elements; an input's stride
// for a label adds up the strides of all its dims with that label, which
// makes a repeated label walk a diagonal.

enum { EIN_LETTERS = 52, EIN_LABELS = EIN_LETTERS + R, EIN_MAX_IN = 8, EIN_MAX_EQ = 512 };

typedef struct ein_plan {
    int n_in;
    int rank[EIN_MAX_IN];
    int label[EIN_MAX_IN][R];     // per input dim
    int64_t size[EIN_LABELS];     // per label; -1 unknown, -2 unused
    int n_out, out[R];            // the output's labels, in order
    int n_sum, sum[EIN_LABELS];   // the labels summed over
} ein_plan;

static int letter_label(char ch)
{
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a';
    if (ch >= 'A' && ch <= 'Z')
        return 26 + (ch - 'A');
    return -1;
}

static char label_char(int l)
{
    return (char)(l < 26 ? 'a' + l : 'A' + (l - 26));
}

// One term's letters (labels, -1 marking the ellipsis) into term[]; their
// count (the ellipsis counting once) or -1 when malformed.
static int parse_term(const char *s, size_t len, int *term, int max, bool *ellipsis)
{
    int k = 0;
    *ellipsis = false;
    for (size_t i = 0; i < len; i++) {
        if (k == max)
            return -1;
        if (s[i] == '.') {
            if (*ellipsis || i + 2 >= len || s[i + 1] != '.' || s[i + 2] != '.')
                return -1;
            *ellipsis = true;
            term[k++] = -1;
            i += 2;
        } else if ((term[k++] = letter_label(s[i])) < 0)
            return -1;
    }
    return k;
}

// Records that label l has size s (-1: unknown); letters must agree, the
// ellipsis dims broadcast (1 against anything).
static int set_size(const reel_ir_node *n, ein_plan *p, int l, int64_t s, GError **error)
{
    int64_t *have = &p->size[l];
    if (*have == -2 || (l >= EIN_LETTERS && *have == 1) || (*have == -1 && s >= 0 && (l < EIN_LETTERS || s != 1))) {
        *have = s;
        return 0;
    }
    if (s < 0 || *have < 0 || s == *have || (l >= EIN_LETTERS && s == 1))
        return 0;
    if (l >= EIN_LETTERS)
        NN_FAIL(error, REEL_EINVAL, n, "equation: ellipsis dims %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT
                " do not broadcast", *have, s);
    NN_FAIL(error, REEL_EINVAL, n, "equation: label '%c' has sizes %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT,
            label_char(l), *have, s);
}

// Expands input i's term over its rank: ellipsis dims get labels E - e ..
static int assign_input(const reel_ir_node *n, ein_plan *p, int i, const int *term, int k, int E,
                        const int64_t *dims, GError **error)
{
    int e = p->rank[i] - (k - 1), d = 0;
    for (int j = 0; j < k; j++) {
        if (term[j] >= 0) {
            p->label[i][d++] = term[j];
            continue;
        }
        for (int m = 0; m < e; m++)
            p->label[i][d++] = EIN_LETTERS + (E - e) + m;
    }
    for (d = 0; d < p->rank[i]; d++) {
        int err = set_size(n, p, p->label[i][d], dims[d], error);
        if (err)
            return err;
    }
    return 0;
}

static int parse_output(const reel_ir_node *n, ein_plan *p, const char *rhs, int E, const int *count,
                        GError **error)
{
    p->n_out = 0;
    if (!rhs) { // implicit: the ellipsis, then the letters used once in ASCII order (A-Z before a-z)
        for (int m = 0; m < E; m++)
            p->out[p->n_out++] = EIN_LETTERS + m;
        for (int pass = 0; pass < 2; pass++)
            for (int l = pass ? 0 : 26; l < (pass ? 26 : EIN_LETTERS); l++)
                if (count[l] == 1) {
                    if (p->n_out == R)
                        NN_FAIL(error, REEL_EUNSUPPORTED, n, "equation: output rank above %d", R);
                    p->out[p->n_out++] = l;
                }
        return 0;
    }
    int term[R + 1];
    bool ellipsis;
    int k = parse_term(rhs, strlen(rhs), term, R + 1, &ellipsis);
    if (k < 0)
        NN_FAIL(error, REEL_EINVAL, n, "equation: output '%s' is malformed", rhs);
    if (E > 0 && !ellipsis) // numpy refuses it too: the ellipsis dims would have no place
        NN_FAIL(error, REEL_EINVAL, n, "equation: output '%s' needs '...' for the inputs' ellipsis dims", rhs);
    bool seen[EIN_LABELS] = { false };
    for (int j = 0; j < k; j++) {
        int l = term[j];
        if (l < 0) {
            if (p->n_out + E > R)
                NN_FAIL(error, REEL_EUNSUPPORTED, n, "equation: output rank above %d", R);
            for (int m = 0; m < E; m++)
                p->out[p->n_out++] = EIN_LETTERS + m;
            continue;
        }
        if (!count[l] || seen[l])
            NN_FAIL(error, REEL_EINVAL, n, "equation: output label '%c' is %s", label_char(l),
                    seen[l] ? "repeated" : "in no input");
        seen[l] = true;
        if (p->n_out == R)
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "equation: output rank above %d", R);
        p->out[p->n_out++] = l;
    }
    return 0;
}

// Parses the node's equation for inputs of these ranks and dims (-1:
// unknown sizes) into p.
static int ein_parse(const reel_ir_node *n, int n_in, const int *ranks, int64_t (*dims)[R], ein_plan *p,
                     GError **error)
{
    const char *eq = reel_ir_attr_string(n, "equation", NULL);
    if (!eq)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'equation' is missing");
    char buf[EIN_MAX_EQ];
    size_t len = 0;
    for (const char *c = eq; *c; c++)
        if (*c != ' ') {
            if (len + 1 >= sizeof buf)
                NN_FAIL(error, REEL_EUNSUPPORTED, n, "equation is longer than %d characters", EIN_MAX_EQ - 1);
            buf[len++] = *c;
        }
    buf[len] = 0;
    char *arrow = strstr(buf, "->"), *rhs = NULL;
    if (arrow) {
        *arrow = 0;
        rhs = arrow + 2;
    }
    *p = (ein_plan){ .n_in = n_in };
    for (int l = 0; l < EIN_LABELS; l++)
        p->size[l] = -2;
    // The inputs' terms; E: the most dims an ellipsis stands for.
    int terms[EIN_MAX_IN][R + 1], k[EIN_MAX_IN], E = 0, i = 0;
    for (char *s = buf;; i++) {
        char *comma = strchr(s, ',');
        size_t tl = comma ? (size_t)(comma - s) : strlen(s);
        bool ellipsis;
        if (i >= n_in)
            NN_FAIL(error, REEL_EINVAL, n, "equation has more terms than the %d inputs", n_in);
        k[i] = parse_term(s, tl, terms[i], R + 1, &ellipsis);
        int letters = k[i] - (ellipsis ? 1 : 0);
        if (k[i] < 0 || letters > ranks[i] || (!ellipsis && letters != ranks[i]))
            NN_FAIL(error, REEL_EINVAL, n, "equation: term %d does not fit input %d of rank %d", i, i, ranks[i]);
        if (!ellipsis) // the ellipsis slot for assign_input's count
            terms[i][k[i]++] = -1;
        p->rank[i] = ranks[i];
        E = MAX(E, ranks[i] - letters);
        if (!comma)
            break;
        s = comma + 1;
    }
    if (i != n_in - 1)
        NN_FAIL(error, REEL_EINVAL, n, "equation has %d term(s) for %d inputs", i + 1, n_in);
    int count[EIN_LABELS] = { 0 };
    for (i = 0; i < n_in; i++) {
        int err = assign_input(n, p, i, terms[i], k[i], E, dims[i], error);
        if (err)
            return err;
        for (int d = 0; d < ranks[i]; d++)
            count[p->label[i][d]]++;
    }
    int err = parse_output(n, p, rhs, E, count, error);
    if (err)
        return err;
    bool in_out[EIN_LABELS] = { false };
    for (int j = 0; j < p->n_out; j++)
        in_out[p->out[j]] = true;
    p->n_sum = 0;
    for (int l = 0; l < EIN_LABELS; l++)
        if (p->size[l] != -2 && !in_out[l])
            p->sum[p->n_sum++] = l;
    return 0;
}

static bool ein_dtype(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64 || t == REEL_DTYPE_INT32 || t == REEL_DTYPE_INT64;
}

static int einsum_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    if (n->n_inputs < 1 || n->n_inputs > EIN_MAX_IN)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "takes 1 to %d inputs, not %d", EIN_MAX_IN, n->n_inputs);
    int ranks[EIN_MAX_IN];
    int64_t dims[EIN_MAX_IN][R];
    reel_dtype dt = REEL_DTYPE_NONE;
    bool known = true;
    for (int i = 0; i < n->n_inputs; i++) {
        reel_ir_value *v = reel_op_input(g, n, i);
        if (!v)
            NN_FAIL(error, REEL_EINVAL, n, "input %d is missing", i);
        if (!ein_dtype(v->dtype))
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %d: %s tensors are not supported", i,
                    reel_dtype_name(v->dtype));
        if (i && v->dtype != dt)
            NN_FAIL(error, REEL_EINVAL, n, "inputs have different dtypes");
        dt = v->dtype;
        ranks[i] = v->rank;
        known = known && v->rank >= 0;
        memcpy(dims[i], v->dims, sizeof dims[i]);
    }
    if (!known) {
        nn_set(reel_op_output(g, n, 0), dt, -1, NULL);
        return 0;
    }
    ein_plan p;
    int err = ein_parse(n, n->n_inputs, ranks, dims, &p, error);
    if (err)
        return err;
    int64_t od[R];
    for (int j = 0; j < p.n_out; j++)
        od[j] = p.size[p.out[j]];
    nn_set(reel_op_output(g, n, 0), dt, p.n_out, od);
    return 0;
}

// Input i's stride per label (0 for labels it lacks and dims it broadcasts).
static void ein_strides(const ein_plan *p, int i, const int64_t *shape, int64_t *st)
{
    memset(st, 0, sizeof(int64_t) * EIN_LABELS);
    int64_t s = 1;
    for (int d = p->rank[i] - 1; d >= 0; d--) {
        if (shape[d] == p->size[p->label[i][d]])
            st[p->label[i][d]] += s;
        s *= shape[d];
    }
}

// The general loop over output elements [o0, o1), per element type and
// accumulator (a split of the outputs across the workers).
typedef struct ein_job {
    const ein_plan *p;
    int64_t (*st)[EIN_LABELS];
    const void *const *src;
    void *dst;
    int64_t out_count, sum_count, per_task;
    void (*kernel)(const struct ein_job *j, int64_t o0, int64_t o1);
} ein_job;

#define EIN_KERNEL(NAME, T, ACC)                                                                                      \
    static void NAME(const ein_job *j, int64_t o0, int64_t o1)                                                      \
    {                                                                                                               \
        const ein_plan *p = j->p;                                                                                   \
        T *y = j->dst;                                                                                              \
        for (int64_t o = o0; o < o1; o++) {                                                                         \
            int64_t off[EIN_MAX_IN] = { 0 }, rem = o, idx[EIN_LABELS] = { 0 };                                     \
            for (int d = p->n_out - 1; d >= 0; d--) {                                                              \
                int64_t sz = p->size[p->out[d]], v = rem % sz;                                                     \
                rem /= sz;                                                                                          \
                for (int i = 0; i < p->n_in; i++)                                                                   \
                    off[i] += v * j->st[i][p->out[d]];                                                             \
            }                                                                                                       \
            ACC acc = 0;                                                                                            \
            for (int64_t s = 0; s < j->sum_count; s++) {                                                            \
                ACC prod = 1;                                                                                       \
                for (int i = 0; i < p->n_in; i++)                                                                   \
                    prod *= (ACC)((const T *)j->src[i])[off[i]];                                                   \
                acc += prod;                                                                                        \
                for (int k = p->n_sum - 1; k >= 0; k--) {                                                          \
                    int l = p->sum[k];                                                                              \
                    for (int i = 0; i < p->n_in; i++)                                                               \
                        off[i] += j->st[i][l];                                                                      \
                    if (++idx[k] < p->size[l])                                                                      \
                        break;                                                                                      \
                    for (int i = 0; i < p->n_in; i++)                                                               \
                        off[i] -= j->st[i][l] * p->size[l];                                                        \
                    idx[k] = 0;                                                                                     \
                }                                                                                                   \
            }                                                                                                       \
            y[o] = (T)acc;                                                                                          \
        }                                                                                                           \
    }

EIN_KERNEL(ein_f32, float, double)
EIN_KERNEL(ein_f64, double, double)
EIN_KERNEL(ein_i32, int32_t, int64_t)
EIN_KERNEL(ein_i64, int64_t, int64_t)

static void ein_task(void *arg, int task, int worker)
{
    (void)worker;
    const ein_job *j = arg;
    int64_t o0 = task * j->per_task;
    j->kernel(j, o0, MIN(j->out_count, o0 + j->per_task));
}

// ---- Einsum as batched GEMM: two float32 inputs without diagonals or
// broadcast dims, every summed label in both. The labels then split into
// batch (in A, B and the output), M (A and output), N (B and output) and K
// (A and B); A is gathered to [batch, M, K], B to [batch, K, N], and the
// product [batch, M, N] to the output's order.

typedef struct ein_mm {
    int nb, nm, nn, nk;
    int batch[R], m[R], n[R], k[R];
    int64_t B, M, N, K;
} ein_mm;

// Whether input i's labels each appear once and its dims match the sizes.
static bool plain_input(const ein_plan *p, int i, const int64_t *shape, bool *has)
{
    memset(has, 0, sizeof(bool) * EIN_LABELS);
    for (int d = 0; d < p->rank[i]; d++) {
        int l = p->label[i][d];
        if (has[l] || shape[d] != p->size[l])
            return false;
        has[l] = true;
    }
    return true;
}

static bool ein_as_gemm(const ein_plan *p, reel_tensor *const *in, ein_mm *g)
{
    bool ina[EIN_LABELS], inb[EIN_LABELS], ino[EIN_LABELS] = { false };
    if (p->n_in != 2 || in[0]->dtype != REEL_DTYPE_FLOAT32 || !plain_input(p, 0, in[0]->shape, ina) ||
        !plain_input(p, 1, in[1]->shape, inb))
        return false;
    for (int j = 0; j < p->n_out; j++)
        ino[p->out[j]] = true;
    *g = (ein_mm){ .B = 1, .M = 1, .N = 1, .K = 1 };
    // Batch labels in the output's order, M and N too; K in A's order.
    for (int j = 0; j < p->n_out; j++) {
        int l = p->out[j];
        if (ina[l] && inb[l])
            g->batch[g->nb++] = l, g->B *= p->size[l];
        else if (ina[l])
            g->m[g->nm++] = l, g->M *= p->size[l];
        else
            g->n[g->nn++] = l, g->N *= p->size[l];
    }
    for (int d = 0; d < p->rank[0]; d++) {
        int l = p->label[0][d];
        if (!ino[l] && !inb[l])
            return false; // summed in A alone
        if (!ino[l])
            g->k[g->nk++] = l, g->K *= p->size[l];
    }
    for (int d = 0; d < p->rank[1]; d++) {
        int l = p->label[1][d];
        if (!ino[l] && !ina[l])
            return false; // summed in B alone
    }
    return g->M <= INT_MAX && g->N <= INT_MAX && g->K <= INT_MAX;
}

// dst (contiguous, labels order[0..n) with sizes from p) from src whose
// stride per label is st.
static void gather(const ein_plan *p, const float *src, const int64_t *st, const int *order, int n, float *dst)
{
    int64_t total = 1, idx[R] = { 0 }, off = 0;
    for (int j = 0; j < n; j++)
        total *= p->size[order[j]];
    for (int64_t e = 0; e < total; e++) {
        dst[e] = src[off];
        for (int j = n - 1; j >= 0; j--) {
            int l = order[j];
            off += st[l];
            if (++idx[j] < p->size[l])
                break;
            off -= st[l] * p->size[l];
            idx[j] = 0;
        }
    }
}

// Strides per label of a contiguous buffer holding `parts` label lists in turn.
static void contiguous_strides(const ein_plan *p, const int *const *lists, const int *counts, int parts, int64_t *st)
{
    memset(st, 0, sizeof(int64_t) * EIN_LABELS);
    int64_t s = 1;
    for (int q = parts - 1; q >= 0; q--)
        for (int j = counts[q] - 1; j >= 0; j--) {
            st[lists[q][j]] = s;
            s *= p->size[lists[q][j]];
        }
}

typedef struct ein_batch_job {
    const float *a, *b;
    float *c;
    int64_t M, N, K;
} ein_batch_job;

static void ein_batch_task(void *arg, int task, int worker)
{
    (void)worker;
    const ein_batch_job *j = arg;
    nn_sgemm(false, false, (int)j->M, (int)j->N, (int)j->K, 1, j->a + task * j->M * j->K, (int)j->K,
             j->b + task * j->K * j->N, (int)j->N, 0, j->c + task * j->M * j->N, (int)j->N);
}

static int ein_gemm(const ein_plan *p, const ein_mm *g, int64_t (*st)[EIN_LABELS], reel_tensor *const *in,
                    reel_tensor *out, const reel_exec_ctx *ctx)
{
    size_t na = (size_t)(g->B * g->M * g->K), nb = (size_t)(g->B * g->K * g->N), nc = (size_t)(g->B * g->M * g->N);
    float *a = g_try_new(float, na + 1), *b = g_try_new(float, nb + 1), *c = g_try_new(float, nc + 1);
    if (!a || !b || !c) {
        g_free(a), g_free(b), g_free(c);
        return REEL_ENOMEM;
    }
    int order[3 * R];
    int n = 0;
    const int *alists[] = { g->batch, g->m, g->k }, acounts[] = { g->nb, g->nm, g->nk };
    const int *blists[] = { g->batch, g->k, g->n }, bcounts[] = { g->nb, g->nk, g->nn };
    for (int q = 0; q < 3; q++)
        for (int j = 0; j < acounts[q]; j++)
            order[n++] = alists[q][j];
    gather(p, in[0]->data, st[0], order, n, a);
    n = 0;
    for (int q = 0; q < 3; q++)
        for (int j = 0; j < bcounts[q]; j++)
            order[n++] = blists[q][j];
    gather(p, in[1]->data, st[1], order, n, b);
    ein_batch_job j = { a, b, c, g->M, g->N, g->K };
    int threads = ctx->workers ? ctx->threads : 1;
    // Many small products: one per task; else each product split itself.
    if (g->B >= threads && (double)g->M * g->N * g->K < 1e6 && g->B <= INT_MAX)
        nn_parallel(ctx, (int)g->B, ein_batch_task, &j);
    else
        for (int64_t t = 0; t < g->B; t++)
            nn_sgemm_parallel(ctx, false, false, (int)g->M, (int)g->N, (int)g->K, 1, a + t * g->M * g->K, (int)g->K,
                              b + t * g->K * g->N, (int)g->N, 0, c + t * g->M * g->N, (int)g->N);
    int64_t cst[EIN_LABELS];
    const int *clists[] = { g->batch, g->m, g->n }, ccounts[] = { g->nb, g->nm, g->nn };
    contiguous_strides(p, clists, ccounts, 3, cst);
    gather(p, c, cst, p->out, p->n_out, out->data);
    g_free(a), g_free(b), g_free(c);
    return 0;
}

static int einsum_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                      const reel_exec_ctx *ctx)
{
    int ranks[EIN_MAX_IN];
    int64_t dims[EIN_MAX_IN][R];
    const void *src[EIN_MAX_IN];
    if (n->n_inputs > EIN_MAX_IN)
        return REEL_EINVAL;
    for (int i = 0; i < n->n_inputs; i++) {
        ranks[i] = in[i]->rank;
        memcpy(dims[i], in[i]->shape, sizeof dims[i]);
        src[i] = in[i]->data;
    }
    ein_plan p;
    if (ein_parse(n, n->n_inputs, ranks, dims, &p, NULL))
        return REEL_EINVAL;
    int64_t st[EIN_MAX_IN][EIN_LABELS], out_count = 1, sum_count = 1;
    for (int i = 0; i < n->n_inputs; i++)
        ein_strides(&p, i, in[i]->shape, st[i]);
    for (int j = 0; j < p.n_out; j++)
        out_count *= p.size[p.out[j]];
    for (int k = 0; k < p.n_sum; k++)
        sum_count *= p.size[p.sum[k]];
    ein_mm g;
    if (out_count > 0 && ein_as_gemm(&p, in, &g))
        return ein_gemm(&p, &g, st, in, out[0], ctx);
    ein_job j = { &p, st, src, out[0]->data, out_count, sum_count, 0, NULL };
    switch (out[0]->dtype) {
    case REEL_DTYPE_FLOAT32: j.kernel = ein_f32; break;
    case REEL_DTYPE_FLOAT64: j.kernel = ein_f64; break;
    case REEL_DTYPE_INT32: j.kernel = ein_i32; break;
    case REEL_DTYPE_INT64: j.kernel = ein_i64; break;
    default: return REEL_EUNSUPPORTED;
    }
    if (out_count == 0)
        return 0;
    // Tasks of some 64k multiply-adds, a few per worker at most.
    int threads = ctx->workers ? ctx->threads : 1;
    int64_t per = MAX(1, 65536 / MAX(1, sum_count));
    j.per_task = MAX(per, (out_count + 4 * threads - 1) / (4 * threads));
    int64_t tasks = (out_count + j.per_task - 1) / j.per_task;
    if (tasks > INT_MAX)
        return REEL_EINVAL;
    nn_parallel(ctx, (int)tasks, ein_task, &j);
    return 0;
}

static const reel_op op_einsum = { "Einsum", einsum_infer, NULL, einsum_run };

// ---- Det: of the square matrices in the last two dims, by LU
// decomposition with partial pivoting in double.

static int det_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs input X");
    if (x->dtype != REEL_DTYPE_FLOAT32 && x->dtype != REEL_DTYPE_FLOAT64)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%s tensors are not supported", reel_dtype_name(x->dtype));
    if (x->rank < 0) {
        nn_set(reel_op_output(g, n, 0), x->dtype, -1, NULL);
        return 0;
    }
    if (x->rank < 2)
        NN_FAIL(error, REEL_EINVAL, n, "input must have rank 2 or more, not %d", x->rank);
    int64_t m = x->dims[x->rank - 2], m2 = x->dims[x->rank - 1];
    if (m >= 0 && m2 >= 0 && m != m2)
        NN_FAIL(error, REEL_EINVAL, n, "matrices are %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ", not square", m, m2);
    nn_set(reel_op_output(g, n, 0), x->dtype, x->rank - 2, x->dims);
    return 0;
}

// The determinant of the M x M matrix a (overwritten by its LU factors).
static double lu_det(double *a, int64_t M)
{
    double det = 1.0;
    for (int64_t k = 0; k < M; k++) {
        int64_t piv = k;
        for (int64_t i = k + 1; i < M; i++)
            if (fabs(a[i * M + k]) > fabs(a[piv * M + k]))
                piv = i;
        if (a[piv * M + k] == 0.0)
            return 0.0;
        if (piv != k) { // a row swap flips the sign
            for (int64_t j = 0; j < M; j++) {
                double t = a[k * M + j];
                a[k * M + j] = a[piv * M + j];
                a[piv * M + j] = t;
            }
            det = -det;
        }
        double pivot = a[k * M + k];
        det *= pivot;
        for (int64_t i = k + 1; i < M; i++) {
            double f = a[i * M + k] / pivot;
            for (int64_t j = k; j < M; j++)
                a[i * M + j] -= f * a[k * M + j];
        }
    }
    return det;
}

static int det_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)n, (void)ctx;
    const reel_tensor *x = in[0];
    int64_t M = x->shape[x->rank - 1], count = reel_tensor_count(x->rank - 2, x->shape);
    bool f64 = x->dtype == REEL_DTYPE_FLOAT64;
    double *a = g_try_malloc(sizeof(double) * (size_t)MAX(1, M * M));
    if (!a)
        return REEL_ENOMEM;
    for (int64_t b = 0; b < count; b++) {
        for (int64_t k = 0; k < M * M; k++)
            a[k] = f64 ? ((const double *)x->data)[b * M * M + k] : ((const float *)x->data)[b * M * M + k];
        double d = lu_det(a, M);
        if (f64)
            ((double *)out[0]->data)[b] = d;
        else
            ((float *)out[0]->data)[b] = (float)d;
    }
    g_free(a);
    return 0;
}

static const reel_op op_det = { "Det", det_infer, NULL, det_run };

const reel_op *const reel_ops_linalg[] = {
    &op_einsum,
    &op_det,
    NULL,
};

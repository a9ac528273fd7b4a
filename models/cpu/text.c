// TfIdfVectorizer over int32/int64 token ids (reel has no string dtype, so
// pool_strings is refused).
#include "models/cpu/nn.h"

// The n-gram pool: pool_int64s grouped by length (ngram_counts[k]: where the
// (k+1)-grams start), each gram mapped to an output slot by ngram_indexes.
typedef struct tfidf {
    const int64_t *pool, *counts, *indexes;
    int n_pool, n_counts, n_indexes;
    int64_t min_n, max_n, skip, width;
    int mode; // 0 TF, 1 IDF, 2 TFIDF
    const float *weights;
    int n_weights;
} tfidf;

static int tfidf_read(const reel_ir_node *n, tfidf *t, GError **error)
{
    memset(t, 0, sizeof *t);
    const char *mode = reel_ir_attr_string(n, "mode", "TF");
    t->mode = strcmp(mode, "TF") == 0 ? 0 : strcmp(mode, "IDF") == 0 ? 1 : strcmp(mode, "TFIDF") == 0 ? 2 : -1;
    if (t->mode < 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'mode' = '%s' is not supported", mode);
    int ns;
    if (reel_ir_attr_strings(n, "pool_strings", &ns) && ns > 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'pool_strings' is not supported (reel has no string tensors)");
    t->pool = reel_ir_attr_ints(n, "pool_int64s", &t->n_pool);
    t->counts = reel_ir_attr_ints(n, "ngram_counts", &t->n_counts);
    t->indexes = reel_ir_attr_ints(n, "ngram_indexes", &t->n_indexes);
    t->min_n = reel_ir_attr_int(n, "min_gram_length", 0);
    t->max_n = reel_ir_attr_int(n, "max_gram_length", 0);
    t->skip = reel_ir_attr_int(n, "max_skip_count", 0);
    const reel_ir_attr *w = reel_ir_attr_find(n, "weights");
    if (w && w->type == REEL_ATTR_FLOATS)
        t->weights = w->floats, t->n_weights = w->n;
    if (t->min_n < 1 || t->max_n < t->min_n || t->max_n > t->n_counts)
        NN_FAIL(error, REEL_EINVAL, n, "min_gram_length and max_gram_length must satisfy 1 <= min <= max <= len(ngram_counts)");
    if (t->skip < 0)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'max_skip_count' is negative");
    // the counts must be increasing offsets into the pool, each group a whole number of grams
    int64_t grams = 0;
    for (int k = 0; k < t->n_counts; k++) {
        int64_t start = t->counts[k], end = k + 1 < t->n_counts ? t->counts[k + 1] : t->n_pool;
        if (start < 0 || end < start || end > t->n_pool || (end - start) % (k + 1))
            NN_FAIL(error, REEL_EINVAL, n, "ngram_counts does not split pool_int64s into groups of 1-, 2-, ... grams");
        grams += (end - start) / (k + 1);
    }
    if (grams != t->n_indexes)
        NN_FAIL(error, REEL_EINVAL, n, "ngram_indexes has %d entries for %" G_GINT64_FORMAT " n-grams", t->n_indexes, grams);
    for (int i = 0; i < t->n_indexes; i++) {
        if (t->indexes[i] < 0)
            NN_FAIL(error, REEL_EINVAL, n, "ngram_indexes has a negative entry");
        t->width = MAX(t->width, t->indexes[i] + 1);
    }
    if (t->weights && t->n_weights < t->width)
        NN_FAIL(error, REEL_EINVAL, n, "weights has fewer entries than the output");
    return 0;
}

static int tfidf_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0);
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs the input X");
    if (x->dtype != REEL_DTYPE_INT32 && x->dtype != REEL_DTYPE_INT64)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input type %s is not supported (int32 or int64)", reel_dtype_name(x->dtype));
    tfidf t;
    int err = tfidf_read(n, &t, error);
    if (err)
        return err;
    if (x->rank < 0) {
        nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, -1, NULL);
        return 0;
    }
    if (x->rank != 1 && x->rank != 2)
        NN_FAIL(error, REEL_EINVAL, n, "X must be [C] or [N, C]");
    int64_t d[2] = { x->dims[0], t.width };
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, x->rank, x->rank == 1 ? d + 1 : d);
    return 0;
}

static int64_t token(const reel_tensor *x, int64_t i)
{
    return x->dtype == REEL_DTYPE_INT32 ? ((const int32_t *)x->data)[i] : ((const int64_t *)x->data)[i];
}

// Whether the gram of len tokens starting at x[at], `gap` apart, is the
// pool entry p.
static bool gram_is(const reel_tensor *x, int64_t at, int64_t gap, int64_t len, const int64_t *p)
{
    for (int64_t k = 0; k < len; k++)
        if (token(x, at + k * gap) != p[k])
            return false;
    return true;
}

// Counts into y[0..width) the pool's n-grams found in the row x[row..row+c):
// every start, every skip (unigrams once), every length from min to max.
static void count_row(const tfidf *t, const reel_tensor *x, int64_t row, int64_t c, float *y)
{
    for (int64_t len = t->min_n; len <= t->max_n; len++) {
        int64_t start = t->counts[len - 1], end = len < t->n_counts ? t->counts[len] : t->n_pool;
        int64_t first = 0; // ordinal of this group's first gram
        for (int64_t k = 0; k < len - 1; k++) {
            int64_t s = t->counts[k], e = k + 1 < t->n_counts ? t->counts[k + 1] : t->n_pool;
            first += (e - s) / (k + 1);
        }
        for (int64_t gap = 1; gap <= (len == 1 ? 1 : t->skip + 1); gap++)
            for (int64_t at = 0; at + (len - 1) * gap < c; at++)
                for (int64_t p = start; p < end; p += len)
                    if (gram_is(x, row + at, gap, len, t->pool + p)) {
                        y[t->indexes[first + (p - start) / len]] += 1.0f;
                        break;
                    }
    }
}

static int tfidf_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)ctx;
    tfidf t;
    if (tfidf_read(n, &t, NULL))
        return REEL_EINVAL;
    const reel_tensor *x = in[0];
    int64_t rows = x->rank == 2 ? x->shape[0] : 1, c = x->shape[x->rank - 1];
    float *y = out[0]->data;
    memset(y, 0, sizeof *y * (size_t)(rows * t.width));
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * t.width;
        count_row(&t, x, r * c, c, yr);
        // IDF: the weight where the gram occurs; TFIDF: count times weight
        for (int64_t i = 0; i < t.width && t.mode; i++) {
            float w = t.weights ? t.weights[i] : 1.0f;
            yr[i] = t.mode == 1 ? (yr[i] > 0 ? w : 0.0f) : yr[i] * w;
        }
    }
    return 0;
}

static const reel_op op_tfidf = { .name = "TfIdfVectorizer", .infer = tfidf_infer, .run = tfidf_run };

const reel_op *const reel_ops_text[] = {
    &op_tfidf,
    NULL,
};

// Conv -> BatchNormalization becomes one Conv: W' = W * f, b' = (b - mean) * f
// + beta with f = gamma / sqrt(var + epsilon), per output channel.
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "models/onnx/fold_bn.h"

static void *own(GPtrArray *mem, void *p)
{
    g_ptr_array_add(mem, p);
    return p;
}

static const Onnx__TensorProto *find_init(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; name && *name && i < g->n_initializer; i++)
        if (g->initializer[i]->name && strcmp(g->initializer[i]->name, name) == 0)
            return g->initializer[i];
    return NULL;
}

// A float initializer's values when it holds exactly n of them, else NULL.
static const float *floats(const Onnx__TensorProto *t, int64_t n)
{
    if (!t || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return NULL;
    int64_t count = 1;
    for (size_t d = 0; d < t->n_dims; d++)
        count *= t->dims[d];
    if (count != n)
        return NULL;
    if (t->has_raw_data && t->raw_data.len == (size_t)n * sizeof(float))
        return (const float *)t->raw_data.data;
    return t->n_float_data == (size_t)n ? t->float_data : NULL;
}

static int uses(const Onnx__GraphProto *g, const char *name)
{
    int n = 0;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            n += strcmp(g->node[i]->input[k], name) == 0;
    for (size_t i = 0; i < g->n_output; i++)
        n += g->output[i]->name && strcmp(g->output[i]->name, name) == 0;
    return n;
}

static Onnx__TensorProto *new_tensor(GPtrArray *mem, const char *name, const int64_t *dims, size_t rank, float *v,
                                     int64_t n)
{
    Onnx__TensorProto *t = own(mem, g_new(Onnx__TensorProto, 1));
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = own(mem, g_strdup(name));
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_dims = rank;
    t->dims = own(mem, g_memdup2(dims, rank * sizeof *dims));
    t->has_raw_data = 1;
    t->raw_data.len = (size_t)n * sizeof(float);
    t->raw_data.data = own(mem, v);
    return t;
}

int fold_batchnorm(Onnx__GraphProto *g, GPtrArray *mem)
{
    GPtrArray *nodes = g_ptr_array_new(), *inits = g_ptr_array_new();
    for (size_t i = 0; i < g->n_initializer; i++)
        g_ptr_array_add(inits, g->initializer[i]);
    // Producer of each tensor, as the nodes stand in the new list.
    GHashTable *producer = g_hash_table_new(g_str_hash, g_str_equal);
    int folded = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *bn = g->node[i];
        Onnx__NodeProto *conv = bn->op_type && bn->n_input == 5 && bn->n_output == 1 && strcmp(bn->op_type, "BatchNormalization") == 0
                                    ? g_hash_table_lookup(producer, bn->input[0])
                                    : NULL;
        const Onnx__TensorProto *w = conv && strcmp(conv->op_type, "Conv") == 0 && conv->n_input >= 2 &&
                                             conv->n_output == 1 && uses(g, bn->input[0]) == 1
                                         ? find_init(g, conv->input[1])
                                         : NULL;
        int64_t m = w && w->n_dims >= 1 ? w->dims[0] : 0, count = 1;
        for (size_t d = 0; w && d < w->n_dims; d++)
            count *= w->dims[d];
        const float *wv = m > 0 ? floats(w, count) : NULL, *gamma = wv ? floats(find_init(g, bn->input[1]), m) : NULL,
                    *beta = gamma ? floats(find_init(g, bn->input[2]), m) : NULL,
                    *mean = beta ? floats(find_init(g, bn->input[3]), m) : NULL,
                    *var = mean ? floats(find_init(g, bn->input[4]), m) : NULL;
        const float *bias = conv && conv->n_input > 2 && *conv->input[2] ? floats(find_init(g, conv->input[2]), m) : NULL;
        bool training = false;
        double eps = 1e-5;
        for (size_t a = 0; var && a < bn->n_attribute; a++) {
            const char *name = bn->attribute[a]->name ? bn->attribute[a]->name : "";
            if (strcmp(name, "epsilon") == 0)
                eps = bn->attribute[a]->f;
            if (strcmp(name, "training_mode") == 0 && bn->attribute[a]->i)
                training = true;
        }
        if (!var || training || (conv->n_input > 2 && *conv->input[2] && !bias)) { // any other node: kept
            g_ptr_array_add(nodes, bn);
            for (size_t k = 0; k < bn->n_output; k++)
                g_hash_table_insert(producer, bn->output[k], bn);
            continue;
        }
        float *nw = g_new(float, count), *nb = g_new(float, m);
        int64_t inner = count / m;
        for (int64_t c = 0; c < m; c++) {
            double f = gamma[c] / sqrt((double)var[c] + eps);
            for (int64_t j = 0; j < inner; j++)
                nw[c * inner + j] = (float)(wv[c * inner + j] * f);
            nb[c] = (float)(((bias ? bias[c] : 0.0) - mean[c]) * f + beta[c]);
        }
        char *wname = own(mem, g_strconcat(bn->output[0], "_folded_weight", NULL));
        char *bname = own(mem, g_strconcat(bn->output[0], "_folded_bias", NULL));
        g_ptr_array_add(inits, new_tensor(mem, wname, w->dims, w->n_dims, nw, count));
        g_ptr_array_add(inits, new_tensor(mem, bname, (int64_t[]){ m }, 1, nb, m));
        // The Conv (already in the list) now writes the BatchNormalization's output.
        Onnx__NodeProto *c = own(mem, g_memdup2(conv, sizeof *conv));
        c->n_input = 3;
        c->input = own(mem, g_new(char *, 3));
        c->input[0] = conv->input[0];
        c->input[1] = wname;
        c->input[2] = bname;
        c->output = own(mem, g_new(char *, 1));
        c->output[0] = bn->output[0];
        for (guint k = 0; k < nodes->len; k++)
            if (nodes->pdata[k] == conv)
                nodes->pdata[k] = c;
        g_hash_table_insert(producer, bn->output[0], c);
        folded++;
    }
    g->n_node = nodes->len;
    g->node = own(mem, g_ptr_array_free(nodes, FALSE));
    g->n_initializer = inits->len;
    g->initializer = own(mem, g_ptr_array_free(inits, FALSE));
    g_hash_table_destroy(producer);
    return folded;
}

// reel_quantizer: picks what of a float ONNX model to quantize, calibrates
// it with the model itself (every such tensor made an extra graph output)
// and writes the model back in ONNX Runtime's QDQ form, editing the
// ModelProto that protobuf-c unpacked and packing it again.
//
// Conventions (ORT's QDQ format, what a folding pass turns into integer
// ops): weights int8, symmetric (zero point 0), one scale per output
// channel, then DequantizeLinear; biases int32 at input_scale x
// weight_scale, zero point 0; activations uint8 asymmetric, each with one
// QuantizeLinear -> DequantizeLinear pair that every consumer reads.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/read_file.h"
#include "models/onnx/fold_bn.h"
#include "models/quant/bias_correct.h"
#include "models/quant/equalize.h"
#include "models/quant/range.h"
#include "onnx.pb-c.h"
#include "reel/error.h"
#include "reel/limits.h"
#include "reel/quantize.h"

#define QDQ_OPSET 13

typedef struct act {
    char *name;
    int output;         // index among the calibration model's outputs
    char *shares;       // takes this tensor's parameters (MaxPool, Reshape...); NULL: its own
    bool not_float;     // calibration showed another dtype: left alone
    bool output_tail;   // a model output, or leads to one only through Reshape, Transpose...: kept float
    bool keep_float;    // the output of a node the writer's params keep float
    quant_range range;
    chan_stats mean;     // per-channel means, for bias correction of the convs reading it
} act;

struct reel_quantizer {
    char *path;
    Onnx__ModelProto *mp;
    Onnx__GraphProto graph; // mp's graph with BatchNormalization folded into Conv
    GPtrArray *mem;         // what the folding allocated
    GHashTable *inits;   // name -> Onnx__TensorProto*
    GHashTable *by_name; // name -> act*
    GPtrArray *acts;
    int n_weights;
    reel_model *calib;
    reel_session *session;
    int64_t observed;
};

static bool is_op(const Onnx__NodeProto *n, const char *op)
{
    return n->op_type && strcmp(n->op_type, op) == 0 &&
           (!n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0);
}

static bool is_any(const Onnx__NodeProto *n, const char *const *ops)
{
    for (; *ops; ops++)
        if (is_op(n, *ops))
            return true;
    return false;
}

// Ops whose inputs and output are quantized, each with its own parameters.
static const char *const compute_ops[] = { "Conv", "MatMul", "Gemm", "Add", "Mul", "AveragePool",
                                           "GlobalAveragePool", "Concat", NULL };
// Ops whose output takes its input's parameters (they only move or pick values).
static const char *const shared_ops[] = { "MaxPool", "Reshape", "Resize", "Transpose", "Flatten", NULL };
// Ops a following Relu/Clip folds into: quantized after the activation.
static const char *const act_fusing_ops[] = { "Conv", "MatMul", "Gemm", "Add", "Mul", NULL };
static const char *const activations[] = { "Relu", "Clip", NULL };

// The weight input of a node (1) when it is a float initializer, else -1.
static const Onnx__TensorProto *weight_of(const reel_quantizer *q, const Onnx__NodeProto *n)
{
    if (!(is_op(n, "Conv") || is_op(n, "MatMul") || is_op(n, "Gemm")) || n->n_input < 2)
        return NULL;
    const Onnx__TensorProto *w = g_hash_table_lookup(q->inits, n->input[1]);
    return w && w->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && w->n_dims >= 1 ? w : NULL;
}

static bool is_graph_output(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && strcmp(g->output[i]->name, name) == 0)
            return true;
    return false;
}

static act *add_act(reel_quantizer *q, const char *name)
{
    if (!name || !*name || g_hash_table_contains(q->inits, name))
        return NULL;
    act *a = g_hash_table_lookup(q->by_name, name);
    if (a)
        return a;
    a = g_new0(act, 1);
    a->name = g_strdup(name);
    a->output = -1;
    quant_range_init(&a->range);
    g_ptr_array_add(q->acts, a);
    g_hash_table_insert(q->by_name, a->name, a);
    return a;
}

static void free_act(gpointer p)
{
    act *a = p;
    g_free(a->name);
    g_free(a->shares);
    chan_stats_clear(&a->mean);
    g_free(a);
}

// The tensors to quantize, in node order.
static void pick(reel_quantizer *q)
{
    const Onnx__GraphProto *g = &q->graph;
    GHashTable *consumers = g_hash_table_new(g_str_hash, g_str_equal); // name -> count
    GHashTable *consumer = g_hash_table_new(g_str_hash, g_str_equal);  // name -> a node reading it
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++) {
            const char *in = g->node[i]->input[k];
            g_hash_table_insert(consumers, (gpointer)in,
                                GINT_TO_POINTER(GPOINTER_TO_INT(g_hash_table_lookup(consumers, in)) + 1));
            g_hash_table_insert(consumer, (gpointer)in, g->node[i]);
        }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        bool compute = is_any(n, compute_ops), shared = is_any(n, shared_ops);
        if ((!compute && !shared) || n->n_output < 1)
            continue;
        if (weight_of(q, n))
            q->n_weights++;
        size_t n_in = shared || is_op(n, "Conv") || is_op(n, "AveragePool") || is_op(n, "GlobalAveragePool") ? 1
                      : is_op(n, "Gemm")                                                                      ? 2
                                                                                                              : n->n_input;
        for (size_t k = 0; k < n_in && k < n->n_input; k++)
            add_act(q, n->input[k]);
        const char *out = n->output[0];
        const Onnx__NodeProto *next = g_hash_table_lookup(consumer, out);
        if (is_any(n, act_fusing_ops) && GPOINTER_TO_INT(g_hash_table_lookup(consumers, out)) == 1 &&
            next && is_any(next, activations) && !is_graph_output(g, out) && next->n_output >= 1)
            out = next->output[0];
        act *a = add_act(q, out);
        if (a && shared && !a->shares && n->n_input >= 1 && g_hash_table_contains(q->by_name, n->input[0]))
            a->shares = g_strdup(n->input[0]);
    }
    // The model's outputs stay float from the last computing node on: one
    // uint8 step of a detector's box output is several pixels of the frame,
    // while its input, weights and bias still quantize.
    GHashTable *producer = g_hash_table_new(g_str_hash, g_str_equal);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_output; k++)
            g_hash_table_insert(producer, g->node[i]->output[k], g->node[i]);
    for (size_t i = 0; i < g->n_output; i++) {
        const char *t = g->output[i]->name;
        for (int hops = 0; t && hops < 1000; hops++) {
            act *a = g_hash_table_lookup(q->by_name, t);
            if (a)
                a->output_tail = true;
            const Onnx__NodeProto *p = g_hash_table_lookup(producer, t);
            if (p && is_any(p, activations) && p->n_input >= 1) { // Conv -> Relu -> output: both float
                t = p->input[0];
                continue;
            }
            t = p && is_any(p, shared_ops) && p->n_input >= 1 ? p->input[0] : NULL;
        }
    }
    g_hash_table_destroy(producer);
    g_hash_table_destroy(consumers);
    g_hash_table_destroy(consumer);
}

// The float model with every tensor to calibrate also a graph output.
static reel_model *calibration_model(reel_quantizer *q, GError **error)
{
    const Onnx__GraphProto *g = &q->graph;
    Onnx__GraphProto g2 = *g;
    Onnx__ModelProto m2 = *q->mp;
    m2.graph = &g2;
    g2.output = g_new(Onnx__ValueInfoProto *, g->n_output + q->acts->len);
    Onnx__ValueInfoProto *extra = g_new(Onnx__ValueInfoProto, q->acts->len ? q->acts->len : 1);
    memcpy(g2.output, g->output, g->n_output * sizeof *g2.output);
    for (guint i = 0; i < q->acts->len; i++) {
        act *a = q->acts->pdata[i];
        int found = -1;
        for (size_t k = 0; k < g->n_output && found < 0; k++)
            if (g->output[k]->name && strcmp(g->output[k]->name, a->name) == 0)
                found = (int)k;
        if (found < 0) {
            extra[i] = (Onnx__ValueInfoProto)ONNX__VALUE_INFO_PROTO__INIT;
            extra[i].name = a->name;
            found = (int)g2.n_output;
            g2.output[g2.n_output++] = &extra[i];
        }
        a->output = found;
    }
    size_t len = onnx__model_proto__get_packed_size(&m2);
    uint8_t *buf = g_malloc(len ? len : 1);
    onnx__model_proto__pack(&m2, buf);
    reel_model *m = reel_model_load_data(buf, len, q->path, error);
    g_free(buf);
    g_free(extra);
    g_free(g2.output);
    return m;
}

static int check_opset(const reel_quantizer *q, int64_t *opset, GError **error);
static const float *float_data(const Onnx__TensorProto *t, int64_t *count);
static int64_t int_attr(const Onnx__NodeProto *n, const char *name, int64_t fallback);

reel_quantizer *reel_quantizer_new(const char *path, GError **error)
{
    char *data = NULL;
    gsize len = 0;
    if (reel_read_file(path, "model", (gsize)reel_limit_get(REEL_LIMIT_MODEL_BYTES), "REEL_MAX_MODEL_BYTES", &data,
                       &len, error) < 0)
        return NULL;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, (const uint8_t *)data);
    g_free(data);
    if (!mp || !mp->graph) {
        g_set_error(error, REEL_ERROR, REEL_EFORMAT, "%s: not an ONNX model (no ModelProto with a graph)", path);
        if (mp)
            onnx__model_proto__free_unpacked(mp, NULL);
        return NULL;
    }
    reel_quantizer *q = g_new0(reel_quantizer, 1);
    q->path = g_strdup(path);
    q->mp = mp;
    q->graph = *mp->graph;
    q->mem = g_ptr_array_new_with_free_func(g_free);
    fold_batchnorm(&q->graph, q->mem);
    q->inits = g_hash_table_new(g_str_hash, g_str_equal);
    q->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    q->acts = g_ptr_array_new_with_free_func(free_act);
    for (size_t i = 0; i < q->graph.n_initializer; i++)
        if (q->graph.initializer[i]->name)
            g_hash_table_insert(q->inits, q->graph.initializer[i]->name, q->graph.initializer[i]);
    pick(q);
    int64_t opset;
    if (check_opset(q, &opset, error) < 0) {
        reel_quantizer_free(&q);
        return NULL;
    }
    if (q->acts->len == 0 && q->n_weights == 0) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL,
                    "%s: nothing to quantize (no Conv, MatMul, Gemm, Add, Mul, pool, Concat, MaxPool, Reshape, "
                    "Resize or Transpose node)",
                    path);
        reel_quantizer_free(&q);
        return NULL;
    }
    q->calib = calibration_model(q, error);
    if (!q->calib) {
        g_prefix_error(error, "%s: the model for calibration: ", path);
        reel_quantizer_free(&q);
        return NULL;
    }
    return q;
}

void reel_quantizer_free(reel_quantizer **qp)
{
    reel_quantizer *q = *qp;
    if (!q)
        return;
    reel_session_destroy(&q->session);
    reel_model_unref(&q->calib);
    g_ptr_array_free(q->acts, TRUE);
    g_hash_table_destroy(q->by_name);
    g_hash_table_destroy(q->inits);
    onnx__model_proto__free_unpacked(q->mp, NULL);
    g_ptr_array_free(q->mem, TRUE);
    g_free(q->path);
    g_free(q);
    *qp = NULL;
}

reel_model *reel_quantizer_model(reel_quantizer *q)
{
    return q->calib;
}

int64_t reel_quantizer_n_observed(const reel_quantizer *q)
{
    return q->observed;
}

int reel_quantizer_observe(reel_quantizer *q, reel_tensor *const *inputs, GError **error)
{
    if (!q->session && !(q->session = reel_session_new(q->calib, reel_session_params(.threads = 0), error)))
        return error && *error ? (*error)->code : REEL_EINVAL;
    int n = reel_model_n_outputs(q->calib);
    reel_tensor **outs = g_new0(reel_tensor *, n);
    int rc = reel_session_run(q->session, inputs, outs, error);
    if (rc == 0) {
        for (guint i = 0; i < q->acts->len; i++) {
            act *a = q->acts->pdata[i];
            const reel_tensor *t = a->output >= 0 && a->output < n ? outs[a->output] : NULL;
            if (!t || t->dtype != REEL_DTYPE_FLOAT32 || !t->data)
                a->not_float = true;
            else {
                quant_range_add(&a->range, t->data, t->nbytes / sizeof(float));
                chan_stats_add(&a->mean, t->data, t->rank, t->shape);
            }
        }
        q->observed++;
    }
    for (int i = 0; i < n; i++)
        reel_tensor_free(&outs[i]);
    g_free(outs);
    return rc;
}

// ---- equalization ---------------------------------------------------------

// How many nodes read tensor `name`.
static int readers(const Onnx__GraphProto *g, const char *name, const Onnx__NodeProto **last)
{
    int n = 0;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (strcmp(g->node[i]->input[k], name) == 0) {
                n++;
                *last = g->node[i];
            }
    return n;
}

// A float copy of initializer `t`, values multiplied along `axis` by
// k[index] (or divided), put in its place in the graph.
static void rescale_init(reel_quantizer *q, const Onnx__TensorProto *t, int axis, const float *k, bool divide)
{
    int64_t count;
    const float *v = float_data(t, &count);
    int64_t channels = t->dims[axis], inner = 1;
    for (size_t d = (size_t)axis + 1; d < t->n_dims; d++)
        inner *= t->dims[d];
    float *nv = g_new(float, count ? count : 1);
    g_ptr_array_add(q->mem, nv);
    for (int64_t i = 0; i < count; i++) {
        float f = k[i / inner % channels];
        nv[i] = divide ? v[i] / f : v[i] * f;
    }
    Onnx__TensorProto *c = g_memdup2(t, sizeof *t);
    g_ptr_array_add(q->mem, c);
    c->has_raw_data = 1;
    c->raw_data.data = (uint8_t *)nv;
    c->raw_data.len = (size_t)count * sizeof(float);
    c->n_float_data = 0;
    c->float_data = NULL;
    for (size_t i = 0; i < q->graph.n_initializer; i++)
        if (q->graph.initializer[i] == t)
            q->graph.initializer[i] = c;
    g_hash_table_insert(q->inits, c->name, c);
}

// The factors for depthwise Conv `n` when a pointwise-style Conv (group 1)
// alone reads its output and calibration saw that output's channels; NULL
// otherwise. *next: that Conv.
static float *pair_factors(reel_quantizer *q, const Onnx__NodeProto *n, const Onnx__NodeProto **next)
{
    const Onnx__GraphProto *g = &q->graph;
    const Onnx__TensorProto *w = weight_of(q, n), *w2, *b = NULL;
    int64_t count;
    if (!is_op(n, "Conv") || !w || w->n_dims != 4 || w->dims[1] != 1 || int_attr(n, "group", 1) != w->dims[0] ||
        n->n_output != 1 || is_graph_output(g, n->output[0]) || readers(g, n->output[0], next) != 1 ||
        !is_op(*next, "Conv") || (*next)->n_input < 2 || strcmp((*next)->input[0], n->output[0]) != 0 ||
        int_attr(*next, "group", 1) != 1 || !(w2 = weight_of(q, *next)) || w2->n_dims < 2 ||
        w2->dims[1] != w->dims[0] || !float_data(w, &count) || !float_data(w2, &count))
        return NULL;
    const Onnx__NodeProto *other;
    if (readers(g, w->name, &other) != 1 || readers(g, w2->name, &other) != 1)
        return NULL; // a weight shared with another node would change there too
    if (n->n_input > 2 && *n->input[2] &&
        (!(b = g_hash_table_lookup(q->inits, n->input[2])) || b->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
         b->n_dims != 1 || !float_data(b, &count) || count != w->dims[0] || readers(g, b->name, &other) != 1))
        return NULL;
    const act *a = g_hash_table_lookup(q->by_name, n->output[0]);
    if (!a || a->not_float || a->mean.channels != w->dims[0] || !a->mean.absmax)
        return NULL;
    float *k = g_new(float, w->dims[0]);
    equalize_factors(a->mean.absmax, w->dims[0], k);
    return k;
}

int reel_quantizer_equalize(reel_quantizer *q, GError **error)
{
    if (q->observed == 0) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "%s: equalization needs calibration input first", q->path);
        return REEL_EINVAL;
    }
    Onnx__TensorProto **inits = g_memdup2(q->graph.initializer,
                                          (q->graph.n_initializer ? q->graph.n_initializer : 1) * sizeof *inits);
    g_ptr_array_add(q->mem, inits);
    q->graph.initializer = inits; // a copy: the unpacked model's array stays as it was
    int pairs = 0;
    for (size_t i = 0; i < q->graph.n_node; i++) {
        const Onnx__NodeProto *n = q->graph.node[i], *next = NULL;
        float *k = pair_factors(q, n, &next);
        if (!k)
            continue;
        rescale_init(q, weight_of(q, n), 0, k, false);
        if (n->n_input > 2 && *n->input[2])
            rescale_init(q, g_hash_table_lookup(q->inits, n->input[2]), 0, k, false);
        rescale_init(q, weight_of(q, next), 1, k, true);
        g_free(k);
        pairs++;
    }
    if (pairs == 0)
        return 0; // nothing changed: what was observed still holds
    // What calibration saw belongs to the model before: start again.
    for (guint i = 0; i < q->acts->len; i++) {
        act *a = q->acts->pdata[i];
        quant_range_init(&a->range);
        chan_stats_clear(&a->mean);
        a->not_float = false;
    }
    q->observed = 0;
    reel_session_destroy(&q->session);
    reel_model_unref(&q->calib);
    q->calib = calibration_model(q, error);
    if (!q->calib) {
        g_prefix_error(error, "%s: the equalized model for calibration: ", q->path);
        return error && *error ? (*error)->code : REEL_EINVAL;
    }
    return pairs;
}

// ---- writing ------------------------------------------------------------

// What the writer allocates, freed together once the file is written.
typedef struct writer {
    reel_quantizer *q;
    const reel_quant_params *params;
    GPtrArray *mem;
    GPtrArray *nodes, *inits;
    GHashTable *renamed;  // tensor -> its DequantizeLinear output
    GHashTable *weights;  // weight initializer -> weight_q*
    GHashTable *biases;   // bias initializer -> its DequantizeLinear output
    GHashTable *keep;     // nodes that run in float
    reel_quant_summary summary;
} writer;

typedef struct weight_q {
    char *dq;      // DequantizeLinear output
    float *scales; // per channel (n) or one
    int64_t n;
    const float *w; // the float weights
    const int8_t *q; // and their int8 values
} weight_q;

static void *own(writer *w, void *p)
{
    g_ptr_array_add(w->mem, p);
    return p;
}

static char *name2(writer *w, const char *a, const char *b)
{
    return own(w, g_strconcat(a, b, NULL));
}

static Onnx__TensorProto *tensor(writer *w, const char *name, int32_t type, int rank, const int64_t *dims,
                                 void *data, size_t nbytes)
{
    Onnx__TensorProto *t = own(w, g_new(Onnx__TensorProto, 1));
    *t = (Onnx__TensorProto)ONNX__TENSOR_PROTO__INIT;
    t->name = (char *)name;
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = (size_t)rank;
    t->dims = own(w, g_memdup2(dims, (rank ? rank : 1) * sizeof *dims));
    t->has_raw_data = 1;
    t->raw_data.len = nbytes;
    t->raw_data.data = own(w, data);
    g_ptr_array_add(w->inits, t);
    return t;
}

static Onnx__NodeProto *node(writer *w, const char *op, const char *name, int n_in, const char *const *in,
                             const char *out, int axis)
{
    Onnx__NodeProto *n = own(w, g_new(Onnx__NodeProto, 1));
    *n = (Onnx__NodeProto)ONNX__NODE_PROTO__INIT;
    n->op_type = (char *)op;
    n->name = (char *)name;
    n->n_input = (size_t)n_in;
    n->input = own(w, g_memdup2(in, n_in * sizeof *in));
    n->n_output = 1;
    n->output = own(w, g_new(char *, 1));
    n->output[0] = (char *)out;
    if (axis >= 0) {
        Onnx__AttributeProto *a = own(w, g_new(Onnx__AttributeProto, 1));
        *a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
        a->name = "axis";
        a->has_type = 1;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1;
        a->i = axis;
        n->n_attribute = 1;
        n->attribute = own(w, g_new(Onnx__AttributeProto *, 1));
        n->attribute[0] = a;
    }
    g_ptr_array_add(w->nodes, n);
    return n;
}

// The act whose parameters `a` uses (following shared ones), or NULL when
// it is not quantized.
static const act *params_of(const reel_quantizer *q, const act *a)
{
    for (int hops = 0; a && hops < 1000; hops++) {
        if (a->not_float || a->output_tail || a->keep_float)
            return NULL;
        if (!a->shares)
            return a;
        a = g_hash_table_lookup(q->by_name, a->shares);
    }
    return NULL;
}

static void act_params(const writer *w, const act *a, float *scale, uint8_t *zp)
{
    double lo, hi;
    quant_range_get(&a->range, w->params->method == REEL_QUANT_PERCENTILE,
                    w->params->percentile > 0 ? w->params->percentile : 99.99, &lo, &hi);
    quant_range_uint8(lo, hi, scale, zp);
}

// The scale of tensor `name` when it is quantized, else 0.
static float act_scale(const writer *w, const char *name)
{
    const act *a = g_hash_table_lookup(w->q->by_name, name);
    const act *p = a ? params_of(w->q, a) : NULL;
    float s = 0;
    uint8_t zp;
    if (p)
        act_params(w, p, &s, &zp);
    return s;
}

// QuantizeLinear -> DequantizeLinear for activation `a` (producer writes `in`,
// consumers read `out`).
static void emit_qdq(writer *w, const act *a, const char *in, const char *out)
{
    const act *p = params_of(w->q, a);
    float *scale = g_new(float, 1);
    uint8_t *zp = g_new(uint8_t, 1);
    act_params(w, p, scale, zp);
    const char *s = name2(w, a->name, "_scale"), *z = name2(w, a->name, "_zero_point");
    tensor(w, s, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, scale, sizeof *scale);
    tensor(w, z, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 0, NULL, zp, 1);
    const char *qout = name2(w, a->name, "_QuantizeLinear_Output");
    node(w, "QuantizeLinear", name2(w, a->name, "_QuantizeLinear"), 3, (const char *[]){ in, s, z }, qout, -1);
    node(w, "DequantizeLinear", name2(w, a->name, "_DequantizeLinear"), 3, (const char *[]){ qout, s, z }, out, -1);
    w->summary.activations++;
}

// A float initializer's values (raw_data or float_data), or NULL.
static const float *float_data(const Onnx__TensorProto *t, int64_t *count)
{
    int64_t n = 1;
    for (size_t d = 0; d < t->n_dims; d++)
        n *= t->dims[d];
    *count = n;
    if (t->has_raw_data && t->raw_data.len == (size_t)n * sizeof(float))
        return (const float *)t->raw_data.data;
    if (t->n_float_data == (size_t)n)
        return t->float_data;
    return NULL;
}

// int8 weights, symmetric, along `axis` (or one scale); its DequantizeLinear first.
static const weight_q *quantize_weight(writer *w, const Onnx__TensorProto *t, int axis)
{
    weight_q *wq = g_hash_table_lookup(w->weights, t->name);
    if (wq)
        return wq;
    int64_t count;
    const float *v = float_data(t, &count);
    if (!v)
        return NULL; // external or odd data: left in float
    bool per_channel = !w->params->per_tensor && axis >= 0 && axis < (int)t->n_dims;
    int64_t channels = per_channel ? t->dims[axis] : 1, inner = 1;
    for (size_t d = per_channel ? (size_t)axis + 1 : t->n_dims; d < t->n_dims; d++)
        inner *= t->dims[d];
    wq = own(w, g_new0(weight_q, 1));
    wq->n = channels;
    wq->scales = own(w, g_new0(float, channels ? channels : 1));
    for (int64_t i = 0; i < count; i++) {
        int64_t c = per_channel ? i / inner % channels : 0;
        wq->scales[c] = fmaxf(wq->scales[c], fabsf(v[i]));
    }
    for (int64_t c = 0; c < channels; c++)
        wq->scales[c] = wq->scales[c] > 0 ? wq->scales[c] / 127.0f : 1.0f;
    int8_t *qv = g_new(int8_t, count ? count : 1);
    for (int64_t i = 0; i < count; i++) {
        float r = rintf(v[i] / wq->scales[per_channel ? i / inner % channels : 0]);
        qv[i] = (int8_t)(r < -127 ? -127 : r > 127 ? 127 : r);
    }
    const char *qn = name2(w, t->name, "_quantized"), *s = name2(w, t->name, "_scale"),
               *z = name2(w, t->name, "_zero_point");
    tensor(w, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, (int)t->n_dims, t->dims, qv, (size_t)count);
    wq->w = v;
    wq->q = qv;
    int64_t cdim[1] = { channels };
    tensor(w, s, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, per_channel, cdim,
           g_memdup2(wq->scales, channels * sizeof(float)), channels * sizeof(float));
    tensor(w, z, ONNX__TENSOR_PROTO__DATA_TYPE__INT8, per_channel, cdim, g_new0(int8_t, channels), channels);
    wq->dq = name2(w, t->name, "_DequantizeLinear_Output");
    node(w, "DequantizeLinear", name2(w, t->name, "_DequantizeLinear"), 3, (const char *[]){ qn, s, z }, wq->dq,
         per_channel ? axis : -1);
    g_hash_table_insert(w->weights, t->name, wq);
    w->summary.weights++;
    return wq;
}

// int32 bias `name` of `count` values at x_scale x w_scale[c], zero point 0.
static const char *bias_values(writer *w, const char *name, const float *v, int64_t count, const int64_t *dims,
                               float x_scale, const weight_q *wq)
{
    bool per_channel = wq->n > 1;
    float *scales = g_new(float, count ? count : 1);
    int32_t *qv = g_new(int32_t, count ? count : 1);
    for (int64_t c = 0; c < count; c++) {
        scales[c] = x_scale * wq->scales[per_channel ? c : 0];
        double r = rint((double)v[c] / scales[c]);
        qv[c] = (int32_t)(r < INT32_MIN ? INT32_MIN : r > INT32_MAX ? INT32_MAX : r);
    }
    const char *qn = name2(w, name, "_quantized"), *s = name2(w, name, "_quantized_scale"),
               *z = name2(w, name, "_quantized_zero_point");
    tensor(w, qn, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, dims, qv, (size_t)count * sizeof *qv);
    int64_t cdim[1] = { count };
    if (per_channel) {
        tensor(w, s, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, cdim, scales, (size_t)count * sizeof *scales);
        tensor(w, z, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 1, cdim, g_new0(int32_t, count), (size_t)count * 4);
    } else {
        tensor(w, s, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 0, NULL, g_memdup2(scales, sizeof *scales), 4);
        tensor(w, z, ONNX__TENSOR_PROTO__DATA_TYPE__INT32, 0, NULL, g_new0(int32_t, 1), 4);
        g_free(scales);
    }
    const char *dq = name2(w, name, "_DequantizeLinear_Output");
    node(w, "DequantizeLinear", name2(w, name, "_DequantizeLinear"), 3, (const char *[]){ qn, s, z }, dq,
         per_channel ? 0 : -1);
    w->summary.biases++;
    return dq;
}

// The bias initializer `t` in int32; NULL when it does not fit.
static const char *quantize_bias(writer *w, const Onnx__TensorProto *t, float x_scale, const weight_q *wq)
{
    const char *dq = g_hash_table_lookup(w->biases, t->name);
    if (dq)
        return dq;
    int64_t count;
    const float *v = float_data(t, &count);
    if (!v || t->n_dims != 1 || (wq->n > 1 && count != wq->n) || x_scale <= 0)
        return NULL;
    dq = bias_values(w, t->name, v, count, t->dims, x_scale, wq);
    g_hash_table_insert(w->biases, t->name, (gpointer)dq);
    return dq;
}

static int64_t int_attr(const Onnx__NodeProto *n, const char *name, int64_t fallback)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i]->i;
    return fallback;
}

// Conv `n`'s bias (`b`, or zeros when it has none) less the mean shift its
// int8 weights cause on the calibration data; NULL when the input's means
// are unknown or the shapes do not fit.
static const char *corrected_bias(writer *w, const Onnx__NodeProto *n, const Onnx__TensorProto *wt,
                                  const weight_q *wq, const Onnx__TensorProto *b, float x_scale)
{
    const act *in = g_hash_table_lookup(w->q->by_name, n->input[0]);
    if (!in || !wq->q || wt->n_dims < 3 || x_scale <= 0)
        return NULL;
    int64_t oc = wt->dims[0], inner = 1, kernel = 1, count = oc;
    for (size_t d = 1; d < wt->n_dims; d++)
        inner *= wt->dims[d];
    for (size_t d = 2; d < wt->n_dims; d++)
        kernel *= wt->dims[d];
    const float *bv = b ? float_data(b, &count) : NULL;
    if (b && (!bv || b->n_dims != 1 || count != oc))
        return NULL;
    if (wq->n > 1 && wq->n != oc)
        return NULL;
    float *v = own(w, g_new(float, oc ? oc : 1));
    if (!conv_bias_shift(wq->w, wq->q, wq->scales, wq->n > 1, oc, inner, kernel, int_attr(n, "group", 1), &in->mean,
                         v))
        return NULL;
    for (int64_t o = 0; o < oc; o++)
        v[o] = (bv ? bv[o] : 0.0f) - v[o];
    w->summary.bias_corrected++;
    int64_t dims[1] = { oc };
    return bias_values(w, name2(w, n->output[0], "_bias_corrected"), v, oc, dims, x_scale, wq);
}

// The output-channel axis of a node's weight.
static int weight_axis(const Onnx__NodeProto *n, const Onnx__TensorProto *t)
{
    if (is_op(n, "Conv"))
        return 0;
    if (is_op(n, "Gemm")) {
        for (size_t i = 0; i < n->n_attribute; i++)
            if (n->attribute[i]->name && strcmp(n->attribute[i]->name, "transB") == 0 && n->attribute[i]->i)
                return 0;
        return 1;
    }
    return (int)t->n_dims - 1; // MatMul: [..., K, N]
}

static bool gemm_beta_is_one(const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, "beta") == 0)
            return n->attribute[i]->f == 1.0f;
    return true;
}

static bool quantized(const writer *w, const char *name)
{
    const act *a = name ? g_hash_table_lookup(w->q->by_name, name) : NULL;
    return a && params_of(w->q, a);
}

// Opset 13 changed the inputs of these: raising a model's opset past them is
// not safe without rewriting them.
static int check_opset(const reel_quantizer *q, int64_t *opset, GError **error)
{
    *opset = 1;
    for (size_t i = 0; i < q->mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = q->mp->opset_import[i];
        if (!o->domain || !*o->domain || strcmp(o->domain, "ai.onnx") == 0)
            *opset = o->version;
    }
    if (*opset >= QDQ_OPSET)
        return 0;
    static const char *const changed[] = { "Squeeze", "Unsqueeze", "Split", "ReduceSum", NULL };
    const Onnx__GraphProto *g = &q->graph;
    for (size_t i = 0; i < g->n_node; i++)
        if (is_any(g->node[i], changed)) {
            g_set_error(error, REEL_ERROR, REEL_EUNSUPPORTED,
                        "%s: opset %" G_GINT64_FORMAT " must be raised to %d for per-channel quantization, and "
                        "node '%s' (%s, node %zu) changed there; convert the model to opset %d first",
                        q->path, *opset, QDQ_OPSET, g->node[i]->name ? g->node[i]->name : "", g->node[i]->op_type,
                        i + 1, QDQ_OPSET);
            return REEL_EUNSUPPORTED;
        }
    return 0;
}

// The new graph's nodes: weights' and inputs' dequantization first, then each
// node (inputs renamed to the DequantizeLinear outputs) followed by the
// Q/DQ pairs of its quantized outputs.
static void rewrite_nodes(writer *w)
{
    const Onnx__GraphProto *g = &w->q->graph;
    for (size_t i = 0; i < g->n_input; i++) {
        const char *name = g->input[i]->name;
        if (quantized(w, name) && !is_graph_output(g, name)) {
            const char *dq = name2(w, name, "_DequantizeLinear_Output");
            emit_qdq(w, g_hash_table_lookup(w->q->by_name, name), name, dq);
            g_hash_table_insert(w->renamed, (gpointer)name, (gpointer)dq);
        }
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        Onnx__NodeProto *c = own(w, g_memdup2(n, sizeof *n));
        c->input = own(w, g_memdup2(n->input, (n->n_input ? n->n_input : 1) * sizeof *n->input));
        c->output = own(w, g_memdup2(n->output, (n->n_output ? n->n_output : 1) * sizeof *n->output));
        const Onnx__TensorProto *wt = g_hash_table_contains(w->keep, n) ? NULL : weight_of(w->q, n);
        const weight_q *wq = wt ? quantize_weight(w, wt, weight_axis(n, wt)) : NULL;
        for (size_t k = 0; k < n->n_input; k++) {
            const char *r = g_hash_table_lookup(w->renamed, n->input[k]);
            if (r)
                c->input[k] = (char *)r;
        }
        if (wq) {
            c->input[1] = wq->dq;
            bool has_bias = n->n_input > 2 && n->input[2] && *n->input[2];
            const Onnx__TensorProto *b = has_bias ? g_hash_table_lookup(w->q->inits, n->input[2]) : NULL;
            bool float_bias = b && b->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT &&
                              (!is_op(n, "Gemm") || gemm_beta_is_one(n));
            float x_scale = act_scale(w, n->input[0]);
            const char *bdq = NULL;
            if (w->params->bias_correction && is_op(n, "Conv") && (float_bias || !has_bias))
                bdq = corrected_bias(w, n, wt, wq, b, x_scale);
            if (!bdq && float_bias)
                bdq = quantize_bias(w, b, x_scale, wq);
            if (bdq && c->n_input < 3) { // a Conv without bias gets one
                char **in = own(w, g_new0(char *, 3));
                memcpy(in, c->input, c->n_input * sizeof *in);
                for (size_t k = c->n_input; k < 2; k++)
                    in[k] = "";
                c->input = in;
                c->n_input = 3;
            }
            if (bdq)
                c->input[2] = (char *)bdq;
        }
        g_ptr_array_add(w->nodes, c);
        for (size_t k = 0; k < n->n_output; k++) {
            const char *out = n->output[k];
            if (!quantized(w, out))
                continue;
            const act *a = g_hash_table_lookup(w->q->by_name, out);
            if (is_graph_output(g, out)) { // the graph's output keeps its name: the producer's is renamed
                c->output[k] = name2(w, out, "_QuantizeLinear_Input");
                emit_qdq(w, a, c->output[k], out);
            } else {
                const char *dq = name2(w, out, "_DequantizeLinear_Output");
                emit_qdq(w, a, out, dq);
                g_hash_table_insert(w->renamed, (gpointer)out, (gpointer)dq);
            }
        }
    }
}

// Keeps the original initializers something still reads (float weights now
// read through their int8 copies are dropped), then the new ones.
static Onnx__TensorProto **initializers(writer *w, size_t *n, GHashTable *dropped)
{
    const Onnx__GraphProto *g = &w->q->graph;
    GHashTable *used = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < w->nodes->len; i++) {
        const Onnx__NodeProto *nd = w->nodes->pdata[i];
        for (size_t k = 0; k < nd->n_input; k++)
            g_hash_table_add(used, nd->input[k]);
    }
    for (size_t i = 0; i < g->n_output; i++)
        g_hash_table_add(used, g->output[i]->name);
    Onnx__TensorProto **all = own(w, g_new(Onnx__TensorProto *, g->n_initializer + w->inits->len + 1));
    *n = 0;
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (g_hash_table_contains(used, g->initializer[i]->name))
            all[(*n)++] = g->initializer[i];
        else
            g_hash_table_add(dropped, g->initializer[i]->name);
    }
    for (guint i = 0; i < w->inits->len; i++)
        all[(*n)++] = w->inits->pdata[i];
    g_hash_table_destroy(used);
    return all;
}

static void keep_node(writer *w, const Onnx__NodeProto *n)
{
    if (!g_hash_table_add(w->keep, (gpointer)n))
        return;
    w->summary.float_nodes++;
    const Onnx__GraphProto *g = &w->q->graph;
    for (size_t k = 0; k < n->n_output; k++) {
        act *a = g_hash_table_lookup(w->q->by_name, n->output[k]);
        if (a)
            a->keep_float = true;
        for (size_t i = 0; i < g->n_node; i++) // a following Relu/Clip quantizes in its place
            if (is_any(g->node[i], activations) && g->node[i]->n_input >= 1 && g->node[i]->n_output >= 1 &&
                strcmp(g->node[i]->input[0], n->output[k]) == 0 &&
                (a = g_hash_table_lookup(w->q->by_name, g->node[i]->output[0])))
                a->keep_float = true;
    }
}

// The nodes the params keep float: by name, and the last weighted node
// before each model output (through Reshape, Transpose, Relu...).
static int pick_float_nodes(writer *w, GError **error)
{
    const Onnx__GraphProto *g = &w->q->graph;
    for (guint i = 0; i < w->q->acts->len; i++)
        ((act *)w->q->acts->pdata[i])->keep_float = false;
    for (const char *const *name = w->params->keep_float; name && *name; name++) {
        const Onnx__NodeProto *found = NULL;
        for (size_t i = 0; i < g->n_node && !found; i++)
            if (g->node[i]->name && strcmp(g->node[i]->name, *name) == 0)
                found = g->node[i];
        if (!found) {
            g_set_error(error, REEL_ERROR, REEL_EINVAL, "--keep-float %s: %s has no node of that name", *name,
                        w->q->path);
            return REEL_EINVAL;
        }
        keep_node(w, found);
    }
    for (size_t o = 0; w->params->keep_heads_float && o < g->n_output; o++) {
        const char *t = g->output[o]->name;
        for (int hops = 0; t && hops < 1000; hops++) {
            const Onnx__NodeProto *p = NULL;
            for (size_t i = 0; i < g->n_node && !p; i++)
                for (size_t k = 0; k < g->node[i]->n_output && !p; k++)
                    if (strcmp(g->node[i]->output[k], t) == 0)
                        p = g->node[i];
            if (p && weight_of(w->q, p)) {
                keep_node(w, p);
                break;
            }
            t = p && (is_any(p, shared_ops) || is_any(p, activations)) && p->n_input >= 1 ? p->input[0] : NULL;
        }
    }
    return 0;
}

int reel_quantizer_write(reel_quantizer *q, const reel_quant_params *params, const char *out,
                         reel_quant_summary *summary, GError **error)
{
    if (q->observed == 0) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "%s: no calibration input was observed", q->path);
        return REEL_EINVAL;
    }
    int64_t opset;
    int rc = check_opset(q, &opset, error);
    if (rc < 0)
        return rc;
    reel_quant_params defaults = { 0 };
    writer w = { .q = q, .params = params ? params : &defaults };
    w.mem = g_ptr_array_new_with_free_func(g_free);
    w.nodes = g_ptr_array_new();
    w.inits = g_ptr_array_new();
    w.renamed = g_hash_table_new(g_str_hash, g_str_equal);
    w.weights = g_hash_table_new(g_str_hash, g_str_equal);
    w.biases = g_hash_table_new(g_str_hash, g_str_equal);
    w.keep = g_hash_table_new(g_direct_hash, g_direct_equal);
    GHashTable *dropped = g_hash_table_new(g_str_hash, g_str_equal);
    rc = pick_float_nodes(&w, error);
    if (rc < 0)
        goto out;
    rewrite_nodes(&w);

    const Onnx__GraphProto *g = &q->graph;
    Onnx__GraphProto g2 = *g;
    Onnx__ModelProto m2 = *q->mp;
    m2.graph = &g2;
    g2.n_node = w.nodes->len;
    g2.node = (Onnx__NodeProto **)w.nodes->pdata;
    g2.initializer = initializers(&w, &g2.n_initializer, dropped);
    // Old models list initializers among the inputs: the dropped ones go too.
    g2.input = own(&w, g_new(Onnx__ValueInfoProto *, g->n_input + 1));
    g2.n_input = 0;
    for (size_t i = 0; i < g->n_input; i++)
        if (!g_hash_table_contains(dropped, g->input[i]->name))
            g2.input[g2.n_input++] = g->input[i];
    // Per-axis DequantizeLinear needs opset 13 (and IR 7).
    m2.opset_import = own(&w, g_new(Onnx__OperatorSetIdProto *, q->mp->n_opset_import + 1));
    m2.n_opset_import = 0;
    for (size_t i = 0; i < q->mp->n_opset_import; i++) {
        Onnx__OperatorSetIdProto *o = q->mp->opset_import[i];
        if (!o->domain || !*o->domain || strcmp(o->domain, "ai.onnx") == 0)
            continue;
        m2.opset_import[m2.n_opset_import++] = o;
    }
    Onnx__OperatorSetIdProto *def = own(&w, g_new(Onnx__OperatorSetIdProto, 1));
    *def = (Onnx__OperatorSetIdProto)ONNX__OPERATOR_SET_ID_PROTO__INIT;
    def->domain = "";
    def->has_version = 1;
    def->version = opset > QDQ_OPSET ? opset : QDQ_OPSET;
    m2.opset_import[m2.n_opset_import++] = def;
    m2.has_ir_version = 1;
    m2.ir_version = q->mp->ir_version > 7 ? q->mp->ir_version : 7;

    size_t len = onnx__model_proto__get_packed_size(&m2);
    uint8_t *buf = g_malloc(len ? len : 1);
    onnx__model_proto__pack(&m2, buf);
    GError *err = NULL;
    if (!g_file_set_contents(out, (const char *)buf, (gssize)len, &err)) {
        g_set_error(error, REEL_ERROR, REEL_EIO, "cannot write the quantized model %s: %s", out, err->message);
        g_error_free(err);
        rc = REEL_EIO;
    }
    if (summary)
        *summary = w.summary;
    g_free(buf);
out:
    g_hash_table_destroy(dropped);
    g_hash_table_destroy(w.keep);
    g_hash_table_destroy(w.biases);
    g_hash_table_destroy(w.weights);
    g_hash_table_destroy(w.renamed);
    g_ptr_array_free(w.inits, TRUE);
    g_ptr_array_free(w.nodes, TRUE);
    g_ptr_array_free(w.mem, TRUE);
    return rc;
}

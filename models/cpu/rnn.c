// RNN, GRU, LSTM: one layer, forward, reverse or bidirectional, layout 0
// ([seq, batch, ...]) or 1 ([batch, seq, ...]), float32. Per direction the
// input projection X W^T (plus the biases) of every step is one GEMM; each
// step then adds H R^T (a GEMM over the batch) and applies the gates.
#include <limits.h>

#include "models/cpu/nn.h"

typedef enum act_kind {
    ACT_RELU,
    ACT_TANH,
    ACT_SIGMOID,
    ACT_AFFINE,
    ACT_LEAKY_RELU,
    ACT_THRESHOLDED_RELU,
    ACT_SCALED_TANH,
    ACT_HARD_SIGMOID,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS,
} act_kind;

// The activations ONNX allows, with the parameters each takes (consumed in
// order from activation_alpha/activation_beta) and their ops' defaults.
static const struct {
    const char *name;
    act_kind kind;
    bool uses_alpha, uses_beta;
    float alpha, beta;
} act_table[] = {
    { "Relu", ACT_RELU, false, false, 0, 0 },
    { "Tanh", ACT_TANH, false, false, 0, 0 },
    { "Sigmoid", ACT_SIGMOID, false, false, 0, 0 },
    { "Affine", ACT_AFFINE, true, true, 1.0f, 0.0f },
    { "LeakyRelu", ACT_LEAKY_RELU, true, false, 0.01f, 0 },
    { "ThresholdedRelu", ACT_THRESHOLDED_RELU, true, false, 1.0f, 0 },
    { "ScaledTanh", ACT_SCALED_TANH, true, true, 1.0f, 1.0f },
    { "HardSigmoid", ACT_HARD_SIGMOID, true, true, 0.2f, 0.5f },
    { "Elu", ACT_ELU, true, false, 1.0f, 0 },
    { "Softsign", ACT_SOFTSIGN, false, false, 0, 0 },
    { "Softplus", ACT_SOFTPLUS, false, false, 0, 0 },
};

typedef struct rnn_act {
    act_kind kind;
    float alpha, beta;
} rnn_act;

typedef enum cell_kind { CELL_RNN, CELL_GRU, CELL_LSTM } cell_kind;

// A node's attributes, checked.
typedef struct rnn_cfg {
    cell_kind cell;
    int gates;          // rows of W and R per hidden unit: 1, 3 or 4
    int n_act;          // activations per direction: 1, 2 or 3
    int dirs;           // 1 or 2 (bidirectional: forward then reverse)
    bool reverse;       // a single direction, run backwards
    int layout;         // 0 or 1
    int64_t hidden;     // hidden_size, -1 when absent
    bool has_clip;
    float clip;
    bool lbr;           // GRU linear_before_reset
    bool input_forget;  // LSTM: the forget gate is 1 - the input gate
    rnn_act act[2][3];  // per direction: f (, g (, h))
} rnn_cfg;

static int find_act(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(act_table); i++)
        if (g_ascii_strcasecmp(act_table[i].name, name) == 0)
            return (int)i;
    return -1;
}

static const float *attr_floats(const reel_ir_node *n, const char *name, int *count)
{
    const reel_ir_attr *a = reel_ir_attr_find(n, name);
    *count = a && a->type == REEL_ATTR_FLOATS ? a->n : 0;
    return *count ? a->floats : NULL;
}

static int parse_activations(const reel_ir_node *n, rnn_cfg *c, GError **error)
{
    static const char *const defaults[3][3] = {
        [CELL_RNN] = { "Tanh" },
        [CELL_GRU] = { "Sigmoid", "Tanh" },
        [CELL_LSTM] = { "Sigmoid", "Tanh", "Tanh" },
    };
    const reel_ir_attr *attr = reel_ir_attr_find(n, "activations");
    if (attr && attr->type != REEL_ATTR_STRINGS)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'activations' must be a list of strings");
    int count, n_alpha, n_beta;
    char *const *names = reel_ir_attr_strings(n, "activations", &count);
    // One list per direction, or one shared by both.
    if (attr && count != c->n_act * c->dirs && count != c->n_act)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'activations' has %d entries, %d expected", count,
                c->n_act * c->dirs);
    const float *alpha = attr_floats(n, "activation_alpha", &n_alpha);
    const float *beta = attr_floats(n, "activation_beta", &n_beta);
    // A single list for both directions (or the defaults) is parsed once.
    bool shared = !attr || count == c->n_act;
    int ai = 0, bi = 0;
    for (int d = 0; d < (shared ? 1 : c->dirs); d++)
        for (int k = 0; k < c->n_act; k++) {
            const char *name = attr ? names[d * c->n_act + k] : defaults[c->cell][k];
            int t = find_act(name);
            if (t < 0)
                NN_FAIL(error, REEL_EUNSUPPORTED, n, "activation '%s' is not supported", name);
            rnn_act *a = &c->act[d][k];
            a->kind = act_table[t].kind;
            a->alpha = act_table[t].uses_alpha && ai < n_alpha ? alpha[ai++] : act_table[t].alpha;
            a->beta = act_table[t].uses_beta && bi < n_beta ? beta[bi++] : act_table[t].beta;
        }
    if (shared)
        memcpy(c->act[1], c->act[0], sizeof c->act[0]);
    return 0;
}

static int rnn_config(const reel_ir_node *n, cell_kind cell, rnn_cfg *c, GError **error)
{
    static const int gates[] = { [CELL_RNN] = 1, [CELL_GRU] = 3, [CELL_LSTM] = 4 };
    static const int acts[] = { [CELL_RNN] = 1, [CELL_GRU] = 2, [CELL_LSTM] = 3 };
    *c = (rnn_cfg){ .cell = cell, .gates = gates[cell], .n_act = acts[cell], .dirs = 1 };
    const char *dir = reel_ir_attr_string(n, "direction", "forward");
    if (strcmp(dir, "bidirectional") == 0)
        c->dirs = 2;
    else if (strcmp(dir, "reverse") == 0)
        c->reverse = true;
    else if (strcmp(dir, "forward") != 0)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'direction' = '%s' is not supported", dir);
    int64_t layout = reel_ir_attr_int(n, "layout", 0);
    if (layout != 0 && layout != 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'layout' = %" G_GINT64_FORMAT " is not supported", layout);
    c->layout = (int)layout;
    c->hidden = reel_ir_attr_int(n, "hidden_size", -1);
    if (reel_ir_attr_find(n, "hidden_size") && c->hidden < 0)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'hidden_size' = %" G_GINT64_FORMAT " is negative", c->hidden);
    if (reel_ir_attr_find(n, "clip")) {
        c->has_clip = true;
        c->clip = reel_ir_attr_float(n, "clip", 0);
        if (!(c->clip > 0))
            NN_FAIL(error, REEL_EINVAL, n, "attribute 'clip' = %g must be positive", (double)c->clip);
    }
    int64_t lbr = reel_ir_attr_int(n, "linear_before_reset", 0);
    if (cell == CELL_GRU && lbr != 0 && lbr != 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'linear_before_reset' = %" G_GINT64_FORMAT " is not supported",
                lbr);
    c->lbr = cell == CELL_GRU && lbr == 1;
    int64_t coupled = reel_ir_attr_int(n, "input_forget", 0);
    if (cell == CELL_LSTM && coupled != 0 && coupled != 1)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'input_forget' = %" G_GINT64_FORMAT " is not supported",
                coupled);
    c->input_forget = cell == CELL_LSTM && coupled == 1;
    return parse_activations(n, c, error);
}

// ---- infer

// Input names by position: X, W, R, B, sequence_lens, initial_h, initial_c, P.
static const char *const input_names[] = { "X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P" };

// Whether dim k of v (known rank) is `want` or one of the two is unknown.
static bool dim_ok(const reel_ir_value *v, int k, int64_t want)
{
    return v->dims[k] < 0 || want < 0 || v->dims[k] == want;
}

static int64_t mul_known(int64_t a, int64_t b)
{
    return a < 0 || b < 0 ? REEL_DIM_UNKNOWN : a * b;
}

// Checks value i's rank and dims against want[0..rank) (-1: any).
static int check_shape(reel_ir_graph *g, reel_ir_node *n, int i, int rank, const int64_t *want, GError **error)
{
    reel_ir_value *v = reel_op_input(g, n, i);
    if (!v || v->rank < 0)
        return 0;
    if (v->rank != rank)
        NN_FAIL(error, REEL_EINVAL, n, "input %s must have rank %d, not %d", input_names[i], rank, v->rank);
    for (int k = 0; k < rank; k++)
        if (!dim_ok(v, k, want[k]))
            NN_FAIL(error, REEL_EINVAL, n, "input %s: dim %d is %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " expected",
                    input_names[i], k, v->dims[k], want[k]);
    return 0;
}

static int rnn_infer(reel_ir_graph *g, reel_ir_node *n, cell_kind cell, GError **error)
{
    int max_in = cell == CELL_LSTM ? 8 : 6, max_out = cell == CELL_LSTM ? 3 : 2;
    if (n->n_inputs > max_in || n->n_outputs > max_out)
        NN_FAIL(error, REEL_EINVAL, n, "takes at most %d inputs and %d outputs", max_in, max_out);
    reel_ir_value *x = reel_op_input(g, n, 0), *w = reel_op_input(g, n, 1), *r = reel_op_input(g, n, 2);
    if (!x || !w || !r)
        NN_FAIL(error, REEL_EINVAL, n, "needs inputs X, W and R");
    for (int i = 0; i < n->n_inputs; i++) {
        reel_ir_value *v = reel_op_input(g, n, i);
        reel_dtype want = i == 4 ? REEL_DTYPE_INT32 : REEL_DTYPE_FLOAT32;
        if (v && v->dtype != want)
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %s: only %s tensors are supported", input_names[i],
                    i == 4 ? "int32" : "float32");
    }
    rnn_cfg c;
    int err = rnn_config(n, cell, &c, error);
    if (err)
        return err;
    int64_t H = c.hidden;
    if (r->rank == 3 && r->dims[2] >= 0) {
        if (H >= 0 && H != r->dims[2])
            NN_FAIL(error, REEL_EINVAL, n, "hidden_size %" G_GINT64_FORMAT " but R has %" G_GINT64_FORMAT " columns", H,
                    r->dims[2]);
        H = r->dims[2];
    }
    int64_t T = REEL_DIM_UNKNOWN, B = REEL_DIM_UNKNOWN, I = REEL_DIM_UNKNOWN, D = c.dirs, GH = mul_known(c.gates, H);
    if (x->rank >= 0) {
        if (x->rank != 3)
            NN_FAIL(error, REEL_EINVAL, n, "input X must have rank 3, not %d", x->rank);
        T = x->dims[c.layout ? 1 : 0], B = x->dims[c.layout ? 0 : 1], I = x->dims[2];
    }
    const int64_t wd[] = { D, GH, I }, rd[] = { D, GH, H }, bd[] = { D, mul_known(2, GH) }, sd[] = { B },
                  hd0[] = { D, B, H }, hd1[] = { B, D, H }, pd[] = { D, mul_known(3, H) };
    int rc = check_shape(g, n, 1, 3, wd, error);
    rc = rc ? rc : check_shape(g, n, 2, 3, rd, error);
    rc = rc ? rc : check_shape(g, n, 3, 2, bd, error);
    rc = rc ? rc : check_shape(g, n, 4, 1, sd, error);
    rc = rc ? rc : check_shape(g, n, 5, 3, c.layout ? hd1 : hd0, error);
    rc = rc ? rc : check_shape(g, n, 6, 3, c.layout ? hd1 : hd0, error);
    rc = rc ? rc : check_shape(g, n, 7, 2, pd, error);
    if (rc)
        return rc;
    const int64_t y0[] = { T, D, B, H }, y1[] = { B, T, D, H };
    nn_set(reel_op_output(g, n, 0), REEL_DTYPE_FLOAT32, 4, c.layout ? y1 : y0);
    nn_set(reel_op_output(g, n, 1), REEL_DTYPE_FLOAT32, 3, c.layout ? hd1 : hd0);
    nn_set(reel_op_output(g, n, 2), REEL_DTYPE_FLOAT32, 3, c.layout ? hd1 : hd0);
    return 0;
}

static int rnn_infer_rnn(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    return rnn_infer(g, n, CELL_RNN, error);
}

static int rnn_infer_gru(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    return rnn_infer(g, n, CELL_GRU, error);
}

static int rnn_infer_lstm(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    return rnn_infer(g, n, CELL_LSTM, error);
}

// ---- run

// Sizes of a run: steps, batch, input and hidden size.
typedef struct rnn_dims {
    int64_t T, B, I, H, GH;
} rnn_dims;

static rnn_dims dims_of(const rnn_cfg *c, reel_tensor *const *in)
{
    rnn_dims d = { .T = in[0]->shape[c->layout ? 1 : 0], .B = in[0]->shape[c->layout ? 0 : 1],
                   .I = in[0]->shape[2], .H = in[2]->shape[2] };
    d.GH = c->gates * d.H;
    return d;
}

// Scratch per direction, in floats: the input projections of every step
// [T*B, GH], the per-step gates [B, GH], the summed biases [GH], the states
// h, c and r (.) h [B, H] each.
static size_t scratch_floats(const rnn_dims *d)
{
    return (size_t)(d->T * d->B * d->GH + d->B * d->GH + d->GH + 3 * d->B * d->H);
}

static size_t rnn_scratch(const reel_ir_node *n, cell_kind cell, reel_tensor *const *in)
{
    rnn_cfg c;
    if (rnn_config(n, cell, &c, NULL))
        return 0;
    rnn_dims d = dims_of(&c, in);
    return sizeof(float) * scratch_floats(&d) * (size_t)c.dirs;
}

static size_t rnn_scratch_rnn(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    return rnn_scratch(n, CELL_RNN, in);
}

static size_t rnn_scratch_gru(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    return rnn_scratch(n, CELL_GRU, in);
}

static size_t rnn_scratch_lstm(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    return rnn_scratch(n, CELL_LSTM, in);
}

static void activate(const rnn_act *a, float *restrict x, int64_t len)
{
    float al = a->alpha, be = a->beta;
    switch (a->kind) {
    case ACT_RELU:
        for (int64_t i = 0; i < len; i++)
            x[i] = x[i] > 0 ? x[i] : 0;
        break;
    case ACT_TANH:
        for (int64_t i = 0; i < len; i++)
            x[i] = tanhf(x[i]);
        break;
    case ACT_SIGMOID:
        for (int64_t i = 0; i < len; i++)
            x[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    case ACT_AFFINE:
        for (int64_t i = 0; i < len; i++)
            x[i] = al * x[i] + be;
        break;
    case ACT_LEAKY_RELU:
        for (int64_t i = 0; i < len; i++)
            x[i] = x[i] >= 0 ? x[i] : al * x[i];
        break;
    case ACT_THRESHOLDED_RELU:
        for (int64_t i = 0; i < len; i++)
            x[i] = x[i] > al ? x[i] : 0;
        break;
    case ACT_SCALED_TANH:
        for (int64_t i = 0; i < len; i++)
            x[i] = al * tanhf(be * x[i]);
        break;
    case ACT_HARD_SIGMOID:
        for (int64_t i = 0; i < len; i++) { // compares, not libm's fminf/fmaxf: they vectorize
            float v = al * x[i] + be;
            v = v < 0.0f ? 0.0f : v;
            x[i] = v > 1.0f ? 1.0f : v;
        }
        break;
    case ACT_ELU:
        for (int64_t i = 0; i < len; i++)
            x[i] = x[i] >= 0 ? x[i] : al * (expf(x[i]) - 1.0f);
        break;
    case ACT_SOFTSIGN:
        for (int64_t i = 0; i < len; i++)
            x[i] = x[i] / (1.0f + fabsf(x[i]));
        break;
    case ACT_SOFTPLUS:
        for (int64_t i = 0; i < len; i++)
            x[i] = x[i] > 20.0f ? x[i] : log1pf(expf(x[i]));
        break;
    }
}

// The clip (applied to every activation's input), when set.
static void clip(const rnn_cfg *c, float *restrict x, int64_t len)
{
    if (c->has_clip)
        for (int64_t i = 0; i < len; i++)
            x[i] = x[i] < -c->clip ? -c->clip : x[i] > c->clip ? c->clip : x[i];
}

// x += y, then the clip.
static void add_clip(const rnn_cfg *c, float *restrict x, const float *restrict y, int64_t len)
{
    for (int64_t i = 0; i < len; i++)
        x[i] += y[i];
    clip(c, x, len);
}

// What one direction's steps work on.
typedef struct rnn_dir {
    const rnn_cfg *c;
    const rnn_act *act;     // this direction's activations
    const float *R;         // [GH, H]
    const float *P;         // LSTM peepholes [3H] (i, o, f), or NULL
    const float *rbh;       // GRU linear_before_reset: R's bias of gate h [H], or NULL
    int64_t H;
} rnn_dir;

// h = f(x W^T + h R^T + biases); g holds h R^T, xw the rest.
static void rnn_step(const rnn_dir *s, const float *xw, float *g, float *h)
{
    add_clip(s->c, g, xw, s->H);
    activate(&s->act[0], g, s->H);
    memcpy(h, g, sizeof(float) * (size_t)s->H);
}

// GRU gates z and r (order z, r, h); rh = r (.) h for the candidate's GEMM.
static void gru_gates(const rnn_dir *s, const float *xw, float *g, const float *h, float *rh)
{
    int64_t H = s->H;
    add_clip(s->c, g, xw, 2 * H);
    activate(&s->act[0], g, 2 * H);
    if (rh)
        for (int64_t i = 0; i < H; i++)
            rh[i] = g[H + i] * h[i];
}

// The GRU candidate and the new h. g's h part holds (r (.) h) Rh^T, or
// without reset first, h Rh^T (times r here, with Rh's bias).
static void gru_update(const rnn_dir *s, const float *xw, float *g, float *h)
{
    int64_t H = s->H;
    float *z = g, *r = g + H, *hh = g + 2 * H;
    if (s->c->lbr)
        for (int64_t i = 0; i < H; i++)
            hh[i] = r[i] * (hh[i] + (s->rbh ? s->rbh[i] : 0.0f));
    add_clip(s->c, hh, xw + 2 * H, H);
    activate(&s->act[1], hh, H);
    for (int64_t i = 0; i < H; i++)
        h[i] = (1.0f - z[i]) * hh[i] + z[i] * h[i];
}

// LSTM (gate order i, o, f, c): updates the cell state cs and h.
static void lstm_step(const rnn_dir *s, const float *xw, float *g, float *h, float *cs)
{
    int64_t H = s->H;
    float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
    const float *P = s->P;
    for (int64_t k = 0; k < 4 * H; k++)
        g[k] += xw[k];
    if (P)
        for (int64_t i = 0; i < H; i++) {
            gi[i] += P[i] * cs[i];
            gf[i] += P[2 * H + i] * cs[i];
        }
    clip(s->c, gi, H);
    clip(s->c, gf, 2 * H); // f and c
    activate(&s->act[0], gi, H);
    if (s->c->input_forget)
        for (int64_t i = 0; i < H; i++)
            gf[i] = 1.0f - gi[i];
    else
        activate(&s->act[0], gf, H);
    activate(&s->act[1], gc, H);
    for (int64_t i = 0; i < H; i++)
        cs[i] = gf[i] * cs[i] + gi[i] * gc[i];
    // The output gate sees the new cell state.
    if (P)
        for (int64_t i = 0; i < H; i++)
            go[i] += P[H + i] * cs[i];
    clip(s->c, go, H);
    activate(&s->act[0], go, H);
    memcpy(gc, cs, sizeof(float) * (size_t)H);
    activate(&s->act[2], gc, H);
    for (int64_t i = 0; i < H; i++)
        h[i] = go[i] * gc[i];
}

static const float *opt_data(const reel_ir_node *n, reel_tensor *const *in, int i)
{
    return i < n->n_inputs && in[i] ? in[i]->data : NULL;
}

static float *out_data(const reel_ir_node *n, reel_tensor *const *out, int i)
{
    return i < n->n_outputs && out[i] ? out[i]->data : NULL;
}

// Offset of state (direction dir, batch b) in initial_h, Y_h and the like.
static int64_t state_at(const rnn_cfg *c, const rnn_dims *d, int dir, int64_t b)
{
    return (c->layout ? b * c->dirs + dir : dir * d->B + b) * d->H;
}

// Offset of Y's row (step t, direction dir, batch b).
static int64_t y_at(const rnn_cfg *c, const rnn_dims *d, int64_t t, int dir, int64_t b)
{
    return (c->layout ? (b * d->T + t) * c->dirs + dir : (t * c->dirs + dir) * d->B + b) * d->H;
}

// Working memory of one direction, carved from the scratch.
typedef struct rnn_mem {
    float *xw, *g, *bias, *h, *cs, *rh;
} rnn_mem;

// The input projections of every step, X W^T + W's bias + R's bias (but for
// GRU's linear_before_reset candidate, whose R bias is multiplied by r).
static void project_inputs(const rnn_cfg *c, const rnn_dims *d, const float *X, const float *W, const float *Bias,
                           rnn_mem *m, const reel_exec_ctx *ctx)
{
    int64_t rows = d->T * d->B, GH = d->GH;
    nn_sgemm_parallel(ctx, false, true, (int)rows, (int)GH, (int)d->I, 1, X, (int)d->I, W, (int)d->I, 0, m->xw,
                      (int)GH);
    if (!Bias)
        return;
    for (int64_t k = 0; k < GH; k++)
        m->bias[k] = Bias[k] + (c->lbr && k >= 2 * d->H ? 0.0f : Bias[GH + k]);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t k = 0; k < GH; k++)
            m->xw[r * GH + k] += m->bias[k];
}

// The time index batch entry b works on at `step`; -1 once its sequence
// has ended. Backwards, a sequence starts at its own last step.
static int64_t step_of(const rnn_dims *d, const int32_t *lens, int64_t b, int64_t step, bool backwards)
{
    int64_t len = lens ? lens[b] : d->T;
    if (step >= len)
        return -1;
    return backwards ? len - 1 - step : step;
}

// The input projection of batch entry b at time t (rows in X's order).
static const float *xw_row(const rnn_cfg *c, const rnn_dims *d, const rnn_mem *m, int64_t b, int64_t t)
{
    return m->xw + (c->layout ? b * d->T + t : t * d->B + b) * d->GH;
}

// One direction's inputs and memory.
typedef struct rnn_pass {
    rnn_dir s;
    rnn_mem m;
    int dir;
    bool backwards;
} rnn_pass;

// Direction dir's projections of every step and its initial states.
static void start_direction(const rnn_cfg *c, const rnn_dims *d, int dir, const reel_ir_node *n,
                            reel_tensor *const *in, rnn_pass *ps, const reel_exec_ctx *ctx)
{
    int64_t H = d->H, GH = d->GH;
    const float *W = (const float *)in[1]->data + dir * GH * d->I, *Bias = opt_data(n, in, 3);
    const float *h0 = opt_data(n, in, 5), *c0 = opt_data(n, in, 6), *P = opt_data(n, in, 7);
    ps->dir = dir;
    ps->backwards = c->reverse || dir == 1;
    ps->s = (rnn_dir){ .c = c, .act = c->act[dir], .R = (const float *)in[2]->data + dir * GH * H, .H = H,
                       .P = P ? P + dir * 3 * H : NULL };
    if (Bias)
        Bias += dir * 2 * GH;
    if (c->lbr && Bias)
        ps->s.rbh = Bias + GH + 2 * H;
    project_inputs(c, d, in[0]->data, W, Bias, &ps->m, ctx);
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t i = 0; i < H; i++) {
            ps->m.h[b * H + i] = h0 ? h0[state_at(c, d, dir, b) + i] : 0.0f;
            ps->m.cs[b * H + i] = c0 ? c0[state_at(c, d, dir, b) + i] : 0.0f;
        }
}

// Runs one direction's steps; h and cs end as the final states.
static void run_steps(const rnn_cfg *c, const rnn_dims *d, const rnn_pass *ps, float *Y, const int32_t *lens,
                      const reel_exec_ctx *ctx)
{
    int64_t H = d->H, GH = d->GH, B = d->B;
    const rnn_dir *s = &ps->s;
    const rnn_mem *m = &ps->m;
    // Without reset first, the GRU candidate's GEMM waits for r: the first
    // takes R's z and r rows only, the second (r (.) h) Rh^T.
    bool split = c->cell == CELL_GRU && !c->lbr;
    for (int64_t step = 0; step < d->T; step++) {
        nn_sgemm_parallel(ctx, false, true, (int)B, (int)(split ? 2 * H : GH), (int)H, 1, m->h, (int)H, s->R, (int)H,
                          0, m->g, (int)GH);
        if (split) {
            for (int64_t b = 0; b < B; b++) {
                float *rh = m->rh + b * H;
                int64_t t = step_of(d, lens, b, step, ps->backwards);
                if (t < 0)
                    memset(rh, 0, sizeof(float) * (size_t)H); // a sequence that has ended
                else
                    gru_gates(s, xw_row(c, d, m, b, t), m->g + b * GH, m->h + b * H, rh);
            }
            nn_sgemm_parallel(ctx, false, true, (int)B, (int)H, (int)H, 1, m->rh, (int)H, s->R + 2 * H * H, (int)H,
                              0, m->g + 2 * H, (int)GH);
        }
        for (int64_t b = 0; b < B; b++) {
            int64_t t = step_of(d, lens, b, step, ps->backwards);
            if (t < 0)
                continue; // an ended sequence keeps its state
            const float *xw = xw_row(c, d, m, b, t);
            float *g = m->g + b * GH, *h = m->h + b * H;
            if (c->cell == CELL_RNN)
                rnn_step(s, xw, g, h);
            else if (c->cell == CELL_LSTM)
                lstm_step(s, xw, g, h, m->cs + b * H);
            else {
                if (!split)
                    gru_gates(s, xw, g, h, NULL);
                gru_update(s, xw, g, h);
            }
            if (Y)
                memcpy(Y + y_at(c, d, t, ps->dir, b), h, sizeof(float) * (size_t)H);
        }
    }
}

// Both directions at once, one on each of two workers.
typedef struct rnn_both {
    const rnn_cfg *c;
    const rnn_dims *d;
    const rnn_pass *ps;
    float *Y;
    const int32_t *lens;
} rnn_both;

static void both_task(void *arg, int task, int worker)
{
    (void)worker;
    const rnn_both *j = arg;
    reel_exec_ctx one = { .threads = 1 };
    run_steps(j->c, j->d, &j->ps[task], j->Y, j->lens, &one);
}

static int rnn_run(const reel_ir_node *n, cell_kind cell, reel_tensor *const *in, reel_tensor *const *out,
                   const reel_exec_ctx *ctx)
{
    rnn_cfg c;
    if (rnn_config(n, cell, &c, NULL))
        return REEL_EINVAL;
    rnn_dims d = dims_of(&c, in);
    if (d.T * d.B > INT_MAX || d.GH > INT_MAX || d.I > INT_MAX) // the GEMMs' dims are ints
        return REEL_EINVAL;
    const int32_t *lens = n->n_inputs > 4 && in[4] ? in[4]->data : NULL;
    for (int64_t b = 0; lens && b < d.B; b++)
        if (lens[b] < 0 || lens[b] > d.T)
            return REEL_EINVAL;
    float *Y = out_data(n, out, 0), *Yh = out_data(n, out, 1), *Yc = out_data(n, out, 2);
    if (Y) // steps past a sequence's length stay 0
        memset(Y, 0, out[0]->nbytes);
    if (scratch_floats(&d) == 0) // no batch or no hidden units: nothing to compute
        return 0;
    if (ctx->scratch_size < sizeof(float) * scratch_floats(&d) * (size_t)c.dirs)
        return REEL_EINVAL;
    rnn_pass ps[2];
    float *p = ctx->scratch;
    for (int dir = 0; dir < c.dirs; dir++) {
        rnn_mem *m = &ps[dir].m;
        m->xw = p;
        m->g = m->xw + d.T * d.B * d.GH;
        m->bias = m->g + d.B * d.GH;
        m->h = m->bias + d.GH;
        m->cs = m->h + d.B * d.H;
        m->rh = m->cs + d.B * d.H;
        p = m->rh + d.B * d.H;
        start_direction(&c, &d, dir, n, in, &ps[dir], ctx);
    }
    // The steps are a chain of small GEMMs: two directions on two workers
    // beat each step split over both, unless the steps are large and there
    // are more workers to split them over.
    int threads = ctx->workers ? ctx->threads : 1;
    if (c.dirs == 2 && threads >= 2 && (threads == 2 || (double)d.B * d.GH * d.H < 1e6)) {
        rnn_both j = { &c, &d, ps, Y, lens };
        nn_parallel(ctx, 2, both_task, &j);
    } else
        for (int dir = 0; dir < c.dirs; dir++)
            run_steps(&c, &d, &ps[dir], Y, lens, ctx);
    for (int dir = 0; dir < c.dirs; dir++)
        for (int64_t b = 0; b < d.B; b++) {
            if (Yh)
                memcpy(Yh + state_at(&c, &d, dir, b), ps[dir].m.h + b * d.H, sizeof(float) * (size_t)d.H);
            if (Yc)
                memcpy(Yc + state_at(&c, &d, dir, b), ps[dir].m.cs + b * d.H, sizeof(float) * (size_t)d.H);
        }
    return 0;
}

static int rnn_run_rnn(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                       const reel_exec_ctx *ctx)
{
    return rnn_run(n, CELL_RNN, in, out, ctx);
}

static int rnn_run_gru(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                       const reel_exec_ctx *ctx)
{
    return rnn_run(n, CELL_GRU, in, out, ctx);
}

static int rnn_run_lstm(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out,
                        const reel_exec_ctx *ctx)
{
    return rnn_run(n, CELL_LSTM, in, out, ctx);
}

static const reel_op op_rnn = { "RNN", rnn_infer_rnn, rnn_scratch_rnn, rnn_run_rnn };
static const reel_op op_gru = { "GRU", rnn_infer_gru, rnn_scratch_gru, rnn_run_gru };
static const reel_op op_lstm = { "LSTM", rnn_infer_lstm, rnn_scratch_lstm, rnn_run_lstm };

const reel_op *const reel_ops_rnn[] = {
    &op_rnn,
    &op_gru,
    &op_lstm,
    NULL,
};

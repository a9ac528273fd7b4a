// The cpu op tests' harness: see op_harness.h.
#include "tests/ops/op_harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cpu/workers.h"

static op_harness_opts opts;
static reel_workers *pool;
static GPtrArray *kept;     // inputs of every call, with keep_inputs
static char message[512];   // the latest infer's
static double run_ms[3];    // the latest run's, by thread count

void op_harness_begin(const op_harness_opts *o)
{
    opts = *o;
    if (opts.two_workers)
        pool = reel_workers_create(2);
    kept = g_ptr_array_new();
}

void op_harness_end(void)
{
    reel_workers_destroy(&pool);
    for (guint i = 0; i < kept->len; i++) {
        reel_tensor *t = kept->pdata[i];
        reel_tensor_free(&t);
    }
    g_ptr_array_free(kept, TRUE);
    kept = NULL;
    opts = (op_harness_opts){ 0 };
}

int op_harness_run_group(const char *name, const struct CMUnitTest *tests, size_t n_tests,
                         const op_harness_opts *o)
{
    op_harness_begin(o);
    int r = _cmocka_run_group_tests(name, tests, n_tests, NULL, NULL);
    op_harness_end();
    return r;
}

static void add_attr(op_call *c, reel_ir_attr a)
{
    if (c->n_attrs >= OP_MAX_ATTRS)
        fail_msg("%s: more than %d attributes", c->op, OP_MAX_ATTRS);
    c->attrs[c->n_attrs++] = a;
}

void op_attr_int(op_call *c, const char *name, int64_t v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INT, .i = v });
}

void op_attr_float(op_call *c, const char *name, float v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOAT, .f = v });
}

void op_attr_str(op_call *c, const char *name, const char *v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_STRING, .s = (char *)v });
}

void op_attr_ints(op_call *c, const char *name, const int64_t *v, int n)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INTS, .ints = (int64_t *)v, .n = n });
}

void op_attr_floats(op_call *c, const char *name, const float *v, int n)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOATS, .floats = (float *)v, .n = n });
}

void op_attr_strs(op_call *c, const char *name, char **v, int n)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_STRINGS, .strings = v, .n = n });
}

const char *op_message(void)
{
    return message;
}

double op_run_ms(int threads)
{
    return run_ms[threads == 2 ? 2 : 1];
}

// Runs the inferred node once on `threads` into new outputs o (NULL where
// omitted); returns run's code.
static int run_once(const reel_op *op, reel_ir_graph *g, const reel_ir_node *n, reel_tensor **in, reel_tensor **o,
                    int threads, void **state)
{
    for (int i = 0; i < n->n_outputs; i++) {
        reel_ir_value *v = n->outputs[i] < 0 ? NULL : reel_ir_value_at(g, n->outputs[i]);
        o[i] = v ? reel_tensor_new(v->dtype, v->rank, v->dims) : NULL;
        if (v)
            assert_non_null(o[i]);
    }
    reel_exec_ctx ctx = { .opset = g->opset, .threads = threads, .workers = threads == 2 ? pool : NULL,
                          .state = state, .const_inputs = state ? ~0u : 0 };
    ctx.scratch_size = op->scratch ? op->scratch(n, in, o) : 0;
    ctx.scratch = g_malloc0(ctx.scratch_size + 1);
    gint64 t0 = g_get_monotonic_time();
    int rc = op->run(n, in, o, &ctx);
    run_ms[threads] = (double)(g_get_monotonic_time() - t0) / 1000.0;
    g_free(ctx.scratch);
    return rc;
}

// Output i on one thread (a) and over two workers (b) agree.
static void expect_same(const op_call *c, int i, const reel_tensor *a, const reel_tensor *b)
{
    if (opts.workers_tol > 0 && a->dtype == REEL_DTYPE_FLOAT32) {
        const float *x = a->data, *y = b->data;
        for (size_t k = 0; k < a->nbytes / 4; k++)
            if (fabsf(x[k] - y[k]) > opts.workers_tol * (1 + fabsf(x[k])))
                fail_msg("%s: output %d element %zu is %g on one thread, %g on two", c->op, i, k, x[k], y[k]);
    } else if (memcmp(a->data, b->data, a->nbytes) != 0) {
        fail_msg("%s: output %d differs on one thread and on two workers", c->op, i);
    }
}

static void free_outputs(reel_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        reel_tensor_free(&t[i]);
}

int op_run(const op_call *c, int n_in, reel_tensor **in, reel_tensor **out)
{
    if (!opts.opset)
        fail_msg("op_run before op_harness_begin");
    const reel_op *op = reel_op_find(c->op);
    if (!op)
        fail_msg("no cpu op %s", c->op);
    int n_out = c->n_out ? c->n_out : 1;
    assert_true(n_in <= OP_MAX_IO && n_out <= OP_MAX_IO);
    reel_ir_graph *g = reel_ir_graph_new();
    g->opset = c->opset ? c->opset : opts.opset;
    int inputs[OP_MAX_IO], outputs[OP_MAX_IO];
    for (int i = 0; i < n_in; i++) {
        inputs[i] = -1;
        if (!in[i])
            continue;
        char name[8] = { 'x', (char)('0' + i) };
        inputs[i] = reel_ir_add_value(g, name);
        reel_ir_value *v = reel_ir_value_at(g, inputs[i]);
        v->dtype = in[i]->dtype;
        v->rank = in[i]->rank;
        memcpy(v->dims, in[i]->shape, sizeof v->dims);
        v->constant = in[i]; // the graph frees it (unless kept)
    }
    for (int i = 0; i < n_out; i++) {
        char name[8] = { 'y', (char)('0' + i) };
        outputs[i] = c->omit && c->omit[i] ? -1 : reel_ir_add_value(g, name);
        out[i] = NULL;
    }
    reel_ir_node n = { .name = (char *)(opts.node ? opts.node : "n"), .op = (char *)c->op, .inputs = inputs,
                       .n_inputs = n_in, .outputs = outputs, .n_outputs = n_out,
                       .attrs = (reel_ir_attr *)c->attrs, .n_attrs = c->n_attrs, .fused = c->fused,
                       .fused_a = c->fused_a, .fused_b = c->fused_b };
    void *state = NULL;
    GError *error = NULL;
    int rc = op->infer(g, &n, &error);
    g_strlcpy(message, error ? error->message : "", sizeof message);
    g_clear_error(&error);
    if (!rc) {
        for (int i = 0; i < n_out; i++)
            for (int d = 0; outputs[i] >= 0 && d < reel_ir_value_at(g, outputs[i])->rank; d++)
                assert_true(reel_ir_value_at(g, outputs[i])->dims[d] >= 0);
        rc = run_once(op, g, &n, in, out, 1, c->keep_state ? &state : NULL);
        if (pool) {
            reel_tensor *two[OP_MAX_IO];
            assert_int_equal(run_once(op, g, &n, in, two, 2, c->keep_state ? &state : NULL), rc);
            for (int i = 0; !rc && i < n_out; i++)
                if (out[i])
                    expect_same(c, i, out[i], two[i]);
            free_outputs(two, n_out);
        }
        if (rc)
            free_outputs(out, n_out);
    }
    g_free(state);
    for (int i = 0; opts.keep_inputs && i < n_in; i++)
        if (in[i]) {
            reel_ir_value_at(g, inputs[i])->constant = NULL;
            if (!g_ptr_array_find(kept, in[i], NULL)) // given to an earlier call too
                g_ptr_array_add(kept, in[i]);
        }
    reel_ir_graph_free(&g);
    return rc;
}

reel_tensor *op_tensor(reel_dtype dt, int rank, const int64_t *shape, const void *data)
{
    reel_tensor *t = reel_tensor_new(dt, rank, shape);
    assert_non_null(t);
    if (data && t->nbytes)
        memcpy(t->data, data, t->nbytes);
    return t;
}

reel_tensor *op_random(int rank, const int64_t *shape, unsigned seed, float lo, float hi)
{
    reel_tensor *t = op_tensor(REEL_DTYPE_FLOAT32, rank, shape, NULL);
    float *d = t->data;
    srand(seed);
    for (size_t i = 0; i < t->nbytes / 4; i++)
        d[i] = lo + (float)rand() / RAND_MAX * (hi - lo);
    return t;
}

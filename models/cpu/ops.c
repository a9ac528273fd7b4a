// The op registry: every family's table, and lookup by name.
#include <stdarg.h>
#include <string.h>

#include "models/op.h"

extern const reel_op *const reel_ops_elementwise[]; // models/cpu/elementwise.c: math, activations, comparisons
extern const reel_op *const reel_ops_shape[];       // models/cpu/shape.c: reshape, transpose, slice, concat, ...
extern const reel_op *const reel_ops_reduce[];      // models/cpu/reduce.c: reductions, softmax
extern const reel_op *const reel_ops_unary[]; // models/cpu/unary.c
extern const reel_op *const reel_ops_logic[]; // models/cpu/logic.c
extern const reel_op *const reel_ops_select[]; // models/cpu/select.c
extern const reel_op *const reel_ops_normalize[]; // models/cpu/normalize.c
extern const reel_op *const reel_ops_roi[]; // models/cpu/roi.c
extern const reel_op *const reel_ops_index[]; // models/cpu/index.c
extern const reel_op *const reel_ops_layout[]; // models/cpu/layout.c
extern const reel_op *const reel_ops_rnn[]; // models/cpu/rnn.c
extern const reel_op *const reel_ops_signal[]; // models/cpu/signal.c
extern const reel_op *const reel_ops_text[]; // models/cpu/text.c
extern const reel_op *const reel_ops_linalg[]; // models/cpu/linalg.c
extern const reel_op *const reel_ops_loss[]; // models/cpu/loss.c
extern const reel_op *const reel_ops_quant[]; // models/cpu/quant.c
extern const reel_op *const reel_ops_qlinear[]; // models/cpu/qlinear.c: com.microsoft's QLinear ops
extern const reel_op *const reel_ops_nn[];          // models/cpu/conv.c, gemm.c, pool.c, norm.c, resize.c

const reel_op *const *const reel_op_tables[] = {
    reel_ops_elementwise,
    reel_ops_shape,
    reel_ops_reduce,
    reel_ops_nn,
    reel_ops_unary,
    reel_ops_logic,
    reel_ops_select,
    reel_ops_normalize,
    reel_ops_roi,
    reel_ops_index,
    reel_ops_layout,
    reel_ops_rnn,
    reel_ops_signal,
    reel_ops_text,
    reel_ops_linalg,
    reel_ops_loss,
    reel_ops_quant,
    reel_ops_qlinear,
    NULL,
};

const reel_op *reel_op_find(const char *name)
{
    for (const reel_op *const *const *t = reel_op_tables; *t; t++)
        for (const reel_op *const *op = *t; *op; op++)
            if (strcmp((*op)->name, name) == 0)
                return *op;
    return NULL;
}

int reel_op_fail(GError **error, const reel_ir_node *n, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, REEL_ERROR, code, "node '%s' (%s): %s", n->name, n->op, msg);
    g_free(msg);
    return code;
}

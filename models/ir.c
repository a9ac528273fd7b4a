// The model IR: graph, values, nodes and attributes.
#include <stdlib.h>
#include <string.h>

#include "models/ir.h"

static void value_free(gpointer p)
{
    reel_ir_value *v = p;
    g_free(v->name);
    for (int i = 0; i < REEL_TENSOR_MAX_RANK; i++)
        g_free(v->dim_names[i]);
    reel_tensor_free(&v->constant);
    g_free(v);
}

static void node_free(gpointer p)
{
    reel_ir_node *n = p;
    g_free(n->name);
    g_free(n->op);
    g_free(n->inputs);
    g_free(n->outputs);
    for (int i = 0; i < n->n_attrs; i++) {
        reel_ir_attr *a = &n->attrs[i];
        g_free(a->name);
        g_free(a->s);
        g_free(a->ints);
        g_free(a->floats);
        g_strfreev(a->strings);
        reel_tensor_free(&a->t);
    }
    g_free(n->attrs);
    g_free(n);
}

reel_ir_graph *reel_ir_graph_new(void)
{
    reel_ir_graph *g = g_new0(reel_ir_graph, 1);
    g->values = g_ptr_array_new_with_free_func(value_free);
    g->nodes = g_ptr_array_new_with_free_func(node_free);
    g->inputs = g_array_new(FALSE, FALSE, sizeof(int));
    g->outputs = g_array_new(FALSE, FALSE, sizeof(int));
    return g;
}

void reel_ir_graph_free(reel_ir_graph **g)
{
    if (!g || !*g)
        return;
    g_ptr_array_free((*g)->values, TRUE);
    g_ptr_array_free((*g)->nodes, TRUE);
    g_array_free((*g)->inputs, TRUE);
    g_array_free((*g)->outputs, TRUE);
    g_free((*g)->producer);
    g_free(*g);
    *g = NULL;
}

int reel_ir_add_value(reel_ir_graph *g, const char *name)
{
    reel_ir_value *v = g_new0(reel_ir_value, 1);
    v->name = g_strdup(name);
    v->dtype = REEL_DTYPE_NONE;
    v->rank = -1;
    for (int i = 0; i < REEL_TENSOR_MAX_RANK; i++)
        v->dims[i] = REEL_DIM_UNKNOWN;
    v->producer = -1;
    g_ptr_array_add(g->values, v);
    return (int)g->values->len - 1;
}

int reel_ir_find_value(const reel_ir_graph *g, const char *name)
{
    for (guint i = 0; i < g->values->len; i++)
        if (strcmp(((reel_ir_value *)g->values->pdata[i])->name, name) == 0)
            return (int)i;
    return -1;
}

const reel_ir_attr *reel_ir_attr_find(const reel_ir_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

int64_t reel_ir_attr_int(const reel_ir_node *n, const char *name, int64_t def)
{
    const reel_ir_attr *a = reel_ir_attr_find(n, name);
    if (!a)
        return def;
    if (a->type == REEL_ATTR_INT)
        return a->i;
    // A float outside int64's range (or NaN) has no int value: the cast would be undefined.
    if (a->type == REEL_ATTR_FLOAT && a->f > -0x1p63f && a->f < 0x1p63f)
        return (int64_t)a->f;
    return def;
}

float reel_ir_attr_float(const reel_ir_node *n, const char *name, float def)
{
    const reel_ir_attr *a = reel_ir_attr_find(n, name);
    if (!a)
        return def;
    if (a->type == REEL_ATTR_FLOAT)
        return a->f;
    if (a->type == REEL_ATTR_INT)
        return (float)a->i;
    return def;
}

const char *reel_ir_attr_string(const reel_ir_node *n, const char *name, const char *def)
{
    const reel_ir_attr *a = reel_ir_attr_find(n, name);
    return a && a->type == REEL_ATTR_STRING ? a->s : def;
}

const int64_t *reel_ir_attr_ints(const reel_ir_node *n, const char *name, int *count)
{
    const reel_ir_attr *a = reel_ir_attr_find(n, name);
    if (!a || a->type != REEL_ATTR_INTS) {
        *count = 0;
        return NULL;
    }
    *count = a->n;
    return a->ints;
}

void reel_ir_value_set_constant(reel_ir_value *v, reel_tensor *t)
{
    reel_tensor_free(&v->constant);
    v->constant = t;
    v->dtype = t->dtype;
    v->rank = t->rank;
    for (int i = 0; i < REEL_TENSOR_MAX_RANK; i++)
        v->dims[i] = i < t->rank ? t->shape[i] : REEL_DIM_UNKNOWN;
    v->producer = -1;
}

int reel_tensor_ints(const reel_tensor *t, int64_t *out, int max)
{
    int64_t c = t ? reel_tensor_count(t->rank, t->shape) : -1;
    if (c < 0 || c > max || t->rank > 1 || (c > 0 && !t->data))
        return -1;
    for (int64_t i = 0; i < c; i++) {
        if (t->dtype == REEL_DTYPE_INT64)
            out[i] = ((const int64_t *)t->data)[i];
        else if (t->dtype == REEL_DTYPE_INT32)
            out[i] = ((const int32_t *)t->data)[i];
        else
            return -1;
    }
    return (int)c;
}

char *const *reel_ir_attr_strings(const reel_ir_node *n, const char *name, int *count)
{
    const reel_ir_attr *a = reel_ir_attr_find(n, name);
    if (!a || a->type != REEL_ATTR_STRINGS) {
        *count = 0;
        return NULL;
    }
    *count = a->n;
    return a->strings;
}

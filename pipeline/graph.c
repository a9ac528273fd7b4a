// Graph checks: pad counts and a topological order (which finds cycles).
#include "pipeline/internal.h"
#include "reel/error.h"

static char *pads_problem(const reel_element *e)
{
    const reel_element_class *k = e->klass;
    int n_in = (int)e->inputs->len, n_out = (int)e->outputs->len;
    if (n_in < k->min_inputs)
        return g_strdup_printf("element '%s' (%s) has %d linked input%s, needs at least %d", e->name,
                               k->name, n_in, n_in == 1 ? "" : "s", k->min_inputs);
    if (n_out < k->min_outputs)
        return g_strdup_printf("element '%s' (%s) has %d linked output%s, needs at least %d: link it "
                               "to something (for example fakesink)",
                               e->name, k->name, n_out, n_out == 1 ? "" : "s", k->min_outputs);
    return NULL;
}

int reel_graph_validate(reel_pipeline *p, GError **error)
{
    if (p->elements->len <= 1) {
        g_set_error(error, REEL_ERROR, REEL_EINVAL, "the pipeline has no elements");
        return REEL_EINVAL;
    }
    for (guint i = 0; i + 1 < p->elements->len; i++) {
        char *why = pads_problem(p->elements->pdata[i]);
        if (why) {
            g_set_error_literal(error, REEL_ERROR, REEL_EINVAL, why);
            g_free(why);
            return REEL_EINVAL;
        }
    }
    return 0;
}

// Names a cycle among the elements Kahn's algorithm left unsorted. Each of
// them has an unsorted input, so walking upstream through those always goes
// on, and must come back to an element it has seen.
static char *describe_cycle(reel_element *start, GHashTable *unsorted)
{
    GPtrArray *path = g_ptr_array_new();
    reel_element *e = start;
    while (!g_ptr_array_find(path, e, NULL)) {
        g_ptr_array_add(path, e);
        reel_element *prev = NULL;
        for (guint i = 0; i < e->inputs->len && !prev; i++) {
            reel_element *s = ((reel_link *)e->inputs->pdata[i])->src;
            if (g_hash_table_contains(unsorted, s))
                prev = s;
        }
        e = prev;
    }
    guint first;
    g_ptr_array_find(path, e, &first);
    GString *s = g_string_new("the pipeline has a cycle: ");
    for (guint i = path->len; i-- > first;)
        g_string_append_printf(s, "'%s' -> ", ((reel_element *)path->pdata[i])->name);
    g_string_append_printf(s, "'%s'", ((reel_element *)path->pdata[path->len - 1])->name);
    g_ptr_array_free(path, TRUE);
    return g_string_free(s, FALSE);
}

int reel_graph_sort(reel_pipeline *p, reel_element ***order_out, GError **error)
{
    guint n = p->elements->len - 1;
    reel_element **order = g_new0(reel_element *, n + 1);
    GHashTable *pending = g_hash_table_new(NULL, NULL); // element -> unsorted inputs + 1
    guint sorted = 0;

    for (guint i = 0; i < n; i++) {
        reel_element *e = p->elements->pdata[i];
        if (e->inputs->len == 0)
            order[sorted++] = e;
        else
            g_hash_table_insert(pending, e, GUINT_TO_POINTER(e->inputs->len + 1));
    }
    for (guint i = 0; i < sorted; i++) {
        reel_element *e = order[i];
        for (guint k = 0; k < e->outputs->len; k++) {
            reel_element *d = ((reel_link *)e->outputs->pdata[k])->dst;
            guint left = GPOINTER_TO_UINT(g_hash_table_lookup(pending, d)) - 1;
            if (left == 1) {
                g_hash_table_remove(pending, d);
                order[sorted++] = d;
            } else {
                g_hash_table_insert(pending, d, GUINT_TO_POINTER(left));
            }
        }
    }
    if (sorted < n) {
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, pending);
        g_hash_table_iter_next(&it, &key, NULL);
        char *why = describe_cycle(key, pending);
        g_set_error_literal(error, REEL_ERROR, REEL_EINVAL, why);
        g_free(why);
        g_hash_table_destroy(pending);
        g_free(order);
        return REEL_EINVAL;
    }
    g_hash_table_destroy(pending);
    *order_out = order;
    return 0;
}

// The Vulkan op tests' shared harness (vk_op_harness.h).
#include "tests/ops/vk_op_harness.h"
#include "tests/support/skip.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

reel_device *vkt_dev;
vk_ctx vkt_ctx;

// ---- fixture ------------------------------------------------------------------

// vkt_run_group's: the opset of nodes that give none, float16 storage.
static int group_opset = 13;
static bool group_f16;

// Whether vulkan:0 opens (with 16-bit float support where need_fp16); when
// not, says why.
static bool have_device(bool need_fp16)
{
    GError *error = NULL;
    reel_device *probe = reel_device_open("vulkan:0", &error);
    if (!probe) {
        reel_skip_note("no Vulkan device (%s)", error->message);
        g_error_free(error);
        return false;
    }
    bool fp16 = reel_device_info_of(probe)->fp16;
    reel_device_unref(&probe);
    if (need_fp16 && !fp16)
        reel_skip_note("vulkan:0 has no 16-bit float support");
    return fp16 || !need_fp16;
}

static int setup(void **state)
{
    (void)state;
    GError *error = NULL;
    vkt_dev = reel_device_open("vulkan:0", &error);
    if (!vkt_dev) {
        fprintf(stderr, "no Vulkan device: %s\n", error->message);
        g_error_free(error);
        return -1;
    }
    if (vk_ctx_init(&vkt_ctx, vkt_dev, &error) < 0) {
        fprintf(stderr, "%s\n", error->message);
        g_error_free(error);
        return -1;
    }
    vkt_ctx.f16 = group_f16;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (vkt_dev)
        reel_device_wait(vkt_dev, 0);
    vk_ctx_clear(&vkt_ctx);
    reel_device_unref(&vkt_dev);
    return 0;
}

int vkt_run_group(const struct CMUnitTest *tests, size_t n_tests, int opset, bool f16)
{
    if (!have_device(f16))
        return 77;
    group_opset = opset;
    group_f16 = f16;
    // Sessions gather their dispatches and record them (what the session
    // tests count), whatever the environment says.
    g_unsetenv("REEL_VULKAN_BATCH");
    int failed = _cmocka_run_group_tests("vulkan:0", tests, n_tests, setup, teardown);
    // Messages can come from any call, teardown included; counted here, as
    // cmocka's result leaves out a failing group teardown.
    int64_t messages = reel_device_validation_messages();
    if (messages)
        fprintf(stderr, "%" G_GINT64_FORMAT " Vulkan validation messages\n", messages);
    return reel_test_verdict(failed + (messages != 0));
}

reel_mem *vkt_device_mem(size_t size)
{
    GError *error = NULL;
    reel_mem *m = reel_mem_new(vkt_dev, reel_mem_params(.size = MAX(size, 16), .domain = REEL_MEM_DEVICE), &error);
    if (!m)
        fail_msg("%s", error->message);
    return m;
}

reel_mem *vkt_upload(const reel_tensor *t)
{
    size_t bytes = vk_stored_bytes(vkt_ctx.f16, t);
    reel_mem *m = vkt_device_mem(bytes);
    if (!bytes)
        return m;
    if (bytes == t->nbytes) {
        assert_int_equal(reel_mem_upload(m, 0, t->data, bytes, NULL), 0);
        return m;
    }
    uint16_t *h = g_new(uint16_t, t->nbytes / 4);
    vk_f32_to_f16(t->data, h, t->nbytes / 4);
    assert_int_equal(reel_mem_upload(m, 0, h, bytes, NULL), 0);
    g_free(h);
    return m;
}

// Device memory into t, float32 from float16 where vkt_ctx stores it so.
static void download(reel_mem *m, reel_tensor *t)
{
    size_t bytes = vk_stored_bytes(vkt_ctx.f16, t);
    if (!bytes)
        return;
    if (bytes == t->nbytes) {
        assert_int_equal(reel_mem_download(m, 0, t->data, bytes, NULL), 0);
        return;
    }
    uint16_t *h = g_new(uint16_t, t->nbytes / 4);
    assert_int_equal(reel_mem_download(m, 0, h, bytes, NULL), 0);
    vk_f16_to_f32(h, t->data, t->nbytes / 4);
    g_free(h);
}

// ---- tensors ------------------------------------------------------------------

reel_tensor *vkt_frand(int rank, const int64_t *shape, unsigned seed, float lo, float hi)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, shape);
    assert_non_null(t);
    float *d = t->data;
    for (size_t i = 0; i < t->nbytes / 4; i++)
        d[i] = lo + (hi - lo) * (float)rand_r(&seed) / (float)RAND_MAX;
    return t;
}

void vkt_set_int(reel_tensor *t, int64_t i, int64_t v)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: ((float *)t->data)[i] = (float)v; break;
    case REEL_DTYPE_FLOAT64: ((double *)t->data)[i] = (double)v; break;
    case REEL_DTYPE_INT64: ((int64_t *)t->data)[i] = v; break;
    case REEL_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)v; break;
    case REEL_DTYPE_INT16: ((int16_t *)t->data)[i] = (int16_t)v; break;
    case REEL_DTYPE_UINT16: case REEL_DTYPE_FLOAT16: ((uint16_t *)t->data)[i] = (uint16_t)v; break;
    case REEL_DTYPE_INT8: ((int8_t *)t->data)[i] = (int8_t)v; break;
    case REEL_DTYPE_BOOL: ((uint8_t *)t->data)[i] = v != 0; break;
    default: ((uint8_t *)t->data)[i] = (uint8_t)v; break;
    }
}

reel_tensor *vkt_ints(reel_dtype dt, int n, const int64_t *v)
{
    int64_t d[1] = { n };
    reel_tensor *t = reel_tensor_new(dt, 1, d);
    for (int i = 0; i < n; i++)
        vkt_set_int(t, i, v[i]);
    return t;
}

reel_tensor *vkt_scalar(float v)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, 0, NULL);
    *(float *)t->data = v;
    return t;
}

// ---- attributes ---------------------------------------------------------------

static void add_attr(vkt_call *c, reel_ir_attr a)
{
    assert_true(c->n_attrs < VKT_MAX_ATTRS);
    c->attrs[c->n_attrs++] = a;
}

void vkt_attr_int(vkt_call *c, const char *name, int64_t v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INT, .i = v });
}

void vkt_attr_ints(vkt_call *c, const char *name, int n, const int64_t *v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_INTS, .ints = (int64_t *)v, .n = n });
}

void vkt_attr_float(vkt_call *c, const char *name, float v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOAT, .f = v });
}

void vkt_attr_floats(vkt_call *c, const char *name, int n, const float *v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_FLOATS, .floats = (float *)v, .n = n });
}

void vkt_attr_string(vkt_call *c, const char *name, const char *v)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_STRING, .s = (char *)v });
}

void vkt_attr_tensor(vkt_call *c, const char *name, reel_tensor *t)
{
    add_attr(c, (reel_ir_attr){ .name = (char *)name, .type = REEL_ATTR_TENSOR, .t = t });
}

// ---- one node -----------------------------------------------------------------

reel_ir_node vkt_node_of(const vkt_call *c, int *inputs, int n_in, int *outputs, int n_out)
{
    return (reel_ir_node){ .name = "n", .op = (char *)c->op, .inputs = inputs, .n_inputs = n_in, .outputs = outputs,
                           .n_outputs = n_out, .attrs = (reel_ir_attr *)c->attrs, .n_attrs = c->n_attrs,
                           .fused = c->fused, .fused_a = c->fused_a, .fused_b = c->fused_b };
}

// float32 values made the nearest float16s, as an fp16 context holds them.
static void round_to_f16(reel_tensor *t)
{
    if (!t || t->dtype != REEL_DTYPE_FLOAT32)
        return;
    size_t n = t->nbytes / 4;
    uint16_t *h = g_new(uint16_t, n + 1);
    vk_f32_to_f16(t->data, h, n);
    vk_f16_to_f32(h, t->data, n);
    g_free(h);
}

// Graph value `prefix``i`, shaped and typed like t where t is given.
static int declare_value(reel_ir_graph *g, char prefix, int i, const reel_tensor *t)
{
    char name[8] = { prefix, (char)('0' + i) };
    int id = reel_ir_add_value(g, name);
    if (t) {
        reel_ir_value *v = reel_ir_value_at(g, id);
        v->dtype = t->dtype;
        v->rank = t->rank;
        memcpy(v->dims, t->shape, sizeof v->dims);
    }
    return id;
}

static bool is_const(const vkt_call *c, int i)
{
    return (c->consts & (1u << i)) != 0;
}

// The inputs as supports() sees them: data only for constants not hidden.
static void make_input_views(vkt_case *k)
{
    for (int i = 0; i < k->n.n_inputs; i++) {
        k->iv[i] = k->in[i] ? &k->iview[i] : NULL;
        if (!k->in[i])
            continue;
        k->iview[i] = *k->in[i];
        if (!is_const(k->c, i) || (k->c->hide & (1u << i)))
            k->iview[i].data = NULL;
    }
}

void vkt_case_init(vkt_case *k, const vkt_call *c, int n_in, reel_tensor **in, const char *what)
{
    *k = (vkt_case){ .c = c, .what = what, .in = in };
    // infer_as stands in only while the cpu lacks the op: once it has one,
    // that op infers and computes the expected outputs.
    k->op = reel_op_find(c->op);
    if (!k->op && c->infer_as)
        k->op = reel_op_find(c->infer_as);
    k->vop = vk_op_find(c->op);
    assert_non_null(k->op);
    if (!k->vop || (vkt_ctx.f16 && !k->vop->supports_f16))
        fail_msg("%s: no %sVulkan op %s", what, vkt_ctx.f16 ? "float16 " : "", c->op);
    int n_out = c->n_out ? c->n_out : 1;
    k->g = reel_ir_graph_new();
    k->g->opset = c->opset ? c->opset : group_opset;
    for (int i = 0; i < n_in; i++) {
        if (vkt_ctx.f16)
            round_to_f16(in[i]);
        k->inputs[i] = in[i] ? declare_value(k->g, 'x', i, in[i]) : -1;
        if (in[i] && is_const(c, i))
            reel_ir_value_at(k->g, k->inputs[i])->constant = in[i]; // borrowed: unset before the graph is freed
    }
    for (int i = 0; i < n_out; i++)
        k->outputs[i] = declare_value(k->g, 'y', i, NULL);
    k->n = vkt_node_of(c, k->inputs, n_in, k->outputs, n_out);
    GError *error = NULL;
    if (k->op->infer(k->g, &k->n, &error))
        fail_msg("%s: infer: %s", what, error->message);
    for (int i = 0; i < n_out; i++) {
        reel_ir_value *v = reel_ir_value_at(k->g, k->outputs[i]);
        k->want[i] = reel_tensor_new(v->dtype, v->rank, v->dims);
        k->got[i] = reel_tensor_new(v->dtype, v->rank, v->dims);
        if (!k->want[i] || !k->got[i])
            fail_msg("%s: infer left output %d without a concrete shape", what, i);
        k->oview[i] = *k->got[i];
        k->oview[i].data = NULL;
        k->ov[i] = &k->oview[i];
    }
    make_input_views(k);
}

bool vkt_case_supported(const vkt_case *k)
{
    if (vkt_ctx.f16)
        return k->vop->supports_f16(&k->n, k->iv, k->ov);
    return k->vop->supports(&k->n, k->iv, k->ov);
}

void vkt_case_run_cpu(vkt_case *k)
{
    if (!reel_op_find(k->c->op)) {
        if (!k->c->reference)
            fail_msg("%s: no cpu op %s and no reference", k->what, k->c->op);
        k->c->reference(k->c->op, k->in, k->want[0]);
        return;
    }
    size_t scratch_size = k->op->scratch ? k->op->scratch(&k->n, k->in, k->want) : 0;
    void *scratch = scratch_size ? g_malloc0(scratch_size) : NULL;
    reel_exec_ctx ectx = { .opset = k->g->opset, .threads = 1, .scratch = scratch, .scratch_size = scratch_size };
    int rc = k->op->run(&k->n, k->in, k->want, &ectx);
    g_free(scratch);
    if (rc)
        fail_msg("%s: the cpu op failed: %s", k->what, reel_strerror(rc));
}

// Device memory for output t, all bits set for float32 (NaN, in float16
// too) and 0xa5 for other dtypes (where all ones is a common value).
static reel_mem *poisoned_output(reel_tensor *t)
{
    memset(t->data, t->dtype == REEL_DTYPE_FLOAT32 ? 0xff : 0xa5, t->nbytes);
    return vkt_upload(t);
}

void vkt_case_run_device(vkt_case *k, const vk_conv_tiles *tiles)
{
    vk_tensor vi[VKT_MAX_IN], vo[VKT_MAX_OUT], *pvi[VKT_MAX_IN], *pvo[VKT_MAX_OUT];
    for (int i = 0; i < k->n.n_inputs; i++) {
        pvi[i] = k->in[i] ? &vi[i] : NULL;
        if (k->in[i])
            vi[i] = (vk_tensor){ vkt_upload(k->in[i]), &k->iview[i] };
    }
    for (int i = 0; i < k->n.n_outputs; i++) {
        vo[i] = (vk_tensor){ poisoned_output(k->got[i]), &k->oview[i] };
        pvo[i] = &vo[i];
    }
    int rc = tiles ? vk_conv_run_tiled(&vkt_ctx, &k->n, pvi, pvo, tiles) : k->vop->run(&vkt_ctx, &k->n, pvi, pvo);
    if (rc)
        fail_msg("%s: run: %s", k->what, reel_strerror(rc));
    for (int i = 0; i < k->n.n_outputs; i++) {
        download(vo[i].mem, k->got[i]);
        reel_mem_unref(&vo[i].mem);
    }
    for (int i = 0; i < k->n.n_inputs; i++)
        if (k->in[i])
            reel_mem_unref(&vi[i].mem);
}

static bool float_close(const vkt_call *c, float a, float b)
{
    if ((isnan(a) && isnan(b)) || a == b)
        return true;
    if (vkt_ctx.f16) // the output's rounding, 2^-11, plus sums in another order
        return fabsf(a - b) <= 2e-3f * fabsf(b) + 1e-4f;
    float tol = c->tol ? c->tol : 1e-5f;
    return fabsf(a - b) <= tol * MAX(1.0f, fabsf(b));
}

void vkt_compare(const vkt_call *c, const reel_tensor *got, reel_tensor *want, int k, const char *what)
{
    int64_t n = reel_tensor_count(want->rank, want->shape);
    if (want->dtype == REEL_DTYPE_FLOAT32 && !c->exact) {
        const float *a = got->data, *b = want->data;
        for (int64_t i = 0; i < n; i++)
            if (!float_close(c, a[i], b[i]))
                fail_msg("%s: output %d element %" G_GINT64_FORMAT " is %.9g on vulkan%s, %.9g on the cpu", what, k, i,
                         a[i], vkt_ctx.f16 ? " in fp16" : "", b[i]);
        return;
    }
    if (vkt_ctx.f16)
        round_to_f16(want);
    size_t es = reel_dtype_size(want->dtype);
    for (int64_t i = 0; i < n; i++) {
        const char *a = (const char *)got->data + i * es, *b = (const char *)want->data + i * es;
        if (memcmp(a, b, es) != 0) {
            uint64_t x = 0, y = 0;
            memcpy(&x, a, es);
            memcpy(&y, b, es);
            fail_msg("%s: output %d element %" G_GINT64_FORMAT " is 0x%" G_GINT64_MODIFIER "x on vulkan, 0x%"
                     G_GINT64_MODIFIER "x on the cpu%s", what, k, i, x, y,
                     vkt_ctx.f16 ? " (rounded to float16)" : "");
        }
    }
}

void vkt_case_compare(vkt_case *k)
{
    for (int i = 0; i < k->n.n_outputs; i++)
        vkt_compare(k->c, k->got[i], k->want[i], i, k->what);
}

void vkt_case_clear(vkt_case *k)
{
    for (int i = 0; i < k->n.n_inputs; i++) {
        if (k->in[i] && is_const(k->c, i))
            reel_ir_value_at(k->g, k->inputs[i])->constant = NULL;
        reel_tensor_free(&k->in[i]);
    }
    for (int i = 0; i < k->n.n_outputs; i++) {
        reel_tensor_free(&k->want[i]);
        reel_tensor_free(&k->got[i]);
    }
    reel_ir_graph_free(&k->g);
}

bool vkt_run_case(const vkt_call *c, int n_in, reel_tensor **in, vkt_expect expect, const char *what)
{
    vkt_case k;
    vkt_case_init(&k, c, n_in, in, what);
    bool supported = vkt_case_supported(&k);
    if (expect != VKT_EITHER && supported != (expect == VKT_SUPPORTED))
        fail_msg("%s: supports%s() says %s", what, vkt_ctx.f16 ? "_f16" : "", supported ? "yes" : "no");
    if (supported) {
        vkt_case_run_cpu(&k);
        vkt_case_run_device(&k, NULL);
        vkt_case_compare(&k);
    }
    vkt_case_clear(&k);
    return supported;
}

void vkt_check(const vkt_call *c, int n_in, reel_tensor **in, const char *what)
{
    vkt_run_case(c, n_in, in, VKT_SUPPORTED, what);
}

void vkt_refuse(const vkt_call *c, int n_in, reel_tensor **in, const char *what)
{
    vkt_run_case(c, n_in, in, VKT_REFUSED, what);
}

// ---- sessions -----------------------------------------------------------------

static char *existing_or_skip(char *path, const char *name, const char *maker)
{
    if (!path || !g_file_test(path, G_FILE_TEST_EXISTS)) {
        g_free(path);
        reel_skip("no %s (%s)", name, maker);
    }
    return path;
}

char *vkt_test_model(const char *name)
{
    const char *dir = getenv("REEL_TEST_MODELS");
    return existing_or_skip(dir ? g_build_filename(dir, name, NULL) : NULL, name, "make_models.py writes it");
}

char *vkt_cached_model(const char *dir, const char *file)
{
    char *path = g_build_filename(REEL_TEST_MODEL_CACHE, dir, file, NULL);
    return existing_or_skip(path, path, "run scripts/fetch-models --ort");
}

reel_model *vkt_load(const char *path)
{
    GError *error = NULL;
    reel_model *m = reel_model_load(path, &error);
    if (!m)
        fail_msg("%s: %s", path, error->message);
    return m;
}

reel_session *vkt_session_new(reel_model *m, const reel_session_params *p)
{
    GError *error = NULL;
    reel_session *s = reel_session_new(m, p, &error);
    if (!s)
        fail_msg("%s", error->message);
    return s;
}

reel_tensor *vkt_host_tensor(int rank, const int64_t *shape, unsigned seed)
{
    reel_tensor *t = reel_tensor_new(REEL_DTYPE_FLOAT32, rank, shape);
    assert_non_null(t);
    float *f = t->data;
    for (size_t i = 0; i < t->nbytes / 4; i++)
        f[i] = (float)rand_r(&seed) / ((float)RAND_MAX + 1) * 2 - 1;
    return t;
}

reel_tensor *vkt_device_tensor(reel_mem *m, const reel_tensor *host)
{
    assert_int_equal(reel_mem_upload(m, 0, host->data, host->nbytes, NULL), 0);
    reel_tensor *t = reel_tensor_new_device(host->dtype, host->rank, host->shape, m);
    assert_non_null(t);
    return t;
}

void vkt_session_run(reel_session *s, reel_tensor **in, reel_tensor **out)
{
    GError *error = NULL;
    if (reel_session_run(s, in, out, &error) != 0)
        fail_msg("run: %s", error->message);
}

void vkt_free_all(reel_tensor **t, int n)
{
    for (int i = 0; i < n; i++)
        reel_tensor_free(&t[i]);
}

double vkt_assert_close(reel_tensor *const *got, reel_tensor *const *want, int n, double tol)
{
    double worst_all = 0;
    for (int k = 0; k < n; k++) {
        assert_int_equal(got[k]->nbytes, want[k]->nbytes);
        assert_int_equal(got[k]->dtype, REEL_DTYPE_FLOAT32);
        const float *g = (const float *)got[k]->data, *w = (const float *)want[k]->data;
        size_t count = want[k]->nbytes / 4;
        double top = 1e-6, worst = 0;
        for (size_t i = 0; i < count; i++)
            top = fmax(top, fabs(w[i]));
        for (size_t i = 0; i < count; i++)
            worst = fmax(worst, fabs((double)g[i] - w[i]));
        if (!(worst <= tol * top))
            fail_msg("output %d: max error %g of the largest magnitude %g", k, worst, top);
        worst_all = fmax(worst_all, worst / top);
    }
    return worst_all;
}

void vkt_compare_runs(reel_session *cpu, reel_tensor *in_cpu, reel_session *gpu, reel_tensor *in_gpu, double tol)
{
    reel_tensor *want[1], *got[1];
    vkt_session_run(cpu, &in_cpu, want);
    vkt_session_run(gpu, &in_gpu, got);
    vkt_assert_close(got, want, 1, tol);
    vkt_free_all(want, 1);
    vkt_free_all(got, 1);
}

reel_session_placement vkt_placement(const reel_session *s)
{
    reel_session_placement p;
    reel_session_placement_of(s, &p);
    return p;
}

vkt_pair vkt_pair_open(const char *name, reel_precision precision)
{
    vkt_pair p = { .path = vkt_test_model(name) };
    p.m = vkt_load(p.path);
    p.cpu = vkt_session_new(p.m, reel_session_params(.threads = 1));
    p.gpu = vkt_session_new(p.m, reel_session_params(.threads = 1, .device = vkt_dev, .precision = precision));
    return p;
}

void vkt_pair_close(vkt_pair *p)
{
    reel_session_destroy(&p->gpu);
    reel_session_destroy(&p->cpu);
    reel_model_unref(&p->m);
    g_free(p->path);
}

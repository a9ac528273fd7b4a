// The Vulkan ops of models/vulkan/ops_misc.c, ops_reduce.c and ops_convt.c
// (Equal, Greater, Where, Cast, Gather, Shape, Constant, ConstantOfShape,
// ReduceSum/Mean/Max, ConvTranspose, BatchNormalization) against the cpu ops
// on seeded random and edge-case inputs: each node inferred and run by
// models/cpu/, checked with its vk_op's supports() (inputs that are not
// constants without host data, as the executor passes them) and run on
// vulkan:0; float32 results compared with a tolerance, every other type
// bit for bit. Also what supports() must refuse. Exit 77 without a Vulkan
// device; under REEL_VULKAN_VALIDATION=1 any validation message fails the test.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ops/vk_op_harness.h"

// ---- tensors ------------------------------------------------------------------

typedef struct shape {
    int rank;
    int64_t d[8];
} shape;

// Random values in [lo, hi] (integers for integer types; bool: 0 or 1).
static reel_tensor *rnd(reel_dtype dt, shape s, unsigned seed, int64_t lo, int64_t hi)
{
    reel_tensor *t = reel_tensor_new(dt, s.rank, s.d);
    assert_non_null(t);
    int64_t n = reel_tensor_count(s.rank, s.d);
    for (int64_t i = 0; i < n; i++) {
        if (dt == REEL_DTYPE_FLOAT32)
            ((float *)t->data)[i] = (float)lo + (float)(hi - lo) * (float)rand_r(&seed) / (float)RAND_MAX;
        else
            vkt_set_int(t, i, lo + (int64_t)(rand_r(&seed) % (hi - lo + 1)));
    }
    return t;
}

static reel_tensor *frand(shape s, unsigned seed)
{
    return rnd(REEL_DTYPE_FLOAT32, s, seed, -2, 2);
}

// ---- Equal, Greater, Where ------------------------------------------------------

static const struct {
    shape a, b;
} pairs[] = {
    { { 2, { 3, 5 } }, { 2, { 3, 5 } } },
    { { 4, { 2, 3, 4, 5 } }, { 1, { 5 } } },
    { { 1, { 7 } }, { 3, { 2, 3, 7 } } },
    { { 4, { 2, 3, 4, 5 } }, { 4, { 1, 3, 1, 1 } } },
    { { 3, { 3, 1, 5 } }, { 2, { 4, 1 } } },
    { { 0, { 0 } }, { 2, { 2, 3 } } },
    { { 0, { 0 } }, { 0, { 0 } } },
    { { 6, { 2, 1, 3, 1, 2, 1 } }, { 6, { 1, 4, 1, 5, 1, 3 } } },
    { { 2, { 1, 33 } }, { 2, { 9, 1 } } },
    { { 3, { 2, 0, 3 } }, { 1, { 3 } } },
};

static const reel_dtype compare_types[] = {
    REEL_DTYPE_FLOAT32, REEL_DTYPE_INT32, REEL_DTYPE_INT64, REEL_DTYPE_UINT8,
    REEL_DTYPE_INT8,    REEL_DTYPE_BOOL,  REEL_DTYPE_FLOAT64,
};

// Values that exercise an int64's high word: small ones, and ones that differ
// only above bit 32 or only below it.
static void wide_ints(reel_tensor *t, unsigned seed)
{
    static const int64_t base[] = { 0, 1, -1, INT64_MIN, INT64_MAX, (int64_t)1 << 32, -((int64_t)1 << 32),
                                    ((int64_t)1 << 32) + 1, ((int64_t)3 << 40) - 7, -((int64_t)3 << 40) };
    int64_t n = reel_tensor_count(t->rank, t->shape);
    for (int64_t i = 0; i < n; i++)
        ((int64_t *)t->data)[i] = base[rand_r(&seed) % G_N_ELEMENTS(base)];
}

// Floats drawn from a few values so that Equal finds matches; NaN, -0,
// infinities and (float64) neighbours that differ in the low word among them.
static void few_floats(reel_tensor *t, unsigned seed)
{
    static const double base[] = { 0.0, -0.0, 1.5, -1.5, 2.0, NAN, INFINITY, -INFINITY, 1e-30, -1e-310,
                                   1.0 + 0x1p-52, 1.0, -(1.0 + 0x1p-52), -1.0 };
    int64_t n = reel_tensor_count(t->rank, t->shape);
    for (int64_t i = 0; i < n; i++) {
        double v = base[rand_r(&seed) % G_N_ELEMENTS(base)];
        if (t->dtype == REEL_DTYPE_FLOAT64)
            ((double *)t->data)[i] = v;
        else
            ((float *)t->data)[i] = (float)v;
    }
}

static void comparisons(void **state)
{
    (void)state;
    static const char *const ops[] = { "Equal", "Greater" };
    unsigned seed = 1;
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++)
        for (size_t t = 0; t < G_N_ELEMENTS(compare_types); t++)
            for (size_t p = 0; p < G_N_ELEMENTS(pairs); p++) {
                reel_dtype dt = compare_types[t];
                int64_t lo = dt == REEL_DTYPE_UINT8 ? 250 : dt == REEL_DTYPE_BOOL ? 0 : -3;
                int64_t hi = dt == REEL_DTYPE_UINT8 ? 255 : dt == REEL_DTYPE_BOOL ? 1 : 3;
                reel_tensor *a = rnd(dt, pairs[p].a, seed++, lo, hi), *b = rnd(dt, pairs[p].b, seed++, lo, hi);
                if (dt == REEL_DTYPE_INT64 && p % 2) {
                    wide_ints(a, seed++);
                    wide_ints(b, seed++);
                }
                if ((dt == REEL_DTYPE_FLOAT32 || dt == REEL_DTYPE_FLOAT64) && p % 2) {
                    few_floats(a, seed++);
                    few_floats(b, seed++);
                }
                char what[96];
                g_snprintf(what, sizeof what, "%s %s pair %zu", ops[o], reel_dtype_name(dt), p);
                vkt_check(&(vkt_call){ .op = ops[o] }, 2, (reel_tensor *[]){ a, b }, what);
            }
    // A constant operand, as models compare with a threshold.
    reel_tensor *in[2] = { rnd(REEL_DTYPE_INT64, (shape){ 2, { 4, 6 } }, 5, -4, 4),
                           vkt_ints(REEL_DTYPE_INT64, 1, (int64_t[]){ 0 }) };
    vkt_check(&(vkt_call){ .op = "Greater", .consts = 2 }, 2, in, "Greater than a constant");
}

static void wheres(void **state)
{
    (void)state;
    static const reel_dtype types[] = { REEL_DTYPE_FLOAT32, REEL_DTYPE_INT64, REEL_DTYPE_INT32, REEL_DTYPE_UINT8,
                                        REEL_DTYPE_BOOL, REEL_DTYPE_INT16, REEL_DTYPE_FLOAT16 };
    static const struct {
        shape c, x, y;
    } cases[] = {
        { { 2, { 3, 5 } }, { 2, { 3, 5 } }, { 2, { 3, 5 } } },
        { { 1, { 5 } }, { 3, { 2, 3, 5 } }, { 0, { 0 } } },
        { { 3, { 2, 1, 7 } }, { 2, { 3, 1 } }, { 1, { 7 } } },
        { { 0, { 0 } }, { 2, { 4, 9 } }, { 2, { 4, 9 } } },
        { { 4, { 2, 1, 3, 1 } }, { 4, { 1, 5, 1, 3 } }, { 2, { 3, 1 } } },
        { { 2, { 1, 1 } }, { 0, { 0 } }, { 3, { 3, 1, 11 } } },
        { { 2, { 0, 3 } }, { 1, { 3 } }, { 1, { 3 } } },
        { { 6, { 2, 1, 2, 1, 2, 1 } }, { 6, { 1, 3, 1, 3, 1, 3 } }, { 1, { 1 } } },
    };
    unsigned seed = 100;
    for (size_t t = 0; t < G_N_ELEMENTS(types); t++)
        for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
            reel_dtype dt = types[t];
            int64_t lo = dt == REEL_DTYPE_FLOAT32 ? -2 : dt == REEL_DTYPE_BOOL ? 0 : -60000;
            int64_t hi = dt == REEL_DTYPE_FLOAT32 ? 2 : dt == REEL_DTYPE_BOOL ? 1 : 60000;
            reel_tensor *in[3] = { rnd(REEL_DTYPE_BOOL, cases[k].c, seed++, 0, 1), rnd(dt, cases[k].x, seed++, lo, hi),
                                   rnd(dt, cases[k].y, seed++, lo, hi) };
            if (dt == REEL_DTYPE_INT64 && k % 2) {
                wide_ints(in[1], seed++);
                wide_ints(in[2], seed++);
            }
            char what[96];
            g_snprintf(what, sizeof what, "Where %s case %zu", reel_dtype_name(dt), k);
            vkt_check(&(vkt_call){ .op = "Where", .exact = true }, 3, in, what);
        }
}

// ---- Cast -----------------------------------------------------------------------

static const reel_dtype cast_types[] = {
    REEL_DTYPE_FLOAT32, REEL_DTYPE_INT32, REEL_DTYPE_INT64, REEL_DTYPE_UINT8,
    REEL_DTYPE_INT8,    REEL_DTYPE_UINT16, REEL_DTYPE_INT16, REEL_DTYPE_BOOL, REEL_DTYPE_FLOAT16,
    REEL_DTYPE_FLOAT64,
};

static int64_t onnx_type(reel_dtype t)
{
    switch (t) {
    case REEL_DTYPE_FLOAT32: return 1;
    case REEL_DTYPE_UINT8: return 2;
    case REEL_DTYPE_INT8: return 3;
    case REEL_DTYPE_UINT16: return 4;
    case REEL_DTYPE_INT16: return 5;
    case REEL_DTYPE_INT32: return 6;
    case REEL_DTYPE_INT64: return 7;
    case REEL_DTYPE_BOOL: return 9;
    case REEL_DTYPE_FLOAT16: return 10;
    case REEL_DTYPE_FLOAT64: return 11;
    default: return 0;
    }
}

// A random double of random magnitude, or (one in four) random bits: NaN
// payloads, denormals and all.
static double random_double(unsigned *seed)
{
    if (rand_r(seed) % 4 == 0) {
        uint64_t bits = ((uint64_t)rand_r(seed) << 42) ^ ((uint64_t)rand_r(seed) << 21) ^ (uint64_t)rand_r(seed);
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    double m = (double)rand_r(seed) / RAND_MAX - 0.5;
    return ldexp(m, rand_r(seed) % 140 - 40);
}

// Edge values for casts out of `dt`: for float32 NaN, infinities, halves,
// values beyond every integer type, float16 ties; for integers the extremes
// of each width and int64 values next to float32 rounding ties (as float16
// bits: zeros, NaNs, infinities, subnormals; the rest random).
static reel_tensor *cast_source(reel_dtype dt, int n, unsigned seed)
{
    static const float fedge[] = { NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, 255.7f,
                                   -129.3f, 65535.9f, 32768.5f, 3e9f, -3e9f, 1e10f, -1e10f, 4294967296.0f,
                                   9.2233720368547758e18f, -9.2233720368547758e18f, 1e20f, -1e20f, 16777217.0f,
                                   123456789.0f, -2147483648.0f,
                                   // float16 edges: its largest, rounding to infinity, ties, subnormals
                                   65519.0f, 65520.0f, 0x1p-25f, 0x1.0002p-25f, 0x1.8p-24f, 0x1.002p+0f, 0x1.006p+0f,
                                   0x1.ffcp-15f, 6.1e-5f,
                                   // float32 denormals: not zero for bool, zero for integers
                                   1e-45f, -1e-40f };
    // float64: rounding ties and overflow into float32 and float16 (where
    // going through float32 would round twice), denormals of both, int64
    // saturation, NaNs with payloads.
    static const double dedge[] = {
        NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -2.5, 1.0 + 0x1p-24, 1.0 + 0x1p-24 + 0x1p-40, 1.0 + 0x3p-24,
        0x1.fffffefffffffp+127, 0x1.ffffffp+127, 3.5e38, -1e39, 1e-40, 0x1p-150, 0x1.0000001p-150, 1e-300,
        4.9e-324, -1e-310, 1e19, -1e19, 9.2e18, -9.2233720368547758e18, 4294967296.5, -2147483649.75, 65519.99,
        65520.0, 0x1p-25, 0x1.00000001p-25, 0x1.002p+0 + 0x1p-40, 0x1.002p+0, 123456789.123456789,
    };
    static const int64_t iedge[] = { 0, 1, -1, 127, 128, 255, 256, -128, -129, 32767, 32768, 65535, 65536,
                                     INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1, INT64_MAX, INT64_MIN,
                                     (1 << 24) + 1, (1 << 24) + 3, ((int64_t)1 << 53) + 1,
                                     // ties to even at 2^25: ...01|1 rounds up, ...00|1 rounds down
                                     ((int64_t)1 << 25) + 3, ((int64_t)1 << 25) + 1, -(((int64_t)1 << 25) + 3),
                                     ((int64_t)1 << 40) + ((int64_t)1 << 16),
                                     ((int64_t)1 << 40) + ((int64_t)1 << 16) + 1,
                                     ((int64_t)0x123456789 << 20), -((int64_t)0x123456789 << 20) - 5 };
    int64_t s[1] = { n };
    reel_tensor *t = reel_tensor_new(dt, 1, s);
    // Signalling NaNs (conversions between float32 and float64 quiet them,
    // float16 to float32 does not), with payloads.
    static const uint64_t snan64[2] = { 0x7ff0000000000001u, 0xfff4000000000abcu };
    static const uint32_t snan32[2] = { 0x7f800001u, 0xff8000a0u };
    static const uint16_t snan16[2] = { 0x7c01u, 0xfd55u };
    int at = dt == REEL_DTYPE_FLOAT64 ? G_N_ELEMENTS(dedge) : G_N_ELEMENTS(fedge);
    if (dt == REEL_DTYPE_FLOAT64) {
        for (int i = 0; i < n; i++)
            ((double *)t->data)[i] = i < (int)G_N_ELEMENTS(dedge) ? dedge[i] : random_double(&seed);
        for (int k = 0; k < 2 && at + k < n; k++)
            memcpy((double *)t->data + at + k, &snan64[k], 8);
        return t;
    }
    for (int i = 0; i < n; i++) {
        if (dt == REEL_DTYPE_FLOAT32)
            ((float *)t->data)[i] = i < (int)G_N_ELEMENTS(fedge) ? fedge[i]
                                        : -1000.0f + 2000.0f * (float)rand_r(&seed) / (float)RAND_MAX;
        else if (i < (int)G_N_ELEMENTS(iedge))
            vkt_set_int(t, i, iedge[i]);
        else
            vkt_set_int(t, i, (int64_t)(((uint64_t)rand_r(&seed) << 33) ^ ((uint64_t)rand_r(&seed) << 10) ^
                                        (uint64_t)rand_r(&seed)) >> (rand_r(&seed) % 48));
    }
    for (int k = 0; k < 2 && at + k < n && dt == REEL_DTYPE_FLOAT32; k++)
        memcpy((float *)t->data + at + k, &snan32[k], 4);
    for (int k = 0; k < 2 && k < n && dt == REEL_DTYPE_FLOAT16; k++)
        memcpy((uint16_t *)t->data + n - 1 - k, &snan16[k], 2);
    if (dt == REEL_DTYPE_BOOL) // bools hold 0 or 1
        for (int i = 0; i < n; i++)
            ((uint8_t *)t->data)[i] = (uint8_t)(rand_r(&seed) % 2);
    return t;
}

static void casts(void **state)
{
    (void)state;
    static const int counts[] = { 61, 1, 0, 7 };
    unsigned seed = 300;
    for (size_t f = 0; f < G_N_ELEMENTS(cast_types); f++)
        for (size_t t = 0; t < G_N_ELEMENTS(cast_types); t++)
            for (size_t k = 0; k < G_N_ELEMENTS(counts); k++) {
                vkt_call c = { .op = "Cast", .exact = true };
                vkt_attr_int(&c, "to", onnx_type(cast_types[t]));
                char what[96];
                g_snprintf(what, sizeof what, "Cast %s to %s, %d elements", reel_dtype_name(cast_types[f]),
                           reel_dtype_name(cast_types[t]), counts[k]);
                vkt_check(&c, 1, (reel_tensor *[]){ cast_source(cast_types[f], counts[k], seed++) }, what);
            }
    // A shaped tensor, not only vectors.
    vkt_call c = { .op = "Cast", .exact = true };
    vkt_attr_int(&c, "to", 7);
    vkt_check(&c, 1, (reel_tensor *[]){ rnd(REEL_DTYPE_FLOAT32, (shape){ 3, { 2, 3, 5 } }, 9, -100, 100) },
              "Cast float32 to int64, 2x3x5");
}

// ---- Gather -----------------------------------------------------------------------

static void gathers(void **state)
{
    (void)state;
    static const struct {
        shape x;
        int axis;
        shape idx;
        int64_t v[8];
    } cases[] = {
        { { 2, { 5, 4 } }, 0, { 1, { 3 } }, { 0, 4, -1 } },
        { { 2, { 5, 4 } }, 1, { 1, { 3 } }, { 3, -4, 1 } },
        { { 2, { 5, 4 } }, -1, { 0, { 0 } }, { -2 } },
        { { 3, { 2, 3, 7 } }, 1, { 2, { 2, 2 } }, { 2, 0, -1, 1 } },
        { { 3, { 2, 3, 7 } }, -1, { 2, { 2, 3 } }, { 6, 0, -7, 3, -1, 5 } },
        { { 3, { 2, 3, 7 } }, 0, { 1, { 4 } }, { 1, 1, -2, 0 } },
        { { 1, { 9 } }, 0, { 1, { 5 } }, { 8, -9, 0, 4, -1 } },
        { { 4, { 2, 3, 2, 5 } }, 2, { 1, { 3 } }, { 1, 0, -1 } },
        { { 2, { 3, 4 } }, 0, { 1, { 0 } }, { 0 } },
    };
    static const reel_dtype types[] = { REEL_DTYPE_FLOAT32, REEL_DTYPE_INT64, REEL_DTYPE_UINT8, REEL_DTYPE_INT16,
                                        REEL_DTYPE_BOOL };
    unsigned seed = 500;
    for (size_t t = 0; t < G_N_ELEMENTS(types); t++)
        for (size_t k = 0; k < G_N_ELEMENTS(cases); k++)
            for (int form = 0; form < 3; form++) {
                // form 0: constant int64 indices; 1: int32 made at run time; 2: int64 made at run time.
                reel_dtype it = form == 1 ? REEL_DTYPE_INT32 : REEL_DTYPE_INT64;
                reel_tensor *idx = reel_tensor_new(it, cases[k].idx.rank, cases[k].idx.d);
                for (int64_t i = 0; i < reel_tensor_count(idx->rank, idx->shape); i++)
                    vkt_set_int(idx, i, cases[k].v[i]);
                reel_dtype dt = types[t];
                reel_tensor *x = rnd(dt, cases[k].x, seed++, dt == REEL_DTYPE_BOOL ? 0 : -30000,
                                     dt == REEL_DTYPE_BOOL ? 1 : 30000);
                vkt_call c = { .op = "Gather", .consts = 2, .hide = form ? 2 : 0, .exact = true };
                if (cases[k].axis)
                    vkt_attr_int(&c, "axis", cases[k].axis);
                char what[96];
                g_snprintf(what, sizeof what, "Gather %s case %zu form %d", reel_dtype_name(dt), k, form);
                vkt_check(&c, 2, (reel_tensor *[]){ x, idx }, what);
            }
}

// An index computed at run time out of range: the cpu fails the run, the
// device writes zeros (and must not read outside the input).
static void gather_out_of_range(void **state)
{
    (void)state;
    int64_t xs[2] = { 4, 3 }, is[1] = { 3 };
    reel_tensor *x = reel_tensor_new(REEL_DTYPE_FLOAT32, 2, xs), *idx = reel_tensor_new(REEL_DTYPE_INT64, 1, is);
    for (int i = 0; i < 12; i++)
        ((float *)x->data)[i] = (float)(i + 1);
    int64_t v[3] = { 1, 4, ((int64_t)1 << 33) + 2 };
    memcpy(idx->data, v, sizeof v);
    vkt_case k;
    vkt_case_init(&k, &(vkt_call){ .op = "Gather" }, 2, (reel_tensor *[]){ x, idx }, "Gather out of range");
    assert_true(vkt_case_supported(&k));
    vkt_case_run_device(&k, NULL);
    static const float want[9] = { 4, 5, 6, 0, 0, 0, 0, 0, 0 };
    assert_int_equal(k.got[0]->nbytes, sizeof want);
    assert_memory_equal(k.got[0]->data, want, sizeof want);
    vkt_case_clear(&k);
}

// ---- Shape, Constant, ConstantOfShape ------------------------------------------------

static void shapes(void **state)
{
    (void)state;
    static const struct {
        shape x;
        int64_t start, end; // 99: absent
    } cases[] = {
        { { 4, { 2, 3, 5, 7 } }, 99, 99 }, { { 4, { 2, 3, 5, 7 } }, 1, 99 }, { { 4, { 2, 3, 5, 7 } }, -3, -1 },
        { { 4, { 2, 3, 5, 7 } }, 3, 1 },   { { 4, { 2, 3, 5, 7 } }, -9, 9 }, { { 0, { 0 } }, 99, 99 },
        { { 8, { 1, 2, 3, 4, 5, 6, 7, 8 } }, 99, 99 }, { { 2, { 0, 3 } }, 99, 99 },
    };
    static const reel_dtype types[] = { REEL_DTYPE_FLOAT32, REEL_DTYPE_UINT8 };
    for (size_t t = 0; t < G_N_ELEMENTS(types); t++)
        for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
            vkt_call c = { .op = "Shape", .exact = true };
            if (cases[k].start != 99)
                vkt_attr_int(&c, "start", cases[k].start);
            if (cases[k].end != 99)
                vkt_attr_int(&c, "end", cases[k].end);
            char what[64];
            g_snprintf(what, sizeof what, "Shape %s case %zu", reel_dtype_name(types[t]), k);
            vkt_check(&c, 1, (reel_tensor *[]){ rnd(types[t], cases[k].x, (unsigned)k, 0, 1) }, what);
        }
}

static void constants(void **state)
{
    (void)state;
    // value: tensors of several types and lengths, one over many dispatches.
    static const struct {
        reel_dtype dt;
        shape s;
    } tensors[] = {
        { REEL_DTYPE_FLOAT32, { 2, { 3, 4 } } }, { REEL_DTYPE_INT64, { 1, { 5 } } },
        { REEL_DTYPE_UINT8, { 1, { 7 } } },      { REEL_DTYPE_INT16, { 2, { 3, 3 } } },
        { REEL_DTYPE_BOOL, { 0, { 0 } } },       { REEL_DTYPE_FLOAT32, { 1, { 301 } } },
        { REEL_DTYPE_INT32, { 1, { 0 } } },      { REEL_DTYPE_FLOAT16, { 1, { 29 } } },
    };
    for (size_t k = 0; k < G_N_ELEMENTS(tensors); k++) {
        reel_tensor *v = rnd(tensors[k].dt, tensors[k].s, (unsigned)k, tensors[k].dt == REEL_DTYPE_BOOL ? 0 : -999,
                             tensors[k].dt == REEL_DTYPE_BOOL ? 1 : 999);
        vkt_call c = { .op = "Constant", .exact = true };
        vkt_attr_tensor(&c, "value", v);
        char what[64];
        g_snprintf(what, sizeof what, "Constant value %zu", k);
        vkt_check(&c, 0, NULL, what);
        reel_tensor_free(&v);
    }
    vkt_call c = { .op = "Constant", .exact = true };
    vkt_attr_float(&c, "value_float", -2.75f);
    vkt_check(&c, 0, NULL, "Constant value_float");
    c = (vkt_call){ .op = "Constant", .exact = true };
    vkt_attr_int(&c, "value_int", -((int64_t)5 << 40));
    vkt_check(&c, 0, NULL, "Constant value_int");
    static const float fl[5] = { 1, -2, 3.5f, 0, 1e-20f };
    c = (vkt_call){ .op = "Constant", .exact = true };
    vkt_attr_floats(&c, "value_floats", 5, fl);
    vkt_check(&c, 0, NULL, "Constant value_floats");
    static const int64_t il[3] = { 7, -1, INT64_MIN };
    c = (vkt_call){ .op = "Constant", .exact = true };
    vkt_attr_ints(&c, "value_ints", 3, il);
    vkt_check(&c, 0, NULL, "Constant value_ints");
    // Past 64 dispatches of 28 words: the cpu writes it.
    reel_tensor *big = rnd(REEL_DTYPE_FLOAT32, (shape){ 1, { 2000 } }, 1, -1, 1);
    c = (vkt_call){ .op = "Constant", .exact = true };
    vkt_attr_tensor(&c, "value", big);
    vkt_refuse(&c, 0, NULL, "Constant of 2000 floats");
    reel_tensor_free(&big);
}

static void constants_of_shape(void **state)
{
    (void)state;
    static const struct {
        reel_dtype dt; // NONE: no value attribute (float32 zeros)
        int64_t value;
        int rank;
        int64_t d[4];
    } cases[] = {
        { REEL_DTYPE_NONE, 0, 2, { 3, 5 } },   { REEL_DTYPE_FLOAT32, 3, 3, { 2, 3, 4 } },
        { REEL_DTYPE_INT64, -((int64_t)7 << 35), 2, { 3, 3 } }, { REEL_DTYPE_INT32, -5, 1, { 9 } },
        { REEL_DTYPE_UINT8, 200, 2, { 3, 7 } }, { REEL_DTYPE_BOOL, 1, 1, { 13 } },
        { REEL_DTYPE_INT16, -300, 1, { 5 } },  { REEL_DTYPE_FLOAT32, 1, 0, { 0 } },
        { REEL_DTYPE_INT64, 1, 2, { 4, 0 } },
    };
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++)
        for (int hidden = 0; hidden < 2; hidden++) {
            vkt_call c = { .op = "ConstantOfShape", .consts = 1, .hide = hidden ? 1 : 0, .exact = true };
            reel_tensor *v = NULL;
            if (cases[k].dt != REEL_DTYPE_NONE) {
                int64_t one[1] = { 1 };
                v = reel_tensor_new(cases[k].dt, 1, one);
                vkt_set_int(v, 0, cases[k].value);
                vkt_attr_tensor(&c, "value", v);
            }
            int64_t sd[1] = { cases[k].rank };
            reel_tensor *s = reel_tensor_new(REEL_DTYPE_INT64, 1, sd);
            memcpy(s->data, cases[k].d, sizeof(int64_t) * (size_t)cases[k].rank);
            char what[64];
            g_snprintf(what, sizeof what, "ConstantOfShape case %zu%s", k, hidden ? " (shape made at run time)" : "");
            vkt_check(&c, 1, (reel_tensor *[]){ s }, what);
            reel_tensor_free(&v);
        }
}

// ---- reductions ------------------------------------------------------------------

static void reductions(void **state)
{
    (void)state;
    static const struct {
        shape x;
        int n_axes; // -1: none given
        int64_t axes[4];
        int keepdims; // -1: absent (1)
        int noop;     // noop_with_empty_axes
    } cases[] = {
        { { 3, { 2, 3, 4 } }, 1, { 1 }, -1, 0 },
        { { 3, { 2, 3, 4 } }, 1, { -1 }, 0, 0 },
        { { 3, { 2, 3, 4 } }, 2, { 0, 2 }, 1, 0 },
        { { 3, { 2, 3, 4 } }, 2, { -3, -1 }, 0, 0 },
        { { 3, { 2, 3, 4 } }, -1, { 0 }, 1, 0 },
        { { 3, { 2, 3, 4 } }, -1, { 0 }, 0, 0 },
        { { 3, { 2, 3, 4 } }, -1, { 0 }, 1, 1 },
        { { 3, { 2, 3, 4 } }, 0, { 0 }, 0, 1 },
        { { 4, { 1, 16, 23, 29 } }, 2, { 2, 3 }, 1, 0 },
        { { 2, { 3, 1000 } }, 1, { 1 }, 0, 0 },
        { { 2, { 1000, 3 } }, 1, { 0 }, 1, 0 },
        { { 5, { 2, 3, 2, 3, 2 } }, 3, { 0, 2, 4 }, 0, 0 },
        { { 5, { 2, 3, 2, 3, 2 } }, 2, { 1, 3 }, 1, 0 },
        { { 1, { 1 } }, 1, { 0 }, 0, 0 },
        { { 0, { 0 } }, -1, { 0 }, 1, 0 },
        { { 3, { 2, 0, 3 } }, 1, { 1 }, 1, 0 },
        { { 3, { 2, 0, 3 } }, 1, { 2 }, 0, 0 },
        { { 2, { 70000, 2 } }, 1, { 1 }, 1, 0 },
    };
    static const char *const ops[] = { "ReduceSum", "ReduceMean", "ReduceMax" };
    unsigned seed = 700;
    for (size_t o = 0; o < G_N_ELEMENTS(ops); o++)
        for (size_t k = 0; k < G_N_ELEMENTS(cases); k++)
            for (int as_input = 0; as_input < 2; as_input++) {
                if (cases[k].n_axes < 0 && as_input)
                    continue;
                vkt_call c = { .op = ops[o], .tol = 1e-4f };
                if (cases[k].keepdims >= 0)
                    vkt_attr_int(&c, "keepdims", cases[k].keepdims);
                if (cases[k].noop)
                    vkt_attr_int(&c, "noop_with_empty_axes", 1);
                reel_tensor *in[2] = { frand(cases[k].x, seed++), NULL };
                int n_in = 1;
                if (as_input) { // opset 18 (13 for ReduceSum): axes as a constant input
                    in[1] = vkt_ints(REEL_DTYPE_INT64, cases[k].n_axes, cases[k].axes);
                    c.consts = 2;
                    n_in = 2;
                } else if (cases[k].n_axes > 0) {
                    vkt_attr_ints(&c, "axes", cases[k].n_axes, cases[k].axes);
                }
                char what[96];
                g_snprintf(what, sizeof what, "%s case %zu%s", ops[o], k, as_input ? " (axes input)" : "");
                vkt_check(&c, n_in, in, what);
            }
    // Axes computed at run time stay on the cpu.
    vkt_call c = { .op = "ReduceSum", .consts = 2, .hide = 2 };
    reel_tensor *axes = vkt_ints(REEL_DTYPE_INT64, 1, (int64_t[]){ 1 });
    vkt_refuse(&c, 2, (reel_tensor *[]){ frand((shape){ 2, { 3, 4 } }, 1), axes }, "ReduceSum with run-time axes");
    // Rank 8 alternating kept and reduced dims: two walks of 4 dims.
    int64_t ax8[4] = { 0, 2, 4, 6 };
    c = (vkt_call){ .op = "ReduceMax" };
    vkt_attr_ints(&c, "axes", 4, ax8);
    vkt_check(&c, 1, (reel_tensor *[]){ frand((shape){ 8, { 2, 3, 2, 3, 2, 3, 2, 3 } }, 2) }, "ReduceMax rank 8");
    // NaN propagates through Max when the reduced dims are innermost.
    reel_tensor *x = frand((shape){ 2, { 4, 9 } }, 3);
    ((float *)x->data)[5] = NAN;
    c = (vkt_call){ .op = "ReduceMax" };
    vkt_attr_ints(&c, "axes", 1, (int64_t[]){ 1 });
    vkt_check(&c, 1, (reel_tensor *[]){ x }, "ReduceMax with a NaN");
}

// ---- ConvTranspose, BatchNormalization ------------------------------------------------

typedef struct convt_case {
    shape x, w;
    bool bias;
    int64_t group;
    int sp;
    int64_t strides[3], pads[6], dil[3], opad[3], oshape[3];
    const char *auto_pad;
} convt_case;

static void convtransposes(void **state)
{
    (void)state;
    static const convt_case cases[] = {
        { { 4, { 1, 3, 5, 5 } }, { 4, { 3, 2, 3, 3 } }, true, 1, 2, { 0 }, { 0 }, { 0 }, { 0 }, { 0 }, NULL },
        { { 4, { 2, 4, 4, 5 } }, { 4, { 4, 3, 3, 2 } }, false, 1, 2, { 2, 2 }, { 1, 0, 1, 1 }, { 0 }, { 1, 1 }, { 0 },
          NULL },
        { { 4, { 1, 6, 5, 4 } }, { 4, { 6, 2, 3, 3 } }, true, 3, 2, { 2, 1 }, { 0 }, { 2, 1 }, { 0 }, { 0 }, NULL },
        { { 4, { 1, 4, 3, 3 } }, { 4, { 4, 1, 4, 4 } }, true, 4, 2, { 3, 2 }, { 2, 1, 0, 3 }, { 1, 2 }, { 2, 1 },
          { 0 }, NULL },
        { { 3, { 2, 3, 7 } }, { 3, { 3, 5, 3 } }, true, 1, 1, { 2 }, { 1, 2 }, { 0 }, { 1 }, { 0 }, NULL },
        { { 5, { 1, 2, 3, 4, 3 } }, { 5, { 2, 3, 2, 3, 2 } }, true, 1, 3, { 2, 1, 2 }, { 0, 1, 0, 0, 1, 1 },
          { 1, 2, 1 }, { 1, 0, 0 }, { 0 }, NULL },
        { { 4, { 1, 2, 4, 4 } }, { 4, { 2, 2, 3, 3 } }, false, 1, 2, { 2, 2 }, { 0 }, { 0 }, { 0 }, { 0 },
          "SAME_UPPER" },
        { { 4, { 1, 2, 3, 5 } }, { 4, { 2, 2, 3, 2 } }, true, 1, 2, { 2, 3 }, { 0 }, { 0 }, { 0 }, { 0 },
          "SAME_LOWER" },
        { { 4, { 1, 2, 3, 3 } }, { 4, { 2, 3, 3, 3 } }, true, 1, 2, { 3, 2 }, { 0 }, { 0 }, { 0 }, { 10, 8 }, NULL },
        { { 4, { 1, 2, 3, 3 } }, { 4, { 2, 3, 2, 2 } }, true, 1, 2, { 1, 1 }, { 1, 1, 1, 1 }, { 0 }, { 0 }, { 0 },
          "VALID" },
    };
    for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
        const convt_case *t = &cases[k];
        vkt_call c = { .op = "ConvTranspose", .consts = 6, .tol = 1e-4f };
        if (t->group != 1)
            vkt_attr_int(&c, "group", t->group);
        if (t->strides[0])
            vkt_attr_ints(&c, "strides", t->sp, t->strides);
        if (t->pads[0] || t->pads[1] || t->pads[t->sp])
            vkt_attr_ints(&c, "pads", 2 * t->sp, t->pads);
        if (t->dil[0])
            vkt_attr_ints(&c, "dilations", t->sp, t->dil);
        if (t->opad[0] || t->opad[1])
            vkt_attr_ints(&c, "output_padding", t->sp, t->opad);
        if (t->oshape[0])
            vkt_attr_ints(&c, "output_shape", t->sp, t->oshape);
        if (t->auto_pad)
            vkt_attr_string(&c, "auto_pad", t->auto_pad);
        if (k % 3 == 0)
            vkt_attr_ints(&c, "kernel_shape", t->sp, t->w.d + 2);
        int64_t m = t->w.d[1] * t->group;
        reel_tensor *in[3] = { frand(t->x, (unsigned)(k * 3)), frand(t->w, (unsigned)(k * 3 + 1)),
                               t->bias ? frand((shape){ 1, { m } }, (unsigned)(k * 3 + 2)) : NULL };
        char what[64];
        g_snprintf(what, sizeof what, "ConvTranspose case %zu", k);
        vkt_check(&c, t->bias ? 3 : 2, in, what);
    }
    // A kernel_shape the weights do not hold stays on the cpu.
    vkt_call c = { .op = "ConvTranspose", .consts = 2 };
    vkt_attr_ints(&c, "kernel_shape", 2, (int64_t[]){ 2, 2 });
    vkt_refuse(&c, 2,
               (reel_tensor *[]){ frand((shape){ 4, { 1, 2, 3, 3 } }, 1), frand((shape){ 4, { 2, 2, 3, 3 } }, 2) },
               "ConvTranspose kernel_shape unlike the weights");
}

static void batchnorms(void **state)
{
    (void)state;
    static const shape xs[] = {
        { 2, { 5, 7 } }, { 3, { 2, 3, 11 } }, { 4, { 2, 4, 5, 6 } }, { 5, { 1, 3, 2, 3, 4 } }, { 4, { 0, 3, 2, 2 } },
    };
    for (size_t k = 0; k < G_N_ELEMENTS(xs); k++) {
        shape ch = { 1, { xs[k].d[1] } };
        unsigned seed = (unsigned)(k * 10);
        reel_tensor *in[5] = { frand(xs[k], seed), frand(ch, seed + 1), frand(ch, seed + 2), frand(ch, seed + 3),
                               rnd(REEL_DTYPE_FLOAT32, ch, seed + 4, 0, 3) };
        vkt_call c = { .op = "BatchNormalization", .consts = 30, .tol = 1e-5f };
        if (k % 2)
            vkt_attr_float(&c, "epsilon", 1e-3f);
        char what[64];
        g_snprintf(what, sizeof what, "BatchNormalization case %zu", k);
        vkt_check(&c, 5, in, what);
    }
}

// ---- refusals -----------------------------------------------------------------------

static void refusals(void **state)
{
    (void)state;
    // float16 comparisons are in neither kernel (the cpu's infer refuses them,
    // so only supports() is asked).
    reel_tensor h = { .dtype = REEL_DTYPE_FLOAT16, .rank = 2, .shape = { 3, 4 }, .nbytes = 24 };
    reel_tensor hb = { .dtype = REEL_DTYPE_BOOL, .rank = 2, .shape = { 3, 4 }, .nbytes = 12 };
    reel_ir_node eq = { .name = "n", .op = "Equal", .n_inputs = 2, .n_outputs = 1 };
    assert_false(vk_op_find("Equal")->supports(&eq, (reel_tensor *[]){ &h, &h }, (reel_tensor *[]){ &hb }));
    // Rank-8 broadcasting with nothing to merge: more dims than the kernels walk.
    shape a8 = { 8, { 2, 1, 2, 1, 2, 1, 2, 1 } }, b8 = { 8, { 1, 2, 1, 2, 1, 2, 1, 2 } };
    vkt_refuse(&(vkt_call){ .op = "Greater" }, 2, (reel_tensor *[]){ frand(a8, 1), frand(b8, 2) }, "rank-8 Greater");
    // BatchNormalization's running statistics are training outputs; the cpu's
    // infer refuses them, so only supports() is asked here.
    reel_ir_node n = { .name = "n", .op = "BatchNormalization", .n_inputs = 5, .n_outputs = 3 };
    reel_tensor x = { .dtype = REEL_DTYPE_FLOAT32, .rank = 2, .shape = { 2, 3 }, .nbytes = 24 };
    reel_tensor v = { .dtype = REEL_DTYPE_FLOAT32, .rank = 1, .shape = { 3 }, .nbytes = 12 };
    const vk_op *bn = vk_op_find("BatchNormalization");
    assert_false(bn->supports(&n, (reel_tensor *[]){ &x, &v, &v, &v, &v }, (reel_tensor *[]){ &x, &v, &v }));
    assert_true(bn->supports(&n, (reel_tensor *[]){ &x, &v, &v, &v, &v }, (reel_tensor *[]){ &x, NULL, NULL }));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(comparisons),   cmocka_unit_test(wheres),         cmocka_unit_test(casts),
        cmocka_unit_test(gathers),       cmocka_unit_test(gather_out_of_range), cmocka_unit_test(shapes),
        cmocka_unit_test(constants),     cmocka_unit_test(constants_of_shape), cmocka_unit_test(reductions),
        cmocka_unit_test(convtransposes), cmocka_unit_test(batchnorms),    cmocka_unit_test(refusals),
    };
    return vkt_run_group(tests, G_N_ELEMENTS(tests), 18, false);
}

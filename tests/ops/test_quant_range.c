// Calibration ranges (models/quant/range.c): min/max, the histogram that
// widens as values grow (no count lost), percentile cuts against the exact
// quantiles of the data, uint8 parameters that cover the range and keep an
// exact 0, and values that are not finite.
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "models/quant/range.h"

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int64_t bins_total(const quant_range *r)
{
    int64_t n = 0;
    for (int i = 0; i < QUANT_RANGE_BINS; i++)
        n += r->bins[i];
    return n;
}

static void test_minmax(void **state)
{
    (void)state;
    quant_range *r = malloc(sizeof *r);
    quant_range_init(r);
    float v[] = { 0.5f, 2.25f, 1.0f, 0.75f };
    quant_range_add(r, v, 4);
    double lo, hi;
    quant_range_get(r, false, 0, &lo, &hi);
    assert_true(lo == 0); // 0.5 is the smallest, but uint8 needs an exact 0 inside
    assert_true(hi == 2.25);
    float w[] = { -3.5f };
    quant_range_add(r, w, 1);
    quant_range_get(r, false, 0, &lo, &hi);
    assert_true(lo == -3.5 && hi == 2.25);
    assert_int_equal(r->count, 5);
    free(r);
}

// Small values first, then ones 1000 times larger: the histogram widens
// and still holds every value; percentile ranges match the exact quantiles
// within a bin.
static void test_widen_and_percentile(void **state)
{
    (void)state;
    enum { N = 200000 };
    quant_range *r = malloc(sizeof *r);
    float *v = malloc(N * sizeof *v), *sorted = malloc(N * sizeof *v);
    quant_range_init(r);
    srand(3);
    for (int i = 0; i < N; i++)
        v[i] = (float)((double)rand() / RAND_MAX * (i < N / 2 ? 0.01 : 10.0) - (i < N / 2 ? 0.005 : 2.0));
    v[N / 2 + 17] = 900.0f; // outliers the percentile cuts
    v[N - 5] = -700.0f;
    quant_range_add(r, v, N / 2);
    double half_before = r->half;
    quant_range_add(r, v + N / 2, N / 2);
    assert_true(r->half > half_before);
    assert_int_equal(bins_total(r), N);
    memcpy(sorted, v, N * sizeof *v);
    qsort(sorted, N, sizeof *sorted, cmp_float);
    double lo, hi, width = 2 * r->half / QUANT_RANGE_BINS;
    quant_range_get(r, true, 99.9, &lo, &hi);
    double want_lo = sorted[(int)(N * 0.0005)], want_hi = sorted[N - 1 - (int)(N * 0.0005)];
    assert_true(fabs(lo - fmin(want_lo, 0)) <= width);
    assert_true(fabs(hi - want_hi) <= width);
    assert_true(hi < 100 && lo > -100); // the outliers are cut
    quant_range_get(r, false, 0, &lo, &hi);
    assert_true(lo == -700.0 && hi == 900.0);
    free(sorted);
    free(v);
    free(r);
}

static void test_not_finite(void **state)
{
    (void)state;
    quant_range *r = malloc(sizeof *r);
    quant_range_init(r);
    float v[] = { NAN, 1.5f, INFINITY, -INFINITY, -0.5f };
    quant_range_add(r, v, 5);
    double lo, hi;
    quant_range_get(r, false, 0, &lo, &hi);
    assert_true(lo == -0.5 && hi == 1.5);
    assert_int_equal(r->count, 2);
    assert_int_equal(bins_total(r), 2);
    free(r);
}

// Parameters cover [lo, hi] (rounded outwards, never inwards) and 0 is a step.
static void test_uint8_params(void **state)
{
    (void)state;
    const double ranges[][2] = { { -1, 1 }, { 0, 6 }, { -0.3, 17.2 }, { -5e-4, 1e-4 }, { -12, 0 } };
    for (size_t i = 0; i < sizeof ranges / sizeof *ranges; i++) {
        float scale;
        uint8_t zp;
        quant_range_uint8(ranges[i][0], ranges[i][1], &scale, &zp);
        assert_true(scale > 0);
        assert_true(-(double)scale * zp <= ranges[i][0] + 1e-12 * fabs(ranges[i][0]) + 0.5 * scale);
        assert_true((double)scale * (255 - zp) >= ranges[i][1] - 0.5 * scale);
        assert_true((double)scale * 255 <= (ranges[i][1] - ranges[i][0]) * 1.001); // not wider than needed
    }
    float scale;
    uint8_t zp;
    quant_range_uint8(0, 6, &scale, &zp);
    assert_int_equal(zp, 0);
    quant_range_uint8(-12, 0, &scale, &zp);
    assert_int_equal(zp, 255);
    quant_range_uint8(0, 0, &scale, &zp); // nothing seen but zeros
    assert_true(scale == 1 && zp == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minmax),
        cmocka_unit_test(test_widen_and_percentile),
        cmocka_unit_test(test_not_finite),
        cmocka_unit_test(test_uint8_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

// Buffers: layout, refcounting, metadata, pools, and the live counts.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "reel/reel.h"
#include "tests/support/skip.h"

static reel_caps video(reel_pixfmt f, int w, int h)
{
    reel_caps c = reel_caps_any();
    c.media = REEL_MEDIA_VIDEO_RAW;
    c.memory = REEL_MEMORY_HOST;
    c.pixfmts = REEL_PIXFMT_BIT(f);
    c.width = w;
    c.height = h;
    c.framerate = (reel_fraction){ 30, 1 };
    return c;
}

static void test_video_layout(void **state)
{
    (void)state;
    reel_caps c = video(REEL_PIXFMT_YUV420P, 101, 51);
    reel_buffer *b = reel_buffer_new_format(&c);
    assert_non_null(b);
    // Odd sizes round chroma up, as FFmpeg does; rows are 64-byte aligned.
    assert_int_equal(b->strides[0], 128);
    assert_int_equal(b->strides[1], 64);
    assert_int_equal(b->strides[2], 64);
    assert_ptr_equal(b->planes[0], b->data);
    assert_ptr_equal(b->planes[1], b->data + 128 * 51 + (64 - (128 * 51) % 64) % 64);
    assert_true((size_t)(b->planes[2] - b->data) + 64 * 26 <= b->size);
    assert_true(((uintptr_t)b->planes[2] & 63) == 0);
    reel_buffer_unref(&b);
    assert_null(b);
}

static void test_tensor_size_and_overflow(void **state)
{
    (void)state;
    reel_caps c = reel_caps_any();
    c.media = REEL_MEDIA_TENSOR;
    c.memory = REEL_MEMORY_HOST;
    c.dtype = REEL_DTYPE_FLOAT32;
    c.rank = 4;
    c.shape[0] = 1, c.shape[1] = 3, c.shape[2] = 224, c.shape[3] = 224;
    reel_buffer *b = reel_buffer_new_format(&c);
    assert_non_null(b);
    assert_int_equal(b->size, 3 * 224 * 224 * 4);
    reel_buffer_unref(&b);

    // Shapes whose byte size overflows (or is absurd) are refused, not wrapped.
    c.shape[0] = INT32_MAX, c.shape[1] = INT32_MAX, c.shape[2] = INT32_MAX;
    assert_null(reel_buffer_new_format(&c));
    // A format with open fields cannot be allocated.
    c = video(REEL_PIXFMT_RGB24, 0, 10);
    assert_null(reel_buffer_new_format(&c));
}

static const reel_meta_type tag_type = { "tag", g_free, (void *(*)(const void *))g_strdup };
static const reel_meta_type other_type = { "other", NULL, NULL };

static void test_meta_and_copy(void **state)
{
    (void)state;
    reel_buffer *b = reel_buffer_new(16);
    memset(b->data, 7, 16);
    b->pts = 42;
    reel_buffer_add_meta(b, &tag_type, g_strdup("first"));
    reel_buffer_add_meta(b, &other_type, (void *)&other_type);
    reel_buffer_add_meta(b, &tag_type, g_strdup("second"));
    assert_string_equal(reel_buffer_get_meta(b, &tag_type), "first");

    void *data;
    reel_meta *m = reel_buffer_next_meta(b, NULL, &tag_type, &data);
    m = reel_buffer_next_meta(b, m, &tag_type, &data);
    assert_string_equal(data, "second");
    assert_null(reel_buffer_next_meta(b, m, &tag_type, &data));

    // A shared buffer is not writable; making it so copies contents and the
    // metas that can be copied.
    reel_buffer *shared = reel_buffer_ref(b);
    assert_false(reel_buffer_is_writable(b));
    assert_int_equal(reel_buffer_make_writable(&shared), 0);
    assert_ptr_not_equal(shared, b);
    assert_true(reel_buffer_is_writable(shared) && reel_buffer_is_writable(b));
    assert_int_equal(shared->pts, 42);
    assert_memory_equal(shared->data, b->data, 16);
    assert_string_equal(reel_buffer_get_meta(shared, &tag_type), "first");
    assert_null(reel_buffer_get_meta(shared, &other_type));
    reel_buffer_unref(&shared);
    reel_buffer_unref(&b);
}

static void test_pool_recycles(void **state)
{
    (void)state;
    long live0 = reel_buffer_get_stats().live;
    long alloc0 = reel_buffer_get_stats().allocated;
    reel_caps c = video(REEL_PIXFMT_RGB24, 32, 8);
    reel_pool *pool = reel_pool_new(&c);
    assert_non_null(pool);

    reel_buffer *a = reel_pool_acquire(pool);
    reel_buffer_add_meta(a, &tag_type, g_strdup("x"));
    a->pts = 5;
    uint8_t *storage = a->data;
    assert_int_equal(reel_buffer_get_stats().live, live0 + 1);
    reel_buffer_unref(&a);
    assert_int_equal(reel_buffer_get_stats().live, live0);

    // The same storage comes back, with fields and metadata reset.
    reel_buffer *b = reel_pool_acquire(pool);
    assert_ptr_equal(b->data, storage);
    assert_int_equal(b->pts, REEL_PTS_NONE);
    assert_null(reel_buffer_get_meta(b, &tag_type));
    assert_int_equal(reel_buffer_get_stats().allocated, alloc0 + 1);

    // A buffer out when its pool is released outlives the pool.
    reel_pool_release(&pool);
    assert_null(pool);
    b->data[0] = 1;
    reel_buffer_unref(&b);
    assert_int_equal(reel_buffer_get_stats().live, live0);
}

static gpointer ref_unref_many(gpointer data)
{
    reel_buffer *b = data;
    for (int i = 0; i < 100000; i++) {
        reel_buffer *r = reel_buffer_ref(b);
        reel_buffer_unref(&r);
    }
    return NULL;
}

static void test_refcount_across_threads(void **state)
{
    (void)state;
    long live0 = reel_buffer_get_stats().live;
    reel_buffer *b = reel_buffer_new(8);
    GThread *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = g_thread_new("ref", ref_unref_many, b);
    for (int i = 0; i < 4; i++)
        g_thread_join(t[i]);
    assert_true(reel_buffer_is_writable(b));
    reel_buffer_unref(&b);
    assert_int_equal(reel_buffer_get_stats().live, live0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_video_layout),
        cmocka_unit_test(test_tensor_size_and_overflow),
        cmocka_unit_test(test_meta_and_copy),
        cmocka_unit_test(test_pool_recycles),
        cmocka_unit_test(test_refcount_across_threads),
    };
    return reel_run_tests(tests, NULL, NULL);
}

// NVDEC frames into Vulkan memory (elements/cuda_frames.c) where no GPU
// with CUDA is at hand: each reason it cannot be is said, naming what is
// missing. The copy itself runs only on an NVIDIA GPU (scripts/gpu-check).
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "elements/cuda_frames.h"
#include "tests/support/skip.h"

static void expect_refusal(const char *spec, const char *reason)
{
    reel_device *dev = reel_device_open(spec, NULL);
    if (!dev)
        reel_skip("no %s device", spec);
    char *why = NULL;
    assert_null(cuda_frames_open(dev, NULL, &why));
    assert_non_null(why);
    if (!strstr(why, reason))
        fail_msg("%s: \"%s\" does not say \"%s\"", spec, why, reason);
    g_free(why);
    reel_device_unref(&dev);
}

static void test_only_to_a_vulkan_device(void **state)
{
    (void)state;
    expect_refusal("cpu", "frames go to cpu, not a Vulkan device");
}

static void test_names_the_missing_driver_or_device(void **state)
{
    (void)state;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib) { // a machine with NVIDIA's driver: it is there, the decoder's device is not
        dlclose(lib);
        expect_refusal("vulkan:0", "no CUDA device to share frames with");
    } else {
        expect_refusal("vulkan:0", "no CUDA driver: libcuda.so.1");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_to_a_vulkan_device),
        cmocka_unit_test(test_names_the_missing_driver_or_device),
    };
    return reel_run_tests(tests, NULL, NULL);
}

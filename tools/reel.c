// reel: run, inspect and describe video inference pipelines.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/reel.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: reel COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  run DESCRIPTION...     build a pipeline from text and run it to the end\n"
    "  run -f FILE            the same, with the description read from FILE\n"
    "  inspect [ELEMENT]      list the elements, or describe one in full\n"
    "  devices                list every device reel can run on\n"
    "  model info|run|bench MODEL.onnx ...\n"
    "                         describe, run or benchmark an ONNX model\n"
    "  worker --nats URL      take jobs from a NATS JetStream queue and run them\n"
    "  submit DESCRIPTION...  queue a job for the workers; prints its id\n"
    "  jobs                   the queue's jobs and workers\n"
    "  serve                  host pipelines behind an HTTP API, with metrics (reel serve --help)\n"
    "\n"
    "options:\n"
    "  --help                 this text (also: reel run --help)\n"
    "  --version              the version\n"
    "\n"
    "example:\n"
    "  reel run \"testsrc num-buffers=300 ! video/raw,width=640,height=360 ! fakesink checksum=true\"\n"
    "\n"
    "exit codes: 0 success, 1 failure while running, 2 bad usage or description\n";

// worker, submit and jobs live in the fleet module (libreel-fleet.so), serve
// in the serve module (libreel-serve.so), so that the other commands never
// load libnats or libsoup.
static int module_command(const char *module, const char *symbol, const char *cmd, int argc, char **argv)
{
    char *path = g_build_filename(reel_module_dir(), module, NULL);
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    int (*command)(const char *, int, char **) = handle ? (int (*)(const char *, int, char **))dlsym(handle, symbol)
                                                        : NULL;
    if (!command) {
        fprintf(stderr, "reel: cannot load the '%s' command (%s): %s\n", cmd, path, dlerror());
        g_free(path);
        return EXIT_RUNTIME;
    }
    g_free(path);
    return command(cmd, argc, argv);
}

static int fleet_command(const char *cmd, int argc, char **argv)
{
    if (!REEL_WITH_NATS) {
        fprintf(stderr, "reel: '%s' needs NATS, which this build of reel leaves out (-DREEL_WITH_NATS=OFF)\n", cmd);
        return EXIT_USAGE;
    }
    return module_command("libreel-fleet.so", "reel_fleet_command", cmd, argc, argv);
}

static int serve_command(int argc, char **argv)
{
    if (!REEL_WITH_SERVE) {
        fprintf(stderr, "reel: 'serve' needs libsoup, which this build of reel leaves out (-DREEL_WITH_SERVE=OFF)\n");
        return EXIT_USAGE;
    }
    return module_command("libreel-serve.so", "reel_serve_command", "serve", argc, argv);
}

static int run_command(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("reel %s\n", REEL_VERSION_STRING);
        return EXIT_OK;
    }
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "inspect") == 0)
        return cmd_inspect(argc - 2, argv + 2);
    if (strcmp(cmd, "devices") == 0)
        return cmd_devices(argc - 2, argv + 2);
    if (strcmp(cmd, "model") == 0)
        return cmd_model(argc - 2, argv + 2);
    if (strcmp(cmd, "worker") == 0 || strcmp(cmd, "submit") == 0 || strcmp(cmd, "jobs") == 0)
        return fleet_command(cmd, argc - 2, argv + 2);
    if (strcmp(cmd, "serve") == 0)
        return serve_command(argc - 2, argv + 2);
    fprintf(stderr, "reel: unknown command '%s'\n\n%s", cmd, usage);
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    // What this program may change in its own process, as a library may
    // not: OpenBLAS's kernels for this CPU (read when OpenBLAS loads, at the
    // first inference), FFmpeg quiet (reel reports failures itself;
    // REEL_FFMPEG_LOG=error|warning|info|debug brings its messages back),
    // OpenBLAS single-threaded beside reel's own workers.
    const char *core = reel_model_blas_core_for_cpu();
    if (core)
        setenv("OPENBLAS_CORETYPE", core, 0);
    const char *ffmpeg_log = getenv("REEL_FFMPEG_LOG");
    reel_init_with(reel_init_params(.ffmpeg_log = ffmpeg_log ? ffmpeg_log : "quiet", .blas_threads = 1));
    int status = run_command(argc, argv);
    // Under REEL_VULKAN_VALIDATION=1 a validation message is a failure, so
    // that every test driving this program checks the layer's verdict.
    int64_t messages = reel_device_validation_messages();
    if (messages > 0) {
        fprintf(stderr, "reel: %" G_GINT64_FORMAT " Vulkan validation message%s\n", messages, messages == 1 ? "" : "s");
        if (status == EXIT_OK)
            status = EXIT_RUNTIME;
    }
    return status;
}

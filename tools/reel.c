// reel: run, inspect and describe video inference pipelines.
#include <stdio.h>
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
    "\n"
    "options:\n"
    "  --help                 this text (also: reel run --help)\n"
    "  --version              the version\n"
    "\n"
    "example:\n"
    "  reel run \"testsrc num-buffers=300 ! video/raw,width=640,height=360 ! fakesink checksum=true\"\n"
    "\n"
    "exit codes: 0 success, 1 failure while running, 2 bad usage or description\n";

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
    if (strcmp(cmd, "worker") == 0)
        return cmd_worker(argc - 2, argv + 2);
    if (strcmp(cmd, "submit") == 0)
        return cmd_submit(argc - 2, argv + 2);
    if (strcmp(cmd, "jobs") == 0)
        return cmd_jobs(argc - 2, argv + 2);
    fprintf(stderr, "reel: unknown command '%s'\n\n%s", cmd, usage);
    return EXIT_USAGE;
}

int main(int argc, char **argv)
{
    reel_init();
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

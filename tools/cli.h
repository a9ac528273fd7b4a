// The `reel` program's commands.
#ifndef REEL_TOOLS_CLI_H
#define REEL_TOOLS_CLI_H

// Exit codes: success, a failure at run time, bad usage or a bad description.
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2 };

int cmd_run(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_model(int argc, char **argv);
// `reel model run ARGS` and `reel model bench ARGS` (tools/cmd_model_run.c):
// argv holds the ARGS after "run"/"bench" (argv[0] is MODEL.onnx when given).
int cmd_model_run(int argc, char **argv);
int cmd_model_bench(int argc, char **argv);
// `reel model quantize ARGS` (tools/cmd_model_quantize.c): calibration and the int8 QDQ model.
int cmd_model_quantize(int argc, char **argv);
// The fleet on NATS JetStream (fleet/jobs.h): run jobs, queue one, list them.
int cmd_worker(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_jobs(int argc, char **argv);
// A long-running service hosting pipelines behind an HTTP API (serve/).
int cmd_serve(int argc, char **argv);

#endif

// Fuzz target: loading an ONNX model from memory (reel_model_load_data):
// the protobuf parse, the IR build and its checks, shape inference with
// constant folding, the graph passes and the support check. A model either
// loads, with inputs and outputs described within bounds and a summary, or
// fails with a REEL_ERROR that has a message.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reel/reel.h"
#include "reel/model.h"

static void die(const char *what, const char *message)
{
    fprintf(stderr, "fuzz_onnx: %s%s%s\n", what, message ? ": " : "", message ? message : "");
    abort();
}

static void check_io(const reel_model_io *io)
{
    if (!io || !io->name)
        die("an input or output without a name", NULL);
    if (io->rank < -1 || io->rank > REEL_TENSOR_MAX_RANK)
        die("an input or output of impossible rank", io->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *err = NULL;
    reel_model *m = reel_model_load_data(data, size, "fuzz.onnx", &err);
    if (!m) {
        if (!err || err->domain != REEL_ERROR || !err->message || !*err->message)
            die("no model and no error", NULL);
        g_error_free(err);
        return 0;
    }
    if (err)
        die("a model and an error both", err->message);
    for (int i = 0; i < reel_model_n_inputs(m); i++)
        check_io(reel_model_input(m, i));
    if (reel_model_n_outputs(m) < 1)
        die("a model without outputs", NULL);
    for (int i = 0; i < reel_model_n_outputs(m); i++)
        check_io(reel_model_output(m, i));
    reel_model_summary s;
    reel_model_summarize(m, &s);
    if (s.nodes < 0 || !s.op_histogram)
        die("an impossible summary", NULL);
    reel_model_unref(&m);
    return 0;
}

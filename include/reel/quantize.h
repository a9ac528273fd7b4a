// reel — int8 quantization: calibrate a float ONNX model on real inputs and
// write it as a standard QDQ model (QuantizeLinear/DequantizeLinear pairs)
// that reel and ONNX Runtime both run.
#ifndef REEL_QUANTIZE_H
#define REEL_QUANTIZE_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "export.h"
#include "model.h"
#include "tensor.h"

// How an activation's range comes from what calibration saw.
typedef enum reel_quant_method {
    REEL_QUANT_MINMAX,     // the smallest and largest value seen
    REEL_QUANT_PERCENTILE, // both tails cut at `percentile` of the histogram
} reel_quant_method;

typedef struct reel_quant_params {
    reel_quant_method method;
    double percentile;      // REEL_QUANT_PERCENTILE: kept share in percent; 0: 99.99
    bool per_tensor;        // weights: one scale per tensor (default: per output channel)
    bool bias_correction;   // Conv biases minus the mean shift their int8 weights cause on calibration data
    bool keep_heads_float;  // the last Conv/MatMul/Gemm before each model output runs in float
    const char *const *keep_float; // NULL-terminated node names that run in float (weights and output), or NULL
} reel_quant_params;

typedef struct reel_quantizer reel_quantizer;

// Reads the float model at `path` and picks what to quantize: the weights
// (and biases) of Conv, MatMul and Gemm, and the float activations going
// into and out of Conv, MatMul, Gemm, Add, Mul, AveragePool,
// GlobalAveragePool, Concat, MaxPool, Reshape, Resize and Transpose (a
// Conv's following Relu/Clip stays before its quantization). NULL with
// *error set: the file unreadable or not ONNX (REEL_EIO, REEL_EFORMAT),
// nothing to quantize (REEL_EINVAL), or an opset below 13 with ops whose
// inputs changed there (REEL_EUNSUPPORTED: the output needs opset 13).
REEL_API reel_quantizer *reel_quantizer_new(const char *path, GError **error);
REEL_API void reel_quantizer_free(reel_quantizer **q);

// The model calibration runs (the float model with every tensor to quantize
// also an output): its inputs are the original model's.
REEL_API reel_model *reel_quantizer_model(reel_quantizer *q);

// Runs the float model on one set of inputs (one tensor per model input,
// host memory) and adds what every tensor to quantize held to its range
// and histogram. Returns 0 or the session's error.
REEL_API int reel_quantizer_observe(reel_quantizer *q, reel_tensor *const *inputs, GError **error);
REEL_API int64_t reel_quantizer_n_observed(const reel_quantizer *q);

// Cross-layer equalization, between a first calibration pass and a second:
// each depthwise Conv whose output one group-1 Conv alone reads has its
// output channel c scaled by k_c and that Conv's weights reading it by
// 1 / k_c (the float model computes the same), k_c = sqrt(largest channel
// range / channel c's range) from the ranges calibration saw (channels
// under 1/16 of the largest: 1). When any pair was, what was observed is
// dropped: observe the same inputs again before writing (with none, nothing
// changes). Returns the pairs equalized (>= 0),
// or REEL_EINVAL (nothing observed yet) or the calibration model's error.
REEL_API int reel_quantizer_equalize(reel_quantizer *q, GError **error);

typedef struct reel_quant_summary {
    int activations; // tensors with a QuantizeLinear/DequantizeLinear pair
    int weights;     // int8 weight initializers
    int biases;      // int32 bias initializers
    int bias_corrected; // of them, corrected for their weights' rounding
    int float_nodes; // nodes kept in float (keep_float, keep_heads_float)
} reel_quant_summary;

// Writes the QDQ model to `out` (after at least one observe): int8 weights
// with a scale per output channel (zero point 0), int32 biases at
// input_scale x weight_scale, uint8 activations with the ranges `params`
// says; opset raised to 13 where lower. The model's inputs and outputs stay
// float. Nodes kept float keep float weights and bias and a float output
// (their quantized inputs are dequantized for them). Returns 0, or
// REEL_EINVAL (nothing observed, or a --keep-float name no node has),
// REEL_EUNSUPPORTED
// (an opset below 13 with ops that changed there), REEL_EIO (`out` not
// writable: the message names it). `summary` may be NULL.
REEL_API int reel_quantizer_write(reel_quantizer *q, const reel_quant_params *params, const char *out,
                                  reel_quant_summary *summary, GError **error);

#endif

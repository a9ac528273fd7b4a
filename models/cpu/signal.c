// DFT, STFT, windows, MelWeightMatrix. float32 and float64 tensors; the
// transforms compute in double (a radix-2 FFT for powers of two, a plain
// O(n^2) DFT otherwise).
#include <complex.h>

#include "models/cpu/nn.h"

#define R REEL_TENSOR_MAX_RANK

static bool is_real_type(reel_dtype t)
{
    return t == REEL_DTYPE_FLOAT32 || t == REEL_DTYPE_FLOAT64;
}

// A scalar integer input's value when it is a constant (*known), else
// *known = false. Fails when it is not one int32/int64 element.
static int scalar_int_input(reel_ir_graph *g, reel_ir_node *n, int i, const char *what, bool *known, int64_t *v,
                            GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, i);
    *known = false;
    if (!x)
        return 0;
    if (x->dtype != REEL_DTYPE_INT32 && x->dtype != REEL_DTYPE_INT64)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "%s must be int32 or int64, not %s", what, reel_dtype_name(x->dtype));
    if (x->rank > 1 || (x->rank == 1 && x->dims[0] > 1))
        NN_FAIL(error, REEL_EINVAL, n, "%s must be a scalar", what);
    if (x->constant) {
        if (reel_tensor_ints(x->constant, v, 1) != 1)
            NN_FAIL(error, REEL_EINVAL, n, "%s must be a scalar", what);
        *known = true;
    }
    return 0;
}

static int64_t tensor_int(const reel_tensor *t)
{
    return t->dtype == REEL_DTYPE_INT32 ? *(const int32_t *)t->data : *(const int64_t *)t->data;
}

static double tensor_real(const reel_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case REEL_DTYPE_FLOAT32: return ((const float *)t->data)[i];
    case REEL_DTYPE_FLOAT64: return ((const double *)t->data)[i];
    case REEL_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case REEL_DTYPE_INT64: return (double)((const int64_t *)t->data)[i];
    default: return NAN;
    }
}

static void store_real(reel_tensor *t, int64_t i, double v)
{
    if (t->dtype == REEL_DTYPE_FLOAT32)
        ((float *)t->data)[i] = (float)v;
    else
        ((double *)t->data)[i] = v;
}

// output_datatype (ONNX TensorProto codes): float (1) or double (11).
static int output_type(reel_ir_node *n, reel_dtype *dt, GError **error)
{
    int64_t code = reel_ir_attr_int(n, "output_datatype", 1);
    if (code == 1)
        *dt = REEL_DTYPE_FLOAT32;
    else if (code == 11)
        *dt = REEL_DTYPE_FLOAT64;
    else
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "attribute 'output_datatype' = %" G_GINT64_FORMAT " is not supported", code);
    return 0;
}

// ---- HannWindow, HammingWindow, BlackmanWindow ------------------------------------

static int window_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_dtype dt = REEL_DTYPE_FLOAT32;
    int err = output_type(n, &dt, error);
    if (err)
        return err;
    int64_t periodic = reel_ir_attr_int(n, "periodic", 1);
    if (periodic != 0 && periodic != 1)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'periodic' = %" G_GINT64_FORMAT " is not 0 or 1", periodic);
    if (!reel_op_input(g, n, 0))
        NN_FAIL(error, REEL_EINVAL, n, "needs the input size");
    bool known;
    int64_t size;
    if ((err = scalar_int_input(g, n, 0, "size", &known, &size, error)))
        return err;
    if (known && size < 0)
        NN_FAIL(error, REEL_EINVAL, n, "size %" G_GINT64_FORMAT " is negative", size);
    nn_set(reel_op_output(g, n, 0), dt, 1, known ? &size : NULL);
    return 0;
}

// Cosine-sum windows: a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), with N
// the size (periodic) or the size - 1 (symmetric).
static int run_window(const reel_ir_node *n, reel_tensor *const *out, double a0, double a1, double a2)
{
    int64_t size = out[0]->shape[0];
    double N = (double)(reel_ir_attr_int(n, "periodic", 1) ? size : size - 1);
    for (int64_t k = 0; k < size; k++) {
        double t = N > 0 ? 2.0 * G_PI * (double)k / N : 0.0;
        store_real(out[0], k, a0 - a1 * cos(t) + a2 * cos(2.0 * t));
    }
    return 0;
}

static int hann_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)in, (void)ctx;
    return run_window(n, out, 0.5, 0.5, 0.0);
}

static int hamming_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)in, (void)ctx;
    return run_window(n, out, 25.0 / 46.0, 21.0 / 46.0, 0.0);
}

static int blackman_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)in, (void)ctx;
    return run_window(n, out, 0.42, 0.5, 0.08);
}

// ---- the transform ----------------------------------------------------------------

// y[0..len) = the DFT of x[0..len) (inverse: with e^{+i} and divided by len).
// Radix-2 in place when len is a power of two; tmp holds len values.
static void transform(double complex *x, int64_t len, bool inverse, double complex *tmp)
{
    if (len <= 1)
        return;
    double sign = inverse ? 1.0 : -1.0;
    if ((len & (len - 1)) == 0) {
        // bit-reversal permutation, then butterflies of growing span
        for (int64_t i = 1, j = 0; i < len; i++) {
            int64_t bit = len >> 1;
            for (; j & bit; bit >>= 1)
                j ^= bit;
            j ^= bit;
            if (i < j) {
                double complex t = x[i];
                x[i] = x[j];
                x[j] = t;
            }
        }
        for (int64_t span = 2; span <= len; span <<= 1) {
            double complex w = cexp(sign * 2.0 * G_PI * I / (double)span);
            for (int64_t s = 0; s < len; s += span) {
                double complex wk = 1.0;
                for (int64_t k = 0; k < span / 2; k++) {
                    double complex a = x[s + k], b = x[s + k + span / 2] * wk;
                    x[s + k] = a + b;
                    x[s + k + span / 2] = a - b;
                    wk *= w;
                }
            }
        }
    } else {
        for (int64_t k = 0; k < len; k++) {
            double complex acc = 0.0;
            for (int64_t j = 0; j < len; j++)
                acc += x[j] * cexp(sign * 2.0 * G_PI * I * (double)((k * j) % len) / (double)len);
            tmp[k] = acc;
        }
        memcpy(x, tmp, sizeof *x * (size_t)len);
    }
    if (inverse)
        for (int64_t k = 0; k < len; k++)
            x[k] /= (double)len;
}

// ---- DFT --------------------------------------------------------------------------

// The transformed axis: opset 17's attribute (default 1) or opset 20's
// input 2 (default -2, counted over all of the input's dims). -1 when out
// of range or not yet known.
static int dft_axis(const reel_ir_node *n, int opset, int rank, const reel_tensor *axis_in, bool *known)
{
    int64_t a;
    *known = true;
    if (opset >= 20) {
        a = -2;
        if (axis_in) {
            if (!axis_in->data || reel_tensor_ints(axis_in, &a, 1) != 1) {
                *known = false;
                return -1;
            }
        }
    } else {
        a = reel_ir_attr_int(n, "axis", 1);
    }
    if (a < 0)
        a += rank;
    return a >= 0 && a < rank - 1 ? (int)a : -1;
}

static int dft_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *axis_v = g->opset >= 20 ? reel_op_input(g, n, 2) : NULL;
    if (!x)
        NN_FAIL(error, REEL_EINVAL, n, "needs the input signal");
    if (!is_real_type(x->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input type %s is not supported (float or double)", reel_dtype_name(x->dtype));
    int64_t inverse = reel_ir_attr_int(n, "inverse", 0), onesided = reel_ir_attr_int(n, "onesided", 0);
    if (inverse != 0 && inverse != 1)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'inverse' = %" G_GINT64_FORMAT " is not 0 or 1", inverse);
    if (onesided != 0 && onesided != 1)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'onesided' = %" G_GINT64_FORMAT " is not 0 or 1", onesided);
    if (onesided && inverse)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "an inverse onesided DFT is not supported");
    if (g->opset < 20 && reel_op_input(g, n, 2))
        NN_FAIL(error, REEL_EINVAL, n, "the axis is an input only from opset 20");
    if (axis_v && axis_v->dtype != REEL_DTYPE_INT32 && axis_v->dtype != REEL_DTYPE_INT64)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "axis must be int32 or int64");
    bool len_known;
    int64_t len = 0;
    int err = scalar_int_input(g, n, 1, "dft_length", &len_known, &len, error);
    if (err)
        return err;
    reel_ir_value *y = reel_op_output(g, n, 0);
    if (x->rank < 0) {
        nn_set(y, x->dtype, -1, NULL);
        return 0;
    }
    if (x->rank < 2 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2 && x->dims[x->rank - 1] >= 0))
        NN_FAIL(error, REEL_EINVAL, n, "the signal's last dim must be 1 (real) or 2 (complex)");
    if (onesided && x->dims[x->rank - 1] == 2)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a onesided DFT of a complex signal is not supported");
    if (axis_v && !axis_v->constant)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "axis must be a constant");
    bool axis_known;
    int axis = dft_axis(n, g->opset, x->rank, axis_v ? axis_v->constant : NULL, &axis_known);
    if (axis < 0)
        NN_FAIL(error, REEL_EINVAL, n, "axis is out of range for rank %d", x->rank);
    if (reel_op_input(g, n, 1) && len_known && len < 1)
        NN_FAIL(error, REEL_EINVAL, n, "dft_length %" G_GINT64_FORMAT " is not positive", len);
    int64_t d[R];
    memcpy(d, x->dims, sizeof(int64_t) * (size_t)x->rank);
    if (reel_op_input(g, n, 1))
        d[axis] = len_known ? len : REEL_DIM_UNKNOWN;
    if (onesided && d[axis] >= 0)
        d[axis] = d[axis] / 2 + 1;
    d[x->rank - 1] = 2;
    nn_set(y, x->dtype, x->rank, d);
    return 0;
}

// The complex values of a signal with a trailing dim of 1 (real) or 2 at
// element offset `base` with `stride` between samples along the axis.
static double complex sample(const reel_tensor *x, int64_t base, int64_t stride, int64_t i, int comps)
{
    int64_t at = base + i * stride;
    return comps == 2 ? tensor_real(x, at) + tensor_real(x, at + 1) * I : tensor_real(x, at);
}

// Two buffers of the longest transform: the axis's length (any dim but the
// complex one bounds it) or dft_length.
static size_t dft_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    int64_t len = n->n_inputs > 1 && in[1] ? tensor_int(in[1]) : 0;
    for (int d = 0; d < in[0]->rank - 1; d++)
        len = MAX(len, in[0]->shape[d]);
    return 2 * sizeof(double complex) * (size_t)len;
}

static int dft_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0];
    bool known;
    int axis = dft_axis(n, ctx->opset, x->rank, ctx->opset >= 20 && n->n_inputs > 2 ? in[2] : NULL, &known);
    if (axis < 0)
        return REEL_EINVAL;
    bool inverse = reel_ir_attr_int(n, "inverse", 0), onesided = reel_ir_attr_int(n, "onesided", 0);
    int comps = (int)x->shape[x->rank - 1];
    int64_t n_in = x->shape[axis], len = n->n_inputs > 1 && in[1] ? tensor_int(in[1]) : n_in;
    int64_t n_out = out[0]->shape[axis];
    if (len < 1 || n_out != (onesided ? len / 2 + 1 : len))
        return REEL_EINVAL;
    int64_t outer = reel_tensor_count(axis, x->shape), inner = reel_tensor_count(x->rank - 1 - axis - 1, x->shape + axis + 1);
    double complex *buf = ctx->scratch, *tmp = buf + len;
    if (!buf || ctx->scratch_size < 2 * sizeof *buf * (size_t)len)
        return REEL_EINVAL;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            // zero-padded or truncated to len samples
            int64_t base = (o * n_in * inner + i) * comps;
            for (int64_t k = 0; k < len; k++)
                buf[k] = k < n_in ? sample(x, base, inner * comps, k, comps) : 0.0;
            transform(buf, len, inverse, tmp);
            int64_t obase = (o * n_out * inner + i) * 2;
            for (int64_t k = 0; k < n_out; k++) {
                store_real(out[0], obase + k * inner * 2, creal(buf[k]));
                store_real(out[0], obase + k * inner * 2 + 1, cimag(buf[k]));
            }
        }
    return 0;
}

// ---- STFT -------------------------------------------------------------------------

// signal [batch, length, 1|2], frame_step, window [frame_length]?,
// frame_length? -> [batch, frames, bins, 2].
static int stft_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_ir_value *x = reel_op_input(g, n, 0), *w = reel_op_input(g, n, 2);
    if (!x || !reel_op_input(g, n, 1))
        NN_FAIL(error, REEL_EINVAL, n, "needs the signal and frame_step");
    if (!is_real_type(x->dtype))
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "input type %s is not supported (float or double)", reel_dtype_name(x->dtype));
    if (w && w->dtype != x->dtype)
        NN_FAIL(error, REEL_EINVAL, n, "the window's type differs from the signal's");
    if (w && w->rank != 1)
        NN_FAIL(error, REEL_EINVAL, n, "the window must have rank 1");
    int64_t onesided = reel_ir_attr_int(n, "onesided", 1);
    if (onesided != 0 && onesided != 1)
        NN_FAIL(error, REEL_EINVAL, n, "attribute 'onesided' = %" G_GINT64_FORMAT " is not 0 or 1", onesided);
    bool step_known, flen_known;
    int64_t step = 0, flen = 0;
    int err = scalar_int_input(g, n, 1, "frame_step", &step_known, &step, error);
    if (!err)
        err = scalar_int_input(g, n, 3, "frame_length", &flen_known, &flen, error);
    if (err)
        return err;
    if (!reel_op_input(g, n, 3)) {
        if (!w)
            NN_FAIL(error, REEL_EINVAL, n, "needs a window or a frame_length");
        flen = w->dims[0];
        flen_known = flen >= 0;
    } else if (w && flen_known && w->dims[0] >= 0 && w->dims[0] != flen) {
        NN_FAIL(error, REEL_EINVAL, n, "the window's length is not frame_length");
    }
    reel_ir_value *y = reel_op_output(g, n, 0);
    if (x->rank < 0) {
        nn_set(y, x->dtype, -1, NULL);
        return 0;
    }
    if (x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2 && x->dims[2] >= 0))
        NN_FAIL(error, REEL_EINVAL, n, "the signal must be [batch, length, 1 or 2]");
    if (onesided && x->dims[2] == 2)
        NN_FAIL(error, REEL_EUNSUPPORTED, n, "a onesided STFT of a complex signal is not supported");
    if (step_known && step < 1)
        NN_FAIL(error, REEL_EINVAL, n, "frame_step %" G_GINT64_FORMAT " is not positive", step);
    if (flen_known && (flen < 1 || (x->dims[1] >= 0 && flen > x->dims[1])))
        NN_FAIL(error, REEL_EINVAL, n, "frame_length %" G_GINT64_FORMAT " does not fit the signal", flen);
    int64_t d[4] = { x->dims[0], REEL_DIM_UNKNOWN, REEL_DIM_UNKNOWN, 2 };
    if (step_known && flen_known && x->dims[1] >= 0)
        d[1] = 1 + (x->dims[1] - flen) / step;
    if (flen_known)
        d[2] = onesided ? flen / 2 + 1 : flen;
    nn_set(y, x->dtype, 4, d);
    return 0;
}

static int64_t stft_frame_length(const reel_ir_node *n, reel_tensor *const *in)
{
    if (n->n_inputs > 3 && in[3])
        return tensor_int(in[3]);
    return n->n_inputs > 2 && in[2] ? in[2]->shape[0] : 0;
}

static size_t stft_scratch(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out)
{
    (void)out;
    return 2 * sizeof(double complex) * (size_t)MAX(0, stft_frame_length(n, in));
}

static int stft_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    const reel_tensor *x = in[0], *w = n->n_inputs > 2 ? in[2] : NULL;
    int64_t flen = stft_frame_length(n, in), step = tensor_int(in[1]);
    int64_t batch = x->shape[0], slen = x->shape[1], frames = out[0]->shape[1], bins = out[0]->shape[2];
    int comps = (int)x->shape[2];
    double complex *buf = ctx->scratch, *tmp = buf + flen;
    if (flen < 1 || step < 1 || frames != 1 + (slen - flen) / step || !buf ||
        ctx->scratch_size < 2 * sizeof *buf * (size_t)flen)
        return REEL_EINVAL;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t f = 0; f < frames; f++) {
            int64_t base = (b * slen + f * step) * comps;
            for (int64_t k = 0; k < flen; k++)
                buf[k] = sample(x, base, comps, k, comps) * (w ? tensor_real(w, k) : 1.0);
            transform(buf, flen, false, tmp);
            int64_t obase = ((b * frames + f) * bins) * 2;
            for (int64_t k = 0; k < bins; k++) {
                store_real(out[0], obase + 2 * k, creal(buf[k]));
                store_real(out[0], obase + 2 * k + 1, cimag(buf[k]));
            }
        }
    return 0;
}

// ---- MelWeightMatrix --------------------------------------------------------------

// num_mel_bins, dft_length, sample_rate (ints), lower_edge_hertz,
// upper_edge_hertz (floats) -> [dft_length / 2 + 1, num_mel_bins].
static int mel_infer(reel_ir_graph *g, reel_ir_node *n, GError **error)
{
    reel_dtype dt = REEL_DTYPE_FLOAT32;
    int err = output_type(n, &dt, error);
    if (err)
        return err;
    for (int i = 0; i < 5; i++)
        if (!reel_op_input(g, n, i))
            NN_FAIL(error, REEL_EINVAL, n, "needs num_mel_bins, dft_length, sample_rate, lower_edge_hertz and upper_edge_hertz");
    bool kb, kl, ks;
    int64_t bins = 0, len = 0, rate = 0;
    if ((err = scalar_int_input(g, n, 0, "num_mel_bins", &kb, &bins, error)) ||
        (err = scalar_int_input(g, n, 1, "dft_length", &kl, &len, error)) ||
        (err = scalar_int_input(g, n, 2, "sample_rate", &ks, &rate, error)))
        return err;
    for (int i = 3; i < 5; i++)
        if (!is_real_type(reel_op_input(g, n, i)->dtype))
            NN_FAIL(error, REEL_EUNSUPPORTED, n, "input %d must be float or double", i);
    if ((kb && bins < 1) || (kl && len < 1) || (ks && rate < 1))
        NN_FAIL(error, REEL_EINVAL, n, "num_mel_bins, dft_length and sample_rate must be positive");
    int64_t d[2] = { kl ? len / 2 + 1 : REEL_DIM_UNKNOWN, kb ? bins : REEL_DIM_UNKNOWN };
    nn_set(reel_op_output(g, n, 0), dt, 2, d);
    return 0;
}

static double hz_to_mel(double hz)
{
    return 2595.0 * log10(1.0 + hz / 700.0);
}

static double mel_to_hz(double mel)
{
    return 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
}

// Triangles between num_mel_bins + 2 points evenly spaced in mel and
// rounded down to spectrogram bins, as ONNX's reference computes them.
static int mel_run(const reel_ir_node *n, reel_tensor *const *in, reel_tensor *const *out, const reel_exec_ctx *ctx)
{
    (void)n, (void)ctx;
    int64_t bins = tensor_int(in[0]), len = tensor_int(in[1]), rate = tensor_int(in[2]);
    int64_t rows = len / 2 + 1;
    if (out[0]->shape[0] != rows || out[0]->shape[1] != bins || rate < 1)
        return REEL_EINVAL;
    double lo = hz_to_mel(tensor_real(in[3], 0)), hi = hz_to_mel(tensor_real(in[4], 0));
    double step = (hi - lo) / (double)(bins + 2);
    int64_t *pt = g_new(int64_t, bins + 2);
    for (int64_t i = 0; i < bins + 2; i++) {
        int64_t p = (int64_t)floor((double)(len + 1) * mel_to_hz((double)i * step + lo) / (double)rate);
        pt[i] = CLAMP(p, 0, rows - 1);
    }
    for (int64_t e = 0; e < rows * bins; e++)
        store_real(out[0], e, 0.0);
    for (int64_t i = 0; i < bins; i++) {
        int64_t l = pt[i], c = pt[i + 1], h = pt[i + 2];
        if (c == l)
            store_real(out[0], c * bins + i, 1.0);
        else
            for (int64_t j = l; j <= c; j++)
                store_real(out[0], j * bins + i, (double)(j - l) / (double)(c - l));
        for (int64_t j = c; j < h; j++)
            store_real(out[0], j * bins + i, (double)(h - j) / (double)(h - c));
    }
    g_free(pt);
    return 0;
}

static const reel_op op_hann = { .name = "HannWindow", .infer = window_infer, .run = hann_run };
static const reel_op op_hamming = { .name = "HammingWindow", .infer = window_infer, .run = hamming_run };
static const reel_op op_blackman = { .name = "BlackmanWindow", .infer = window_infer, .run = blackman_run };
static const reel_op op_dft = { .name = "DFT", .infer = dft_infer, .scratch = dft_scratch, .run = dft_run };
static const reel_op op_stft = { .name = "STFT", .infer = stft_infer, .scratch = stft_scratch, .run = stft_run };
static const reel_op op_mel = { .name = "MelWeightMatrix", .infer = mel_infer, .run = mel_run };

const reel_op *const reel_ops_signal[] = {
    &op_hann, &op_hamming, &op_blackman, &op_dft, &op_stft, &op_mel, NULL,
};

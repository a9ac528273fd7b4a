# QDQ models for the folding pass (models/qdq.c) and models with ONNX
# Runtime's com.microsoft QLinear ops (models/cpu/qlinear.c), built with
# onnx's helper API. Random weights, quantized with numpy as ORT's quantizer
# does: int8 weights symmetric per output channel, uint8 (or int8)
# activations asymmetric over the calibrated range, int32 biases at
# x_scale * w_scale. Every model takes float32 "input" and gives float32
# "output" (Q/DQ at the edges).
#   python3 make_qdq_models.py DIR        writes DIR/*.onnx, DIR/*.npy inputs and DIR/manifest.txt:
#                                         NAME STEP OP=COUNT...  (STEP: the output's scale; the op
#                                         counts `reel model info` must show after folding, and qdq=1
#                                         where it reports a fold, qdq=0 where nothing folds)
#                                         DIR/refusals.txt: NAME NODE (models reel refuses, naming NODE)
#   python3 make_qdq_models.py compare A_DIR B_DIR STEP
#                                         every output in B has a twin in A within STEP (one quantization step)
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper, save

rng = np.random.RandomState(1234)
OPSET = [helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)]


def act_params(x, dtype=np.uint8):
    """ORT's asymmetric activation parameters over [min(0, x), max(0, x)]."""
    lo, hi = min(0.0, float(np.min(x))), max(0.0, float(np.max(x)))
    qmin, qmax = (0, 255) if dtype == np.uint8 else (-128, 127)
    scale = np.float32((hi - lo) / (qmax - qmin) if hi > lo else 1.0)
    zp = int(np.clip(round(qmin - lo / float(scale)), qmin, qmax))
    return scale, np.array(zp, dtype=dtype)


def quantize(x, scale, zp):
    info = np.iinfo(zp.dtype)
    return np.clip(np.rint(x / scale) + zp.astype(np.int32), info.min, info.max).astype(zp.dtype)


def dequantize(q, scale, zp):
    return ((q.astype(np.int32) - zp.astype(np.int32)) * scale).astype(np.float32)


def weight_params(w, axis=0):
    """Symmetric int8 per channel along axis."""
    red = tuple(i for i in range(w.ndim) if i != axis)
    m = np.max(np.abs(w), axis=red)
    scale = (np.where(m > 0, m, 1.0) / 127.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale, np.zeros(scale.shape, np.int8)


def conv2d(x, w, b=None, stride=1, pad=0, group=1):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, m, oh, ow), np.float64)
    mg = m // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, w[g * mg:(g + 1) * mg, :, i, j])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y.astype(np.float32)


class Builder:
    """A graph of Q/DQ pairs around float ops, with a float reference run alongside to calibrate."""

    def __init__(self, name, x, act=np.uint8):
        self.name, self.nodes, self.inits, self.act = name, [], [], act
        self.counter = 0
        self.values = {}
        self.out_params = None  # the output's scale and zero point, when not calibrated
        self.x = x
        self.input = helper.make_tensor_value_info("input", TensorProto.FLOAT, list(x.shape))

    def uniq(self, base):
        self.counter += 1
        return f"{base}_{self.counter}"

    def const(self, base, arr):
        name = self.uniq(base)
        self.values[name] = np.asarray(arr)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op, inputs, outputs=None, domain=None, **attrs):
        outputs = outputs or [self.uniq(op.lower())]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.uniq(op), domain=domain, **attrs))
        return outputs[0]

    def qdq(self, name, value, params=None, out=None):
        """Q then DQ of the float tensor `name` (value: its reference); returns (dq name, dequantized value, params)."""
        s, z = params if params is not None else act_params(value, self.act)
        sn, zn = self.const("scale", s), self.const("zp", z)
        q = self.node("QuantizeLinear", [name, sn, zn])
        dq = self.node("DequantizeLinear", [q, sn, zn], [out] if out else None)
        return dq, dequantize(quantize(value, s, z), s, z), (s, z)

    def weight(self, w, axis=0):
        q, s, z = weight_params(w, axis)
        dq = self.node("DequantizeLinear", [self.const("w", q), self.const("w_scale", s), self.const("w_zp", z)],
                       axis=axis)
        shape = [1] * w.ndim
        shape[axis] = -1
        return dq, (q.astype(np.float32) * s.reshape(shape)), s

    def bias(self, b, x_scale, w_scale):
        s = (x_scale * w_scale).astype(np.float32)
        q = np.rint(b / s).astype(np.int32)
        zp = self.const("b_zp", np.zeros(s.shape, np.int32))
        dq = self.node("DequantizeLinear", [self.const("b", q), self.const("b_scale", s), zp], axis=0)
        return dq, q.astype(np.float32) * s

    def finish(self, out_name, value, params=None):
        _, _, (s, _) = self.qdq(out_name, value, params, "output")
        out = helper.make_tensor_value_info("output", TensorProto.FLOAT, list(value.shape))
        graph = helper.make_graph(self.nodes, self.name, [self.input], [out], self.inits)
        return helper.make_model(graph, opset_imports=OPSET, producer_name="make_qdq_models"), float(s)


def conv_block(b, dq, xv, xs, w, bias, stride=1, pad=0, group=1, act=None, float_bias=False):
    wdq, wv, ws = b.weight(w)
    inputs = [dq, wdq]
    if bias is not None and float_bias:
        inputs.append(b.const("bias", bias.astype(np.float32)))
        bv = bias
    elif bias is not None:
        bdq, bv = b.bias(bias, xs, ws)
        inputs.append(bdq)
    else:
        bv = None
    y = b.node("Conv", inputs, kernel_shape=list(w.shape[2:]), strides=[stride, stride], pads=[pad] * 4, group=group)
    yv = conv2d(xv, wv, bv, stride, pad, group)
    if act == "relu":
        y, yv = b.node("Relu", [y]), np.maximum(yv, 0)
    elif act == "relu6":
        y, yv = b.node("Clip", [y, b.const("min", np.float32(0)), b.const("max", np.float32(6))]), np.clip(yv, 0, 6)
    return y, yv


def models():
    """(name, model, input, step, expected op counts) of each case."""
    out = []
    x = rng.rand(1, 8, 12, 12).astype(np.float32) * 2 - 0.5

    def start(name, act=np.uint8, shape=None):
        xi = x if shape is None else (rng.rand(*shape).astype(np.float32) * 2 - 0.5)
        b = Builder(name, xi, act)
        dq, xv, (xs, _) = b.qdq("input", xi)
        return b, dq, xv, xs

    for act, tag in ((np.uint8, "u8"), (np.int8, "s8")):
        b, dq, xv, xs = start(f"conv3x3_relu_{tag}", act)
        y, yv = conv_block(b, dq, xv, xs, rng.randn(16, 8, 3, 3).astype(np.float32) * 0.2,
                           rng.randn(16).astype(np.float32) * 0.1, pad=1, act="relu")
        out.append((b, y, yv, {"QLinearConv": 1, "Conv": 0, "Relu": 0, "DequantizeLinear": 1, "QuantizeLinear": 1}))

    b, dq, xv, xs = start("conv1x1_float_bias")
    y, yv = conv_block(b, dq, xv, xs, rng.randn(24, 8, 1, 1).astype(np.float32) * 0.3,
                       rng.randn(24).astype(np.float32) * 0.2, float_bias=True)
    out.append((b, y, yv, {"QLinearConv": 1, "Conv": 0}))

    b, dq, xv, xs = start("depthwise_relu6")
    y, yv = conv_block(b, dq, xv, xs, rng.randn(8, 1, 3, 3).astype(np.float32) * 0.5,
                       rng.randn(8).astype(np.float32) * 0.1, stride=2, pad=1, group=8, act="relu6")
    out.append((b, y, yv, {"QLinearConv": 1, "Conv": 0, "Clip": 0}))

    for act, tag in ((np.uint8, "u8"), (np.int8, "s8")):
        b, dq, xv, xs = start(f"residual_add_{tag}", act)
        y, yv = conv_block(b, dq, xv, xs, rng.randn(8, 8, 3, 3).astype(np.float32) * 0.2,
                           rng.randn(8).astype(np.float32) * 0.1, pad=1)
        ydq, yq, _ = b.qdq(y, yv)
        s = b.node("Add", [ydq, dq])
        out.append((b, s, yq + xv, {"QLinearConv": 1, "com.microsoft:QLinearAdd": 1, "Add": 0, "Conv": 0}))

    # Add -> Relu -> Q: the Q's zero point is the minimum, so the Relu goes and the Add folds.
    for act, tag in ((np.uint8, "u8"), (np.int8, "s8")):
        b, dq, xv, xs = start(f"add_relu_{tag}", act)
        dq2, xv2, _ = b.qdq(b.node("Mul", [dq, b.const("k", np.float32(-1.5))]), xv * -1.5)
        r = b.node("Relu", [b.node("Add", [dq, dq2])])
        out.append((b, r, np.maximum(xv + xv2, 0), {"com.microsoft:QLinearAdd": 1, "Relu": 0, "Add": 0}))
    # A Clip narrower than its Q's range stays, and so does the Add before it.
    b, dq, xv, xs = start("clip_kept")
    c = b.node("Clip", [b.node("Add", [dq, dq]), b.const("lo", np.float32(0)), b.const("hi", np.float32(0.5))])
    b.out_params = act_params(2 * xv)
    out.append((b, c, np.clip(2 * xv, 0, 0.5), {"qdq": 0, "Clip": 1, "Add": 1, "com.microsoft:QLinearAdd": 0}))

    b, dq, xv, xs = start("mul")
    dq2, xv2, _ = b.qdq(b.node("Sigmoid", [dq]), 1 / (1 + np.exp(-xv)))
    m = b.node("Mul", [dq, dq2])
    out.append((b, m, xv * xv2, {"com.microsoft:QLinearMul": 1, "com.microsoft:QLinearSigmoid": 1, "Mul": 0}))

    a = rng.rand(1, 16, 32).astype(np.float32) * 2 - 1
    b, dq, av, xs = start("matmul", shape=a.shape)
    w = rng.randn(32, 24).astype(np.float32) * 0.2
    wdq, wv, _ = b.weight(w, axis=1)
    out.append((b, b.node("MatMul", [dq, wdq]), av @ wv, {"QLinearMatMul": 1, "MatMul": 0}))

    a = rng.rand(4, 32).astype(np.float32) * 2 - 1
    b, dq, av, xs = start("gemm_transb", shape=a.shape)
    w = rng.randn(20, 32).astype(np.float32) * 0.2
    wdq, wv, _ = b.weight(w, axis=0)
    out.append((b, b.node("Gemm", [dq, wdq], transB=1), av @ wv.T, {"QLinearMatMul": 1, "Gemm": 0}))

    # Gemm with a bias: com.microsoft's QGemm (an int32 bias as is, a float one quantized).
    b, dq, av, xs = start("gemm_bias", shape=a.shape)
    wdq, wv, ws = b.weight(w, axis=0)
    bias = rng.randn(20).astype(np.float32) * 0.1
    bdq, bv = b.bias(bias, xs, ws)
    out.append((b, b.node("Gemm", [dq, wdq, bdq], transB=1), av @ wv.T + bv, {"com.microsoft:QGemm": 1, "Gemm": 0}))
    b, dq, av, xs = start("gemm_float_bias", shape=a.shape)
    wdq, wv, ws = b.weight(w.T.copy(), axis=1)
    out.append((b, b.node("Gemm", [dq, wdq, b.const("c", bias.reshape(1, 20))]), av @ wv + bias,
                {"com.microsoft:QGemm": 1, "Gemm": 0}))
    # alpha 2 with a bias stays float.
    b, dq, av, xs = start("gemm_alpha", shape=a.shape)
    wdq, wv, ws = b.weight(w, axis=0)
    out.append((b, b.node("Gemm", [dq, wdq, b.const("c", bias)], transB=1, alpha=2.0), 2 * av @ wv.T + bias,
                {"qdq": 0, "Gemm": 1, "com.microsoft:QGemm": 0}))

    b, dq, xv, xs = start("avgpool")
    p = b.node("AveragePool", [dq], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    xp = np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones_like(xv), ((0, 0), (0, 0), (1, 1), (1, 1)))
    tot = sum(xp[:, :, i:i + 12:2, j:j + 12:2] for i in range(3) for j in range(3))
    cnt = sum(ones[:, :, i:i + 12:2, j:j + 12:2] for i in range(3) for j in range(3))
    out.append((b, p, tot / cnt, {"com.microsoft:QLinearAveragePool": 1, "AveragePool": 0}))

    b, dq, xv, xs = start("global_avgpool")
    out.append((b, b.node("GlobalAveragePool", [dq]), xv.mean(axis=(2, 3), keepdims=True),
                {"com.microsoft:QLinearGlobalAveragePool": 1, "GlobalAveragePool": 0}))

    b, dq, xv, xs = start("concat")
    dq2, xv2, _ = b.qdq(b.node("LeakyRelu", [dq], alpha=0.1), np.where(xv >= 0, xv, 0.1 * xv))
    dq3, xv3, _ = b.qdq(b.node("Mul", [dq, b.const("two", np.float32(2.5))]), xv * 2.5)
    c = b.node("Concat", [dq, dq2, dq3], axis=1)
    out.append((b, c, np.concatenate([xv, xv2, xv3], axis=1),
                {"com.microsoft:QLinearConcat": 1, "com.microsoft:QLinearLeakyRelu": 1, "Concat": 0}))

    # MaxPool, Reshape, Transpose between the same scale and zero point.
    b, dq, xv, xs = start("maxpool_reshape")
    params = act_params(xv)
    mp = b.node("MaxPool", [dq], kernel_shape=[2, 2], strides=[2, 2])
    mv = xv.reshape(1, 8, 6, 2, 6, 2).max(axis=(3, 5))
    mdq, mq, _ = b.qdq(mp, mv, params)
    r = b.node("Reshape", [mdq, b.const("shape", np.array([1, 8, 36], np.int64))])
    rdq, rq, _ = b.qdq(r, mq.reshape(1, 8, 36), params)
    t = b.node("Transpose", [rdq], perm=[0, 2, 1])
    b.out_params = params
    out.append((b, t, rq.transpose(0, 2, 1), {"qdq": 1, "MaxPool": 1, "Reshape": 1, "Transpose": 1, "QuantizeLinear": 1,
                                              "DequantizeLinear": 1}))

    # MaxPool 3x3, stride 2, padded, uint8 and int8.
    for act, tag in ((np.uint8, "u8"), (np.int8, "s8")):
        b, dq, xv, xs = start(f"maxpool_padded_{tag}", act)
        mp = b.node("MaxPool", [dq], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        xp = np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        mv = np.max([xp[:, :, i:i + 11:2, j:j + 11:2] for i in range(3) for j in range(3)], axis=0)
        b.out_params = act_params(xv, act)
        out.append((b, mp, mv, {"MaxPool": 1, "QuantizeLinear": 1, "DequantizeLinear": 1}))

    # Pad (constant 0.25), Unsqueeze, Squeeze, Flatten between the same scale and zero point.
    b, dq, xv, xs = start("pad_flatten")
    params = act_params(xv)
    pd = b.node("Pad", [dq, b.const("pads", np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)),
                        b.const("value", np.float32(0.25))], mode="constant")
    pv = np.pad(xv, ((0, 0), (0, 0), (1, 2), (2, 1)), constant_values=0.25)
    pdq, pq, _ = b.qdq(pd, pv, params)
    u = b.node("Unsqueeze", [pdq, b.const("axes", np.array([0], np.int64))])
    udq, uq, _ = b.qdq(u, pq[None], params)
    sq = b.node("Squeeze", [udq, b.const("axes", np.array([0], np.int64))])
    sdq, sqv, _ = b.qdq(sq, uq[0], params)
    fl = b.node("Flatten", [sdq], axis=2)
    b.out_params = params
    out.append((b, fl, sqv.reshape(1 * 8, -1), {"qdq": 1, "Pad": 1, "Unsqueeze": 1, "Squeeze": 1, "Flatten": 1,
                                                 "QuantizeLinear": 1, "DequantizeLinear": 1}))

    # Resize (nearest) up by 2, then down to 9x9 (half_pixel, round_prefer_floor), same scale and zero point.
    b, dq, xv, xs = start("resize_nearest")
    params = act_params(xv)
    r1 = b.node("Resize", [dq, "", b.const("scales", np.array([1, 1, 2, 2], np.float32))], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    r1v = xv.repeat(2, axis=2).repeat(2, axis=3)
    r1dq, r1q, _ = b.qdq(r1, r1v, params)
    r2 = b.node("Resize", [r1dq, "", "", b.const("sizes", np.array([1, 8, 9, 9], np.int64))], mode="nearest")
    pick = np.floor((np.arange(9) + 0.5) * 24 / 9 - 0.5 + 0.5).astype(int)  # round_prefer_floor (no ties here)
    b.out_params = params
    out.append((b, r2, r1q[:, :, pick][:, :, :, pick], {"Resize": 2, "QuantizeLinear": 1, "DequantizeLinear": 1}))

    # The input's scale is computed at run time (its largest value / 255): nothing folds.
    b, dq, xv, xs = start("runtime_scale")
    b.nodes.clear()
    b.inits.clear()
    mx = b.node("ReduceMax", [b.input.name], keepdims=0)
    rs = b.node("Div", [mx, b.const("k", np.float32(255))])
    z = b.const("zp", np.uint8(0))
    rdq = b.node("DequantizeLinear", [b.node("QuantizeLinear", [b.input.name, rs, z]), rs, z])
    s_rt = np.float32(np.max(b.x) / 255)
    xq = dequantize(quantize(b.x, s_rt, np.array(0, np.uint8)), s_rt, np.array(0, np.uint8))
    y, yv = conv_block(b, rdq, xq, s_rt, rng.randn(8, 8, 3, 3).astype(np.float32) * 0.2, None, pad=1)
    out.append((b, y, yv, {"qdq": 0, "Conv": 1, "QLinearConv": 0}))

    # The input's DQ feeds a folded Conv and an Exp that stays float: it stays for the Exp.
    b, dq, xv, xs = start("shared_dq")
    y, yv = conv_block(b, dq, xv, xs, rng.randn(8, 8, 1, 1).astype(np.float32) * 0.3, None)
    ydq, yq, _ = b.qdq(y, yv)
    e = b.node("Exp", [dq])
    out.append((b, b.node("Add", [ydq, e]), yq + np.exp(xv), {"QLinearConv": 1, "Exp": 1, "Add": 1,
                                                              "DequantizeLinear": 3}))
    # A small network: stem, three residual blocks, depthwise and pointwise convs, MaxPool,
    # GlobalAveragePool, Flatten and a classifier Gemm; every op folds.
    b, dq, xv, xs = start("small_net", shape=(1, 16, 56, 56))

    def conv(dq, xv, xs, m, k, act=None, stride=1, group=1):
        c = xv.shape[1]
        w = rng.randn(m, c // group, k, k).astype(np.float32) * np.sqrt(2.0 / (c // group * k * k))
        y, yv = conv_block(b, dq, xv, xs, w, rng.randn(m).astype(np.float32) * 0.05, stride, k // 2, group, act)
        ydq, yq, (ys, _) = b.qdq(y, yv)
        return ydq, yq, ys

    h, hv, hs = conv(dq, xv, xs, 32, 3, "relu")
    for _ in range(3):
        t, tv, ts = conv(h, hv, hs, 32, 3, "relu")
        t, tv, ts = conv(t, tv, ts, 32, 3)
        s_ = b.node("Add", [t, h])
        h, hv, (hs, _) = b.qdq(s_, tv + hv)
    h, hv, hs = conv(h, hv, hs, 32, 3, "relu6", stride=2, group=32)
    h, hv, hs = conv(h, hv, hs, 64, 1, "relu")
    params = act_params(hv)
    mp = b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    mv = hv.reshape(1, 64, 14, 2, 14, 2).max(axis=(3, 5))
    h, hv, (hs, _) = b.qdq(mp, mv, params)
    g = b.node("GlobalAveragePool", [h])
    h, hv, (hs, _) = b.qdq(g, hv.mean(axis=(2, 3), keepdims=True))
    fl = b.node("Flatten", [h])
    h, hv, (hs, _) = b.qdq(fl, hv.reshape(1, 64), act_params(hv))
    wdq, wv, ws = b.weight(rng.randn(10, 64).astype(np.float32) * 0.2, axis=0)
    bdq, bv = b.bias(rng.randn(10).astype(np.float32) * 0.1, hs, ws)
    out.append((b, b.node("Gemm", [h, wdq, bdq], transB=1), hv @ wv.T + bv,
                {"QLinearConv": 9, "com.microsoft:QLinearAdd": 3, "com.microsoft:QGemm": 1, "MaxPool": 1,
                 "com.microsoft:QLinearGlobalAveragePool": 1, "Flatten": 1, "Conv": 0, "Add": 0, "Gemm": 0,
                 "QuantizeLinear": 1, "DequantizeLinear": 1}))
    return out


def contrib_models():
    """The com.microsoft ops themselves (QOperator form), u8 and s8: Q, the op, DQ."""
    out = []
    for dt, tag in ((np.uint8, "u8"), (np.int8, "s8")):
        x = rng.rand(1, 6, 10, 10).astype(np.float32) * 3 - 1

        def start(name):
            b = Builder(f"ms_{name}_{tag}", x, dt)
            s, z = act_params(x, dt)
            sn, zn = b.const("scale", s), b.const("zp", z)
            return b, b.node("QuantizeLinear", [b.input.name, sn, zn]), sn, zn, dequantize(quantize(x, s, z), s, z)

        def close(b, q, yv, s, z):
            b.node("DequantizeLinear", [q, s, z], ["output"])
            o = helper.make_tensor_value_info("output", TensorProto.FLOAT, None)
            g = helper.make_graph(b.nodes, b.name, [b.input], [o], b.inits)
            return b, helper.make_model(g, opset_imports=OPSET, producer_name="make_qdq_models"), float(b.values[s])

        def ms(b, op, inputs, **attrs):
            return b.node(op, inputs, domain="com.microsoft", **attrs)

        b, q, sn, zn, xv = start("add")
        bconst = rng.rand(6, 1, 10).astype(np.float32) - 0.5
        bs, bz = act_params(bconst, dt)
        bq = b.const("b", quantize(bconst, bs, bz))
        ys, yz = act_params(xv + bconst, dt)
        ysn, yzn = b.const("ys", ys), b.const("yz", yz)
        out.append(close(b, ms(b, "QLinearAdd", [q, sn, zn, bq, b.const("bs", bs), b.const("bz", bz), ysn, yzn]),
                         None, ysn, yzn))
        b, q, sn, zn, xv = start("mul")
        bq = b.const("b", quantize(bconst, bs, bz))
        ys, yz = act_params(xv * bconst, dt)
        ysn, yzn = b.const("ys", ys), b.const("yz", yz)
        out.append(close(b, ms(b, "QLinearMul", [q, sn, zn, bq, b.const("bs", bs), b.const("bz", bz), ysn, yzn]),
                         None, ysn, yzn))
        b, q, sn, zn, xv = start("avgpool")
        ysn, yzn = b.const("ys", np.float32(float(act_params(xv, dt)[0]) * 0.7)), b.const("yz", act_params(xv, dt)[1])
        out.append(close(b, ms(b, "QLinearAveragePool", [q, sn, zn, ysn, yzn], kernel_shape=[3, 3], strides=[2, 2],
                               pads=[1, 1, 1, 1], count_include_pad=1), None, ysn, yzn))
        b, q, sn, zn, xv = start("avgpool_nhwc")
        ysn, yzn = b.const("ys", np.float32(float(act_params(xv, dt)[0]) * 0.8)), b.const("yz", act_params(xv, dt)[1])
        out.append(close(b, ms(b, "QLinearAveragePool", [q, sn, zn, ysn, yzn], kernel_shape=[2, 3], strides=[2, 1],
                               pads=[0, 1, 1, 0], channels_last=1), None, ysn, yzn))
        b, q, sn, zn, xv = start("global_avgpool_nhwc")
        ys, yz = act_params(xv.mean(axis=(1, 2)), dt)
        ysn, yzn = b.const("ys", ys), b.const("yz", yz)
        out.append(close(b, ms(b, "QLinearGlobalAveragePool", [q, sn, zn, ysn, yzn], channels_last=1), None, ysn, yzn))
        b, q, sn, zn, xv = start("global_avgpool")
        ys, yz = act_params(xv.mean(axis=(2, 3)), dt)
        ysn, yzn = b.const("ys", ys), b.const("yz", yz)
        out.append(close(b, ms(b, "QLinearGlobalAveragePool", [q, sn, zn, ysn, yzn]), None, ysn, yzn))
        b, q, sn, zn, xv = start("concat")
        ys, yz = act_params(np.concatenate([xv.ravel(), bconst.ravel() * 4]), dt)
        ysn, yzn = b.const("ys", ys), b.const("yz", yz)
        b2 = b.const("b2", quantize(np.broadcast_to(bconst * 4, (1, 6, 10, 10)), np.float32(bs * 4), bz))
        b2s, b2z = b.const("b2s", np.float32(bs * 4)), b.const("b2z", bz)
        out.append(close(b, ms(b, "QLinearConcat", [ysn, yzn, q, sn, zn, b2, b2s, b2z], axis=-1), None, ysn, yzn))
        b, q, sn, zn, xv = start("sigmoid")
        ys, yz = act_params(1 / (1 + np.exp(-xv)), dt)
        ysn, yzn = b.const("ys", ys), b.const("yz", yz)
        out.append(close(b, ms(b, "QLinearSigmoid", [q, sn, zn, ysn, yzn]), None, ysn, yzn))
        # QGemm on the input seen as [6, 100]: quantized Y, then float Y (no y_scale, y_zero_point).
        for float_y in (False, True):
            b, q, sn, zn, xv = start("qgemm_float" if float_y else "qgemm")
            a2 = b.node("Reshape", [q, b.const("shape", np.array([6, 100], np.int64))])
            wq, ws, wz = weight_params(rng.randn(12, 100).astype(np.float32) * 0.1, axis=0)
            cq = rng.randint(-2000, 2000, size=12).astype(np.int32)
            yv = (xv.reshape(6, 100) @ (wq.astype(np.float32) * ws[:, None]).T) + cq * float(b.values[sn]) * ws
            ins = [a2, sn, zn, b.const("b", wq), b.const("bs", ws), b.const("bz", wz), b.const("c", cq)]
            if float_y:
                b.node("QGemm", ins, ["output"], domain="com.microsoft", transB=1)
                o = helper.make_tensor_value_info("output", TensorProto.FLOAT, None)
                gr = helper.make_graph(b.nodes, b.name, [b.input], [o], b.inits)
                # The step: float Y is exact up to float rounding; one step of a fine scale.
                out.append((b, helper.make_model(gr, opset_imports=OPSET, producer_name="make_qdq_models"),
                            float(np.max(np.abs(yv))) * 1e-5))
                continue
            ys, yz = act_params(yv, dt)
            ysn, yzn = b.const("ys", ys), b.const("yz", yz)
            out.append(close(b, ms(b, "QGemm", ins + [ysn, yzn], transB=1), None, ysn, yzn))
        b, q, sn, zn, xv = start("leaky_relu")
        ysn, yzn = sn, zn
        out.append(close(b, ms(b, "QLinearLeakyRelu", [q, sn, zn, ysn, yzn], alpha=0.2), None, ysn, yzn))
    return out


def bad_models():
    """com.microsoft nodes reel must refuse at load, naming them: (builder, model, node name)."""
    out = []
    x = rng.rand(1, 4, 6, 6).astype(np.float32)

    def make(name, op, extra, **attrs):
        b = Builder(f"bad_{name}", x)
        s, z = act_params(x)
        sn, zn = b.const("scale", s), b.const("zp", z)
        q = b.node("QuantizeLinear", [b.input.name, sn, zn])
        y = b.node(op, extra(b, q, sn, zn), domain="com.microsoft", **attrs)
        node = b.nodes[-1].name
        b.node("DequantizeLinear", [y, sn, zn], ["output"])
        o = helper.make_tensor_value_info("output", TensorProto.FLOAT, None)
        g = helper.make_graph(b.nodes, b.name, [b.input], [o], b.inits)
        out.append((b, helper.make_model(g, opset_imports=OPSET, producer_name="make_qdq_models"), node))

    make("avgpool_channels_last", "QLinearAveragePool", lambda b, q, s, z: [q, s, z, s, z], kernel_shape=[2, 2],
         channels_last=2)
    make("add_types", "QLinearAdd",
         lambda b, q, s, z: [q, s, z, b.const("b", np.zeros((4, 1, 1), np.int8)), s, b.const("bz", np.int8(0)), s, z])
    make("concat_no_axis", "QLinearConcat", lambda b, q, s, z: [s, z, q, s, z, q, s, z])
    make("sigmoid_vector_scale", "QLinearSigmoid",
         lambda b, q, s, z: [q, b.const("s2", np.array([0.1, 0.2], np.float32)), z, s, z])
    make("qgemm_y_scale_alone", "QGemm",
         lambda b, q, s, z: [b.node("Reshape", [q, b.const("shape", np.array([4, 36], np.int64))]), s, z,
                             b.const("w", np.ones((36, 3), np.int8)), s, b.const("wz", np.int8(0)), "", s])
    return out


def write(d):
    os.makedirs(d, exist_ok=True)
    lines = []
    for b, y, yv, expect in models():
        model, step = b.finish(y, yv, b.out_params)
        save(model, os.path.join(d, b.name + ".onnx"))
        np.save(os.path.join(d, b.name + ".npy"), b.x)
        expect.setdefault("qdq", 1)  # whether `reel model info` reports a fold
        lines.append(" ".join([b.name, repr(step)] + [f"{k}={v}" for k, v in expect.items()]))
    for b, model, step in contrib_models():
        save(model, os.path.join(d, b.name + ".onnx"))
        np.save(os.path.join(d, b.name + ".npy"), b.x)
        lines.append(f"{b.name} {step!r}")
    with open(os.path.join(d, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(d, "refusals.txt"), "w") as f:
        for b, model, node in bad_models():
            save(model, os.path.join(d, b.name + ".onnx"))
            f.write(f"{b.name} {node}\n")


def compare(a_dir, b_dir, step):
    bad = 0
    for name in sorted(f for f in os.listdir(b_dir) if f.endswith(".npy")):
        ref = np.load(os.path.join(b_dir, name))
        ours = np.load(os.path.join(a_dir, name))
        if ours.shape != ref.shape:
            print(f"  {name}: shape {ours.shape}, reference {ref.shape}")
            bad += 1
            continue
        err = float(np.max(np.abs(ours.astype(np.float64) - ref))) / step
        off = int(np.sum(np.abs(ours.astype(np.float64) - ref) > step * 1e-3))
        ok = err <= 1.0 + 1e-3
        bad += not ok
        print(f"  {name}: {ref.shape} max difference {err:.3f} steps, {off} of {ref.size} values differ "
              f"{'ok' if ok else 'TOO LARGE'}")
    return bad


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "compare":
        sys.exit(1 if compare(sys.argv[2], sys.argv[3], float(sys.argv[4])) else 0)
    write(sys.argv[1])

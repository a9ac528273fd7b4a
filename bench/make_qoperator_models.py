# Builds QOperator (QLinearConv) versions of the MobileNetV2- and
# ResNet-18-shaped models of tests/models/make_shaped_models.py for
# bench/qmodels: the same convs, shapes and connections, every conv a
# QLinearConv (uint8 activations, int8 weights with a scale per output
# channel, int32 bias). Relu and Relu6 are the output's range, as ONNX
# Runtime's quantizer makes them: zero point 0, scale max/255, so
# saturation clamps. Residual Adds and the head run in float between
# DequantizeLinear and QuantizeLinear; the classifier is a QLinearMatMul.
# Random weights (fixed seed): the speed, not the answers, is the point.
#   /usr/bin/python3 make_qoperator_models.py OUT_DIR
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(20261207)


class QNet:
    def __init__(self, name):
        self.name, self.nodes, self.inits, self.n = name, [], [], 0

    def fresh(self, what):
        self.n += 1
        return f"{what}_{self.n}"

    def const(self, array, what="c"):
        name = self.fresh(what)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=self.fresh(op_type), **attrs))
        return out

    def qparams(self, act):
        # (scale, zero point) of an activation: Relu's [0, 8), Relu6's [0, 6], else [-8, 8).
        if act == "relu":
            return 8.0 / 255, 0
        if act == "relu6":
            return 6.0 / 255, 0
        return 16.0 / 255, 128

    def conv(self, x, xq, cin, cout, k=1, s=1, groups=1, act="relu"):
        """x: a uint8 tensor with quantization xq = (scale, zp); returns (y, yq)."""
        fan_in = cin // groups * k * k
        w = rng.randn(cout, cin // groups, k, k) / np.sqrt(fan_in)
        wscale = (np.abs(w).reshape(cout, -1).max(axis=1) / 127).astype(np.float32)
        wq = np.clip(np.round(w / wscale[:, None, None, None]), -127, 127).astype(np.int8)
        bias = np.round(0.1 * rng.randn(cout) / (xq[0] * wscale)).astype(np.int32)
        yq = self.qparams(act)
        y = self.op("QLinearConv", [x, self.const(np.float32(xq[0]), "xs"), self.const(np.uint8(xq[1]), "xz"),
                                    self.const(wq, "w"), self.const(wscale, "ws"),
                                    self.const(np.zeros(cout, np.int8), "wz"),
                                    self.const(np.float32(yq[0]), "ys"), self.const(np.uint8(yq[1]), "yz"),
                                    self.const(bias, "b")],
                    kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=groups)
        return y, yq

    def dq(self, x, xq):
        return self.op("DequantizeLinear", [x, self.const(np.float32(xq[0]), "s"), self.const(np.uint8(xq[1]), "z")])

    def q(self, x, xq):
        return self.op("QuantizeLinear", [x, self.const(np.float32(xq[0]), "s"), self.const(np.uint8(xq[1]), "z")])

    def add(self, a, aq, b, bq, act=None):
        y = self.op("Add", [self.dq(a, aq), self.dq(b, bq)])
        if act == "relu":
            y = self.op("Relu", [y])
        yq = self.qparams(act)
        return self.q(y, yq), yq

    def head(self, x, xq, cin):
        x = self.op("Flatten", [self.op("GlobalAveragePool", [self.dq(x, xq)])], axis=1)
        hq = (8.0 / 255, 0)
        w = rng.randn(cin, 1000) * 0.02
        ws = np.float32(np.abs(w).max() / 127)
        y = self.op("QLinearMatMul", [self.q(x, hq), self.const(np.float32(hq[0]), "as"),
                                      self.const(np.uint8(hq[1]), "az"),
                                      self.const(np.clip(np.round(w / ws), -127, 127).astype(np.int8), "w"),
                                      self.const(ws, "ws"), self.const(np.int8(0), "wz"),
                                      self.const(np.float32(16.0 / 255), "ys"), self.const(np.uint8(128), "yz")])
        return self.op("DequantizeLinear", [y, self.const(np.float32(16.0 / 255), "s"),
                                            self.const(np.uint8(128), "z")])

    def save(self, x_shape, y, out_dir):
        graph = helper.make_graph(
            self.nodes, self.name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, x_shape)],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 1000])], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="reel")
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out_dir, self.name + ".onnx"))


def mobilenet_v2(out_dir):
    m = QNet("mobilenetv2-224-qop")
    inq = (1.0 / 255, 0)
    x, xq = m.conv(m.q("input", inq), inq, 3, 32, 3, 2, act="relu6")
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            hidden = cin * t
            y, yq = m.conv(x, xq, cin, hidden, 1, act="relu6") if t != 1 else (x, xq)
            y, yq = m.conv(y, yq, hidden, hidden, 3, s if i == 0 else 1, groups=hidden, act="relu6")
            y, yq = m.conv(y, yq, hidden, c, 1, act=None)
            x, xq = m.add(x, xq, y, yq) if i > 0 and cin == c else (y, yq)
            cin = c
    x, xq = m.conv(x, xq, cin, 1280, 1, act="relu6")
    m.save([1, 3, 224, 224], m.head(x, xq, 1280), out_dir)


def resnet18(out_dir):
    m = QNet("resnet18-224-qop")
    inq = (1.0 / 255, 0)
    x, xq = m.conv(m.q("input", inq), inq, 3, 64, 7, 2)
    # MaxPool in float: reel's MaxPool takes float32 only.
    x = m.q(m.op("MaxPool", [m.dq(x, xq)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), xq)
    cin = 64
    for c, s in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for i in range(2):
            stride = s if i == 0 else 1
            y, yq = m.conv(x, xq, cin, c, 3, stride)
            y, yq = m.conv(y, yq, c, c, 3, 1, act=None)
            short, sq = m.conv(x, xq, cin, c, 1, stride, act=None) if stride != 1 or cin != c else (x, xq)
            x, xq = m.add(y, yq, short, sq, act="relu")
            cin = c
    m.save([1, 3, 224, 224], m.head(x, xq, 512), out_dir)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mobilenet_v2(out)
    resnet18(out)
    print("\n".join(sorted(f for f in os.listdir(out) if f.endswith("-qop.onnx"))))

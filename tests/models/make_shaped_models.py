# Builds ONNX models with the structure of MobileNetV2, ResNet-18 and YOLOv8n
# (random weights, fixed seed) for tests and benchmarks: the same operators,
# shapes and connections as the real networks, none of their training.
#   /usr/bin/python3 make_shaped_models.py OUT_DIR
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.RandomState(20261129)


class Net:
    def __init__(self, name):
        self.name, self.nodes, self.inits, self.n = name, [], [], 0

    def fresh(self, what):
        self.n += 1
        return f"{what}_{self.n}"

    def const(self, array, what="w"):
        name = self.fresh(what)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.fresh(op_type), **attrs))
        return outs[0] if n_out == 1 else outs

    def conv(self, x, cin, cout, k=1, s=1, groups=1, bn=True, act="relu", bias=False):
        fan_in = cin // groups * k * k
        w = self.const((rng.randn(cout, cin // groups, k, k) / np.sqrt(fan_in)).astype(np.float32))
        inputs = [x, w] + ([self.const(rng.randn(cout).astype(np.float32) * 0.1, "b")] if bias else [])
        y = self.op("Conv", inputs, kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4, group=groups)
        if bn:
            scale = self.const((1 + 0.1 * rng.randn(cout)).astype(np.float32), "gamma")
            shift = self.const((0.1 * rng.randn(cout)).astype(np.float32), "beta")
            mean = self.const((0.1 * rng.randn(cout)).astype(np.float32), "mean")
            var = self.const((1 + 0.1 * rng.rand(cout)).astype(np.float32), "var")
            y = self.op("BatchNormalization", [y, scale, shift, mean, var], epsilon=1e-5)
        if act == "relu":
            y = self.op("Relu", [y])
        elif act == "relu6":
            y = self.op("Clip", [y, self.const(np.float32(0), "lo"), self.const(np.float32(6), "hi")])
        elif act == "silu":
            y = self.op("Mul", [y, self.op("Sigmoid", [y])])
        return y

    def save(self, x_shape, y, out_dir, opset=13):
        graph = helper.make_graph(
            self.nodes, self.name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, x_shape)],
            [onnx.ValueInfoProto(name=y)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="reel")
        # The output's type and shape, as ONNX's own shape inference finds them.
        inferred = onnx.shape_inference.infer_shapes(model)
        info = next(v for v in inferred.graph.value_info if v.name == y)
        model.graph.output[0].CopyFrom(info)
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out_dir, self.name + ".onnx"))


def mobilenet_v2(out_dir):
    m = Net("mobilenetv2-224")
    x = m.conv("input", 3, 32, 3, 2, act="relu6")
    cin = 32
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                       (6, 320, 1, 1)]:
        for i in range(n):
            hidden = cin * t
            y = m.conv(x, cin, hidden, 1, act="relu6") if t != 1 else x
            y = m.conv(y, hidden, hidden, 3, s if i == 0 else 1, groups=hidden, act="relu6")
            y = m.conv(y, hidden, c, 1, act=None)
            x = m.op("Add", [x, y]) if i > 0 and cin == c else y
            cin = c
    x = m.conv(x, cin, 1280, 1, act="relu6")
    x = m.op("Flatten", [m.op("GlobalAveragePool", [x])], axis=1)
    w = m.const((rng.randn(1000, 1280) * 0.02).astype(np.float32))
    y = m.op("Gemm", [x, w, m.const(np.zeros(1000, np.float32), "b")], transB=1)
    m.save([1, 3, 224, 224], y, out_dir)


def resnet18(out_dir):
    m = Net("resnet18-224")
    x = m.conv("input", 3, 64, 7, 2)
    x = m.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for c, s in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for i in range(2):
            stride = s if i == 0 else 1
            y = m.conv(x, cin, c, 3, stride)
            y = m.conv(y, c, c, 3, 1, act=None)
            short = m.conv(x, cin, c, 1, stride, act=None) if stride != 1 or cin != c else x
            x = m.op("Relu", [m.op("Add", [y, short])])
            cin = c
    x = m.op("Flatten", [m.op("GlobalAveragePool", [x])], axis=1)
    w = m.const((rng.randn(1000, 512) * 0.02).astype(np.float32))
    y = m.op("Gemm", [x, w, m.const(np.zeros(1000, np.float32), "b")], transB=1)
    m.save([1, 3, 224, 224], y, out_dir)


def yolov8n_features(m):
    """YOLOv8n's backbone and neck on m's "input": the features at strides 8, 16 and 32 (64, 128, 256 channels)."""
    def c2f(x, cin, cout, n, shortcut):
        half = cout // 2
        y = m.conv(x, cin, cout, 1, act="silu")
        parts = m.op("Split", [y, m.const(np.array([half, half], np.int64), "split")], n_out=2, axis=1)
        outs = list(parts)
        cur = parts[1]
        for _ in range(n):
            z = m.conv(m.conv(cur, half, half, 3, act="silu"), half, half, 3, act="silu")
            cur = m.op("Add", [cur, z]) if shortcut else z
            outs.append(cur)
        return m.conv(m.op("Concat", outs, axis=1), half * (2 + n), cout, 1, act="silu")

    x = m.conv("input", 3, 16, 3, 2, act="silu")
    x = m.conv(x, 16, 32, 3, 2, act="silu")
    x = c2f(x, 32, 32, 1, True)
    x = m.conv(x, 32, 64, 3, 2, act="silu")
    p3 = c2f(x, 64, 64, 2, True)
    x = m.conv(p3, 64, 128, 3, 2, act="silu")
    p4 = c2f(x, 128, 128, 2, True)
    x = m.conv(p4, 128, 256, 3, 2, act="silu")
    x = c2f(x, 256, 256, 1, True)
    # SPPF: three chained max pools, concatenated.
    y = m.conv(x, 256, 128, 1, act="silu")
    pools = [y]
    for _ in range(3):
        pools.append(m.op("MaxPool", [pools[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]))
    p5 = m.conv(m.op("Concat", pools, axis=1), 512, 256, 1, act="silu")
    scales = m.const(np.array([1, 1, 2, 2], np.float32), "scales")

    def up(t):
        return m.op("Resize", [t, "", scales], mode="nearest")

    h4 = c2f(m.op("Concat", [up(p5), p4], axis=1), 384, 128, 1, False)
    h3 = c2f(m.op("Concat", [up(h4), p3], axis=1), 192, 64, 1, False)
    return h3, h4, p5


def yolov8n(out_dir, size=320):
    m = Net("yolov8n-%d" % size)
    h3, h4, p5 = yolov8n_features(m)
    outs = []
    for feat, ch in [(h3, 64), (h4, 128), (p5, 256)]:
        box = m.conv(m.conv(m.conv(feat, ch, 64, 3, act="silu"), 64, 64, 3, act="silu"), 64, 64, 1, bn=False,
                     act=None, bias=True)
        cls = m.conv(m.conv(m.conv(feat, ch, 80, 3, act="silu"), 80, 80, 3, act="silu"), 80, 80, 1, bn=False,
                     act=None, bias=True)
        both = m.op("Concat", [box, cls], axis=1)
        outs.append(m.op("Reshape", [both, m.const(np.array([1, 144, -1], np.int64), "shape")]))
    y = m.op("Concat", outs, axis=2)
    m.save([1, 3, size, size], y, out_dir)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mobilenet_v2(out)
    resnet18(out)
    yolov8n(out)
    print("\n".join(sorted(f for f in os.listdir(out) if f.endswith(".onnx"))))

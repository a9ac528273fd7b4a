# Builds the models test_segpose runs (python3-onnx):
#   seg-known.onnx, pose-known.onnx   input [1, 3, 160, 160]; outputs that do
#       not depend on the image (constants plus 0 * the image's mean), so
#       that the boxes, masks and keypoints they encode are known exactly
#       (the values are in KNOWN below; test_segpose.c states the same in
#       frame pixels)
#   yolov8n-seg-640.onnx, yolov8n-pose-640.onnx   YOLOv8n's backbone and
#       neck (make_shaped_models.py) with seg and pose heads of the real
#       output shapes, random weights: [1, 116, 8400] and prototypes
#       [1, 32, 160, 160]; [1, 56, 8400]
#   /usr/bin/python3 make_segpose_models.py OUT_DIR
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_shaped_models import Net, rng, yolov8n_features  # noqa: E402

SIZE, ANCHORS, CLASSES, COEFFS, STRIDE = 160, 8, 3, 32, 4

# Keypoints of person A in model-input pixels (COCO order: nose, eyes, ears,
# shoulders, elbows, wrists, hips, knees, ankles, left before right).
POSE_A = [(50, 32), (53, 29), (47, 29), (56, 31), (44, 31), (60, 42), (40, 42), (64, 55), (36, 55), (66, 68),
          (34, 68), (56, 70), (44, 70), (57, 83), (43, 83), (58, 96), (42, 96)]


def save(name, nodes, inits, outputs, out_dir):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("images", TensorProto.FLOAT,
                                                                          [1, 3, SIZE, SIZE])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(v.shape))
                               for n, v in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="reel")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name + ".onnx"))


def constant_model(name, outputs, out_dir):
    """Outputs `outputs` ([(name, array)]) whatever the image: each is its
    constant plus 0 * mean(image), so the graph still reads its input."""
    nodes = [helper.make_node("ReduceMean", ["images"], ["mean"], keepdims=1),
             helper.make_node("Mul", ["mean", "zero"], ["nothing"])]
    inits = [numpy_helper.from_array(np.zeros([1, 1, 1, 1], np.float32), "zero"),
             numpy_helper.from_array(np.array([1, 1, 1], np.int64), "rank3")]
    nodes.append(helper.make_node("Reshape", ["nothing", "rank3"], ["nothing3"]))
    for out, value in outputs:
        inits.append(numpy_helper.from_array(value.astype(np.float32), out + "_value"))
        nodes.append(helper.make_node("Add", [out + "_value", "nothing3" if value.ndim == 3 else "nothing"], [out]))
    save(name, nodes, inits, outputs, out_dir)


def seg_known(out_dir):
    rows = 4 + CLASSES + COEFFS
    v = np.zeros([rows, ANCHORS], np.float32)
    v[4:4 + CLASSES, :] = 0.05  # anchors 3..7 score too low to keep

    def anchor(j, cx, cy, w, h, cls, score, coeffs):
        v[0:4, j] = [cx, cy, w, h]
        v[4 + cls, j] = score
        v[4 + CLASSES:4 + CLASSES + len(coeffs), j] = coeffs

    # Prototypes over the input at stride 4, values at pixel centres:
    # 0: 1, 1: x, 2: y, 3: x^2 + y^2 (model-input pixels); the rest noise no
    # kept box uses.
    c = (np.arange(SIZE // STRIDE, dtype=np.float32) + 0.5) * STRIDE
    y, x = np.meshgrid(c, c, indexing="ij")
    protos = rng.randn(COEFFS, SIZE // STRIDE, SIZE // STRIDE).astype(np.float32)
    protos[0], protos[1], protos[2], protos[3] = 1, x, y, x * x + y * y
    # A: box (20, 30)-(80, 90), class 0, a disc of radius 25 at (50, 60):
    # 25^2 - (x - 50)^2 - (y - 60)^2 > 0.
    anchor(0, 50, 60, 60, 60, 0, 0.9, [25 ** 2 - 50 ** 2 - 60 ** 2, 100, 120, -1])
    # A's weaker duplicate, all on: NMS must drop it.
    anchor(1, 52, 61, 60, 60, 0, 0.8, [1000])
    # B: box (90, 40)-(150, 120), class 2, its left part x < 120.
    anchor(2, 120, 80, 60, 80, 2, 0.7, [120, -1])
    constant_model("seg-known", [("output0", v[None]), ("output1", protos[None])], out_dir)


def pose_known(out_dir):
    v = np.zeros([5 + 3 * 17, ANCHORS], np.float32)
    v[4, :] = 0.01

    def person(j, cx, cy, score, dx, dy, low):
        v[0:5, j] = [cx, cy, 40, 80, score]
        for k, (kx, ky) in enumerate(POSE_A):
            v[5 + 3 * k:8 + 3 * k, j] = [kx + dx, ky + dy, 0.2 if k in low else 0.9]

    person(0, 50, 60, 0.9, 0, 0, (3, 4))  # A: ears unsure
    person(1, 120, 80, 0.8, 70, 20, (0,))  # B: A moved by (70, 20), nose unsure
    constant_model("pose-known", [("output0", v[None])], out_dir)


def shaped(name, head, out_dir, size=640):
    """YOLOv8n at size x size with `head`(m, features) giving its outputs."""
    m = Net(name)
    outs = head(m, yolov8n_features(m), size)
    graph = helper.make_graph(m.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                            [1, 3, size, size])],
                              [onnx.ValueInfoProto(name=o) for o in outs], m.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="reel")
    inferred = onnx.shape_inference.infer_shapes(model)
    for i, o in enumerate(outs):
        model.graph.output[i].CopyFrom(next(v for v in inferred.graph.value_info if v.name == o))
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name + ".onnx"))


def per_scale(m, feats, parts, size):
    """Per scale, branches of (channels, finish) concatenated, flattened to
    [1, rows, cells] and joined over the scales: [1, rows, 8400] at 640."""
    outs = []
    rows = sum(ch for ch, _ in parts)
    for feat, ch in zip(feats, (64, 128, 256)):
        branch = []
        for cout, finish in parts:
            y = m.conv(m.conv(m.conv(feat, ch, 64, 3, act="silu"), 64, 64, 3, act="silu"), 64, cout, 1, bn=False,
                       act=None, bias=True)
            branch.append(finish(y))
        outs.append(m.op("Reshape", [m.op("Concat", branch, axis=1), m.const(np.array([1, rows, -1], np.int64))]))
    return m.op("Concat", outs, axis=2)


def in_pixels(m, size):
    # Boxes and keypoint positions inside the input, as decoded YOLOv8 gives.
    return lambda y: m.op("Mul", [m.op("Sigmoid", [y]), m.const(np.float32(size))])


def seg_head(m, feats, size):
    out0 = per_scale(m, feats, [(4, in_pixels(m, size)), (80, lambda y: m.op("Sigmoid", [y])), (32, lambda y: y)],
                     size)
    # Prototypes: stride 8 features up to stride 4, 32 channels.
    p = m.conv(feats[0], 64, 64, 3, act="silu")
    p = m.op("Resize", [p, "", m.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    p = m.conv(m.conv(p, 64, 64, 3, act="silu"), 64, 32, 1, act="silu")
    return [out0, p]


def pose_head(m, feats, size):
    scale = np.tile(np.array([size, size, 1], np.float32), 17).reshape(1, 51, 1, 1)
    kpts = lambda y: m.op("Mul", [m.op("Sigmoid", [y]), m.const(scale)])  # noqa: E731
    return [per_scale(m, feats, [(4, in_pixels(m, size)), (1, lambda y: m.op("Sigmoid", [y])), (51, kpts)], size)]


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seg_known(out)
    pose_known(out)
    shaped("yolov8n-seg-640", seg_head, out)
    shaped("yolov8n-pose-640", pose_head, out)
    print("\n".join(sorted(f for f in os.listdir(out) if f.endswith(".onnx"))))

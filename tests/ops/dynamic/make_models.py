# Writes the small models test_dynamic_shapes loads: output sizes that
# depend on values computed in the graph. Run: python3 make_models.py DIR
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

out = sys.argv[1] if len(sys.argv) > 1 else "."


def save(name, nodes, inputs, outputs, inits=()):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{name}.onnx")


def c(name, a):
    return nh.from_array(np.array(a), name)


# The positive elements of x, through NonZero on a computed mask.
save("nonzero_gather",
     [h.make_node("Greater", ["x", "zero"], ["mask"]),
      h.make_node("NonZero", ["mask"], ["idx"]),
      h.make_node("Gather", ["x", "idx"], ["y"], axis=0)],
     [h.make_tensor_value_info("x", T.FLOAT, ["n"])],
     [h.make_tensor_value_info("y", T.FLOAT, [1, "k"])],
     [c("zero", np.float32(0))])

# Range(0, len(x) + max(x)): the limit from a Shape and from values.
save("range_shape",
     [h.make_node("Shape", ["x"], ["s"]),
      h.make_node("Gather", ["s", "i0"], ["len"], axis=0),
      h.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
      h.make_node("Cast", ["mx"], ["mxi"], to=T.INT64),
      h.make_node("Add", ["len", "mxi"], ["lim"]),
      h.make_node("Range", ["i0", "lim", "one"], ["y"])],
     [h.make_tensor_value_info("x", T.FLOAT, ["n"])],
     [h.make_tensor_value_info("y", T.INT64, ["k"])],
     [c("i0", np.int64(0)), c("one", np.int64(1))])

# NMS over computed boxes and scores, then the boxes it kept.
save("nms_gather",
     [h.make_node("Mul", ["b", "k"], ["boxes"]),
      h.make_node("Sigmoid", ["s"], ["scores"]),
      h.make_node("NonMaxSuppression", ["boxes", "scores", "maxo", "iou", "thr"], ["sel"]),
      h.make_node("Gather", ["sel", "i2"], ["bi"], axis=1),
      h.make_node("Squeeze", ["boxes", "ax0"], ["bx"]),
      h.make_node("Gather", ["bx", "bi"], ["y"], axis=0)],
     [h.make_tensor_value_info("b", T.FLOAT, [1, "n", 4]),
      h.make_tensor_value_info("s", T.FLOAT, [1, 1, "n"])],
     [h.make_tensor_value_info("y", T.FLOAT, ["k", 4])],
     [c("k", np.float32(2)), c("maxo", np.array([10], np.int64)), c("iou", np.array([0.5], np.float32)),
      c("thr", np.array([0.0], np.float32)), c("i2", np.int64(2)), c("ax0", np.array([0], np.int64))])

# Nothing dynamic.
save("static",
     [h.make_node("Relu", ["x"], ["r"]), h.make_node("Add", ["r", "x"], ["y"])],
     [h.make_tensor_value_info("x", T.FLOAT, ["n"])],
     [h.make_tensor_value_info("y", T.FLOAT, ["n"])])

# Range(0, 4, max(x)): a computed delta of 0 fails at run time.
save("range_delta",
     [h.make_node("ReduceMax", ["x"], ["mx"], keepdims=0),
      h.make_node("Cast", ["mx"], ["d"], to=T.INT64),
      h.make_node("Range", ["i0", "four", "d"], ["y"], name="the_range")],
     [h.make_tensor_value_info("x", T.FLOAT, ["n"])],
     [h.make_tensor_value_info("y", T.INT64, ["k"])],
     [c("i0", np.int64(0)), c("four", np.int64(4))])

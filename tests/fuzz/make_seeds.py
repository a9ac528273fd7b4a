#!/usr/bin/python3
# Writes the seed corpora under corpus/ (run once; the files are committed).
# parse: descriptions covering the syntax and its errors; onnx: small models
# made with the onnx helper; json: frames in fuzz_json.c's binary layout.
import os
import struct
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

here = os.path.dirname(os.path.abspath(__file__))
corpus = os.path.join(here, "corpus")

PARSE = {
    "link": "testsrc ! fakesink",
    "chain": "testsrc num-buffers=10 pattern=bars ! identity ! queue max-size=4 ! fakesink name=out",
    "caps": "testsrc ! video/raw,format=rgb24,width=320,height=240,framerate=30/1 ! fakesink",
    "caps-alternatives": "testsrc ! video/raw, format=rgb24|bgr24,\n   width=320 ! any ! fakesink",
    "caps-tensor": "appsrc ! tensor,dtype=float32,shape=1x3x224x224 ! fakesink",
    "caps-memory": "testsrc ! upload ! video/raw,memory=device ! download ! fakesink",
    "tee": "testsrc ! tee name=t\nt. ! queue ! fakesink\nt. ! queue leaky=downstream ! fakesink",
    "ref-forward": "t. ! fakesink  testsrc ! mid. ! fakesink  identity name=mid ! t.",
    "funnel": "testsrc ! f.  testsrc ! f.  funnel name=f ! fakesink",
    "quotes": "testsrc ! fakesink name=\"a b\" checksum='true'",
    "escapes": "testsrc ! metasink location=\"x\\\"y\\\\z\\n\\t.jsonl\"",
    "comments": "testsrc#comment\n!fakesink#x=1\n# only a comment\n",
    "multiline": "testsrc\n  num-buffers=5 # five\n  is-live=true\n! fakesink",
    "crlf": "testsrc ! identity\r\n! fakesink\r\n",
    "settings": "device=cpu placement=auto memory-budget=64M testsrc ! fakesink",
    "utf8": "testsrc ! h\xc3\xa9llo",
    "tabs": "testsrc\t!\tfake\tsink",
    "err-unknown": "testsrc ! nosuchthing",
    "err-typo": "testsrc ! fakesnk",
    "err-dangling": "testsrc !",
    "err-double-link": "testsrc ! ! fakesink",
    "err-leading-link": "! fakesink",
    "err-unterminated": "fakesink location='a b ! identity",
    "err-prop": "testsrc num-bufers=3 ! fakesink",
    "err-value": "testsrc pattern=bars num-buffers=ten ! fakesink",
    "err-enum": "testsrc ! queue leaky=sideways ! fakesink",
    "err-caps": "testsrc ! video/raw width=320 ! fakesink",
    "err-name-twice": "testsrc ! fakesink name=a\ntestsrc ! fakesink name=a",
    "err-unknown-ref": "testsrc ! zz.",
    "err-ref-alone": "testsrc ! tee name=t\n  t.",
    "err-setting": "devic=cpu testsrc ! fakesink",
    "err-char": "testsrc ! fake$sink",
    "err-comma": "testsrc ! , ! fakesink",
    "infer": "testsrc ! preprocess ! infer model=blazeface ! detect ! track ! overlay ! metasink location=-",
    "streams": "testsrc stream-id=0 ! b.  testsrc stream-id=1 ! b.  batch name=b ! fakesink",
}


def write(kind, name, data):
    d = os.path.join(corpus, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="seed")
    m.ir_version = 8
    return m.SerializeToString()


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def onnx_seeds():
    f32 = lambda name, a: numpy_helper.from_array(np.asarray(a, dtype=np.float32), name)
    i64 = lambda name, a: numpy_helper.from_array(np.asarray(a, dtype=np.int64), name)
    rng = np.random.default_rng(1)
    yield "relu", model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1, 4])], [vi("y", [1, 4])])
    yield "conv-bn-relu", model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
        helper.make_node("Relu", ["n"], ["y"]),
    ], [vi("x", [1, 2, 5, 5])], [vi("y", [1, 3, 5, 5])], [
        f32("w", rng.standard_normal((3, 2, 3, 3))), f32("b", [0.1, 0.2, 0.3]), f32("s", [1, 2, 3]),
        f32("bb", [0, 1, 0]), f32("m", [0, 0, 1]), f32("v", [1, 1, 2])])
    yield "residual", model([
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[0, 0, 0, 0]),
        helper.make_node("Add", ["c", "x"], ["a"]),
        helper.make_node("Clip", ["a", "lo", "hi"], ["y"]),
    ], [vi("x", [1, 2, 4, 4])], [vi("y", [1, 2, 4, 4])],
        [f32("w", rng.standard_normal((2, 2, 1, 1))), f32("lo", 0.0), f32("hi", 6.0)])
    yield "shape-fold", model([
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i"], ["g"], axis=0),
        helper.make_node("Unsqueeze", ["g", "ax"], ["u"]),
        helper.make_node("Concat", ["u", "m1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ], [vi("x", [2, 3, 4])], [vi("y", [2, 12])], [i64("i", 0), i64("ax", [0]), i64("m1", [-1])])
    yield "symbolic", model([
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Softmax", ["m"], ["y"], axis=-1),
    ], [vi("x", ["batch", 4])], [vi("y", ["batch", 3])], [f32("w", rng.standard_normal((4, 3)))])
    yield "constant-node", model([
        helper.make_node("Constant", [], ["k"], value=helper.make_tensor("k", TensorProto.FLOAT, [2], [1.5, -2])),
        helper.make_node("Mul", ["x", "k"], ["y"]),
    ], [vi("x", [3, 2])], [vi("y", [3, 2])])
    yield "gemm-sigmoid", model([
        helper.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1, alpha=0.5),
        helper.make_node("Sigmoid", ["g"], ["y"]),
    ], [vi("x", [2, 3])], [vi("y", [2, 4])], [f32("w", rng.standard_normal((4, 3))), f32("b", [1, 2, 3, 4])])
    yield "pool-resize", model([
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Resize", ["p", "", "sc"], ["y"], mode="nearest"),
    ], [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 4, 4])], [f32("sc", [1, 1, 2, 2])])
    yield "cast-where", model([
        helper.make_node("Greater", ["x", "z"], ["c"]),
        helper.make_node("Where", ["c", "x", "z"], ["w"]),
        helper.make_node("Cast", ["w"], ["y"], to=TensorProto.INT64),
        helper.make_node("ReduceSum", ["x"], ["r"], keepdims=0),
    ], [vi("x", [4])], [vi("y", [4], TensorProto.INT64), vi("r", [])], [f32("z", 0.0)])
    yield "unsupported-op", model([helper.make_node("NoSuchOp", ["x"], ["y"], domain="custom")],
                                  [vi("x", [1])], [vi("y", [1])])
    ext = numpy_helper.from_array(np.asarray([1, 2], dtype=np.float32), "w")
    onnx.external_data_helper.set_external_data(ext, "weights.bin")
    ext.ClearField("raw_data")
    ext.data_location = TensorProto.EXTERNAL
    yield "external-data", model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2])], [vi("y", [2])], [ext])
    yield "cycle", model([helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
                         [vi("x", [1])], [vi("b", [1])])


def frame(tensor=False, no_pts=False, stream=0, number=0, pts=0, tb=(1, 30), wh=(640, 480), shape=(),
          dets=(), cls=()):
    out = struct.pack("<BiqqiiiiB", (1 if tensor else 0) | (2 if no_pts else 0), stream, number, pts, tb[0],
                      tb[1], wh[0], wh[1], len(shape))
    out += struct.pack("<8q", *(list(shape) + [0] * (8 - len(shape))))
    out += struct.pack("<BB", len(dets), len(cls))
    for box, score, c, label, track, lms in dets:
        out += struct.pack("<5fi", *box, score, c) + label.ljust(32, b"\0")[:32]
        flat = [v for p in lms for v in p] + [0.0] * (16 - 2 * len(lms))
        out += struct.pack("<qi16f", track, len(lms), *flat)
    for c, score, label, det in cls:
        out += struct.pack("<if", c, score) + label.ljust(32, b"\0")[:32] + struct.pack("<i", det)
    return out


def json_seeds():
    inf, nan = float("inf"), float("nan")
    yield "empty-frame", frame()
    yield "tensor", frame(tensor=True, shape=(1, 3, 224, 224), pts=90000, tb=(1, 90000))
    yield "no-pts", frame(no_pts=True, stream=3, number=12345)
    yield "detections", frame(pts=33, dets=[((10, 20, 110, 220), 0.9, 0, b"person", 7, []),
                                            ((1.5, 2.5, 3.5, 4.5), 0.25, -1, b"", -1, [])]) + b"plain string"
    yield "landmarks", frame(dets=[((0, 0, 1, 1), 1.0, 2, b"face", 1, [(1, 2), (3, 4), (5, 6)])])
    yield "classifications", frame(cls=[(3, 0.5, b"cat", -1), (4, 0.125, b"dog \"quoted\"", 0)],
                                   dets=[((0, 0, 9, 9), 0.5, 4, b"dog", -1, [])])
    yield "nonfinite", frame(pts=2**62, tb=(2**31 - 1, 1), dets=[((nan, inf, -inf, 3.4e38), nan, 1, b"x", 2**62,
                                                                  [(inf, -3.4e38)])],
                             cls=[(1, -inf, b"", -1)])
    yield "labels", frame(dets=[((0, 0, 1, 1), 0.5, 0, b"\xff\xfe bad utf8", -1, []),
                                ((0, 0, 1, 1), 0.5, 0, b"ctl\x01\x1f\x7f\n\t\r\\end", -1, []),
                                ((0, 0, 1, 1), 0.5, 0, "\u00e9t\u00e9 \U0001f600 full 32 bytes...".encode(), -1, [])],
                          cls=[(0, 0.5, b"x" * 32, -1)]) + b"tail \xc3\x28 \xed\xa0\x80 \x01\x7f \"\\"
    yield "huge", frame(stream=-2**31, number=-2**63, pts=-2**63 + 1, tb=(2**31 - 1, 1), wh=(-1, 2**31 - 1),
                        dets=[((-3.4e38, 3.4e38, 1e-45, -1e-45), 3.4e38, 2**31 - 1, b"", 2**63 - 1, [])])


def main():
    for name, text in PARSE.items():
        write("parse", name, text)
    for name, data in onnx_seeds():
        write("onnx", name, data)
    for name, data in json_seeds():
        write("json", name, data)


if __name__ == "__main__":
    sys.exit(main())

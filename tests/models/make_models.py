#!/usr/bin/env python3
"""Writes the small ONNX models test_loader.c loads into OUTDIR: models the
passes must rewrite, and a corpus of malformed ones. Needs python3-onnx."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
rng = np.random.default_rng(5)


def save(model, out, name, check=True):
    if check:
        onnx.checker.check_model(model)
    with open(os.path.join(out, name), "wb") as f:
        f.write(model.SerializeToString())


def model(nodes, inputs, outputs, inits=(), opset=OPSET, name="g"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="reel-tests")


def raw_tensor(name, dims, raw):
    # Built by hand: helper.make_tensor refuses sizes that disagree.
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(dims)
    t.raw_data = raw
    return t


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def conv_weights():
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    return w, b


def main(out):
    os.makedirs(out, exist_ok=True)

    # A "colour classifier": the mean of each channel, scaled; the largest
    # is the dominant colour (classes red, green, blue).
    ten = numpy_helper.from_array(np.array(10, np.float32), "ten")
    nodes = [
        helper.make_node("GlobalAveragePool", ["X"], ["g"], name="pool"),
        helper.make_node("Flatten", ["g"], ["f"], name="flat"),
        helper.make_node("Mul", ["f", "ten"], ["Y"], name="scale"),
    ]
    save(model(nodes, [f32("X", [1, 3, 16, 16])], [f32("Y", [1, 3])], [ten]), out, "colour.onnx")

    # Relu -> Sigmoid -> Relu on [1, 4, 8, 8]: with Sigmoid kept on the cpu,
    # three partitions and four crossings of 1 KiB each.
    nodes = [
        helper.make_node("Relu", ["X"], ["a"], name="first"),
        helper.make_node("Sigmoid", ["a"], ["b"], name="middle"),
        helper.make_node("Relu", ["b"], ["Y"], name="last"),
    ]
    save(model(nodes, [f32("X", [1, 4, 8, 8])], [f32("Y", [1, 4, 8, 8])]), out, "chain.onnx")

    # Conv + BatchNormalization + Relu -> one Conv with fused Relu.
    w, b = conv_weights()
    scale = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    mean = rng.standard_normal(4).astype(np.float32)
    var = rng.uniform(0.5, 2.0, 4).astype(np.float32)
    eps = 1e-3
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w, "W"), (b, "B"), (scale, "scale"), (bias, "bias"), (mean, "mean"), (var, "var"))]
    nodes = [
        helper.make_node("Conv", ["X", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["bn"],
                         name="bn", epsilon=eps),
        helper.make_node("Relu", ["bn"], ["Y"], name="relu"),
    ]
    save(model(nodes, [f32("X", ["batch", 3, 8, 8])], [f32("Y", ["batch", 4, 8, 8])], inits),
         out, "conv_bn_relu.onnx")
    s = scale / np.sqrt(var + eps)
    wf = (w * s[:, None, None, None]).astype(np.float32)
    bf = ((b - mean) * s + bias).astype(np.float32)
    for a, n in ((wf, "conv_bn_relu_w.pb"), (bf, "conv_bn_relu_b.pb")):
        with open(os.path.join(out, n), "wb") as f:
            f.write(numpy_helper.from_array(a).SerializeToString())

    # Conv + Sigmoid * x (SiLU) and Conv + HardSigmoid * x (HardSwish).
    for act, fname in (("Sigmoid", "conv_silu.onnx"), ("HardSigmoid", "conv_hardswish.onnx")):
        w, b = conv_weights()
        attrs = {"alpha": 1.0 / 6, "beta": 0.5} if act == "HardSigmoid" else {}
        nodes = [
            helper.make_node("Conv", ["X", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node(act, ["c"], ["s"], name="act", **attrs),
            helper.make_node("Mul", ["s", "c"], ["Y"], name="mul"),
        ]
        inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")]
        save(model(nodes, [f32("X", [1, 3, 8, 8])], [f32("Y", [1, 4, 8, 8])], inits), out, fname)

    # Free batch and spatial dims, for sessions planning many shapes
    # (test_plan_cache.c): Conv 3x3 + Relu, Conv 3x3 with the first's output
    # added (both folded into the Convs), and a head GlobalAveragePool ->
    # Flatten -> Gemm. Six weights, 844 floats. A generator of its own, so
    # that the models after it keep their weights.
    r = np.random.default_rng(11)
    w1 = r.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b1 = r.standard_normal(8).astype(np.float32)
    w2 = (r.standard_normal((8, 8, 3, 3)) / 8).astype(np.float32)
    b2 = r.standard_normal(8).astype(np.float32)
    w3 = r.standard_normal((4, 8)).astype(np.float32)
    b3 = r.standard_normal(4).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((w1, "W1"), (b1, "B1"), (w2, "W2"), (b2, "B2"), (w3, "W3"), (b3, "B3"))]
    nodes = [
        helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "W2", "B2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["Y"], name="residual"),
        helper.make_node("GlobalAveragePool", ["Y"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "W3", "B3"], ["Z"], name="head", transB=1),
    ]
    save(model(nodes, [f32("X", ["batch", 3, "h", "w"])],
               [f32("Y", ["batch", 8, "h", "w"]), f32("Z", ["batch", 4])], inits), out, "free_dims.onnx")

    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape on a static shape.
    nodes = [
        helper.make_node("Shape", ["X"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["n"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "minus1"], ["newshape"], name="concat", axis=0),
        helper.make_node("Reshape", ["X", "newshape"], ["Y"], name="reshape"),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    save(model(nodes, [f32("X", [2, 3, 4])], [f32("Y", [2, 12])], inits), out, "shape_chain.onnx")

    # Nodes out of order, but acyclic: reordered at load.
    nodes = [
        helper.make_node("Relu", ["a"], ["Y"], name="second"),
        helper.make_node("Neg", ["X"], ["a"], name="first"),
    ]
    save(model(nodes, [f32("X", [4])], [f32("Y", [4])]), out, "unsorted.onnx", check=False)

    # Initializers in every storage form, Constant nodes of every kind.
    t_raw = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "raw")
    t_f = helper.make_tensor("floats", TensorProto.FLOAT, [3], [1.5, 2.5, 3.5])
    t_i8 = helper.make_tensor("i8", TensorProto.INT8, [3], [-1, 2, -3])
    t_h = helper.make_tensor("f16", TensorProto.FLOAT16, [2], [1.0, -2.0])  # int32_data bits
    t_b = helper.make_tensor("bools", TensorProto.BOOL, [2], [1, 0])
    t_i64 = helper.make_tensor("i64", TensorProto.INT64, [2], [1 << 40, -7])
    t_d = helper.make_tensor("dbl", TensorProto.DOUBLE, [2], [0.25, -8.0])
    names = ["raw", "floats", "i8", "f16", "bools", "i64", "dbl"]
    nodes = [helper.make_node("Constant", [], ["cv"], value=numpy_helper.from_array(
                 np.array([7, 8], np.int32))),
             helper.make_node("Constant", [], ["cf"], value_float=0.5),
             helper.make_node("Constant", [], ["cfs"], value_floats=[1.0, 2.0]),
             helper.make_node("Constant", [], ["ci"], value_int=3),
             helper.make_node("Constant", [], ["cis"], value_ints=[4, 5, 6])]
    outs = names + ["cv", "cf", "cfs", "ci", "cis"]
    nodes += [helper.make_node("Identity", [n], ["o_" + n], name="id_" + n) for n in outs]
    g = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("o_" + n, TensorProto.UNDEFINED, None)
                                          for n in outs],
                          initializer=[t_raw, t_f, t_i8, t_h, t_b, t_i64, t_d])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    save(m, out, "storage.onnx", check=False)

    # External data beside the model.
    ext = np.arange(12, dtype=np.float32).reshape(3, 4)
    with open(os.path.join(out, "weights.bin"), "wb") as f:
        f.write(b"\0" * 16 + ext.tobytes())

    def ext_model(location, offset, length):
        t = TensorProto()
        t.name = "E"
        t.data_type = TensorProto.FLOAT
        t.dims.extend([3, 4])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        nodes = [helper.make_node("Add", ["X", "E"], ["Y"], name="add")]
        return model(nodes, [f32("X", [3, 4])], [f32("Y", [3, 4])], [t])

    save(ext_model("weights.bin", 16, 48), out, "external.onnx", check=False)
    save(ext_model("../weights.bin", 16, 48), out, "bad_external_escape.onnx", check=False)
    save(ext_model("weights.bin", 16, 40), out, "bad_external_length.onnx", check=False)

    def ext_tensor(name, dims, location, offset=None):
        t = TensorProto()
        t.name = name
        t.data_type = TensorProto.FLOAT
        t.dims.extend(dims)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", offset)):
            if v is not None:
                e = t.external_data.add()
                e.key, e.value = k, str(v)
        return t

    def add_model(tensors, n):
        names = [t.name for t in tensors]
        nodes = [helper.make_node("Add", ["X" if i == 0 else f"s{i}", w], [f"s{i + 1}" if i + 1 < len(names) else "Y"],
                                  name=f"add{i}") for i, w in enumerate(names)]
        return model(nodes, [f32("X", [n])], [f32("Y", [n])], tensors)

    # A shape of 1 GiB claimed against a 64-byte file: refused from the
    # file's size, before anything is allocated.
    save(add_model([ext_tensor("Big", [1 << 28], "weights.bin")], 1 << 28), out, "bad_external_short.onnx",
         check=False)
    # A link beside the model that leads out of its folder, and a folder.
    link = os.path.join(out, "outside-link.bin")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink("/etc/passwd", link)
    save(add_model([ext_tensor("L", [4], "outside-link.bin")], 4), out, "bad_external_link.onnx", check=False)
    save(add_model([ext_tensor("D", [4], ".")], 4), out, "bad_external_dir.onnx", check=False)
    # Three tensors of 400 bytes in one file: 1200 bytes of tensors, over a
    # model limit of 1000 (test_loader model-limit).
    with open(os.path.join(out, "weights3.bin"), "wb") as f:
        f.write(np.ones(300, dtype=np.float32).tobytes())
    save(add_model([ext_tensor(f"W{i}", [100], "weights3.bin", 400 * i) for i in range(3)], 100), out,
         "external_three.onnx", check=False)

    # The bad-model corpus.
    relu = lambda i, o, n: helper.make_node("Relu", [i], [o], name=n)
    save(model([relu("X", "a", "n1"), relu("b", "c", "n2"), relu("c", "b", "n3"), relu("a", "Y", "n4")],
               [f32("X", [2])], [f32("Y", [2])]), out, "bad_cycle.onnx", check=False)
    save(model([relu("X", "a", "n1"), helper.make_node("Add", ["a", "ghost"], ["Y"], name="adder")],
               [f32("X", [2])], [f32("Y", [2])]), out, "bad_dangling.onnx", check=False)
    save(model([relu("X", "a", "n1"), relu("X", "a", "twice")], [f32("X", [2])], [f32("a", [2])]),
         out, "bad_twice.onnx", check=False)
    bad = raw_tensor("Wbad", [2, 3], np.zeros(5, np.float32).tobytes())
    save(model([helper.make_node("Add", ["X", "Wbad"], ["Y"], name="add")], [f32("X", [2, 3])],
               [f32("Y", [2, 3])], [bad]), out, "bad_init_size.onnx", check=False)
    neg = raw_tensor("Wneg", [2, -3], b"")
    save(model([helper.make_node("Add", ["X", "Wneg"], ["Y"], name="add")], [f32("X", [2, 3])],
               [f32("Y", [2, 3])], [neg]), out, "bad_negative_dim.onnx", check=False)
    save(model([relu("X", "Y", "n1")], [f32("X", [2, -3])], [f32("Y", [2])]),
         out, "bad_negative_input_dim.onnx", check=False)
    huge = raw_tensor("Whuge", [1 << 40, 1 << 40], b"")
    save(model([helper.make_node("Add", ["X", "Whuge"], ["Y"], name="add")], [f32("X", [2, 3])],
               [f32("Y", [2, 3])], [huge]), out, "bad_huge_dim.onnx", check=False)
    save(model([relu("X", "Y", "n1")], [f32("X", [1 << 62, 1 << 62])], [f32("Y", [2])]),
         out, "bad_huge_input.onnx", check=False)
    save(model([relu("X", "Y", "n1")], [f32("X", [1] * 9)], [f32("Y", [2])]),
         out, "bad_rank.onnx", check=False)
    nodes = [helper.make_node("FrobnicateA", ["X"], ["a"], name="frob_a"),
             helper.make_node("Relu", ["a"], ["b"], name="ok_relu"),
             helper.make_node("FrobnicateB", ["b"], ["Y"], name="frob_b")]
    save(model(nodes, [f32("X", [2])], [f32("Y", [2])]), out, "bad_unknown_ops.onnx", check=False)
    written_hardswish(out)


def written_hardswish(out):
    """HardSwish written out as exporters for opset 11 write it,
    Div(Mul(x, Clip(Add(x, 3), 0, 6)), 6) (models/fuse_hardswish.c): after a
    Conv (fused into it), alone with its operands swapped and a Mul by 1/6,
    and two chains that must stay: a Div by 5, and the Add's sum read twice."""
    r = np.random.default_rng(17)
    c = {k: numpy_helper.from_array(np.array(v, np.float32), k)
         for k, v in (("three", 3), ("zero", 0), ("six", 6), ("sixth", 1 / 6), ("five", 5))}

    def chain(x, y, tag, swap=False, end=("Div", "six"), extra=()):
        mul = ["clip" + tag, x] if swap else [x, "clip" + tag]
        add = ["three", x] if swap else [x, "three"]
        return [helper.make_node("Add", add, ["sum" + tag], name="add" + tag),
                helper.make_node("Clip", ["sum" + tag, "zero", "six"], ["clip" + tag], name="clip" + tag),
                helper.make_node("Mul", mul, ["prod" + tag], name="mul" + tag),
                helper.make_node(end[0], ["prod" + tag, end[1]], [y], name="end" + tag)] + list(extra)

    w = numpy_helper.from_array(r.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], name="conv", pads=[1, 1, 1, 1])] + chain("c", "Y", "")
    save(model(nodes, [f32("X", [1, 3, 8, 8])], [f32("Y", [1, 4, 8, 8])], [w] + list(c.values()), opset=11),
         out, "conv_hardswish_written.onnx")
    nodes = chain("X", "Y", "", swap=True, end=("Mul", "sixth"))
    save(model(nodes, [f32("X", [2, 50])], [f32("Y", [2, 50])], list(c.values()), opset=11),
         out, "hardswish_written.onnx")
    nodes = chain("X", "Y", "a", end=("Div", "five")) + chain("X", "Z", "b") + [
        helper.make_node("Relu", ["sumb"], ["S"], name="reads_sum")]
    save(model(nodes, [f32("X", [2, 50])], [f32("Y", [2, 50]), f32("Z", [2, 50]), f32("S", [2, 50])],
               list(c.values()), opset=11), out, "hardswish_not_written.onnx")


if __name__ == "__main__":
    main(sys.argv[1])

# reel's run of a QDQ model against ONNX Runtime's run of the same model.
#
# Float-simulated QDQ (DequantizeLinear -> float op -> QuantizeLinear) is
# exact arithmetic on a grid until a float sum lands within rounding noise of
# a half step: the two runtimes sum in different orders and may round that
# value to neighbouring steps, and the difference then spreads downstream
# like any quantization noise. So the check walks the quantized tensors in
# graph order (the model re-exported with every activation's
# DequantizeLinear output as an extra output): all of them must be equal up
# to the first that differs, and that one within one quantization step
# (its scale). Outputs are compared within one step too when nothing before
# them differed; otherwise their difference is printed.
#   python3 compare_qdq.py expose MODEL.onnx OUT.onnx
#   python3 compare_qdq.py compare MODEL.onnx OURS_DIR REF_DIR
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def activation_dqs(m):
    """(DequantizeLinear output, its scale initializer) of every activation, in graph order."""
    inits = {t.name for t in m.graph.initializer}
    return [(n.output[0], n.input[1]) for n in m.graph.node
            if n.op_type == "DequantizeLinear" and n.input[0] not in inits]


def npy(d, name):
    return os.path.join(d, name.replace(":", "_").replace("/", "_") + ".npy")


def expose(model, out):
    m = onnx.load(model)
    have = {o.name for o in m.graph.output}
    for name, _ in activation_dqs(m):
        if name not in have:
            m.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    onnx.save(m, out)


def compare(model, ours_dir, ref_dir):
    m = onnx.load(model)
    scales = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    bad = 0
    diverged = None
    for name, scale in activation_dqs(m):
        step = float(np.max(scales[scale]))
        a, b = np.load(npy(ours_dir, name)), np.load(npy(ref_dir, name))
        if a.shape != b.shape:
            print(f"  {name}: shape {a.shape}, ONNX Runtime's {b.shape}")
            return 1
        steps = float(np.max(np.abs(a.astype(np.float64) - b))) / step if a.size else 0.0
        if steps > 0.01:
            n = int(np.count_nonzero(np.abs(a.astype(np.float64) - b) > 0.01 * step))
            ok = steps <= 1.001
            print(f"  first difference at {name}: {n} of {a.size} values, at most {steps:.3f} steps "
                  f"(step {step:.6g}){'' if ok else '  <-- more than one step'}")
            bad += not ok
            diverged = name
            break
    if diverged is None:
        print(f"  all {len(activation_dqs(m))} quantized tensors equal")
    producer = {o: n for n in m.graph.node for o in n.output}
    for out in m.graph.output:
        a, b = np.load(npy(ours_dir, out.name)), np.load(npy(ref_dir, out.name))
        dq = producer.get(out.name)
        quantized = dq is not None and dq.op_type == "DequantizeLinear"
        # A float output: the step a uint8 tensor of its range would have.
        step = (float(np.max(scales[dq.input[1]])) if quantized
                else max(float(np.max(b)) - float(np.min(b)), 1e-12) / 255)
        if a.shape != b.shape:
            print(f"  {out.name}: shape {a.shape}, ONNX Runtime's {b.shape}")
            bad += 1
            continue
        steps = float(np.max(np.abs(a.astype(np.float64) - b))) / step
        judged = diverged is None
        ok = not judged or steps <= 1.001
        print(f"  output {out.name}: at most {steps:.3f} steps of {step:.6g} apart"
              f"{'' if judged else ' (after the first difference: not judged)'}{'' if ok else '  <-- more than one step'}")
        bad += not ok
    return 1 if bad else 0


if sys.argv[1] == "expose":
    expose(sys.argv[2], sys.argv[3])
else:
    sys.exit(compare(sys.argv[2], sys.argv[3], sys.argv[4]))

# A QDQ model written by `reel model quantize` with some of its quantization
# taken out again, to measure where the int8 error comes from: the weights
# (and the biases made from them) whose float name matches a w:REGEX read
# their float initializer again, and the activations matching an a:REGEX
# lose their QuantizeLinear/DequantizeLinear pair.
#   python3 qdq_partial.py FLOAT.onnx QDQ.onnx OUT.onnx [w:REGEX|a:REGEX]...
# e.g. 'a:.' leaves the weights alone quantized; "a:^(?!NAME$)" 'w:.'
# quantizes activation NAME only.
import re
import sys

import onnx

float_model, qdq = onnx.load(sys.argv[1]), onnx.load(sys.argv[2])
float_inits = {t.name: t for t in float_model.graph.initializer}
patterns = [(p[0], re.compile(p[2:])) for p in sys.argv[4:]]
g = qdq.graph
inits = {t.name for t in g.initializer}
producer = {o: n for n in g.node for o in n.output}
rename, drop, restore = {}, set(), []
for n in g.node:
    suffix = "_DequantizeLinear_Output"
    if n.op_type != "DequantizeLinear" or not n.output[0].endswith(suffix):
        continue
    base = n.output[0][: -len(suffix)]
    kind = "w" if n.input[0] in inits else "a"
    if not any(k == kind and r.search(base) for k, r in patterns):
        continue
    if kind == "w":
        if base not in float_inits:
            continue  # a bias the quantizer made (bias correction): no float twin
        rename[n.output[0]] = base
        restore.append(float_inits[base])
        drop.add(n.name)
        continue
    q = producer[n.input[0]]
    drop.update((n.name, q.name))
    if q.input[0].endswith("_QuantizeLinear_Input"):  # a graph output: its producer writes it again
        for m in g.node:
            m.output[:] = [n.output[0] if o == q.input[0] else o for o in m.output]
    else:
        rename[n.output[0]] = q.input[0]
nodes = [n for n in g.node if n.name not in drop]
for n in nodes:
    n.input[:] = [rename.get(x, x) for x in n.input]
del g.node[:]
g.node.extend(nodes)
for t in restore:
    if t.name not in inits:
        g.initializer.append(t)
        inits.add(t.name)
used = {x for n in g.node for x in n.input}
kept = [t for t in g.initializer if t.name in used]
del g.initializer[:]
g.initializer.extend(kept)
onnx.save(qdq, sys.argv[3])

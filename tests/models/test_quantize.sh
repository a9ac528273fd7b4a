#!/usr/bin/env bash
# reel model quantize end to end, on real parts: a MobileNetV2-shaped model
# (calibrated on a folder of PNG frames) and BlazeFace (calibrated on a clip
# of scripts/make-faces-clip), each written as a QDQ model that
#   (a) ONNX Runtime and reel both load and run on real frames;
#   (b) reel folds the QDQ chains into integer ops and its outputs equal ONNX
#       Runtime's within 1e-4 of their scale; with every quantized tensor an
#       output too (nothing folds then), every quantized tensor equal up to the
#       first that differs (rounding of float sums at a half step), and that
#       one within one quantization step (tests/models/compare_qdq.py);
#   (c) for BlazeFace, in the face pipeline on the demo clip, finds the same
#       faces as the float model in every frame, every box within
#       FACE_TOLERANCE pixels and NEAR_SHARE of them within NEAR pixels (a
#       1280x720 frame, faces about 260 px wide); not 2 px: rounding even
#       the input alone to uint8 moves a box 2.2 px (README, int8);
#   (d) bad input: a missing calibration source, a model with nothing to
#       quantize, an unwritable --out, an image folder without images, a
#       --keep-float name no node has: each a clear error, no file written.
#   (e) --keep-float heads runs the box and score heads in float,
#       --bias-correction gives every Conv a corrected bias: both still run
#       in reel as in ONNX Runtime and find the same faces;
#   (f) with the activations' Q/DQ pairs taken out, every box within 4 px;
#   (g) equalization (the default) keeps more boxes within 4 px than
#       --no-equalize;
# Needs the model and ONNX Runtime in cache/ (scripts/fetch-models --ort).
# Usage: test_quantize.sh REEL SOURCE_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 work=$3
py=/usr/bin/python3
. "$src/tests/support/lib.sh"
blazeface=$src/cache/models/blazeface/face_detection_front_128x128_barracuda.onnx
ort=$src/cache/ort/node_modules/onnxruntime-node
[ -s "$blazeface" ] || { echo "SKIP: no $blazeface (run scripts/fetch-models --ort)"; exit 77; }
[ -d "$ort" ] || { echo "SKIP: no ONNX Runtime in $ort (run scripts/fetch-models --ort)"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is needed to run ONNX Runtime (Debian package nodejs)"; exit 77; }
$py -c "import numpy, onnx" 2>/dev/null || { echo "SKIP: $py cannot import numpy and onnx (python3-onnx)"; exit 77; }
[ -f /usr/lib/python3/dist-packages/skimage/data/astronaut.png ] \
  || { echo "SKIP: no astronaut.png for the clip (python3-skimage)"; exit 77; }
# Measured (this test's 60 calibration frames): largest 7.73 px, 558 of 600
# boxes within 4 px.
FACE_TOLERANCE=9 NEAR=4 NEAR_SHARE=0.85
mkdir -p "$work/shaped" "$work/frames" "$work/ref"
calib=$work/calib.mp4 demo=$work/demo.mp4
# Calibration and the demo are different clips (another zoom and pan).
[ -s "$calib" ] || "$src/scripts/make-faces-clip" "$calib" 90
[ -s "$demo" ] || "$src/scripts/make-faces-clip" "$demo" 300
[ -s "$work/shaped/mobilenetv2-224.onnx" ] || $py "$src/tests/models/make_shaped_models.py" "$work/shaped" >/dev/null
ffmpeg -v error -y -i "$calib" -vf "select=not(mod(n\,15))" -vsync vfr "$work/frames/f%03d.png"

# both NAME MODEL INPUT NPY: (a) and (b) on one input.
both() {
  local name=$1 model=$2 input=$3 npy=$4 dir=$work/out/$1
  rm -rf "$dir" && mkdir -p "$dir/reel" "$dir/ort" "$dir/reel-all" "$dir/ort-all"
  if "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/reel" --threads 1 >/dev/null &&
     node "$src/tests/models/ort_run.js" "$ort" "$model" "$dir/ort" "$input=$npy"; then
    ok
  else
    bad "$name: the quantized model did not run in both reel and ONNX Runtime"
    return
  fi
  # The model as written: reel folds its QDQ chains into integer ops, as ONNX
  # Runtime does, and then computes what ORT computes, integer for integer;
  # only the float nodes after the last quantized tensor sum in another order.
  if "$reel" model info "$model" | grep -qE "qdq: [1-9][0-9]* nodes folded" &&
     $py "$src/tests/models/compare_npy.py" "$dir/reel" "$dir/ort" 1e-4; then
    ok
  else
    bad "$name: reel's folded run differs from ONNX Runtime's by more than 1e-4 of an output's scale (or nothing folded)"
  fi
  # Every quantized tensor an output too, to see where the runs part.
  $py "$src/tests/models/compare_qdq.py" expose "$model" "$dir/all.onnx"
  "$reel" model run "$dir/all.onnx" --input "$input=$npy" --output-dir "$dir/reel-all" --threads 1 >/dev/null
  node "$src/tests/models/ort_run.js" "$ort" "$dir/all.onnx" "$dir/ort-all" "$input=$npy"
  echo "$name:"
  if $py "$src/tests/models/compare_qdq.py" compare "$model" "$dir/reel-all" "$dir/ort-all"; then
    ok
  else
    bad "$name: reel's run of the QDQ model differs from ONNX Runtime's by more than one step"
  fi
}

# The shaped model, calibrated on a folder of images, run on a real frame.
shaped=$work/mobilenetv2.int8.onnx
rm -f "$shaped"
if "$reel" model quantize "$work/shaped/mobilenetv2-224.onnx" --calibrate "$work/frames" --out "$shaped" \
  --method minmax; then
  ok
else
  bad "quantizing the MobileNetV2-shaped model failed"
fi
ffmpeg -v error -y -ss 1 -i "$calib" -frames:v 1 -vf scale=224:224 -pix_fmt rgb24 -f rawvideo "$work/frame224.rgb"
$py -c "import numpy as n; a=n.fromfile('$work/frame224.rgb',n.uint8).reshape(1,224,224,3).transpose(0,3,1,2); n.save('$work/frame224.npy',(a/255).astype(n.float32))"
[ -s "$shaped" ] && both mobilenetv2-int8 "$shaped" input "$work/frame224.npy"

# BlazeFace, calibrated on the clip (the default method), run on demo frames.
int8=$work/blazeface.int8.onnx
rm -f "$int8"
if "$reel" model quantize blazeface-front --calibrate "$calib" --frames 60 --out "$int8" | tee "$work/quantize.txt" &&
   grep -q " 16 depthwise Convs equalized;" "$work/quantize.txt"; then
  ok
else
  bad "quantizing BlazeFace failed, or did not equalize its 16 depthwise Convs"
fi
ffmpeg -v error -y -i "$demo" -vf "select=not(mod(n\,100))" -vsync vfr -f rawvideo -pix_fmt rgb24 "$work/demo.rgb"
$py "$src/tests/models/faces_reference.py" prepare "$work/demo.rgb" 1280 720 "$work/ref"
while read -r n _; do
  [ -s "$int8" ] && both "blazeface-int8-frame$n" "$int8" input:0 "$work/ref/in-$n.npy"
done < "$work/ref/frames.txt"

# (c) The face pipeline with the int8 model (its manifest beside it: the
# float model's preprocess and detect settings) against the float model.
sed -n '/^\[preprocess\]/,$p' "$src/models/zoo/blazeface-front.reel" > "${int8%.onnx}.reel"
pipeline="source location=$demo ! decode ! preprocess"
if "$reel" run -q "$pipeline ! infer model=blazeface-front ! detect ! metasink location=$work/fp32.jsonl" &&
   "$reel" run -q "$pipeline ! infer model=$int8 ! detect ! metasink location=$work/int8.jsonl"; then
  ok
else
  bad "the face pipeline failed"
fi
$py "$src/tests/models/compare_faces.py" "$work/fp32.jsonl" "$work/int8.jsonl" 2 | tail -1 || true
# same_faces NAME JSONL [TOLERANCE NEAR_SHARE]: (c) for one int8 run.
same_faces() {
  local tolerance=${3:-$FACE_TOLERANCE} share=${4:-$NEAR_SHARE}
  if $py "$src/tests/models/compare_faces.py" "$work/fp32.jsonl" "$2" "$tolerance" &&
     $py "$src/tests/models/compare_faces.py" "$work/fp32.jsonl" "$2" "$NEAR" "$share"; then
    ok
  else
    bad "$1 does not find the float model's faces within $tolerance px, $share of them within $NEAR px"
  fi
}
same_faces "the int8 BlazeFace" "$work/int8.jsonl"

# (e) The options that keep nodes float and correct biases. Neither brings
# the boxes closer (measured here: heads float 7.15 px, 518 within 4 px;
# bias correction 9.49 px, 491), so their bound is looser: 12 px, 75%.
heads=$work/blazeface.heads.onnx corrected=$work/blazeface.bc.onnx
rm -f "$heads" "$corrected"
if "$reel" model quantize blazeface-front --calibrate "$calib" --frames 60 --keep-float heads --out "$heads" &&
   "$reel" model quantize blazeface-front --calibrate "$calib" --frames 60 --bias-correction --out "$corrected"; then
  ok
else
  bad "quantizing BlazeFace with --keep-float heads or --bias-correction failed"
fi
# The four heads (the last Conv before each output) read float weights and
# biases; every other Conv reads int8 weights, as all do without the option. With bias
# correction every Conv has an int32 bias, the depthwise ones (none in the
# float model) too, and some differ from the plain model's.
if [ -s "$heads" ] && [ -s "$corrected" ] && $py - "$heads" "$corrected" "$int8" <<'EOF'
import sys
import onnx
from onnx import numpy_helper
heads, corrected, plain = (onnx.load(p).graph for p in sys.argv[1:])
def convs(g):
    return [n for n in g.node if n.op_type == "Conv"]
made = {o for n in heads.node for o in n.output}
inits = {t.name for t in heads.initializer}
float_convs = sorted(n.name.split("/")[-2] for n in convs(heads) if n.input[1] in inits)
assert float_convs == ["conv2d_17", "conv2d_18", "conv2d_19", "conv2d_20"], float_convs
assert all(n.input[1] in made for n in convs(heads) if n.input[1] not in inits)
assert all(n.input[2] in inits for n in convs(heads) if n.input[1] in inits), "a float head with an int32 bias"
plain_inits = {t.name for t in plain.initializer}
assert not [n.name for n in convs(plain) if n.input[1] in plain_inits], "the plain model has float convs"
def biases(g):
    v = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    dq = {n.output[0]: n.input[0] for n in g.node if n.op_type == "DequantizeLinear"}
    return [v.get(dq.get(n.input[2])) if len(n.input) > 2 else None for n in convs(g)]
got, before = biases(corrected), biases(plain)
assert all(b is not None and b.dtype.name == "int32" for b in got), "a Conv without an int32 bias"
assert sum(b is None for b in before) == 16, "the plain model's depthwise convs have biases"
assert any(a is not None and (a != b).any() for a, b in zip(before, got)), "no bias was corrected"
EOF
then
  ok
else
  bad "--keep-float heads or --bias-correction did not write what they say"
fi
n=$(head -1 "$work/ref/frames.txt" | cut -d' ' -f1)
for m in heads bc; do
  model=$work/blazeface.$m.onnx
  [ -s "$model" ] || continue
  both "blazeface-$m-frame$n" "$model" input:0 "$work/ref/in-$n.npy"
  sed -n '/^\[preprocess\]/,$p' "$src/models/zoo/blazeface-front.reel" > "${model%.onnx}.reel"
  if "$reel" run -q "$pipeline ! infer model=$model ! detect ! metasink location=$work/$m.jsonl"; then
    same_faces "the int8 BlazeFace ($m)" "$work/$m.jsonl" 12 0.75
  else
    bad "the face pipeline with $model failed"
  fi
done

# (f) Where the error comes from: the same int8 model with its activations'
# Q/DQ pairs taken out (tests/models/qdq_partial.py), its weights alone
# quantized, keeps every box within 4 px (measured 2.8 px): the rest of the
# error is the activations' uint8 rounding.
weights=$work/blazeface.weights.onnx
if [ -s "$int8" ] && $py "$src/tests/models/qdq_partial.py" "$blazeface" "$int8" "$weights" 'a:.' &&
   $py -c "import onnx,sys; sys.exit(any(n.op_type == 'QuantizeLinear' for n in onnx.load('$weights').graph.node))" &&
   cp "${int8%.onnx}.reel" "${weights%.onnx}.reel" &&
   "$reel" run -q "$pipeline ! infer model=$weights ! detect ! metasink location=$work/weights.jsonl" &&
   $py "$src/tests/models/compare_faces.py" "$work/fp32.jsonl" "$work/weights.jsonl" 4; then
  ok
else
  bad "BlazeFace with its weights alone in int8 does not keep every box within 4 px"
fi

# (g) Equalizing the depthwise Convs (the default) against not: more boxes
# within 4 px (measured 558 against 523 of 600).
plain=$work/blazeface.noeq.onnx
rm -f "$plain"
if "$reel" model quantize blazeface-front --calibrate "$calib" --frames 60 --no-equalize --out "$plain" |
     grep -q " 0 depthwise Convs equalized;" &&
   cp "${int8%.onnx}.reel" "${plain%.onnx}.reel" &&
   "$reel" run -q "$pipeline ! infer model=$plain ! detect ! metasink location=$work/noeq.jsonl"; then
  near() { $py "$src/tests/models/compare_faces.py" "$work/fp32.jsonl" "$1" "$NEAR" 0 | tail -1 | sed 's/.* \([0-9]*\) matched.*/\1/'; }
  eq=$(near "$work/int8.jsonl") noeq=$(near "$work/noeq.jsonl")
  echo "within $NEAR px: $eq equalized, $noeq not"
  if [ "$eq" -gt "$noeq" ]; then ok; else bad "equalization did not bring more boxes within $NEAR px ($eq, without $noeq)"; fi
else
  bad "quantizing BlazeFace with --no-equalize or running it failed"
fi

# The zoo's int8 BlazeFace by name, once scripts/fetch-models has made it
# (scripts/test does, after the build).
zoo=$src/cache/models/blazeface/face_detection_front_128x128_int8.onnx
pinned=$(sed -n 's/^file-sha256 *= *//p' "$src/models/zoo/blazeface-front-int8.reel")
if [ -s "$zoo" ] && [ "$(sha256sum "$zoo" | cut -d' ' -f1)" != "$pinned" ]; then
  echo "NOTE: $zoo is not the one models/zoo/blazeface-front-int8.reel pins (made by another version: scripts/fetch-models blazeface-front-int8 makes it again): not checked by name"
elif [ -s "$zoo" ]; then
  if "$reel" run -q "$pipeline ! infer model=blazeface-front-int8 ! detect ! metasink location=$work/zoo.jsonl"; then
    same_faces "infer model=blazeface-front-int8" "$work/zoo.jsonl"
  else
    bad "the face pipeline with infer model=blazeface-front-int8 failed"
  fi
else
  echo "NOTE: blazeface-front-int8 not made yet (scripts/fetch-models blazeface-front-int8): not checked by name"
fi

# (d) Bad input: a clear error naming what is wrong, exit 1, no file.
# expect_error WHAT PATTERN ARGS...
expect_error() {
  local what=$1 pattern=$2 out=$work/bad.onnx
  shift 2
  rm -f "$out"
  if "$reel" model quantize "$@" 2>"$work/err.txt"; then
    bad "$what: succeeded"
  elif [ $? -ne 1 ] || ! grep -q -- "$pattern" "$work/err.txt" || [ -e "$out" ]; then
    bad "$what: no clear error (wanted '$pattern'): $(cat "$work/err.txt")"
  else
    ok
  fi
}
expect_error "missing calibration source" "--calibrate $work/missing.mp4: No such file" \
  blazeface-front --calibrate "$work/missing.mp4" --out "$work/bad.onnx"
mkdir -p "$work/no-images" && touch "$work/no-images/notes.txt"
expect_error "a folder without images" "no images" \
  blazeface-front --calibrate "$work/no-images" --out "$work/bad.onnx"
$py - "$work/relu.onnx" <<'EOF'
import sys
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
EOF
expect_error "a model with nothing to quantize" "relu.onnx: nothing to quantize" \
  "$work/relu.onnx" --calibrate "$calib" --out "$work/bad.onnx"
$py - "$work/squeeze11.onnx" <<'EOF'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8, 8])
w = numpy_helper.from_array(np.random.RandomState(1).randn(4, 3, 1, 1).astype(np.float32), "w")
g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Squeeze", ["c"], ["y"], axes=[0])],
                      "squeeze11", [x], [y], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), sys.argv[1])
EOF
expect_error "opset 11 with an op that changed at 13" "opset 11 must be raised to 13 .* (Squeeze, node 2)" \
  "$work/squeeze11.onnx" --calibrate "$calib" --frames 2 --out "$work/bad.onnx"
expect_error "a --keep-float name no node has" "--keep-float no-such-node: .* has no node of that name" \
  blazeface-front --calibrate "$calib" --frames 2 --keep-float heads,no-such-node --out "$work/bad.onnx"
expect_error "an unwritable --out" "cannot write the quantized model $work/no-such-dir/x.onnx" \
  blazeface-front --calibrate "$calib" --frames 2 --out "$work/no-such-dir/x.onnx"
expect_error "a file that is not a video" "--calibrate $work/relu.onnx" \
  blazeface-front --calibrate "$work/relu.onnx" --out "$work/bad.onnx"
finish

#!/usr/bin/env bash
# Real models against ONNX Runtime: BlazeFace (front 128 and back 256) on
# several real images, and models shaped like MobileNetV2, ResNet-18 and
# YOLOv8n (random weights) on random inputs. Every output must match ORT's
# within 1e-4 of its largest magnitude. Needs the models and ONNX Runtime in
# cache/ (scripts/fetch-models --ort).
# Usage: test_vs_ort.sh REEL SOURCE_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 work=$3
py=/usr/bin/python3
images=/usr/lib/python3/dist-packages/skimage/data
. "$src/tests/support/lib.sh"
ort=$src/cache/ort/node_modules/onnxruntime-node
for m in front_128x128 back_256x256; do
  f=$src/cache/models/blazeface/face_detection_${m}_barracuda.onnx
  [ -s "$f" ] || { echo "SKIP: no $f (run scripts/fetch-models --ort)"; exit 77; }
done
[ -d "$ort" ] || { echo "SKIP: no ONNX Runtime in $ort (run scripts/fetch-models --ort)"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is needed to run ONNX Runtime (Debian package nodejs)"; exit 77; }
$py -c "import numpy, onnx" 2>/dev/null || { echo "SKIP: $py cannot import numpy and onnx (python3-onnx)"; exit 77; }
[ -f "$images/astronaut.png" ] || { echo "SKIP: no images in $images (python3-skimage)"; exit 77; }
mkdir -p "$work/shaped"
[ -s "$work/shaped/yolov8n-320.onnx" ] || $py "$src/tests/models/make_shaped_models.py" "$work/shaped" >/dev/null

# check NAME MODEL INPUT_NAME INPUT.npy: both runtimes, then the comparison.
check() {
  local name=$1 model=$2 input=$3 npy=$4 dir=$work/out/$1
  mkdir -p "$dir/reel" "$dir/ort"
  "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/reel" --threads 1
  node "$src/tests/models/ort_run.js" "$ort" "$model" "$dir/ort" "$input=$npy"
  echo "$name:"
  if $py "$src/tests/models/compare_npy.py" "$dir/reel" "$dir/ort" 1e-4; then
    ok
  else
    bad "$name differs from ONNX Runtime"
  fi
}

for spec in front_128x128:128 back_256x256:256; do
  model=$src/cache/models/blazeface/face_detection_${spec%%:*}_barracuda.onnx size=${spec##*:}
  for img in astronaut chelsea coffee motorcycle_left; do
    npy=$work/in-$size-$img.npy
    # The model's input: NHWC float32 in [-1, 1].
    ffmpeg -v error -y -i "$images/$img.png" -vf "scale=$size:$size" -pix_fmt rgb24 -f rawvideo "$work/in.rgb"
    $py -c "import numpy as n; a=n.fromfile('$work/in.rgb',n.uint8).reshape(1,$size,$size,3); n.save('$npy',(a/127.5-1).astype(n.float32))"
    check "blazeface-${spec%%:*}-$img" "$model" "input:0" "$npy"
  done
done

for spec in mobilenetv2-224:224 resnet18-224:224 yolov8n-320:320; do
  size=${spec##*:} npy=$work/random-$size.npy
  $py -c "import numpy as n; n.save('$npy', n.random.RandomState(7).rand(1,3,$size,$size).astype(n.float32))"
  check "${spec%%:*}" "$work/shaped/${spec%%:*}.onnx" input "$npy"
done
finish

#!/usr/bin/env bash
# Face detection end to end on real frames: reel's pipeline (decode !
# preprocess ! infer model=blazeface-front ! detect ! metasink), on the cpu
# and on vulkan:0 (skipped visibly without a Vulkan device), against an
# independent reference: the same frames letterboxed in numpy, ONNX
# Runtime's outputs, and a BlazeFace decoder written in
# tests/models/faces_reference.py. The reference must find the two faces
# scripts/make-faces-clip put in every frame, at their known boxes; reel's
# faces per frame must agree with it, every box corner within 1 pixel.
# Needs the model and ONNX Runtime in cache/ (scripts/fetch-models --ort).
# Usage: test_faces.sh REEL SOURCE_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 work=$3
py=/usr/bin/python3
. "$src/tests/support/lib.sh"
model=$src/cache/models/blazeface/face_detection_front_128x128_barracuda.onnx
ort=$src/cache/ort/node_modules/onnxruntime-node
[ -s "$model" ] || { echo "SKIP: no $model (run scripts/fetch-models --ort)"; exit 77; }
[ -d "$ort" ] || { echo "SKIP: no ONNX Runtime in $ort (run scripts/fetch-models --ort)"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is needed to run ONNX Runtime (Debian package nodejs)"; exit 77; }
$py -c "import numpy" 2>/dev/null || { echo "SKIP: $py cannot import numpy (python3-numpy)"; exit 77; }
[ -f /usr/lib/python3/dist-packages/skimage/data/astronaut.png ] \
  || { echo "SKIP: no astronaut.png for the clip (python3-skimage)"; exit 77; }
mkdir -p "$work/ref"
clip=$work/faces.mp4
[ -s "$clip" ] || "$src/scripts/make-faces-clip" "$clip" 12

pipeline="source location=$clip ! decode ! preprocess ! infer model=blazeface-front ! detect"
runs=()
if "$reel" run -q "$pipeline ! metasink location=$work/cpu.jsonl"; then
  ok; runs+=("$work/cpu.jsonl")
else
  bad "the face pipeline failed on the cpu"
fi
if "$reel" devices 2>/dev/null | grep '^vulkan:0' >/dev/null; then
  if "$reel" run -q --device vulkan:0 "$pipeline ! metasink location=$work/vulkan.jsonl"; then
    ok; runs+=("$work/vulkan.jsonl")
  else
    bad "the face pipeline failed on vulkan:0"
  fi
else
  skip_check "no Vulkan device: the face pipeline on vulkan:0 did not run"
fi

ffmpeg -v error -y -i "$clip" -f rawvideo -pix_fmt rgb24 "$work/frames.rgb"
$py "$src/tests/models/faces_reference.py" prepare "$work/frames.rgb" 1280 720 "$work/ref"
while read -r n _; do
  mkdir -p "$work/ref/out-$n"
  node "$src/tests/models/ort_run.js" "$ort" "$model" "$work/ref/out-$n" "input:0=$work/ref/in-$n.npy"
done < "$work/ref/frames.txt"
if [ ${#runs[@]} -gt 0 ] && $py "$src/tests/models/faces_reference.py" compare "$work/ref" "${runs[@]}"; then
  ok
else
  bad "the faces differ from the reference's"
fi
finish

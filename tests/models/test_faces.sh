#!/usr/bin/env bash
# Face detection end to end on real frames: reel's pipeline (decode !
# preprocess ! infer model=blazeface-front ! detect ! metasink), on the cpu
# and on vulkan:0, against an independent reference: the same frames
# letterboxed in numpy, ONNX Runtime's outputs, and a BlazeFace decoder
# written in tests/models/faces_reference.py. Faces per frame must agree,
# every box corner within 2 pixels.
# Usage: test_faces.sh REEL SOURCE_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 work=$3
py=/usr/bin/python3
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIP: node and npm are needed for the ONNX Runtime reference"; exit 77
fi
(cd "$src" && scripts/fetch-models --ort blazeface-front >/dev/null)
ort=$src/cache/ort/node_modules/onnxruntime-node
model=$src/cache/models/blazeface/face_detection_front_128x128_barracuda.onnx
mkdir -p "$work/ref"
clip=$work/faces.mp4
[ -s "$clip" ] || "$src/scripts/make-faces-clip" "$clip" 12

pipeline="source location=$clip ! decode ! preprocess ! infer model=blazeface-front ! detect"
"$reel" run -q "$pipeline ! metasink location=$work/cpu.jsonl"
"$reel" run -q --device vulkan:0 "$pipeline ! metasink location=$work/vulkan.jsonl"

ffmpeg -v error -y -i "$clip" -f rawvideo -pix_fmt rgb24 "$work/frames.rgb"
$py "$src/tests/models/faces_reference.py" prepare "$work/frames.rgb" 1280 720 "$work/ref"
while read -r n _; do
  mkdir -p "$work/ref/out-$n"
  node "$src/tests/models/ort_run.js" "$ort" "$model" "$work/ref/out-$n" "input:0=$work/ref/in-$n.npy"
done < "$work/ref/frames.txt"
$py "$src/tests/models/faces_reference.py" compare "$work/ref" "$work/cpu.jsonl" "$work/vulkan.jsonl"

#!/usr/bin/env bash
# The seg and pose models make_segpose_models.py writes against ONNX Runtime:
# YOLOv8n-seg- and -pose-shaped (640, random weights) on real images
# (skimage's astronaut and coffee, RGB in [0, 1], NCHW), and the small
# known-output ones (160) on the astronaut. Every output, on the cpu and on
# vulkan:0 (lavapipe without a GPU, validation layer on; every node on the
# device), must match ORT's within 1e-4 of its largest magnitude. Needs ONNX
# Runtime in cache/ (scripts/fetch-models --ort).
# Usage: test_segpose_vs_ort.sh REEL SOURCE_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 work=$3
py=/usr/bin/python3
images=/usr/lib/python3/dist-packages/skimage/data
. "$src/tests/support/lib.sh"
ort=$src/cache/ort/node_modules/onnxruntime-node
[ -d "$ort" ] || { echo "SKIP: no ONNX Runtime in $ort (run scripts/fetch-models --ort)"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is needed to run ONNX Runtime (Debian package nodejs)"; exit 77; }
$py -c "import numpy, onnx" 2>/dev/null || { echo "SKIP: $py cannot import numpy and onnx (python3-onnx)"; exit 77; }
[ -f "$images/astronaut.png" ] || { echo "SKIP: no images in $images (python3-skimage)"; exit 77; }
models=$work/models
mkdir -p "$models"
[ -s "$models/yolov8n-pose-640.onnx" ] || $py "$src/tests/models/make_segpose_models.py" "$models" >/dev/null
vulkan=
"$reel" devices 2>/dev/null | grep -q '^vulkan:0' && vulkan=1

# The model's input: the image scaled to size x size, RGB in [0, 1], NCHW.
image_npy() {
  local img=$1 size=$2 npy=$work/$1-$2.npy
  ffmpeg -v error -y -i "$images/$img.png" -vf "scale=$size:$size" -pix_fmt rgb24 -f rawvideo "$work/in.rgb"
  $py -c "import numpy as n; a=n.fromfile('$work/in.rgb',n.uint8).reshape(1,$size,$size,3); \
n.save('$npy',n.ascontiguousarray(a.transpose(0,3,1,2)/255,n.float32))"
}

# The partition in a placement line: every node on the device, in one partition.
wholly_on_device() { grep -Eq ": [1-9][0-9]* nodes on the device, 0 on the cpu, 1 partition;" "$1"; }

# compare NAME OURS REF: every output of REF matched by OURS; then, in the
# detections output ([1, rows, anchors]), each part within 1e-4 of its own
# largest magnitude: the scores (at most 1) are not judged by the boxes'
# scale (up to 640).
compare() {
  echo "$1:"
  if $py "$src/tests/models/compare_npy.py" "$2" "$3" 1e-4; then ok; else bad "$1 differs from ONNX Runtime"; fi
  if $py - "$2" "$3" <<'PY'; then ok; else bad "$1: a part of the detections differs from ONNX Runtime"; fi
import os, sys
import numpy as np
ours, ref = sys.argv[1:]
bad = 0
for f in sorted(os.listdir(ref)):
    r = np.load(os.path.join(ref, f))
    if r.ndim != 3 or r.shape[2] < 8:
        continue  # not detections: the prototypes
    o = np.load(os.path.join(ours, f)).astype(np.float64)
    rows = r.shape[1]
    # pose: box, score, 3 per keypoint (5 + 3K rows); seg: box, classes, 32 coefficients
    parts = ({"boxes": (0, 4), "score": (4, 5), "keypoints": (5, rows)} if (rows - 5) % 3 == 0 and rows < 116 else
             {"boxes": (0, 4), "scores": (4, rows - 32), "coefficients": (rows - 32, rows)})
    for name, (a, b) in parts.items():
        scale = max(float(np.abs(r[:, a:b]).max()), 1e-12)
        err = float(np.abs(o[:, a:b] - r[:, a:b]).max()) / scale
        print(f"  {f} {name} (rows {a}-{b - 1}): max error {err:.2e} of their largest magnitude {scale:.3g}")
        bad += err > 1e-4
sys.exit(1 if bad else 0)
PY
}

# check NAME MODEL INPUT_NAME INPUT.npy DEVICES: ORT, then reel on each of
# DEVICES ("cpu", "vulkan:0") against it.
check() {
  local name=$1 model=$2 input=$3 npy=$4 dir=$work/out/$1 dev
  rm -rf "$dir" && mkdir -p "$dir/ort"
  node "$src/tests/models/ort_run.js" "$ort" "$model" "$dir/ort" "$input=$npy"
  for dev in $5; do
    if [ "$dev" = vulkan:0 ] && [ -z "$vulkan" ]; then
      skip_check "$name on vulkan:0: no Vulkan device"
      continue
    fi
    mkdir -p "$dir/$dev"
    "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/$dev" --threads 1 --device "$dev" \
      2> "$dir/$dev.placement"
    if [ "$dev" = vulkan:0 ]; then
      cat "$dir/$dev.placement"
      if wholly_on_device "$dir/$dev.placement"; then ok; else bad "$name: not every node on vulkan:0"; fi
    fi
    compare "$name on $dev" "$dir/$dev" "$dir/ort"
  done
}

image_npy astronaut 640
image_npy coffee 640
image_npy astronaut 160
for m in seg pose; do
  check "yolov8n-$m-astronaut" "$models/yolov8n-$m-640.onnx" input "$work/astronaut-640.npy" "cpu vulkan:0"
  check "yolov8n-$m-coffee" "$models/yolov8n-$m-640.onnx" input "$work/coffee-640.npy" cpu
  check "$m-known" "$models/$m-known.onnx" images "$work/astronaut-160.npy" "cpu vulkan:0"
done
finish

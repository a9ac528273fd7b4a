#!/usr/bin/env bash
# PP-OCRv4's detector, recognizer and angle classifier against ONNX Runtime
# on a real image: words ffmpeg draws in DejaVu Sans; the detector on the
# whole frame (ImageNet-normalized BGR), the recognizer on each word's crop
# at height 48 ([-1, 1] BGR, as PaddleOCR feeds it), the classifier on a
# batch of crops at 48x192 (aspect kept, squeezed or padded right with zeros,
# as PaddleOCR's cls resize): each word upright and turned 180 degrees.
# Every output must match ORT's within 1e-4 of its largest magnitude. Needs
# the models and ONNX Runtime in cache/ (scripts/fetch-models --ort
# ppocr-det ppocr-rec ppocr-cls).
# Usage: test_ppocr_vs_ort.sh REEL SOURCE_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 work=$3
py=/usr/bin/python3
font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
. "$src/tests/support/lib.sh"
ort=$src/cache/ort/node_modules/onnxruntime-node
det=$src/cache/models/ppocr/ch_PP-OCRv4_det_infer.onnx rec=$src/cache/models/ppocr/ch_PP-OCRv4_rec_infer.onnx
cls=$src/cache/models/ppocr/ch_ppocr_mobile_v2.0_cls_infer.onnx
for f in "$det" "$rec" "$cls"; do
  [ -s "$f" ] || { echo "SKIP: no $f (run scripts/fetch-models --ort ppocr-det ppocr-rec ppocr-cls)"; exit 77; }
done
[ -d "$ort" ] || { echo "SKIP: no ONNX Runtime in $ort (run scripts/fetch-models --ort)"; exit 77; }
command -v node >/dev/null || { echo "SKIP: node is needed to run ONNX Runtime (Debian package nodejs)"; exit 77; }
$py -c "import numpy" 2>/dev/null || { echo "SKIP: $py cannot import numpy (python3-numpy)"; exit 77; }
[ -f "$font" ] || { echo "SKIP: no $font (fonts-dejavu-core)"; exit 77; }
mkdir -p "$work"

# check NAME MODEL INPUT.npy: both runtimes, then the comparison.
check() {
  local name=$1 model=$2 npy=$3 dir=$work/out/$1
  rm -rf "$dir"
  mkdir -p "$dir/reel" "$dir/ort"
  "$reel" model run "$model" --input "x=$npy" --output-dir "$dir/reel" --threads 1
  node "$src/tests/models/ort_run.js" "$ort" "$model" "$dir/ort" "x=$npy"
  echo "$name:"
  if $py "$src/tests/models/compare_npy.py" "$dir/reel" "$dir/ort" 1e-4; then
    ok
  else
    bad "$name differs from ONNX Runtime"
  fi
}

ffmpeg -v error -y -f lavfi -i color=c=white:s=640x384 -frames:v 1 \
  -vf "drawtext=fontfile=$font:text='REEL 2026':fontsize=56:fontcolor=black:x=60:y=60,\
drawtext=fontfile=$font:text='hello world':fontsize=48:fontcolor=black:x=200:y=250" \
  -pix_fmt bgr24 -f rawvideo "$work/words.bgr"
$py - "$work" <<'PY'
import sys
import numpy as n
work = sys.argv[1]
bgr = n.fromfile(f"{work}/words.bgr", n.uint8).reshape(384, 640, 3).astype(n.float32) / 255
mean, std = n.array([0.485, 0.456, 0.406], n.float32), n.array([0.229, 0.224, 0.225], n.float32)
n.save(f"{work}/det.npy", n.ascontiguousarray(((bgr - mean) / std).transpose(2, 0, 1)[None], n.float32))
# Each word's ink, 6 px around, scaled to height 48 (nearest rows and
# columns) and at most max_w wide.
def scaled(crop, max_w=None):
    w = int(n.ceil(48 * crop.shape[1] / crop.shape[0]))
    w = min(w, max_w) if max_w else w
    ys = ((n.arange(48) + 0.5) * crop.shape[0] / 48).astype(int)
    xs = ((n.arange(w) + 0.5) * crop.shape[1] / w).astype(int)
    return ((crop[ys][:, xs] - 0.5) / 0.5).transpose(2, 0, 1)
cls = []
for name, rows in (("rec-reel", slice(0, 192)), ("rec-hello", slice(192, 384))):
    ink = n.argwhere(bgr[rows].min(axis=2) < 0.5)
    (y0, x0), (y1, x1) = ink.min(0) - 6, ink.max(0) + 7
    crop = bgr[rows][y0:y1, x0:x1]
    n.save(f"{work}/{name}.npy", n.ascontiguousarray(scaled(crop)[None], n.float32))
    # The classifier's: upright and turned; "REEL" alone (narrower than
    # 192 at height 48) padded right with zeros.
    for c in (crop, crop[::-1, ::-1], crop[:, : crop.shape[1] * 4 // 9]):
        x = n.zeros((3, 48, 192), n.float32)
        s = scaled(c, 192)
        x[:, :, : s.shape[2]] = s
        cls.append(x)
n.save(f"{work}/cls.npy", n.ascontiguousarray(n.stack(cls), n.float32))
PY
check ppocr-det "$det" "$work/det.npy"
check ppocr-rec-reel "$rec" "$work/rec-reel.npy"
check ppocr-rec-hello "$rec" "$work/rec-hello.npy"
check ppocr-cls "$cls" "$work/cls.npy"

# reel model bench at a shape for the recognizer's symbolic dims (at 1 its
# width is too narrow for its pooling), and shapes that do not fit refused.
if out=$("$reel" model bench "$rec" --shape x=1x3x48x160 --runs 2 --threads 1 2>&1) \
  && grep -q "input x: 1x3x48x160" <<< "$out"; then
  ok
else
  bad "model bench --shape x=1x3x48x160: $out"
fi
for shape in x=1x3x32x160 x=1x3x48 y=1x3x48x160; do
  if out=$("$reel" model bench "$rec" --shape $shape --runs 1 2>&1); then
    bad "model bench --shape $shape was accepted"
  elif grep -Eq -- "--shape $shape( does not fit input x, declared \?x3x48x\?|: the model has no such input)" <<< "$out"; then
    ok
  else
    bad "model bench --shape $shape: unexpected message: $out"
  fi
done
finish

#!/usr/bin/env bash
# Models on Vulkan (lavapipe without a GPU, validation layer on): each
# model's outputs with `--device vulkan:0` match the cpu runtime's within
# 1e-4 of their largest magnitude (BlazeFace front and back on a real image;
# models shaped like MobileNetV2, ResNet-18 and YOLOv8n), every node of them
# on the device (0 on the cpu, one partition); a node kept on the cpu splits
# the model in partitions with exactly the expected bytes crossing; strict
# placement refuses that, naming the node; a device memory limit puts a
# prefix on the device and leaves the outputs unchanged.
# precision=fp16 (float16 on the device), as the README says: BlazeFace
# within 3.5e-3 of the cpu's largest output magnitude, the others within
# 6e-4 (measured on lavapipe: BlazeFace front 1.43e-3, back 3.02e-3,
# MobileNetV2 5.08e-4, ResNet-18 5.65e-4, YOLOv8n 5.10e-4), still wholly on
# the device, the device arena half of fp32's, half the bytes crossing at a
# partition edge, fp16 refused on the cpu, and a face pipeline with infer
# precision=fp16 finding the faces fp32 finds, boxes and landmarks within
# 0.07 px (measured 0.066 and 0.067), scores within 1e-3 (measured 1e-4).
# Needs the models in cache/ (scripts/fetch-models --ort).
# Usage: test_vulkan_models.sh REEL SOURCE_DIR TEST_MODELS_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 models=$3 work=$4
py=/usr/bin/python3
img=/usr/lib/python3/dist-packages/skimage/data/astronaut.png
. "$src/tests/support/lib.sh"
if ! "$reel" devices 2>/dev/null | grep '^vulkan:0' >/dev/null; then
  echo "SKIP: no Vulkan device"; exit 77
fi
for m in front_128x128 back_256x256; do
  f=$src/cache/models/blazeface/face_detection_${m}_barracuda.onnx
  [ -s "$f" ] || { echo "SKIP: no $f (run scripts/fetch-models --ort)"; exit 77; }
done
$py -c "import numpy, onnx" 2>/dev/null || { echo "SKIP: $py cannot import numpy and onnx (python3-onnx)"; exit 77; }
[ -f "$img" ] || { echo "SKIP: no $img (python3-skimage)"; exit 77; }
[ -s "$models/chain.onnx" ] || { echo "SKIP: no $models/chain.onnx (make_models.py writes it)"; exit 77; }
mkdir -p "$work/shaped"
[ -s "$work/shaped/yolov8n-320.onnx" ] || $py "$src/tests/models/make_shaped_models.py" "$work/shaped" >/dev/null

# check WHAT COMMAND...: one verdict.
check() {
  local what=$1
  shift
  if "$@"; then ok; else bad "$what"; fi
}

# The partition in a placement line: every node on the device, in one partition.
wholly_on_device() { grep -Eq ": [1-9][0-9]* nodes on the device, 0 on the cpu, 1 partition;" "$1"; }

# same MODEL INPUT NPY FP16_TOL: cpu and vulkan:0 agree, every node on the
# device; then same_fp16 within FP16_TOL.
same() {
  local model=$1 input=$2 npy=$3 tol=$4 name dir
  name=$(basename "$model" .onnx) dir=$work/out/$name
  rm -rf "$dir" && mkdir -p "$dir/cpu" "$dir/vk"
  "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/cpu" --threads 1
  "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/vk" --device vulkan:0 2> "$dir/placement"
  cat "$dir/placement"
  check "$name: not every node on vulkan:0" wholly_on_device "$dir/placement"
  echo "$name:"
  check "$name differs between cpu and vulkan:0" $py "$src/tests/models/compare_npy.py" "$dir/vk" "$dir/cpu" 1e-4
  same_fp16 "$model" "$input" "$npy" "$tol"
}

# The device arena in a placement line.
arena_of() { sed -n 's/.*device arena \([0-9]*\) bytes.*/\1/p' "$1"; }

# same_fp16 MODEL INPUT NPY TOL: after same(), fp16 on vulkan:0 against the
# cpu's outputs within TOL, every node on the device, with half the device
# arena of fp32.
same_fp16() {
  local model=$1 input=$2 npy=$3 tol=$4 name dir a32 a16
  name=$(basename "$model" .onnx) dir=$work/out/$name
  "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/vk16" --device vulkan:0 --precision fp16 \
    2> "$dir/placement16"
  cat "$dir/placement16"
  check "$name in fp16: not every node on vulkan:0" wholly_on_device "$dir/placement16"
  echo "$name in fp16:"
  check "$name in fp16 differs from the cpu" $py "$src/tests/models/compare_npy.py" "$dir/vk16" "$dir/cpu" "$tol"
  a32=$(arena_of "$dir/placement") a16=$(arena_of "$dir/placement16")
  if [ -n "$a16" ] && [ "$a16" -gt 0 ] && [ $((2 * a16)) -eq "$a32" ]; then
    ok
  else
    bad "$name: device arena $a16 bytes in fp16, $a32 in fp32"
  fi
}

for size in 128 256; do
  npy=$work/face-$size.npy
  ffmpeg -v error -y -i "$img" -vf "scale=$size:$size" -pix_fmt rgb24 -f rawvideo "$work/in.rgb"
  $py -c "import numpy as n; a=n.fromfile('$work/in.rgb',n.uint8).reshape(1,$size,$size,3); n.save('$npy',(a/127.5-1).astype(n.float32))"
done
# fp16 within these of the largest output magnitude (the README's figures).
blazeface_fp16=3.5e-3 others_fp16=6e-4
same "$src/cache/models/blazeface/face_detection_front_128x128_barracuda.onnx" input:0 "$work/face-128.npy" \
  $blazeface_fp16
same "$src/cache/models/blazeface/face_detection_back_256x256_barracuda.onnx" input:0 "$work/face-256.npy" \
  $blazeface_fp16
for spec in mobilenetv2-224:224 resnet18-224:224 yolov8n-320:320; do
  size=${spec##*:} npy=$work/random-$size.npy
  $py -c "import numpy as n; n.save('$npy', n.random.RandomState(7).rand(1,3,$size,$size).astype(n.float32))"
  same "$work/shaped/${spec%%:*}.onnx" input "$npy" $others_fp16
done

# Relu -> Sigmoid -> Relu with Sigmoid on the cpu: 3 partitions; the input
# goes up, the first Relu's output down, the Sigmoid's up, the result down:
# 1 KiB each (1x4x8x8 floats).
chain=$models/chain.onnx npy=$work/chain.npy
$py -c "import numpy as n; n.save('$npy', (n.random.RandomState(3).rand(1,4,8,8)*2-1).astype(n.float32))"
out=$(REEL_VULKAN_CPU_OPS=Sigmoid "$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain" \
  --device vulkan:0 2>&1)
echo "$out"
check "chain: unexpected partition" grep -q \
  "2 nodes on the device, 1 on the cpu, 3 partitions; per inference 2048 bytes to the device, 2048 back" <<< "$out"
if out=$(REEL_VULKAN_CPU_OPS=Sigmoid "$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain" \
  --device vulkan:0 --strict 2>&1); then
  bad "strict placement accepted a fallback"
fi
echo "$out"
check "strict: the message does not name the node" grep -q \
  "placement=strict: 1 node would run on the cpu, not on vulkan:0: middle (Sigmoid)" <<< "$out"

# A limit that holds the first Relu's tensors (two of 1 KiB) but not the
# next node's: a prefix on the device, the rest on the cpu, same result.
out=$("$reel" model run "$chain" --input X="$npy" --output-dir "$work/limited" --device vulkan:0 \
  --device-memory-limit 2500 2>&1)
echo "$out"
check "limit: unexpected partition" grep -q "1 nodes on the device, 2 on the cpu, 2 partitions" <<< "$out"
"$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain-cpu"
check "limit: outputs differ" $py "$src/tests/models/compare_npy.py" "$work/limited" "$work/chain-cpu" 1e-6
# fp16 with the Sigmoid on the cpu: float16 crosses, half the bytes.
out=$(REEL_VULKAN_CPU_OPS=Sigmoid "$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain16" \
  --device vulkan:0 --precision fp16 2>&1)
echo "$out"
check "chain in fp16: unexpected partition" grep -q "vulkan:0 (fp16): 2 nodes on the device, 1 on the cpu, \
3 partitions; per inference 1024 bytes to the device, 1024 back" <<< "$out"
# Relu and Sigmoid of float16 values: one rounding each way.
check "chain in fp16: outputs differ" $py "$src/tests/models/compare_npy.py" "$work/chain16" "$work/chain-cpu" 2e-3
# A real model split by a node kept on the cpu in fp16: within the same 6e-4.
mdir=$work/out/mobilenetv2-224
REEL_VULKAN_CPU_OPS=GlobalAveragePool "$reel" model run "$work/shaped/mobilenetv2-224.onnx" \
  --input input="$work/random-224.npy" --output-dir "$mdir/split16" --device vulkan:0 --precision fp16 2>&1 \
  | tee "$mdir/split16.txt"
check "mobilenetv2 in fp16: unexpected partition" grep -q "1 on the cpu, 3 partitions" "$mdir/split16.txt"
check "mobilenetv2 split in fp16 differs" $py "$src/tests/models/compare_npy.py" "$mdir/split16" "$mdir/cpu" \
  $others_fp16
# fp16 needs a GPU with 16-bit floats.
if out=$("$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain-x" --precision fp16 2>&1); then
  bad "fp16 on the cpu was accepted"
fi
echo "$out"
check "fp16 on the cpu: unexpected message" grep -q \
  "precision=fp16 needs a GPU with 16-bit float support; cpu has none" <<< "$out"

# A face pipeline on vulkan:0, the model's input bound from preprocess's
# device memory (converted there: nothing crosses), fp16 against fp32.
clip=$work/faces.mp4
[ -s "$clip" ] || "$src/scripts/make-faces-clip" "$clip" 12
pipeline="source location=$clip ! decode ! preprocess ! infer model=blazeface-front precision=PREC ! detect"
for prec in fp32 fp16; do
  if "$reel" run --report --device vulkan:0 "${pipeline/PREC/$prec} ! metasink location=$work/faces-$prec.jsonl" \
    > "$work/faces-$prec.txt" 2>&1; then
    ok
  else
    bad "face pipeline in $prec failed"
  fi
done
grep "model blazeface-front" "$work/faces-fp16.txt" || true
check "faces in fp16: the input crossed or nodes ran on the cpu" grep -q \
  "model blazeface-front (fp16): all [0-9]* nodes on the device; per inference 0 bytes to the device" \
  "$work/faces-fp16.txt"
# On the cpu the element refuses fp16, naming itself.
if out=$("$reel" run -q "${pipeline/PREC/fp16} ! metasink location=$work/faces-cpu.jsonl" 2>&1); then
  bad "infer precision=fp16 on the cpu was accepted"
fi
echo "$out"
check "infer precision=fp16 on the cpu: unexpected message" grep -q \
  "infer0: precision=fp16 needs a GPU with 16-bit float support; cpu has none" <<< "$out"
# The clip's two faces in every frame, fp16's within 0.07 px of fp32's.
check "faces in fp16 differ from fp32" $py - "$work/faces-fp32.jsonl" "$work/faces-fp16.jsonl" <<'PY'
import json, sys
runs = [[json.loads(l).get("detections", []) for l in open(p)] for p in sys.argv[1:]]
PX, SCORE = 0.07, 1e-3
bad, faces, worst, worst_mark, worst_score = 0, 0, 0.0, 0.0, 0.0
if len(runs[0]) != len(runs[1]) or not runs[0]:
    sys.exit(f"{len(runs[0])} frames in fp32, {len(runs[1])} in fp16")
for n, (a, b) in enumerate(zip(*runs)):
    if len(a) != 2 or len(b) != 2:
        print(f"frame {n}: {len(a)} faces in fp32, {len(b)} in fp16; the clip has 2")
        bad += 1
        continue
    for d in a:
        e = min(b, key=lambda e: max(abs(x - y) for x, y in zip(d["box"], e["box"])))
        err = max(abs(x - y) for x, y in zip(d["box"], e["box"]))
        mark = max(abs(x - y) for p, q in zip(d["landmarks"], e["landmarks"]) for x, y in zip(p, q))
        score = abs(d["score"] - e["score"])
        worst, worst_mark, worst_score = max(worst, err), max(worst_mark, mark), max(worst_score, score)
        faces += 1
        if err > PX or mark > PX or score > SCORE:
            print(f"frame {n}: box {d['box']} off by {err:.3f} px, landmarks by {mark:.3f} px, score by {score:.4f}")
            bad += 1
print(f"faces: {faces} in {len(runs[0])} frames, fp16 boxes within {worst:.3f} px of fp32, "
      f"landmarks within {worst_mark:.3f} px, scores within {worst_score:.4f}")
sys.exit(1 if bad or not faces else 0)
PY

finish

#!/usr/bin/env bash
# Models on Vulkan (lavapipe without a GPU, validation layer on): each
# model's outputs with `--device vulkan:0` match the cpu runtime's within
# 1e-4 of their largest magnitude (BlazeFace front and back on a real image;
# models shaped like MobileNetV2, ResNet-18 and YOLOv8n); a node kept on the
# cpu splits the model in partitions with exactly the expected bytes
# crossing; strict placement refuses that, naming the node; a device memory
# limit puts a prefix on the device and leaves the outputs unchanged.
# Usage: test_vulkan_models.sh REEL SOURCE_DIR TEST_MODELS_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 models=$3 work=$4
py=/usr/bin/python3
if ! "$reel" devices 2>/dev/null | grep -q '^vulkan:0'; then
  echo "SKIP: no Vulkan device"; exit 77
fi
(cd "$src" && scripts/fetch-models >/dev/null)
mkdir -p "$work/shaped"
[ -s "$work/shaped/yolov8n-320.onnx" ] || $py "$src/tests/models/make_shaped_models.py" "$work/shaped" >/dev/null
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# same MODEL INPUT NPY [OPTIONS...]: cpu and vulkan:0 agree.
same() {
  local model=$1 input=$2 npy=$3 name dir
  shift 3
  name=$(basename "$model" .onnx) dir=$work/out/$name
  rm -rf "$dir" && mkdir -p "$dir/cpu" "$dir/vk"
  "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/cpu" --threads 1
  "$reel" model run "$model" --input "$input=$npy" --output-dir "$dir/vk" --device vulkan:0 "$@" 2> "$dir/placement"
  cat "$dir/placement"
  echo "$name:"
  $py "$src/tests/models/compare_npy.py" "$dir/vk" "$dir/cpu" 1e-4 || fail "$name differs between cpu and vulkan:0"
}

img=/usr/lib/python3/dist-packages/skimage/data/astronaut.png
for size in 128 256; do
  npy=$work/face-$size.npy
  ffmpeg -v error -y -i "$img" -vf "scale=$size:$size" -pix_fmt rgb24 -f rawvideo "$work/in.rgb"
  $py -c "import numpy as n; a=n.fromfile('$work/in.rgb',n.uint8).reshape(1,$size,$size,3); n.save('$npy',(a/127.5-1).astype(n.float32))"
done
same "$src/cache/models/blazeface/face_detection_front_128x128_barracuda.onnx" input:0 "$work/face-128.npy"
same "$src/cache/models/blazeface/face_detection_back_256x256_barracuda.onnx" input:0 "$work/face-256.npy"
for spec in mobilenetv2-224:224 resnet18-224:224 yolov8n-320:320; do
  size=${spec##*:} npy=$work/random-$size.npy
  $py -c "import numpy as n; n.save('$npy', n.random.RandomState(7).rand(1,3,$size,$size).astype(n.float32))"
  same "$work/shaped/${spec%%:*}.onnx" input "$npy"
done

# Relu -> Sigmoid -> Relu with Sigmoid on the cpu: 3 partitions; the input
# goes up, the first Relu's output down, the Sigmoid's up, the result down:
# 1 KiB each (1x4x8x8 floats).
chain=$models/chain.onnx npy=$work/chain.npy
$py -c "import numpy as n; n.save('$npy', (n.random.RandomState(3).rand(1,4,8,8)*2-1).astype(n.float32))"
out=$(REEL_VULKAN_CPU_OPS=Sigmoid "$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain" \
  --device vulkan:0 2>&1)
echo "$out"
grep -q "2 nodes on the device, 1 on the cpu, 3 partitions; per inference 2048 bytes to the device, 2048 back" \
  <<< "$out" || fail "chain: unexpected partition"
if out=$(REEL_VULKAN_CPU_OPS=Sigmoid "$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain" \
  --device vulkan:0 --strict 2>&1); then
  fail "strict placement accepted a fallback"
fi
echo "$out"
grep -q "placement=strict: 1 node would run on the cpu, not on vulkan:0: middle (Sigmoid)" <<< "$out" \
  || fail "strict: the message does not name the node"

# A limit that holds the first Relu's tensors (two of 1 KiB) but not the
# next node's: a prefix on the device, the rest on the cpu, same result.
out=$("$reel" model run "$chain" --input X="$npy" --output-dir "$work/limited" --device vulkan:0 \
  --device-memory-limit 2500 2>&1)
echo "$out"
grep -q "1 nodes on the device, 2 on the cpu, 2 partitions" <<< "$out" || fail "limit: unexpected partition"
"$reel" model run "$chain" --input X="$npy" --output-dir "$work/chain-cpu"
$py "$src/tests/models/compare_npy.py" "$work/limited" "$work/chain-cpu" 1e-6 || fail "limit: outputs differ"
[ "$failed" -eq 0 ] && echo "all passed"
exit $failed

#!/usr/bin/env bash
# QDQ folding and the com.microsoft QLinear ops on models make_qdq_models.py
# builds (python3-onnx; random weights quantized as ONNX Runtime's quantizer
# does). For each QDQ model: `reel model info` shows the fold ("qdq: N
# nodes folded into M") and the expected op counts, and with
# REEL_QDQ_FOLD=0 no fold; the folded outputs are within one quantization
# step of the output's scale of the float path's (REEL_QDQ_FOLD=0) and of
# ONNX Runtime's. The com.microsoft models (Q, the op, DQ; uint8 and int8)
# against ONNX Runtime, within one step; malformed com.microsoft nodes are
# refused at load naming the node. With a Vulkan device, the folded
# models there match the cpu's. ORT comes from cache/ort
# (scripts/fetch-models --ort); without it those comparisons skip.
# Usage: test_qdq.sh REEL SOURCE_DIR WORK_DIR
set -euo pipefail
reel=$1 src=$2 work=$3
py=/usr/bin/python3
. "$src/tests/support/lib.sh"
ort=$src/cache/ort/node_modules/onnxruntime-node
$py -c "import numpy, onnx" 2>/dev/null || { echo "SKIP: $py cannot import numpy and onnx (python3-onnx)"; exit 77; }
have_ort=1 have_vk=0
"$reel" devices 2>/dev/null | grep -q '^vulkan:0' && have_vk=1
[ -d "$ort" ] && command -v node >/dev/null || have_ort=0
rm -rf "$work"
mkdir -p "$work"
$py "$src/tests/models/make_qdq_models.py" "$work/models"

# compare NAME WHAT A_DIR B_DIR STEP
compare() {
  echo "$1: $2"
  if $py "$src/tests/models/make_qdq_models.py" compare "$3" "$4" "$5"; then
    ok
  else
    bad "$1: $2 differ by more than one step"
  fi
}

while read -r name step expect; do
  m=$work/models/$name.onnx npy=$work/models/$name.npy out=$work/out/$name
  mkdir -p "$out/fold" "$out/float" "$out/ort"
  if [ -n "$expect" ]; then
    info=$("$reel" model info "$m")
    for e in $expect; do
      op=${e%=*} want=${e#*=}
      if [ "$op" = qdq ]; then
        have=$(grep -Ec '^  qdq: [0-9]+ nodes folded into [0-9]+$' <<<"$info" || true)
      else
        have=$(awk -v op="$op" '$1 == op { print $2 }' <<<"$info")
      fi
      if [ "${have:-0}" = "$want" ]; then ok; else bad "$name: $op x${have:-0} after folding, expected $want"; fi
    done
    info0=$(REEL_QDQ_FOLD=0 "$reel" model info "$m")
    if ! grep -q 'qdq:' <<<"$info0" && ! grep -Eq '^    (QLinear|com\.microsoft)' <<<"$info0"; then
      ok
    else
      bad "$name: REEL_QDQ_FOLD=0 still folds: $info0"
    fi
    REEL_QDQ_FOLD=0 "$reel" model run "$m" --input "input=$npy" --output-dir "$out/float" --threads 2 >/dev/null
  fi
  "$reel" model run "$m" --input "input=$npy" --output-dir "$out/fold" --threads 2 >/dev/null
  [ -z "$expect" ] || compare "$name" "folded vs REEL_QDQ_FOLD=0" "$out/fold" "$out/float" "$step"
  # On vulkan:0 the 8-bit nodes stay on the cpu, float ones between them go to the device.
  if [ -n "$expect" ] && [ "$have_vk" = 1 ]; then
    mkdir -p "$out/vk"
    REEL_VULKAN_VALIDATION=1 "$reel" model run "$m" --input "input=$npy" --output-dir "$out/vk" --device vulkan:0 \
      >/dev/null 2>"$out/vk.log"
    compare "$name" "vulkan:0 vs cpu" "$out/vk" "$out/fold" "$step"
  fi
  if [ "$have_ort" = 1 ]; then
    node "$src/tests/models/ort_run.js" "$ort" "$m" "$out/ort" "input=$npy"
    compare "$name" "reel vs ONNX Runtime" "$out/fold" "$out/ort" "$step"
  fi
done <"$work/models/manifest.txt"
# Bad com.microsoft nodes: refused at load with the node named, no crash.
while read -r name node; do
  set +e
  msg=$("$reel" model info "$work/models/$name.onnx" 2>&1)
  rc=$?
  set -e
  if [ "$rc" = 1 ] && grep -q "node '$node' (com.microsoft:" <<<"$msg"; then
    ok
  else
    bad "$name: expected a refusal naming node '$node' (exit 1), got exit $rc: $msg"
  fi
  echo "$name: ${msg##*: }"
done <"$work/models/refusals.txt"
[ "$have_ort" = 1 ] || skip_check "no ONNX Runtime in $ort or no node: the comparisons with it did not run"
finish

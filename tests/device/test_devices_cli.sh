#!/usr/bin/env bash
# `reel devices` as a user meets it. Usage: test_devices_cli.sh PATH_TO_REEL
set -u
reel=$1
fail=0
bad() { fail=1; echo "FAIL: $*"; }

out=$("$reel" devices 2>&1) || bad "reel devices: exit $?"
for field in '^cpu ' 'backend cpu, type cpu' 'driver' 'uuid' 'heap 0' 'fp16' 'int8' 'subgroup' 'external memory'; do
  grep -qE -- "$field" <<<"$out" || bad "reel devices lacks /$field/"$'\n'"$out"
done
if vulkaninfo --summary >/dev/null 2>&1; then
  grep -qE '^vulkan:0 ' <<<"$out" || bad "reel devices lists no Vulkan device"$'\n'"$out"
fi
out=$("$reel" devices cpu 2>&1) || bad "reel devices cpu: exit $?"
grep -q '^cpu ' <<<"$out" || bad "reel devices cpu: $out"
out=$("$reel" devices no-such-gpu 2>&1)
rc=$?
[ "$rc" -eq 1 ] || bad "reel devices no-such-gpu: exit $rc, wanted 1"
grep -q "no device matches 'no-such-gpu'" <<<"$out" || bad "unknown device message: $out"
grep -qE '^  cpu ' <<<"$out" || bad "unknown device message does not list the devices: $out"
"$reel" devices a b >/dev/null 2>&1
[ $? -eq 2 ] || bad "reel devices a b: wanted usage error"
exit $fail

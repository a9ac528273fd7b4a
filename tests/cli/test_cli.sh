#!/usr/bin/env bash
# The reel program as a user meets it: exit codes, messages, inspect, files,
# and Ctrl-C. Usage: test_cli.sh PATH_TO_REEL
set -u
reel=$1
. "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect CODE PATTERN -- ARGS...: runs reel, checks exit code and that the
# combined output matches the (grep -E) pattern.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$("$reel" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then bad "reel $*: exit $rc, wanted $code"$'\n'"$out"; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then bad "reel $*: output lacks /$pattern/"$'\n'"$out"; return; fi
  ok
}

expect 0 '^reel [0-9]+\.[0-9]+\.[0-9]+$' -- --version
expect 0 'usage: reel COMMAND' -- --help
expect 2 'usage: reel COMMAND' --
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 0 'done: 30 frames' -- run "testsrc num-buffers=30 ! fakesink"
expect 0 'fakesink0: 10 buffers, md5 [0-9a-f]{32}' -- run "testsrc num-buffers=10 ! fakesink checksum=true"
expect 0 'queue0 +queue +cpu +cpu +20 +20' -- run --report "testsrc num-buffers=20 ! queue ! fakesink"
expect 2 'usage: reel run' -- run
expect 2 "bad option '--frobnicate'" -- run --frobnicate "testsrc ! fakesink"
# Options after the description, as GNU tools take them; '--' ends them.
expect 0 'queue0 +queue +cpu +cpu +20 +20' -- run "testsrc num-buffers=20 ! queue ! fakesink" --report
expect 0 'queue0 +queue +cpu +cpu +3 +3' -- run --threads 1 testsrc num-buffers=3 ! queue ! fakesink --report
expect 2 "bad option '--frobnicate'" -- run "testsrc ! fakesink" --frobnicate
expect 2 "unknown element '--report'" -- run -- "testsrc num-buffers=2 ! fakesink" --report
expect 0 'done: 4 frames' -- run -- testsrc num-buffers = 4 ! fakesink
expect 2 'give a description or -f FILE' -- run --report --
if "$reel" inspect natssink >/dev/null 2>&1; then # submit needs NATS: checked at the end otherwise
  expect 2 "bad option '--frobnicate'" -- submit "testsrc ! fakesink" --frobnicate
  expect 2 'give a description or -f FILE' -- submit --live --
fi
# Spaces around '=' as gst-launch-1.0 takes them, and GStreamer's caps.
expect 0 'done: 4 frames' -- run "testsrc num-buffers = 4 ! fakesink"
expect 0 'done: 27 frames' -- run "testsrc num-buffers= 27 ! fakesink"
expect 0 'done: 5 frames' -- run "testsrc num-buffers =5 ! fakesink"
expect 0 'done: 3 frames' -- run --dot "$tmp/gst.dot" \
  "testsrc num-buffers=3 ! 'video/x-raw, format=(string)RGB, width=(int)320, height=(int)240' ! fakesink"
if grep -qF '"testsrc0" -> "capsfilter0" [label="video/raw\nformat=rgb24\nwidth=320\nheight=240\n' "$tmp/gst.dot"; then
  ok
else
  bad "GStreamer caps: testsrc0's output"; cat "$tmp/gst.dot"
fi
expect 2 "pipeline:1:9: error: unknown property 'num-bufers'" -- run "testsrc num-bufers = 3 ! fakesink"
expect 2 'hint: .*GStreamer.s GRAY8, RGB' -- run "testsrc ! video/x-raw,format=YUY2 ! fakesink"

# Bad descriptions: exit 2 with position, caret and hint.
expect 2 "pipeline:1:11: error: unknown element 'fakesnk'" -- run "testsrc ! fakesnk"
expect 2 "did you mean 'fakesink'" -- run "testsrc ! fakesnk"
expect 2 '^ +\| +\^~~~~~~$' -- run "testsrc ! fakesnk"
expect 2 "pipeline:1:9: error: .*property 'widht'" -- run "testsrc widht=3 ! fakesink"
expect 2 "width" -- run "testsrc widht=3 ! fakesink"
expect 2 "pipeline:1:15" -- run "testsrc width=abc ! fakesink"
expect 2 "0 linked outputs" -- run "testsrc"
expect 2 "no format in common" -- run "testsrc ! tensor ! fakesink"

# A description from a file: multi-line, with comments; errors name the file.
cat >"$tmp/ok.reel" <<'P'
# two branches
testsrc num-buffers=12 ! tee name=t
t. ! queue ! fakesink   # first
t. ! queue ! fakesink
P
expect 0 'done: 12 frames' -- run -f "$tmp/ok.reel"
printf 'testsrc num-buffers=12\n  ! queue\n  ! fakesnik\n' >"$tmp/bad.reel"
expect 2 "bad.reel:3:5: error: unknown element 'fakesnik'" -- run -f "$tmp/bad.reel"
expect 2 "No such file" -- run -f "$tmp/missing.reel"

# Run-time failures exit 1 and name the element.
expect 1 "error: identity0: failing on buffer 3" -- run "testsrc ! identity error-after=3 ! fakesink"
expect 1 "fakesink0: cannot write '/nonexistent/x'" -- run "testsrc num-buffers=1 ! fakesink location=/nonexistent/x"

# inspect lists every element, and documents each from its property table.
expect 0 '^testsrc +Generates test video' -- inspect
for el in $("$reel" inspect | awk '{print $1}'); do
  expect 0 "^$el$" -- inspect "$el"
done
expect 0 'num-buffers +int' -- inspect testsrc
expect 0 'one of: no, upstream, downstream' -- inspect queue

# Every property row says whether it may change while the pipeline runs
# (mutable) or not (fixed), under a legend saying what the two mean.
expect 0 '^properties \(mutable: may change while the pipeline runs.*fixed: only before it starts\):$' -- inspect detect
for el in $("$reel" inspect | awk '{print $1}'); do
  rows=$("$reel" inspect "$el" | awk '/^properties/ { on = 1; next } on && /^  [^ ]/ { print $1, $3 }')
  if [ -z "$rows" ] || grep -qvE '^[a-z0-9-]+ (mutable|fixed)$' <<<"$rows"; then
    bad "inspect $el: a property row without mutable or fixed"$'\n'"$rows"
  else
    ok
  fi
done
listed=" $("$reel" inspect | awk '{print $1}' | tr '\n' ' ') "
for ep in detect:threshold detect:iou detect:max classify:top-k queue:max-size queue:leaky rate:fps \
          overlay:thickness overlay:font-scale overlay:labels overlay:landmarks identity:sleep-us \
          natssink:subject mqttsink:topic; do
  el=${ep%%:*} prop=${ep#*:}
  case $listed in
    *" $el "*) expect 0 "^  $prop +[a-z]+ +mutable " -- inspect "$el" ;;
    *) ;; # a module this build leaves out: checked at the end
  esac
done
expect 0 '^  decoder +enum +fixed ' -- inspect detect
expect 0 '^  max-bytes +int +fixed ' -- inspect queue
expect 0 '^  name +string +fixed ' -- inspect identity
expect 2 "no element called 'teee'; did you mean 'tee'" -- inspect teee

# Placement: every element reports where it was asked to run and where it
# ran; a fallback says why, and strict placement refuses it.
if "$reel" devices | grep -q '^vulkan:0 '; then
  expect 0 'testsrc0 +testsrc +vulkan:0 +cpu' -- run --report --device vulkan:0 "testsrc num-buffers=2 ! fakesink"
  expect 0 'testsrc has no implementation for vulkan:0; it runs on the cpu' -- run --report "device=vulkan:0 testsrc num-buffers=2 ! fakesink"
  expect 0 'fakesink0 +fakesink +cpu +cpu' -- run --report "testsrc num-buffers=2 device=vulkan:0 ! fakesink"
  expect 0 'upload0 +upload +vulkan:0 +vulkan:0 +3 +3 +[0-9.]+ +0 +691200 +0' -- run --report \
    "testsrc num-buffers=3 ! identity device=vulkan:0 ! fakesink"
  expect 1 "placement=strict: 'testsrc0' cannot run on vulkan:0" -- run --placement strict "device=vulkan:0 testsrc ! fakesink"
else
  skip_check "placement on vulkan:0 (no Vulkan device)"
fi
expect 2 "no device matches 'no-such-gpu'|no-such-gpu" -- run --device no-such-gpu "testsrc num-buffers=1 ! fakesink"
expect 2 "invalid placement 'sometimes'" -- run --placement sometimes "testsrc ! fakesink"
expect 2 "pipeline:1:1: error: unknown pipeline setting 'devise'" -- run "devise=cpu testsrc ! fakesink"

# Machine-readable outputs: the report as JSON, the graph, the trace.
expect 0 'done: 5 frames' -- run --report-json "$tmp/r.json" --dot "$tmp/g.dot" --trace "$tmp/t.json" \
  "testsrc num-buffers=5 ! queue ! fakesink"
if grep -q '"name": "queue0", "class": "queue", "device_requested": "cpu", "device": "cpu", "reason": "", "buffers_in": 5, "buffers_out": 5' "$tmp/r.json" \
   && grep -q '^  "testsrc0" -> "queue0" \[label="video/raw' "$tmp/g.dot" \
   && [ "$(grep -c '"ph": "M"' "$tmp/t.json")" = 3 ] \
   && [ "$(grep -c '"ph": "X"' "$tmp/t.json")" = 16 ]; then  # testsrc 5 + its EOS turn, queue 5, fakesink 5
  ok
else
  bad "report/dot/trace files"; cat "$tmp/r.json" "$tmp/g.dot"; grep -c '"ph"' "$tmp/t.json"
fi
expect 1 "cannot write '/nonexistent/r.json'" -- run --report-json /nonexistent/r.json "testsrc num-buffers=1 ! fakesink"

# Ctrl-C ends a run cleanly: exit 0, sinks finalized, whole lines. (Frames
# arriving also say reel's signal handlers are in place: a background job
# starts with SIGINT ignored.)
"$reel" run "testsrc is-live=true framerate=200 ! queue ! fakesink location=$tmp/frames.txt" >"$tmp/int.log" 2>&1 &
pid=$!
wait_until 30 lines_at_least "$tmp/frames.txt" 20 || bad "SIGINT: no frames after 30 s"
kill -INT "$pid"
wait "$pid"
rc=$?
lines=$(wc -l <"$tmp/frames.txt")
reported=$(sed -nE 's/.*done: ([0-9]+) frames.*/\1/p' "$tmp/int.log")
if [ "$rc" -eq 0 ] && grep -q "interrupted" "$tmp/int.log" && [ "$lines" -gt 0 ] && [ "$lines" = "$reported" ] \
   && [ "$(tail -c1 "$tmp/frames.txt" | od -An -c | tr -d ' ')" = '\n' ]; then
  ok
else
  bad "SIGINT: exit $rc, $lines lines, reported '$reported'"; cat "$tmp/int.log"
fi

# Optional parts: in a build that leaves NATS or MQTT out, their elements
# and commands say how reel was built; in a full build they are there.
if "$reel" inspect natssink >/dev/null 2>&1; then
  expect 0 'subject' -- inspect natssink
else
  expect 2 "'natssink' needs libnats, which this build of reel leaves out \(-DREEL_WITH_NATS=OFF\)" -- \
    run "testsrc num-buffers=1 ! natssink"
  expect 2 "'natssink' needs libnats" -- inspect natssink
  expect 2 "'worker' needs NATS, which this build of reel leaves out \(-DREEL_WITH_NATS=OFF\)" -- worker
  expect 2 "'submit' needs NATS, which this build of reel leaves out \(-DREEL_WITH_NATS=OFF\)" -- \
    submit "testsrc ! fakesink"
fi
if "$reel" inspect mqttsink >/dev/null 2>&1; then
  expect 0 'topic' -- inspect mqttsink
else
  expect 2 "'mqttsink' needs libmosquitto, which this build of reel leaves out \(-DREEL_WITH_MQTT=OFF\)" -- \
    run "testsrc num-buffers=1 ! mqttsink"
  expect 2 "'mqttsink' needs libmosquitto" -- inspect mqttsink
fi

finish

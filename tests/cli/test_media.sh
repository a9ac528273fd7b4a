#!/usr/bin/env bash
# Bad media input as a user meets it: each case gives exactly one error line
# that names the element (and the file, where the element knows it), exits 1,
# and does not crash. Usage: test_media.sh PATH_TO_REEL CLIPS_DIR
set -u
reel=$1
clips=$2
. "$(dirname "$0")/../support/lib.sh"

# expect_error PATTERN PIPELINE [CODE]: exit CODE (default 1), one
# "reel: error:" line, matching PATTERN (grep -E).
expect_error() {
  local pattern=$1 pipeline=$2 code=${3:-1} out rc errors
  out=$("$reel" run "$pipeline" 2>&1)
  rc=$?
  errors=$(grep -c '^reel: error:' <<<"$out")
  if [ "$rc" -ne "$code" ]; then bad "reel run \"$pipeline\": exit $rc, wanted $code"$'\n'"$out"; return; fi
  if [ "$errors" -ne 1 ]; then bad "reel run \"$pipeline\": $errors error lines, wanted 1"$'\n'"$out"; return; fi
  if ! grep -E '^reel: error:' <<<"$out" | grep -qE -- "$pattern"; then
    bad "reel run \"$pipeline\": error lacks /$pattern/"$'\n'"$out"
    return
  fi
  ok
}

# expect_run CODE PATTERN ARGS...: reel ARGS exits CODE with output matching
# PATTERN (grep -E).
expect_run() {
  local code=$1 pattern=$2 out rc
  shift 2
  out=$("$reel" "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$code" ]; then bad "reel $*: exit $rc, wanted $code"$'\n'"$out"; return; fi
  if ! grep -qE -- "$pattern" <<<"$out"; then bad "reel $*: output lacks /$pattern/"$'\n'"$out"; return; fi
  ok
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# needs CLIP: false (and counted as skipped) when make-clips.sh could not make it.
needs() {
  [ -e "$clips/$1" ] && return 0
  skip_check "$1 missing (this FFmpeg lacks its encoder)"
  return 1
}

dec="decode ! fakesink"
expect_error "source0: cannot open '$clips/missing.mp4': No such file" \
  "source location=$clips/missing.mp4 ! $dec"
needs empty.mp4 && expect_error "source0: cannot open '$clips/empty.mp4'" "source location=$clips/empty.mp4 ! $dec"
needs random.mp4 && expect_error "source0: .*'$clips/random.mp4'" "source location=$clips/random.mp4 ! $dec"
needs truncated.mp4 && expect_error "source0: cannot open '$clips/truncated.mp4'" \
  "source location=$clips/truncated.mp4 ! $dec"
needs audio.wav && expect_error "source0: '$clips/audio.wav' has no video stream" \
  "source location=$clips/audio.wav ! $dec"
# Decodable by FFmpeg, in a pixel format reel has no equivalent for yet.
needs hevc10.mkv && expect_error "decode0: .*pixel format.*not supported" "source location=$clips/hevc10.mkv ! $dec"
# A stream index the file does not have: a property wrong for this input,
# bad usage (2) rather than a failure to read.
needs h264.mp4 && expect_error "source0: stream 3 of '$clips/h264.mp4' is not a video stream" \
  "source location=$clips/h264.mp4 stream=3 ! $dec" 2

# Damaged but readable input is not an error: warnings, then exit 0.
if needs corrupt.mp4; then
  out=$("$reel" run "source location=$clips/corrupt.mp4 ! $dec" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q 'warning: decode0: .*corrupt' <<<"$out" && grep -qE 'done: [1-9][0-9]* frames' <<<"$out"; then
    ok
  else
    bad "corrupt.mp4: exit $rc, wanted 0 with a decode0 warning"$'\n'"$out"
  fi
fi
if needs truncated-faststart.mp4; then
  out=$("$reel" run "source location=$clips/truncated-faststart.mp4 ! $dec" 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q "warning: source0: '$clips/truncated-faststart.mp4' ended early" <<<"$out"; then
    ok
  else
    bad "truncated-faststart.mp4: exit $rc, wanted 0 with a source0 warning"$'\n'"$out"
  fi
fi

# source num-buffers: the first N packets of the stream (over all loops), so
# N frames, those the first N packets hold (in decode order: with B-frames
# not always the first N shown); -1 (the default) all of them.
if needs h264.mp4; then
  clip=$clips/h264.mp4
  expect_run 0 'done: 10 frames' run "source location=$clip num-buffers=10 ! decode ! fakesink location=$tmp/ten.txt"
  expect_run 0 'done: 45 frames' run "source location=$clip num-buffers=-1 ! decode ! fakesink location=$tmp/all.txt"
  awk '{ print $2, $3 }' "$tmp/all.txt" | sort >"$tmp/all.pts"
  awk '{ print $2, $3 }' "$tmp/ten.txt" | sort >"$tmp/ten.pts"
  if [ "$(comm -23 "$tmp/ten.pts" "$tmp/all.pts" | wc -l)" -eq 0 ] && [ "$(head -1 "$tmp/ten.txt")" = "$(head -1 "$tmp/all.txt")" ]; then
    ok
  else
    bad "num-buffers=10: frames the whole decode does not have"; cat "$tmp/ten.txt"
  fi
  expect_run 0 'done: 60 frames' run "source location=$clip loop=2 num-buffers=60 ! decode ! fakesink"
  expect_run 0 'done: 0 frames' run "source location=$clip num-buffers=0 ! decode ! fakesink"
fi

# Strict placement on a GPU: source and sink handle only packets, which
# live in host memory, and run on the host without breaking it; an element
# that handles frames and has no GPU implementation is still refused.
if ! "$reel" devices 2>/dev/null | grep -q '^vulkan:0 '; then
  skip_check "strict placement on vulkan:0 (no Vulkan device)"
elif needs h264.mp4; then
  clip=$clips/h264.mp4
  strict=(run --report --placement strict --device vulkan:0)
  expect_run 0 'source0 +source +vulkan:0 +cpu ' "${strict[@]}" \
    "source location=$clip ! decode ! preprocess size=32x32 ! metasink location=$tmp/m.jsonl"
  expect_run 0 'host \(packets only\): source handles encoded packets' "${strict[@]}" \
    "source location=$clip ! decode ! metasink location=$tmp/m.jsonl"
  expect_run 0 'decode0 +decode +vulkan:0 +vulkan:0 +45 +45 ' "${strict[@]}" \
    "source location=$clip ! decode ! metasink location=$tmp/m.jsonl"
  if [ "$(wc -l <"$tmp/m.jsonl")" -eq 45 ]; then ok; else bad "strict vulkan:0: $(wc -l <"$tmp/m.jsonl") metasink lines, wanted 45"; fi
  expect_run 0 'sink0 +sink +vulkan:0 +cpu ' "${strict[@]}" "source location=$clip ! sink location=$tmp/copy.mkv"
  expect_run 1 "placement=strict: 'convert0' cannot run on vulkan:0" "${strict[@]}" \
    "source location=$clip ! decode ! convert ! fakesink"
  # Without strict placement, the report says the same.
  expect_run 0 'host \(packets only\)' run --report --device vulkan:0 "source location=$clip ! fakesink"
fi

finish

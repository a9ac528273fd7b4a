#!/usr/bin/env bash
# metasink from the reel program: every line a JSON object a real parser
# reads, one per frame (frames without detections too), standard output,
# CSV, errors naming the file, and a live run killed with SIGKILL midway
# that leaves only whole lines. Usage: test_metasink.sh PATH_TO_REEL
set -u
reel=$1
command -v python3 >/dev/null || { echo "SKIP: no python3 to parse JSON"; exit 77; }
. "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# check_jsonl FILE FRAMES: FILE ends in a newline and each of its lines is a
# frame's object; FRAMES lines exactly, or at least one when FRAMES is "any".
check_jsonl() {
  python3 - "$1" "$2" <<'PY'
import json, sys
path, want = sys.argv[1], sys.argv[2]
text = open(path, encoding="utf-8").read()
if not text.endswith("\n"):
    sys.exit(f"{path} does not end in a newline: {text[-80:]!r}")
lines = text[:-1].split("\n")
for i, line in enumerate(lines):
    d = json.loads(line)
    assert list(d) == ["stream", "frame", "pts", "width", "height", "detections", "classifications"], d
    assert d["frame"] == i and d["stream"] == 0 and d["detections"] == [] == d["classifications"], d
    assert abs(d["pts"] - i / 30) < 1e-6 and (d["width"], d["height"]) == (64, 48), d
if want != "any" and len(lines) != int(want):
    sys.exit(f"{len(lines)} lines, wanted {want}")
PY
}

out=$("$reel" run "testsrc num-buffers=7 width=64 height=48 ! metasink location=$tmp/a.jsonl" 2>&1)
[ $? -eq 0 ] && check_jsonl "$tmp/a.jsonl" 7 && ok || bad "7 frames to a file: $out"

# Standard output carries the lines and nothing else.
"$reel" run "testsrc num-buffers=3 width=64 height=48 ! metasink location=-" >"$tmp/stdout.jsonl" 2>/dev/null \
  && check_jsonl "$tmp/stdout.jsonl" 3 && ok || bad "location=-"

# CSV: a header and no rows when nothing was detected.
"$reel" run "testsrc num-buffers=3 ! metasink format=csv location=$tmp/a.csv" 2>/dev/null
[ "$(cat "$tmp/a.csv")" = "stream,frame,pts,x0,y0,x1,y1,score,class,label,track" ] && ok || bad "csv: $(cat "$tmp/a.csv")"

out=$("$reel" run "testsrc num-buffers=1 ! metasink location=/nonexistent/dir/m.jsonl" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "metasink0: cannot write '/nonexistent/dir/m.jsonl'" <<<"$out" && ok || bad "exit $rc: $out"

# Killed at an arbitrary moment, a live run leaves whole lines only: once
# after 100 lines, once after 1000, each while lines keep being written.
for at in 100 1000; do
  rm -f "$tmp/k.jsonl"
  "$reel" run "testsrc is-live=true framerate=2000 width=64 height=48 ! metasink location=$tmp/k.jsonl" 2>/dev/null &
  pid=$!
  wait_until 60 lines_at_least "$tmp/k.jsonl" "$at" || bad "fewer than $at lines after 60 s"
  kill -KILL "$pid"
  wait "$pid" 2>/dev/null
  python3 - "$tmp/k.jsonl" "$at" <<'PY' && ok || bad "killed after $at lines"
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
if not text.endswith("\n"):
    sys.exit(f"does not end in a newline: {text[-80:]!r}")
lines = text[:-1].split("\n")
for i, line in enumerate(lines):
    d = json.loads(line)
    assert d["frame"] == i and abs(d["pts"] - i / 2000) < 1e-6, d
assert len(lines) >= int(sys.argv[2]), f"only {len(lines)} lines"
print(f"killed after {len(lines)} lines, all whole")
PY
done

finish

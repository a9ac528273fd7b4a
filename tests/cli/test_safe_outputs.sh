#!/usr/bin/env bash
# Outputs stay whole however a run ends. A live pipeline writes an mp4, an
# mkv, JSON lines and CSV at once and is stopped after some frames by
# SIGINT, SIGTERM, two SIGINTs (abort), an element failing mid-stream, a
# disk error in one sink (a file size limit) and SIGKILL. Then: each video
# that finalized plays (ffprobe decodes every frame), holds frames and lies
# under its final name with no .part left; every JSON line parses, every
# CSV row has its fields; after SIGKILL no final name exists (the .part may),
# and a file already there is never half-overwritten.
# Usage: test_safe_outputs.sh PATH_TO_REEL
set -u
reel=$1
py=/usr/bin/python3
[ -x "$py" ] || py=python3
command -v ffprobe >/dev/null || { echo "SKIP: no ffprobe"; exit 77; }
"$reel" inspect encode | grep -q 'h264' || { echo "SKIP: no h264 encoder"; exit 77; }
. "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# pipeline DIR [EXTRA]: the description, writing into DIR; EXTRA is one more
# branch off the tee.
pipeline() {
  echo "testsrc is-live=true framerate=100 ! video/raw,format=yuv420p,width=160,height=120 ! tee name=t
    t. ! queue ! encode codec=h264 gop=10 ! sink location=$1/out.mp4
    t. ! queue ! encode codec=h264 gop=10 ! sink location=$1/out.mkv
    t. ! queue ! metasink location=$1/out.jsonl
    t. ! queue ! metasink format=csv location=$1/out.csv
    ${2:-}"
}

# start DIR [EXTRA]: runs the pipeline in the background (pid in $pid, output
# in DIR/log) and waits until 30 frames went through, or the run ended. (The
# frames also say that reel's signal handlers are in place: a background job
# starts with SIGINT ignored.)
start() {
  rm -f "$1/out.jsonl" "$1/out.csv"
  pipeline "$@" >"$1/p.reel"
  "$reel" run -f "$1/p.reel" >"$1/log" 2>&1 &
  pid=$!
  wait_until 60 started "$1/out.jsonl" || bad "$1: not 30 frames after 60 s"
}

# started JSONL: 30 frames written, or the run is over.
started() { lines_at_least "$1" 30 || ! kill -0 "$pid" 2>/dev/null; }

# frames FILE: frames ffprobe decodes from FILE; empty when it cannot.
frames() {
  ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" \
    2>"$1.probe" | tr -d ' \n'
  [ -s "$1.probe" ] && { echo "ffprobe says:" >&2; cat "$1.probe" >&2; }
}

# check_text DIR: every JSON line parses and frames count 0, 1, ...; the
# file ends in a newline; the CSV has its header and whole rows. Prints the
# number of JSON lines.
check_text() {
  "$py" - "$1/out.jsonl" "$1/out.csv" <<'PY'
import csv, json, sys
text = open(sys.argv[1], encoding="utf-8").read()
if text and not text.endswith("\n"):
    sys.exit(f"JSON lines end in a partial line: {text[-80:]!r}")
lines = text.splitlines()
for i, line in enumerate(lines):
    d = json.loads(line)
    assert d["frame"] == i, (i, d)
rows = list(csv.reader(open(sys.argv[2], newline="", encoding="utf-8")))
assert rows and rows[0] == "stream,frame,pts,x0,y0,x1,y1,score,class,label,track".split(","), rows[:1]
assert all(len(r) == 11 for r in rows), rows
assert open(sys.argv[2], encoding="utf-8").read().endswith("\n")
print(len(lines))
PY
}

# check_videos DIR EXACT: both videos finalized under their names, no
# .part, each decodes with frames; EXACT=yes: as many as JSON lines.
check_videos() {
  local d=$1 exact=$2 lines n ext
  lines=$(check_text "$d") || { bad "$d: text outputs"; return; }
  [ "$lines" -gt 0 ] || { bad "$d: no JSON lines"; return; }
  for ext in mp4 mkv; do
    [ -e "$d/out.$ext.part" ] && { bad "$d: out.$ext.part left behind"; continue; }
    n=$(frames "$d/out.$ext")
    if [ -z "$n" ] || [ "$n" -le 0 ] || { [ "$exact" = yes ] && [ "$n" != "$lines" ]; }; then
      bad "$d/out.$ext: '$n' frames decoded, $lines JSON lines"; cat "$d/log"
    else
      ok
    fi
  done
  echo "$(basename "$d"): $lines JSON lines, $(frames "$d/out.mp4") frames in out.mp4," \
    "$(frames "$d/out.mkv") in out.mkv"
}

# A signal ends the run cleanly: exit 0, everything drained and finalized.
for sig in INT TERM; do
  d=$tmp/$sig && mkdir "$d"
  start "$d"
  kill -"$sig" "$pid"
  wait "$pid"
  rc=$?
  [ "$rc" -eq 0 ] && grep -q "interrupted" "$d/log" && ok || { bad "SIG$sig: exit $rc"; cat "$d/log"; }
  check_videos "$d" yes
done

# A second SIGINT aborts: frames in flight are dropped (a slow branch keeps
# the first one's drain busy for a second or more), but sinks finalize.
d=$tmp/INT2 && mkdir "$d"
start "$d" "t. ! queue max-size=64 ! identity sleep-us=20000 ! fakesink"
kill -INT "$pid"
wait_until 60 grep -q "interrupt again to abort" "$d/log" || bad "INT twice: the first was not acknowledged"
kill -INT "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 1 ] && grep -q "interrupt again to abort" "$d/log" && ok || { bad "INT twice: exit $rc"; cat "$d/log"; }
check_videos "$d" no

# An element fails mid-stream: the run fails (exit 1) and every sink finalizes.
d=$tmp/error && mkdir "$d"
start "$d" "t. ! queue ! identity error-after=60 ! fakesink"
wait "$pid"
rc=$?
[ "$rc" -eq 1 ] && grep -q "failing on buffer 60" "$d/log" && ok || { bad "error mid-run: exit $rc"; cat "$d/log"; }
check_videos "$d" no

# A sink meets a disk error mid-stream (the file size limit: EFBIG): the run
# fails naming it, its own output stays under the temporary name, the other
# sinks finalize.
d=$tmp/disk && mkdir "$d"
pipeline "$d" "t. ! queue ! encode codec=rawvideo ! sink location=$d/big.mkv" >"$d/p.reel"
(trap '' XFSZ; ulimit -f 1024; exec "$reel" run -f "$d/p.reel") >"$d/log" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "cannot write to '$d/big.mkv'" "$d/log" \
   && grep -q "incomplete: left as '$d/big.mkv.part'" "$d/log" \
   && [ ! -e "$d/big.mkv" ] && [ -e "$d/big.mkv.part" ]; then
  ok
else
  bad "disk error: exit $rc"; ls -la "$d"; cat "$d/log"
fi
check_videos "$d" no

# metasink meets the file size limit in the middle of a line: the run fails
# naming it, and the part of the line that got out is taken back.
d=$tmp/lines && mkdir "$d"
(trap '' XFSZ; ulimit -f 4; exec "$reel" run \
  "testsrc num-buffers=500 ! video/raw,width=64,height=48 ! metasink location=$d/out.jsonl") >"$d/log" 2>&1
rc=$?
if [ "$rc" -eq 1 ] && grep -q "cannot write to '$d/out.jsonl'" "$d/log" && [ "$(tail -c1 "$d/out.jsonl" | od -An -c | tr -d ' ')" = '\n' ] \
   && $py -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$d/out.jsonl"; then
  ok
else
  bad "metasink at the size limit: exit $rc"; tail -c 200 "$d/out.jsonl"; cat "$d/log"
fi

# SIGKILL: nothing finalizes, so no final name exists; the JSON lines are
# whole up to the last one written.
d=$tmp/KILL && mkdir "$d"
start "$d"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
lines=$(check_text "$d") && [ "$lines" -gt 0 ] && ok || bad "SIGKILL: text outputs"
if [ ! -e "$d/out.mp4" ] && [ ! -e "$d/out.mkv" ] && [ -e "$d/out.mp4.part" ]; then
  ok
else
  bad "SIGKILL: $(ls "$d")"
fi

# A file already under the final name stays as it was when a run is killed,
# and is replaced whole by a run that finalizes.
d=$tmp/replace && mkdir "$d"
echo old >"$d/out.mp4"
start "$d"
kill -KILL "$pid"
wait "$pid" 2>/dev/null
[ "$(cat "$d/out.mp4")" = old ] && ok || bad "SIGKILL overwrote an existing out.mp4"
start "$d"
kill -INT "$pid"
wait "$pid"
check_videos "$d" yes

# Standard output and files that are not regular are written directly.
d=$tmp/direct && mkdir "$d"
"$reel" run "testsrc num-buffers=20 ! video/raw,format=yuv420p,width=64,height=48 ! encode codec=h264 \
  ! sink location=- format=matroska" >"$d/stdout.mkv" 2>"$d/log"
[ "$(frames "$d/stdout.mkv")" = 20 ] && [ -z "$(ls "$d" | grep -v -e stdout.mkv -e log)" ] && ok \
  || bad "location=-: $(ls "$d")"
mkfifo "$d/fifo"
cat "$d/fifo" >"$d/from-fifo.mkv" &
"$reel" run "testsrc num-buffers=20 ! video/raw,format=yuv420p,width=64,height=48 ! encode codec=h264 \
  ! sink location=$d/fifo format=matroska" 2>>"$d/log"
wait
[ "$(frames "$d/from-fifo.mkv")" = 20 ] && [ -p "$d/fifo" ] && [ ! -e "$d/fifo.part" ] && ok || bad "FIFO: $(ls "$d")"

finish

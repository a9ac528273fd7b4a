#!/usr/bin/env bash
# A fleet on one machine: a NATS server with JetStream, three reel workers,
# a batch of files to transcode and two cameras (ffmpeg sending live over
# UDP) whose metadata natssink publishes on reel.meta.cam1 and
# reel.meta.cam2. Shows `reel jobs` until interrupted; then stops it all.
#   samples/fleet.sh [BUILD_DIR]      (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
reel=${1:-build}/reel
dir=$(mktemp -d)
port=4333
url=nats://127.0.0.1:$port
pids=()
cleanup() {
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

nats-server -js -a 127.0.0.1 -p $port -sd "$dir/store" >"$dir/nats.log" 2>&1 & pids+=($!)
sleep 1
# What the jobs may do (README, Security): files beneath $dir, UDP cameras on this machine.
printf '[policy]\nroot = %s\nschemes = udp\nhosts = 127.0.0.1\n' "$dir" >"$dir/policy.ini"
for name in w1 w2 w3; do
  "$reel" worker --nats $url --name $name --max-jobs 2 --ack-wait 5s --policy "$dir/policy.ini" \
    2>>"$dir/workers.log" & pids+=($!)
done

# The batch: six short clips made here, each transcoded to 160x120 by a job.
mkdir -p "$dir/in" "$dir/out"
for i in 1 2 3 4 5 6; do
  "$reel" run -q "testsrc num-buffers=150 ! video/raw,format=yuv420p,width=320,height=240 \
    ! encode codec=h264 ! sink location=$dir/in/clip$i.mp4"
  "$reel" submit --nats $url --input in="$dir/in/clip$i.mp4" --input out="$dir/out" \
    "source location={in} ! decode ! encode codec=h264 ! sink location={out}/{job}.mp4" >/dev/null
done

# Two cameras: each job listens on its port; a worker's death moves it to another.
for cam in 1 2; do
  p=$((5600 + cam))
  "$reel" submit --nats $url --live \
    "source location=udp://127.0.0.1:$p timeout=30000 ! decode ! natssink subject=reel.meta.cam$cam" \
    >/dev/null
  ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc=size=320x240:rate=25 -t 600 -c:v libx264 -g 25 \
    -bf 0 -pix_fmt yuv420p -f mpegts "udp://127.0.0.1:$p?pkt_size=1316" 2>>"$dir/ffmpeg.log" & pids+=($!)
done

echo "outputs in $dir/out; worker logs in $dir/workers.log; Ctrl-C stops everything"
"$reel" jobs --nats $url --watch

#!/usr/bin/env bash
# Restreaming: sink writes HLS (a playlist and its segments, all kept or a
# rolling window) that ffprobe reads back, and pushes the annotated stream
# to RTMP and RTSP servers (the ffmpeg CLI listening on loopback, decoding
# what arrives frame by frame). Options pass through to the container.
# Usage: test_restream.sh PATH_TO_REEL
set -u
reel=$1
command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null || { echo "SKIP: no ffmpeg/ffprobe"; exit 77; }
. "$(dirname "$0")/../support/lib.sh"
tmp=$(mktemp -d)
listener=
trap '[ -n "$listener" ] && kill "$listener" 2>/dev/null; rm -rf "$tmp"' EXIT

frames() { # N [ENCODER_OPTIONS]: N frames of a moving picture, H.264 with a keyframe a second
  echo "testsrc num-buffers=$1 pattern=checkers ! video/raw,format=yuv420p,width=160,height=120 \
    ! encode codec=h264 gop=30 ${2:-}"
}

# ffprobe's count of decoded frames of the first video stream.
probe_frames() {
  ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1" | head -1
}

# A free TCP port on loopback, and whether something listens on one.
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
listening() { awk -v p="$(printf ':%04X' "$1")" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' /proc/net/tcp; }

# HLS, every segment kept: the playlist plays all 150 frames.
"$reel" run "$(frames 150) ! sink location=$tmp/all.m3u8 options=hls_time=1" >"$tmp/log" 2>&1 || bad "hls: $(cat "$tmp/log")"
n=$(probe_frames "$tmp/all.m3u8")
[ "$n" = 150 ] && ok || bad "hls: ffprobe decoded $n frames of the playlist, want 150"
grep -q '#EXT-X-ENDLIST' "$tmp/all.m3u8" && ok || bad "hls: the playlist was not ended"

# A rolling window of 3 segments, older ones deleted; an option neither the
# protocol nor the container takes is warned about.
mkdir "$tmp/win"
"$reel" run "$(frames 300) ! sink location=$tmp/win/live.m3u8 \
  options=hls_time=1:hls_list_size=3:hls_flags=delete_segments:no_such_option=1" >"$tmp/log" 2>&1 \
  || bad "hls window: $(cat "$tmp/log")"
listed=$(grep -c '^live.*\.ts$' "$tmp/win/live.m3u8")
[ "$listed" = 3 ] && ok || bad "hls window: $listed segments listed, want 3"
for seg in $(grep '^live.*\.ts$' "$tmp/win/live.m3u8"); do
  [ -s "$tmp/win/$seg" ] && ok || bad "hls window: listed segment $seg is missing"
done
[ ! -e "$tmp/win/live0.ts" ] && ok || bad "hls window: the first segment was not deleted"
n=$(probe_frames "$tmp/win/live.m3u8")
[ "${n:-0}" -gt 0 ] && [ "$n" -lt 300 ] && ok || bad "hls window: ffprobe decoded '$n' frames of the window"
grep -q "warning: sink0: the hls container ignores no_such_option=1" "$tmp/log" && ok \
  || bad "hls window: no warning for the unknown option: $(cat "$tmp/log")"

# push URL PORT NAME SINK_OPTIONS LISTENER_ARGS...: a receiving ffmpeg on
# PORT, then reel pushing 60 frames to URL; the receiver must decode all 60.
push() {
  local url=$1 port=$2 name=$3 options=$4
  shift 4
  timeout 60 ffmpeg -v error -nostdin "$@" -f framemd5 -y "$tmp/$name.md5" >"$tmp/$name.ffmpeg" 2>&1 &
  listener=$!
  wait_until 10 listening "$port" || { bad "$name: the receiving ffmpeg never listened: $(cat "$tmp/$name.ffmpeg")"; return; }
  # As live streams are encoded: without B-frames (with them, an ffmpeg
  # receiving RTSP drops the first three B-frames of reel's stream).
  "$reel" run "$(frames 60 options=tune=zerolatency) ! sink location=$url $options" >"$tmp/$name.log" 2>&1 || bad "$name: $(cat "$tmp/$name.log")"
  wait "$listener"
  listener=
  n=$(grep -vc '^#' "$tmp/$name.md5" 2>/dev/null)
  [ "$n" = 60 ] && ok || bad "$name: the server decoded '$n' frames, want 60: $(cat "$tmp/$name.ffmpeg")"
}

port=$(free_port)
push "rtmp://127.0.0.1:$port/live/cam" "$port" rtmp "" -listen 1 -i "rtmp://127.0.0.1:$port/live/cam"
port=$(free_port)
# Over TCP (the protocol's option): loopback UDP may drop a packet.
push "rtsp://127.0.0.1:$port/live" "$port" rtsp options=rtsp_transport=tcp \
  -rtsp_flags listen -rtsp_transport tcp -i "rtsp://127.0.0.1:$port/live"

# A push to where nothing listens fails clearly, naming the URL.
port=$(free_port)
"$reel" run "$(frames 5) ! sink location=rtmp://127.0.0.1:$port/live/cam" >"$tmp/log" 2>&1
rc=$?
[ "$rc" -ne 0 ] && grep -q "sink0: cannot write 'rtmp://127.0.0.1:$port/live/cam'" "$tmp/log" && ok \
  || bad "push to nobody: exit $rc, $(cat "$tmp/log")"

finish

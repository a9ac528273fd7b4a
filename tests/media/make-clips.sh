#!/usr/bin/env bash
# Makes the clips the media tests decode, with the ffmpeg CLI.
# Usage: make-clips.sh OUTDIR
# Idempotent: a clip that exists is kept. Clips are small (at most 320x240,
# at most 60 frames) so that the whole set takes a few seconds. A clip whose
# encoder this FFmpeg lacks is left out; the tests that need it skip.
set -u
out=${1:?usage: make-clips.sh OUTDIR}
mkdir -p "$out" || exit 1
ff=(ffmpeg -hide_banner -loglevel error -nostdin -y)
failed=0

has_encoder() { ffmpeg -hide_banner -encoders 2>/dev/null | grep -q " $1 "; }

# make NAME CMD...: runs CMD (which writes $tmp) unless NAME exists; writes
# to a temporary name first so that an interrupted run leaves no half clip.
make() {
  local name=$1
  shift
  [ -s "$out/$name" ] && return 0
  tmp="$out/.tmp.$name"
  if "$@" && [ -s "$tmp" ]; then
    mv -f "$tmp" "$out/$name"
  else
    echo "make-clips: could not make $name" >&2
    rm -f "$tmp"
    failed=1
  fi
}

src() { echo "testsrc2=size=$1:rate=$2"; }

# Bit-exact decoding: one clip per codec.
h264() { "${ff[@]}" -f lavfi -i "$(src 320x240 30)" -frames:v 45 -c:v libx264 -preset veryfast \
  -pix_fmt yuv420p "$tmp"; }
hevc() { "${ff[@]}" -f lavfi -i "$(src 320x240 25)" -frames:v 40 -c:v libx265 -preset ultrafast \
  -x265-params log-level=error -pix_fmt yuv420p -f matroska "$tmp"; }
vp9() { "${ff[@]}" -f lavfi -i "$(src 256x144 30)" -frames:v 40 -c:v libvpx-vp9 -deadline realtime \
  -cpu-used 8 -b:v 300k -pix_fmt yuv420p -f webm "$tmp"; }
has_encoder libx264 && make h264.mp4 h264
has_encoder libx265 && make hevc.mkv hevc
has_encoder libvpx-vp9 && make vp9.webm vp9

if has_encoder libx264; then
  # A raw Annex B stream whose resolution changes midway: two encodes, cat'ed.
  # Each starts with an IDR and in-band SPS/PPS, as a camera restart would.
  reschange() {
    "${ff[@]}" -f lavfi -i "$(src 320x240 30)" -frames:v 20 -c:v libx264 -preset veryfast -bf 0 \
      -pix_fmt yuv420p -f h264 "$tmp.a" &&
      "${ff[@]}" -f lavfi -i "$(src 176x144 30)" -frames:v 25 -c:v libx264 -preset veryfast -bf 0 \
        -pix_fmt yuv420p -f h264 "$tmp.b" &&
      cat "$tmp.a" "$tmp.b" >"$tmp"
    local rc=$?
    rm -f "$tmp.a" "$tmp.b"
    return $rc
  }
  make reschange.h264 reschange

  # Variable frame rate: gaps of 33 ms give or take up to 30, so no two
  # neighbouring frames are evenly spaced (Matroska's time base is 1 ms).
  # Both the filter and the encoder need a 1 ms time base, else the
  # timestamps are rounded back to 1/30 s.
  vfr() { "${ff[@]}" -f lavfi -i "$(src 160x120 30)" -frames:v 40 \
    -vf "settb=1/1000,setpts=(N*33+mod(N*N\,7)*5)/1000/TB" -fps_mode passthrough -enc_time_base 1:1000 \
    -c:v libx264 -preset veryfast -pix_fmt yuv420p -f matroska "$tmp"; }
  make vfr.mkv vfr

  # Damaged data: the mp4 with bytes zeroed in the middle of its media data.
  # Packet boundaries stay intact (they live in the index), so the demuxer
  # reads every packet and the decoder meets the damage.
  corrupt() {
    cp "$out/h264.mp4" "$tmp" || return 1
    local size
    size=$(stat -c %s "$tmp")
    dd if=/dev/zero of="$tmp" bs=1 seek=$((size / 3)) count=3000 conv=notrunc status=none
  }
  [ -s "$out/h264.mp4" ] && make corrupt.mp4 corrupt

  # Truncated: the first half of the mp4. Its index (moov) is at the end, so
  # it is gone and the file cannot be opened.
  truncated() { head -c $(($(stat -c %s "$out/h264.mp4") / 2)) "$out/h264.mp4" >"$tmp"; }
  [ -s "$out/h264.mp4" ] && make truncated.mp4 truncated

  # Truncated with the index first: it opens, and ends early.
  faststart() { "${ff[@]}" -i "$out/h264.mp4" -c copy -movflags +faststart -f mp4 "$tmp.full" &&
    head -c $(($(stat -c %s "$tmp.full") * 2 / 3)) "$tmp.full" >"$tmp"; local rc=$?; rm -f "$tmp.full"; return $rc; }
  [ -s "$out/h264.mp4" ] && make truncated-faststart.mp4 faststart
fi

# 10-bit HEVC: decodable by FFmpeg, but not a pixel format reel has yet.
if has_encoder libx265; then
  hevc10() { "${ff[@]}" -f lavfi -i "$(src 160x120 25)" -frames:v 5 -c:v libx265 -preset ultrafast \
    -x265-params log-level=error -pix_fmt yuv420p10le -f matroska "$tmp"; }
  make hevc10.mkv hevc10
fi

# Bad input.
[ -e "$out/empty.mp4" ] || : >"$out/empty.mp4"
# Random bytes, reproducibly: a seeded noise generator's samples.
noise() { "${ff[@]}" -f lavfi -i "anoisesrc=seed=42:d=0.5:r=16000" -f s16le "$tmp"; }
make random.mp4 noise
# No video at all.
audio() { "${ff[@]}" -f lavfi -i "sine=frequency=440:duration=0.5" -c:a pcm_s16le -f wav "$tmp"; }
make audio.wav audio

exit $failed

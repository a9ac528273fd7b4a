#!/usr/bin/env python3
"""zones end to end with a real detector: a clip in which the astronaut's
face (python3-skimage) slides right at 16 pixels a frame over a grey
background goes through decode ! preprocess ! infer model=blazeface-front
! detect ! track ! zones ! metasink. Its motion is known, so once the boxes give
where the face's centre starts, the frame at which that centre passes
any x is known; the line and the zone's edge are put half a step (8 pixels)
between two frames' positions, where detection error cannot move them. The
crossing must come at exactly that frame, going "in", the entry with it
(inertia=1), and nothing else; the counts must say one crossing, one inside.
Then record on the annotated video: a clip around the crossing, checked
with ffprobe, and a run killed during a clip leaves only its .part; and
samples/counting.reel on this clip counts the crossing and records it;
a clip on a full disk (a file size limit) is dropped, the run goes on.
(The box centres stray from the motion by up to 5 pixels, the detector's
anchor grid; the test checks they stay within 3/8 of a step.)

Usage: test_zones_faces.py REEL SOURCE_DIR WORK_DIR    (exit 77: skipped)"""
import json
import os
import resource
import signal
import subprocess
import sys
import time

STEP, FRAMES, CROSS_AT = 16, 25, 14
reel, src, work = sys.argv[1:4]
model = os.path.join(src, "cache/models/blazeface/face_detection_front_128x128_barracuda.onnx")
img = "/usr/lib/python3/dist-packages/skimage/data/astronaut.png"
for need, why in ((model, "run scripts/fetch-models"), (img, "python3-skimage")):
    if not os.path.exists(need):
        print(f"SKIP: no {need} ({why})")
        sys.exit(77)
os.makedirs(work, exist_ok=True)
clip = os.path.join(work, "slide.mp4")
subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c=gray:s=640x360:r=25:d={FRAMES / 25}",
                "-loop", "1", "-i", img, "-filter_complex",
                f"[1]crop=300:300:75:0,scale=240:240[face];[0][face]overlay=x='{STEP}*n':y=60:shortest=1,"
                "format=yuv420p", "-frames:v", str(FRAMES), "-c:v", "libx264", "-crf", "16", clip], check=True)


def run(tail, out):
    subprocess.run([reel, "run", "-q", f"source location={clip} ! decode ! preprocess ! infer model=blazeface-front "
                    f"! detect ! {tail} ! metasink location={out}"], check=True)
    with open(out) as f:
        return [json.loads(line) for line in f]


def fail(why):
    print(f"FAIL: {why}")
    sys.exit(1)


first = run("identity", os.path.join(work, "boxes.jsonl"))
faces = [len(fr["detections"]) for fr in first]
if any(n != 1 for n in faces):
    fail(f"the detector did not find the one face in every frame: {faces}")
centres = [(fr["detections"][0]["box"][0] + fr["detections"][0]["box"][2]) / 2 for fr in first]
# Where the face's box centre starts: the clip's motion fitted to every frame.
c0 = sum(c - STEP * i for i, c in enumerate(centres)) / len(centres)
for i, c in enumerate(centres):  # each within 3/8 of a step of the motion: the half-step margin holds
    if abs(c - (c0 + STEP * i)) > STEP * 3 / 8:
        fail(f"frame {i}: the face's centre is at {c:.1f}, not near {c0 + STEP * i:.1f}")
edge = round(c0 + STEP * (CROSS_AT - 1) + STEP / 2)  # between frames CROSS_AT - 1 and CROSS_AT
frames = run(f"track min-hits=1 ! zones coordinates=pixels anchor=center inertia=1 "
             f"lines=\"door: {edge},360 {edge},0\" zones=\"room: {edge},0 640,0 640,360 {edge},360\"",
             os.path.join(work, "zones.jsonl"))
events = [(fr["frame"], ev) for fr in frames for ev in fr["events"]]
want = [(CROSS_AT, {"type": "enter", "zone": "room", "track": 1}),  # zones come before lines
        (CROSS_AT, {"type": "cross", "line": "door", "track": 1, "direction": "in"})]
got = [(f, {k: v for k, v in ev.items() if k not in ("class", "label")}) for f, ev in events]
if got != want:
    fail(f"events {got}, wanted {want} (the line at x={edge})")
last = frames[-1]
door, room = last["lines"][0], last["zones"][0]
if (door["in"], door["out"]) != (1, 0) or (room["occupancy"], room["entered"], room["left"]) != (1, 1, 0):
    fail(f"counts at the end: {door} {room}")
print(f"the face crossed x={edge} going in at frame {CROSS_AT}, as its motion says; counts {door} {room}")

# record after it, on the annotated video: a clip around the crossing, from
# the keyframe at or before it (the encoder's every 10th frame) to 0.4 s on.
clips = os.path.join(work, "clips")
os.makedirs(clips, exist_ok=True)
for f in os.listdir(clips):
    os.unlink(os.path.join(clips, f))
tail = (f"track min-hits=1 ! zones coordinates=pixels anchor=center lines=\"door: {edge},360 {edge},0\" ! tee name=t "
        f"t. ! queue ! overlay ! encode gop=10 ! record trigger=cross@door pre=0.2 post=0.4 "
        f"location={clips}/{{event}}-{{n}}.mkv t. ! queue")
run(tail, os.path.join(work, "record.jsonl"))
rec = os.path.join(clips, "cross-door-1.mkv")
probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time,key_frame",
                        "-of", "csv=p=0", rec], capture_output=True, text=True)
rows = [line.split(",") for line in probe.stdout.split()]
if probe.returncode != 0 or not rows or rows[0][0] != "1":
    fail(f"the clip {rec} does not start on a keyframe: {probe.stdout} {probe.stderr}")
first, last, at = float(rows[0][1]), float(rows[-1][1]), CROSS_AT / 25
if not (at - 0.2 - 10 / 25 - 1e-3 <= first <= at - 0.2 + 1e-3) or abs(last - (at + 0.4)) > 1e-3:
    fail(f"the clip covers {first:.2f} to {last:.2f} s, wanted from a keyframe at most 0.2 s before {at:.2f} to "
         f"{at + 0.4:.2f}")

# Killed during a clip: only its .part is left, never a file that looks whole.
for f in os.listdir(clips):
    os.unlink(os.path.join(clips, f))
proc = subprocess.Popen([reel, "run", "-q", f"source location={clip} loop=0 ! decode ! preprocess "
                         f"! infer model=blazeface-front ! detect ! encode ! record trigger=class:face post=1000 "
                         f"location={clips}/face.mkv"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(clips, "face.mkv.part")) and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.5)
proc.kill()
proc.wait()
if sorted(os.listdir(clips)) != ["face.mkv.part"]:
    fail(f"after a kill during a clip: {sorted(os.listdir(clips))}, wanted only face.mkv.part")
print(f"record: a clip from {first:.2f} to {last:.2f} s around the crossing at {at:.2f} s; a kill leaves a .part")

# samples/counting.reel, as a user runs it, on this clip: the face is
# counted going in through the door and its crossing is recorded.
sample_dir = os.path.join(work, "sample")
os.makedirs(sample_dir, exist_ok=True)
for f in os.listdir(sample_dir):
    os.unlink(os.path.join(sample_dir, f))
with open(os.path.join(src, "samples", "counting.reel")) as f:
    text = f.read().replace("cache/media/faces-720p.mp4", clip).replace("cache/demo/", sample_dir + "/")
with open(os.path.join(work, "counting.reel"), "w") as f:
    f.write(text)
subprocess.run([reel, "run", "-q", "-f", os.path.join(work, "counting.reel")], check=True, stderr=subprocess.DEVNULL)
with open(os.path.join(sample_dir, "counting.jsonl")) as f:
    last = [json.loads(line) for line in f][-1]
clips = [f for f in os.listdir(sample_dir) if f.startswith("door-") and f.endswith("-1.mkv")]
if last["lines"][0]["in"] != 1 or len(clips) != 1 or not os.path.getsize(os.path.join(sample_dir, clips[0] + ".jpg")):
    fail(f"samples/counting.reel: door {last['lines'][0]}, clips {sorted(os.listdir(sample_dir))}")
print(f"samples/counting.reel counted {last['lines'][0]} and wrote {clips[0]}")

# A disk that fills up (a file size limit): the clip fails and is dropped
# with a warning, the run goes on to its end.
full_dir = os.path.join(work, "full")
os.makedirs(full_dir, exist_ok=True)
for f in os.listdir(full_dir):
    os.unlink(os.path.join(full_dir, f))


def small_disk():
    resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past it fail with EFBIG instead


r = subprocess.run([reel, "run", "-q", f"source location={clip} ! decode ! preprocess ! infer model=blazeface-front "
                    f"! detect ! encode crf=10 ! record trigger=class:face pre=0 post=100 location={full_dir}/face.mkv"],
                   preexec_fn=small_disk, capture_output=True, text=True)
if r.returncode != 0 or "it is dropped, the stream goes on" not in r.stderr and "cannot write clip" not in r.stderr:
    fail(f"a clip on a full disk: exit {r.returncode}: {r.stderr}")
if os.listdir(full_dir):
    fail(f"a clip that could not be written left {os.listdir(full_dir)}")
print("record: a clip on a full disk was dropped with a warning; the run ended normally")
print("PASS")

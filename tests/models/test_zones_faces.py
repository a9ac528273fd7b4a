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
(The box centres stray from the motion by up to 5 pixels, the detector's
anchor grid; the test checks they stay within 3/8 of a step.)

Usage: test_zones_faces.py REEL SOURCE_DIR WORK_DIR    (exit 77: skipped)"""
import json
import os
import subprocess
import sys

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
print(f"PASS: the face crossed x={edge} going in at frame {CROSS_AT}, as its motion says; counts {door} {room}")

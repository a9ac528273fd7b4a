# Faces found by two runs of the face pipeline (metasink JSON lines), the
# int8 model's against the float model's: the same number of faces in every
# frame, each box's corners within TOLERANCE pixels of its twin's (with
# SHARE, a fraction: at least that share of the boxes).
#   python3 compare_faces.py FLOAT.jsonl INT8.jsonl [TOLERANCE [SHARE]]
import json
import sys


def load(path):
    with open(path) as f:
        return {o["frame"]: [d["box"] for d in o.get("detections", [])] for o in map(json.loads, f)}


def corner_error(a, b):
    return max(abs(a[i] - b[i]) for i in range(4))


ref, got = load(sys.argv[1]), load(sys.argv[2])
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
share = float(sys.argv[4]) if len(sys.argv) > 4 else None
bad = 0
worst = 0.0
if not ref or sorted(ref) != sorted(got):
    print(f"frames differ: {len(ref)} in {sys.argv[1]}, {len(got)} in {sys.argv[2]}")
    bad += 1
faces = matched = 0
for frame, want in sorted(ref.items()):
    have = got.get(frame, [])
    faces += len(want)
    if len(have) != len(want):
        print(f"frame {frame}: {len(have)} faces, the float model {len(want)}")
        bad += 1
    for box in want:
        err = min((corner_error(box, h) for h in have), default=float("inf"))
        if err <= tolerance:
            matched += 1
            worst = max(worst, err)
        elif share is None:
            print(f"frame {frame}: the float model's box {box} has no twin within {tolerance} px")
            bad += 1
print(f"{len(ref)} frames, {faces} faces found by the float model, {matched} matched within {tolerance} px "
      f"(largest corner difference {worst:.2f} px)")
if share is not None and matched < share * faces:
    print(f"fewer than {share:.0%} of the boxes within {tolerance} px")
    bad += 1
if faces == 0:
    print("the float model found no faces: nothing was compared")
    bad += 1
sys.exit(1 if bad else 0)

#!/usr/bin/env python3
"""Face detection on a video: boxes drawn into a new video, and each frame's faces printed.

    samples/python/faces.py IN.mp4 OUT.mp4
"""
import sys

import reel

source, out = sys.argv[1], sys.argv[2]
pipeline = reel.Pipeline(
    f"source location={source} ! decode ! preprocess ! infer model=blazeface-front ! detect ! track ! tee name=t "
    f"t. ! queue ! overlay ! encode codec=h264 ! sink location={out} "
    "t. ! queue ! appsink name=faces")
with pipeline:
    for frame in pipeline.pull("faces"):
        faces = frame.detections
        print(f"{frame.pts:6.2f} s: {len(faces)} faces", [(d.track_id, round(d.score, 2)) for d in faces])
print(f"wrote {out}")

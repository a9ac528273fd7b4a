#!/usr/bin/env python3
"""Frames made with numpy, pushed into a pipeline that encodes them:

    samples/python/push_numpy.py OUT.mp4 [FRAMES]
"""
import sys

import numpy as np

import reel

out, frames = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 90
w, h = 320, 240
pipeline = reel.Pipeline(f"appsrc name=in caps=video/raw,format=rgb24,width={w},height={h},framerate=30/1 "
                         f"! convert ! encode codec=h264 ! sink location={out}")
pipeline.start()
x = np.arange(w)[None, :, None]
for i in range(frames):
    image = np.zeros((h, w, 3), np.uint8)
    image[:, :, 0] = (x[..., 0] + 4 * i) % 256              # red ramp scrolling
    image[h // 3: 2 * h // 3, (2 * i) % w: (2 * i) % w + 20] = (255, 255, 255)  # a white bar moving right
    pipeline.push("in", image)                              # copied once into a pooled frame
pipeline.end("in")
pipeline.wait()
pipeline.close()
print(f"wrote {frames} frames to {out}")

#!/usr/bin/env python3
"""An element written in Python, used in a description and changed while running.

    samples/python/custom_element.py
"""
import numpy as np

import reel


@reel.element("vignette", description="darkens the frame towards its edges")
class Vignette:
    properties = {"strength": 0.8}

    def start(self):
        self.mask = None

    def process(self, frame):
        a = frame.array                                  # read-only view of the frame, no copy
        if self.mask is None or self.mask.shape != a.shape[:2]:
            y, x = np.ogrid[-1:1:a.shape[0] * 1j, -1:1:a.shape[1] * 1j]
            self.mask = np.clip(1 - self.strength * (x * x + y * y) / 2, 0, 1)[..., None]
        return (a * self.mask).astype(np.uint8)          # new pixels: a new frame, same metadata


pipeline = reel.Pipeline("testsrc num-buffers=60 pattern=solid ! video/raw,format=rgb24,width=160,height=120 "
                         "! vignette name=v ! appsink name=out")
for frame in pipeline.pull("out"):
    if frame.frame_number == 30:
        pipeline.set("v", "strength", 0.2)           # frames already queued (up to ~17) keep the old one
    if frame.frame_number % 15 == 0 or frame.frame_number == 59:
        a = frame.array
        print(f"frame {frame.frame_number}: centre {a[60, 80].tolist()} corner {a[0, 0].tolist()}")
pipeline.close()
print(reel.inspect("vignette")["properties"])

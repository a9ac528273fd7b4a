#!/usr/bin/env python3
"""A model run on an image without a pipeline: BlazeFace on python3-skimage's astronaut.

    samples/python/model_on_image.py
"""
import numpy as np
from skimage import data, transform

import reel

model = reel.Model("blazeface-front")                # a zoo name, or a path to an .onnx file
print("inputs:", model.inputs)
image = transform.resize(data.astronaut()[:300, 75:375], (128, 128))  # the head, as [0, 1] floats
x = (image[None] * 2 - 1).astype(np.float32)          # [-1, 1], NHWC, as the manifest says
outputs = model.run(x)
logits = np.concatenate([outputs["Identity:0"], outputs["Identity_1:0"]], axis=1)
scores = 1 / (1 + np.exp(-np.clip(logits, -80, 80)))
print("outputs:", {name: a.shape for name, a in outputs.items()})
print(f"best anchor score {scores.max():.3f} (a face)")

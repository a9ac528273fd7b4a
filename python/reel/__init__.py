"""reel: video inference pipelines, from Python.

    import reel

    with reel.Pipeline("source location=in.mp4 ! decode ! convert ! video/raw,format=rgb24 "
                       "! preprocess model=blazeface-front ! infer model=blazeface-front "
                       "! detect ! appsink name=out") as p:
        for frame in p.pull("out"):
            print(frame.pts, frame.detections.boxes)

Frames come as read-only numpy views of reel's own memory (no copy);
models run on numpy arrays (reel.Model); elements may be written in Python
(reel.element). reel works with the GIL released: other Python threads run
meanwhile, and Ctrl-C stops a running pipeline cleanly.
"""

from __future__ import annotations

import atexit
import json
import os
from typing import Any, Callable, Dict, Iterator, NamedTuple, Optional, Tuple, Union

import numpy as np

from . import _reel
from ._reel import Error, Frame, Model, ParseError, configure, devices, elements, inspect, version

__all__ = [
    "Classification", "Count", "Detection", "Detections", "Error", "Event", "Frame", "Mask", "Model", "ParseError",
    "Pipeline", "TensorInfo", "configure", "devices", "element", "elements", "inspect", "version",
]


class TensorInfo(NamedTuple):
    """A model input or output as declared: dims are ints, or a name / None where symbolic."""
    name: str
    dtype: str
    shape: Tuple[Union[int, str, None], ...]


class Mask(NamedTuple):
    """An instance mask (detect decoder=yolov8-seg) over its detection's box rounded out to whole
    pixels, the rectangle x, y, width, height in frame pixels: runs (uint32, as metasink's "runs")
    are run lengths row by row over the rectangle, off first, alternately off and on; pixels after
    the last run are off. truncated: the mask was cut at 8192 runs."""
    x: int
    y: int
    width: int
    height: int
    runs: np.ndarray
    truncated: bool

    @property
    def array(self) -> np.ndarray:
        """The mask decoded: a (height, width) bool array, True on the object."""
        size = self.width * self.height
        # Runs' ends clamped to the rectangle, so a malformed run cannot reach past it.
        ends = np.minimum(np.cumsum(self.runs, dtype=np.int64), size)
        lengths = np.diff(ends, prepend=0)
        on = np.repeat((np.arange(len(lengths)) % 2).astype(bool), lengths)
        flat = np.zeros(size, dtype=bool)
        flat[:len(on)] = on
        return flat.reshape(self.height, self.width)

    def __repr__(self) -> str:
        cut = ", truncated" if self.truncated else ""
        return f"<reel.Mask {self.width}x{self.height} at ({self.x}, {self.y}), {len(self.runs)} runs{cut}>"


class Detection(NamedTuple):
    """One detected object: box (x0, y0, x1, y1) in frame pixels."""
    box: Tuple[float, float, float, float]
    score: float
    class_id: int       # -1: none
    label: str          # "" when none
    track_id: int       # -1: not tracked
    landmarks: np.ndarray  # (K, 2), NaN rows for landmarks this detection lacks
    keypoint_scores: np.ndarray  # (K,), pose keypoints' scores; NaN where unscored
    mask: Optional[Mask]  # its instance mask, or None
    text: str           # what ocr read, "" when none
    text_score: float   # its mean character probability, 0 when none

    @property
    def keypoints(self) -> np.ndarray:
        """(K, 3): x, y, score per keypoint, as metasink's "keypoints"."""
        return np.concatenate([self.landmarks, self.keypoint_scores[:, None]], axis=1)


class Detections:
    """A frame's detections as arrays (N rows): boxes (N, 4) float32 x0, y0, x1, y1 in frame
    pixels, scores (N,), class_ids (N,) int32 (-1: none), labels (list of N str), track_ids (N,)
    int64 (-1: not tracked), landmarks (N, K, 2) float32 (NaN where a detection has fewer; pose
    keypoints too), keypoint_scores (N, K) float32 (NaN where not scored), masks (list of N
    reel.Mask or None), texts (list of N str, "" where ocr read nothing), text_scores (N,)
    float32. Iterating gives reel.Detection tuples."""

    __slots__ = ("boxes", "scores", "class_ids", "labels", "track_ids", "landmarks", "keypoint_scores", "masks",
                 "texts", "text_scores")

    def __init__(self, boxes, scores, class_ids, labels, track_ids, landmarks, keypoint_scores, masks, texts,
                 text_scores):
        self.boxes, self.scores, self.class_ids = boxes, scores, class_ids
        self.labels, self.track_ids, self.landmarks = labels, track_ids, landmarks
        self.keypoint_scores, self.masks, self.texts, self.text_scores = keypoint_scores, masks, texts, text_scores

    @property
    def keypoints(self) -> np.ndarray:
        """(N, K, 3): x, y, score per keypoint, as metasink's "keypoints"."""
        return np.concatenate([self.landmarks, self.keypoint_scores[..., None]], axis=2)

    def __len__(self) -> int:
        return len(self.scores)

    def __getitem__(self, i: int) -> Detection:
        return Detection(tuple(float(v) for v in self.boxes[i]), float(self.scores[i]), int(self.class_ids[i]),
                         self.labels[i], int(self.track_ids[i]), self.landmarks[i], self.keypoint_scores[i],
                         self.masks[i], self.texts[i], float(self.text_scores[i]))

    def __iter__(self) -> Iterator[Detection]:
        return (self[i] for i in range(len(self)))

    def __repr__(self) -> str:
        return f"<reel.Detections {len(self)}>"


class Classification(NamedTuple):
    class_id: int
    score: float
    label: str
    detection: int      # index into the frame's detections; -1: the whole frame


class Event(NamedTuple):
    """A zones event: type 'enter', 'leave', 'loiter' or 'cross'."""
    type: str
    region: str         # the zone's or line's name
    track_id: int
    class_id: int
    label: str
    direction: int      # cross: +1 in, -1 out; else 0
    dwell_s: float      # leave, loiter: seconds inside; else 0


class Count(NamedTuple):
    """A zone's or line's counts so far: zones occupancy and entered (count_in) / left
    (count_out); lines crossings in and out. class_id -1: every class together."""
    region: str
    line: bool
    class_id: int
    label: str
    occupancy: int
    count_in: int
    count_out: int


_reel._bind(TensorInfo=TensorInfo, Detections=Detections, Mask=Mask, Classification=Classification, Event=Event,
            Count=Count)


class Pipeline(_reel.Pipeline):
    """A pipeline built from a description, as `reel run` takes it:

        p = reel.Pipeline("testsrc num-buffers=100 ! appsink name=out")

    Pipeline(description, origin='pipeline', *, values=None, device=None, placement=None,
             threads=0, queue_size=0, latency_ms=0, trace=False)

    values: {NAME: VALUE} for "{NAME}" in property values. device and placement: as
    `reel run --device/--placement`. A description that does not parse raises reel.ParseError
    (.line, .column, .hint). As a context manager it stops (or, after an exception, aborts)
    and closes the pipeline on exit.
    """

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike], **kwargs: Any) -> "Pipeline":
        """A pipeline from a .reel file (settings such as device=vulkan:0 on its first lines)."""
        path = os.fspath(path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if "\0" in text:
            raise ValueError(f"{path}: a description is text, and this has a NUL byte")
        return cls(text, path, **kwargs)

    def pull(self, sink: str, timeout: Optional[float] = None) -> Iterator[Frame]:
        """Frames from appsink `sink` until the end of the stream, starting the pipeline if it is
        not running. timeout: seconds to wait for each frame (TimeoutError), None without limit.
        reel.Error when the run fails."""
        if not self.started:
            self.start()
        while True:
            frame = self.pull_one(sink, timeout)
            if frame is None:
                return
            yield frame

    def push(self, source: str, frame: Any, *, pts: Optional[float] = None) -> bool:
        if not self.started:
            self.start()
        return super().push(source, frame, pts=pts)

    push.__doc__ = _reel.Pipeline.push.__doc__

    def report(self) -> Dict[str, Any]:
        """The figures `reel run --report-json` writes, as dicts: wall_s, elements (device, reason,
        buffers, busy_ms, bytes_to_device/host, latency, ...), memory."""
        return json.loads(self.report_json())

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.stop()
            else:
                self.abort()
        finally:
            self.close()


def element(name: str, *, description: str = "a Python element") -> Callable[[type], type]:
    """Registers a class as an element called `name`, for descriptions:

        @reel.element("darken")
        class Darken:
            properties = {"factor": 0.5}        # name: default (int, float, bool or str)
            def process(self, frame):
                return (frame.array * self.factor).astype("uint8")

    reel makes one instance per element when the pipeline starts and sets each property as an
    attribute ('-' in a name becomes '_'), also when it changes while running
    (Pipeline.set). process(frame) gets each reel.Frame (host video) and returns None or True
    (pass it on), False (drop it) or a numpy array of the same shape (new pixels, copied into a
    new frame that keeps the metadata). Optional start() and stop() are called around the run.
    An exception fails the run, the traceback in the error. Each call holds the GIL: one
    Python element runs at a time in the process, and a frame costs its pixels' copy when an
    array is returned.
    """
    def register(cls: type) -> type:
        _reel.register_element(name, cls, dict(getattr(cls, "properties", {}) or {}), description)
        return cls
    return register


atexit.register(_reel._shutdown)

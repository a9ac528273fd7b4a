# Elements written in Python, and the face pipeline's metadata in Python.
import json
import subprocess

import numpy as np
import pytest

import reel


@reel.element("py-scale", description="multiplies the pixels by a factor")
class Scale:
    properties = {"factor": 0.5, "drop-odd": False, "tag": "x", "every": 1}

    def start(self):
        self.seen = 0

    def process(self, frame):
        self.seen += 1
        if self.drop_odd and frame.frame_number % 2:
            return False
        return (frame.array * self.factor).astype(np.uint8)


@reel.element("py-fails")
class Fails:
    def process(self, frame):
        raise RuntimeError(f"bad frame {frame.frame_number}")


@reel.element("py-wrong")
class Wrong:
    def process(self, frame):
        return 42


def push_pull(desc, n, value=200, setter=None):
    p = reel.Pipeline("appsrc name=in caps=video/raw,format=rgb24,width=16,height=8,framerate=10/1 ! "
                      + desc + " ! appsink name=out")
    p.start()
    out = []
    for i in range(n):
        if setter and i == n // 2:
            setter(p)  # lands at one of the element's next frames
        p.push("in", np.full((8, 16, 3), value, np.uint8))
        out.append(p.pull_one("out", timeout=10))
    p.end("in")
    assert p.pull_one("out") is None
    p.close()
    return out


def test_custom_element_changes_pixels_and_keeps_metadata():
    frames = push_pull("py-scale factor=0.25", 3)
    assert [int(f.array[0, 0, 0]) for f in frames] == [50, 50, 50]
    assert [f.frame_number for f in frames] == [0, 1, 2]
    assert [round(f.pts, 6) for f in frames] == [0.0, 0.1, 0.2]


def test_custom_element_property_while_running():
    frames = push_pull("py-scale name=s", 6, setter=lambda p: p.set("s", "factor", 1.0))
    values = [int(f.array[0, 0, 0]) for f in frames]
    assert values[:3] == [100] * 3 and values[-1] == 200


def test_custom_element_drops_frames():
    p = reel.Pipeline("testsrc num-buffers=10 ! video/raw,format=rgb24,width=16,height=16 "
                      "! py-scale drop-odd=true factor=1.0 ! appsink name=out")
    assert [f.frame_number for f in p.pull("out")] == [0, 2, 4, 6, 8]
    p.close()


def test_custom_element_errors():
    p = reel.Pipeline("testsrc num-buffers=5 ! video/raw,format=rgb24,width=16,height=16 ! py-fails name=f ! fakesink")
    with pytest.raises(reel.Error) as ei:
        p.run()
    msg = str(ei.value)
    assert "'f'" in msg or "f:" in msg
    assert "RuntimeError: bad frame 0" in msg and "Traceback" in msg
    p = reel.Pipeline("testsrc num-buffers=5 ! video/raw,format=rgb24,width=16,height=16 ! py-wrong ! fakesink")
    with pytest.raises(reel.Error, match="returned int"):
        p.run()
    with pytest.raises(ValueError, match="exists already"):
        reel.element("py-scale")(Scale)
    with pytest.raises(TypeError, match="process"):
        reel.element("py-nothing")(type("Nothing", (), {}))
    with pytest.raises(reel.ParseError, match="factor"):
        reel.Pipeline("testsrc ! py-scale factor=abc ! fakesink")


def test_custom_element_in_inspect():
    info = reel.inspect("py-scale")
    props = {p["name"]: p for p in info["properties"]}
    assert info["description"] == "multiplies the pixels by a factor"
    assert props["factor"]["type"] == "double" and props["factor"]["mutable"]
    assert props["drop-odd"]["type"] == "bool" and props["every"]["type"] == "int"


def test_faces_as_the_cli_sees_them(reel_bin, blazeface, faces_clip, tmp_path):
    desc = (f"source location={faces_clip} ! decode ! preprocess ! infer model={blazeface} ! detect ! track "
            "! zones lines=\"middle: 0.5,1 0.5,0\"")
    meta = tmp_path / "faces.jsonl"
    subprocess.run([reel_bin, "run", "-q", desc + f" ! metasink location={meta}"], check=True)
    cli = [json.loads(line) for line in meta.read_text().splitlines()]
    with reel.Pipeline(desc + " ! appsink name=out") as p:
        frames = list(p.pull("out"))
    assert len(frames) == len(cli) == 30
    for f, c in zip(frames, cli):
        d = f.detections
        assert len(d) == len(c["detections"]) == 2
        assert (f.width, f.height, f.format) == (1280, 720, "yuv420p")
        for det, cd in zip(d, c["detections"]):
            assert np.allclose(det.box, cd["box"], atol=0.001)
            assert abs(det.score - cd["score"]) < 1e-4 and det.track_id == cd.get("track", det.track_id)
        assert d.landmarks.shape == (2, 6, 2) and not np.isnan(d.landmarks).any()
        assert f.events is not None and f.counts is not None
        assert {"Identity:0", "Identity_1:0"} <= set(f.tensors)
    planes = frames[0].planes
    assert planes[0].shape == (720, 1280) and planes[1].shape == (360, 640)

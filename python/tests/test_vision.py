# Segmentation masks, pose keypoints and OCR text in Python, against the
# JSON the CLI's metasink writes for the same sample on the same clip:
# samples/segment.reel and samples/pose.reel with the models
# tests/models/make_segpose_models.py builds (known outputs, and YOLOv8n's
# real shapes with random weights), samples/ocr.reel on words ffmpeg draws.
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import reel
from conftest import SOURCE

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
PPOCR = os.path.join(SOURCE, "cache", "models", "ppocr")
FRAMES = 6


@pytest.fixture(scope="session")
def segpose_models(tmp_path_factory):
    """The directory of make_segpose_models.py's models: ctest's (REEL_SEGPOSE_MODELS), else built here."""
    names = ("seg-known.onnx", "pose-known.onnx", "yolov8n-seg-640.onnx", "yolov8n-pose-640.onnx")
    given = os.environ.get("REEL_SEGPOSE_MODELS")
    if given and all(os.path.exists(os.path.join(given, n)) for n in names):
        return given
    try:
        import onnx  # noqa: F401
    except ImportError:
        pytest.skip("python3-onnx is missing: make_segpose_models.py cannot build the models")
    out = tmp_path_factory.mktemp("segpose")
    subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "models", "make_segpose_models.py"), str(out)],
                   check=True)
    return str(out)


def sample_text(name, replacements):
    """samples/NAME with each (old, new) replaced; each old must be there, so a changed sample fails here."""
    with open(os.path.join(SOURCE, "samples", name), encoding="utf-8") as f:
        text = f.read()
    for old, new in replacements:
        assert old in text, f"samples/{name} no longer has {old!r}"
        text = text.replace(old, new)
    return text


def cli_and_python(reel_bin, text, tmp_path):
    """Runs the description with the CLI (its metasink writes tmp_path/cli/NAME.jsonl) and in Python with an
    appsink on the tee; returns the CLI's JSON lines and the Python frames."""
    cli_dir, py_dir = tmp_path / "cli", tmp_path / "py"
    cli_dir.mkdir(), py_dir.mkdir()
    path = tmp_path / "sample.reel"
    path.write_text(text.replace("{OUT}", str(cli_dir)))
    subprocess.run([reel_bin, "run", "-q", "-f", str(path)], check=True, timeout=600)
    jsonl = [p for p in os.listdir(cli_dir) if p.endswith(".jsonl")]
    assert len(jsonl) == 1
    with open(cli_dir / jsonl[0], encoding="utf-8") as f:
        cli = [json.loads(line) for line in f]
    with reel.Pipeline(text.replace("{OUT}", str(py_dir)) + "\nt. ! queue ! appsink name=out", str(path)) as p:
        frames = list(p.pull("out"))
    assert len(frames) == len(cli) > 0
    return cli, frames


def assert_same_detection(det, j):
    assert np.allclose(det.box, j["box"], atol=1e-3), (det.box, j["box"])
    assert abs(det.score - j["score"]) < 1e-4
    assert det.class_id == j.get("class", -1)
    assert det.track_id == j.get("track", -1)


def decode_runs(runs, width, height):
    """The JSON's runs as pixels, one run at a time (independently of reel.Mask.array)."""
    out = np.zeros(width * height, dtype=bool)
    at = 0
    for i, r in enumerate(runs):
        if i % 2:
            out[at:at + r] = True
        at += r
    return out.reshape(height, width)


@pytest.mark.parametrize("model", ["seg-known.onnx", "yolov8n-seg-640.onnx"])
def test_masks_as_metasink_writes_them(reel_bin, faces_clip, segpose_models, model, tmp_path):
    text = sample_text("segment.reel", [
        ("source location=cache/media/faces-720p.mp4", f"source location={faces_clip} num-buffers={FRAMES}"),
        ("model=cache/models/yolov8n-seg.onnx", f"model={os.path.join(segpose_models, model)}"),
        ("cache/demo/", "{OUT}/")])
    cli, frames = cli_and_python(reel_bin, text, tmp_path)
    masks = 0
    for f, c in zip(frames, cli):
        d = f.detections
        assert len(d) == len(c["detections"]) == len(d.masks)
        assert d.keypoint_scores.shape == (len(d), 0) and d.texts == [""] * len(d)
        for det, j in zip(d, c["detections"]):
            assert_same_detection(det, j)
            m = j["mask"]
            assert isinstance(det.mask, reel.Mask)
            assert (det.mask.x, det.mask.y, det.mask.width, det.mask.height) == (m["x"], m["y"], m["width"],
                                                                                 m["height"])
            assert det.mask.runs.dtype == np.uint32 and det.mask.runs.tolist() == m["runs"]
            assert det.mask.truncated == m.get("truncated", False)
            pixels = det.mask.array
            assert pixels.dtype == bool and pixels.shape == (m["height"], m["width"])
            assert np.array_equal(pixels, decode_runs(m["runs"], m["width"], m["height"]))
            masks += 1
    assert masks >= len(frames)
    if model == "seg-known.onnx":
        # Its first box's mask is a disc of radius 25 model pixels at the box's centre: 1280x720
        # letterboxed into 160x160, a model pixel is 8 frame pixels.
        d = frames[0].detections[0]
        disc, area = d.mask.array, np.pi * (25 * 1280 / 160) ** 2
        assert abs(disc.sum() - area) < 0.05 * area
        assert disc[disc.shape[0] // 2, disc.shape[1] // 2] and not disc[0, 0]


@pytest.mark.parametrize("model", ["pose-known.onnx", "yolov8n-pose-640.onnx"])
def test_keypoints_as_metasink_writes_them(reel_bin, faces_clip, segpose_models, model, tmp_path):
    text = sample_text("pose.reel", [
        ("source location=cache/media/faces-720p.mp4", f"source location={faces_clip} num-buffers={FRAMES}"),
        ("model=cache/models/yolov8n-pose.onnx", f"model={os.path.join(segpose_models, model)}"),
        ("cache/demo/", "{OUT}/")])
    cli, frames = cli_and_python(reel_bin, text, tmp_path)
    people = 0
    for f, c in zip(frames, cli):
        d = f.detections
        assert len(d) == len(c["detections"])
        assert d.masks == [None] * len(d)
        if len(d):
            assert d.keypoints.shape == (len(d), 17, 3)
        for det, j in zip(d, c["detections"]):
            assert_same_detection(det, j)
            assert det.mask is None and det.text == "" and det.text_score == 0
            want = np.array(j["keypoints"], dtype=np.float64)
            assert want.shape == (17, 3)
            assert np.allclose(det.landmarks, want[:, :2], atol=1e-3)
            assert np.allclose(det.keypoint_scores, want[:, 2], atol=1e-4)
            assert np.allclose(det.keypoints, want, atol=1e-3)
            people += 1
    assert people >= len(frames)
    if model == "pose-known.onnx":
        # Person A's ears score 0.2, the rest 0.9 (make_segpose_models.py).
        scores = frames[0].detections.keypoint_scores[0]
        assert np.allclose(scores[[3, 4]], 0.2, atol=1e-6) and np.allclose(np.delete(scores, [3, 4]), 0.9, atol=1e-6)


def test_text_as_metasink_writes_it(reel_bin, tmp_path):
    if not os.path.exists(os.path.join(PPOCR, "ch_PP-OCRv4_rec_infer.onnx")) or not os.path.exists(FONT) \
            or not shutil.which("ffmpeg"):
        pytest.skip("no PP-OCRv4 models (scripts/fetch-models ppocr-det ppocr-rec), no DejaVu Sans "
                    "(fonts-dejavu-core) or no ffmpeg")
    # The clip samples/ocr.reel's comment makes, 3 frames of it.
    clip = tmp_path / "text-720p.mp4"
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "color=c=white:s=1280x720:r=25",
                    "-frames:v", "3", "-pix_fmt", "yuv420p", "-vf",
                    f"drawtext=fontfile={FONT}:text='REEL 2026':fontsize=96:x=100:y=120,"
                    f"drawtext=fontfile={FONT}:text='hello world':fontsize=72:x=420:y=460", str(clip)], check=True)
    text = sample_text("ocr.reel", [("source location=cache/media/text-720p.mp4", f"source location={clip}"),
                                    ("cache/demo/", "{OUT}/")])
    cli, frames = cli_and_python(reel_bin, text, tmp_path)
    assert len(frames) == 3
    for f, c in zip(frames, cli):
        d = f.detections
        assert sorted(d.texts) == ["REEL 2026", "hello world"]
        assert [j["text"] for j in c["detections"]] == d.texts
        for det, j in zip(d, c["detections"]):
            assert_same_detection(det, j)
            assert det.text == j["text"] and abs(det.text_score - j["text_score"]) < 1e-4 and det.text_score > 0.9
            assert det.mask is None and np.isnan(det.keypoint_scores).all()
            # A text region's corners are its landmarks, unscored.
            assert det.landmarks.shape == (4, 2)
        assert np.allclose(d.text_scores, [j["text_score"] for j in c["detections"]], atol=1e-4)


def test_mask_array_edges():
    # Off first; a run of 0 when the top left is on; pixels past the last run are off.
    m = reel.Mask(5, 6, 3, 2, np.array([0, 2, 3, 1], dtype=np.uint32), False)
    assert m.array.tolist() == [[True, True, False], [False, False, True]]
    assert not reel.Mask(0, 0, 4, 3, np.array([], dtype=np.uint32), True).array.any()
    # Runs reaching past the rectangle stop at its end.
    assert reel.Mask(0, 0, 2, 2, np.array([1, 1 << 31], dtype=np.uint32), False).array.tolist() == \
        [[False, True], [True, True]]

# samples/python run as a user runs them, on known inputs.
import os
import re
import subprocess
import sys

from conftest import SOURCE

SAMPLES = os.path.join(SOURCE, "samples", "python")


def sample(name, *args):
    r = subprocess.run([sys.executable, os.path.join(SAMPLES, name), *map(str, args)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def frames_in(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip())


def test_faces_sample(blazeface, faces_clip, tmp_path):
    out = sample("faces.py", faces_clip, tmp_path / "faces.mp4")
    lines = [l for l in out.splitlines() if " faces " in l]
    assert len(lines) == 30 and all(": 2 faces" in l for l in lines)
    assert frames_in(tmp_path / "faces.mp4") == 30


def test_push_numpy_sample(tmp_path):
    sample("push_numpy.py", tmp_path / "made.mp4", 45)
    assert frames_in(tmp_path / "made.mp4") == 45


def test_model_on_image_sample(blazeface):
    out = sample("model_on_image.py")
    assert float(re.search(r"best anchor score ([0-9.]+)", out).group(1)) > 0.5


def test_custom_element_sample():
    out = sample("custom_element.py")
    rows = {int(m.group(1)): (eval(m.group(2)), eval(m.group(3)))
            for m in re.finditer(r"frame (\d+): centre (\[.*?\]) corner (\[.*?\])", out)}
    assert set(rows) == {0, 15, 30, 45, 59}
    centre, corner = rows[0]
    assert sum(corner) < 0.3 * sum(centre)          # strength 0.8: dark corners
    # strength 0.2 once the frames queued when it was set (two links and the
    # appsink, 8 each, at most) have gone by: surely by the last frame
    centre, corner = rows[59]
    assert sum(corner) > 0.7 * sum(centre)

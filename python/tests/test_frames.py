# Frames: numpy views without copies, pushing numpy into appsrc, lifetime,
# references, threads and Ctrl-C.
import gc
import signal
import subprocess
import sys
import threading
import time
import tracemalloc

import numpy as np
import pytest

import reel


def echo(fmt, w, h, n=1, **push):
    """Pushes n frames made by push['make'](i) through appsrc ! appsink and returns the pulled ones."""
    p = reel.Pipeline(f"appsrc name=in caps=video/raw,format={fmt},width={w},height={h},framerate=25/1 "
                      "! appsink name=out max-buffers=64")
    p.start()
    for i in range(n):
        assert p.push("in", push["make"](i), pts=push.get("pts", lambda i: None)(i))
    p.end("in")
    frames = list(p.pull("out"))
    p.close()
    return frames


@pytest.mark.parametrize("fmt,ch", [("rgb24", 3), ("bgr24", 3), ("rgba", 4), ("bgra", 4), ("gray8", 0)])
def test_packed_formats_round_trip(fmt, ch):
    rng = np.random.default_rng(1)
    shape = (37, 50, ch) if ch else (37, 50)
    imgs = [rng.integers(0, 256, shape, dtype=np.uint8) for _ in range(3)]
    frames = echo(fmt, 50, 37, n=3, make=lambda i: imgs[i], pts=lambda i: 0.5 + i)
    assert [f.frame_number for f in frames] == [0, 1, 2]
    for img, f in zip(imgs, frames):
        assert (f.width, f.height, f.format, f.media) == (50, 37, fmt, "video/raw")
        assert f.array.shape == shape and f.array.dtype == np.uint8
        assert np.array_equal(f.array, img)
    assert [f.pts for f in frames] == [0.5, 1.5, 2.5]


def test_planar_formats_round_trip():
    rng = np.random.default_rng(2)
    y, u, v = (rng.integers(0, 256, s, dtype=np.uint8) for s in [(48, 64), (24, 32), (24, 32)])
    f, = echo("yuv420p", 64, 48, make=lambda i: (y, u, v))
    assert [np.array_equal(a, b) for a, b in zip(f.planes, (y, u, v))] == [True] * 3
    with pytest.raises(ValueError, match="planes"):
        f.array
    # OpenCV's I420 layout: one (H*3/2, W) array of the planes in turn
    i420 = np.concatenate([y.ravel(), u.ravel(), v.ravel()]).reshape(72, 64)
    g, = echo("yuv420p", 64, 48, make=lambda i: i420)
    assert np.array_equal(g.planes[1], u) and np.array_equal(g.planes[2], v)
    uv = rng.integers(0, 256, (24, 32, 2), dtype=np.uint8)
    n, = echo("nv12", 64, 48, make=lambda i: [y, uv.reshape(24, 64)])
    assert n.planes[1].shape == (24, 32, 2) and np.array_equal(n.planes[1], uv)


def test_push_checks_the_array():
    p = reel.Pipeline("appsrc name=in caps=video/raw,format=rgb24,width=16,height=8 ! fakesink name=s")
    p.start()
    good = np.zeros((8, 16, 3), np.uint8)
    with pytest.raises(ValueError, match="uint8"):
        p.push("in", good.astype(np.float32))
    with pytest.raises(ValueError, match=r"shape \(8, 16, 3\)"):
        p.push("in", np.zeros((8, 16, 4), np.uint8))
    with pytest.raises(ValueError, match=r"shape \(8, 16, 3\)"):
        p.push("in", np.zeros((800, 1600, 3), np.uint8))  # too large
    with pytest.raises(ValueError, match="contiguous"):
        p.push("in", np.zeros((8, 32, 3), np.uint8)[:, ::2])  # every other pixel
    with pytest.raises(ValueError, match="numpy array"):
        p.push("in", [[0] * 48] * 8)
    with pytest.raises(ValueError, match="not an appsrc"):
        p.push("s", good)
    assert p.push("in", np.zeros((16, 48, 3), np.uint8)[::2, :16])  # padded rows are fine
    p.end("in")
    p.wait()
    assert p.report()["elements"][-1]["buffers_in"] == 1
    p.close()


def test_arrays_are_read_only_views():
    f, = echo("rgb24", 8, 4, make=lambda i: np.full((4, 8, 3), 7, np.uint8))
    a = f.array
    assert not a.flags.writeable and a.base is f
    with pytest.raises(ValueError):
        a[0, 0, 0] = 1
    with pytest.raises(ValueError):
        a.setflags(write=True)
    b = f.array
    assert np.shares_memory(a, b)  # no copy: the same memory each time


def test_arrays_outlive_their_pipeline():
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (120, 160, 3), dtype=np.uint8) for _ in range(20)]
    frames = echo("rgb24", 160, 120, n=20, make=lambda i: imgs[i])
    arrays = [f.array for f in frames]
    del frames
    gc.collect()
    # Churn the allocator so that freed memory would be reused.
    junk = [reel.Pipeline("testsrc num-buffers=30 ! video/raw,format=rgb24,width=160,height=120 ! fakesink")
            for _ in range(3)]
    for p in junk:
        p.run()
        p.close()
    for a, img in zip(arrays, imgs):
        assert np.array_equal(a, img)


def test_no_reference_leaks_over_10000_frames():
    p = reel.Pipeline("testsrc num-buffers=10000 ! video/raw,format=rgb24,width=16,height=16 ! appsink name=out")
    frames = p.pull("out")
    for _ in range(500):  # warm up caches
        f = next(frames)
        f.array, f.pts, f.detections, f.classifications, f.events
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    objects_before = len(gc.get_objects())
    refs_before = sys.getrefcount(None)
    n = 500
    for f in frames:
        a = f.array
        f.pts, f.stream, f.format, f.detections, f.classifications, f.events, f.tensors
        assert a.base is f
        n += 1
    del f, a
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    assert n == 10000
    assert grown < 64 * 1024, f"{grown} bytes more after 9500 frames"
    assert len(gc.get_objects()) - objects_before < 100
    assert abs(sys.getrefcount(None) - refs_before) < 100
    p.close()


def test_two_pipelines_from_two_threads():
    results = {}

    def work(k, n):
        p = reel.Pipeline(f"testsrc num-buffers={n} ! video/raw,format=rgb24,width=64,height=64 "
                          "! identity sleep-us=2000 ! appsink name=out")
        results[k] = [int(f.frame_number) for f in p.pull("out")]
        p.close()

    threads = [threading.Thread(target=work, args=(k, 40 + k)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[0] == list(range(40)) and results[1] == list(range(41))


CTRL_C_SCRIPT = r"""
import reel, sys
p = reel.Pipeline("testsrc is-live=true ! video/raw,width=320,height=240 ! convert "
                  "! encode codec=h264 ! sink location=" + sys.argv[1])
print("running", flush=True)
try:
    p.run()
except KeyboardInterrupt:
    print("interrupted", p.running, flush=True)
    raise
"""


def test_ctrl_c_stops_a_running_pipeline_cleanly(tmp_path):
    out = tmp_path / "live.mp4"
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_SCRIPT, str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "running"
    time.sleep(1.5)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert "interrupted False" in stdout, stderr
    assert "KeyboardInterrupt" in stderr
    probe = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                            "stream=nb_read_frames", "-of", "csv=p=0", str(out)], capture_output=True, text=True)
    assert probe.returncode == 0 and int(probe.stdout.strip()) > 5, probe.stderr  # playable to its end

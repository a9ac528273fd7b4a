#!/usr/bin/env python3
"""Live sources end to end, all on 127.0.0.1 with real senders: `reel run`
reads source ! decode ! metasink and the JSONL it writes is checked (one
line per frame, frame numbers continuous, pts increasing, the right count).

Usage: test_live.py REEL CASE, CASE one of
  udp          ffmpeg -re sends MPEG-TS over UDP
  udp-reconnect  the sender stops, starts again, then stops for good
  rtsp-tcp     a gst-rtsp-server stream over RTSP interleaved TCP
  rtsp-udp     the same over RTP/UDP
  reconnect    the server is killed mid-stream and restarted: the run goes
               on; killed again and left down: reel gives up with an error
Exit 77 (skipped) when ffmpeg or gst-rtsp-server (python3-gi) is missing."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import fail, skip, free_port, wait_for  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FPS = 25


def gi_python():
    """A python with gst-rtsp-server's bindings (the system one when the
    first python3 on PATH is another)."""
    probe = ("import gi; gi.require_version('GstRtspServer', '1.0'); "
             "from gi.repository import Gst, GstRtspServer; Gst.init(None); "
             "assert Gst.ElementFactory.find('x264enc') and Gst.ElementFactory.find('rtph264pay')")
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and subprocess.run([exe, "-c", probe], capture_output=True).returncode == 0:
            return exe
    skip("no python3-gi with gir1.2-gst-rtsp-server-1.0, x264enc (gstreamer1.0-plugins-ugly) and rtph264pay")


class Server:
    """gst-rtsp-server in a process of its own, so that it can be killed."""

    def __init__(self, python, port, *args):
        self.proc = subprocess.Popen([python, os.path.join(HERE, "rtsp_server.py"), str(port), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            fail(f"the RTSP server did not start: {line} {self.proc.stderr.read()}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Reel:
    def __init__(self, reel, description, out):
        self.out = out
        self.err = open(out + ".stderr", "w+")
        self.proc = subprocess.Popen([reel, "run", description], stdout=subprocess.DEVNULL, stderr=self.err)

    def lines(self):
        """Whole lines written so far."""
        try:
            with open(self.out, encoding="utf-8") as f:
                return f.read().count("\n")
        except FileNotFoundError:
            return 0

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            fail(f"reel run did not end within {timeout} s: {self.stderr()}")
        return rc

    def stderr(self):
        self.err.seek(0)
        text = self.err.read()
        if "Sanitizer" in text:
            fail(f"reel run: {text}")
        return text


def frames(path, sizes=((320, 240),)):
    """The JSONL's frames, after checking every line is a whole frame object
    of one of `sizes` with the frame number continuing and pts increasing."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if text and not text.endswith("\n"):
        fail(f"{path} ends in a cut line: {text[-80:]!r}")
    out = [json.loads(line) for line in text.splitlines()]
    for i, d in enumerate(out):
        if d["frame"] != i:
            fail(f"line {i} is frame {d['frame']}: frame numbers do not continue (downstream restarted?)")
        if (d["width"], d["height"]) not in sizes:
            fail(f"frame {i} is {d['width']}x{d['height']}, wanted one of {sizes}")
        if d["pts"] is None or (i > 0 and d["pts"] <= out[i - 1]["pts"]):
            fail(f"pts not increasing at frame {i}: {out[i - 1]['pts'] if i else None} then {d['pts']}")
    return out


def check_spacing(fs, what):
    """Frames one 1/FPS apart: none lost or repeated."""
    for a, b in zip(fs, fs[1:]):
        if abs(b["pts"] - a["pts"] - 1 / FPS) > 0.002:
            fail(f"{what}: frames {a['frame']} and {b['frame']} are {b['pts'] - a['pts']:.4f} s apart")


def check_count(n, lo, hi, what):
    if not lo <= n <= hi:
        fail(f"{what}: {n} frames, wanted {lo}..{hi}")


def udp_listening(run, port):
    def listening():
        # reel's socket holds the port: binding it fails then.
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.bind(("127.0.0.1", port))
            return run.proc.poll() is not None
        except OSError:
            return True
    return listening


def send_udp(port, seconds, size="320x240"):
    """ffmpeg -re sends a generated clip as MPEG-TS, one keyframe a second;
    each run's clock starts anew, as a restarted camera's does."""
    sender = subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi",
         "-i", f"testsrc=size={size}:rate={FPS}", "-t", str(seconds), "-c:v", "libx264", "-g", str(FPS),
         "-bf", "0", "-pix_fmt", "yuv420p", "-f", "mpegts", f"udp://127.0.0.1:{port}?pkt_size=1316"],
        capture_output=True, text=True, timeout=30)
    if sender.returncode != 0:
        fail(f"ffmpeg could not send: {sender.stderr}")


def case_udp(reel, tmp):
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    port = free_port(socket.SOCK_DGRAM)
    out = os.path.join(tmp, "udp.jsonl")
    run = Reel(reel, f"source location=udp://127.0.0.1:{port} timeout=1500 retry-max=0 "
                     f"! decode ! metasink location={out}", out)

    listening = udp_listening(run, port)
    wait_for("reel to listen", listening, 20)
    seconds = 4
    send_udp(port, seconds)
    rc = run.wait(20)
    err = run.stderr()
    if rc != 0:
        fail(f"reel run exited {rc}: {err}")
    if "no data for 1500 ms" not in err or "retry-max=0" not in err:
        fail(f"the end of the stream was not reported: {err}")
    fs = frames(out)
    # Live: what arrives while the stream is probed (up to a second) and
    # until the next keyframe is not sent.
    check_count(len(fs), seconds * FPS - 2 * FPS, seconds * FPS, "udp")
    if fs[0]["pts"] != 0:
        fail(f"the first pts is {fs[0]['pts']}, wanted 0 (the run's clock)")
    check_spacing(fs, "udp")
    print(f"udp: {len(fs)} of {seconds * FPS} frames, pts 0..{fs[-1]['pts']}")


def case_udp_reconnect(reel, tmp):
    """The sender stops and starts again at another size, its timestamps
    starting over: the silence is noticed after `timeout`, the source
    reconnects, the new size reaches the sink (caps renegotiated, decode not
    restarted), pts go on increasing; once the sender is gone for good the
    attempts run out."""
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    port = free_port(socket.SOCK_DGRAM)
    out = os.path.join(tmp, "udp-reconnect.jsonl")
    url = f"udp://127.0.0.1:{port}"
    run = Reel(reel, f"source location={url} timeout=1000 retry-max=3 retry-delay=200 "
                     f"! decode ! metasink location={out}", out)
    wait_for("reel to listen", udp_listening(run, port), 20)
    send_udp(port, 3)
    # Restarted while the first attempt waits for data.
    wait_for("reel to notice the silence", lambda: "attempt 1 of" in run.stderr() or run.proc.poll() is not None, 10)
    wait_for("reel to listen again", udp_listening(run, port), 10)
    send_udp(port, 3, "352x288")
    rc = run.wait(30)
    err = run.stderr()
    if rc != 1:
        fail(f"reel run exited {rc} with the sender gone, wanted 1 (an error): {err}")
    for text in (f"lost '{url}' (no data for 1000 ms); reconnecting in 200 ms (attempt 1 of 3)",
                 f"reconnected to '{url}'", f"lost '{url}' and gave up after 3 reconnect attempts"):
        if text not in err:
            fail(f"no '{text}' in: {err}")
    fs = frames(out, ((320, 240), (352, 288)))
    gaps = [(a, b) for a, b in zip(fs, fs[1:]) if b["pts"] - a["pts"] > 0.5]
    if len(gaps) != 1:
        fail(f"wanted one gap in pts (between the senders), found {len(gaps)}: {gaps}")
    a, b = gaps[0]
    before, after = fs[:fs.index(a) + 1], fs[fs.index(b):]
    check_count(len(before), FPS, 3 * FPS, "first sender")
    check_count(len(after), FPS, 3 * FPS, "second sender")
    if any((f["width"], f["height"]) != (320, 240) for f in before) or \
            any((f["width"], f["height"]) != (352, 288) for f in after):
        fail("frames before the gap are not all 320x240 or those after it not all 352x288")
    check_spacing(before, "first sender")
    check_spacing(after, "second sender")
    print(f"udp reconnect: {len(before)} + {len(after)} frames, gap {a['pts']:.2f} -> {b['pts']:.2f} s")
    print(err, end="")


def case_rtsp(reel, tmp, transport):
    python = gi_python()
    port = free_port(socket.SOCK_STREAM)
    total = 75
    server = Server(python, port, "--protocols", transport, "--frames", str(total))
    out = os.path.join(tmp, f"rtsp-{transport}.jsonl")
    try:
        run = Reel(reel, f"source location=rtsp://127.0.0.1:{port}/test rtsp-transport={transport} timeout=2000 "
                         f"retry-max=0 ! decode ! metasink location={out}", out)
        rc = run.wait(30)
    finally:
        server.kill()
    err = run.stderr()
    if rc != 0:
        fail(f"reel run over {transport} exited {rc}: {err}")
    fs = frames(out)
    check_count(len(fs), total - 2 * FPS, total, f"rtsp over {transport}")
    check_spacing(fs, f"rtsp over {transport}")
    print(f"rtsp over {transport}: {len(fs)} of {total} frames")


def case_reconnect(reel, tmp):
    python = gi_python()
    port = free_port(socket.SOCK_STREAM)
    out = os.path.join(tmp, "reconnect.jsonl")
    url = f"rtsp://127.0.0.1:{port}/test"
    retry_max, retry_delay = 5, 200
    server = Server(python, port, "--protocols", "tcp")
    run = Reel(reel, f"source location={url} rtsp-transport=tcp timeout=1000 retry-max={retry_max} "
                     f"retry-delay={retry_delay} ! decode ! metasink location={out}", out)
    try:
        wait_for("frames before the cut", lambda: run.lines() >= FPS, 20)
        server.kill()
        cut = time.monotonic()
        before = run.lines()
        time.sleep(1.5)
        server = Server(python, port, "--protocols", "tcp")
        restarted = time.monotonic()
        wait_for("frames after the restart", lambda: run.lines() >= before + 2 * FPS, 20)
        recovered = time.monotonic()
        # The second cut is final: the source gives up after retry-max attempts.
        server.kill()
    finally:
        server.kill()
    rc = run.wait(20)
    err = run.stderr()
    if rc != 1:
        fail(f"reel run exited {rc} with the server gone, wanted 1 (an error): {err}")
    if f"lost '{url}' and gave up after {retry_max} reconnect attempts" not in err:
        fail(f"no clear error once retries ran out: {err}")
    for attempt in range(1, retry_max + 1):
        if f"(attempt {attempt} of {retry_max})" not in err:
            fail(f"no warning for attempt {attempt}: {err}")
    if f"lost '{url}'" not in err.split("reconnected")[0] or "reconnected to" not in err:
        fail(f"the first loss and the reconnect were not reported: {err}")
    fs = frames(out)
    gaps = [(a, b) for a, b in zip(fs, fs[1:]) if b["pts"] - a["pts"] > 0.5]
    if len(gaps) != 1:
        fail(f"wanted one gap in pts (the cut), found {len(gaps)}: {gaps}")
    a, b = gaps[0]
    after = [f for f in fs if f["pts"] >= b["pts"]]
    if len(after) < FPS:
        fail(f"{len(after)} frames after the restart, wanted at least {FPS}")
    # Back within the backoff bound: the cut is noticed after the timeout
    # (1 s), the server is back 1.5 s later, and the next attempt comes at
    # most the longest delay after that; allow for a keyframe and slow runs.
    bound = 1.0 + 1.5 + retry_delay * 2 ** (retry_max - 1) / 1000 + 1.0 + 2.0
    if b["pts"] - a["pts"] > bound:
        fail(f"pts gap {b['pts'] - a['pts']:.2f} s over the cut, wanted under {bound:.1f} s")
    check_spacing(fs[:fs.index(a) + 1], "before the cut")
    check_spacing(after, "after the restart")
    print(f"reconnect: {len(fs)} frames, cut after frame {a['frame']} at pts {a['pts']:.2f}, "
          f"back at {b['pts']:.2f} (restart to frames: {recovered - restarted:.1f} s, "
          f"down {restarted - cut:.1f} s); gave up after {retry_max} attempts")
    print(err, end="")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    reel, case = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        if case == "udp":
            case_udp(reel, tmp)
        elif case == "udp-reconnect":
            case_udp_reconnect(reel, tmp)
        elif case in ("rtsp-tcp", "rtsp-udp"):
            case_rtsp(reel, tmp, case[5:])
        elif case == "reconnect":
            case_reconnect(reel, tmp)
        else:
            sys.exit(f"unknown case {case}")
    print("PASS")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Live sources end to end, all on 127.0.0.1 with real senders: `reel run`
reads source ! decode ! metasink and the JSONL it writes is checked (one
line per frame, frame numbers continuous, pts increasing, the right count).

Usage: test_live.py REEL CASE, CASE one of
  udp          ffmpeg -re sends MPEG-TS over UDP
  udp-reconnect  the sender stops, starts again, then stops for good
  on-failure   one camera of two lost: dropped, or retried until it is back
  down-at-start  one camera of two refused at the start: the other runs
               through the batch, it joins once its server is up; all
               cameras down: a clear error
  rtsp-tcp     a gst-rtsp-server stream over RTSP interleaved TCP
  rtsp-udp     the same over RTP/UDP
  reconnect    the server is killed mid-stream and restarted: the run goes
               on; killed again and left down: reel gives up with an error
  retry-forever  retry-max=-1: more attempts than the default 10 fail, the
               server comes back, frames resume
  backoff      retry-delay doubles per attempt and stops at 10 s
  timeout-zero timeout=0: a sender paused far longer than another source's
               timeout is waited for, and its frames go on after it resumes
  http         a file served by a local HTTP server plays like the file
  stats        on a terminal: the stats line (frames, p95, drops) and a live
               run's status line per sink
Exit 77 (skipped) when ffmpeg or gst-rtsp-server (python3-gi) is missing."""
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import fail, skip, free_port, wait_for, read  # noqa: E402

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
    def __init__(self, reel, description, out, options=()):
        self.out = out
        # reel's own open file: a shared one would share its offset, and
        # reading it from the start could put reel's next line over the first.
        self.err = out + ".stderr"
        with open(self.err, "w") as err:
            self.proc = subprocess.Popen([reel, "run", *options, description], stdout=subprocess.DEVNULL,
                                         stderr=err)

    def lines(self):
        """Whole lines written so far."""
        try:
            with open(self.out, encoding="utf-8") as f:
                return f.read().count("\n")
        except FileNotFoundError:
            return 0

    def after_gap(self):
        """Frames from the first gap in pts (a reconnect) on, among the whole
        lines written so far; 0 before a gap. Counted from the frames
        themselves: frames still on their way at the cut may come later."""
        ts = [json.loads(line)["pts"] for line in read(self.out).split("\n")[:-1]]
        for i in range(1, len(ts)):
            if ts[i] - ts[i - 1] > 0.5:
                return len(ts) - i
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
        text = read(self.err)
        if "Sanitizer" in text:
            fail(f"reel run: {text}")
        return text

    def interrupt(self):
        """Ctrl-C: the run ends cleanly (sources stop, sinks finalize)."""
        self.proc.send_signal(signal.SIGINT)


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


ATTEMPT = re.compile(r"reconnecting in (\d+) ms \(attempt (\d+) of (\w+)\)")


def attempts(err):
    """(delay ms, attempt) of every reconnect warning, in order."""
    return [(int(d), int(k)) for d, k, _ in ATTEMPT.findall(err)]


def check_backoff(err, delay):
    """Each loss's attempts count 1, 2, ... with the delay doubling from
    retry-delay, capped at 10 s. Returns the delays."""
    out, want_k = [], 1
    for d, k in attempts(err):
        if k != want_k and k != 1:
            fail(f"attempt {k} follows attempt {want_k - 1}: {err}")
        want = min(delay * 2 ** (k - 1), max(10000, delay))
        if d != want:
            fail(f"attempt {k} waits {d} ms, wanted {want} (retry-delay={delay}, doubling, 10 s cap): {err}")
        out.append(d)
        want_k = k + 1
    return out


def last_attempt(err):
    return max((k for _, k in attempts(err)), default=0)


def reconnected_at(err, url):
    m = re.findall(rf"reconnected to '{re.escape(url)}' \(attempt (\d+)\)", err)
    if len(m) != 1:
        fail(f"wanted one reconnect to '{url}', found {len(m)}: {err}")
    return int(m[0])


def check_back_at(err, url, announced):
    """The reconnect came at the first attempt made after the server was back:
    `announced` (the latest attempt announced once it was back; it may have
    tried just before) or the next."""
    k = reconnected_at(err, url)
    if k not in (announced, announced + 1):
        fail(f"reconnected at attempt {k}; attempt {announced} was announced when the server was back: {err}")
    return k


class Sender:
    """ffmpeg sending a generated clip as MPEG-TS over UDP to `ports` (one
    stream, the same to each), one keyframe a second, until stopped; each
    sender's clock starts anew, as a restarted camera's does. -re paces it;
    with `resumable` the realtime filter does, which after a SIGSTOP goes on
    at the frame rate instead of sending what it owes at once."""

    started = 0

    def __init__(self, tmp, ports, size="320x240", resumable=False):
        Sender.started += 1
        self.progress = os.path.join(tmp, f"sender{Sender.started}.progress")
        urls = [f"udp://127.0.0.1:{p}?pkt_size=1316" for p in ports]
        if resumable:
            src, pace = ["-i", f"testsrc=size={size}:rate={FPS},realtime"], ["-tune", "zerolatency"]
        else:
            src, pace = ["-re", "-i", f"testsrc=size={size}:rate={FPS}"], []
        out = ["-f", "mpegts", urls[0]] if len(urls) == 1 else \
            ["-f", "tee", "|".join(f"[f=mpegts]{u}" for u in urls)]
        self.proc = subprocess.Popen(
            ["ffmpeg", "-hide_banner", "-loglevel", "error", "-progress", self.progress, "-f", "lavfi", *src,
             "-t", "60", "-map", "0:v", "-c:v", "libx264", *pace, "-g", str(FPS), "-bf", "0",
             "-pix_fmt", "yuv420p", *out],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def wait_sending(self):
        """Until it reports frames sent: a source opened after that finds data
        at once, however long ffmpeg took to start."""
        wait_for("ffmpeg to send", lambda: re.search(r"^frame=[1-9]", read(self.progress), re.M) or
                 self.proc.poll() is not None, 60)
        if self.proc.poll() is not None:
            fail(f"ffmpeg could not send: {self.proc.stderr.read()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


def case_udp(reel, tmp):
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    port = free_port(socket.SOCK_DGRAM)
    out = os.path.join(tmp, "udp.jsonl")
    sender = Sender(tmp, [port])
    try:
        sender.wait_sending()
        run = Reel(reel, f"source location=udp://127.0.0.1:{port} timeout=1500 retry-max=0 "
                         f"! decode ! metasink location={out}", out)
        wait_for("frames", lambda: run.lines() >= 3 * FPS or run.proc.poll() is not None, 30)
    finally:
        sender.stop()
    rc = run.wait(30)
    err = run.stderr()
    if rc != 0:
        fail(f"reel run exited {rc}: {err}")
    if "no data for 1500 ms" not in err or "retry-max=0" not in err:
        fail(f"the end of the stream was not reported: {err}")
    fs = frames(out)
    check_count(len(fs), 3 * FPS, 60 * FPS, "udp")
    # Joined mid-stream: the first frame sent (a keyframe) is at 0.
    if fs[0]["pts"] != 0:
        fail(f"the first pts is {fs[0]['pts']}, wanted 0 (the run's clock)")
    check_spacing(fs, "udp")
    print(f"udp: {len(fs)} frames, pts 0..{fs[-1]['pts']}")


def case_udp_reconnect(reel, tmp):
    """The sender stops and another starts at another size, its timestamps
    starting over: the silence is noticed after `timeout`, the source
    reconnects, the new size reaches the sink (caps renegotiated, decode not
    restarted), pts go on increasing; once the sender is gone for good the
    attempts run out."""
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    port = free_port(socket.SOCK_DGRAM)
    out = os.path.join(tmp, "udp-reconnect.jsonl")
    url = f"udp://127.0.0.1:{port}"
    sender = Sender(tmp, [port])
    try:
        sender.wait_sending()
        run = Reel(reel, f"source location={url} timeout=1000 retry-max=3 retry-delay=200 "
                         f"! decode ! metasink location={out}", out)
        wait_for("frames from the first sender", lambda: run.lines() >= FPS or run.proc.poll() is not None, 30)
        sender.stop()
        # Started while the attempts listen: each waits up to 2 s for data
        # (timeout and probing), and this sender goes on until one finds it.
        wait_for("reel to notice the silence", lambda: "attempt 1 of" in run.stderr() or run.proc.poll() is not None,
                 20)
        sender = Sender(tmp, [port], "352x288")
        wait_for("frames from the second sender", lambda: run.after_gap() >= FPS or run.proc.poll() is not None, 30)
    finally:
        sender.stop()
    rc = run.wait(30)
    err = run.stderr()
    if rc != 1:
        fail(f"reel run exited {rc} with the sender gone, wanted 1 (an error): {err}")
    for text in (f"lost '{url}' (no data for 1000 ms); reconnecting in 200 ms (attempt 1 of 3)",
                 f"reconnected to '{url}'", f"lost '{url}' and gave up after 3 reconnect attempts"):
        if text not in err:
            fail(f"no '{text}' in: {err}")
    check_backoff(err, 200)
    fs = frames(out, ((320, 240), (352, 288)))
    gaps = [(a, b) for a, b in zip(fs, fs[1:]) if b["pts"] - a["pts"] > 0.5]
    if len(gaps) != 1:
        fail(f"wanted one gap in pts (between the senders), found {len(gaps)}: {gaps}")
    a, b = gaps[0]
    before, after = fs[:fs.index(a) + 1], fs[fs.index(b):]
    check_count(len(before), FPS, 60 * FPS, "first sender")
    check_count(len(after), FPS, 60 * FPS, "second sender")
    if any((f["width"], f["height"]) != (320, 240) for f in before) or \
            any((f["width"], f["height"]) != (352, 288) for f in after):
        fail("frames before the gap are not all 320x240 or those after it not all 352x288")
    check_spacing(before, "first sender")
    check_spacing(after, "second sender")
    print(f"udp reconnect: {len(before)} + {len(after)} frames, gap {a['pts']:.2f} -> {b['pts']:.2f} s")
    print(err, end="")


def case_on_failure(reel, tmp):
    """One camera of two is lost for good: with on-failure=drop its stream
    ends after retry-max attempts and the other goes on; left at auto (two
    live sources, no retry-max) it retries without end and comes back when
    its camera does. The report says where each input stands."""
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    port_a, port_b = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    while port_b == port_a:
        port_b = free_port(socket.SOCK_DGRAM)
    url_a, url_b = f"udp://127.0.0.1:{port_a}", f"udp://127.0.0.1:{port_b}"
    for policy in ("drop", "auto"):
        out_a, out_b = os.path.join(tmp, f"{policy}-a.jsonl"), os.path.join(tmp, f"{policy}-b.jsonl")
        report = os.path.join(tmp, f"{policy}.json")
        b_props = "retry-max=2 on-failure=drop" if policy == "drop" else ""
        senders = [Sender(tmp, [port_a]), Sender(tmp, [port_b])]
        try:
            for snd in senders:
                snd.wait_sending()
            run = Reel(reel, f"source name=cam_a location={url_a} timeout=1000 ! decode ! metasink location={out_a} "
                             f"source name=cam_b location={url_b} timeout=1000 retry-delay=100 {b_props} "
                             f"! decode ! metasink location={out_b}", out_a, ["--report-json", report])
            wait_for("frames from both cameras",
                     lambda: (run.lines() >= FPS and read(out_b).count("\n") >= FPS) or run.proc.poll() is not None,
                     30)
            senders[1].stop()
            if policy == "drop":
                given_up = "ending this stream, the others go on (on-failure=drop)"
                wait_for("camera b's stream to end", lambda: given_up in run.stderr() or run.proc.poll() is not None,
                         30)
            else:
                # Past the default retry-max of 10 would take minutes: the
                # attempts say they have no end.
                wait_for("camera b's first attempt",
                         lambda: "(attempt 2 of unlimited)" in run.stderr() or run.proc.poll() is not None, 30)
                senders[1] = Sender(tmp, [port_b])
                wait_for("camera b back", lambda: f"reconnected to '{url_b}'" in run.stderr()
                         or run.proc.poll() is not None, 30)
            if run.proc.poll() is not None:
                fail(f"{policy}: the run ended with camera b: {run.stderr()}")
            # Camera a went on throughout.
            now = run.lines()
            wait_for("more frames from camera a", lambda: run.lines() >= now + FPS or run.proc.poll() is not None,
                     30)
            run.interrupt()
            rc = run.wait(30)
        finally:
            for snd in senders:
                snd.stop()
        err = run.stderr()
        if rc != 0:
            fail(f"{policy}: reel run exited {rc}, wanted 0 (interrupted): {err}")
        check_spacing(frames(out_a), f"{policy}: camera a")
        els = report_elements(report)
        a, b = els["cam_a"].get("input"), els["cam_b"].get("input")
        if not a or a["state"] != "live" or a["reconnects"] != 0:
            fail(f"{policy}: camera a's input in the report: {a}")
        want_b = ("ended", 2) if policy == "drop" else ("live", None)
        if not b or b["state"] != want_b[0] or (want_b[1] is not None and b["reconnects"] != want_b[1]) \
                or b["reconnects"] < 1:
            fail(f"{policy}: camera b's input in the report: {b}, wanted state {want_b[0]}")
        print(f"on-failure={policy}: camera a {len(frames(out_a))} frames; camera b {b}")


def case_down_at_start(reel, tmp):
    """Camera b's RTSP server is not up when the run starts (connection
    refused): camera a's frames go through the batch meanwhile, b tries
    again with backoff, and once its server starts its stream joins the run
    and reaches its own sink. With every camera down there is nothing to
    run: a clear error."""
    python = gi_python()
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    port_a, port_b = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_STREAM)
    url_a, url_b = f"udp://127.0.0.1:{port_a}", f"rtsp://127.0.0.1:{port_b}/test"
    out_a, out_b = os.path.join(tmp, "down-a.jsonl"), os.path.join(tmp, "down-b.jsonl")
    report = os.path.join(tmp, "down.json")
    cams = (f"source name=cam_a location={url_a} timeout=1000 ! decode ! b. "
            f"source name=cam_b location={url_b} rtsp-transport=tcp timeout=3000 retry-delay=200 ! decode ! b. "
            f"batch name=b ! unbatch name=u  u. ! metasink location={out_a}  u. ! metasink location={out_b}")
    sender, server = Sender(tmp, [port_a]), None
    try:
        sender.wait_sending()
        run = Reel(reel, cams, out_a, ["--report-json", report])
        wait_for("camera b's second attempt", lambda: "(attempt 2 of unlimited)" in run.stderr()
                 or run.proc.poll() is not None, 30)
        wait_for("frames from camera a", lambda: run.lines() >= FPS or run.proc.poll() is not None, 30)
        if run.proc.poll() is not None:
            fail(f"the run ended with camera b down: {run.stderr()}")
        if read(out_b):
            fail(f"camera b wrote frames before its server was up: {read(out_b)[:200]}")
        server = Server(python, port_b, "--protocols", "tcp")
        wait_for("camera b's frames", lambda: read(out_b).count("\n") >= FPS or run.proc.poll() is not None, 60)
        now = run.lines()
        wait_for("more frames from camera a", lambda: run.lines() >= now + FPS or run.proc.poll() is not None, 30)
        run.interrupt()
        rc = run.wait(30)
    finally:
        sender.stop()
        if server:
            server.kill()
    err = run.stderr()
    if rc != 0:
        fail(f"reel run exited {rc}, wanted 0 (interrupted): {err}")
    if "Connection refused" not in err or f"opened '{url_b}'" not in err or "its stream joins the run" not in err:
        fail(f"the warnings do not say camera b was refused and then joined: {err}")
    check_spacing(frames(out_a), "camera a, camera b down")
    check_spacing(frames(out_b), "camera b, once up")
    els = report_elements(report)
    b = els["cam_b"].get("input")
    if not b or b["state"] != "live" or b["reconnects"] < 2 or "waiting" in els["cam_b"]:
        fail(f"camera b's input in the report: {els['cam_b']}")

    # Both down: nothing would run.
    port_c = free_port(socket.SOCK_STREAM)
    out = os.path.join(tmp, "none.jsonl")
    run = Reel(reel, f"source name=cam_a location=rtsp://127.0.0.1:{port_b}/test rtsp-transport=tcp ! decode ! b. "
                     f"source name=cam_c location=rtsp://127.0.0.1:{port_c}/test rtsp-transport=tcp ! decode ! b. "
                     f"batch name=b ! unbatch name=u  u. ! metasink location={out}  u. ! fakesink", out)
    rc = run.wait(30)
    err = run.stderr()
    want = "'cam_a', 'cam_c' cannot be opened, and the rest cannot run without them: no other source would run"
    if rc == 0 or want not in err:
        fail(f"every camera down: exit {rc}, wanted an error saying \"{want}\": {err}")
    print(f"camera b down at the start: camera a {len(frames(out_a))} frames; b joined after "
          f"{b['reconnects']} attempts, {len(frames(out_b))} frames")


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
    # The kill is seen at once (the connection closes): the timeout only
    # bounds how long a reconnect waits for a loaded server's first frames.
    run = Reel(reel, f"source location={url} rtsp-transport=tcp timeout=3000 retry-max={retry_max} "
                     f"retry-delay={retry_delay} ! decode ! metasink location={out}", out)
    try:
        wait_for("frames before the cut", lambda: run.lines() >= FPS, 20)
        server.kill()
        # Down until an attempt has failed against it.
        wait_for("a failed attempt", lambda: "still no" in run.stderr() or run.proc.poll() is not None, 20)
        server = Server(python, port, "--protocols", "tcp")
        announced = last_attempt(run.stderr())
        wait_for("frames after the restart", lambda: run.after_gap() >= 2 * FPS or run.proc.poll() is not None, 30)
        # The second cut is final: the source gives up after retry-max attempts.
        server.kill()
    finally:
        server.kill()
    rc = run.wait(30)
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
    back_at = check_back_at(err, url, announced)
    check_backoff(err, retry_delay)
    fs = frames(out)
    gaps = [(a, b) for a, b in zip(fs, fs[1:]) if b["pts"] - a["pts"] > 0.5]
    if len(gaps) != 1:
        fail(f"wanted one gap in pts (the cut), found {len(gaps)}: {gaps}")
    a, b = gaps[0]
    after = [f for f in fs if f["pts"] >= b["pts"]]
    if len(after) < FPS:
        fail(f"{len(after)} frames after the restart, wanted at least {FPS}")
    check_spacing(fs[:fs.index(a) + 1], "before the cut")
    check_spacing(after, "after the restart")
    print(f"reconnect: {len(fs)} frames, cut after frame {a['frame']} at pts {a['pts']:.2f}, "
          f"back at {b['pts']:.2f} (attempt {back_at}); gave up after {retry_max} attempts")
    print(err, end="")


def case_retry_forever(reel, tmp):
    """retry-max=-1: the attempts go on past the default 10 (retry-delay=1
    makes the first eleven take about 2 s) until the server is back."""
    python = gi_python()
    port = free_port(socket.SOCK_STREAM)
    out = os.path.join(tmp, "retry-forever.jsonl")
    url = f"rtsp://127.0.0.1:{port}/test"
    server = Server(python, port, "--protocols", "tcp")
    run = Reel(reel, f"source location={url} rtsp-transport=tcp timeout=3000 retry-max=-1 retry-delay=1 "
                     f"! decode ! metasink location={out}", out)
    try:
        wait_for("frames before the cut", lambda: run.lines() >= FPS, 20)
        server.kill()
        wait_for("attempt 11", lambda: "(attempt 11 of unlimited)" in run.stderr() or run.proc.poll() is not None,
                 30)
        server = Server(python, port, "--protocols", "tcp")
        announced = last_attempt(run.stderr())
        wait_for("frames after the restart", lambda: run.after_gap() >= 2 * FPS or run.proc.poll() is not None, 30)
        run.interrupt()
        rc = run.wait(30)
    finally:
        server.kill()
    err = run.stderr()
    if rc != 0:
        fail(f"reel run exited {rc}, wanted 0 (interrupted): {err}")
    if "gave up" in err:
        fail(f"reel gave up with retry-max=-1: {err}")
    for attempt in range(1, 12):
        if f"(attempt {attempt} of unlimited)" not in err:
            fail(f"no warning for attempt {attempt}: {err}")
    back_at = check_back_at(err, url, announced)
    delays = check_backoff(err, 1)
    fs = frames(out)
    gaps = [(a, b) for a, b in zip(fs, fs[1:]) if b["pts"] - a["pts"] > 0.5]
    if len(gaps) != 1:
        fail(f"wanted one gap in pts (the cut), found {len(gaps)}: {gaps}")
    a, b = gaps[0]
    after = fs[fs.index(b):]
    if len(after) < 2 * FPS:
        fail(f"{len(after)} frames after the restart, wanted at least {2 * FPS}")
    check_spacing(fs[:fs.index(a) + 1], "before the cut")
    check_spacing(after, "after the restart")
    print(f"retry forever: back at attempt {back_at}, delays {delays}, {len(fs)} frames")


def case_backoff(reel, tmp):
    """With the server gone for good, the delays read from the warnings are
    2600, 5200, then 10000 (5200 doubled, capped); Ctrl-C ends the wait."""
    python = gi_python()
    port = free_port(socket.SOCK_STREAM)
    out = os.path.join(tmp, "backoff.jsonl")
    url = f"rtsp://127.0.0.1:{port}/test"
    server = Server(python, port, "--protocols", "tcp")
    run = Reel(reel, f"source location={url} rtsp-transport=tcp timeout=3000 retry-max=5 retry-delay=2600 "
                     f"! decode ! metasink location={out}", out)
    try:
        wait_for("frames", lambda: run.lines() >= FPS, 20)
    finally:
        server.kill()
    wait_for("attempt 3", lambda: "(attempt 3 of 5)" in run.stderr() or run.proc.poll() is not None, 30)
    run.interrupt()
    rc = run.wait(30)
    err = run.stderr()
    if rc != 0:
        fail(f"reel run exited {rc}, wanted 0 (interrupted while waiting to reconnect): {err}")
    delays = check_backoff(err, 2600)
    if delays[:3] != [2600, 5200, 10000]:
        fail(f"delays {delays}, wanted 2600, 5200, 10000 first: {err}")
    if "gave up" in err or "reconnected" in err:
        fail(f"reel gave up or reconnected with the server gone and attempts left: {err}")
    frames(out)
    print(f"backoff: delays {delays}")


def case_timeout_zero(reel, tmp):
    """timeout=0 waits forever. One ffmpeg sends the same stream to two
    sources of one run: A (timeout=0) and a witness W (timeout=6000, longer
    than the default 5000, retry-max=0). The sender is paused (SIGSTOP)
    until W reports its loss: A saw the same silence, reported nothing, and
    takes the frames that come once the sender resumes."""
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    port_a, port_w = free_port(socket.SOCK_DGRAM), free_port(socket.SOCK_DGRAM)
    while port_w == port_a:
        port_w = free_port(socket.SOCK_DGRAM)
    out_a, out_w = os.path.join(tmp, "a.jsonl"), os.path.join(tmp, "w.jsonl")
    url_a, url_w = f"udp://127.0.0.1:{port_a}", f"udp://127.0.0.1:{port_w}"
    sender = Sender(tmp, [port_a, port_w], resumable=True)
    try:
        sender.wait_sending()
        run = Reel(reel, f"source location={url_a} timeout=0 ! decode ! metasink location={out_a} "
                         f"source location={url_w} timeout=6000 retry-max=0 ! decode ! metasink location={out_w}",
                   out_a)
        wait_for("frames on both", lambda: (run.lines() >= FPS and read(out_w)) or run.proc.poll() is not None, 30)
        sender.proc.send_signal(signal.SIGSTOP)
        wait_for("the witness to count its stream as lost",
                 lambda: f"lost '{url_w}'" in run.stderr() or run.proc.poll() is not None, 30)
        if run.proc.poll() is not None:
            fail(f"reel run ended during the pause: {run.stderr()}")
        # Seconds into the silence: what A had on its way is written.
        paused = run.lines()
        sender.proc.send_signal(signal.SIGCONT)
        wait_for("frames after the pause", lambda: run.lines() >= paused + 2 * FPS or run.proc.poll() is not None,
                 30)
        run.interrupt()
        rc = run.wait(30)
    finally:
        sender.stop()
    err = run.stderr()
    if rc != 0:
        fail(f"reel run exited {rc}, wanted 0 (interrupted): {err}")
    if not re.search(rf"lost '{re.escape(url_w)}' \(no data for 6000 ms\) after \d+ packets; "
                     r"ending the stream \(retry-max=0\)", err):
        fail(f"the witness did not report its loss: {err}")
    if f"'{url_a}'" in err:
        fail(f"the timeout=0 source reported something: {err}")
    fs = frames(out_a)
    # One stream throughout: no gap in pts (a reconnect would add one).
    check_spacing(fs, "timeout=0 across the pause")
    if len(fs) < paused + 2 * FPS:
        fail(f"{len(fs)} frames, wanted at least {paused + 2 * FPS}")
    print(f"timeout=0: {paused} frames before the pause, {len(fs)} in all, no warning")


def case_http(reel, tmp):
    """A file served by python's http.server (Content-Length, so a known
    length) plays to its end as the file does: the same frames, each with
    the same checksum, at the same spacing, ending cleanly."""
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    clip = os.path.join(tmp, "clip.mp4")
    total = 3 * FPS
    # x264's default B-frames: frames are reordered, as in most files.
    make = subprocess.run(
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", f"testsrc=size=320x240:rate={FPS}",
         "-frames:v", str(total), "-c:v", "libx264", "-g", str(FPS), "-pix_fmt", "yuv420p",
         "-movflags", "+faststart", clip], capture_output=True, text=True, timeout=60)
    if make.returncode != 0:
        fail(f"ffmpeg could not make the clip: {make.stderr}")
    port = free_port(socket.SOCK_STREAM)
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1",
                               "--directory", tmp, str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        if "Serving HTTP" not in line:
            fail(f"the HTTP server did not start: {line}")

        def play(location, name):
            listing = os.path.join(tmp, name)
            r = subprocess.run([reel, "run", f"source location={location} ! decode "
                                f"! fakesink checksum=true location={listing}"],
                               stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
            if r.returncode != 0 or "warning" in r.stderr or "Sanitizer" in r.stderr:
                fail(f"reel run on {location} exited {r.returncode}: {r.stderr}")
            md5 = re.findall(r"(\d+) buffers, md5 (\w+)", r.stderr)
            with open(listing, encoding="utf-8") as f:
                rows = [line.split() for line in f]
            return md5, [(int(n), int(pts), digest) for n, pts, digest in rows]

        local_md5, local = play(clip, "local.txt")
        http_md5, http = play(f"http://127.0.0.1:{port}/clip.mp4", "http.txt")
    finally:
        server.kill()
        _, log = server.communicate()
    if '"GET /clip.mp4 HTTP/1.1" 200' not in log:
        fail(f"the server did not serve the clip: {log}")
    if len(local) != total or len(http) != total:
        fail(f"{len(local)} frames from the file and {len(http)} over HTTP, wanted {total} each")
    if not local_md5 or local_md5 != http_md5:
        fail(f"checksums differ: file {local_md5}, HTTP {http_md5}")
    for (n, pts, digest), (hn, hpts, hdigest) in zip(local, http):
        if (n, digest) != (hn, hdigest):
            fail(f"frame {n} of the file is not frame {hn} over HTTP ({digest} vs {hdigest})")
        if pts - local[0][1] != hpts - http[0][1]:
            fail(f"frame {n}: pts {pts} in the file, {hpts} over HTTP: the spacing differs")
    print(f"http: {total} frames as from the file, md5 {local_md5[0][1]}")


def on_terminal(argv, timeout):
    """Runs argv with stderr on a pseudo-terminal (reel shows its progress
    only there). Returns its exit code and the lines drawn, each \r-refresh
    on its own and the line-clearing escape dropped."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    data = b""
    end = time.monotonic() + timeout
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                proc.kill()
                proc.wait()
                fail(f"{argv} did not end within {timeout} s: {data!r}")
            if not select.select([master], [], [], left)[0]:
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(master)
    text = data.decode(errors="replace")
    if "Sanitizer" in text:
        fail(text)
    return proc.wait(), [ln for ln in re.split(r"[\r\n]+", text.replace("\033[K", "")) if ln]


def report_elements(path):
    with open(path, encoding="utf-8") as f:
        return {e["name"]: e for e in json.load(f)["elements"]}


STATS = re.compile(r"reel: (\d+)(?:/\d+)? frames, \d+\.\d fps(?:, ETA \d+ s)?"
                   r"(?:, latency p95 (\d+\.\d) ms, (\d+) dropped)?")
SINK_STATUS = re.compile(r"(\S+) (\d+\.\d) fps (\d+) dropped p95 (\d+\.\d) ms")


def check_stats_line(reel, tmp):
    """A run that is not live shows the stats messages: frames so far, then
    the worst sink's p95 and the drops so far once there are any. It lasts
    at least 4 s (the sleeps), so that several come."""
    report = os.path.join(tmp, "stats.json")
    rc, lines = on_terminal([reel, "run", "--report-json", report,
                             "testsrc num-buffers=4000 ! identity sleep-us=1000 ! queue max-size=4 leaky=downstream "
                             "! identity sleep-us=20000 ! fakesink name=out"], 120)
    if rc != 0:
        fail(f"reel run exited {rc}: {lines}")
    stats = [STATS.fullmatch(ln) for ln in lines if " frames, " in ln and not ln.startswith("reel: done")]
    if not stats or None in stats:
        fail(f"stats lines not as expected: {lines}")
    full = [(int(m[1]), float(m[2]), int(m[3])) for m in stats if m[2]]
    if len(full) < 2:
        fail(f"wanted at least two stats lines with latency and drops: {lines}")
    sinks = report_elements(report)
    out = sinks["out"]
    dropped = sum(e["dropped"] for e in sinks.values())
    max_ms = out["latency"]["max_ms"]
    for (f0, _, d0), (f1, _, d1) in zip(full, full[1:]):
        if f1 < f0 or d1 < d0:
            fail(f"frames or drops went down: {full}")
    for frames_so_far, p95, drops in full:
        # The histogram's resolution (about 3%) on top of the run's worst.
        if not 0 < p95 <= max_ms * 1.05 or drops > dropped or frames_so_far > out["buffers_in"]:
            fail(f"stats ({frames_so_far} frames, p95 {p95} ms, {drops} dropped) do not fit the report "
                 f"({out['buffers_in']} frames, max {max_ms} ms, {dropped} dropped)")
    if dropped == 0:
        fail("the leaky queue dropped nothing")
    print(f"stats: {len(full)} lines, last {full[-1]}; report {out['buffers_in']} frames, {dropped} dropped")


def check_status_line(reel, tmp):
    """A live run replaces them with the status line: per sink, in order,
    fps over the last second, drops on its way, p95."""
    report = os.path.join(tmp, "status.json")
    rc, lines = on_terminal([reel, "run", "--report-json", report,
                             "testsrc is-live=true framerate=100 num-buffers=400 ! queue max-size=4 leaky=downstream "
                             "! identity sleep-us=20000 ! fakesink name=slow "
                             "testsrc is-live=true framerate=25 num-buffers=100 ! fakesink name=fast"], 120)
    if rc != 0:
        fail(f"reel run exited {rc}: {lines}")
    status = [ln for ln in lines if " dropped p95 " in ln]
    if len(status) < 2:
        fail(f"wanted at least two status lines: {lines}")
    rows = []
    for ln in status:
        parts = ln.removeprefix("reel: ").split(" | ") if ln.startswith("reel: ") else []
        ms = [SINK_STATUS.fullmatch(p) for p in parts]
        if len(ms) != 2 or None in ms or [m[1] for m in ms] != ["slow", "fast"]:
            fail(f"status line not 'reel: slow F fps D dropped p95 P ms | fast ...': {ln!r}")
        rows.append({m[1]: (float(m[2]), int(m[3]), float(m[4])) for m in ms})
    sinks = report_elements(report)
    for name in ("slow", "fast"):
        seen_frames = False
        for prev, row in zip([None] + rows, rows):
            fps, drops, p95 = row[name]
            if prev and drops < prev[name][1]:
                fail(f"{name}: drops went down: {[r[name] for r in rows]}")
            # Latency is over the whole run: once frames came it stays > 0.
            seen_frames = seen_frames or fps > 0
            if seen_frames and p95 <= 0:
                fail(f"{name}: p95 {p95} after frames arrived: {[r[name] for r in rows]}")
        if not seen_frames:
            fail(f"{name}: no frames in any status line: {[r[name] for r in rows]}")
    # What each sink's line counts: the queue before slow; nothing before fast.
    queue_dropped = sum(e["dropped"] for n, e in sinks.items() if n.startswith("queue"))
    if rows[-1]["slow"][1] > queue_dropped or queue_dropped == 0:
        fail(f"slow: {rows[-1]['slow'][1]} dropped in the status line, {queue_dropped} in the report")
    if any(r["fast"][1] for r in rows):
        fail(f"fast: drops without a leaky link: {[r['fast'] for r in rows]}")
    print(f"status: {len(rows)} lines, last {status[-1]}")


def case_stats(reel, tmp):
    check_stats_line(reel, tmp)
    check_status_line(reel, tmp)


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
        elif case == "retry-forever":
            case_retry_forever(reel, tmp)
        elif case == "backoff":
            case_backoff(reel, tmp)
        elif case == "timeout-zero":
            case_timeout_zero(reel, tmp)
        elif case == "http":
            case_http(reel, tmp)
        elif case == "on-failure":
            case_on_failure(reel, tmp)
        elif case == "down-at-start":
            case_down_at_start(reel, tmp)
        elif case == "stats":
            case_stats(reel, tmp)
        else:
            sys.exit(f"unknown case {case}")
    print("PASS")


if __name__ == "__main__":
    main()

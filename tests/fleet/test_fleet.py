#!/usr/bin/python3
"""reel on NATS JetStream, end to end: each case starts its own nats-server
(-js, a store of its own, a free port on 127.0.0.1) and drives the `reel`
program (run, worker, submit, jobs); nats_tail reads subjects and streams.

usage: test_fleet.py REEL NATS_TAIL CASE
  natssink    one message per frame, in order per stream, each the JSON metasink writes
  jetstream   natssink jetstream=true: every message stored in the stream; no server: a clear error
  reconnect   natssink while its server restarts: the run goes on, messages still come, in order
  batch       ten file jobs across three workers: each run exactly once, every output playable
  kill        a worker killed during a file job: another finishes it; no half file under the final name
  live        a camera job outlives its worker: another takes it and metadata keeps coming
  badjob      a description that does not parse fails at once, recorded; the next job runs
Exit 77 (skip) without nats-server or ffmpeg."""
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
from harness import fail, skip, free_port, wait_for, read, two_streams  # noqa: E402

REEL, TAIL = sys.argv[1], sys.argv[2]
CLIP = "testsrc num-buffers={n} {live} ! video/raw,format=yuv420p,width=64,height=48 ! encode codec=h264 gop=10"
ACK_WAIT = "3s"
procs = []


def spawn(args, log):
    p = subprocess.Popen(args, stdout=open(log + ".out", "w"), stderr=open(log, "w"))
    procs.append(p)
    return p


class Server:
    def __init__(self, tmp):
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.store = os.path.join(tmp, "store")
        self.log = os.path.join(tmp, "nats.log")
        self.start()

    def start(self):
        self.proc = spawn(["nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", self.store],
                          self.log)

        def up():
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return True
            except OSError:
                return self.proc.poll() is not None and fail(f"nats-server exited: {read(self.log)}")
        wait_for("nats-server", up, 15)


class Tail:
    """nats_tail on a subject, in the background."""

    def __init__(self, tmp, url, subject, silence_ms=4000, name="tail"):
        self.out = os.path.join(tmp, name + ".log.out")
        log = os.path.join(tmp, name + ".log")
        self.proc = spawn([TAIL, url, subject, "0", str(silence_ms)], log)
        wait_for("the subscriber", lambda: "ready" in read(log), 10)

    def messages(self):
        lines = read(self.out).splitlines()
        return [(l.split(" ", 1)[0], json.loads(l.split(" ", 1)[1])) for l in lines if " " in l]

    def wait(self, timeout=30):
        self.proc.wait(timeout)
        return self.messages()


def reel(*args, timeout=60):
    return subprocess.run([REEL, *args], capture_output=True, text=True, timeout=timeout)


def jobs(url):
    r = reel("jobs", "--nats", url, "--json")
    if r.returncode != 0:
        fail(f"reel jobs: {r.stderr}")
    return json.loads(r.stdout)


def states(url):
    return {j["id"]: j for j in jobs(url)["jobs"]}


def submit(url, *args):
    r = reel("submit", "--nats", url, *args)
    if r.returncode != 0:
        fail(f"reel submit: {r.stderr}")
    return r.stdout.strip()


def worker(tmp, url, name, *extra):
    log = os.path.join(tmp, f"worker-{name}.log")
    p = spawn([REEL, "worker", "--nats", url, "--name", name, "--ack-wait", ACK_WAIT, "--retry-delay", "500ms",
               "--health-every", "500ms", *extra], log)
    p.log = log
    wait_for(f"worker {name}", lambda: "taking jobs" in read(log) or p.poll() is not None, 15)
    if p.poll() is not None:
        fail(f"worker {name} exited: {read(log)}")
    return p


def stop(p, timeout=30):
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout)
    if rc != 0:
        fail(f"worker exited {rc}: {read(p.log)}")


def frames_of(path):
    r = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", path], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"ffprobe {path}: {r.stderr}")
    return int(r.stdout.strip())


def check_frames(msgs, want):
    """msgs: (subject, object); want: {stream: frames}."""
    keys = ["stream", "frame", "pts", "width", "height", "detections", "classifications"]
    per = {}
    for subject, d in msgs:
        if list(d) != keys:
            fail(f"keys {list(d)}, wanted {keys}")
        if subject != f"reel.meta.{d['stream']}":
            fail(f"frame of stream {d['stream']} on {subject}")
        per.setdefault(d["stream"], []).append(d["frame"])
    got = {s: len(f) for s, f in per.items()}
    if got != want:
        fail(f"messages per stream {got}, wanted {want}")
    for s, f in per.items():
        if f != list(range(len(f))):
            fail(f"stream {s}: frames out of order or repeated: {f[:20]}...")


def case_natssink(tmp):
    srv = Server(tmp)
    tail = Tail(tmp, srv.url, "reel.meta.>", 3000)
    r = reel("run", two_streams(f"natssink url={srv.url}"))
    if r.returncode != 0:
        fail(f"reel run: {r.stderr}")
    check_frames(tail.wait(), {0: 40, 1: 25})
    print("natssink: 40 + 25 messages, in order, each a frame's JSON")


def case_jetstream(tmp):
    srv = Server(tmp)
    tail = Tail(tmp, srv.url, "reel.meta.>", 3000)
    r = reel("run", two_streams(f"natssink url={srv.url} jetstream=true stream=META_TEST"))
    if r.returncode != 0:
        fail(f"reel run: {r.stderr}")
    check_frames(tail.wait(), {0: 40, 1: 25})
    held = subprocess.run([TAIL, srv.url, "--stream-count", "META_TEST"], capture_output=True, text=True)
    if held.returncode != 0 or held.stdout.strip() != "65":
        fail(f"the stream holds {held.stdout.strip()} messages, wanted 65: {held.stderr}")
    gone = f"nats://127.0.0.1:{free_port()}"
    r = reel("run", f"testsrc num-buffers=5 ! natssink url={gone} jetstream=true")
    if r.returncode != 1 or f"cannot connect to NATS at '{gone}'" not in r.stderr:
        fail(f"no server: exit {r.returncode}, {r.stderr}")
    print("jetstream: 65 messages stored and received; no server: a clear error")


def case_reconnect(tmp):
    srv = Server(tmp)
    tail = Tail(tmp, srv.url, "reel.meta.>", 3000)
    run = spawn([REEL, "run", f"testsrc num-buffers=120 is-live=true ! video/raw,width=64,height=48 "
                              f"! natssink url={srv.url}"], os.path.join(tmp, "run.log"))
    wait_for("frames before the restart", lambda: len(tail.messages()) >= 20, 20)
    srv.proc.terminate()
    srv.proc.wait(10)
    before = len(tail.messages())
    time.sleep(0.5)
    srv.start()
    if run.wait(30) != 0:
        fail(f"reel run: {read(os.path.join(tmp, 'run.log'))}")
    frames = [d["frame"] for _, d in tail.wait()]
    if frames != sorted(set(frames)) or frames[-1] != 119 or len(frames) <= before:
        fail(f"{len(frames)} frames, {before} before the restart: {frames}")
    print(f"reconnect: {before} frames before the restart, {len(frames)} in all, in order, the last one 119")


def case_batch(tmp):
    srv = Server(tmp)
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    workers = [worker(tmp, srv.url, f"w{i}") for i in range(3)]
    ids = [submit(srv.url, CLIP.format(n=30, live="") + " ! sink location={dir}/{job}.mp4", "--input",
                  f"dir={out}") for _ in range(10)]
    if len(set(ids)) != 10:
        fail(f"job ids not unique: {ids}")
    wait_for("ten jobs done", lambda: all(states(srv.url).get(i, {}).get("state") == "done" for i in ids), 40)
    for w in workers:
        stop(w)
    logs = [w.log for w in workers]
    for i in ids:
        runs = sum(1 for l in logs for line in read(l).splitlines() if f"job {i} (" in line and
                   line.endswith(": running"))
        if runs != 1:
            fail(f"job {i} ran {runs} times")
        if states(srv.url)[i]["attempts"] != 1:
            fail(f"job {i}: {states(srv.url)[i]}")
        n = frames_of(os.path.join(out, f"{i}.mp4"))
        if n != 30:
            fail(f"{i}.mp4 has {n} frames, wanted 30")
    if sorted(os.listdir(out)) != sorted(f"{i}.mp4" for i in ids):
        fail(f"outputs: {sorted(os.listdir(out))}")
    by = {os.path.basename(l): read(l).count(": running") for l in logs}
    print(f"batch: 10 jobs, each run once, 30 frames each; per worker {by}")


def case_kill(tmp):
    srv = Server(tmp)
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    a = worker(tmp, srv.url, "a")
    job = submit(srv.url, CLIP.format(n=120, live="is-live=true") + f" ! sink location={out}/{{job}}.mp4")
    final = os.path.join(out, f"{job}.mp4")
    wait_for("the job to start on a", lambda: os.path.exists(final + ".part"), 20)
    b = worker(tmp, srv.url, "b")
    time.sleep(0.5)
    a.kill()
    a.wait()
    if os.path.exists(final):
        fail("a half-written output under its final name")
    wait_for("the job done on b", lambda: states(srv.url)[job]["state"] == "done", 60)
    st = states(srv.url)[job]
    if st["worker"] != "b" or st["attempts"] != 2:
        fail(f"state {st}, wanted done by b on attempt 2")
    stop(b)
    n = frames_of(final)
    if n != 120 or os.path.exists(final + ".part"):
        fail(f"{final}: {n} frames (wanted 120), .part left: {os.path.exists(final + '.part')}")
    print(f"kill: redelivered to b, 120 frames, no half file")


def case_live(tmp):
    if not shutil.which("ffmpeg"):
        skip("no ffmpeg")
    srv = Server(tmp)
    port = free_port(socket.SOCK_DGRAM)
    tail = Tail(tmp, srv.url, "reel.meta.cam1", 15000)
    a = worker(tmp, srv.url, "a")
    job = submit(srv.url, "--live", f"source location=udp://127.0.0.1:{port} timeout=20000 ! decode "
                                    f"! natssink subject=reel.meta.cam1 url={srv.url}")
    wait_for("the camera job on a", lambda: states(srv.url)[job]["state"] == "running", 20)
    b = worker(tmp, srv.url, "b")
    sender = spawn(["ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i",
                    "testsrc=size=160x120:rate=25", "-t", "40", "-c:v", "libx264", "-g", "25", "-bf", "0",
                    "-pix_fmt", "yuv420p", "-f", "mpegts", f"udp://127.0.0.1:{port}?pkt_size=1316"],
                   os.path.join(tmp, "ffmpeg.log"))
    wait_for("metadata from a", lambda: len(tail.messages()) >= 25, 20)
    a.kill()
    a.wait()
    killed_at = len(tail.messages())
    wait_for("b to take the camera", lambda: states(srv.url)[job]["worker"] == "b" and
             states(srv.url)[job]["state"] == "running", 20)
    wait_for("metadata from b", lambda: len(tail.messages()) >= killed_at + 25, 20)
    st = states(srv.url)[job]
    if st["attempts"] != 2:
        fail(f"state {st}, wanted attempt 2")
    # A stopping worker hands its camera back at once.
    stop(b, 15)
    st = states(srv.url)[job]
    if st["state"] != "queued" or "released" not in st["error"]:
        fail(f"after b stopped: {st}")
    sender.kill()
    tail.proc.kill()
    print(f"live: {killed_at} frames on a, then {len(tail.messages()) - killed_at} on b after a died")


def case_badjob(tmp):
    srv = Server(tmp)
    w = worker(tmp, srv.url, "w")
    bad = submit(srv.url, "testsrc num-buffers=5 ! nosuchelement ! fakesink")
    good = submit(srv.url, "testsrc num-buffers=5 ! fakesink")
    wait_for("the good job done", lambda: states(srv.url).get(good, {}).get("state") == "done", 30)
    st = states(srv.url)[bad]
    if st["state"] != "failed" or "nosuchelement" not in st["error"] or st["attempts"] != 1:
        fail(f"bad job: {st}")
    time.sleep(1.5)  # past the retry delay: a retried job would be back
    stop(w)
    runs = sum(1 for line in read(w.log).splitlines() if f"job {bad} (" in line and line.endswith(": running"))
    if runs != 1:
        fail(f"the bad job ran {runs} times")
    print(f"badjob: failed at once with: {st['error'].splitlines()[0]}")


def main():
    if not shutil.which("nats-server"):
        skip("no nats-server")
    case = sys.argv[3]
    tmp = tempfile.mkdtemp(prefix="reel-fleet-")
    try:
        globals()["case_" + case](tmp)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if os.environ.get("REEL_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""reel on NATS JetStream, end to end: each case starts its own nats-server
(-js, a store of its own, a free port on 127.0.0.1) and drives the `reel`
program (run, worker, submit, jobs); nats_tail reads subjects and streams.

usage: test_fleet.py REEL NATS_TAIL CASE
  natssink    one message per frame, in order per stream, each the JSON metasink writes
  jetstream   natssink jetstream=true: every message stored in the stream; no server: a clear error
  reconnect   natssink while its server restarts: the run goes on; every frame published while the
              server was away is held and delivered, in order; only frames in flight on the old
              connection (before the library saw it drop) may be lost
  batch       ten file jobs across three workers: each run exactly once, every output playable
  kill        a worker killed during a file job: another finishes it; no half file under the final name
  live        a camera job outlives its worker: another takes it and metadata keeps coming
  badjob      a description that does not parse fails at once, recorded; the next job runs
  maxdeliver  a job that keeps failing runs exactly --max-deliver times, then is recorded failed
  abort       a second SIGTERM aborts a running file job: handed back, not acknowledged; rerun elsewhere
  health      health reports on reel.workers.NAME and in REEL_WORKERS: jobs, frames, frames/s, device
  expiry      a worker that stops reporting: its REEL_WORKERS entry goes once the bucket's age passes
Exit 77 (skip) without nats-server or ffmpeg."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

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

        # Its own word, not a connection: one could reach another test's
        # server that took the port first (this one then exits).
        def up():
            if self.proc.poll() is not None:
                fail(f"nats-server exited: {read(self.log)}")
            return "Server is ready" in read(self.log)
        wait_for("nats-server", up, 15)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


class Tail:
    """nats_tail on a subject, in the background."""

    def __init__(self, tmp, url, subject, silence_ms=4000, name="tail", count=0):
        """Ends after `count` messages (0: no limit) or `silence_ms` without one:
        with a count, the silence is only a deadline for a broken run."""
        self.out = os.path.join(tmp, name + ".log.out")
        log = os.path.join(tmp, name + ".log")
        self.proc = spawn([TAIL, url, subject, str(count), str(silence_ms)], log)
        wait_for("the subscriber", lambda: "ready" in read(log), 10)

    def messages(self):
        lines = read(self.out).splitlines()
        return [(l.split(" ", 1)[0], json.loads(l.split(" ", 1)[1])) for l in lines if " " in l]

    def wait(self, timeout=90):
        self.proc.wait(timeout)
        return self.messages()


def tail_tool(url, *args):
    r = subprocess.run([TAIL, url, *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"nats_tail {' '.join(args)}: {r.stderr}")
    return r.stdout


def stored(url, stream):
    """How many messages a JetStream stream holds."""
    return int(tail_tool(url, "--stream-count", stream))


def lines(path):
    return read(path).count("\n")


def reel(*args, timeout=60):
    return subprocess.run([REEL, *args], capture_output=True, text=True, timeout=timeout)


def jobs(url):
    r = reel("jobs", "--nats", url, "--json")
    if r.returncode != 0:
        fail(f"reel jobs: {r.stderr}")
    return json.loads(r.stdout)


def states(url):
    return {j["id"]: j for j in jobs(url)["jobs"]}


def workers(url):
    """Each worker's last health report, as REEL_WORKERS holds it."""
    return {w["name"]: w for w in jobs(url)["workers"]}


def job_frames(url, name, job):
    """Frames of `job` in worker `name`'s last report (0: not there)."""
    for j in workers(url).get(name, {}).get("jobs", []):
        if j["id"] == job:
            return j["frames"]
    return 0


def job_log(p, job):
    """Worker p's log lines about `job`, without the "reel worker NAME: " prefix."""
    return [l.split(": ", 1)[1] for l in read(p.log).splitlines() if f": job {job} (" in l]


def submit(url, *args):
    r = reel("submit", "--nats", url, *args)
    if r.returncode != 0:
        fail(f"reel submit: {r.stderr}")
    return r.stdout.strip()


def test_policy(tmp):
    """What these cases' jobs need: files beneath tmp, a UDP camera, identity's error-after."""
    path = os.path.join(tmp, "policy.ini")
    with open(path, "w") as f:
        f.write(f"[policy]\nroot = {tmp}\nschemes = udp\nhosts = 127.0.0.1\ntest-hooks = true\n")
    return path


def worker(tmp, url, name, *extra):
    log = os.path.join(tmp, f"worker-{name}.log")
    if "--policy" not in extra:
        extra = ("--policy", test_policy(tmp), *extra)
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
    tail = Tail(tmp, srv.url, "reel.meta.>", 60000, count=65)
    r = reel("run", two_streams(f"natssink url={srv.url}"))
    if r.returncode != 0:
        fail(f"reel run: {r.stderr}")
    check_frames(tail.wait(), {0: 40, 1: 25})
    print("natssink: 40 + 25 messages, in order, each a frame's JSON")


def case_jetstream(tmp):
    srv = Server(tmp)
    tail = Tail(tmp, srv.url, "reel.meta.>", 60000, count=65)
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
    # The messages go to a JetStream stream, not to a subscriber: a subscriber
    # reconnects on its own schedule and would miss what natssink sends first,
    # while the restarted server restores the stream before it takes clients.
    srv = Server(tmp)
    tail_tool(srv.url, "--stream-add", "CAPTURE", "reel.meta.>")
    # metasink beside natssink tells how far the run is: the two sinks are at
    # most a link or two apart (8 buffers a link), SLACK frames with margin.
    n, slack = 250, 24
    seen = os.path.join(tmp, "seen.jsonl")
    log = os.path.join(tmp, "run.log")
    run = spawn([REEL, "run", f"testsrc num-buffers={n} is-live=true framerate=50 ! video/raw,width=64,height=48 "
                              f"! tee name=t ! natssink url={srv.url} t. ! metasink location={seen}"], log)
    wait_for("frames before the stop", lambda: stored(srv.url, "CAPTURE") >= 20, 20, every=0.2)
    srv.stop()
    # Listening on the server's port: natssink's first reconnection attempt
    # shows its library knows the connection is gone, and from then on holds
    # what is published.
    with socket.socket() as lis:
        lis.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lis.bind(("127.0.0.1", srv.port))
        lis.listen()
        lis.settimeout(30)
        try:
            lis.accept()[0].close()
        except socket.timeout:
            fail(f"natssink did not try to reconnect: {read(log)}")
        held_from = lines(seen) + slack
        wait_for("frames published while the server is away", lambda: lines(seen) >= held_from + slack + 10, 30)
        held_to = lines(seen) - slack  # published before the server is back
    srv.start()
    if run.wait(60) != 0:
        fail(f"reel run: {read(log)}")
    msgs = [(l.split(" ", 1)[0], json.loads(l.split(" ", 1)[1])) for l in
            tail_tool(srv.url, "--stream-dump", "CAPTURE").splitlines()]
    frames = [d["frame"] for _, d in msgs]
    keys = ["stream", "frame", "pts", "width", "height", "detections", "classifications"]
    if any(subject != "reel.meta.0" or list(d) != keys or d["stream"] != 0 for subject, d in msgs):
        fail(f"messages not one frame's JSON on reel.meta.0: {msgs[:3]}")
    if frames != sorted(set(frames)) or not frames or frames[-1] != n - 1:
        fail(f"frames out of order, repeated or short of {n - 1}: {frames}")
    lost = sorted(set(range(n)) - set(frames))
    # What is lost went out on the old connection: one run of frames, all
    # published before the library saw the connection drop.
    if lost and (lost != list(range(lost[0], lost[-1] + 1)) or lost[-1] >= held_from):
        fail(f"frames lost {lost}; every frame from {held_from} on was published after the library "
             f"noticed the lost server and should have been held")
    if not set(range(held_from, held_to)) <= set(frames):
        fail(f"frames held while the server was away ({held_from}..{held_to - 1}) missing")
    print(f"reconnect: frames {held_from}..{held_to - 1} published while the server was away, all delivered; "
          f"{len(frames)} of {n} stored in order; lost at the stop (in flight on the old connection): "
          f"{len(lost)} {lost}")


def case_batch(tmp):
    srv = Server(tmp)
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    workers = [worker(tmp, srv.url, f"w{i}") for i in range(3)]
    ids = [submit(srv.url, CLIP.format(n=30, live="") + " ! sink location={dir}/{job}.mp4", "--input",
                  f"dir={out}") for _ in range(10)]
    if len(set(ids)) != 10:
        fail(f"job ids not unique: {ids}")
    wait_for("ten jobs done", lambda: all(states(srv.url).get(i, {}).get("state") == "done" for i in ids), 90)
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
    wait_for("a midway through the job", lambda: job_frames(srv.url, "a", job) >= 20, 20)
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
                                    "! natssink subject=reel.meta.cam1")  # the worker's connection
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
    # Terminated, not handed back: the queue holds no message a retry could come from.
    wait_for("the queue empty", lambda: stored(srv.url, "REEL_JOBS") == 0, 20, every=0.2)
    stop(w)
    runs = sum(1 for line in read(w.log).splitlines() if f"job {bad} (" in line and line.endswith(": running"))
    if runs != 1:
        fail(f"the bad job ran {runs} times")
    print(f"badjob: failed at once with: {st['error'].splitlines()[0]}")


def case_maxdeliver(tmp):
    srv = Server(tmp)
    w = worker(tmp, srv.url, "w", "--max-deliver", "4")
    job = submit(srv.url, "testsrc num-buffers=10 ! identity error-after=3 ! fakesink")
    wait_for("the job failed for good", lambda: states(srv.url).get(job, {}).get("state") == "failed", 60)
    st = states(srv.url)[job]
    if st["attempts"] != 4 or not st["error"].startswith("gave up after 4 attempts: "):
        fail(f"state {st}, wanted failed after 4 attempts")
    # Terminated on the fourth failure: nothing left for a fifth delivery.
    wait_for("the queue empty", lambda: stored(srv.url, "REEL_JOBS") == 0, 20, every=0.2)
    stop(w)
    want = [f"job {job} (file, attempt {i}): running" for i in (1, 2, 3, 4)]
    got = [l for l in job_log(w, job) if l.endswith(": running")]
    retried = [l for l in job_log(w, job) if ": failed, to be retried: " in l]
    if got != want or len(retried) != 3:
        fail(f"runs {got}, {len(retried)} retried; wanted {want} and 3 retried")
    print(f"maxdeliver: 4 attempts, then failed: {st['error'].splitlines()[0]}")


def case_abort(tmp):
    srv = Server(tmp)
    out = os.path.join(tmp, "out")
    os.mkdir(out)
    a = worker(tmp, srv.url, "a")
    n = 300
    job = submit(srv.url, CLIP.format(n=n, live="is-live=true framerate=50") + f" ! sink location={out}/{{job}}.mp4")
    final = os.path.join(out, f"{job}.mp4")
    wait_for("the job under way on a", lambda: job_frames(srv.url, "a", job) >= 10, 20)
    a.send_signal(signal.SIGTERM)
    wait_for("a draining", lambda: "finishing file jobs" in read(a.log), 10)

    def draining_frames():
        w = workers(srv.url).get("a", {})
        return w.get("draining") and next((j["frames"] for j in w["jobs"] if j["id"] == job), 0)

    # The first signal lets the file job go on.
    at = wait_for("a draining report", draining_frames, 10)
    wait_for("the job going on after the first SIGTERM", lambda: job_frames(srv.url, "a", job) >= at + 10, 20)
    if states(srv.url)[job]["state"] != "running":
        fail(f"after the first SIGTERM: {states(srv.url)[job]}")
    a.send_signal(signal.SIGTERM)
    rc = a.wait(30)
    if rc != 0 or "aborting every job" not in read(a.log):
        fail(f"worker a: exit {rc}, {read(a.log)}")
    lines_a = job_log(a, job)
    if lines_a[-1:] != [f"job {job} (file, attempt 1): released"] or any(": done" in l for l in lines_a):
        fail(f"a's log about the job: {lines_a}")
    st = states(srv.url)[job]
    if st["state"] != "queued" or st["error"] != "released by a stopping worker" or st["attempts"] != 1:
        fail(f"after the second SIGTERM: {st}")
    # Not acknowledged: the job is still in the queue.
    if stored(srv.url, "REEL_JOBS") != 1:
        fail(f"the queue holds {stored(srv.url, 'REEL_JOBS')} jobs, wanted 1")
    left = frames_of(final) if os.path.exists(final) else None
    b = worker(tmp, srv.url, "b")
    wait_for("the job done on b", lambda: states(srv.url)[job]["state"] == "done", 60)
    st = states(srv.url)[job]
    if st["worker"] != "b" or st["attempts"] != 2:
        fail(f"state {st}, wanted done by b on attempt 2")
    stop(b)
    got = frames_of(final)
    if got != n or stored(srv.url, "REEL_JOBS") != 0:
        fail(f"{final}: {got} frames (wanted {n}), queue {stored(srv.url, 'REEL_JOBS')}")
    print(f"abort: handed back after the second SIGTERM (left under the final name: "
          f"{'nothing' if left is None else f'{left} frames'}), then {n} frames on b")


def case_health(tmp):
    srv = Server(tmp)
    tail = Tail(tmp, srv.url, "reel.workers.a", 15000, name="health")
    a = worker(tmp, srv.url, "a")
    job = submit(srv.url, "testsrc num-buffers=150 is-live=true ! video/raw,width=64,height=48 ! fakesink")
    keys = ["name", "device", "draining", "max_jobs", "jobs_running", "jobs_done", "jobs_failed", "jobs", "updated"]

    def with_job():
        return [d for _, d in tail.messages() if d.get("jobs") and d["jobs"][0]["frames"] > 0]
    wait_for("three reports with the job running", lambda: len(with_job()) >= 3, 30)
    wait_for("a report with the job done", lambda: any(d.get("jobs_done") == 1 for _, d in tail.messages()), 30)

    # Published, then kept: the bucket may lag the subject by a report.
    def kept_after():
        w = workers(srv.url).get("a")
        return w if w and w["jobs_done"] == 1 else None
    kept = wait_for("REEL_WORKERS to hold a report after the job", kept_after, 20)
    msgs = tail.messages()
    for subject, d in msgs:
        if subject != "reel.workers.a" or list(d) != keys:
            fail(f"a report on {subject}: keys {list(d)}, wanted {keys}")
        if (d["name"], d["device"], d["draining"], d["max_jobs"]) != ("a", "cpu", False, 1):
            fail(f"report {d}")
        if d["jobs_running"] != len(d["jobs"]) or d["jobs_failed"] != 0:
            fail(f"report {d}")
        for j in d["jobs"]:
            if list(j) != ["id", "kind", "attempt", "frames", "fps"] or (j["id"], j["kind"], j["attempt"]) != \
                    (job, "file", 1):
                fail(f"job in a report: {j}")
    running = with_job()
    frames = [d["jobs"][0]["frames"] for d in running]
    if frames != sorted(frames) or frames[-1] > 150:
        fail(f"frames across reports: {frames}")
    # frames/s since the previous report: what the frame counts and times of
    # two reports say (loosely: each report reads its clock and its frames
    # at slightly different moments).
    for r0, r1 in zip(running, running[1:]):
        f0, f1 = r0["jobs"][0]["frames"], r1["jobs"][0]["frames"]
        expect = (f1 - f0) / max(r1["updated"] - r0["updated"], 0.001)
        if abs(r1["jobs"][0]["fps"] - expect) > 0.5 * expect + 3:
            fail(f"{r1['jobs'][0]['fps']} frames/s reported, {f1 - f0} frames in "
                 f"{r1['updated'] - r0['updated']:.3f} s between two reports")
    # The bucket keeps a report that was also published.
    wait_for("the kept report among the published ones", lambda: any(d == kept for _, d in tail.messages()), 20)
    if kept["jobs_done"] != 1 or kept["jobs"]:
        fail(f"REEL_WORKERS holds {kept} after the job")
    stop(a)
    # A worker that stops cleanly takes its entry with it.
    if "a" in workers(srv.url):
        fail(f"a's entry outlived its clean stop: {workers(srv.url)}")
    print(f"health: {len(msgs)} reports, {len(running)} with the job (frames {frames[0]}..{frames[-1]}, "
          f"{running[-1]['jobs'][0]['fps']} frames/s); REEL_WORKERS held the last, gone at the stop")


def case_expiry(tmp):
    srv = Server(tmp)
    a = worker(tmp, srv.url, "a")  # the first to open the bucket: entries live 3 of its periods (500 ms)
    b = worker(tmp, srv.url, "b")
    wait_for("both workers' entries", lambda: {"a", "b"} <= set(workers(srv.url)), 20)
    age = int(tail_tool(srv.url, "--stream-age", "KV_REEL_WORKERS"))
    if age != 1500:
        fail(f"REEL_WORKERS keeps an entry {age} ms, wanted 3 x 500 ms")
    a.kill()  # no clean stop: its entry stays until it is too old
    a.wait()
    wait_for("a's entry gone", lambda: "a" not in workers(srv.url), 30, every=0.2)
    # b still reports: its entry stays.
    wait_for("b's entry", lambda: "b" in workers(srv.url), 10)
    stop(b)
    print(f"expiry: a killed, its entry gone after at least {age} ms; b's kept while it reports")


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

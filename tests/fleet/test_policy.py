#!/usr/bin/python3
"""A worker's job policy against hostile jobs, end to end on a real nats-server.

usage: test_policy.py REEL NATS_TAIL CASE
  refuse    a corpus of jobs that break the policy (paths out of the root through '..', absolute
            paths, planted links to files and folders outside, labels=/dev/zero, elements, test
            hooks, schemes, hosts, FFmpeg protocols, NATS subjects): each refused before it runs,
            recorded as refused with its rule, never retried; nothing outside the root is read
            or written (sentinels' contents and mtimes); no password reaches a log or a record
  inputs    an input value holding "! fakesink", quotes and "name=" stays one property value
  escape    control characters from a job reach neither the worker's log nor `reel jobs` raw
  times     a job that never ends is stopped at max-run (not retried); one that stalls is stopped
            at the stall time and retried, then recorded failed
Exit 77 (skip) without nats-server."""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_fleet as fleet  # noqa: E402
from test_fleet import Server, submit, states, worker, stop, reel  # noqa: E402
from harness import fail, skip, free_port, wait_for, read  # noqa: E402

PASSWORD = "hunter2-Sekr1t"
ELEMENTS = "testsrc;source;decode;encode;sink;metasink;fakesink;identity;detect;infer;natssink;mqttsink;queue"


def make_root(tmp):
    """root/ with planted links pointing out, outside/ with sentinels."""
    root, outside = os.path.join(tmp, "root"), os.path.join(tmp, "outside")
    os.makedirs(os.path.join(root, "sub"))
    os.makedirs(outside)
    for name in ("secret.txt", "target.json"):
        with open(os.path.join(outside, name), "w") as f:
            f.write("SENTINEL\n")
    os.symlink(os.path.join(outside, "secret.txt"), os.path.join(root, "link-out.txt"))
    os.symlink(os.path.join(outside, "target.json"), os.path.join(root, "out-link.json"))
    os.symlink(outside, os.path.join(root, "link-dir"))
    os.symlink("../outside/secret.txt", os.path.join(root, "relative-link.txt"))
    with open(os.path.join(root, "labels.txt"), "w") as f:
        f.write("face\n")
    return root, outside


def snapshot(outside):
    return {n: (os.stat(os.path.join(outside, n)).st_mtime_ns, read(os.path.join(outside, n)))
            for n in sorted(os.listdir(outside))}


def write_policy(tmp, root, **extra):
    path = os.path.join(tmp, "policy.ini")
    keys = {"root": root, "elements": ELEMENTS, "schemes": "rtsp;udp;mqtt", "hosts": "127.0.0.1", **extra}
    with open(path, "w") as f:
        f.write("[policy]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items()))
    return path


def final(url, ids, timeout=60):
    wait_for("every job's end", lambda: all(states(url).get(i, {}).get("state") in ("done", "failed", "refused")
                                            for i in ids), timeout, every=0.2)
    return states(url)


def case_refuse(tmp):
    srv = Server(tmp)
    root, outside = make_root(tmp)
    before = snapshot(outside)
    time.sleep(0.02)  # so that a write would show in an mtime
    w = worker(tmp, srv.url, "w", "--policy", write_policy(tmp, root))
    src = "testsrc num-buffers=3 ! "
    corpus = [
        (src + "metasink location=../outside/x.json", "root", "leads out"),
        (src + f"metasink location={outside}/target.json", "root", "outside the root"),
        (src + "metasink location=out-link.json", "root", "symbolic link"),
        (src + "metasink location=link-dir/x.json", "root", "leads out"),
        (src + "metasink location=sub/../../outside/x.json", "root", "leads out"),
        (src + "detect labels=link-out.txt ! fakesink", "root", "leads out"),
        (src + "detect labels=relative-link.txt ! fakesink", "root", "leads out"),
        (src + "detect labels=/dev/zero ! fakesink", "root", "outside the root"),
        (src + "detect labels=../outside/secret.txt ! fakesink", "root", "leads out"),
        (src + "infer model=/etc/passwd ! fakesink", "root", "outside the root"),
        (src + "fakesink location=/tmp/reel-policy-escape.txt", "root", "outside the root"),
        (src + "tee ! fakesink", "elements", "not among"),
        (src + "identity error-after=1 ! fakesink", "test-hooks", "for tests"),
        (src + "identity sleep-us=100000 ! fakesink", "test-hooks", "for tests"),
        (src + "fakesink delay-us=100000", "test-hooks", "for tests"),
        ("source location=http://127.0.0.1/x.mp4 ! fakesink", "schemes", "'http'"),
        ("source location=file:/etc/passwd ! fakesink", "schemes", "'file'"),
        ("source location=concat:/etc/passwd|/etc/group ! fakesink", "schemes", "'concat'"),
        (f"source location=rtsp://admin:{PASSWORD}@10.9.9.9/live ! fakesink", "hosts", "10.9.9.9"),
        (src + "sink location=rtmp://127.0.0.1/live", "schemes", "'rtmp'"),
        (src + "natssink subject=reel.jobs.file", "subjects", "subject"),
        (src + "natssink subject=$JS.API.STREAM.DELETE.REEL_JOBS", "subjects", "subject"),
        (src + "natssink url=nats://10.1.1.1:4222", "schemes", "'nats'"),
        (src + "mqttsink url=mqtt://127.0.0.1 username=u password-env=HOME", "env", "environment variable"),
    ]
    ids = [submit(srv.url, text) for text, _, _ in corpus]
    st = final(srv.url, ids)
    for (text, rule, words), i in zip(corpus, ids):
        s = st[i]
        if s["state"] != "refused" or f"(rule: {rule})" not in s["error"] or words not in s["error"]:
            fail(f"{text!r}: wanted refused by rule {rule} ({words}), got {s['state']}: {s['error']}")
        if s["attempts"] != 1:
            fail(f"{text!r}: a refused job ran {s['attempts']} times")
    if snapshot(outside) != before:
        fail(f"outside the root changed: {before} -> {snapshot(outside)}")
    if os.path.exists("/tmp/reel-policy-escape.txt"):
        fail("a job wrote /tmp/reel-policy-escape.txt")
    # A job the policy allows still runs, its output beneath the root.
    os.makedirs(os.path.join(root, "out"))
    ok = submit(srv.url, "testsrc num-buffers=3 ! metasink location=out/{job}.json")
    st = final(srv.url, [ok])
    if st[ok]["state"] != "done" or fleet.lines(os.path.join(root, "out", ok + ".json")) != 3:
        fail(f"an allowed job: {st[ok]}")
    stop(w)
    shown = read(w.log) + reel("jobs", "--nats", srv.url).stdout + reel("jobs", "--nats", srv.url, "--json").stdout
    if PASSWORD in shown:
        fail("the camera's password reached the worker's log or the job records")
    if f"admin:***@10.9.9.9" not in shown:
        fail("the refused camera URL is not shown redacted")
    print(f"refuse: {len(corpus)} hostile jobs refused, each with its rule, run once; outside the root "
          f"untouched ({len(before)} sentinels); an allowed job ran; no password shown")


def case_inputs(tmp):
    srv = Server(tmp)
    root, _ = make_root(tmp)
    w = worker(tmp, srv.url, "w", "--policy", write_policy(tmp, root))
    value = "a.json ! fakesink name=\"x\" location=../outside/y.json"
    job = submit(srv.url, "testsrc num-buffers=4 ! metasink location={out}", "--input", f"out={value}")
    st = final(srv.url, [job])
    # The value has a '/': its folder "a.json ! fakesink name=\"x\" location=.." does not exist.
    if st[job]["state"] != "refused" or "its folder" not in st[job]["error"]:
        fail(f"a value with a path in it: {st[job]}")
    value = "b.json ! fakesink name=\"x\" sync=true"
    job = submit(srv.url, "testsrc num-buffers=4 ! metasink location={out}", "--input", f"out={value}")
    st = final(srv.url, [job])
    if st[job]["state"] != "done" or fleet.lines(os.path.join(root, value)) != 4:
        fail(f"an input value holding '! fakesink' is not one file name: {st[job]}, root has {os.listdir(root)}")
    stop(w)
    print("inputs: a value with '!', quotes and name= stayed one property value (a file of that name)")


def case_escape(tmp):
    srv = Server(tmp)
    root, _ = make_root(tmp)
    w = worker(tmp, srv.url, "w", "--policy", write_policy(tmp, root))
    job = submit(srv.url, "testsrc num-buffers=2 ! fake\x1b[2J\rsink")
    st = final(srv.url, [job])
    if st[job]["state"] != "failed":
        fail(f"a bad element name: {st[job]}")
    stop(w)
    table = reel("jobs", "--nats", srv.url).stdout
    for where, text in (("worker log", read(w.log)), ("reel jobs", table)):
        if "\x1b" in text or "\r" in text:
            fail(f"a raw control character in the {where}: {text!r}")
        if "\\x1b[2J\\r" not in text:
            fail(f"the {where} does not show the escaped name: {text!r}")
    print("escape: ESC and CR from a job are shown as \\x1b and \\r in the log and in reel jobs")


def case_times(tmp):
    srv = Server(tmp)
    root, _ = make_root(tmp)
    w = worker(tmp, srv.url, "w", "--max-deliver", "2",
               "--policy", write_policy(tmp, root, **{"max-run": "6s", "stall": "3s"}))
    endless = submit(srv.url, "testsrc is-live=true framerate=20 ! video/raw,width=32,height=24 ! fakesink")
    st = final(srv.url, [endless])
    if st[endless]["state"] != "failed" or "max-run" not in st[endless]["error"] or st[endless]["attempts"] != 1:
        fail(f"a job that never ends: {st[endless]}")
    port = free_port()
    stalled = submit(srv.url, f"source location=udp://127.0.0.1:{port} timeout=600000 ! fakesink")
    st = final(srv.url, [stalled])
    if st[stalled]["state"] != "failed" or "stalled" not in st[stalled]["error"] or st[stalled]["attempts"] != 2:
        fail(f"a job that stalls: {st[stalled]}")
    stop(w)
    print("times: an endless job stopped at max-run, once; a stalled one stopped at the stall time, "
          "retried, then failed")


def main():
    if not shutil.which("nats-server"):
        skip("no nats-server")
    tmp = tempfile.mkdtemp(prefix="reel-policy-")
    try:
        globals()["case_" + sys.argv[3]](tmp)
    finally:
        for p in fleet.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""mqttsink against a real mosquitto broker: each case starts its own broker
(a temporary config, a free port on 127.0.0.1) and reads the topics with
mosquitto_sub.

usage: test_mqtt.py REEL CASE
  qos1      two streams: one message per frame on reel/meta/0 and reel/meta/1, in order, at qos 1,
            each exactly the JSON object metasink writes for the frame
  qos2      the same at qos 2
  qos0      the same at qos 0, on a topic of its own (topic=cams/{stream}/meta)
  reconnect qos 1 while the broker restarts: the run goes on and every frame still arrives, in order
  nobroker  no broker at the url: exit 1 with a message naming it
Exit 77 (skip) without mosquitto or mosquitto_sub."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import fail, skip, free_port, wait_for, read, two_streams  # noqa: E402

REEL = sys.argv[1]
KEYS = ["stream", "frame", "pts", "width", "height", "detections", "classifications"]
procs = []


def broker(tmp, port=None):
    port = port or free_port()
    conf = os.path.join(tmp, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    log = os.path.join(tmp, "mosquitto.log")
    p = subprocess.Popen(["mosquitto", "-c", conf], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    procs.append(p)

    def up():
        if p.poll() is not None:
            fail(f"mosquitto exited: {read(log)}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            return False
    wait_for("mosquitto", up, 15)
    p.port = port
    return p


class Subscriber:
    """mosquitto_sub on `topic` at qos 2 (so each message arrives at the qos it
    was published with) until `count` messages; -d tells when it subscribed."""

    def __init__(self, tmp, port, topic, count):
        self.out = os.path.join(tmp, "sub.out")
        # stdbuf: its debug lines (SUBACK) must reach the file as they are written.
        args = ["stdbuf", "-oL", "mosquitto_sub", "-d", "-h", "127.0.0.1", "-p", str(port), "-q", "2", "-t", topic,
                "-C", str(count), "-W", "60", "-F", "MSG %t %q %p"]
        self.proc = subprocess.Popen(args, stdout=open(self.out, "w"), stderr=subprocess.STDOUT)
        procs.append(self.proc)
        wait_for("the subscription", lambda: "SUBACK" in read(self.out) or self.proc.poll() is not None, 10)
        if self.proc.poll() is not None:
            fail(f"mosquitto_sub exited: {read(self.out)}")

    def messages(self):
        rc = self.proc.wait(60)
        if rc != 0:
            fail(f"mosquitto_sub exited {rc} (fewer messages than wanted?): {read(self.out)[-2000:]}")
        msgs = []
        for line in read(self.out).splitlines():
            if line.startswith("MSG "):
                topic, qos, payload = line[4:].split(" ", 2)
                msgs.append((topic, int(qos), payload))
        return msgs


def reel(*args, timeout=60):
    return subprocess.run([REEL, *args], capture_output=True, text=True, timeout=timeout)


def metasink_lines(tmp):
    """What metasink writes for the same two streams, per stream in order."""
    path = os.path.join(tmp, "meta.jsonl")
    r = reel("run", two_streams(f"metasink location={path}"))
    if r.returncode != 0:
        fail(f"reel run metasink: {r.stderr}")
    per = {}
    for line in read(path).splitlines():
        per.setdefault(json.loads(line)["stream"], []).append(line)
    return per


def check(msgs, topic, qos, want):
    """msgs: (topic, qos, payload); want: {stream: [metasink's lines]}."""
    per = {}
    for got_topic, got_qos, payload in msgs:
        d = json.loads(payload)
        if list(d) != KEYS:
            fail(f"keys {list(d)}, wanted {KEYS}")
        if got_topic != topic.replace("{stream}", str(d["stream"])):
            fail(f"frame of stream {d['stream']} on {got_topic}")
        if got_qos != qos:
            fail(f"message at qos {got_qos}, wanted {qos}")
        per.setdefault(d["stream"], []).append(payload)
    counts = {s: len(p) for s, p in per.items()}
    wanted = {s: len(p) for s, p in want.items()}
    if counts != wanted:
        fail(f"messages per stream {counts}, wanted {wanted}")
    for s, payloads in per.items():
        frames = [json.loads(p)["frame"] for p in payloads]
        if frames != list(range(len(frames))):
            fail(f"stream {s}: frames out of order or repeated: {frames[:20]}...")
        if payloads != want[s]:
            fail(f"stream {s}: a message differs from metasink's line: {payloads[0]!r} vs {want[s][0]!r}")


def publish(tmp, qos, topic=None):
    port = broker(tmp).port
    want = metasink_lines(tmp)
    sub = Subscriber(tmp, port, topic.split("/")[0] + "/#" if topic else "reel/meta/#", 65)
    sink = f"mqttsink url=mqtt://127.0.0.1:{port} qos={qos}" + (f" topic={topic}" if topic else "")
    r = reel("run", two_streams(sink))
    if r.returncode != 0:
        fail(f"reel run: {r.stderr}")
    topic = topic or "reel/meta/{stream}"
    check(sub.messages(), topic, qos, want)
    print(f"qos{qos}: 40 + 25 messages on {topic}, in order, each metasink's line")


def case_qos1(tmp):
    publish(tmp, 1)


def case_qos2(tmp):
    publish(tmp, 2)


def case_qos0(tmp):
    publish(tmp, 0, "cams/{stream}/meta")


def case_reconnect(tmp):
    srv = broker(tmp)
    sub = Subscriber(tmp, srv.port, "reel/meta/#", 150)  # mosquitto_sub reconnects and subscribes again
    run = subprocess.Popen([REEL, "run", "testsrc num-buffers=150 is-live=true ! video/raw,width=64,height=48 ! "
                            f"mqttsink url=mqtt://127.0.0.1:{srv.port} qos=1"], stderr=subprocess.PIPE, text=True)
    procs.append(run)
    wait_for("the first messages", lambda: read(sub.out).count("MSG ") >= 10, 30)
    srv.kill()
    srv.wait()
    time.sleep(1)  # frames keep coming while the broker is away
    broker(tmp, srv.port)
    _, err = run.communicate(timeout=60)
    if run.returncode != 0:
        fail(f"reel run: exit {run.returncode}, {err}")
    if "lost the MQTT broker" not in err:
        fail(f"no warning about the lost broker: {err}")
    frames = [json.loads(p)["frame"] for _, _, p in sub.messages()]
    if sorted(set(frames)) != list(range(150)):
        fail(f"frames missing: {sorted(set(range(150)) - set(frames))[:20]}")
    print(f"reconnect: all 150 frames arrived across a broker restart ({len(frames) - 150} sent twice)")


def case_nobroker(tmp):
    del tmp
    url = f"mqtt://127.0.0.1:{free_port()}"
    r = reel("run", f"testsrc num-buffers=5 ! mqttsink url={url}")
    if r.returncode != 1 or f"cannot connect to MQTT broker at '{url}'" not in r.stderr:
        fail(f"no broker: exit {r.returncode}, {r.stderr}")
    print(f"nobroker: exit 1, {r.stderr.strip().splitlines()[-1]}")


def main():
    if not shutil.which("mosquitto") or not shutil.which("mosquitto_sub"):
        skip("no mosquitto or mosquitto_sub")
    tmp = tempfile.mkdtemp(prefix="reel-mqtt-")
    try:
        globals()["case_" + sys.argv[2]](tmp)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

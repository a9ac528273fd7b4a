#!/usr/bin/python3
"""mqttsink against a real mosquitto broker: each case starts its own broker
(a temporary config, a free port on 127.0.0.1) and reads the topics with
mosquitto_sub. The subscriber's end is an end marker published with
mosquitto_pub once the broker logged the sink's disconnection: the broker
then has routed everything the sink sent, and delivers in order.

usage: test_mqtt.py REEL CASE
  qos1       two streams: one message per frame on reel/meta/0 and reel/meta/1, in order, at qos 1,
             each exactly the JSON object metasink writes for the frame (a duplicate, which qos 1
             allows, is counted and must repeat its frame's message)
  qos2       the same at qos 2, no duplicate
  qos0       the same at qos 0, on a topic of its own (topic=cams/{stream}/meta), no duplicate
  reconnect  qos 1 while the broker restarts: the run goes on and every frame still arrives at least
             once, in order once duplicates are dropped; the duplicates are counted
  qos0drop   qos 0 while the broker restarts: frames published while it is away are dropped with a
             warning and counted at the end; they are missing, everything after the outage arrives
  acktimeout qos 1 to a broker stopped with SIGSTOP (it holds the connection, acknowledges nothing):
             the run fails at its end, naming the broker and the messages not acknowledged
  nobroker   no broker at the url: exit 1 with a message naming it
Exit 77 (skip) without mosquitto, mosquitto_sub or mosquitto_pub."""
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import fail, skip, free_port, wait_for, read, two_streams  # noqa: E402

REEL = sys.argv[1]
KEYS = ["stream", "frame", "pts", "width", "height", "detections", "classifications"]
PUB_ID, SUB_ID = "reel-test-pub", "reel-test-sub"
procs = []


class Broker:
    """mosquitto on 127.0.0.1. persistent: it keeps sessions across a restart
    (a subscriber's subscription and what is queued for it, qos 0 included)."""

    def __init__(self, tmp, persistent=False):
        self.tmp, self.port, self.starts = tmp, free_port(), 0
        self.conf = os.path.join(tmp, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n")
            if persistent:
                # user: started as root, mosquitto would become another user, who cannot save in tmp.
                f.write(f"persistence true\npersistence_location {tmp}/\nqueue_qos0_messages true\n"
                        f"user {pwd.getpwuid(os.getuid()).pw_name}\n")
            else:
                f.write("persistence false\n")
        self.start()

    def start(self):
        self.starts += 1
        self.log = os.path.join(self.tmp, f"mosquitto-{self.starts}.log")
        self.proc = subprocess.Popen(["mosquitto", "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "w"))
        procs.append(self.proc)

        # Its own word that it listens, not a connection: one could reach
        # another test's broker that took the port first (this one then exits).
        def up():
            if self.proc.poll() is not None:
                fail(f"mosquitto exited: {read(self.log)}")
            return " running" in read(self.log)
        wait_for("mosquitto", up, 15)

    def stop(self):
        # SIGTERM: a persistent broker saves its sessions on the way out.
        self.proc.terminate()
        self.proc.wait(30)
        if "Error saving" in read(self.log):
            fail(f"mosquitto did not save its sessions: {read(self.log)}")

    def url(self):
        return f"mqtt://127.0.0.1:{self.port}"


class Subscriber:
    """mosquitto_sub on `topic` at qos 2 (so each message arrives at the qos it
    was published with); -d tells when it subscribed. persistent: a session the
    broker keeps while it is away (it reconnects and subscribes again)."""

    def __init__(self, tmp, broker, topic, persistent=False):
        self.broker, self.topic = broker, topic
        self.marker = topic[:-1] + "end"  # a topic under the filter
        self.out = os.path.join(tmp, "sub.out")
        # stdbuf: its debug lines (SUBACK) must reach the file as they are written.
        args = ["stdbuf", "-oL", "mosquitto_sub", "-d", "-h", "127.0.0.1", "-p", str(broker.port), "-q", "2",
                "-t", topic, "-F", "MSG %t %q %p"] + (["-c", "-i", SUB_ID] if persistent else [])
        self.proc = subprocess.Popen(args, stdout=open(self.out, "w"), stderr=subprocess.STDOUT)
        procs.append(self.proc)
        wait_for("the subscription", lambda: "SUBACK" in read(self.out) or self.proc.poll() is not None, 10)
        if self.proc.poll() is not None:
            fail(f"mosquitto_sub exited: {read(self.out)}")

    def received(self):
        """(topic, qos, payload) per message so far, the end marker included."""
        msgs = []
        for line in read(self.out).splitlines():
            if line.startswith("MSG "):
                topic, qos, payload = line[4:].split(" ", 2)
                msgs.append((topic, int(qos), payload))
        return msgs

    def messages(self, at_least=0):
        """Everything the sink sent that the broker routed, once the sink is gone
        (and, when the test knows there are `at_least`, once that many came: the
        marker may pass messages still queued behind the broker's in-flight
        window to this subscriber, 20 by default)."""
        wait_for("the broker to see the sink disconnect",
                 lambda: f"Client {PUB_ID} disconnected" in read(self.broker.log), 30)
        r = subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(self.broker.port), "-q", "1",
                            "-t", self.marker, "-m", "end"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail(f"mosquitto_pub: {r.stderr}")
        wait_for("the end marker", lambda: any(t == self.marker for t, _, _ in self.received())
                 or self.proc.poll() is not None, 30)
        wait_for(f"{at_least} messages", lambda: len(self.received()) > at_least or self.proc.poll() is not None, 30)
        if self.proc.poll() is not None:
            fail(f"mosquitto_sub exited: {read(self.out)[-2000:]}")
        self.proc.terminate()
        self.proc.wait(10)
        return [m for m in self.received() if m[0] != self.marker]


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


def per_stream(msgs, topic, qos):
    """msgs: (topic, qos, payload) -> ({stream: [payload, duplicates dropped]}, duplicates).
    A duplicate must be its frame's message again."""
    per, first, dups = {}, {}, 0
    for got_topic, got_qos, payload in msgs:
        d = json.loads(payload)
        if list(d) != KEYS:
            fail(f"keys {list(d)}, wanted {KEYS}")
        if got_topic != topic.replace("{stream}", str(d["stream"])):
            fail(f"frame of stream {d['stream']} on {got_topic}")
        if got_qos != qos:
            fail(f"message at qos {got_qos}, wanted {qos}")
        key = (d["stream"], d["frame"])
        if key in first:
            if first[key] != payload:
                fail(f"stream {key[0]} frame {key[1]} sent twice, differently: {first[key]!r} vs {payload!r}")
            dups += 1
            continue
        first[key] = payload
        per.setdefault(d["stream"], []).append(payload)
    return per, dups


def frames(payloads):
    return [json.loads(p)["frame"] for p in payloads]


def check(msgs, topic, qos, want):
    """want: {stream: [metasink's lines]}. Returns the duplicates (qos 1 only)."""
    per, dups = per_stream(msgs, topic, qos)
    if dups and qos != 1:
        fail(f"{dups} duplicates at qos {qos}")
    counts = {s: len(p) for s, p in per.items()}
    wanted = {s: len(p) for s, p in want.items()}
    if counts != wanted:
        fail(f"messages per stream {counts}, wanted {wanted}")
    for s, payloads in per.items():
        f = frames(payloads)
        if f != list(range(len(f))):
            fail(f"stream {s}: frames out of order: {f[:20]}...")
        if payloads != want[s]:
            fail(f"stream {s}: a message differs from metasink's line: {payloads[0]!r} vs {want[s][0]!r}")
    return dups


def publish(tmp, qos, topic=None):
    srv = Broker(tmp)
    want = metasink_lines(tmp)
    sub = Subscriber(tmp, srv, topic.split("/")[0] + "/#" if topic else "reel/meta/#")
    sink = f"mqttsink url={srv.url()} qos={qos} client-id={PUB_ID}" + (f" topic={topic}" if topic else "")
    r = reel("run", two_streams(sink))
    if r.returncode != 0:
        fail(f"reel run: {r.stderr}")
    topic = topic or "reel/meta/{stream}"
    dups = check(sub.messages(sum(len(p) for p in want.values())), topic, qos, want)
    print(f"qos{qos}: 40 + 25 messages on {topic}, in order, each metasink's line; {dups} duplicates")


def case_qos1(tmp):
    publish(tmp, 1)


def case_qos2(tmp):
    publish(tmp, 2)


def case_qos0(tmp):
    publish(tmp, 0, "cams/{stream}/meta")


def live_run(tmp, srv, qos, n, extra=""):
    err = os.path.join(tmp, "run.err")
    run = subprocess.Popen([REEL, "run", f"testsrc num-buffers={n} is-live=true framerate=50 "
                            f"! video/raw,width=64,height=48 {extra}! mqttsink url={srv.url()} qos={qos} "
                            f"client-id={PUB_ID}"], stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    procs.append(run)
    run.err = err
    return run


def case_reconnect(tmp):
    srv = Broker(tmp, persistent=True)
    sub = Subscriber(tmp, srv, "reel/meta/#", persistent=True)
    n = 250
    run = live_run(tmp, srv, 1, n)
    wait_for("the first messages", lambda: len(sub.received()) >= 10, 30)
    srv.stop()
    # Said once a frame comes after the loss: that frame is held for the broker's return.
    wait_for("the sink to notice", lambda: "lost the MQTT broker" in read(run.err), 30)
    srv.start()
    if run.wait(60) != 0:
        fail(f"reel run: exit {run.returncode}, {read(run.err)}")
    msgs = sub.messages()
    per, dups = per_stream(msgs, "reel/meta/{stream}", 1)
    got = frames(per.get(0, []))
    if list(per) != [0] or got != list(range(n)):
        missing = sorted(set(range(n)) - set(got))
        fail(f"frames missing {missing[:20]} or out of order once duplicates are dropped: {got[:20]}...")
    print(f"reconnect: all {n} frames arrived in order across a broker restart; {dups} duplicates "
          f"({len(msgs)} messages)")


def case_qos0drop(tmp):
    srv = Broker(tmp, persistent=True)
    sub = Subscriber(tmp, srv, "reel/meta/#", persistent=True)
    n = 300
    run = live_run(tmp, srv, 0, n)
    wait_for("the first messages", lambda: len(sub.received()) >= 10, 30)
    srv.stop()
    away = f"MQTT broker at '{srv.url()}' is away: qos=0 messages are dropped until it is back"
    wait_for("the drop warning", lambda: away in read(run.err), 30)
    srv.start()
    if run.wait(60) != 0:
        fail(f"reel run: exit {run.returncode}, {read(run.err)}")
    err = read(run.err)
    counted = [l for l in err.splitlines() if "qos=0 message" in l and "dropped while the broker was away" in l]
    if err.count(away) != 1 or len(counted) != 1:
        fail(f"wanted one drop warning and one count at the end: {err}")
    dropped = int(counted[0].split("qos=0 message")[0].split()[-1])
    msgs = sub.messages()
    per, dups = per_stream(msgs, "reel/meta/{stream}", 0)
    got = frames(per.get(0, []))
    missing = sorted(set(range(n)) - set(got))
    # One run of frames goes missing: the dropped ones, after any the library
    # wrote to the connection before it saw it drop.
    if dups or got != sorted(got) or not got or got[-1] != n - 1:
        fail(f"{dups} duplicates, frames {got[:20]}... (wanted in order up to {n - 1})")
    if dropped < 1 or len(missing) < dropped or missing != list(range(missing[0], missing[-1] + 1)):
        fail(f"{dropped} dropped, frames missing {missing}")
    print(f"qos0drop: {dropped} frames dropped with a warning, {len(missing)} missing in all "
          f"({len(missing) - dropped} sent before the library saw the loss); the rest arrived in order")


def case_acktimeout(tmp):
    srv = Broker(tmp)
    sub = Subscriber(tmp, srv, "reel/meta/#")
    # metasink beside the sink counts the frames: the two are at most a link
    # or two apart (8 buffers a link), SLACK with margin. No end of its own:
    # the run ends on SIGTERM once frames came after the stop.
    slack = 24
    seen = os.path.join(tmp, "seen.jsonl")
    run = live_run(tmp, srv, 1, -1, f"! tee name=t t. ! metasink location={seen} t. ")
    wait_for("the first messages", lambda: len(sub.received()) >= 10, 30)
    os.kill(srv.proc.pid, signal.SIGSTOP)
    routed = len(sub.received())  # the broker acknowledged at least these
    after = read(seen).count("\n") + slack
    wait_for("frames after the stop", lambda: read(seen).count("\n") >= after + 10, 30)
    run.send_signal(signal.SIGTERM)
    rc = run.wait(60)
    os.kill(srv.proc.pid, signal.SIGCONT)
    total = read(seen).count("\n")
    err = read(run.err)
    want = f"MQTT broker at '{srv.url()}' did not acknowledge "
    line = next((l for l in err.splitlines() if want in l), "")
    if rc != 1 or not line.endswith(" within 10 s of the end of the stream (connected)"):
        fail(f"exit {rc}, wanted 1 with '{want}N messages within 10 s of the end of the stream': {err}")
    left = int(line.split(want)[1].split()[0])
    # Not acknowledged: every frame published after the stop, and at most
    # those the broker had not routed before it.
    if not total - after <= left <= total - routed:
        fail(f"{left} not acknowledged, wanted {total - after}..{total - routed} of {total}")
    print(f"acktimeout: exit 1, {left} of {total} messages not acknowledged: {line.split(': ', 2)[-1]}")


def case_nobroker(tmp):
    del tmp
    url = f"mqtt://127.0.0.1:{free_port()}"
    r = reel("run", f"testsrc num-buffers=5 ! mqttsink url={url}")
    if r.returncode != 1 or f"cannot connect to MQTT broker at '{url}'" not in r.stderr:
        fail(f"no broker: exit {r.returncode}, {r.stderr}")
    print(f"nobroker: exit 1, {r.stderr.strip().splitlines()[-1]}")


def main():
    if not all(shutil.which(t) for t in ("mosquitto", "mosquitto_sub", "mosquitto_pub")):
        skip("no mosquitto, mosquitto_sub or mosquitto_pub")
    tmp = tempfile.mkdtemp(prefix="reel-mqtt-")
    try:
        globals()["case_" + sys.argv[2]](tmp)
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

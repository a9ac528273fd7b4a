#!/usr/bin/python3
"""reel serve against real clients on loopback: the HTTP API with urllib,
its metrics with promtool and a real Prometheus scraping it.

  test_serve.py REEL CASE
  api        pipelines from --config and POST, their report, PATCH of
             mutable and fixed properties, DELETE, and every bad request
             answered with its status and a JSON error
  restart    a failing pipeline restarts with backoff while another runs;
             one whose description cannot work fails once, for good
  metrics    /metrics passes promtool; Prometheus scrapes it with the
             bearer token and answers a query for a reel series
  auth       the token: none, wrong, right; beyond loopback only with one;
             HTTPS with a certificate made by openssl; no token in the log
  sigterm    SIGTERM stops the service; an mp4 being written is finalized
  samples    samples/serve starts: what can run does, the rest says why
  preview    a preview element's snapshot and MJPEG stream; a viewer that
             never reads does not slow the pipeline
  browser    the page in headless Chromium shows the preview, moving
  streams    cameras (a real RTSP server) added to and removed from a
             running pipeline through its stream-template while two others
             run on without losing a frame; re-added after a restart; the
             bad requests answered with their status
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import fail, skip, free_port, wait_for, read  # noqa: E402

TOKEN = "s3rve-t0ken-Zq81"
LIVE = "testsrc is-live=true framerate=30 ! video/raw,width=160,height=120"


class Serve:
    """reel serve in the background; its port read from its first lines."""

    def __init__(self, reel, tmp, *args, listen="127.0.0.1:0"):
        self.log = os.path.join(tmp, f"serve-{time.monotonic_ns()}.log")
        with open(self.log, "w") as err:
            self.proc = subprocess.Popen([reel, "serve", "--listen", listen, *args], stdout=subprocess.DEVNULL,
                                         stderr=err, cwd=tmp)
        m = wait_for("reel serve to listen", lambda: re.search(r"\(port (\d+)\)", read(self.log))
                     or self.proc.poll() is not None, 30)
        if self.proc.poll() is not None:
            fail(f"reel serve ended: {read(self.log)}")
        self.port = int(m.group(1))
        self.scheme = "https" if "--tls-cert" in args else "http"

    def request(self, method, path, body=None, token=None, raw=None, context=None):
        """(status, parsed JSON or text) of one request."""
        data = raw if raw is not None else json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.scheme}://127.0.0.1:{self.port}{path}", data=data, method=method)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30, context=context) as r:
                status, text = r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode(errors="replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def expect(self, method, path, status, body=None, **kw):
        got, answer = self.request(method, path, body, **kw)
        if got != status:
            fail(f"{method} {path}: {got} {answer}, wanted {status}")
        return answer

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                fail(f"reel serve did not stop on SIGTERM: {read(self.log)}")
        if "Sanitizer" in read(self.log) or "CRITICAL" in read(self.log):
            fail(f"reel serve: {read(self.log)}")
        return self.proc.returncode


def sink_frames(answer):
    report = answer.get("report") or {"elements": []}
    return max([e["buffers_in"] for e in report["elements"] if "latency" in e] or [0])


def config(tmp, files):
    d = os.path.join(tmp, "conf")
    os.makedirs(d, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    return d


def case_api(reel, tmp):
    conf = config(tmp, {"cam.reel": f"# a camera\n{LIVE} ! queue name=q ! fakesink\n",
                        "broken.reel": "testsrc ! nosuchelement\n"})
    s = Serve(reel, tmp, "--config", conf)
    try:
        log = read(s.log)
        if "broken.reel" not in log or "unknown element 'nosuchelement'" not in log:
            fail(f"the config's broken file was not reported: {log}")
        listed = s.expect("GET", "/pipelines", 200)["pipelines"]
        if [p["id"] for p in listed] != ["cam"]:
            fail(f"GET /pipelines: {listed}")
        one = wait_for("cam's frames", lambda: (lambda a: sink_frames(a) > 10 and a)(s.expect("GET", "/pipelines/cam",
                                                                                              200)), 30)
        if one["state"] != "running" or "# a camera" not in one["description"]:
            fail(f"GET /pipelines/cam: {one}")
        names = [e["name"] for e in one["report"]["elements"]]
        if "q" not in names or "fakesink0" not in names:
            fail(f"cam's report: {names}")
        # POST: an id of its own, or the next free one.
        new = s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! fakesink"})
        mine = s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! fakesink", "id": "mine"})
        if not re.fullmatch(r"p\d+", new["id"]) or mine["id"] != "mine":
            fail(f"POST ids: {new} {mine}")
        s.expect("POST", "/pipelines", 409, {"description": f"{LIVE} ! fakesink", "id": "mine"})
        s.expect("POST", "/pipelines", 400, {"description": f"{LIVE} ! fakesink", "id": "../x"})
        # A description that does not parse: where, and the hint.
        err = s.expect("POST", "/pipelines", 400, {"description": "testsrc ! fakesink\ntestsrc ! fakesnk"})
        if (err["line"], err["column"]) != (2, 11) or "fakesink" not in (err["hint"] or ""):
            fail(f"parse error: {err}")
        # PATCH: mutable yes, fixed no, and what does not exist.
        s.expect("PATCH", "/pipelines/cam/elements/q", 200, {"max-size": 4, "leaky": "downstream"})
        err = s.expect("PATCH", "/pipelines/cam/elements/testsrc0", 400, {"pattern": "solid"})
        if "while the pipeline runs" not in err["error"]:
            fail(f"PATCH of a fixed property: {err}")
        s.expect("PATCH", "/pipelines/cam/elements/q", 400, {"no-such-prop": 1})
        s.expect("PATCH", "/pipelines/cam/elements/q", 400, {"max-size": [1]})
        s.expect("PATCH", "/pipelines/cam/elements/ghost", 404, {"max-size": 4})
        s.expect("PATCH", "/pipelines/ghost/elements/q", 404, {"max-size": 4})
        # Bad requests, each with its status and a JSON error.
        for raw, status in ((b"not json", 400), (b"[1, 2]", 400), (b'{"description": 5}', 400),
                            (b'{"description": "x"', 400), (b"\xff\xfe", 400)):
            got, answer = s.request("POST", "/pipelines", raw=raw)
            if got != status or "error" not in answer:
                fail(f"POST {raw!r}: {got} {answer}")
        got, answer = s.request("POST", "/pipelines", raw=b"x" * (2 << 20))
        if got != 413:
            fail(f"a 2 MiB body: {got} {answer}")
        s.expect("GET", "/nothing/here", 404)
        s.expect("PUT", "/pipelines", 405)
        s.expect("GET", "/pipelines/ghost", 404)
        # A client that goes away mid-request leaves the service serving.
        with socket.create_connection(("127.0.0.1", s.port)) as c:
            c.sendall(b"POST /pipelines HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"descr")
        page = s.expect("GET", "/", 200)
        if "<title>reel serve</title>" not in page:
            fail("GET / is not the page")
        # DELETE stops it cleanly; the others go on.
        s.expect("DELETE", f"/pipelines/{new['id']}", 200)
        s.expect("DELETE", f"/pipelines/{new['id']}", 404)
        ids = [p["id"] for p in s.expect("GET", "/pipelines", 200)["pipelines"]]
        if ids != ["cam", "mine"]:
            fail(f"after DELETE: {ids}")
        # A pipeline slow to drain (a sink taking 100 ms a frame behind a
        # full queue): its DELETE waits for the drain, the others are
        # answered meanwhile.
        s.expect("POST", "/pipelines", 201, {"id": "slow", "description": "testsrc is-live=true framerate=30 "
                                             "! video/raw,width=64,height=48 ! queue max-size=30 "
                                             "! fakesink delay-us=100000"})
        wait_for("a full queue", lambda: sink_frames(s.expect("GET", "/pipelines/slow", 200)) >= 10, 30)
        deleting = {}
        t = threading.Thread(target=lambda: deleting.update(answer=s.request("DELETE", "/pipelines/slow")))
        t.start()
        wait_for("slow to leave the list", lambda: "slow" not in
                 [p["id"] for p in s.expect("GET", "/pipelines", 200)["pipelines"]], 30)
        s.expect("GET", "/metrics", 200)
        answered_first = t.is_alive()
        t.join(60)
        if deleting.get("answer", (0,))[0] != 200:
            fail(f"DELETE of the slow pipeline: {deleting}")
        if not answered_first:
            fail("the DELETE of a pipeline still draining was answered before other requests could be")
        before = sink_frames(s.expect("GET", "/pipelines/cam", 200))
        wait_for("cam still running", lambda: sink_frames(s.expect("GET", "/pipelines/cam", 200)) > before + 10, 30)
    finally:
        rc = s.stop()
    if rc != 0:
        fail(f"reel serve exited {rc}: {read(s.log)}")
    print("api: config, POST, GET, PATCH, DELETE and the bad requests answered as they should")


def case_restart(reel, tmp):
    s = Serve(reel, tmp)
    try:
        s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! fakesink", "id": "steady"})
        s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! identity error-after=10 ! fakesink",
                                             "id": "flaky"})
        s.expect("POST", "/pipelines", 201, {"description": "testsrc format=rgb24 ! encode codec=h264 ! fakesink",
                                             "id": "hopeless"})
        flaky = wait_for("two restarts", lambda: (lambda a: a["restarts"] >= 2 and a)(
            s.expect("GET", "/pipelines/flaky", 200)), 30)
        if "failing on buffer 10 as asked" not in (flaky["error"] or ""):
            fail(f"flaky's error: {flaky}")
        hopeless = s.expect("GET", "/pipelines/hopeless", 200)
        if hopeless["state"] != "failed" or hopeless["restarts"] != 0 or "no format in common" not in hopeless["error"]:
            fail(f"hopeless: {hopeless}")
        steady = s.expect("GET", "/pipelines/steady", 200)
        if steady["state"] != "running" or steady["restarts"] != 0 or sink_frames(steady) < 30:
            fail(f"steady, beside the failures: {steady}")
    finally:
        rc = s.stop()
    if rc != 0:
        fail(f"reel serve exited {rc}: {read(s.log)}")
    print(f"restart: flaky restarted {flaky['restarts']} times, hopeless failed once, steady ran on "
          f"({sink_frames(steady)} frames)")


def case_metrics(reel, tmp):
    for tool in ("promtool", "prometheus"):
        if not shutil.which(tool):
            skip(f"no {tool} (Debian's prometheus)")
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    s = Serve(reel, tmp, "--token-file", token_file)
    prom = None
    try:
        s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! queue ! fakesink", "id": "cam"}, token=TOKEN)
        models = os.environ.get("REEL_TEST_MODELS")
        model = os.path.join(models, "colour.onnx") if models else None
        if not model or not os.path.exists(model):
            skip("no colour.onnx in REEL_TEST_MODELS (tests/models/make_models.py)")
        s.expect("POST", "/pipelines", 201, {"description": "testsrc is-live=true ! video/raw,format=rgb24,width=32,"
                                             f"height=32 ! preprocess ! infer model={model} ! fakesink", "id": "inf"},
                 token=TOKEN)
        s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! b.  {LIVE} ! b.  batch name=b ! unbatch name=u  "
                                             "u. ! fakesink name=k0  u. ! fakesink name=k1", "id": "two"}, token=TOKEN)
        for pid in ("cam", "inf", "two"):
            wait_for("frames", lambda: sink_frames(s.expect("GET", f"/pipelines/{pid}", 200, token=TOKEN)) > 10, 30)
        text = s.expect("GET", "/metrics", 200, token=TOKEN)
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        if check.returncode != 0:
            fail(f"promtool check metrics: {check.stdout}{check.stderr}\n{text}")
        for series in ('reel_frames_total{pipeline="cam",stream="0",element="fakesink0"}',
                       'reel_latency_seconds_bucket{pipeline="cam",stream="0",element="fakesink0",le="+Inf"}',
                       # Per stream where an element carries one; none where the batch mixes them.
                       'reel_frames_total{pipeline="two",stream="1",element="k1"}',
                       'reel_element_buffers_in_total{pipeline="two",stream="0",element="testsrc0",',
                       'reel_element_buffers_in_total{pipeline="two",element="b",',
                       'reel_pipeline_up{pipeline="cam"} 1', "reel_process_resident_memory_bytes",
                       'reel_device_memory_bytes{device="cpu"}'):
            if series not in text:
                fail(f"no {series} in: {text}")
        m = re.search(r'^reel_inference_seconds_total\{pipeline="inf",stream="0",element="infer0",model="([^"]*)",'
                      r'device="cpu"\} (\S+)$', text, re.M)
        if not m or m.group(1) != model or float(m.group(2)) <= 0:
            fail(f"no inference time for the model: {m and m.groups()}")
        # A real Prometheus, scraping with the token.
        port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write(f"global: {{scrape_interval: 1s}}\nscrape_configs:\n  - job_name: reel\n"
                    f"    authorization: {{credentials_file: {token_file}}}\n"
                    f"    static_configs: [{{targets: ['127.0.0.1:{s.port}']}}]\n")
        prom = subprocess.Popen(["prometheus", f"--config.file={cfg}", f"--storage.tsdb.path={tmp}/tsdb",
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(tmp, "prometheus.log"), "w"))

        def query():
            url = f"http://127.0.0.1:{port}/api/v1/query?query=reel_frames_total"
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    result = json.load(r)["data"]["result"]
            except (OSError, ValueError, KeyError):
                return None
            return result if result and prom.poll() is None else None
        result = wait_for("Prometheus to have a reel series", lambda: query() or prom.poll() is not None, 90)
        if prom.poll() is not None:
            fail(f"prometheus ended: {read(os.path.join(tmp, 'prometheus.log'))}")
        labels = result[0]["metric"]
        if labels.get("pipeline") != "cam" or labels.get("job") != "reel" or float(result[0]["value"][1]) <= 0:
            fail(f"Prometheus's answer: {result}")
    finally:
        if prom and prom.poll() is None:
            prom.terminate()
            prom.wait()
        s.stop()
    print(f"metrics: promtool passes; Prometheus has reel_frames_total {result[0]['value'][1]} for {labels}")


def case_auth(reel, tmp):
    if not shutil.which("openssl"):
        skip("no openssl")
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    # Beyond loopback without a token: refused at start.
    out = subprocess.run([reel, "serve", "--listen", "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    if out.returncode != 2 or "--token-file" not in out.stderr:
        fail(f"0.0.0.0 without a token: exit {out.returncode}, {out.stderr}")
    key, cert = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    s = Serve(reel, tmp, "--token-file", token_file, "--tls-cert", cert, "--tls-key", key, listen="0.0.0.0:0")
    ctx = ssl.create_default_context(cafile=cert)
    try:
        for token, status in ((None, 401), ("wrong", 401), (TOKEN + "x", 401), (TOKEN, 200)):
            got, answer = s.request("GET", "/pipelines", token=token, context=ctx)
            if got != status:
                fail(f"token {token!r}: {got} {answer}, wanted {status}")
        got, _ = s.request("GET", "/metrics", context=ctx)
        if got != 401:
            fail(f"/metrics without the token: {got}")
        # Plain HTTP to the HTTPS port is not served.
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{s.port}/pipelines", timeout=10)
            fail("plain HTTP was answered on the HTTPS port")
        except (urllib.error.URLError, OSError, ValueError):
            pass
    finally:
        s.stop()
    if TOKEN in read(s.log):
        fail(f"the token is in the log: {read(s.log)}")
    print("auth: 401 without the token or with a wrong one, 200 with it, over HTTPS; 0.0.0.0 needs a token")


def case_sigterm(reel, tmp):
    out = os.path.join(tmp, "out.mp4")
    s = Serve(reel, tmp)
    s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! encode codec=h264 ! sink location={out}",
                                         "id": "rec"})
    wait_for("frames written", lambda: sink_frames(s.expect("GET", "/pipelines/rec", 200)) > 30, 30)
    rc = s.stop()
    if rc != 0:
        fail(f"reel serve exited {rc} on SIGTERM: {read(s.log)}")
    if not os.path.exists(out) or os.path.exists(out + ".part"):
        fail(f"the mp4 was not finalized: {os.listdir(tmp)}")
    n = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                        "stream=nb_read_frames", "-of", "csv=p=0", out], capture_output=True, text=True).stdout
    if not n.strip().isdigit() or int(n) < 30:
        fail(f"ffprobe read {n!r} frames of the mp4")
    print(f"sigterm: exit 0, out.mp4 finalized with {n.strip()} frames")


def case_samples(reel, tmp):
    """samples/serve, as a user copies it: the test pattern runs; the camera
    (no camera here) shows why it does not, and does not stop the others;
    cameras takes a stream (a clip) through its template, with a picture."""
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "serve")
    s = Serve(reel, tmp, "--config", conf)
    try:
        ids = sorted(p["id"] for p in s.expect("GET", "/pipelines", 200)["pipelines"])
        if ids != ["camera", "cameras", "test-pattern"]:
            fail(f"samples/serve started {ids}: {read(s.log)}")
        clip = os.path.join(tmp, "clip.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25", "-t", "4",
                        "-pix_fmt", "yuv420p", clip], check=True)
        wait_for("cameras running", lambda: s.expect("GET", "/pipelines/cameras", 200)["state"] == "running", 30)
        added = s.expect("POST", "/pipelines/cameras/streams", 201, {"url": clip})
        out = f"{tmp}/cameras-{added['id']}.jsonl"
        wait_for("the clip's frames", lambda: os.path.exists(out) and len(jsonl_frames(out)) >= 100, 30)
        for sid in ("0", added["id"]):
            if not mjpeg_parts(s.port, f"/pipelines/cameras/streams/{sid}/preview.mjpeg?fps=10&width=64", 1):
                fail(f"no picture of cameras' stream {sid}")
        wait_for("the test pattern's frames", lambda: sink_frames(s.expect("GET", "/pipelines/test-pattern", 200))
                 > 10, 30)
        camera = wait_for("the camera's error", lambda: (lambda a: a["error"] and a)(
            s.expect("GET", "/pipelines/camera", 200)), 60)
        if camera["state"] not in ("restarting", "failed"):
            fail(f"camera: {camera}")
    finally:
        s.stop()
    print(f"samples: test-pattern runs; camera {camera['state']}: {camera['error']}")


PREVIEWED = ("testsrc is-live=true framerate=25 pattern=noise ! video/raw,width=320,height=240 ! tee name=t "
             "t. ! queue ! fakesink t. ! queue leaky=downstream max-size=2 ! preview name=pv")


def jpeg_size(data):
    """(width, height) from a JPEG's SOF marker; None when it is not a JPEG."""
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
        if 0xC0 <= marker <= 0xC3:
            return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
        i += 2 + length
    return None


def mjpeg_parts(port, path, seconds):
    """The JPEG parts of a multipart/x-mixed-replace stream read for `seconds`."""
    with socket.create_connection(("127.0.0.1", port), 10) as c:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        c.settimeout(1)
        data, end = b"", time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                chunk = c.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if b"multipart/x-mixed-replace; boundary=reelframe" not in head:
        fail(f"preview.mjpeg's headers: {head!r}")
    parts = []
    for piece in body.split(b"--reelframe\r\n")[1:]:
        h, _, rest = piece.partition(b"\r\n\r\n")
        m = re.search(rb"Content-Length: (\d+)", h)
        if m and len(rest) >= int(m.group(1)):
            parts.append(rest[:int(m.group(1))])
    return parts


def case_preview(reel, tmp):
    s = Serve(reel, tmp)
    try:
        s.expect("POST", "/pipelines", 201, {"description": PREVIEWED, "id": "cam"})
        wait_for("a first frame", lambda: s.request("GET", "/pipelines/cam/elements/pv/snapshot.jpg")[0] == 200, 30)
        req = urllib.request.Request(f"http://127.0.0.1:{s.port}/pipelines/cam/elements/pv/snapshot.jpg?width=160")
        with urllib.request.urlopen(req, timeout=30) as r:
            if r.headers["Content-Type"] != "image/jpeg" or jpeg_size(r.read()) != (160, 120):
                fail("snapshot.jpg?width=160 is not a 160x120 JPEG")
        err = s.expect("GET", "/pipelines/cam/elements/fakesink0/snapshot.jpg", 400)
        if "gives no pictures" not in err["error"]:
            fail(f"a snapshot of a fakesink: {err}")
        s.expect("GET", "/pipelines/cam/elements/ghost/preview.mjpeg", 404)
        s.expect("GET", "/pipelines/ghost/elements/pv/preview.mjpeg", 404)
        # A viewer that never reads, beside one that does: the pipeline
        # keeps its pace, and the reading one gets its frames.
        stuck = socket.create_connection(("127.0.0.1", s.port))
        stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stuck.sendall(b"GET /pipelines/cam/elements/pv/preview.mjpeg?fps=30&width=1920 HTTP/1.1\r\nHost: x\r\n\r\n")
        before, t0 = sink_frames(s.expect("GET", "/pipelines/cam", 200)), time.monotonic()
        parts = mjpeg_parts(s.port, "/pipelines/cam/elements/pv/preview.mjpeg?fps=10&width=200", 3)
        after, t1 = sink_frames(s.expect("GET", "/pipelines/cam", 200)), time.monotonic()
        stuck.close()
        if len(parts) < 15 or any(jpeg_size(p) != (200, 150) for p in parts):
            fail(f"preview.mjpeg at 10 fps for 3 s: {len(parts)} parts, sizes {[jpeg_size(p) for p in parts][:5]}")
        if len(set(parts)) < len(parts) // 2:
            fail("the preview's frames do not change")
        fps = (after - before) / (t1 - t0)
        if fps < 20:
            fail(f"the pipeline ran at {fps:.1f} fps beside a stuck viewer, wanted about 25")
        # Deleting the pipeline ends its viewers' streams.
        s.expect("DELETE", "/pipelines/cam", 200)
    finally:
        s.stop()
    print(f"preview: snapshot 160x120; MJPEG {len(parts)} parts in 3 s at fps=10; the pipeline at {fps:.1f} fps "
          f"beside a viewer that never reads")


def case_browser(reel, tmp):
    """The page in headless Chromium: two screenshots a second apart, where
    the preview (of testsrc's noise: every frame differs) must show as a
    320x240 area that is not blank and changed between them."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        skip("no chromium")
    try:
        from PIL import Image
    except ImportError:
        skip("no python3-pil")
    s = Serve(reel, tmp)
    try:
        s.expect("POST", "/pipelines", 201, {"description": PREVIEWED,
                                             "id": "cam"})
        wait_for("a first frame", lambda: s.request("GET", "/pipelines/cam/elements/pv/snapshot.jpg")[0] == 200, 30)
        shots = []
        for i in range(2):
            path = os.path.join(tmp, f"shot{i}.png")
            out = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                  f"--user-data-dir={tmp}/chromium", "--window-size=900,700",
                                  "--virtual-time-budget=3000", f"--screenshot={path}",
                                  f"http://127.0.0.1:{s.port}/"], capture_output=True, text=True, timeout=120)
            if not os.path.exists(path):
                fail(f"chromium made no screenshot: {out.stderr[-2000:]}")
            shots.append(Image.open(path).convert("RGB"))
            time.sleep(1)  # the screenshots are meant to be a second apart: this is the test's subject
    finally:
        s.stop()
    w, h = shots[0].size
    a, b = shots[0].load(), shots[1].load()
    changed = [[sum(abs(p - q) for p, q in zip(a[x, y], b[x, y])) > 60 for x in range(w)] for y in range(h)]
    # Where the picture is: the columns and rows with many changed pixels
    # (the table's and status line's changing digits are a few pixels each).
    cols = [x for x in range(w) if sum(changed[y][x] for y in range(h)) > 120]
    rows = [y for y in range(h) if sum(changed[y]) > 160]
    if not cols or not rows:
        fail("nothing on the page changed like a video between the screenshots")
    x0, x1, y0, y1 = cols[0], cols[-1], rows[0], rows[-1]
    if not (300 <= x1 - x0 + 1 <= 330 and 220 <= y1 - y0 + 1 <= 250):
        fail(f"the changing area is {x1 - x0 + 1}x{y1 - y0 + 1} at {x0},{y0}, not the 320x240 preview")
    area = (x1 - x0 + 1) * (y1 - y0 + 1)
    moved = sum(changed[y][x] for y in range(y0, y1 + 1) for x in range(x0, x1 + 1))
    luma = [sum(a[x, y]) / 3 for y in range(y0, y1 + 1) for x in range(x0, x1 + 1)]
    mean = sum(luma) / len(luma)
    spread = (sum((v - mean) ** 2 for v in luma) / len(luma)) ** 0.5
    if moved < 0.5 * area or spread < 20:
        fail(f"the preview at {x0},{y0}: {moved / area:.0%} changed, luminance spread {spread:.1f} (blank?)")
    print(f"browser: the preview at {x0},{y0}-{x1},{y1} in Chromium, luminance spread {spread:.0f}, "
          f"{moved / area:.0%} of it changed a second later")


HERE = os.path.dirname(os.path.abspath(__file__))
CAM = "video/raw,format=rgb24,width=160,height=120"


def jsonl_frames(path):
    """The frame numbers of a metasink's file, every line whole JSON."""
    with open(path) as f:
        text = f.read()
    if text and not text.endswith("\n"):
        fail(f"{path} ends in the middle of a line")
    return [json.loads(line)["frame"] for line in text.splitlines()]


def batched(tmp, extra=""):
    """Two test cameras through one batch, and a template for more."""
    template = (f"source location={{url}} stream-id={{stream}} ! decode ! convert ! {CAM} ! b.  "
                f"u. ! queue ! preview ! metasink location={tmp}/cam-{{stream}}.jsonl")
    return (f'stream-template="{template}"\n'
            f"testsrc is-live=true framerate=30 ! {CAM} ! b.\n"
            f"testsrc is-live=true framerate=30 pattern=noise ! {CAM} ! b.\n"
            f"batch name=b ! identity{extra} ! unbatch name=u\n"
            f"u. ! queue ! metasink location={tmp}/cam-0.jsonl\n"
            f"u. ! queue ! metasink location={tmp}/cam-1.jsonl\n")


def case_streams(reel, tmp):
    port = free_port()
    rtsp = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "live", "rtsp_server.py"), str(port),
                             "--size", "160x120", "--fps", "30"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if rtsp.stdout.readline().strip() != b"ready":
        skip("the RTSP server (gst-rtsp-server, python3-gi) did not start")
    url = f"rtsp://127.0.0.1:{port}/test"
    s = Serve(reel, tmp)
    lines = lambda sid: len(jsonl_frames(f"{tmp}/cam-{sid}.jsonl")) if os.path.exists(f"{tmp}/cam-{sid}.jsonl") \
        else 0
    try:
        s.expect("POST", "/pipelines", 201, {"description": batched(tmp), "id": "cams"})
        s.expect("POST", "/pipelines", 201, {"description": f"{LIVE} ! fakesink", "id": "plain"})
        wait_for("the two cameras", lambda: lines(0) > 5 and lines(1) > 5, 30)
        first = s.expect("POST", "/pipelines/cams/streams", 201, {"url": url})
        second = s.expect("POST", "/pipelines/cams/streams", 201, {"url": url})
        if (first["id"], second["id"]) != ("2", "3"):
            fail(f"stream ids: {first} {second}")
        listed = s.expect("GET", "/pipelines/cams/streams", 200)["streams"]
        if [st["id"] for st in listed] != ["2", "3"] or listed[0]["values"] != {"url": url}:
            fail(f"GET streams: {listed}")
        wait_for("the added cameras' frames", lambda: lines(2) > 30 and lines(3) > 30, 60)
        # Each added stream's own picture, found by its stream id.
        for sid in ("2", "3"):
            parts = mjpeg_parts(s.port, f"/pipelines/cams/streams/{sid}/preview.mjpeg?fps=10&width=80", 1)
            if not parts or any(jpeg_size(p) != (80, 60) for p in parts):
                fail(f"stream {sid}'s preview.mjpeg: {len(parts)} parts, sizes {[jpeg_size(p) for p in parts][:3]}")
        err = s.expect("GET", "/pipelines/cams/streams/0/snapshot.jpg", 404)
        if "no preview element carries this stream" not in err["error"]:
            fail(f"a snapshot of a stream without a preview: {err}")
        s.expect("GET", "/pipelines/cams/streams/x/preview.mjpeg", 404)
        s.expect("GET", "/pipelines/ghost/streams/2/snapshot.jpg", 404)
        report = {e["name"]: e for e in s.expect("GET", "/pipelines/cams", 200)["report"]["elements"]}
        if not all(name in report for name in listed[0]["elements"]):
            fail(f"stream 2's elements {listed[0]['elements']} are not in the report {sorted(report)}")
        # Removing one: its metasink finalizes, the others go on.
        s.expect("DELETE", "/pipelines/cams/streams/2", 200)
        gone = jsonl_frames(f"{tmp}/cam-2.jsonl")
        if gone != list(range(len(gone))):
            fail(f"stream 2's file after its removal: frames {gone[:5]}...")
        if [st["id"] for st in s.expect("GET", "/pipelines/cams/streams", 200)["streams"]] != ["3"]:
            fail("stream 2 is still listed")
        report = s.expect("GET", "/pipelines/cams", 200)["report"]["elements"]
        if any(e["name"] in listed[0]["elements"] for e in report):
            fail("stream 2's elements are still in the report")
        before = lines(3)
        wait_for("stream 3 going on", lambda: lines(3) > before + 10, 30)
        # Bad requests: each its status and a JSON error; the pipeline runs on.
        for body, status, says in (
                ({"nourl": "x"}, 400, '{"url"'),
                ({"url": url, "stream": "9"}, 400, "not 'stream'"),
                ({"url": url, "x": 5}, 400, "value 'x'"),
                ({"url": "a\nb"}, 400, "control characters"),
                ({"url": "/nonexistent/cam.mp4"}, 400, "/nonexistent/cam.mp4")):
            err = s.expect("POST", "/pipelines/cams/streams", status, body)
            if says not in err["error"]:
                fail(f"POST streams {body}: {err}")
        err = s.expect("POST", "/pipelines/plain/streams", 409, {"url": url})
        if "stream-template" not in err["error"]:
            fail(f"a stream for a pipeline without a template: {err}")
        s.expect("POST", "/pipelines/ghost/streams", 404, {"url": url})
        s.expect("DELETE", "/pipelines/cams/streams/2", 404)
        s.expect("DELETE", "/pipelines/cams/streams/x", 404)
        s.expect("GET", "/pipelines/ghost/streams", 404)
        s.expect("PUT", "/pipelines/cams/streams", 405)
        # A pipeline that fails and restarts takes its streams again.
        s.expect("POST", "/pipelines", 201, {"description": batched(f"{tmp}/flaky", " error-after=150"), "id": "flaky"})
        os.makedirs(f"{tmp}/flaky")
        wait_for("flaky running", lambda: s.expect("GET", "/pipelines/flaky", 200)["state"] == "running", 30)
        added = s.expect("POST", "/pipelines/flaky/streams", 201, {"url": url})
        restarted = wait_for("a restart", lambda: (lambda a: a["restarts"] >= 1 and a["state"] == "running" and a)(
            s.expect("GET", "/pipelines/flaky", 200)), 60)
        names = s.expect("GET", "/pipelines/flaky/streams", 200)["streams"][0]["elements"]
        if not all(n in [e["name"] for e in restarted["report"]["elements"]] for n in names):
            fail(f"after the restart, stream {added['id']}'s elements {names} are not in the run")
        s.expect("DELETE", "/pipelines/flaky", 200)
        s.expect("DELETE", "/pipelines/cams", 200)
        # Every frame of the two cameras that stayed reached its file, in order.
        for sid in (0, 1):
            frames = jsonl_frames(f"{tmp}/cam-{sid}.jsonl")
            if frames != list(range(len(frames))) or len(frames) < 60:
                fail(f"camera {sid}: {len(frames)} frames, gaps at "
                     f"{[a for a, b in zip(frames, frames[1:]) if b != a + 1][:5]}")
    finally:
        rc = s.stop()
        rtsp.kill()
        rtsp.wait()
    if rc != 0:
        fail(f"reel serve exited {rc}: {read(s.log)}")
    print(f"streams: two cameras added over RTSP and one removed while two ran on "
          f"({lines(0)} and {lines(1)} frames, none lost); the removed one finalized ({len(gone)} frames); "
          f"a restarted pipeline took its stream again")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    reel, case = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="reel-serve-") as tmp:
        try:
            globals()["case_" + case](reel, tmp)
        finally:
            if os.environ.get("REEL_KEEP_TMP"):
                shutil.copytree(tmp, tmp + "-kept", dirs_exist_ok=True)
                print(f"kept {tmp}-kept")
    print("PASS")


if __name__ == "__main__":
    main()

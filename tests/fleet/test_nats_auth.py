#!/usr/bin/python3
"""NATS logins and TLS for every NATS user in reel (`reel worker`, `submit`, `jobs`, natssink), end to
end: each case starts its own nats-server on 127.0.0.1 with a config of its own; certificates are
made with the openssl CLI, nkeys and JWTs with python3-cryptography.

usage: test_nats_auth.py REEL NATS_TAIL CASE
  tls       a TLS-only server (a test CA's certificate): worker, submit, jobs and natssink over tls://
            with --nats-ca / tls-ca; no CA, the wrong CA, a plain client, tls:// to a plain server and
            --nats-require-tls each fail saying why
  mtls      the same with client certificates required (verify: true): they work with cert and key;
            without, the error asks for one; a cert without its key is a usage error
  password  user and password from a file; the password in the URL (printed as ***); a wrong one, none,
            a missing, empty or folder password file, --nats-password VALUE: clear errors; a job whose
            natssink url holds a password: its record says ***
  token     a token from a file, and in the URL; a wrong token
  nkey      an nkey seed file (the public key derived from it); a seed the server does not know, a
            file without a seed, a seed with a bad checksum
  creds     a .creds file against a server in operator (JWT) mode, JetStream included; credentials of
            an account the server does not know; a missing .creds file
  shared    a worker on a TLS + password server: its job's natssink without a url publishes over the
            worker's connection (core NATS and JetStream); the same natssink on its own cannot
Each case ends by searching everything reel printed and stored (every command's output, the workers'
logs, `reel jobs` and its JSON, the server's store holding the job records) for the case's secrets:
none may appear. Exit 77 (skip) without nats-server, openssl or python3-cryptography."""
import base64
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_fleet as fleet  # noqa: E402
from harness import fail, skip, free_port, wait_for, read  # noqa: E402

REEL, TAIL = fleet.REEL, fleet.TAIL
SECRETS = []       # what must never show
SECRET_FILES = set()  # where they live (and the server configs): not searched
outputs = []       # (what, text) of every command run


def secret(prefix):
    value = f"{prefix}-{os.urandom(6).hex()}"
    SECRETS.append(value)
    return value


def write(path, text, is_secret=False):
    with open(path, "w") as f:
        f.write(text)
    if is_secret:
        SECRET_FILES.add(path)
    return path


def run(*args, env=None, timeout=60):
    r = subprocess.run([REEL, *args], capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, **(env or {})})
    outputs.append((" ".join(args), r.stdout + r.stderr))
    return r


def ok(*args, **kw):
    r = run(*args, **kw)
    if r.returncode != 0:
        fail(f"reel {' '.join(args)}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def refused(args, wants, code=1, **kw):
    """reel ARGS fails with exit `code` and a message holding each of `wants`."""
    r = run(*args, **kw)
    missing = [w for w in wants if w not in r.stderr]
    if r.returncode != code or missing:
        fail(f"reel {' '.join(args)}: exit {r.returncode} (wanted {code}), message lacks {missing}: {r.stderr}")
    return r.stderr.strip().splitlines()[0]


# ---- servers, certificates, nkeys, JWTs --------------------------------------------------------------

class AuthServer:
    """nats-server -js with the blocks in `conf` (tls, authorization, operator) on a free port."""

    def __init__(self, tmp, conf, tls=False):
        # A free port may be taken by another test's server before this one
        # binds it: then it exits, and another port is tried. A connection
        # alone would not tell: it could reach the other test's server.
        for attempt in range(5):
            self.port = free_port()
            self.url = f"{'tls' if tls else 'nats'}://127.0.0.1:{self.port}"
            self.plain_url = f"nats://127.0.0.1:{self.port}"
            name = f"nats-{self.port}"
            path = write(os.path.join(tmp, name + ".conf"),
                         f'listen: 127.0.0.1:{self.port}\njetstream {{ store_dir: "{tmp}/{name}-store" }}\n{conf}')
            SECRET_FILES.add(path)
            self.log = os.path.join(tmp, name + ".log")
            self.proc = fleet.spawn(["nats-server", "-c", path], self.log)
            ready = wait_for("nats-server", lambda: "Server is ready" in read(self.log) or self.proc.poll() is not None,
                             15)
            if self.proc.poll() is None and ready:
                return
            if "address already in use" not in read(self.log):
                fail(f"nats-server exited: {read(self.log)}")
        fail(f"nats-server found no free port: {read(self.log)}")


def openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        fail(f"openssl {' '.join(args)}: {r.stderr}")


class Certs:
    """A test CA, a server certificate for 127.0.0.1 and localhost, a client certificate; and a second
    CA that signed neither."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "certs")
        os.mkdir(self.dir)
        key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        for ca in ("ca", "other-ca"):
            openssl("req", "-x509", *key, "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2", "-subj",
                    f"/CN=reel test {ca}", cwd=self.dir)
        for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"),
                          ("client", "extendedKeyUsage=clientAuth\n")):
            write(os.path.join(self.dir, name + ".ext"), ext)
            openssl("req", *key, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=reel test {name}",
                    cwd=self.dir)
            openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext", cwd=self.dir)
        for f in ("ca", "other_ca", "server", "client"):
            setattr(self, f, os.path.join(self.dir, f.replace("_", "-") + ".pem"))
        self.client_key = os.path.join(self.dir, "client.key")

    def block(self, verify=False):
        return (f'tls {{ cert_file: "{self.dir}/server.pem", key_file: "{self.dir}/server.key", '
                f'ca_file: "{self.dir}/ca.pem", verify: {str(verify).lower()}, timeout: 5 }}\n')


# nkeys: base32 (no padding) of prefix byte(s) + raw Ed25519 key + CRC-16/XMODEM, little-endian.
NKEY_PREFIX = {"seed": 18 << 3, "operator": 14 << 3, "account": 0, "user": 20 << 3}


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xffff
    return crc


def nkey_encode(prefix, raw):
    body = bytes(prefix) + raw
    return base64.b32encode(body + crc16(body).to_bytes(2, "little")).decode().rstrip("=")


class NKey:
    def __init__(self, kind):
        from cryptography.hazmat.primitives import serialization as ser
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        self.key = Ed25519PrivateKey.generate()
        seed = self.key.private_bytes(ser.Encoding.Raw, ser.PrivateFormat.Raw, ser.NoEncryption())
        pub = self.key.public_key().public_bytes(ser.Encoding.Raw, ser.PublicFormat.Raw)
        t = NKEY_PREFIX[kind]
        self.seed = nkey_encode([NKEY_PREFIX["seed"] | (t >> 5), (t & 31) << 3], seed)
        self.public = nkey_encode([t], pub)
        SECRETS.append(self.seed)


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(issuer, subject, name, nats):
    """A NATS JWT (v2) for `subject`, signed by `issuer`."""
    claims = {"iat": int(time.time()), "iss": issuer.public, "name": name, "sub": subject.public, "nats": nats}
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()) \
        .decode().rstrip("=")
    head = b64url(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode()) + "." + \
        b64url(json.dumps(claims).encode())
    return head + "." + b64url(issuer.key.sign(head.encode()))


UNLIMITED = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": True, "conn": -1,
             "leaf": -1}


def creds_file(path, account, name):
    user = NKey("user")
    token = jwt(account, user, name, {"type": "user", "version": 2, "pub": {}, "sub": {}, "subs": -1, "data": -1,
                                      "payload": -1})
    return write(path, f"-----BEGIN NATS USER JWT-----\n{token}\n------END NATS USER JWT------\n\n"
                       "************************* IMPORTANT *************************\n"
                       "NKEY Seed printed below can be used to sign and prove identity.\n\n"
                       f"-----BEGIN USER NKEY SEED-----\n{user.seed}\n------END USER NKEY SEED------\n\n"
                       "*************************************************************\n", True)


# ---- reel's NATS users -------------------------------------------------------------------------------

class Tail:
    """nats_tail on a subject with a login (nats_tail's options), in the background."""

    def __init__(self, tmp, url, login, subject, count):
        name = subject.replace(".", "-")
        self.out = os.path.join(tmp, name + ".log.out")
        log = os.path.join(tmp, name + ".log")
        self.proc = fleet.spawn([TAIL, *login, url, subject, str(count), "30000"], log)
        wait_for(f"the subscriber on {subject}", lambda: "ready" in read(log) or self.proc.poll() is not None, 15)
        if self.proc.poll() is not None:
            fail(f"nats_tail: {read(log)}")

    def wait(self, want):
        self.proc.wait(60)
        frames = [json.loads(line.split(" ", 1)[1])["frame"] for line in read(self.out).splitlines()]
        if frames != list(range(want)):
            fail(f"{len(frames)} messages, wanted frames 0..{want - 1} in order: {frames[:10]}")


def jobs(url, *login):
    return json.loads(ok("jobs", "--nats", url, *login, "--json"))


def wait_done(url, login, job, state="done"):
    def st():
        return jobs(url, *login)["jobs"]
    got = wait_for(f"job {job} {state}", lambda: next((j for j in st() if j["id"] == job and
                                                        j["state"] in ("done", "failed", "refused")), None), 60)
    if got["state"] != state:
        fail(f"job {job}: {got}")
    return got


def worker(tmp, url, name, *login):
    """A worker with the NATS options `login`; its "taking jobs from" line must show `url` redacted."""
    return fleet.worker(tmp, url, name, *login)


def every_user(tmp, srv, login, sink_props, subject, tail_login, tail_url=None):
    """worker, submit and jobs with `login`; a job's natssink (the worker's connection) and a
    natssink of its own (`sink_props`) deliver their frames to nats_tail (`tail_login`)."""
    tail_url = tail_url or srv.url
    w = worker(tmp, srv.url, "w", *login)
    tail = Tail(tmp, tail_url, tail_login, subject + ".job", 12)
    job = ok("submit", "--nats", srv.url, *login, f"testsrc num-buffers=12 ! natssink subject={subject}.job").strip()
    wait_done(srv.url, login, job)
    tail.wait(12)
    tail = Tail(tmp, tail_url, tail_login, subject + ".alone", 8)
    ok("run", f"testsrc num-buffers=8 ! natssink subject={subject}.alone url={srv.url} {sink_props}")
    tail.wait(8)
    table = ok("jobs", "--nats", srv.url, *login)
    if job not in table:
        fail(f"reel jobs does not list {job}: {table}")
    fleet.stop(w)
    return w


def check_no_secrets(tmp, url=None, login=()):
    """No secret in what reel printed or stored: every command's output, every log, the server's
    store (job records, health) and `reel jobs` once more."""
    if url:
        ok("jobs", "--nats", url, *login, "--json")
        ok("jobs", "--nats", url, *login)
    places = [(what, text.encode()) for what, text in outputs]
    for root, _, files in os.walk(tmp):
        for f in files:
            path = os.path.join(root, f)
            if path not in SECRET_FILES and not path.startswith(os.path.join(tmp, "certs")):
                with open(path, "rb") as fh:
                    places.append((path, fh.read()))
    for s in SECRETS:
        for what, data in places:
            if s.encode() in data:
                fail(f"a secret ({s[:4]}...) in {what}")
    print(f"no secret in {len(places)} outputs, logs and stored files")


# ---- cases -------------------------------------------------------------------------------------------

def case_tls(tmp):
    certs = Certs(tmp)
    srv = AuthServer(tmp, certs.block(), tls=True)
    ca = ["--nats-ca", certs.ca]
    every_user(tmp, srv, ca, f"tls-ca={certs.ca}", "reel.meta.tls", ["--ca", certs.ca])
    msgs = [
        refused(["jobs", "--nats", srv.url, "--json"], ["is not trusted", "give the CA that signed it (--nats-ca"]),
        refused(["jobs", "--nats", srv.url, "--nats-ca", certs.other_ca, "--json"],
                [f"is not signed by a CA in '{certs.other_ca}'"]),
        # A plain client: libnats moves to TLS as the server asks, then cannot trust it.
        refused(["submit", "--nats", srv.plain_url, "testsrc ! fakesink"], ["the server requires TLS", "not trusted"]),
        refused(["worker", "--nats", srv.url, "--name", "x"], ["cannot connect to NATS at", "not trusted"]),
        refused(["run", f"testsrc num-buffers=1 ! natssink url={srv.url}"], ["not trusted", "(tls-ca FILE)"]),
    ]
    plain = fleet.Server(tmp)
    msgs += [
        # tls:// is TLS or nothing: never a plain connection.
        refused(["jobs", "--nats", f"tls://127.0.0.1:{plain.port}", "--nats-ca", certs.ca, "--json"],
                ["TLS is required (a tls:// URL) but the server does not offer it"]),
        refused(["jobs", "--nats", plain.url, "--nats-require-tls", "--json"],
                ["TLS is required (--nats-require-tls)"]),
        refused(["run", f"testsrc num-buffers=1 ! natssink url={plain.url} require-tls=true"], ["(require-tls)"]),
    ]
    check_no_secrets(tmp, srv.url, ca)
    print("tls: worker, submit, jobs and natssink over tls://; failures:\n  " + "\n  ".join(msgs))


def case_mtls(tmp):
    certs = Certs(tmp)
    srv = AuthServer(tmp, certs.block(verify=True), tls=True)
    login = ["--nats-ca", certs.ca, "--nats-cert", certs.client, "--nats-key", certs.client_key]
    every_user(tmp, srv, login, f"tls-ca={certs.ca} tls-cert={certs.client} tls-key={certs.client_key}",
               "reel.meta.mtls", ["--ca", certs.ca, "--cert", certs.client, "--key", certs.client_key])
    msgs = [
        refused(["jobs", "--nats", srv.url, "--nats-ca", certs.ca, "--json"],
                ["does it want a client certificate (--nats-cert, --nats-key)?"]),
        refused(["run", f"testsrc num-buffers=1 ! natssink url={srv.url} tls-ca={certs.ca}"], ["(tls-cert, tls-key)"]),
        refused(["jobs", "--nats", srv.url, "--nats-ca", certs.ca, "--nats-cert", certs.client, "--json"],
                ["--nats-cert and --nats-key go together"], code=2),
        refused(["jobs", "--nats", srv.url, "--nats-ca", certs.ca, "--nats-cert", certs.client, "--nats-key",
                 certs.dir + "/server.key", "--json"], ["cannot use the NATS client certificate and key"]),
    ]
    check_no_secrets(tmp, srv.url, login)
    print("mtls: every user with a client certificate; failures:\n  " + "\n  ".join(msgs))


def case_password(tmp):
    password, wrong = secret("pw"), secret("wrongpw")
    srv = AuthServer(tmp, f'authorization {{ user: alice, password: "{password}" }}\n')
    pw = write(os.path.join(tmp, "alice.pw"), password + "\n", True)
    bad = write(os.path.join(tmp, "wrong.pw"), wrong, True)
    empty = write(os.path.join(tmp, "empty.pw"), "\n")
    login = ["--nats-user", "alice", "--nats-password-file", pw]
    every_user(tmp, srv, login, f"user=alice password-file={pw}", "reel.meta.pw", ["--user", "alice",
                                                                                  "--password-file", pw])
    # The password in the URL works, and is printed as ***.
    in_url = f"nats://alice:{password}@127.0.0.1:{srv.port}"
    jobs(in_url)
    w = worker(tmp, in_url, "u")
    if f"taking jobs from nats://alice:***@127.0.0.1:{srv.port}" not in read(w.log):
        fail(f"worker's log: {read(w.log)}")
    fleet.stop(w)
    # A job whose natssink url holds a password: its error names the server without it.
    policy = write(os.path.join(tmp, "nats-policy.ini"), f"[policy]\nroot = {tmp}\nschemes = nats\nhosts = 127.0.0.1\n")
    w2 = worker(tmp, in_url, "v", "--policy", policy, "--max-deliver", "1")
    dead = free_port()
    job = ok("submit", "--nats", in_url, f"testsrc num-buffers=3 ! natssink url=nats://alice:{password}@127.0.0.1:{dead}").strip()
    rec = wait_done(in_url, (), job, "failed")
    if f"nats://alice:***@127.0.0.1:{dead}" not in rec["error"]:
        fail(f"the job's record: {rec}")
    fleet.stop(w2)
    msgs = [
        refused(["jobs", "--nats", srv.url, "--nats-user", "alice", "--nats-password-file", bad, "--json"],
                [f"the server refused user 'alice' with the password in '{bad}'"]),
        refused(["jobs", "--nats", f"nats://alice:{wrong}@127.0.0.1:{srv.port}", "--json"],
                ["the server refused the credentials in the URL", "alice:***@"]),
        refused(["worker", "--nats", srv.url], ["the server wants a login and none was given"]),
        refused(["submit", "--nats", srv.url, "--nats-user", "alice", "--nats-password-file", tmp + "/missing", "x"],
                [f"cannot read the NATS password file '{tmp}/missing' (--nats-password-file): No such file"]),
        refused(["jobs", "--nats", srv.url, "--nats-user", "alice", "--nats-password-file", tmp, "--json"],
                ["it is a folder"]),
        refused(["jobs", "--nats", srv.url, "--nats-user", "alice", "--nats-password-file", empty, "--json"],
                ["it is empty"]),
        refused(["run", f"testsrc num-buffers=1 ! natssink url={srv.url} user=alice password-file={tmp}/missing"],
                ["(password-file): No such file"]),
        refused(["jobs", "--nats", srv.url, "--nats-user", "alice", "--json"],
                ["--nats-user and --nats-password-file go together"], code=2),
        refused(["worker", "--nats", srv.url, "--nats-password", password],
                ["no secret on the command line", "--nats-password-file FILE"], code=2),
    ]
    check_no_secrets(tmp, srv.url, login)
    print("password: every user with a password file, and in the URL (printed ***); failures:\n  " +
          "\n  ".join(msgs))


def case_token(tmp):
    token, wrong = secret("tok"), secret("wrongtok")
    srv = AuthServer(tmp, f'authorization {{ token: "{token}" }}\n')
    path = write(os.path.join(tmp, "token"), token + "\n", True)
    bad = write(os.path.join(tmp, "wrong-token"), wrong + "\n", True)
    login = ["--nats-token-file", path]
    in_url = f"nats://{token}@127.0.0.1:{srv.port}"
    every_user(tmp, srv, login, f"token-file={path}", "reel.meta.tok", [], in_url)
    w = worker(tmp, in_url, "u")
    if f"taking jobs from nats://***@127.0.0.1:{srv.port}" not in read(w.log):
        fail(f"worker's log: {read(w.log)}")
    fleet.stop(w)
    msgs = [
        refused(["jobs", "--nats", srv.url, "--nats-token-file", bad, "--json"],
                [f"the server refused the token in '{bad}'"]),
        refused(["run", f"testsrc num-buffers=1 ! natssink url={srv.url} token-file={bad}"],
                ["the server refused the token"]),
        refused(["jobs", "--nats", f"nats://{wrong}@127.0.0.1:{srv.port}", "--json"],
                ["the server refused the credentials in the URL", "nats://***@"]),
        refused(["jobs", "--nats", srv.url, "--nats-token", token], ["no secret on the command line"], code=2),
        refused(["jobs", "--nats", srv.url, "--nats-token-file", path, "--nats-user", "a", "--nats-password-file",
                 path, "--json"], ["give one way to log in"], code=2),
    ]
    check_no_secrets(tmp, srv.url, login)
    print("token: every user with a token file, and in the URL (printed ***); failures:\n  " + "\n  ".join(msgs))


def case_nkey(tmp):
    user, stranger = NKey("user"), NKey("user")
    tail_pw = secret("tailpw")
    srv = AuthServer(tmp, f'authorization {{ users: [ {{ nkey: "{user.public}" }}, '
                          f'{{ user: tail, password: "{tail_pw}" }} ] }}\n')
    tail_login = ["--user", "tail", "--password-file", write(os.path.join(tmp, "tail.pw"), tail_pw, True)]
    seed = write(os.path.join(tmp, "user.nk"), user.seed + "\n", True)
    other = write(os.path.join(tmp, "stranger.nk"), stranger.seed + "\n", True)
    flipped = user.seed[:-3] + ("A" if user.seed[-3] != "A" else "B") + user.seed[-2:]
    SECRETS.append(flipped)
    broken = write(os.path.join(tmp, "broken.nk"), flipped + "\n", True)
    junk = write(os.path.join(tmp, "junk.nk"), "not a seed\n")
    login = ["--nats-nkey-file", seed]
    every_user(tmp, srv, login, f"nkey-file={seed}", "reel.meta.nkey", tail_login)
    msgs = [
        refused(["jobs", "--nats", srv.url, "--nats-nkey-file", other, "--json"],
                [f"the server refused the nkey in '{other}'"]),
        refused(["jobs", "--nats", srv.url, "--nats-nkey-file", junk, "--json"],
                [f"cannot read the NATS nkey seed file '{junk}' (--nats-nkey-file): it holds no user nkey seed"]),
        refused(["jobs", "--nats", srv.url, "--nats-nkey-file", broken, "--json"], ["it holds no user nkey seed"]),
        refused(["run", f"testsrc num-buffers=1 ! natssink url={srv.url} nkey-file={other}"],
                ["the server refused the nkey"]),
    ]
    check_no_secrets(tmp, srv.url, login)
    print("nkey: every user with a seed file; failures:\n  " + "\n  ".join(msgs))


def case_creds(tmp):
    operator, account, system = NKey("operator"), NKey("account"), NKey("account")
    write(os.path.join(tmp, "operator.jwt"), jwt(operator, operator, "reel-test", {"type": "operator", "version": 2}))
    js = {**UNLIMITED, "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
    account_jwt = jwt(operator, account, "reel", {"type": "account", "version": 2, "limits": js})
    system_jwt = jwt(operator, system, "SYS", {"type": "account", "version": 2, "limits": UNLIMITED})
    srv = AuthServer(tmp, f'operator: "{tmp}/operator.jwt"\nresolver: MEMORY\nsystem_account: {system.public}\n'
                          f'resolver_preload: {{ {account.public}: "{account_jwt}", {system.public}: "{system_jwt}" }}\n')
    creds = creds_file(os.path.join(tmp, "worker.creds"), account, "worker")
    # Signed by an account the server was never told of.
    foreign = creds_file(os.path.join(tmp, "foreign.creds"), NKey("account"), "intruder")
    login = ["--nats-creds", creds]
    # In operator mode the server may refuse a user of a preloaded account
    # for a moment after it says it is ready (it sets the accounts up, with
    # JetStream, after that): the checks start once it takes the user.
    wait_for("the server to take the preloaded account's user",
             lambda: run("jobs", "--nats", srv.url, *login, "--json").returncode == 0, 15, every=0.2)
    every_user(tmp, srv, login, f"creds={creds}", "reel.meta.creds", ["--creds", creds])
    ok("run", f"testsrc num-buffers=3 ! natssink url={srv.url} creds={creds} jetstream=true stream=CREDS_TEST")
    msgs = [
        refused(["jobs", "--nats", srv.url, "--nats-creds", foreign, "--json"],
                [f"the server refused the credentials in '{foreign}'"]),
        refused(["jobs", "--nats", srv.url, "--nats-creds", tmp + "/none.creds", "--json"],
                [f"cannot read the NATS credentials file '{tmp}/none.creds' (--nats-creds): No such file"]),
        refused(["run", f"testsrc num-buffers=1 ! natssink url={srv.url} creds={foreign}"],
                ["the server refused the credentials in"]),
        refused(["jobs", "--nats", srv.url, "--json"], ["the server wants a login"]),
    ]
    check_no_secrets(tmp, srv.url, login)
    print("creds: every user with a .creds file (operator mode, JetStream); failures:\n  " + "\n  ".join(msgs))


def case_shared(tmp):
    certs = Certs(tmp)
    password = secret("pw")
    srv = AuthServer(tmp, certs.block() + f'authorization {{ user: worker, password: "{password}" }}\n', tls=True)
    pw = write(os.path.join(tmp, "worker.pw"), password, True)
    login = ["--nats-ca", certs.ca, "--nats-user", "worker", "--nats-password-file", pw]
    tail_login = ["--ca", certs.ca, "--user", "worker", "--password-file", pw]
    w = worker(tmp, srv.url, "w", *login)
    if f"taking jobs from {srv.url}" not in read(w.log):
        fail(f"worker's log: {read(w.log)}")
    tail = Tail(tmp, srv.url, tail_login, "reel.meta.cam", 30)
    core = ok("submit", "--nats", srv.url, *login, "testsrc num-buffers=30 ! natssink subject=reel.meta.cam").strip()
    wait_done(srv.url, login, core)
    tail.wait(30)
    # JetStream over the borrowed connection: every message stored.
    stored = ok("submit", "--nats", srv.url, *login,
                "testsrc num-buffers=20 ! natssink subject=reel.meta.js jetstream=true stream=SHARED_TEST").strip()
    wait_done(srv.url, login, stored)
    r = subprocess.run([TAIL, *tail_login, srv.url, "--stream-count", "SHARED_TEST"], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip() != "20":
        fail(f"SHARED_TEST holds {r.stdout.strip()} messages, wanted 20: {r.stderr}")
    fleet.stop(w)
    # The same natssink on its own (server from $REEL_NATS_URL) has neither CA nor password.
    msg = refused(["run", "testsrc num-buffers=3 ! natssink subject=reel.meta.cam"], ["not trusted"],
                  env={"REEL_NATS_URL": srv.url})
    check_no_secrets(tmp, srv.url, login)
    print(f"shared: a job's natssink without a url published 30 messages and stored 20 over the worker's "
          f"TLS + password connection; on its own: {msg}")


def main():
    for tool in ("nats-server", "openssl"):
        if not shutil.which(tool):
            skip(f"no {tool}")
    try:
        import cryptography  # noqa: F401
    except ImportError:
        skip("no python3-cryptography (nkeys and JWTs)")
    case = sys.argv[3]
    tmp = tempfile.mkdtemp(prefix="reel-nats-auth-")
    try:
        globals()["case_" + case](tmp)
    except BaseException:
        # What the servers saw, for a failure that does not come again (their
        # logs name users by public key only).
        for log in sorted(glob.glob(os.path.join(tmp, "nats-*.log"))):
            print(f"--- {os.path.basename(log)}, last lines:\n" + "\n".join(read(log).splitlines()[-15:]))
        raise
    finally:
        for p in fleet.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if os.environ.get("REEL_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

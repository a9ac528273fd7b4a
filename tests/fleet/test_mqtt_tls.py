#!/usr/bin/python3
"""mqttsink over TLS and with a login, against a real mosquitto broker. Each
case makes its certificates with the openssl CLI (a CA, a server certificate
for 127.0.0.1 and localhost, a client certificate; another CA that signed
none of them) and its password file with mosquitto_passwd, then starts its
own broker: a TLS listener for reel (password or client certificate
required) and a plain, anonymous one on 127.0.0.1 for the subscriber and the
end marker (test_mqtt.py's Subscriber), so that what is checked is reel's
side. Every reel run's stdout and stderr (with --report), and the files it
writes (--report-json, --dot, --trace), are searched for each password the
case uses: finding one fails the case.

usage: test_mqtt_tls.py REEL CASE
  tls         mqtts:// with tls-ca, username and password-file: every frame arrives, in order, as
              metasink's line, and the broker logged the login as that user
  clientcert  a listener that requires a client certificate: tls-cert and tls-key publish; without
              them, with a certificate of another CA, or tls-cert alone, the run fails saying so
  badpassword a wrong password, an unknown user, no password: the broker refuses the login and the
              run fails saying so; a missing or empty password-file fails before connecting
  badca       the broker's certificate checked: another CA's file in tls-ca, the system's CAs (no
              tls-ca) and a tls-ca file that is not there all fail, naming the reason
  wronghost   a certificate the CA signed but for another host name fails: the name is checked
  plain       mqtt:// to the TLS listener fails (saying to use mqtts://), mqtts:// to the plain one
              fails (asking whether it speaks TLS), tls-* properties on mqtt:// are refused
  passwordenv password-env publishes (to mqtts://localhost: the certificate's DNS name); an unset
              variable, both password-file and password-env, or no username fail saying so
  refused     secrets in the pipeline's text refused without being shown: password=, credentials
              in the url or $REEL_MQTT_URL; reel inspect names the new properties
  reconnect   qos 1 over TLS while the broker restarts: the run goes on and every frame arrives
  killed      the same with the broker killed (SIGKILL: no TLS close, which ends libmosquitto's own
              loop for good): the sink logs in to the new broker, which acknowledges every message
Exit 77 (skip) without mosquitto, mosquitto_sub, mosquitto_pub, mosquitto_passwd or openssl."""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from harness import fail, skip, free_port, wait_for, read, two_streams  # noqa: E402
import test_mqtt as plain  # noqa: E402  (its Subscriber and checks; same argv)

REEL = sys.argv[1]
PUB_ID = plain.PUB_ID
USER = "reel-cam"
PASSWORD = "Tls-test-Pa55word-7f3c"
WRONG = "Wrong-Pa55word-91ab"
URL_SECRET = "Url-Pa55word-c0de"
SLASHED = ("Sl4sh", "Half-e9d1")  # a password with a '/': GLib reads its first half as a port
SECRETS = [PASSWORD, WRONG, URL_SECRET, *SLASHED]
ENV = "REEL_TEST_MQTT_PASSWORD"
procs = []


def openssl(tmp, *args):
    r = subprocess.run(["openssl", *args], cwd=tmp, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"openssl {' '.join(args)}: {r.stderr}")


class Pki:
    """ca.pem signs server.pem (127.0.0.1, localhost), wronghost.pem
    (elsewhere.invalid) and client.pem; other-ca.pem signs other-client.pem."""

    EXTENSIONS = """[req]
distinguished_name = dn
prompt = no
[dn]
CN = reel test
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[wronghost]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:elsewhere.invalid
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
"""

    def __init__(self, tmp):
        self.tmp, self.serial = tmp, 1
        self.cnf = self.path("openssl.cnf")
        with open(self.cnf, "w") as f:
            f.write(self.EXTENSIONS)
        for ca in ("ca", "other-ca"):
            openssl(tmp, "req", "-x509", "-new", *self.key(ca), "-out", f"{ca}.pem", "-days", "2",
                    "-subj", f"/CN=reel test {ca}", "-config", self.cnf, "-extensions", "ca")
        self.leaf("server", "ca", "/CN=127.0.0.1")
        self.leaf("wronghost", "ca", "/CN=elsewhere.invalid")
        self.leaf("client", "ca", "/CN=reel client")
        self.leaf("other-client", "other-ca", "/CN=reel client", kind="client")

    def path(self, name):
        return os.path.join(self.tmp, name)

    @staticmethod
    def key(name):
        return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", f"{name}.key"]

    def leaf(self, name, ca, subject, kind=None):
        openssl(self.tmp, "req", "-new", *self.key(name), "-out", f"{name}.csr", "-subj", subject,
                "-config", self.cnf)
        self.serial += 1
        openssl(self.tmp, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
                "-set_serial", str(self.serial), "-days", "2", "-out", f"{name}.pem",
                "-extfile", self.cnf, "-extensions", kind or name)


class Broker:
    """mosquitto with a TLS listener (`server`'s certificate; a password, or a
    client certificate, required) and a plain anonymous one, both on
    127.0.0.1. `port` and `log` are the plain listener's and the log, as
    test_mqtt.Subscriber wants them."""

    def __init__(self, tmp, pki, server="server", client_cert=False, persistent=False):
        self.tmp, self.starts = tmp, 0
        self.port, self.tls_port = free_port(), free_port()
        self.conf = os.path.join(tmp, "mosquitto.conf")
        passwords = os.path.join(tmp, "mosquitto.passwd")
        open(passwords, "w").close()
        r = subprocess.run(["mosquitto_passwd", "-b", passwords, USER, PASSWORD], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            fail(f"mosquitto_passwd: {r.stderr}")
        with open(self.conf, "w") as f:
            # user: started as root, mosquitto would become another user, who cannot read the key.
            f.write(f"per_listener_settings true\nuser {pwd.getpwuid(os.getuid()).pw_name}\n")
            if persistent:
                f.write(f"persistence true\npersistence_location {tmp}/\nqueue_qos0_messages true\n")
            else:
                f.write("persistence false\n")
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n")
            f.write(f"listener {self.tls_port} 127.0.0.1\ncafile {pki.path('ca.pem')}\n"
                    f"certfile {pki.path(server + '.pem')}\nkeyfile {pki.path(server + '.key')}\n")
            if client_cert:
                f.write("require_certificate true\nallow_anonymous true\n")
            else:
                f.write(f"allow_anonymous false\npassword_file {passwords}\n")
        self.start()

    def start(self):
        self.starts += 1
        self.log = os.path.join(self.tmp, f"mosquitto-{self.starts}.log")
        self.proc = subprocess.Popen(["mosquitto", "-c", self.conf], stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "w"))
        procs.append(self.proc)
        # Logged once both listeners are open.
        wait_for("mosquitto", lambda: " running" in read(self.log) or self.proc.poll() is not None, 15)
        if self.proc.poll() is not None:
            fail(f"mosquitto exited: {read(self.log)}")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        if "Error saving" in read(self.log):
            fail(f"mosquitto did not save its sessions: {read(self.log)}")

    def url(self, host="127.0.0.1"):
        return f"mqtts://{host}:{self.tls_port}"

    def plain_url(self):
        return f"mqtt://127.0.0.1:{self.port}"


def no_secrets(what, *texts):
    for text in texts:
        for secret in SECRETS:
            if secret in text:
                fail(f"{what}: a password ({secret!r}) is shown: {text[:4000]}")


class Run:
    """`reel run` with every report it can write; fails the case if any of
    them shows a password."""
    n = 0

    def __init__(self, tmp, description, env=None, timeout=60):
        Run.n += 1
        files = {k: os.path.join(tmp, f"run{Run.n}.{k}") for k in ("json", "dot", "trace")}
        r = subprocess.run([REEL, "run", "--report", "--report-json", files["json"], "--dot", files["dot"],
                            "--trace", files["trace"], "--", description], capture_output=True, text=True,
                           timeout=timeout, env=env)
        self.rc, self.stdout, self.stderr = r.returncode, r.stdout, r.stderr
        self.report = read(files["json"])
        no_secrets(f"reel run {description}", r.stdout, r.stderr, *(read(p) for p in files.values()))

    def ok(self):
        if self.rc != 0:
            fail(f"reel run: exit {self.rc}: {self.stderr}")
        if '"mqttsink0"' not in self.report:
            fail(f"no report with mqttsink0 in it: {self.report[:2000]}")
        return self

    def fails(self, rc, *wanted):
        """Exit `rc` with each of `wanted` in stderr; returns the error line."""
        line = next((l for l in self.stderr.splitlines() if "error" in l), "")
        if self.rc != rc or not all(w in line for w in wanted):
            fail(f"exit {self.rc}, wanted {rc} with {wanted} in the error: {self.stderr}")
        return line


def environment(**extra):
    env = {k: v for k, v in os.environ.items() if k not in (ENV, "REEL_MQTT_URL")}
    env.update(extra)
    return env


def sink(srv, pki, extra="", host="127.0.0.1"):
    return f"mqttsink url={srv.url(host)} tls-ca={pki.path('ca.pem')} client-id={PUB_ID} {extra}"


def password_file(tmp, name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def one_frame(sink_text):
    return f"testsrc num-buffers=3 ! video/raw,width=64,height=48 ! {sink_text}"


def published(tmp, srv, sink_text, env=None, user=None):
    """Two streams through `sink_text`: every frame arrives as metasink's line;
    with `user`, the broker logged the login as that user."""
    want = plain.metasink_lines(tmp)
    sub = plain.Subscriber(tmp, srv, "reel/meta/#")
    Run(tmp, two_streams(sink_text), env=env or environment()).ok()
    dups = plain.check(sub.messages(), "reel/meta/{stream}", 1, want)
    login = [l for l in read(srv.log).splitlines() if f" as {PUB_ID} " in l]
    if user and not any(f"u'{user}'" in l for l in login):
        fail(f"the broker did not log {PUB_ID}'s login as {user}: {login}")
    return dups


def case_tls(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki)
    pw = password_file(tmp, "password", PASSWORD + "\n")
    dups = published(tmp, srv, sink(srv, pki, f"username={USER} password-file={pw}"), user=USER)
    print(f"tls: 40 + 25 messages over mqtts:// with tls-ca and password-file, in order, each metasink's line; "
          f"logged in as {USER}; {dups} duplicates; no password in any output")


def case_clientcert(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki, client_cert=True)
    cert = f"tls-cert={pki.path('client.pem')} tls-key={pki.path('client.key')}"
    published(tmp, srv, sink(srv, pki, cert))
    url = srv.url()
    # "wants", or "may want" where the broker closed before its alert was read
    line = Run(tmp, one_frame(sink(srv, pki))).fails(
        1, f"TLS with MQTT broker at '{url}' failed", "client certificate: set tls-cert and tls-key")
    other = f"tls-cert={pki.path('other-client.pem')} tls-key={pki.path('other-client.key')}"
    other_line = Run(tmp, one_frame(sink(srv, pki, other))).fails(1, f"TLS with MQTT broker at '{url}' failed")
    Run(tmp, one_frame(sink(srv, pki, f"tls-cert={pki.path('client.pem')}"))).fails(
        2, "tls-cert and tls-key go together")
    Run(tmp, one_frame(f"mqttsink url={url} {cert}")).fails(2, "tls-cert and tls-key need tls-ca too")
    print(f"clientcert: published with tls-cert and tls-key; without: {line.split(': ', 3)[-1]}; another CA's "
          f"certificate: {other_line.split(': ', 3)[-1]}")


def case_badpassword(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki)
    url = srv.url()
    refused = f"MQTT broker at '{url}' refused the connection: Connection Refused: "
    hint = "(check username, and the password in password-file or password-env)"
    wrong = password_file(tmp, "wrong", WRONG + "\n")
    right = password_file(tmp, "right", PASSWORD + "\n")
    line = Run(tmp, one_frame(sink(srv, pki, f"username={USER} password-file={wrong}"))).fails(1, refused, hint)
    Run(tmp, one_frame(sink(srv, pki, f"username=nobody password-file={right}"))).fails(1, refused, hint)
    Run(tmp, one_frame(sink(srv, pki, f"username={USER}"))).fails(1, refused, hint)
    missing = os.path.join(tmp, "missing")
    Run(tmp, one_frame(sink(srv, pki, f"username={USER} password-file={missing}"))).fails(
        2, f"cannot read password-file '{missing}': No such file or directory")
    empty = password_file(tmp, "empty", "\n" + PASSWORD + "\n")
    Run(tmp, one_frame(sink(srv, pki, f"username={USER} password-file={empty}"))).fails(
        2, f"cannot use password-file '{empty}': its first line, the password, is empty")
    # Only the first line, and a CRLF ending is not part of the password.
    crlf = password_file(tmp, "crlf", PASSWORD + "\r\n" + WRONG + "\n")
    Run(tmp, one_frame(sink(srv, pki, f"username={USER} password-file={crlf}"))).ok()
    print(f"badpassword: {line.split(': ', 3)[-1]}; unknown user and no password refused too; a missing or "
          f"empty password-file named; the first line of a CRLF file logs in")


def case_badca(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki)
    url = srv.url()
    failed = f"TLS with MQTT broker at '{url}' failed: "
    line = Run(tmp, one_frame(sink(srv, pki).replace(pki.path("ca.pem"), pki.path("other-ca.pem")))).fails(
        1, failed, "certificate verify failed", "signed by tls-ca")
    system = Run(tmp, one_frame(f"mqttsink url={url}")).fails(
        1, failed, "certificate verify failed", "one of the system's CAs", "Else set tls-ca")
    missing = os.path.join(tmp, "no-ca.pem")
    Run(tmp, one_frame(f"mqttsink url={url} tls-ca={missing}")).fails(
        2, f"cannot read tls-ca '{missing}': No such file or directory")
    print(f"badca: another CA: {line.split(': ', 3)[-1]}; the system's CAs: {system.split(': ', 3)[-1]}; a missing "
          f"tls-ca named")


def case_wronghost(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki, server="wronghost")
    line = Run(tmp, one_frame(sink(srv, pki))).fails(
        1, f"TLS with MQTT broker at '{srv.url()}' failed: ", "host name verification failed",
        "the broker's certificate is not for the url's host")
    print(f"wronghost: a certificate of the CA for elsewhere.invalid, at 127.0.0.1: {line.split(': ', 3)[-1]}")


def case_plain(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki)
    to_tls = f"mqtt://127.0.0.1:{srv.tls_port}"
    line = Run(tmp, one_frame(f"mqttsink url={to_tls}")).fails(
        1, f"MQTT broker at '{to_tls}' closed the connection before answering it", "if it wants TLS, use mqtts://")
    to_plain = f"mqtts://127.0.0.1:{srv.port}"
    tls_line = Run(tmp, one_frame(f"mqttsink url={to_plain} tls-ca={pki.path('ca.pem')}")).fails(
        1, f"TLS with MQTT broker at '{to_plain}' failed", "does the broker speak TLS on that port?")
    for prop in ("tls-ca=" + pki.path("ca.pem"), f"tls-cert={pki.path('client.pem')} tls-key={pki.path('client.key')}"):
        Run(tmp, one_frame(f"mqttsink url={to_tls} {prop}")).fails(
            2, f"tls-ca, tls-cert and tls-key are for TLS, but broker url '{to_tls}' is plain MQTT: use mqtts://")
    print(f"plain: mqtt:// to TLS: {line.split(': ', 3)[-1]}; mqtts:// to plain: {tls_line.split(': ', 3)[-1]}")


def case_passwordenv(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki)
    with_env = sink(srv, pki, f"username={USER} password-env={ENV}", host="localhost")
    published(tmp, srv, with_env, env=environment(**{ENV: PASSWORD}), user=USER)
    Run(tmp, one_frame(with_env), env=environment()).fails(2, f"password-env: environment variable '{ENV}' is not set")
    Run(tmp, one_frame(with_env), env=environment(**{ENV: ""})).fails(
        2, f"password-env: environment variable '{ENV}' is empty")
    pw = password_file(tmp, "password", PASSWORD + "\n")
    Run(tmp, one_frame(f"{with_env} password-file={pw}"), env=environment(**{ENV: PASSWORD})).fails(
        2, "set one of password-file and password-env, not both")
    Run(tmp, one_frame(sink(srv, pki, f"password-env={ENV}")), env=environment(**{ENV: PASSWORD})).fails(
        2, "a password (password-env) needs a username")
    print(f"passwordenv: published to {srv.url('localhost')} with the password from ${ENV}; unset, empty, "
          f"both sources and no username refused")


def case_refused(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki)
    line = Run(tmp, one_frame(sink(srv, pki, f"username={USER} password={PASSWORD}"))).fails(
        2, "password= is refused", "password-file=PATH", "password-env=NAME")
    credentials = f"mqtts://{USER}:{URL_SECRET}@127.0.0.1:{srv.tls_port}"
    in_url = f"broker url 'mqtts://***@127.0.0.1:{srv.tls_port}' has credentials in it"
    Run(tmp, one_frame(f"mqttsink url={credentials} tls-ca={pki.path('ca.pem')}")).fails(2, in_url)
    slashed = f"mqtts://{USER}:{'/'.join(SLASHED)}@127.0.0.1:{srv.tls_port}"
    Run(tmp, one_frame(f"mqttsink url={slashed}")).fails(2, f"broker url 'mqtts://***@127.0.0.1:{srv.tls_port}'")
    Run(tmp, one_frame(f"mqttsink tls-ca={pki.path('ca.pem')}"), env=environment(REEL_MQTT_URL=credentials)).fails(
        2, in_url)
    r = subprocess.run([REEL, "inspect", "mqttsink"], capture_output=True, text=True, timeout=60)
    missing = [p for p in ("password-file", "password-env", "tls-ca", "tls-cert", "tls-key", "mqtts://")
               if p not in r.stdout]
    if r.returncode != 0 or missing:
        fail(f"reel inspect mqttsink: exit {r.returncode}, {missing} not in {r.stdout}{r.stderr}")
    print(f"refused: {line.split(': ', 3)[-1]}; credentials in the url and in $REEL_MQTT_URL refused, hidden")


def case_reconnect(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki, persistent=True)
    sub = plain.Subscriber(tmp, srv, "reel/meta/#", persistent=True)
    pw = password_file(tmp, "password", PASSWORD + "\n")
    n = 250
    out, err = os.path.join(tmp, "run.out"), os.path.join(tmp, "run.err")
    run = subprocess.Popen([REEL, "run", f"testsrc num-buffers={n} is-live=true framerate=50 "
                            f"! video/raw,width=64,height=48 ! {sink(srv, pki, f'username={USER} password-file={pw}')}"],
                           stdout=open(out, "w"), stderr=open(err, "w"), env=environment())
    procs.append(run)
    wait_for("the first messages", lambda: len(sub.received()) >= 10, 30)
    srv.stop()
    wait_for("the sink to notice", lambda: "lost the MQTT broker" in read(err), 30)
    srv.start()
    if run.wait(60) != 0:
        fail(f"reel run: exit {run.returncode}, {read(err)}")
    no_secrets("reel run", read(out), read(err))
    if f" as {PUB_ID} " not in read(srv.log):
        fail(f"the sink did not log in again after the restart: {read(srv.log)}")
    msgs = sub.messages()
    per, dups = plain.per_stream(msgs, "reel/meta/{stream}", 1)
    got = plain.frames(per.get(0, []))
    if list(per) != [0] or got != list(range(n)):
        missing = sorted(set(range(n)) - set(got))
        fail(f"frames missing {missing[:20]} or out of order once duplicates are dropped: {got[:20]}...")
    print(f"reconnect: all {n} frames arrived in order over TLS across a broker restart; {dups} duplicates")


def case_killed(tmp):
    pki = Pki(tmp)
    srv = Broker(tmp, pki)
    pw = password_file(tmp, "password", PASSWORD + "\n")
    out, err = os.path.join(tmp, "run.out"), os.path.join(tmp, "run.err")
    run = subprocess.Popen([REEL, "run", "testsrc num-buffers=250 is-live=true framerate=50 ! video/raw,width=64,"
                            f"height=48 ! {sink(srv, pki, f'username={USER} password-file={pw}')}"],
                           stdout=open(out, "w"), stderr=open(err, "w"), env=environment())
    procs.append(run)
    wait_for("the sink to log in", lambda: f" as {PUB_ID} " in read(srv.log), 30)
    srv.proc.kill()
    srv.proc.wait(30)
    wait_for("the sink to notice", lambda: "lost the MQTT broker" in read(err), 30)
    srv.start()
    # Exit 0: every qos 1 message, those held while the broker was away
    # included, acknowledged (else the run fails 10 s after its end).
    if run.wait(60) != 0:
        fail(f"reel run: exit {run.returncode}, {read(err)}")
    no_secrets("reel run", read(out), read(err))
    if f" as {PUB_ID} " not in read(srv.log):
        fail(f"the sink did not log in to the new broker: {read(srv.log)}")
    print("killed: the sink logged in to the restarted broker, which acknowledged every message")


def main():
    tools = ("mosquitto", "mosquitto_sub", "mosquitto_pub", "mosquitto_passwd", "openssl")
    if not all(shutil.which(t) for t in tools):
        skip("no " + ", ".join(t for t in tools if not shutil.which(t)))
    tmp = tempfile.mkdtemp(prefix="reel-mqtt-tls-")
    try:
        globals()["case_" + sys.argv[2]](tmp)
    finally:
        for p in procs + plain.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if os.environ.get("REEL_KEEP_TMP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What the Python tests share: verdicts (exit 1 fails, 77 skips, as ctest
reads them), free local ports, waiting on a condition with a deadline, and
reading a log that may not exist yet, and the two-stream source the
message sinks' tests share."""
import socket
import sys
import time


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(77)


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, cond, timeout, every=0.05):
    """cond()'s first true value, polled every `every` s; fails after `timeout` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(every)
    fail(f"timed out waiting for {what}")


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def two_streams(sink):
    """A description: two testsrc streams (ids 0 and 1, 40 and 25 frames)
    through a funnel into `sink`."""
    return (f"funnel name=m ! {sink} "
            "testsrc num-buffers=40 ! video/raw,width=64,height=48 ! m. "
            "testsrc num-buffers=25 ! video/raw,width=64,height=48 ! m.")

#!/usr/bin/python3
# Runs reel on every case of the bad-input corpus (make-corpus.py) and checks
# that each ends as a user should see it: exit code 1 or 2 with a message
# naming the problem, or, for damage a decoder recovers from, exit 0 with the
# documented behaviour: every frame the ffmpeg CLI decodes from the same
# file, and a warning from source0 or decode0 (corrupt packets, an early
# end) whenever frames were lost. Never a signal, a hang or a sanitizer
# report.
# Usage: run-corpus.py PATH_TO_REEL CORPUS_DIR
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

reel, corpus = sys.argv[1], sys.argv[2]
TIMEOUT = int(os.environ.get("REEL_BADINPUT_TIMEOUT", "60"))
SANITIZER = re.compile(r"ERROR: AddressSanitizer|runtime error:|LeakSanitizer|ERROR: UndefinedBehaviorSanitizer")
PARSE_ERROR = re.compile(r":\d+:\d+: error: .*\n.*\n *\| *\^", re.M)

cases = []  # (name, argv, env, verdict, substring)


def case(name, argv, verdict, substring=None, env=None):
    """substring: what stderr must hold; for "recover", the video's path."""
    cases.append((name, argv, env or {}, verdict, substring))


def video(f):
    return os.path.join(corpus, "video", f)


def model(f):
    return os.path.join(corpus, "model", f)


def decode_pipeline(f):
    return ["run", "source location=%s ! decode ! fakesink" % video(f)]


# Videos. Cut and flipped clips may be recoverable: "recover" accepts exit 0
# (what decoded is delivered; losses show as a corrupt-packet warning or an
# early end) or exit 1 with an error naming the source or decoder, where
# the ffmpeg CLI decodes nothing either.
for f in sorted(os.listdir(os.path.join(corpus, "video"))):
    if f.startswith(("cut", "flip")):
        case("video/" + f, decode_pipeline(f), "recover", video(f))
case("video/empty.mp4", decode_pipeline("empty.mp4"), "fail1", "source0: cannot open")
case("video/text.mp4", decode_pipeline("text.mp4"), "fail1", "Invalid data found")
case("video/dir.mp4", decode_pipeline("dir.mp4"), "fail1", "Is a directory")
case("video/missing.mp4", decode_pipeline("missing.mp4"), "fail1", "No such file or directory")
case("video/huge-frame.mkv", decode_pipeline("huge-frame.mkv"), "fail1",
     "'source0': frame size 40000x100 exceeds the limit of 32768 pixels per side")
case("video/no-frame-size.mkv", decode_pipeline("no-frame-size.mkv"), "fail1",
     "stream 0 is raw video without a valid frame size")
case("video/frame-side-env", decode_pipeline("clip-mkv.mkv"), "fail1",
     "frame size 96x64 exceeds the limit of 64 pixels per side (REEL_MAX_FRAME_SIDE)",
     {"REEL_MAX_FRAME_SIDE": "64"})

# Models, through the command line (tests/models/test_loader.c checks the
# loader's error codes; here: exit codes and what the user reads).
for f in ("cut10", "cut50", "cut90", "garbage", "text"):
    case("model/%s.onnx" % f, ["model", "info", model(f + ".onnx")], "fail1", "is not an ONNX model")
case("model/empty.onnx", ["model", "info", model("empty.onnx")], "fail1", "is not an ONNX model")
case("model/missing.onnx", ["model", "info", model("missing.onnx")], "fail1", "No such file or directory")
case("model/dir", ["model", "info", model("")], "fail1", "is not a regular file")
case("model/cycle.onnx", ["model", "info", model("cycle.onnx")], "fail1", "the graph has a cycle")
case("model/dangling.onnx", ["model", "info", model("dangling.onnx")], "fail1",
     "input 'ghost' is produced by no node")
case("model/init-size.onnx", ["model", "info", model("init-size.onnx")], "fail1",
     "initializer 'B': raw_data has 12 bytes, shape and type need 16")
case("model/huge-init.onnx", ["model", "info", model("huge-init.onnx")], "fail1",
     "initializer 'H': shape too large")
case("model/negative-init.onnx", ["model", "info", model("negative-init.onnx")], "fail1",
     "initializer 'N': negative dim -4")
case("model/huge-input.onnx", ["model", "info", model("huge-input.onnx")], "fail1", "graph input 'X': shape overflows")
case("model/negative-input.onnx", ["model", "info", model("negative-input.onnx")], "fail1",
     "graph input 'X': negative dim -3")
case("model/rank9.onnx", ["model", "info", model("rank9.onnx")], "fail1", "rank 9 exceeds 8")
case("model/unknown-op.onnx", ["model", "info", model("unknown-op.onnx")], "fail1", "'frob' (FrobnicateA)")
case("model/over-limit.onnx", ["model", "info", model("over-limit.onnx")], "fail1",
     "over the limit of 1024 bytes (REEL_MAX_MODEL_BYTES", {"REEL_MAX_MODEL_BYTES": "1024"})
case("model/tensor-limit", ["model", "info", model("over-limit.onnx")], "fail1",
     "initializer 'B': shape too large (over 1000 bytes, REEL_MAX_TENSOR_BYTES)", {"REEL_MAX_TENSOR_BYTES": "1000"})
case("model/expand-overflow.onnx",
     ["model", "run", model("expand-overflow.onnx"), "--input", "X=" + model("x-one.npy"), "--output-dir",
      os.path.join(corpus, "out")], "fail1", "node expand (Expand): output Y: the element count overflows")
case("model/infer-in-pipeline",
     ["run", "testsrc num-buffers=1 ! preprocess size=8x8 ! infer model=%s ! fakesink" % model("cut50.onnx")],
     "fail", "infer0: '%s' is not an ONNX model" % model("cut50.onnx"))  # EFORMAT at prepare: exit 2
run_inputs = {
    "x-shape.npy": "expected a tensor float32 [1,4]",
    "x-dtype.npy": "got int64 [1,4]",
    "x-rank.npy": "expected a tensor float32 [1,4]",
    "x-cut.npy": "data shorter than its shape",
    "x-garbage.npy": "header lacks 'fortran_order'",
    "x-huge.npy": "exceed the tensor limit",
    "x-text.npy": "not a .npy file",
    "x-missing.npy": "No such file or directory",
}
for f, want in run_inputs.items():
    case("model/run-" + f, ["model", "run", model("good.onnx"), "--input", "X=" + model(f), "--output-dir",
                            os.path.join(corpus, "out")], "fail1", want)
case("model/run-unknown-input", ["model", "run", model("good.onnx"), "--input", "Q=" + model("x-good.npy"),
                                 "--output-dir", os.path.join(corpus, "out")], "fail1",
     "--input Q=%s: the model has no input of that name" % model("x-good.npy"))

# Pipeline texts: exit 2, line:col, the line and a caret (runtime limits: 1).
texts = {
    "unterminated-quote": "unterminated quoted value",
    "bad-escape": "unknown escape",
    "dangling-bang": "missing element after '!'",
    "leading-bang": "'!' with no element before it",
    "double-bang": "'!' follows '!'",
    "unknown-element": "unknown element 'fakesnk'",
    "unknown-property": "unknown property 'widht'",
    "bad-value": "invalid value 'lots' for property 'num-buffers'",
    "out-of-range": "invalid value '-5'",
    "bad-enum": "invalid value 'sideways' for property 'leaky'",
    "bad-caps": "invalid caps",
    "bad-caps-field": "unknown field",
    "tensor-caps-dims": "expected dimensions such as 1x3x224x224",
    "tensor-caps-negative": "expected dimensions such as 1x3x224x224",
    "caps-negative-width": "expected a positive integer",
    "caps-width-overflow": "expected a positive integer",
    "unknown-ref": "no element is named 'x'",
    "duplicate-name": "duplicate element name 'a'",
    "empty": "empty pipeline description",
    "blank": "empty pipeline description",
    "only-comment": "empty pipeline description",
    "non-utf8": "invalid UTF-8 byte 0xff",
    "non-utf8-element": "invalid UTF-8 byte 0xc3",
    "very-long": "unknown element 'fakesnk'",
    "long-word": "unknown element 'xxxx",
    "nested-garbage": "unexpected character '('",
    "brackets": "unexpected character '{'",
    "only-equals": "unexpected '='",
    "bad-setting": "unknown pipeline setting 'placment'",
    "bad-queue-bytes": "invalid queue-max-bytes 'lots'",
    "queue-max-bytes-prop": "invalid value '-1' for property 'max-bytes'",
}
for name, want in texts.items():
    case("text/" + name, ["run", "-f", os.path.join(corpus, "text", name + ".reel")], "parse", want)
case("text/nul-byte", ["run", "-f", os.path.join(corpus, "text", "nul-byte.reel")], "fail2",
     "nul-byte.reel: byte 14 is NUL; a description is text")
case("text/caps-huge", ["run", "-f", os.path.join(corpus, "text", "caps-huge.reel")], "fail1",
     "'testsrc0': frame size 100000x100000 exceeds the limit of 32768 pixels per side (REEL_MAX_FRAME_SIDE)")
case("text/caps-many-pixels", ["run", "-f", os.path.join(corpus, "text", "caps-many-pixels.reel")], "fail1",
     "frame size 30000x30000 exceeds the limit of 268435456 pixels per frame (REEL_MAX_FRAME_PIXELS)")
case("text/tensor-caps-huge", ["run", "testsrc num-buffers=1 ! preprocess size=65536x65536 ! fakesink"], "fail1",
     "'preprocess0': 12884901888 elements of 4 bytes exceed the tensor limit")


def ffmpeg_frames(path):
    """Frames the ffmpeg CLI decodes from the first video stream: the
    independent count a recovered run must match."""
    p = subprocess.run(["ffmpeg", "-v", "quiet", "-i", path, "-map", "0:v:0", "-f", "framemd5", "-"],
                       capture_output=True, timeout=TIMEOUT)
    return sum(1 for line in p.stdout.decode("ascii", "replace").splitlines() if line and not line.startswith("#"))


def intact(path):
    """The undamaged clip a cut or flipped one was made from."""
    ext = os.path.splitext(path)[1]
    return video("clip-%s%s" % (ext[1:], ext))


def check_recovery(path, rc, err):
    """None when a recover case ended as promised, else why not."""
    want = ffmpeg_frames(path)
    if rc == 1:
        if not re.search(r"error: (source0|decode0): ", err):
            return "exit 1 without an error naming source0 or decode0"
        return None if want == 0 else "refused, but the ffmpeg CLI decodes %d frames" % want
    m = re.search(r"done: (\d+) frames", err)
    if not m:
        return "no 'done: N frames' line"
    got = int(m.group(1))
    if got != want:
        return "%d frames, the ffmpeg CLI decodes %d" % (got, want)
    whole = ffmpeg_frames(intact(path))
    if got < whole and not re.search(r"warning: (source0|decode0): ", err):
        return "%d of %d frames and no warning from source0 or decode0" % (got, whole)
    return None


def run(c):
    name, argv, env, verdict, want = c
    e = dict(os.environ, XDG_RUNTIME_DIR="/tmp", **env)
    try:
        p = subprocess.run([reel] + argv, capture_output=True, timeout=TIMEOUT, env=e, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return name, "timeout", "FAIL", "no exit after %d s" % TIMEOUT
    err = p.stderr.decode("utf-8", "replace")
    out = p.stdout.decode("utf-8", "replace") + err
    rc = p.returncode
    why = None
    if rc < 0:
        why = "killed by signal %d" % -rc
    elif SANITIZER.search(out):
        why = "sanitizer report"
    elif verdict == "recover":
        if rc not in (0, 1):
            why = "exit %d, wanted 0 (recovered) or 1 (refused)" % rc
        else:
            why = check_recovery(want, rc, err)
            verdict_note = "recovered" if rc == 0 else "refused"
    elif verdict == "parse":
        if rc != 2:
            why = "exit %d, wanted 2" % rc
        elif not PARSE_ERROR.search(err):
            why = "no line:col, line and caret"
    elif verdict == "fail1" and rc != 1:
        why = "exit %d, wanted 1" % rc
    elif verdict == "fail2" and rc != 2:
        why = "exit %d, wanted 2" % rc
    elif verdict == "fail" and rc not in (1, 2):
        why = "exit %d, wanted 1 or 2" % rc
    if not why and want and verdict != "recover" and want not in err:
        why = "stderr lacks %r" % want
    if why:
        return name, rc, "FAIL", why + "\n" + "\n".join(out.splitlines()[-20:])[-3000:]
    return name, rc, verdict_note if verdict == "recover" else "ok", None


os.makedirs(os.path.join(corpus, "out"), exist_ok=True)
with ThreadPoolExecutor(max_workers=2) as pool:
    results = list(pool.map(run, cases))
failed = 0
for name, rc, verdict, detail in results:
    print("%-40s exit %-7s %s" % (name, rc, verdict))
    if detail:
        failed += 1
        print("    " + detail.replace("\n", "\n    "))
counts = {}
for r in results:
    counts[r[2]] = counts.get(r[2], 0) + 1
print("%d cases: %s" % (len(results), ", ".join("%d %s" % (n, v) for v, n in sorted(counts.items()))))
sys.exit(1 if failed else 0)

#!/usr/bin/python3
# Makes the bad-input corpus into DIR: broken videos (cut and bit-flipped
# clips in several containers, made with the ffmpeg CLI), broken ONNX models
# and .npy inputs (made with onnx and numpy), and broken pipeline texts.
# Nothing here is committed as a binary; the same seeds give the same files.
# Usage: make-corpus.py DIR
import os
import random
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

out = sys.argv[1]
for sub in ("video", "model", "text"):
    os.makedirs(os.path.join(out, sub), exist_ok=True)


def path(*parts):
    return os.path.join(out, *parts)


def write(p, data):
    with open(p, "wb") as f:
        f.write(data)


# ------------------------------------------------------------------ videos

# container -> (extension, codec arguments); ten 96x64 frames each.
CLIPS = {
    "mp4": ("mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-g", "5"]),
    "mkv": ("mkv", ["-c:v", "ffv1"]),
    "avi": ("avi", ["-c:v", "mjpeg", "-q:v", "5"]),
    "ts": ("ts", ["-c:v", "mpeg2video", "-g", "5"]),
    "nut": ("nut", ["-c:v", "mpeg4", "-g", "5"]),
    "webm": ("webm", ["-c:v", "libvpx", "-b:v", "200k", "-g", "5"]),
    "ivf": ("ivf", ["-c:v", "libvpx", "-b:v", "200k", "-g", "5"]),
}


def ffmpeg(args, dst):
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10",
                    "-frames:v", "10", "-pix_fmt", "yuv420p"] + args + [dst], check=True)


for name, (ext, args) in CLIPS.items():
    clip = path("video", "clip-%s.%s" % (name, ext))
    ffmpeg(args, clip)
    data = open(clip, "rb").read()
    # Cut points: inside the header, mid-file, just before the end.
    for pct in (3, 50, 97):
        write(path("video", "cut%02d-%s.%s" % (pct, name, ext)), data[:len(data) * pct // 100])
    # Seeded bit flips past the first 64 bytes (the magic), so the
    # container is still recognised and the damage reaches the demuxer or
    # the decoder.
    for seed in (1, 2):
        rng = random.Random("%s-%d" % (name, seed))
        b = bytearray(data)
        for _ in range(24):
            i = rng.randrange(64, len(b))
            b[i] ^= 1 << rng.randrange(8)
        write(path("video", "flip%d-%s.%s" % (seed, name, ext)), bytes(b))

write(path("video", "empty.mp4"), b"")
write(path("video", "text.mp4"), b"this is not a video, just text named .mp4\n")
os.makedirs(path("video", "dir.mp4"), exist_ok=True)

# Raw video in Matroska whose header claims 40000x100 (the codec, raw,
# believes the container; FFmpeg's own check passes it): patched from a real
# 256x256 clip.
raw = path("video", "huge-frame.mkv")
subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=256x256:rate=10",
                "-frames:v", "1", "-c:v", "rawvideo", "-pix_fmt", "gray", raw], check=True)
data = open(raw, "rb").read()
for eid, size in ((b"\xb0", b"\x9c\x40"), (b"\xba", b"\x00\x64")):  # PixelWidth, PixelHeight: 0x0100
    assert data.count(eid + b"\x82\x01\x00") == 1
    data = data.replace(eid + b"\x82\x01\x00", eid + b"\x82" + size)
write(raw, data)
# The same claiming 65535x65535, which FFmpeg itself refuses: no size at all.
for eid in (b"\xb0", b"\xba"):
    data = data.replace(eid + b"\x82" + (b"\x9c\x40" if eid == b"\xb0" else b"\x00\x64"), eid + b"\x82\xff\xff")
write(path("video", "no-frame-size.mkv"), data)

# ------------------------------------------------------------------ models


def save(model, name):
    onnx.save(model, path("model", name))


def graph_model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def raw_tensor(name, dims, raw=b""):
    # Built by hand: helper.make_tensor checks what these cases break.
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, raw_data=raw)
    t.dims.extend(dims)
    return t


X = vi("X", [1, 4])
Y = vi("Y", [1, 4])

# A good model: Y = Relu(X + B); the base of the cut and garbage cases.
good = graph_model([helper.make_node("Add", ["X", "B"], ["S"], name="add"),
                    helper.make_node("Relu", ["S"], ["Y"], name="relu")], [X], [Y],
                   [helper.make_tensor("B", TensorProto.FLOAT, [4], [1, 2, 3, 4])])
save(good, "good.onnx")
blob = good.SerializeToString()
for pct in (10, 50, 90):
    write(path("model", "cut%02d.onnx" % pct), blob[:len(blob) * pct // 100])
write(path("model", "garbage.onnx"), random.Random(7).randbytes(3000))
write(path("model", "empty.onnx"), b"")
write(path("model", "text.onnx"), b"ir_version: 8\ngraph { name: 'not binary' }\n")

save(graph_model([helper.make_node("Relu", ["Z"], ["W"], name="a"),
                  helper.make_node("Relu", ["W"], ["Z"], name="b"),
                  helper.make_node("Add", ["X", "W"], ["Y"], name="out")], [X], [Y]), "cycle.onnx")
save(graph_model([helper.make_node("Add", ["X", "ghost"], ["Y"], name="adder")], [X], [Y]), "dangling.onnx")
bad_init = raw_tensor("B", [4], b"\0" * 12)  # 3 floats where the shape needs 4
save(graph_model([helper.make_node("Add", ["X", "B"], ["Y"], name="add")], [X], [Y], [bad_init]),
     "init-size.onnx")
huge_init = raw_tensor("H", [1 << 20, 1 << 20, 1 << 20])
save(graph_model([helper.make_node("Add", ["X", "H"], ["Y"], name="add")], [X], [Y], [huge_init]),
     "huge-init.onnx")
neg_init = raw_tensor("N", [-4])
save(graph_model([helper.make_node("Add", ["X", "N"], ["Y"], name="add")], [X], [Y], [neg_init]),
     "negative-init.onnx")
save(graph_model([helper.make_node("Relu", ["X"], ["Y"], name="r")], [vi("X", [1 << 40, 1 << 40])],
                 [vi("Y", [1 << 40, 1 << 40])]), "huge-input.onnx")
save(graph_model([helper.make_node("Relu", ["X"], ["Y"], name="r")], [vi("X", [1, -3])], [Y]),
     "negative-input.onnx")
save(graph_model([helper.make_node("Relu", ["X"], ["Y"], name="r")], [vi("X", [1] * 9)], [Y]), "rank9.onnx")
save(graph_model([helper.make_node("FrobnicateA", ["X"], ["Y"], name="frob")], [X], [Y]), "unknown-op.onnx")
# Reshape to a shape read from a constant: the product of its dims
# overflows only once shape inference multiplies them.
shape = helper.make_tensor("shape", TensorProto.INT64, [3], [1 << 30, 1 << 30, 1 << 30])
save(graph_model([helper.make_node("Expand", ["X", "shape"], ["Y"], name="expand")], [vi("X", [1])],
                 [vi("Y", None)], [shape]), "expand-overflow.onnx")
# A model just over 1 KiB, run with REEL_MAX_MODEL_BYTES=1024.
save(graph_model([helper.make_node("Add", ["X", "B"], ["Y"], name="add")], [vi("X", [1, 400])],
                 [vi("Y", [1, 400])], [helper.make_tensor("B", TensorProto.FLOAT, [1, 400], [0.5] * 400)]),
     "over-limit.onnx")

# Inputs for `reel model run good.onnx --input X=...`.
np.save(path("model", "x-good.npy"), np.zeros((1, 4), np.float32))
np.save(path("model", "x-one.npy"), np.zeros((1,), np.float32))
np.save(path("model", "x-shape.npy"), np.zeros((2, 3), np.float32))
np.save(path("model", "x-dtype.npy"), np.zeros((1, 4), np.int64))
np.save(path("model", "x-rank.npy"), np.zeros((4,), np.float32))
good_npy = open(path("model", "x-good.npy"), "rb").read()
write(path("model", "x-cut.npy"), good_npy[:len(good_npy) - 5])
write(path("model", "x-garbage.npy"), b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'\n")
header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000, 100000), }"
header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
write(path("model", "x-huge.npy"), b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
write(path("model", "x-text.npy"), b"1.0 2.0 3.0 4.0\n")

# ------------------------------------------------------------------ texts

TEXTS = {
    "unterminated-quote": b'testsrc ! fakesink name="abc\n',
    "bad-escape": b'testsrc ! fakesink name="a\\qb"\n',
    "dangling-bang": b"testsrc ! fakesink !\n",
    "leading-bang": b"! testsrc ! fakesink\n",
    "double-bang": b"testsrc ! ! fakesink\n",
    "unknown-element": b"testsrc ! fakesnk\n",
    "unknown-property": b"testsrc widht=3 ! fakesink\n",
    "bad-value": b"testsrc num-buffers=lots ! fakesink\n",
    "out-of-range": b"testsrc num-buffers=-5 ! fakesink\n",
    "bad-enum": b"testsrc ! queue leaky=sideways ! fakesink\n",
    "bad-caps": b"testsrc ! video/raw,format=rgb99 ! fakesink\n",
    "bad-caps-field": b"testsrc ! video/raw,wdith=3 ! fakesink\n",
    "caps-huge": b"testsrc num-buffers=1 ! video/raw,width=100000,height=100000 ! fakesink\n",
    "caps-many-pixels": b"testsrc num-buffers=1 ! video/raw,width=30000,height=30000 ! fakesink\n",
    "tensor-caps-dims": b"testsrc ! preprocess ! tensor,dtype=float32,shape=1x3x4294967296x4294967296 ! fakesink\n",
    "tensor-caps-negative": b"testsrc ! preprocess ! tensor,dtype=float32,shape=1x3x-5x7 ! fakesink\n",
    "caps-negative-width": b"testsrc ! video/raw,width=-5,height=10 ! fakesink\n",
    "caps-width-overflow": b"testsrc ! video/raw,width=99999999999,height=10 ! fakesink\n",
    "unknown-ref": b"testsrc ! x. \n",
    "duplicate-name": b"testsrc name=a ! fakesink name=a\n",
    "empty": b"",
    "blank": b"   \n\n\t\n",
    "only-comment": b"# nothing but a comment\n",
    "non-utf8": b"testsrc ! fakesink name=\xff\xfe\xc3\x28\n",
    "non-utf8-element": b"testsrc ! fa\xc3\x28kesink\n",
    "nul-byte": b"testsrc ! fake\x00sink\n",
    "very-long": b"testsrc" + b" ! identity" * 20000 + b" ! fakesnk\n",
    "long-word": b"testsrc ! " + b"x" * 200000 + b"\n",
    "nested-garbage": b"((((" * 5000 + b"\n",
    "brackets": b"testsrc ! { fakesink } ] [\n",
    "only-equals": b"=\n",
    "bad-setting": b"device=cpu\nplacment=strict\ntestsrc ! fakesink\n",
    "bad-queue-bytes": b"queue-max-bytes=lots\ntestsrc ! fakesink\n",
    "queue-max-bytes-prop": b"testsrc ! queue max-bytes=-1 ! fakesink\n",
}
for name, text in TEXTS.items():
    write(path("text", name + ".reel"), text)

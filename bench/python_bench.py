# The Python side of bench/python.
#   python_bench.py pull DESCRIPTION         frames per second through Pipeline.pull
#   python_bench.py model MODEL THREADS RUNS  median ms of Model.run on random inputs
import sys
import time

import numpy as np

import reel


def pull(description):
    p = reel.Pipeline(description)
    p.start()  # timed from here, as the C side
    frames, total = 0, 0
    t0 = time.monotonic()
    for f in p.pull("out"):
        total += int(f.array[0, 0, 0])  # the same first byte the C side reads
        frames += 1
    s = time.monotonic() - t0
    p.close()
    print(f"{frames / s:.1f}")


def model(path, threads, runs):
    m = reel.Model(path, threads=int(threads))
    rng = np.random.default_rng(0)
    feeds = {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
             for i in m.inputs}
    for _ in range(3):
        m.run(feeds)
    times = []
    for _ in range(int(runs)):
        t0 = time.perf_counter()
        m.run(feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    print(f"{sorted(times)[len(times) // 2]:.3f}")


if __name__ == "__main__":
    {"pull": pull, "model": model}[sys.argv[1]](*sys.argv[2:])

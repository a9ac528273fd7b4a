# Compares reel's outputs with the reference's: every .npy in REF_DIR must
# have a twin in OURS_DIR of the same shape, equal within rtol (relative to
# the output's largest magnitude, so near-zero entries are not judged alone).
#   python3 compare_npy.py OURS_DIR REF_DIR [RTOL]
import os
import sys

import numpy as np

ours_dir, ref_dir = sys.argv[1], sys.argv[2]
rtol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-4
bad = 0
names = sorted(f for f in os.listdir(ref_dir) if f.endswith(".npy"))
if not names:
    sys.exit(f"no reference outputs in {ref_dir}")
for name in names:
    ref = np.load(os.path.join(ref_dir, name))
    path = os.path.join(ours_dir, name)
    if not os.path.exists(path):
        print(f"  {name}: missing from reel's outputs")
        bad += 1
        continue
    ours = np.load(path)
    if ours.shape != ref.shape:
        print(f"  {name}: shape {ours.shape}, reference {ref.shape}")
        bad += 1
        continue
    scale = max(float(np.max(np.abs(ref))), 1e-12)
    err = float(np.max(np.abs(ours.astype(np.float64) - ref))) / scale
    ok = err <= rtol
    bad += not ok
    print(f"  {name}: {ref.shape} max error {err:.2e} of the largest magnitude {'ok' if ok else 'TOO LARGE'}")
sys.exit(1 if bad else 0)

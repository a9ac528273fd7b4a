# `cmake --install` puts the package where Debian's python3 finds it under
# the prefix, and the installed module finds the installed libreel.
import os
import subprocess
import sys

import pytest

from conftest import run_python


def test_installed_module_imports_and_runs(tmp_path):
    build = os.environ.get("REEL_BUILD_DIR")
    if not build:
        pytest.skip("REEL_BUILD_DIR is not set (ctest sets it)")
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], check=True, capture_output=True)
    site = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "dist-packages"
    assert (site / "reel" / "__init__.py").exists() and (site / "reel" / "py.typed").exists()
    code = ("import reel, numpy as np, os\n"
            "assert os.path.dirname(reel.__file__) == os.environ['SITE'] + '/reel', reel.__file__\n"
            "p = reel.Pipeline('testsrc num-buffers=3 ! video/raw,format=rgb24,width=8,height=8 ! appsink name=o')\n"
            "print(sum(1 for f in p.pull('o')), reel.version)\n")
    env = {"PYTHONPATH": str(site), "SITE": str(site)}
    r = run_python(code, env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "3"
    # The module loads the installed libreel, not the build tree's.
    maps = run_python("import reel, re\nprint(open('/proc/self/maps').read())", env, cwd=str(tmp_path)).stdout
    libs = {l.split()[-1] for l in maps.splitlines() if "libreel.so" in l}
    assert libs and all(l.startswith(str(prefix)) for l in libs), libs

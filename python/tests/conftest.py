# Shared fixtures of the Python module's tests. A skipped test makes the
# whole run exit 77, which ctest shows as a skip: nothing skips silently.
import os
import subprocess
import sys

import pytest

SOURCE = os.environ.get("REEL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
REEL_BIN = os.environ.get("REEL_BIN", os.path.join(SOURCE, "build", "reel"))
BLAZEFACE = os.path.join(SOURCE, "cache", "models", "blazeface", "face_detection_front_128x128_barracuda.onnx")


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus == 0 and reporter and reporter.stats.get("skipped"):
        session.exitstatus = 77


@pytest.fixture(scope="session")
def reel_bin():
    return REEL_BIN


@pytest.fixture(scope="session")
def blazeface():
    if not os.path.exists(BLAZEFACE):
        pytest.skip("no BlazeFace model (scripts/fetch-models)")
    return "blazeface-front"


@pytest.fixture(scope="session")
def faces_clip(tmp_path_factory):
    """A 1280x720 clip of two moving faces (scripts/make-faces-clip), 30 frames."""
    path = tmp_path_factory.mktemp("clip") / "faces.mp4"
    subprocess.run([os.path.join(SOURCE, "scripts", "make-faces-clip"), str(path), "30"], check=True)
    return str(path)


@pytest.fixture(scope="session")
def has_vulkan():
    import reel
    return any(d["backend"] == "vulkan" for d in reel.devices())


def run_python(code, env_extra=None, **kwargs):
    """Runs code in a fresh interpreter with the module on its path."""
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, **kwargs)

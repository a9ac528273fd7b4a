# reel.Model: the same results as `reel model run`, errors, devices.
import os
import subprocess

import numpy as np
import pytest

import reel

MODELS = os.environ.get("REEL_TEST_MODELS", "")


def npy_run(reel_bin, model, inputs, tmp_path):
    """`reel model run` on the same inputs: its outputs by name."""
    args = [reel_bin, "model", "run", model, "--output-dir", str(tmp_path / "out")]
    for name, a in inputs.items():
        path = tmp_path / (name.replace(":", "_") + ".npy")
        np.save(path, a)
        args += ["--input", f"{name}={path}"]
    subprocess.run(args, check=True, capture_output=True)
    return {f[:-4]: np.load(tmp_path / "out" / f) for f in os.listdir(tmp_path / "out")}


def test_zoo_model_matches_the_cli(reel_bin, blazeface, tmp_path):
    m = reel.Model(blazeface, threads=1)
    assert m.inputs == [reel.TensorInfo("input:0", "float32", (1, 128, 128, 3))]
    assert [o.name for o in m.outputs] == ["Identity:0", "Identity_1:0", "Identity_2:0", "Identity_3:0"]
    assert m.device == "cpu" and m.path.endswith(".onnx")
    x = np.random.default_rng(0).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    got = m.run({"input:0": x})
    cli = npy_run(reel_bin, m.path, {"input:0": x}, tmp_path)
    assert set(cli) == {n.replace(":", "_") for n in got} or set(cli) == set(got)
    for name, a in got.items():
        b = cli.get(name, cli.get(name.replace(":", "_")))
        assert a.shape == b.shape and a.dtype == b.dtype
        scale = max(1e-6, float(np.abs(b).max()))
        assert float(np.abs(a - b).max()) <= 1e-5 * scale, name
    assert np.array_equal(m.run(x)["Identity:0"], got["Identity:0"])  # one input: the array alone
    # A non-contiguous input is copied once, with the same result.
    xf = np.asfortranarray(x)
    assert np.array_equal(m.run(xf)["Identity:0"], got["Identity:0"])


def test_outputs_are_owned_arrays(blazeface):
    m = reel.Model(blazeface)
    out = m.run(np.zeros((1, 128, 128, 3), np.float32))
    del m
    a = out["Identity_2:0"]
    a += 1  # writable, and the model being gone does not matter
    assert a.shape == (1, 512, 16)


def test_wrong_inputs_are_value_errors(blazeface):
    m = reel.Model(blazeface)
    x = np.zeros((1, 128, 128, 3), np.float32)
    with pytest.raises(ValueError, match="expected dtype float32"):
        m.run(x.astype(np.float64))
    with pytest.raises(ValueError, match=r"expected shape \(1, 128, 128, 3\), got \(1, 64, 128, 3\)"):
        m.run(x[:, :64])
    with pytest.raises(ValueError, match="no input 'nope'"):
        m.run({"nope": x})
    with pytest.raises(ValueError, match="missing"):
        m.run({})
    with pytest.raises(ValueError, match="numpy array"):
        m.run({"input:0": [1, 2, 3]})


def test_symbolic_dims_and_conv_model(reel_bin, tmp_path):
    path = os.path.join(MODELS, "conv_bn_relu.onnx")
    m = reel.Model(path)
    info = m.inputs[0]
    x = np.random.default_rng(1).standard_normal([d if isinstance(d, int) else 2 for d in info.shape]).astype(np.float32)
    got = m.run(x)
    cli = npy_run(reel_bin, path, {info.name: x}, tmp_path)
    for name, a in got.items():
        assert np.allclose(a, cli[name], rtol=0, atol=1e-5 * float(np.abs(cli[name]).max()))


def test_bad_models_and_devices(tmp_path):
    with pytest.raises(reel.Error, match="no-such-model"):
        reel.Model("no-such-model")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(reel.Error, match="bad.onnx"):
        reel.Model(str(bad))
    with pytest.raises(ValueError, match="precision"):
        reel.Model(str(bad), precision="int4")
    with pytest.raises(ValueError):
        reel.Model(os.path.join(MODELS, "conv_bn_relu.onnx"), device="no-such-device-anywhere")


def test_vulkan_matches_cpu(blazeface, has_vulkan):
    if not has_vulkan:
        pytest.skip("no Vulkan device")
    x = np.random.default_rng(2).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    cpu = reel.Model(blazeface).run(x)
    gpu_model = reel.Model(blazeface, device="vulkan:0")
    gpu = gpu_model.run(x)
    assert gpu_model.device == "vulkan:0" and gpu_model.placement()["device_nodes"] > 0
    for name in cpu:
        scale = float(np.abs(cpu[name]).max())
        assert float(np.abs(cpu[name] - gpu[name]).max()) <= 1e-4 * scale, name


def test_model_runs_from_two_threads(blazeface):
    import threading
    m = reel.Model(blazeface)
    x = np.random.default_rng(3).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    want = m.run(x)["Identity:0"]
    bad = []

    def work():
        for _ in range(20):
            if not np.array_equal(m.run(x)["Identity:0"], want):
                bad.append(1)

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad

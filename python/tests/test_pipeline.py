# reel.Pipeline: building, running, reports, properties, errors.
import json

import pytest

import reel


def test_version_devices_inspect(reel_bin):
    import subprocess
    out = subprocess.run([reel_bin, "--version"], capture_output=True, text=True).stdout
    assert reel.version in out
    devs = reel.devices()
    assert devs[0]["spec"] == "cpu" and devs[0]["backend"] == "cpu"
    info = reel.inspect("infer")
    assert info["inputs"] == (1, 1) and "model" in [p["name"] for p in info["properties"]]
    assert "appsink" in reel.elements() and "appsrc" in reel.elements()
    with pytest.raises(KeyError):
        reel.inspect("no-such-element")


def test_run_to_end_and_report():
    p = reel.Pipeline("testsrc num-buffers=20 ! video/raw,width=64,height=48 ! identity name=id ! fakesink name=s")
    p.run()
    assert not p.running
    rep = p.report()
    by_name = {e["name"]: e for e in rep["elements"]}
    assert by_name["id"]["buffers_in"] == 20 and by_name["s"]["buffers_in"] == 20
    assert by_name["id"]["device"] == "cpu"
    assert "memory" in rep and rep["wall_s"] >= 0
    assert p.frames_done == 20
    assert {"id", "s"} <= set(p.elements)
    p.close()


def test_parse_error_has_line_column_hint():
    with pytest.raises(reel.ParseError) as ei:
        reel.Pipeline("testsrc num-buffers=1\n  ! fakesnk")
    e = ei.value
    assert (e.line, e.column) == (2, 5)
    assert e.hint == "did you mean 'fakesink'?"
    assert "unknown element 'fakesnk'" in e.message
    assert "^~~~~~~" in str(e) and "2 |   ! fakesnk" in str(e)
    assert isinstance(e, reel.Error)


def test_run_failure_names_the_element():
    p = reel.Pipeline("testsrc num-buffers=10 ! identity name=broken error-after=3 ! fakesink")
    with pytest.raises(reel.Error) as ei:
        p.run()
    assert "broken" in str(ei.value)
    assert not isinstance(ei.value, reel.ParseError)


def test_values_and_settings(tmp_path):
    f = tmp_path / "p.reel"
    f.write_text("device=cpu\ntestsrc num-buffers={n} ! video/raw,width=32,height=32 ! appsink name=out\n")
    p = reel.Pipeline.from_file(f, values={"n": 7})
    assert len(list(p.pull("out"))) == 7
    p.close()
    p = reel.Pipeline("testsrc ! fakesink", device="no-such-device-anywhere")
    with pytest.raises(reel.Error, match="no-such-device-anywhere"):
        p.run()


def test_set_while_running():
    with reel.Pipeline("testsrc ! video/raw,width=32,height=32 ! identity name=id ! appsink name=out") as p:
        frames = p.pull("out")
        next(frames)
        p.set("id", "sleep-us", 10)  # takes effect at the element's next buffer
        for _ in range(50):
            if p.get("id", "sleep-us") == "10":
                break
            next(frames)
        assert p.get("id", "sleep-us") == "10"
        with pytest.raises(ValueError, match="error-after"):
            p.set("id", "error-after", 5)  # fixed once running
        with pytest.raises(ValueError, match="no element"):
            p.set("idd", "sleep-us", 1)
        next(frames)
    # leaving the block stopped the endless source cleanly


def test_stop_drains_an_unpulled_appsink():
    p = reel.Pipeline("testsrc ! video/raw,width=32,height=32 ! appsink name=out max-buffers=2")
    p.start()
    assert not p.wait(0.2) and p.running
    p.stop()  # would wait for ever if nobody took the appsink's frames
    assert not p.running
    p.close()


def test_pull_timeout_and_closed():
    p = reel.Pipeline("appsrc name=in caps=video/raw,format=gray8,width=8,height=8 ! appsink name=out")
    p.start()
    with pytest.raises(TimeoutError):
        p.pull_one("out", timeout=0.05)
    with pytest.raises(ValueError, match="not an appsink"):
        p.pull_one("in", timeout=0)
    p.end("in")
    assert p.pull_one("out") is None
    p.close()
    with pytest.raises(reel.Error, match="closed"):
        p.start()


def test_write_trace_and_dot(tmp_path):
    p = reel.Pipeline("testsrc num-buffers=3 ! fakesink", trace=True)
    p.write_dot(tmp_path / "g.dot")
    p.run()
    p.write_trace(str(tmp_path / "t.json"))
    assert "digraph" in (tmp_path / "g.dot").read_text()
    assert json.loads((tmp_path / "t.json").read_text())


def test_help_is_useful():
    import pydoc
    text = pydoc.render_doc(reel.Pipeline)
    for word in ("pull", "push", "report", "stop", "ParseError"):
        assert word in text
    assert "dtype" in pydoc.render_doc(reel.Model)

"""Hostile files named on the command line (issue 45, findings 1 and 6): a model whose external
data is ``/dev/zero``, a FIFO, a file outside the model's folder or a link leading out of it; a
FIFO given as a bundle, as ``compile --input`` and as an image. Each runs the real CLI in a child
process with an address-space limit (:data:`MEMORY`) and a time limit (:data:`SECONDS`) and must
end with exit status 2 and exactly one error line on stderr (its last) naming the file and the reason, before it
reads anything (vdla_hw.files.open_checked).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.fuzz.harness import one_refusal

ROOT = Path(__file__).resolve().parents[2]
VDLA = ROOT / ".venv" / "bin" / "vdla"
MEMORY = 2 << 30  # address space: the CLI's imports alone map about 1.3 GB; /dev/zero read whole took 5.3 GB
SECONDS = 5.0
STARTUP = 25.0  # the CLI's own start (imports) on a loaded test machine, on top of SECONDS


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def vdla(*argv, cwd=None, cache: Path | None = None) -> tuple[int, str, float]:
    """(exit status, stderr, seconds) of ``vdla argv`` in a child of at most MEMORY bytes; a
    child still running after the limit fails the test (killed, not left behind)."""
    import time

    env = {**os.environ, "VDLA_CACHE": "off"} if cache is None else {**os.environ, "VDLA_CACHE_DIR": str(cache)}
    env.pop("VDLA_CACHE", None) if cache is not None else None
    cmd = [str(VDLA)] if VDLA.exists() else [sys.executable, "-m", "vdla"]
    start = time.monotonic()
    try:
        done = subprocess.run([*cmd, *map(str, argv)], capture_output=True, text=True, cwd=cwd, env=env,
                              timeout=SECONDS + STARTUP, preexec_fn=_limited, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"vdla {' '.join(map(str, argv))} did not end within {SECONDS + STARTUP} s")
    return done.returncode, done.stderr, time.monotonic() - start


def startup() -> float:
    """Seconds the CLI takes to start and refuse a missing file (subtracted from the timings):
    the slower of a missing bundle and a missing model (``vdla run`` imports the compiler)."""
    times = []
    for argv in (("sim", "/nonexistent/bundle.npz"), ("run", "/nonexistent/m.onnx")):
        code, err, seconds = vdla(*argv)
        assert code == 2, err
        times.append(seconds)
    return max(times)


@pytest.fixture(scope="module")
def base_seconds():
    return startup()


def refused(base_seconds, *argv, words, cwd=None, cache=None):
    code, err, seconds = vdla(*argv, cwd=cwd, cache=cache)
    return one_refusal(code, err, seconds, base_seconds, words, SECONDS)


def _external_model(folder: Path, location: str, name: str = "m.onnx") -> Path:
    """A 1x3x8x8 Conv whose 4x3x3x3 float weight is stored as external data at ``location``
    (a few hundred bytes; nothing is written at ``location``)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 3, 3, 3],
                         data_location=TensorProto.EXTERNAL)
    weight.external_data.add(key="location", value=location)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="c")
    graph = helper.make_graph([node], "g", [x], [y], [weight])
    path = folder / name
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    assert path.stat().st_size < 400
    return path


@pytest.mark.parametrize("cache", ["on", "off"])
def test_external_data_on_dev_zero_is_refused_in_bounded_memory(base_seconds, tmp_path, cache):
    model = _external_model(tmp_path, "/dev/zero")
    refused(base_seconds, "run", model, words=["m.onnx", "/dev/zero", "outside the model's folder"],
            cache=tmp_path / "cache" if cache == "on" else None)


@pytest.mark.parametrize("cache", ["on", "off"])
def test_external_data_on_a_fifo_is_refused_not_waited_for(base_seconds, tmp_path, cache):
    os.mkfifo(tmp_path / "w.data")
    model = _external_model(tmp_path, "w.data")
    refused(base_seconds, "run", model, words=["m.onnx", "w.data", "not a regular file"],
            cache=tmp_path / "cache" if cache == "on" else None)


@pytest.mark.parametrize("form", ["relative", "absolute", "link"])
def test_external_data_outside_the_folder_is_refused_before_it_is_opened(base_seconds, tmp_path, form):
    """``../../outside``, its absolute path, or a link in the folder leading to it: refused by
    where it is, before it is opened. The file outside is a FIFO, so opening or reading it (as
    ``/etc/passwd`` or ``/proc/self/environ`` were, read whole and hashed before being refused)
    would hang the run."""
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    os.mkfifo(tmp_path / "outside")
    location = {"relative": "../../outside", "absolute": str(tmp_path / "outside"), "link": "w.data"}[form]
    if form == "link":
        (folder / "w.data").symlink_to(tmp_path / "outside")
    model = _external_model(folder, location)
    refused(base_seconds, "run", model, words=["m.onnx", location, "outside the model's folder"])


@pytest.mark.parametrize("location", ["/etc/passwd", "../../../../../../../../etc/passwd", "/proc/self/environ"])
def test_system_files_as_external_data_are_refused_unopened(base_seconds, tmp_path, monkeypatch, location):
    """Refused with one line by the CLI, and never opened while the cache key is computed
    (``model_source`` once read them whole and hashed them before onnx_read refused them)."""
    import io

    from vdla.network import model_source

    model = _external_model(tmp_path, location)
    refused(base_seconds, "run", model, words=["m.onnx", location, "outside the model's folder"])
    opened = []
    real_io_open, real_os_open = io.open, os.open
    monkeypatch.setattr(io, "open", lambda file, *a, **k: opened.append(str(file)) or real_io_open(file, *a, **k))
    monkeypatch.setattr(os, "open", lambda file, *a, **k: opened.append(str(file)) or real_os_open(file, *a, **k))
    assert model_source(str(model)) is None
    assert not [name for name in opened if "passwd" in name or "environ" in name], opened


def test_a_fifo_as_the_model_is_refused(base_seconds, tmp_path):
    os.mkfifo(tmp_path / "m.onnx")
    refused(base_seconds, "run", tmp_path / "m.onnx", words=["m.onnx", "FIFO"])


@pytest.mark.parametrize("command", ["sim", "exec", "disasm"])
def test_a_fifo_as_a_bundle_is_refused(base_seconds, tmp_path, command):
    os.mkfifo(tmp_path / "p.npz")
    refused(base_seconds, command, tmp_path / "p.npz", words=["p.npz", "FIFO"])


@pytest.mark.parametrize("option", ["--input", "--weight", "--bias"])
def test_a_fifo_as_a_compile_tensor_is_refused(base_seconds, tmp_path, option):
    tensors = {"--input": np.zeros((1, 16, 8, 8), np.int8), "--weight": np.zeros((16, 16, 3, 3), np.int8),
               "--bias": np.zeros(16, np.int32)}
    argv = []
    for name, array in tensors.items():
        path = tmp_path / f"{name[2:]}.npy"
        os.mkfifo(path) if name == option else np.save(path, array)
        argv += [name, path]
    refused(base_seconds, "compile", "conv2d", "--h", 8, "--w", 8, "--ic", 16, "--oc", 16, "--k", 3, "--stride", 1,
            "--pad", 1, "--shift", 8, *argv, "-o", tmp_path / "l.npz", words=[f"{option[2:]}.npy", "FIFO"])


@pytest.mark.parametrize("option", ["--images", "--calibration"])
def test_a_fifo_as_an_image_is_refused(base_seconds, tmp_path, option):
    weight = np.zeros((4, 3, 3, 3), np.float32).tobytes()
    (tmp_path / "w.data").write_bytes(weight)
    model = _external_model(tmp_path, "w.data")
    os.mkfifo(tmp_path / "x.png")
    refused(base_seconds, "run", model, option, tmp_path / "x.png", words=["x.png", "FIFO"])


def test_the_models_own_external_data_still_loads(tmp_path):
    """The checks refuse nothing legitimate: a model with its data beside it is read (and keyed)."""
    from vdla.network import model_source

    (tmp_path / "w.data").write_bytes(np.ones((4, 3, 3, 3), np.float32).tobytes())
    model = _external_model(tmp_path, "w.data")
    source = model_source(str(model))
    assert source[0] == "onnx" and source[2][0][0] == "w.data"
    assert onnx.load(str(model), load_external_data=False).graph.initializer[0].name == "w"

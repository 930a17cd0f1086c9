"""The whole path host -> board without a board: the host environment (.venv, numpy 2) builds
the ResNet-18 package and computes `vdla run`'s output_sha256; here (numpy 1.x, pynq 3.0.1)
`vdla serve --backend pynq` on the simulated PYNQ device runs it with the lead's executor,
unchanged, and returns the same output."""

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from driver import auth
from driver.protocol import request
from vdla.deploy import serve
from vdla_hw.config import load_config

ROOT = Path(__file__).resolve().parents[2]
HOST_PYTHON = Path(os.environ.get("VDLA_HOST_PYTHON", ROOT / ".venv" / "bin" / "python"))

HOST_SIDE = """
import json, sys
from pathlib import Path
from vdla.deploy import build_package
from vdla.network import prepare, run_network
out = Path(sys.argv[1])
files = build_package(prepare("resnet18", resolution=32), model="resnet18", progress=lambda m: None)
for name, data in files.items():
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)
(out / "expected.json").write_text(json.dumps({"sha": run_network("resnet18", resolution=32).output_sha256,
                                               "files": sorted(files)}))
"""


@pytest.mark.skipif(not HOST_PYTHON.exists(), reason="needs the host environment .venv (scripts/setup.sh)")
def test_package_from_the_host_runs_on_the_pynq_backend(tmp_path):
    from tests.board import pynq_sim
    from tests.board.test_pynq import write_bitstream

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    subprocess.run([str(HOST_PYTHON), "-c", HOST_SIDE, str(pkg)], cwd=ROOT, check=True, timeout=600)
    expected = json.loads((pkg / "expected.json").read_text())
    files = {name: (pkg / name).read_bytes() for name in expected["files"]}

    pynq_sim.register()
    bit = write_bitstream(tmp_path / "bit", load_config("osdi18"))
    stop, ready, box = threading.Event(), threading.Event(), {}
    key, _ = auth.server_key(tmp_path / "keys" / "serve.key")  # created on first start, as `vdla serve` does

    def on_ready(server):
        box["address"] = server.address
        ready.set()

    thread = threading.Thread(target=serve, args=("pynq", None, "127.0.0.1", 0), daemon=True,
                              kwargs={"key": key, "stop": stop, "ready": on_ready, "log": lambda m: None,
                                      "device_options": {"bitstream": bit}})
    thread.start()
    try:
        assert ready.wait(60)
        address = f"127.0.0.1:{box['address'][1]}"
        info, _, _ = request(address, {"op": "ping"}, key=key)
        assert info["backend"] == "pynq" and info["pynq"] == "3.0.1" and info["numpy"].startswith("1.")
        with pytest.raises(auth.AuthError):  # another key is refused on the board too
            request(address, {"op": "run"}, files, key=bytes(32), timeout_s=60)
        result, blobs, _ = request(address, {"op": "run"}, files, key=key, timeout_s=600)
        again, _, _ = request(address, {"op": "run"}, files, key=key, timeout_s=600)  # the model stays loaded
    finally:
        stop.set()
        thread.join(10)
    assert result["output_sha256"] == again["output_sha256"] == expected["sha"]
    assert result["bytes_moved"]["load"]["weights"] > 0
    assert all(v == 0 for v in again["bytes_moved"]["load"].values())
    assert all(again["bytes_moved"]["per_inference"][k] == 0 for k in ("weights", "uops", "insns"))
    assert result["backend"] == "pynq" and "output.npy" in blobs
    layers = json.loads(blobs["layers.json"])  # the per-layer answer is a blob (protocol 3)
    assert all(r["cycles"] > 0 for r in layers if r["placement"] == "vdla")
    assert sys.version_info[:2] >= (3, 10)


@pytest.mark.skipif(not HOST_PYTHON.exists(), reason="needs the host environment .venv (scripts/setup.sh)")
def test_the_readme_stand_in_bitstream_serves_the_simulated_device(tmp_path):
    """The README's recipe, as written: `vdla hw bitstream` and `tests.board.fake_bitstream` in the
    host environment (the repository's root on the path), then the pynq backend here runs a program
    on that stand-in like the simulator."""
    import numpy as np

    from driver import open_device
    from tests.board import pynq_sim
    from tests.hw import programs
    from vdla_sim import simulate

    host_bin = HOST_PYTHON.parent
    env = {**os.environ, "PATH": f"{host_bin}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONPATH": str(ROOT)}
    subprocess.run(["vdla", "hw", "bitstream", "--config", "tiny", "-o", "simbit"], cwd=tmp_path, env=env,
                   check=True, capture_output=True, timeout=600)
    subprocess.run(["python", "-m", "tests.board.fake_bitstream", "simbit/vdla.bit", "tiny"], cwd=tmp_path,
                   env=env, check=True, timeout=120)
    pynq_sim.register()
    bundle, _, _ = programs.blocked_matmul("tiny")
    with open_device("pynq", "tiny", bitstream=tmp_path / "simbit" / "vdla.bit") as device:
        result = device.run(bundle)
    expected = simulate(bundle)
    assert np.array_equal(result.dram, expected.dram) and result.cycles == expected.cycles
    assert serve_simulated(tmp_path / "simbit" / "vdla.bit", tmp_path / "serve.key")["backend"] == "pynq"


def serve_simulated(bitstream, key_file):
    """The ping answer of the README's `python -m tests.board.serve_simulated` (vdla serve on the
    simulated device, any free port), run from the repository's root until it answers."""
    server = subprocess.Popen([sys.executable, "-m", "tests.board.serve_simulated", "--config", "tiny",
                               "--bitstream", str(bitstream), "--port", "0", "--key-file", str(key_file)],
                              cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        line = next(line for line in server.stderr if line.startswith("vdla serve: pynq device"))
        address = re.search(r" on (\S+:\d+),", line).group(1)
        return request(address, {"op": "ping"}, key=auth.load_key(key_file))[0]
    finally:
        server.terminate()
        server.wait(30)

"""The whole path host -> board without a board: the host environment (.venv, numpy 2) builds
the ResNet-18 package and computes `vdla run`'s output_sha256; here (numpy 1.x, pynq 3.0.1)
`vdla serve --backend pynq` on the simulated PYNQ device runs it with the lead's executor,
unchanged, and returns the same output."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from driver.protocol import request
from vdla import cmd_deploy
from vdla_hw.config import load_config

ROOT = Path(__file__).resolve().parents[2]
HOST_PYTHON = Path(os.environ.get("VDLA_HOST_PYTHON", ROOT / ".venv" / "bin" / "python"))

HOST_SIDE = """
import json, sys
from pathlib import Path
from vdla import cmd_deploy
from vdla.network import run_network
out = Path(sys.argv[1])
q, x, placements, config = cmd_deploy.prepare("resnet18", resolution=32, progress=lambda m: None)
files = cmd_deploy.build_package(q, x, placements, config, model="resnet18", progress=lambda m: None)
for name, data in files.items():
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)
(out / "expected.json").write_text(json.dumps({"sha": run_network("resnet18", resolution=32).output_sha256,
                                               "files": sorted(files)}))
"""


@pytest.mark.skipif(not HOST_PYTHON.exists(), reason="needs the host environment .venv (scripts/setup.sh)")
def test_package_from_the_host_runs_on_the_pynq_backend(tmp_path):
    from driver import pynq_sim
    from tests.board.test_pynq import write_bitstream

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    subprocess.run([str(HOST_PYTHON), "-c", HOST_SIDE, str(pkg)], cwd=ROOT, check=True, timeout=600)
    expected = json.loads((pkg / "expected.json").read_text())
    files = {name: (pkg / name).read_bytes() for name in expected["files"]}

    pynq_sim.register()
    bit = write_bitstream(tmp_path / "bit", load_config("osdi18"))
    stop, ready, box = threading.Event(), threading.Event(), {}

    def on_ready(server):
        box["address"] = server.address
        ready.set()

    thread = threading.Thread(target=cmd_deploy.serve, args=("pynq", None, "127.0.0.1", 0), daemon=True,
                              kwargs={"stop": stop, "ready": on_ready, "log": lambda m: None,
                                      "device_options": {"bitstream": bit}})
    thread.start()
    try:
        assert ready.wait(60)
        address = f"127.0.0.1:{box['address'][1]}"
        info, _, _ = request(address, {"op": "ping"})
        assert info["backend"] == "pynq" and info["pynq"] == "3.0.1" and info["numpy"].startswith("1.")
        result, blobs, _ = request(address, {"op": "run"}, files, timeout_s=600)
    finally:
        stop.set()
        thread.join(10)
    assert result["output_sha256"] == expected["sha"]
    assert result["backend"] == "pynq" and "output.npy" in blobs
    assert all(r["cycles"] > 0 for r in result["layers"] if r["placement"] == "vdla")
    assert sys.version_info[:2] >= (3, 10)

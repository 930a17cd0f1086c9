"""`vdla serve` + `vdla deploy` over loopback: the deployed network gives `vdla run`'s output,
bad requests get one clear error each, and the server keeps serving after every one of them."""

import contextlib
import io
import json
import os
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from compiler.network import package as netfiles
from driver import DeviceError
from driver.package import seal
from driver.protocol import request
from tests.driver.device_cases import deadlocking_bundle
from tests.driver.serving import KEY, greet, ping, serving, signed_head
from vdla.cli import main
from vdla.deploy import build_package
from vdla.network import prepare
from vdla_hw import isa
from vdla_hw.bundle import Bundle

ROOT = Path(__file__).resolve().parents[2]
RESOLUTION = 32


@pytest.fixture(scope="module")
def server():
    with serving() as s:
        yield s


@pytest.fixture(scope="module")
def package():
    return build_package(prepare("resnet18", resolution=RESOLUTION), model="resnet18", progress=lambda m: None)


def _still_serving(address):
    result = ping(address)
    assert result["backend"] == "sim" and result["fingerprint"]


def _reseal(files):
    """Recompute the manifest's hashes after changing files (a well-formed but altered package)."""
    manifest = json.loads(files["manifest.json"])
    fields = {k: v for k, v in manifest.items() if k not in ("format", "version", "files")}
    return seal({n: d for n, d in files.items() if n != "manifest.json"}, **fields)


def test_package_lists_every_file_with_its_hash(package):
    manifest = json.loads(package["manifest.json"])
    assert set(manifest["files"]) == set(package) - {"manifest.json"}
    assert "cpu/libvdla_cpu.so" in package and package["cpu/libvdla_cpu.so"][:4] == b"\x7fELF"
    on_vdla = {k for k, v in json.loads(package["placements.json"]).items() if v["target"] == "vdla"}
    assert {n for n in package if n.startswith("bundles/")} == {f"bundles/{k}.npz" for k in on_vdla}
    assert len(on_vdla) == 19  # ResNet-18's convs but the 3-channel stem
    q = netfiles.graph_from_files(package)
    assert q.nodes[0].op == "quantize" and isinstance(q.node("conv1").attrs["stride"], tuple)


def test_the_board_rebuilds_the_arm_library_specs(package):
    """On an ARMv7 server the CPU ops come from the packaged library: its manifest must give back
    exactly the specs (and so the symbols) of the graph's CPU ops."""
    from compiler.network.partition import Placement

    q = netfiles.graph_from_files(package)
    placements = {k: Placement(**v) for k, v in json.loads(package["placements.json"]).items()}
    rebuilt = netfiles.library_specs(package["cpu/libvdla_cpu.json"])
    assert sorted(s.symbol for s in rebuilt) == sorted(s.symbol for s in netfiles.cpu_specs(q, placements))
    assert set(rebuilt) == set(netfiles.cpu_specs(q, placements))
    with pytest.raises(netfiles.NetworkFilesError, match="libvdla_cpu.json does not describe"):
        netfiles.library_specs(b"{}")


def test_cli_deploy_over_loopback_matches_vdla_run(tmp_path):
    """The acceptance check: `vdla serve --backend sim` (a separate process, creating its key
    file) + `vdla deploy resnet18 --key-file` gives the output_sha256 of the local `vdla run`."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    key_file = tmp_path / "keys" / "serve.key"
    proc = subprocess.Popen([sys.executable, "-m", "vdla", "serve", "--backend", "sim", "--port", "0",
                             "--key-file", str(key_file)], cwd=ROOT, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = [proc.stderr.readline() for _ in range(4)]
        assert "created the key file" in lines[0] and "--key-file" in lines[1], lines
        port = re.search(r"on 127\.0\.0\.1:(\d+), key id", lines[3])
        assert port, lines
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["deploy", "resnet18", "--board", f"127.0.0.1:{port.group(1)}", "--key-file", str(key_file),
                         "--resolution", str(RESOLUTION), "--json"]) == 0
        deployed = json.loads(out.getvalue(), parse_constant=_not_json)  # strict JSON: no Infinity, no NaN
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(["run", "resnet18", "--resolution", str(RESOLUTION), "--json"]) == 0
        local = json.loads(out.getvalue())
    finally:
        proc.terminate()
        proc.wait(10)
    assert deployed["output_sha256"] == local["output_sha256"]
    assert deployed["bit_exact"] is True and deployed["backend"] == "sim"
    totals = deployed["totals"]  # measured on the server, not "0.0" modelled times and an infinite bound
    assert totals["wall_s"] >= totals["cpu_ops_wall_s"] > 0 and totals["vdla_ops_wall_s"] > 0
    assert totals["accelerator_cycles"] == sum(r["cycles"] for r in deployed["layers"])
    assert totals["amdahl_bound"] is None and totals["speedup"] is None and totals["cpu_only_s"] is None
    vdla_layers = [r for r in deployed["layers"] if r["placement"] == "vdla"]
    assert vdla_layers and all(r["cycles"] > 0 and r["wall_seconds"] > 0 for r in vdla_layers)
    assert [r["cycles"] for r in deployed["layers"]] == [r["cycles"] for r in local["layers"]]
    # the server's loaded model moved what the local run's did: the same bundles, the same crossings
    assert totals["bytes_moved"] == local["totals"]["bytes_moved"]


def test_the_servers_bytes_moved_keep_only_known_integer_counts():
    from vdla.deploy import _moved

    answer = {"load": {"weights": 5, "uops": "7", "evil": 1, "insns": True}, "per_inference": [], "x": {}}
    assert _moved(answer) == {"load": {"weights": 5}}
    assert _moved("nothing") is None


def _not_json(constant):
    raise AssertionError(f"not JSON: {constant}")


def test_package_for_another_configuration(package):
    with serving("tiny") as (server, address):
        with pytest.raises(DeviceError, match="compiled for configuration 1x16_.* this server's device is 1x4_"):
            request(address, {"op": "run"}, package, key=KEY)
        _still_serving(address)


def test_corrupt_package(server, package):
    _, address = server
    broken = dict(package)
    name = next(n for n in package if n.startswith("bundles/"))
    data = bytearray(broken[name])
    data[len(data) // 2] ^= 0xFF
    broken[name] = bytes(data)
    with pytest.raises(DeviceError, match=f"{name}: size or SHA-256 differs from the manifest; the package is corrupt"):
        request(address, {"op": "run"}, broken, key=KEY)
    resealed = _reseal({**package, "graph.json": b"{not json"})
    with pytest.raises(DeviceError, match="graph.json/arrays.npz do not describe a quantized graph"):
        request(address, {"op": "run"}, resealed, key=KEY)
    with pytest.raises(DeviceError, match="no manifest.json"):
        request(address, {"op": "run"}, {"x": b"1"}, key=KEY)
    _still_serving(address)


def test_device_timeout_inside_a_network(server, package):
    """One layer's bundle replaced by a program that waits for a token forever: the request
    fails naming the device's state; the next request is served."""
    _, address = server
    name = next(n for n in package if n.startswith("bundles/"))
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"vdla-test-{os.getpid()}.npz"
    path.write_bytes(package[name])
    bundle = Bundle.load(path)
    stuck = deadlocking_bundle("osdi18")
    stream = np.frombuffer(isa.encode_program(stuck.insns(), bundle.config), dtype=np.uint8)
    bundle.dram[bundle.insn_offset:bundle.insn_offset + stream.size] = stream
    bundle.insn_count = stuck.insn_count
    bundle.save(path)
    altered = _reseal({**package, name: path.read_bytes()})
    path.unlink()
    with pytest.raises(DeviceError, match="sim device timed out after a deadlock .*compute: 1 insns retired"):
        request(address, {"op": "run"}, altered, key=KEY)
    _still_serving(address)


def test_connection_dropped_mid_transfer(server):
    srv, address = server
    errors = srv.stats["errors"]
    header = {"op": "run", "nonce": "00" * 16, "blobs": [{"name": "manifest.json", "size": 5000, "sha256": "0" * 64}]}
    with socket.create_connection(("127.0.0.1", srv.address[1]), timeout=10) as sock:
        sock.sendall(signed_head(header, greet(sock)) + b"{" * 100)
    deadline = time.monotonic() + 10
    while srv.stats["errors"] == errors and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any("connection closed after 100 of 5000 bytes of blob 'manifest.json'" in m for m in srv.logs)
    _still_serving(address)


def test_unknown_op_and_unreachable_board(server):
    _, address = server
    with pytest.raises(DeviceError, match="unknown op 'format'"):
        request(address, {"op": "format"}, key=KEY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(DeviceError, match="cannot connect .* is `vdla serve` running"):
        request(f"127.0.0.1:{free}", {"op": "ping"}, key=KEY, timeout_s=5)


def test_the_112_byte_loop_inside_a_package_is_refused(server, package):
    """Issue 11: the 16383 x 16383 GEMM loop sent inside a package made the server try a 6 GiB
    allocation. Now the device refuses the instruction before it runs, and the server goes on."""
    _, address = server
    name = next(n for n in package if n.startswith("bundles/"))
    bundle = Bundle.from_bytes(package[name], name)
    uops = isa.encode_uops([(0, 0, 0), (1, 0, 0), (2, 0, 0)], bundle.config).view(np.uint8)
    bundle.dram[:uops.size] = uops  # the uop table at element 0 of the image
    loop = [isa.Insn("LOAD", memory_type=0, y_size=1, x_size=3, x_stride=3),
            isa.Insn("GEMM", uop_end=3, iter_out=16383, iter_in=16383), isa.Insn("FINISH")]
    stream = np.frombuffer(isa.encode_program(loop, bundle.config), dtype=np.uint8)
    bundle.dram[bundle.insn_offset:bundle.insn_offset + stream.size] = stream
    bundle.insn_count = len(loop)
    altered = _reseal({**package, name: bundle.to_bytes()})
    with pytest.raises(DeviceError, match=r"refused the program before running it: instruction 1 \(GEMM\) brings"):
        request(address, {"op": "run"}, altered, key=KEY, timeout_s=120)
    _still_serving(address)


# --- deploy checks the board first; the answer's form -----------------------------------------
def chain_model(path: Path, n: int) -> str:
    """An ONNX network of ``n`` ReLUs in a row (each one op on the CPU)."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2, 2])
    names = ["x"] + [f"r{k}" for k in range(n - 1)] + ["y"]
    nodes = [helper.make_node("Relu", [names[k]], [names[k + 1]], name=f"relu{k}") for k in range(n)]
    model = helper.make_model(helper.make_graph(nodes, "chain", [x], [y], []),
                              opset_imports=[helper.make_opsetid("", 17)])
    path.write_bytes(model.SerializeToString())
    return str(path)


def test_the_per_layer_answer_travels_as_a_blob(tmp_path):
    """Issue 22: the per-layer answer was in the response header, so a network of more than
    ~3,500 ops ran but its answer could not be sent. Now it is the blob layers.json, which may
    be larger than any header."""
    from driver.protocol import MAX_HEADER
    from vdla.deploy import deploy

    model = chain_model(tmp_path / "chain.onnx", 400)
    with serving("tiny") as (_, address):
        report = deploy(model, address, key=KEY, config="tiny", arm_library=False, progress=lambda m: None)
        _, blobs, _ = request(address, {"op": "run"}, build_package(prepare(model, config="tiny"), model="chain",
                                                                   arm_library=False, progress=lambda m: None),
                              key=KEY, timeout_s=120)
    assert len(blobs[netfiles.LAYERS]) > MAX_HEADER
    assert len(report["layers"]) == 401 and report["bit_exact"] is True  # the quantize op and the 400 ReLUs
    assert report["totals"]["wall_s"] > 0 and report["totals"]["amdahl_bound"] is None


def test_a_network_past_the_run_deadline_is_stopped_between_ops(tmp_path):
    from driver.server import ServerLimits

    model = chain_model(tmp_path / "chain.onnx", 400)
    files = build_package(prepare(model, config="tiny"), model="chain", arm_library=False, progress=lambda m: None)
    with serving("tiny", limits=ServerLimits(run_timeout_s=0.05)) as (server, address):
        with pytest.raises(DeviceError, match=r"run stopped before op \d+ of 401 \(.*\): it passed the server's run "
                                              r"deadline of 0\.05 s \(vdla serve --run-timeout\)"):
            request(address, {"op": "run"}, files, key=KEY, timeout_s=120)
        _still_serving(address)


def _no_compiling(monkeypatch):
    import vdla.network

    def compiled(*args, **kwargs):
        raise AssertionError("deploy compiled before it checked the board")

    monkeypatch.setattr(vdla.network, "prepare", compiled)


def test_deploy_checks_the_board_before_compiling(server, monkeypatch, tmp_path):
    """Issue 22: a wrong key, a closed port or another configuration were found only after
    23-65 s of compiling. Now deploy pings the board first."""
    from driver import auth
    from vdla.deploy import deploy

    _no_compiling(monkeypatch)
    _, address = server
    with pytest.raises(auth.AuthError, match="holds another key"):
        deploy("resnet18", address, key=bytes(32), resolution=RESOLUTION)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(DeviceError, match="cannot connect"):
        deploy("resnet18", f"127.0.0.1:{free}", key=KEY, resolution=RESOLUTION)
    with pytest.raises(DeviceError, match=r"serves a device of configuration osdi18 \(1x16_.*\), this deploy compiles "
                                          r"for tiny \(1x4_.*\); deploy with --config osdi18"):
        deploy("resnet18", address, key=KEY, config="tiny", resolution=RESOLUTION)
    key_file = tmp_path / "k" / "serve.key"
    key_file.parent.mkdir(mode=0o700)
    key_file.write_text(bytes(32).hex() + "\n")
    key_file.chmod(0o600)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["deploy", "resnet18", "--board", address, "--key-file", str(key_file)]) == 2
    assert "holds another key" in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1

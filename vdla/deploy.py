"""Deployment as an API: ``deploy()`` (host) packs a network and runs it on a ``vdla serve``
board; ``serve()`` (board) answers authenticated ``ping``, ``status`` and ``run`` requests.

The host does what ``vdla run`` does up to the partition (:func:`vdla.network.prepare`: same
model, quantization, calibration and test input), turns it into files
(``compiler.network.package``), seals them with a manifest (``driver.package``) and sends them
over the authenticated protocol (``driver.protocol``) with the shared key (``driver.auth``).
The server (``driver.server``) checks the package against its device and runs it with the
executor; the answer's ``output_sha256`` is ``vdla run``'s for the same model and options.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from vdla_hw.config import ISA_VERSION


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_package(prepared, *, model: str, vthreads=None, arm_library: bool = True, progress=_say) -> dict[str, bytes]:
    """The sealed package of a prepared network (:func:`vdla.network.prepare`)."""
    from compiler.network.package import network_files
    from compiler.vta_compat import network_shift_warning
    from driver.package import seal

    p = prepared
    warning = network_shift_warning(p.q.nodes, p.placements)  # as vdla run says it (docs/compiler.md)
    if warning:
        print(f"vdla: {warning}", file=sys.stderr)
    files = network_files(p.q, p.test_set.first(1).array, p.placements, p.config, vthreads=vthreads, arm_library=arm_library,
                          progress=progress)
    return seal(files, model=model, config=p.config.to_json(), fingerprint=p.config.fingerprint,
                isa_version=ISA_VERSION)


def check_board(board: str, key: bytes, config, timeout_s: float = 30.0) -> dict:
    """Ask ``board`` for a ping before anything is compiled: it is reachable, greets like
    ``vdla serve``, holds ``key`` (its key id, then the ping's MAC), and serves a device of
    ``config`` (a Config). Its ping answer; a one-line DeviceError otherwise."""
    from driver.package import PackageError
    from driver.protocol import parse_address, request
    from vdla_hw.files import printable

    info, _, _ = request(parse_address(board), {"op": "ping"}, key=key, timeout_s=min(timeout_s, 30.0))
    if info.get("fingerprint") != config.fingerprint:
        name = printable(info.get("config"), 80)
        raise PackageError(f"{board} serves a device of configuration {name} ({printable(info.get('fingerprint'), 80)}), "
                           f"this deploy compiles for {config.name} ({config.fingerprint}); deploy with --config "
                           f"{name}, or serve a device of {config.name}")
    return info


def measured_totals(layers: list[dict]) -> dict:
    """What the server measured, summed over its per-op rows: wall time in all, on CPU ops and
    on accelerator ops (and of that, inside the device), the device's own time and cycles at the
    configured clock. The server runs without a CPU model, so the modelled quantities of ``vdla
    run``'s totals (CPU-only time, speedup, Amdahl bound) are null here, not 0 or infinity."""
    def total(key, placement=None):
        return sum((float(r.get(key) or 0) for r in layers if placement is None or r.get("placement") == placement), 0.0)

    return {"wall_s": total("wall_seconds"), "cpu_ops_wall_s": total("wall_seconds", "cpu"),
            "vdla_ops_wall_s": total("wall_seconds", "vdla"), "device_wall_s": total("device_wall_seconds", "vdla"),
            "accelerator_s": total("seconds", "vdla"), "accelerator_cycles": int(total("cycles", "vdla")),
            "offloaded_macs": int(total("macs", "vdla")), "cpu_only_s": None, "speedup": None, "amdahl_bound": None,
            "time_basis": "measured on the server (wall clock); accelerator_s from the device's cycles at the "
                          "configured clock; CPU times not modelled (vdla run models them)"}


def _moved(value) -> dict | None:
    """The server's ``bytes_moved`` (load / per inference, by category), keeping only the known
    keys with integer values (it comes from the other side of a socket)."""
    from driver.session import CATEGORIES

    if not isinstance(value, dict):
        return None
    return {key: {c: int(v) for c, v in value[key].items() if c in CATEGORIES and type(v) is int}
            for key in ("load", "per_inference") if isinstance(value.get(key), dict)}


def _layers(blobs: dict, board: str) -> list[dict]:
    from compiler.network.package import LAYERS
    from driver.package import PackageError
    from vdla_hw.errors import VdlaError
    from vdla_hw.files import json_loads

    try:
        layers = json_loads(blobs.get(LAYERS, b""), f"{board}: {LAYERS}")
    except VdlaError as err:
        raise PackageError(str(err)) from None
    if not isinstance(layers, list) or not all(isinstance(r, dict) for r in layers):
        raise PackageError(f"{board}: {LAYERS} is not a list of per-op records")
    return layers


def deploy(model: str, board: str, *, key: bytes, config=None, resolution: int = 224, options=None, vthreads=None,
           arm_library: bool = True, timeout_s: float = 3600.0, progress=_say) -> dict:
    """Check ``board`` (:func:`check_board`), then compile and package ``model``, run it there
    and return the report (with the output)."""
    from compiler.network import PartitionOptions
    from compiler.network.executor import outputs_sha256
    from compiler.quantize import reference
    from driver.package import PackageError
    from driver.protocol import parse_address, request
    from vdla.network import prepare
    from vdla_hw.config import load_config

    address = parse_address(board)
    config = load_config(config)
    check_board(board, key, config, timeout_s)  # a wrong key, port or configuration: found in a second
    p = prepare(model, config=config, resolution=resolution, options=options or PartitionOptions(),
                progress=progress)
    files = build_package(p, model=model, vthreads=vthreads, arm_library=arm_library, progress=progress)
    size = sum(len(d) for d in files.values())
    progress(f"sending a {size / 1e6:.1f} MB package to {board}")
    result, blobs, stats = request(address, {"op": "run"}, files, key=key, timeout_s=timeout_s)
    outputs = answer_outputs(blobs, len(p.q.outputs), board)
    sha = outputs_sha256(outputs)
    if sha != result.get("output_sha256"):
        raise PackageError(f"{board}: the outputs' SHA-256 differs from the one the server reported")
    layers = _layers(blobs, board)
    x = p.test_set.first(1).array  # only the first test input made (issue 45)
    return {"model": model, "config": p.config.name, "fingerprint": p.config.fingerprint, "board": board,
            "backend": result.get("backend"), "cpu_kernels": result.get("cpu_kernels"), "layers": layers,
            "totals": {**measured_totals(layers), "bytes_moved": _moved(result.get("bytes_moved"))}, "bit_exact": all(np.array_equal(got, want) for got, want in zip(outputs, reference.forward_all(p.q, x))),
            "output_sha256": sha, "package_bytes": size, "transfer": stats, "server_seconds": result.get("seconds"),
            "outputs": outputs}


def run_package(files: dict[str, bytes], device, should_stop=None) -> tuple[dict, dict[str, bytes]]:
    """The server's ``run``: check the package against ``device``, then run its network
    (``should_stop``: asked before every op, see compiler.network.executor) on the device's
    loaded model of this package (kept between runs of the same model, whatever their inputs: the
    key is ``driver.session.model_digest``, which leaves the input out)."""
    from compiler.network.package import run_files
    from driver.package import check
    from driver.session import model_digest

    manifest = check(files, device.config.fingerprint, device.config.name)
    model = device.loaded_model(model_digest(files, manifest)) if hasattr(device, "loaded_model") else None
    reply, out = run_files(files, device, should_stop=should_stop, model=model)
    return {"model": str(manifest.get("model", "?")), "fingerprint": device.config.fingerprint, **reply}, \
        answer_blobs(out)


# The blob of a ``run`` answer holding the outputs of a network of several (key k: output k).
OUTPUTS_BLOB = "outputs.npz"


def answer_blobs(out: dict[str, bytes]) -> dict[str, bytes]:
    """``run_files``' blobs as the server sends them: a network's outputs in one blob whatever
    their number (``output.npy`` for a network of one, else :data:`OUTPUTS_BLOB`), beside
    ``layers.json``. The frame header lists every blob (about 120 bytes each) within 64 KiB
    (``driver.protocol.MAX_HEADER``), so a blob per output left a network of ~550 outputs or more
    run but unanswerable."""
    import io

    from compiler.network.package import LAYERS, npy_array, output_blob

    n = sum(1 for name in out if name != LAYERS)
    if n == 1:
        return out
    buf = io.BytesIO()
    np.savez(buf, **{str(k): npy_array(out[output_blob(k)], output_blob(k)) for k in range(n)})
    return {OUTPUTS_BLOB: buf.getvalue(), LAYERS: out[LAYERS]}


def answer_outputs(blobs: dict[str, bytes], n: int, board: str) -> tuple[np.ndarray, ...]:
    """The ``n`` outputs of a ``run`` answer from ``board`` (:func:`answer_blobs`), read with
    bounded memory and no pickles; a missing or malformed blob is a one-line PackageError."""
    from compiler.network.package import npy_array, output_blob
    from driver.package import PackageError
    from vdla_hw.errors import VdlaError
    from vdla_hw.npyfile import read_npz

    try:
        if n == 1:
            return (npy_array(blobs.get(output_blob(0), b""), f"the server's {output_blob(0)}"),)
        arrays = read_npz(blobs.get(OUTPUTS_BLOB, b""), f"the server's {OUTPUTS_BLOB}")
    except VdlaError as err:
        raise PackageError(f"{board}: {err}") from None
    if sorted(arrays) != sorted(str(k) for k in range(n)):
        raise PackageError(f"{board}: the server's {OUTPUTS_BLOB} holds {len(arrays)} arrays, not the network's "
                           f"{n} outputs")
    return tuple(arrays[str(k)] for k in range(n))


def server_key(path: str | Path | None, log=_say) -> bytes:
    """The server's key from ``path`` (default ``driver.auth.default_key_file()``); created, and
    announced once with what to do with it, on first start."""
    from driver import auth

    path = Path(path) if path else auth.default_key_file()
    key, created = auth.server_key(path)
    if created:
        log(f"vdla serve: created the key file {path} (mode 0600, key id {auth.key_id(key)}).\n"
            f"  Every client needs a copy: copy it to the host (e.g. scp, then chmod 600) and pass it to "
            f"`vdla deploy --key-file`.\n  Whoever holds it can run any code on this machine as this server's "
            "user (docs/board.md, 'Security').")
    return key


def serve(backend: str, config=None, host: str = "127.0.0.1", port: int = 9091, *, key: bytes, stop=None,
          max_requests=None, device_options=None, limits=None, log=_say, ready=None):
    """Open the device and answer ``ping``, ``status`` and ``run`` requests (:mod:`driver.server`)."""
    from driver import auth, open_device
    from driver.server import Server, ServerLimits, host_info

    device = open_device(backend, config, **(device_options or {}))

    def ping(header, blobs):
        return {"backend": backend, "config": device.config.name, "fingerprint": device.config.fingerprint,
                **host_info()}, {}

    def run(header, blobs, control):
        return run_package(blobs, device, should_stop=control.reason)

    try:
        server = Server({"ping": ping, "run": run}, host, port, key=key, limits=limits or ServerLimits(), log=log)
    except BaseException:
        device.close()
        raise
    log(f"vdla serve: {backend} device ({device.config.name}, {device.config.fingerprint}) on "
        f"{server.address[0]}:{server.address[1]}, key id {auth.key_id(key)}, run deadline "
        f"{server.limits.run_timeout_s:g} s")
    if ready is not None:
        ready(server)
    try:
        server.serve(stop, max_requests)
    finally:
        device.close()
    return server

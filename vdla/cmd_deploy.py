"""``vdla serve``, ``vdla deploy`` and ``vdla hw bitstream``: running networks on a board.

``vdla deploy MODEL --board HOST:PORT`` does on the host what ``vdla run`` does up to the
partition (same model, quantization, calibration and test input), compiles every accelerator
op into a bundle, builds the Cortex-A9 library of the CPU ops, packs them with the quantized
graph into a *package* and sends it to ``vdla serve`` (protocol: :mod:`driver.protocol`,
docs/driver.md). The server checks the package, runs the graph with the lead's executor on its
device (each accelerator op: the packaged bundle with its input written into the ``inp`` (conv,
dense) or ``a``/``b`` (ALU add) symbols; CPU ops: the packaged ARM library through ctypes on an
ARMv7 board, the host JIT elsewhere) and answers with the output and per-layer measurements.
The output's SHA-256 is ``vdla run``'s ``output_sha256`` for the same model and options.

Package files (each listed in ``manifest.json`` with its size and SHA-256):
``graph.json`` + ``arrays.npz`` (the quantized graph), ``placements.json``,
``bundles/<node>.npz`` (one per accelerator op), ``input.npy``, ``cpu/libvdla_cpu.so`` +
``cpu/libvdla_cpu.json`` (optional: the ARM library and its kernel specs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import platform
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from vdla.argtypes import float_range, host_port, int_range, output_dir, port
from vdla.cmd_run import resolution_arg
from vdla_hw.errors import VdlaError

PACKAGE_FORMAT = "vdla-package"
PACKAGE_VERSION = 1
ARM_LIBRARY = "cpu/libvdla_cpu.so"


class PackageError(VdlaError):
    """A deployment package is incomplete, corrupt or for another device."""


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the quantized graph as JSON + arrays -------------------------------------------------
def graph_files(q) -> dict[str, bytes]:
    arrays, nodes = {}, []
    for index, node in enumerate(q.nodes):
        attrs = {}
        for key, value in node.attrs.items():
            if isinstance(value, np.ndarray):
                arrays[f"{index}.{key}"] = value
                attrs[key] = {"array": f"{index}.{key}"}
            elif isinstance(value, tuple):
                attrs[key] = {"tuple": [v.item() if isinstance(v, np.generic) else v for v in value]}
            else:
                attrs[key] = value.item() if isinstance(value, np.generic) else value
        nodes.append({"name": node.name, "op": node.op, "inputs": list(node.inputs), "output": node.output,
                      "attrs": attrs})
    graph = {"name": q.name, "input": q.input, "output": q.output, "nodes": nodes,
             "shapes": {k: list(v) for k, v in q.shapes.items()}, "fracs": dict(q.fracs)}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return {"graph.json": json.dumps(graph).encode(), "arrays.npz": buf.getvalue()}


def graph_from_files(files: dict[str, bytes]):
    from compiler.quantize.qgraph import QGraph, QNode

    try:
        graph = json.loads(files["graph.json"])
        with np.load(io.BytesIO(files["arrays.npz"]), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        nodes = []
        for n in graph["nodes"]:
            attrs = {}
            for key, value in n["attrs"].items():
                if isinstance(value, dict) and "array" in value:
                    attrs[key] = arrays[value["array"]]
                elif isinstance(value, dict) and "tuple" in value:
                    attrs[key] = tuple(value["tuple"])
                else:
                    attrs[key] = value
            nodes.append(QNode(n["name"], n["op"], list(n["inputs"]), n["output"], attrs))
        return QGraph(graph["name"], graph["input"], graph["output"], nodes,
                      {k: tuple(v) for k, v in graph["shapes"].items()}, {k: int(v) for k, v in graph["fracs"].items()})
    except (KeyError, ValueError, TypeError, zipfile.BadZipFile, OSError) as err:
        raise PackageError(f"graph.json/arrays.npz do not describe a quantized graph ({err})") from None


# --- building a package (host side) --------------------------------------------------------
def prepare(model: str, *, config=None, resolution: int = 224, options=None, calibration: int = 4,
            test_inputs: int = 4, progress=_say):
    """What ``vdla run`` computes before executing: (quantized graph, input, placements, config)."""
    from compiler.frontend.inputs import synthetic_images
    from compiler.network import PartitionOptions, partition
    from compiler.quantize import quantize_graph
    from vdla.network import CALIBRATION_SEED, TEST_SEED, load_model
    from vdla_hw.config import load_config

    config = load_config(config)
    progress(f"importing {model}")
    graph = load_model(model, resolution)
    _, channels, height, _ = graph.shapes[graph.input]
    progress(f"quantizing on {calibration} calibration inputs")
    q = quantize_graph(graph, synthetic_images(calibration, height, CALIBRATION_SEED, channels))
    x = synthetic_images(test_inputs, height, TEST_SEED, channels)[:1]
    placements = partition(q, config, options or PartitionOptions())
    return q, np.ascontiguousarray(x, dtype=np.float32), placements, config


def _zeros_like_inputs(q, node) -> list[np.ndarray]:
    return [np.zeros(q.shapes[i], dtype=np.float32 if i == q.input else np.int8) for i in node.inputs]


def compile_bundles(q, placements, config, vthreads=None, progress=_say) -> dict[str, bytes]:
    """One bundle per accelerator op, compiled with zero inputs (the server writes the real ones)."""
    from compiler.accel import compile_layer
    from compiler.network.alu_add import compile_add
    from compiler.network.partition import conv_layer, dense_layer

    files = {}
    for node in q.nodes:
        if placements[node.name].target != "vdla":
            continue
        args = _zeros_like_inputs(q, node)
        if node.op == "add":
            a = node.attrs
            bundle = compile_add(args[0], args[1], a_shift=a["a_shift"], b_shift=a["b_shift"], shift=a["shift"],
                                 relu=a["relu"], config=config, name=node.name)
        else:
            shape = q.shapes[node.inputs[0]]
            layer = conv_layer(node, shape) if node.op == "conv" else dense_layer(node, shape)
            bundle = compile_layer(layer, config, vthreads=vthreads, tensors={
                "input": args[0], "weight": node.attrs["weight"], "bias": node.attrs["bias"]})
        with tempfile.TemporaryDirectory(prefix="vdla-pkg-") as tmp:
            bundle.save(Path(tmp) / "b.npz")
            files[f"bundles/{node.name}.npz"] = (Path(tmp) / "b.npz").read_bytes()
        progress(f"compiled {node.name} ({node.op}): {bundle.insn_count} instructions, {bundle.dram.size} bytes")
    return files


def cpu_specs(q, placements) -> list:
    from compiler.network.executor import cpu_kernel

    specs = []
    for node in q.nodes:
        if placements[node.name].target == "cpu":
            kernel = cpu_kernel(node, _zeros_like_inputs(q, node))
            if kernel is not None:
                specs.append(kernel[0])
    return list(dict.fromkeys(specs))


def arm_library_files(q, placements) -> dict[str, bytes]:
    """The Cortex-A9 shared library of every CPU op's kernel, and its manifest."""
    from compiler.cpu_fallback.arm import build_arm_library

    with tempfile.TemporaryDirectory(prefix="vdla-arm-") as tmp:
        lib = build_arm_library(cpu_specs(q, placements), Path(tmp) / "libvdla_cpu.so")
        return {ARM_LIBRARY: lib.read_bytes(), "cpu/libvdla_cpu.json": lib.with_suffix(".json").read_bytes()}


def build_package(q, x, placements, config, *, model: str, vthreads=None, arm_library: bool = True,
                  progress=_say) -> dict[str, bytes]:
    from vdla_hw.config import ISA_VERSION

    files = graph_files(q)
    files["placements.json"] = json.dumps({k: dataclasses.asdict(v) for k, v in placements.items()}).encode()
    files["input.npy"] = _npy(x)
    files.update(compile_bundles(q, placements, config, vthreads, progress))
    if arm_library:
        progress("building the Cortex-A9 library of the CPU ops")
        files.update(arm_library_files(q, placements))
    manifest = {"format": PACKAGE_FORMAT, "version": PACKAGE_VERSION, "model": model, "config": config.to_json(),
                "fingerprint": config.fingerprint, "isa_version": ISA_VERSION,
                "files": {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                          for name, data in files.items()}}
    files["manifest.json"] = json.dumps(manifest, indent=1).encode()
    return files


def _npy(array: np.ndarray) -> bytes:
    from driver.protocol import array_bytes

    return array_bytes(array)


# --- running a package (server side) -------------------------------------------------------
def check_package(files: dict[str, bytes], device_config) -> dict:
    """The manifest, after checking every listed file's size and hash and the configuration."""
    try:
        manifest = json.loads(files["manifest.json"])
        listed = manifest["files"]
    except KeyError:
        raise PackageError("the package has no manifest.json (or it lists no files)") from None
    except ValueError as err:
        raise PackageError(f"manifest.json is not JSON ({err})") from None
    if manifest.get("format") != PACKAGE_FORMAT or manifest.get("version") != PACKAGE_VERSION:
        raise PackageError(f"not a {PACKAGE_FORMAT} v{PACKAGE_VERSION} package (format {manifest.get('format')!r}, "
                           f"version {manifest.get('version')!r}); update vdla on both sides")
    for name, info in listed.items():
        if name not in files:
            raise PackageError(f"the package lacks {name}, which its manifest lists")
        data = files[name]
        if len(data) != info["size"] or hashlib.sha256(data).hexdigest() != info["sha256"]:
            raise PackageError(f"{name}: size or SHA-256 differs from the manifest; the package is corrupt")
    if manifest.get("fingerprint") != device_config.fingerprint:
        raise PackageError(f"the package was compiled for configuration {manifest.get('fingerprint')}, but this "
                           f"server's device is {device_config.fingerprint} ({device_config.name}); deploy with "
                           f"--config {device_config.name} or serve a device of that configuration")
    return manifest


def library_specs(manifest_json: bytes) -> list:
    """The kernel specs an ARM library was built from (its ``libvdla_cpu.json``)."""
    from compiler import cpu_fallback as cf

    families = {cls.family: cls for cls in (cf.AddSpec, cf.Conv2dSpec, cf.DenseSpec, cf.DequantizeSpec,
                                            cf.GlobalAvgPoolSpec, cf.MaxPool2dSpec, cf.PackSpec, cf.QuantizeSpec,
                                            cf.ReluSpec, cf.UnpackSpec)}
    try:
        kernels = json.loads(manifest_json)["kernels"]
        return [families[k["family"]](**k["params"]) for k in kernels.values()]
    except (KeyError, TypeError, ValueError) as err:
        raise PackageError(f"cpu/libvdla_cpu.json does not describe the library's kernels ({err})") from None


def cpu_kernels(files: dict[str, bytes], work: Path):
    """The packaged ARM library's kernels on an ARMv7 board (None elsewhere: host JIT)."""
    if not platform.machine().startswith("armv7") or ARM_LIBRARY not in files:
        return None
    from compiler.cpu_fallback.call import load_library

    lib = work / "libvdla_cpu.so"
    lib.write_bytes(files[ARM_LIBRARY])
    return load_library(lib, library_specs(files["cpu/libvdla_cpu.json"]))


def run_package(files: dict[str, bytes], device, progress=_say) -> tuple[dict, dict[str, bytes]]:
    """Run a package on ``device``: (result for the response, {"output.npy": ...})."""
    from compiler.network.partition import Placement
    from driver.protocol import bytes_array
    from vdla_hw.bundle import Bundle

    manifest = check_package(files, device.config)
    start = time.perf_counter()
    q = graph_from_files(files)
    try:
        placements = {k: Placement(**v) for k, v in json.loads(files["placements.json"]).items()}
    except (KeyError, ValueError, TypeError) as err:
        raise PackageError(f"placements.json is unreadable ({err})") from None
    x = bytes_array(files["input.npy"], "input.npy")
    with tempfile.TemporaryDirectory(prefix="vdla-serve-") as tmp:
        bundles = {}
        for name in (n.name for n in q.nodes if placements.get(n.name) and placements[n.name].target == "vdla"):
            path = Path(tmp) / "b.npz"
            path.write_bytes(files.get(f"bundles/{name}.npz", b""))
            bundles[name] = Bundle.load(path, config=device.config)
        kernels = cpu_kernels(files, Path(tmp))
        loaded = time.perf_counter()
        from compiler.network.executor import Executor

        executor = Executor(q, placements, device, progress=progress, prebuilt=bundles,
                            kernels=None if kernels is None else kernels.__getitem__)
        result = executor.run(x)
    layers = []
    for r in result.records:
        row = r.as_dict()
        row["wall_seconds"] = r.wall_seconds
        row["device_wall_seconds"] = r.extra.get("device_wall", 0.0)
        layers.append(row)
    output = np.ascontiguousarray(result.output)
    reply = {"model": manifest["model"], "fingerprint": device.config.fingerprint, "backend": device.target,
             "cpu_kernels": "arm-library" if kernels is not None else "host-jit", "layers": layers,
             "output_sha256": hashlib.sha256(output.tobytes()).hexdigest(),
             "seconds": {"load": loaded - start, "execute": time.perf_counter() - loaded}}
    return reply, {"output.npy": _npy(output)}


# --- commands ------------------------------------------------------------------------------
def serve(backend: str, config=None, host: str = "127.0.0.1", port: int = 9091, *, stop=None,
          max_requests=None, device_options=None, log=_say, ready=None):
    """Open the device and answer ``ping`` and ``run`` requests (see :mod:`driver.server`)."""
    from driver import open_device
    from driver.server import Server, host_info

    device = open_device(backend, config, **(device_options or {}))

    def ping(header, blobs):
        return {"backend": backend, "config": device.config.name, "fingerprint": device.config.fingerprint,
                **host_info()}, {}

    def run(header, blobs):
        return run_package(blobs, device, progress=lambda message: None)

    server = Server({"ping": ping, "run": run}, host, port, log=log)
    log(f"vdla serve: {backend} device ({device.config.name}, {device.config.fingerprint}) on "
        f"{server.address[0]}:{server.address[1]}")
    if ready is not None:
        ready(server)
    try:
        server.serve(stop, max_requests)
    finally:
        device.close()
    return server


def deploy(model: str, board: str, *, config=None, resolution: int = 224, options=None, vthreads=None,
           arm_library: bool = True, timeout_s: float = 3600.0, progress=_say) -> dict:
    """Compile and package ``model``, run it on ``board`` and return the report (with the output)."""
    from compiler.network.executor import LayerRecord
    from compiler.network.report import summarise
    from compiler.quantize import reference
    from driver.protocol import bytes_array, request

    q, x, placements, config = prepare(model, config=config, resolution=resolution, options=options,
                                       progress=progress)
    files = build_package(q, x, placements, config, model=model, vthreads=vthreads, arm_library=arm_library,
                          progress=progress)
    size = sum(len(d) for d in files.values())
    progress(f"sending a {size / 1e6:.1f} MB package to {board}")
    result, blobs, stats = request(board, {"op": "run"}, files, timeout_s=timeout_s)
    output = bytes_array(blobs.get("output.npy", b""), "the server's output.npy")
    sha = hashlib.sha256(np.ascontiguousarray(output).tobytes()).hexdigest()
    if sha != result.get("output_sha256"):
        raise PackageError(f"{board}: the output's SHA-256 differs from the one the server reported")
    fields = {f.name for f in dataclasses.fields(LayerRecord)}
    records = [LayerRecord(**{k: v for k, v in row.items() if k in fields}) for row in result["layers"]]
    return {"model": model, "config": config.name, "fingerprint": config.fingerprint, "board": board,
            "backend": result["backend"], "cpu_kernels": result["cpu_kernels"], "layers": result["layers"],
            "totals": summarise(records), "bit_exact": bool(np.array_equal(output, reference.forward(q, x))),
            "output_sha256": sha, "package_bytes": size, "transfer": stats, "server_seconds": result["seconds"],
            "output": output}


def cmd_serve(args) -> int:
    if args.bitstream and args.backend != "pynq":
        raise VdlaError(f"--bitstream is for --backend pynq; the {args.backend} backend has no bitstream")
    options = {"bitstream": args.bitstream} if args.bitstream else {}
    if args.backend == "pynq":
        import os

        if os.environ.get("VDLA_PYNQ_SIM") == "1":  # the simulated PYNQ device (driver/pynq_sim.py)
            from driver import pynq_sim

            pynq_sim.register()
    try:
        serve(args.backend, args.config, args.host, args.port, device_options=options)
    except KeyboardInterrupt:
        _say("vdla serve: stopped")
    return 0


def cmd_deploy(args) -> int:
    from compiler.network import PartitionOptions

    options = PartitionOptions(stem_on_vdla=args.stem_on_vdla, add_on_vdla=args.add_on_vdla,
                               fc_on_vdla=args.fc_on_vdla)
    report = deploy(args.model, args.board, config=args.config, resolution=args.resolution, options=options,
                    vthreads=args.vthreads, arm_library=not args.no_arm_library, timeout_s=args.timeout)
    report.pop("output")
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['model']} on {report['board']} ({report['backend']}, {report['fingerprint']}, CPU ops: "
          f"{report['cpu_kernels']})")
    print(f"{'layer':<26} {'op':<8} {'on':<4} {'cycles':>11} {'model ms':>9} {'measured ms':>11}")
    for row in report["layers"]:
        print(f"{row['name']:<26} {row['op']:<8} {row['placement']:<4} {row['cycles']:>11,d} "
              f"{row['seconds'] * 1e3:>9.3f} {row['wall_seconds'] * 1e3:>11.2f}")
    t = report["transfer"]
    print(f"package {report['package_bytes'] / 1e6:.1f} MB, sent in {t['send_seconds']:.2f} s, answer after "
          f"{t['total_seconds']:.1f} s")
    print(f"bit exact vs the quantized numpy reference: {report['bit_exact']}   output sha256 {report['output_sha256']}")
    return 0


def cmd_bitstream(args) -> int:
    from bitstreams.pynq_z1 import missing_for_build, write_project

    command = write_project(args.config, args.output)
    for problem in missing_for_build(args.output):
        _say(f"vdla: warning: {problem}")
    _say(f"wrote the PYNQ-Z1 Vivado project to {args.output}; build it with:")
    print(command)
    return 0


def _add_bitstream(sub) -> None:
    p = sub.add_parser("bitstream", help="write the PYNQ-Z1 Vivado project (block design, .bit/.hwh, manifest)")
    p.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    p.add_argument("-o", "--output", type=output_dir, required=True, metavar="DIR", help="project folder to write")
    p.set_defaults(func=cmd_bitstream)


def _hw_group(sub):
    """The ``vdla hw`` group's subparsers (added by vdla.cmd_hw), or None."""
    import argparse

    hw = sub.choices.get("hw")
    if hw is None:
        return None
    return next((a for a in hw._actions if isinstance(a, argparse._SubParsersAction)), None)


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="run packaged networks for `vdla deploy` (on the board or anywhere)")
    s.add_argument("--backend", choices=["sim", "rtl", "pynq"], default="sim", help="device backend")
    s.add_argument("--config", default=None, help="device configuration: preset or JSON file (default osdi18)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 on the board)")
    s.add_argument("--port", type=port, default=9091, help="TCP port (0: any free port)")
    s.add_argument("--bitstream", default=None, help="pynq: the .bit (default /home/xilinx/vdla/bitstreams/"
                   "<fingerprint>/vdla.bit or $VDLA_BITSTREAM)")
    s.set_defaults(func=cmd_serve)

    d = sub.add_parser("deploy", help="compile, package and run a network on a `vdla serve` board")
    d.add_argument("model", help="resnet18, resnet34 or a float ONNX file")
    d.add_argument("--board", type=host_port, required=True, metavar="HOST:PORT", help="where `vdla serve` listens")
    d.add_argument("--config", default=None, help="preset or JSON file (default osdi18); must match the board")
    d.add_argument("--resolution", type=resolution_arg(), default=224, help="input size of the built-in models")
    d.add_argument("--json", action="store_true", help="machine-readable report (with output_sha256)")
    d.add_argument("--vthreads", type=int_range(1), default=None, help="virtual threads per layer (default: search)")
    d.add_argument("--stem-on-vdla", action="store_true")
    d.add_argument("--add-on-vdla", action="store_true")
    d.add_argument("--fc-on-vdla", action="store_true")
    d.add_argument("--no-arm-library", action="store_true", help="do not build the Cortex-A9 library (the "
                   "server then uses its host JIT)")
    d.add_argument("--timeout", type=float_range(0.0, low_open=True), default=3600.0, help="seconds to wait for the board's answer")
    d.set_defaults(func=cmd_deploy)

    group = _hw_group(sub)
    _add_bitstream(group if group is not None else sub)

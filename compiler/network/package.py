"""A quantized network as deployment files, and running such files on a device.

:func:`network_files` turns what ``vdla run`` computes before executing (the quantized graph, the
placements, the test input) into files: ``graph.json`` + ``arrays.npz`` (the graph),
``placements.json``, ``input.npy``, ``bundles/<key>.npz`` (every accelerator op compiled with zero
inputs, under its ``vdla_ops.bundle_key``) and, optionally, ``cpu/libvdla_cpu.so`` +
``cpu/libvdla_cpu.json`` (the Cortex-A9 library of the CPU ops and its kernel specs).
:func:`run_files` runs such files with the executor on a device, after checking every op's
attributes, constants and declared shapes and the CPU ops' work (``cpu_ops.check_graph``): each
accelerator op is its packaged bundle with the op's actual input written into its ``inp`` (conv,
dense) or ``a``/``b`` (ALU add) symbols, loaded only when the op runs; CPU ops use the packaged ARM
library through ctypes on an ARMv7 machine, the host JIT elsewhere. The outputs' SHA-256 is ``vdla
run``'s ``output_sha256``.

The container around these files (manifest, sizes, hashes, the configuration check) is
``driver.package``; the transport is ``driver.protocol``.
"""

from __future__ import annotations

import dataclasses
import io
import json
import platform
import tempfile
import time
import traceback
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from compiler.network.partition import Placement
from compiler.quantize.qgraph import QGraph, QNode
from vdla_hw.bundle import Bundle
from vdla_hw.npyfile import read_npy, read_npz
from vdla_hw.errors import VdlaError
from vdla_hw.files import json_text
from vdla_hw.limits import MAX_TENSOR_BYTES, mib

ARM_LIBRARY, ARM_SPECS = "cpu/libvdla_cpu.so", "cpu/libvdla_cpu.json"
LAYERS = "layers.json"  # run_files' per-op records, an answer blob


class NetworkFilesError(VdlaError):
    """A network's files do not describe a runnable network."""


def npy_bytes(array: np.ndarray) -> bytes:
    """A numpy array as .npy bytes (no pickles)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def npy_array(data: bytes, what: str) -> np.ndarray:
    """The array of ``.npy`` bytes from outside (header checked before numpy allocates)."""
    return read_npy(data, what)


# --- the quantized graph as JSON + arrays -------------------------------------------------
def graph_files(q: QGraph) -> dict[str, bytes]:
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
    graph = {"name": q.name, "input": q.input, "outputs": list(q.outputs), "nodes": nodes,
             "shapes": {k: list(v) for k, v in q.shapes.items()}, "fracs": dict(q.fracs), "zps": dict(q.zps),
             "scales": dict(q.scales)}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return {"graph.json": json.dumps(graph).encode(), "arrays.npz": buf.getvalue()}


def graph_from_files(files: dict[str, bytes]) -> QGraph:
    """The quantized graph of ``graph.json`` + ``arrays.npz``; every tensor within the limit."""
    try:
        graph = json.loads(files["graph.json"])
        arrays = read_npz(files["arrays.npz"], "arrays.npz")
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
            nodes.append(QNode(str(n["name"]), str(n["op"]), [str(i) for i in n["inputs"]], str(n["output"]), attrs))
        shapes = {str(k): tuple(int(d) for d in v) for k, v in graph["shapes"].items()}
        outputs = graph["outputs"]
        if not isinstance(outputs, list) or not outputs:
            raise ValueError(f"outputs is {outputs!r}, not a list of value names")
        q = QGraph(str(graph["name"]), str(graph["input"]), tuple(str(o) for o in outputs), nodes, shapes,
                   {str(k): int(v) for k, v in graph["fracs"].items()},
                   {str(k): int(v) for k, v in graph.get("zps", {}).items()},
                   {str(k): float(v) for k, v in graph.get("scales", {}).items()})
    except (KeyError, ValueError, TypeError, AttributeError, RecursionError, VdlaError) as err:
        raise NetworkFilesError(f"graph.json/arrays.npz do not describe a quantized graph ({err})") from None
    for name, shape in q.shapes.items():
        nbytes = 4 * int(np.prod(shape, dtype=object))
        if min(shape, default=1) < 0 or nbytes > MAX_TENSOR_BYTES:
            raise NetworkFilesError(f"graph.json: tensor {name!r} of shape {shape} is beyond the "
                                    f"{mib(MAX_TENSOR_BYTES)} tensor limit")
    _check_structure(q)
    return q


def _check_structure(q: QGraph) -> None:
    """Every node reads tensors defined before it and writes a new one with a shape; names unique."""
    defined, names = {q.input}, set()
    for node in q.nodes:
        missing = [i for i in node.inputs if i not in defined]
        if missing or node.name in names or node.output in defined or node.output not in q.shapes:
            why = (f"reads {missing[0]!r}, which no earlier node writes" if missing else
                   "repeats a name" if node.name in names else f"writes {node.output!r} again or without a shape")
            raise NetworkFilesError(f"graph.json: node {node.name!r} {why}")
        defined.add(node.output)
        names.add(node.name)
    unwritten = [name for name in q.outputs if name not in defined]
    if q.input not in q.shapes or unwritten:
        raise NetworkFilesError("graph.json: the graph's input has no shape" if q.input not in q.shapes else
                                f"graph.json: the graph's output {unwritten[0]!r} is never written")


# --- building the files (host side) -------------------------------------------------------
def _zeros_like_inputs(q: QGraph, node: QNode) -> list[np.ndarray]:
    return [np.zeros(q.shapes[i], dtype=np.float32 if i == q.input else np.int8) for i in node.inputs]


def compile_bundles(q: QGraph, placements: dict, config, vthreads=None, progress=None) -> dict[str, bytes]:
    """One bundle file per accelerator op (per group of a grouped conv), compiled with zero inputs
    (the device's host writes the real ones)."""
    from compiler.accel import compile_layer
    from compiler.network.alu_add import compile_vdla_add
    from compiler.network.vdla_ops import bundle_key, part_tensors, vdla_parts

    say = progress or (lambda message: None)
    files = {}
    for node in q.nodes:
        if placements[node.name].target != "vdla":
            continue
        args = _zeros_like_inputs(q, node)
        if node.op == "add":
            bundles = [(bundle_key(node.name), node.name, compile_vdla_add(node, args, config))]
        else:
            # one program per key (a product's parts are one program, run once per batch index)
            parts = {p.key: p for p in vdla_parts(node, q.shapes[node.inputs[0]], q.shapes[node.output])}
            bundles = [(part.key, part.layer.name, compile_layer(part.layer, config, vthreads=vthreads,
                                                                 tensors=part_tensors(node, part, args[0])))
                       for part in parts.values()]
        for key, label, bundle in bundles:
            files[f"bundles/{key}.npz"] = bundle.to_bytes()
            say(f"compiled {label} ({node.op}): {bundle.insn_count} instructions, {bundle.dram.size} bytes")
    return files


def bundle_keys(q: QGraph, placements: dict) -> list[str]:
    """The bundle keys of every accelerator op (``vdla_ops.bundle_key``): the node's, or one per
    group of a grouped conv."""
    from compiler.network.vdla_ops import bundle_key, vdla_parts

    keys = []
    for node in q.nodes:
        if placements[node.name].target == "vdla":
            keys += [bundle_key(node.name)] if node.op == "add" else \
                list(dict.fromkeys(p.key for p in vdla_parts(node, q.shapes[node.inputs[0]], q.shapes[node.output])))
    return keys


def cpu_specs(q: QGraph, placements: dict) -> list:
    from compiler.network.executor import cpu_kernel

    specs = []
    for node in q.nodes:
        if placements[node.name].target == "cpu":
            kernel = cpu_kernel(node, _zeros_like_inputs(q, node))
            if kernel is not None:
                specs.append(kernel[0])
    return list(dict.fromkeys(specs))


def arm_library_files(q: QGraph, placements: dict) -> dict[str, bytes]:
    """The Cortex-A9 shared library of every CPU op's kernel, and its manifest."""
    from compiler.cpu_fallback.arm import build_arm_library

    with tempfile.TemporaryDirectory(prefix="vdla-arm-") as tmp:
        lib = build_arm_library(cpu_specs(q, placements), Path(tmp) / "libvdla_cpu.so")
        return {ARM_LIBRARY: lib.read_bytes(), ARM_SPECS: lib.with_suffix(".json").read_bytes()}


def network_files(q: QGraph, x: np.ndarray, placements: dict, config, *, vthreads=None, arm_library: bool = True,
                  progress=None) -> dict[str, bytes]:
    """Every file of a deployment package but its manifest."""
    files = graph_files(q)
    files["placements.json"] = json.dumps({k: dataclasses.asdict(v) for k, v in placements.items()}).encode()
    files["input.npy"] = npy_bytes(x)
    files.update(compile_bundles(q, placements, config, vthreads, progress))
    if arm_library:
        (progress or (lambda message: None))("building the Cortex-A9 library of the CPU ops")
        files.update(arm_library_files(q, placements))
    return files


# --- running the files (device side) ------------------------------------------------------
def library_specs(specs_json: bytes) -> list:
    """The kernel specs an ARM library was built from (its ``libvdla_cpu.json``)."""
    from compiler import cpu_fallback as cf

    try:
        kernels = json.loads(specs_json)["kernels"]
        return [cf.FAMILIES[k["family"]](**k["params"]) for k in kernels.values()]
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise NetworkFilesError(f"{ARM_SPECS} does not describe the library's kernels ({err})") from None


def cpu_kernels(files: dict[str, bytes], work: Path):
    """The packaged ARM library's kernels on an ARMv7 machine (None elsewhere: host JIT). This
    loads native code from the files: only ever for files from an authenticated client."""
    if not platform.machine().startswith("armv7") or ARM_LIBRARY not in files:
        return None
    from compiler.cpu_fallback.call import load_library

    lib = work / "libvdla_cpu.so"
    lib.write_bytes(files[ARM_LIBRARY])
    return load_library(lib, library_specs(files.get(ARM_SPECS, b"")))


class _Bundles(Mapping):
    """The packaged bundles of the accelerator ops, each loaded (and checked) when its op runs,
    so one decompressed image at a time is in memory."""

    def __init__(self, files: dict[str, bytes], names: list[str], config):
        self.files, self.names, self.config = files, names, config

    def __getitem__(self, name: str) -> Bundle:
        if name not in self.names:
            raise KeyError(name)
        path = f"bundles/{name}.npz"
        if path not in self.files:
            raise NetworkFilesError(f"the package has no {path} for accelerator op {name!r}")
        return Bundle.from_bytes(self.files[path], path, config=self.config)

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def run_files(files: dict[str, bytes], device, progress=None, should_stop=None,
              model=None) -> tuple[dict, dict[str, bytes]]:
    """Run a network's files on ``device``: (report, {"output.npy": ..., "layers.json": ...}), with
    one blob per output of a network of several (:func:`output_blob`).
    The report has ``backend``, ``cpu_kernels``, ``output_sha256`` and ``seconds`` (load,
    execute); ``layers.json`` (a blob: it grows with the network, a frame header does not)
    lists each op's record with measured ``wall_seconds`` and ``device_wall_seconds``.
    ``should_stop``: the executor's (checked before every op); ``model``: the loaded model to run
    on (the executor's default: a new one); the report's ``bytes_moved`` says what moved."""
    from compiler.network.cpu_ops import check_graph
    from compiler.network.executor import Executor, outputs_sha256

    start = time.perf_counter()
    q = graph_from_files(files)
    try:
        placements = {str(k): Placement(**v) for k, v in json.loads(files["placements.json"]).items()}
    except (KeyError, ValueError, TypeError, AttributeError) as err:
        raise NetworkFilesError(f"placements.json is unreadable ({err})") from None
    missing = [n.name for n in q.nodes if n.name not in placements]
    if missing:
        raise NetworkFilesError(f"placements.json does not place {', '.join(missing[:3])}")
    check_graph(q, {n.name for n in q.nodes if placements[n.name].target != "vdla"})
    x = npy_array(files.get("input.npy", b""), "input.npy")
    if x.shape != q.shapes.get(q.input) or x.dtype.kind != "f":
        raise NetworkFilesError(f"input.npy holds {x.dtype} {x.shape}, the graph's input is float "
                                f"{q.shapes.get(q.input)}")
    try:
        keys = bundle_keys(q, placements)
    except (VdlaError, KeyError, IndexError, ValueError, TypeError, AttributeError) as err:
        raise NetworkFilesError(f"graph.json/arrays.npz: an accelerator op cannot be run ({type(err).__name__}: "
                                f"{err}); was the package built by this vdla?") from None
    bundles = _Bundles(files, keys, device.config)
    with tempfile.TemporaryDirectory(prefix="vdla-serve-") as tmp:
        kernels = cpu_kernels(files, Path(tmp))
        loaded = time.perf_counter()
        executor = Executor(q, placements, device, progress=progress, prebuilt=bundles,
                            kernels=None if kernels is None else kernels.__getitem__, should_stop=should_stop,
                            model=model)
        try:
            result = executor.run(x)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError) as err:
            # a node whose attributes do not have the form its op needs (the graph came from outside)
            frame = traceback.extract_tb(err.__traceback__)[-1]
            raise NetworkFilesError(f"graph.json/arrays.npz: the graph does not run ({type(err).__name__}: {err} at "
                                    f"{Path(frame.filename).name}:{frame.lineno}); was the package built by this "
                                    "vdla?") from None
    layers = []
    for r in result.records:
        row = r.as_dict()
        row["wall_seconds"] = r.wall_seconds
        row["device_wall_seconds"] = r.extra.get("device_wall", 0.0)
        layers.append(row)
    reply = {"backend": device.target, "cpu_kernels": "arm-library" if kernels is not None else "host-jit",
             "output_sha256": outputs_sha256(result.outputs),
             "seconds": {"load": loaded - start, "execute": time.perf_counter() - loaded},
             "bytes_moved": result.bytes_moved}
    blobs = {output_blob(k): npy_bytes(np.ascontiguousarray(out)) for k, out in enumerate(result.outputs)}
    return reply, {**blobs, LAYERS: json_text(layers).encode()}


def output_blob(k: int) -> str:
    """The name of the answer's blob holding output ``k``: ``output.npy`` for the first (a
    network's only one), ``output.<k>.npy`` for the others."""
    return "output.npy" if k == 0 else f"output.{k}.npy"

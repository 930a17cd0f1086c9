"""Tiny deployment packages built the way ``vdla deploy`` builds them (compiler.network.package +
driver.package), with any graph: for the tests and the fuzz target that hand a server hostile
indices, sizes and attributes.

Run as a program, it builds one of the reproductions of issue 22 and runs it on a sim device
the way ``vdla serve`` does (``vdla.deploy.run_package``), printing one JSON line:
``{"refused": <error class>, "vdla_error": bool, "message": ...}`` or ``{"output": [...]}``.
The tests run it in a subprocess, so a kernel that crashes the process fails a test instead of
killing pytest::

    python -m tests.compiler.network.tiny_packages gather FIRST_INDEX
"""

from __future__ import annotations

import json
import sys

import numpy as np

from compiler.network.package import network_files
from compiler.network.partition import Placement
from compiler.quantize.qgraph import QGraph, QNode
from driver.package import seal
from vdla_hw.config import ISA_VERSION, load_config

CONFIG = "tiny"


def graph(x_shape: tuple, nodes: list[QNode], shapes: dict, name: str = "hostile") -> QGraph:
    """Input ``x`` (float, ``x_shape``) quantized to ``xq`` (frac 4), then ``nodes``; the last
    node's output is the graph's; ``shapes`` declares the other tensors."""
    nodes = [QNode("q", "quantize", ["x"], "xq", {"frac": 4}), *nodes]
    shapes = {"x": tuple(x_shape), "xq": tuple(x_shape), **{k: tuple(v) for k, v in shapes.items()}}
    fracs = {t: 4 for t in shapes}
    return QGraph(name, "x", (nodes[-1].output,), nodes, shapes, fracs)


def package(q: QGraph, x: np.ndarray, config=CONFIG, sealed: bool = True) -> dict[str, bytes]:
    """The deployment files of ``q`` with every op on the CPU (no ARM library), sealed by default."""
    config = load_config(config)
    placements = {n.name: Placement("cpu", "test") for n in q.nodes}
    files = network_files(q, x, placements, config, arm_library=False)
    if not sealed:
        return files
    return seal(files, model=q.name, config=config.to_json(), fingerprint=config.fingerprint,
                isa_version=ISA_VERSION)


def gather_graph(first_index: int, size_in: int = 16, size_out: int = 4096) -> QGraph:
    """Issue 22's reproduction: a gather of ``size_out`` bytes from a ``size_in``-byte input with
    indices ``first_index, first_index + 1, ...`` (all equal to it if they would pass int32)."""
    if first_index + size_out <= 2**31:
        index = np.arange(first_index, first_index + size_out, dtype=np.int64).astype(np.int32)
    else:
        index = np.full(size_out, first_index, dtype=np.int32)
    node = QNode("g", "gather", ["xq"], "y", {"index": index, "fill": np.zeros(size_out, np.int8),
                                              "shape": (1, size_out)})
    return graph((1, size_in), [node], {"y": (1, size_out)})


def run_on_sim(files: dict[str, bytes]) -> dict:
    """What ``vdla serve --backend sim`` answers for ``files``: the output or the refusal."""
    from driver import open_device
    from vdla.deploy import run_package
    from vdla_hw.errors import VdlaError
    from vdla_hw.npyfile import read_npy

    device = open_device("sim", CONFIG)
    try:
        _, out = run_package(files, device)
    except Exception as err:  # noqa: BLE001 - reported, the caller decides
        return {"refused": type(err).__name__, "vdla_error": isinstance(err, VdlaError), "message": str(err)}
    finally:
        device.close()
    return {"output": read_npy(out["output.npy"], "output.npy").reshape(-1).tolist()}


def main(argv: list[str]) -> int:
    kind, value = argv
    if kind != "gather":
        raise SystemExit(f"unknown reproduction {kind!r}")
    q = gather_graph(int(value))
    x = np.full(q.shapes["x"], 1.0, dtype=np.float32)
    print(json.dumps(run_on_sim(package(q, x))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

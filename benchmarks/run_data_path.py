"""What ``vdla run`` of one Relu on a 1 x 1 x S x S input costs the host, by S: the data path
(making the inputs, calibration, the quantization report, the run and the reference) with
nothing else to do, the case issue 45 found at 2.1 GB and 22.7 s for S = 5792 (each tensor just
under ``MAX_TENSOR_BYTES``). Each run is a fresh ``vdla run`` child with ``VDLA_CACHE=off``;
CPU seconds are user + system of the child and its descendants (the quantization report's
child included), peak RSS is the largest of any of them (``ru_maxrss`` of ``RUSAGE_CHILDREN``,
measured in a fresh process per run). ``--fewest``: the same through ``run_network`` with one
calibration and one test input (the fewest the API allows; the CLI makes 4 + 4), the case
``RUN_MAX_INPUT_BYTES`` bounds. ``--expand``: the S x S tensor made inside the network from a
1 x 1 x 1 x 1 input (a data-movement op's index map is built at import: the case that set
``MAX_TENSOR_BYTES`` to 32 MiB). ``vdla_hw/limits.py``'s ``RUN_MAX_INPUT_BYTES`` and
``RUN_MAX_MADE_BYTES`` are derived from these figures (see their comment). Say the load
(``uptime``) with the figures:

    .venv/bin/python benchmarks/run_data_path.py [--sides 1024,2048,2896,4096,5792] [--fewest] [--expand]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import resource, subprocess, sys, json
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": proc.returncode, "cpu": use.ru_utime + use.ru_stime, "rss_mb": use.ru_maxrss / 1024,
                  "last": (proc.stderr.strip().splitlines() or [""])[-1] if proc.returncode else
                          [l for l in proc.stdout.splitlines() if l.startswith("bit exact")][:1]}))
"""


FEWEST = ("import sys; from vdla.network import run_network; "
          "r = run_network(sys.argv[1], calibration=1, test_inputs=1); print('bit exact:', r.bit_exact)")


def relu_model(side: int, path: Path, expand: bool = False) -> Path:
    """A Relu of a 1 x 1 x side x side input, or (``expand``) of a 1 x 1 x 1 x 1 input Expanded to
    that size inside the network (a 140-byte model whose run makes the large tensor itself)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    big = [1, 1, side, side]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 1, 1] if expand else big)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, big)
    nodes = [helper.make_node("Relu", ["e" if expand else "x"], ["y"], name="r")]
    inits = []
    if expand:
        nodes.insert(0, helper.make_node("Expand", ["x", "s"], ["e"], name="e"))
        inits.append(numpy_helper.from_array(np.array(big, np.int64), "s"))
    graph = helper.make_graph(nodes, "relu", [x], [y], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def measure(model: Path, *args: str) -> dict:
    """One ``vdla run`` in a fresh process: exit code, CPU seconds, peak RSS (MB), outcome line."""
    import json

    vdla = [str(Path(sys.executable).with_name("vdla")), "run"]
    if "--fewest" in args:
        vdla = [sys.executable, "-c", FEWEST]
    env = {**os.environ, "VDLA_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", CHILD, *vdla, str(model)], capture_output=True,
                         text=True, env=env, check=True)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sides", default="1024,2048,2896,4096,5792")
    parser.add_argument("--fewest", action="store_true", help="one calibration and one test input (run_network)")
    parser.add_argument("--expand", action="store_true",
                        help="make the S x S tensor inside the network from a 1 x 1 x 1 x 1 input (Expand)")
    args = parser.parse_args(argv)
    print(f"load: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    print(f"{'side':>6} {'tensor MiB':>10} {'exit':>4} {'CPU s':>6} {'peak MB':>8}  outcome")
    with tempfile.TemporaryDirectory() as folder:
        for side in (int(s) for s in args.sides.split(",")):
            row = measure(relu_model(side, Path(folder) / f"relu{side}.onnx", args.expand),
                          *(["--fewest"] if args.fewest else []))
            print(f"{side:>6} {4 * side * side / 2**20:>10.1f} {row['code']:>4} {row['cpu']:>6.2f} {row['rss_mb']:>8.0f}  "
                  f"{row['last'] if isinstance(row['last'], str) else ' '.join(row['last'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

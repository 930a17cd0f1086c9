"""Import time against graph length (issue 45, finding 13): the CPU seconds ``from_model`` takes
on a chain of ``n`` element-wise nodes (Mul and Add by constants, which simplify merges into one
affine, then Relu, repeated), for a few lengths, and the ratio of each to the shortest. Linear
import gives ratios near the lengths' ratio (4 for 10 k -> 40 k); the quadratic simplify it
replaced gave about 16 (28.5 s at 40 k). CPU time of this process, not wall time, so other load
on the machine changes the figures less; the best of ``--repeat`` runs.

    .venv/bin/python benchmarks/import_scaling.py [--lengths 10000,40000] [--repeat 2]

tests/compiler/frontend/test_import_scaling.py checks the ratio (generously) on shorter chains.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def chain(n: int):
    """An ONNX model: a (1, 4) input through ``n`` element-wise nodes (Mul, Add, Relu, ...)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, prev = [], "x"
    for k in range(n):
        op = ("Mul", "Add", "Relu")[k % 3]
        nodes.append(helper.make_node(op, [prev, "c"] if op != "Relu" else [prev], [f"v{k}"]))
        prev = f"v{k}"
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array(1.0, np.float32), "c")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def import_seconds(n: int, repeat: int = 2) -> float:
    """The least CPU seconds of ``repeat`` imports of ``chain(n)`` (the model built beforehand)."""
    from compiler.frontend.onnx_import import from_model

    model = chain(n)
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        from_model(model, f"chain{n}")
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="10000,40000", help="chain lengths, comma-separated")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    lengths = [int(v) for v in args.lengths.split(",")]
    times = [import_seconds(n, args.repeat) for n in lengths]
    for n, seconds in zip(lengths, times):
        print(f"{n:>8} nodes  {seconds:7.2f} s CPU  length x{n / lengths[0]:.0f}  time x{seconds / times[0]:.1f}")


if __name__ == "__main__":
    main()

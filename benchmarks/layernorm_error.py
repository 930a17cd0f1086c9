#!/usr/bin/env python3
"""The int8 LayerNorm's error against float (docs/onnx.md, "LayerNorm"): prints a Markdown table.

Two measures on seeded random tokens (rows of C channels: a per-channel offset and spread, as
token embeddings have; gamma around 1, beta around 0, epsilon 1e-5), each on the quantized
network the compiler makes (``quantize_graph``, calibrated on 8 other inputs):

- method: the int8 output against float LayerNorm of the *dequantized int8 input*, in output
  steps (the integer method's own error: 0.5 is the output's rounding alone);
- end to end: the int8 output against float LayerNorm of the float input, as RMS error over the
  output's RMS (input quantization included).

Deterministic (seeded, integer arithmetic): ``python benchmarks/layernorm_error.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler.frontend import float_ref  # noqa: E402
from compiler.frontend.graph import Graph, Node  # noqa: E402
from compiler.quantize import quantize_graph, reference  # noqa: E402

CASES = ((64, 16), (64, 256), (64, 768), (16, 4096))  # (tokens, channels)


def tokens(rng, n, tokens_, channels):
    offset = rng.standard_normal(channels) * 2.0
    spread = np.exp(rng.standard_normal(channels) * 0.5)
    return (offset + spread * rng.standard_normal((n, tokens_, channels))).astype(np.float32)


def measure(tokens_: int, channels: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    scale = (1.0 + 0.3 * rng.standard_normal(channels)).astype(np.float32)
    bias = (0.2 * rng.standard_normal(channels)).astype(np.float32)
    graph = Graph("ln", "x", ("y",), [Node("ln", "layernorm", ["x"], "y", {"scale": scale, "bias": bias, "eps": 1e-5})],
                  {"x": (1, tokens_, channels), "y": (1, tokens_, channels)})
    q = quantize_graph(graph, tokens(rng, 8, tokens_, channels))
    x = tokens(rng, 1, tokens_, channels)
    values = reference.run(q, x)
    node = q.nodes[-1]
    fx, zx = q.fracs[node.inputs[0]], q.zps[node.inputs[0]]
    fy, zy = q.fracs[node.output], q.zps[node.output]
    got = (values[node.output].astype(np.float64) - zy) * 2.0 ** -fy
    on_codes = float_ref.layernorm((values[node.inputs[0]].astype(np.float64) - zx) * 2.0 ** -fx, scale, bias, 1e-5)
    inside = np.abs(on_codes * 2.0 ** fy + zy + 0.5) < 127.5  # where the output's code did not saturate
    want = float_ref.layernorm(x, scale, bias, 1e-5)
    return {"method_max_steps": float(np.abs(got - on_codes)[inside].max() * 2.0 ** fy),
            "method_rms_steps": float(np.sqrt(((got - on_codes)[inside] ** 2).mean()) * 2.0 ** fy),
            "rms_relative": float(np.sqrt(((got - want) ** 2).mean() / (want ** 2).mean())),
            "fx": fx, "fy": fy}


def main() -> None:
    print("| tokens x channels | input, output frac | method: max, RMS error (output steps) | end to end: RMS error / RMS |")
    print("|---|---|---|---|")
    for t, c in CASES:
        m = measure(t, c)
        print(f"| {t} x {c} | {m['fx']}, {m['fy']} | {m['method_max_steps']:.3f}, {m['method_rms_steps']:.3f} | "
              f"{100 * m['rms_relative']:.2f} % |")


if __name__ == "__main__":
    main()

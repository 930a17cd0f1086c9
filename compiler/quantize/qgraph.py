"""The quantized graph: int8 values, each with a power-of-two scale 2**-frac.

=========  ==============================================================================
op         attrs (all requantizations are ``clip((acc + bias) >> shift, lo, 127)``,
           ``lo = 0`` with ``relu`` else -128, arithmetic shift)
=========  ==============================================================================
quantize   frac                 float input -> int8, round half to even, saturate
conv       weight int8 OIHW, bias int32, stride, pad (t, l, b, r), shift, relu
dense      weight int8 (M, K), bias int32, shift, relu
add        a_shift, b_shift, shift, relu: clip(((a << a_shift) + (b << b_shift)) >> shift)
relu       --
maxpool    kernel, stride, pad  (padded positions ignored)
avgpool    --                   global mean, floor((sum + HW//2) / HW); output (N, C, 1, 1)
flatten    --
=========  ==============================================================================

``fracs`` gives each value's frac; the network output is dequantized with its frac.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class QNode:
    name: str
    op: str
    inputs: list[str]
    output: str
    attrs: dict = field(default_factory=dict)

    @property
    def macs(self) -> int:
        """Multiply-accumulates of one inference (conv and dense), else 0."""
        return int(self.attrs.get("macs", 0))


@dataclass
class QGraph:
    name: str
    input: str
    output: str
    nodes: list[QNode]
    shapes: dict[str, tuple[int, ...]]
    fracs: dict[str, int]

    def node(self, name: str) -> QNode:
        return next(n for n in self.nodes if n.name == name)

    def dequantize_output(self, values: np.ndarray) -> np.ndarray:
        return values.astype(np.float32) * np.float32(2.0 ** -self.fracs[self.output])

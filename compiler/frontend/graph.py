"""The float graph IR the front end produces: a list of nodes in topological order.

Ops and their attributes (all tensors NCHW float32; weights are numpy arrays):

========  =========================================================================
op        attrs
========  =========================================================================
conv      weight (O, I, kh, kw), bias (O,), stride (sh, sw), pad (top, left, bottom, right)
dense     weight (M, K), bias (M,)   -- input (N, K)
relu      --
add       --                          -- two inputs of the same shape
maxpool   kernel (kh, kw), stride (sh, sw), pad (top, left, bottom, right)
avgpool   --                          -- global average over H x W, output (N, C)
flatten   --                          -- (N, C, H, W) -> (N, C*H*W)
========  =========================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vdla_hw.errors import VdlaError

OPS = ("conv", "dense", "relu", "add", "maxpool", "avgpool", "flatten")


class ModelError(VdlaError):
    """A model the tools cannot take: names the file and the node."""

    def __init__(self, where: str, why: str, node: str | None = None, op: str | None = None):
        self.where, self.why, self.node, self.op = where, why, node, op
        at = f": node {node!r}" if node else ""
        kind = f" ({op})" if op else ""
        super().__init__(f"{where}{at}{kind}: {why}")


@dataclass
class Node:
    name: str
    op: str
    inputs: list[str]
    output: str
    attrs: dict = field(default_factory=dict)


@dataclass
class Graph:
    """Nodes in topological order; ``shapes`` maps every value name to its shape."""

    name: str
    input: str
    output: str
    nodes: list[Node]
    shapes: dict[str, tuple[int, ...]]

    def consumers(self, value: str) -> list[Node]:
        return [n for n in self.nodes if value in n.inputs]

    def producer(self, value: str) -> Node | None:
        return next((n for n in self.nodes if n.output == value), None)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def conv_out(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int) -> int:
    """Output extent of a convolution or pooling window along one axis (floor mode)."""
    return (size + pad_lo + pad_hi - kernel) // stride + 1

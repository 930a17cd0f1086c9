"""The float graph IR the front end produces: a list of nodes in topological order.

Every value is a float32 tensor (activations NCHW, or (N, K) for 2-D models); weights and
constants are numpy arrays in the attributes. The float meaning of every op is
``compiler.frontend.float_ref.eval_node``.

===========  ===============================================================================
op           attrs
===========  ===============================================================================
conv         weight (O, I/groups, kh, kw), bias (O,), stride (sh, sw), pad (t, l, b, r), groups
dense        weight (M, K), bias (M,)          input (N, K)
add          --                                two inputs of the same shape
mul          --                                two inputs; the output has the shape of one of them and
                                               the other broadcasts (numpy rules) by batch, channel or
                                               all spatial axes at once (:func:`mul_extents`): SiLU
                                               x * sigmoid(x), a squeeze-excitation gate (N, C, 1, 1)
softmax      axis, mask (optional: bool of the input's rank, broadcast to it; True where kept): over
             the kept positions only, 0 at the masked ones (an additive attention mask of -inf,
             compiler.frontend.onnx_import)
layernorm    scale (C,), bias (C,), eps    normalisation over the last axis (C channels), ONNX's
                                           LayerNormalization (compiler.frontend.float_ref.layernorm)
matmul       alpha (float)                     two computed inputs (..., N, K) and (..., K, M) with equal
                                               leading (batch) axes: alpha times one matrix product per
                                               batch index, (..., N, M) (attention's Q.K^T and P.V, their
                                               scale folded into alpha: compiler.frontend.attention)
maxpool      kernel (kh, kw), stride, pad (t, l, b, r), ceil (extra bottom, right rows of ceil mode)
avgpool      --                                global mean over H x W, output (N, C, 1, 1)
avgpool2d    kernel, stride, pad, ceil, count_pad (bool: padded zeros count in the divisor)
concat       axis                              any number of inputs
reshape      shape (the output shape; data order unchanged)
gather       index (int64, one per output element, flat into the input; -1 takes ``fill``), fill,
             shape (the output shape): every data-movement op (Transpose, Gather, GatherND, Slice,
             Where with a constant side, Pad, ...) becomes one, its index map found by running the
             ONNX node on numbered inputs (compiler.frontend.fold)
resize       index (P, 4) int64, weight (P, 4), shape (N, C, H', W'): each output pixel of a plane
             is the weighted sum of four pixels of the same input plane (flat positions in
             H x W), P = H' x W'; bilinear Resize (compiler.frontend.resize)
===========  ===============================================================================

and the element-wise ops of one input (:data:`UNARY`: relu, clip, affine, sigmoid, ...), each one
entry of ``compiler.frontend.elementwise.ELEMENTWISE`` with its attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.frontend.elementwise import NAMES
from vdla_hw.errors import VdlaError

# Element-wise ops of one input (compiler.frontend.elementwise): in int8 a 256-entry table or a muladd.
UNARY = NAMES
OPS = ("conv", "dense", "add", "mul", "softmax", "layernorm", "matmul", "maxpool", "avgpool", "avgpool2d", "concat", "reshape", "gather", "resize") + UNARY


class ModelError(VdlaError):
    """A model the tools cannot take: names the file and the node."""

    def __init__(self, where: str, why: str, node: str | None = None, op: str | None = None):
        self.where, self.why, self.node, self.op = where, why, node, op
        at = f": node {node!r}" if node else ""
        kind = f" ({op})" if op else ""
        super().__init__(f"{where}{at}{kind}: {why}")

    def as_dict(self) -> dict:
        """The error as JSON (``vdla ... --json`` prints ``{"error": ...}`` on stdout)."""
        return {"kind": "model", "message": str(self), "file": self.where, "node": self.node, "op": self.op,
                "reason": self.why}


@dataclass
class Node:
    name: str
    op: str
    inputs: list[str]
    output: str
    attrs: dict = field(default_factory=dict)


@dataclass
class Graph:
    """Nodes in topological order; ``shapes`` maps every value name to its shape. ``outputs``
    names the network's outputs in the model's order (a classifier has one; a detection backbone
    such as an FPN several, and an output may also be read by later nodes)."""

    name: str
    input: str
    outputs: tuple[str, ...]
    nodes: list[Node]
    shapes: dict[str, tuple[int, ...]]

    @property
    def output(self) -> str:
        """The only output of a one-output graph (ValueError if it has several)."""
        return only_output(self.name, self.outputs)

    def consumers(self, value: str) -> list[Node]:
        return [n for n in self.nodes if value in n.inputs]

    def producer(self, value: str) -> Node | None:
        return next((n for n in self.nodes if n.output == value), None)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)


def fresh_name(base: str, taken) -> str:
    """``base`` if it is not in ``taken``, else ``base~k`` for the smallest k >= 2 that is not: the
    name the importer or the quantizer gives a node or value it makes, or a model's second node
    of a name already used, so that no name made up can be one the model already has."""
    if base not in taken:
        return base
    k = 2
    while f"{base}~{k}" in taken:
        k += 1
    return f"{base}~{k}"


def unique_names(graph: Graph) -> Graph:
    """``graph`` with every node's name distinct: the first node of a name keeps it, each later
    one takes :func:`fresh_name` (``c``, ``c~2``, ...). Placement, quantization, bundle keys and
    reports key on node names, so ONNX's duplicate names (which onnx's checker allows) are made
    distinct once, here, before any of them runs. ``graph`` itself when its names are distinct."""
    names = [node.name for node in graph.nodes]
    if len(set(names)) == len(names):
        return graph
    taken, nodes = set(names), []
    seen = set()
    for node in graph.nodes:
        name = node.name
        if name in seen:
            name = fresh_name(name, taken)
            taken.add(name)
        seen.add(name)
        nodes.append(Node(name, node.op, list(node.inputs), node.output, node.attrs))
    return Graph(graph.name, graph.input, graph.outputs, nodes, graph.shapes)


def only_output(name: str, outputs: tuple):
    """The one entry of ``outputs`` (a graph's or a run's); ValueError naming ``name`` if there are several."""
    if len(outputs) != 1:
        raise ValueError(f"{name} has {len(outputs)} outputs, not one: use its outputs")
    return outputs[0]


def conv_out(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int) -> int:
    """Output extent of a convolution or pooling window along one axis (floor mode)."""
    return (size + pad_lo + pad_hi - kernel) // stride + 1


def ceil_extra(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int) -> int:
    """Extra high-side padding that turns floor mode into ONNX's ceil mode (0 if none is needed;
    a last window that would start in the padding is dropped, as ONNX and PyTorch do)."""
    floor_out = conv_out(size, kernel, stride, pad_lo, pad_hi)
    ceil_out = -(-(size + pad_lo + pad_hi - kernel) // stride) + 1
    if ceil_out > floor_out and (ceil_out - 1) * stride >= size + pad_lo:
        ceil_out -= 1
    return (ceil_out - floor_out) * stride if ceil_out > floor_out else 0


def mul_extents(shape: tuple[int, ...], out: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(batch, channels, the rest) extents of ``shape`` right-aligned against the product's
    ``out`` (numpy broadcasting) when each is the output's or 1: the broadcasts a product of two
    tensors may have (equal shapes, a per-sample-and-channel gate (N, C, 1, 1), a per-channel
    (1, C, 1, 1), a scalar-like (1,) ...); None for any other, such as (1, 1, H, 1)."""
    out = tuple(int(d) for d in out)
    if len(shape) > len(out):
        return None
    mine = (1,) * (len(out) - len(shape)) + tuple(int(d) for d in shape)
    extents = []
    for lo, hi in ((0, 1), (1, 2), (2, len(out))):
        size = 1
        for d in out[lo:hi]:
            size *= d
        if mine[lo:hi] == out[lo:hi]:
            extents.append(size)
        elif all(d == 1 for d in mine[lo:hi]):
            extents.append(1)
        else:
            return None
    return tuple(extents)


def out_extents(out: tuple[int, ...]) -> tuple[int, int, int]:
    """(batch, channels, the rest) extents of a product's output shape."""
    return mul_extents(out, out)

"""Place every op of a quantized graph on VDLA or the CPU, with the reason shown.

The default follows the TVM paper's ResNet-18 flow: convolutions on VDLA except the
3-channel stem; pooling, residual adds, the classifier and input quantization on the CPU.
Options move the stem (channels padded to a whole block), the residual adds (ALU) and the
classifier (GEMM) to the accelerator, so users can study the trade-off.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.layers import Conv2D, Dense, LayerError
from compiler.quantize.qgraph import QGraph, QNode
from vdla_hw.config import Config


@dataclass(frozen=True, kw_only=True)
class PartitionOptions:
    stem_on_vdla: bool = False
    add_on_vdla: bool = False
    fc_on_vdla: bool = False


@dataclass(frozen=True)
class Placement:
    target: str  # "vdla" or "cpu"
    reason: str


def conv_layer(node: QNode, shape: tuple[int, ...]) -> Conv2D:
    """The compiler's Conv2D for a quantized conv node (square kernel, symmetric padding)."""
    a = node.attrs
    o, i, kh, kw = a["weight"].shape
    (sh, sw), pads = a["stride"], a["pad"]
    if kh != kw or sh != sw or len(set(pads)) != 1:
        raise LayerError(node.name, "shape", f"kernel {kh}x{kw}, stride {sh}x{sw}, pads {pads}: the accelerator "
                         "compiler takes square kernels, equal strides and equal padding")
    n, _, h, w = shape
    return Conv2D(name=node.name, n=n, h=h, w=w, ic=i, oc=o, k=kh, stride=sh, pad=pads[0],
                  shift=int(a["shift"]), relu=bool(a["relu"]))


def dense_layer(node: QNode, shape: tuple[int, ...]) -> Dense:
    m, k = node.attrs["weight"].shape
    return Dense(name=node.name, n=shape[0], ic=k, oc=m, shift=int(node.attrs["shift"]), relu=bool(node.attrs["relu"]))


def _fits(layer, config: Config) -> str | None:
    try:
        layer.check(config)
    except LayerError as err:
        return str(err)
    return None


def place(node: QNode, q: QGraph, config: Config, options: PartitionOptions) -> Placement:
    shape = q.shapes[node.inputs[0]] if node.inputs else None
    if node.op == "conv":
        try:
            layer = conv_layer(node, shape)
        except LayerError as err:
            return Placement("cpu", f"not expressible on the accelerator: {err}")
        if layer.ic < config.block_in and not options.stem_on_vdla:
            return Placement("cpu", f"{layer.ic}-channel stem: fills {layer.ic} of {config.block_in} GEMM input "
                             "lanes (paper: CPU); --stem-on-vdla pads it")
        problem = _fits(layer, config)
        if problem:
            return Placement("cpu", f"does not fit the accelerator: {problem}")
        padded = " (channels padded to a whole block)" if layer.ic % config.block_in else ""
        return Placement("vdla", f"convolution on the GEMM core{padded}")
    if node.op == "dense":
        if not options.fc_on_vdla:
            return Placement("cpu", "classifier: one row of GEMM work, weight-load bound (paper: CPU); --fc-on-vdla moves it")
        problem = _fits(dense_layer(node, shape), config)
        return Placement("cpu", f"does not fit the accelerator: {problem}") if problem \
            else Placement("vdla", "classifier as a GEMM")
    if node.op == "add":
        if options.add_on_vdla:
            return Placement("vdla", "residual add on the ALU (shift, add, requantize)")
        return Placement("cpu", "residual add: element-wise, memory bound (paper: CPU); --add-on-vdla moves it to the ALU")
    reasons = {"quantize": "input quantization (float) runs on the CPU",
               "maxpool": "pooling runs on the CPU (paper)",
               "avgpool": "pooling runs on the CPU (paper)",
               "flatten": "a reshape: no work",
               "relu": "element-wise (not fused into a producer) runs on the CPU"}
    return Placement("cpu", reasons.get(node.op, f"{node.op} has no accelerator lowering"))


def partition(q: QGraph, config: Config, options: PartitionOptions = PartitionOptions()) -> dict[str, Placement]:
    """Node name -> Placement for every node of ``q``."""
    return {node.name: place(node, q, config, options) for node in q.nodes}

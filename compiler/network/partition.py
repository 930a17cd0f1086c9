"""Place every op of a quantized graph on VDLA or the CPU, with the reason shown.

The default follows the TVM paper's ResNet-18 flow: convolutions on VDLA except the
3-channel stem; pooling, residual adds, the classifier and input quantization on the CPU.
Grouped convolutions with at least a GEMM block of input channels per group run on VDLA as
one GEMM per group; depthwise ones (one channel per group) and every element-wise op stay on
the CPU. Options move the stem (channels padded to a whole block), the residual adds (ALU)
and the classifiers (GEMM) to the accelerator, so users can study the trade-off.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.layers import LayerError
from compiler.network.vdla_ops import vdla_parts
from compiler.quantize.qgraph import QGraph, QNode
from vdla_hw.config import Config
from vdla_hw.isa import layout


@dataclass(frozen=True, kw_only=True)
class PartitionOptions:
    stem_on_vdla: bool = False
    add_on_vdla: bool = False
    fc_on_vdla: bool = False


@dataclass(frozen=True)
class Placement:
    target: str  # "vdla" or "cpu"
    reason: str


def _parts_or_reason(node: QNode, q: QGraph, config: Config):
    try:
        parts = vdla_parts(node, q.shapes[node.inputs[0]])
        for part in parts:
            part.layer.check(config)
    except LayerError as err:
        return None, err.why if err.field == "wide" else str(err)
    return parts, None


def _place_conv(node: QNode, q: QGraph, config: Config, options: PartitionOptions) -> Placement:
    groups, per_group = int(node.attrs["groups"]), node.attrs["weight"].shape[1]
    if groups > 1 and per_group < config.block_in:
        kind = "depthwise" if per_group == 1 else "grouped"
        return Placement("cpu", f"{kind} convolution: {per_group} input channel(s) per group would fill {per_group} "
                         f"of {config.block_in} GEMM input lanes; the CPU kernel does it directly")
    parts, problem = _parts_or_reason(node, q, config)
    if parts is None:
        return Placement("cpu", f"not on the accelerator: {problem}")
    layer = parts[0].layer
    if layer.ic < config.block_in and not options.stem_on_vdla:
        return Placement("cpu", f"{layer.ic}-channel stem: fills {layer.ic} of {config.block_in} GEMM input "
                         "lanes (paper: CPU); --stem-on-vdla pads it")
    how = f"as {groups} per-group GEMMs ({layer.ic} channels each)" if groups > 1 else "on the GEMM core"
    notes = [" channels padded to a whole block" if layer.ic % config.block_in else "",
             " input padded with its zero point" if parts[0].pad is not None else ""]
    extra = ";".join(n for n in notes if n)
    return Placement("vdla", f"convolution {how}{' (' + extra.strip() + ')' if extra else ''}")


def _place_dense(node: QNode, q: QGraph, config: Config, options: PartitionOptions) -> Placement:
    if not options.fc_on_vdla:
        return Placement("cpu", "classifier: one row of GEMM work, weight-load bound (paper: CPU); --fc-on-vdla moves it")
    parts, problem = _parts_or_reason(node, q, config)
    if parts is None:
        return Placement("cpu", f"not on the accelerator: {problem}")
    return Placement("vdla", "classifier as a GEMM")


def _place_add(node: QNode, config: Config, options: PartitionOptions) -> Placement:
    if not options.add_on_vdla:
        return Placement("cpu", "residual add: element-wise, memory bound (paper: CPU); --add-on-vdla moves it to the ALU")
    if node.attrs.get("a_mul", 1) != 1 or node.attrs.get("b_mul", 1) != 1:
        return Placement("cpu", "residual add: its inputs' steps are not powers of two apart (multipliers); "
                         "the ALU only shifts")
    imm = layout("ALU", config)["imm"]
    offset = int(node.attrs["offset"])
    if not imm.low <= offset <= imm.high:
        return Placement("cpu", f"residual add: its constant term {offset} does not fit the ALU's "
                         f"{imm.width}-bit immediate")
    return Placement("vdla", "residual add on the ALU (shift, add, requantize)")


REASONS = {
    "quantize": "input quantization (float) runs on the CPU",
    "maxpool": "pooling runs on the CPU (paper)",
    "avgpool": "pooling runs on the CPU (paper)",
    "avgpool2d": "pooling runs on the CPU (paper)",
    "reshape": "a reshape: no work",
    "lut": "element-wise function (table lookup): the ALU has no table; runs on the CPU",
    "muladd": "element-wise affine with per-element constants: memory bound; runs on the CPU",
    "relu": "element-wise (not fused into a producer) runs on the CPU",
    "concat": "concatenation: a copy on the CPU (on a device, producers would store into one buffer)",
    "gather": "data movement (transpose/slice/gather): a copy on the CPU",
    "softmax": "softmax: exponentials and a division, on the CPU",
}


def place(node: QNode, q: QGraph, config: Config, options: PartitionOptions) -> Placement:
    if node.op == "conv":
        return _place_conv(node, q, config, options)
    if node.op == "dense":
        return _place_dense(node, q, config, options)
    if node.op == "add":
        return _place_add(node, config, options)
    return Placement("cpu", REASONS.get(node.op, f"{node.op} has no accelerator lowering"))


def partition(q: QGraph, config: Config, options: PartitionOptions = PartitionOptions()) -> dict[str, Placement]:
    """Node name -> Placement for every node of ``q``."""
    return {node.name: place(node, q, config, options) for node in q.nodes}

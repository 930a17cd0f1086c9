"""Place every op of a quantized graph on VDLA or the CPU, with the reason shown.

The default follows the TVM paper's ResNet-18 flow: convolutions on VDLA except the
3-channel stem (the conv reading the network's input; another conv of fewer input channels
than a GEMM block stays on the CPU too, named by its kind: pointwise, 3x3, ...); pooling,
residual adds, the classifier and input quantization on the CPU.
Grouped convolutions with at least a GEMM block of input channels per group run on VDLA as
one GEMM per group; depthwise ones (one channel per group) and every element-wise op stay on
the CPU. Options move the stem (channels padded to a whole block), the residual adds (ALU),
the classifiers (GEMM) and the depthwise and narrow grouped convs (block-diagonal GEMMs,
``compiler.network.vdla_ops.block_diagonal``) to the accelerator, so users can study the trade-off.

Two placements (``placement=``): ``"all"`` puts every op the rules allow on the accelerator;
``"cost"`` (``vdla run``'s default) then keeps on the CPU each of those that does not make the
whole network faster, by the estimates of :mod:`.placement_cost` (accelerator estimate + host
work around it, with its neighbours in view, against the CPU model's time), the numbers in the
reason. The rules' reasons (what cannot run on VDLA) are the same in both.
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
    depthwise_on_vdla: bool = False


PLACEMENTS = ("cost", "all")


@dataclass(frozen=True)
class Placement:
    target: str  # "vdla" or "cpu"
    reason: str
    cost: dict | None = None  # cost placement: the comparison behind the side (placement_cost.comparison)


def _parts_or_reason(node: QNode, q: QGraph, config: Config):
    try:
        parts = vdla_parts(node, q.shapes[node.inputs[0]], q.shapes[node.output])
        for part in {id(p.layer): p for p in parts}.values():  # a product's parts share one layer
            part.layer.check(config)
    except LayerError as err:
        return None, err.why if err.field == "wide" else str(err)
    return parts, None


def reads_network_input(node: QNode, q: QGraph) -> bool:
    """Whether ``node`` reads the network's input (directly or its quantization): the stem."""
    source = node.inputs[0]
    producer = next((n for n in q.nodes if n.output == source), None)
    return source == q.input or (producer is not None and producer.op == "quantize" and producer.inputs[0] == q.input)


def conv_kind(node: QNode) -> str:
    """What a conv is, from its weight and groups: depthwise, grouped, pointwise or KHxKW."""
    groups, (oc, per_group, kh, kw) = int(node.attrs["groups"]), node.attrs["weight"].shape
    if groups > 1:
        return "depthwise convolution" if per_group == 1 else f"grouped convolution ({groups} groups)"
    return "pointwise (1x1) convolution" if (kh, kw) == (1, 1) else f"{kh}x{kw} convolution"


def _place_conv(node: QNode, q: QGraph, config: Config, options: PartitionOptions) -> Placement:
    groups, per_group = int(node.attrs["groups"]), node.attrs["weight"].shape[1]
    if groups > 1 and per_group < config.block_in:
        kind = "depthwise" if per_group == 1 else "grouped"
        if not options.depthwise_on_vdla:
            return Placement("cpu", f"{kind} convolution: {per_group} input channel(s) per group would fill {per_group} "
                             f"of {config.block_in} GEMM input lanes; the CPU kernel does it directly "
                             "(--depthwise-on-vdla: block-diagonal GEMMs)")
        parts, problem = _parts_or_reason(node, q, config)
        if parts is None:
            return Placement("cpu", f"not on the accelerator: {problem}")
        layer, diagonal = parts[0].layer, " block-diagonal" if parts[0].groups > 1 else ""
        return Placement("vdla", f"{kind} convolution as {len(parts)}{diagonal} GEMM(s) of {layer.ic} channels "
                         f"({per_group} useful input lane(s) in {layer.ic} per row)")
    parts, problem = _parts_or_reason(node, q, config)
    if parts is None:
        return Placement("cpu", f"not on the accelerator: {problem}")
    layer = parts[0].layer
    if layer.ic < config.block_in and not options.stem_on_vdla:
        lanes = f"fills {layer.ic} of {config.block_in} GEMM input lanes"
        if reads_network_input(node, q):
            return Placement("cpu", f"{layer.ic}-channel stem: {lanes} (paper: CPU); --stem-on-vdla pads it")
        return Placement("cpu", f"{conv_kind(node)} of {layer.ic} input channels: {lanes}; --stem-on-vdla pads it "
                         f"(every conv of fewer than {config.block_in})")
    how = f"as {groups} per-group GEMMs ({layer.ic} channels each)" if groups > 1 else "on the GEMM core"
    notes = [" channels padded to a whole block" if layer.ic % config.block_in else "",
             " input padded with its zero point" if parts[0].pad is not None else ""]
    extra = ";".join(n for n in notes if n)
    return Placement("vdla", f"convolution {how}{' (' + extra.strip() + ')' if extra else ''}")


def samples(shape: tuple) -> int:
    """The most samples an input of ``shape`` can hold: its first axis, but for tokens (3 axes)
    the smaller of the first two, since (batch, sequence, channels) and torch's sequence-first
    (sequence, batch, channels) look alike; a dense over at most this many rows is one row per
    sample in either reading (a classifier), one over more is a linear layer over tokens."""
    return int(min(shape[:2])) if len(shape) == 3 else int(shape[0])


def _place_dense(node: QNode, q: QGraph, config: Config, options: PartitionOptions) -> Placement:
    """A classifier (one row per image: at most :func:`samples` rows) stays on
    the CPU unless ``fc_on_vdla`` (the paper's rule: each weight is used once per image, so it is
    weight-load bound); a dense over more rows than images (a linear layer over tokens or
    channels-last pixels, each weight used once per row) is a matrix product like a conv's and is
    offloaded by rule. An LSTM/GRU's products (``recurrent``: the input product over every step's
    rows, each step's recurrent product over the batch's) are offloaded by rule too, however few
    their rows: they are the layer's only matrix products, run once per step with the same
    weights, so the GEMM core is their place (issue 28: every matrix product on the
    accelerator); the cost placement still weighs each against the CPU."""
    rows, images = int(q.shapes[node.inputs[0]][0]), samples(q.shapes[q.input])
    if node.attrs.get("recurrent"):
        parts, problem = _parts_or_reason(node, q, config)
        if parts is None:
            return Placement("cpu", f"not on the accelerator: {problem}")
        return Placement("vdla", f"LSTM/GRU product over {rows} rows as a GEMM (offloaded by rule however few "
                         "its rows: a recurrent layer's matrix products)")
    classifier = rows <= images
    if classifier and not options.fc_on_vdla:
        return Placement("cpu", "classifier: one row of GEMM work, weight-load bound (paper: CPU); --fc-on-vdla moves it")
    parts, problem = _parts_or_reason(node, q, config)
    if parts is None:
        return Placement("cpu", f"not on the accelerator: {problem}")
    return Placement("vdla", "classifier as a GEMM" if classifier else f"linear layer over {rows} rows as a GEMM")


def _place_matmul(node: QNode, q: QGraph, config: Config) -> Placement:
    """A product of two computed tensors (attention's Q.K^T and P.V) is a matrix product like a
    dense layer's, offloaded by rule: one GEMM per batch index, the second operand packed as its
    weights at run time (``vdla_ops.product_parts``)."""
    parts, problem = _parts_or_reason(node, q, config)
    if parts is None:
        return Placement("cpu", f"not on the accelerator: {problem}")
    layer = parts[0].layer
    return Placement("vdla", f"product of two computed tensors as {len(parts)} GEMM(s) of {layer.n}x{layer.ic} by "
                     f"{layer.ic}x{layer.oc}, the second operand packed as weights per run")


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
    "mul": "CPU: the ALU has MUL, but by its operand's low 8 bits as int8: a gate's centred codes (zero point "
           "-128) span 0..255 and the requantizing multiplier up to 2**14, and no ALU lowering of a product "
           "exists (signed inputs and a power-of-two multiplier would be MUL, SHR, ADD, MIN, MAX)",
    "concat": "concatenation: a copy on the CPU (on a device, producers would store into one buffer)",
    "gather": "data movement (transpose/slice/gather): a copy on the CPU",
    "resize": "bilinear resize: a weighted gather of four pixels each; the accelerator's loads move whole "
              "blocks, not pixels, so it runs on the CPU",
    "softmax": "softmax: exponentials and a division, on the CPU",
    "layernorm": "LayerNorm: each row's mean, variance and integer square root (divisions), on the CPU",
}


def place(node: QNode, q: QGraph, config: Config, options: PartitionOptions) -> Placement:
    if node.op == "conv":
        return _place_conv(node, q, config, options)
    if node.op == "dense":
        return _place_dense(node, q, config, options)
    if node.op == "add":
        return _place_add(node, config, options)
    if node.op == "matmul":
        return _place_matmul(node, q, config)
    return Placement("cpu", REASONS.get(node.op, f"{node.op} has no accelerator lowering"))


def partition(q: QGraph, config: Config, options: PartitionOptions = PartitionOptions(), *, placement: str = "all",
              cpu_model=None, runtime=None, vthreads: int | None = None, progress=None) -> dict[str, Placement]:
    """Node name -> Placement for every node of ``q``. ``placement="all"``: by the rules alone;
    ``"cost"`` also needs the ``cpu_model`` (``kernel_cost``, ``offload_cost``) and the board
    ``runtime`` profile the executor will charge, and the ``vthreads`` it will compile with."""
    rules = {node.name: place(node, q, config, options) for node in q.nodes}
    if placement == "all":
        return rules
    if placement != "cost":
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, got {placement!r}")
    if cpu_model is None or runtime is None:
        raise ValueError("cost placement needs the CPU model and the runtime profile")
    return by_cost(q, config, rules, cpu_model, runtime, vthreads, progress or (lambda message: None))


def by_cost(q: QGraph, config: Config, rules: dict[str, Placement], cpu_model, runtime, vthreads,
            progress) -> dict[str, Placement]:
    """The rule placement with each offload the cost model says loses moved back to the CPU."""
    from compiler.network import placement_cost as pc

    nodes = {node.name: node for node in q.nodes}
    candidates = [name for name, p in rules.items() if p.target == "vdla"]
    progress(f"placing {len(candidates)} accelerator-capable ops by cost (estimates: schedule search, CPU model)")
    if hasattr(cpu_model, "prefetch"):
        cpu_model.prefetch(pc.kernel_specs(q, candidates, config))
    estimates = {name: pc.estimate_op(nodes[name], q, config, cpu_model, vthreads) for name in candidates}
    model = pc.CostModel(q, config, cpu_model, runtime, estimates, resident=pc.activations_stay_on_device(runtime))
    targets = pc.place(model)
    out = dict(rules)
    for name in candidates:
        comparison = pc.comparison(model, name, targets)
        why = rules[name].reason
        out[name] = Placement(targets[name], f"{pc.reason(comparison)} ({why})" if targets[name] == "cpu" else
                              f"{why}; {pc.reason(comparison)}", comparison)
    return out

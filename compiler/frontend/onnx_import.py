"""Import a float ONNX model (opsets 13-21; older ones converted to 13) into the graph IR
(``compiler.frontend.graph``).

Steps: read the file and its external data, fix the input shape and run onnx's shape
inference (``onnx_read``); fold constants and the exporter's shape arithmetic with onnx's
reference evaluator (``fold``); rewrite exporter patterns (``patterns``; ``einsum``: an Einsum
that is a batched matrix product as Transpose + MatMul); map what is left, node by node, onto
the IR ops; then
simplify (``simplify``: BatchNormalization and other per-channel affines folded into the Conv
or Gemm before them, chains of data movement composed into one gather, dead nodes dropped).
Shapes come from onnx's shape inference. Every node is tried; anything unsupported is one
ModelError naming every unsupported node (``refusal``: grouped, common patterns named).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler.frontend import fold as folding
from compiler.frontend import einsum, recurrent, resize
from compiler.frontend.elementwise import BY_ONNX
from compiler.frontend.graph import (Graph, ModelError, Node, ceil_extra, conv_out, fresh_name, mul_extents,
                                     unique_names)
from compiler.frontend.onnx_read import (check_names, data_input, infer_shapes, opset_of, read_model, resolve_shape,
                                         static_shapes, upgraded)
from compiler.frontend.patterns import rewrite
from compiler.frontend.refusal import Refusals
from compiler.frontend.simplify import simplify
from vdla_hw.limits import MAX_KERNEL_BYTES, MAX_LAYER_MACS, MAX_RESIZE_MAP_BYTES, WINDOW_TAP_OPS, mib

LARGEST_FLOAT32 = float(np.finfo(np.float32).max)  # torch.finfo(torch.float32).min is its negative
# An added constant at or below this (torch's -inf, finfo.min, -1e9 or -1e4) masks its position for
# the Softmax that reads the sum: exp(-1e4) underflows float32 (and float64) to exactly 0
MASK_FLOOR = -1e4

ALIASES = ("Identity", "Dropout")
RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")
MOVEMENT = ("Transpose", "Gather", "GatherND", "GatherElements", "Slice", "Where", "Pad", "Expand", "Tile",
            "DepthToSpace", "SpaceToDepth", "ReverseSequence", "Compress")
MALFORMED = (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError, AttributeError, OverflowError)
CONST_ARITH = ("Add", "Sub", "Mul", "Div")
UNBOUNDED = {("clip", "lo"), ("clip", "hi")}  # attributes whose infinity means "no bound"


def nonfinite(op: str, attrs: dict) -> str | None:
    """What is not finite in float32 among a graph node's float attributes (arrays and scalars),
    or None: a constant the import computed from finite ones (1 / 1e-45, a BatchNorm scale over a
    zero variance) that the float model, the quantizer and the kernels would take as inf or NaN."""
    for key, value in attrs.items():
        if (op, key) in UNBOUNDED or isinstance(value, bool) or not isinstance(value, (float, np.ndarray)):
            continue
        if isinstance(value, np.ndarray) and value.dtype.kind != "f":
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            bad = ~np.isfinite(np.asarray(value, dtype=np.float32))
        if bad.any():
            shown = np.asarray(value, dtype=np.float64).reshape(-1)[np.flatnonzero(bad)[0]]
            return (f"its {key} is not finite in float32 ({int(bad.sum())} value(s), such as {shown:.4g}): the "
                    "float model would compute inf or NaN")
    return None


def axis_in(node, value, rank: int, fail, what: str = "axis", inclusive: bool = False) -> int:
    """ONNX axis ``value`` of a tensor of ``rank`` as 0..rank-1 (0..rank with ``inclusive``,
    Flatten's); outside [-rank, rank) one ModelError (it must not wrap around)."""
    v, high = int(value), rank + 1 if inclusive else rank
    if not -rank <= v < high:
        raise fail(node, f"{what} {v} is outside [{-rank}, {high - 1}] for a tensor of rank {rank}")
    return v + rank if v < 0 else v


def _attrs(node) -> dict:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _dilations(node, a: dict, fail) -> tuple[int, int]:
    dilations = [int(d) for d in a.get("dilations", [1, 1])]
    if len(dilations) != 2 or any(d < 1 for d in dilations):
        raise fail(node, f"dilations {dilations} must be two positive integers")
    return dilations[0], dilations[1]


def _reaching_taps(w: np.ndarray, dilations: tuple[int, int], size: tuple[int, int], stride: tuple,
                   pad: tuple) -> tuple[tuple[range, range], tuple]:
    """For each axis, the taps of ``w`` (OIHW, undilated) from the first to the last that holds a
    weight and reads the input for some output of the conv dilated by ``dilations`` on an H x W
    input, and the padding shrunk to match (the taps outside read only padding or are zero: their
    products are exact zeros). Found from the taps alone, before any dilated kernel is built: a
    dilated ASPP branch (DeepLab's rate 36 on a 14 x 14 map) is its centre tap, not a 73 x 73
    kernel. (All the taps and the padding as given when no tap reads the input: the output is
    the bias.)"""
    kept, new_pad = [], list(pad)
    for axis, (n, s, d, lo, hi) in enumerate(zip(size, stride, dilations, pad[:2], pad[2:])):
        k = w.shape[2 + axis]
        span = (k - 1) * d + 1
        starts = np.arange(conv_out(n, span, s, lo, hi)) * s - lo  # the input row each output's tap 0 reads
        nonzero = np.moveaxis(w, 2 + axis, 0).reshape(k, -1).any(axis=1)
        taps = [t for t in range(k) if nonzero[t] and ((starts + t * d >= 0) & (starts + t * d < n)).any()]
        if not taps:
            return (range(w.shape[2]), range(w.shape[3])), tuple(pad)
        kept.append(range(taps[0], taps[-1] + 1))
        new_pad[axis], new_pad[axis + 2] = lo - taps[0] * d, hi - (k - 1 - taps[-1]) * d
    return (kept[0], kept[1]), tuple(new_pad)


def _dilated(w: np.ndarray, taps: tuple[range, range], dilations: tuple[int, int]) -> np.ndarray:
    """The OIHW kernel of ``w``'s ``taps`` with ``dilations - 1`` zeros between them: its products
    with the padded input are the dilated conv's, term for term (the zeros add exact zeros on every
    level, so the graph IR, the references, the CPU kernels and the accelerator take it as an
    ordinary conv; the cost is the zero taps' MACs: 25/9 for a 3x3 at dilation 2, 81/9 at 4)."""
    (rows, cols), (dh, dw) = taps, dilations
    part = w[:, :, rows.start:rows.stop, cols.start:cols.stop]
    o, i, kh, kw = part.shape
    out = np.zeros((o, i, (kh - 1) * dh + 1, (kw - 1) * dw + 1), w.dtype)
    out[:, :, ::dh, ::dw] = part
    return out


def _check_ranges(model, where: str) -> None:
    """Refuse a Range of constant bounds whose output passes MAX_TENSOR_BYTES before shape
    inference: onnx's data propagation computes its values (a 141-byte Range to 3e9 asked for
    24 GB inside ``infer_shapes``)."""
    from onnx import helper, numpy_helper

    known = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output:
            value = next((a for a in node.attribute if a.name == "value"), None)
            if value is not None:
                known[node.output[0]] = helper.get_attribute_value(value)
    for node in model.graph.node:
        if node.op_type == "Range" and node.input and all(name in known for name in node.input):
            consts = {name: numpy_helper.to_array(known[name]) for name in node.input}
            folding.check_outputs(node, {}, consts, where)


class _AfterRefused(Exception):
    """A node reads a value that only a refused node computes (and onnx gave no shape for)."""


class _Importer:
    def __init__(self, model, where: str, input_shape=None):
        self.where = where
        check_names(model, where)
        model = upgraded(model, where)
        self.opset = opset_of(model, where)
        from onnx import numpy_helper

        inits = {t.name for t in model.graph.initializer}
        self.input = data_input(model, where, inits)
        shape = resolve_shape(self.input, where, input_shape)
        if nbytes := folding.too_large(shape):
            raise ModelError(where, folding.tensor_limit(self.input.name, shape, nbytes))
        _check_ranges(model, where)
        inferred = infer_shapes(model, where, self.input.name, shape)
        self.inferred = static_shapes(inferred)
        for tensor in model.graph.initializer:
            value = numpy_helper.to_array(tensor)
            # -inf is let through for attention masks (``_mask_add``); every other use of a
            # constant refuses it (``const``, ``nonfinite``)
            if value.dtype.kind == "f" and (bad := np.isnan(value) | (value == np.inf)).any():
                raise ModelError(where, f"initializer {tensor.name!r} holds {int(bad.sum())} NaN or infinite values "
                                 "other than -inf (an attention mask's); the model cannot be quantized")
        self.consts, self.todo = folding.fold(model, self.inferred, self.opset, where)
        self.todo = rewrite(self.todo, self.consts, self.inferred)
        self.alias: dict[str, str] = {}
        self.refused_values: set[str] = set()  # outputs of refused nodes
        # scores plus an attention mask (``_mask_add``): value -> (the scores' value, bool keep
        # array of their rank, broadcastable); only a Softmax may read it
        self.masked: dict[str, tuple[str, np.ndarray]] = {}
        self.nodes: list[Node] = []
        self.shapes: dict[str, tuple[int, ...]] = {self.input.name: shape}
        self.output_names = [value.name for value in model.graph.output]
        # every value name of the model: a value the importer makes up takes a name none of them has
        self.value_names = {v.name for v in model.graph.input} | set(inits) | {
            out for node in model.graph.node for out in node.output}
        self.todo = einsum.rewrite(self.todo, self.value_names)
        self.graph_name = model.graph.name if model.graph.name not in ("", "main_graph") else Path(where).stem

    # --- helpers ----------------------------------------------------------------------------
    def fail(self, node, why: str) -> ModelError:
        return ModelError(self.where, why, node.name or (node.output[0] if node.output else "?"), node.op_type)

    def value(self, name: str) -> str:
        while name in self.alias:
            name = self.alias[name]
        return name

    def const(self, node, name: str, what: str = "") -> np.ndarray:
        if name not in self.consts:
            raise self.fail(node, f"input {name!r}{what} must be a constant (an initializer or computable "
                            "from initializers and static shapes)")
        value = self.consts[name]
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise self.fail(node, f"constant {name!r} holds NaN or infinite values")
        if value.dtype.kind == "f" and value.size and np.abs(value).max() >= LARGEST_FLOAT32:
            # torch writes -inf so in attention masks (torch.finfo.min): added to scores, such a
            # constant would be calibrated as a value range, and int8 cannot hold it
            raise self.fail(node, f"constant {name!r} holds float32's largest magnitude "
                            f"({float(np.abs(value).max()):.4g}, torch's stand-in for -inf, as in an attention "
                            "mask); additive masks are not supported")
        return value

    def weight(self, node, index: int) -> np.ndarray | None:
        if len(node.input) <= index or not node.input[index]:
            return None
        return self.const(node, node.input[index]).astype(np.float32)

    def tensor(self, node, name: str) -> str:
        value = self.value(name)
        if value in self.masked:
            raise self.fail(node, f"input {name!r} is scores plus an attention mask (entries at or below "
                            f"{MASK_FLOOR:g}); only a Softmax may read it")
        if value not in self.shapes:
            if value in self.refused_values:
                raise _AfterRefused(value)
            if name in self.consts:
                raise self.fail(node, f"input {name!r} is a constant where the network's data is expected")
            raise self.fail(node, f"input {name!r} is not produced by an earlier node or the graph input")
        return value

    def out_shape(self, node) -> tuple[int, ...]:
        """The shape of ``node``'s (first) output: onnx's inference of the whole model, else of the
        node alone on its inputs' shapes and the constants folding computed (a Pad's pads, a
        Resize's scales or sizes computed by nodes onnx's data propagation does not follow),
        checked against MAX_TENSOR_BYTES as the whole model's shapes are (``fold.check_outputs``),
        before anything of that shape is allocated."""
        name = node.output[0]
        if name not in self.inferred:
            known = {n: self.shapes[self.value(n)] for n in node.input if n and self.value(n) in self.shapes}
            for out, shape in folding.node_shapes(node, known, self.consts, self.opset).items():
                if nbytes := folding.too_large(shape):
                    raise self.fail(node, folding.tensor_limit(out, shape, nbytes))
                self.inferred[out] = shape
        if name not in self.inferred:
            raise self.fail(node, f"onnx shape inference gave no static shape for {name!r}")
        return self.inferred[name]

    def emit(self, node, op: str, inputs: list[str], **attrs) -> None:
        """``node`` as one graph node ``op`` of its name, writing its first output."""
        self.add_node(node, node.name or node.output[0], op, inputs, node.output[0], self.out_shape(node), attrs)

    def add_node(self, node, name: str, op: str, inputs: list[str], output: str, shape, attrs: dict | None = None) -> None:
        """A graph node ``name`` made for ONNX ``node`` (refused if an attribute is not finite),
        writing ``output`` of ``shape``."""
        attrs = attrs or {}
        why = nonfinite(op, attrs)
        if why:
            raise self.fail(node, why)
        self.nodes.append(Node(name, op, inputs, output, attrs))
        self.shapes[output] = tuple(shape)

    def spatial(self, node, a: dict, x: str, kernel) -> tuple:
        """(stride, pad (t, l, b, r)) of a 2-D window op, auto_pad resolved."""
        shape = self.shapes[x]
        if len(shape) != 4 or len(kernel) != 2:
            raise self.fail(node, f"only 2-D windows on NCHW inputs are supported (input {shape})")
        if any(d != 1 for d in a.get("dilations", [1, 1])):
            raise self.fail(node, f"dilation {list(a['dilations'])} is not supported")
        sh, sw = a.get("strides", [1, 1])
        auto = _text(a.get("auto_pad", "NOTSET"))
        if auto in ("NOTSET", ""):
            pt, pl, pb, pr = a.get("pads", [0, 0, 0, 0])
        elif auto == "VALID":
            pt = pl = pb = pr = 0
        else:  # SAME_UPPER / SAME_LOWER: output = ceil(input / stride)
            pads = []
            for size, k, s in zip(shape[2:], kernel, (sh, sw)):
                total = max((-(-size // s) - 1) * s + k - size, 0)
                lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
                pads.append((lo, total - lo))
            (pt, pb), (pl, pr) = pads
        for size, k, lo, hi in zip(shape[2:], kernel, (pt, pl), (pb, pr)):
            if size + lo + hi < k:   # onnx's shape inference still promises an extent of 1 here
                raise self.fail(node, f"the {kernel[0]}x{kernel[1]} window is larger than its input "
                                f"{shape[2]}x{shape[3]} with padding {[int(pt), int(pl), int(pb), int(pr)]}")
        return (int(sh), int(sw)), (int(pt), int(pl), int(pb), int(pr))

    def work_bound(self, node, per_window: int, kernel, what: str, kernel_note: str = "", out=None) -> None:
        """Refuse a window op (conv, pooling) whose work passes MAX_LAYER_MACS, before calibration
        starts it: per kernel tap, ``per_window`` (for a conv, input channels per group x output
        channels; for pooling, channels) per output pixel, plus WINDOW_TAP_OPS (the references
        loop over the taps in Python). ``out``: the window op's NCHW output shape, if not the node's."""
        n, _, oh, ow = out or self.out_shape(node)
        ops = (n * per_window * oh * ow + WINDOW_TAP_OPS) * kernel[0] * kernel[1]
        if ops > MAX_LAYER_MACS:
            raise self.fail(node, f"{ops / 1e9:.1f} G {what} per run (a {kernel[0]}x{kernel[1]} kernel{kernel_note} "
                            f"over {oh}x{ow} outputs), more than the {MAX_LAYER_MACS / 1e9:.1f} G limit "
                            "(vdla_hw/limits.py MAX_LAYER_MACS)")

    # --- ops ------------------------------------------------------------------------------
    def op_Conv(self, node, a):
        x = self.tensor(node, node.input[0])
        w = self.weight(node, 1)
        if w is None or w.ndim != 4:
            raise self.fail(node, f"only 2-D convolutions with a constant weight are supported")
        if "kernel_shape" in a and tuple(a["kernel_shape"]) != w.shape[2:]:  # onnx's shapes follow the attribute
            raise self.fail(node, f"kernel_shape {list(a['kernel_shape'])} does not match the weight's {w.shape[2:]}")
        groups = int(a.get("group", 1))
        c = self.shapes[x][1]
        if c % groups or w.shape[0] % groups or w.shape[1] * groups != c:
            raise self.fail(node, f"weight {w.shape} with group={groups} does not match {c} input channels")
        b = self.weight(node, 2)
        dilations = _dilations(node, a, self.fail)
        span = tuple((k - 1) * d + 1 for k, d in zip(w.shape[2:], dilations))
        stride, pad = self.spatial(node, {k: v for k, v in a.items() if k != "dilations"}, x, span)
        if dilations != (1, 1):  # only dilated kernels grow past their input (an undilated conv stays as written)
            taps, pad = _reaching_taps(w, dilations, self.shapes[x][2:], stride, pad)
            span = tuple((len(t) - 1) * d + 1 for t, d in zip(taps, dilations))
            nbytes = 4 * w.shape[0] * w.shape[1] * span[0] * span[1]
            if nbytes > MAX_KERNEL_BYTES:
                raise self.fail(node, f"the dilated kernel (dilations {list(dilations)}, {span[0]}x{span[1]} with "
                                f"the zeros between the taps that read the input) needs {mib(nbytes)} as float32, "
                                f"more than the {mib(MAX_KERNEL_BYTES)} limit (vdla_hw/limits.py MAX_KERNEL_BYTES)")
            w = _dilated(w, taps, dilations)
        self.work_bound(node, w.shape[1] * w.shape[0], w.shape[2:], "multiply-accumulates",
                        " with its dilation zeros" if dilations != (1, 1) else "")
        self.emit(node, "conv", [x], weight=w, bias=np.zeros(w.shape[0], np.float32) if b is None else b,
                  stride=stride, pad=pad, groups=groups)

    def op_BatchNormalization(self, node, a):
        x = self.tensor(node, node.input[0])
        if a.get("training_mode", 0):
            raise self.fail(node, "training_mode=1 is not supported; export the model in eval mode")
        scale, beta, mean, var = (self.const(node, name).astype(np.float64) for name in node.input[1:5])
        spread = var + a.get("epsilon", 1e-5)
        if np.any(spread <= 0):
            raise self.fail(node, f"variance + epsilon is {spread.min():.4g} (channel {int(np.argmin(spread))}); "
                            "BatchNormalization divides by its square root, which must be positive")
        k = scale / np.sqrt(spread)
        per_channel = (1, -1) + (1,) * (len(self.shapes[x]) - 2)
        self.emit(node, "affine", [x], scale=k.reshape(per_channel), offset=(beta - mean * k).reshape(per_channel))

    def op_elementwise(self, node, a):
        """An ONNX op of ``compiler.frontend.elementwise``: its graph op, its attributes parsed."""
        op = BY_ONNX[node.op_type]
        try:
            attrs = op.attrs(a)
        except ValueError as err:   # an attribute value the op does not define
            raise self.fail(node, str(err)) from None
        self.emit(node, op.name, [self.tensor(node, node.input[0])], **attrs)

    for _op in BY_ONNX:
        locals()[f"op_{_op}"] = op_elementwise
    del _op

    def op_PRelu(self, node, a):
        """PRelu with one slope for every element (a scalar, or per channel all equal): LeakyRelu."""
        x = self.tensor(node, node.input[0])
        slope = self.const(node, node.input[1], " (slope)").astype(np.float32)
        if slope.size == 0 or not np.all(slope == slope.reshape(-1)[0]):
            raise self.fail(node, f"PRelu with {np.unique(slope).size} different slopes is not supported "
                            "(one slope for all channels is: it is LeakyRelu)")
        op = BY_ONNX["LeakyRelu"]
        self.emit(node, op.name, [x], **op.attrs({"alpha": float(slope.reshape(-1)[0])}))

    def bound(self, node, name: str, what: str) -> float:
        """Clip's ``min`` or ``max`` input: a constant scalar (ONNX: a tensor of empty shape; one
        element of shape (1,) is taken too)."""
        value = self.const(node, name, f" ({what})")
        if value.size != 1:
            raise self.fail(node, f"{what} {name!r} must be a scalar, not of shape {value.shape}")
        return float(value.reshape(-1)[0])

    def op_Clip(self, node, a):
        x = self.tensor(node, node.input[0])
        bound = [self.bound(node, node.input[i], what) if len(node.input) > i and node.input[i] else None
                 for i, what in ((1, "min"), (2, "max"))]
        lo = -np.inf if bound[0] is None else bound[0]
        hi = np.inf if bound[1] is None else bound[1]
        if lo > hi:
            raise self.fail(node, f"min {lo} is above max {hi}")
        if lo == 0 and hi == np.inf:
            self.emit(node, "relu", [x])
        else:
            self.emit(node, "clip", [x], lo=lo, hi=hi)

    def op_arith(self, node, a):
        names = list(node.input)
        consts = [n in self.consts for n in names]
        if node.op_type == "Add" and sum(consts) == 1 and self._mask_add(node, names, consts[0]):
            return
        if not any(consts):
            if node.op_type == "Mul":
                self._product(node, names)
                return
            if node.op_type != "Add":
                raise self.fail(node, f"{node.op_type} of two computed tensors is not supported (only Add and Mul)")
            x, y = (self.tensor(node, n) for n in names)
            if self.shapes[x] != self.shapes[y]:
                raise self.fail(node, f"Add inputs have shapes {self.shapes[x]} and {self.shapes[y]}; "
                                "broadcasting two computed tensors is not supported")
            self.emit(node, "add", [x, y])
            return
        if all(consts):
            raise self.fail(node, "both inputs are constant but were not folded")
        const_first = consts[0]
        x = self.tensor(node, names[1] if const_first else names[0])
        c = self.const(node, names[0] if const_first else names[1]).astype(np.float64)
        rank = len(self.shapes[x])
        if c.ndim > rank or np.broadcast_shapes(c.shape, self.shapes[x]) != self.shapes[x]:
            raise self.fail(node, f"constant of shape {c.shape} would broadcast the input {self.shapes[x]}")
        c = c.reshape((1,) * (rank - c.ndim) + c.shape)
        one, zero = np.ones_like(c), np.zeros_like(c)
        if node.op_type == "Add":
            scale, offset = one, c
        elif node.op_type == "Mul":
            scale, offset = c, zero
        elif node.op_type == "Sub":
            scale, offset = (-one, c) if const_first else (one, -c)
        else:
            if const_first:
                raise self.fail(node, "division of a constant by a computed tensor is not supported")
            if np.any(c == 0):
                raise self.fail(node, "division by a constant that contains zero")
            scale, offset = 1.0 / c, zero
        self.emit(node, "affine", [x], scale=scale, offset=offset)

    op_Add = op_Sub = op_Mul = op_Div = op_arith

    def _mask_add(self, node, names, const_first: bool) -> bool:
        """An Add of computed scores and a constant holding entries at or below MASK_FLOOR (an
        additive attention mask: torch's -inf, finfo.min, -1e9): recorded in ``self.masked`` for
        the Softmax that reads it, which takes the kept positions as its ``mask``; the constant's
        other (kept) entries, if any is not 0, become an ``affine`` offset on the scores. False
        (nothing done) for any other Add."""
        c = self.consts[names[0] if const_first else names[1]]
        if c.dtype.kind != "f" or not c.size or np.isnan(c).any() or not (c <= MASK_FLOOR).any():
            return False
        x = self.tensor(node, names[1] if const_first else names[0])
        shape = self.shapes[x]
        if c.ndim > len(shape) or np.broadcast_shapes(c.shape, shape) != shape:
            raise self.fail(node, f"attention mask of shape {c.shape} would broadcast the scores {shape}")
        c = c.astype(np.float64).reshape((1,) * (len(shape) - c.ndim) + c.shape)
        keep = c > MASK_FLOOR
        offset = np.where(keep, c, 0.0)
        if np.any(offset != 0):  # a bias on the kept positions (a relative position bias with the mask)
            if not np.all(np.isfinite(offset)) or np.abs(offset).max() >= LARGEST_FLOAT32:
                raise self.fail(node, "the attention mask's kept entries are not finite")
            biased = self.made_value(node.output[0] + ".bias")
            self.add_node(node, (node.name or node.output[0]) + ".bias", "affine", [x], biased, shape,
                          {"scale": np.ones_like(offset), "offset": offset})
            x = biased
        self.masked[node.output[0]] = (x, keep)
        return True

    def _product(self, node, names):
        """Mul of two computed tensors (SiLU's x * sigmoid(x), a squeeze-excitation gate): one side
        has the output's shape, the other equals it or broadcasts by batch, channel or all the
        spatial axes at once (``graph.mul_extents``)."""
        x, y = (self.tensor(node, n) for n in names)
        out = self.out_shape(node)
        shapes = (self.shapes[x], self.shapes[y])
        if out not in shapes or any(mul_extents(shape, out) is None for shape in shapes):
            raise self.fail(node, f"Mul inputs have shapes {shapes[0]} and {shapes[1]}; a product of two computed "
                            "tensors takes equal shapes or one side broadcast over the other's batch, channels or "
                            "all its spatial axes (such as (N, C, 1, 1) or (1,))")
        self.emit(node, "mul", [x, y])

    def op_MaxPool(self, node, a):
        x = self.tensor(node, node.input[0])
        if a.get("storage_order", 0):
            raise self.fail(node, "storage_order=1 is not supported")
        kernel = tuple(int(k) for k in a["kernel_shape"])
        stride, pad = self.spatial(node, a, x, kernel)
        if max(pad) >= min(kernel):
            raise self.fail(node, f"padding {list(pad)} must be smaller than the window {kernel}")
        self.work_bound(node, self.shapes[x][1], kernel, "window steps")
        self.emit(node, "maxpool", [x], kernel=kernel, stride=stride, pad=pad, ceil=self._ceil(node, a, x, kernel,
                                                                                                  stride, pad))

    def _ceil(self, node, a, x, kernel, stride, pad) -> tuple[int, int]:
        if not a.get("ceil_mode", 0):
            return (0, 0)
        h, w = self.shapes[x][2:]
        return (ceil_extra(h, kernel[0], stride[0], pad[0], pad[2]), ceil_extra(w, kernel[1], stride[1], pad[1], pad[3]))

    def op_AveragePool(self, node, a):
        x = self.tensor(node, node.input[0])
        kernel = tuple(int(k) for k in a["kernel_shape"])
        stride, pad = self.spatial(node, a, x, kernel)
        ceil = self._ceil(node, a, x, kernel, stride, pad)
        h, w = self.shapes[x][2:]
        if kernel == (1, 1) and stride == (1, 1) and not any(pad):
            self.alias[node.output[0]] = x
        elif kernel == (h, w) and not any(pad):
            self.emit(node, "avgpool", [x])
        else:
            self.work_bound(node, self.shapes[x][1], kernel, "window steps")
            self.emit(node, "avgpool2d", [x], kernel=kernel, stride=stride, pad=pad, ceil=ceil,
                      count_pad=bool(a.get("count_include_pad", 0)))

    def op_GlobalAveragePool(self, node, a):
        x = self.tensor(node, node.input[0])
        if len(self.shapes[x]) != 4:
            raise self.fail(node, f"only NCHW inputs are supported, got {self.shapes[x]}")
        self.emit(node, "avgpool", [x])

    def op_GlobalMaxPool(self, node, a):
        x = self.tensor(node, node.input[0])
        h, w = self.shapes[x][2:]
        self.emit(node, "maxpool", [x], kernel=(h, w), stride=(1, 1), pad=(0, 0, 0, 0), ceil=(0, 0))

    def op_ReduceMean(self, node, a):
        x = self.tensor(node, node.input[0])
        shape = self.shapes[x]
        axes = a.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            axes = self.const(node, node.input[1]).reshape(-1).tolist()
        axes = sorted(axis_in(node, v, len(shape), self.fail, "axes entry") for v in (axes or []))
        if len(shape) == 4 and axes == [2, 3]:
            if a.get("keepdims", 1):
                self.emit(node, "avgpool", [x])
                return
            pooled = self.made_value(node.output[0] + ".keepdims")
            self.add_node(node, (node.name or node.output[0]) + ".mean", "avgpool", [x], pooled, shape[:2] + (1, 1))
            self.emit(node, "reshape", [pooled], shape=self.out_shape(node))
            return
        if not axes or axes[0] == 0 or axes != list(range(axes[0], axes[-1] + 1)):
            raise self.fail(node, f"only the mean over H and W of an NCHW tensor, or over adjacent axes after the "
                            f"batch axis (a mean over tokens), is supported (axes {axes} of {shape})")
        self._mean_of_adjacent_axes(node, x, shape, axes[0], axes[-1] + 1)

    def _mean_of_adjacent_axes(self, node, x: str, shape: tuple, first: int, end: int) -> None:
        """The mean over axes ``first:end`` (after the batch axis; timm's ``x.mean(dim=1)`` over the
        tokens of (N, T, C)) as a window mean: ``x`` seen as (N, A, R, B) (A, R, B the products of
        the axes before, in and after the range) averaged over R by an ``avgpool2d`` of window
        (R, 1), a global ``avgpool`` when B is 1; reshapes on both sides cost nothing."""
        n, size = shape[0], lambda axes: int(np.prod(axes, dtype=np.int64))
        seen = (n, size(shape[1:first]), size(shape[first:end]), size(shape[end:]))
        name = node.name or node.output[0]
        rows = self.made_value(node.output[0] + ".rows")
        self.add_node(node, name + ".rows", "reshape", [x], rows, seen, {"shape": seen})
        pooled = self.made_value(node.output[0] + ".mean")
        if seen[3] == 1:
            self.add_node(node, name + ".mean", "avgpool", [rows], pooled, seen[:2] + (1, 1))
        else:
            window, out = (seen[2], 1), seen[:2] + (1, seen[3])
            self.work_bound(node, seen[1], window, "window steps", out=out)
            self.add_node(node, name + ".mean", "avgpool2d", [rows], pooled, out,
                          {"kernel": window, "stride": (1, 1), "pad": (0, 0, 0, 0), "ceil": (0, 0), "count_pad": False})
        self.emit(node, "reshape", [pooled], shape=self.out_shape(node))

    def made_value(self, base: str) -> str:
        """A fresh value name from ``base`` that no value of the model has (for values the import makes up)."""
        name = fresh_name(base, self.value_names)
        self.value_names.add(name)
        return name

    def op_reshape(self, node, a):
        x = self.tensor(node, node.input[0])
        if node.op_type == "Flatten":
            axis_in(node, a.get("axis", 1), len(self.shapes[x]), self.fail, inclusive=True)
        out = self.out_shape(node)
        if int(np.prod(out)) != int(np.prod(self.shapes[x])):
            raise self.fail(node, f"reshape of {self.shapes[x]} to {out} changes the number of elements")
        if out == self.shapes[x]:
            self.alias[node.output[0]] = x
        else:
            self.emit(node, "reshape", [x], shape=out)

    op_Reshape = op_Flatten = op_Squeeze = op_Unsqueeze = op_reshape

    def op_Concat(self, node, a):
        """Concatenation of computed tensors; one computed tensor with constants (ViT's class token
        before its patches) is a copy with the constants as its fill (a ``gather``)."""
        names = [n for n in node.input if n]
        if any(n in self.consts for n in names) and sum(n not in self.consts for n in names) == 1:
            self.op_movement(node, a)
            return
        inputs = [self.tensor(node, n) for n in names]
        rank = len(self.shapes[inputs[0]])
        axis = axis_in(node, a["axis"], rank, self.fail)
        if axis == 0:
            raise self.fail(node, "concatenation along the batch axis is not supported")
        self.emit(node, "concat", inputs, axis=axis)

    def op_Softmax(self, node, a):
        name = self.value(node.input[0])
        if name not in self.masked:
            x = self.tensor(node, node.input[0])
            self.emit(node, "softmax", [x], axis=axis_in(node, a.get("axis", -1), len(self.shapes[x]), self.fail))
            return
        x, keep = self.masked[name]  # scores plus an attention mask (_mask_add)
        axis = axis_in(node, a.get("axis", -1), len(self.shapes[x]), self.fail)
        rows = np.broadcast_to(keep, self.shapes[x]).any(axis=axis)
        if not rows.all():
            raise self.fail(node, f"the attention mask masks every position of {int((~rows).sum())} row(s) along "
                            f"axis {axis} (torch computes NaN there)")
        self.emit(node, "softmax", [x], axis=axis, mask=keep)

    def op_LayerNormalization(self, node, a):
        """Normalisation over the last axis only, with a constant Scale and optional constant B
        (each of C values, or one broadcast); the Mean and InvStdDev outputs must be unused."""
        x = self.tensor(node, node.input[0])
        shape = self.shapes[x]
        axis = axis_in(node, a.get("axis", -1), len(shape), self.fail)
        if axis != len(shape) - 1:
            raise self.fail(node, f"only normalisation over the last axis is supported (axis {a.get('axis', -1)} "
                                  f"of a {len(shape)}-D input)")
        if any(node.output[1:]):
            raise self.fail(node, "its Mean and InvStdDev outputs are not supported")
        eps = float(a.get("epsilon", 1e-5))
        if not (np.isfinite(eps) and eps >= 0):
            raise self.fail(node, f"epsilon {eps} is not a finite non-negative number")
        channels = (shape[-1],)
        scale = np.broadcast_to(self.const(node, node.input[1], " (Scale)").astype(np.float32).reshape(-1), channels)
        bias = self.weight(node, 2)
        bias = np.zeros(channels, np.float32) if bias is None else np.broadcast_to(bias.reshape(-1), channels)
        self.emit(node, "layernorm", [x], scale=scale.copy(), bias=bias.copy(), eps=eps)

    def op_Gemm(self, node, a):
        x = self.tensor(node, node.input[0])
        if a.get("transA", 0):
            raise self.fail(node, "transA=1 is not supported")
        w = self.weight(node, 1)
        w = w if a.get("transB", 0) else w.T
        bias = self.weight(node, 2)
        bias = np.zeros(w.shape[0], np.float32) if bias is None else bias.reshape(-1)
        self._dense(node, x, w * a.get("alpha", 1.0), np.broadcast_to(bias * a.get("beta", 1.0), (w.shape[0],)))

    def op_MatMul(self, node, a):
        x = self.tensor(node, node.input[0])
        if len(node.input) > 1 and node.input[1] not in self.consts:
            self._matmul(node, x, self.tensor(node, node.input[1]))
            return
        w = self.weight(node, 1)
        if w is None or w.ndim != 2:
            raise self.fail(node, "only MatMul by a constant 2-D matrix is supported")
        self._dense(node, x, w.T, np.zeros(w.shape[1], np.float32))

    def _matmul(self, node, a: str, b: str) -> None:
        """MatMul of two computed tensors (attention's Q.K^T and P.V): (..., N, K) x (..., K, M)
        with the same leading (batch, head) axes, one product per index of them."""
        sa, sb = self.shapes[a], self.shapes[b]
        if len(sa) < 2 or len(sb) < 2:
            raise self.fail(node, f"MatMul of two computed tensors of shapes {sa} and {sb}: each needs at least "
                            "two axes")
        if sa[:-2] != sb[:-2]:
            raise self.fail(node, f"MatMul of two computed tensors of shapes {sa} and {sb}: their batch axes "
                            f"{sa[:-2]} and {sb[:-2]} differ (broadcasting them is not supported)")
        if sa[-1] != sb[-2]:
            raise self.fail(node, f"MatMul of shapes {sa} and {sb}: inner sizes {sa[-1]} and {sb[-2]} differ")
        self.emit(node, "matmul", [a, b], alpha=1.0)

    def _dense(self, node, x, w, bias):
        """A dense layer over the last axis of ``x``. An input of more than two axes (tokens x
        channels, or channels-last N x H x W x C) is one dense layer over all its rows: reshaped
        to (rows, channels), the dense op (one GEMM of ``rows`` rows on the accelerator), and
        reshaped back to the input's leading axes."""
        shape = self.shapes[x]
        if len(shape) < 2 or w.ndim != 2 or w.shape[1] != shape[-1]:
            raise self.fail(node, f"dense weight {w.shape} does not match input {shape} (the weight's second "
                                  "axis must be the input's last)")
        attrs = dict(weight=np.ascontiguousarray(w, np.float32), bias=np.asarray(bias, np.float32).copy())
        if len(shape) == 2:
            self.emit(node, "dense", [x], **attrs)
            return
        name = node.name or node.output[0]
        rows = (int(np.prod(shape[:-1])), int(shape[-1]))
        flat, product = (self.made_value(f"{node.output[0]}.{what}") for what in ("rows", "dense"))
        self.add_node(node, f"{name}.rows", "reshape", [x], flat, rows, {"shape": rows})
        self.add_node(node, name, "dense", [flat], product, (rows[0], w.shape[0]), attrs)
        out_shape = self.out_shape(node)
        self.add_node(node, f"{name}.tokens", "reshape", [product], node.output[0], out_shape, {"shape": out_shape})

    def op_Cast(self, node, a):
        import onnx

        if a.get("to") != onnx.TensorProto.FLOAT:
            raise self.fail(node, "casts of the network's data to other types than float32 are not supported")
        self.alias[node.output[0]] = self.tensor(node, node.input[0])

    def op_movement(self, node, a):
        data = [n for n in node.input if n and n not in self.consts]
        if len(data) != 1:
            raise self.fail(node, f"{node.op_type} of {len(data)} computed tensors is not supported")
        if node.op_type.startswith("Gather") and len(node.input) > 1 and data[0] == node.input[1]:
            raise self.fail(node, f"the computed tensor {data[0]!r} is used as indices into the constant "
                            f"{node.input[0]!r} (an embedding lookup of token ids): lookups by computed indices are "
                            "not supported; export the model from its embeddings (a float input, e.g. a Hugging Face "
                            "model's inputs_embeds)")
        x = self.tensor(node, data[0])
        self.out_shape(node)  # inferred (and bounded) before the node is run on numbered inputs
        index, fill, shape = folding.index_map(node, data[0], self.consts, self.shapes[x], self.opset, self.where)
        if shape != self.out_shape(node):
            raise self.fail(node, f"evaluated shape {shape} differs from the inferred {self.out_shape(node)}")
        if index.size == int(np.prod(self.shapes[x])) and np.array_equal(index, np.arange(index.size)):
            self.op_reshape(node, a)
        else:
            self.emit(node, "gather", [x], index=index, fill=fill, shape=shape)

    for _op in MOVEMENT:
        locals()[f"op_{_op}"] = op_movement
    del _op

    def op_Where(self, node, a):
        """``Where(cond, scores, masked)`` (or with the sides swapped: ``masked_fill``) of a
        constant condition, read only by Softmax nodes, whose constant side is at or below
        MASK_FLOOR wherever it is taken: an attention mask (``self.masked``, as ``_mask_add``).
        Any other Where with a constant condition is data movement."""
        names = list(node.input)
        computed = [i for i, n in enumerate(names) if n not in self.consts]
        readers = [r.op_type for r in self.todo if node.output[0] in r.input]
        if computed not in ([1], [2]) or not readers or any(r != "Softmax" for r in readers):
            self.op_movement(node, a)
            return
        side = computed[0]
        x = self.tensor(node, names[side])
        shape = self.shapes[x]
        cond, other = np.asarray(self.consts[names[0]]).astype(bool), np.asarray(self.consts[names[3 - side]])
        if other.dtype.kind != "f" or np.isnan(other).any() or self.out_shape(node) != shape:
            self.op_movement(node, a)
            return
        keep = cond if side == 1 else ~cond
        keep = keep.reshape((1,) * (len(shape) - keep.ndim) + keep.shape)
        full = np.broadcast_shapes(other.shape, keep.shape)  # within the output's: its shape is x's
        taken = np.broadcast_to(other, full)[~np.broadcast_to(keep, full)]  # the constant where it is taken
        if not taken.size or np.any(taken > MASK_FLOOR):
            self.op_movement(node, a)
            return
        self.masked[node.output[0]] = (x, keep)

    def op_Resize(self, node, a):
        """Resize in ``nearest`` mode is a copy (every coordinate transformation and nearest_mode
        onnx defines, found by running it): a gather. ``linear`` mode over H and W (bilinear
        upsampling, ``compiler.frontend.resize``) is a weighted gather: ``resize``. Cubic refused."""
        mode = _text(a.get("mode", "nearest"))
        if mode == "nearest":
            self.op_movement(node, a)
        elif mode == "linear":
            self.bilinear(node, a)
        else:
            raise self.fail(node, f"Resize mode {mode!r} is not supported (only 'nearest', a copy, and 'linear' "
                            "over height and width)")

    def bilinear(self, node, a) -> None:
        x = self.tensor(node, node.input[0])
        shape, out = self.shapes[x], self.out_shape(node)
        ctm = _text(a.get("coordinate_transformation_mode", "half_pixel"))
        if ctm not in resize.MODES:
            raise self.fail(node, f"linear Resize with coordinate_transformation_mode {ctm!r} is not supported "
                            f"(supported: {', '.join(resize.MODES)})")
        if _text(a.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
            raise self.fail(node, "linear Resize with a keep_aspect_ratio_policy other than 'stretch' is not supported")
        if len(shape) != 4 or len(out) != 4 or out[:2] != shape[:2]:
            raise self.fail(node, f"linear Resize of {shape} to {out}: only the height and width of an NCHW "
                            "tensor can be resized")
        axes = [axis_in(node, v, 4, self.fail, "axes entry") for v in a.get("axes", range(4))]
        if len(set(axes)) != len(axes):
            raise self.fail(node, f"axes {list(a['axes'])} name an axis more than once")
        scales = self.const(node, node.input[2]) if len(node.input) > 2 and node.input[2] else np.zeros(0)
        by_axis = dict(zip(axes, (float(v) for v in scales.reshape(-1)))) if scales.size else {}
        if any(by_axis.get(d, 1.0) != 1.0 for d in (0, 1)):
            raise self.fail(node, f"linear Resize scales {scales.tolist()}: only height and width may change")
        factors = tuple(by_axis.get(d, out[d] / shape[d]) for d in (2, 3))
        if a.get("antialias", 0) and min(factors) < 1:
            raise self.fail(node, "linear Resize with antialias when shrinking is not supported")
        nbytes = 32 * out[2] * out[3]  # the (H' x W', 4) int64 index map
        if nbytes > MAX_RESIZE_MAP_BYTES:
            raise self.fail(node, f"linear Resize to a {out[2]}x{out[3]} plane: its index map needs {mib(nbytes)}, "
                            f"more than the {mib(MAX_RESIZE_MAP_BYTES)} limit (vdla_hw/limits.py MAX_RESIZE_MAP_BYTES)")
        index, weight = resize.bilinear_map(shape[2:], out[2:], factors, ctm)
        self.emit(node, "resize", [x], index=index, weight=weight.astype(np.float32), shape=out)

    def op_Split(self, node, a):
        """Split (shufflenet's channel halves): each output a gather of its slice, the slices found
        by running the node (the ``split`` input or attribute, ``num_outputs``, equal parts)."""
        x = self.tensor(node, node.input[0])
        maps = folding.index_maps(node, node.input[0], self.consts, self.shapes[x], self.opset, self.where)
        for k, (out, (index, fill, shape)) in enumerate(zip(node.output, maps)):
            if out and shape != self.inferred.get(out, shape):
                raise self.fail(node, f"evaluated shape {shape} of {out!r} differs from the inferred {self.inferred[out]}")
            if out:
                self.add_node(node, f"{node.name or node.output[0]}.{k}", "gather", [x], out, shape,
                              {"index": index, "fill": fill, "shape": shape})

    def op_recurrent(self, node, a):
        """LSTM and GRU unrolled over their static sequence (``compiler.frontend.recurrent``)."""
        recurrent.unroll(self, node, a)

    op_LSTM = op_GRU = op_recurrent

    # --- driver ---------------------------------------------------------------------------
    def supported(self, node) -> bool:
        return node.domain in ("", "ai.onnx") and (node.op_type in ALIASES or hasattr(self, f"op_{node.op_type}"))

    def take(self, node) -> None:
        """Map ``node`` onto the IR; a ModelError (naming it) says why it cannot be."""
        if not self.supported(node):
            domain = f" of domain {node.domain!r}" if node.domain not in ("", "ai.onnx") else ""
            raise self.fail(node, f"unsupported op {node.op_type}{domain}")
        try:
            if node.op_type in ALIASES:
                self.alias[node.output[0]] = self.tensor(node, node.input[0])
            else:
                getattr(self, f"op_{node.op_type}")(node, _attrs(node))
        except (ModelError, _AfterRefused):
            raise
        except MALFORMED as err:  # inputs, attributes or initializers not of the form the op needs
            raise self.fail(node, f"malformed {node.op_type} node ({type(err).__name__}: {err})") from None
        out = node.output[0] if node.output else None
        if out in self.shapes and min(self.shapes[out], default=1) <= 0:
            raise self.fail(node, f"output shape {self.shapes[out]} is empty (a window or stride larger "
                            "than its input?)")

    def refused(self, node) -> None:
        """Stand in for a node that cannot be imported: its outputs keep onnx's shapes, so the
        nodes after it are still checked (an output without one stops its readers quietly)."""
        for out in node.output:
            self.alias.pop(out, None)
            self.refused_values.add(out)
            if out in self.inferred:
                self.shapes[out] = self.inferred[out]

    def run(self) -> Graph:
        refusals = Refusals(self.todo, self.consts)
        for node in self.todo:
            try:
                self.take(node)
            except _AfterRefused:  # an input that only a refused node computes: already reported
                self.refused(node)
            except ModelError as err:
                refusals.add(node, err.why)
                self.refused(node)
        refusals.check(self.where)
        outputs = tuple(self.value(name) for name in self.output_names)
        for name, output in zip(self.output_names, outputs):
            if output in self.masked:
                raise ModelError(self.where, f"graph output {name!r} is scores plus an attention mask; only a "
                                 "Softmax may read it")
            if output not in self.shapes:  # (the input itself is fine: a network of no layers)
                why = "is a constant" if name in self.consts else "is not computed by any node"
                raise ModelError(self.where, f"graph output {name!r} {why}; there is no network to run")
        with np.errstate(over="ignore", invalid="ignore"):  # checked below, once, by node
            graph = unique_names(simplify(Graph(self.graph_name, self.input.name, outputs, self.nodes, self.shapes)))
        for node in graph.nodes:  # folding (a Mul into the Conv before it) may overflow float32 too
            why = nonfinite(node.op, node.attrs)
            if why:
                raise ModelError(self.where, f"{why} (after folding the per-channel scales into it)", node.name,
                                 node.op)
        return graph


def _import(model, where: str, input_shape) -> Graph:
    try:
        return _Importer(model, where, input_shape).run()
    except ModelError:
        raise
    except MALFORMED as err:  # a graph whose structure onnx itself does not check (inputs, outputs)
        raise ModelError(where, f"malformed model ({type(err).__name__}: {err})") from None


def load_onnx(path: str | Path, input_shape: tuple[int, ...] | None = None) -> Graph:
    """The float graph of an ONNX file; ModelError names the file and node of any problem."""
    return _import(read_model(path), str(path), input_shape)


def from_model(model, where: str = "<model>", input_shape: tuple[int, ...] | None = None) -> Graph:
    """The float graph of an in-memory ONNX ModelProto (``where`` names it in errors)."""
    return _import(model, where, input_shape)

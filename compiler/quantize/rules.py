"""How each float op becomes its int8 op (``compiler.quantize.qgraph``), given the scales.

``quantize_node(ctx, node, act, out, inputs, wide)`` returns ``(attrs, frac, zp)`` of the
output; ``attrs`` may carry ``op`` when the int8 op has another name (element-wise functions
become ``lut`` or ``muladd``). ``act`` is a ReLU or Clip fused into a conv, dense or add: it
narrows the clip bounds. Every requantization rounds to nearest (half a step in the bias or
offset) and folds the zero points into its constant term.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from compiler.frontend import float_ref
from compiler.frontend.elementwise import BY_NAME, SCALAR
from compiler.frontend.graph import UNARY, Graph, ModelError, Node
from compiler.quantize.exact import ceil_log2
from compiler.quantize.reference import INT32_MAX, INT32_MIN, LN_Z_FRAC
from compiler.quantize.scales import choose_frac, choose_scale, weight_fracs

MAX_SHIFT, MAX_ADD_SHIFT, MAX_UP = 31, 16, 8
ZP_MAX_SHIFT = 23  # the bias holds zero_point << shift (|zero point| <= 128), which must fit int32
WIDE_UP = 8  # extra bits of a wide (int32) global average pool
MULADD_BITS = 15  # |mul| of a muladd below 2**15
BIAS_SAMPLES = 2  # calibration inputs used to measure the bias correction
REQUANTIZING = ("conv", "dense", "add", "mul", "matmul", "avgpool", "avgpool2d") + UNARY


@dataclass
class Context:
    graph: Graph
    values: dict          # float value name -> float calibration values
    fracs: dict           # quantized value name -> frac (filled as nodes are done)
    zps: dict             # quantized value name -> zero point
    best: dict            # float value name -> preferred (frac, zero point)
    per_channel: bool
    bias_correction: bool
    method: str
    scales: dict = None       # float value name -> factor folded into the layers around it (equalize)
    add_scales: bool = False  # adds rescale their inputs by integer multipliers (on the CPU), not only shifts
    tap_means: dict = None    # conv/dense node -> its input's mean under each tap (calibrate.calibration_statistics)

    def zp(self, out: str, frac: int, wide: bool = False) -> int:
        """The zero point of ``out`` at ``frac`` (the preferred one if ``frac`` is the preferred frac)."""
        if wide:
            return 0
        if frac == self.best[out][0]:
            return self.best[out][1]
        return choose_scale(self.values[out], self.method, frac=frac)[1]


def fuse_activations(graph: Graph):
    """(node, fused relu/clip or None) pairs; a fused activation disappears as a node of its own."""
    fused, skip = [], set()
    for node in graph.nodes:
        if node.name in skip:
            continue
        users = graph.consumers(node.output)
        act = users[0] if len(users) == 1 and users[0].op in ("relu", "clip") and \
            node.op in ("conv", "dense", "add", "affine") and node.output not in graph.outputs else None
        if act is not None:
            skip.add(act.name)
        fused.append((node, act))
    return fused


def share_concat_scales(graph: Graph, pairs, out_of: dict, best: dict) -> None:
    """Let the producers of a concat's inputs requantize straight to the concat's scale, so the
    concat is a plain copy (their values then need no second rounding)."""
    producer_of = {out_of[node.output]: node for node, _ in pairs}
    for node, _ in pairs:
        if node.op != "concat":
            continue
        for value in node.inputs:
            producer = producer_of.get(value)
            if producer is not None and producer.op in REQUANTIZING and len(graph.consumers(value)) == 1:
                best[value] = best[node.output]


def _code(real: float, frac: int, zp: int, lo: int, hi: int) -> int:
    return int(np.clip(np.rint(real * 2.0 ** frac) + zp, lo, hi))


def _bounds(act: Node | None, frac: int, zp: int, wide: bool) -> tuple[int, int]:
    """Clip bounds (int8 codes, or int32 when wide) of a requantization with a fused activation."""
    lo, hi = (INT32_MIN, INT32_MAX) if wide else (-128, 127)
    if act is None:
        return lo, hi
    if act.op == "relu":
        return max(lo, zp), hi
    a_lo = lo if act.attrs["lo"] == -np.inf else _code(act.attrs["lo"], frac, zp, lo, hi)
    a_hi = hi if act.attrs["hi"] == np.inf else _code(act.attrs["hi"], frac, zp, lo, hi)
    return a_lo, a_hi


def _scalar_or_array(values: np.ndarray):
    values = np.asarray(values, dtype=np.int64)
    return int(values[0]) if np.all(values == values[0]) else values.astype(np.int32)


def _weights(ctx: Context, node: Node):
    w = node.attrs["weight"]
    fw = weight_fracs(w, ctx.per_channel)
    fw = np.minimum(fw, fw.min() + ZP_MAX_SHIFT - 8)  # keep every channel's shift in range
    scale = 2.0 ** fw.reshape((-1,) + (1,) * (w.ndim - 1))
    wq = np.clip(np.rint(w * scale), -127, 127).astype(np.int8)
    return wq, fw, scale


def _bias_error(ctx: Context, node: Node, wq: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Mean output error per channel that weight rounding causes on (the first few) calibration
    inputs (a per-channel mean over every output pixel and input: few inputs estimate it well):
    the weights' error applied to the input's mean under each tap (the mean of a convolution is
    the convolution of the means), in float64 by numpy's fixed-order sum (no BLAS)."""
    means = ctx.tap_means[node.name] * (ctx.scales or {}).get(node.inputs[0], 1.0)  # (C, taps)
    dw = wq.astype(np.float64) / scale - node.attrs["weight"].astype(np.float64)
    groups = int(node.attrs.get("groups", 1)) if node.op == "conv" else 1
    o = dw.shape[0]
    rows = dw.reshape(o, -1)
    per_out = means.reshape(groups, -1)[np.arange(o) // (o // groups)]  # each output's group of inputs
    return (rows * per_out).sum(axis=1)


def _gemm(ctx: Context, node: Node, act, out, inputs, wide):
    a = node.attrs
    fx, zx = ctx.fracs[inputs[0]], ctx.zps[inputs[0]]
    wq, fw, scale = _weights(ctx, node)
    acc = fx + fw
    fy = int(acc.min()) if wide else int(np.clip(ctx.best[out][0], acc.max() - ZP_MAX_SHIFT, acc.min()))
    zy = ctx.zp(out, fy, wide)
    shift = acc - fy
    bias = a["bias"].astype(np.float64)
    if ctx.bias_correction:
        bias = bias - _bias_error(ctx, node, wq, scale)
    half = np.where(shift > 0, np.left_shift(1, np.maximum(shift - 1, 0)), 0)
    zero_share = zx * wq.reshape(wq.shape[0], -1).astype(np.int64).sum(axis=1)
    bias_q = np.rint(bias * 2.0 ** acc) + half + np.left_shift(zy, shift) - zero_share
    lo, hi = _bounds(act, fy, zy, wide)
    attrs = {"weight": wq, "bias": np.clip(bias_q, INT32_MIN, INT32_MAX).astype(np.int32),
             "shift": _scalar_or_array(shift), "lo": lo, "hi": hi, "wide": wide, "w_frac": _scalar_or_array(fw)}
    if node.op == "conv":
        attrs.update(stride=tuple(a["stride"]), pad=tuple(a["pad"]), groups=int(a.get("groups", 1)), pad_value=zx)
    attrs["macs"] = int(np.prod(ctx.graph.shapes[node.output])) * int(np.prod(wq.shape[1:]))
    if a.get("recurrent"):  # an LSTM/GRU product (compiler.frontend.recurrent): the partition offloads it by rule
        attrs["recurrent"] = True
    return attrs, fy, zy


def _add(ctx: Context, node: Node, act, out, inputs, wide):
    (fa, fb), (za, zb) = (ctx.fracs[i] for i in inputs), (ctx.zps[i] for i in inputs)
    fm = max(fa, fb)
    if fm - min(fa, fb) > MAX_ADD_SHIFT:
        raise ModelError(ctx.graph.name, f"inputs' scales differ by {fm - min(fa, fb)} bits (> {MAX_ADD_SHIFT})",
                         node.name, "Add")
    if ctx.add_scales:
        return _add_mul(ctx, node, act, out, inputs)
    fy = int(np.clip(ctx.best[out][0], fm - ZP_MAX_SHIFT, fm))
    zy = ctx.zp(out, fy)
    shift = fm - fy
    offset = -(za << (fm - fa)) - (zb << (fm - fb)) + (zy << shift) + ((1 << (shift - 1)) if shift else 0)
    lo, hi = _bounds(act, fy, zy, False)
    return {"a_shift": fm - fa, "b_shift": fm - fb, "shift": shift, "offset": int(offset), "lo": lo, "hi": hi}, fy, zy


ADD_MUL_BITS = 15  # an add's larger multiplier lies in (2**14, 2**15]
# output frac: at least the coarser input's - 6 (keeps the shift <= 22, the offset in int32), at most
# the finer input's + 1
ADD_MUL_RANGE = (-6, 1)


def _add_mul(ctx: Context, node: Node, act, out, inputs):
    """An add whose inputs and output have any steps (``2**-frac / scale``, see ``equalize``): each
    input is multiplied by the integer ``round(step_in / step_out * 2**shift)`` (the larger one 15
    bits), the products summed with the zero points' and the rounding's offset, shifted back: one
    rounding, as with shifts."""
    sa, sb, sy = (ctx.scales.get(name, 1.0) for name in (node.inputs[0], node.inputs[1], node.output))
    (fa, fb), (za, zb) = (ctx.fracs[i] for i in inputs), (ctx.zps[i] for i in inputs)
    # bounded by the coarser input below, not the finer: an input far finer than the sum (ConvNeXt's
    # branch times its layer scale, 1e-6 at initialisation) must not force the sum's step down to
    # its own and clip the sum; its multiplier then has fewer bits (or is 0: under half an output step)
    fy = int(np.clip(ctx.best[out][0], min(fa, fb) + ADD_MUL_RANGE[0], max(fa, fb) + ADD_MUL_RANGE[1]))
    zy = ctx.zp(out, fy)
    real = (2.0 ** (fy - fa) * sy / sa, 2.0 ** (fy - fb) * sy / sb)
    shift = int(ADD_MUL_BITS - ceil_log2(max(real)))
    a_mul, b_mul = (int(np.rint(m * 2.0 ** shift)) for m in real)
    offset = -za * a_mul - zb * b_mul + (zy << shift) + (1 << (shift - 1))
    lo, hi = _bounds(act, fy, zy, False)
    return {"a_shift": 0, "b_shift": 0, "a_mul": a_mul, "b_mul": b_mul, "shift": shift, "offset": int(offset),
            "lo": lo, "hi": hi}, fy, zy


MUL_BITS = 14  # a product's multiplier lies in (2**13, 2**14]: compiler.cpu_fallback.product's bound
MUL_RANGE = 16  # output frac at most this far below the product's fa + fb (keeps the shift <= 31)


def _mul(ctx: Context, node: Node, act, out, inputs, wide):
    """The product of two int8 values (SiLU's x * sigmoid(x), a squeeze-excitation gate): the
    codes' product ``(a - za) * (b - zb)`` has step ``2**-(fa + fb)``; one integer multiplier and
    a rounding shift take it to the output's step (its frac from calibration, kept within
    [fa + fb - MUL_RANGE, fa + fb]: a finer output step than the product's buys nothing, and a
    coarser one than 2**MUL_RANGE product steps holds nothing but its zero point, since
    ``|(a - za) * (b - zb)| < 2**16``)::

        y = clip(((a - za) * (b - zb) * mul + 2**(shift-1)) >> shift) + zy, -128, 127)
        mul = round(2**(fy - fa - fb) * s_y / (s_a * s_b) * 2**shift), in (2**13, 2**14]

    (``s`` the equalization factors, 1 unless a factor was folded around the value). With
    ``mul <= 2**14`` and ``shift <= 31`` the int32 intermediate cannot overflow (see
    ``compiler.cpu_fallback.product``)."""
    (fa, fb), (za, zb) = (ctx.fracs[i] for i in inputs), (ctx.zps[i] for i in inputs)
    sa, sb, sy = ((ctx.scales or {}).get(name, 1.0) for name in (node.inputs[0], node.inputs[1], node.output))
    fp = fa + fb
    fy = int(np.clip(ctx.best[out][0], fp - MUL_RANGE, fp))
    zy = ctx.zp(out, fy)
    real = 2.0 ** (fy - fp) * sy / (sa * sb)
    shift = int(np.clip(MUL_BITS - ceil_log2(real), 0, MAX_SHIFT))
    mul = int(np.clip(np.rint(real * 2.0 ** shift), 0, 1 << MUL_BITS))
    return {"a_zp": int(za), "b_zp": int(zb), "mul": mul, "shift": shift, "zp": int(zy), "lo": -128,
            "hi": 127}, fy, zy


def _pool(ctx: Context, node: Node, act, out, inputs, wide):
    fx, zx = ctx.fracs[inputs[0]], ctx.zps[inputs[0]]
    up = WIDE_UP if wide else int(np.clip(ctx.best[out][0] - fx, 0, MAX_UP))
    zy = ctx.zp(out, fx + up, wide)
    h, w = ctx.graph.shapes[node.inputs[0]][2:]
    if node.op == "avgpool":
        area = h * w
        add = area // 2 + area * zy - ((area * zx) << up)
        return {"up": up, "add": int(add), "lo": -128, "hi": 127, "wide": wide}, fx + up, zy
    a = node.attrs
    count = float_ref.avgpool_count((h, w), a["kernel"], a["stride"], a["pad"], a["ceil"], a["count_pad"])
    count = count.astype(np.int64)
    taps = a["kernel"][0] * a["kernel"][1]
    add = count // 2 + count * zy - ((taps * zx) << up)
    return {"kernel": tuple(a["kernel"]), "stride": tuple(a["stride"]), "pad": tuple(a["pad"]), "ceil": tuple(a["ceil"]),
            "count": count.astype(np.int32), "add": add.astype(np.int32), "up": up, "pad_value": zx,
            "lo": -128, "hi": 127}, fx + up, zy


def _unary(ctx: Context, node: Node, act, out, inputs, wide):
    """An element-wise op (``compiler.frontend.elementwise``) becomes a 256-entry table of its
    function (``Elementwise.tabulate``); per-channel or per-element affines a muladd. Either
    holds the equalization factors of its input and output (``s_x``, ``s_y``: 1 unless a factor
    was folded around the value, ``compiler.quantize.equalize``): code ``q`` means
    ``(q - zx) * 2**-fx / s_x``, and the function's value ``y`` is ``y * s_y`` on the output's
    grid (a fused ReLU/Clip's bounds are already in those units)."""
    fx, zx = ctx.fracs[inputs[0]], ctx.zps[inputs[0]]
    fy, zy = ctx.best[out]
    sx, sy = ((ctx.scales or {}).get(name, 1.0) for name in (node.inputs[0], node.output))
    a = node.attrs
    if node.op == "affine" and (np.size(a["scale"]) > 1 or np.size(a["offset"]) > 1):
        sample = (1,) + tuple(ctx.graph.shapes[node.inputs[0]][1:])
        scale = np.broadcast_to(np.asarray(a["scale"], np.float64), sample)[0] * (2.0 ** (fy - fx) * sy / sx)
        offset = np.broadcast_to(np.asarray(a["offset"], np.float64), sample)[0] * sy
        peak = float(np.abs(scale).max())
        k = int(np.clip(MULADD_BITS - 1 - ceil_log2(peak) if peak > 0 else 0, 0, 24))
        mul = np.rint(scale * 2.0 ** k).astype(np.int64)
        add = np.rint(offset * 2.0 ** (fy + k)) + (zy << k) - zx * mul + ((1 << k) >> 1)
        lo, hi = _bounds(act, fy, zy, False)  # a fused ReLU/Clip: one rounding, its bounds the clip's
        return {"op": "muladd", "mul": mul.astype(np.int32), "add": np.clip(add, INT32_MIN, INT32_MAX).astype(np.int32),
                "shift": k, "lo": lo, "hi": hi}, fy, zy
    codes = np.arange(256, dtype=np.float64) - 128
    ys = BY_NAME[node.op].tabulate((codes - zx) * 2.0 ** -fx / sx, a)
    ys = np.asarray(ys, np.float64) * sy
    if act is not None:  # a fused ReLU/Clip (an affine's): applied to the table's values, rounded once
        ys = np.maximum(ys, 0.0) if act.op == "relu" else np.clip(ys, act.attrs["lo"], act.attrs["hi"])
    table = np.clip(np.rint(np.asarray(ys, np.float64).reshape(-1) * 2.0 ** fy) + zy, -128, 127).astype(np.int8)
    return {"op": "lut", "table": table, "function": node.op}, fy, zy


def _softmax(ctx: Context, node: Node, act, out, inputs, wide):
    """The exponential's table at the input's step ``2**-fx / s_x`` (``s_x``: a factor a product's
    scale left on its output, :func:`_matmul`; 1 otherwise). The probabilities, in [0, 1], take
    all 256 codes: step ``2**-8``, zero point -128 (TFLite's int8 softmax output; half the
    rounding error of codes 0..127), unless a product reads them as its second operand, which
    must be symmetric (:func:`symmetric_operands`): then step ``2**-7``, zero point 0. A ``mask``
    (an attention mask's kept positions) passes on as it is."""
    fx = ctx.fracs[inputs[0]]
    sx = (ctx.scales or {}).get(node.inputs[0], 1.0)
    d = np.arange(256, dtype=np.float64) - 255
    table = np.rint(SCALAR.exp(d * 2.0 ** -fx / sx) * 65536.0).astype(np.int32)
    attrs = {"axis": node.attrs["axis"], "table": table}
    if node.attrs.get("mask") is not None:  # kept positions (an attention mask): the rest get the lowest code
        attrs["mask"] = np.asarray(node.attrs["mask"], bool)
    if _read_as_weights(ctx.graph, out):
        return attrs, 7, 0
    return {**attrs, "zp": -128}, 8, -128


def _read_as_weights(graph: Graph, value: str) -> bool:
    """Whether a ``matmul`` reads ``value`` (directly or through gathers and reshapes, which keep
    its codes) as its second operand."""
    for reader in graph.consumers(value):
        if reader.op == "matmul" and reader.inputs[1] == value:
            return True
        if reader.op in ("gather", "reshape") and _read_as_weights(graph, reader.output):
            return True
    return False


LN_MUL_BITS = 15          # a LayerNorm's largest |gamma multiplier| lies in (2**14, 2**15]
LN_MUL_SHIFT = (-16, 30)  # its exponent m: the output shift 16 + m stays in [0, 46]
LN_MAX_EPS = 1 << 50      # epsilon's term, in C**2 codes**2: the kernel's variance stays below 2**52


def _layernorm(ctx: Context, node: Node, act, out, inputs, wide):
    """LayerNorm over the last axis (``reference.layernorm``, I-BERT's integer method): the
    normalised value ``z`` (16 fractional bits) times ``mul = round(gamma 2**fy s_y 2**m)`` plus
    ``add = round(beta 2**fy s_y 2**(16 + m)) + (zy << (16 + m))`` and half a step, shifted by
    ``16 + m``: gamma, beta, the output's scale (its frac from calibration) and zero point in one
    per-channel fixed-point multiplier and offset (Jacob et al. 2018, as the other requantizations).
    Epsilon is carried in the kernel's variance units, ``C**2 eps 4**fx s_x**2`` (the variance of
    the codes, which a factor folded into the input scales). ``add`` is kept within
    ``2**(shift + 8) + 2**40``: beyond that the output saturates either way."""
    fx = ctx.fracs[inputs[0]]
    fy, zy = ctx.best[out]
    sx, sy = ((ctx.scales or {}).get(name, 1.0) for name in (node.inputs[0], node.output))
    a = node.attrs
    c = int(ctx.graph.shapes[node.inputs[0]][-1])
    eps = float(np.clip(np.rint(c * c * float(a["eps"]) * 4.0 ** fx * sx * sx), 0, LN_MAX_EPS))
    real = np.asarray(a["scale"], np.float64) * 2.0 ** fy * sy
    peak = float(np.abs(real).max())
    m = int(np.clip(LN_MUL_BITS - ceil_log2(peak), *LN_MUL_SHIFT)) if peak > 0 else LN_MUL_SHIFT[1]
    shift = LN_Z_FRAC + m
    mul = np.clip(np.rint(real * 2.0 ** m), -(1 << LN_MUL_BITS), 1 << LN_MUL_BITS).astype(np.int32)
    add = np.rint(np.asarray(a["bias"], np.float64) * 2.0 ** (fy + shift) * sy) + zy * 2.0 ** shift + \
        ((1 << shift) >> 1)
    bound = 2.0 ** (shift + 8) + 2.0 ** 40
    return {"mul": mul, "add": np.clip(add, -bound, bound).astype(np.int64), "eps": int(eps), "shift": shift}, fy, zy


# readers whose rule takes any input step 2**-fx / s_x (a table of the real values, or an integer
# multiplier): softmax's exponential, an element-wise table or muladd (a constant added, as a
# relative position bias or an attention mask), LayerNorm, a product; an add only when it
# rescales its inputs by multipliers (Context.add_scales, :func:`_add_mul`)
SCALE_ABSORBERS = ("softmax", "layernorm", "mul") + UNARY


def absorbs_scale(ctx: "Context", node: Node) -> bool:
    """Whether ``node``'s int8 rule takes an input whose codes carry a factor ``s_x`` (``ctx.scales``)."""
    return node.op in SCALE_ABSORBERS or (node.op == "add" and bool(ctx.add_scales))


UNIT_SCALE = 2.0 ** -20  # a product scale within this of a power of two is that power (far below int8's 2**-8)


def symmetric_operands(graph: Graph, out_of: dict, best: dict, values: dict, method: str) -> None:
    """Give every value a ``matmul`` reads, and each value it is copied from (through gathers and
    reshapes, which keep their input's codes), zero point 0: the GEMM core sums ``a * b`` of the
    codes, and a zero point on the second operand would add a term per row (``zb * sum a``) that
    its per-output-column bias cannot hold. (The first operand's would add ``za * sum b`` per
    column, which the bias holds: :func:`_matmul` takes a softmax's probabilities with their
    zero point, a rule that ignores this choice.) The frac is the symmetric one of ``method``."""
    by_output = {out_of.get(n.output, n.output): n for n in graph.nodes}
    for node in graph.nodes:
        if node.op != "matmul":
            continue
        for value in node.inputs:
            while True:
                best[value] = (choose_frac(values[value], method), 0)
                producer = by_output.get(value)
                if producer is None or producer.op not in ("gather", "reshape"):
                    break
                value = producer.inputs[0]


def _matmul(ctx: Context, node: Node, act, out, inputs, wide):
    """A product of two computed int8 tensors (per batch index ``(a - za) @ b``, ``b``'s zero point
    0, see :func:`symmetric_operands`; ``za`` is a softmax's -128 or 0, kept as ``a_zp``, and on
    the GEMM core ``-za * (column sums of b)`` joins each column's bias, computed per run as ``b``
    is packed): the int32 sums ``acc`` have step ``2**-(fa + fb)`` and the real
    product is ``alpha`` times that. With ``alpha = m * 2**e`` (``m`` in [1/2, 1)) the
    requantization is a shift, as the GEMM core's::

        y = clip((acc + add) >> shift, -128, 127),  shift = fa + fb - fy - e + 1,
        add = 2**(shift-1) + (zy << shift)

    and the output's codes mean ``alpha * product * s`` on the step ``2**-fy``, ``s = 1 / (2 m)``
    in (1/2, 1]: 1 when ``alpha`` is a power of two (``1/sqrt(d)`` for d = 4, 16, 64, 256),
    else a factor recorded in ``ctx.scales`` that the product's readers must take, as a softmax's
    table or a muladd adding a relative position bias does (:func:`absorbs_scale`; any other
    reader is refused)."""
    (fa, fb), (za, zb) = (ctx.fracs[i] for i in inputs), (ctx.zps[i] for i in inputs)
    if zb:
        raise ModelError(ctx.graph.name, f"its second operand's zero point is {zb}, not 0: the GEMM core's "
                         "weights must be symmetric int8", node.name, "MatMul")
    alpha = float(node.attrs["alpha"])
    if not alpha > 0:
        raise ModelError(ctx.graph.name, f"its scale {alpha:.6g} is not positive (a product scaled by a negative "
                         "or zero constant is not supported)", node.name, "MatMul")
    mant, e = np.frexp(alpha)
    s = float(1.0 / (2.0 * mant))
    if abs(s - 1.0) <= UNIT_SCALE or abs(s - 0.5) <= UNIT_SCALE:
        e, s = (e + 1, 1.0) if s < 0.75 else (e, 1.0)
    if s != 1.0:
        readers = ctx.graph.consumers(node.output)
        other = next((n.op for n in readers if not absorbs_scale(ctx, n)), None)
        if other or not readers or out in ctx.graph.outputs:
            raise ModelError(ctx.graph.name, f"its scale {alpha:.6g} is not a power of two and its product is read "
                             f"by {other or 'the network output'}; the GEMM core's requantization only shifts "
                             "(only a reader with a table or multiplier, such as a softmax, can take the rest)",
                             node.name, "MatMul")
        ctx.scales[out] = s
    top = fa + fb - int(e) + 1
    fy = int(np.clip(ctx.best[out][0], top - ZP_MAX_SHIFT, top))
    zy = ctx.zp(out, fy)
    shift = top - fy
    add = ((1 << (shift - 1)) if shift else 0) + (zy << shift)
    a_shape, b_shape = ctx.graph.shapes[node.inputs[0]], ctx.graph.shapes[node.inputs[1]]
    macs = int(np.prod(a_shape)) * int(b_shape[-1])
    return {"shift": int(shift), "add": int(add), "lo": -128, "hi": 127, "macs": macs, "a_zp": int(za)}, fy, zy


RESIZE_FRAC = 14  # resize weights' fixed point: 4 * 2**14 * 128 stays far inside int32


def _resize(ctx: Context, node: Node, act, out, inputs, wide):
    """Bilinear weights in fixed point, each row rounded to sum to exactly 2**RESIZE_FRAC (its
    largest weight takes the rounding's remainder), so the output keeps the input's scale and
    zero point: a weighted mean of codes is a code within their range, and the zero point's
    share cancels."""
    exact = node.attrs["weight"].astype(np.float64)
    weight = np.rint(exact * 2.0 ** RESIZE_FRAC).astype(np.int64)
    rows = np.arange(len(weight))
    weight[rows, exact.argmax(axis=1)] += (1 << RESIZE_FRAC) - weight.sum(axis=1)
    return {"index": node.attrs["index"].astype(np.int32), "weight": weight.astype(np.int32), "frac": RESIZE_FRAC,
            "shape": tuple(node.attrs["shape"])}, ctx.fracs[inputs[0]], ctx.zps[inputs[0]]


def _copy(ctx: Context, node: Node, act, out, inputs, wide):
    fx, zx = ctx.fracs[inputs[0]], ctx.zps[inputs[0]]
    a = node.attrs
    if node.op == "maxpool":
        return {"kernel": tuple(a["kernel"]), "stride": tuple(a["stride"]), "pad": tuple(a["pad"]),
                "ceil": tuple(a.get("ceil", (0, 0)))}, fx, zx
    if node.op == "reshape":
        return {"shape": tuple(a["shape"])}, fx, zx
    if node.op == "gather":
        fill = np.clip(np.rint(a["fill"].astype(np.float64) * 2.0 ** fx) + zx, -128, 127).astype(np.int8)
        return {"index": a["index"].astype(np.int32), "fill": fill, "shape": tuple(a["shape"])}, fx, zx
    fy = min(ctx.fracs[i] for i in inputs)
    zy = ctx.zp(out, fy)
    return {"axis": a["axis"], "shifts": tuple(ctx.fracs[i] - fy for i in inputs),
            "zps": tuple(ctx.zps[i] for i in inputs), "zp": zy}, fy, zy


RULES = {"conv": _gemm, "dense": _gemm, "add": _add, "mul": _mul, "matmul": _matmul, "avgpool": _pool, "avgpool2d": _pool, "softmax": _softmax,
         "layernorm": _layernorm,
         "maxpool": _copy, "reshape": _copy, "gather": _copy, "resize": _resize, "concat": _copy, **{op: _unary for op in UNARY}}


def quantize_node(ctx: Context, node: Node, act, out: str, inputs: list[str], wide: bool):
    rule = RULES.get(node.op)
    if rule is None:
        raise ModelError(ctx.graph.name, f"no quantization rule for op {node.op}", node.name, node.op)
    attrs, fy, zy = rule(ctx, node, act, out, inputs, wide and node.op in ("conv", "dense", "avgpool"))
    return attrs, int(fy), int(zy)

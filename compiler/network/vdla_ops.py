"""How a quantized conv, dense or matmul becomes accelerator layers: ``vdla_parts(node, shape)``.

A conv whose padding must hold its input's zero point (not 0), or whose padding is not the
same on all four sides, runs on an explicitly padded input (the border holds the zero point;
on a device the producer stores into the interior of such a buffer, whose border is written
once) with the layer's own padding 0. A grouped conv runs as one GEMM layer per group, on its
slice of input and output channels; groups of fewer than :data:`PACK_LANES` input channels (a
depthwise conv's one) are taken several to a layer, with a block-diagonal kernel. ``part_tensors`` cuts a run's input for each part.

Every accelerator program has a key (:func:`bundle_key`): its name in a loaded model and its
file ``bundles/<key>.npz`` in a deployment package. Node names come from the model, so the key
escapes them: no name can spell another op's key or a group's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from compiler.layers import Conv2D, Dense, LayerError
from compiler.quantize.qgraph import QNode
from compiler.quantize.reference import wrap32

# A depthwise conv (one input channel per group) on the GEMM core: groups are taken together
# until they fill this many input lanes, as one block-diagonal layer (the paper's BLOCK_IN of 16:
# each GEMM row then does one useful product in 16; a core of other blocks pads or repeats it).
PACK_LANES = 16

_ESCAPED = re.compile(r"^\.|[^A-Za-z0-9_.-]")


def bundle_key(name: str, group: int | None = None) -> str:
    """The key of node ``name``'s program, or of group ``group`` of a grouped conv: the name with
    every character outside ``[A-Za-z0-9_.-]`` (and a leading ``.``) written as ``+XX`` per UTF-8
    byte (``+`` itself too; the empty name is ``+``), then ``/g<k>`` for group k. Injective:
    ``+`` and ``/`` only ever come from the escaping and the group suffix, so distinct (name,
    group) pairs never share a key (``c#g1`` is ``c+23g1``, group 1 of ``c`` is ``c/g1``); each
    path segment is a non-empty file name of those characters, never ``.`` or ``..``."""
    escaped = _ESCAPED.sub(lambda m: "".join(f"+{b:02X}" for b in m.group().encode("utf-8", "surrogatepass")),
                           name) or "+"
    return escaped if group is None else f"{escaped}/g{group}"


@dataclass(frozen=True)
class Part:
    key: str                 # bundle key (bundle_key): the node's, or its group's
    layer: Conv2D | Dense
    in_channels: slice
    out_channels: slice
    pad: tuple | None        # explicit (t, l, b, r) padding with the zero point, or None
    index: int | None = None  # a product's part (matmul): its batch index; every index runs the one program
    groups: int = 1          # a grouped conv's groups in this part: more than one runs as one block-diagonal layer


def _check_int8(node: QNode) -> None:
    a = node.attrs
    if a.get("wide"):
        raise LayerError(node.name, "wide", "the network's last op keeps int32 results; the accelerator stores int8")


def vdla_parts(node: QNode, shape: tuple[int, ...], out_shape: tuple[int, ...] | None = None) -> list[Part]:
    """The accelerator layers of a conv, dense or matmul node on an input of ``shape`` (a matmul
    also needs its ``out_shape``); LayerError if none."""
    _check_int8(node)
    a = node.attrs
    if node.op == "matmul":
        return product_parts(node, shape, out_shape)
    per_channel = bool(np.ndim(a["shift"]))
    clip = dict(shift=0 if per_channel else int(a["shift"]), per_channel_shift=per_channel, clip_lo=int(a["lo"]),
                clip_hi=int(a["hi"]))
    if node.op == "dense":
        m, k = a["weight"].shape
        return [Part(bundle_key(node.name), Dense(name=node.name, n=shape[0], ic=k, oc=m, **clip), slice(0, k),
                     slice(0, m), None)]
    o, cg, kh, kw = a["weight"].shape
    (sh, sw), pads, groups = a["stride"], tuple(a["pad"]), int(a["groups"])
    if sh != sw:
        raise LayerError(node.name, "shape", f"stride {sh}x{sw}: the accelerator compiler takes equal strides")
    if kh != kw:  # squared up: zero taps below/right (square_weight), the input padded to match
        t, left, b, r = pads
        pads, kh = (t, left, b + max(kh, kw) - kh, r + max(kh, kw) - kw), max(kh, kw)
    n, _, h, w = shape
    explicit = a["pad_value"] != 0 or len(set(pads)) != 1
    if explicit:
        h, w, pad = h + pads[0] + pads[2], w + pads[1] + pads[3], 0
    else:
        pad = pads[0]
    og = o // groups
    pack = groups_per_part(groups, cg)
    parts = []
    for g, first in enumerate(range(0, groups, pack)):
        count = min(pack, groups - first)
        key = bundle_key(node.name, None if groups == 1 else g)
        layer = Conv2D(name=node.name if groups == 1 else f"{node.name} (group {g})", n=n, h=h, w=w, ic=count * cg,
                       oc=count * og, k=kh, stride=sh, pad=pad, **clip)
        parts.append(Part(key, layer, slice(first * cg, (first + count) * cg), slice(first * og, (first + count) * og),
                          pads if explicit else None, groups=count if pack > 1 else 1))
    return parts


def groups_per_part(groups: int, per_group: int) -> int:
    """How many groups of a grouped conv one GEMM layer takes: one, unless a group has fewer than
    :data:`PACK_LANES` input channels (a depthwise conv has one), when as many as fill that many
    lanes run as one block-diagonal layer (:func:`block_diagonal`)."""
    return max(1, min(groups, PACK_LANES // per_group)) if groups > 1 else 1


def block_diagonal(weight: np.ndarray, groups: int) -> np.ndarray:
    """The (G*og, G*cg, kh, kw) kernel of ``groups`` consecutive groups of an OIHW grouped kernel
    (G*og, cg, kh, kw): group j's taps on the diagonal block (rows j*og.., columns j*cg..), zeros
    elsewhere, so one conv over the groups' channels sums exactly each group's products."""
    if groups == 1:
        return weight
    og, cg = weight.shape[0] // groups, weight.shape[1]
    out = np.zeros((weight.shape[0], groups * cg) + weight.shape[2:], weight.dtype)
    for j in range(groups):
        out[j * og:(j + 1) * og, j * cg:(j + 1) * cg] = weight[j * og:(j + 1) * og]
    return out


def product_parts(node: QNode, shape: tuple[int, ...], out_shape: tuple[int, ...] | None) -> list[Part]:
    """A product of two computed tensors (``matmul``: (..., N, K) x (..., K, M)) as one dense layer
    (N, K) x (M, K)^T per batch index, all of them the one program ``bundle_key(node.name)``, run
    once per index with that index's rows written as its input and the second operand's (K, M)
    matrix, transposed, written as its weights (packed at run time: :func:`part_tensors`). The
    bias is the requantization's constant ``add`` on every column."""
    if out_shape is None or len(shape) < 2 or tuple(out_shape[:-1]) != tuple(shape[:-1]):
        raise LayerError(node.name, "shape", f"a product of input {shape} needs its output shape (got {out_shape})")
    n, k, m = int(shape[-2]), int(shape[-1]), int(out_shape[-1])
    layer = Dense(name=node.name, n=n, ic=k, oc=m, shift=int(node.attrs["shift"]), clip_lo=int(node.attrs["lo"]),
                  clip_hi=int(node.attrs["hi"]))
    count = int(np.prod(shape[:-2], dtype=np.int64))
    return [Part(bundle_key(node.name), layer, slice(0, k), slice(0, m), None, g) for g in range(count)]


def square_weight(weight: np.ndarray) -> np.ndarray:
    """An OIHW kernel of kh x kw (inception's 1x7 and 7x1) as the k x k kernel, k = max(kh, kw),
    with zero taps below and right: with the input padded by k - kh more rows at the bottom and
    k - kw more columns at the right (vdla_parts), every output sums the same products plus exact
    zeros. The accelerator then does (k / min(kh, kw)) times the MACs; the cost placement weighs it."""
    kh, kw = weight.shape[2:]
    if kh == kw:
        return weight
    k = max(kh, kw)
    return np.pad(weight, ((0, 0), (0, 0), (0, k - kh), (0, k - kw)))


def part_tensors(node: QNode, part: Part, x: np.ndarray, y: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The input, weight and bias (and per-channel shift) of one part, for input ``x`` of the node
    (a product's part: its batch index of ``x`` and, as the weights, of the second input ``y``
    transposed; zeros without ``y``, as when its program is compiled ahead). A product's bias is
    ``add - a_zp * sum_k b[k, o]`` per column (wrapping as the accumulator does): the first
    operand's zero point folded, so with ``a_zp`` it changes with ``y`` and is written per run."""
    a = node.attrs
    if node.op == "matmul":
        layer = part.layer
        rows = x.reshape(-1, layer.n, layer.ic)[part.index]
        weight = np.zeros((layer.oc, layer.ic), np.int8) if y is None else y.reshape(-1, layer.ic, layer.oc)[part.index].T
        bias = int(a["add"]) - int(a.get("a_zp", 0)) * weight.astype(np.int64).sum(axis=1)
        return {"input": np.ascontiguousarray(rows), "weight": np.ascontiguousarray(weight),
                "bias": wrap32(bias).astype(np.int32)}
    shift = {"shift": np.ascontiguousarray(np.asarray(a["shift"], np.int32)[part.out_channels])} \
        if np.ndim(a["shift"]) else {}
    if node.op == "dense":
        return {"input": x, "weight": a["weight"], "bias": a["bias"], **shift}
    x = x[:, part.in_channels]
    if part.pad is not None:
        t, left, b, r = part.pad
        x = np.pad(x, ((0, 0), (0, 0), (t, b), (left, r)), constant_values=int(a["pad_value"]))
    weight = square_weight(block_diagonal(a["weight"][part.out_channels], part.groups))
    return {"input": np.ascontiguousarray(x), "weight": np.ascontiguousarray(weight),
            "bias": np.ascontiguousarray(a["bias"][part.out_channels]), **shift}

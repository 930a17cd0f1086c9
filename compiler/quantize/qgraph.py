"""The quantized graph: int8 values, each with a power-of-two scale and a zero point.

A value ``q`` means ``(q - zp) * 2**-frac`` (divided by ``scales[value]`` where a factor was folded
into the layers around it, ``compiler.quantize.equalize``: the int8 arithmetic never sees it). ``zp`` is 0 (signed values) or -128 (values that
are never negative, such as ReLU outputs: ``q + 128`` spans 0..255, a full 8 bits); ``frac`` is
any integer (the hardware shifts). ``fracs`` and ``zps`` map every value to them.

Requantizations are ``clip(wrap32(acc + bias) >> shift, lo, hi)`` with an arithmetic (flooring)
shift; the bias holds everything constant: the input zero point's share (``-zp_in * sum(w)``),
the output zero point (``zp_out << shift``) and half an output step (rounding to nearest).
``shift`` is one int or one per output channel (per-channel weight scales). ``lo``/``hi`` are
the clip bounds in the output's int8 codes (a fused ReLU or Clip narrows them). A ``wide`` node
keeps int32 values (the network's last op: logits at the accumulator's resolution).

==========  =================================================================================
op          attrs
==========  =================================================================================
quantize    frac                        float input -> int8, round half to even, saturate
conv        weight int8 (O, I/groups, kh, kw), bias int32, stride (sh, sw), pad (t, l, b, r),
            groups, pad_value (the input's zero point: what padded positions hold), shift, lo,
            hi, wide
dense       weight int8 (M, K), bias int32, shift, lo, hi, wide
add         a_shift, b_shift, offset, shift, lo, hi, a_mul and b_mul (default 1):
            clip(((a * a_mul << a_shift) + (b * b_mul << b_shift) + offset) >> shift, lo, hi)
            (multipliers other than 1 only on the CPU: the accelerator's ALU shifts)
mul         a_zp, b_zp, mul (0..2**14), shift (0..31), zp, lo, hi; inputs broadcast (numpy rules) as
            ``compiler.frontend.graph.mul_extents`` allows:
            clip((((a - a_zp) * (b - b_zp) * mul + 2**(shift-1)) >> shift) + zp, lo, hi)
matmul      add, shift, lo, hi, macs, a_zp (default 0): per index of the equal leading axes of its
            two inputs (``b``'s zero point 0), clip(wrap32((a - a_zp) @ b + add) >> shift, lo, hi)
            (attention's products, on the GEMM core with ``b`` as the weights and
            ``add - a_zp * (column sums of b)`` as the bias: ``compiler.network.vdla_ops``)
lut         table int8 (256,):  out = table[x + 128]   (an element-wise op of
            compiler.frontend.elementwise, a scalar affine, any change of scale)
muladd      mul int32, add int32 (each shaped like one sample), shift, lo, hi:
            clip((x * mul + add) >> shift, lo, hi)   (per-channel or per-element affine)
relu        --  out = max(x, 0) of the codes (a CPU kernel; the quantizer fuses a ReLU or
            makes it a lut)
maxpool     kernel, stride, pad, ceil   (padded positions never win)
avgpool     up, add, lo, hi, wide: global pool, clip(floor(((sum << up) + add) / (H*W))), (N, C, 1, 1)
avgpool2d   kernel, stride, pad, ceil, pad_value, count and add (int32 per output position), up,
            lo, hi:  clip(floor(((window sum << up) + add) / count)), padding holding pad_value
concat      axis, shifts, zps (one per input), zp: out = clip(((x - zp_i + rnd_i) >> shift_i) + zp)
reshape     shape
gather      index int32 (flat, -1 takes fill), fill int8 (one per output element), shape
resize      index int32 (P, 4), weight int32 (P, 4) (each row sums to 2**frac), frac, shape: each output
            pixel of a plane is clip((sum of weight * x over four pixels of its input plane
            + 2**(frac-1)) >> frac, -128, 127): bilinear interpolation at the input's scale
softmax     axis, table (int32, 256 entries: 2**16 exp(-d 2**-frac) for d = 255..0):
            zp (0 or -128, default 0): e = table[x - max + 255], s = sum e;
            zp 0: out = min((e * 128 + s // 2) // s, 127) (frac 7);
            zp -128: out = min((e * 256 + s // 2) // s, 255) - 128 (frac 8);
            mask (bool, optional, broadcast to the input: kept positions): max and sum over the
            kept positions only, e = 0 (the lowest code) at the masked ones
layernorm   mul int32 (C,), add int64 (C,), eps (int, < 2**50), shift (0..46): over the last axis,
            z = normalised value (16 fractional bits, I-BERT's integer square root);
            out = clip((z * mul + add) >> shift, -128, 127)  (``reference.layernorm``)
==========  =================================================================================

A graph is defined for its input's batch (usually 1); larger batches run in chunks of it.

Each op's int8 meaning is one entry of ``compiler.quantize.reference.EVAL``, its CPU kernel one of
``compiler.network.cpu_ops.PLANS`` and its placement ``compiler.network.partition.place``
(tests/compiler/frontend/test_elementwise.py checks the three name the same ops). Element-wise
float ops all become ``lut`` or ``muladd``: a new one adds nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from compiler.frontend.float_ref import float32_by_chunks
from compiler.frontend.graph import only_output


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
    outputs: tuple[str, ...]   # the network's outputs, in the model's order
    nodes: list[QNode]
    shapes: dict[str, tuple[int, ...]]
    fracs: dict[str, int]
    zps: dict[str, int] = field(default_factory=dict)
    scales: dict[str, float] = field(default_factory=dict)  # factor folded into the layers around a value

    @property
    def output(self) -> str:
        """The only output of a one-output network (ValueError if it has several)."""
        return only_output(self.name, self.outputs)

    def node(self, name: str) -> QNode:
        return next(n for n in self.nodes if n.name == name)

    def zp(self, value: str) -> int:
        return int(self.zps.get(value, 0))

    def dequantize(self, value: str, q: np.ndarray) -> np.ndarray:
        """The real values of int8 (or wide int32) codes ``q`` of ``value``."""
        zp, step, scale = self.zp(value), 2.0 ** -self.fracs[value], self.scales.get(value, 1.0)
        return float32_by_chunks(q, lambda codes: (codes - zp) * step / scale)   # float64 a chunk at a time

    def dequantize_output(self, values: np.ndarray) -> np.ndarray:
        """The real values of the codes of the only output."""
        return self.dequantize(self.output, values)

    def dequantize_outputs(self, values) -> tuple[np.ndarray, ...]:
        """The real values of the codes of every output (``values`` in ``outputs``' order)."""
        return tuple(self.dequantize(name, v) for name, v in zip(self.outputs, values))

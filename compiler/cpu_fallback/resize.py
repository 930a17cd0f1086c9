"""Bilinear resize of int8 planes (``resize``: the quantized graph's op of that name)::

    out[p, k] = clip((sum_j weight[k, j] * inp[p, index[k, j]] + 2**(frac - 1)) >> frac, -128, 127)

over ``planes`` planes (samples x channels) of ``size_in`` input and ``size_out`` output pixels,
j = 0..3; ``index`` and ``weight`` are (size_out, 4) int32 buffer arguments shared by every plane.
Arithmetic is int32 (wrapping), shifts arithmetic. An index must be below ``size_in`` and a weight
in [0, 2**frac]: ``check_values`` refuses any other before the code runs, and the code itself
reads ``inp`` only for ``0 <= index < size_in`` (one unsigned compare; another index reads pixel 0),
so no index reaches memory outside the input.
"""

import dataclasses

from .spec import ArgSpec, KernelSpec, Work, check_positive, check_range, check_values_in

TAPS = 4  # input pixels per output pixel (bilinear)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ResizeSpec(KernelSpec):
    """``planes`` int8 planes of ``size_in`` pixels to ``size_out``, four weighted taps each."""

    family = "resize"
    planes: int
    size_in: int
    size_out: int
    frac: int

    def __post_init__(self):
        check_positive(self.family, planes=self.planes, size_in=self.size_in, size_out=self.size_out)
        check_range(self.family, "frac", self.frac, 1, 20)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.planes, self.size_in)),
                ArgSpec("index", "int32", (self.size_out, TAPS)), ArgSpec("weight", "int32", (self.size_out, TAPS)),
                ArgSpec("out", "int8", (self.planes, self.size_out), output=True))

    def work(self):
        read, written = self.io_bytes()  # per output pixel: 4 loads, compares, selects, products, adds
        return Work(elem_ops=(5 * TAPS + 4) * self.planes * self.size_out, bytes_read=read, bytes_written=written)

    def check_values(self, arrays):
        if "index" in arrays:
            check_values_in(self.family, "index", arrays["index"], 0, self.size_in - 1)
        if "weight" in arrays:
            check_values_in(self.family, "weight", arrays["weight"], 0, 1 << self.frac)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, index, weight, out = ptrs
        with L.loop(b, 0, self.planes, "p") as p, L.loop(b, 0, self.size_out, "k") as k:
            acc = L.const(1 << (self.frac - 1))
            for j in range(TAPS):
                at = L.load(b, index, L.madd(b, (k, TAPS), j), L.I32)
                inside = b.icmp_unsigned("<", at, L.const(self.size_in))  # 0 <= at < size_in
                safe = b.select(inside, at, L.const(0))
                pixel = b.sext(L.load(b, inp, L.madd(b, (p, self.size_in), safe), L.I8), L.I32)
                acc = b.add(acc, b.mul(pixel, L.load(b, weight, L.madd(b, (k, TAPS), j), L.I32)))
            L.store(b, L.requantize(b, acc, self.frac), out, L.madd(b, (p, self.size_out), k), L.I8)

"""Element-wise int8 kernels with tables: ``lut`` and ``muladd``.

- Lookup table (int8 -> int8), any element-wise function of one int8 input (ReLU, Clip,
  Sigmoid, HardSigmoid, HardSwish, a change of scale)::

      out[k] = table[inp[k] + 128]          table: int8 (256,) buffer argument

- Multiply-add with requantization (per-channel or per-element affine: BatchNormalization not
  after a conv, Mul/Add/Sub/Div by a constant tensor)::

      out[r, k] = clip((inp[r, k] * mul[k] + add[k]) >> shift, lo, hi)     int32, wrapping

  ``inp`` is (n, size): ``n`` samples of ``size`` elements; ``mul``/``add`` are int32 (size,).
"""

import dataclasses

from .spec import ArgSpec, KernelSpec, Work, check_positive, check_range


@dataclasses.dataclass(frozen=True, kw_only=True)
class LutSpec(KernelSpec):
    """256-entry table lookup over an int8 buffer of ``size`` elements."""

    family = "lut"
    size: int

    def __post_init__(self):
        check_positive(self.family, size=self.size)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.size,)), ArgSpec("table", "int8", (256,)),
                ArgSpec("out", "int8", (self.size,), output=True))

    def work(self):
        read, written = self.io_bytes()
        # load, add, table load, store: a scalar loop (no gather instruction on NEON)
        return Work(elem_ops=4 * self.size, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, table, out = ptrs
        with L.loop(b, 0, self.size, "k") as k:
            index = b.add(b.sext(L.load(b, inp, k, L.I8), L.I32), L.const(128))
            L.store(b, L.load(b, table, index, L.I8), out, k, L.I8)


@dataclasses.dataclass(frozen=True, kw_only=True)
class MulAddSpec(KernelSpec):
    """clip((x * mul + add) >> shift, lo, hi) over ``n`` samples of ``size`` int8 elements."""

    family = "muladd"
    n: int
    size: int
    shift: int = 0
    lo: int = -128
    hi: int = 127

    def __post_init__(self):
        check_positive(self.family, n=self.n, size=self.size)
        check_range(self.family, "shift", self.shift, 0, 31)
        check_range(self.family, "lo", self.lo, -128, 127)
        check_range(self.family, "hi", self.hi, self.lo, 127)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.n, self.size)), ArgSpec("mul", "int32", (self.size,)),
                ArgSpec("add", "int32", (self.size,)), ArgSpec("out", "int8", (self.n, self.size), output=True))

    def work(self):
        read, written = self.io_bytes()
        # widen, multiply, add, shift, two clamps, narrow
        return Work(elem_ops=7 * self.n * self.size, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, mul, add, out = ptrs
        with L.loop(b, 0, self.n, "r") as r, L.loop(b, 0, self.size, "k") as k:
            i = L.madd(b, (r, self.size), k)
            v = b.mul(b.sext(L.load(b, inp, i, L.I8), L.I32), L.load(b, mul, k, L.I32))
            v = b.add(v, L.load(b, add, k, L.I32))
            L.store(b, L.requantize(b, v, self.shift, lo=self.lo, hi=self.hi), out, i, L.I8)

"""Element-wise kernels over flat buffers: residual add, ReLU, quantize, dequantize.

All of them run one vectorisable loop over ``size`` elements (the caller flattens; shape does
not matter to the code).

- Residual add with requantization and saturation (int8, int8 -> int8)::

      out = clip(((a * a_mul << a_shift) + (b * b_mul << b_shift) + offset) >> shift, lo, hi)

  in int32, arithmetic right shift; ``offset`` holds the zero points and the rounding half
  step, ``lo`` defaults to 0 with ``relu`` else -128. ``a_shift``/``b_shift`` align two power-of-two scales
  (scale_a = 2**-fa etc.: to add at the finer scale f = max(fa, fb), shift each left by
  f - f_x; ``shift`` = f - f_out). With all shifts 0 it is a saturating int8 add. Integer
  multipliers ``a_mul``/``b_mul`` (up to 2**15; default 1) rescale inputs whose steps are not
  powers of two apart (fixed point: ``mul = step_in / step_out * 2**shift``).
- ReLU (int8 -> int8): ``out = max(x, 0)``.
- Quantize (float32 -> int8) with scale 2**-frac::

      out = clip(round_half_even(x * 2**frac), -128, 127),   NaN -> 0, +-inf saturate

  Rounding uses the float32 "magic number" trick ``(v + 1.5*2**23) - 1.5*2**23`` on the clamped
  value (exact round-half-even for |v| <= 2**22 under the default rounding mode), because the
  Cortex-A9's VFPv3 has no round-to-integral instruction; numpy's ``np.rint`` is the reference.
- Dequantize (int8 -> float32): ``out = float32(q) * 2**-frac`` (exact).
"""

import dataclasses


from .spec import ArgSpec, KernelSpec, Work, check_bool, check_positive, check_range

MAX_FRAC = 30
MAX_ADD_MUL = 1 << 15
ROUND_MAGIC = 12582912.0  # 1.5 * 2**23


@dataclasses.dataclass(frozen=True, kw_only=True)
class AddSpec(KernelSpec):
    """Saturating residual add of two int8 buffers of ``size`` elements with requantization."""

    family = "add"
    size: int
    a_shift: int = 0
    b_shift: int = 0
    shift: int = 0
    relu: bool = False
    offset: int = 0
    lo: int = None
    hi: int = 127
    a_mul: int = 1
    b_mul: int = 1

    def __post_init__(self):
        check_positive(self.family, size=self.size)
        check_range(self.family, "a_shift", self.a_shift, 0, 16)
        check_range(self.family, "b_shift", self.b_shift, 0, 16)
        check_range(self.family, "shift", self.shift, 0, 31)
        check_bool(self.family, "relu", self.relu)
        check_range(self.family, "a_mul", self.a_mul, 0, MAX_ADD_MUL)
        check_range(self.family, "b_mul", self.b_mul, 0, MAX_ADD_MUL)
        # |a * a_mul << a_shift| <= 2**23: the sum with the offset stays inside int32
        check_range(self.family, "a_mul << a_shift", self.a_mul << self.a_shift, 0, 1 << 16)
        check_range(self.family, "b_mul << b_shift", self.b_mul << self.b_shift, 0, 1 << 16)
        check_range(self.family, "offset", self.offset, -2**30, 2**30)
        if self.lo is None:
            object.__setattr__(self, "lo", 0 if self.relu else -128)
        check_range(self.family, "lo", self.lo, -128, 127)
        check_range(self.family, "hi", self.hi, self.lo, 127)
        super().__post_init__()

    def args(self):
        return (ArgSpec("a", "int8", (self.size,)), ArgSpec("b", "int8", (self.size,)),
                ArgSpec("out", "int8", (self.size,), output=True))

    def work(self):
        read, written = self.io_bytes()
        # widen x2, shift x2, add, shift, two clamps, narrow
        return Work(elem_ops=9 * self.size, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        pa, pb, out = ptrs
        with L.loop(b, 0, self.size, "k") as k:
            va = b.sext(L.load(b, pa, k, L.I8), L.I32)
            vb = b.sext(L.load(b, pb, k, L.I8), L.I32)
            if self.a_mul != 1:
                va = b.mul(va, L.const(self.a_mul))
            if self.b_mul != 1:
                vb = b.mul(vb, L.const(self.b_mul))
            if self.a_shift:
                va = b.shl(va, L.const(self.a_shift))
            if self.b_shift:
                vb = b.shl(vb, L.const(self.b_shift))
            total = b.add(va, vb)
            if self.offset:
                total = b.add(total, L.const(self.offset))
            L.store(b, L.requantize(b, total, self.shift, lo=self.lo, hi=self.hi), out, k, L.I8)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReluSpec(KernelSpec):
    """ReLU of an int8 buffer of ``size`` elements."""

    family = "relu"
    size: int

    def __post_init__(self):
        check_positive(self.family, size=self.size)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.size,)),
                ArgSpec("out", "int8", (self.size,), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=self.size // 4, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, out = ptrs
        with L.loop(b, 0, self.size, "k") as k:
            L.store(b, L.smax(b, L.load(b, inp, k, L.I8), L.const(0, L.I8)), out, k, L.I8)


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuantizeSpec(KernelSpec):
    """float32 -> int8 with scale 2**-frac (``q = x * 2**frac``), round half to even."""

    family = "quantize"
    size: int
    frac: int

    def __post_init__(self):
        check_positive(self.family, size=self.size)
        check_range(self.family, "frac", self.frac, -MAX_FRAC, MAX_FRAC)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "float32", (self.size,)),
                ArgSpec("out", "int8", (self.size,), output=True))

    def work(self):
        read, written = self.io_bytes()
        # scale, NaN test, two clamps, two magic adds, convert, narrow
        return Work(elem_ops=8 * self.size, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        from llvmlite import ir
        inp, out = ptrs
        scale = ir.Constant(L.F32, float(2.0 ** self.frac))
        zero, lo, hi = (ir.Constant(L.F32, v) for v in (0.0, -128.0, 127.0))
        magic = ir.Constant(L.F32, ROUND_MAGIC)
        with L.loop(b, 0, self.size, "k") as k:
            v = b.fmul(L.load(b, inp, k, L.F32), scale)
            v = b.select(b.fcmp_unordered("uno", v, v), zero, v)
            v = b.select(b.fcmp_ordered("<", v, lo), lo, v)
            v = b.select(b.fcmp_ordered(">", v, hi), hi, v)
            v = b.fsub(b.fadd(v, magic), magic)
            L.store(b, b.trunc(b.fptosi(v, L.I32), L.I8), out, k, L.I8)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DequantizeSpec(KernelSpec):
    """int8 -> float32 with scale 2**-frac (``x = q * 2**-frac``)."""

    family = "dequantize"
    size: int
    frac: int

    def __post_init__(self):
        check_positive(self.family, size=self.size)
        check_range(self.family, "frac", self.frac, -MAX_FRAC, MAX_FRAC)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.size,)),
                ArgSpec("out", "float32", (self.size,), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=3 * self.size, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        from llvmlite import ir
        inp, out = ptrs
        scale = ir.Constant(L.F32, float(2.0 ** -self.frac))
        with L.loop(b, 0, self.size, "k") as k:
            v = b.sitofp(L.load(b, inp, k, L.I8), L.F32)
            L.store(b, b.fmul(v, scale), out, k, L.F32)

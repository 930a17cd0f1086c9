"""int8 LayerNorm over the last axis, integer only (``compiler.quantize.reference.layernorm``)::

    s = sum q,  Q = sum q*q                   (int32: |q| <= 128, C <= 2**14)
    d = C q - s                               (C times the deviation from the mean)
    v = C Q - s*s + eps                       (C**2 times the variance, plus epsilon; < 2**51)
    k = (52 - bits(v)) // 2,  st = max(isqrt(v << 2k), 2**25)   (2**k sqrt v: 25-26 bits)
    r = 2**48 // st,  z = (d r) >> (32 - k)         (d / sqrt v, 16 fractional bits)
    out = clip((z mul + add) >> shift, -128, 127)     mul int32, add int64, per channel

The integer square root is I-BERT's (Kim et al., ICML 2021, Algorithm 4): Newton's iteration
from ``2**ceil(bits/2)``, a fixed ``reference.LN_SQRT_STEPS`` times, ``x <- max(min(x, (x + n // x)
// 2), 1)``. The Cortex-A9 has no integer divider: each floor division (the Newton steps' and the
reciprocal's) is a double-precision division truncated, exact because dividend and divisor are
integers with dividend + divisor <= 2**53 (a quotient just below an integer k stays below k).
The dividend ``v << 2k`` goes to double through two 32-bit halves (ARMv7's VFP converts only
32-bit integers; LLVM would otherwise call the run-time library); the quotients fit int32.

Scaling ``v`` by ``4**k`` before the root keeps 25 significant bits in ``st`` whatever the row's
variance (the floor of a small root would cost up to a percent). Bounds (``__post_init__``,
``check_values``): C <= 2**14 keeps ``C Q - s*s`` below 2**42, eps below 2**50, so ``v`` stays
below 2**51 and ``v << 2k`` below 2**52; ``st >= 2**25`` (or v = 0 and every d = 0) gives
``r <= 2**23`` (int32), ``|d r| < 2**45`` and ``|z| <= 2 sqrt(C) 2**16 <= 2**24``; ``|mul| <= 2**15`` and
``|add| <= 2**(shift+8) + 2**40`` keep ``z mul + add`` inside int64.
"""

import dataclasses

from .spec import ArgSpec, KernelSpec, Work, check_positive, check_range, check_values_in

MAX_CHANNELS = 1 << 14
MAX_EPS = 1 << 50
MAX_SHIFT = 46
MUL_LIMIT = 1 << 15
# reference.LN_ROOT_BITS, LN_RECIP_BITS, LN_Z_FRAC, LN_SQRT_STEPS (tested equal)
ROOT_BITS, RECIP_BITS, Z_FRAC, SQRT_STEPS = 52, 48, 16, 8
MIN_ROOT = 1 << 25  # st is at least this unless v = 0 (then every d is 0): r = 2**48 // st fits int32


def add_limit(shift: int) -> int:
    """|add| at most this: beyond it the output saturates whatever z is (|z mul| < 2**39)."""
    return (1 << (shift + 8)) + (1 << 40)


@dataclasses.dataclass(frozen=True, kw_only=True)
class LayerNormSpec(KernelSpec):
    """``rows`` rows of ``channels`` int8 values, each normalised; ``eps`` and ``shift`` as above."""

    family = "layernorm"
    rows: int
    channels: int
    eps: int
    shift: int

    def __post_init__(self):
        check_positive(self.family, rows=self.rows, channels=self.channels)
        check_range(self.family, "channels", self.channels, 1, MAX_CHANNELS)
        check_range(self.family, "eps", self.eps, 0, MAX_EPS)
        check_range(self.family, "shift", self.shift, 0, MAX_SHIFT)
        super().__post_init__()

    def check_values(self, arrays):
        if "mul" in arrays:
            check_values_in(self.family, "mul", arrays["mul"], -MUL_LIMIT, MUL_LIMIT)
        if "add" in arrays:
            check_values_in(self.family, "add", arrays["add"], -add_limit(self.shift), add_limit(self.shift))

    def args(self):
        shape = (self.rows, self.channels)
        return (ArgSpec("inp", "int8", shape), ArgSpec("mul", "int32", (self.channels,)),
                ArgSpec("add", "int64", (self.channels,)), ArgSpec("out", "int8", shape, output=True))

    def work(self):
        read, written = self.io_bytes()
        # per element: two loads, the sums (3), the deviation (2), two products, add, shift, clamps,
        # store (about 14); per row the square root's and the reciprocal's divisions (about 80)
        return Work(elem_ops=self.rows * (14 * self.channels + 80), bytes_read=read, bytes_written=written)

    @staticmethod
    def _bits(b, value):
        """i32: the number of bits of a non-negative i64 (0 for 0)."""
        from llvmlite import ir

        from . import ir as L
        count = b.ctlz(value, ir.Constant(L.I1, 0))
        return b.trunc(b.sub(ir.Constant(value.type, 64), count), L.I32)

    def emit(self, b, ptrs):
        from llvmlite import ir

        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        i64, f64 = ir.IntType(64), ir.DoubleType()
        inp, mul, add, out = ptrs
        two32 = ir.Constant(f64, 2.0 ** 32)

        def to_double(v):   # int64 in [0, 2**53) -> double, by 32-bit halves (exact)
            hi = b.trunc(b.lshr(v, ir.Constant(i64, 32)), L.I32)
            return b.fadd(b.fmul(b.uitofp(hi, f64), two32), b.uitofp(b.trunc(v, L.I32), f64))

        c = self.channels
        total, squares, root = (L.entry_alloca(b, L.I32, name) for name in ("sum", "squares", "root"))
        with L.loop(b, 0, self.rows, "r") as r:
            base = b.mul(r, L.const(c), flags=["nsw"])
            b.store(L.const(0), total)
            b.store(L.const(0), squares)
            with L.loop(b, 0, c, "k0") as k:
                v = b.sext(L.load(b, inp, b.add(base, k, flags=["nsw"]), L.I8), L.I32)
                b.store(b.add(b.load(total, typ=L.I32), v), total)
                b.store(b.add(b.load(squares, typ=L.I32), b.mul(v, v)), squares)
            s = b.load(total, typ=L.I32)
            s64 = b.sext(s, i64)
            var = b.sub(b.mul(b.sext(b.load(squares, typ=L.I32), i64), ir.Constant(i64, c)), b.mul(s64, s64))
            v = b.add(var, ir.Constant(i64, self.eps))
            scale = b.ashr(b.sub(L.const(ROOT_BITS), self._bits(b, v)), L.const(1))     # k
            n = b.shl(v, b.zext(b.shl(scale, L.const(1)), i64))
            b.store(b.shl(L.const(1), b.ashr(b.add(self._bits(b, n), L.const(1)), L.const(1))), root)
            nd = to_double(n)
            with L.loop(b, 0, SQRT_STEPS, "newton", unroll=False):
                x = b.load(root, typ=L.I32)
                quotient = b.fptosi(b.fdiv(nd, b.sitofp(x, f64)), L.I32)
                step = b.ashr(b.add(x, quotient), L.const(1))
                b.store(L.smax(b, L.smin(b, x, step), L.const(1)), root)
            st = b.sitofp(L.smax(b, b.load(root, typ=L.I32), L.const(MIN_ROOT)), f64)
            recip = b.fptosi(b.fdiv(ir.Constant(f64, float(1 << RECIP_BITS)), st), L.I32)
            down = b.zext(b.sub(L.const(RECIP_BITS - Z_FRAC), scale), i64)
            with L.loop(b, 0, c, "k1") as k:
                body = b.block
                at = b.add(base, k, flags=["nsw"])
                d = b.sub(b.mul(b.sext(L.load(b, inp, at, L.I8), L.I32), L.const(c)), s)
                z = b.trunc(b.ashr(b.mul(b.sext(d, i64), b.sext(recip, i64)), down), L.I32)
                acc = b.add(b.mul(b.sext(z, i64), b.sext(L.load(b, mul, k, L.I32), i64)), L.load(b, add, k, i64))
                if self.shift:
                    acc = b.ashr(acc, ir.Constant(i64, self.shift))
                acc = L.smin(b, L.smax(b, acc, ir.Constant(i64, -128)), ir.Constant(i64, 127))
                L.store(b, b.trunc(acc, L.I8), out, at, L.I8)
                back = b.block
            _scalar_loop(b, back, body)


def _scalar_loop(b, back, body):
    """Ask LLVM not to vectorise the loop whose body starts at block ``body`` and branches back
    from ``back``: its int64 products have no NEON instruction, and the vectorised code (lanes
    moved between NEON and core registers) is slower on the A9 than the scalar loop. Written as
    ``ir.loop``'s unroll=False metadata is (``codegen`` makes the placeholder a loop ID)."""
    from llvmlite import ir

    from . import ir as L
    module = b.module
    count = getattr(module, "_vdla_loops", 0)
    module._vdla_loops = count + 1
    scalar = module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.enable"), ir.Constant(L.I1, 0)])
    loop_id = module.add_metadata([ir.MetaDataString(module, L.LOOP_ID_MARKER), ir.MetaDataString(module, str(count)),
                                   scalar])
    back.terminator.set_metadata("llvm.loop", loop_id)

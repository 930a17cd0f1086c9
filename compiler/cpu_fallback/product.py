"""Element-wise product of two int8 tensors with broadcasting, requantized (``mul``).

The index space is (n, c, inner): batch, channels and the rest (H x W) of the output. Each input
has its own extents there, each the output's or 1 (``a_ext``, ``b_ext``): equal shapes, a
squeeze-excitation gate (N, C, 1, 1) read once per row of H x W outputs, a per-channel (1, C, 1, 1)
or a scalar-like (1, 1, 1) input::

    p   = (a - a_zp) * (b - b_zp)                            |p| <= 255 * 255 < 2**16
    out = clip(((p * mul + 2**(shift-1)) >> shift) + zp, lo, hi)     (no rounding term if shift = 0)

in int32, arithmetic right shift. No intermediate can overflow: the zero points are int8, so
``|x - zp| <= 255``; ``0 <= mul <= 2**14`` and ``shift <= 31`` bound ``|p * mul| <= 65025 * 2**14 =
1065369600`` and the rounding term by ``2**30``, so ``p * mul + 2**(shift-1)`` lies in
``[-1065369600, 2139111424]``, inside int32 (``2**31 - 1 = 2147483647``).
"""

import dataclasses

from .spec import ArgSpec, KernelParamError, KernelSpec, Work, check_positive, check_range

MAX_MUL = 1 << 14  # with |p| < 2**16 and the rounding term <= 2**30, p * mul + rounding fits int32


def _check_extents(family, name, ext, full):
    if not isinstance(ext, tuple) or len(ext) != 3 or \
            any(isinstance(e, bool) or not isinstance(e, int) or e not in (1, f) for e, f in zip(ext, full)):
        raise KernelParamError(f"{family}: parameter {name}={ext!r} must be 3 ints, each 1 or the output's "
                               f"extent {full}")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MulSpec(KernelSpec):
    """Requantized product of two int8 buffers broadcast over an (n, c, inner) output."""

    family = "mul"
    n: int
    c: int
    inner: int
    a_ext: tuple = None  # default: the output's extents (no broadcast)
    b_ext: tuple = None
    a_zp: int = 0
    b_zp: int = 0
    mul: int = 1
    shift: int = 0
    zp: int = 0
    lo: int = -128
    hi: int = 127

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, inner=self.inner)
        full = (self.n, self.c, self.inner)
        for name in ("a_ext", "b_ext"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, full)
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
            _check_extents(self.family, name, getattr(self, name), full)
        for name in ("a_zp", "b_zp", "zp"):
            check_range(self.family, name, getattr(self, name), -128, 127)
        check_range(self.family, "mul", self.mul, 0, MAX_MUL)
        check_range(self.family, "shift", self.shift, 0, 31)
        check_range(self.family, "lo", self.lo, -128, 127)
        check_range(self.family, "hi", self.hi, self.lo, 127)
        super().__post_init__()

    @property
    def size(self):
        return self.n * self.c * self.inner

    def args(self):
        sizes = [e[0] * e[1] * e[2] for e in (self.a_ext, self.b_ext)]
        return (ArgSpec("a", "int8", (sizes[0],)), ArgSpec("b", "int8", (sizes[1],)),
                ArgSpec("out", "int8", (self.size,), output=True))

    def work(self):
        read, written = self.io_bytes()
        # widen x2, zero points x2, two multiplies, round, shift, zero point, two clamps, narrow
        return Work(elem_ops=12 * self.size, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        pa, pb, out = ptrs
        exts = (self.a_ext, self.b_ext)

        def centred(ptr, index, zp):
            v = b.sext(L.load(b, ptr, index, L.I8), L.I32)
            return b.sub(v, L.const(zp)) if zp else v

        def index(ext, r, j, k):
            return L.madd(b, (r, ext[1] * ext[2] if ext[0] > 1 else 0), (j, ext[2] if ext[1] > 1 else 0),
                          (k, 1 if ext[2] > 1 else 0))

        rounding = (1 << (self.shift - 1)) if self.shift else 0
        with L.loop(b, 0, self.n, "r") as r, L.loop(b, 0, self.c, "j") as j:
            # an input constant over the row (a gate) is read once per row of ``inner`` outputs
            row = [centred(p, index(e, r, j, 0), z) if e[2] == 1 else None
                   for p, e, z in zip((pa, pb), exts, (self.a_zp, self.b_zp))]
            with L.loop(b, 0, self.inner, "k") as k:
                va, vb = (v if v is not None else centred(p, index(e, r, j, k), z)
                          for v, p, e, z in zip(row, (pa, pb), exts, (self.a_zp, self.b_zp)))
                total = b.mul(b.mul(va, vb), L.const(self.mul))
                if rounding:
                    total = b.add(total, L.const(rounding))
                if self.shift:
                    total = b.ashr(total, L.const(self.shift))
                if self.zp:
                    total = b.add(total, L.const(self.zp))
                o = L.madd(b, (r, self.c * self.inner), (j, self.inner), k)
                L.store(b, L.requantize(b, total, 0, lo=self.lo, hi=self.hi), out, o, L.I8)


def collapse(out, a_ext, b_ext):
    """(out, a_ext, b_ext) with neighbouring axes merged where both inputs broadcast alike (equal
    shapes become one flat loop, an (N, C, 1, 1) gate one loop of N*C rows): the same product."""
    axes = [[o, x, y] for o, x, y in zip(out, a_ext, b_ext)]
    merged = [axes[0]]
    for o, x, y in axes[1:]:
        last = merged[-1]
        same = all((m == last[0]) == (v == o) for m, v in ((last[1], x), (last[2], y)))
        if same or last[0] == 1 or o == 1:
            merged[-1] = [last[0] * o, last[1] * x, last[2] * y]
        else:
            merged.append([o, x, y])
    while len(merged) < 3:
        merged.insert(0, [1, 1, 1])
    return tuple(tuple(m[i] for m in merged) for i in range(3))

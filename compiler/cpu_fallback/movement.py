"""Data movement on int8 tensors: ``concat`` and ``gather``.

- Concatenation along an axis: the tensors are (outer, c_i * inner) blocks laid side by side::

      out[o, off_i + k] = clip(((inp_i[o, k] - zp_i + rnd_i) >> shift_i) + zp, -128, 127)

  with ``rnd_i = 2**(shift_i - 1)`` (0 when the shift is 0); inputs already at the output's
  scale and zero point are plain copies.
- Gather with a constant index map (every Transpose, Slice, Gather, Where-with-a-constant... of
  the front end)::

      out[r, k] = inp[r, index[k]] if index[k] >= 0 else fill[k]

  over ``n`` samples; ``index`` int32 and ``fill`` int8 are (size_out,) buffer arguments. An
  index must be below ``size_in``: ``check_values`` refuses any other before the code runs, and
  the code itself reads ``inp`` only for ``0 <= index < size_in`` (one unsigned compare), taking
  ``fill`` otherwise, so no index reaches memory outside the input.
"""

import dataclasses

import numpy as np

from .errors import KernelParamError
from .spec import ArgSpec, KernelSpec, Work, check_positive, check_range, check_values_in

# Inputs of one concatenation: each is a loop of its own in the generated code.
MAX_CONCAT_INPUTS = 256


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConcatSpec(KernelSpec):
    """Concatenation of len(parts) int8 tensors, each (outer, parts[i] * inner) elements."""

    family = "concat"
    outer: int
    inner: int
    parts: tuple
    shifts: tuple = ()
    zps: tuple = ()
    zp: int = 0

    def __post_init__(self):
        for name in ("parts", "shifts", "zps"):
            value = getattr(self, name)
            if not isinstance(value, (tuple, list)) or \
                    any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value):
                raise KernelParamError(f"{self.family}: parameter {name} must be a tuple of ints, got {value!r}")
            object.__setattr__(self, name, tuple(int(v) for v in value))
        if not self.shifts:
            object.__setattr__(self, "shifts", (0,) * len(self.parts))
        if not self.zps:
            object.__setattr__(self, "zps", (self.zp,) * len(self.parts))
        if not self.parts or len(self.shifts) != len(self.parts) or len(self.zps) != len(self.parts):
            raise KernelParamError(f"{self.family}: parts, shifts and zps must have one entry per input "
                                   f"({self.describe()})")
        if len(self.parts) > MAX_CONCAT_INPUTS:
            raise KernelParamError(f"{self.family}: {len(self.parts)} inputs, more than the {MAX_CONCAT_INPUTS} "
                                   "one concatenation takes")
        check_positive(self.family, outer=self.outer, inner=self.inner, **{f"part{i}": p for i, p in enumerate(self.parts)})
        for s, z in zip(self.shifts, self.zps):
            check_range(self.family, "shift", s, 0, 15)
            check_range(self.family, "zp", z, -128, 127)
        check_range(self.family, "zp", self.zp, -128, 127)
        super().__post_init__()

    def args(self):
        inputs = tuple(ArgSpec(f"in{i}", "int8", (self.outer, p * self.inner)) for i, p in enumerate(self.parts))
        return inputs + (ArgSpec("out", "int8", (self.outer, sum(self.parts) * self.inner), output=True),)

    def work(self):
        read, written = self.io_bytes()
        moved = self.outer * sum(self.parts) * self.inner
        requant = sum(p for p, s, z in zip(self.parts, self.shifts, self.zps) if s or z != self.zp)
        return Work(elem_ops=moved // 4 + 6 * self.outer * requant * self.inner, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        *inputs, out = ptrs
        total = sum(self.parts) * self.inner
        offset = 0
        for i, (src, part, shift, zp) in enumerate(zip(inputs, self.parts, self.shifts, self.zps)):
            size = part * self.inner
            with L.loop(b, 0, self.outer, f"o{i}") as o, L.loop(b, 0, size, f"k{i}") as k:
                v = L.load(b, src, L.madd(b, (o, size), k), L.I8)
                if shift or zp != self.zp:
                    w = b.sext(v, L.I32)
                    w = b.add(w, L.const(-zp + ((1 << shift) >> 1)))
                    if shift:
                        w = b.ashr(w, L.const(shift))
                    w = b.add(w, L.const(self.zp))
                    v = b.trunc(L.smin(b, L.smax(b, w, L.const(-128)), L.const(127)), L.I8)
                L.store(b, v, out, L.madd(b, (o, total), offset, k), L.I8)
            offset += size


@dataclasses.dataclass(frozen=True, kw_only=True)
class GatherSpec(KernelSpec):
    """out[r, k] = inp[r, index[k]] or fill[k] (index < 0), over n samples."""

    family = "gather"
    n: int
    size_in: int
    size_out: int

    def __post_init__(self):
        check_positive(self.family, n=self.n, size_in=self.size_in, size_out=self.size_out)
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.n, self.size_in)), ArgSpec("index", "int32", (self.size_out,)),
                ArgSpec("fill", "int8", (self.size_out,)), ArgSpec("out", "int8", (self.n, self.size_out), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(elem_ops=4 * self.n * self.size_out, bytes_read=read, bytes_written=written)

    def check_values(self, arrays):
        if "index" in arrays:  # negative: take fill; at or above size_in: outside the input
            check_values_in(self.family, "index", arrays["index"], -2**31, self.size_in - 1)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, index, fill, out = ptrs
        with L.loop(b, 0, self.n, "r") as r, L.loop(b, 0, self.size_out, "k") as k:
            at = L.load(b, index, k, L.I32)
            inside = b.icmp_unsigned("<", at, L.const(self.size_in))  # 0 <= at < size_in
            safe = b.select(inside, at, L.const(0))
            picked = L.load(b, inp, L.madd(b, (r, self.size_in), safe), L.I8)
            value = b.select(inside, picked, L.load(b, fill, k, L.I8))
            L.store(b, value, out, L.madd(b, (r, self.size_out), k), L.I8)

"""int8 softmax along one axis, with an exponential table (``compiler.quantize.reference.softmax``)::

    e[k] = table[x[k] - max_k x + 255]            table: int32 (256,), 2**16 exp(-d * 2**-frac)
    out[k] = min((e[k] * 128 + s // 2) // s, 127),   s = sum_k e[k]        (frac 7, zero point 0)
    out[k] = min((e[k] * 256 + s // 2) // s, 255) - 128                    (zp -128: frac 8)

The tensor is (outer, axis, inner). The division is done in double precision (exact here: the
dividend is below 2**25 and the quotient at most 256, far from double's rounding), since the
Cortex-A9 has no integer divider.

With a mask (``mask_rows`` > 0, an int8 argument of 0s and 1s, shape (mask_rows, axis, inner),
repeating over the outer rows: row ``o`` reads mask row ``o % mask_rows``), the maximum and the
sum are over the kept positions (mask 1) only, and masked positions get the lowest code
(``e = 0``): an attention mask (``compiler.frontend.onnx_import``). Every row keeps at least one
position (``check_values``).

The table's entries must be in [0, 2**16] and its last (``d = 0``, the maximum's) at least 1:
then the sum is positive and, with ``axis <= 32767``, fits int32 (``check_values``). The table
index ``x - max + 255`` is in [0, 255] for any int8 input.
"""

import dataclasses

from .errors import KernelParamError, KernelValueError
from .spec import ArgSpec, KernelSpec, Work, check_positive, check_range, check_values_in

# exp(0) in the table: entries are at most this (the int32 sum of `axis` of them cannot overflow)
TABLE_ONE = 1 << 16


@dataclasses.dataclass(frozen=True, kw_only=True)
class SoftmaxSpec(KernelSpec):
    family = "softmax"
    outer: int
    axis: int
    inner: int = 1
    zp: int = 0  # 0: codes 0..127 on the step 2**-7; -128: codes -128..127 on 2**-8
    mask_rows: int = 0  # 0: no mask; else the mask's rows, repeated over `outer` (which they divide)

    def __post_init__(self):
        check_positive(self.family, outer=self.outer, axis=self.axis, inner=self.inner)
        check_range(self.family, "axis", self.axis, 1, 32767)  # the int32 sum of 2**16-entries
        if self.zp not in (0, -128):
            raise KernelParamError(f"{self.family}: parameter zp={self.zp!r} is neither 0 nor -128")
        check_range(self.family, "mask_rows", self.mask_rows, 0, self.outer)
        if self.mask_rows and self.outer % self.mask_rows:
            raise KernelParamError(f"{self.family}: parameter mask_rows={self.mask_rows} does not divide "
                                   f"outer={self.outer}")
        super().__post_init__()

    def check_values(self, arrays):
        if "table" in arrays:
            table = arrays["table"]
            check_values_in(self.family, "table", table, 0, TABLE_ONE)
            if table.size and table[-1] < 1:  # the maximum's own term: the sum is at least this
                raise KernelValueError(self.family, "table", f"holds {int(table[-1])} as its last entry (exp(0)), "
                                       "below 1")
        if "mask" in arrays:
            mask = arrays["mask"]
            check_values_in(self.family, "mask", mask, 0, 1)
            if mask.size and not mask.reshape(self.mask_rows, self.axis, self.inner).any(axis=1).all():
                raise KernelValueError(self.family, "mask", "masks every position of a row (no probability to take)")

    def args(self):
        shape = (self.outer, self.axis, self.inner)
        mask = (ArgSpec("mask", "int8", (self.mask_rows, self.axis, self.inner)),) if self.mask_rows else ()
        return (ArgSpec("inp", "int8", shape), ArgSpec("table", "int32", (256,)), *mask,
                ArgSpec("out", "int8", shape, output=True))

    def work(self):
        read, written = self.io_bytes()
        # a mask adds a load and a select to each of the three passes over a row
        ops = 12 + 6 * bool(self.mask_rows)
        return Work(elem_ops=ops * self.outer * self.axis * self.inner, bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from llvmlite import ir

        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, table, *mask, out = ptrs
        f64 = ir.DoubleType()
        best = L.entry_alloca(b, L.I32, "max")
        total = L.entry_alloca(b, L.I32, "sum")
        stride = self.inner
        period = self.mask_rows or self.outer  # rows of the mask; the outer loop is (repeat, row)
        with L.loop(b, 0, self.outer // period, "r") as r, L.loop(b, 0, period, "p") as p, \
                L.loop(b, 0, self.inner, "i") as i:
            base = L.madd(b, (r, period * self.axis * self.inner), (p, self.axis * self.inner), i)
            mbase = L.madd(b, (p, self.axis * self.inner), i)

            def kept(a):  # the mask's 0 or 1 at position a of the row (1 without a mask)
                if not mask:
                    return None
                return b.sext(L.load(b, mask[0], L.madd(b, mbase, (a, stride)), L.I8), L.I32)

            def term(a, v, top):  # table[v - top + 255], 0 where masked (index 255 there: in range)
                index = b.add(b.sub(v, top), L.const(255))
                keep = kept(a)
                if keep is None:
                    return L.load(b, table, index, L.I32)
                flag = b.icmp_signed("!=", keep, L.const(0))
                return b.mul(L.load(b, table, b.select(flag, index, L.const(255)), L.I32), keep)

            b.store(L.const(-128), best)
            b.store(L.const(0), total)
            with L.loop(b, 0, self.axis, "a0") as a:
                v = b.sext(L.load(b, inp, L.madd(b, base, (a, stride)), L.I8), L.I32)
                keep = kept(a)
                if keep is not None:  # a masked position counts as -128, the maximum's start
                    v = b.select(b.icmp_signed("!=", keep, L.const(0)), v, L.const(-128))
                b.store(L.smax(b, b.load(best, typ=L.I32), v), best)
            top = b.load(best, typ=L.I32)
            with L.loop(b, 0, self.axis, "a1") as a:
                v = b.sext(L.load(b, inp, L.madd(b, base, (a, stride)), L.I8), L.I32)
                b.store(b.add(b.load(total, typ=L.I32), term(a, v, top)), total)
            s = b.load(total, typ=L.I32)
            half = b.ashr(s, L.const(1))
            sf = b.sitofp(s, f64)
            with L.loop(b, 0, self.axis, "a2") as a:
                at = L.madd(b, base, (a, stride))
                v = b.sext(L.load(b, inp, at, L.I8), L.I32)
                num = b.add(b.mul(term(a, v, top), L.const(256 if self.zp else 128)), half)
                q = b.fptosi(b.fdiv(b.sitofp(num, f64), sf), L.I32)
                q = b.add(L.smin(b, q, L.const(127 - self.zp)), L.const(self.zp))
                L.store(b, b.trunc(q, L.I8), out, at, L.I8)

"""int8 dense layer (the classifier): ``(n, k) x (m, k)^T + bias -> (n, m)``.

Semantics (``compiler.quantize.reference.dense``)::

    acc[r, o] = bias[o] + sum_k inp[r, k] * wgt[o, k]           (int32, wrapping)
    out = clip(acc >> shift[o], lo, hi)

``shift`` is one int, or with ``per_channel`` an (m,) int32 buffer argument. With
``out_dtype == "int32"`` the result stays int32 (bounds default to int32's range; shift 0 gives
the raw accumulator): the last layer's logits keep the accumulator's resolution. Loop nest: for r, o: a vectorised int32 reduction over k (widening int8 products).
"""

import dataclasses

from .errors import KernelParamError
from .spec import ArgSpec, KernelSpec, Work, check_bool, check_clip, check_positive, check_range, check_values_in

OUT_DTYPES = ("int8", "int32")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DenseSpec(KernelSpec):
    """Dense layer: int8 input (n, k), int8 weights (m, k), int32 bias (m,)."""

    family = "dense"
    n: int
    k: int
    m: int
    shift: int = 0
    per_channel: bool = False
    relu: bool = False
    lo: int = None
    hi: int = None
    out_dtype: str = "int8"

    def __post_init__(self):
        check_positive(self.family, n=self.n, k=self.k, m=self.m)
        check_range(self.family, "shift", self.shift, 0, 31)
        check_bool(self.family, "relu", self.relu)
        check_bool(self.family, "per_channel", self.per_channel)
        if self.out_dtype not in OUT_DTYPES:
            raise KernelParamError(
                f"{self.family}: out_dtype must be one of {OUT_DTYPES}, got {self.out_dtype!r}")
        check_clip(self, self.out_dtype == "int32", self.relu)
        super().__post_init__()

    def check_values(self, arrays):
        if self.per_channel and "shift" in arrays:
            check_values_in(self.family, "shift", arrays["shift"], 0, 31)

    def args(self):
        shift = (ArgSpec("shift", "int32", (self.m,)),) if self.per_channel else ()
        return (ArgSpec("inp", "int8", (self.n, self.k)),
                ArgSpec("wgt", "int8", (self.m, self.k)),
                ArgSpec("bias", "int32", (self.m,)), *shift,
                ArgSpec("out", self.out_dtype, (self.n, self.m), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(macs=self.n * self.m * self.k, elem_ops=5 * self.n * self.m,
                    bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        if self.per_channel:
            inp, wgt, bias, shifts, out = ptrs
        else:
            inp, wgt, bias, out = ptrs
        acc = L.entry_alloca(b, L.I32, "acc")
        with L.loop(b, 0, self.n, "r") as r, L.loop(b, 0, self.m, "o") as o:
            b.store(L.load(b, bias, o, L.I32), acc)
            x_row = L.madd(b, (r, self.k))
            w_row = L.madd(b, (o, self.k))
            with L.loop(b, 0, self.k, "k") as k:
                xv = b.sext(L.load(b, inp, L.madd(b, x_row, k), L.I8), L.I32)
                wv = b.sext(L.load(b, wgt, L.madd(b, w_row, k), L.I8), L.I32)
                b.store(b.add(b.load(acc, typ=L.I32), b.mul(xv, wv)), acc)
            total = b.load(acc, typ=L.I32)
            index = L.madd(b, (r, self.m), o)
            shift = L.load(b, shifts, o, L.I32) if self.per_channel else self.shift
            if self.out_dtype == "int32":
                if self.per_channel or self.shift:
                    total = b.ashr(total, L.as_value(shift))
                total = L.smin(b, L.smax(b, total, L.const(self.lo)), L.const(self.hi))
                L.store(b, total, out, index, L.I32)
            else:
                L.store(b, L.requantize(b, total, shift, lo=self.lo, hi=self.hi), out, index, L.I8)

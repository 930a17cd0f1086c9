"""int8 dense layer (the classifier): ``(n, k) x (m, k)^T + bias -> (n, m)``.

Semantics::

    acc[r, o] = bias[o] + sum_k inp[r, k] * wgt[o, k]           (int32, wrapping)
    out = clip(acc >> shift, 0 if relu else -128, 127)         when out_dtype == "int8"
    out = acc                                                    when out_dtype == "int32"

The int32 output is for the last layer, whose logits go to dequantize/argmax without losing
range. Loop nest: for r, o: a vectorised int32 reduction over k (widening int8 products).
"""

import dataclasses

from .errors import KernelParamError
from .spec import ArgSpec, KernelSpec, Work, check_bool, check_positive, check_range

OUT_DTYPES = ("int8", "int32")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DenseSpec(KernelSpec):
    """Dense layer: int8 input (n, k), int8 weights (m, k), int32 bias (m,)."""

    family = "dense"
    n: int
    k: int
    m: int
    shift: int = 0
    relu: bool = False
    out_dtype: str = "int8"

    def __post_init__(self):
        check_positive(self.family, n=self.n, k=self.k, m=self.m)
        check_range(self.family, "shift", self.shift, 0, 31)
        check_bool(self.family, "relu", self.relu)
        if self.out_dtype not in OUT_DTYPES:
            raise KernelParamError(
                f"{self.family}: out_dtype must be one of {OUT_DTYPES}, got {self.out_dtype!r}")
        if self.out_dtype == "int32" and (self.shift or self.relu):
            raise KernelParamError(
                f"{self.family}: out_dtype='int32' returns the raw accumulator; shift and relu "
                f"must be 0/False (got shift={self.shift}, relu={self.relu})")
        super().__post_init__()

    def args(self):
        return (ArgSpec("inp", "int8", (self.n, self.k)),
                ArgSpec("wgt", "int8", (self.m, self.k)),
                ArgSpec("bias", "int32", (self.m,)),
                ArgSpec("out", self.out_dtype, (self.n, self.m), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(macs=self.n * self.m * self.k, elem_ops=5 * self.n * self.m,
                    bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
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
            if self.out_dtype == "int32":
                L.store(b, total, out, index, L.I32)
            else:
                L.store(b, L.requantize(b, total, self.shift, self.relu), out, index, L.I8)

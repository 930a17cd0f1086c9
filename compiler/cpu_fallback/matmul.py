"""int8 product of two computed tensors, one per batch index (attention's Q.K^T and P.V;
``compiler.quantize.reference.matmul``)::

    acc[g, r, o] = add + sum_k (a[g, r, k] - a_zp) * b[g, k, o]          (int32, wrapping)
    out[g, r, o] = clip(acc >> shift, lo, hi)

``a`` is (g, n, k), ``b`` (g, k, m), both int8; ``b``'s zero point is 0 (the quantizer makes it
symmetric: ``compiler.quantize.rules.symmetric_operands``), ``a``'s is ``a_zp`` (a softmax's
probabilities: -128). Loop nest: for g, r, o: an int32
reduction over k (``b`` read with the stride m). On the accelerator the same product is one
dense layer per batch index, ``b[g]`` packed as its weights (``compiler.network.attention``);
this kernel is its CPU side (the CPU-only baseline, and the fallback when the product stays).
"""

import dataclasses

from .spec import ArgSpec, KernelSpec, Work, check_clip, check_positive, check_range


@dataclasses.dataclass(frozen=True, kw_only=True)
class MatMulSpec(KernelSpec):
    family = "matmul"
    g: int
    n: int
    k: int
    m: int
    add: int = 0
    shift: int = 0
    lo: int = None
    hi: int = None
    a_zp: int = 0

    def __post_init__(self):
        check_positive(self.family, g=self.g, n=self.n, k=self.k, m=self.m)
        check_range(self.family, "a_zp", self.a_zp, -128, 127)
        check_range(self.family, "shift", self.shift, 0, 31)
        check_range(self.family, "add", self.add, -2**31, 2**31 - 1)
        check_clip(self, False)
        super().__post_init__()

    def args(self):
        return (ArgSpec("a", "int8", (self.g, self.n, self.k)),
                ArgSpec("b", "int8", (self.g, self.k, self.m)),
                ArgSpec("out", "int8", (self.g, self.n, self.m), output=True))

    def work(self):
        read, written = self.io_bytes()
        return Work(macs=self.g * self.n * self.m * self.k, elem_ops=4 * self.g * self.n * self.m,
                    bytes_read=read, bytes_written=written)

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        a, w, out = ptrs
        acc = L.entry_alloca(b, L.I32, "acc")
        with L.loop(b, 0, self.g, "g") as g, L.loop(b, 0, self.n, "r") as r, L.loop(b, 0, self.m, "o") as o:
            b.store(L.const(self.add), acc)
            a_row = L.madd(b, (L.madd(b, (g, self.n), r), self.k))
            b_col = L.madd(b, (g, self.k * self.m), o)
            with L.loop(b, 0, self.k, "k") as k:
                av = b.sext(L.load(b, a, L.madd(b, a_row, k), L.I8), L.I32)
                if self.a_zp:
                    av = b.sub(av, L.const(self.a_zp))
                bv = b.sext(L.load(b, w, L.madd(b, b_col, (k, self.m)), L.I8), L.I32)
                b.store(b.add(b.load(acc, typ=L.I32), b.mul(av, bv)), acc)
            index = L.madd(b, (L.madd(b, (g, self.n), r), self.m), o)
            L.store(b, L.requantize(b, b.load(acc, typ=L.I32), self.shift, lo=self.lo, hi=self.hi), out, index, L.I8)

"""Layout pack/unpack between NCHW and the accelerator's blocked activation layout.

Blocked layout (VTA's): ``(N/BATCH, C/BLOCK, H, W, BATCH, BLOCK)``, row-major, with N and C
zero-padded up to whole batches/blocks::

    packed[nb, cb, y, x, bi, ci] = nchw[nb*BATCH + bi, cb*BLOCK + ci, y, x]   (0 where padded)

``batch`` and ``block`` are plain ints (BATCH and BLOCK_IN of the configuration, e.g. 1 and
16). Elements are int8 (activations) or int32 (accumulators / bias tiles). Both kernels write
every destination element exactly once (padding included); their innermost loop runs over W,
contiguous in NCHW and with the constant stride BATCH*BLOCK in the blocked layout. Pack's
padding rows are loop-invariant selects of zero, which LLVM unswitches out of the loop.
"""

import dataclasses

from .errors import KernelParamError
from .spec import ArgSpec, KernelSpec, Work, check_positive

DTYPES = ("int8", "int32")


def _ceil_div(a, b):
    return -(-a // b)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _LayoutSpec(KernelSpec):
    n: int
    c: int
    h: int
    w: int
    batch: int = 1
    block: int = 16
    dtype: str = "int8"

    def __post_init__(self):
        check_positive(self.family, n=self.n, c=self.c, h=self.h, w=self.w, batch=self.batch,
                       block=self.block)
        if self.dtype not in DTYPES:
            raise KernelParamError(
                f"{self.family}: dtype must be one of {DTYPES}, got {self.dtype!r}")
        super().__post_init__()

    @property
    def nchw_shape(self):
        return (self.n, self.c, self.h, self.w)

    @property
    def blocked_shape(self):
        return (_ceil_div(self.n, self.batch), _ceil_div(self.c, self.block), self.h, self.w,
                self.batch, self.block)

    def work(self):
        read, written = self.io_bytes()
        # One select per destination element.
        elements = written // (1 if self.dtype == "int8" else 4)
        return Work(elem_ops=elements, bytes_read=read, bytes_written=written)

    def _nchw_index(self, b, n, c, y, x):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        return L.madd(b, (n, self.c * self.h * self.w), (c, self.h * self.w), (y, self.w), x)


@dataclasses.dataclass(frozen=True, kw_only=True)
class PackSpec(_LayoutSpec):
    """NCHW -> blocked (N/BATCH, C/BLOCK, H, W, BATCH, BLOCK), zero padding N and C."""

    family = "pack"

    def args(self):
        return (ArgSpec("inp", self.dtype, self.nchw_shape),
                ArgSpec("out", self.dtype, self.blocked_shape, output=True))

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, out = ptrs
        ty = L.ELEMENT_TYPES[self.dtype]
        nbs, cbs, _, _, bt, bl = self.blocked_shape
        with L.loop(b, 0, nbs, "nb") as nb, L.loop(b, 0, cbs, "cb") as cb, \
                L.loop(b, 0, self.h, "y") as y, L.loop(b, 0, bt, "bi") as bi, \
                L.loop(b, 0, bl, "ci") as ci:
            n, c = L.madd(b, (nb, bt), bi), L.madd(b, (cb, bl), ci)
            inside = b.and_(b.icmp_signed("<", n, L.const(self.n)),
                            b.icmp_signed("<", c, L.const(self.c)))
            # Padding rows read a clamped (valid) source row and store zero instead.
            src_row = self._nchw_index(b, L.smin(b, n, L.const(self.n - 1)),
                                       L.smin(b, c, L.const(self.c - 1)), y, 0)
            dst_row = L.madd(b, (nb, cbs * self.h * self.w * bt * bl),
                             (cb, self.h * self.w * bt * bl), (y, self.w * bt * bl), (bi, bl), ci)
            with L.loop(b, 0, self.w, "x") as x:
                v = b.select(inside, L.load(b, inp, L.madd(b, src_row, x), ty), L.const(0, ty))
                L.store(b, v, out, L.madd(b, dst_row, (x, bt * bl)), ty)


@dataclasses.dataclass(frozen=True, kw_only=True)
class UnpackSpec(_LayoutSpec):
    """Blocked (N/BATCH, C/BLOCK, H, W, BATCH, BLOCK) -> NCHW, dropping the padding."""

    family = "unpack"

    def args(self):
        return (ArgSpec("inp", self.dtype, self.blocked_shape),
                ArgSpec("out", self.dtype, self.nchw_shape, output=True))

    def emit(self, b, ptrs):
        from . import ir as L  # llvmlite only where IR is built: the board runs without it
        inp, out = ptrs
        ty = L.ELEMENT_TYPES[self.dtype]
        _, cbs, _, _, bt, bl = self.blocked_shape
        with L.loop(b, 0, self.n, "n") as n, L.loop(b, 0, self.c, "c") as c, \
                L.loop(b, 0, self.h, "y") as y:
            nb, bi = b.udiv(n, L.const(bt)), b.urem(n, L.const(bt))
            cb, ci = b.udiv(c, L.const(bl)), b.urem(c, L.const(bl))
            src_row = L.madd(b, (nb, cbs * self.h * self.w * bt * bl),
                             (cb, self.h * self.w * bt * bl), (y, self.w * bt * bl), (bi, bl), ci)
            dst_row = self._nchw_index(b, n, c, y, 0)
            with L.loop(b, 0, self.w, "x") as x:
                v = L.load(b, inp, L.madd(b, src_row, (x, bt * bl)), ty)
                L.store(b, v, out, L.madd(b, dst_row, x), ty)

"""What every kernel is: a frozen, validated spec that knows its buffers, its IR and its work.

A kernel spec is a frozen dataclass of ints/bools/strings (shapes and parameters), so it is
hashable and serves as the cache key of compiled kernels. It describes:

- ``args()``: the buffers of the generated function ``void @symbol(ptr, ptr, ...)``, in order,
  each with dtype, shape and whether the kernel writes it. Inputs come first, then the output,
  then any scratch buffer (a workspace the caller allocates and the kernel overwrites; its
  contents mean nothing before or after the call).
- ``emit(builder, ptrs)``: the body of the function, as LLVM IR.
- ``work()``: what the kernel does (MACs, element operations, bytes), for the Cortex-A9 model.
- ``check_values(arrays)``: the buffers whose values the code uses as indices, divisors, shift
  amounts or table entries hold values it is defined for (else ``KernelValueError``).
- ``check_limits()``: its work and memory are within ``vdla_hw.limits`` (else ``KernelLimitError``).

Bounds checking: the constructor checks every parameter's range and that every buffer has fewer
than 2**31 elements; the generated code's loop bounds and offsets are derived from the
parameters at code-generation time, so every address it forms is inside its buffer. What the
parameters cannot vouch for, the values of index-like buffers and the size of the work, the
caller (``call.CompiledKernel``) checks with ``check_values`` and ``check_limits`` before the
native code runs.

The generated function has no other parameters: shapes, strides, shifts and flags are
constants baked into the code, which is what lets LLVM unroll and vectorise with known bounds.
"""

import dataclasses
import hashlib
from typing import ClassVar

import numpy as np

from vdla_hw.limits import MAX_CPU_KERNEL_BYTES, MAX_CPU_KERNEL_OPS, mib

from .errors import KernelLimitError, KernelParamError, KernelValueError

INT32_MAX = 2**31 - 1
# Code shape: window columns, strides and concatenated inputs are unrolled when the IR is built,
# so they bound the code's size and compile time (64 columns: about 0.6 s on the host).
MAX_UNROLL = 64
# Kernels that keep one output row of int32 accumulators on the stack (the row conv, the
# windowed average pool) take rows of at most this many elements (64 KiB: far inside any
# thread's stack, also the 128 KiB of musl's threads).
MAX_STACK_ROW = 1 << 14


@dataclasses.dataclass(frozen=True)
class ArgSpec:
    """One buffer argument: its name, numpy dtype name, shape, and whether the kernel writes it
    as its result (``output``) or as a workspace the caller provides (``scratch``)."""

    name: str
    dtype: str
    shape: tuple
    output: bool = False
    scratch: bool = False

    @property
    def is_input(self):
        return not (self.output or self.scratch)

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


@dataclasses.dataclass(frozen=True)
class Work:
    """What one call of a kernel does, for the time model.

    ``macs``: int8 x int8 -> int32 multiply-accumulates. ``elem_ops``: other 32-bit lane
    operations (adds, shifts, compares, conversions), counted per output or input element as
    documented by each kernel. ``bytes_read``/``bytes_written``: compulsory traffic, each buffer
    once.
    """

    macs: int = 0
    elem_ops: int = 0
    bytes_read: int = 0
    bytes_written: int = 0


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """Base of all kernel specs; subclasses are frozen dataclasses with keyword-only fields."""

    family: ClassVar[str] = "kernel"

    def __post_init__(self):
        for arg in self.args():
            count = int(np.prod(arg.shape, dtype=np.int64))
            if any(int(d) <= 0 for d in arg.shape):
                raise KernelParamError(
                    f"{self.family}: buffer '{arg.name}' would have shape {arg.shape}; "
                    f"every dimension must be positive ({self.describe()})")
            if count > INT32_MAX:
                raise KernelParamError(
                    f"{self.family}: buffer '{arg.name}' has {count} elements, more than the "
                    f"2**31-1 that the kernels' i32 indexing supports ({self.describe()})")

    def describe(self):
        """Human-readable parameters, for error messages and reports."""
        fields = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))
        return f"{type(self).__name__}({fields})"

    @property
    def symbol(self):
        """Exported function name: family plus a digest of the parameters (stable across runs)."""
        digest = hashlib.sha1(self.describe().encode()).hexdigest()[:12]
        return f"vdla_cpu_{self.family}_{digest}"

    def args(self):
        raise NotImplementedError

    def emit(self, builder, ptrs):
        raise NotImplementedError

    def work(self):
        raise NotImplementedError

    def check_values(self, arrays):
        """Raise ``KernelValueError`` unless the buffers in ``arrays`` ({argument name: array of
        its spec's dtype}) that the code uses as indices, divisors, shifts or table entries hold
        values it is defined for. Buffers not named are not checked; the base has none."""

    def check_limits(self):
        """Raise ``KernelLimitError`` if one call's work or memory is beyond ``vdla_hw.limits``."""
        work = self.work()
        ops = work.macs + work.elem_ops
        if ops > MAX_CPU_KERNEL_OPS:
            raise KernelLimitError(f"{self.family}: one call does {ops:,} operations, more than the "
                                   f"{MAX_CPU_KERNEL_OPS:,} a CPU kernel may ({self.describe()})")
        nbytes = sum(a.nbytes for a in self.args())
        if nbytes > MAX_CPU_KERNEL_BYTES:
            raise KernelLimitError(f"{self.family}: its buffers take {mib(nbytes)}, more than the "
                                   f"{mib(MAX_CPU_KERNEL_BYTES)} a CPU kernel may ({self.describe()})")

    def io_bytes(self):
        """(bytes read, bytes written) over the input and output buffers, each once."""
        read = sum(a.nbytes for a in self.args() if a.is_input)
        written = sum(a.nbytes for a in self.args() if a.output)
        return read, written


def check_range(family, name, value, lo, hi):
    """Raise KernelParamError unless ``lo <= value <= hi`` (ints; bools rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise KernelParamError(f"{family}: parameter {name} must be an int, got {value!r}")
    if not lo <= value <= hi:
        raise KernelParamError(
            f"{family}: parameter {name}={value} is out of range [{lo}, {hi}]")


def check_values_in(family, name, array, lo, hi):
    """Raise KernelValueError unless every element of ``array`` (buffer ``name``) is in [lo, hi]."""
    if array.size == 0:
        return
    bad = np.flatnonzero((array < lo) | (array > hi))
    if bad.size:
        at = int(bad[0])
        raise KernelValueError(family, name, f"holds {int(array.flat[at])} at element {at}, outside [{lo}, {hi}] "
                               f"({bad.size} such elements)")


def check_unrolled(family, **values):
    """Raise KernelParamError unless each value (unrolled at code generation) is at most MAX_UNROLL."""
    for name, value in values.items():
        if value > MAX_UNROLL:
            raise KernelParamError(f"{family}: {name}={value} is more than the {MAX_UNROLL} the kernel unrolls "
                                   "when its code is generated")


def check_stack_row(family, width):
    if width > MAX_STACK_ROW:
        raise KernelParamError(f"{family}: an output row of {width} elements is wider than the {MAX_STACK_ROW} "
                               "the kernel keeps on the stack")


def check_positive(family, **values):
    for name, value in values.items():
        check_range(family, name, value, 1, INT32_MAX)


def out_size(size, kernel, stride, pad, pad_hi=None):
    """Output length of a window of ``kernel`` with ``stride`` over ``size`` padded by ``pad``
    before and ``pad_hi`` (default ``pad``) after (floor)."""
    return (size + pad + (pad if pad_hi is None else pad_hi) - kernel) // stride + 1


def valid_range(kernel_offset, stride, pad, in_size, out_len):
    """Outputs ``[lo, hi)`` whose input ``o*stride + kernel_offset - pad`` is in ``[0, in_size)``;
    ``0 <= lo <= hi <= out_len`` always (the padding on either side is ``[0, lo)`` and
    ``[hi, out_len)``, also when the tap sees no input at all)."""
    lo = min(out_len, max(0, -(-(pad - kernel_offset) // stride)))
    hi = min(out_len, (in_size - 1 + pad - kernel_offset) // stride + 1)
    return lo, max(lo, hi)


def check_bool(family, name, value):
    if not isinstance(value, bool):
        raise KernelParamError(f"{family}: parameter {name} must be a bool, got {value!r}")


def as_tuple(spec, name, count):
    """Normalise field ``name`` of a frozen spec to a ``count``-tuple of ints (an int repeats)."""
    value = getattr(spec, name)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (int(value),) * count
    if not isinstance(value, (tuple, list)) or len(value) != count or \
            any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value):
        raise KernelParamError(f"{spec.family}: parameter {name} must be an int or {count} ints, got {value!r}")
    object.__setattr__(spec, name, tuple(int(v) for v in value))
    return getattr(spec, name)


def check_window(spec, h, w, kh, kw, stride, pad):
    """Raise unless a kh x kw window gives at least one output on an h x w input; ``stride`` an
    int or (sh, sw), ``pad`` an int or (top, left, bottom, right)."""
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    pt, pl, pb, pr = (pad,) * 4 if isinstance(pad, int) else pad
    if out_size(h, kh, sh, pt, pb) < 1 or out_size(w, kw, sw, pl, pr) < 1:
        raise KernelParamError(
            f"{spec.family}: a {kh}x{kw} window with stride {stride} and pad {pad} does not fit "
            f"a {h}x{w} input ({spec.describe()})")


class Window:
    """Mixin of specs with a kh x kw window over an (h, w) input: ``stride`` (sh, sw) and ``pad``
    (top, left, bottom, right) tuples; output size and, per window offset, the valid outputs."""

    @property
    def oh(self):
        return out_size(self.h, self.kh, self.stride[0], self.pad[0], self.pad[2])

    @property
    def ow(self):
        return out_size(self.w, self.kw, self.stride[1], self.pad[1], self.pad[3])

    def ranges(self):
        """([valid output rows per kernel row], [valid output columns per kernel column])."""
        (sh, sw), (pt, pl, _, _) = self.stride, self.pad
        return ([valid_range(i, sh, pt, self.h, self.oh) for i in range(self.kh)],
                [valid_range(j, sw, pl, self.w, self.ow) for j in range(self.kw)])


def check_clip(spec, wide: bool, relu: bool = False):
    """Default and check the clip bounds ``lo``/``hi`` of a requantizing spec (int8, or int32 if wide)."""
    low, high = (-2**31, 2**31 - 1) if wide else (-128, 127)
    if spec.lo is None:
        object.__setattr__(spec, "lo", 0 if relu else low)
    if spec.hi is None:
        object.__setattr__(spec, "hi", high)
    check_range(spec.family, "lo", spec.lo, low, high)
    check_range(spec.family, "hi", spec.hi, spec.lo, high)
